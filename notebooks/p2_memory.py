# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Memory function and the direction of learning
#
# Paper 2 {cite}`guan2025memory` studies what gradient descent can and cannot learn in a
# linear state space model (SSM) such as S4 {cite}`gu2022s4` or S4D {cite}`gu2022s4d`. Its
# tool is the *memory function* of reservoir computing {cite}`jaeger2002shortterm`: how well
# a linear readout of the state recovers the input from $\tau$ steps earlier. The paper
# makes three claims, and this chapter derives and checks each one:
#
# 1. the memory function depends only on the eigenvalues of the state matrix, so S4 and
#    S4D with the same spectrum remember the same things;
# 2. the gradient of the readout sees the teacher only through a projection whose diagonal
#    *is* the memory function, so delays the model does not remember give no learning signal;
# 3. hence the initial spectrum decides what can be learned.
#
# Some of the paper's statements used here (the gradient formula, the worked example, the
# ablation) reached us through a secondary summary rather than the paper text; the sections
# that use them say so. Every formula below is derived in SymPy
# (`sst_core.theory.memory_sym`) and then checked against its numeric twin
# (`sst_core.theory.memory`); `tests/theory` repeats those checks. At this book's scale the
# spectra have $N=$ {glue:text}`N` states and the memory function spans $T=$
# {glue:text}`T` delays (the paper's worked example: $N=4$, $T=1024$), and the white-noise
# simulations run {glue:text}`n_sim` steps.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, and None = take the profile's value.
profile = "quick"
seed = None
mem_N = None
mem_T = None
mem_sim_T = None
mem_gd_steps = None

# %% tags=["remove-input"]
from sst_core.book import params

P = params.from_notebook("p2_memory", globals())  # fails here on a typo or a wrong type
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import HTML, Math, display
from myst_nb import glue

from sst_core.experiments import paper2
from sst_core.experiments import runs as experiments_runs
from sst_core.figures import memory as plots_memory
from sst_core.figures.common import png
from sst_core.reports.memory import (capacity_delays, capacity_table, memory_table,
                                     reference_comparison, simulation_check)
from sst_core.spec import configs
from sst_core.theory import memory as mf
from sst_core.theory import memory_sym as ms

for name, value in {"N": P.mem_N, "T": P.mem_T, "n_sim": P.mem_sim_T}.items():
    glue(name, value, display=False)

# %% [markdown]
# ## The model and the five spectra
#
# A single-input linear SSM $\dot h = Ah + Bu$ is discretised with step $\Delta$ (`dt`) into
# $h_t = \bar A h_{t-1} + \bar B u_t$. We use zero-order hold (ZOH), the paper's choice according to the secondary summary:
# $\bar A = e^{\Delta A}$, so each eigenvalue $\lambda_n$ of $A$ becomes
# $\mu_n = e^{\Delta\lambda_n}$ (`discretize`; `method="bilinear"` is also available). As in
# `state-spaces/s4`, the state includes the current input, so
# $h_t=\sum_{\tau\ge0}\bar A^{\tau}\bar B\,u_{t-\tau}$ and delay $\tau=0$ is the current input.
# The paper writes $x_{k+1}=Ax_k+Bu_k$, which shifts the delay axis by one step and changes
# nothing else.
#
# S4D keeps $A$ diagonal and complex and stores one member of each conjugate pair; the real
# state has dimension $N$. `init_Lambda(kind, N)` returns those $N/2$ stored eigenvalues, and
# `with_conjugates` gives all $N$ of them, which is what the memory function takes. The five
# initialisations are listed in {numref}`tab-mem-inits`.
#
# ```{table} The five initialisations: the stored eigenvalues $\lambda_n$, $n=0,\dots,N/2-1$.
# :name: "tab-mem-inits"
#
# | kind | $\lambda_n$ | source |
# |---|---|---|
# | `inv` (S4D-Inv) | $-\tfrac12 + i\,\tfrac N\pi\big(\tfrac N{2n+1}-1\big)$ | S4D code |
# | `lin` (S4D-Lin) | $-\tfrac12 + i\pi n$ | S4D code |
# | `real` (S4D-Real) | $-(n+1)$, the eigenvalues of the HiPPO-LegS matrix | S4D code |
# | `step` | $-\tfrac12(n+1) + i\pi n$ | **our proposal** |
# | `random` | $\mu_n$ uniform (by area) in the upper half of the unit disk, $\lambda_n=\log(\mu_n)/\Delta$ | **our proposal** |
# ```
#
# The paper's own "linear", "step" and "random" baselines are described only in words
# ("real, linearly spaced, only on the real axis"; "conjugate, step-wise, linear extension in
# the complex plane"; "uniformly distributed"), and no such code is public. We read "linear"
# as S4D-Real. `step` takes equal steps along a ray: each step adds $-\tfrac12$ to the real
# part and $\pi$ to the imaginary part. `random` places the discrete eigenvalues uniformly in
# the unit disk at the chosen $\Delta$, with a fixed seed. These two are assumptions: the
# paper's baselines may differ. One call computes (or reads back) the memory function of
# every initialisation at every step $\Delta$:

# %%
curves = [experiments_runs.run(c) for c in paper2.memory_grid(P)]
curve = {(r["config"]["init"], r["config"]["dt"]): r for r in curves}

# %% tags=["remove-input"]
dt_show = 0.01
glue("fig_spectra", plots_memory.fig_spectra([curve[(k, dt_show)] for k in configs.INITS]),
     display=False)
plt.close("all")
for k in ("lin", "real"):
    glue(f"rank_{k}", curve[(k, dt_show)]["metrics"]["rank"], display=False)

# %% [markdown]
# ```{glue:figure} fig_spectra
# :name: "fig-mem-spectra"
#
# The discrete eigenvalues $\mu$ of the five initialisations on the unit disk (top) and near
# $\mu = 1$ (bottom), with the rank of each Vandermonde matrix.
# ```
#
# With $\Delta$ small ({numref}`fig-mem-spectra`), every spectrum except `random` (uniform in the disk by construction)
# sits close to $\mu=1$; S4D-Inv spreads its
# frequencies over a wide range, S4D-Lin and `step` use equally spaced ones, and S4D-Real
# stays on the real axis. The panel titles give the rank of the Vandermonde matrix (defined
# next): S4D-Lin's $n=0$ eigenvalue is real, so its "conjugate" duplicates it and the rank is
# {glue:text}`rank_lin` for $N=$ {glue:text}`N`. S4D-Real stores $N/2$ real eigenvalues, each
# twice, and has rank {glue:text}`rank_real`.
#
# ## The memory function
#
# Drive the state with white noise $u$ of variance $\sigma^2$ and ask how well the best
# linear readout $w$ of $h_t$ recovers $u_{t-\tau}$:
#
# $$
# M[\tau]=1-\frac{\min_w\big\langle (w^\top h_t-u_{t-\tau})^2\big\rangle}{\langle u^2\rangle}.
# $$
#
# Over a window of $T$ delays, $h_t=\sum_{k<T} v_k u_{t-k}$ with the Vandermonde columns
# $v_k=(\mu_1^k,\dots,\mu_N^k)^\top$ (take $\bar B=1$ for now; any other $\bar B$ is undone by
# the readout, as shown further down). So $\langle h h^\top\rangle=\sigma^2 VV^\top$ and
# $\langle h\,u_{t-\tau}\rangle=\sigma^2 v_\tau$, and the mean squared error is a quadratic in
# $w$. SymPy minimises it for two eigenvalues $\mu_1,\mu_2$ and $T=3$ delays:

# %%
d_mf = ms.derive_memory_function()
tau = 1
display(Math(r"\mathrm{MSE}(w)/\sigma^2 = w^\top VV^\top w - 2 w^\top v_\tau + 1,\qquad "
             r"w^* = (VV^\top)^{-1} v_\tau"))
display(Math(rf"M[{tau}] = 1-\mathrm{{MSE}}(w^*)/\sigma^2 = " + sp.latex(d_mf["M"][tau])))
print("equals v_tau^T (V V^T)^{-1} v_tau for tau = 0, 1, 2:", d_mf["holds"])

# numeric twin: the same expression at numbers vs sst_core.theory.memory
mu_num = {ms.mu1: 0.9, ms.mu2: 0.5}
sym_vals = np.array([ms.evaluate(d_mf["M"][t], mu_num) for t in range(3)])
num_vals = mf.memory_function([0.9, 0.5], 3)
print("SymPy:", sym_vals.round(6), " memory_function:", num_vals.round(6))
glue("mf_sym_diff", float(np.max(np.abs(sym_vals - num_vals))), display=False)

# %% [markdown]
# The minimiser is $w^*=(VV^\top)^{-1}v_\tau$, and the memory function is the diagonal of a
# projection:
#
# $$
# M[\tau]=v_\tau^{H}(VV^{H})^{-1}v_\tau = P_{\tau\tau},\qquad P=V^{H}(VV^{H})^{-1}V .
# $$
#
# (With complex eigenvalues the transposes are conjugate transposes; the paper writes real
# transposes.) The numeric twin `memory_function` agrees with the symbolic expression to
# {glue:text}`mf_sym_diff:.1e`. It also agrees with the definition itself. In the figure of
# the S4 = S4D section below, a white-noise simulation with a least-squares readout, run
# independently of the formula, reproduces it at every delay.
#
# ## The sum rule: capacity equals rank
#
# $P$ is the orthogonal projector onto the row space of $V$, so its trace is its rank:
#
# $$
# \mathrm{MC}=\sum_{\tau<T}M[\tau]=\operatorname{tr}P=\operatorname{tr}\big((VV^H)^{-1}VV^H\big)=\operatorname{rank}V\le N .
# $$
#
# This is Jaeger's bound on the memory capacity, and for $T\ge N$ distinct eigenvalues it is
# reached *with equality* at finite $T$. SymPy confirms the trace, the rank-deficient case
# $\mu_1=\mu_2$ (pseudo-inverse), and the closed form of the Gram matrix that the numerics use:

