/* check_prefill_moe: the grouped expert product (kernels/gemm_q.cu: cuda_moe_group, cuda_gemm_q_experts),
 * the MoE's prefill path for spans of more than 8 tokens.
 *
 * Inputs: E experts of N x K weights from quant_random_blocks (RMS 0.02) in one buffer, as a GGUF expert
 * tensor holds them; activations N(0, 1), one row per token (xdiv = topk: the gate and up projections) or
 * per slot (xdiv = 1: the down projection); each token routes to topk distinct random experts. Checked:
 *  - the group table, downloaded: every slot with a valid expert in exactly one tile of its expert, tiles
 *    of 1..64 slots back to back over the list; the small cases plant one slot with expert id E, which must
 *    be in no tile, and its Y row must keep its sentinel bits;
 *  - every output (a bench case: 512 sampled ones) against the GEMM's error model (check_prefill.c,
 *    pf_gemm_score; tol = 1);
 *  - the first half of the tokens alone give the bits they had among all (a slot's result depends on its
 *    own row and expert only, whatever else shares its tiles).
 * --bench times the grouping and the product together (what a matmul_experts of GEMM rows launches, less
 * the bf16 conversion). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/check_prefill.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/kernels.h"
#include "quant/quant.h"

enum { MOE_SAMPLES = 512 };

typedef struct moe_ctx {
    int type, E, N, K, slots, xdiv;
    const int32_t *sel;
    const void *W;
    const uint16_t *Xb;
    int32_t *g;
    float *Y;
} moe_ctx;

static int moe_launch(void *vctx, int i, cudaStream_t s) {
    (void)i;
    const moe_ctx *c = vctx;
    if (cuda_moe_group(c->sel, c->slots, c->E, CUDA_MOE_TILE, c->g, s)) return ERR_IO;
    return cuda_gemm_q_experts(c->type, c->W, c->E, c->Xb, c->xdiv, c->g, c->Y, c->slots, c->N, c->K, s) ? ERR_IO : 0;
}

/* check_prefill.h */
const char *pf_moe_table_fault(const int32_t *g, const int32_t *sel, int n, int E, int bm) {
    const int nt = g[n];
    const int32_t *tiles = g + n + 1;
    int valid = 0, pos = 0;
    for (int s = 0; s < n; s++) valid += sel[s] >= 0 && sel[s] < E;
    if (nt < 0 || nt > cuda_moe_tiles_max(n, E, bm)) return "tile count out of range";
    char *seen = calloc((size_t)n, 1);
    const char *fault = seen ? NULL : "out of host memory";
    for (int t = 0; t < nt && !fault; t++) {
        const int e = tiles[3 * t], first = tiles[3 * t + 1], count = tiles[3 * t + 2];
        if (e < 0 || e >= E || first != pos || count < 1 || count > bm || first + count > valid) fault = "a tile out of order or size";
        for (int i = first; !fault && i < first + count; i++) {
            const int slot = g[i];
            if (slot < 0 || slot >= n || sel[slot] != e || seen[slot]++) fault = "a slot in the wrong tile or twice";
        }
        pos += count;
    }
    if (!fault && pos != valid) fault = "valid slots missing from the tiles";
    free(seen);
    return fault;
}

void pf_moe_route(rng *r, int32_t *sel, int tokens, int topk, int lo, int E) {
    for (int t = 0; t < tokens; t++)
        for (int k = 0; k < topk; k++) {
            int ex, dup;
            do {
                ex = lo + (int)(rng_u64(r) % (uint64_t)(E - lo)), dup = 0;
                for (int j = 0; j < k; j++) dup |= sel[t * topk + j] == ex;
            } while (dup);
            sel[t * topk + k] = ex;
        }
}

