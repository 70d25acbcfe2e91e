"""Paper 2 (memory determines learning direction): the run functions of the memory
chapter and the grids of its chapters (memory functions; frozen versus learned spectra on
LRA)."""
from __future__ import annotations

from typing import Any

import numpy as np

from sst_core.spec.configs import (
    DTS,
    EXAMPLE_DELAY,
    EXAMPLE_DT,
    EXAMPLE_N,
    EXAMPLE_T,
    INITS,
    REFERENCE_N,
    REFERENCE_T,
    REFERENCE_VALUES,
    LRAConfig,
    MemoryCurveConfig,
    MemoryHorizonConfig,
    NoisyMemoryConfig,
    ReadoutGDConfig,
    SimulationCheckConfig,
    SpectrumSplitConfig,
)
from sst_core.spec.profiles import Profile
from sst_core.training import lra_data
from sst_core.theory.memory import (
    delay_grid,
    dense_ssm,
    discretize,
    discretize_dense,
    impulse_response,
    init_Lambda,
    memory_from_simulation,
    memory_function,
    memory_function_gramian,
    memory_function_info,
    optimal_readout,
    projection_column,
    readout_gradient,
    simulate_states,
    spectrum,
    vandermonde,
    with_conjugates,
)


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


LRA_MAIN_INITS = ("inv", "lin")  # the main table: S4D-Inv and S4D-Lin


# the ablation's eigenvalue types; its "linear" is the real-axis spectrum ("real"), not S4D-Lin
LRA_ABLATION_INITS = ("random", "real", "step", "inv")


def _lra(P, task: str, init: str, frozen: bool, seed: int,
         fingerprints: dict[str, str] | None = None) -> LRAConfig:
    """One run of an LRA grid. A ``lra_*`` task holds the fingerprint of the files it reads
    from ``$SST_LRA_DATA`` when that is set (``fingerprints``: those a grid has computed,
    by task), so that other data is another run."""
    H, n_layers = P.lra_model_size(task)
    kw = dict(H=H, N=P.lra_N, n_layers=n_layers, epochs=P.lra_epochs,
              batch=P.lra_batch, n_train=P.lra_train_size(task),
              max_length=P.lra_listops_max_len,
              image_side=P.lra_image_side, mf_T=P.lra_mf_T,
              difficulty=P.lra_pathfinder_difficulty)
    kw.update(LRA_TASK_SETTINGS.get(task, {}))
    if P.name == "paper":  # the published per-task configuration replaces the profile's sizes
        kw.update(LRA_PAPER_CONFIGS.get(task.removeprefix("lra_").replace("cifar", "digits"), {}))
    if task in lra_data.READER_OF and lra_data.data_root() is not None:
        fingerprints = {} if fingerprints is None else fingerprints
        if task not in fingerprints:
            fingerprints[task] = lra_data.data_fingerprint(task, kw["difficulty"])
        kw["data_fingerprint"] = fingerprints[task]
    return LRAConfig(task=task, init=init, freeze_spectrum=frozen, seed=seed, profile=P.name, **kw)


# Per-task settings of state-spaces/s4 that differ from LRAConfig's defaults (reference 9.1).
LRA_TASK_SETTINGS: dict[str, dict[str, Any]] = {
    "listops": {"prenorm": False},
    "lra_listops": {"prenorm": False},
    "pathfinder": {"lr": 0.004, "weight_decay": 0.03, "decoder": "last"},
    "lra_pathfinder": {"lr": 0.004, "weight_decay": 0.03, "decoder": "last"},
    "digits": {"norm": "layer", "prenorm": False},
    "lra_cifar": {"norm": "layer", "prenorm": False, "dropout": 0.1},
    "lra_aan": {"decoder": "retrieval"},
}