# %%
d_sum = ms.derive_sum_rule()
display(Math(r"\operatorname{tr}P = " + sp.latex(d_sum["sum"])
             + r",\qquad \operatorname{tr}P\big|_{\mu_1=\mu_2} = " + sp.latex(d_sum["sum_deficient"])))
display(Math(r"(VV^\top)_{ij}=\sum_{k=0}^{T-1}(\mu_i\mu_j)^k = " + sp.latex(d_sum["gram_geometric"])))
print("P idempotent:", d_sum["idempotent"], "| closed form holds:", d_sum["gram_holds"])

capacity = capacity_table(curves, list(configs.INITS), dt_show)
mu_alias = mf.spectrum("lin", 64, 0.1)  # aliasing at the reference's size
for name, value in {
        "tab_capacity": capacity,
        "cap_err": max(abs(d["capacity"] - d["rank"]) for d in capacity.data),
        "rank_lin_alias": mf.vandermonde_rank(mu_alias, P.mem_T),
        "cap_lin_alias": mf.memory_capacity(mu_alias, P.mem_T)}.items():
    glue(name, value, display=False)

# %% [markdown]
# ```{glue:figure} tab_capacity
# :name: "tab-mem-capacity"
#
# The sum rule at $\Delta=0.01$: the summed memory function of each initialisation beside
# the rank of its Vandermonde matrix.
# ```
#
# For every initialisation ({numref}`tab-mem-capacity`) (at $\Delta=0.01$, $N=$ {glue:text}`N`, $T=$ {glue:text}`T`) the
# summed memory function equals the rank to within {glue:text}`cap_err:.1e`.
#
# One consequence that our implementation notes (written before this code) missed:
# **aliasing lowers the rank**. Under ZOH,
# S4D-Lin's $\mu_n=e^{\Delta(-1/2+i\pi n)}$ and $\mu_{n'}$, or $\bar\mu_{n'}$, coincide exactly
# whenever $\Delta\pi(n\mp n')$ is a multiple of $2\pi$. At $\Delta=0.1$ that happens for
# $n\mp n'=20$, and S4D-Lin with $N=64$ has only {glue:text}`rank_lin_alias` distinct
# eigenvalues.
# Those notes report that float64 finds "numerical rank 20 at $\Delta=0.1$ (true 63)" for
# $N=64$. Our sum of the memory function over all delays is {glue:text}`cap_lin_alias:.6f`.
# The float64 answer happens to be the right one: in float64 the coinciding
# eigenvalues differ by rounding only (about $10^{-15}$). `distinct_eigenvalues` therefore
# merges eigenvalues closer than `tol` $=10^{-12}$.
#
# ## Computing it accurately
#
# $VV^H$ is badly conditioned for most of these spectra, so the textbook routes fail in
# float64. Here is the SVD route (leverage scores of $V^H$) on S4D-Lin at $\Delta=0.001$:

# %%
mu_lin = mf.spectrum("lin", P.mem_N, 0.001)
M_svd, rank_svd = mf.memory_function_svd(mu_lin, P.mem_T)
info_lin = mf.memory_function_info(mu_lin, P.mem_T)
print(f"float64 SVD: numerical rank {rank_svd}, sum {M_svd.sum():.3f}, "
      f"max error {np.max(np.abs(M_svd - info_lin['memory'])):.3f}")
print(f"memory_function: rank {info_lin['rank']}, sum {info_lin['memory'].sum():.10f}, "
      f"mpmath digits used {info_lin['dps']}")

# %% tags=["remove-input"]
# accuracy against a direct 100-digit evaluation, and the time at the paper's size (from
# the stored records of the reference table)
ref_records = [experiments_runs.run(c) for c in paper2.reference_grid(P)]
for name, value in {
        "svd_rank": rank_svd, "svd_err": float(np.max(np.abs(M_svd - info_lin["memory"]))),
        "lin_dps": info_lin["dps"],
        "ref_err": mf.reference_error(("lin", "inv", "real"), P.mem_N, P.mem_T, 0.001),
        "wall_max": max(r["metrics"]["memory_wall_s"] for r in ref_records),
        "wall_N": ref_records[0]["config"]["N"], "wall_T": ref_records[0]["config"]["T"]}.items():
    glue(name, value, display=False)

