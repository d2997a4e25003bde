/* check_prefill: conformance cases of the prefill kernels (owner: the CUDA prefill helper): the table, and
 * the matrix products (kernels/gemm_q.cu). Attention and GDN cases are in check_prefill_seq.c, the grouped
 * expert product's in check_prefill_moe.c, the Hopper wgmma product's in check_prefill_wgmma.c.
 *
 * gemm cases. Inputs: weights from quant_random_blocks (RMS 0.02), activations N(0, 1). The GPU computes
 * sum_k bf16(x_k) bf16(w_k) in f32, with w = to_float of the block (cuda_dequant_bf16 shows that this
 * bf16(w) is bit-exact with the CPU's). Error model: the products of two bf16 are exact in f32, so the only
 * error against the same sum in double is the f32 accumulation: at most one rounding (or truncation, on
 * tensor cores) of 2^-23 relative per addition, each bounded by the running sum of |terms|:
 *     |y - ref| <= K * 2^-23 * sum_k |bf16(x_k) bf16(w_k)|        (the tolerance, per output)
 * max_err is reported in units of that bound (tol = 1). Against the unrounded f32 product, the two bf16
 * roundings (relative 2^-8 each) add about 2^-8 sqrt(sum (x w)^2) of noise: the detail gives the largest
 * deviation in those units (sigma), for information. Small cases check every output plus the bit-exactness
 * of the activation conversion and of the dequantizer, and that the two-pass bf16 path gives the fused
 * path's bits; bench cases check 512 random outputs and that a 64-token chunk gives the bits of the whole
 * launch (prefill in chunks equals one pass), and time the product (weights rotated over 3 copies). */
#include "backends/cuda/check_prefill.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_util.h"
#include "backends/cuda/kernels.h"
#include "base/fp16.h"
#include "quant/quant.h"

int pf_kerr(int status, const char *what, err *e) {
    if (status == CUDA_KERR_OK) return 0;
    return err_set(e, ERR_IO, "%s: launcher status %d (%s)", what, status,
                   status == CUDA_KERR_ARGS ? "bad arguments" : status == CUDA_KERR_UNSUPPORTED ? "unsupported" : "launch failed");
}

void pf_normal(rng *r, float *x, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) x[i] = rng_normal(r) * scale;
}

typedef struct gemm_spec {
    enum qtype type;
    int N, K, T;
    bool big; /* a bench case: sampled check, timing with --bench */
    bool bf16_path; /* time the two-pass path (dequant + bf16 product) instead */
} gemm_spec;

enum { GEMM_ROT = 3, GEMM_SAMPLES = 512 };

typedef struct gemm_ctx {
    const gemm_spec *sp;
    void *W[GEMM_ROT];
    uint16_t *Wd, *Xb;
    float *Y, *part; /* part: the split-K slices (cuda_gemm_part_floats; NULL when the shape has none) */
} gemm_ctx;

static int gemm_launch(void *vctx, int i, cudaStream_t s) {
    gemm_ctx *c = vctx;
    if (c->sp->bf16_path) return cuda_gemm_bf16(c->Wd, c->Xb, c->Y, c->part, c->sp->T, c->sp->N, c->sp->K, s) ? ERR_IO : 0;
    return cuda_gemm_q(c->sp->type, c->W[i], c->Xb, c->Y, c->part, c->sp->T, c->sp->N, c->sp->K, s) ? ERR_IO : 0;
}

static int dequant_launch(void *vctx, int i, cudaStream_t s) {
    gemm_ctx *c = vctx;
    return cuda_dequant_bf16(c->sp->type, c->W[i], c->Wd, c->sp->N, c->sp->K, s) ? ERR_IO : 0;
}

/* check_prefill.h */
int64_t pf_bits_differ(const float *a, const float *b, int64_t n) {
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++) d += memcmp(a + i, b + i, sizeof(float)) != 0;
    return d;
}

/* the error model above, per output (check_prefill.h) */
double pf_gemm_ref(const float *x, const float *w, int K, double *bound) {
    double ref = 0, mag = 0;
    for (int k = 0; k < K; k++) {
        const double p = (double)bf16_to_f32(bf16_from_f32(x[k])) * bf16_to_f32(bf16_from_f32(w[k]));
        ref += p;
        mag += fabs(p);
    }
    *bound = K * 0x1p-23 * mag + 1e-30;
    return ref;
}

double pf_gemm_score(const float *x, const float *w, int K, float y, double *sig, double *abs_err) {
    double bound, ref32 = 0, sq = 0;
    const double ref = pf_gemm_ref(x, w, K, &bound);
    for (int k = 0; k < K; k++) {
        ref32 += (double)x[k] * w[k];
        sq += (double)x[k] * w[k] * x[k] * w[k];
    }
    *sig = fabs(y - ref32) / (0x1p-8 * sqrt(sq) + 1e-30);
    *abs_err = fabs(y - ref);
    return fabs(y - ref) / bound;
}

