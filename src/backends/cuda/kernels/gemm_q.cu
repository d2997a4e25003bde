/* gemm_q: prefill matrix products on tensor cores, Y[T][N] = X[T][K] . W[N][K]^T.
 *
 * X: activations as bf16 (cuda_f32_to_bf16 makes them from f32), row-major [T][K].
 * W: a weight matrix of N rows of K values, either in its GGUF block layout (Q4_0, Q4_1, Q5_0, Q8_0,
 *    Q4_K, Q5_K, Q6_K) or already bf16 [N][K]. Y: f32 [T][N].
 *
 * Why this shape: prefill is compute-bound, so the weights are dequantized to bf16 tiles in shared memory
 * and fed to mma.sync m16n8k16 (bf16 x bf16 -> f32), with every scale folded in before the MMA, so the
 * accumulators run over all of K uninterrupted. (The alternative, int8 MMA on q8_1 activations, must
 * rescale the int32 results every 16-32 values of K.) The dequantization is the CPU's to_float, the same
 * float operations in the same order without FMA contraction, then rounded to bf16: a weight reaches the
 * tensor core as bf16(to_float(w)) exactly (checked bit for bit through cuda_dequant_bf16).
 *
 * Tiling (gemm_q_kernel): a block of 256 threads computes a 128 (tokens) x 128 (weight rows) tile of Y,
 * stepping through K 64 values at a time; 8 warps as 2 (M) x 4 (N), each warp 64 x 32 = 4 x 4 mma tiles.
 * A cp.async pipeline of STAGES steps keeps X tiles (bf16, swizzled) and the raw weight bytes of each row's
 * k-range in flight; each step the block dequantizes the raw bytes of step k+1 into a bf16 tile (double
 * buffered) while its warps run the MMAs of step k, one barrier per step. For bf16 weights the weight
 * tile is copied like X and used directly (the two-pass path: cuda_dequant_bf16, then cuda_gemm_bf16).
 *
 * Raw weight bytes: a step covers values [k0, k0 + 64) of each row: the whole 256-value super-block that
 * holds them for k-quants, two 32-value blocks otherwise. Blocks are not 16-byte aligned in general (Q6_K
 * 210 bytes, Q8_0 34), so each row copies the 16-byte-aligned granules around its span (NCH of them) and
 * remembers the misalignment; granules past the end of W are zero-filled (cp.async source size), so W
 * needs only 16-byte alignment and no padding. Rows past N read zeros and are not stored. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "backends/cuda/kernels.h"
#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/prefill_mma.cuh"
#include "quant/qtype.h"

#define GQ_BN 128
#define GQ_BK 64
#define GQ_THREADS 256

/* ---- the block formats, on the device: traits and one 8-value dequantizer per type ---- */

template <int QT> struct gq_type;
template <> struct gq_type<QT_Q4_0> { enum { QK = 32, BS = 18 }; };
template <> struct gq_type<QT_Q4_1> { enum { QK = 32, BS = 20 }; };
template <> struct gq_type<QT_Q5_0> { enum { QK = 32, BS = 22 }; };
template <> struct gq_type<QT_Q8_0> { enum { QK = 32, BS = 34 }; };
template <> struct gq_type<QT_Q4_K> { enum { QK = 256, BS = 144 }; };
template <> struct gq_type<QT_Q5_K> { enum { QK = 256, BS = 176 }; };
template <> struct gq_type<QT_Q6_K> { enum { QK = 256, BS = 210 }; };
template <> struct gq_type<QT_BF16> { enum { QK = 1, BS = 2 }; }; /* the two-pass path's dequantized rows */

/* bytes of one row's span per k step, and the 16-byte granules that always cover it whatever its
 * alignment (one more than the span needs when aligned) */
template <int QT> struct gq_span {
    enum {
        BYTES = gq_type<QT>::QK >= GQ_BK ? gq_type<QT>::BS : gq_type<QT>::BS * (GQ_BK / gq_type<QT>::QK),
        NCH = (BYTES + 15) / 16 + 1
    };
};

__device__ __forceinline__ float gq_half(const uint8_t *p) {
    return __half2float(__ushort_as_half((unsigned short)(p[0] | (p[1] << 8))));
}

/* Q4_K / Q5_K 6-bit scale and min of sub-block j (as quant_k4_scale_min) */
__device__ __forceinline__ void gq_k4_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 2) & 0x30);
        *m = (s[j + 4] >> 4) | ((s[j] >> 2) & 0x30);
    }
}

/* (float)(q - off) for 0 <= q < 2^23 without an I2F (a quarter-rate conversion on sm_80/sm_90): q sits in
 * the mantissa of 2^23, and subtracting 2^23 + off is exact (both are integers in [2^23, 2^24)) */
__device__ __forceinline__ float gq_i2f(uint32_t q, float off) {
    return __fsub_rn(__uint_as_float(0x4B000000u | q), 8388608.0f + off);
}

/* the 8 bytes at p (any alignment) as two words, from three aligned loads and funnel shifts. Reads up to 3
 * bytes past p + 8 when p is unaligned: callers keep p + 8 at least 3 bytes before the end of the block
 * (true of every use below: k-quant quants are followed by more of the block or end 16-byte aligned). */