# %% [markdown]
# float64 finds rank {glue:text}`svd_rank` and memory values off by up to
# {glue:text}`svd_err:.2f`. `memory_function` avoids building $V$; how, and how accurate it
# is, is folded below.
#
# ````{admonition} How the memory function is computed accurately
# :class: dropdown
#
# `memory_function` never builds $V$:
#
# 1. the Gram matrix has the closed form $G_{ij}=\frac{1-(\mu_i\bar\mu_j)^T}{1-\mu_i\bar\mu_j}$
#    (derived above); it is Cholesky-factored in mpmath at a precision chosen from its own
#    condition number (here {glue:text}`lin_dps` digits);
# 2. only two columns of $P$ are needed, $P_{\cdot,0}$ and $P_{\cdot,T-1}$. Their
#    coefficients $G^{-1}v$ are huge and cancel, so they are summed at every delay in exact
#    integer arithmetic;
# 3. the whole diagonal follows from a Christoffel–Darboux-type identity (below);
# 4. the sum rule and $0\le M\le1$ are checked, and the precision is raised if they fail.
#
# The identity: dropping the first or the last sample of the window is a rank-one downdate
# of $G$, and the window $[1,T)$ is the window $[0,T-1)$ shifted by one step, so
#
# $$
# M[\tau+1]=M[\tau]+\frac{|P_{\tau,T-1}|^2}{1-M[T-1]}-\frac{|P_{\tau+1,0}|^2}{1-M[0]} .
# $$
#
# The two sums of non-negative increments add up to exactly $M[T-1]$ and $M[0]$, so what is
# left for float64 is two normalised cumulative sums, with no cancellation.
#
# Against a direct 100-digit evaluation, on S4D-Lin, S4D-Inv and S4D-Real at $\Delta=0.001$
# (the worst conditioned), the largest error is {glue:text}`ref_err:.1e`. All $T$ delays at
# $N=$ {glue:text}`wall_N`, $T=$ {glue:text}`wall_T` take at most {glue:text}`wall_max:.1f` s
# on this machine (per spectrum of {numref}`tab-mem-reference`, including one extra column
# of $P$).
# ````
#
# ## The memory of the five initialisations

# %% tags=["remove-input"]
glue("fig_curves", plots_memory.fig_memory_curves(curves, configs.REPORT_DTS), display=False)
plt.close("all")
glue("tab_memory", memory_table(P), display=False)

# %% [markdown]
# ```{glue:figure} fig_curves
# :name: "fig-mem-curves"
#
# The memory function $M[\tau]$ (top) and the capacity used up to each delay (bottom) of the
# five initialisations, at three steps $\Delta$.
# ```
#
# ```{glue:figure} tab_memory
# :name: "tab-mem-memory"
#
# The memory function of the five initialisations at three delays, with the capacity and
# the rank.
# ```

# %% [markdown]
# Our implementation notes list values at $N=64$, $T=4096$ that were computed
# independently with NumPy and mpmath before this code existed: predictions to reproduce,
# not numbers from the paper. {numref}`tab-mem-reference` sets ours beside them.

# %% tags=["remove-input"]
comparison = reference_comparison(P)
diffs = [d["max_abs_diff"] for d in comparison.data if d["max_abs_diff"] is not None]
at_100 = {k: dict(zip(curve[(k, 0.01)]["metrics"]["delay"],
                      curve[(k, 0.01)]["metrics"]["memory"]))[100] for k in ("inv", "random")}
for name, value in {"tab_reference": comparison,
                    "ref_table_diff": max(diffs) if diffs else float("nan"),
                    "inv_m100": at_100["inv"], "rand_m100": at_100["random"]}.items():
    glue(name, value, display=False)

# %% [markdown]
# ```{glue:figure} tab_reference
# :name: "tab-mem-reference"
#
# Our memory function at $N=64$, $T=4096$ beside the values of our implementation notes,
# computed independently before this code existed (in parentheses).
# ```
#
# The largest difference from those values is {glue:text}`ref_table_diff:.4f`, the size of
# their rounding to three decimals.
#
# The rise at the right end of the curves at small $\Delta$ is the edge of the window: the
# state holds exactly $T$ inputs, and the oldest one has no older input to be confused
# with, so slowly decaying spectra remember it better than the ones just before it. With
# $|\mu|^T\ll1$ this edge effect disappears.
#
# How long the memory lasts is set by $\Delta$ and the decay rates. At $\Delta=0.1$ most
# spectra forget within tens of steps; at $\Delta=0.001$ every mode decays slowly and the
# capacity spreads thinly over thousands of delays. S4D-Inv puts a wide range of
# frequencies into one layer, so at $\Delta=0.01$ it still holds
# $M[100]=$ {glue:text}`inv_m100:.3f`, while the random spectrum (with the same $N$) holds
# {glue:text}`rand_m100:.3f`. The total is always $\operatorname{rank}V$: a model can only
# move its memory between delays, never create more.

# %% tags=["remove-input"]
delays = capacity_delays(curves, list(configs.INITS), list(configs.REPORT_DTS))
half_at = {d["init"]: d["half"] for d in delays.data if d["dt"] == 0.01}
glue("tab_delays", delays, display=False)
glue("order_001", " > ".join(plots_memory.LABELS[k] for k in
                             sorted(configs.INITS, key=lambda k: -half_at[k])), display=False)

