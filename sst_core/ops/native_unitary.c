/* AUSSM's unitary scan on the CPU (sst_core/ops/unitary_scan.py), forward and backward.

   Shapes, all contiguous: th (b, L, N, D) the angles before any scale, already x X^T + c
   (the caller's matrix product, laid out with the D channels innermost); u and, if not
   NULL, s (b, L, D); Bt, Ct (G, N, 2) = [Re, Im] of the G models, sample j using model
   j / (b / G); h0 (NULL: zero), h_last (b, N, 2, D); y (b, L, D). For t = 0 .. L-1,
   elementwise in (n, d) with theta = th (times s[d] if given):

       h_t = e^{i theta} h_{t-1} + u_t[d] B[n],     y_t[d] = sum_n Re(C[n] h_t[n, d])

   in real arithmetic (Re and Im kept apart, cos and sin by the polynomial below). With
   `starts` ((n_chunks, b, N, 2, D), n_chunks = ceil(L / Tc)) the state entering every
   chunk of Tc steps is written there for the backward.

   The states n = 0 .. N-1 of a channel are independent until the readout, so both passes
   run state by state, all steps for one n before the next (y and dL/du accumulate over n
   in order), which keeps one state's steps in the first-level cache. Backward, chunk by
   chunk from the last: the chunk's cos, sin and states of state n are recomputed from its
   start into a per-thread buffer, then for t from the chunk's end, with gy_t = dL/dy_t and
   p = dL/dh_t (Re and Im; the carry starts at dL/dh_L):

       p_t = gy_t conj(C) + conj(e^{i theta_{t+1}}) p_{t+1}
       dL/dtheta_t = Im(p_t conj(h_t - u_t B)),   dL/du_t = sum_n Re(p_t conj(B))
       dL/dB += u_t p_t,   dL/dC += gy_t conj(h_t),   dL/dh0 = conj(e^{i theta_0}) p_0
       with s: dL/ds_t = sum_n dL/dtheta_t th_t, and dL/dth_t = dL/dtheta_t s_t

   gB and gC ((k, b, N, 2) for k channel parts) are per sample and sum over the channels of
   the call, in a fixed order; the caller sums them over each model's samples and parts.
   Calls split samples [r0, r1) and channels [e0, e1) as the selective scan's do.

   Compiled on first use by sst_core/ops/native_unitary.py (one library per source, flags
   and CPU); the torch path in unitary_scan.py computes the same, and the tests compare
   both with the reference. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *uni_alloc(size_t bytes) {
    size_t n = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, n ? n : 64);
}

/* sin and cos of x together, without a libm call or a branch: x = k pi/2 + r with
   k = round(x 2/pi) (read from the bits of x 2/pi + 1.5 2^(mantissa bits), as native_selective.c reads it for exp),
   |r| <= pi/4, pi/2 in three parts (Cody-Waite: k times the first two is exact while
   |k| < 2^9 in float, 2^20 in double, and accurate to a few ulp well beyond); sin r and
   cos r by their Taylor polynomials (float: to r^9 and r^10, truncation below 2e-9;
   double: to r^17 and r^18, below 1e-19); the quadrant k mod 4 swaps and negates them. */
static inline void sincos_f32(float x, float *sn, float *cs) {
    const float magic = 0x1.8p23f;
    float t = x * 0x1.45f306p-1f + magic;
    float k = t - magic;
    int32_t ki, mi;
    memcpy(&ki, &t, sizeof ki);
    memcpy(&mi, &magic, sizeof mi);
    ki -= mi;
    float r = x - k * 0x1.92p+0f;
    r = r - k * 0x1.fb4p-12f;
    r = r - k * 0x1.4442d2p-24f;
    float q = r * r;
    float ps = 1.0f / 362880.0f;
    ps = ps * q - 1.0f / 5040.0f;
    ps = ps * q + 1.0f / 120.0f;
    ps = ps * q - 1.0f / 6.0f;
    float sr = r + r * q * ps;
    float pc = -1.0f / 3628800.0f;
    pc = pc * q + 1.0f / 40320.0f;
    pc = pc * q - 1.0f / 720.0f;
    pc = pc * q + 1.0f / 24.0f;
    pc = pc * q - 0.5f;
    float cr = 1.0f + q * pc;
    const int32_t odd = ki & 1, neg_s = ki & 2, neg_c = (ki + 1) & 2;
    float s0 = odd ? cr : sr, c0 = odd ? sr : cr;
    *sn = neg_s ? -s0 : s0;
    *cs = neg_c ? -c0 : c0;
}

