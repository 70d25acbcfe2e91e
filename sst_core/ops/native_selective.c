/* Mamba's selective scan on the CPU (sst_core/ops/selective_scan.py), forward and backward,
   and the causal conv before it (sst_core/ops/conv_gate.py).

   Shapes, all contiguous unless said: dt, x, out (b, L, E); B, C (b, L, N); At (G, N, E),
   the transposed A of G models, sample j using model j / (b / G); h0, h_last (b, E, N);
   optional bias, D (G, E) and z (b, L, E, any sample and step strides). Inside, the state
   of one sample is kept as (N, E): every inner loop runs along the E channels, contiguous
   in dt, x, out and At, so the compiler vectorises it; the N states of a channel meet
   only in y_t = sum_n h_t[n] C_t[n], accumulated channel by channel over n in order.

   Forward, for t = 0 .. L-1 (the options as in Mamba's selective_scan_fn):
       dt_t = softplus(dt_t + bias)         (without sp: dt_t + bias; bias 0 if NULL)
       a_t = exp(dt_t A)                    (negative: 2 exp(dt_t A) - 1)
       h_t = a_t h_{t-1} + (dt_t x_t) B_t,   y_t = sum_n h_t[n] C_t[n]
       out_t = (y_t + D x_t) SiLU(z_t)      (the parts given)
   When `starts` is given ((n_chunks, b, N, E), n_chunks = ceil(L / T)) the state entering
   every chunk of T steps is written there; that is all the backward needs. Without it (no
   gradient wanted) nothing but the running state is kept.

   Backward, chunk by chunk from the last: the chunk's dt, exp(dt A), states and y are
   recomputed from its start into a per-thread buffer of T steps, then, for t from the
   chunk's end, with gy_t = dL/dy_t (through the gate):
       g_t = gy_t C_t + a_{t+1} g_{t+1}                  (the carry g starts at dL/dh_L)
       gC_t = sum_e gy_t h_t,   gB_t = sum_e (dt_t x_t) g_t,   w_t = sum_n g_t B_t
       z_t = g_t h_{t-1} exp(dt_t A)                      (negative: 2 exp(dt_t A))
       gx_t = w_t dt_t (+ D gy_t),  gdt_t = (w_t x_t + sum_n z_t A) softplus'(dt_t + bias)
       gA[j] += z_t dt_t,  gbias[j] += gdt_t,  gD[j] += gy_t x_t
   and dL/dh0 = a_1 g_1. The parameters' gradients are per sample; the caller sums them
   over each model's samples. gB and gC sum over the channels: a call over a part of the
   channels writes its partial sums, which the caller adds.

   Each call runs samples [r0, r1) and channels [e0, e1), so that callers split the work
   between threads by samples or by channels; calls on different parts never write the
   same element (gB and gC: given a separate buffer per channel part). Sums run in a fixed
   order, so the results do not depend on timing.

   exp, log1p and so softplus and SiLU are computed here by polynomials (below) that the
   compiler vectorises, to about 1 ulp; torch's own differ from them by rounding.

   Compiled on first use by sst_core/ops/native_selective.py (one library per source,
   flags and CPU); the torch path in selective_scan.py computes the same, and the tests
   compare both with the per-step reference. */
/* Only for targets without AVX-512. Without masked vector operations, gcc keeps a loop
   that selects between floats by a comparison (the clamps in exp, softplus's threshold)
   scalar unless it may assume that comparisons raise no floating-point exception; nothing
   here reads the exception flags (2.8x faster Mamba training steps on an AVX2 CPU). With
   AVX-512 the loops vectorise as they are, and the block is not compiled. */
#ifndef __AVX512F__
#pragma GCC optimize("no-trapping-math")
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* exp(x) without a libm call or a branch, so that loops calling it vectorise:
   x = k ln2 + r with k = round(x / ln2), |r| <= about ln2 / 2, ln2 = HI + LO (Cody-Waite:
   HI has enough trailing zero bits for k HI to be exact); exp(r) by its Taylor polynomial
   (float: degree 7, truncation error below 6e-9 relative; double: degree 13, below 5e-18);
   2^k as 2^(k/2) 2^(k - k/2), so that results below the normal range come out subnormal or
   zero and large ones overflow to inf, as IEEE arithmetic rounds them. k is read from the
   bits of x / ln2 + 1.5 2^(mantissa bits) (round to nearest, no float-to-int conversion).
   x is clamped to a range just wider than where exp is finite and non-zero. */