# The paper profile: state-spaces/s4's `simple`-branch LRA configs (reference 9.1), with
# N = 64 everywhere. Training-set sizes are LRA's (ListOps 96,000; Pathfinder 160,000 x 0.8;
# CIFAR 45,000). `digits` keeps its own size (1,797 images in all) but CIFAR's model.
LRA_PAPER_CONFIGS: dict[str, dict[str, Any]] = {
    "listops": {"H": 128, "n_layers": 8, "batch": 50, "epochs": 40, "lr": 0.01,
                "weight_decay": 0.05, "warmup_frac": 1_000 / 80_000, "n_train": 96_000,
                "max_length": 2000},
    "pathfinder": {"H": 256, "n_layers": 6, "batch": 64, "epochs": 200, "lr": 0.004,
                   "weight_decay": 0.03, "warmup_frac": 2_500 / 500_000, "n_train": 128_000},
    "digits": {"H": 512, "n_layers": 6, "batch": 50, "epochs": 200, "lr": 0.01,
               "weight_decay": 0.05, "warmup_frac": 1_000 / 200_000, "dropout": 0.1},
    "imdb": {"H": 256, "n_layers": 6, "batch": 16, "epochs": 32, "lr": 0.01,
             "weight_decay": 0.05, "warmup_frac": 1_000 / 50_000},
    "aan": {"H": 256, "n_layers": 6, "batch": 64, "epochs": 20, "lr": 0.01, "ssm_lr": 0.01,
            "weight_decay": 0.05, "warmup_frac": 2_500 / 50_000},
}


def lra_main_grid(P, tasks=None) -> list[LRAConfig]:
    """The main table: S4D-Inv and S4D-Lin, learned and frozen, every seed, every task."""
    fingerprints: dict[str, str] = {}
    return [_lra(P, t, init, frozen, seed, fingerprints) for t in (tasks or P.lra_tasks)
            for init in LRA_MAIN_INITS for frozen in (False, True) for seed in P.lra_seeds]


def lra_ablation_grid(P, tasks=None) -> list[LRAConfig]:
    """The ablation: random, linear, step and S4D-Inv eigenvalues, learned and frozen."""
    fingerprints: dict[str, str] = {}
    return [_lra(P, t, init, frozen, seed, fingerprints) for t in (tasks or P.lra_tasks)
            for init in LRA_ABLATION_INITS for frozen in (False, True)
            for seed in P.lra_ablation_seeds]


def lra_probe_grid(P) -> list[LRAConfig]:
    """The learnability probes: learned S4D-Inv on each of ``P.lra_probe_tasks``, the
    first two seeds. A task outside ``P.lra_tasks`` (its full grid does not fit the
    profile's budget) trains as its own size says (``P.lra_train_size``, its model
    ``P.lra_model_size``): is it learned at this scale at all? A task of the grid that
    trains on more examples (``P.lra_task_n_train``) trains here on the common
    ``P.lra_n_train``: what does the common size reach?"""
    from dataclasses import replace

    fingerprints: dict[str, str] = {}
    return [_lra(P, t, "inv", False, seed, fingerprints) if t not in P.lra_tasks
            else replace(_lra(P, t, "inv", False, seed, fingerprints), n_train=P.lra_n_train)
            for t in P.lra_probe_tasks for seed in P.lra_seeds[:2]]


def lra_pathfinder_grid(P) -> list[LRAConfig]:
    """The main table's grid (S4D-Inv and S4D-Lin, learned and frozen, every seed of
    ``P.lra_seeds``) on each probe task outside ``P.lra_tasks``, at the probe's size (its
    own training set and model, ``P.lra_train_size`` and ``P.lra_model_size``): the
    probe's runs (:func:`lra_probe_grid`) are runs of it. Its own sweep (``sst sweep
    lra_pathfinder``): in the ``lra`` sweep its runs would count against the chapter's
    records until computed."""
    extra = tuple(t for t in P.lra_probe_tasks if t not in P.lra_tasks)
    return lra_main_grid(P, tasks=extra) if extra else []