static inline void sincos_f64(double x, double *sn, double *cs) {
    const double magic = 0x1.8p52;
    double t = x * 0x1.45f306dc9c883p-1 + magic;
    double k = t - magic;
    int64_t ki, mi;
    memcpy(&ki, &t, sizeof ki);
    memcpy(&mi, &magic, sizeof mi);
    ki -= mi;
    double r = x - k * 0x1.921fb544p+0;      /* pi/2: first 33 bits .. */
    r = r - k * 0x1.0b4611a6p-34;            /* .. the next 33 .. */
    r = r - k * 0x1.3198a2e037073p-69;       /* .. and the rest */
    double q = r * r;
    double ps = 1.0 / 355687428096000.0;     /* 1 / 17! */
    ps = ps * q - 1.0 / 1307674368000.0;     /* 1 / 15! */
    ps = ps * q + 1.0 / 6227020800.0;
    ps = ps * q - 1.0 / 39916800.0;
    ps = ps * q + 1.0 / 362880.0;
    ps = ps * q - 1.0 / 5040.0;
    ps = ps * q + 1.0 / 120.0;
    ps = ps * q - 1.0 / 6.0;
    double sr = r + r * q * ps;
    double pc = -1.0 / 6402373705728000.0;   /* 1 / 18! */
    pc = pc * q + 1.0 / 20922789888000.0;    /* 1 / 16! */
    pc = pc * q - 1.0 / 87178291200.0;
    pc = pc * q + 1.0 / 479001600.0;
    pc = pc * q - 1.0 / 3628800.0;
    pc = pc * q + 1.0 / 40320.0;
    pc = pc * q - 1.0 / 720.0;
    pc = pc * q + 1.0 / 24.0;
    pc = pc * q - 0.5;
    double cr = 1.0 + q * pc;
    const int64_t odd = ki & 1, neg_s = ki & 2, neg_c = (ki + 1) & 2;
    double s0 = odd ? cr : sr, c0 = odd ? sr : cr;
    *sn = neg_s ? -s0 : s0;
    *cs = neg_c ? -c0 : c0;
}

/* The scan's sin and cos, for the tests: n values of x into sn and cs. */
void uni_sincos_f32(const float *x, float *sn, float *cs, int64_t n) {
    for (int64_t i = 0; i < n; ++i) sincos_f32(x[i], sn + i, cs + i);
}
void uni_sincos_f64(const double *x, double *sn, double *cs, int64_t n) {
    for (int64_t i = 0; i < n; ++i) sincos_f64(x[i], sn + i, cs + i);
}

/* Steps ahead that the loops over one state's steps prefetch its angles (N D apart). */
#define UNI_AHEAD 8

#define UNITARY(T, SUF)                                                                     \
/* The cache lines of W values at p, for reading (rw 0) or writing (rw 1). */               \
static inline void uni_prefetch_##SUF(const T *p, int64_t W, int rw) {                      \
    for (int64_t w = 0; w < W; w += 64 / (int64_t)sizeof(T)) {                              \
        if (rw) __builtin_prefetch(p + w, 1);                                               \
        else __builtin_prefetch(p + w, 0);                                                  \
    }                                                                                       \
}                                                                                           \
/* theta (W) of step t, state n: th, times s if given. */                                   \
static inline void uni_theta_##SUF(T *restrict a, const T *restrict th,                     \
                                   const T *restrict s, int64_t W) {                        \
    if (s) for (int64_t w = 0; w < W; ++w) a[w] = th[w] * s[w];                             \
    else memcpy(a, th, sizeof(T) * W);                                                      \
}                                                                                           \
                                                                                            \
