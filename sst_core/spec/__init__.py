"""What is computed, before anything is: profiles (:mod:`~sst_core.spec.profiles`), experiment
configs (:mod:`~sst_core.spec.configs`) and the papers' published values
(:mod:`~sst_core.spec.paper_values`). Imports nothing else of the package.
"""
