/* The CPU loops of the diagonal linear scan h_t = a_t h_{t-1} + b_t (sst_core/ops/scan.py).

   Tensors are contiguous (n_b, L, C): n_b rows, L steps, C channels (complex: C pairs of
   re, im). Each call runs rows [r0, r1) and channels [c0, c1), so callers split the work
   between threads by rows or by channels; different calls never write the same element.

   Forward:   h_t = a_t h_{t-1} + b_t,                    h_{-1} = h0 (zero when NULL)
   Backward:  g_t = go_t + conj(a_{t+1}) g_{t+1},          g_{L-1} = go_{L-1}
              ga_t = g_t conj(h_{t-1})                     (ga NULL: not wanted)
   The backward runs once, backwards in time, and writes ga beside g while h_{t-1} and
   g_t are in cache.

   Compiled on first use by sst_core/ops/native.py; every function has a torch twin in
   scan.py, and the tests compare the two. */
#include <stddef.h>
#include <stdint.h>

#define REAL_SCAN(T, SUF)                                                                   \
void scan_fwd_##SUF(const T *a, const T *b, const T *h0, T *h, int64_t L, int64_t C,        \
                    int64_t r0, int64_t r1, int64_t c0, int64_t c1) {                       \
    for (int64_t r = r0; r < r1; ++r) {                                                     \
        const T *ar = a + r * L * C, *br = b + r * L * C;                                   \
        T *hr = h + r * L * C;                                                              \
        if (h0) {                                                                           \
            const T *p = h0 + r * C;                                                        \
            for (int64_t c = c0; c < c1; ++c) hr[c] = ar[c] * p[c] + br[c];                 \
        } else {                                                                            \
            for (int64_t c = c0; c < c1; ++c) hr[c] = br[c];                                \
        }                                                                                   \
        for (int64_t t = 1; t < L; ++t) {                                                   \
            const T *at = ar + t * C, *bt = br + t * C, *hp = hr + (t - 1) * C;             \
            T *ht = hr + t * C;                                                             \
            for (int64_t c = c0; c < c1; ++c) ht[c] = at[c] * hp[c] + bt[c];                \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
                                                                                            \
void scan_bwd_##SUF(const T *a, const T *h, const T *h0, const T *go, T *g, T *ga,          \
                    int64_t L, int64_t C, int64_t r0, int64_t r1, int64_t c0, int64_t c1) { \
    for (int64_t r = r0; r < r1; ++r) {                                                     \
        const T *ar = a + r * L * C, *hr = h + r * L * C, *gor = go + r * L * C;            \
        T *gr = g + r * L * C, *gar = ga ? ga + r * L * C : NULL;                           \
        T *gl = gr + (L - 1) * C;                                                           \
        const T *gol = gor + (L - 1) * C;                                                   \
        for (int64_t c = c0; c < c1; ++c) gl[c] = gol[c];                                   \
        for (int64_t t = L - 2; t >= 0; --t) {                                              \
            const T *an = ar + (t + 1) * C, *got = gor + t * C, *ht = hr + t * C;           \
            const T *gn = gr + (t + 1) * C;                                                 \
            T *gt = gr + t * C;                                                             \
            if (gar) {                                                                      \
                T *gan = gar + (t + 1) * C;                                                 \
                for (int64_t c = c0; c < c1; ++c) {                                         \
                    gan[c] = gn[c] * ht[c];                                                 \
                    gt[c] = got[c] + an[c] * gn[c];                                         \
                }                                                                           \
            } else {                                                                        \
                for (int64_t c = c0; c < c1; ++c) gt[c] = got[c] + an[c] * gn[c];           \
            }                                                                               \
        }                                                                                   \
        if (gar) {                                                                          \
            const T *p = h0 ? h0 + r * C : NULL;                                            \
            for (int64_t c = c0; c < c1; ++c) gar[c] = p ? gr[c] * p[c] : (T)0;             \
        }                                                                                   \
    }                                                                                       \
}

REAL_SCAN(float, f32)
REAL_SCAN(double, f64)

/* Complex: element c is the pair (x[2c], x[2c+1]) = (re, im). */
#define COMPLEX_SCAN(T, SUF)                                                                \
void scan_fwd_##SUF(const T *a, const T *b, const T *h0, T *h, int64_t L, int64_t C,        \
                    int64_t r0, int64_t r1, int64_t c0, int64_t c1) {                       \
    const int64_t S = 2 * C;                                                                \
    for (int64_t r = r0; r < r1; ++r) {                                                     \
        const T *ar = a + r * L * S, *br = b + r * L * S;                                   \
        T *hr = h + r * L * S;                                                              \
        if (h0) {                                                                           \
            const T *p = h0 + r * S;                                                        \
            for (int64_t c = c0; c < c1; ++c) {                                             \
                T are = ar[2 * c], aim = ar[2 * c + 1], pre = p[2 * c], pim = p[2 * c + 1]; \
                hr[2 * c] = are * pre - aim * pim + br[2 * c];                              \
                hr[2 * c + 1] = are * pim + aim * pre + br[2 * c + 1];                      \
            }                                                                               \
        } else {                                                                            \
            for (int64_t c = 2 * c0; c < 2 * c1; ++c) hr[c] = br[c];                        \
        }                                                                                   \
        for (int64_t t = 1; t < L; ++t) {                                                   \
            const T *at = ar + t * S, *bt = br + t * S, *hp = hr + (t - 1) * S;             \
            T *ht = hr + t * S;                                                             \
            for (int64_t c = c0; c < c1; ++c) {                                             \
                T are = at[2 * c], aim = at[2 * c + 1];                                     \
                T pre = hp[2 * c], pim = hp[2 * c + 1];                                     \
                ht[2 * c] = are * pre - aim * pim + bt[2 * c];                              \
                ht[2 * c + 1] = are * pim + aim * pre + bt[2 * c + 1];                      \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
                                                                                            \
void scan_bwd_##SUF(const T *a, const T *h, const T *h0, const T *go, T *g, T *ga,          \
                    int64_t L, int64_t C, int64_t r0, int64_t r1, int64_t c0, int64_t c1) { \
    const int64_t S = 2 * C;                                                                \
    for (int64_t r = r0; r < r1; ++r) {                                                     \
        const T *ar = a + r * L * S, *hr = h + r * L * S, *gor = go + r * L * S;            \
        T *gr = g + r * L * S, *gar = ga ? ga + r * L * S : NULL;                           \
        T *gl = gr + (L - 1) * S;                                                           \
        const T *gol = gor + (L - 1) * S;                                                   \
        for (int64_t c = 2 * c0; c < 2 * c1; ++c) gl[c] = gol[c];                           \
        for (int64_t t = L - 2; t >= 0; --t) {                                              \
            const T *an = ar + (t + 1) * S, *got = gor + t * S, *ht = hr + t * S;           \
            const T *gn = gr + (t + 1) * S;                                                 \
            T *gt = gr + t * S, *gan = gar ? gar + (t + 1) * S : NULL;                      \
            for (int64_t c = c0; c < c1; ++c) {                                             \
                T are = an[2 * c], aim = an[2 * c + 1];                                     \
                T gre = gn[2 * c], gim = gn[2 * c + 1];                                     \
                if (gan) { /* g_{t+1} conj(h_t) */                                          \
                    T hre = ht[2 * c], him = ht[2 * c + 1];                                 \
                    gan[2 * c] = gre * hre + gim * him;                                     \
                    gan[2 * c + 1] = gim * hre - gre * him;                                 \
                }                                                                           \
                /* go_t + conj(a_{t+1}) g_{t+1} */                                          \
                gt[2 * c] = got[2 * c] + are * gre + aim * gim;                             \
                gt[2 * c + 1] = got[2 * c + 1] + are * gim - aim * gre;                     \
            }                                                                               \
        }                                                                                   \
        if (gar) {                                                                          \
            const T *p = h0 ? h0 + r * S : NULL;                                            \
            for (int64_t c = c0; c < c1; ++c) {                                             \
                T gre = gr[2 * c], gim = gr[2 * c + 1];                                     \
                T pre = p ? p[2 * c] : (T)0, pim = p ? p[2 * c + 1] : (T)0;                 \
                gar[2 * c] = gre * pre + gim * pim;                                         \
                gar[2 * c + 1] = gim * pre - gre * pim;                                     \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}

COMPLEX_SCAN(float, c64)
COMPLEX_SCAN(double, c128)
