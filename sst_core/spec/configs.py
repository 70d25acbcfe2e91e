"""Experiment configs: one frozen dataclass per kind of run.

Each carries ``experiment`` (its entry in :mod:`sst_core.experiments.registry`),
``profile`` and ``seed``; :func:`config_hash` gives the run id under which
:func:`sst_core.store.records.cached_run` stores its record. Defaults are the papers'
protocol as far as it is known; the grids of :mod:`sst_core.experiments` size them by
profile.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field, fields
from typing import Any

from sst_core.spec.profiles import ConfigError


# a field's metadata key: the field is left out of config_dict (and so of config_hash) while
# it holds its default, so that adding it kept every earlier run id
OMITTED_AT_DEFAULT = "omitted_at_default"


def _canonical(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in fields(value)
                if not (f.metadata.get(OMITTED_AT_DEFAULT)
                        and getattr(value, f.name) == f.default)}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    return value


def config_dict(cfg: Any) -> dict[str, Any]:
    """A JSON-ready dict of a config dataclass (tuples become lists; a field marked
    :data:`OMITTED_AT_DEFAULT` is left out while it holds its default)."""
    if not (dataclasses.is_dataclass(cfg) and not isinstance(cfg, type)):
        raise TypeError(f"expected a config dataclass instance, got {type(cfg).__name__}")
    return _canonical(cfg)


def config_hash(cfg: Any) -> str:
    """A stable 16-hex-digit id of a config: sha256 of its canonical JSON."""
    return config_dict_hash(config_dict(cfg))


def config_dict_hash(config: dict[str, Any]) -> str:
    """:func:`config_hash` of a config as a record stores it (:func:`config_dict`)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
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
M_P_RULES = ("heldout", "passed_60", "end")  # the checkpoints m_p may come from (training.protocol)
SCHEDULES = ("constant", "cosine")  # learning-rate schedules of the tracking runs


# The largest learning rate a config accepts. The book's grids stay at or below 0.03, and
# AdamW moves every weight by about lr per step whatever the gradient, so a run above 1
# is already wild; 10 leaves room for such experiments and rejects typos such as 1e3 for
# 1e-3 before any work starts.
MAX_LR = 10.0


# Caps on what a config may ask for, checked when it is made (a d_model of 10**6 or an
# n_train of 10**9 would otherwise ask the allocator for terabytes, or run for days, once
# the run starts). Each is far above every profile's value; raise it here for more.
MAX_SIZE = 2**16  # a model's width, state size, depth or vocabulary (also models.registry's)
MAX_LENGTH = 2**16  # a sequence's length (Path-X: 16,384)
MAX_EXAMPLES = 2**22  # examples in a data set, a batch or an evaluation
CAPS = {"MAX_SIZE": ("the largest width, state size or depth", "for a larger model"),
        "MAX_LENGTH": ("the longest sequence", "for longer sequences"),
        "MAX_EXAMPLES": ("the most examples in a set, batch or evaluation", "for more")}


def check_caps(cfg: Any, **caps: tuple[str, ...]) -> None:
    """:class:`ConfigError` naming the first field of ``cfg`` above its cap: ``caps`` maps a
    cap's name (:data:`MAX_SIZE`, :data:`MAX_LENGTH`, :data:`MAX_EXAMPLES`) to the fields it
    bounds (ints, or tuples of ints, already checked to be >= 0)."""
    for cap, names in caps.items():
        limit = globals()[cap]
        for name in names:
            value = getattr(cfg, name)
            biggest = max(value, default=0) if isinstance(value, tuple) else value
            if biggest > limit:
                what, more = CAPS[cap]
                raise ConfigError(f"{type(cfg).__name__}.{name}={value!r} is above the cap "
                                  f"{limit:,} (sst_core.spec.configs.{cap}, {what}; raise it "
                                  f"there {more})")