static int gemm_run(const gemm_spec *spec, uint64_t seed, bool bench, cuda_check_result *res, err *e) {
    /* a bench case without --bench checks 128 tokens only (the same kernel; keeps memcheck runs short) */
    gemm_spec shrunk = *spec;
    if (spec->big && !bench && shrunk.T > 128) shrunk.T = 128;
    const gemm_spec *sp = &shrunk;
    const int N = sp->N, K = sp->K, T = sp->T;
    const quant_ops *ops = quant_ops_get(sp->type, QUANT_ISA_SCALAR);
    const qtype_info *qi = qtype_get(sp->type);
    if (!ops || !ops->to_float || !qi) return err_set(e, ERR_UNSUPPORTED, "no CPU dequantizer for this type");
    const size_t row_bytes = qtype_row_bytes(sp->type, K), w_bytes = row_bytes * (size_t)N;
    rng r;
    rng_seed(&r, seed);
    uint8_t *Wh = malloc(w_bytes);
    float *X = malloc(sizeof(float) * (size_t)T * K), *Wf = malloc(sizeof(float) * K);
    float *Y = malloc(sizeof(float) * (size_t)T * N);
    uint16_t *tmp = sp->big ? NULL : malloc(sizeof(uint16_t) * (size_t)(N > T ? N : T) * K);
    gemm_ctx c = {.sp = sp};
    float *Xd = NULL;
    int rc = 0, nrot = sp->big && bench ? GEMM_ROT : 1;
    if (!Wh || !X || !Wf || !Y || (!sp->big && !tmp)) {
        rc = err_set(e, ERR_NOMEM, "host buffers");
        goto done;
    }
    pf_normal(&r, X, (int64_t)T * K, 1.0f);
    for (int i = 0; i < nrot && !rc; i++) {
        if (!quant_random_blocks(sp->type, Wh, (int64_t)N * (K / qi->blck), 0.02f, &r)) {
            rc = err_set(e, ERR_UNSUPPORTED, "no random generator for this type");
            break;
        }
        rc = cu_upload(&c.W[i], Wh, w_bytes, e); /* the host copy keeps the last set: the one checked */
    }
    for (int i = nrot; i < GEMM_ROT; i++) c.W[i] = c.W[0];
    if (!rc) rc = cu_upload((void **)&Xd, X, sizeof(float) * (size_t)T * K, e);
    if (!rc) rc = cu_alloc((void **)&c.Xb, sizeof(uint16_t) * (size_t)T * K, e);
    if (!rc) rc = cu_alloc((void **)&c.Y, sizeof(float) * (size_t)T * N, e);
    if (!rc && cuda_gemm_part_floats(T, N, K))
        rc = cu_alloc((void **)&c.part, sizeof(float) * (size_t)cuda_gemm_part_floats(T, N, K), e);
    if (!rc && (!sp->big || sp->bf16_path)) rc = cu_alloc((void **)&c.Wd, sizeof(uint16_t) * (size_t)N * K, e);
    if (!rc) rc = pf_kerr(cuda_f32_to_bf16(Xd, c.Xb, (int64_t)T * K, 0), "cuda_f32_to_bf16", e);
    if (!rc && c.Wd) rc = pf_kerr(cuda_dequant_bf16(sp->type, c.W[nrot - 1], c.Wd, N, K, 0), "cuda_dequant_bf16", e);
    if (!rc) {
        int st = sp->bf16_path ? cuda_gemm_bf16(c.Wd, c.Xb, c.Y, c.part, T, N, K, 0)
                               : cuda_gemm_q(sp->type, c.W[nrot - 1], c.Xb, c.Y, c.part, T, N, K, 0);
        rc = pf_kerr(st, sp->bf16_path ? "cuda_gemm_bf16" : "cuda_gemm_q", e);
    }
    if (!rc) rc = cu_download(Y, c.Y, sizeof(float) * (size_t)T * N, e);
    if (rc) goto done;

    double worst = 0, worst_sig = 0, worst_abs = 0, sig, ab;
    if (sp->big) { /* sampled outputs */
        for (int s = 0; s < GEMM_SAMPLES; s++) {
            int t = (int)(rng_u64(&r) % (uint64_t)T), n = (int)(rng_u64(&r) % (uint64_t)N);
            ops->to_float(Wh + (size_t)n * row_bytes, Wf, K);
            double q = pf_gemm_score(X + (size_t)t * K, Wf, K, Y[(size_t)t * N + n], &sig, &ab);
            if (q > worst) worst = q, worst_abs = ab;
            if (sig > worst_sig) worst_sig = sig;
        }
        /* chunk invariance: the first 64 tokens alone (128-token tiles) give the bits of the whole prompt's
         * launch (256-token tiles on the H200 at T = 4096): every output is the same MMA sequence over K */
        const int Tc = T < 64 ? T : 64;
        float *Yc = malloc(sizeof(float) * (size_t)Tc * N);
        if (!Yc) rc = err_set(e, ERR_NOMEM, "host buffers");
        if (!rc) {
            int st = sp->bf16_path ? cuda_gemm_bf16(c.Wd, c.Xb, c.Y, c.part, Tc, N, K, 0)
                                   : cuda_gemm_q(sp->type, c.W[nrot - 1], c.Xb, c.Y, c.part, Tc, N, K, 0);
            rc = pf_kerr(st, "chunk of 64 tokens", e);
        }
        if (!rc) rc = cu_download(Yc, c.Y, sizeof(float) * (size_t)Tc * N, e);
        const int64_t bad_c = rc ? 0 : pf_bits_differ(Y, Yc, (int64_t)Tc * N);
        free(Yc);
        if (rc) goto done;
        if (bad_c) worst = 1e9;
        snprintf(res->detail, sizeof res->detail, "%d sampled outputs; abs err %.2g; vs f32 w: %.1f sigma; chunk of %d: %lld differ",
                 GEMM_SAMPLES, worst_abs, worst_sig, Tc, (long long)bad_c);
    } else { /* every output; the dequantizer, the activation conversion and the two-pass path bit for bit */
        float *Wall = malloc(sizeof(float) * (size_t)N * K), *Y2 = malloc(sizeof(float) * (size_t)T * N);
        if (!Wall || !Y2) {
            free(Wall), free(Y2);
            rc = err_set(e, ERR_NOMEM, "host buffers");
            goto done;
        }
        for (int n = 0; n < N; n++) ops->to_float(Wh + (size_t)n * row_bytes, Wall + (size_t)n * K, K);
        for (int t = 0; t < T; t++)
            for (int n = 0; n < N; n++) {
                double q = pf_gemm_score(X + (size_t)t * K, Wall + (size_t)n * K, K, Y[(size_t)t * N + n], &sig, &ab);
                if (q > worst) worst = q, worst_abs = ab;
                if (sig > worst_sig) worst_sig = sig;
            }
        int64_t bad_w = 0, bad_x = 0;
        rc = cu_download(tmp, c.Wd, sizeof(uint16_t) * (size_t)N * K, e);
        for (int64_t i = 0; !rc && i < (int64_t)N * K; i++) bad_w += tmp[i] != bf16_from_f32(Wall[i]);
        if (!rc) rc = cu_download(tmp, c.Xb, sizeof(uint16_t) * (size_t)T * K, e);
        for (int64_t i = 0; !rc && i < (int64_t)T * K; i++) bad_x += tmp[i] != bf16_from_f32(X[i]);
        /* the two-pass path multiplies the same bf16 tiles in the same MMA order: the same bits */
        if (!rc) rc = pf_kerr(cuda_gemm_bf16(c.Wd, c.Xb, c.Y, c.part, T, N, K, 0), "cuda_gemm_bf16", e);
        if (!rc) rc = cu_download(Y2, c.Y, sizeof(float) * (size_t)T * N, e);
        const int64_t bad_y = rc ? 0 : pf_bits_differ(Y, Y2, (int64_t)T * N);
        free(Wall), free(Y2);
        if (rc) goto done;
        if (bad_w || bad_x || bad_y) worst = 1e9; /* something that must be bit-exact is not */
        snprintf(res->detail, sizeof res->detail,
                 "abs err %.2g; vs f32 w: %.1f sigma; bf16 differ: dequant %lld/%lld, x %lld, 2-pass y %lld",
                 worst_abs, worst_sig, (long long)bad_w, (long long)N * K, (long long)bad_x, (long long)bad_y);
    }
    res->max_err = worst;
    res->tol = 1.0;
    if (bench && sp->big) {
        rc = cu_time(gemm_launch, &c, GEMM_ROT, &res->us, e);
        if (!rc) res->tflops = 2.0 * T * N * K / (res->us * 1e6);
        if (!rc && sp->bf16_path) { /* the dequantization the two-pass path adds, in the detail */
            double us_dq = 0;
            rc = cu_time(dequant_launch, &c, GEMM_ROT, &us_dq, e);
            size_t len = strlen(res->detail);
            if (!rc) snprintf(res->detail + len, sizeof res->detail - len, "; + dequant %.1f us", us_dq);
        }
    }
done:
    for (int i = 0; i < nrot; i++) cu_free(c.W[i]);
    cu_free(Xd), cu_free(c.Xb), cu_free(c.Y), cu_free(c.Wd), cu_free(c.part);
    free(Wh), free(X), free(Wf), free(Y), free(tmp);
    return rc;
}