def lra_pathfinder_ablation_grid(P) -> list[LRAConfig]:
    """The ablation's grid (:func:`lra_ablation_grid`: random, real, step and S4D-Inv
    eigenvalues, learned and frozen, every seed of ``P.lra_ablation_seeds``) on each probe
    task outside ``P.lra_tasks``, at the probe's size as :func:`lra_pathfinder_grid` has
    it; its S4D-Inv runs are runs of that grid. Its own sweep (``sst sweep
    lra_pathfinder_ablation``), staged like that grid's."""
    extra = tuple(t for t in P.lra_probe_tasks if t not in P.lra_tasks)
    return lra_ablation_grid(P, tasks=extra) if extra else []


def lra_data_probe_grid(P) -> list[LRAConfig]:
    """The data probes: learned S4D-Inv on each of ``P.lra_data_probe_tasks`` with
    ``P.lra_data_probe_factor`` times the profile's common training-set size, the first seed (a
    task whose runs memorise their training set: does more data lift it?)."""
    from dataclasses import replace

    fingerprints: dict[str, str] = {}
    return [replace(_lra(P, t, "inv", False, P.lra_seeds[0], fingerprints),
                    n_train=P.lra_data_probe_factor * P.lra_n_train)
            for t in P.lra_data_probe_tasks]


HORIZON_INITS = ("inv", "lin", "real", "random", "step")  # every kind of init_Lambda


