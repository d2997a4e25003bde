/* matmul_f: y = x . W^T for weights kept as floats (F32, F16, BF16: norms' neighbours, small projections,
 * f16 / f32 files), with f32 activations and f32 accumulation (the CPU pairs F16 / BF16 weights with
 * activations rounded to f16 / bf16; keeping them f32 here only lowers the error). Also the grouped expert
 * form: every routed slot (t, j) multiplies its own expert's matrix, the expert id read on the device.
 *
 * Grid: blockIdx.x covers 4 output rows n (16 where T > 1 without experts; one warp each, lanes split K);
 * blockIdx.y is a group of 8 token rows (plain form) or one routed slot (expert form: expert sel[slot],
 * activation row slot / xdiv, output row slot). A warp reads its weight row once per 8 tokens. The plain form also takes up to
 * CUDA_MATMUL_F_GROUP matrices of one type and K over the same x in one launch (an MoE's router and its
 * shared expert's gate: two launches of a few us each became one), member i's blocks after member i - 1's;
 * a row's operations do not depend on its member or the others, so each member's y is bit for bit its own
 * launch's.
 * Where K % 4 == 0 and the rows are aligned (every real shape), the V4 form: a lane loads 4 values at once
 * (one 16-byte load of F32, 8 bytes of F16 / BF16) and 4 such loads are in flight: a lane's loads are then
 * not a chain of K / 32 dependent round trips (the MoE router, N = 256 and K = 2048 at T = 1, took 22 us
 * with one value a load; any N: the shared expert's gate is N = 1). Either form sums a row's products in
 * the same order at every T, so a token's result does not depend on what shares its pass. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "backends/cuda/kernels/cuda_common.cuh"

template <int WT>
static __device__ __forceinline__ float w_at(const void *W, int64_t i) {
    if (WT == QT_F32) return ((const float *)W)[i];
    if (WT == QT_F16) return __half2float(((const __half *)W)[i]);
    return __bfloat162float(((const __nv_bfloat16 *)W)[i]);
}

/* w[0..3] = W[i .. i + 3] (i % 4 == 0, the row aligned as cuda_matmul_f checks) */
template <int WT>
static __device__ __forceinline__ void w_at4(const void *W, int64_t i, float *w) {
    if (WT == QT_F32) {
        const float4 v = __ldg((const float4 *)((const float *)W + i));
        w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
        return;
    }
    const uint2 v = __ldg((const uint2 *)((const uint16_t *)W + i));
    const uint32_t u[2] = {v.x, v.y};
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const unsigned short lo = (unsigned short)(u[h] & 0xffffu), hi = (unsigned short)(u[h] >> 16);
        if (WT == QT_F16) w[2 * h] = __half2float(__ushort_as_half(lo)), w[2 * h + 1] = __half2float(__ushort_as_half(hi));
        else w[2 * h] = __uint_as_float((uint32_t)lo << 16), w[2 * h + 1] = __uint_as_float((uint32_t)hi << 16);
    }
}

/* acc += w[0..3] . x, one fmaf at a time in index order (every V4 form sums in this order) */
static __device__ __forceinline__ float fma4(const float *w, float4 x, float acc) {
    acc = fmaf(w[0], x.x, acc);
    acc = fmaf(w[1], x.y, acc);
    acc = fmaf(w[2], x.z, acc);
    return fmaf(w[3], x.w, acc);
}

/* V4: 4 values a load (K % 4 == 0, rows aligned): lane l takes values [4 l, 4 l + 4) + 128 i; else one
 * value a load, lane l taking values l + 32 i */
/* the matrices of one launch: member i has N[i] rows, its blocks start at b[i] (b[0] = 0, b[n] = the grid's x) */
struct mf_mats {
    const void *W[CUDA_MATMUL_F_GROUP];
    float *y[CUDA_MATMUL_F_GROUP];
    int N[CUDA_MATMUL_F_GROUP];
    unsigned b[CUDA_MATMUL_F_GROUP + 1];
};