#define GEMM_CASE(fn, type, N, K, T, big, bf16)                                                                \
    static int fn(uint64_t seed, bool bench, cuda_check_result *r, err *e) {                                  \
        static const gemm_spec sp = {type, N, K, T, big, bf16};                                                \
        return gemm_run(&sp, seed, bench, r, e);                                                               \
    }
/* small: odd N (not a multiple of the 128-row tile), T not a multiple of 128, K with misaligned rows */
GEMM_CASE(g_q4_0, QT_Q4_0, 328, 1088, 200, false, false)
GEMM_CASE(g_q4_1, QT_Q4_1, 328, 1088, 200, false, false)
GEMM_CASE(g_q5_0, QT_Q5_0, 328, 1088, 200, false, false)
GEMM_CASE(g_q8_0, QT_Q8_0, 328, 1088, 200, false, false)
GEMM_CASE(g_q4_k, QT_Q4_K, 328, 1280, 200, false, false)
GEMM_CASE(g_q5_k, QT_Q5_K, 328, 1280, 200, false, false)
GEMM_CASE(g_q6_k, QT_Q6_K, 328, 1280, 200, false, false)
GEMM_CASE(g_q4_k_t1, QT_Q4_K, 130, 512, 1, false, false)
/* enough 256-token tiles (>= one per SM of an H200) for the 256-token configuration */
GEMM_CASE(g_q4_k_wide, QT_Q4_K, 16896, 256, 260, false, false)
GEMM_CASE(g_q6_k_wide, QT_Q6_K, 16896, 256, 260, false, false)
/* bench: llama 8B (q/o 4096x4096, gate/up 14336x4096, down 4096x14336) and qwen35 27B (ffn 17408x5120,
 * 5120x17408; GDN qkv 10240x5120) */
