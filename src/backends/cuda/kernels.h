/* kernels: the C launchers of the CUDA kernels (src/backends/cuda/kernels/NAME.cu).
 *
 * Every launcher takes raw device pointers and a stream, checks its preconditions (shapes, alignment,
 * supported types) and enqueues its kernel(s). It returns CUDA_KERR_OK; CUDA_KERR_ARGS when a precondition
 * fails or CUDA_KERR_UNSUPPORTED for a type or shape it does not handle (nothing is enqueued); or
 * CUDA_KERR_LAUNCH when the launch itself failed (cudaGetLastError). Nothing here allocates or
 * synchronises. Shapes use the alphabet of engine/ops_ref.h; arrays are row-major, last dimension fastest.
 * Sections per owner: decode kernels first, prefill kernels at the end. */
#ifndef LLM170_BACKENDS_CUDA_KERNELS_H
#define LLM170_BACKENDS_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "engine/ops_ref.h"
#include "quant/qtype.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cuda_kernel_status { CUDA_KERR_OK = 0, CUDA_KERR_ARGS = -1, CUDA_KERR_UNSUPPORTED = -2, CUDA_KERR_LAUNCH = -3 };

/* ================================ decode (owner: CUDA decode helper) ================================ */

/* --- q8_1 activations (kernels/quantize.cu) ---
 * The integer GEMV reads activations quantized per 32 values: xq[T][K] int8 and ds[T][K/32][2] floats
 * (d, d * sum(q)), with d = amax / 127 and q = round(x / d). K % 32 == 0; xq 16-byte aligned. */

/* xq, ds = q8_1(x[T][K]) */
int cuda_quantize_q8_1(const float *x, int8_t *xq, float *ds, int T, int K, cudaStream_t s);
/* h = rms_norm(x[T][K]) * w (w may be NULL); xq, ds = q8_1(h); h also written to y[T][K] unless y is NULL */
int cuda_rms_norm_q8_1(const float *x, const float *w, float eps, int8_t *xq, float *ds, float *y, int T, int K,
                       cudaStream_t s);
/* y[T][K] = silu(g) * u (as cuda_swiglu), and its q8_1 into xq / ds, in one launch */
int cuda_swiglu_q8_1(const float *g, const float *u, int8_t *xq, float *ds, float *y, int T, int K, cudaStream_t s);

/* --- quantized GEMV (kernels/gemv.cu) ---
 * A weight matrix W[N][K] in the GEMV layout made by cuda_repack (backends/cuda/repack.h): quants in qs
 * (16 B per 32 values; 32 B for Q8_0), high bits in hi (Q5_0/Q5_K: 4 B per 32, Q6_K: 8 B per 32; else
 * NULL), scales in meta. Types: Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K. */
typedef struct cuda_qmat {
    enum qtype type;
    int64_t N, K;
    const void *qs, *hi, *meta;
    const float *bias; /* NULL, or N floats added to each output row: y = x . W^T + bias, rounded as cuda_add_bias
                        * after the product (the GEMV forms of up to 8 rows without experts; others refuse it) */
} cuda_qmat;
/* y[T][N] = x[T][K] . W^T for 1 <= T <= CUDA_GEMV_BATCH_MAX activation rows given as q8_1 (xq, ds); above
 * 8 rows (batched decode) the integer products come from tensor cores (k_gemv_mma; LLM170_CUDA_GEMV_BATCH=chunks:
 * the 8-row kernel over chunks of 8, W read from memory once). A row's result is bit for bit the same at
 * every T (the batch invariant): which lane sums which of its units depends on K only, and the tensor-core
 * form sums in that order. */
#define CUDA_GEMV_BATCH_MAX 4096
int cuda_gemv_q(const cuda_qmat *W, const int8_t *xq, const float *ds, float *y, int T, cudaStream_t s);
/* the same, and res[T][N] += y in the same launch (a residual add fused into the projection before it) */
int cuda_gemv_q_res(const cuda_qmat *W, const int8_t *xq, const float *ds, float *y, float *res, int T,
                    cudaStream_t s);