# %% [markdown]
# ```{glue:figure} tab_delays
# :name: "tab-mem-delays"
#
# How long the memory lasts: the delay by which half and 90 % of the capacity (the memory
# function summed up to that delay) is used, on the stored delay grid.
# ```
#
# Ranked by the delay at which half the capacity is used ($\Delta=0.01$,
# {numref}`tab-mem-delays`):
# {glue:text}`order_001`. The paper's ablation, as a secondary summary of it describes it,
# calls the effective memory of frozen S4D-Inv "very long", of frozen random and step
# spectra "short" and of the real-axis "linear" one "very short". S4D-Inv comes first in
# both. How the three baselines rank among themselves depends on their exact definitions
# and on $\Delta$, neither of which the paper's text fixes, so we do not read more into it.
#
# ## The readout gradient sees the teacher through the projection
#
# Take the paper's setting, as the secondary summary gives it: one diagonal SSM ($Q=I$)
# with a scalar input gain $B$, white
# noise input, states $X=B\hat U V^\top$ (rows $h_t$; $\hat U_{t,\tau}=u_{t-\tau}$), a linear
# readout $\theta$, and a teacher $y=\hat U\alpha$, i.e. $y_t=\sum_\tau\alpha_\tau u_{t-\tau}$.
# The loss is $L=\tfrac1n\lVert X\theta-y\rVert^2$. SymPy differentiates it with a general
# $\hat U^\top\hat U$ and then substitutes $\hat U^\top\hat U\to n\sigma^2 I$ (white noise):


# %%
d_g = ms.derive_readout_gradient()
display(Math(r"G(y)=\frac{\partial L}{\partial\theta} = 2\sigma^2 B\,V\big(BV^\top\theta - P\alpha\big),"
             r"\qquad \theta^*=\tfrac1B (VV^\top)^{-1}V\alpha"))
print("SymPy gradient equals the projection form:", d_g["holds"],
      "| V P = V:", d_g["VP_equals_V"], "| G(theta*) = 0:", d_g["zero_at_theta_star"])
display(Math(r"P_{00} = " + sp.latex(d_g["weights"][0][0]) + r" = M[0]"))

gd = [experiments_runs.run(c) for c in paper2.readout_gd_grid(P)]
gd_by = {r["config"]["init"]: r["metrics"] for r in gd}

# %% tags=["remove-input"]
gc = gd_by["inv"]["grad_check"]
g_auto, g_formula = np.array(gc["autograd_at_0"]), np.array(gc["formula_at_0"])
glue("grad_rel", float(np.linalg.norm(g_auto - g_formula) / np.linalg.norm(g_formula)),
     display=False)
glue("grad_moments", max(r["metrics"]["grad_check"]["moments_vs_autograd_max_abs"]
                         for r in gd), display=False)

# %% [markdown]
# Written out per delay, the teacher enters the gradient only as
# $(P\alpha)_\tau=\sum_{\tau'}P_{\tau\tau'}\alpha_{\tau'}$. A teacher at a single delay
# $\tau_0$ ($\alpha=e_{\tau_0}$) arrives as the column $P_{\cdot,\tau_0}$, and the weight it
# keeps on its own delay is $P_{\tau_0\tau_0}=M[\tau_0]$. Because $VP=V$, the same gradient
# is also $2\sigma^2BV(BV^\top\theta-\alpha)$ (which is how `readout_gradient` evaluates it,
# with no inverse). The projection form only makes explicit which part of $\alpha$ the model
# can act on.
#
# Numeric twin: torch autograd on a simulated sample of {glue:text}`n_sim` steps agrees with
# the gradient computed from the sample's own moments to {glue:text}`grad_moments:.1e`. It
# differs from the white-noise formula by {glue:text}`grad_rel:.2f` (relative). That is
# sampling noise, not a flaw of the formula: the formula replaces $\hat U^\top\hat U/n$ by
# $\sigma^2 I$, and this state decays so slowly ($|\mu|\approx e^{-0.0015}$ per step) that
# {glue:text}`n_sim` steps hold few independent samples of it. The test suite checks that the
# difference shrinks like $1/\sqrt n$.
#
# ## The worked example: a teacher at delay 500
#
# The paper's example, as a secondary summary reports it, has $N=4$, $T=1024$ and a teacher
# $y_t=u_{t-500}$. It states that with
# a random spectrum the memory vanishes beyond $\tau\approx40$, so the gradient carries no
# information about the teacher, while with S4D-Inv $M[500]\approx0.003$ is small but
# nonzero. The paper does not give $\Delta$. We use $\Delta=0.003$ (inside S4's default
# range), where S4D-Inv has the paper's value. Gradient descent starts at $\theta=0$ with step
# $1/\lambda_{\max}$ of the Hessian and runs on the expected loss (gradient: `readout_gradient`)
# and on a simulated sample (held-out loss on a fresh sample).

# %% tags=["remove-input"]
glue("fig_gd", plots_memory.fig_readout_gd(gd), display=False)
plt.close("all")
mu_random = np.array(gd_by["random"]["mu_re"]) + 1j * np.array(gd_by["random"]["mu_im"])
numbers = {"gd_steps": P.mem_gd_steps, "seed": P.seed, "gd_inv_cond": gd_by["inv"]["cond_G"],
           "gd_random_mu500": float(np.max(np.abs(mu_random)) ** 500)}