def check_words(cfg: Any, positive: tuple[str, ...] = (), numbers: tuple[str, ...] = (),
                times: tuple[str, ...] = ()) -> None:
    """The checks of an analysis of a trained tracker (``n_samples`` words of length
    ``rollout``): :class:`ConfigError` unless ``n_samples`` >= 2 (q compares words: one
    word gives no spread), ``rollout`` >= 2, ``seed`` >= 0, the fields ``positive`` ints >= 1,
    ``numbers`` finite numbers > 0 and ``times`` in 1..rollout; words and lengths under
    their caps."""
    import math

    _check_ranges(cfg, (), (), ("rollout", *positive), ("seed",))
    for name, low in (("n_samples", 2), ("rollout", 2)):
        v = getattr(cfg, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= low):
            raise ConfigError(f"{type(cfg).__name__}.{name}={v!r} is not allowed: it must be an "
                              f"int >= {low} (q compares the states of different words)")
    for name in numbers:
        v = getattr(cfg, name)
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                and v > 0):
            raise ConfigError(f"{type(cfg).__name__}.{name}={v!r} is not allowed: it must be a "
                              "finite number > 0")
    for name in times:
        if getattr(cfg, name) > cfg.rollout:
            raise ConfigError(f"{type(cfg).__name__}.{name}={getattr(cfg, name)!r} is not "
                              f"allowed: it must lie in 1..rollout={cfg.rollout}")
    check_caps(cfg, MAX_LENGTH=("rollout",), MAX_EXAMPLES=("n_samples",))


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


# the devices a config may name: "auto" (CUDA when torch sees it, else the CPU), "cpu",
# "cuda" or "cuda:<index>"; whether this machine has it is checked when the run starts
# (sst_core.training.tracking.run_device)
DEVICE_RULE = "'auto', 'cpu', 'cuda' or 'cuda:<index>' (lower case)"


def check_device(cfg: Any) -> None:
    """:class:`ConfigError` unless ``cfg.device`` is spelled as :data:`DEVICE_RULE`."""
    import re

    d = cfg.device
    if not (isinstance(d, str) and re.fullmatch(r"auto|cpu|cuda(:[0-9]+)?", d)):
        raise ConfigError(f"{type(cfg).__name__}.device={d!r} is not allowed: one of "
                          f"{DEVICE_RULE}")


@dataclass(frozen=True)
class TrackingConfig:
    """One training run of group state tracking (``sst_core.training.tracking.train_tracking``).

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
    # after the curriculum passes curriculum_max (sst_core.training.protocol):
    post_steps: int = 2000  # steps at curriculum_max at most (the budget; 0: stop there)
    heldout_every: int = 100  # steps between held-out checks
    heldout_samples: int = 500  # fresh held-out words per check
    heldout_threshold: float = 0.99  # whole-sequence accuracy of the peers' criterion
    heldout_patience: int = 2  # consecutive checks at or above it
    plateau_steps: int = 0  # stop as not learning after this many steps at one length (0: off)
    m_p_at: str = "heldout"  # the checkpoint of the record's m_p: heldout | passed_60 | end
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
                       "eval_samples", "eval_batch", "heldout_every", "heldout_samples",
                       "heldout_patience"),
                      ("seed", "warmup_steps", "post_steps", "plateau_steps"))
        if not (isinstance(self.eval_lengths, tuple) and self.eval_lengths
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1
                        for n in self.eval_lengths)):
            raise ConfigError(f"TrackingConfig.eval_lengths={self.eval_lengths!r} is not "
                              "allowed: a non-empty tuple of ints >= 1")
        check_caps(self, MAX_SIZE=("n_layers", "d_model", "d_state"),
                   MAX_LENGTH=("curriculum_start", "curriculum_max", "eval_lengths"),
                   MAX_EXAMPLES=("batch", "eval_samples", "eval_batch", "heldout_samples"))
        check_device(self)
        if not 0 < self.heldout_threshold <= 1:
            raise ConfigError(f"TrackingConfig.heldout_threshold={self.heldout_threshold!r} is "
                              "not allowed: it must be in (0, 1]")
        if self.m_p_at not in M_P_RULES:
            raise ConfigError(f"TrackingConfig.m_p_at={self.m_p_at!r} is not allowed: one of "
                              f"{', '.join(M_P_RULES)}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"TrackingConfig.schedule={self.schedule!r} is not allowed: one of "
                              f"{', '.join(SCHEDULES)}")


@dataclass(frozen=True)
class DiagnosticsConfig:
    """Error-control diagnostics of one trained tracker (``sst_core.analysis.error_control.diagnose``).

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

    def __post_init__(self) -> None:
        check_words(self, ("t_ref", "t0", "perturb_steps", "n_perturb", "word_length",
                           "n_words"), ("eps", "tau"), ("t_ref", "t0"))


