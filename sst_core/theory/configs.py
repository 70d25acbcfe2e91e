"""Experiment configs and grids of the chapter "Memory function and the direction of learning".

Each config is a frozen dataclass with ``experiment``, ``profile`` and ``seed``;
``sst_core.theory.memory.run(cfg)`` returns its stored record (computing it through
``sst_core.results.cached_run`` if needed). The grids say which configs the chapter and
the ``memory`` report use under a profile.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..config import Profile

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


def memory_grid(P: Profile) -> list[MemoryCurveConfig]:
    """Every initialisation at every dt of ``DTS``, at the profile's N and T."""
    return [MemoryCurveConfig(init=k, N=P.mem_N, T=P.mem_T, dt=dt, method="zoh",
                              teacher_delay=P.mem_T // 2, n_grid=160, seed=P.seed, profile=P.name)
            for k in INITS for dt in DTS]


def reference_grid(P: Profile) -> list[MemoryCurveConfig]:
    """The configurations of the reference's table (N=64, T=4096); under ``smoke`` the
    profile's N and T instead (numbers then not comparable)."""
    N, T = (P.mem_N, P.mem_T) if P.name == "smoke" else (REFERENCE_N, REFERENCE_T)
    return [MemoryCurveConfig(init=k, N=N, T=T, dt=dt, method="zoh", teacher_delay=T // 2,
                              n_grid=160, seed=P.seed, profile=P.name)
            for (k, dt) in REFERENCE_VALUES]


def simulation_grid(P: Profile) -> list[SimulationCheckConfig]:
    """S4D-Inv at dt = 0.01 (well-conditioned, so a float64 least-squares readout is exact
    enough to compare with), at the profile's N and T."""
    return [SimulationCheckConfig(init="inv", N=P.mem_N, T=P.mem_T, dt=0.01,
                                  n_samples=P.mem_sim_T, seed=P.seed, profile=P.name)]


def readout_gd_grid(P: Profile) -> list[ReadoutGDConfig]:
    """The worked example with a random spectrum and with S4D-Inv."""
    return [ReadoutGDConfig(init=k, N=EXAMPLE_N, T=EXAMPLE_T, dt=EXAMPLE_DT,
                            teacher_delay=EXAMPLE_DELAY, n_samples=P.mem_sim_T,
                            steps=P.mem_gd_steps, seed=P.seed, profile=P.name)
            for k in ("random", "inv")]