GEMM_CASE(b_q4k_4k_512, QT_Q4_K, 4096, 4096, 512, true, false)
/* the k / v projections of an 8B (split-K: 1024 rows; the chunk check then also covers the slices) */
GEMM_CASE(b_q4k_kv_512, QT_Q4_K, 1024, 4096, 512, true, false)
GEMM_CASE(b_q6k_kv_512, QT_Q6_K, 1024, 4096, 512, true, false)
GEMM_CASE(b_q4k_4k_4096, QT_Q4_K, 4096, 4096, 4096, true, false)
GEMM_CASE(b_q4k_up_512, QT_Q4_K, 14336, 4096, 512, true, false)
GEMM_CASE(b_q4k_up_4096, QT_Q4_K, 14336, 4096, 4096, true, false)
GEMM_CASE(b_q4k_dn_512, QT_Q4_K, 4096, 14336, 512, true, false)
GEMM_CASE(b_q4k_dn_4096, QT_Q4_K, 4096, 14336, 4096, true, false)
GEMM_CASE(b_q6k_up_4096, QT_Q6_K, 14336, 4096, 4096, true, false)
GEMM_CASE(b_q8_0_up_4096, QT_Q8_0, 14336, 4096, 4096, true, false)
GEMM_CASE(b_q5k_up_4096, QT_Q5_K, 14336, 4096, 4096, true, false)
GEMM_CASE(b_q4_0_up_4096, QT_Q4_0, 14336, 4096, 4096, true, false)
GEMM_CASE(b_bf16_up_512, QT_Q4_K, 14336, 4096, 512, true, true)
GEMM_CASE(b_bf16_up_4096, QT_Q4_K, 14336, 4096, 4096, true, true)
GEMM_CASE(b_q4k_27f_512, QT_Q4_K, 17408, 5120, 512, true, false)
GEMM_CASE(b_q4k_27f_4096, QT_Q4_K, 17408, 5120, 4096, true, false)
GEMM_CASE(b_q4k_27d_4096, QT_Q4_K, 5120, 17408, 4096, true, false)
GEMM_CASE(b_q5k_27g_4096, QT_Q5_K, 10240, 5120, 4096, true, false)

#define MOE_CASE(fn, type, E, N, K, tokens, topk, per_slot, big)                                                  \
    static int fn(uint64_t seed, bool bench, cuda_check_result *r, err *e) {                                  \
        return pf_moe_case(type, E, N, K, tokens, topk, per_slot, big, seed, bench, r, e);                    \
    }
/* small: N even but not a multiple of 128, experts with more than 64 slots (several tiles) and with few */
MOE_CASE(m_q4_0, QT_Q4_0, 8, 130, 1088, 100, 3, false, false)
MOE_CASE(m_q4_1, QT_Q4_1, 8, 130, 1088, 100, 3, true, false)
MOE_CASE(m_q5_0, QT_Q5_0, 8, 130, 1088, 100, 3, false, false)
MOE_CASE(m_q8_0, QT_Q8_0, 8, 130, 1088, 100, 3, true, false)
MOE_CASE(m_q4_k, QT_Q4_K, 8, 130, 1280, 100, 3, false, false)
MOE_CASE(m_q5_k, QT_Q5_K, 8, 130, 1280, 100, 3, true, false)
MOE_CASE(m_q6_k, QT_Q6_K, 8, 130, 1280, 100, 3, false, false)
/* bench: the qwen35moe 35B-A3B's experts (256 of 2048 -> 512 gate / up per token, 512 -> 2048 down per slot,
 * top 8) at 512 and 4096 tokens */
