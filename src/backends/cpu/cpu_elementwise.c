/* cpu_elementwise: the CPU backend's fast elementwise and per-row kernels — SiLU/sigmoid gates, RMS norm,
 * the causal conv1d — split over the thread pool and written so the compiler vectorizes them (target
 * clones for AVX-512 / AVX2 / baseline, like cpu_gdn.c); also GeGLU and RoPE. The exponential is a vectorizable polynomial
 * (vexp8: reduction to [-ln2/2, ln2/2] and a degree-6 series, relative error ~2e-7 against expf), so
 * results differ from the references in ops_ref.c by float rounding only;
 * tests/engine/test_cpu_ops.c holds them to the references. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/cpu_ops.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("O3")))
#else
#define HOT
#endif

#include "backends/cpu/cpu_vexp.h"

/* dst[i] = f(src[i]) for the two gates, 8 lanes at a time and a scalar tail */
HOT static void silu_mul_span(float *y, const float *g, const float *u, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8sf gv, uv;
        memcpy(&gv, g + i, sizeof gv);
        memcpy(&uv, u + i, sizeof uv);
        v8sf out = gv / (1.0f + vexp8(-gv)) * uv;
        memcpy(y + i, &out, sizeof out);
    }
    for (; i < n; i++) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

HOT static void sigmoid_mul_span(float *y, const float *gate, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8sf gv, yv;
        memcpy(&gv, gate + i, sizeof gv);
        memcpy(&yv, y + i, sizeof yv);
        yv = yv / (1.0f + vexp8(-gv));
        memcpy(y + i, &yv, sizeof yv);
    }
    for (; i < n; i++) y[i] *= 1.0f / (1.0f + expf(-gate[i]));
}

/* y = gelu_tanh(g) * u with 0.5 (1 + tanh(z)) written as the logistic 1 / (1 + e^(-2z)),
 * z = sqrt(2/pi) (x + 0.044715 x^3): the same function, one vector exp (ref_geglu calls tanhf) */
HOT static void geglu_span(float *y, const float *g, const float *u, int64_t n) {
    const float k2 = 2.0f * 0.7978845608028654f;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8sf x, uv;
        memcpy(&x, g + i, sizeof x);
        memcpy(&uv, u + i, sizeof uv);
        v8sf out = x / (1.0f + vexp8(-k2 * (x + 0.044715f * x * x * x))) * uv;
        memcpy(y + i, &out, sizeof out);
    }
    for (; i < n; i++) {
        const float x = g[i];
        y[i] = x / (1.0f + expf(-k2 * (x + 0.044715f * x * x * x))) * u[i];
    }
}

typedef struct ew_job {
    float *y;
    const float *a, *b, *w;
    float *state;
    int64_t n, cols, k;
    float eps;
} ew_job;

HOT static void silu_mul_range(void *ctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    ew_job *J = ctx;
    silu_mul_span(J->y + i0, J->a + i0, J->b + i0, i1 - i0); /* y may be g or u (in place) */
}

void cpu_silu_mul(threadpool *pool, const float *g, const float *u, float *y, int64_t n) {
    ew_job J = {.y = y, .a = g, .b = u, .n = n};
    pool_run(pool, n, 4096, silu_mul_range, &J);
}

HOT static void geglu_range(void *ctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    ew_job *J = ctx;
    geglu_span(J->y + i0, J->a + i0, J->b + i0, i1 - i0);
}

void cpu_geglu(threadpool *pool, const float *g, const float *u, float *y, int64_t n) {
    ew_job J = {.y = y, .a = g, .b = u, .n = n};
    pool_run(pool, n, 4096, geglu_range, &J);
}

HOT static void sigmoid_mul_range(void *ctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    ew_job *J = ctx;
    sigmoid_mul_span(J->y + i0, J->a + i0, i1 - i0);
}

void cpu_sigmoid_mul(threadpool *pool, float *y, const float *gate, int64_t n) {
    ew_job J = {.y = y, .a = gate, .n = n};
    pool_run(pool, n, 4096, sigmoid_mul_range, &J);
}

/* rows [r0, r1) of y = x / sqrt(mean(x^2) + eps) * w; the sum of squares in double, as the reference
 * (8 partial sums keep it vectorizable). y may be x (in place): each element is read before it is written. */
HOT static void rms_norm_rows(void *ctx, int64_t r0, int64_t r1, int thread) {
    (void)thread;
    ew_job *J = ctx;
    int64_t C = J->cols;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = J->a + r * C;
        float *y = J->y + r * C;
        double acc[8] = {0};
        int64_t i = 0;
        for (; i + 8 <= C; i += 8)
            for (int l = 0; l < 8; l++) acc[l] += (double)x[i + l] * x[i + l];
        double ss = 0;
        for (int l = 0; l < 8; l++) ss += acc[l];
        for (; i < C; i++) ss += (double)x[i] * x[i];
        float inv = 1.0f / sqrtf((float)(ss / (double)C) + J->eps);
        if (J->w)
            for (int64_t c = 0; c < C; c++) y[c] = x[c] * inv * J->w[c];
        else
            for (int64_t c = 0; c < C; c++) y[c] = x[c] * inv;
    }
}

