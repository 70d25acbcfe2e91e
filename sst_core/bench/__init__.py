"""Benchmarks: the harness (:mod:`~sst_core.bench.harness`), the cases, ours beside an anchor
(:mod:`~sst_core.bench.cases`), their records (:mod:`~sst_core.bench.records`) and the GPU
check (:mod:`~sst_core.bench.gpu_check`).
"""
