/* ops_misc: the small executor ops the CUDA backend needs beyond the decode and prefill hot paths
 * (backends/cuda/cuda_exec.c): data movement (copy_cols, set_cols, gather_rows, embedding lookups with
 * dequantization, typed cache rows), row norms and gates of the GDN block, the MoE combine and the gated
 * residual. Each mirrors its CPU reference (engine/ops_ref.c, backends/cpu/cpu_exec_ops.c) operation for
 * operation where the conformance suite expects exact results (data movement, dequantization), and within
 * 1e-5 of the output's magnitude elsewhere (summation order, exp/log).
 *
 * Element-wise kernels use grid-stride loops over a capped grid (ew_grid) so any n fits one launch. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/gemv_unpack.h"

#define EW_THREADS 256
static unsigned ew_grid(int64_t n) {
    int64_t b = (n + EW_THREADS - 1) / EW_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 8192 ? 8192 : b);
}
#define GRID_STRIDE(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* ---------------------------------------------------------------- data movement */

/* dst[r][n] = src[r][src_stride] columns [off, off + n): element i = r * n + c */
__global__ void k_copy_cols(float *__restrict__ dst, const float *__restrict__ src, int64_t rows, int64_t src_stride,
                            int64_t off, int64_t n) {
    pdl_enter();
    GRID_STRIDE(i, rows * n) dst[i] = src[(i / n) * src_stride + off + i % n];
}

/* dst[r][dst_stride] columns [off, off + n) = src[r][n] */
__global__ void k_set_cols(float *__restrict__ dst, const float *__restrict__ src, int64_t rows, int64_t dst_stride,
                           int64_t off, int64_t n) {
    pdl_enter();
    GRID_STRIDE(i, rows * n) dst[(i / n) * dst_stride + off + i % n] = src[i];
}

/* dst[i][C] = src[idx[i]][C] */
__global__ void k_gather_rows(float *__restrict__ dst, const float *__restrict__ src, const int32_t *__restrict__ idx,
                              int n, int C) {
    pdl_enter();
    GRID_STRIDE(i, (int64_t)n * C) dst[i] = src[(int64_t)idx[i / C] * C + i % C];
}

/* p[0] = v (a host value into a device word, stream-ordered: no host transfer) */

/* y[T][K] = rows ids[t] of an F32 / F16 / BF16 matrix W[.][K] (WT: 0 f32, 1 f16, 2 bf16) */
template <int WT>
__global__ void k_get_rows_f(const void *__restrict__ W, const int32_t *__restrict__ ids, float *__restrict__ y, int T,
                             int64_t K) {
    pdl_enter();
    GRID_STRIDE(i, (int64_t)T * K) {
        const int64_t src = (int64_t)ids[i / K] * K + i % K;
        float v;
        if (WT == 0) v = ((const float *)W)[src];
        else if (WT == 1) v = __half2float(((const __half *)W)[src]);
        else v = __bfloat162float(((const __nv_bfloat16 *)W)[src]);
        y[i] = v;
    }
}

/* y[T][K] = rows ids[t] of a quantized matrix in the GEMV layout (gemv_unpack.h). One thread per unit of
 * 32 values (i = t * U + u): value v of a unit is lane byte v % 4 of lane word v / 4, times the unit's
 * scale, formed as the CPU dequantizers form it (a * lane + b; Q6_K (a * sc) * lane) so the result is
 * exact. */
template <enum qtype TYPE>
__global__ void k_get_rows_q(const uint8_t *__restrict__ qs, const uint8_t *__restrict__ hi,
                             const uint8_t *__restrict__ meta, const int32_t *__restrict__ ids, float *__restrict__ y,
                             int T, int64_t K) {
    pdl_enter();
    constexpr bool HAS_B = TYPE == QT_Q4_1 || TYPE == QT_Q4_K || TYPE == QT_Q5_K;
    constexpr int G = gemv_meta_group(TYPE) / 32, MB = gemv_meta_bytes(TYPE), QB = gemv_qs_bytes(TYPE);
    constexpr int HB = gemv_hi_bytes(TYPE);
    const int64_t U = K / 32;
    GRID_STRIDE(i, (int64_t)T * U) {
        const int64_t t = i / U, u = i % U, row = ids[t];
        const size_t unit = (size_t)(row * U + u);
        uint32_t q[8] = {0, 0, 0, 0, 0, 0, 0, 0}, h[2] = {0, 0}, v[8];
        for (int s = 0; s < QB / 4; s++) q[s] = ((const uint32_t *)(qs + unit * QB))[s];
        for (int s = 0; s < HB / 4; s++) h[s] = ((const uint32_t *)(hi + unit * HB))[s];
        gemv_unpack_unit(TYPE, q, h, v);
        const gemv_scale sc = gemv_unit_scale(TYPE, meta + ((size_t)row * (U / G) + u / G) * MB, (int)(u % G));
        float *out = y + t * K + u * 32;
        for (int e = 0; e < 32; e++) {
            const float lane = (float)(int8_t)(v[e / 4] >> (8 * (e % 4)));
            float w;
            if (TYPE == QT_Q6_K) w = __fmul_rn(__fmul_rn(sc.a, (float)(e < 16 ? sc.sc0 : sc.sc1)), lane);
            else if (HAS_B) w = __fadd_rn(__fmul_rn(sc.a, lane), sc.b);
            else w = __fmul_rn(sc.a, lane);
            out[e] = w;
        }
    }
}

