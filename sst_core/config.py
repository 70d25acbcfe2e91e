"""Profiles and experiment configurations.

A *profile* decides every size in the book:

- ``smoke``: every code path runs (CI); the numbers are meaningless and labelled so.
- ``quick``: real but reduced runs that fit a laptop CPU.
- ``paper``: the published protocol as far as it is known (GPU recommended).

Each notebook declares which profile values its papermill ``parameters`` cell may
override (:data:`NOTEBOOKS`). A notebook turns its parameters into settings with
:func:`from_notebook`, which fails before any work starts on an unknown profile, an
unknown parameter or a wrongly typed one, naming what is allowed.

Experiment configs are frozen dataclasses that carry ``experiment``, ``profile`` and
``seed``; :func:`config_hash` gives the run id under which
:func:`sst_core.results.cached_run` stores their record.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from dataclasses import dataclass, fields
from typing import Any, Mapping

PROFILE_NAMES = ("smoke", "quick", "paper")


@dataclass(frozen=True)
class Profile:
    """Every size the book uses, for one profile.

    Fields are grouped by chapter; later chapters add their own.
    """

    name: str
    description: str
    seed: int
    # -- "Groups and state tracking" (notebooks/p1_groups.py)
    n_words: int  # words sampled per group for the order-sensitivity statistics
    word_length: int  # length of those words
    # -- "Memory function" (notebooks/p2_memory.py)
    mem_N: int  # state size N (real dimension: both members of each conjugate pair)
    mem_T: int  # horizon T of the memory function (the task's sequence length)
    mem_sim_T: int  # length of the white-noise simulation that checks the formula
    mem_gd_steps: int  # gradient-descent steps on the readout in the worked example
    # -- "Tables 2 and 3" (notebooks/p1_table2.py, p1_table3.py): group-tracking training
    track_depths: tuple[int, ...]  # numbers of layers (the paper's L1 / L2)
    track_d_model: int  # residual width of the Mamba / AUSSM / attention families
    track_d_states: tuple[int, ...]  # d_state grid: N of the SSM / attention families
    track_rnn_widths: tuple[int, ...]  # d_state grid of the RNN family (its hidden width)
    track_lrs: tuple[float, ...]  # learning-rate grid
    track_seeds: tuple[int, ...]  # seeds per grid cell
    track_batch: int  # words per training step
    track_max_steps: int  # training steps at most
    track_steps_per_epoch: int  # steps that make one curriculum "epoch"
    track_patience: int  # epochs at >= 95% before the length doubles
    track_eval_lengths: tuple[int, ...]  # evaluation lengths (m_p is one of them)
    track_eval_samples: int  # held-out words per evaluation length
    track_stack: int  # runs differing only in seed / lr trained at once (sst_core.stacked)
    # -- "Error control" (notebooks/p1_theory.py, p1_diagnostics.py): diagnostics of trained trackers
    diag_samples: int  # words whose hidden states estimate the centroids c_g(t), R, M, q
    diag_rollout: int  # length of those words (the paper: 1000)
    fig4_lrs: tuple[float, ...]  # extra learning rates of the affine S3 sweep behind Figure 4
    fig4_seeds: tuple[int, ...]  # seeds of that sweep
    # -- "Frozen versus learned spectra on LRA" (notebooks/p2_lra.py): S4D classifiers
    lra_tasks: tuple[str, ...]  # tasks of the chapter (generated stand-ins unless data is given)
    lra_H: int  # channels H of every layer
    lra_N: int  # state size N (real dimension)
    lra_layers: int  # S4D blocks
    lra_epochs: int  # passes over the training set
    lra_batch: int  # sequences per step
    lra_n_train: int  # generated training examples per task (val and test: a quarter each)
    lra_seeds: tuple[int, ...]  # seeds per cell of the main table (the paper: 6)
    lra_ablation_seeds: tuple[int, ...]  # seeds per cell of the ablation
    lra_listops_max_len: int  # ListOps length band is [max_len / 4, max_len]
    lra_image_side: int  # digits images are resized to side x side pixels
    lra_mf_T: int  # horizon of the supremum memory function
    # why this profile was chosen, when the book was asked for the best one (`best`)
    chosen_because: str = ""

    def scale(self, *knobs: str) -> str:
        """A one-line statement of the scale, for figure captions and table notes."""
        shown = ", ".join(f"{k}={getattr(self, k)}" for k in knobs)
        note = " (numbers are meaningless at this scale)" if self.name == "smoke" else ""
        return f"profile `{self.name}`" + (f": {shown}" if shown else "") + note

    def banner(self, *knobs: str) -> str:
        """The scale line a chapter prints first, with why the profile was chosen."""
        why = f"\n{self.chosen_because}" if self.chosen_because else ""
        return self.scale(*knobs) + why


PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke",
        description="every code path runs in about a minute per notebook on 2 CPU cores",
        seed=0,
        n_words=256,
        word_length=16,
        mem_N=16,
        mem_T=256,
        mem_sim_T=4_000,
        mem_gd_steps=200,
        track_depths=(1,),
        track_d_model=8,
        track_d_states=(8,),
        track_rnn_widths=(8,),
        track_lrs=(0.001,),
        track_seeds=(0,),
        track_batch=16,
        track_max_steps=3,
        track_steps_per_epoch=1,
        track_patience=1,
        track_eval_lengths=(60, 100),
        track_eval_samples=16,
        track_stack=4,
        diag_samples=32,
        diag_rollout=100,
        fig4_lrs=(0.001,),
        fig4_seeds=(0,),
        lra_tasks=("listops", "pathfinder", "digits"),
        lra_H=8,
        lra_N=4,
        lra_layers=1,
        lra_epochs=1,
        lra_batch=8,
        lra_n_train=32,
        lra_seeds=(0,),
        lra_ablation_seeds=(0,),
        lra_listops_max_len=60,
        lra_image_side=8,
        lra_mf_T=64,
    ),
    "quick": Profile(
        name="quick",
        description=("real but reduced runs on a laptop CPU: the two papers' chapters in about an "
                     "hour, the 'Beyond the papers' part several hours more"),
        seed=0,
        n_words=4096,
        word_length=60,
        mem_N=64,
        mem_T=1024,
        mem_sim_T=50_000,
        mem_gd_steps=3_000,
        track_depths=(1,),
        track_d_model=16,
        track_d_states=(16,),
        track_rnn_widths=(64,),
        track_lrs=(0.01,),
        track_seeds=(0,),
        track_batch=64,
        track_max_steps=3000,
        track_steps_per_epoch=20,
        track_patience=2,
        track_eval_lengths=(60,) + tuple(range(100, 1001, 100)),
        track_eval_samples=128,
        track_stack=16,
        diag_samples=512,
        diag_rollout=1000,
        fig4_lrs=(0.003, 0.01, 0.03),
        fig4_seeds=(0,),
        lra_tasks=("listops", "pathfinder", "digits"),
        lra_H=32,
        lra_N=16,
        lra_layers=2,
        lra_epochs=5,
        lra_batch=32,
        lra_n_train=512,
        lra_seeds=(0, 1, 2),
        lra_ablation_seeds=(0,),
        lra_listops_max_len=256,
        lra_image_side=16,
        lra_mf_T=256,
    ),
    "paper": Profile(
        name="paper",
        description="the published protocol as far as it is known; GPU recommended",
        seed=0,
        n_words=100_000,
        word_length=1000,
        mem_N=64,
        mem_T=4096,
        mem_sim_T=200_000,
        mem_gd_steps=20_000,
        track_depths=(1, 2),
        track_d_model=64,
        track_d_states=(32, 64, 128),
        track_rnn_widths=(32, 64, 128),
        track_lrs=(0.0001, 0.0005, 0.001),
        track_seeds=(0, 1, 2),
        track_batch=256,
        track_max_steps=20_000,
        track_steps_per_epoch=100,
        track_patience=5,
        track_eval_lengths=(60,) + tuple(range(100, 1001, 100)),
        track_eval_samples=1000,
        track_stack=16,
        diag_samples=2048,
        diag_rollout=1000,
        fig4_lrs=(0.0001, 0.0005, 0.001),
        fig4_seeds=(0, 1, 2),
        lra_tasks=("listops", "pathfinder", "digits"),
        lra_H=256,
        lra_N=64,
        lra_layers=6,
        lra_epochs=200,
        lra_batch=64,
        lra_n_train=96_000,
        lra_seeds=(0, 1, 2, 3, 4, 5),
        lra_ablation_seeds=(0, 1, 2, 3, 4, 5),
        lra_listops_max_len=2000,
        lra_image_side=32,
        lra_mf_T=4096,
    ),
}

# notebook name -> the profile fields its parameters cell may override
NOTEBOOKS: dict[str, tuple[str, ...]] = {
    "p1_groups": ("seed", "n_words", "word_length"),
    "p2_memory": ("seed", "mem_N", "mem_T", "mem_sim_T", "mem_gd_steps"),
    "p1_table2": ("track_max_steps", "track_batch", "track_eval_samples", "track_stack"),
    "p1_table3": ("track_max_steps", "track_batch", "track_eval_samples", "track_stack"),
    "p1_theory": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples"),
    "p1_diagnostics": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples",
                       "diag_rollout", "track_stack"),
    "p2_lra": ("lra_epochs", "lra_n_train", "lra_batch"),
    "bench": (),
    "beyond_groups": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples",
                      "diag_rollout", "track_stack"),
    "beyond_label_free": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples",
                          "diag_rollout", "track_stack"),
    "beyond_spectra": ("track_max_steps", "track_batch", "track_eval_samples", "diag_rollout",
                       "track_stack"),
    "beyond_semi_affine": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples",
                           "diag_rollout", "track_stack"),
}

# Names IPython puts into a kernel's namespace; they are not parameters.
_KERNEL_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


class ConfigError(ValueError):
    """An unknown profile, notebook or parameter, or a wrongly typed value."""


# A notebook may also be run with profile "best": `paper` where the stored paper-profile
# records cover the whole chapter (so nothing is trained), `quick` otherwise.
BEST = "best"
NOTEBOOK_PROFILES = (*PROFILES, BEST)


def best_profile(notebook: str) -> tuple[str, str]:
    """The profile ``best`` means for ``notebook``, and why (see :data:`BEST`)."""
    from .sweep import chapter_coverage

    have, need = chapter_coverage(notebook, "paper")
    if need and have == need:
        return "paper", f"best available: all {need} paper-profile records of this chapter are stored"
    if need:
        return "quick", (f"best available: {have} of {need} paper-profile records of this "
                         "chapter are stored, so this page shows `quick`")
    return "quick", "best available: this chapter has no stored sweep and computes at `quick`"


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ConfigError(f"unknown profile {name!r}; allowed: {', '.join(PROFILES)}")
    return PROFILES[name]


def _field_types() -> dict[str, type]:
    hints = typing.get_type_hints(Profile)
    return {f.name: hints[f.name] for f in fields(Profile)}


def _check_type(notebook: str, key: str, value: Any, expected: type) -> None:
    ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        raise ConfigError(
            f"parameter {key}={value!r} of notebook {notebook!r} has type "
            f"{type(value).__name__}; expected {expected.__name__} (or None for the profile's value)"
        )


def parameters_of(notebook: str) -> tuple[str, ...]:
    """All papermill parameters of a notebook: ``profile`` plus its overridable knobs."""
    if notebook not in NOTEBOOKS:
        raise ConfigError(f"unknown notebook {notebook!r}; known: {', '.join(sorted(NOTEBOOKS))}")
    return ("profile",) + NOTEBOOKS[notebook]


def check_parameters(notebook: str, params: Mapping[str, Any]) -> None:
    """Validate papermill parameters before a notebook runs.

    Raises :class:`ConfigError` for an unknown profile, an unknown parameter or a value
    of the wrong type, naming the allowed values.
    """
    allowed = parameters_of(notebook)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ConfigError(
            f"unknown parameter(s) {', '.join(map(repr, unknown))} for notebook {notebook!r}; "
            f"allowed: {', '.join(allowed)}"
        )
    if "profile" in params:
        if not isinstance(params["profile"], str):
            raise ConfigError(f"parameter profile={params['profile']!r} must be a string; "
                              f"allowed: {', '.join(NOTEBOOK_PROFILES)}")
        if params["profile"] != BEST:
            get_profile(params["profile"])
    types = _field_types()
    for key, value in params.items():
        if key != "profile" and value is not None:
            _check_type(notebook, key, value, types[key])


def settings(notebook: str, profile: str, **overrides: Any) -> Profile:
    """The profile, with the notebook's non-None overrides applied."""
    check_parameters(notebook, {"profile": profile, **overrides})
    chosen = {k: v for k, v in overrides.items() if v is not None}
    if profile == BEST:
        profile, why = best_profile(notebook)
        chosen["chosen_because"] = why
    return dataclasses.replace(get_profile(profile), **chosen)


