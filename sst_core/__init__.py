"""sst_core: tasks, models, theory, diagnostics and training for the sst book.

Notebooks import from here and never redefine what lives here. The package is cut into
layers that run one way: a module imports only from its own layer or the ones below it
(``tests/test_layers.py`` checks every import, also those inside functions, and that there
is no import cycle). From the bottom up:

- ``spec/``: profiles (every size the book uses), experiment configs, the papers' values
- ``groups.py``, ``tasks/``, ``ops/``, ``models/``, ``theory/``: the maths: finite
  groups, task generators and data readers, fast ops beside plain references, the model
  registry, and the papers' theory (Theorem 1 and Corollary 1; the memory function)
- ``store/``: run records (atomic writes, validating reader), provenance, code versions
- ``training/``: training loops (tracking, single and stacked; LRA), knowing no experiment
- ``analysis/``: the diagnostics of trained trackers (R, M, q, T_cross, return maps,
  label-free q, spectra), one implementation of each
- ``experiments/``: the one experiment registry and the grids of each paper; ``run``
- ``sweep/``, ``reports/``, ``figures/``: resumable sweeps and ``sst status``; tables
  from records (reports select); figures from selected rows (figures only draw)
- ``book/``, ``bench/``: papermill parameters and ``best``, the notebook runner, vendored
  JavaScript; the benchmark harness, its cases and records
- ``cli.py``: the ``sst`` command

Where the papers' symbols live (one name everywhere, see the book's notation page):
q(t), R(t), M(t), T_cross, m_p and the centroids c_g: ``sst_core.analysis.diagnostics``;
U, U_perp (``symbolic_subspace``), Theorem 1 and Corollary 1 (in SymPy, and the fitted
crossing time ``corollary1_fit``): ``sst_core.theory.error_control``; the return map F_s,
its Jacobian J and the norms of Theorem 1's check: ``sst_core.analysis.return_map``; the
memory function M[tau], the Vandermonde V, Lambda, dt, A_bar, B_bar:
``sst_core.theory.memory``; the S4D kernel K: ``sst_core.ops.ssm_kernel``.
"""
__version__ = "0.1.0"

# the layers, bottom first: the folder (or top-level module) names of each
LAYERS: tuple[tuple[str, ...], ...] = (
    ("spec",),
    ("groups", "tasks", "ops", "models", "theory"),
    ("store",),
    ("training",),
    ("analysis",),
    ("experiments",),
    ("sweep", "reports", "figures"),
    ("book", "bench"),
    ("cli", "__main__"),
)