/* rows of `width` values of a cache type from src[rows][width]: F16 / BF16 round to nearest even; Q8_0 one
 * warp per block of 32 (lane = value; d = amax / 127 as an f16, q = round(x / d) as the CPU's
 * q8_0_from_float). grid-stride over elements (F16 / BF16) or over blocks (Q8_0, 8 warps a block). */
template <int CT>
/* values [0, n) to dst, and (the pair form, dst2 not NULL) values [n, 2n) are src2's to dst2 */
__global__ void k_store_rows_f(void *__restrict__ dst, const float *__restrict__ src, int64_t n,
                               void *__restrict__ dst2, const float *__restrict__ src2) {
    pdl_enter();
    GRID_STRIDE(i, dst2 ? 2 * n : n) {
        void *d = dst;
        const float *sr = src;
        int64_t j = i;
        if (j >= n) d = dst2, sr = src2, j -= n;
        if (CT == 1) ((__half *)d)[j] = __float2half_rn(sr[j]);
        else ((__nv_bfloat16 *)d)[j] = __float2bfloat16_rn(sr[j]);
    }
}

__global__ void k_store_rows_q8_0(uint8_t *__restrict__ dst, const float *__restrict__ src, int64_t n_blocks) {
    pdl_enter();
    const int lane = threadIdx.x & 31;
    for (int64_t b = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; b < n_blocks;
         b += (int64_t)gridDim.x * blockDim.x / 32) {
        const float x = src[b * 32 + lane];
        const float amax = warp_max(fabsf(x));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        uint8_t *blk = dst + b * 34;
        blk[2 + lane] = (uint8_t)(int8_t)roundf(x * id);
        if (lane == 0) *(__half *)blk = __float2half_rn(d);
    }
}

/* ---------------------------------------------------------------- norms and gates */

/* x[R][D] in place: x * scale / sqrt(sum(x^2) + eps), one warp per row (8 rows a block) */
__global__ void k_l2_norm(float *__restrict__ x, int64_t R, int D, float eps, float scale, float *__restrict__ x2,
                          int64_t R2) {
    pdl_enter();
    int64_t r = blockIdx.x * 8 + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (r >= R + R2) return;
    if (r >= R) x = x2, r -= R; /* the pair form: rows past R are x2's */
    float *xr = x + r * D;
    float ss = 0.0f;
    for (int d = lane; d < D; d += 32) ss = fmaf(xr[d], xr[d], ss);
    ss = warp_sum(ss);
    const float inv = scale / sqrtf(ss + eps);
    for (int d = lane; d < D; d += 32) xr[d] *= inv;
}

/* y[T][N] += b[N] */
__global__ void k_add_bias(float *__restrict__ y, const float *__restrict__ b, int64_t T, int64_t N) {
    pdl_enter();
    GRID_STRIDE(i, T * N) y[i] += b[i % N];
}

__global__ void k_scale(float *__restrict__ y, float s, int64_t n) {
    pdl_enter();
    GRID_STRIDE(i, n) y[i] *= s;
}

/* g = ssm_a * softplus(alpha + dt_bias) (linear above 20, as torch), beta = sigmoid(beta), in place over
 * [T][Hv] */
