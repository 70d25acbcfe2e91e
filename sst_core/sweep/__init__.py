"""Resumable sweeps over the registry's grids (:mod:`~sst_core.sweep.runner`), claims on runs
(:mod:`~sst_core.sweep.claims`) and ``sst status`` (:mod:`~sst_core.sweep.status`).
"""