@dataclass(frozen=True)
class SpreadTailConfig:
    """What makes one trained tracker's spread heavy-tailed at one time
    (``sst_core.analysis.spread_tail.run_spread_tail``; chapter "Where affine trackers
    fail"): its per-word spread, state norms, transitions and growth rate at ``t`` on
    ``n_words`` held-out words of the word sample ``seed`` (those of its diagnostics).

    ``t`` is the m_p its diagnostics record measured (``paper1.spread_tail_grid``).
    """

    run: TrackingConfig
    t: int
    n_words: int = 1024
    seed: int = 0
    profile: str = "smoke"
    experiment: str = "tracking_spread_tail"

    def __post_init__(self) -> None:
        _check_ranges(self, (), (), ("t", "n_words"), ("seed",))
        if self.n_words < 2:
            raise ConfigError(f"SpreadTailConfig.n_words={self.n_words!r} is not allowed: it "
                              "must be an int >= 2 (a spread compares words)")
        check_caps(self, MAX_LENGTH=("t",), MAX_EXAMPLES=("n_words",))


@dataclass(frozen=True)
class ExactTrackerConfig:
    """Error-control diagnostics of a constructed Householder tracker
    (``sst_core.experiments.beyond.exact_tracker``; chapter "Affine trackers that should not
    work but do"): ``group``'s tokens applied as reflections in an exact orthogonal
    representation (:func:`sst_core.theory.householder.permutation_tracker`), each token's
    transition rotated by ``drift`` (0: exact), diagnosed on ``n_samples`` words of length
    ``rollout`` by :func:`sst_core.analysis.any_model.diagnose_any`."""

    group: str
    drift: float
    n_samples: int
    rollout: int
    seed: int
    profile: str
    experiment: str = "exact_tracker"

    def __post_init__(self) -> None:
        _check_ranges(self, (), ("drift",), ("n_samples", "rollout"), ("seed",))


@dataclass(frozen=True)
class TorchModuleDiagnosticsConfig:
    """The diagnostics of a trained ``torch_gru`` / ``torch_lstm`` tracker run on the plain
    ``torch.nn.GRU`` / ``LSTM`` inside it (``sst_core.experiments.beyond.torch_module_diagnostics``,
    through :func:`sst_core.analysis.any_model.diagnose_any`, no registry entry), with the
    settings of its :class:`DiagnosticsConfig` so that the two can be compared."""

    run: TrackingConfig
    n_samples: int
    rollout: int = 1000
    seed: int = 0
    profile: str = "smoke"
    experiment: str = "torch_module_diagnostics"

    def __post_init__(self) -> None:
        check_words(self)


@dataclass(frozen=True)
class LabelFreeConfig:
    """q(t) of one trained tracker without the true group states
    (``sst_core.analysis.label_free.run_label_free``; chapter "A label-free warning signal").

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

    def __post_init__(self) -> None:
        check_words(self, ("t_obs", "window_start"), ("tau",), ("t_obs",))
        if not self.window_start < self.t_obs:
            raise ConfigError(f"LabelFreeConfig.window_start={self.window_start!r} is not "
                              f"allowed: it must be below t_obs={self.t_obs} (the fit needs "
                              "two points at least)")


@dataclass(frozen=True)
class SpectraConfig:
    """Paper 2's tools on a trained affine tracker (``sst_core.analysis.spectra.run_spectra``;
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

    def __post_init__(self) -> None:
        _check_ranges(self, (), (), ("n_words", "word_length", "n_preserving",
                                     "preserving_length", "mem_T"), ("seed",))
        check_caps(self, MAX_LENGTH=("word_length", "preserving_length", "mem_T"),
                   MAX_EXAMPLES=("n_words", "n_preserving"))


LRA_TASKS = ("listops", "pathfinder", "digits", "lra_listops", "lra_pathfinder", "lra_imdb",
             "lra_aan", "lra_cifar")