static inline float exp_f32(float x) {
    const float magic = 0x1.8p23f;
    float xc = x < -104.0f ? -104.0f : x;
    xc = xc > 89.0f ? 89.0f : xc;
    float t = xc * 0x1.715476p+0f + magic;
    float k = t - magic;
    int32_t ki, mi;
    memcpy(&ki, &t, sizeof ki);
    memcpy(&mi, &magic, sizeof mi);
    ki -= mi;
    float r = xc - k * 0x1.62ep-1f;
    r = r - k * 0x1.0bfbe8p-15f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t k1 = ki >> 1, k2 = ki - k1;
    int32_t b1 = (k1 + 127) << 23, b2 = (k2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    float e = p * s1 * s2;
    return e; /* NaN: the clamps keep it, and it reaches e */
}

static inline double exp_f64(double x) {
    const double magic = 0x1.8p52;
    double xc = x < -746.0 ? -746.0 : x;
    xc = xc > 710.0 ? 710.0 : xc;
    double t = xc * 0x1.71547652b82fep+0 + magic;
    double k = t - magic;
    int64_t ki, mi;
    memcpy(&ki, &t, sizeof ki);
    memcpy(&mi, &magic, sizeof mi);
    ki -= mi;
    double r = xc - k * 0x1.62e42p-1;
    r = r - k * 0x1.fdf473de6af28p-22;
    double p = 1.0 / 6227020800.0;      /* 1 / 13! */
    p = p * r + 1.0 / 479001600.0;      /* 1 / 12! */
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    int64_t k1 = ki >> 1, k2 = ki - k1;
    int64_t b1 = (k1 + 1023) << 52, b2 = (k2 + 1023) << 52;
    double s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    double e = p * s1 * s2;
    return e; /* NaN: the clamps keep it, and it reaches e */
}

/* log(1 + w) for w in [0, 1]: for w > sqrt(2) - 1, 1 + w = 2 (1 + (w - 1) / 2); then
   log(1 + v) = 2 atanh(s), s = v / (2 + v), |s| <= 0.1716, by its series in s^2
   (float: to s^10, truncation below 2e-9 relative; double: to s^20, below 3e-17). */
static inline float log1p01_f32(float w) {
    const int big = w > 0.41421356f;
    float v = big ? (w - 1.0f) * 0.5f : w;
    float s = v / (2.0f + v), q = s * s;
    float p = 1.0f / 11.0f;
    p = p * q + 1.0f / 9.0f;
    p = p * q + 1.0f / 7.0f;
    p = p * q + 1.0f / 5.0f;
    p = p * q + 1.0f / 3.0f;
    p = p * q + 1.0f;
    return (big ? 0x1.62e43p-1f : 0.0f) + 2.0f * s * p;
}

static inline double log1p01_f64(double w) {
    const int big = w > 0.41421356237309503;
    double v = big ? (w - 1.0) * 0.5 : w;
    double s = v / (2.0 + v), q = s * s;
    double p = 1.0 / 21.0;
    p = p * q + 1.0 / 19.0;
    p = p * q + 1.0 / 17.0;
    p = p * q + 1.0 / 15.0;
    p = p * q + 1.0 / 13.0;
    p = p * q + 1.0 / 11.0;
    p = p * q + 1.0 / 9.0;
    p = p * q + 1.0 / 7.0;
    p = p * q + 1.0 / 5.0;
    p = p * q + 1.0 / 3.0;
    p = p * q + 1.0;
    return (big ? 0x1.62e42fefa39efp-1 : 0.0) + 2.0 * s * p;
}

/* torch's softplus (threshold 20): x above it, else log(1 + e^x) = max(x, 0) +
   log(1 + e^-|x|); and its derivative, sigmoid(x) (1 above the threshold). */
static inline float sigmoid_f32(float v) { return 1.0f / (1.0f + exp_f32(-v)); }
static inline double sigmoid_f64(double v) { return 1.0 / (1.0 + exp_f64(-v)); }

static inline float softplus_f32(float x) {
    float a = x < 0 ? -x : x;
    float sp = (x > 0 ? x : 0.0f) + log1p01_f32(exp_f32(-a));
    return x > 20.0f ? x : sp;
}

static inline double softplus_f64(double x) {
    double a = x < 0 ? -x : x;
    double sp = (x > 0 ? x : 0.0) + log1p01_f64(exp_f64(-a));
    return x > 20.0 ? x : sp;
}

static inline float dsoftplus_f32(float x) { return x > 20.0f ? 1.0f : sigmoid_f32(x); }
static inline double dsoftplus_f64(double x) { return x > 20.0 ? 1.0 : sigmoid_f64(x); }

/* The scan's exp and softplus, exposed for the tests (n values, in place). */
void sel_exp_f32(float *v, int64_t n) { for (int64_t i = 0; i < n; ++i) v[i] = exp_f32(v[i]); }
void sel_exp_f64(double *v, int64_t n) { for (int64_t i = 0; i < n; ++i) v[i] = exp_f64(v[i]); }
void sel_softplus_f32(float *v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) v[i] = softplus_f32(v[i]);
}
void sel_softplus_f64(double *v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) v[i] = softplus_f64(v[i]);
}

static void *sel_alloc(size_t bytes) {
    size_t n = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, n ? n : 64);
}

/* The optional parts of a call, pointers (NULL: absent) for the W channels [e0, e1) of one
   sample's model or step, so that the row kernels below see plain arrays. */
