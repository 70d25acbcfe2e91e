"""Training loops that know no experiment: group tracking, one model
(:mod:`~sst_core.training.tracking`) or K stacked (:mod:`~sst_core.training.stacked`), and
S4D classifiers on LRA tasks (:mod:`~sst_core.training.lra`, data from
:mod:`~sst_core.training.lra_data`).
"""