for k in ("random", "inv"):
    m = gd_by[k]
    numbers.update({
        f"gd_{k}_M500": m["M_teacher"], f"gd_{k}_M40": m["M_40"],
        f"gd_{k}_r2": 1 - m["pop_loss"][-1] / m["pop_loss"][0],
        f"gd_{k}_test_r2": 1 - m["emp_test_loss"][-1] / m["emp_test_loss"][0],
        f"gd_{k}_dist": float(m["dist"][-1] / max(np.linalg.norm(m["theta_star"]), 1e-300)),
        f"gd_{k}_theta": float(np.linalg.norm(m["theta_final"]))})
for name, value in numbers.items():
    glue(name, value, display=False)

# %% [markdown]
# ```{glue:figure} fig_gd
# :name: "fig-mem-gd"
#
# Gradient descent on the readout for a teacher at delay 500: the share of the teacher's
# variance explained (expected loss and a held-out sample), the readout's norm, and the
# column of the projection through which the teacher enters the gradient.
# ```
#
# - **Random spectrum** (seed {glue:text}`seed`, {glue:text}`gd_steps` steps of descent): $M[40]=$
#   {glue:text}`gd_random_M40:.1e` and $M[500]=$ {glue:text}`gd_random_M500:.1e`. The gradient
#   at $\theta=0$ is $-2\sigma^2 B\,v_{500}$, and $\max_n\lvert\mu_n\rvert^{500}=$
#   {glue:text}`gd_random_mu500:.1e`. After all the steps, $\lVert\theta\rVert=$ {glue:text}`gd_random_theta:.1e` and
#   the share of the teacher's variance explained is {glue:text}`gd_random_r2:.1e`. On the
#   held-out sample it is {glue:text}`gd_random_test_r2:.4f`, noise around zero. Nothing is
#   learned, as the paper says.
# - **S4D-Inv**: $M[500]=$ {glue:text}`gd_inv_M500:.4f`. The explained share climbs to
#   {glue:text}`gd_inv_r2:.4f`, which is exactly $M[500]$, the most any readout of this state
#   can explain. $\theta$ converges to $\theta^*=\tfrac1B(VV^\top)^{-1}V\alpha$ (relative
#   distance {glue:text}`gd_inv_dist:.1e`; the Gram matrix has condition number
#   {glue:text}`gd_inv_cond:.0f`). On the held-out sample the gain
#   ({glue:text}`gd_inv_test_r2:.4f`) is within sampling noise of that small value.
#
# The right panel of {numref}`fig-mem-gd` shows why. The teacher at $\tau_0=500$ reaches the gradient as the column
# $P_{\cdot,500}$: for S4D-Inv it is small but spread over the delays the state remembers,
# while for the random spectrum it is zero to machine precision.
#
# ## Only the eigenvalues matter: S4 = S4D
#
# Let $\bar A=Q\,\mathrm{diag}(\mu)\,Q^{-1}$ be any diagonalisable state matrix and
# $\bar B=Q\,\mathrm{diag}(\beta)\mathbf 1$ any input vector, so $\beta$ are its coordinates
# in the eigenbasis. The impulse response is $k_\tau=\bar A^\tau\bar B=Q\,\mathrm{diag}(\beta)\,v_\tau$,
# which is the diagonal system's response seen through a fixed invertible map, and a linear
# readout can undo that map. SymPy, with a fully symbolic $2\times2$ $Q$ and $\beta$:

# %%
d_inv = ms.derive_eigenvalue_invariance()
print("k_tau = Q diag(beta) v_tau:", d_inv["K_factorised"],
      "| k^T W^-1 k = v^T G^-1 v for every tau:", d_inv["holds"])
display(Math(r"\det W = " + sp.latex(d_inv["det_W"])))
sim = experiments_runs.run(paper2.simulation_grid(P)[0])

# %% tags=["remove-input"]
check = simulation_check(sim)
for name, value in {
        "sim_diag_err": check["sim_diag"], "sim_dense_err": check["sim_dense"],
        "sim_dense_formula": check["dense_formula"], "sim_gramian": check["gramian"],
        "sim_eig_err": check["eigenvalues"], "sim_N": sim["config"]["N"],
        "sim_same": check["sim_same"], "fig_sim": plots_memory.fig_simulation_check(sim)}.items():
    glue(name, value, display=False)
plt.close("all")