__device__ __forceinline__ void gq_load8(const uint8_t *p, uint32_t w[2]) {
    const uint32_t *a = (const uint32_t *)((uintptr_t)p & ~(uintptr_t)3);
    const uint32_t sh = ((uint32_t)(uintptr_t)p & 3) * 8;
    const uint32_t w0 = a[0], w1 = a[1], w2 = sh ? a[2] : 0u;
    w[0] = __funnelshift_r(w0, w1, sh);
    w[1] = __funnelshift_r(w1, w2, sh);
}

/* v[0..8) = to_float of values p..p+7 (p a multiple of 8) of the block at b; _rn intrinsics keep
 * nvcc from contracting into FMAs, so the floats equal the CPU dequantizer's */
template <int QT> __device__ __forceinline__ void gq_dequant8(const uint8_t *b, int p, float v[8]);

template <> __device__ __forceinline__ void gq_dequant8<QT_Q4_0>(const uint8_t *b, int p, float v[8]) {
    const float d = gq_half(b);
    const uint8_t *qs = b + 2;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        uint32_t q = p < 16 ? (qs[p + i] & 15) : (qs[p - 16 + i] >> 4);
        v[i] = __fmul_rn(d, gq_i2f(q, 8.0f));
    }
}
template <> __device__ __forceinline__ void gq_dequant8<QT_Q4_1>(const uint8_t *b, int p, float v[8]) {
    const float d = gq_half(b), m = gq_half(b + 2);
    const uint8_t *qs = b + 4;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        uint32_t q = p < 16 ? (qs[p + i] & 15) : (qs[p - 16 + i] >> 4);
        v[i] = __fadd_rn(__fmul_rn(d, gq_i2f(q, 0.0f)), m);
    }
}
template <> __device__ __forceinline__ void gq_dequant8<QT_Q5_0>(const uint8_t *b, int p, float v[8]) {
    const float d = gq_half(b);
    const uint32_t qh = (uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 | (uint32_t)b[5] << 24;
    const uint8_t *qs = b + 6;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int j = p + i;
        uint32_t lo = j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4);
        v[i] = __fmul_rn(d, gq_i2f(lo | ((qh >> j) & 1) << 4, 16.0f));
    }
}
template <> __device__ __forceinline__ void gq_dequant8<QT_Q8_0>(const uint8_t *b, int p, float v[8]) {
    const float d = gq_half(b);
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = __fmul_rn(gq_i2f(b[2 + p + i] ^ 0x80u, 128.0f), d);
}
/* sub-block j's d * sc and dmin * m of a Q4_K / Q5_K block (d, dmin, scales at its start) */
__device__ __forceinline__ void gq_k4_dl_ml(const uint8_t *b, int j, float *dl, float *ml) {
    int sc, m;
    gq_k4_scale_min(b + 4, j, &sc, &m);
    *dl = __fmul_rn(gq_half(b), (float)sc);
    *ml = __fmul_rn(gq_half(b + 2), (float)m);
}

template <> __device__ __forceinline__ void gq_dequant8<QT_Q4_K>(const uint8_t *b, int p, float v[8]) {
    const int j = p / 32;
    float dl, ml;
    gq_k4_dl_ml(b, j, &dl, &ml);
    uint32_t w[2];
    gq_load8(b + 16 + 32 * (j / 2) + p % 32, w);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint32_t q = (w[i / 4] >> (8 * (i % 4) + 4 * (j % 2))) & 15;
        v[i] = __fsub_rn(__fmul_rn(dl, gq_i2f(q, 0.0f)), ml);
    }
}
template <> __device__ __forceinline__ void gq_dequant8<QT_Q5_K>(const uint8_t *b, int p, float v[8]) {
    const int j = p / 32;
    float dl, ml;
    gq_k4_dl_ml(b, j, &dl, &ml);
    uint32_t h[2], w[2];
    gq_load8(b + 16 + p % 32, h);
    gq_load8(b + 48 + 32 * (j / 2) + p % 32, w);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint32_t q = ((w[i / 4] >> (8 * (i % 4) + 4 * (j % 2))) & 15) | ((h[i / 4] >> (8 * (i % 4) + j)) & 1) << 4;
        v[i] = __fsub_rn(__fmul_rn(dl, gq_i2f(q, 0.0f)), ml);
    }
}
template <> __device__ __forceinline__ void gq_dequant8<QT_Q6_K>(const uint8_t *b, int p, float v[8]) {
    const float d = gq_half(b + 208);
    const float dl = __fmul_rn(d, (float)(int8_t)b[192 + p / 16]);
    const int h = p / 128, r = p % 128;
    uint32_t l[2], hb[2];
    gq_load8(b + 64 * h + r % 64, l);
    gq_load8(b + 128 + 32 * h + r % 32, hb);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint32_t q = ((l[i / 4] >> (8 * (i % 4) + 4 * (r / 64))) & 15) | ((hb[i / 4] >> (8 * (i % 4) + 2 * (r / 32))) & 3) << 4;
        v[i] = __fmul_rn(dl, gq_i2f(q, 32.0f));
    }
}