#define SELECTIVE(T, SUF)                                                                   \
/* dt_t (W) from the raw input: [softplus](dt + bias); u = dt_t x_t. */                    \
static inline void dt_row_##SUF(T *restrict dtv, T *restrict u, const T *restrict dt,       \
                                const T *restrict bias, const T *restrict x, int sp,        \
                                int64_t W) {                                                \
    if (bias) for (int64_t w = 0; w < W; ++w) dtv[w] = dt[w] + bias[w];                     \
    else memcpy(dtv, dt, sizeof(T) * W);                                                    \
    if (sp) for (int64_t w = 0; w < W; ++w) dtv[w] = softplus_##SUF(dtv[w]);                \
    for (int64_t w = 0; w < W; ++w) u[w] = dtv[w] * x[w];                                   \
}                                                                                           \
                                                                                            \
/* One step of the recurrence: h (N, W) in place; y (W) = sum_n h[n] C[n]. */               \
static inline void fwd_step_##SUF(T *restrict h, T *restrict y, const T *restrict dtv,      \
                                  const T *restrict u, const T *restrict A, int64_t E,      \
                                  const T *restrict Bt, const T *restrict Ct, int64_t N,    \
                                  int64_t W, int neg) {                                     \
    memset(y, 0, sizeof(T) * W);                                                            \
    for (int64_t n = 0; n < N; ++n) {                                                       \
        const T *restrict An = A + n * E;                                                   \
        T *restrict hn = h + n * W;                                                         \
        const T Bn = Bt[n], Cn = Ct[n];                                                     \
        if (neg) {                                                                          \
            for (int64_t w = 0; w < W; ++w) {                                               \
                T a = 2 * exp_##SUF(dtv[w] * An[w]) - 1;                                    \
                T hv = a * hn[w] + u[w] * Bn;                                               \
                hn[w] = hv;                                                                 \
                y[w] += hv * Cn;                                                            \
            }                                                                               \
        } else {                                                                            \
            for (int64_t w = 0; w < W; ++w) {                                               \
                T a = exp_##SUF(dtv[w] * An[w]);                                            \
                T hv = a * hn[w] + u[w] * Bn;                                               \
                hn[w] = hv;                                                                 \
                y[w] += hv * Cn;                                                            \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* The same step for the backward's recomputation: h_{t-1} (hp) into h_t (hn), keeping      \
   exp(dt A) (ex), both (N, W), and y (W). */                                               \
static inline void redo_step_##SUF(const T *restrict hp, T *restrict hn, T *restrict ex,    \
                                   T *restrict y, const T *restrict dtv,                    \
                                   const T *restrict u, const T *restrict A, int64_t E,     \
                                   const T *restrict Bt, const T *restrict Ct, int64_t N,   \
                                   int64_t W, int neg) {                                    \
    memset(y, 0, sizeof(T) * W);                                                            \
    for (int64_t n = 0; n < N; ++n) {                                                       \
        const T *restrict An = A + n * E;                                                   \
        const T *restrict hpn = hp + n * W;                                                 \
        T *restrict hnn = hn + n * W, *restrict exn = ex + n * W;                           \
        const T Bn = Bt[n], Cn = Ct[n];                                                     \
        if (neg) {                                                                          \
            for (int64_t w = 0; w < W; ++w) {                                               \
                T e = exp_##SUF(dtv[w] * An[w]);                                            \
                T a = 2 * e - 1;                                                            \
                T hv = a * hpn[w] + u[w] * Bn;                                              \
                exn[w] = e;                                                                 \
                hnn[w] = hv;                                                                \
                y[w] += hv * Cn;                                                            \
            }                                                                               \
        } else {                                                                            \
            for (int64_t w = 0; w < W; ++w) {                                               \
                T e = exp_##SUF(dtv[w] * An[w]);                                            \
                T hv = e * hpn[w] + u[w] * Bn;                                              \
                exn[w] = e;                                                                 \
                hnn[w] = hv;                                                                \
                y[w] += hv * Cn;                                                            \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* out = (y + D x) SiLU(z), the parts that are given. */                                    \
static inline void out_row_##SUF(T *restrict o, const T *restrict y, const T *restrict x,   \
                                 const T *restrict D, const T *restrict z, int64_t W) {     \
    if (D && z) for (int64_t w = 0; w < W; ++w)                                             \
        o[w] = (y[w] + D[w] * x[w]) * (z[w] * sigmoid_##SUF(z[w]));                         \
    else if (D) for (int64_t w = 0; w < W; ++w) o[w] = y[w] + D[w] * x[w];                  \
    else if (z) for (int64_t w = 0; w < W; ++w) o[w] = y[w] * (z[w] * sigmoid_##SUF(z[w])); \
    else memcpy(o, y, sizeof(T) * W);                                                       \
}                                                                                           \
                                                                                            \
/* From dL/dout (go): dL/dy (gy), D's share of dL/dx (gxd, if D), dL/dz (gz, if z) and       \
   D's gradient (gD, accumulated). */                                                       \
static inline void out_grad_row_##SUF(T *restrict gy, T *restrict gxd, T *restrict gz,      \
                                      T *restrict gD, const T *restrict go,                 \
                                      const T *restrict y, const T *restrict x,             \
                                      const T *restrict D, const T *restrict z, int64_t W) { \
    if (z) {                                                                                \
        for (int64_t w = 0; w < W; ++w) {                                                   \
            T sg = sigmoid_##SUF(z[w]);                                                     \
            T v = D ? y[w] + D[w] * x[w] : y[w];                                            \
            gy[w] = go[w] * (z[w] * sg);                                                    \
            gz[w] = go[w] * v * (sg * (1 + z[w] * (1 - sg)));                               \
        }                                                                                   \
    } else {                                                                                \
        memcpy(gy, go, sizeof(T) * W);                                                      \
    }                                                                                       \
    if (D) for (int64_t w = 0; w < W; ++w) { gxd[w] = gy[w] * D[w]; gD[w] += gy[w] * x[w]; } \
}                                                                                           \
                                                                                            \
/* sum_w p[w] q[w]: 16 partial sums (one vector) over the whole blocks of 16, added       \
   pairwise at the end (fixed-size loops the compiler turns into vector adds), then the     \
   remaining W % 16 terms in order. */                                                      \
static inline T dot_##SUF(const T *restrict p, const T *restrict q, int64_t W) {            \
    T acc[16] = {0};                                                                        \
    int64_t w0 = 0;                                                                         \
    for (; w0 + 16 <= W; w0 += 16)                                                          \
        for (int k = 0; k < 16; ++k) acc[k] += p[w0 + k] * q[w0 + k];                       \
    for (int k = 0; k < 8; ++k) acc[k] += acc[k + 8];                                       \
    for (int k = 0; k < 4; ++k) acc[k] += acc[k + 4];                                       \
    for (int k = 0; k < 2; ++k) acc[k] += acc[k + 2];                                       \
    T sum = acc[0] + acc[1];                                                                \
    for (int64_t w = w0; w < W; ++w) sum += p[w] * q[w];                                    \
    return sum;                                                                             \
}                                                                                           \
                                                                                            \
/* One reverse step of the recurrence: g (N, W) holds a_{t+1} g_{t+1} on entry and a_t g_t   \
   on exit; gy the gradient of y_t; gv (W) scratch. Writes w_t = sum_n g_t B_t (wt) and     \
   sum_n z_t A (sdt), gB_t, gC_t, and adds z_t dt_t to gA. */                               \
static inline void bwd_step_##SUF(T *restrict g, const T *restrict h1, const T *restrict h0, \
                                  const T *restrict ex, const T *restrict gy,               \
                                  const T *restrict dtv, const T *restrict u,               \
                                  const T *restrict A, int64_t E, const T *restrict Bt,     \
                                  const T *restrict Ct, T *restrict gA, T *restrict gBt,    \
                                  T *restrict gCt, int64_t N, int64_t W, int neg,           \
                                  T *restrict wt, T *restrict sdt, T *restrict gv) {        \
    memset(wt, 0, sizeof(T) * W);                                                           \
    memset(sdt, 0, sizeof(T) * W);                                                          \
    const T two = neg ? 2 : 1, one = neg ? 1 : 0; /* a = two e - one, da/d(dt A) = two e */ \
    for (int64_t n = 0; n < N; ++n) {                                                       \
        const T *restrict An = A + n * E;                                                   \
        const T *restrict h1n = h1 + n * W, *restrict h0n = h0 + n * W;                     \
        const T *restrict exn = ex + n * W;                                                 \
        T *restrict gn = g + n * W, *restrict gAn = gA + n * E;                             \
        const T Bn = Bt[n], Cn = Ct[n];                                                     \
        for (int64_t w = 0; w < W; ++w) {                                                   \
            T gt = gy[w] * Cn + gn[w];                                                      \
            T e = exn[w];                                                                   \
            T z = gt * h0n[w] * (two * e);                                                  \
            gv[w] = gt;                                                                     \
            wt[w] += gt * Bn;                                                               \
            sdt[w] += z * An[w];                                                            \
            gAn[w] += z * dtv[w];                                                           \
            gn[w] = (two * e - one) * gt;                                                   \
        }                                                                                   \
        gCt[n] = dot_##SUF(gy, h1n, W);                                                     \
        gBt[n] = dot_##SUF(u, gv, W);                                                       \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* dL/dx = w_t dt_t (+ D's share), dL/d(raw dt) = (w_t x_t + sum_n z_t A) [softplus'];      \
   the bias's gradient accumulated. */                                                      \
static inline void in_grad_row_##SUF(T *restrict gdt, T *restrict gx, T *restrict gbias,    \
                                     const T *restrict wt, const T *restrict sdt,           \
                                     const T *restrict gxd, const T *restrict dtv,          \
                                     const T *restrict x, const T *restrict dt,             \
                                     const T *restrict bias, int sp, int64_t W) {           \
    for (int64_t w = 0; w < W; ++w) gdt[w] = wt[w] * x[w] + sdt[w];                         \
    if (sp) for (int64_t w = 0; w < W; ++w)                                                 \
        gdt[w] *= dsoftplus_##SUF(bias ? dt[w] + bias[w] : dt[w]);                          \
    if (bias) for (int64_t w = 0; w < W; ++w) gbias[w] += gdt[w];                           \
    if (gxd) for (int64_t w = 0; w < W; ++w) gx[w] = wt[w] * dtv[w] + gxd[w];               \
    else for (int64_t w = 0; w < W; ++w) gx[w] = wt[w] * dtv[w];                            \
}                                                                                           \
                                                                                            \
/* Forward. Optional (NULL: absent): h0; bias, D (G, E); z (strided: zb, zl); starts. */   \
void sel_fwd_##SUF(const T *dt, const T *x, const T *At, const T *Bm, const T *Cm,          \
                   const T *h0, const T *bias, const T *D, const T *z, int64_t zb,          \
                   int64_t zl, T *out, T *h_last, T *starts, int64_t b, int64_t L,          \
                   int64_t E, int64_t N, int64_t G, int64_t Tc, int64_t neg, int64_t sp,    \
                   int64_t r0, int64_t r1, int64_t e0, int64_t e1) {                        \
    const int64_t W = e1 - e0, per = b / G;                                                 \
    T *h = sel_alloc(sizeof(T) * N * W), *u = sel_alloc(sizeof(T) * W);                    \
    T *dtv = sel_alloc(sizeof(T) * W), *y = sel_alloc(sizeof(T) * W);                      \
    for (int64_t j = r0; j < r1; ++j) {                                                     \
        const int64_t m = j / per;                                                          \
        const T *A = At + m * N * E + e0;                                                   \
        const T *bj = bias ? bias + m * E + e0 : NULL, *Dj = D ? D + m * E + e0 : NULL;     \
        for (int64_t n = 0; n < N; ++n)                                                     \
            for (int64_t w = 0; w < W; ++w)                                                 \
                h[n * W + w] = h0 ? h0[(j * E + e0 + w) * N + n] : (T)0;                    \
        for (int64_t t = 0; t < L; ++t) {                                                   \
            if (starts && t % Tc == 0) {                                                    \
                T *s = starts + ((t / Tc) * b + j) * N * E + e0;                            \
                for (int64_t n = 0; n < N; ++n)                                             \
                    memcpy(s + n * E, h + n * W, sizeof(T) * W);                            \
            }                                                                               \
            const int64_t o = j * L + t, oe = o * E + e0;                                   \
            dt_row_##SUF(dtv, u, dt + oe, bj, x + oe, (int)sp, W);                          \
            fwd_step_##SUF(h, y, dtv, u, A, E, Bm + o * N, Cm + o * N, N, W, (int)neg);     \
            out_row_##SUF(out + oe, y, x + oe, Dj, z ? z + j * zb + t * zl + e0 : NULL, W); \
        }                                                                                   \
        if (h_last)                                                                         \
            for (int64_t w = 0; w < W; ++w)                                                 \
                for (int64_t n = 0; n < N; ++n)                                             \
                    h_last[(j * E + e0 + w) * N + n] = h[n * W + w];                        \
    }                                                                                       \
    free(h); free(u); free(dtv); free(y);                                                   \
}                                                                                           \
                                                                                            \
/* Backward. Written: gdt, gx (b, L, E); gz (b, L, E) if z; gA (b, N, E), gD, gbias (b, E)  \
   (if given) per sample; gB, gC (b, L, N) of these channels; gh0 (b, E, N) if not NULL.    \
   glast (b, E, N) or NULL: dL/dh_L. */                                                     \
void sel_bwd_##SUF(const T *dt, const T *x, const T *At, const T *Bm, const T *Cm,          \
                   const T *bias, const T *D, const T *z, int64_t zb, int64_t zl,           \
                   const T *starts, const T *gout, const T *glast, T *gdt, T *gx, T *gz,    \
                   T *gA, T *gB, T *gC, T *gD, T *gbias, T *gh0, int64_t b, int64_t L,      \
                   int64_t E, int64_t N, int64_t G, int64_t Tc, int64_t neg, int64_t sp,    \
                   int64_t r0, int64_t r1, int64_t e0, int64_t e1) {                        \
    const int64_t W = e1 - e0, per = b / G, S = N * W, n_chunks = (L + Tc - 1) / Tc;        \
    T *hb = sel_alloc(sizeof(T) * (Tc + 1) * S), *ex = sel_alloc(sizeof(T) * Tc * S);       \
    T *dtb = sel_alloc(sizeof(T) * Tc * W), *ub = sel_alloc(sizeof(T) * Tc * W);            \
    T *yb = sel_alloc(sizeof(T) * Tc * W), *g = sel_alloc(sizeof(T) * S);                   \
    T *gy = sel_alloc(sizeof(T) * W), *gxd = sel_alloc(sizeof(T) * W);                      \
    T *wt = sel_alloc(sizeof(T) * W), *sdt = sel_alloc(sizeof(T) * W);                      \
    T *gv = sel_alloc(sizeof(T) * W);                                                       \
    for (int64_t j = r0; j < r1; ++j) {                                                     \
        const int64_t m = j / per;                                                          \
        const T *A = At + m * N * E + e0;                                                   \
        const T *bj = bias ? bias + m * E + e0 : NULL, *Dj = D ? D + m * E + e0 : NULL;     \
        T *gAj = gA + j * N * E + e0;                                                       \
        T *gDj = D ? gD + j * E + e0 : NULL, *gbj = bias ? gbias + j * E + e0 : NULL;       \
        if (gDj) memset(gDj, 0, sizeof(T) * W);                                             \
        if (gbj) memset(gbj, 0, sizeof(T) * W);                                             \
        for (int64_t n = 0; n < N; ++n) {                                                   \
            memset(gAj + n * E, 0, sizeof(T) * W);                                          \
            for (int64_t w = 0; w < W; ++w)                                                 \
                g[n * W + w] = glast ? glast[(j * E + e0 + w) * N + n] : (T)0;              \
        }                                                                                   \
        for (int64_t i = n_chunks - 1; i >= 0; --i) {                                       \
            const int64_t s = i * Tc, len = (L - s < Tc) ? L - s : Tc;                      \
            const T *st = starts + (i * b + j) * N * E + e0;                                \
            for (int64_t n = 0; n < N; ++n) memcpy(hb + n * W, st + n * E, sizeof(T) * W);  \
            for (int64_t t = 0; t < len; ++t) {                                             \
                const int64_t o = j * L + s + t, oe = o * E + e0;                           \
                dt_row_##SUF(dtb + t * W, ub + t * W, dt + oe, bj, x + oe, (int)sp, W);     \
                redo_step_##SUF(hb + t * S, hb + (t + 1) * S, ex + t * S, yb + t * W,       \
                                dtb + t * W, ub + t * W, A, E, Bm + o * N, Cm + o * N, N,   \
                                W, (int)neg);                                               \
            }                                                                               \
            for (int64_t t = len - 1; t >= 0; --t) {                                        \
                const int64_t o = j * L + s + t, oe = o * E + e0;                           \
                const T *zt = z ? z + j * zb + (s + t) * zl + e0 : NULL;                    \
                out_grad_row_##SUF(gy, gxd, z ? gz + oe : NULL, gDj, gout + oe, yb + t * W, \
                                   x + oe, Dj, zt, W);                                      \
                bwd_step_##SUF(g, hb + (t + 1) * S, hb + t * S, ex + t * S, gy,             \
                               dtb + t * W, ub + t * W, A, E, Bm + o * N, Cm + o * N, gAj,  \
                               gB + o * N, gC + o * N, N, W, (int)neg, wt, sdt, gv);        \
                in_grad_row_##SUF(gdt + oe, gx + oe, gbj, wt, sdt, Dj ? gxd : NULL,         \
                                  dtb + t * W, x + oe, dt + oe, bj, (int)sp, W);            \
            }                                                                               \
        }                                                                                   \
        if (gh0)                                                                            \
            for (int64_t w = 0; w < W; ++w)                                                 \
                for (int64_t n = 0; n < N; ++n)                                             \
                    gh0[(j * E + e0 + w) * N + n] = g[n * W + w];                           \
    }                                                                                       \
    free(hb); free(ex); free(dtb); free(ub); free(yb); free(g);                             \
    free(gy); free(gxd); free(wt); free(sdt); free(gv);                                     \
}

