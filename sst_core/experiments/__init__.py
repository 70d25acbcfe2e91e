"""The one experiment registry (:mod:`~sst_core.experiments.registry`), the grids and run
functions of each paper (:mod:`~sst_core.experiments.paper1`,
:mod:`~sst_core.experiments.paper2`, :mod:`~sst_core.experiments.beyond`), and
:func:`~sst_core.experiments.runs.run`, through which every record is computed or read.
"""