MOE_CASE(mb_gate_512, QT_Q4_K, 256, 512, 2048, 512, 8, false, true)
MOE_CASE(mb_down_512, QT_Q6_K, 256, 2048, 512, 512, 8, true, true)
MOE_CASE(mb_gate_4096, QT_Q4_K, 256, 512, 2048, 4096, 8, false, true)
MOE_CASE(mb_down_4096, QT_Q6_K, 256, 2048, 512, 4096, 8, true, true)

#define WGMMA_CASE(fn, N, K, T, bn, big)                                                                       \
    static int fn(uint64_t seed, bool bench, cuda_check_result *r, err *e) {                                  \
        return pf_wgmma_case(T, N, K, bn, big, seed, bench, r, e);                                            \
    }
/* small (both tiles, every output): T = 1 and 63 (less than a consumer warpgroup's 64 rows), 200 and 260
 * (not multiples of the 128-token tile); N = 328 and 4104 (not multiples of 128 or 256); K = 64 (one k step:
 * the pipeline's edge), 1088 (17 steps: the ring of 4 or 6 stages wraps unevenly), 4096 */
WGMMA_CASE(w_t1, 328, 64, 1, 0, false)
WGMMA_CASE(w_t63, 4104, 1088, 63, 0, false)
WGMMA_CASE(w_t200, 328, 4096, 200, 0, false)
WGMMA_CASE(w_t260, 4104, 1088, 260, 0, false)
WGMMA_CASE(w_t260_k64, 328, 64, 260, 0, false)
/* bench: the two-pass shapes (llama 8B q/o, gate/up, down, k/v; qwen35 27B gate/up), both tiles */
WGMMA_CASE(wb_up_512_256, 14336, 4096, 512, 256, true)
WGMMA_CASE(wb_up_512_128, 14336, 4096, 512, 128, true)
WGMMA_CASE(wb_up_4096_256, 14336, 4096, 4096, 256, true)
WGMMA_CASE(wb_up_4096_128, 14336, 4096, 4096, 128, true)
WGMMA_CASE(wb_4k_512_128, 4096, 4096, 512, 128, true)
WGMMA_CASE(wb_4k_512_256, 4096, 4096, 512, 256, true)
WGMMA_CASE(wb_4k_4096_128, 4096, 4096, 4096, 128, true)
WGMMA_CASE(wb_4k_4096_256, 4096, 4096, 4096, 256, true)
WGMMA_CASE(wb_dn_512_128, 4096, 14336, 512, 128, true)
WGMMA_CASE(wb_dn_512_256, 4096, 14336, 512, 256, true)
WGMMA_CASE(wb_dn_4096_128, 4096, 14336, 4096, 128, true)
WGMMA_CASE(wb_dn_4096_256, 4096, 14336, 4096, 256, true)
WGMMA_CASE(wb_27f_512_256, 17408, 5120, 512, 256, true)
WGMMA_CASE(wb_27f_512_128, 17408, 5120, 512, 128, true)
WGMMA_CASE(wb_kv_512_128, 1024, 4096, 512, 128, true)
WGMMA_CASE(wb_kv_512_256, 1024, 4096, 512, 256, true)
#define MMQ_CASE(fn, type, E, N, K, tokens, topk, per_slot, big)                                                  \
    static int fn(uint64_t seed, bool bench, cuda_check_result *r, err *e) {                                  \
        return pf_mmq_case(type, E, N, K, tokens, topk, per_slot, big, false, seed, bench, r, e);             \
    }
#define MMQ_DENSE_CASE(fn, type, N, K, T, big)                                                                  \
    static int fn(uint64_t seed, bool bench, cuda_check_result *r, err *e) {                                  \
        return pf_mmq_case(type, 1, N, K, T, 1, true, big, true, seed, bench, r, e);                          \
    }
/* the int8 tensor-core form (check_prefill_mmq.c). Small: 303 slots (odd), experts of 0, 1 and 70 slots and a
 * planted unrouted slot, N not a multiple of the 64-row block, K 256 .. 2048 (1 to 8 k steps) */