__global__ void k_gdn_gates(float *__restrict__ g, float *__restrict__ beta, const float *__restrict__ A,
                            const float *__restrict__ dt, int64_t T, int Hv) {
    pdl_enter();
    GRID_STRIDE(i, T * Hv) {
        const int j = (int)(i % Hv);
        const float a = g[i] + dt[j];
        g[i] = A[j] * (a > 20.0f ? a : log1pf(expf(a)));
        beta[i] = 1.0f / (1.0f + expf(-beta[i]));
    }
}

/* Depthwise causal conv1d with state, then SiLU (ref_conv1d_silu). Thread (channel, chunk): the outputs of
 * tokens [chunk * TC, chunk * TC + TC) of one channel, each the same fmaf chain over the K taps as before (so
 * the bits do not depend on the chunking). TC >= K - 1: only chunk 0 reads the old state, and the same
 * thread then writes the new state (the last K-1 raw inputs of [state | x]) in ascending row order: row r
 * reads state row T + r (> r, not yet written) when the window still reaches into the old state. Before,
 * one thread a channel walked all T tokens: 332 us for a 512-token prompt of the 35B-A3B (8192 channels). */
#define CONV_TC 16
__global__ void k_conv1d_silu(const float *__restrict__ x, float *__restrict__ state, const float *__restrict__ w,
                              float *__restrict__ y, int T, int Ch, int K, int TC) {
    pdl_enter();
    const int ch = blockIdx.x * blockDim.x + threadIdx.x, t0 = (int)blockIdx.y * TC;
    if (ch >= Ch) return;
    const float *wc = w + (int64_t)ch * K;
    const int t1 = min(T, t0 + TC);
    for (int t = t0; t < t1; t++) {
        float acc = 0.0f;
        for (int j = 0; j < K; j++) {
            const int p = t - (K - 1) + j;
            const float in = p >= 0 ? x[(int64_t)p * Ch + ch] : state[(int64_t)(K - 1 + p) * Ch + ch];
            acc = fmaf(wc[j], in, acc);
        }
        y[(int64_t)t * Ch + ch] = acc / (1.0f + expf(-acc));
    }
    if (blockIdx.y) return;
    for (int r = 0; r < K - 1; r++) {
        const int p = T - (K - 1) + r;
        state[(int64_t)r * Ch + ch] = p >= 0 ? x[(int64_t)p * Ch + ch] : state[(int64_t)(K - 1 + p) * Ch + ch];
    }
}

/* ---------------------------------------------------------------- MoE */

/* y[t][C] = sum of wsel[t][j] * ys[t*K + j][C] in ascending expert id order (ids equal to an earlier one
 * are skipped, as the CPU's loop skips them; negative ids too); with in (not NULL), then y[t] +=
 * sigmoid(gate[t]) * in[t] (add_gated_rows); with res (not NULL), then res[t] += y[t] (add). Block (x, t): token t's
 * channels [x * blockDim.x * CPT, ...) (CPT channels a thread, strided by blockDim.x); the first K threads of
 * each block rank the token's slots in shared memory (a slot counts if it is its id's first and the id is
 * >= 0; its place is the number of counted slots with a lower id). K <= 64. A channel's sum is the same in
 * any grid: one block a token walking all C (its first form) made a decode step's combine a chain of C / 256
 * dependent loads (14 us of the 35B-A3B's MoE layer, each op alone on an H100). */
#define MOE_COMBINE_CPT 2 /* channels a thread */
__global__ void k_moe_combine(float *__restrict__ y, const float *__restrict__ ys, const int32_t *__restrict__ sel,
                              const float *__restrict__ wsel, int K, int C, const float *__restrict__ in,
                              const float *__restrict__ gate, float *__restrict__ res) {
    pdl_enter();
    __shared__ int ord[64], sid[64], first[64];
    __shared__ int n_ord;
    const int t = blockIdx.y, i = threadIdx.x;
    if (i < K) sid[i] = sel[(int64_t)t * K + i];
    __syncthreads();
    if (i < K) {
        int f = sid[i] >= 0;
        for (int q = 0; q < i; q++) f &= sid[q] != sid[i];
        first[i] = f;
    }
    __syncthreads();
    if (i < K && first[i]) {
        int rank = 0;
        for (int j = 0; j < K; j++) rank += first[j] && sid[j] < sid[i];
        ord[rank] = i;
    }
    if (i == 0) {
        int n = 0;
        for (int j = 0; j < K; j++) n += first[j];
        n_ord = n;
    }
    __syncthreads();
    const int c0 = (int)blockIdx.x * (int)blockDim.x * MOE_COMBINE_CPT;
    const int c1 = min(C, c0 + (int)blockDim.x * MOE_COMBINE_CPT);
    for (int c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
        float acc = 0.0f;
        for (int r = 0; r < n_ord; r++) {
            const int j = ord[r];
            acc += wsel[(int64_t)t * K + j] * ys[((int64_t)t * K + j) * C + c];
        }
        if (in) acc = acc + 1.0f / (1.0f + expf(-gate[t])) * in[(int64_t)t * C + c]; /* as k_add_gated_rows */
        y[(int64_t)t * C + c] = acc;
        if (res) res[(int64_t)t * C + c] = __fadd_rn(res[(int64_t)t * C + c], acc);
    }
}