#define CUDA_GEMV_GROUP 3 /* matrices one cuda_gemv_q_group launch covers at most */
/* n (1..CUDA_GEMV_GROUP) matrices of one type and width over the same activations in one launch: y[i] = x . W[i]^T
 * (q, k and v, or gate and up, of a decode step); each y[i] bit-identical to cuda_gemv_q's */
int cuda_gemv_q_group(const cuda_qmat *W, int n, const int8_t *xq, const float *ds, float *const *y, int T,
                      cudaStream_t s);
/* One activation row (T = 1) of n (1..CUDA_GEMV_GROUP) matrices as cuda_gemv_q_group, res (NULL or member 0's
 * residual) as cuda_gemv_q_res, through a chosen kernel: rows 0 = a block per row group (k_gemv_q), 2 / 4 / 8 =
 * a persistent grid streaming row groups of that many rows (k_gemv_stream), 11 / 12 / 14 = a warp per row
 * group of 1 / 2 / 4 rows (k_gemv_lean), 122 / 142 = a persistent grid of warps each streaming its row groups
 * of 2 / 4 rows with 2 items' loads in flight (k_gemv_pipe). Every form gives the same bits (cuda-check compares
 * them); the others above take, at T = 1, form 122 where K >= 4096 and form 12 below. */
int cuda_gemv_q1_form(const cuda_qmat *W, int n, const int8_t *xq, const float *ds, float *const *y, float *res,
                      int rows, cudaStream_t s);

/* the grouped expert form (matmul_experts): W holds E experts of N rows each (the repacked [E*N][K]
 * matrix, W->N = N); for each of n_slots routed slots, y[slot][N] = x[slot / xdiv] . W[sel[slot]]^T, the
 * expert id read on the device (ids outside [0, E) leave their row untouched). x given as q8_1 rows. */
int cuda_gemv_q_experts(const cuda_qmat *W, int E, const int32_t *sel, int n_slots, int xdiv, const int8_t *xq,
                        const float *ds, float *y, cudaStream_t s);
/* n (1..CUDA_GEMV_GROUP) expert sets of one type, width and E over the same slots and activations in one
 * launch (an MoE's gate and up experts): y[i] as cuda_gemv_q_experts over W[i] alone, bit for bit */
int cuda_gemv_q_experts_group(const cuda_qmat *W, int n, int E, const int32_t *sel, int n_slots, int xdiv,
                              const int8_t *xq, const float *ds, float *const *y, cudaStream_t s);

/* --- float-weight matmul (kernels/matmul_f.cu): W F32 / F16 / BF16 [N][K], x f32, f32 accumulation.
 * sel NULL: y[T][N] = x[T][K] . W^T. sel set: W is [E][N][K] and T counts routed slots, as
 * cuda_gemv_q_experts. --- */
int cuda_matmul_f(int type, const void *W, const float *x, float *y, int N, int K, int T, const int32_t *sel, int E,
                  int xdiv, cudaStream_t s);
#define CUDA_MATMUL_F_GROUP 2 /* float matrices one cuda_matmul_f_group launch covers at most */
/* n (1..CUDA_MATMUL_F_GROUP) float matrices of one type and K over the same x[T][K] in one launch: y[i][T][N[i]]
 * as cuda_matmul_f over W[i] alone, bit for bit */
int cuda_matmul_f_group(int type, const void *const *W, float *const *y, const int *N, int n, const float *x, int K,
                        int T, cudaStream_t s);

/* --- the executor's other ops (kernels/ops_misc.cu), each as its CPU reference (backends/backend.h) --- */
int cuda_copy_cols(float *dst, const float *src, int64_t rows, int64_t src_stride, int64_t off, int64_t n,
                   cudaStream_t s);
int cuda_set_cols(float *dst, const float *src, int64_t rows, int64_t dst_stride, int64_t off, int64_t n,
                  cudaStream_t s);
int cuda_gather_rows(float *dst, const float *src, const int32_t *idx, int n, int C, cudaStream_t s);
int cuda_spin_us(int us, cudaStream_t s); /* one thread busy-waits us microseconds on the GPU (the profile) */
/* y[T][K] = rows ids[t] of W: F32 / F16 / BF16 as stored; quantized from the GEMV layout, exactly the CPU's
 * to_float */