def from_notebook(notebook: str, namespace: Mapping[str, Any]) -> Profile:
    """Settings from a notebook's globals, right after its parameters cell.

    Every public name in ``namespace`` at that point is a parameter (declared in the
    parameters cell or injected by papermill), so a name that is not declared here is a
    typo: it is reported with the allowed names before any work starts.
    """
    allowed = parameters_of(notebook)
    given = {
        k: v
        for k, v in namespace.items()
        if not k.startswith("_") and k not in _KERNEL_NAMES and not _is_module_or_callable(v)
    }
    check_parameters(notebook, given)
    missing = [k for k in allowed if k not in given]
    if missing:
        raise ConfigError(f"notebook {notebook!r} does not declare parameter(s) {missing}")
    return settings(notebook, **given)


def _is_module_or_callable(v: Any) -> bool:
    import types

    return isinstance(v, types.ModuleType) or callable(v)


# -- experiment configs --------------------------------------------------------------

def _canonical(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    return value


def config_dict(cfg: Any) -> dict[str, Any]:
    """A JSON-ready dict of a config dataclass (tuples become lists)."""
    if not (dataclasses.is_dataclass(cfg) and not isinstance(cfg, type)):
        raise TypeError(f"expected a config dataclass instance, got {type(cfg).__name__}")
    return _canonical(cfg)


def config_hash(cfg: Any) -> str:
    """A stable 16-hex-digit id of a config: sha256 of its canonical JSON."""
    text = json.dumps(config_dict(cfg), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class OrderSensitivityConfig:
    """How often swapping two adjacent tokens changes a word's product, and how the
    running product's distribution approaches uniform (chapter "Groups and state tracking")."""

    group: str
    tokens: str  # "generators" | "all"
    n_words: int
    word_length: int
    seed: int
    profile: str
    experiment: str = "groups_order_sensitivity"


EVAL_LENGTHS = (60,) + tuple(range(100, 1001, 100))

# The largest learning rate a config accepts. The book's grids stay at or below 0.03, and
# AdamW moves every weight by about lr per step whatever the gradient, so a run above 1
# is already wild; 10 leaves room for such experiments and rejects typos such as 1e3 for
# 1e-3 before any work starts.
MAX_LR = 10.0


def _check_ranges(cfg: Any, lrs: tuple[str, ...], non_negative: tuple[str, ...],
                  positive_ints: tuple[str, ...], non_negative_ints: tuple[str, ...]) -> None:
    """:class:`ConfigError` naming the first field of ``cfg`` out of its range: learning
    rates ``lrs`` finite numbers in (0, MAX_LR], ``non_negative`` finite numbers >= 0,
    ``positive_ints`` ints >= 1, ``non_negative_ints`` ints >= 0."""
    import math

    def fail(name: str, allowed: str) -> None:
        raise ConfigError(f"{type(cfg).__name__}.{name}={getattr(cfg, name)!r} is not "
                          f"allowed: {allowed}")

    def finite(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    for name in lrs:
        if not (finite(getattr(cfg, name)) and 0 < getattr(cfg, name) <= MAX_LR):
            fail(name, f"a learning rate must be finite and > 0 (at most {MAX_LR:g})")
    for name in non_negative:
        if not (finite(getattr(cfg, name)) and getattr(cfg, name) >= 0):
            fail(name, "it must be a finite number >= 0")
    for low, names in ((1, positive_ints), (0, non_negative_ints)):
        for name in names:
            v = getattr(cfg, name)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= low):
                fail(name, f"it must be an int >= {low}")


@dataclass(frozen=True)
class TrackingConfig:
    """One training run of group state tracking (``sst_core.train.train_tracking``).

    Defaults are the paper protocol as far as it is known (reference section 6.4); the
    profiles override the sizes.
    """

    model: str  # a name of sst_core.models.registry
    group: str  # e.g. "S3"
    n_layers: int  # L1 / L2 in Table 2
    d_model: int
    d_state: int  # N
    lr: float
    seed: int
    profile: str
    phi: str | None = None  # rnn_phi only (Table 3)
    tokens: str = "generators"  # vocabulary: identity + generators
    batch: int = 256
    weight_decay: float = 0.01
    max_steps: int = 20_000
    steps_per_epoch: int = 100
    curriculum_start: int = 2
    curriculum_max: int = 60
    curriculum_threshold: float = 0.95
    curriculum_patience: int = 5
    schedule: str = "constant"  # the paper's three schedulers are not named; see the chapter
    warmup_steps: int = 0
    grad_clip: float = 1.0
    eval_lengths: tuple[int, ...] = EVAL_LENGTHS
    eval_samples: int = 1000
    eval_batch: int = 250
    pass_threshold: float = 0.9  # m_p: token accuracy >= 90%
    device: str = "auto"  # not part of what is computed: a record says where it ran
    experiment: str = "tracking"

    def __post_init__(self) -> None:
        _check_ranges(self, ("lr",), ("weight_decay", "grad_clip"),
                      ("n_layers", "d_model", "d_state", "batch", "max_steps", "steps_per_epoch",
                       "curriculum_start", "curriculum_max", "curriculum_patience",
                       "eval_samples", "eval_batch"), ("seed", "warmup_steps"))


@dataclass(frozen=True)
class DiagnosticsConfig:
    """Error-control diagnostics of one trained tracker (``sst_core.analysis.diagnose``).

    ``run`` is the training run; its stored weights are analysed. Centroids, U, R, M and q
    come from ``n_samples`` held-out words of length ``rollout``; U of the readout space is
    taken at the training length ``t_ref``; the perturbation and return-map checks start
    from the states reached after ``t0`` tokens.
    """

    run: TrackingConfig
    n_samples: int
    rollout: int = 1000
    t_ref: int = 60  # reference time for U (the training length)
    t0: int = 30  # perturbation time
    eps: float = 1e-2  # ||delta|| / ||h_t0||
    perturb_steps: int = 200  # steps followed after the perturbation
    n_perturb: int = 128  # words perturbed
    word_length: int = 6  # length of the state-preserving words s of Theorem 1
    n_words: int = 8  # state-preserving words (each from its own start state)
    tau: float = 0.5
    seed: int = 0
    profile: str = "smoke"
    experiment: str = "tracking_diagnostics"


@dataclass(frozen=True)
class LabelFreeConfig:
    """q(t) of one trained tracker without the true group states
    (``sst_core.label_free.run_label_free``; chapter "A label-free warning signal").

    The hidden states of ``n_samples`` held-out words of length ``rollout`` are labelled
    three ways: by the true states (the oracle q of the diagnostics), by the model's own
    decoded classes, and by per-time k-means clusters. The online warning sees only the
    first ``t_obs`` positions and extrapolates the growth of the spread fitted on
    ``window_start .. t_obs``.
    """

    run: TrackingConfig
    n_samples: int
    rollout: int = 1000
    t_obs: int = 60  # the warning sees lengths up to the training length only
    window_start: int = 10
    tau: float = 0.5
    seed: int = 0
    profile: str = "smoke"
    experiment: str = "tracking_label_free"


@dataclass(frozen=True)
class SpectraConfig:
    """Paper 2's tools on a trained affine tracker (``sst_core.spectra.run_spectra``;
    chapter "Memory meets error control"): spectra of the per-position transitions
    ``A(x_t) = d h_t / d h_{t-1}`` on ``n_words`` held-out words of length ``word_length``,
    spectra of the return maps of ``n_preserving`` state-preserving words of length
    ``preserving_length``, and their memory functions over ``mem_T`` steps."""

    run: TrackingConfig
    n_words: int = 8
    word_length: int = 60
    n_preserving: int = 8
    preserving_length: int = 6
    mem_T: int = 1000
    seed: int = 0
    profile: str = "smoke"
    experiment: str = "tracking_spectra"


LRA_TASKS = ("listops", "pathfinder", "digits", "lra_listops", "lra_pathfinder", "lra_imdb",
             "lra_aan", "lra_cifar")


@dataclass(frozen=True)
class LRAConfig:
    """One S4D classifier trained on one LRA task (``sst_core.train_lra.train_lra``).

    Defaults follow ``state-spaces/s4``'s LRA configs where one value serves all tasks
    (reference section 9); the profiles and the task presets override the sizes. Tasks
    named ``lra_*`` read the user's LRA release from ``$SST_LRA_DATA`` (``sst lra
    --data-dir``); the others are generated. The folder is not part of the config, so a
    record names the data set, not where it was on one machine.
    """

    task: str  # one of LRA_TASKS
    init: str  # eigenvalue initialisation: inv | lin | random | step | real
    freeze_spectrum: bool  # the "reservoir" (RC) setting: Lambda and dt stay at their init
    H: int
    N: int
    n_layers: int
    epochs: int
    batch: int
    seed: int
    profile: str
    n_train: int = 1024  # generated tasks: training examples (val and test: n_train // 4)
    max_length: int = 2000  # ListOps: longest sequence (the band starts at max_length // 4)
    image_side: int = 32  # digits: image side in pixels (sequence = side^2)
    pathfinder_size: int = 32  # Pathfinder image side (LRA: 32; Path-X: 128)
    difficulty: str = "hard"  # Pathfinder contour length preset
    data_seed: int = 0  # generated data: the same examples for every run of a cell
    lr: float = 0.01
    ssm_lr: float = 0.001  # learning rate of Lambda and dt when they are learned
    weight_decay: float = 0.05
    warmup_frac: float = 0.05
    grad_clip: float = 0.0
    prenorm: bool = True
    norm: str = "batch"
    decoder: str = "pool"
    bidirectional: bool = True
    dropout: float = 0.0
    disc: str = "zoh"  # the paper's discretisation (per its summary)
    dt_min: float = 1e-3
    dt_max: float = 1e-1
    eval_batch: int = 128
    mf_T: int = 1024  # horizon of the supremum memory function (0: skip)
    device: str = "auto"
    experiment: str = "lra"

    def __post_init__(self) -> None:
        # ssm_lr is checked even when freeze_spectrum leaves it unused: the frozen setting
        # is freeze_spectrum, never a zero ssm_lr
        _check_ranges(self, ("lr", "ssm_lr"), ("weight_decay", "grad_clip"),
                      ("H", "N", "n_layers", "epochs", "batch", "n_train", "max_length",
                       "image_side", "pathfinder_size", "eval_batch"),
                      ("seed", "data_seed", "mf_T"))