/* y[t][C] += sigmoid(gate[t]) * in[t][C] */
/* y += sigmoid(gate) * in; res (not NULL) += y, rounded as k_add */
__global__ void k_add_gated_rows(float *__restrict__ y, const float *__restrict__ in, const float *__restrict__ gate,
                                 float *__restrict__ res, int64_t T, int64_t C) {
    pdl_enter();
    GRID_STRIDE(i, T * C) {
        const float v = y[i] + 1.0f / (1.0f + expf(-gate[i / C])) * in[i];
        y[i] = v;
        if (res) res[i] = __fadd_rn(res[i], v);
    }
}

/* ---------------------------------------------------------------- launchers */

extern "C" int cuda_copy_cols(float *dst, const float *src, int64_t rows, int64_t src_stride, int64_t off, int64_t n,
                              cudaStream_t s) {
    if (!dst || !src || rows < 0 || n < 0 || off < 0 || off + n > src_stride) return CUDA_KERR_ARGS;
    if (!rows || !n) return CUDA_KERR_OK;
    kl(k_copy_cols, ew_grid(rows * n), EW_THREADS, 0, s, dst, src, rows, src_stride, off, n);
    return launch_status();
}

extern "C" int cuda_set_cols(float *dst, const float *src, int64_t rows, int64_t dst_stride, int64_t off, int64_t n,
                             cudaStream_t s) {
    if (!dst || !src || rows < 0 || n < 0 || off < 0 || off + n > dst_stride) return CUDA_KERR_ARGS;
    if (!rows || !n) return CUDA_KERR_OK;
    kl(k_set_cols, ew_grid(rows * n), EW_THREADS, 0, s, dst, src, rows, dst_stride, off, n);
    return launch_status();
}

extern "C" int cuda_gather_rows(float *dst, const float *src, const int32_t *idx, int n, int C, cudaStream_t s) {
    if (!dst || !src || !idx || n < 0 || C < 1) return CUDA_KERR_ARGS;
    if (!n) return CUDA_KERR_OK;
    kl(k_gather_rows, ew_grid((int64_t)n * C), EW_THREADS, 0, s, dst, src, idx, n, C);
    return launch_status();
}

static __device__ __forceinline__ uint64_t global_ns(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void k_spin(uint64_t ns) {
    pdl_enter();
    const uint64_t t0 = global_ns();
    while (global_ns() - t0 < ns) {
    }
}

/* cuda_common.cuh: on for devices of compute capability 9.0 and later unless LLM170_CUDA_PDL=0 (an A/B
 * switch for timing); decided once per device, the first time a kernel is launched on it. */
int cuda_pdl_on(void) {
    enum { MAX_DEV = 64 };
    static int state[MAX_DEV]; /* 0 not yet decided, 1 off, 2 on */
    int d = 0;
    if (cudaGetDevice(&d) != cudaSuccess || d < 0 || d >= MAX_DEV) return 0;
    int v = __atomic_load_n(&state[d], __ATOMIC_RELAXED);
    if (!v) {
        int major = 0;
        const char *e = getenv("LLM170_CUDA_PDL");
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess) major = 0;
        v = major >= 9 && !(e && e[0] == '0') ? 2 : 1;
        __atomic_store_n(&state[d], v, __ATOMIC_RELAXED);
    }
    return v == 2;
}

extern "C" int cuda_spin_us(int us, cudaStream_t s) {
    if (us < 0) return CUDA_KERR_ARGS;
    kl(k_spin, 1, 1, 0, s, (uint64_t)us * 1000u);
    return launch_status();
}