SELECTIVE(float, f32)
SELECTIVE(double, f64)

/* The causal depthwise conv and SiLU before the scan (sst_core/ops/conv_gate.py):

       c_t = bias + sum_i w[i] xe_{t+i},   out_t = SiLU(c_t) = c_t / (1 + exp(-c_t))
       xe = [window (K - 1 steps, oldest first; zeros if NULL); x],  w (G, K, E), bias (G, E)

   x may be a strided view (the first half of the input projection): sample j, step t,
   channel e at x[j * sb + t * sl + e]. Per-model parameters as in the scan; their
   gradients are written per sample ((b, K, E), (b, E)) for the caller to sum. The backward
   recomputes c (K products a channel) rather than storing it. */

#define CONV(T, SUF)                                                                   \
/* Row kernels (restrict parameters: gcc trusts restrict there and vectorises). */         \
static inline void axpy_##SUF(T *restrict c, const T *restrict a, const T *restrict q,      \
                              int64_t W) {                                                  \
    for (int64_t v = 0; v < W; ++v) c[v] += a[v] * q[v];                                    \
}                                                                                           \
                                                                                            \
static inline void silu_row_##SUF(T *restrict o, const T *restrict bias, int64_t W) {       \
    for (int64_t v = 0; v < W; ++v) {                                                       \
        T c = bias[v] + o[v];                                                               \
        o[v] = c * sigmoid_##SUF(c);                                                        \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* c (pre-activation sums, bias not added) -> dL/dc, and the bias gradient. */              \
static inline void dsilu_row_##SUF(T *restrict c, const T *restrict bias,                   \
                                   const T *restrict g, T *restrict gb, int64_t W) {        \
    for (int64_t v = 0; v < W; ++v) {                                                       \
        T pre = bias[v] + c[v];                                                             \
        T sg = sigmoid_##SUF(pre);                                                          \
        T d = g[v] * (sg * (1 + pre * (1 - sg)));                                           \
        c[v] = d;                                                                           \
        gb[v] += d;                                                                         \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* The row of xe feeding tap i of step t, or NULL (zeros before the sequence). */           \
static inline const T *conv_src_##SUF(const T *x, int64_t sb, int64_t sl, const T *win,     \
                                      int64_t j, int64_t t, int64_t i, int64_t E,           \
                                      int64_t K, int64_t e0) {                              \
    const int64_t p = t + i - (K - 1); /* the step of x (the window's if < 0) */            \
    if (p >= 0) return x + j * sb + p * sl + e0;                                            \
    return win ? win + (j * (K - 1) + (K - 1 + p)) * E + e0 : NULL;                         \
}                                                                                           \
                                                                                            \
/* sum_i w[i] xe_{t+i} (W channels) into c, without the bias. */                            \
static inline void conv_sum_##SUF(T *c, const T *x, int64_t sb, int64_t sl, const T *win,   \
                                  const T *w, int64_t j, int64_t t, int64_t E, int64_t K,   \
                                  int64_t e0, int64_t W) {                                  \
    memset(c, 0, sizeof(T) * W);                                                            \
    for (int64_t i = 0; i < K; ++i) {                                                       \
        const T *src = conv_src_##SUF(x, sb, sl, win, j, t, i, E, K, e0);                   \
        if (src) axpy_##SUF(c, w + i * E, src, W);                                          \
    }                                                                                       \
}                                                                                           \
                                                                                            \