__device__ __forceinline__ uint4 gq_pack_bf16(const float v[8]) {
    uint4 o;
    uint32_t *w = (uint32_t *)&o;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
        w[i] = *(uint32_t *)&h;
    }
    return o;
}

/* the block holding values [k0 + 8c, k0 + 8c + 8) of a row and the index of the first of them in it,
 * given the start of the row's span for step k0 (the block holding k0) */
template <int QT> __device__ __forceinline__ const uint8_t *gq_chunk_block(const uint8_t *span, int k0, int c, int *p) {
    if (gq_type<QT>::QK >= GQ_BK) {
        *p = k0 % gq_type<QT>::QK + 8 * c;
        return span;
    }
    *p = (8 * c) % gq_type<QT>::QK;
    return span + (8 * c / gq_type<QT>::QK) * gq_type<QT>::BS;
}

/* ---- the two-pass path's dequantizer: Wd[N][K] bf16 = bf16(to_float(W)) ----
 * grid (ceil(K/64 / 32), N), 256 threads: thread (y, x) of a block does values 8x..8x+7 of the 64-value
 * step 32 * blockIdx.x + y of row blockIdx.y (8 consecutive threads write 128 consecutive bytes). */

template <int QT> __global__ void dequant_bf16_kernel(const uint8_t *__restrict__ W, __nv_bfloat16 *__restrict__ Wd, int K) {
    pdl_enter();
    const int n = blockIdx.y, k0 = (blockIdx.x * 32 + threadIdx.y) * GQ_BK, c = threadIdx.x;
    if (k0 >= K) return;
    const size_t row_bytes = (size_t)(K / gq_type<QT>::QK) * gq_type<QT>::BS;
    const uint8_t *span = W + n * row_bytes + (size_t)(k0 / gq_type<QT>::QK) * gq_type<QT>::BS;
    int p;
    const uint8_t *blk = gq_chunk_block<QT>(span, k0, c, &p);
    float v[8];
    gq_dequant8<QT>(blk, p, v);
    *(uint4 *)(Wd + (size_t)n * K + k0 + 8 * c) = gq_pack_bf16(v);
}

/* ---- the GEMM ---- */

/* the grouped expert form's table (cuda_moe_group): g = [list n_slots][tiles][3 x tiles], each tile (expert,
 * first, count) */
struct gq_moe {
    const int32_t *g;
    int n_slots, xdiv;
};

/* QT = QT_BF16: W is bf16 [N][K], copied like X. Otherwise W is in QT's block layout. */
template <int QT, int ST, int BM> struct gq_smem {
    enum {
        A_STAGE = BM * GQ_BK * 2,
        RAW_ROW = QT == QT_BF16 ? 0 : gq_span<QT>::NCH * 16,
        B_STAGE = QT == QT_BF16 ? GQ_BN * GQ_BK * 2 : GQ_BN * RAW_ROW,
        B_TILE = GQ_BN * GQ_BK * 2, /* one dequantized bf16 tile (two of them, double-buffered) */
        BYTES = ST * (A_STAGE + B_STAGE) + (QT == QT_BF16 ? 0 : 2 * B_TILE)
    };
};

/* issue the copies of step kt (X tile, and W tile or raw W spans) into stage slot st */
template <int QT, int ST, int BM>
__device__ __forceinline__ void gq_load_stage(uint8_t *smem, int st, int kt, const __nv_bfloat16 *X, const uint8_t *W,
                                              size_t w_bytes, int T, int N, int K, int m0, int n0,
                                              const int *rowx = NULL, size_t nbase = 0) {
    typedef gq_smem<QT, ST, BM> L;
    const int tid = threadIdx.x, k0 = kt * GQ_BK;
    const uint32_t a_base = pf_smem_addr(smem + st * L::A_STAGE);
#pragma unroll
    for (int i = tid; i < BM * 8; i += GQ_THREADS) {
        const int r = i >> 3, c = i & 7, t = rowx ? rowx[r] : m0 + r; /* rowx: -1 past the tile's rows */
        const bool ok = rowx ? t >= 0 : t < T;
        const __nv_bfloat16 *src = ok ? X + (size_t)t * K + k0 + 8 * c : X;
        pf_cp_async16(a_base + pf_swz(r, c), src, ok ? 16 : 0);
    }
    const uint32_t b_base = pf_smem_addr(smem + ST * L::A_STAGE + st * L::B_STAGE);
    if constexpr (QT == QT_BF16) {
        const __nv_bfloat16 *Wb = (const __nv_bfloat16 *)W;
#pragma unroll
        for (int i = tid; i < GQ_BN * 8; i += GQ_THREADS) {
            const int r = i >> 3, c = i & 7, n = n0 + r;
            const __nv_bfloat16 *src = n < N ? Wb + (size_t)n * K + k0 + 8 * c : Wb;
            pf_cp_async16(b_base + pf_swz(r, c), src, n < N ? 16 : 0);
        }
    } else {
        enum { NCH = gq_span<QT>::NCH };
        const size_t row_bytes = (size_t)(K / gq_type<QT>::QK) * gq_type<QT>::BS;
        const size_t blk_off = (size_t)(k0 / gq_type<QT>::QK) * gq_type<QT>::BS;
        for (int i = tid; i < GQ_BN * NCH; i += GQ_THREADS) {
            const int r = i / NCH, c = i % NCH, n = n0 + r;
            const size_t off = (((nbase + (size_t)n) * row_bytes + blk_off) & ~(size_t)15) + 16 * (size_t)c;
            int bytes = 0;
            if (n < N && off < w_bytes) bytes = w_bytes - off < 16 ? (int)(w_bytes - off) : 16;
            pf_cp_async16(b_base + r * L::RAW_ROW + 16 * c, bytes ? W + off : W, bytes);
        }
    }
}