extern "C" int cuda_get_rows_f(int type, const void *W, const int32_t *ids, float *y, int T, int64_t K,
                               cudaStream_t s) {
    if (!W || !ids || !y || T < 0 || K < 1) return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    const unsigned g = ew_grid((int64_t)T * K);
    switch (type) {
    case QT_F32: kl(k_get_rows_f<0>, g, EW_THREADS, 0, s, W, ids, y, T, K); break;
    case QT_F16: kl(k_get_rows_f<1>, g, EW_THREADS, 0, s, W, ids, y, T, K); break;
    case QT_BF16: kl(k_get_rows_f<2>, g, EW_THREADS, 0, s, W, ids, y, T, K); break;
    default: return CUDA_KERR_UNSUPPORTED;
    }
    return launch_status();
}

extern "C" int cuda_get_rows_q(const cuda_qmat *W, const int32_t *ids, float *y, int T, cudaStream_t s) {
    if (!W || !W->qs || !W->meta || !ids || !y || T < 0 || W->K % gemv_meta_group(W->type) ||
        (gemv_hi_bytes(W->type) && !W->hi))
        return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    const unsigned g = ew_grid((int64_t)T * (W->K / 32));
    const uint8_t *qs = (const uint8_t *)W->qs, *hi = (const uint8_t *)W->hi, *meta = (const uint8_t *)W->meta;
#define GR(TY) kl(k_get_rows_q<TY>, g, EW_THREADS, 0, s, qs, hi, meta, ids, y, T, W->K)
    switch (W->type) {
    case QT_Q4_0: GR(QT_Q4_0); break;
    case QT_Q4_1: GR(QT_Q4_1); break;
    case QT_Q5_0: GR(QT_Q5_0); break;
    case QT_Q8_0: GR(QT_Q8_0); break;
    case QT_Q4_K: GR(QT_Q4_K); break;
    case QT_Q5_K: GR(QT_Q5_K); break;
    case QT_Q6_K: GR(QT_Q6_K); break;
    default: return CUDA_KERR_UNSUPPORTED;
    }
#undef GR
    return launch_status();
}

extern "C" int cuda_store_rows(void *dst, int type, const float *src, int64_t rows, int64_t width, cudaStream_t s) {
    if (!dst || !src || rows < 0 || width < 1) return CUDA_KERR_ARGS;
    const int64_t n = rows * width;
    if (!n) return CUDA_KERR_OK;
    switch (type) {
    case QT_F32:
        return cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)n, cudaMemcpyDeviceToDevice, s) == cudaSuccess
                   ? CUDA_KERR_OK
                   : CUDA_KERR_LAUNCH;
    case QT_F16: kl(k_store_rows_f<1>, ew_grid(n), EW_THREADS, 0, s, dst, src, n, nullptr, nullptr); break;
    case QT_BF16: kl(k_store_rows_f<2>, ew_grid(n), EW_THREADS, 0, s, dst, src, n, nullptr, nullptr); break;
    case QT_Q8_0:
        if (width % 32) return CUDA_KERR_ARGS; /* whole blocks per row: rows are then back to back */
        kl(k_store_rows_q8_0, ew_grid(n), EW_THREADS, 0, s, (uint8_t *)dst, src, n / 32);
        break;
    default: return CUDA_KERR_UNSUPPORTED;
    }
    return launch_status();
}

extern "C" int cuda_store_rows2(void *dst, const float *src, void *dst2, const float *src2, int type, int64_t rows,
                                int64_t width, cudaStream_t s) {
    if (!dst || !src || !dst2 || !src2 || rows < 0 || width < 1) return CUDA_KERR_ARGS;
    const int64_t n = rows * width;
    if (!n) return CUDA_KERR_OK;
    switch (type) {
    case QT_F16: kl(k_store_rows_f<1>, ew_grid(2 * n), EW_THREADS, 0, s, dst, src, n, dst2, src2); break;
    case QT_BF16: kl(k_store_rows_f<2>, ew_grid(2 * n), EW_THREADS, 0, s, dst, src, n, dst2, src2); break;
    default: return CUDA_KERR_UNSUPPORTED;
    }
    return launch_status();
}

extern "C" int cuda_l2_norm(float *x, int64_t R, int D, float eps, float scale, cudaStream_t s) {
    if (!x || R < 0 || D < 1 || (R + 7) / 8 > 0x7fffffff) return CUDA_KERR_ARGS;
    if (!R) return CUDA_KERR_OK;
    kl(k_l2_norm, (unsigned)((R + 7) / 8), 256, 0, s, x, R, D, eps, scale, nullptr, 0);
    return launch_status();
}

