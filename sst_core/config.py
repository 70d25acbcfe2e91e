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

    def scale(self, *knobs: str) -> str:
        """A one-line statement of the scale, for figure captions and table notes."""
        shown = ", ".join(f"{k}={getattr(self, k)}" for k in knobs)
        note = " (numbers are meaningless at this scale)" if self.name == "smoke" else ""
        return f"profile `{self.name}`" + (f": {shown}" if shown else "") + note


PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke",
        description="every code path runs in about a minute per notebook on 2 CPU cores",
        seed=0,
        n_words=256,
        word_length=16,
    ),
    "quick": Profile(
        name="quick",
        description="real but reduced runs; the whole book in about an hour on a laptop CPU",
        seed=0,
        n_words=4096,
        word_length=60,
    ),
    "paper": Profile(
        name="paper",
        description="the published protocol as far as it is known; GPU recommended",
        seed=0,
        n_words=100_000,
        word_length=1000,
    ),
}

# notebook name -> the profile fields its parameters cell may override
NOTEBOOKS: dict[str, tuple[str, ...]] = {
    "p1_groups": ("seed", "n_words", "word_length"),
}

# Names IPython puts into a kernel's namespace; they are not parameters.
_KERNEL_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


class ConfigError(ValueError):
    """An unknown profile, notebook or parameter, or a wrongly typed value."""


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
                              f"allowed: {', '.join(PROFILES)}")
        get_profile(params["profile"])
    types = _field_types()
    for key, value in params.items():
        if key != "profile" and value is not None:
            _check_type(notebook, key, value, types[key])


def settings(notebook: str, profile: str, **overrides: Any) -> Profile:
    """The profile, with the notebook's non-None overrides applied."""
    check_parameters(notebook, {"profile": profile, **overrides})
    chosen = {k: v for k, v in overrides.items() if v is not None}
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
