"""Papermill parameters of the chapters, and the profile ``best`` means for each.

Each notebook declares which profile values its papermill ``parameters`` cell may
override (:data:`NOTEBOOKS`). A notebook turns its parameters into settings with
:func:`from_notebook`, which fails before any work starts on an unknown profile, an
unknown parameter or a wrongly typed one, naming what is allowed.

``best`` picks per chapter the largest profile whose records are all stored, counting
record files only (:func:`chapter_coverage`): it never fingerprints code (staleness is
``sst status``'s business) and never trains. :func:`under_way` names a larger profile
whose sweep of a chapter has begun, so that the page can show its records so far.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping

from sst_core.experiments.registry import chapter_sweeps, phases
from sst_core.spec.profiles import PROFILES, ConfigError, Profile, get_profile
from sst_core.store.records import RecordError, load_record, record_path, results_dir

# notebook name -> the profile fields its parameters cell may override
NOTEBOOKS: dict[str, tuple[str, ...]] = {
    "p1_groups": ("seed", "n_words", "word_length"),
    "p2_memory": ("seed", "mem_N", "mem_T", "mem_sim_T", "mem_gd_steps"),
    "p1_table2": ("track_max_steps", "track_batch", "track_eval_samples", "track_stack"),
    "p1_table3": ("track_max_steps", "track_batch", "track_eval_samples", "track_stack"),
    "p1_theory": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples"),
    "p1_diagnostics": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples",
                       "diag_rollout", "track_stack"),
    "p2_lra": ("lra_epochs", "lra_n_train", "lra_batch", "horizon_steps"),
    "bench": (),
    "book_status": (),
    "overview": (),
    "beyond_groups": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples",
                      "diag_rollout", "track_stack"),
    "beyond_label_free": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples",
                          "diag_rollout", "track_stack"),
    "beyond_spectra": ("track_max_steps", "track_batch", "track_eval_samples", "diag_rollout",
                       "track_stack"),
    "beyond_semi_affine": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples",
                           "diag_rollout", "track_stack"),
    "beyond_delta": ("track_max_steps", "track_batch", "track_eval_samples", "diag_samples",
                     "diag_rollout", "track_stack"),
}


# Names IPython puts into a kernel's namespace; they are not parameters.
_KERNEL_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


# A notebook may also be run with profile "best": the first of BEST_ORDER whose stored
# records cover the whole chapter (so nothing is trained), `quick` otherwise.
BEST = "best"
BEST_ORDER = ("paper", "standard")


NOTEBOOK_PROFILES = (*PROFILES, BEST)


def best_profile(notebook: str) -> tuple[str, str]:
    """The profile ``best`` means for ``notebook``, and why: :data:`BEST_ORDER`'s first
    profile whose records cover the whole chapter (so nothing is trained), else ``quick``."""
    counts = []
    for name in BEST_ORDER:
        have, need = chapter_coverage(notebook, name)
        if not need:
            return "quick", "best available: this chapter has no stored sweep and computes at `quick`"
        if have == need:
            passed = "".join(f"; {n}: {h} of {k} records" for n, h, k in counts)
            return name, (f"best available: all {need} `{name}`-profile records of this chapter "
                          f"are stored{passed}")
        counts.append((name, have, need))
    shown = ", ".join(f"`{n}` {h} of {k}" for n, h, k in counts)
    return "quick", (f"best available: no larger profile's records cover this chapter "
                     f"({shown} stored), so this page shows `quick`")


@dataclasses.dataclass(frozen=True)
class UnderWay:
    """A larger profile's sweep of a chapter that has begun but not finished."""

    profile: Profile
    stored: int  # runs of the chapter with a stored record under ``profile``
    total: int  # runs the chapter reads under ``profile``


def under_way(notebook: str, shown: str, root: Path | None = None) -> UnderWay | None:
    """The sweep of ``notebook`` under a profile larger than ``shown`` that has some but not
    all of its records stored: the first such of :data:`BEST_ORDER` (larger first; only
    those before ``shown`` when ``shown`` is one of them). None when there is none, or the
    chapter reads no sweep. Counts record files as :func:`chapter_coverage` does."""
    larger = BEST_ORDER[:BEST_ORDER.index(shown)] if shown in BEST_ORDER else BEST_ORDER
    for name in larger:
        have, need = chapter_coverage(notebook, name, root)
        if 0 < have < need:
            return UnderWay(get_profile(name), have, need)
    return None


def complete_larger(notebook: str, shown: str, root: Path | None = None) -> tuple[str, int] | None:
    """``(profile, runs)`` of the first profile of :data:`BEST_ORDER` larger than ``shown``
    whose records cover the whole chapter (what ``best`` would show, where a build was
    asked for ``shown``); None when there is none, or the chapter reads no sweep."""
    larger = BEST_ORDER[:BEST_ORDER.index(shown)] if shown in BEST_ORDER else BEST_ORDER
    for name in larger:
        have, need = chapter_coverage(notebook, name, root)
        if need and have == need:
            return name, need
    return None


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


def allowed_range(field: str) -> tuple[float, bool, str]:
    """``(low, inclusive, text)``: the range a :class:`Profile` field's values (each
    element of a tuple field) must lie in, derived from its name and type: seeds >= 0,
    learning rates > 0, every other int (sizes, lengths, steps, counts) >= 1."""
    if field == "seed" or field.endswith(("_seed", "_seeds")):
        return 0, True, ">= 0"
    if field.endswith(("_lr", "_lrs")) or field == "lr":
        return 0, False, "> 0"
    return 1, True, ">= 1"