int cuda_get_rows_f(int type, const void *W, const int32_t *ids, float *y, int T, int64_t K, cudaStream_t s);
int cuda_get_rows_q(const cuda_qmat *W, const int32_t *ids, float *y, int T, cudaStream_t s);
/* rows x width values of a cache type (F32, F16, BF16, Q8_0 with width % 32 == 0) from f32 */
int cuda_store_rows(void *dst, int type, const float *src, int64_t rows, int64_t width, cudaStream_t s);
/* pair forms, one launch for two buffers, each bit-identical to its own launch (the executor joins a
 * decode step's rope of q and k, its K and V cache stores, the l2 norms of q and k: cuda_exec.c):
 * store_rows2 for F16 / BF16 caches, dst/src and dst2/src2 both rows x width */
int cuda_store_rows2(void *dst, const float *src, void *dst2, const float *src2, int type, int64_t rows,
                     int64_t width, cudaStream_t s);
int cuda_l2_norm2(float *x, int64_t R, float *x2, int64_t R2, int D, float eps, float scale, cudaStream_t s);
int cuda_l2_norm(float *x, int64_t R, int D, float eps, float scale, cudaStream_t s); /* x[R][D] in place */
int cuda_add_bias(float *y, const float *b, int64_t T, int64_t N, cudaStream_t s);
int cuda_scale(float *y, float v, int64_t n, cudaStream_t s);
int cuda_gdn_gates(float *g, float *beta, const float *A, const float *dt, int64_t T, int Hv, cudaStream_t s);
int cuda_conv1d_silu(const float *x, float *state, const float *w, float *y, int T, int Ch, int K, cudaStream_t s);
int cuda_moe_combine(float *y, const float *ys, const int32_t *sel, const float *wsel, int T, int K, int C,
                     cudaStream_t s);
/* moe_combine, then (in, gate not NULL) y[t] += sigmoid(gate[t]) * in[t] (add_gated_rows), then (res not
 * NULL) res += y (add), in one launch: the bits of the three launches */
int cuda_moe_combine_gated(float *y, const float *ys, const int32_t *sel, const float *wsel, int T, int K, int C,
                           const float *in, const float *gate, float *res, cudaStream_t s); /* K <= 64 */
int cuda_add_gated_rows(float *y, const float *in, const float *gate, int64_t T, int64_t C, cudaStream_t s);
/* the same, then res[T][C] += y in the same launch (the residual add after an MoE; the executor's join):
 * y and res bit-identical to cuda_add_gated_rows then cuda_add. y and res must not overlap. */
int cuda_add_gated_rows_res(float *y, const float *in, const float *gate, float *res, int64_t T, int64_t C,
                            cudaStream_t s);

/* --- attention over any cache type (kernels/attention.cu): ref_attention with device qpos / kpos; caches
 * F32, F16, BF16 or Q8_0 (tk, tv: enum qtype); D <= 256 --- */
int cuda_attention(const float *q, const void *k, const void *v, int tk, int tv, float *out, const int32_t *qpos,
                   const int32_t *kpos, int T, int S, int Hq, int Hkv, int D, float scale, int window, cudaStream_t s);

/* --- the gated delta rule, step form over T tokens (kernels/gdn_seq.cu): ref_gdn_step T times, any
 * Dk <= 256, Dv; state S[Hv][Dk][Dv] in place --- */
int cuda_gdn_seq(float *S, const float *q, const float *k, const float *v, const float *g, const float *beta, float *o,
                 int T, int Hk, int Hv, int Dk, int Dv, enum gdn_head_map map, cudaStream_t s);

/* --- norms and element-wise ops (kernels/norm.cu, kernels/eltwise.cu) --- */
/* y[R][C] = x / sqrt(mean(x^2) + eps) * w (w: C values or NULL); y may alias x. R rows: T tokens, or
 * T * H heads with C = D for per-head norms. */