void cpu_rms_norm_rows(threadpool *pool, const float *x, const float *w, float *y, int64_t rows, int64_t C, float eps) {
    ew_job J = {.y = y, .a = x, .w = w, .n = rows, .cols = C, .eps = eps};
    pool_run(pool, rows, 4, rms_norm_rows, &J);
}

/* channels [c0, c1): out = silu(sum_j w[ch][j] * in(t - K + 1 + j)), then the state keeps the last K-1
 * inputs. Loops run along channels (contiguous) for every tap. */
HOT static void conv_channels(void *ctx, int64_t c0, int64_t c1, int thread) {
    (void)thread;
    ew_job *J = ctx;
    int64_t T = J->n, Ch = J->cols, K = J->k, nc = c1 - c0;
    const float *x = J->a, *w = J->w;
    float *y = J->y, *st = J->state;
    float wt[16][64]; /* taps transposed for this block of channels: wt[j][c] */
    float ones[64];
    for (int c = 0; c < 64; c++) ones[c] = 1.0f;
    for (int64_t cb = c0; cb < c1; cb += 64) {
        int64_t m = c1 - cb < 64 ? c1 - cb : 64;
        for (int64_t c = 0; c < m; c++)
            for (int64_t j = 0; j < K; j++) wt[j][c] = w[(cb + c) * K + j];
        for (int64_t t = 0; t < T; t++) {
            float acc[64] = {0};
            for (int64_t j = 0; j < K; j++) {
                int64_t p = t - (K - 1) + j;
                const float *in = p >= 0 ? x + p * Ch + cb : st + (K - 1 + p) * Ch + cb;
                for (int64_t c = 0; c < m; c++) acc[c] += wt[j][c] * in[c];
            }
            float *yt = y + t * Ch + cb;
            silu_mul_span(yt, acc, ones, m);
        }
        /* new state rows: the last K-1 raw inputs of [state | x] (row r reads input position T-(K-1)+r) */
        for (int64_t r = 0; r < K - 1; r++) {
            int64_t p = T - (K - 1) + r;
            if (p >= 0) memcpy(st + r * Ch + cb, x + p * Ch + cb, sizeof(float) * (size_t)m);
            else memmove(st + r * Ch + cb, st + (K - 1 + p) * Ch + cb, sizeof(float) * (size_t)m);
        }
    }
    (void)nc;
}

int cpu_conv1d_silu(threadpool *pool, const float *x, float *state, const float *w, float *y, int T, int Ch, int K) {
    if (K > 16) return -1; /* caller falls back to the reference (no published model has K > 4) */
    ew_job J = {.y = y, .a = x, .w = w, .state = state, .n = T, .cols = Ch, .k = K};
    pool_run(pool, Ch, 64, conv_channels, &J);
    return 0;
}

/* ---- RoPE: ref_rope with each token's cos / sin computed once for all its heads ---- */

#define ROPE_MAX_HALF 512

typedef struct rope_job {
    float *x;
    const int32_t *pos;
    int H, D;
    const rope_params *rp;
    const float *freq; /* [n_rot / 2] */
} rope_job;

/* tokens [t0, t1); the angle is formed by the reference's float operations, so results are its bits */
static void rope_range(void *ctx, int64_t t0, int64_t t1, int thread) {
    (void)thread;
    const rope_job *J = ctx;
    const int half = J->rp->n_rot / 2;
    const int stride = J->rp->mode == ROPE_NORM ? 2 : 1, other = J->rp->mode == ROPE_NORM ? 1 : half;
    float c[ROPE_MAX_HALF], sn[ROPE_MAX_HALF];
    for (int64_t t = t0; t < t1; t++) {
        for (int i = 0; i < half; i++) {
            const float ang = (float)J->pos[t] * J->rp->freq_scale * J->freq[i];
            c[i] = cosf(ang);
            sn[i] = sinf(ang);
        }
        for (int h = 0; h < J->H; h++) {
            float *xh = J->x + (t * J->H + h) * J->D;
            for (int i = 0; i < half; i++) {
                float *pa = xh + i * stride, *pb = pa + other;
                const float a = *pa, b = *pb;
                *pa = a * c[i] - b * sn[i];
                *pb = a * sn[i] + b * c[i];
            }
        }
    }
}

void cpu_rope(threadpool *pool, float *x, const int32_t *pos, int T, int H, int D, const rope_params *rp,
              const float *factors) {
    const int half = rp->n_rot / 2;
    if (half > ROPE_MAX_HALF) {
        ref_rope(x, pos, T, H, D, rp, factors);
        return;
    }
    float freq[ROPE_MAX_HALF];
    for (int i = 0; i < half; i++) {
        freq[i] = powf(rp->theta, -2.0f * (float)i / (float)rp->n_rot);
        if (factors) freq[i] /= factors[i];
    }
    rope_job J = {x, pos, H, D, rp, freq};
    pool_run(pool, T, 4, rope_range, &J);
}
