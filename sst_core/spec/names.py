"""One spelling for every name on the command line: experiment, sweep and report names use
underscores; a name written with hyphens is accepted with a hint on stderr."""
from __future__ import annotations

import sys
from typing import Iterable


def one_spelling(value: str, names: Iterable[str], what: str) -> str:
    """``value`` if it is one of ``names``; with hyphens written as underscores, accepted
    with a hint on stderr; else ValueError naming ``what`` and the allowed names."""
    names = list(names)
    if value in names:
        return value
    spelled = value.replace("-", "_")
    if spelled in names:
        print(f"did you mean {spelled}? accepted", file=sys.stderr)
        return spelled
    raise ValueError(f"unknown {what} {value!r}; allowed: {', '.join(names)}")