int cuda_rms_norm(const float *x, const float *w, float *y, int R, int C, float eps, cudaStream_t s);
int cuda_swiglu(const float *g, const float *u, float *y, int64_t n, cudaStream_t s);     /* y = silu(g) * u */
/* the same y, and yb = bf16(y) (round to nearest even: cuda_f32_to_bf16's bits) in the same launch: the input
 * of a GEMM (cuda_gemm_q, the two-pass products) without its conversion launch */
int cuda_rms_norm_bf16(const float *x, const float *w, float *y, uint16_t *yb, int R, int C, float eps, cudaStream_t s);
int cuda_swiglu_bf16(const float *g, const float *u, float *y, uint16_t *yb, int64_t n, cudaStream_t s);
int cuda_geglu(const float *g, const float *u, float *y, int64_t n, cudaStream_t s);      /* y = gelu_tanh(g) * u */
int cuda_sigmoid_mul(float *y, const float *gate, int64_t n, cudaStream_t s);              /* y *= sigmoid(gate) */
int cuda_add(float *y, const float *x, int64_t n, cudaStream_t s);                         /* y += x */

/* --- RoPE (kernels/rope.cu): x[T][H][D] in place as ref_rope; pos[T] on the device; factors: n_rot/2
 * divisors on the device or NULL --- */
int cuda_rope(float *x, const int32_t *pos, int T, int H, int D, const rope_params *rp, const float *factors,
              cudaStream_t s);
/* x[T][H][D] and x2[T][H2][D] at the same positions, one launch (pair form, as cuda_store_rows2) */
int cuda_rope2(float *x, int H, float *x2, int H2, const int32_t *pos, int T, int D, const rope_params *rp,
               const float *factors, cudaStream_t s);

/* --- decode attention (kernels/attn_decode.cu) ---
 * One query token per call over an f16 cache: q[Hq][D] f32, k/v[S][Hkv][D] f16, kpos[S], out[Hq][D] f32;
 * visibility as ref_attention (kpos <= qpos, sliding window when window > 0). qpos and the number of
 * cached positions n_kv (<= S_max) are read on the device (n_kv NULL: all S_max positions are cached). Split-K: the positions are cut into chunks, each block reduces one chunk for all
 * query heads of one kv head (partial max, sum and output in scratch), a second kernel merges.
 * D % 32 == 0, D <= 256, Hq % Hkv == 0, Hq / Hkv <= 8. scratch: cuda_attn_decode_scratch(...) floats. */
int64_t cuda_attn_decode_scratch(int S_max, int Hq, int D);
int cuda_attn_decode(const float *q, const uint16_t *k, const uint16_t *v, float *out, const int32_t *qpos,
                     const int32_t *kpos, const int32_t *n_kv, int S_max, int Hq, int Hkv, int D, float scale,
                     int window, float *scratch, cudaStream_t s);

/* Batched decode attention (exec op attend_decode): n <= CUDA_ATTN_SEQS_MAX sequences, one new token each.
 * Sequence i's key and value rows (row seqs[i].row of kn / vn, Hkv*D f32) are stored as f16 at slot
 * seqs[i].pos of its caches k / v, then its query (row .row of q) attends over slots [0, pos] into row .row
 * of out: three launches (store, split, merge) for all of them, the sequences passed by value. Each
 * sequence is split as cuda_attn_decode splits S_max = pos + 1 (the same kernel code): its bits do not
 * depend on the others. scratch: scratch_n floats, at least n * cuda_attn_decode_scratch(max pos + 1, Hq, D).
 * Conditions as cuda_attn_decode. */
#define CUDA_ATTN_SEQS_MAX 64
typedef struct cuda_attn_seq {
    uint16_t *k, *v;
    int32_t pos, row;
} cuda_attn_seq;
int cuda_attn_decode_seqs(const cuda_attn_seq *seqs, int n, const float *q, const float *kn, const float *vn,
                          float *out, const int32_t *kpos, int Hq, int Hkv, int D, float scale, int window,
                          float *scratch, int64_t scratch_n, cudaStream_t s);

