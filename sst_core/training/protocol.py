"""When a tracking run trains on and when it stops: plain logic, tested on constructed curves.

The paper does not state its stopping rule, and where training stops moves m_p in both
directions (a held-out check with this repository's code: the state-dependent RNNs
extrapolate further after 2,000 more steps at length 60, several affine models less far).
So a run follows one fixed protocol and records m_p at fixed checkpoints:

1. **Curriculum** (:class:`~sst_core.training.tracking.Curriculum`): lengths 2, 4, ..., 60;
   the length doubles after ``patience`` epochs at >= 95% training token accuracy.
2. When the curriculum *passes* 60 (the same test at length 60), checkpoint ``passed_60``.
3. **Training goes on at 60** for at most ``post_steps`` more steps (never beyond
   ``max_steps``). Every ``heldout_every`` steps the whole-sequence accuracy on fresh
   held-out words of length 60 is measured; the peers' criterion (jopetty/word-problem,
   kazuki-irie/lie-algebra-state-tracking: 99% validation accuracy) is met at the second
   consecutive check at or above ``heldout_threshold``: checkpoint ``heldout``.
4. The run ends at the end of that budget: checkpoint ``end`` (also when the curriculum
   never passed 60 within ``max_steps``).
5. **Not learning**: a run whose curriculum length has not grown for ``plateau_steps``
   steps (0: never) stops early, before passing 60; its ``end`` is there.

The record's ``m_p`` is the one at the checkpoint named by ``m_p_at``, a rule stated in
advance and equal for every cell: ``heldout`` (the default, the peers' rule) takes the
held-out checkpoint where the criterion was met and the end of the budget where it was
not; ``passed_60`` and ``end`` take those checkpoints. Every checkpoint's m_p is stored,
so the chapter can show how m_p moves with the stopping point.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sst_core.spec.configs import M_P_RULES

CHECKPOINTS = ("passed_60", "heldout", "end")


@dataclass
class Protocol:
    """The stopping state of one run; the trainer reports epochs and held-out checks."""

    max_steps: int
    post_steps: int  # steps at the last curriculum length after passing it, at most
    heldout_every: int  # steps between held-out checks after passing the last length
    heldout_threshold: float  # whole-sequence accuracy of the criterion
    heldout_patience: int  # consecutive checks at or above the threshold
    plateau_steps: int = 0  # stop as not learning after this many steps at one length (0: off)
    passed_step: int | None = field(init=False, default=None)
    heldout_step: int | None = field(init=False, default=None)
    stopped_as: str | None = field(init=False, default=None)  # "budget" | "plateau" | "max_steps"
    checks: list = field(init=False, default_factory=list)  # (step, sequence accuracy)
    _streak: int = field(init=False, default=0)
    _length_since: int = field(init=False, default=0)
    _length: int | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        for name in ("max_steps", "heldout_every", "heldout_patience"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
        if self.post_steps < 0 or self.plateau_steps < 0:
            raise ValueError(f"post_steps={self.post_steps} and plateau_steps="
                             f"{self.plateau_steps} must be >= 0")
        if not 0 < self.heldout_threshold <= 1:
            raise ValueError(f"heldout_threshold={self.heldout_threshold} must be in (0, 1]")

    @property
    def end_step(self) -> int:
        """The step at which the run ends if nothing stops it earlier."""
        if self.passed_step is None:
            return self.max_steps
        return min(self.max_steps, self.passed_step + self.post_steps)

    def curriculum_at(self, step: int, length: int) -> None:
        """The curriculum trains ``length`` after ``step`` steps (for the plateau rule)."""
        if length != self._length:
            self._length, self._length_since = length, step

    def passed(self, step: int) -> None:
        """The curriculum passed its last length after ``step`` steps: ``passed_60``."""
        if self.passed_step is None:
            self.passed_step = step

    def wants_heldout(self, step: int) -> bool:
        """Whether the trainer should measure held-out accuracy after ``step`` steps."""
        return (self.passed_step is not None and self.heldout_step is None
                and step > self.passed_step and (step - self.passed_step) % self.heldout_every == 0)

    def heldout(self, step: int, sequence_accuracy: float) -> bool:
        """Record a held-out check; True when it meets the criterion (``heldout``)."""
        self.checks.append((step, round(float(sequence_accuracy), 6)))
        self._streak = self._streak + 1 if sequence_accuracy >= self.heldout_threshold else 0
        if self._streak >= self.heldout_patience and self.heldout_step is None:
            self.heldout_step = step
            return True
        return False

    def should_stop(self, step: int) -> bool:
        """Whether the run ends after ``step`` steps (sets :attr:`stopped_as`)."""
        if self.passed_step is not None and step >= self.end_step:
            self.stopped_as = "budget"
        elif step >= self.max_steps:
            self.stopped_as = "max_steps"
        elif (self.passed_step is None and self.plateau_steps
              and step - self._length_since >= self.plateau_steps):
            self.stopped_as = "plateau"
        return self.stopped_as is not None


def headline_checkpoint(rule: str, checkpoints: dict[str, dict | None]) -> str:
    """The checkpoint whose m_p is the record's ``m_p`` under ``rule`` (see module doc)."""
    if rule not in M_P_RULES:
        raise ValueError(f"unknown m_p rule {rule!r}; allowed: {', '.join(M_P_RULES)}")
    if rule == "heldout":
        return "heldout" if checkpoints.get("heldout") else "end"
    if rule == "passed_60" and not checkpoints.get("passed_60"):
        return "end"  # never passed: the run's last state
    return rule