MMQ_CASE(q_q4_k, QT_Q4_K, 8, 80, 2048, 101, 3, false, false)
MMQ_CASE(q_q6_k, QT_Q6_K, 8, 336, 512, 101, 3, true, false)
MMQ_CASE(q_q5_k, QT_Q5_K, 8, 130, 1280, 101, 3, false, false)
MMQ_CASE(q_q4_0, QT_Q4_0, 8, 80, 256, 101, 3, true, false)
MMQ_CASE(q_q8_0, QT_Q8_0, 8, 72, 768, 101, 3, false, false)
MMQ_CASE(q_q4_1, QT_Q4_1, 8, 50, 1024, 101, 3, true, false)
MMQ_CASE(q_q5_0, QT_Q5_0, 8, 96, 512, 101, 3, false, false)
/* bench: the 35B-A3B's experts as mb_* above (its down projections are Q6_K or Q4_K by layer) */
MMQ_CASE(qb_gate_512, QT_Q4_K, 256, 512, 2048, 512, 8, false, true)
MMQ_CASE(qb_down_512, QT_Q6_K, 256, 2048, 512, 512, 8, true, true)
MMQ_CASE(qb_down4_512, QT_Q4_K, 256, 2048, 512, 512, 8, true, true)
MMQ_CASE(qb_gate_4096, QT_Q4_K, 256, 512, 2048, 4096, 8, false, true)
MMQ_CASE(qb_down_4096, QT_Q6_K, 256, 2048, 512, 4096, 8, true, true)
/* the dense form (cuda_mmq_dense: a batched decode step's rows). Small: 9 to 100 rows (one or two tiles of 32
 * or 64), N not a multiple of 64; bench: the llama 8B's matrices at 16, 32 and 64 sequences */
MMQ_DENSE_CASE(d_q4_k, QT_Q4_K, 80, 2048, 40, false)
MMQ_DENSE_CASE(d_q6_k, QT_Q6_K, 100, 512, 100, false)
MMQ_DENSE_CASE(d_q5_k, QT_Q5_K, 70, 1280, 9, false)
MMQ_DENSE_CASE(d_q4_0, QT_Q4_0, 64, 256, 17, false)
MMQ_DENSE_CASE(d_q8_0, QT_Q8_0, 72, 768, 64, false)
MMQ_DENSE_CASE(d_q4_1, QT_Q4_1, 50, 1024, 33, false)
MMQ_DENSE_CASE(d_q5_0, QT_Q5_0, 96, 512, 48, false)
MMQ_DENSE_CASE(db_up_16, QT_Q4_K, 14336, 4096, 16, true)
MMQ_DENSE_CASE(db_up_32, QT_Q4_K, 14336, 4096, 32, true)
MMQ_DENSE_CASE(db_up_64, QT_Q4_K, 14336, 4096, 64, true)
MMQ_DENSE_CASE(db_dn_64, QT_Q4_K, 4096, 14336, 64, true)
MMQ_DENSE_CASE(db_dn6_64, QT_Q6_K, 4096, 14336, 64, true)
MMQ_DENSE_CASE(db_q_64, QT_Q4_K, 4096, 4096, 64, true)
MMQ_DENSE_CASE(db_kv_64, QT_Q4_K, 1024, 4096, 64, true)

#define ATTN_CASE(fn, D, Hq, Hkv, T, pos0, window, big)                                                        \
    static int fn(uint64_t seed, bool bench, cuda_check_result *r, err *e) {                                  \
        return pf_attn_case(D, Hq, Hkv, T, pos0, window, big, seed, bench, r, e);                             \
    }
ATTN_CASE(a_128, 128, 8, 2, 200, 0, 0, false)
ATTN_CASE(a_64_prefix, 64, 4, 4, 130, 70, 0, false)
ATTN_CASE(a_256_win, 256, 8, 2, 300, 0, 100, false)
ATTN_CASE(a_128_win_prefix, 128, 6, 3, 77, 50, 64, false)
ATTN_CASE(ab_8b_4096, 128, 32, 8, 4096, 0, 0, true)
ATTN_CASE(ab_27b_4096, 256, 24, 4, 4096, 0, 0, true)
ATTN_CASE(ab_8b_32k_tail, 128, 32, 8, 1024, 31744, 0, true)
ATTN_CASE(ab_gemma_win, 256, 8, 4, 4096, 0, 1024, true)

#define GDN_CASE(fn, Hk, Hv, T, grouped, big)                                                                  \
    static int fn(uint64_t seed, bool bench, cuda_check_result *r, err *e) {                                  \
        return pf_gdn_case(Hk, Hv, T, grouped, big, seed, bench, r, e);                                       \
    }
GDN_CASE(d_tiled, 2, 4, 200, false, false)
GDN_CASE(d_grouped, 2, 6, 64, true, false)
GDN_CASE(d_short, 1, 2, 37, false, false)
GDN_CASE(db_27b_4096, 16, 48, 4096, false, true)

/* covers: gemm_q_kernel gq_split_sum dequant_bf16_kernel f32_to_bf16_kernel fa_prefill_kernel moe_group_kernel
 * covers: gdn_chunk_prep_kernel gdn_chunk_scan_kernel gemm_wgmma_kernel */