/* --- Gated DeltaNet decode step (kernels/gdn_step.cu), one token of each of n sequences, the whole block
 * from the projections to the gated norm in one kernel: conv1d step with state + SiLU, l2 norm of q (times
 * Dk^-1/2) and k, gates g = ssm_a * softplus(alpha + dt_bias) and beta = sigmoid(beta_raw), the delta-rule
 * update of S, o = S^T q, and o = rms_norm(o) * norm_w * silu(z); optionally o's q8_1 rows for the GEMV
 * that reads it next (as cuda_quantize_q8_1 would write them). Dk == Dv == 128. Row i of qkv, alpha,
 * beta_raw, z and o is sequence i's; its conv state and S are updated in place. */
#define CUDA_GDN_MAX_SEQS 64
typedef struct cuda_gdn_args {
    const float *qkv;     /* [n][2*Hk*Dk + Hv*Dv] the attn_qkv projection (q | k | v) */
    const float *conv_w;  /* [dc][Kc] */
    const float *alpha, *beta_raw; /* [n][Hv] the ssm_alpha / ssm_beta projections */
    const float *ssm_a, *dt_bias;  /* [Hv] */
    const float *z;       /* [n][Hv][Dv] the attn_gate projection */
    const float *norm_w;  /* [Dv] ssm_norm */
    float *o;             /* [n][Hv][Dv] out */
    int8_t *xq;           /* NULL, or [n][Hv*Dv] o's q8_1 values (16-byte aligned) */
    float *ds;            /* with xq: [n][Hv*Dv/32][2] their scales */
    unsigned int *sync;   /* [n][Hv + Hk] counters: zero before the first call; the kernel leaves them zero */
    int n, Hk, Hv, Dk, Dv, Kc;
    enum gdn_head_map map;
    float eps;
    struct {
        float *conv;      /* [Kc-1][dc] previous raw inputs, oldest first (dc = 2*Hk*Dk + Hv*Dv) */
        float *S;         /* [Hv][Dk][Dv] */
    } seq[CUDA_GDN_MAX_SEQS];
} cuda_gdn_args;
int cuda_gdn_step(const cuda_gdn_args *a, cudaStream_t s);

/* --- MoE router and argmax (kernels/select.cu) --- */
enum cuda_moe_gating { CUDA_MOE_SOFTMAX, CUDA_MOE_SIGMOID };
/* per token t: p = softmax(logits[t][E]) (or sigmoid), the K largest p (ties to the lower expert id, as
 * the CPU's qwen35 moe_block), ids[t][K] in selection order and w[t][K] = p (renormalised to sum 1 when
 * renorm). E <= 1024, K <= 32. */
int cuda_moe_route(const float *logits, int32_t *ids, float *w, int T, int E, int K, enum cuda_moe_gating gating,
                   int renorm, cudaStream_t s);
/* ids[t] = argmax of x[t][V] (ties to the lowest id, as the CPU sampler's greedy pick). scratch: T
 * 64-bit words that must be zero before the first call; the launcher leaves them zero again. */
int cuda_argmax(const float *x, int32_t *ids, unsigned long long *scratch, int T, int V, cudaStream_t s);

/* ================================ prefill (owner: CUDA prefill helper) =============================== */

/* --- prefill matrix products on tensor cores (kernels/gemm_q.cu) ---
 * Y[T][N] f32 = X[T][K] . W[N][K]^T with X bf16 [T][K] and f32 accumulation: mma.sync m16n8k16 bf16 over
 * 256 (or 128) token x 128 row tiles of Y, weights dequantized in shared memory to bf16(to_float(w)). The
 * tile choice never changes a bit of Y, and the two-pass path below gives the same bits; on the H200 the
 * two-pass path is the faster one at every measured shape (docs/cuda-prefill.md). W in its GGUF block
 * layout (Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K), 16-byte aligned, no padding needed; X 16-byte aligned;
 * K % 64 == 0 and a multiple of the block size; N even. Any T >= 1 (a partial last tile is masked). */