/* dequantize the raw spans of step kt (slot st) into the bf16 tile `tile` */
template <int QT, int ST, int BM>
__device__ __forceinline__ void gq_dequant_stage(uint8_t *smem, int st, int kt, uint8_t *tile, int K, int n0,
                                                 size_t nbase = 0) {
    typedef gq_smem<QT, ST, BM> L;
    const int k0 = kt * GQ_BK;
    const size_t row_bytes = (size_t)(K / gq_type<QT>::QK) * gq_type<QT>::BS;
    const size_t blk_off = (size_t)(k0 / gq_type<QT>::QK) * gq_type<QT>::BS;
    const uint8_t *raw = smem + ST * L::A_STAGE + st * L::B_STAGE;
#pragma unroll
    for (int i = threadIdx.x; i < GQ_BN * 8; i += GQ_THREADS) {
        const int r = i >> 3, c = i & 7;
        const int mis = (int)(((nbase + (size_t)(n0 + r)) * row_bytes + blk_off) & 15);
        int p;
        const uint8_t *blk = gq_chunk_block<QT>(raw + r * L::RAW_ROW + mis, k0, c, &p);
        float v[8];
        gq_dequant8<QT>(blk, p, v);
        *(uint4 *)(tile + pf_swz(r, c)) = gq_pack_bf16(v);
    }
}

/* grid (ceil(N/128), ceil(T/BM), S), 256 threads, gq_smem<QT, ST, BM>::BYTES of dynamic shared memory.
 * S > 1 (split-K, gq_splits): block z sums the k steps [z nk / S, (z + 1) nk / S) into slice z of part
 * ([S][T][N]), which gq_split_sum adds up in slice order.
 * BM = 128: warps 2 (M) x 4 (N), warp tiles 64 x 32; BM = 256: warps 4 x 2, warp tiles 64 x 64 (twice the
 * tokens per dequantized weight tile, and 8 ldmatrix per 32 MMAs instead of 6 per 16). Every output is the
 * same sequence of MMAs over K in both, so the choice never changes a bit of Y. */
