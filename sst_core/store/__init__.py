"""The run store: records written atomically and read with validation
(:mod:`~sst_core.store.records`), their provenance (:mod:`~sst_core.store.provenance`), code
fingerprints (:mod:`~sst_core.store.codeversion`) and the NaN codec
(:mod:`~sst_core.store.codec`).
"""
