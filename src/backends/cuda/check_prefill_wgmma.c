/* check_prefill_wgmma: the Hopper wgmma product (kernels/gemm_wgmma.cu: cuda_gemm_bf16_wgmma and its
 * explicit-tile form cuda_gemm_bf16_wgmma_tile), op "gemm_wgmma".
 *
 * Inputs: bf16 values made on the host (X uniform in [-1, 1), W in [-0.05, 0.05): the dequantizer is not
 * under test here, cuda_dequant_bf16 has its own cases) and uploaded as they are. Error model: that of the
 * other gemm cases (check_prefill.c): against the exact sum in double, |y - ref| <= K 2^-23 sum |x w| per
 * output (tol = 1; the products of two bf16 are exact in f32, only the accumulation rounds). Checked:
 *  - small cases: every output of both tiles (128 and 256 weight rows), with awkward shapes (T = 1, 63,
 *    200, 260; N = 328, 4104; K = 64, 1088, 4096); the launcher's own choice must give the bits of one of
 *    the two tiles; the tokens [64, 128) launched alone must give the bits they had in the whole launch;
 *  - bench cases (the llama 8B and qwen35 27B shapes): 512 sampled outputs, and the first 64 tokens and
 *    tokens [64, 128) launched alone against the whole launch, bit for bit (a prompt prefilled in chunks
 *    gets the bits of one pass: the second chunk sits in the other consumer warpgroup than it did);
 *  - that both tiles give the same bits, and the bits of cuda_gemm_bf16 (mma.sync) wherever that one does
 *    not split K (cuda_gemm_part_floats 0): measured so on an H100 (2026-12-07), and the executor relies on
 *    it (the tile is chosen by T and N; chunks of a prompt of fewer than 256 rows take mma.sync, longer ones
 *    this kernel): a case where either differs fails. Split shapes report their count for information.
 * Y is filled with NaN bits before every launch, so an output the kernel never writes fails.
 * On a failure the case prints, before its line, what tells a layout bug from a precision one (wg_report).
 * On a device without sm_90a (not cc 9.0) the cases pass as skipped; on a cc 9.0 device a build without
 * sm_90a code is an error. --bench times the product (weights rotated over 3 copies) and, in the detail,
 * cuda_gemm_bf16 on the same inputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backends/cuda/check_prefill.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/kernels.h"
#include "base/fp16.h"

enum { WG_ROT = 3, WG_SAMPLES = 512, WG_SHOW = 6, WG_CHUNK = 64 };

/* the outputs a case checks: every one (t = i / N, n = i % N) or a sample (ts, ns), with the exact sum and
 * the bound of each */
typedef struct wg_outs {
    int64_t n;
    const int *ts, *ns; /* NULL: every output */
    double *ref, *bound;
} wg_outs;

typedef struct wg_ctx {
    const uint16_t *W[WG_ROT], *X;
    float *Y, *part;
    int T, N, K, bn; /* bn: 128 or 256, the tile; 0: cuda_gemm_bf16 (mma.sync) */
} wg_ctx;

static int wg_go(const wg_ctx *c, const uint16_t *W, const uint16_t *X, int T, int bn, cudaStream_t s) {
    if (bn) return cuda_gemm_bf16_wgmma_tile(W, X, c->Y, T, c->N, c->K, bn, s);
    return cuda_gemm_bf16(W, X, c->Y, c->part, T, c->N, c->K, s);
}

static int wg_time_launch(void *vctx, int i, cudaStream_t s) {
    const wg_ctx *c = vctx;
    return wg_go(c, c->W[i], c->X, c->T, c->bn, s) ? ERR_IO : 0;
}

/* Y (T x N) = one launch (bn as wg_ctx; -1: cuda_gemm_bf16_wgmma, the launcher's own choice) over tokens
 * [t0, t0 + T), downloaded into host y; Y holds NaN bits before it */
static int wg_once(const wg_ctx *c, int t0, int T, int bn, float *y, err *e) {
    const size_t bytes = sizeof(float) * (size_t)T * c->N;
    const uint16_t *X = c->X + (size_t)t0 * c->K;
    int rc = cu_check(cudaMemset(c->Y, 0xff, bytes), e, "cudaMemset");
    if (!rc) {
        const int st = bn < 0 ? cuda_gemm_bf16_wgmma(c->W[0], X, c->Y, T, c->N, c->K, 0) : wg_go(c, c->W[0], X, T, bn, 0);
        rc = pf_kerr(st, bn < 0 ? "cuda_gemm_bf16_wgmma" : bn ? "cuda_gemm_bf16_wgmma_tile" : "cuda_gemm_bf16", e);
    }
    if (!rc) rc = cu_check(cudaDeviceSynchronize(), e, "the product");
    if (!rc) rc = cu_download(y, c->Y, bytes, e);
    return rc;
}