extern "C" int cuda_l2_norm2(float *x, int64_t R, float *x2, int64_t R2, int D, float eps, float scale, cudaStream_t s) {
    if (!x || !x2 || R < 0 || R2 < 0 || D < 1 || (R + R2 + 7) / 8 > 0x7fffffff) return CUDA_KERR_ARGS;
    if (!R && !R2) return CUDA_KERR_OK;
    kl(k_l2_norm, (unsigned)((R + R2 + 7) / 8), 256, 0, s, x, R, D, eps, scale, x2, R2);
    return launch_status();
}

extern "C" int cuda_add_bias(float *y, const float *b, int64_t T, int64_t N, cudaStream_t s) {
    if (!y || !b || T < 0 || N < 1) return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    kl(k_add_bias, ew_grid(T * N), EW_THREADS, 0, s, y, b, T, N);
    return launch_status();
}

extern "C" int cuda_scale(float *y, float v, int64_t n, cudaStream_t s) {
    if (!y || n < 0) return CUDA_KERR_ARGS;
    if (!n) return CUDA_KERR_OK;
    kl(k_scale, ew_grid(n), EW_THREADS, 0, s, y, v, n);
    return launch_status();
}

extern "C" int cuda_gdn_gates(float *g, float *beta, const float *A, const float *dt, int64_t T, int Hv,
                              cudaStream_t s) {
    if (!g || !beta || !A || !dt || T < 0 || Hv < 1) return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    kl(k_gdn_gates, ew_grid(T * Hv), EW_THREADS, 0, s, g, beta, A, dt, T, Hv);
    return launch_status();
}

extern "C" int cuda_conv1d_silu(const float *x, float *state, const float *w, float *y, int T, int Ch, int K,
                                cudaStream_t s) {
    if (!x || !state || !w || !y || T < 0 || Ch < 1 || K < 2) return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    const int TC = K - 1 > CONV_TC ? K - 1 : CONV_TC, chunks = (T + TC - 1) / TC;
    if (chunks > 65535) return CUDA_KERR_ARGS;
    kl(k_conv1d_silu, dim3((Ch + 127) / 128, chunks), 128, 0, s, x, state, w, y, T, Ch, K, TC);
    return launch_status();
}

extern "C" int cuda_moe_combine_gated(float *y, const float *ys, const int32_t *sel, const float *wsel, int T, int K,
                                      int C, const float *in, const float *gate, float *res, cudaStream_t s) {
    if (!y || !ys || !sel || !wsel || T < 0 || K < 1 || K > 64 || C < 1 || !in != !gate || (res && !in))
        return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    int nt = C >= 256 ? 256 : 32 * ((C + 31) / 32);
    if (nt < K) nt = 64; /* a thread per slot ranks them */
    const int per = nt * MOE_COMBINE_CPT;
    for (int t0 = 0; t0 < T; t0 += 65535) { /* grid y: at most 65535 tokens a launch */
        const size_t o = (size_t)t0 * C, ok = (size_t)t0 * K;
        kl(k_moe_combine, dim3((unsigned)((C + per - 1) / per), (unsigned)(T - t0 < 65535 ? T - t0 : 65535)), nt, 0, s,
           y + o, ys + ok * C, sel + ok, wsel + ok, K, C, in ? in + o : nullptr, gate ? gate + t0 : nullptr,
           res ? res + o : nullptr);
        if (int rc = launch_status()) return rc;
    }
    return CUDA_KERR_OK;
}

extern "C" int cuda_moe_combine(float *y, const float *ys, const int32_t *sel, const float *wsel, int T, int K, int C,
                                cudaStream_t s) {
    return cuda_moe_combine_gated(y, ys, sel, wsel, T, K, C, nullptr, nullptr, nullptr, s);
}

extern "C" int cuda_add_gated_rows(float *y, const float *in, const float *gate, int64_t T, int64_t C,
                                   cudaStream_t s) {
    if (!y || !in || !gate || T < 0 || C < 1) return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    kl(k_add_gated_rows, ew_grid(T * C), EW_THREADS, 0, s, y, in, gate, nullptr, T, C);
    return launch_status();
}

extern "C" int cuda_add_gated_rows_res(float *y, const float *in, const float *gate, float *res, int64_t T, int64_t C,
                                       cudaStream_t s) {
    if (!y || !in || !gate || !res || T < 0 || C < 1) return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    kl(k_add_gated_rows, ew_grid(T * C), EW_THREADS, 0, s, y, in, gate, res, T, C);
    return launch_status();
}