/* One step for state n: (hr, hi) (W) in place, y += Re(C h); with KEEP, cos and sin kept  \
   in cb and sb. */                                                                         \
static inline void uni_step_##SUF(T *restrict hr, T *restrict hi, T *restrict y,            \
                                  const T *restrict a, const T *restrict u, T Br, T Bi,     \
                                  T Cr, T Ci, int64_t W) {                                  \
    for (int64_t w = 0; w < W; ++w) {                                                       \
        T sn, cs;                                                                           \
        sincos_##SUF(a[w], &sn, &cs);                                                       \
        T r = cs * hr[w] - sn * hi[w] + u[w] * Br;                                          \
        T i = sn * hr[w] + cs * hi[w] + u[w] * Bi;                                          \
        hr[w] = r;                                                                          \
        hi[w] = i;                                                                          \
        y[w] += Cr * r - Ci * i;                                                            \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* The same step for the backward's recomputation: h_{t-1} (pr, pi) into h_t (hr, hi),     \
   keeping cos and sin (cb, sb). */                                                         \
static inline void uni_redo_##SUF(const T *restrict pr, const T *restrict pi,               \
                                  T *restrict hr, T *restrict hi, T *restrict cb,           \
                                  T *restrict sb, const T *restrict a, const T *restrict u, \
                                  T Br, T Bi, int64_t W) {                                  \
    for (int64_t w = 0; w < W; ++w) {                                                       \
        T sn, cs;                                                                           \
        sincos_##SUF(a[w], &sn, &cs);                                                       \
        hr[w] = cs * pr[w] - sn * pi[w] + u[w] * Br;                                        \
        hi[w] = sn * pr[w] + cs * pi[w] + u[w] * Bi;                                        \
        cb[w] = cs;                                                                         \
        sb[w] = sn;                                                                         \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* One reverse step for state n (W channels): p = (pr, pi) holds conj(a_{t+1}) p_{t+1} on  \
   entry and conj(a_t) p_t on exit; writes dL/dtheta (gth; before the scale s, whose       \
   gradient is added to gs, if s), adds to dL/du (gu) and the B and C sums (aB, aC). */    \
static inline void uni_back_##SUF(T *restrict pr, T *restrict pi, T *restrict gth,          \
                                  T *restrict gu, T *restrict gs, T *restrict aBr,          \
                                  T *restrict aBi, T *restrict aCr, T *restrict aCi,        \
                                  const T *restrict hr, const T *restrict hi,               \
                                  const T *restrict cs, const T *restrict sn,               \
                                  const T *restrict gy, const T *restrict u,                \
                                  const T *restrict th, const T *restrict s, T Br, T Bi,    \
                                  T Cr, T Ci, int64_t W) {                                  \
    for (int64_t w = 0; w < W; ++w) {                                                       \
        T gr = gy[w] * Cr + pr[w], gi = pi[w] - gy[w] * Ci;                                 \
        T qr = hr[w] - u[w] * Br, qi = hi[w] - u[w] * Bi;                                   \
        gth[w] = gi * qr - gr * qi;                                                         \
        gu[w] += gr * Br + gi * Bi;                                                         \
        aBr[w] += u[w] * gr;                                                                \
        aBi[w] += u[w] * gi;                                                                \
        aCr[w] += gy[w] * hr[w];                                                            \
        aCi[w] -= gy[w] * hi[w];                                                            \
        pr[w] = cs[w] * gr + sn[w] * gi;                                                    \
        pi[w] = cs[w] * gi - sn[w] * gr;                                                    \
    }                                                                                       \
    if (s)                                                                                  \
        for (int64_t w = 0; w < W; ++w) {                                                   \
            gs[w] += gth[w] * th[w];                                                        \
            gth[w] *= s[w];                                                                 \
        }                                                                                   \
}                                                                                           \
                                                                                            \
void uni_fwd_##SUF(const T *th, const T *u, const T *s, const T *Bt, const T *Ct,           \
                   const T *h0, T *y, T *h_last, T *starts, int64_t b, int64_t L,           \
                   int64_t N, int64_t D, int64_t G, int64_t Tc, int64_t r0, int64_t r1,     \
                   int64_t e0, int64_t e1) {                                                \
    const int64_t W = e1 - e0, per = b / G;                                                 \
    T *h = uni_alloc(sizeof(T) * 2 * W), *a = uni_alloc(sizeof(T) * W);                    \
    for (int64_t j = r0; j < r1; ++j) {                                                     \
        const T *Bm = Bt + (j / per) * N * 2, *Cm = Ct + (j / per) * N * 2;                 \
        for (int64_t t = 0; t < L; ++t) memset(y + (j * L + t) * D + e0, 0, sizeof(T) * W); \
        for (int64_t n = 0; n < N; ++n) { /* state n of every channel, all steps */          \
            for (int64_t k = 0; k < 2; ++k) {                                               \
                if (h0) memcpy(h + k * W, h0 + (j * 2 * N + 2 * n + k) * D + e0, sizeof(T) * W); \
                else memset(h + k * W, 0, sizeof(T) * W);                                   \
            }                                                                               \
            for (int64_t t = 0; t < L; ++t) {                                               \
                if (starts && t % Tc == 0) {                                                \
                    T *st = starts + (((t / Tc) * b + j) * 2 * N + 2 * n) * D + e0;         \
                    memcpy(st, h, sizeof(T) * W);                                           \
                    memcpy(st + D, h + W, sizeof(T) * W);                                   \
                }                                                                           \
                const int64_t o = (j * L + t) * D + e0;                                     \
                if (t + UNI_AHEAD < L) uni_prefetch_##SUF(th + ((j * L + t + UNI_AHEAD) * N + n) * D + e0, W, 0); \
                uni_theta_##SUF(a, th + ((j * L + t) * N + n) * D + e0, s ? s + o : NULL, W); \
                uni_step_##SUF(h, h + W, y + o, a, u + o, Bm[2 * n], Bm[2 * n + 1],         \
                               Cm[2 * n], Cm[2 * n + 1], W);                                \
            }                                                                               \
            if (h_last) {                                                                   \
                memcpy(h_last + (j * 2 * N + 2 * n) * D + e0, h, sizeof(T) * W);            \
                memcpy(h_last + (j * 2 * N + 2 * n + 1) * D + e0, h + W, sizeof(T) * W);    \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    free(h); free(a);                                                                       \
}                                                                                           \
                                                                                            \
/* Backward. Written: gth (b, L, N, D) dL/dth; gu (b, L, D); gs (b, L, D) if s; gB, gC     \
   (b, N, 2) of these channels (per sample); gh0 (b, N, 2, D) if not NULL. gy (b, L, D) =  \
   dL/dy; glast (b, N, 2, D) or NULL = dL/dh_L. */                                          \
void uni_bwd_##SUF(const T *th, const T *u, const T *s, const T *Bt, const T *Ct,           \
                   const T *starts, const T *gy, const T *glast, T *gth, T *gu, T *gs,      \
                   T *gB, T *gC, T *gh0, int64_t b, int64_t L, int64_t N, int64_t D,        \
                   int64_t G, int64_t Tc, int64_t r0, int64_t r1, int64_t e0, int64_t e1) { \
    const int64_t W = e1 - e0, per = b / G, n_chunks = (L + Tc - 1) / Tc;                   \
    /* per chunk and state n: the states (Tc + 1) and cos, sin (Tc) of the W channels */    \
    T *hb = uni_alloc(sizeof(T) * (Tc + 1) * 2 * W), *cb = uni_alloc(sizeof(T) * Tc * 2 * W); \
    T *p = uni_alloc(sizeof(T) * 2 * W), *a = uni_alloc(sizeof(T) * W);                    \
    T *acc = uni_alloc(sizeof(T) * 4 * W); /* sums of u p (B) and gy conj(h) (C) */         \
    for (int64_t j = r0; j < r1; ++j) {                                                     \
        const T *Bm = Bt + (j / per) * N * 2, *Cm = Ct + (j / per) * N * 2;                 \
        for (int64_t t = 0; t < L; ++t) {                                                   \
            memset(gu + (j * L + t) * D + e0, 0, sizeof(T) * W);                            \
            if (s) memset(gs + (j * L + t) * D + e0, 0, sizeof(T) * W);                     \
        }                                                                                   \
        for (int64_t n = 0; n < N; ++n) {                                                   \
            const T Br = Bm[2 * n], Bi = Bm[2 * n + 1], Cr = Cm[2 * n], Ci = Cm[2 * n + 1]; \
            memset(acc, 0, sizeof(T) * 4 * W);                                              \
            for (int64_t k = 0; k < 2; ++k) {                                               \
                if (glast) memcpy(p + k * W, glast + (j * 2 * N + 2 * n + k) * D + e0,      \
                                  sizeof(T) * W);                                           \
                else memset(p + k * W, 0, sizeof(T) * W);                                   \
            }                                                                               \
            for (int64_t c = n_chunks - 1; c >= 0; --c) {                                   \
                const int64_t t0 = c * Tc, len = (L - t0 < Tc) ? L - t0 : Tc;               \
                const T *st = starts + ((c * b + j) * 2 * N + 2 * n) * D + e0;              \
                memcpy(hb, st, sizeof(T) * W);                                              \
                memcpy(hb + W, st + D, sizeof(T) * W);                                      \
                for (int64_t t = 0; t < len; ++t) {                                         \
                    const int64_t o = (j * L + t0 + t) * D + e0;                            \
                    const T *hp = hb + 2 * t * W;                                           \
                    if (t0 + t + UNI_AHEAD < L) uni_prefetch_##SUF(th + ((j * L + t0 + t + UNI_AHEAD) * N + n) * D + e0, W, 0); \
                    T *hn = hb + 2 * (t + 1) * W, *ct = cb + 2 * t * W;                     \
                    uni_theta_##SUF(a, th + ((j * L + t0 + t) * N + n) * D + e0,            \
                                    s ? s + o : NULL, W);                                   \
                    uni_redo_##SUF(hp, hp + W, hn, hn + W, ct, ct + W, a, u + o, Br, Bi, W); \
                }                                                                           \
                for (int64_t t = len - 1; t >= 0; --t) {                                    \
                    const int64_t o = (j * L + t0 + t) * D + e0;                            \
                    const int64_t q = ((j * L + t0 + t) * N + n) * D + e0;                  \
                    const T *hn = hb + 2 * (t + 1) * W, *ct = cb + 2 * t * W;               \
                    if (t0 + t >= UNI_AHEAD) uni_prefetch_##SUF(gth + q - UNI_AHEAD * N * D, W, 1); \
                    uni_back_##SUF(p, p + W, gth + q, gu + o, s ? gs + o : NULL, acc,       \
                                   acc + W, acc + 2 * W, acc + 3 * W, hn, hn + W, ct,       \
                                   ct + W, gy + o, u + o, th + q, s ? s + o : NULL, Br, Bi, \
                                   Cr, Ci, W);                                              \
                }                                                                           \
            }                                                                               \
            T v[4] = {0, 0, 0, 0}; /* sums over the channels, in order */                   \
            for (int64_t k = 0; k < 4; ++k)                                                 \
                for (int64_t w = 0; w < W; ++w) v[k] += acc[k * W + w];                     \
            for (int64_t k = 0; k < 2; ++k) {                                               \
                gB[(j * N + n) * 2 + k] = v[k];                                             \
                gC[(j * N + n) * 2 + k] = v[2 + k];                                         \
                if (gh0) memcpy(gh0 + (j * 2 * N + 2 * n + k) * D + e0, p + k * W,          \
                                sizeof(T) * W);                                             \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    free(hb); free(cb); free(p); free(a); free(acc);                                        \
}

UNITARY(float, f32)
UNITARY(double, f64)