template <int QT, int ST, int BM, bool MOE>
__global__ void __launch_bounds__(GQ_THREADS)
    gemm_q_kernel(const uint8_t *__restrict__ W, const __nv_bfloat16 *__restrict__ X, float *__restrict__ Y,
                  float *__restrict__ part, size_t w_bytes, int T, int N, int K, gq_moe moe) {
    pdl_enter();
    typedef gq_smem<QT, ST, BM> L;
    enum { WNW = 8 / (BM / 64), NI = GQ_BN / WNW / 8 }; /* warps along N; 8-wide mma tiles per warp along N */
    extern __shared__ __align__(128) uint8_t smem[];
    const int n0 = blockIdx.x * GQ_BN, m0 = MOE ? 0 : blockIdx.y * BM;
    /* MOE: tile blockIdx.y of the group table (moe_group_kernel): expert e's rows (W rows e N ..), the tile's
     * slots list[first ..first + count): X row slot / xdiv, Y row slot */
    __shared__ int rowx[MOE ? BM : 1], rowy[MOE ? BM : 1];
    size_t nbase = 0;
    if constexpr (MOE) {
        const int32_t *tile = moe.g + moe.n_slots + 1 + 3 * blockIdx.y;
        if ((int)blockIdx.y >= moe.g[moe.n_slots]) return; /* past the tiles: uniform over the block */
        const int first = tile[1], count = tile[2];
        nbase = (size_t)tile[0] * N;
        for (int r = threadIdx.x; r < BM; r += GQ_THREADS) {
            const int slot = r < count ? moe.g[first + r] : -1;
            rowy[r] = slot, rowx[r] = slot < 0 ? -1 : slot / moe.xdiv;
        }
        __syncthreads();
    }
    const int *rx = MOE ? rowx : NULL;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wm = warp / WNW, wn = warp % WNW;
    const int nk_all = K / GQ_BK, kb = (int)(blockIdx.z * nk_all / gridDim.z);
    const int nk = (int)((blockIdx.z + 1) * nk_all / gridDim.z) - kb; /* this block's steps: kb, kb + 1, .. */
    if (gridDim.z > 1) Y = part + (size_t)blockIdx.z * T * N;
    uint8_t *tiles = smem + ST * (L::A_STAGE + L::B_STAGE);

    float acc[4][NI][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;

#pragma unroll
    for (int s = 0; s < ST - 1; s++) {
        if (s < nk) gq_load_stage<QT, ST, BM>(smem, s, kb + s, X, W, w_bytes, T, N, K, m0, n0, rx, nbase);
        pf_cp_async_commit();
    }
    if constexpr (QT != QT_BF16) { /* the first step's tile, before the loop */
        pf_cp_async_wait<ST - 2>();
        __syncthreads();
        gq_dequant_stage<QT, ST, BM>(smem, 0, kb, tiles, K, n0, nbase);
    }

    for (int kt = 0; kt < nk; kt++) {
        /* step kt's X (and W) resident; with quantized W also step kt+1's raw spans (dequantized below).
         * The barrier also says every warp is done with step kt-1, whose slots get refilled now. */
        if constexpr (QT == QT_BF16) pf_cp_async_wait<ST - 2>();
        else pf_cp_async_wait<ST - 3>();
        __syncthreads();
        if (kt + ST - 1 < nk)
            gq_load_stage<QT, ST, BM>(smem, (kt + ST - 1) % ST, kb + kt + ST - 1, X, W, w_bytes, T, N, K, m0, n0, rx,
                                      nbase);
        pf_cp_async_commit();
        if constexpr (QT != QT_BF16) {
            if (kt + 1 < nk)
                gq_dequant_stage<QT, ST, BM>(smem, (kt + 1) % ST, kb + kt + 1, tiles + ((kt + 1) & 1) * L::B_TILE, K, n0,
                                             nbase);
        }

        const uint32_t a_base = pf_smem_addr(smem + (kt % ST) * L::A_STAGE);
        const uint32_t b_base = QT == QT_BF16 ? pf_smem_addr(smem + ST * L::A_STAGE + (kt % ST) * L::B_STAGE)
                                              : pf_smem_addr(tiles + (kt & 1) * L::B_TILE);
#pragma unroll
        for (int ks = 0; ks < GQ_BK / 16; ks++) {
            uint32_t a[4][4], b[NI][2];
#pragma unroll
            for (int mi = 0; mi < 4; mi++)
                pf_ldmatrix_x4(a[mi], a_base + pf_swz(wm * 64 + mi * 16 + (lane & 15), ks * 2 + (lane >> 4)));
#pragma unroll
            for (int nj = 0; nj < NI / 2; nj++) {
                uint32_t r[4];
                pf_ldmatrix_x4(r, b_base + pf_swz(wn * NI * 8 + nj * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                 ks * 2 + ((lane >> 3) & 1)));
                b[2 * nj][0] = r[0];
                b[2 * nj][1] = r[1];
                b[2 * nj + 1][0] = r[2];
                b[2 * nj + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < 4; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++) pf_mma_bf16(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
        }
    }
    pf_cp_async_wait<0>();

    /* c0,c1: row lane/4, columns 2(lane%4)+{0,1}; c2,c3: row lane/4 + 8 */
#pragma unroll
    for (int mi = 0; mi < 4; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++) {
            const int col = n0 + wn * NI * 8 + ni * 8 + 2 * (lane & 3);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int t = m0 + wm * 64 + mi * 16 + (lane >> 2) + 8 * h;
                if (MOE) t = rowy[t]; /* the slot; -1 past the tile's rows */
                if (MOE ? t < 0 : t >= T) continue;
                float *y = Y + (size_t)t * N + col;
                if (col + 1 < N) *(float2 *)y = make_float2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
                else if (col < N) y[0] = acc[mi][ni][2 * h];
            }
        }
}

/* y[n] = bf16(x[n]), round to nearest even; grid-stride */
__global__ void f32_to_bf16_kernel(const float *__restrict__ x, __nv_bfloat16 *__restrict__ y, int64_t n) {
    pdl_enter();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16_rn(x[i]);
}

/* y[i] = part[0][i] + part[1][i] + ... in slice order (split-K); grid-stride over T * N */
__global__ void gq_split_sum(const float *__restrict__ part, float *__restrict__ y, int64_t n, int S) {
    pdl_enter();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float v = part[i];
        for (int z = 1; z < S; z++) v = __fadd_rn(v, part[(size_t)z * n + i]);
        y[i] = v;
    }
}

/* ---- launchers ---- */

/* Split-K: a GEMM of at most 2048 rows is cut into GQ_SPLIT slices of K (the k and v projections of an 8B
 * are 8 column tiles: 32 blocks at 512 tokens, a quarter of the H200; 166 us each, as long as q's 4096
 * rows). The rule reads N and K only, never T, so a token's output does not depend on the pass around it
 * (the slices' sums and their order are fixed by N and K). */
#define GQ_SPLIT 4
static int gq_splits(int N, int K) { return N <= 2048 && K / GQ_BK >= 2 * GQ_SPLIT ? GQ_SPLIT : 1; }

extern "C" int64_t cuda_gemm_part_floats(int T, int N, int K) {
    const int S = gq_splits(N, K);
    return S > 1 ? (int64_t)S * T * N : 0;
}

static int gq_qk(int type) {
    switch (type) {
    case QT_Q4_0: case QT_Q4_1: case QT_Q5_0: case QT_Q8_0: return 32;
    case QT_Q4_K: case QT_Q5_K: case QT_Q6_K: return 256;
    case QT_BF16: return 1;
    default: return 0;
    }
}

extern "C" int cuda_gemm_q_supports(int type) { return gq_qk(type) != 0 && type != QT_BF16; }

template <int QT, int ST, int BM>
static int gq_launch_cfg(const void *W, const void *X, float *Y, float *part, int T, int N, int K, cudaStream_t s) {
    const int bytes = (int)gq_smem<QT, ST, BM>::BYTES;
    if (cudaFuncSetAttribute(gemm_q_kernel<QT, ST, BM, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) !=
        cudaSuccess)
        return CUDA_KERR_LAUNCH;
    const size_t w_bytes = (size_t)(K / gq_type<QT>::QK) * gq_type<QT>::BS * (size_t)N;
    const int S = gq_splits(N, K);
    dim3 grid((N + GQ_BN - 1) / GQ_BN, (T + BM - 1) / BM, S);
    kl(gemm_q_kernel<QT, ST, BM, false>, grid, GQ_THREADS, bytes, s, (const uint8_t *)W, (const __nv_bfloat16 *)X, Y,
       part, w_bytes, T, N, K, gq_moe{});
    int rc = pf_launched();
    if (rc || S == 1) return rc;
    const int64_t n = (int64_t)T * N, blocks = (n + 255) / 256;
    kl(gq_split_sum, (unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, s, part, Y, n, S);
    return pf_launched();
}

/* The configuration: 256-token tiles where the block's shared memory allows them (sm_90: 227 KB) and they
 * still fill the machine (at least one tile per SM), else 128-token tiles; 4 pipeline stages where they fit,
 * else 3 (sm_80: 163 KB). Q6_K's raw spans fit no 128-token configuration on sm_80: CUDA_KERR_UNSUPPORTED,
 * and the caller takes the two-pass path (cuda_dequant_bf16 + cuda_gemm_bf16). */
template <int QT>
static int gq_launch(const void *W, const void *X, float *Y, float *part, int T, int N, int K, cudaStream_t s) {
    if (gq_splits(N, K) > 1 && !part) return CUDA_KERR_ARGS; /* the split is the shape's, not the caller's */
    int dev = 0, optin = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return CUDA_KERR_LAUNCH;
    const long tiles256 = (long)((T + 255) / 256) * ((N + GQ_BN - 1) / GQ_BN);
    if (tiles256 >= sms) {
        if (optin >= (int)gq_smem<QT, 4, 256>::BYTES) return gq_launch_cfg<QT, 4, 256>(W, X, Y, part, T, N, K, s);
        if (optin >= (int)gq_smem<QT, 3, 256>::BYTES) return gq_launch_cfg<QT, 3, 256>(W, X, Y, part, T, N, K, s);
    }
    if (optin >= (int)gq_smem<QT, 4, 128>::BYTES) return gq_launch_cfg<QT, 4, 128>(W, X, Y, part, T, N, K, s);
    if (optin >= (int)gq_smem<QT, 3, 128>::BYTES) return gq_launch_cfg<QT, 3, 128>(W, X, Y, part, T, N, K, s);
    return CUDA_KERR_UNSUPPORTED;
}

extern "C" int cuda_gemm_q(int type, const void *W, const uint16_t *X, float *Y, float *part, int T, int N, int K,
                           cudaStream_t s) {
    const int qk = gq_qk(type);
    if (!qk || type == QT_BF16) return CUDA_KERR_UNSUPPORTED;
    if (!W || !X || !Y || T < 1 || N < 1 || K < GQ_BK || K % GQ_BK || K % qk || ((uintptr_t)W & 15) ||
        ((uintptr_t)X & 15) || ((uintptr_t)Y & 7) || N % 2)
        return CUDA_KERR_ARGS;
    switch (type) {
    case QT_Q4_0: return gq_launch<QT_Q4_0>(W, X, Y, part, T, N, K, s);
    case QT_Q4_1: return gq_launch<QT_Q4_1>(W, X, Y, part, T, N, K, s);
    case QT_Q5_0: return gq_launch<QT_Q5_0>(W, X, Y, part, T, N, K, s);
    case QT_Q8_0: return gq_launch<QT_Q8_0>(W, X, Y, part, T, N, K, s);
    case QT_Q4_K: return gq_launch<QT_Q4_K>(W, X, Y, part, T, N, K, s);
    case QT_Q5_K: return gq_launch<QT_Q5_K>(W, X, Y, part, T, N, K, s);
    default: return gq_launch<QT_Q6_K>(W, X, Y, part, T, N, K, s);
    }
}

extern "C" int cuda_gemm_bf16(const uint16_t *W, const uint16_t *X, float *Y, float *part, int T, int N, int K,
                              cudaStream_t s) {
    if (!W || !X || !Y || T < 1 || N < 1 || K < GQ_BK || K % GQ_BK || ((uintptr_t)W & 15) || ((uintptr_t)X & 15) ||
        ((uintptr_t)Y & 7) || N % 2)
        return CUDA_KERR_ARGS;
    return gq_launch<QT_BF16>(W, X, Y, part, T, N, K, s);
}

template <int QT> static int dq_launch(const void *W, uint16_t *Wd, int N, int K, cudaStream_t s) {
    kl(dequant_bf16_kernel<QT>, dim3((K / GQ_BK + 31) / 32, N), dim3(8, 32), 0, s, (const uint8_t *)W,
       (__nv_bfloat16 *)Wd, K);
    return pf_launched();
}

extern "C" int cuda_dequant_bf16(int type, const void *W, uint16_t *Wd, int N, int K, cudaStream_t s) {
    const int qk = gq_qk(type);
    if (!qk || type == QT_BF16) return CUDA_KERR_UNSUPPORTED;
    if (!W || !Wd || N < 1 || N > 65535 || K < GQ_BK || K % GQ_BK || K % qk || ((uintptr_t)Wd & 15))
        return CUDA_KERR_ARGS;
    switch (type) {
    case QT_Q4_0: return dq_launch<QT_Q4_0>(W, Wd, N, K, s);
    case QT_Q4_1: return dq_launch<QT_Q4_1>(W, Wd, N, K, s);
    case QT_Q5_0: return dq_launch<QT_Q5_0>(W, Wd, N, K, s);
    case QT_Q8_0: return dq_launch<QT_Q8_0>(W, Wd, N, K, s);
    case QT_Q4_K: return dq_launch<QT_Q4_K>(W, Wd, N, K, s);
    case QT_Q5_K: return dq_launch<QT_Q5_K>(W, Wd, N, K, s);
    default: return dq_launch<QT_Q6_K>(W, Wd, N, K, s);
    }
}

extern "C" int cuda_f32_to_bf16(const float *x, uint16_t *y, int64_t n, cudaStream_t s) {
    if (!x || !y || n < 0) return CUDA_KERR_ARGS;
    if (n == 0) return CUDA_KERR_OK;
    int64_t blocks = (n + 255) / 256;
    kl(f32_to_bf16_kernel, (unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, s, x, (__nv_bfloat16 *)y, n);
    return pf_launched();
}

/* ---- the grouped expert product (MoE prefill) ---- */

/* Routed slots grouped by expert, one block of GQ_MOE_THREADS: counts per expert, an exclusive scan of the
 * counts and of the tiles (bm slots: GQ_MOE_BM for gemm_q_kernel, 32 or 64 for kernels/mmq.cu) they make, each
 * thread taking a contiguous chunk of experts; then
 * the slots scattered into their expert's run of the list. The order within a run follows the atomics (it
 * varies run to run), which moves a slot to another row of its tile but never changes its bits: a row's
 * MMA results depend on its own X row and the expert's weights only. A slot with an expert id outside
 * [0, E) is in no tile (its Y row is not written: the GEMV's rule). Dynamic shared memory: 2 E ints. */
#define GQ_MOE_BM CUDA_MOE_TILE
#define GQ_MOE_THREADS 1024
#define GQ_MOE_MAX_E 8192
__global__ void __launch_bounds__(GQ_MOE_THREADS)
    moe_group_kernel(const int32_t *__restrict__ sel, int n, int E, int bm, int32_t *__restrict__ g) {
    pdl_enter();
    extern __shared__ int mg[];
    int *cnt = mg, *cur = mg + E; /* cur: first the list offset of each expert, then its fill */
    __shared__ int scan_n[GQ_MOE_THREADS], scan_t[GQ_MOE_THREADS];
    const int tid = threadIdx.x, per = (E + GQ_MOE_THREADS - 1) / GQ_MOE_THREADS;
    const int e0 = min(E, tid * per), e1 = min(E, e0 + per);
    for (int e = tid; e < E; e += GQ_MOE_THREADS) cnt[e] = 0;
    __syncthreads();
    for (int s = tid; s < n; s += GQ_MOE_THREADS) {
        const int e = sel[s];
        if (e >= 0 && e < E) atomicAdd(&cnt[e], 1);
    }
    __syncthreads();
    int my_n = 0, my_t = 0;
    for (int e = e0; e < e1; e++) my_n += cnt[e], my_t += (cnt[e] + bm - 1) / bm;
    scan_n[tid] = my_n, scan_t[tid] = my_t;
    __syncthreads();
    for (int d = 1; d < GQ_MOE_THREADS; d <<= 1) { /* inclusive scan (Hillis-Steele) */
        const int an = tid >= d ? scan_n[tid - d] : 0, at = tid >= d ? scan_t[tid - d] : 0;
        __syncthreads();
        scan_n[tid] += an, scan_t[tid] += at;
        __syncthreads();
    }
    int o = scan_n[tid] - my_n, t = scan_t[tid] - my_t;
    int32_t *tiles = g + n + 1;
    for (int e = e0; e < e1; e++) {
        const int c = cnt[e];
        cur[e] = o;
        for (int f = 0; f < c; f += bm, t++) {
            tiles[3 * t] = e;
            tiles[3 * t + 1] = o + f;
            tiles[3 * t + 2] = min(bm, c - f);
        }
        o += c;
    }
    if (tid == GQ_MOE_THREADS - 1) g[n] = scan_t[tid];
    __syncthreads();
    for (int s = tid; s < n; s += GQ_MOE_THREADS) {
        const int e = sel[s];
        if (e >= 0 && e < E) g[atomicAdd(&cur[e], 1)] = s;
    }
}

extern "C" int64_t cuda_moe_tiles_max(int n_slots, int E, int bm) {
    if (bm < 1) return 0;
    return (int64_t)(n_slots + bm - 1) / bm + (E < n_slots ? E : n_slots);
}

extern "C" int64_t cuda_moe_group_ints(int n_slots, int E, int bm) {
    return n_slots + 1 + 3 * cuda_moe_tiles_max(n_slots, E, bm);
}

extern "C" int cuda_moe_group(const int32_t *sel, int n_slots, int E, int bm, int32_t *g, cudaStream_t s) {
    if (!sel || !g || n_slots < 1 || E < 1 || E > GQ_MOE_MAX_E || bm < 1) return CUDA_KERR_ARGS;
    const int bytes = 2 * E * (int)sizeof(int);
    if (bytes > 48 * 1024 &&
        cudaFuncSetAttribute(moe_group_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) != cudaSuccess)
        return CUDA_KERR_LAUNCH;
    kl(moe_group_kernel, 1, GQ_MOE_THREADS, bytes, s, sel, n_slots, E, bm, g);
    return pf_launched();
}

template <int QT, int ST>
static int gq_moe_cfg(const void *W, const void *X, float *Y, const int32_t *g, int n_slots, int E, int xdiv, int N,
                      int K, cudaStream_t s) {
    const int bytes = (int)gq_smem<QT, ST, GQ_MOE_BM>::BYTES;
    if (cudaFuncSetAttribute(gemm_q_kernel<QT, ST, GQ_MOE_BM, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             bytes) != cudaSuccess)
        return CUDA_KERR_LAUNCH;
    const size_t w_bytes = (size_t)(K / gq_type<QT>::QK) * gq_type<QT>::BS * (size_t)N * (size_t)E;
    dim3 grid((N + GQ_BN - 1) / GQ_BN, (unsigned)cuda_moe_tiles_max(n_slots, E, GQ_MOE_BM), 1);
    kl(gemm_q_kernel<QT, ST, GQ_MOE_BM, true>, grid, GQ_THREADS, bytes, s, (const uint8_t *)W,
       (const __nv_bfloat16 *)X, Y, (float *)NULL, w_bytes, n_slots, N, K, gq_moe{g, n_slots, xdiv});
    return pf_launched();
}

/* 4 pipeline stages where they fit beside the kernel's static tables (1 KB kept), else 3 */
template <int QT>
static int gq_moe_launch(const void *W, const void *X, float *Y, const int32_t *g, int n_slots, int E, int xdiv,
                         int N, int K, cudaStream_t s) {
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
        return CUDA_KERR_LAUNCH;
    optin -= 1024;
    if (optin >= (int)gq_smem<QT, 4, GQ_MOE_BM>::BYTES) return gq_moe_cfg<QT, 4>(W, X, Y, g, n_slots, E, xdiv, N, K, s);
    if (optin >= (int)gq_smem<QT, 3, GQ_MOE_BM>::BYTES) return gq_moe_cfg<QT, 3>(W, X, Y, g, n_slots, E, xdiv, N, K, s);
    return CUDA_KERR_UNSUPPORTED;
}

extern "C" int cuda_gemm_q_experts(int type, const void *W, int E, const uint16_t *X, int xdiv, const int32_t *g,
                                   float *Y, int n_slots, int N, int K, cudaStream_t s) {
    const int qk = gq_qk(type);
    if (!qk || type == QT_BF16) return CUDA_KERR_UNSUPPORTED;
    if (!W || !X || !Y || !g || n_slots < 1 || E < 1 || xdiv < 1 || N < 1 || K < GQ_BK || K % GQ_BK || K % qk ||
        ((uintptr_t)W & 15) || ((uintptr_t)X & 15) || ((uintptr_t)Y & 7) || N % 2 ||
        cuda_moe_tiles_max(n_slots, E, GQ_MOE_BM) > 65535)
        return CUDA_KERR_ARGS;
    switch (type) {
    case QT_Q4_0: return gq_moe_launch<QT_Q4_0>(W, X, Y, g, n_slots, E, xdiv, N, K, s);
    case QT_Q4_1: return gq_moe_launch<QT_Q4_1>(W, X, Y, g, n_slots, E, xdiv, N, K, s);
    case QT_Q5_0: return gq_moe_launch<QT_Q5_0>(W, X, Y, g, n_slots, E, xdiv, N, K, s);
    case QT_Q8_0: return gq_moe_launch<QT_Q8_0>(W, X, Y, g, n_slots, E, xdiv, N, K, s);
    case QT_Q4_K: return gq_moe_launch<QT_Q4_K>(W, X, Y, g, n_slots, E, xdiv, N, K, s);
    case QT_Q5_K: return gq_moe_launch<QT_Q5_K>(W, X, Y, g, n_slots, E, xdiv, N, K, s);
    default: return gq_moe_launch<QT_Q6_K>(W, X, Y, g, n_slots, E, xdiv, N, K, s);
    }
}