template <int WT, bool V4, int MAXT, int RPB>
__global__ void __launch_bounds__(32 * RPB)
    k_matmul_f(const mf_mats P, const float *__restrict__ x, int K, int T, const int32_t *__restrict__ sel, int E,
               int xdiv, int slot0) {
    pdl_enter();
    /* this block's member (selects, not an index into the parameters, which would copy them to local memory) */
    const void *__restrict__ W = P.W[0];
    float *__restrict__ y = P.y[0];
    int N = P.N[0];
    unsigned b0 = 0;
#pragma unroll
    for (int i = 1; i < CUDA_MATMUL_F_GROUP; i++)
        if (blockIdx.x >= P.b[i]) W = P.W[i], y = P.y[i], N = P.N[i], b0 = P.b[i];
    const int lane = threadIdx.x & 31, n = (int)(blockIdx.x - b0) * RPB + (threadIdx.x >> 5);
    if (n >= N) return;
    int64_t wrow = n, xr0, yr0;
    int nt;
    if (sel) {
        const int slot = slot0 + (int)blockIdx.y, e = sel[slot];
        if (e < 0 || e >= E) return;
        wrow += (int64_t)e * N;
        xr0 = slot / xdiv, yr0 = slot, nt = 1;
    } else {
        xr0 = yr0 = (int64_t)blockIdx.y * 8;
        nt = min(MAXT, T - (int)xr0);
    }
    float acc[MAXT];
#pragma unroll
    for (int j = 0; j < MAXT; j++) acc[j] = 0.0f;
    const float *xb = x + xr0 * K;
    if constexpr (V4 && MAXT == 1) {
        /* one token: UNR iterations' loads issued before their products (the same products in the same
         * order as below, so the same bits): a lane's K / 128 loads are then ~K / (128 UNR) round trips */
        constexpr int UNR = 8;
        int kk = lane * 4;
        for (; kk + 128 * (UNR - 1) < K; kk += 128 * UNR) {
            float w[UNR][4];
            float4 xv[UNR];
#pragma unroll
            for (int u = 0; u < UNR; u++) {
                w_at4<WT>(W, wrow * K + kk + 128 * u, w[u]);
                xv[u] = __ldg((const float4 *)(xb + kk + 128 * u));
            }
#pragma unroll
            for (int u = 0; u < UNR; u++) acc[0] = fma4(w[u], xv[u], acc[0]);
        }
        for (; kk < K; kk += 128) {
            float w[4];
            w_at4<WT>(W, wrow * K + kk, w);
            acc[0] = fma4(w, __ldg((const float4 *)(xb + kk)), acc[0]);
        }
    } else if constexpr (V4) {
#pragma unroll 4
        for (int kk = lane * 4; kk < K; kk += 128) {
            float w[4];
            w_at4<WT>(W, wrow * K + kk, w);
#pragma unroll
            for (int j = 0; j < MAXT; j++)
                if (j < nt) acc[j] = fma4(w, __ldg((const float4 *)(xb + (int64_t)j * K + kk)), acc[j]);
        }
    } else {
        for (int kk = lane; kk < K; kk += 32) {
            const float w = w_at<WT>(W, wrow * K + kk);
#pragma unroll
            for (int j = 0; j < MAXT; j++)
                if (j < nt) acc[j] = fmaf(w, xb[(int64_t)j * K + kk], acc[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < MAXT; j++) {
        if (j >= nt) break;
        const float r = warp_sum(acc[j]);
        if (lane == 0) y[(yr0 + j) * N + n] = r;
    }
}

/* n members (1 with sel: the expert form), all of K columns */
template <int WT>
static void launch_f(const void *const *W, float *const *y, const int *N, int n, const float *x, int K, int T,
                     const int32_t *sel, int E, int xdiv, cudaStream_t s) {
    /* rows a block (a warp each): 4, or 16 where blocks of 8 tokens run (T > 1, not the expert form), whose
     * warps then share each token's x through L1 among 16 rows instead of 4 (the MoE router at 512 tokens
     * read ~270 MB of x from L2 at 4 rows a block); a row's products and their order are the warp's alone,
     * so the bits do not depend on it */
    const int rpb = T > 1 && !sel ? 16 : 4;
    mf_mats P = {};
    bool wal = true; /* every member's rows on the load's boundary */
    for (int i = 0; i < n; i++) {
        P.W[i] = W[i], P.y[i] = y[i], P.N[i] = N[i];
        P.b[i + 1] = P.b[i] + (unsigned)((N[i] + rpb - 1) / rpb);
        wal = wal && (uintptr_t)W[i] % (WT == QT_F32 ? 16 : 8) == 0;
    }
    for (int i = n + 1; i <= CUDA_MATMUL_F_GROUP; i++) P.b[i] = P.b[n]; /* no block reaches a missing member */
    const unsigned gx = P.b[n];
    /* 4 values a load: K % 4 == 0 keeps every row start aligned if W and x are (16 bytes for the f32 loads,
     * 8 for the f16 / bf16 weight loads) */
    const bool v4 = K % 4 == 0 && wal && (uintptr_t)x % 16 == 0;
    if (!sel && T > 1) {
        auto kern = v4 ? k_matmul_f<WT, true, 8, 16> : k_matmul_f<WT, false, 8, 16>;
        kl(kern, dim3(gx, (unsigned)((T + 7) / 8)), 32 * 16, 0, s, P, x, K, T, nullptr, E, 1, 0);
        return;
    }
    /* one token a block (T = 1, or the expert form): the unrolled one-token kernel where v4 */
    auto kern = v4 ? k_matmul_f<WT, true, 1, 4> : k_matmul_f<WT, false, 8, 4>;
    if (!sel) {
        kl(kern, dim3(gx, (unsigned)((T + 7) / 8)), 128, 0, s, P, x, K, T, nullptr, E, 1, 0);
        return;
    }
    for (int s0 = 0; s0 < T; s0 += 65535) { /* T routed slots, at most 65535 per launch (grid y) */
        const int m = T - s0 < 65535 ? T - s0 : 65535;
        kl(kern, dim3(gx, (unsigned)m), 128, 0, s, P, x, K, T, sel, E, xdiv, s0);
    }
}

static int run_f(int type, const void *const *W, float *const *y, const int *N, int n, const float *x, int K, int T,
                 const int32_t *sel, int E, int xdiv, cudaStream_t s) {
    int64_t blocks = 0;
    for (int i = 0; i < n; i++) {
        if (!W[i] || !y[i] || N[i] < 1) return CUDA_KERR_ARGS;
        blocks += (N[i] + 3) / 4;
    }
    if (!x || K < 1 || T < 0 || (sel && (E < 1 || xdiv < 1 || n != 1)) || (!sel && (T + 7) / 8 > 65535) ||
        blocks > 0x7fffffff)
        return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    switch (type) {
    case QT_F32: launch_f<QT_F32>(W, y, N, n, x, K, T, sel, E, xdiv, s); break;
    case QT_F16: launch_f<QT_F16>(W, y, N, n, x, K, T, sel, E, xdiv, s); break;
    case QT_BF16: launch_f<QT_BF16>(W, y, N, n, x, K, T, sel, E, xdiv, s); break;
    default: return CUDA_KERR_UNSUPPORTED;
    }
    return launch_status();
}

/* plain: y[T][N] = x[T][K] . W[N][K]^T. Experts (sel != NULL): W is [E][N][K], T is the number of routed
 * slots, y[slot][N] = x[slot / xdiv] . W[sel[slot]]^T (slots with an expert id outside [0, E) are left
 * untouched). */
extern "C" int cuda_matmul_f(int type, const void *W, const float *x, float *y, int N, int K, int T,
                             const int32_t *sel, int E, int xdiv, cudaStream_t s) {
    return run_f(type, &W, &y, &N, 1, x, K, T, sel, E, xdiv, s);
}

/* n (1..CUDA_MATMUL_F_GROUP) matrices of one type and K over the same x[T][K]: y[i][T][N[i]] as cuda_matmul_f over
 * W[i] alone, bit for bit, in one launch */
extern "C" int cuda_matmul_f_group(int type, const void *const *W, float *const *y, const int *N, int n,
                                   const float *x, int K, int T, cudaStream_t s) {
    if (n < 1 || n > CUDA_MATMUL_F_GROUP || !W || !y || !N) return CUDA_KERR_ARGS;
    return run_f(type, W, y, N, n, x, K, T, NULL, 1, 1, s);
}