/* What tells a layout bug from a precision one, printed for a tile that failed: how many outputs are wrong;
 * masks of the block-tile rows (t % 128: consumer warpgroup t % 128 / 64, warp t % 64 / 16, lane row t % 8)
 * and column groups ((n % 256) / 8, and n % 8 inside the 8 columns of an accumulator fragment) that hold
 * them; then the first wrong outputs with the four k16 partial sums of their reference (which k16 steps the
 * wrong value seems to hold: a bad K advance of the descriptor) and the checked output whose reference is
 * nearest to the wrong value (a permutation of rows or columns). NaN: never written. */
static void wg_report(const char *what, const wg_outs *o, const float *y, int N, int K, const float *X, const float *W,
                      int64_t bad) {
    uint64_t rows[2] = {0, 0};
    uint32_t groups = 0, cols8 = 0;
    int shown = 0;
    printf("  %s: %lld of %lld outputs wrong\n", what, (long long)bad, (long long)o->n);
    for (int64_t i = 0; i < o->n; i++) {
        const int t = o->ts ? o->ts[i] : (int)(i / N), n = o->ns ? o->ns[i] : (int)(i % N);
        const float got = y[i]; /* y[i]: output i of o (every output: i = t N + n) */
        if (fabs(got - o->ref[i]) <= o->bound[i]) continue;
        rows[t % 128 / 64] |= 1ull << (t % 64);
        groups |= 1u << (n % 256 / 8);
        cols8 |= 1u << (n % 8);
        if (shown++ >= WG_SHOW) continue;
        double part[4] = {0, 0, 0, 0}, best = INFINITY;
        for (int k = 0; k < K; k++) part[k % 64 / 16] += (double)X[(size_t)t * K + k] * W[(size_t)n * K + k];
        int64_t near = 0;
        for (int64_t j = 0; j < o->n; j++)
            if (fabs(o->ref[j] - got) < best) best = fabs(o->ref[j] - got), near = j;
        printf("    t=%d n=%d (t%%128=%d n%%8=%d): got %.7g want %.7g (bound %.2g); k16 parts %.4g %.4g %.4g %.4g; "
               "nearest ref t=%d n=%d (%.7g)\n",
               t, n, t % 128, n % 8, got, o->ref[i], o->bound[i], part[0], part[1], part[2], part[3],
               o->ts ? o->ts[near] : (int)(near / N), o->ns ? o->ns[near] : (int)(near % N), o->ref[near]);
    }
    printf("    rows t%%128 with errors: %016llx %016llx (bit = t%%64, warpgroup 0 then 1); col groups "
           "(n%%256)/8: %08x; n%%8: %02x\n",
           (unsigned long long)rows[0], (unsigned long long)rows[1], groups, cols8);
    fflush(stdout);
}

/* y against the outputs o: the worst |y - ref| / bound (NaN counts as infinitely far) and its |y - ref|;
 * a report when any is out of bound */
static double wg_score(const char *what, const wg_outs *o, const float *y, int N, int K, const float *X,
                       const float *W, double *worst_abs) { /* y[i]: output i of o */
    double worst = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < o->n; i++) {
        const double d = fabs(y[i] - o->ref[i]), q = isnan(d) ? INFINITY : d / o->bound[i];
        if (q > worst) worst = q, *worst_abs = d;
        bad += q > 1.0;
    }
    if (bad) wg_report(what, o, y, N, K, X, W, bad);
    return worst;
}

/* the chunk of WG_CHUNK tokens at t0 launched alone: how many of its outputs differ from y (the whole
 * launch) in any bit; -1 when there are not that many tokens */
static int wg_chunk(const wg_ctx *c, int bn, int t0, const float *y, float *yc, int64_t *differ, err *e) {
    *differ = -1;
    if (t0 + WG_CHUNK > c->T) return 0;
    const int rc = wg_once(c, t0, WG_CHUNK, bn, yc, e);
    if (!rc) *differ = pf_bits_differ(y + (size_t)t0 * c->N, yc, (int64_t)WG_CHUNK * c->N);
    return rc;
}

/* 1 where the device can run the kernel; 0 with the case passed as skipped (not cc 9.0) or failed (cc 9.0) */
static int wg_usable(cuda_check_result *res, err *e, int *rc) {
    int dev = 0, major = 0, minor = 0;
    *rc = 0;
    if (cuda_gemm_wgmma_available()) return 1;
    if (cudaGetDevice(&dev) == cudaSuccess) {
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    }
    if (major == 9 && minor == 0)
        *rc = err_set(e, ERR_UNSUPPORTED, "a cc 9.0 device but cuda_gemm_wgmma_available() is 0: a build without sm_90a "
                                          "(LLM170_CUDA_ARCHS needs 90a-real) or a driver without cuTensorMapEncodeTiled");
    res->max_err = 0;
    res->tol = 1;
    snprintf(res->detail, sizeof res->detail, "skipped: needs sm_90a code on a cc 9.0 device (this one: %d.%d)", major, minor);
    return 0;
}