int cuda_gemm_q_supports(int type); /* 1: cuda_gemm_q takes this type */
/* part: cuda_gemm_part_floats(T, N, K) floats of split-K slices (GEMMs of at most 2048 rows are cut into 4
 * slices of K, summed in order by a second launch: a rule of N and K only, so a token's bits never depend
 * on T); NULL where that is 0, else CUDA_KERR_ARGS */
int64_t cuda_gemm_part_floats(int T, int N, int K);
int cuda_gemm_q(int type, const void *W, const uint16_t *X, float *Y, float *part, int T, int N, int K,
                cudaStream_t s);
/* the two-pass path: Wd[N][K] bf16 = bf16(to_float(W)) (bit-exact with the CPU dequantizer), N <= 65535;
 * then Y = X . Wd^T with the same tiles (cuda_gemm_bf16) */
int cuda_dequant_bf16(int type, const void *W, uint16_t *Wd, int N, int K, cudaStream_t s);
int cuda_gemm_bf16(const uint16_t *W, const uint16_t *X, float *Y, float *part, int T, int N, int K, cudaStream_t s);
/* The grouped expert product (MoE prefill): Y[slot][N] = X[slot / xdiv] . W[sel[slot]]^T for every routed
 * slot, W the E experts' N x K matrices back to back in GGUF blocks (16-byte aligned base), X bf16. First
 * cuda_moe_group builds g (cuda_moe_group_ints(n_slots, E, bm) ints: the slots by expert and a table of
 * tiles of up to bm slots of one expert) from sel on the device; then cuda_gemm_q_experts (bm =
 * CUDA_MOE_TILE) runs the tiles (each reads its expert's weights once), no split-K. A slot's bits depend on
 * its own row and expert only, not on the other slots or their order. A slot whose expert is outside
 * [0, E) is not written. E <= 8192; at most 65535 tiles (cuda_moe_tiles_max). */
#define CUDA_MOE_TILE 64 /* slots a tile of cuda_gemm_q_experts */
int64_t cuda_moe_tiles_max(int n_slots, int E, int bm);
int64_t cuda_moe_group_ints(int n_slots, int E, int bm);
int cuda_moe_group(const int32_t *sel, int n_slots, int E, int bm, int32_t *g, cudaStream_t s);
int cuda_gemm_q_experts(int type, const void *W, int E, const uint16_t *X, int xdiv, const int32_t *g, float *Y,
                        int n_slots, int N, int K, cudaStream_t s);
/* --- the two-pass product on Hopper's warpgroup tensor cores (kernels/gemm_wgmma.cu) ---
 * Y[T][N] f32 = X[T][K] . W[N][K]^T with X and W bf16 (W: cuda_dequant_bf16's scratch), as cuda_gemm_bf16,
 * through wgmma (sm_90a) on 128-token x 128- or 256-row tiles fed by the copy engine (TMA). Every output is
 * the same sequence of wgmmas over K whatever T and tile (no split-K), so chunked prefill keeps its bits,
 * and they are cuda_gemm_bf16's bits wherever that one does not split K (measured on an H100; the check
 * requires it). X and W 16-byte aligned, Y 8-byte aligned; K % 64 == 0, N even (CUDA_KERR_ARGS otherwise);
 * CUDA_KERR_UNSUPPORTED where cuda_gemm_wgmma_available() is 0. Any T >= 1. The executor's two-pass product
 * on sm_90a since 2026-12-07 (cuda_matmul.c mm_gemm). */
/* 1 when the current device is cc 9.0 (H100, H200) and this binary has sm_90a code */
int cuda_gemm_wgmma_available(void);
/* the tile's weight rows (128 or 256) chosen from T and N by the waves they make (gemm_wgmma.cu wg_bn) */
int cuda_gemm_bf16_wgmma(const uint16_t *W, const uint16_t *X, float *Y, int T, int N, int K, cudaStream_t s);
/* the same with the tile named: BN = 128 or 256 (the checks run both) */
int cuda_gemm_bf16_wgmma_tile(const uint16_t *W, const uint16_t *X, float *Y, int T, int N, int K, int BN,
                              cudaStream_t s);
