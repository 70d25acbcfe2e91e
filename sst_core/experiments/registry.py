"""The one registry of the book's experiments.

An *experiment* is one kind of run record (``cfg.experiment``, the folder under
``results/<profile>/``). Its :class:`Experiment` entry names everything else about it:

- ``config``: its frozen config class (``"module:Class"``);
- ``runner``: ``"module:function"`` computing a record's metrics from a config, resolved
  only when a run is computed (like the model registry, so that reading records never
  imports torch);
- ``version``: an integer stored in every record the experiment makes; a record whose
  version is below the current one is *stale* (:func:`is_stale_record`; ``sst status``
  counts them, ``sst sweep --retry-stale`` computes them again);
- ``code_deps``: the dotted names a run's results depend on: the fingerprint of the code
  reachable from them (:func:`fingerprints`) is kept in the version lock
  (:mod:`sst_core.experiments.versions`), whose test trips when that code changes, so
  that whoever changes it decides: bump ``version``, or ``sst lock`` it;
- ``grids``: the configs the book runs under a profile, each in a named *sweep*
  (``sst sweep NAME``) and read by the chapters it names.

Dispatch (:func:`sst_core.experiments.runs.run`), versions, sweeps and their phases,
``sst status`` and the chapters' coverage (which ``best`` counts) are all derived from
:data:`EXPERIMENTS`; adding an experiment is one entry here.

A config with a ``run`` field analyses a trained tracker: a sweep computes the trackers
in a first phase and the analyses in a second.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable, Mapping

from sst_core.spec.profiles import Profile


@dataclass(frozen=True)
class Grid:
    """Configs of one experiment that one sweep computes under a profile."""

    sweep: str  # `sst sweep NAME`
    target: str  # "module:function", (Profile) -> list of configs
    chapters: tuple[str, ...]  # notebooks that read these records
    description: str  # what the sweep computes, for `sst sweep --help` and `sst status`

    def configs(self, P: Profile) -> list[Any]:
        return list(resolve(self.target)(P))


@dataclass(frozen=True)
class Experiment:
    name: str  # cfg.experiment
    config: str  # "module:Class"
    runner: str  # "module:function", cfg -> metrics
    code_deps: tuple[str, ...]
    grids: tuple[Grid, ...] = ()
    # "module:function" run once per process before its first run is timed (imports,
    # builds), so that a record's wall_time_s is the run's only; None: nothing to do
    startup: str | None = None
    # stored in every record; raise it when a change to the code the runs reach changes
    # what they compute (its records become stale), see sst_core.experiments.versions
    version: int = 1


def resolve(target: str) -> Any:
    """The object a ``"module:attribute"`` name stands for."""
    module, _, attr = target.partition(":")
    return getattr(import_module(module), attr)


# MODELS stands for the models of the model registry, which builds them by name, out of
# the code walk's sight: code_hash adds the builder of the model a run trains.
MODELS = "sst_core.models.registry.REGISTRY"
TRACKING_DEPS = ("sst_core.training.tracking.train_tracking",
                 "sst_core.training.stacked.train_tracking_stacked", MODELS)
# An analysis loads its tracker's weights (the training record has its own version).
ANALYSIS_DEPS = ("sst_core.training.tracking.load_weights", MODELS)

TORCH_STARTUP = "sst_core.experiments.runs:torch_startup"
# Not followed by the fingerprint walk: reading a stored record (an analysis reads its
# tracker's) checks the file and computes nothing, and the tracker's record has a version of
# its own; a stricter reader must not trip every analysis's fingerprint.
STORE_LOOKUPS = ("sst_core.store.records.load_record",)

P1 = "sst_core.experiments.paper1"
P2 = "sst_core.experiments.paper2"
BEYOND = "sst_core.experiments.beyond"

EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    Experiment(
        "groups_order_sensitivity", "sst_core.spec.configs:OrderSensitivityConfig",
        f"{P1}:order_sensitivity", (f"{P1}.order_sensitivity",),
        (Grid("groups", f"{P1}:order_sensitivity_grid", ("p1_groups",),
              "order sensitivity of words (chapter: groups)"),)),
    Experiment(
        "tracking", "sst_core.spec.configs:TrackingConfig",
        "sst_core.experiments.runs:train_tracking", TRACKING_DEPS,
        (Grid("table2", f"{P1}:table2_grid", ("p1_table2",),
              "Table 2: every architecture on C2, C6, S3"),
         Grid("table3", f"{P1}:table3_grid", ("p1_table3",),
              "Table 3: rnn_phi with every phi on S3"),
         Grid("width", f"{P1}:width_grid", ("p1_table2",),
              "Table 2's width ablation: m_p against d_model for AUSSM, Negative Mamba and "
              "Mamba-3 on C2, C6 and S3"),
         Grid("figure4", f"{P1}:figure4_sweep", ("p1_diagnostics", "beyond_groups"),
              "the affine S3 training sweep behind Figure 4"),
         # prepared, not yet run: no chapter counts it until its runs are stored
         Grid("pilots_60", f"{P1}:pilot_grid", ("p1_table2",),
              "pilots: one change at a time to the runs of the three Table 2 cells that never "
              "pass length 60"),
         # staged: no chapter reads them until their runs are stored (issue 59's recompute)
         Grid("wide", f"{P1}:table2_wide_grid", (),
              "Table 2 and Figure 4 again, with the Mamba, AUSSM and attention models at a "
              "larger model width (d_model), the one the Table 2 chapter's pilot runs "
              "chose"),
         Grid("wide", f"{P1}:figure4_wide_sweep", (),
              "Figure 4's training sweep at that larger width"),
         Grid("harder_groups", f"{BEYOND}:harder_groups_grid", ("beyond_groups",),
              "beyond: Table 2's models on A4, A5 and C2xS3"),
         Grid("semi_affine", f"{BEYOND}:semi_affine_grid", ("beyond_semi_affine",),
              "beyond: (Negative) Mamba with a rank-r tanh correction"),
         Grid("delta", f"{BEYOND}:delta_grid", ("beyond_delta",),
              "beyond: DeltaNet, DeltaProduct, torch's GRU and LSTM on C2, C6, S3, A5")),
        TORCH_STARTUP),
    Experiment(
        "tracking_diagnostics", "sst_core.spec.configs:DiagnosticsConfig",
        "sst_core.analysis.error_control:diagnose",
        ANALYSIS_DEPS + ("sst_core.analysis.error_control.diagnose",),
        (Grid("diagnostics", f"{P1}:diagnostics_grid",
              ("p1_theory", "p1_diagnostics", "beyond_groups"),
              "error-control diagnostics (Figures 1-4) of every S3 run"),
         Grid("wide", f"{P1}:figure4_wide_diagnostics", (),
              "the diagnostics Figure 4 reads, of its training sweep at that larger width"),
         Grid("figure4_a5", f"{BEYOND}:diagnostics_grid_a5", ("beyond_groups",),
              "beyond: the Figure 4 sweep and its diagnostics on A5"),
         Grid("semi_affine", f"{BEYOND}:semi_affine_diagnostics", ("beyond_semi_affine",),
              "beyond: (Negative) Mamba with a rank-r tanh correction"),
         Grid("delta", f"{BEYOND}:delta_diagnostics", ("beyond_delta",),
              "beyond: DeltaNet, DeltaProduct, torch's GRU and LSTM on C2, C6, S3, A5")),
        TORCH_STARTUP),
    Experiment(
        "tracking_spread_tail", "sst_core.spec.configs:SpreadTailConfig",
        "sst_core.analysis.spread_tail:run_spread_tail",
        ANALYSIS_DEPS + ("sst_core.analysis.spread_tail.run_spread_tail",),
        (Grid("diagnostics", f"{P1}:spread_tail_grid", ("p1_diagnostics",),
              "what makes the token-gated RNN's spread heavy-tailed (Figure 4's one-layer "
              "runs, at t = m_p)"),),
        TORCH_STARTUP),
    Experiment(
        "exact_tracker", "sst_core.spec.configs:ExactTrackerConfig",
        f"{BEYOND}:exact_tracker", (f"{BEYOND}.exact_tracker",),
        (Grid("delta", f"{BEYOND}:exact_tracker_grid", ("beyond_delta",),
              "beyond: constructed exact Householder trackers, diagnosed"),),
        TORCH_STARTUP),
    Experiment(
        "torch_module_diagnostics", "sst_core.spec.configs:TorchModuleDiagnosticsConfig",
        f"{BEYOND}:torch_module_diagnostics",
        ANALYSIS_DEPS + (f"{BEYOND}.torch_module_diagnostics",),
        (Grid("delta", f"{BEYOND}:torch_module_grid", ("beyond_delta",),
              "beyond: trained torch GRU / LSTM diagnosed as plain torch modules"),),
        TORCH_STARTUP),
    Experiment(
        "tracking_label_free", "sst_core.spec.configs:LabelFreeConfig",
        "sst_core.analysis.label_free:run_label_free",
        ANALYSIS_DEPS + ("sst_core.analysis.label_free.run_label_free",),
        (Grid("label_free", f"{BEYOND}:label_free_grid", ("beyond_label_free",),
              "beyond: oracle and label-free q(t) of every trained tracker, every group"),),
        TORCH_STARTUP),
    Experiment(
        "tracking_spectra", "sst_core.spec.configs:SpectraConfig",
        "sst_core.analysis.spectra:run_spectra",
        ANALYSIS_DEPS + ("sst_core.analysis.spectra.run_spectra",),
        (Grid("spectra", f"{BEYOND}:spectra_grid", ("beyond_spectra",),
              "beyond: transition spectra and memory functions of the S3 trackers"),),
        TORCH_STARTUP),
    Experiment(
        "lra", "sst_core.spec.configs:LRAConfig", "sst_core.experiments.runs:train_lra",
        ("sst_core.training.lra.train_lra",),
        (Grid("lra", f"{P2}:lra_main_grid", ("p2_lra",),
              "Paper 2: frozen versus learned spectra on LRA (main table and ablation)"),
         Grid("lra", f"{P2}:lra_ablation_grid", ("p2_lra",),
              "Paper 2: frozen versus learned spectra on LRA (main table and ablation)"),
         Grid("lra", f"{P2}:lra_probe_grid", ("p2_lra",),
              "Paper 2: frozen versus learned spectra on LRA (main table and ablation)"),
         Grid("lra", f"{P2}:lra_data_probe_grid", ("p2_lra",),
              "Paper 2: frozen versus learned spectra on LRA (main table and ablation)"),
         # prepared, not yet run: no chapter counts it until its runs are stored
         Grid("lra_pathfinder", f"{P2}:lra_pathfinder_grid", (),
              "Paper 2: the LRA main table (S4D-Inv and S4D-Lin, learned and frozen) on "
              "Pathfinder, at the training set and model size of the LRA chapter's "
              "learned-only Pathfinder runs"),
         Grid("lra_pathfinder_ablation", f"{P2}:lra_pathfinder_ablation_grid", (),
              "Paper 2: the LRA ablation (random, real, step and S4D-Inv spectra, learned "
              "and frozen) on Pathfinder, at the size of `lra_pathfinder`, whose S4D-Inv "
              "runs it shares")),
        TORCH_STARTUP),
    Experiment(
        "memory_horizon", "sst_core.spec.configs:MemoryHorizonConfig",
        "sst_core.training.horizon:train_memory_horizon",
        ("sst_core.training.horizon.train_memory_horizon",),
        (Grid("memory_horizon", f"{P2}:memory_horizon_grid", ("p2_lra",),
              "Paper 2: delayed recall at lag tau, learned against frozen spectra"),),
        TORCH_STARTUP),
    Experiment(
        "memory_noise", "sst_core.spec.configs:NoisyMemoryConfig",
        "sst_core.analysis.memory_noise:run_memory_noise",
        ("sst_core.analysis.memory_noise.run_memory_noise",),
        (Grid("memory_horizon", f"{P2}:memory_noise_grid", ("p2_lra",),
              "Paper 2: the memory of each delayed-recall run's spectrum read with noise"),),
        TORCH_STARTUP),
    Experiment(
        "memory_split", "sst_core.spec.configs:SpectrumSplitConfig",
        "sst_core.analysis.spectrum_split:run_spectrum_split",
        ("sst_core.analysis.spectrum_split.run_spectrum_split",),
        (Grid("memory_horizon", f"{P2}:spectrum_split_grid", ("p2_lra",),
              "Paper 2: claim 3's summed memory of a real-axis layer split off the axis"),),
        TORCH_STARTUP),
    Experiment(
        "memory_curve", "sst_core.spec.configs:MemoryCurveConfig", f"{P2}:run_memory_curve",
        (f"{P2}.run_memory_curve",),
        (Grid("memory", f"{P2}:memory_grid", ("p2_memory",),
              "Paper 2: memory functions, the S4/S4D check and the worked example"),
         Grid("memory", f"{P2}:reference_grid", ("p2_memory",),
              "Paper 2: memory functions, the S4/S4D check and the worked example"))),
    Experiment(
        "memory_s4_vs_s4d", "sst_core.spec.configs:SimulationCheckConfig",
        f"{P2}:run_simulation_check", (f"{P2}.run_simulation_check",),
        (Grid("memory", f"{P2}:simulation_grid", ("p2_memory",),
              "Paper 2: memory functions, the S4/S4D check and the worked example"),)),
    Experiment(
        "memory_readout_gd", "sst_core.spec.configs:ReadoutGDConfig",
        f"{P2}:run_readout_gd", (f"{P2}.run_readout_gd",),
        (Grid("memory", f"{P2}:readout_gd_grid", ("p2_memory",),
              "Paper 2: memory functions, the S4/S4D check and the worked example"),)),
)}


def get_experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; allowed: {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def runner(name: str) -> Callable[[Any], dict[str, Any]]:
    """The run function of experiment ``name``."""
    return resolve(get_experiment(name).runner)


# -- sweeps: derived from the grids ---------------------------------------------------------

def _sweep_grids() -> dict[str, list[Grid]]:
    out: dict[str, list[Grid]] = {}
    for exp in EXPERIMENTS.values():
        for grid in exp.grids:
            out.setdefault(grid.sweep, []).append(grid)
    return out


SWEEP_GRIDS: dict[str, list[Grid]] = _sweep_grids()
# sweep name -> what it computes
SWEEPS: dict[str, str] = {name: grids[0].description for name, grids in SWEEP_GRIDS.items()}


def staged_sweeps() -> tuple[str, ...]:
    """The sweeps no chapter reads yet (staged: a chapter moves to their records once they
    are all stored), in :data:`SWEEPS`' order."""
    return tuple(name for name, grids in SWEEP_GRIDS.items()
                 if not any(g.chapters for g in grids))