# A size parameter (an int >= 1) may be at most CAP_FACTOR times the largest value a
# profile gives it (a notebook then runs in about the memory and time of ten paper-sized
# ones, not until the kernel is killed); $SST_PARAMETER_CAP_FACTOR raises the factor.
CAP_FACTOR = 10
CAP_ENV = "SST_PARAMETER_CAP_FACTOR"


def _profile_values(P: Profile, field: str) -> tuple:
    value = getattr(P, field)
    return value if isinstance(value, tuple) else (value,)


def parameter_cap(field: str) -> tuple[int, int, str] | None:
    """``(cap, factor, profile)``: the largest value a size parameter may take, ``factor``
    (:data:`CAP_FACTOR`, or ``$SST_PARAMETER_CAP_FACTOR``) times the largest value a
    profile gives it (that ``profile``'s); None for a field without a cap (seeds, learning
    rates)."""
    import os

    if allowed_range(field)[2] != ">= 1":
        return None
    env = os.environ.get(CAP_ENV)
    try:
        factor = int(env) if env else CAP_FACTOR
    except ValueError:
        factor = 0
    if factor < 1:
        raise ConfigError(f"${CAP_ENV}={env!r} is not allowed: an int >= 1")
    largest = max(((v, P.name) for P in PROFILES.values() for v in _profile_values(P, field)
                   if isinstance(v, int) and not isinstance(v, bool)), default=None)
    return None if largest is None else (factor * largest[0], factor, largest[1])


def _check_range(notebook: str, key: str, value: Any) -> None:
    low, inclusive, text = allowed_range(key)
    values = value if isinstance(value, tuple) else (value,)
    for v in values:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and (
                v != v or v < low or (v == low and not inclusive)):
            where = "" if v is value else f" (element {v!r})"
            raise ConfigError(f"parameter {key}={value!r} of notebook {notebook!r} is out of "
                              f"range{where}; allowed: {key} {text}")
    cap = parameter_cap(key)
    for v in values if cap is not None else ():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > cap[0]:
            limit, factor, profile = cap
            where = "" if v is value else f" (element {v!r})"
            raise ConfigError(
                f"parameter {key}={value!r} of notebook {notebook!r} is above its cap "
                f"{limit:,}{where} ({factor} x its value in profile {profile!r}); allowed: "
                f"{key} {text} and at most the cap; to go beyond it set ${CAP_ENV} to a "
                f"factor above {factor}")


def parameters_of(notebook: str) -> tuple[str, ...]:
    """All papermill parameters of a notebook: ``profile`` plus its overridable knobs."""
    if notebook not in NOTEBOOKS:
        raise ConfigError(f"unknown notebook {notebook!r}; known: {', '.join(sorted(NOTEBOOKS))}")
    return ("profile",) + NOTEBOOKS[notebook]


def check_parameters(notebook: str, params: Mapping[str, Any]) -> None:
    """Validate papermill parameters before a notebook runs.

    Raises :class:`ConfigError` for an unknown profile, an unknown parameter, a value
    of the wrong type or out of its field's range (:func:`allowed_range`), naming the
    allowed values.
    """
    allowed = parameters_of(notebook)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ConfigError(
            f"unknown parameter(s) {', '.join(map(repr, unknown))} for notebook {notebook!r}; "
            f"allowed: {', '.join(allowed)}"
        )
    if "profile" in params:
        if not isinstance(params["profile"], str) or params["profile"] not in NOTEBOOK_PROFILES:
            raise ConfigError(f"unknown profile {params['profile']!r} (parameter profile of "
                              f"notebook {notebook!r}); allowed: {', '.join(NOTEBOOK_PROFILES)}")
    types = _field_types()
    for key, value in params.items():
        if key != "profile" and value is not None:
            _check_type(notebook, key, value, types[key])
            _check_range(notebook, key, value)


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


def chapter_coverage(notebook: str, profile: str, root: Path | None = None) -> tuple[int, int]:
    """How many of the runs a chapter reads have a stored record (ok or failed) under
    ``profile``, and how many it reads: ``(stored, total)``; ``(0, 0)`` for a chapter
    that reads no sweep."""
    P = get_profile(profile)
    root = root or results_dir()
    paths = {root / record_file(c) for name in chapter_sweeps(notebook)
             for phase in phases(name, P) for c in phase}
    return sum(_readable(path) for path in paths), len(paths)


_RECORD_FILES: dict[str, Path] = {}  # repr of a config -> its record file under the results folder


def record_file(cfg: Any) -> Path:
    """Where a config's record lies under the results folder (``record_path`` relative to
    it), computed once per config: the run id canonicalises the whole config, the larger
    part of counting a chapter's records, which a book's plan does for every chapter
    under every profile (the same configs over again). Keyed by the config's ``repr``,
    which, unlike equality, tells ``1`` from ``1.0`` and ``True`` from ``1`` as the run id
    does (the configs are dataclasses that show every field)."""
    key = repr(cfg)
    path = _RECORD_FILES.get(key)
    if path is None:
        path = _RECORD_FILES[key] = record_path(cfg, Path())
    return path


def _readable(path: Path) -> bool:
    """Whether a usable record is stored at ``path`` (it is read, its code is not hashed)."""
    try:
        load_record(path)
    except (RecordError, FileNotFoundError):
        return False
    return True