# %% [markdown]
# ```{glue:figure} fig_sim
# :name: "fig-mem-s4-s4d"
#
# S4 = S4D: the memory function of a diagonal S4D and of a dense S4 with the same spectrum,
# from the formula and from white-noise simulations (left), and how far each is from the
# formula (right).
# ```
#
# The determinant of the state Gram matrix $W$ shows when the argument holds: every
# $\beta_n\ne0$ (each mode is driven by the input), distinct eigenvalues, and an invertible
# $Q$. The numeric twin uses S4D-Inv with $N=$ {glue:text}`sim_N` at $\Delta=0.01$. The dense
# S4 is $A=Q\Lambda_{\text{block}}Q^{-1}$, with the real $2\times2$ block form of each
# conjugate pair, a random $Q$ and a random $B$. It is discretised with the same ZOH step
# (`dense_ssm`, `discretize_dense`). Its $\bar A$ has the S4D's eigenvalues to
# {glue:text}`sim_eig_err:.1e`, and the memory function from those eigenvalues matches to
# {glue:text}`sim_dense_formula:.1e`. The Gramian of its impulse response (no
# diagonalisation) matches to {glue:text}`sim_gramian:.1e`. White-noise simulations with a
# least-squares readout give {glue:text}`sim_diag_err:.4f` (diagonal) and
# {glue:text}`sim_dense_err:.4f` (dense) as the largest deviation, the size of the finite-sample
# bias ($\approx N/n$). The two simulations share their input, and their states differ by
# an invertible map that least squares undoes, so they agree with each other to
# {glue:text}`sim_same:.1e`: their markers coincide in {numref}`fig-mem-s4-s4d`.
#
# ### HiPPO-LegS is a different spectrum
#
# The equivalence is about *matched spectra*. S4 initialised with the HiPPO-LegS matrix
# {cite}`gu2020hippo` does **not** share its memory function with S4D-Inv.

# %%
legs = mf.legs_comparison(P.mem_N, P.mem_T, dt=0.01, taus=(10, 100))

# %% tags=["remove-input"]
glue("fig_legs", plots_memory.fig_legs(legs["A"], legs["eigenvalues"], legs["inv"],
                                       legs["normal"]), display=False)
plt.close("all")
for name, value in {
        "legs_min": legs["real_min"], "legs_max": legs["real_max"],
        "legs_imag": legs["imag_max"], "legs_eigvec_cond": legs["eigvec_cond"],
        "legs_m10": legs["M_legs"][0], "legs_m100": legs["M_legs"][1],
        "inv_m10": legs["M_inv"][0], "inv_m100b": legs["M_inv"][1],
        "legs_omega_max": legs["omega_max_legs"],
        "inv_omega_max": legs["omega_max_inv"]}.items():
    glue(name, value, display=False)

# %% [markdown]
# ```{glue:figure} fig_legs
# :name: "fig-mem-legs"
#
# The HiPPO-LegS matrix (left) and the continuous-time spectra of LegS, of its normal part
# (S4D-LegS) and of S4D-Inv (right).
# ```
#
# The LegS matrix ({numref}`fig-mem-legs`) is lower triangular, so its eigenvalues are its diagonal: real, from
# {glue:text}`legs_min:.0f` to {glue:text}`legs_max:.0f` (largest imaginary part
# {glue:text}`legs_imag:.0e`). That is the S4D-Real spectrum, with $N$ distinct eigenvalues
# instead of $N/2$. S4D-LegS and S4D-Inv use instead the spectrum $-\tfrac12+i\omega_n$ of
# the *normal part* $A+PP^\top$ (largest $\omega$: {glue:text}`legs_omega_max:.1f` for LegS,
# {glue:text}`inv_omega_max:.1f` for the S4D-Inv formula that approximates it). At
# $\Delta=0.01$ the LegS spectrum gives $M[10]=$ {glue:text}`legs_m10:.3f` and $M[100]=$
# {glue:text}`legs_m100:.3f`, against {glue:text}`inv_m10:.3f` and {glue:text}`inv_m100b:.3f`
# for S4D-Inv.
#
# So the paper's "S4 and S4D are equivalent" means: a dense SSM and a diagonal one *with the
# same eigenvalues* have the same memory function, whatever the eigenbasis and input
# vector (as long as every mode is driven). It does **not** say that an S4 initialised with
# HiPPO-LegS behaves like S4D-Inv. Nor does it say anything about training. The dense
# model's extra parameters change how gradient steps move the spectrum. And the LegS
# matrix's eigenbasis is so ill-conditioned (condition number of its eigenvector matrix in
# float64: {glue:text}`legs_eigvec_cond:.1e`) that it cannot be diagonalised reliably,
# which is why S4 uses the normal-plus-low-rank form.
#
# ## Explore the spectra
#
# Choose an initialisation, a state size $N$ and a step $\Delta$: the panels show the
# spectrum on the unit disk, the memory function, the cumulative capacity, and the gradient
# weighting $|P_{\tau,T/2}|$ of a teacher at delay $T/2$. Every view was computed when the
# page was built, so the controls work without a kernel.

# %%
views = {(init, N, dt): mf.explore_spectrum(init, N, dt, P.mem_T, seed=P.seed)
         for init in configs.INITS for N in plots_memory.EXPLORER_N for dt in configs.DTS}
N0 = P.mem_N if P.mem_N in plots_memory.EXPLORER_N else None
glue("fig_explorer", HTML(plots_memory.explorer_html(
    *plots_memory.spectrum_explorer(views, N=N0, dt=0.01))), display=False)