def check_sweep(name: str) -> str:
    if name not in SWEEPS:
        raise ValueError(f"unknown sweep {name!r}; allowed: {', '.join(SWEEPS)}")
    return name


def phases(sweep: str, P: Profile) -> list[list[Any]]:
    """The configs of a sweep under ``P`` in the order they can run: the trained trackers
    (and every config that reads no other run) first, then the analyses of trackers."""
    cfgs = list(dict.fromkeys(c for g in SWEEP_GRIDS[check_sweep(sweep)] for c in g.configs(P)))
    analyses = [c for c in cfgs if hasattr(c, "run")]
    first = list(dict.fromkeys([c for c in cfgs if not hasattr(c, "run")]
                               + [c.run for c in analyses]))
    return [first, analyses] if analyses else [first]


def sweep_configs(sweep: str, P: Profile, seen: set[str] | None = None) -> list[Any]:
    """Every config of ``sweep`` under ``P``, phase after phase, each once (by run id);
    ``seen``: run ids already counted elsewhere (updated), e.g. by another sweep of the
    same chapter."""
    from sst_core.spec.configs import config_hash

    seen = set() if seen is None else seen
    out = []
    for phase in phases(sweep, P):
        for cfg in phase:
            rid = config_hash(cfg)
            if rid not in seen:
                seen.add(rid)
                out.append(cfg)
    return out