/* bn: the tile of a bench case (128 or 256; the small cases run both) */
int pf_wgmma_case(int T, int N, int K, int bn, bool big, uint64_t seed, bool bench, cuda_check_result *res, err *e) {
    int rc;
    if (!wg_usable(res, e, &rc)) return rc;
    if (big && !bench && T > 128) T = 128; /* without --bench: the same kernel on 128 tokens (short memcheck runs) */
    const int64_t TN = (int64_t)T * N;
    rng r;
    rng_seed(&r, seed);
    float *X = malloc(sizeof(float) * (size_t)T * K), *W = malloc(sizeof(float) * (size_t)N * K);
    uint16_t *Xh = malloc(sizeof(uint16_t) * (size_t)T * K), *Wh = malloc(sizeof(uint16_t) * (size_t)N * K);
    float *y = malloc(sizeof(float) * (size_t)TN), *y2 = malloc(sizeof(float) * (size_t)TN);
    const int64_t n_out = big ? WG_SAMPLES : TN;
    int *ts = big ? malloc(sizeof(int) * WG_SAMPLES) : NULL, *ns = big ? malloc(sizeof(int) * WG_SAMPLES) : NULL;
    double *ref = malloc(sizeof(double) * (size_t)n_out), *bound = malloc(sizeof(double) * (size_t)n_out);
    float *ys = big ? malloc(sizeof(float) * WG_SAMPLES) : NULL;
    wg_ctx c = {.T = T, .N = N, .K = K, .bn = bn};
    uint16_t *dW = NULL, *dX = NULL;
    rc = 0;
    if (!X || !W || !Xh || !Wh || !y || !y2 || !ref || !bound || (big && (!ts || !ns || !ys))) {
        rc = err_set(e, ERR_NOMEM, "host buffers");
        goto done;
    }
    for (int64_t i = 0; i < (int64_t)T * K; i++) Xh[i] = bf16_from_f32(rng_uniform(&r, -1.0f, 1.0f)), X[i] = bf16_to_f32(Xh[i]);
    for (int64_t i = 0; i < (int64_t)N * K; i++) Wh[i] = bf16_from_f32(rng_uniform(&r, -0.05f, 0.05f)), W[i] = bf16_to_f32(Wh[i]);
    rc = cu_upload((void **)&dW, Wh, sizeof(uint16_t) * (size_t)N * K, e);
    for (int i = 0; i < WG_ROT; i++) c.W[i] = dW; /* replaced by copies below for --bench */
    if (!rc) rc = cu_upload((void **)&dX, Xh, sizeof(uint16_t) * (size_t)T * K, e);
    c.X = dX;
    if (!rc) rc = cu_alloc((void **)&c.Y, sizeof(float) * (size_t)TN, e);
    if (!rc && cuda_gemm_part_floats(T, N, K))
        rc = cu_alloc((void **)&c.part, sizeof(float) * (size_t)cuda_gemm_part_floats(T, N, K), e);
    if (rc) goto done;
    wg_outs o = {.n = n_out, .ts = ts, .ns = ns, .ref = ref, .bound = bound};
    for (int64_t i = 0; i < n_out; i++) {
        if (big) ts[i] = (int)(rng_u64(&r) % (uint64_t)T), ns[i] = (int)(rng_u64(&r) % (uint64_t)N);
        const int t = big ? ts[i] : (int)(i / N), n = big ? ns[i] : (int)(i % N);
        ref[i] = pf_gemm_ref(X + (size_t)t * K, W + (size_t)n * K, K, &bound[i]);
    }
    double worst = 0, worst_abs = 0;
    int64_t ch0 = -1, ch1 = -1, tiles_differ = -1, mma_differ = -1;
    char what[96];
    if (!big) {
        /* both tiles, every output; the launcher's choice must be one of them, bit for bit */
        bool chose = false;
        for (int b = 128; b <= 256 && !rc; b += 128) {
            float *yb = b == 128 ? y : y2;
            rc = wg_once(&c, 0, T, b, yb, e);
            snprintf(what, sizeof what, "gemm_wgmma n%d %dx%d T=%d", b, N, K, T);
            if (!rc) {
                const double q = wg_score(what, &o, yb, N, K, X, W, &worst_abs);
                if (q > worst) worst = q;
            }
        }
        if (rc) goto done;
        tiles_differ = pf_bits_differ(y, y2, TN);
        float *yd = malloc(sizeof(float) * (size_t)TN), *yc = malloc(sizeof(float) * WG_CHUNK * (size_t)N);
        if (!yd || !yc) rc = err_set(e, ERR_NOMEM, "host buffers");
        if (!rc) rc = wg_once(&c, 0, T, -1, yd, e);
        if (!rc) chose = !pf_bits_differ(yd, y, TN) || !pf_bits_differ(yd, y2, TN);
        if (!rc) rc = wg_chunk(&c, 128, WG_CHUNK, y, yc, &ch1, e);
        if (!rc) rc = wg_once(&c, 0, T, 0, yd, e); /* mma.sync */
        if (!rc) mma_differ = pf_bits_differ(yd, y, TN);
        free(yd), free(yc);
        if (rc) goto done;
        const bool split = cuda_gemm_part_floats(T, N, K) > 0;
        if (!chose || ch1 > 0 || tiles_differ > 0 || (!split && mma_differ > 0)) worst = 1e9;
        snprintf(res->detail, sizeof res->detail,
                 "every output, n128 and n256; abs err %.2g; launcher's %s; chunk 64.. %lld differ; n128/256 "
                 "differ %lld; mma.sync (%s) differ %lld",
                 worst_abs, chose ? "a tile's bits" : "BITS OF NEITHER TILE", (long long)ch1, (long long)tiles_differ,
                 split ? "split K" : "no split", (long long)mma_differ);
    } else {
        float *yc = malloc(sizeof(float) * WG_CHUNK * (size_t)N);
        if (!yc) rc = err_set(e, ERR_NOMEM, "host buffers");
        if (!rc) rc = wg_once(&c, 0, T, bn, y, e);
        for (int64_t i = 0; !rc && i < n_out; i++) ys[i] = y[(size_t)ts[i] * N + ns[i]];
        snprintf(what, sizeof what, "gemm_wgmma n%d %dx%d T=%d", bn, N, K, T);
        if (!rc) worst = wg_score(what, &o, ys, N, K, X, W, &worst_abs);
        if (!rc) rc = wg_chunk(&c, bn, 0, y, yc, &ch0, e);
        if (!rc) rc = wg_chunk(&c, bn, WG_CHUNK, y, yc, &ch1, e);
        if (!rc) rc = wg_once(&c, 0, T, 384 - bn, y2, e); /* the other tile */
        if (!rc) tiles_differ = pf_bits_differ(y, y2, TN);
        if (!rc) rc = wg_once(&c, 0, T, 0, y2, e); /* mma.sync */
        if (!rc) mma_differ = pf_bits_differ(y, y2, TN);
        free(yc);
        if (rc) goto done;
        const bool split = cuda_gemm_part_floats(T, N, K) > 0;
        if (ch0 > 0 || ch1 > 0 || tiles_differ > 0 || (!split && mma_differ > 0)) worst = 1e9;
        snprintf(res->detail, sizeof res->detail, "%d sampled; abs err %.2g; chunks 0.., 64.. %lld, %lld differ; n%d differ %lld; mma.sync (%s) differ %lld/%lld",
                 WG_SAMPLES, worst_abs, (long long)ch0, (long long)ch1, 384 - bn, (long long)tiles_differ,
                 split ? "split K" : "no split", (long long)mma_differ, (long long)TN);
    }
    res->max_err = worst;
    res->tol = 1.0;
    if (bench && big) { /* weights rotated over 3 copies; then cuda_gemm_bf16 on the same inputs */
        uint16_t *dW2[WG_ROT - 1] = {NULL, NULL};
        for (int i = 0; i < WG_ROT - 1 && !rc; i++) {
            rc = cu_upload((void **)&dW2[i], Wh, sizeof(uint16_t) * (size_t)N * K, e);
            c.W[i + 1] = dW2[i];
        }
        double us_mma = 0;
        if (!rc) rc = cu_time(wg_time_launch, &c, WG_ROT, &res->us, e);
        if (!rc) res->tflops = 2.0 * T * N * K / (res->us * 1e6);
        c.bn = 0;
        if (!rc) rc = cu_time(wg_time_launch, &c, WG_ROT, &us_mma, e);
        const size_t len = strlen(res->detail);
        if (!rc) snprintf(res->detail + len, sizeof res->detail - len, "; mma.sync %.1f us", us_mma);
        for (int i = 0; i < WG_ROT - 1; i++) cu_free(dW2[i]);
    }
done:
    cu_free(dW), cu_free(dX), cu_free(c.Y), cu_free(c.part);
    free(X), free(W), free(Xh), free(Wh), free(y), free(y2), free(ts), free(ns), free(ref), free(bound), free(ys);
    return rc;
}