/* The same product on int8 tensor cores (kernels/mmq.cu): W the experts' GEMV layout (W->N rows an expert,
 * the planes of all E * W->N rows), x as q8_1 rows (xq 16-byte aligned, ds: cuda_quantize_q8_1), the slots
 * grouped by cuda_moe_group with bm = cuda_mmq_tile(n_slots, E) (32 or 64; passed again here). Types Q4_0,
 * Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K with K % 256 == 0 (cuda_mmq_experts_supports; else
 * CUDA_KERR_UNSUPPORTED). Each output is its row's 32-value units in order, each an exact int32 sum scaled
 * as mmq_unit.h says (which also bounds the error): a slot's bits depend on its own row and expert only, at
 * any T and tile size. A slot whose expert is outside [0, E) is not written. */
#define CUDA_MMQ_TILE_MIN 32 /* the smallest tile cuda_mmq_tile gives: what sizes a group table for both */
int cuda_mmq_experts_supports(int type, int64_t K);
int cuda_mmq_tile(int n_slots, int E);
int cuda_mmq_experts(const cuda_qmat *W, int E, const int8_t *xq, const float *ds, int xdiv, const int32_t *g, int bm,
                     float *Y, int n_slots, cudaStream_t s);
/* The same kernel over one matrix: Y[T][W->N] = x[T] . W^T for T q8_1 rows in order, tiles of bm = 32 or 64 rows
 * (cuda_mmq_tile(T, 1)); the bits cuda_mmq_experts gives with E = 1 and every slot on expert 0. The executor's
 * batched decode rows (more than 8 one-token spans a step): W read once per bm rows, not once per 8. */
int cuda_mmq_dense(const cuda_qmat *W, const int8_t *xq, const float *ds, float *Y, int T, int bm, cudaStream_t s);
/* y[n] = bf16(x[n]) (round to nearest even): activations for cuda_gemm_q */
int cuda_f32_to_bf16(const float *x, uint16_t *y, int64_t n, cudaStream_t s);

/* --- flash attention for prefill (kernels/flash_attn_prefill.cu) ---
 * q f32 [T][Hq][D] (used as f16), k/v f16 [S][Hkv][D] (cache slot s = position s), out f32 [T][Hq][D].
 * Query t at position pos0 + t sees key s iff s <= pos0 + t and (window == 0 or pos0 + t - s < window):
 * ref_attention with qpos[t] = pos0 + t, kpos[s] = s. D = 64, 128, 256; Hq % Hkv == 0; scale > 0
 * (usually D^-1/2). No T x S matrix: scores live in registers, 64 x 64 tiles at a time. */
int cuda_flash_attn_prefill(const float *q, const uint16_t *k, const uint16_t *v, float *out, int T, int S, int Hq,
                            int Hkv, int D, int pos0, int window, float scale, cudaStream_t s);
/* the same with the first query's position read on the device (qpos[0]; queries at qpos[0] + t, keys at
 * slot = position): the executor's form, so no host read of the positions */
int cuda_flash_attn_prefill_qpos(const float *q, const uint16_t *k, const uint16_t *v, float *out, int T, int S,
                                 int Hq, int Hkv, int D, const int32_t *qpos, int window, float scale, cudaStream_t s);

/* --- chunked Gated DeltaNet for prefill (kernels/gdn_chunk.cu) ---
 * ref_gdn_chunk with chunk 64 on the device: S[Hv][Dk][Dv] in/out (the state decode continues from),
 * q/k[T][Hk][Dk] (L2-normalised, q scaled), v[T][Hv][Dv], g/beta[T][Hv], o[T][Hv][Dv]; Dk == Dv == 128.
 * scratch: cuda_gdn_chunk_scratch(T, Hv) floats (U, W, the intra-chunk matrix and gates of every chunk). */
int64_t cuda_gdn_chunk_scratch(int T, int Hv);
int cuda_gdn_chunk(float *S, const float *q, const float *k, const float *v, const float *g, const float *beta,
                   float *o, int T, int Hk, int Hv, int Dk, int Dv, enum gdn_head_map map, float *scratch,
                   cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