int pf_moe_case(int type, int E, int N, int K, int tokens, int topk, bool per_slot, bool big, uint64_t seed,
                bool bench, cuda_check_result *res, err *e) {
    const quant_ops *ops = quant_ops_get((enum qtype)type, QUANT_ISA_SCALAR);
    const qtype_info *qi = qtype_get((uint32_t)type);
    if (!ops || !ops->to_float || !qi) return err_set(e, ERR_UNSUPPORTED, "no CPU dequantizer for this type");
    const int slots = tokens * topk, n_in = per_slot ? slots : tokens, xdiv = per_slot ? 1 : topk;
    const size_t row_bytes = qtype_row_bytes((enum qtype)type, K), w_bytes = row_bytes * (size_t)N * (size_t)E;
    const int64_t g_n = cuda_moe_group_ints(slots, E, CUDA_MOE_TILE);
    rng r;
    rng_seed(&r, seed);
    uint8_t *Wh = malloc(w_bytes);
    float *X = malloc(sizeof(float) * (size_t)n_in * K), *Wf = malloc(sizeof(float) * (size_t)K);
    float *Y = malloc(sizeof(float) * (size_t)slots * N), *Yh = malloc(sizeof(float) * (size_t)slots * N);
    int32_t *sel = malloc(sizeof(int32_t) * (size_t)slots), *g = malloc(sizeof(int32_t) * (size_t)g_n);
    float *Xd = NULL;
    moe_ctx c = {.type = type, .E = E, .N = N, .K = K, .slots = slots, .xdiv = xdiv};
    int32_t *seld = NULL;
    int rc = 0;
    if (!Wh || !X || !Wf || !Y || !Yh || !sel || !g) {
        rc = err_set(e, ERR_NOMEM, "host buffers");
        goto done;
    }
    pf_normal(&r, X, (int64_t)n_in * K, 1.0f);
    pf_moe_route(&r, sel, tokens, topk, 0, E);
    const int planted = big ? -1 : slots / 3; /* a slot routed to no expert */
    if (planted >= 0) sel[planted] = E;
    if (!quant_random_blocks((enum qtype)type, Wh, (int64_t)E * N * (K / qi->blck), 0.02f, &r)) {
        rc = err_set(e, ERR_UNSUPPORTED, "no random generator for this type");
        goto done;
    }
    rc = cu_upload((void **)&c.W, Wh, w_bytes, e);
    if (!rc) rc = cu_upload((void **)&Xd, X, sizeof(float) * (size_t)n_in * K, e);
    if (!rc) rc = cu_upload((void **)&seld, sel, sizeof(int32_t) * (size_t)slots, e);
    if (!rc) rc = cu_alloc((void **)&c.Xb, sizeof(uint16_t) * (size_t)n_in * K, e);
    if (!rc) rc = cu_alloc((void **)&c.g, sizeof(int32_t) * (size_t)g_n, e);
    if (!rc) rc = cu_alloc((void **)&c.Y, sizeof(float) * (size_t)slots * N, e);
    if (!rc) rc = cu_check(cudaMemset(c.Y, 0xff, sizeof(float) * (size_t)slots * N), e, "cudaMemset");
    c.sel = seld;
    if (!rc) rc = pf_kerr(cuda_f32_to_bf16(Xd, (uint16_t *)c.Xb, (int64_t)n_in * K, 0), "cuda_f32_to_bf16", e);
    if (!rc) rc = moe_launch(&c, 0, 0) ? err_set(e, ERR_IO, "cuda_moe_group / cuda_gemm_q_experts failed") : 0;
    if (!rc) rc = cu_download(Y, c.Y, sizeof(float) * (size_t)slots * N, e);
    if (!rc) rc = cu_download(g, c.g, sizeof(int32_t) * (size_t)g_n, e);
    if (rc) goto done;

    const char *fault = pf_moe_table_fault(g, sel, slots, E, CUDA_MOE_TILE);
    double worst = 0, worst_sig = 0, worst_abs = 0, sig, ab;
    const int checks = big ? MOE_SAMPLES : slots * N;
    for (int i = 0; i < checks; i++) {
        int s = big ? (int)(rng_u64(&r) % (uint64_t)slots) : i / N, n = big ? (int)(rng_u64(&r) % (uint64_t)N) : i % N;
        if (s == planted) continue;
        ops->to_float(Wh + ((size_t)sel[s] * N + n) * row_bytes, Wf, K);
        double q = pf_gemm_score(X + (size_t)(s / xdiv) * K, Wf, K, Y[(size_t)s * N + n], &sig, &ab);
        if (!(q <= worst)) worst = q, worst_abs = ab;
        if (sig > worst_sig) worst_sig = sig;
    }
    int64_t bad_planted = 0;
    if (planted >= 0) {
        const uint32_t ones = 0xffffffffu;
        for (int n = 0; n < N; n++) bad_planted += memcmp(&Y[(size_t)planted * N + n], &ones, 4) != 0;
    }
    /* the first half of the tokens alone */
    c.slots = (tokens / 2) * topk;
    rc = moe_launch(&c, 0, 0) ? err_set(e, ERR_IO, "the half launch failed") : 0;
    if (!rc) rc = cu_download(Yh, c.Y, sizeof(float) * (size_t)c.slots * N, e);
    c.slots = slots;
    if (rc) goto done;
    int64_t bad_half = 0;
    for (int s = 0; s < (tokens / 2) * topk; s++)
        if (s != planted) bad_half += pf_bits_differ(Y + (size_t)s * N, Yh + (size_t)s * N, N);
    if (fault || bad_planted || bad_half) worst = 1e9;
    snprintf(res->detail, sizeof res->detail, "%s%d outputs; abs err %.2g; vs f32 w: %.1f sigma; table %s; half alone %lld differ%s",
             big ? "sampled " : "", checks, worst_abs, worst_sig, fault ? fault : "ok", (long long)bad_half,
             bad_planted ? "; the unrouted slot's row was written" : "");
    res->max_err = worst;
    res->tol = 1.0;
    if (bench && big) {
        rc = cu_time(moe_launch, &c, 1, &res->us, e);
        if (!rc) res->tflops = 2.0 * slots * (double)N * K / (res->us * 1e6);
    }
done:
    cu_free((void *)c.W), cu_free(Xd), cu_free(seld), cu_free((void *)c.Xb), cu_free(c.g), cu_free(c.Y);
    free(Wh), free(X), free(Wf), free(Y), free(Yh), free(sel), free(g);
    return rc;
}
