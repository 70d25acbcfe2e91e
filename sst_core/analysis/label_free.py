"""q(t) without the oracle, and an online warning from short words ("Beyond the papers").

The paper's distinguishability ratio ``q(t) = R(t) / M(t)`` needs the true group state of
every word (an oracle), which a deployed model never has. Here the hidden states are
labelled two label-free ways (:func:`sst_core.analysis.diagnostics.label_free_states`):

- ``decoded``: the model's own prediction at each position;
- ``clusters``: per-time k-means of the read-out states (``n_g`` clusters), at
  log-spaced times before and after ``t_obs`` (:func:`cluster_times`), with
  centres fitted on at most :data:`CLUSTER_FIT_WORDS` words; its q(t) is NaN between
  those times, so its T_cross is resolved to that grid;

and q(t) is recomputed with those labels, beside the oracle's.

**The online warning.** From positions ``window_start .. t_obs`` only (``t_obs`` = the
training length, 60), a warning extrapolates q(t) to the time it reaches ``tau``, two ways:

- ``drift``: Corollary 1's picture, a constant drift along U, so ``sqrt(R(t)) = a + b t``
  with ``M`` constant: ``T_pred = (sqrt(tau M) - a) / b`` (None when ``b <= 0``), the fit
  of :func:`sst_core.theory.error_control.corollary1_fit` on the points the power fit uses;
- ``power``: ``q(t) = C t^alpha`` fitted in log-log: ``T_pred = (tau / C)^(1 / alpha)``
  (None when ``alpha <= 0``), which also covers diffusive growth (``alpha = 1``).

Predictions are clipped to ``[t_obs, 10 rollout]``; a None means "no failure foreseen".
:func:`warning_errors` turns them into an ``m_p`` prediction and its error, raw and after
a leave-one-out log-log calibration on the other models.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sst_core.analysis.diagnostics import T_cross, distinguishability, label_free_states
from sst_core.spec.configs import LabelFreeConfig
from sst_core.store.codec import curve_times, encode_curve, read_curve

LABELINGS = ("oracle", "decoded", "clusters")
WARNING_FITS = ("drift", "power")
CLUSTER_FIT_WORDS = 2048  # k-means centres from at most this many words per time
CLUSTER_EARLY_TIMES = 32  # log-spaced times up to t_obs where the clusters are computed
CLUSTER_LATE_TIMES = 48  # and after t_obs


def cluster_times(t_obs: int, rollout: int, n_early: int = CLUSTER_EARLY_TIMES,
                  n_late: int = CLUSTER_LATE_TIMES) -> np.ndarray:
    """The times (1-based, increasing) at which the k-means labelling is computed:
    ``n_early`` log-spaced times in ``1 .. t_obs`` (the warning's window) and ``n_late``
    log-spaced ones in ``t_obs + 1 .. rollout`` (k-means at every one of 1000 times costs
    minutes per model on a CPU)."""
    early = np.unique(np.round(np.geomspace(1, t_obs, n_early)).astype(int))
    late = np.unique(np.round(np.geomspace(t_obs + 1, rollout, n_late)).astype(int)) \
        if rollout > t_obs else np.zeros(0, dtype=int)
    return np.concatenate([early, late])


def _fit_power(q: np.ndarray, t: np.ndarray, tau: float) -> dict[str, Any]:
    """``log q = log C + alpha log t`` on the window; T where ``q = tau``."""
    alpha, logC = np.polyfit(np.log(t), np.log(q), 1)
    T = float(np.exp((np.log(tau) - logC) / alpha)) if alpha > 0 else None
    return {"T_pred": T, "alpha": float(alpha), "log_C": float(logC)}


def online_warning(R, M, tau: float = 0.5, window: tuple[int, int] = (10, 60),
                   clip: tuple[float, float] = (60.0, 10_000.0)) -> dict[str, dict[str, Any]]:
    """Both warning fits from ``R(t)`` and ``M(t)`` (index ``i`` is ``t = i + 1``) on
    ``window`` (inclusive, 1-based). Positions where R, M or q are not finite and > 0 are
    skipped; with fewer than 3 left both predictions are None.

    Each fit's ``T_pred`` is clipped into ``clip``; ``crossed_in_window`` says q already
    reached tau inside the window (then ``T_pred`` is the first such t).
    """
    from sst_core.theory.error_control import corollary1_fit  # imports SymPy

    R = np.asarray(R, dtype=float)
    M = np.asarray(M, dtype=float)
    lo, hi = window
    if not (1 <= lo < hi):
        raise ValueError(f"window must be (lo, hi) with 1 <= lo < hi, got {window!r}")
    t = np.arange(1, R.size + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = R / M
    positive = np.isfinite(q) & (q > 0)  # the power fit takes log q
    sel = (t >= lo) & (t <= min(hi, R.size)) & positive & np.isfinite(M) & (M > 0)
    out: dict[str, dict[str, Any]] = {}
    crossed = T_cross(np.where(t <= hi, q, np.nan), tau)
    for name in WARNING_FITS:
        if crossed is not None:
            out[name] = {"T_pred": float(crossed), "crossed_in_window": True}
            continue
        if sel.sum() < 3:
            out[name] = {"T_pred": None, "crossed_in_window": False}
            continue
        fit = (corollary1_fit(R, M, tau, (lo, hi), keep=positive) if name == "drift"
               else _fit_power(q[sel], t[sel], tau))
        if fit["T_pred"] is not None:
            fit["T_pred"] = float(np.clip(fit["T_pred"], *clip))
        out[name] = {**fit, "crossed_in_window": False}
    return out


def run_label_free(cfg: LabelFreeConfig) -> dict[str, Any]:
    """Oracle and label-free q(t) of one trained tracker, and the online warnings."""
    from sst_core.analysis.trackers import held_out_words, load_tracker, readout_states
    from sst_core.groups import get_group

    run_cfg = cfg.run
    if not 1 <= cfg.window_start < cfg.t_obs <= cfg.rollout:
        raise ValueError(f"need 1 <= window_start={cfg.window_start} < t_obs={cfg.t_obs} "
                         f"<= rollout={cfg.rollout}")
    rec, model = load_tracker(run_cfg)
    n_g = get_group(run_cfg.group).order
    words, states = held_out_words(run_cfg, cfg.n_samples, cfg.rollout, cfg.seed)  # (b, L), (b, L)
    h = readout_states(model, words)  # (b, L, d)
    W = model.W_out.weight.detach().double().numpy()  # (n_g, d)
    b_out = model.W_out.bias.detach().double().numpy()  # (n_g,)
    times = cluster_times(cfg.t_obs, cfg.rollout)  # (G,) 1-based
    labels = {
        "oracle": states,
        "decoded": label_free_states(h, W, b_out, method="decoded"),
    }
    m_p = rec["metrics"]["m_p"]
    window = (cfg.window_start, cfg.t_obs)
    curves, crossings, warnings_ = {}, {}, {}
    for name in LABELINGS:
        if name == "clusters":  # on the time grid only; NaN elsewhere
            hg = h[:, times - 1]  # (b, G, d)
            lab = label_free_states(hg, W, method="clusters", n_g=n_g, seed=cfg.seed,
                                    max_fit=CLUSTER_FIT_WORDS)  # (b, G)
            d = distinguishability(hg, lab, W_out=W, n_g=n_g)
            R, M = np.full(cfg.rollout, np.nan), np.full(cfg.rollout, np.nan)
            R[times - 1], M[times - 1] = d.R, d.M
            with np.errstate(invalid="ignore", divide="ignore"):
                q = R / M
        else:
            d = distinguishability(h, labels[name], W_out=W, n_g=n_g)
            R, M, q = d.R, d.M, d.q
        curves[name] = q
        crossings[name] = T_cross(q, cfg.tau)
        warnings_[name] = online_warning(R, M, cfg.tau, window,
                                         clip=(float(cfg.t_obs), 10.0 * cfg.rollout))
    decoded_acc = (labels["decoded"] == states).mean(axis=0)  # (L,)
    stored_t = np.union1d(curve_times(cfg.rollout), times)
    return {
        "model": model.name,
        "group": run_cfg.group,
        "is_affine": bool(model.is_affine),
        "m_p": m_p,
        "training_run": rec["run_id"],
        "tau": cfg.tau,
        # every curve at the stored times plus the clusters' grid (where theirs exists)
        "curve_t": stored_t.tolist(),
        "q": {k: encode_curve(v, stored_t) for k, v in curves.items()},
        "T_cross": crossings,
        "warning": warnings_,
        "decoded_accuracy": encode_curve(decoded_acc, stored_t, 4),
        "cluster_times": times.tolist(),
        "cluster_fit_words": min(CLUSTER_FIT_WORDS, cfg.n_samples),
    }


# -- over many models ----------------------------------------------------------------------


def _log_pairs(a, b) -> tuple[np.ndarray, np.ndarray]:
    pairs = [(float(x), float(y)) for x, y in zip(a, b)
             if x is not None and y is not None and x > 0 and y > 0]
    if not pairs:
        return np.zeros(0), np.zeros(0)
    x, y = np.log(np.array(pairs)).T
    return x, y


def crossing_agreement(records: list[dict], method: str, tol: float = 0.25) -> dict[str, Any]:
    """How well ``method``'s T_cross matches the oracle's over ``records`` (metrics dicts).

    ``agree``: both never cross, or both cross within a factor ``1 + tol`` of each other.
    ``r``: Pearson correlation of ``log T_cross`` over the models where both cross
    (None below 3 such models). ``q_r``: median over models of the Pearson correlation of
    ``log q`` curves (finite positive entries only).
    """
    import scipy.stats

    pairs = [(m["T_cross"]["oracle"], m["T_cross"][method]) for m in records]
    n = len(pairs)
    agree = sum(1 for o, f in pairs if (o is None and f is None)
                or (o is not None and f is not None and max(o, f) / min(o, f) <= 1 + tol))
    x, y = _log_pairs(*zip(*pairs)) if pairs else (np.zeros(0), np.zeros(0))
    r = float(scipy.stats.pearsonr(x, y).statistic) if x.size >= 3 and np.ptp(x) > 0 \
        and np.ptp(y) > 0 else None
    q_rs = []
    for m in records:
        o = read_curve(m["q"]["oracle"], m.get("curve_t"))[1]
        f = read_curve(m["q"][method], m.get("curve_t"))[1]
        ok = np.isfinite(o) & np.isfinite(f) & (o > 0) & (f > 0)
        if ok.sum() >= 3 and np.ptp(np.log(o[ok])) > 0 and np.ptp(np.log(f[ok])) > 0:
            q_rs.append(float(scipy.stats.pearsonr(np.log(o[ok]), np.log(f[ok])).statistic))
    return {"method": method, "n": n, "agree": agree, "agree_frac": agree / n if n else None,
            "both_cross": int(x.size), "r": r,
            "q_r_median": float(np.median(q_rs)) if q_rs else None, "tol": tol}


def warning_errors(records: list[dict], method: str, fit: str,
                   lengths: tuple[int, ...]) -> dict[str, Any]:
    """Predict each model's ``m_p`` from its warning (``method``, ``fit``) and score it.

    Only models that pass the training length (``m_p`` not None) are scored. ``raw``
    predicts ``m_p`` as ``T_pred`` snapped to the evaluated ``lengths`` (the largest length
    not above it; the largest length when no failure is foreseen). ``loo``: ``log m_p``
    regressed on ``log T_pred`` over the *other* models (leave-one-out), then snapped.
    The error of a prediction is ``|log2(pred / m_p)|`` (1 = off by a factor of two).
    """
    L = np.array(sorted(lengths), dtype=float)

    def snap(T: float | None) -> float:
        if T is None or not np.isfinite(T):
            return float(L[-1])
        below = L[L <= T]
        return float(below[-1] if below.size else L[0])

    rows = [(m["warning"][method][fit]["T_pred"], m["m_p"]) for m in records
            if m["m_p"] is not None]
    out: dict[str, Any] = {"method": method, "fit": fit, "n": len(rows)}
    if not rows:
        return {**out, "raw": None, "loo": None}
    T = np.array([L[-1] * 10 if t is None else t for t, _ in rows], dtype=float)
    m_p = np.array([m for _, m in rows], dtype=float)
    raw = np.array([snap(t) for t, _ in rows])
    err_raw = np.abs(np.log2(raw / m_p))
    loo = np.full(len(rows), np.nan)
    for i in range(len(rows)):
        others = np.arange(len(rows)) != i
        x, y = np.log(T[others]), np.log(m_p[others])
        if others.sum() >= 3 and np.ptp(x) > 0:
            slope, icpt = np.polyfit(x, y, 1)
            loo[i] = snap(float(np.exp(icpt + slope * np.log(T[i]))))
    err_loo = np.abs(np.log2(loo / m_p))

    def score(err: np.ndarray) -> dict[str, Any] | None:
        err = err[np.isfinite(err)]
        if not err.size:
            return None
        return {"median_log2_error": float(np.median(err)), "within_2x": float((err <= 1).mean()),
                "exact": float((err == 0).mean()), "n": int(err.size)}

    return {**out, "raw": score(err_raw), "loo": score(err_loo),
            "per_model": [{"T_pred": None if t is None else float(t), "m_p": int(m),
                           "raw": float(r), "loo": None if not np.isfinite(lo) else float(lo)}
                          for (t, m), r, lo in zip(rows, raw, loo)]}