const cuda_check_case cuda_check_prefill_cases[] = {
    {"gemm", "q4_0 328x1088 T=200", g_q4_0},
    {"gemm", "q4_1 328x1088 T=200", g_q4_1},
    {"gemm", "q5_0 328x1088 T=200", g_q5_0},
    {"gemm", "q8_0 328x1088 T=200", g_q8_0},
    {"gemm", "q4_k 328x1280 T=200", g_q4_k},
    {"gemm", "q5_k 328x1280 T=200", g_q5_k},
    {"gemm", "q6_k 328x1280 T=200", g_q6_k},
    {"gemm", "q4_k 130x512 T=1", g_q4_k_t1},
    {"gemm", "q4_k 16896x256 T=260", g_q4_k_wide},
    {"gemm", "q6_k 16896x256 T=260", g_q6_k_wide},
    {"gemm_wgmma", "bf16 328x64 T=1", w_t1},
    {"gemm_wgmma", "bf16 4104x1088 T=63", w_t63},
    {"gemm_wgmma", "bf16 328x4096 T=200", w_t200},
    {"gemm_wgmma", "bf16 4104x1088 T=260", w_t260},
    {"gemm_wgmma", "bf16 328x64 T=260", w_t260_k64},
    {"gemm_experts", "q4_0 8x130x1088 100 tokens x 3", m_q4_0},
    {"gemm_experts", "q4_1 8x130x1088 100 tokens x 3 per slot", m_q4_1},
    {"gemm_experts", "q5_0 8x130x1088 100 tokens x 3", m_q5_0},
    {"gemm_experts", "q8_0 8x130x1088 100 tokens x 3 per slot", m_q8_0},
    {"gemm_experts", "q4_k 8x130x1280 100 tokens x 3", m_q4_k},
    {"gemm_experts", "q5_k 8x130x1280 100 tokens x 3 per slot", m_q5_k},
    {"gemm_experts", "q6_k 8x130x1280 100 tokens x 3", m_q6_k},
    {"mmq_experts", "q4_k 8x80x2048 101 tokens x 3", q_q4_k},
    {"mmq_experts", "q6_k 8x336x512 101 tokens x 3 per slot", q_q6_k},
    {"mmq_experts", "q5_k 8x130x1280 101 tokens x 3", q_q5_k},
    {"mmq_experts", "q4_0 8x80x256 101 tokens x 3 per slot", q_q4_0},
    {"mmq_experts", "q8_0 8x72x768 101 tokens x 3", q_q8_0},
    {"mmq_experts", "q4_1 8x50x1024 101 tokens x 3 per slot", q_q4_1},
    {"mmq_experts", "q5_0 8x96x512 101 tokens x 3", q_q5_0},
    {"mmq_dense", "q4_k 80x2048 40 rows", d_q4_k},
    {"mmq_dense", "q6_k 100x512 100 rows", d_q6_k},
    {"mmq_dense", "q5_k 70x1280 9 rows", d_q5_k},
    {"mmq_dense", "q4_0 64x256 17 rows", d_q4_0},
    {"mmq_dense", "q8_0 72x768 64 rows", d_q8_0},
    {"mmq_dense", "q4_1 50x1024 33 rows", d_q4_1},
    {"mmq_dense", "q5_0 96x512 48 rows", d_q5_0},
    {"flash_attn_prefill", "D=128 Hq=8/2 T=200", a_128},
    {"flash_attn_prefill", "D=64 Hq=4/4 T=130 pos0=70", a_64_prefix},
    {"flash_attn_prefill", "D=256 Hq=8/2 T=300 win=100", a_256_win},
    {"flash_attn_prefill", "D=128 Hq=6/3 T=77 pos0=50 win=64", a_128_win_prefix},
    {"gdn_chunk", "Hk=2 Hv=4 T=200 tiled", d_tiled},
    {"gdn_chunk", "Hk=2 Hv=6 T=64 grouped", d_grouped},
    {"gdn_chunk", "Hk=1 Hv=2 T=37", d_short},
    {"gemm", "q4_k 4096x4096 T=512 pbench", b_q4k_4k_512},
    {"gemm", "q4_k 1024x4096 T=512 pbench", b_q4k_kv_512},
    {"gemm", "q6_k 1024x4096 T=512 pbench", b_q6k_kv_512},
    {"gemm", "q4_k 4096x4096 T=4096 pbench", b_q4k_4k_4096},
    {"gemm", "q4_k 14336x4096 T=512 pbench", b_q4k_up_512},
    {"gemm", "q4_k 14336x4096 T=4096 pbench", b_q4k_up_4096},
    {"gemm", "q4_k 4096x14336 T=512 pbench", b_q4k_dn_512},
    {"gemm", "q4_k 4096x14336 T=4096 pbench", b_q4k_dn_4096},
    {"gemm", "q6_k 14336x4096 T=4096 pbench", b_q6k_up_4096},
    {"gemm", "q8_0 14336x4096 T=4096 pbench", b_q8_0_up_4096},
    {"gemm", "q5_k 14336x4096 T=4096 pbench", b_q5k_up_4096},
    {"gemm", "q4_0 14336x4096 T=4096 pbench", b_q4_0_up_4096},
    {"gemm", "bf16 2-pass 14336x4096 T=512 pbench", b_bf16_up_512},
    {"gemm", "bf16 2-pass 14336x4096 T=4096 pbench", b_bf16_up_4096},
    {"gemm", "q4_k 17408x5120 T=512 pbench", b_q4k_27f_512},
    {"gemm", "q4_k 17408x5120 T=4096 pbench", b_q4k_27f_4096},
    {"gemm", "q4_k 5120x17408 T=4096 pbench", b_q4k_27d_4096},
    {"gemm", "q5_k 10240x5120 T=4096 pbench", b_q5k_27g_4096},
    {"gemm_wgmma", "bf16 14336x4096 T=512 n256 pbench", wb_up_512_256},
    {"gemm_wgmma", "bf16 14336x4096 T=512 n128 pbench", wb_up_512_128},
    {"gemm_wgmma", "bf16 14336x4096 T=4096 n256 pbench", wb_up_4096_256},
    {"gemm_wgmma", "bf16 14336x4096 T=4096 n128 pbench", wb_up_4096_128},
    {"gemm_wgmma", "bf16 4096x4096 T=512 n128 pbench", wb_4k_512_128},
    {"gemm_wgmma", "bf16 4096x4096 T=512 n256 pbench", wb_4k_512_256},
    {"gemm_wgmma", "bf16 4096x4096 T=4096 n128 pbench", wb_4k_4096_128},
    {"gemm_wgmma", "bf16 4096x4096 T=4096 n256 pbench", wb_4k_4096_256},
    {"gemm_wgmma", "bf16 4096x14336 T=512 n128 pbench", wb_dn_512_128},
    {"gemm_wgmma", "bf16 4096x14336 T=512 n256 pbench", wb_dn_512_256},
    {"gemm_wgmma", "bf16 4096x14336 T=4096 n128 pbench", wb_dn_4096_128},
    {"gemm_wgmma", "bf16 4096x14336 T=4096 n256 pbench", wb_dn_4096_256},
    {"gemm_wgmma", "bf16 17408x5120 T=512 n256 pbench", wb_27f_512_256},
    {"gemm_wgmma", "bf16 17408x5120 T=512 n128 pbench", wb_27f_512_128},
    {"gemm_wgmma", "bf16 1024x4096 T=512 n128 pbench", wb_kv_512_128},
    {"gemm_wgmma", "bf16 1024x4096 T=512 n256 pbench", wb_kv_512_256},
    {"gemm_experts", "q4_k 256x512x2048 512 tokens x 8 pbench", mb_gate_512},
    {"gemm_experts", "q6_k 256x2048x512 512 tokens x 8 per slot pbench", mb_down_512},
    {"gemm_experts", "q4_k 256x512x2048 4096 tokens x 8 pbench", mb_gate_4096},
    {"gemm_experts", "q6_k 256x2048x512 4096 tokens x 8 per slot pbench", mb_down_4096},
    {"mmq_experts", "q4_k 256x512x2048 512 tokens x 8 pbench", qb_gate_512},
    {"mmq_experts", "q6_k 256x2048x512 512 tokens x 8 per slot pbench", qb_down_512},
    {"mmq_experts", "q4_k 256x2048x512 512 tokens x 8 per slot pbench", qb_down4_512},
    {"mmq_experts", "q4_k 256x512x2048 4096 tokens x 8 pbench", qb_gate_4096},
    {"mmq_experts", "q6_k 256x2048x512 4096 tokens x 8 per slot pbench", qb_down_4096},
    {"mmq_dense", "q4_k 14336x4096 16 rows pbench", db_up_16},
    {"mmq_dense", "q4_k 14336x4096 32 rows pbench", db_up_32},
    {"mmq_dense", "q4_k 14336x4096 64 rows pbench", db_up_64},
    {"mmq_dense", "q4_k 4096x14336 64 rows pbench", db_dn_64},
    {"mmq_dense", "q6_k 4096x14336 64 rows pbench", db_dn6_64},
    {"mmq_dense", "q4_k 4096x4096 64 rows pbench", db_q_64},
    {"mmq_dense", "q4_k 1024x4096 64 rows pbench", db_kv_64},
    {"flash_attn_prefill", "D=128 Hq=32/8 T=4096 pbench", ab_8b_4096},
    {"flash_attn_prefill", "D=256 Hq=24/4 T=4096 pbench", ab_27b_4096},
    {"flash_attn_prefill", "D=128 Hq=32/8 T=1024 pos0=31744 pbench", ab_8b_32k_tail},
    {"flash_attn_prefill", "D=256 Hq=8/4 T=4096 win=1024 pbench", ab_gemma_win},
    {"gdn_chunk", "Hk=16 Hv=48 T=4096 pbench", db_27b_4096},
};
const int cuda_check_prefill_n = (int)(sizeof cuda_check_prefill_cases / sizeof cuda_check_prefill_cases[0]);