def chapter_sweeps(notebook: str) -> tuple[str, ...]:
    """The sweeps whose records a chapter reads (none for a chapter that reads none)."""
    return tuple(name for name, grids in SWEEP_GRIDS.items()
                 if any(notebook in g.chapters for g in grids))


CHAPTERS: tuple[str, ...] = tuple(dict.fromkeys(
    ch for grids in SWEEP_GRIDS.values() for g in grids for ch in g.chapters))


# -- versions and code fingerprints ----------------------------------------------------------

def version(experiment: str) -> int:
    """The current version of ``experiment`` (its registry entry's ``version``)."""
    return get_experiment(experiment).version


def is_stale_record(record: dict[str, Any]) -> bool:
    """Whether ``record`` was made by an older version of its experiment: its ``version``
    (0 when it has none) below the registry's. A record of an unknown experiment is
    stale too (no version of the code can have made it)."""
    exp = EXPERIMENTS.get(record.get("experiment"))
    made = record.get("version", 0)
    return exp is None or not isinstance(made, int) or made < exp.version


_code_hashes: dict[tuple[str, str | None], str | None] = {}


def code_hash(experiment: str, config: dict[str, Any] | None = None) -> str | None:
    """The fingerprint of the code ``experiment``'s runs depend on (its ``code_deps``,
    :func:`sst_core.store.codeversion.fingerprint`); None for an unknown experiment.

    The model registry builds a model from its name, out of the walk's sight, so
    :data:`MODELS` adds the builders themselves: with the ``config`` of a run (a
    ``config_dict``, or just ``{"model": name}``), only the model it trains or analyses
    and its registry entry, so that adding or changing another model leaves its
    fingerprint alone; without, every registered model. Cached per process. None too
    when a source file the runs reach was edited after this process imported it
    (:class:`~sst_core.store.codeversion.SourceChanged`, with a warning).
    """
    if experiment not in EXPERIMENTS:
        return None
    model = model_of(config) if MODELS in EXPERIMENTS[experiment].code_deps else None
    if (experiment, model) not in _code_hashes:
        from sst_core.store.codeversion import SourceChanged, fingerprint

        points, scope = code_scope(experiment, model)
        try:
            _code_hashes[experiment, model] = fingerprint(points, **scope)
        except SourceChanged as err:
            import warnings

            warnings.warn(f"code fingerprint of {experiment} runs unknown: {err}",
                          RuntimeWarning, stacklevel=2)
            _code_hashes[experiment, model] = None
    return _code_hashes[experiment, model]


