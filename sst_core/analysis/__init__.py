"""Diagnostics of trained trackers, one implementation of each piece of maths.

- ``trackers``: loading a trained tracker, held-out words, readout states
- ``diagnostics``: centroids, R, M, q, T_cross, q_U / q_U_perp, state trajectories,
  perturbation recovery, U in state space (``state_basis``), state-preserving words,
  label-free labels, failure modes
- ``return_map``: Theorem 1's return map F_s, J Q by forward-mode products and the norms
  the records store (``deviation``, ``deviation_U``, ``gain``, ``amplification``,
  ``return_residual``)
- ``clusters``: batched k-means (the label-free ``clusters`` labels)
- ``stats``: bootstrap intervals and the log-log correlation over runs
- ``error_control``, ``label_free``, ``spectra``: the run functions of the three analysis
  experiments (``diagnose``, ``run_label_free``, ``run_spectra``) and what they derive
- ``any_model``: ``diagnose``'s measures on a model the registry does not have
  (``diagnose_any``: a ``step(h, x)``, a raw ``nn.GRU`` / ``nn.LSTM``), through the same
  core (``error_control.error_control_measures``)

U's rank rule (``symbolic_basis``) and Corollary 1's fitted crossing time
(``corollary1_fit``) sit one layer down, in :mod:`sst_core.theory.error_control`.
"""