def memory_horizon_grid(P: Profile) -> list[MemoryHorizonConfig]:
    """Delayed recall at every delay of ``P.horizon_taus``: every initialisation, learned
    and frozen, every seed of ``P.horizon_seeds`` (one layer; test curves at ten points)."""
    return [MemoryHorizonConfig(init=init, freeze_spectrum=frozen, tau=tau, N=P.horizon_N,
                                H=P.horizon_H, steps=P.horizon_steps, batch=P.horizon_batch,
                                n_test=P.horizon_n_test,
                                eval_every=max(1, P.horizon_steps // 10), seed=seed,
                                profile=P.name)
            for tau in P.horizon_taus for init in HORIZON_INITS for frozen in (False, True)
            for seed in P.horizon_seeds]


# Noise levels of the memory read with noise: variances as fractions of the mean state
# variance, from about float32's rounding of a sum of terms (1e-8) to 1% of the signal.
MEMORY_NOISE = (1e-8, 1e-6, 1e-4, 1e-2)


def memory_noise_grid(P: Profile) -> list[NoisyMemoryConfig]:
    """``M_delta[tau]`` at every level of :data:`MEMORY_NOISE` for the initial spectrum of
    every run of :func:`memory_horizon_grid` (learned and frozen alike, so that each cell of
    the horizon table has its own)."""
    return [NoisyMemoryConfig(run=c, noise=MEMORY_NOISE, profile=P.name)
            for c in memory_horizon_grid(P)]


# how far the claim-3 split moves a real-axis layer's eigenvalues off the axis
SPLIT_EPS = 1e-3


def spectrum_split_grid(P: Profile) -> list[SpectrumSplitConfig]:
    """The one real-axis layer the LRA chapter splits off the axis: an initial layer of its
    LRA runs' size (``lra_H`` x ``lra_N``, their step range and discretisation) over the
    window of their supremum memory (``lra_mf_T``), moved by :data:`SPLIT_EPS`, read with
    the noise of :data:`MEMORY_NOISE`."""
    return [SpectrumSplitConfig(H=P.lra_H, N=P.lra_N, T=P.lra_mf_T, eps=SPLIT_EPS,
                                noise=MEMORY_NOISE, profile=P.name, dt_min=LRAConfig.dt_min,
                                dt_max=LRAConfig.dt_max, disc=LRAConfig.disc)]


def run_memory_curve(cfg) -> dict[str, Any]:
    """Memory function, cumulative capacity and one projector column on a delay grid."""
    import time

    mu = spectrum(cfg.init, cfg.N, cfg.dt, method=cfg.method, seed=cfg.seed)  # (N,)
    start = time.perf_counter()
    info = memory_function_info(mu, cfg.T, teacher_delay=cfg.teacher_delay)
    wall = time.perf_counter() - start
    M = info["memory"]  # (T,)
    grid = delay_grid(cfg.T, cfg.n_grid)
    column = info["column"]  # (T,)
    return {
        "delay": grid.tolist(),
        "memory": M[grid].tolist(),
        "cumulative": np.cumsum(M)[grid].tolist(),
        "capacity": float(M.sum()),
        "rank": info["rank"],
        "dps": info["dps"],
        "column": np.asarray(column, dtype=float)[grid].tolist(),
        "mu_re": mu.real.tolist(),
        "mu_im": mu.imag.tolist(),
        "memory_wall_s": round(wall, 3),  # memory function and column together
    }


def run_simulation_check(cfg) -> dict[str, Any]:
    """Diagonal S4D vs dense S4 with the same spectrum: formula and simulation."""
    Lambda = init_Lambda(cfg.init, cfg.N, seed=cfg.seed, dt=cfg.dt)  # (N/2,)
    mu, B_bar = discretize(with_conjugates(Lambda), cfg.dt)  # (N,), (N,)
    grid = delay_grid(cfg.T, 24)
    # diagonal S4D: complex state z (B = 1, ZOH B_bar), read as the real state [Re z; Im z]
    half = cfg.N // 2
    z_kernel = mu[None, :half] ** np.arange(cfg.T)[:, None] * B_bar[None, :half]  # (T, N/2)
    diag_kernel = np.concatenate([z_kernel.real, z_kernel.imag], axis=1)  # (T, N)
    A, B = dense_ssm(Lambda, seed=cfg.seed)  # (N, N), (N,)
    A_bar, Bd_bar = discretize_dense(A, B, cfg.dt)
    dense_kernel = impulse_response(A_bar, Bd_bar, cfg.T)  # (T, N)
    mu_dense = np.linalg.eigvals(A_bar)
    eig_err = max(np.min(np.abs(mu_dense - z)) for z in mu)
    return {
        "delay": grid.tolist(),
        "formula": memory_function(mu, cfg.T, grid).tolist(),
        "formula_dense_eigs": memory_function(mu_dense, cfg.T, grid, tol=1e-9).tolist(),
        "gramian_diag": memory_function_gramian(diag_kernel, grid).tolist(),
        "gramian_dense": memory_function_gramian(dense_kernel, grid).tolist(),
        "sim_diag": memory_from_simulation(diag_kernel, grid, cfg.n_samples, seed=cfg.seed).tolist(),
        "sim_dense": memory_from_simulation(dense_kernel, grid, cfg.n_samples, seed=cfg.seed).tolist(),
        "eig_max_err": float(eig_err),
        "cond_Q_kernel": float(np.linalg.cond(dense_kernel)),
    }


def run_readout_gd(cfg) -> dict[str, Any]:
    """Gradient descent on the readout for a teacher y_t = u_{t - teacher_delay}.

    Two runs from theta = 0 with step 1 / lambda_max(Hessian): on the white-noise
    expectation of the loss (the gradient is ``readout_gradient``), and on a simulated
    sample (test loss on a fresh sample). The sample loss is quadratic, so its gradient is
    taken from its moments; torch autograd checks that gradient at the start and the end.
    """
    import torch

    mu = spectrum(cfg.init, cfg.N, cfg.dt, seed=cfg.seed)  # (N,)
    T, tau0 = cfg.T, cfg.teacher_delay
    alpha = np.zeros(T)
    alpha[tau0] = 1.0  # (T,)
    V = vandermonde(mu, T, real=True)  # (N, T)
    G_r = V @ V.T  # (N, N)
    theta_star = optimal_readout(alpha, mu)
    M_teacher = memory_function(mu, T, tau0)
    grid = delay_grid(T, 120)
    lr = 1.0 / (2.0 * np.linalg.eigvalsh(G_r)[-1])
    record_at = set(np.unique(np.round(np.geomspace(1, cfg.steps, 60)).astype(int)).tolist()) | {0}

    steps, pop_loss, dist, theta_norm = [], [], [], []
    theta = np.zeros(cfg.N)
    V_alpha = V @ alpha  # (N,)
    for k in range(cfg.steps + 1):
        if k in record_at:
            steps.append(k)
            # <u^2> ||V^T theta - alpha||^2 expanded (u_var = 1, B = 1)
            pop_loss.append(float(theta @ G_r @ theta - 2 * theta @ V_alpha + alpha @ alpha))
            dist.append(float(np.linalg.norm(theta - theta_star)))
            theta_norm.append(float(np.linalg.norm(theta)))
        grad = 2.0 * (G_r @ theta - V_alpha)  # = readout_gradient(theta, alpha, mu)
        theta = theta - lr * grad
    grad_formula_end = readout_gradient(theta, alpha, mu)
    assert np.allclose(grad_formula_end, 2.0 * (G_r @ theta - V_alpha), rtol=1e-9, atol=1e-12)

    # empirical run: simulated white noise, torch autograd
    def sample(seed):
        rng = np.random.default_rng(seed)
        u = rng.standard_normal(cfg.n_samples + T - 1)
        h = simulate_states(V.T, u)[T - 1:]  # (n, N)
        y = u[np.arange(T - 1, u.size) - tau0]  # (n,)
        return torch.tensor(h), torch.tensor(y)

    h, y = sample(cfg.seed)  # (n, N), (n,)
    h_test, y_test = sample(cfg.seed + 1)
    n = h.shape[0]
    # the empirical loss is quadratic: keep its moments, and check them against autograd
    H, hy, yy = (h.T @ h / n).numpy(), (h.T @ y / n).numpy(), float(y @ y / n)  # (N,N), (N,), ()
    Ht, hyt, yyt = (h_test.T @ h_test / n).numpy(), (h_test.T @ y_test / n).numpy(), float(y_test @ y_test / n)
    lr_emp = 1.0 / (2.0 * np.linalg.eigvalsh(H)[-1])

    def autograd_gradient(theta_np):
        th = torch.tensor(theta_np, requires_grad=True)
        loss = torch.mean((h @ th - y) ** 2)
        (grad,) = torch.autograd.grad(loss, th)
        return grad.numpy()

    emp_train, emp_test, emp_dist = [], [], []
    th = np.zeros(cfg.N)
    grad_check = {"formula_at_0": readout_gradient(np.zeros(cfg.N), alpha, mu).tolist(),
                  "autograd_at_0": autograd_gradient(th).tolist()}
    for k in range(cfg.steps + 1):
        if k in record_at:
            emp_train.append(float(th @ H @ th - 2 * th @ hy + yy))
            emp_test.append(float(th @ Ht @ th - 2 * th @ hyt + yyt))
            emp_dist.append(float(np.linalg.norm(th - theta_star)))
        th = th - lr_emp * 2.0 * (H @ th - hy)
    grad_check["moments_vs_autograd_max_abs"] = float(np.max(np.abs(
        autograd_gradient(th) - 2.0 * (H @ th - hy))))
    return {
        "steps": steps,
        "pop_loss": pop_loss,
        "dist": dist,
        "theta_norm": theta_norm,
        "emp_train_loss": emp_train,
        "emp_test_loss": emp_test,
        "emp_dist": emp_dist,
        "M_teacher": float(M_teacher),
        "M_40": float(memory_function(mu, T, 40)),  # the Summary: "random: M vanishes beyond ~40"
        "theta_star": theta_star.tolist(),
        "theta_final": theta.tolist(),
        "cond_G": float(np.linalg.cond(G_r)),
        "lr": float(lr),
        "grad_check": grad_check,
        "mu_re": mu.real.tolist(),
        "mu_im": mu.imag.tolist(),
        "delay": grid.tolist(),
        "memory": memory_function(mu, T, grid).tolist(),
        "column": np.asarray(projection_column(mu, T, tau0), dtype=float)[grid].tolist(),
    }