void conv_fwd_##SUF(const T *x, int64_t sb, int64_t sl, const T *win, const T *wT,          \
                    const T *bias, T *out, int64_t b, int64_t L, int64_t E, int64_t K,      \
                    int64_t G, int64_t r0, int64_t r1, int64_t e0, int64_t e1) {            \
    const int64_t W = e1 - e0, per = b / G;                                                 \
    for (int64_t j = r0; j < r1; ++j) {                                                     \
        const int64_t m = j / per;                                                          \
        for (int64_t t = 0; t < L; ++t) {                                                   \
            T *o = out + (j * L + t) * E + e0;                                              \
            conv_sum_##SUF(o, x, sb, sl, win, wT + m * K * E + e0, j, t, E, K, e0, W);      \
            silu_row_##SUF(o, bias + m * E + e0, W);                                        \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* go (b, L, E) contiguous; gx (b, L, E); gwin (b, (K-1) E) or NULL; gw (b, K, E), gbias    \
   (b, E): per sample. */                                                                   \
void conv_bwd_##SUF(const T *x, int64_t sb, int64_t sl, const T *win, const T *wT,          \
                    const T *bias, const T *go, T *gx, T *gwin, T *gw, T *gbias, int64_t b, \
                    int64_t L, int64_t E, int64_t K, int64_t G, int64_t r0, int64_t r1,     \
                    int64_t e0, int64_t e1) {                                               \
    const int64_t W = e1 - e0, per = b / G;                                                 \
    T *gc = sel_alloc(sizeof(T) * L * W);                                                   \
    for (int64_t j = r0; j < r1; ++j) {                                                     \
        const int64_t m = j / per;                                                          \
        const T *w = wT + m * K * E + e0, *bm = bias + m * E + e0;                          \
        T *gwj = gw + j * K * E + e0, *gbj = gbias + j * E + e0;                            \
        memset(gbj, 0, sizeof(T) * W);                                                      \
        for (int64_t i = 0; i < K; ++i) memset(gwj + i * E, 0, sizeof(T) * W);             \
        for (int64_t t = 0; t < L; ++t) { /* dL/dc_t, and the parameters' gradients */      \
            T *c = gc + t * W;                                                              \
            conv_sum_##SUF(c, x, sb, sl, win, w, j, t, E, K, e0, W);                        \
            dsilu_row_##SUF(c, bm, go + (j * L + t) * E + e0, gbj, W);                      \
            for (int64_t i = 0; i < K; ++i) {                                               \
                const T *src = conv_src_##SUF(x, sb, sl, win, j, t, i, E, K, e0);           \
                if (src) axpy_##SUF(gwj + i * E, c, src, W);                                \
            }                                                                               \
        }                                                                                   \
        /* position q of xe (q < K - 1: the window) feeds c_t for t = q - i, i < K */       \
        for (int64_t q = 0; q < L + K - 1; ++q) {                                           \
            T *dst = q >= K - 1 ? gx + (j * L + q - (K - 1)) * E + e0                       \
                                : (gwin ? gwin + (j * (K - 1) + q) * E + e0 : NULL);        \
            if (!dst) continue;                                                             \
            memset(dst, 0, sizeof(T) * W);                                                  \
            for (int64_t i = K - 1; i >= 0; --i) {                                          \
                const int64_t t = q - i;                                                    \
                if (t >= 0 && t < L) axpy_##SUF(dst, w + i * E, gc + t * W, W);             \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    free(gc);                                                                               \
}                                                                                           \

CONV(float, f32)
CONV(double, f64)

/* The calls above split into parts, run by the process's OpenMP team, one part a thread:
   parts holds nparts rows (r0, r1, e0, e1), and each part computes exactly what one call
   with those bounds computes. Built with -fopenmp and loaded after torch, the team is
   torch's own (torch's libgomp has the system's soname, so the loader reuses it): the
   threads that run torch's operations run these parts too, instead of a second pool
   contending with torch's spinning workers for the same cores. Without OpenMP the pragma
   is ignored and sel_team() says so (the caller then uses its own threads). */
int64_t sel_team(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

#define PART(i) parts[4 * (i)], parts[4 * (i) + 1], parts[4 * (i) + 2], parts[4 * (i) + 3]
#define TEAM(T, SUF)                                                                        \
void sel_fwd_team_##SUF(const T *dt, const T *x, const T *At, const T *Bm, const T *Cm,     \
                        const T *h0, const T *bias, const T *D, const T *z, int64_t zb,     \
                        int64_t zl, T *out, T *h_last, T *starts, int64_t b, int64_t L,     \
                        int64_t E, int64_t N, int64_t G, int64_t Tc, int64_t neg,           \
                        int64_t sp, const int64_t *parts, int64_t nparts) {                 \
    _Pragma("omp parallel for num_threads(nparts) schedule(static, 1)")                     \
    for (int64_t i = 0; i < nparts; ++i)                                                    \
        sel_fwd_##SUF(dt, x, At, Bm, Cm, h0, bias, D, z, zb, zl, out, h_last, starts, b, L, \
                      E, N, G, Tc, neg, sp, PART(i));                                       \
}                                                                                           \
                                                                                            \
/* gB, gC: part i writes from gB + i * gk (gk = 0: all parts into one buffer, by rows) */   \
void sel_bwd_team_##SUF(const T *dt, const T *x, const T *At, const T *Bm, const T *Cm,     \
                        const T *bias, const T *D, const T *z, int64_t zb, int64_t zl,      \
                        const T *starts, const T *gout, const T *glast, T *gdt, T *gx,      \
                        T *gz, T *gA, T *gB, T *gC, int64_t gk, T *gD, T *gbias, T *gh0,    \
                        int64_t b, int64_t L, int64_t E, int64_t N, int64_t G, int64_t Tc,  \
                        int64_t neg, int64_t sp, const int64_t *parts, int64_t nparts) {    \
    _Pragma("omp parallel for num_threads(nparts) schedule(static, 1)")                     \
    for (int64_t i = 0; i < nparts; ++i)                                                    \
        sel_bwd_##SUF(dt, x, At, Bm, Cm, bias, D, z, zb, zl, starts, gout, glast, gdt, gx,  \
                      gz, gA, gB + i * gk, gC + i * gk, gD, gbias, gh0, b, L, E, N, G, Tc,  \
                      neg, sp, PART(i));                                                    \
}                                                                                           \
                                                                                            \
void conv_fwd_team_##SUF(const T *x, int64_t sb, int64_t sl, const T *win, const T *wT,     \
                         const T *bias, T *out, int64_t b, int64_t L, int64_t E, int64_t K, \
                         int64_t G, const int64_t *parts, int64_t nparts) {                 \
    _Pragma("omp parallel for num_threads(nparts) schedule(static, 1)")                     \
    for (int64_t i = 0; i < nparts; ++i)                                                    \
        conv_fwd_##SUF(x, sb, sl, win, wT, bias, out, b, L, E, K, G, PART(i));              \
}                                                                                           \
                                                                                            \
void conv_bwd_team_##SUF(const T *x, int64_t sb, int64_t sl, const T *win, const T *wT,     \
                         const T *bias, const T *go, T *gx, T *gwin, T *gw, T *gbias,       \
                         int64_t b, int64_t L, int64_t E, int64_t K, int64_t G,             \
                         const int64_t *parts, int64_t nparts) {                            \
    _Pragma("omp parallel for num_threads(nparts) schedule(static, 1)")                     \
    for (int64_t i = 0; i < nparts; ++i)                                                    \
        conv_bwd_##SUF(x, sb, sl, win, wT, bias, go, gx, gwin, gw, gbias, b, L, E, K, G,    \
                       PART(i));                                                            \
}

TEAM(float, f32)
TEAM(double, f64)