@dataclass(frozen=True)
class LRAConfig:
    """One S4D classifier trained on one LRA task (``sst_core.training.lra.train_lra``).

    Defaults follow ``state-spaces/s4``'s LRA configs where one value serves all tasks
    (reference section 9); the profiles and the task presets override the sizes. Tasks
    named ``lra_*`` read the user's LRA release from ``$SST_LRA_DATA`` (``sst lra
    --data-dir``); the others are generated. The folder is not part of the config, so a
    record names the data set, not where it was on one machine: ``data_fingerprint``
    (``sst_core.tasks.lra.fingerprint`` of the files read; set by the grids) is, so other
    files are another run. Generated tasks have none, and their run ids do not hold it.
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
    # lra_* tasks: the fingerprint of the user's files (16 hex digits); "" for generated
    # data, and then not in the config's dict or hash (the run ids before it stay)
    data_fingerprint: str = field(default="", metadata={OMITTED_AT_DEFAULT: True})

    def __post_init__(self) -> None:
        import re

        fp = self.data_fingerprint
        if not (isinstance(fp, str) and (fp == "" or re.fullmatch("[0-9a-f]{16}", fp))):
            raise ConfigError(f"LRAConfig.data_fingerprint={fp!r} is not allowed: 16 hex "
                              "digits (sst_core.tasks.lra.fingerprint of the files read) or ''")
        if fp and not self.task.startswith("lra_"):
            raise ConfigError(f"LRAConfig.data_fingerprint={fp!r} is not allowed for the "
                              f"generated task {self.task!r}: only lra_* tasks read files")
        # ssm_lr is checked even when freeze_spectrum leaves it unused: the frozen setting
        # is freeze_spectrum, never a zero ssm_lr
        _check_ranges(self, ("lr", "ssm_lr"), ("weight_decay", "grad_clip"),
                      ("H", "N", "n_layers", "epochs", "batch", "n_train", "max_length",
                       "image_side", "pathfinder_size", "eval_batch"),
                      ("seed", "data_seed", "mf_T"))
        check_caps(self, MAX_SIZE=("H", "N", "n_layers"),
                   MAX_LENGTH=("max_length", "mf_T"),
                   MAX_EXAMPLES=("n_train", "batch", "eval_batch"))
        for name in ("image_side", "pathfinder_size"):  # images are read pixel by pixel
            side = getattr(self, name)
            if side * side > MAX_LENGTH:
                raise ConfigError(f"LRAConfig.{name}={side!r} is above the cap: its sequence "
                                  f"of {side * side:,} pixels is longer than {MAX_LENGTH:,} "
                                  "(sst_core.spec.configs.MAX_LENGTH, the longest sequence; "
                                  "raise it there for longer sequences)")
        check_device(self)


@dataclass(frozen=True)
class MemoryHorizonConfig:
    """One causal S4D classifier trained on delayed recall at lag ``tau``
    (``sst_core.training.horizon.train_memory_horizon``; ``sst_core.tasks.delayed_recall``).

    Sequences of ``margin + 1 + tau`` tokens from ``alphabet`` symbols, labelled by the token
    at delay ``tau`` from the end; every training step draws ``batch`` fresh sequences (no
    training set to overfit), the test set is ``n_test`` sequences drawn once from
    ``data_seed``. The model reads the last position (causal, not bidirectional), so its
    memory of delay ``tau`` over a window of ``L`` steps, ``M[tau]``, is what it needs.
    """

    init: str  # eigenvalue initialisation: inv | lin | real | random | step
    freeze_spectrum: bool  # the "reservoir" (RC) setting: Lambda and dt stay at their init
    tau: int  # the delay of the label
    N: int  # state size (real dimension, even)
    H: int  # channels
    steps: int  # training steps (fresh batches)
    batch: int
    seed: int
    profile: str
    n_layers: int = 1
    alphabet: int = 8  # symbols (chance = 1 / alphabet)
    margin: int = 16  # tokens before the target
    n_test: int = 512
    eval_every: int = 50  # steps between test evaluations (and at the end)
    data_seed: int = 0  # the test set (training batches come from seed)
    lr: float = 0.01
    ssm_lr: float = 0.001  # learning rate of Lambda and dt when they are learned
    weight_decay: float = 0.0
    warmup_frac: float = 0.05
    grad_clip: float = 0.0
    dt_min: float = 1e-3
    dt_max: float = 1e-1
    device: str = "auto"
    experiment: str = "memory_horizon"

    def __post_init__(self) -> None:
        _check_ranges(self, ("lr", "ssm_lr"), ("weight_decay", "grad_clip", "warmup_frac"),
                      ("N", "H", "steps", "batch", "n_layers", "n_test", "eval_every"),
                      ("tau", "seed", "margin", "data_seed"))
        check_caps(self, MAX_SIZE=("N", "H", "n_layers"), MAX_LENGTH=("tau", "margin"),
                   MAX_EXAMPLES=("batch", "n_test"))
        check_device(self)
        if self.init not in INITS:
            raise ConfigError(f"MemoryHorizonConfig.init={self.init!r} is not allowed: one of "
                              f"{', '.join(INITS)}")
        if self.N % 2:
            raise ConfigError(f"MemoryHorizonConfig.N={self.N!r} is not allowed: the real "
                              "state size must be even (conjugate pairs)")
        if not (isinstance(self.alphabet, int) and not isinstance(self.alphabet, bool)
                and 2 <= self.alphabet <= 1024):
            raise ConfigError(f"MemoryHorizonConfig.alphabet={self.alphabet!r} is not allowed: "
                              "an int in 2..1024")
        if not self.warmup_frac < 1:
            raise ConfigError(f"MemoryHorizonConfig.warmup_frac={self.warmup_frac!r} is not "
                              "allowed: it must be in [0, 1)")
        if not (isinstance(self.dt_min, (int, float)) and isinstance(self.dt_max, (int, float))
                and 0 < self.dt_min <= self.dt_max <= 10):
            raise ConfigError(f"MemoryHorizonConfig.dt_min={self.dt_min!r}, dt_max={self.dt_max!r} "
                              "are not allowed: need 0 < dt_min <= dt_max <= 10")

    @property
    def length(self) -> int:
        """The sequence length L = margin + 1 + tau."""
        return self.margin + 1 + self.tau

    @property
    def chance(self) -> float:
        return 1.0 / self.alphabet


@dataclass(frozen=True)
class NoisyMemoryConfig:
    """The memory function read with noise, ``M_delta[tau]``, of one memory-horizon run's
    initial spectrum (``sst_core.analysis.memory_noise.run_memory_noise``; chapter "Frozen
    versus learned spectra"): per layer, the largest over channels at the run's delay and
    window, at each relative noise level of ``noise``
    (``sst_core.theory.memory.memory_function_noisy``). Needs no training: the spectrum is
    the one ``run`` starts from (and a frozen run keeps).
    """

    run: MemoryHorizonConfig
    noise: tuple[float, ...]  # noise variances as fractions of the mean state variance
    profile: str
    experiment: str = "memory_noise"

    def __post_init__(self) -> None:
        check_noise_levels(self)


def check_noise_levels(cfg: Any) -> None:
    """:class:`ConfigError` unless ``cfg.noise`` is a non-empty tuple of increasing noise
    levels in [1e-12, 1e6] (noise variances as fractions of the mean state variance)."""
    import math

    noise = cfg.noise
    ok = (isinstance(noise, tuple) and noise
          and all(isinstance(d, (int, float)) and not isinstance(d, bool)
                  and math.isfinite(d) and 1e-12 <= d <= 1e6 for d in noise)
          and list(noise) == sorted(set(noise)))
    if not ok:
        raise ConfigError(f"{type(cfg).__name__}.noise={noise!r} is not allowed: a "
                          "non-empty tuple of increasing numbers in [1e-12, 1e6]")


@dataclass(frozen=True)
class SpectrumSplitConfig:
    """One initial real-axis S4D layer of an LRA run's size, before and after its
    eigenvalues are moved off the real axis by ``i * eps`` and nothing else
    (``sst_core.analysis.spectrum_split.run_spectrum_split``; chapter "Frozen versus learned
    spectra", claim 3): each channel's memory summed over ``T`` delays, the layer's summed
    supremum memory, and the first channel's memory read with each ``noise`` level. Needs
    no training: the layer is the one an LRA run starts from (steps drawn in
    [``dt_min``, ``dt_max``] by ``seed``)."""

    H: int  # channels
    N: int  # state size (real dimension; N/2 eigenvalues and their conjugates)
    T: int  # delays of the window
    eps: float  # how far the eigenvalues leave the real axis
    noise: tuple[float, ...]  # noise variances as fractions of the mean state variance
    profile: str
    dt_min: float = 1e-3
    dt_max: float = 1e-1
    disc: str = "zoh"
    seed: int = 0
    experiment: str = "memory_split"

    def __post_init__(self) -> None:
        import math

        def is_int(v: Any) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        for name, low in (("H", 1), ("N", 2), ("T", 1), ("seed", 0)):
            value = getattr(self, name)
            if not is_int(value) or value < low:
                raise ConfigError(f"SpectrumSplitConfig.{name}={value!r} is not allowed: an "
                                  f"int >= {low}")
        if self.N % 2:
            raise ConfigError(f"SpectrumSplitConfig.N={self.N!r} is not allowed: an even "
                              "int (N/2 eigenvalues and their conjugates)")
        eps = self.eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
            raise ConfigError(f"SpectrumSplitConfig.eps={eps!r} is not allowed: a number in "
                              "(0, 1), how far the eigenvalues leave the real axis")
        steps = (self.dt_min, self.dt_max)
        if not (all(isinstance(d, (int, float)) and not isinstance(d, bool)
                    and math.isfinite(d) for d in steps) and 0 < self.dt_min < self.dt_max):
            raise ConfigError(f"SpectrumSplitConfig (dt_min, dt_max)={steps!r} is not "
                              "allowed: 0 < dt_min < dt_max")
        check_noise_levels(self)


# discretisation steps of the chapter's scan (log-spaced, S4's default range 1e-3 .. 1e-1)
DTS = (0.001, 0.003, 0.01, 0.03, 0.1)


REPORT_DTS = (0.001, 0.01, 0.1)


REPORT_DELAYS = (10, 100, 1000)


INITS = ("inv", "lin", "real", "step", "random")


# The reference's Section 3.4 values (ZOH, N=64, T=4096), computed independently with
# NumPy/mpmath by the reference's authors: predictions this chapter must reproduce.
REFERENCE_N, REFERENCE_T = 64, 4096


REFERENCE_DELAYS = (10, 100, 500, 1000, 4000)


REFERENCE_VALUES = {
    ("inv", 0.001): (0.047, 0.031, 0.025, 0.021, 0.013),
    ("inv", 0.01): (0.275, 0.191, 0.030, 1e-4, 0.0),
    ("inv", 0.1): (0.992, 0.107, 0.0, 0.0, 0.0),
    ("lin", 0.001): (0.036, 0.028, 0.028, 0.028, 0.0011),
    ("real", 0.001): (0.096, 0.033, 0.013, 0.008, 0.004),
}


# The paper's worked example (Section 4 of the reference): N = 4, T = 1024, a teacher
# y_t = u_{t-500}. The paper does not state dt; see the chapter for the choice.
EXAMPLE_N, EXAMPLE_T, EXAMPLE_DELAY, EXAMPLE_DT = 4, 1024, 500, 0.003


@dataclass(frozen=True)
class MemoryCurveConfig:
    """Memory function M[tau] of one initialisation (N real state size, T horizon, dt step)."""

    init: str  # inv | lin | real | step | random (sst_core.theory.memory.init_Lambda)
    N: int  # real state size
    T: int  # horizon (number of delays)
    dt: float  # Delta
    method: str  # zoh | bilinear
    teacher_delay: int  # column of P stored as the gradient weighting of a teacher there
    n_grid: int  # number of delays stored (log-spaced; all special delays included)
    seed: int
    profile: str
    experiment: str = "memory_curve"


@dataclass(frozen=True)
class SimulationCheckConfig:
    """S4 = S4D: a dense A = Q diag(Lambda) Q^{-1} and the diagonal S4D with the same Lambda
    and dt, memory by formula and by white-noise simulation with a least-squares readout."""

    init: str
    N: int
    T: int
    dt: float
    n_samples: int  # length of the white-noise simulation
    seed: int
    profile: str
    experiment: str = "memory_s4_vs_s4d"


@dataclass(frozen=True)
class ReadoutGDConfig:
    """Gradient descent on the readout theta for a teacher y_t = u_{t - teacher_delay}."""

    init: str
    N: int
    T: int
    dt: float
    teacher_delay: int
    n_samples: int  # simulated samples for the empirical (autograd) run
    steps: int  # gradient-descent steps
    seed: int
    profile: str
    experiment: str = "memory_readout_gd"