# %% [markdown]
# ```{glue:figure} fig_explorer
# :name: "fig-mem-explorer"
#
# The spectra explorer, computed when the page was built: choose an initialisation, a state
# size and a step.
# ```

# %% [markdown]
# In a running notebook (a live kernel: this chapter opened in Jupyter) the cell below,
# hidden here, computes the same panels for any state size and step, and can add one
# conjugate pair of eigenvalues placed by radius and angle.

# %% tags=["hide-input", "remove-output"]
import ipywidgets as widgets

controls = {
    "init": widgets.Dropdown(options=list(configs.INITS), value="inv", description="init"),
    "N": widgets.IntSlider(value=P.mem_N, min=2, max=64, step=2, description="N"),
    "log10_dt": widgets.FloatSlider(value=-2.0, min=-3.0, max=-1.0, step=0.25, description="log10 dt"),
    "add_pair": widgets.Checkbox(value=False, description="extra pair"),
    "radius": widgets.FloatSlider(value=0.99, min=0.0, max=1.0, step=0.005, description="radius"),
    "angle": widgets.FloatSlider(value=0.05, min=0.0, max=float(np.pi), step=0.01, description="angle"),
}
view = widgets.Output()


def redraw(change=None):
    v = {k: w.value for k, w in controls.items()}
    dt = 10.0 ** v["log10_dt"]
    extra = v["radius"] * np.exp(1j * v["angle"]) if v["add_pair"] else None
    data = mf.explore_spectrum(v["init"], v["N"], dt, P.mem_T, extra=extra, seed=P.seed)
    title = f"{plots_memory.LABELS[v['init']]}, N = {v['N']}, Δ = {dt:.3g}"
    view.outputs = ()
    view.append_display_data(png(plots_memory.fig_explorer(**data, title=title)))


for w in controls.values():
    w.observe(redraw, names="value")
redraw()
display(widgets.VBox(list(controls.values()) + [view]))

# %% [markdown]
# Without a kernel (as on this page), the slider below steps through $\Delta$ for all five
# initialisations at once, from the stored records. Click a legend entry to hide an
# initialisation.

# %% tags=["remove-input"]
glue("attn_m", mf.memory_function([1.0], P.mem_T, 0), display=False)
glue("attn_cap", mf.capacity([1.0], P.mem_T), display=False)
fig_plotly = plots_memory.plotly_explorer(curves, configs.DTS)
glue("fig_delta_slider", HTML(fig_plotly.to_html(full_html=False, include_plotlyjs=False)),
     display=False)

# %% [markdown]
# ```{glue:figure} fig_delta_slider
# :name: "fig-mem-delta-slider"
#
# The five initialisations' spectra and memory functions as the step $\Delta$ changes, from
# the stored runs.
# ```

# %% [markdown]
# ## What we reproduce, and where we differ
#
# - **Eigenvalues only** (claim 1): derived symbolically and confirmed numerically, and a
#   dense S4 with the same spectrum matches the S4D to simulation accuracy. The claim holds
#   only for matched spectra: HiPPO-LegS ($-1,\dots,-N$) is not S4D-Inv.
# - **Memory capacity**: $\sum_\tau M[\tau]=\operatorname{rank}V\le N$, with equality at
#   finite $T$; S4D-Lin has rank {glue:text}`rank_lin` and S4D-Real {glue:text}`rank_real` in
#   the conjugate-pair storage. Aliasing at large $\Delta$ lowers the rank further (S4D-Lin,
#   $\Delta=0.1$: {glue:text}`rank_lin_alias`), which our implementation notes had wrong.
# - **Independent values**: the values of our implementation notes are reproduced to
#   {glue:text}`ref_table_diff:.4f`.
# - **Gradient** (claim 2): $G(y)=2\langle u^2\rangle BV(BV^\top\theta-P\alpha)$ is derived
#   and matches autograd. The paper's example reproduces: no learning at delay 500 with a
#   random spectrum ($M[500]=$ {glue:text}`gd_random_M500:.1e`), slow but real learning up to
#   $M[500]=$ {glue:text}`gd_inv_M500:.4f` with S4D-Inv. Two choices are ours: $\Delta=0.003$,
#   and the `random` and `step` definitions, because the paper's exact ones are not public.
# - **Appendix remark**: attention as a linear RNN with the single eigenvalue $\lambda=1$
#   has a rank-one Vandermonde matrix. Its memory function is $1/T$ at every delay
#   ({glue:text}`attn_m:.6f` at $T=$ {glue:text}`T`) and its capacity is
#   {glue:text}`attn_cap:.3f`.
# - **What this does not show**: the paper's Long Range Arena results and its claim that
#   frozen-spectrum ("reservoir") training reduces overfitting need trained deep models;
#   those are later chapters. The theory here assumes a single linear layer, white-noise
#   input and a squared loss, as the paper's does.

# %% tags=["remove-input"]
from sst_core.book.provenance import how_made

how_made("p2_memory", P)