ALL = "*"  # the key of an experiment's one fingerprint when its runs name no model


def fingerprints(experiment: str) -> dict[str, str | None]:
    """The fingerprints the version lock keeps for ``experiment``: one per registered
    model for an experiment whose runs build a model by name (so that a change to one
    model names the records it reaches), else one under :data:`ALL`."""
    if MODELS not in get_experiment(experiment).code_deps:
        return {ALL: code_hash(experiment)}
    from sst_core.models.registry import REGISTRY

    return {name: code_hash(experiment, {"model": name}) for name in sorted(REGISTRY)}


def fingerprint_key(record_or_config: dict[str, Any]) -> str:
    """The key of :func:`fingerprints` that a record (or its config dict) falls under."""
    config = record_or_config.get("config", record_or_config)
    experiment = record_or_config.get("experiment") or config.get("experiment")
    if MODELS not in get_experiment(experiment).code_deps:
        return ALL
    return model_of(config) or ALL


def code_scope(experiment: str, model: str | None) -> tuple[list[Any], dict[str, Any]]:
    """The entry points of :func:`code_hash` and the walk's other arguments (also for
    :func:`sst_core.store.codeversion.reachable`, to read what a fingerprint covers)."""
    from sst_core.store.codeversion import resolve as resolve_dotted

    deps = EXPERIMENTS[experiment].code_deps
    points = [resolve_dotted(p) for p in deps if p != MODELS]
    narrow: dict[str, list[str]] = {}
    if MODELS in deps:
        from sst_core.models.registry import REGISTRY

        names = [model] if model is not None else list(REGISTRY)
        for name in names:
            if name in REGISTRY:  # "module:function" inside sst_core.models
                module, func = REGISTRY[name].target.split(":")
                points.append(resolve_dotted(f"sst_core.models.{module}.{func}"))
        narrow = {MODELS: names}
    return points, {"exclude": STORE_LOOKUPS, "narrow": narrow}


def model_of(config: dict[str, Any] | None) -> str | None:
    """The registered model a config trains (``model``) or analyses (``run.model``)."""
    if not config:
        return None
    run = config.get("run")
    return (run if isinstance(run, dict) else config).get("model")


def config_from_dict(config: dict[str, Any]) -> Any:
    """The frozen config a stored record's ``config`` describes (its experiment's config
    class; lists back to tuples, an analysis's ``run`` back to its tracker's config)."""
    experiment = config.get("experiment")
    cls = resolve(get_experiment(experiment).config)
    kw = {}
    for key, value in config.items():
        if isinstance(value, dict) and "experiment" in value:
            value = config_from_dict(value)
        elif isinstance(value, list):
            value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        kw[key] = value
    return cls(**kw)
