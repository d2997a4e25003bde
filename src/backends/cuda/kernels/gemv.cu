/* gemv: the decode hot path, y[T][N] = x[T][K] . W^T for 1..8 activation rows, W quantized in the GEMV
 * layout (kernels/gemv_unpack.h) and x quantized to q8_1 (kernels/quantize.cu).
 *
 * Per 32-value unit the dot product is integer: eight dp4a over the unit's lane words, then one scaling,
 *     acc += a * (dx * isum) + b * sx,    isum = sc0 * dot(lanes 0..15) + sc1 * dot(lanes 16..31)
 * (a, b, sc0, sc1 from gemv_unit_scale; dx, sx the activation unit's d and d * sum(q)). The float work is
 * two or four multiplies and adds per unit and row, written with __fmul_rn/__fadd_rn so the compiler never
 * fuses them into FFMA (throttled to 1/32 rate on the CMP 170HX; on the H200 they cost nothing, the
 * kernel is bound by reading W).
 *
 * Grid: one block per R consecutive rows; NW warps per block (NW = min(4, units/32 rounded up)) split the
 * row's units (lane l of warp w takes units w*32 + l, stride 32*NW), each lane reading its unit's 16 bytes
 * of quants with one 128-bit streaming load (evict-first: W is read once per step), so a warp reads 512
 * contiguous bytes per row per step. The R rows of a block share each activation load, which keeps L1
 * traffic per weight byte low at T = 8. Partial sums: warp shuffles, then shared memory across warps. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/kernels/gemv_common.cuh"

/* a weight load: streaming (evict-first: a decode step reads W once) or, when a block reads its rows again
 * for further chunks of activation rows (KEEP), through the caches */
template <bool KEEP, typename V> static __device__ __forceinline__ V ldw(const V *p) {
    return KEEP ? __ldg(p) : __ldcs(p);
}

template <enum qtype TYPE, bool KEEP>
static __device__ __forceinline__ void load_unit(const uint8_t *__restrict__ qs, const uint8_t *__restrict__ hi,
                                                 size_t unit, uint32_t *v) {
    uint32_t q[8], h[2] = {0, 0};
    if (TYPE == QT_Q8_0) {
        const uint4 *p = (const uint4 *)(qs + unit * 32);
        uint4 a = ldw<KEEP>(p), b = ldw<KEEP>(p + 1);
        q[0] = a.x, q[1] = a.y, q[2] = a.z, q[3] = a.w, q[4] = b.x, q[5] = b.y, q[6] = b.z, q[7] = b.w;
    } else {
        uint4 a = ldw<KEEP>((const uint4 *)(qs + unit * 16));
        q[0] = a.x, q[1] = a.y, q[2] = a.z, q[3] = a.w;
    }
    if (TYPE == QT_Q5_0 || TYPE == QT_Q5_K) h[0] = ldw<KEEP>((const unsigned int *)(hi + unit * 4));
    if (TYPE == QT_Q6_K) {
        uint2 b = ldw<KEEP>((const uint2 *)(hi + unit * 8));
        h[0] = b.x, h[1] = b.y;
    }
    gemv_unpack_unit(TYPE, q, h, v);
}

/* units a lane loads before it computes on them: 2 at R = 2 (64 bytes of weights in flight per lane),
 * else 1. At T = 1 (R = 1) more registers per thread cost more than the bytes in flight gained: on the
 * H200, 4 units a lane ran 1.3-1.8x slower than 1 unit a lane with 4 warps per row (docs/cuda.md). */
template <int R> struct gemv_unroll { static constexpr int v = R == 2 ? 2 : 1; };

/* Block of 4 warps; WPR warps (1, 2 or 4) share a group of R rows, splitting its units; the block holds
 * 4 / WPR such groups. Lane l of warp w of a group takes units (w * 32 + l) + i * 32 * WPR; it issues the
 * loads of UNR units (of all R rows) before computing on them.
 * nt activation rows in chunks of T: the block computes its rows for each chunk in turn (nt > T: KEEP,
 * the rows' weights then come from L1/L2 after the first chunk). A row's arithmetic is the same in every
 * chunk and at every T: rows past nt in the last chunk repeat its last row and are never written. */
template <enum qtype TYPE, int T, int R, int UNR, bool KEEP>
__global__ void __launch_bounds__(32 * GEMV_MAX_WARPS)
    k_gemv_q(const gemv_mats P, const int8_t *__restrict__ xq, const float2 *__restrict__ ds, int K, int WPR,
             const int32_t *__restrict__ sel, int E, int xdiv, int slot0, int nt) {
    pdl_enter();
    const unsigned m = gemv_member(P, blockIdx.x);
    const unsigned bx = blockIdx.x - P.b[m];
    const uint8_t *__restrict__ qs = m == 0 ? P.qs[0] : m == 1 ? P.qs[1] : P.qs[2];
    const uint8_t *__restrict__ hi = m == 0 ? P.hi[0] : m == 1 ? P.hi[1] : P.hi[2];
    const uint8_t *__restrict__ meta = m == 0 ? P.meta[0] : m == 1 ? P.meta[1] : P.meta[2];
    float *__restrict__ y = m == 0 ? P.y[0] : m == 1 ? P.y[1] : P.y[2];
    float *__restrict__ res = m == 0 ? P.res : NULL;
    const float *__restrict__ bias = gemv_bias_of(P, m);
    const int N = m == 0 ? P.N[0] : m == 1 ? P.N[1] : P.N[2];
    constexpr int G = gemv_meta_group(TYPE) / 32, MB = gemv_meta_bytes(TYPE);
    constexpr int NV = pow2_ceil<R * T>::v;
    __shared__ float part[GEMV_MAX_WARPS][R * T];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int grp = warp / WPR, wig = warp % WPR; /* row group in the block, warp in the group */
    const int row0 = (int)(bx * (GEMV_MAX_WARPS / WPR) + grp) * R, U = K / 32, stride = 32 * WPR;
    /* the grouped expert form (sel != NULL, T == 1): blockIdx.y is routed slot slot0 + blockIdx.y, its rows
     * are those of expert sel[slot] (rows e * N ..), its activations row slot / xdiv, its output row slot */
    size_t erow = 0;
    if (sel) {
        const int slot = slot0 + (int)blockIdx.y, e = sel[slot];
        if (e < 0 || e >= E) return; /* uniform over the block: before any barrier */
        erow = (size_t)e * N;
        xq += (size_t)(slot / xdiv) * K;
        ds += (size_t)(slot / xdiv) * U;
        y += (size_t)slot * N;
    }
    size_t rows[R];
#pragma unroll
    for (int r = 0; r < R; r++) rows[r] = erow + (size_t)min(row0 + r, N - 1); /* rows past N repeat the last; never written */

    for (int t0 = 0; t0 < nt; t0 += T) {
    const int tn = min(T, nt - t0); /* activation rows of this chunk */
    float acc[NV];
#pragma unroll
    for (int i = 0; i < NV; i++) acc[i] = 0.0f;
#pragma unroll 2
    for (int base = wig * 32 + lane; base < U; base += stride * UNR) {
        uint32_t v[UNR][R][8];
#pragma unroll
        for (int i = 0; i < UNR; i++) {
            int u = base + i * stride;
#pragma unroll
            for (int r = 0; r < R; r++)
                if (u < U) load_unit<TYPE, KEEP>(qs, hi, rows[r] * U + u, v[i][r]);
        }
#pragma unroll
        for (int i = 0; i < UNR; i++) {
            int u = base + i * stride;
            if (u >= U) break;
            gemv_scale sc[R];
#pragma unroll
            for (int r = 0; r < R; r++) sc[r] = gemv_unit_scale(TYPE, meta + (rows[r] * (U / G) + u / G) * MB, u % G);
#pragma unroll
            for (int t = 0; t < T; t++) {
                const int tt = t0 + min(t, tn - 1);
                const int4 *xp = (const int4 *)(xq + (size_t)tt * K + (size_t)u * 32);
                int4 x0 = __ldg(xp), x1 = __ldg(xp + 1);
                float2 d = __ldg(ds + (size_t)tt * U + u);
#pragma unroll
                for (int r = 0; r < R; r++)
                    acc[r * T + t] = __fadd_rn(acc[r * T + t], gemv_term<TYPE>(v[i][r], x0, x1, d, sc[r]));
            }
        }
    }
    warp_sum_many<NV>(acc, lane);
    /* lane l holds value idx = l >> (5 - log2 NV); the first lane of each idx reports it */
    const int idx = lane >> (5 - log2_of<NV>::v);
    const bool reporter = (lane & ((32 >> log2_of<NV>::v) - 1)) == 0 && idx < R * T;
    if (WPR > 1) {
        if (reporter) part[warp][idx] = acc[0];
        __syncthreads();
        if (wig == 0)
            for (int i = lane; i < R * T; i += 32) {
                float s = part[warp][i];
                for (int w = 1; w < WPR; w++) s = __fadd_rn(s, part[warp + w][i]);
                int r = i / T, t = i % T;
                if (row0 + r < N && t < tn) {
                    const size_t o = (size_t)(t0 + t) * N + row0 + r;
                    s = gemv_biased(bias, row0 + r, s);
                    y[o] = s;
                    if (res) res[o] = __fadd_rn(res[o], s);
                }
            }
        if (t0 + T < nt) __syncthreads(); /* part[] is written again by the next chunk */
        continue;
    }
    if (reporter) {
        int r = idx / T, t = idx % T;
        if (row0 + r < N && t < tn) {
            const size_t o = (size_t)(t0 + t) * N + row0 + r;
            const float v = gemv_biased(bias, row0 + r, acc[0]);
            y[o] = v;
            if (res) res[o] = __fadd_rn(res[o], v);
        }
    }
    }
}

/* ---------------------------------------------------------------- many rows: tensor cores, one-row bits
 *
 * A batched decode step (more than 8 rows) on the chunked k_gemv_q spends ~8x a row's time on the integer
 * products (H200, 8B at 64 rows: 184 us against 27 us for 8). k_gemv_mma takes the products from int8
 * tensor cores (m16n8k32: 16 weight rows x 8 activation rows x one 32-value unit, exact int32) and then
 * does k_gemv_q's float work for each (row, activation row) in k_gemv_q's order, so every output is the
 * bits of the one-row launch (the batch invariant; cuda-check compares each row of a T-row launch with a
 * one-row launch). That order, for K/32 = U units and WPR = (U >= 128 ? 4 : 1) warps a row:
 *   leaf (w, l)  = sum over i of p(w * 32 + l + i * 32 * WPR), in i order from 0.0f   (lane l of warp w)
 *   W_w          = the xor butterfly over the 32 leaves (pairs l, l ^ 16; then ^ 8, ^ 4, ^ 2, ^ 1)
 *   y            = ((W_0 + W_1) + W_2) + W_3
 * with p(u) = a * (dx * isum) [+ b * dy] as in k_gemv_q. In bit-reversed lane order (jl = 0..31 visits
 * l = brev5(jl): 0, 16, 8, 24, ...) the butterfly's pairs are neighbours, so the butterfly is the balanced
 * binary tree over jl: ((j0 + j1) + (j2 + j3)) + ... A block is 8 warps over 16 weight rows and 32
 * activation rows (four n-tiles of 8); warp q computes the leaves jl = 4q .. 4q + 3 (their units
 * interleaved, so the loads of four leaves are in flight at once) and their subtree of 4; warp 0 joins the
 * 8 subtrees as the tree's top 3 levels and the W_w in w order. Grid x: 32-row activation tiles (the
 * blocks of one weight tile run side by side and share its L2 lines), y: 16-row weight tiles.
 * Status: an experiment, behind LLM170_CUDA_GEMV_BATCH=mma. Exact (cuda-check's batched cases, each row
 * against the one-row launch) but slower than the chunked k_gemv_q on the H200: K 4096 x N 14336 at 64
 * rows 313 us against 180; 8B batched decode 1285 against 1783 t/s at 64 sequences, 717 against 1433 at 16.
 * Not bound by the tensor cores or by memory (118 GB/s) but by the float work done in the one-row order
 * (5 float ops per output and unit, no FMA) and its latency at 16 warps an SM. (A first form, each warp
 * all 32 leaves in sequence, ran at 5-86 GB/s.) */
#define GEMV_MMA_TW 4 /* n-tiles of 8 activation rows a block */
#define GEMV_MMA_WARPS 8
#define GEMV_MMA_JL (32 / GEMV_MMA_WARPS) /* leaves a warp */

/* d[0..3] = A (16 x 32 s8, rows) . B (32 x 8 s8, columns), exact int32; d0/d1: row g, columns 2c / 2c+1,
 * d2/d3: row g + 8 (g = lane / 4, c = lane % 4). a0 / a1: rows g / g + 8, values 4c..4c+3; a2 / a3: values
 * 16 + 4c..; b0: values 4c.. of column g; b1: 16 + 4c.. */
static __device__ __forceinline__ void mma_k32(int *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                               uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %10, %10, %10};\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(0));
}

/* the same over 16 values: a0 / a1 rows g / g + 8, b0 column g (Q6_K scales each half of a unit) */
static __device__ __forceinline__ void mma_k16(int *d, uint32_t a0, uint32_t a1, uint32_t b0) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                 "{%7, %7, %7, %7};\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a0), "r"(a1), "r"(b0), "r"(0));
}

/* this lane's A words of unit u of row r: lane words c (w[0]) and c + 4 (w[1]) */
template <enum qtype TYPE>
static __device__ __forceinline__ void mma_a_words(const uint8_t *__restrict__ qs, const uint8_t *__restrict__ hi,
                                                   size_t r, int U, int u, int c, uint32_t *w) {
    const size_t unit = r * (size_t)U + (size_t)u;
    uint32_t q0, q1, h[2] = {0, 0};
    if (TYPE == QT_Q8_0) {
        const uint32_t *p = (const uint32_t *)(qs + unit * 32);
        q0 = __ldg(p + c), q1 = __ldg(p + c + 4);
    } else {
        q0 = q1 = __ldg((const uint32_t *)(qs + unit * 16) + c);
    }
    if (TYPE == QT_Q5_0 || TYPE == QT_Q5_K) h[0] = __ldg((const uint32_t *)(hi + unit * 4));
    if (TYPE == QT_Q6_K) {
        const uint2 b = __ldg((const uint2 *)(hi + unit * 8));
        h[0] = b.x, h[1] = b.y;
    }
    w[0] = gemv_unpack_word(TYPE, q0, h, c);
    w[1] = gemv_unpack_word(TYPE, q1, h, c + 4);
}

/* v[0] + ... + v[N - 1] as a balanced binary tree, neighbours first ((v0 + v1) + (v2 + v3)) + ...: the
 * butterfly's shape over bit-reversed slots (N a power of two; v is overwritten) */
template <int N>
static __device__ __forceinline__ float tree_sum(float *v) {
#pragma unroll
    for (int h = 1; h < N; h *= 2)
#pragma unroll
        for (int k = 0; k < N; k += 2 * h) v[k] = __fadd_rn(v[k], v[k + h]);
    return v[0];
}

template <enum qtype TYPE>
__global__ void __launch_bounds__(32 * GEMV_MMA_WARPS)
    k_gemv_mma(const uint8_t *__restrict__ qs, const uint8_t *__restrict__ hi, const uint8_t *__restrict__ meta,
               const int8_t *__restrict__ xq, const float2 *__restrict__ ds, float *__restrict__ y,
               float *__restrict__ res, int N, int K, int nt) {
    pdl_enter();
    constexpr bool HAS_B = TYPE == QT_Q4_1 || TYPE == QT_Q4_K || TYPE == QT_Q5_K;
    constexpr int G = gemv_meta_group(TYPE) / 32, MB = gemv_meta_bytes(TYPE), TW = GEMV_MMA_TW, JL = GEMV_MMA_JL;
    __shared__ float sub[GEMV_MMA_WARPS][TW * 4][32]; /* each warp's subtree sums of one w */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
    const int U = K / 32, WPR = U >= 128 ? 4 : 1, stride = 32 * WPR;
    const int t0 = (int)blockIdx.x * 8 * TW, row0 = (int)blockIdx.y * 16;
    const size_t rr[2] = {(size_t)min(row0 + g, N - 1), (size_t)min(row0 + g + 8, N - 1)}; /* rows past N repeat */
    int tb[TW], tcol[TW][2]; /* activation rows of this lane's B column and C columns (past nt: the last) */
#pragma unroll
    for (int j = 0; j < TW; j++) {
        tb[j] = min(t0 + 8 * j + g, nt - 1);
        tcol[j][0] = min(t0 + 8 * j + 2 * c, nt - 1);
        tcol[j][1] = min(t0 + 8 * j + 2 * c + 1, nt - 1);
    }
    int ls[JL]; /* this warp's leaves: lanes brev5(jl) for jl = JL * warp .. */
#pragma unroll
    for (int k = 0; k < JL; k++) ls[k] = (int)(__brev((unsigned)(JL * warp + k)) >> 27);
    float S[TW][4]; /* warp 0: the row's sum over the w so far */
    for (int w = 0; w < WPR; w++) {
        float leaf[JL][TW][4];
#pragma unroll
        for (int k = 0; k < JL; k++)
#pragma unroll
            for (int j = 0; j < TW; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) leaf[k][j][e] = 0.0f;
        for (int ub = w * 32; ub < U; ub += stride) { /* each leaf's i-th unit is ub + its lane */
#pragma unroll
            for (int k = 0; k < JL; k++) {
                const int u = ub + ls[k];
                if (u >= U) continue; /* uniform over the warp */
                uint32_t wa[2], wb[2];
                mma_a_words<TYPE>(qs, hi, rr[0], U, u, c, wa);
                mma_a_words<TYPE>(qs, hi, rr[1], U, u, c, wb);
                gemv_scale sc[2];
#pragma unroll
                for (int r = 0; r < 2; r++) sc[r] = gemv_unit_scale(TYPE, meta + (rr[r] * (size_t)(U / G) + u / G) * MB, u % G);
#pragma unroll
                for (int j = 0; j < TW; j++) {
                    const uint32_t *xp = (const uint32_t *)(xq + (size_t)tb[j] * K + (size_t)u * 32);
                    const uint32_t b0 = __ldg(xp + c), b1 = __ldg(xp + c + 4);
                    int isum[4];
                    if (TYPE == QT_Q6_K) {
                        int lo[4], hi4[4];
                        mma_k16(lo, wa[0], wb[0], b0);
                        mma_k16(hi4, wa[1], wb[1], b1);
#pragma unroll
                        for (int e = 0; e < 4; e++) isum[e] = sc[e >> 1].sc0 * lo[e] + sc[e >> 1].sc1 * hi4[e];
                    } else {
                        mma_k32(isum, wa[0], wb[0], wa[1], wb[1], b0, b1);
                    }
                    const float2 d2[2] = {__ldg(ds + (size_t)tcol[j][0] * U + u), __ldg(ds + (size_t)tcol[j][1] * U + u)};
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const gemv_scale &s = sc[e >> 1];
                        const float2 d = d2[e & 1];
                        float p = __fmul_rn(s.a, __fmul_rn(d.x, (float)isum[e]));
                        if (HAS_B) p = __fadd_rn(p, __fmul_rn(s.b, d.y));
                        leaf[k][j][e] = __fadd_rn(leaf[k][j][e], p);
                    }
                }
            }
        }
        /* the warp's subtree (the tree's lowest levels over its JL consecutive jl), then warp 0 joins the
         * subtrees in jl order, a balanced tree again, and adds W_w to the row's sum */
#pragma unroll
        for (int j = 0; j < TW; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float v[JL];
#pragma unroll
                for (int k = 0; k < JL; k++) v[k] = leaf[k][j][e];
                sub[warp][j * 4 + e][lane] = tree_sum<JL>(v);
            }
        __syncthreads();
        if (warp == 0) {
#pragma unroll
            for (int j = 0; j < TW; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    float v[GEMV_MMA_WARPS];
#pragma unroll
                    for (int q = 0; q < GEMV_MMA_WARPS; q++) v[q] = sub[q][j * 4 + e][lane];
                    const float W_w = tree_sum<GEMV_MMA_WARPS>(v);
                    S[j][e] = w == 0 ? W_w : __fadd_rn(S[j][e], W_w);
                }
        }
        __syncthreads();
    }
    if (warp) return;
#pragma unroll
    for (int j = 0; j < TW; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int t = t0 + 8 * j + 2 * c + (e & 1), r = row0 + g + (e >> 1) * 8;
            if (t < nt && r < N) {
                const size_t o = (size_t)t * N + r;
                y[o] = S[j][e];
                if (res) res[o] = __fadd_rn(res[o], S[j][e]);
            }
        }
}

/* LLM170_CUDA_GEMV_BATCH=mma: more than 8 rows through k_gemv_mma (an experiment: slower than the chunked
 * k_gemv_q on the H200, docs/cuda.md) */
static bool gemv_batch_mma(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("LLM170_CUDA_GEMV_BATCH");
        v = e && !strcmp(e, "mma");
    }
    return v;
}

template <enum qtype TYPE>
static void launch_mma(const cuda_qmat *W, const int8_t *xq, const float *ds, float *y, float *res, int nt,
                       cudaStream_t s) {
    const int N = (int)W->N;
    kl(k_gemv_mma<TYPE>, dim3((unsigned)((nt + 8 * GEMV_MMA_TW - 1) / (8 * GEMV_MMA_TW)), (unsigned)((N + 15) / 16)),
       32 * GEMV_MMA_WARPS, 0, s, (const uint8_t *)W->qs, (const uint8_t *)W->hi, (const uint8_t *)W->meta, xq,
       (const float2 *)ds, y, res, N, (int)W->K, nt);
}

/* rows per warp group for T activation rows: enough to share each activation load over several weight
 * rows as T grows; short rows (K <= 2048) get 4 rows at any T so that a lane has 4 units in flight */
template <int T> struct gemv_rows { static constexpr int R = T == 1 ? 1 : T <= 4 ? 2 : 4; };

/* experts: grouped expert form over n_slots routed slots (grid y, 65535 a launch); NULL: plain */
typedef struct gemv_experts { const int32_t *sel; int E, xdiv, n_slots; } gemv_experts;

template <enum qtype TYPE, int T, int R, int UNR = gemv_unroll<R>::v, bool KEEP = false>
static void launch_r(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                     const gemv_experts *ex, cudaStream_t s, int wpr = 0, int nt = T) {
    int U = (int)(W->K / 32);
    /* warps per row group, from K alone: which lane sums which units (and so a row's float sum) must not
     * depend on T, or a sequence's logits would depend on how many others share its decode step (the
     * engine's batch invariant; cuda-check compares every row of a T-row launch with a one-row launch).
     * Four warps split rows of K >= 4096 (1.3x one warp at T = 1, docs/cuda.md); shorter rows take one
     * warp per row group (K = 896 with 4 rows a warp: 4x). An earlier rule gave T = 5..8 one warp per
     * row at 4096 <= K < 16384 (1.6x faster at T = 8, but other bits than T = 1). */
    if (wpr != 1 && wpr != 2 && wpr != 4) wpr = U >= 128 ? 4 : 1;
    int rows_per_block = R * (GEMV_MAX_WARPS / wpr);
    const gemv_mats P = gemv_mats_of(W, nW, y, res, rows_per_block);
    const unsigned blocks = P.b[nW];
    if (!ex) {
        kl(k_gemv_q<TYPE, T, R, UNR, KEEP>, blocks, 32 * GEMV_MAX_WARPS, 0, s, P, xq, (const float2 *)ds, (int)W->K,
           wpr, nullptr, 0, 1, 0, nt);
        return;
    }
    for (int s0 = 0; s0 < ex->n_slots; s0 += 65535) {
        const int n = ex->n_slots - s0 < 65535 ? ex->n_slots - s0 : 65535;
        kl(k_gemv_q<TYPE, T, R, UNR, KEEP>, dim3(blocks, (unsigned)n), 32 * GEMV_MAX_WARPS, 0, s, P, xq,
           (const float2 *)ds, (int)W->K, wpr, ex->sel, ex->E, ex->xdiv, s0, nt);
    }
}

/* The T = 1 or T = 8 shape, for experiments on the GPU machine: LLM170_CUDA_GEMV="T,R,WPR,UNR" (T 1 or 8;
 * rows per warp group 1/2/4/8, at T = 8 at most 4: 8 x 8 would pass the 32 sums a lane reduces; warps per
 * row group 1/2/4; units a lane loads before computing 1/2/4) replaces the default rule of launch_t /
 * launch_r for that T; unset or malformed: the default. Read once. A WPR other than the K rule's gives
 * other bits than other T (cuda-check's 1-row comparison then fails). */
typedef struct gemv_shape { int R, wpr, unr; } gemv_shape;
template <int T> static gemv_shape gemv_env(void) {
    static_assert(T == 1 || T == 8, "the variable names T = 1 or T = 8");
    static int done;
    static gemv_shape g;
    if (!done) {
        const char *v = getenv("LLM170_CUDA_GEMV");
        int t = 0;
        gemv_shape s = {0, 0, 0};
        if (v && sscanf(v, "%d,%d,%d,%d", &t, &s.R, &s.wpr, &s.unr) == 4 && t == T &&
            (s.R == 1 || s.R == 2 || s.R == 4 || (s.R == 8 && T == 1)) && (s.wpr == 1 || s.wpr == 2 || s.wpr == 4) &&
            (s.unr == 1 || s.unr == 2 || s.unr == 4))
            g = s;
        done = 1;
    }
    return g;
}

template <enum qtype TYPE, int T, int R>
static void launch_1r(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                      const gemv_experts *ex, cudaStream_t s, gemv_shape g) {
    constexpr int U4 = R <= 2 ? 4 : 2; /* 4 units of 4 or 8 rows would spill registers */
    switch (g.unr) {
    case 1: launch_r<TYPE, T, R, 1>(W, nW, xq, ds, y, res, ex, s, g.wpr); break;
    case 2: launch_r<TYPE, T, R, 2>(W, nW, xq, ds, y, res, ex, s, g.wpr); break;
    default: launch_r<TYPE, T, R, U4>(W, nW, xq, ds, y, res, ex, s, g.wpr); break;
    }
}

template <enum qtype TYPE, int T>
static void launch_t(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                     const gemv_experts *ex, cudaStream_t s) {
    if constexpr (T == 1 || T == 8) {
        const gemv_shape g = gemv_env<T>(); /* R = 8 only at T = 1 (gemv_env refuses it at T = 8) */
        switch (g.R) {
        case 1: launch_1r<TYPE, T, 1>(W, nW, xq, ds, y, res, ex, s, g); return;
        case 2: launch_1r<TYPE, T, 2>(W, nW, xq, ds, y, res, ex, s, g); return;
        case 4: launch_1r<TYPE, T, 4>(W, nW, xq, ds, y, res, ex, s, g); return;
        case 8:
            if constexpr (T == 1) {
                launch_1r<TYPE, 1, 8>(W, nW, xq, ds, y, res, ex, s, g);
                return;
            }
            break;
        default: break;
        }
    }
    if constexpr (T == 1) {
        /* rows of K >= 4096: 4 warps split each row (one unit a lane per step) and a block takes 8 rows
         * (2 above K = 16384), which loads each activation unit once for 8 rows. Sweep on the H200
         * (docs/cuda.md "T = 1 shapes"): 1.05-1.47x the GB/s of one row a block on 12 of 13 layer shapes
         * (0.98x on Q6_K at K = 17408), llama 8B tg128 281 -> 349 t/s; above K = 16384 two rows a block. */
        if (W->K >= 4096) {
            if (W->K > 16384) launch_r<TYPE, 1, 2, 1>(W, nW, xq, ds, y, res, ex, s, 4);
            else launch_r<TYPE, 1, 8, 1>(W, nW, xq, ds, y, res, ex, s, 4);
            return;
        }
        /* K < 4096 (one warp a row group by the K rule): 2 rows a warp, each lane loading 2 units before
         * computing. Same bits as the old 4-row (K <= 2048) and 1-row shapes (a lane's units are summed in
         * the same order). On the H200 (2026-12-02, one call): qwen35 0.8B tg128 581.5 against 519.3 t/s;
         * the 35B-A3B's K 2048 rows 2.3-4.3 us against 3.1-5.9 (N <= 4096), 7.3 against 6.9 at N 8192.
         * The routed experts (their other T = 1 rows take k_gemv_lean / k_gemv_pipe, gemv_run) 8 rows a warp,
         * one unit a lane, the same bits: the 35B-A3B's expert GEMVs alone 0.75-0.91x the time (gate + up K
         * 2048 N 512, down K 512), its tg128 1.026x (H100, 2026-12-06 evening, docs/benchmarks.md). */
        if (ex) launch_r<TYPE, 1, 8, 1>(W, nW, xq, ds, y, res, ex, s);
        else launch_r<TYPE, 1, 2, 2>(W, nW, xq, ds, y, res, ex, s);
        return;
    }
    if (W->K <= 2048 && gemv_rows<T>::R < 4) launch_r<TYPE, T, 4>(W, nW, xq, ds, y, res, ex, s);
    else launch_r<TYPE, T, gemv_rows<T>::R>(W, nW, xq, ds, y, res, ex, s);
}

template <enum qtype TYPE>
static void launch_type(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                        int T, const gemv_experts *ex, cudaStream_t s) {
    switch (T) {
    case 1: launch_t<TYPE, 1>(W, nW, xq, ds, y, res, ex, s); break;
    case 2: launch_t<TYPE, 2>(W, nW, xq, ds, y, res, ex, s); break;
    case 3: launch_t<TYPE, 3>(W, nW, xq, ds, y, res, ex, s); break;
    case 4: launch_t<TYPE, 4>(W, nW, xq, ds, y, res, ex, s); break;
    case 5: launch_t<TYPE, 5>(W, nW, xq, ds, y, res, ex, s); break;
    case 6: launch_t<TYPE, 6>(W, nW, xq, ds, y, res, ex, s); break;
    case 7: launch_t<TYPE, 7>(W, nW, xq, ds, y, res, ex, s); break;
    case 8: launch_t<TYPE, 8>(W, nW, xq, ds, y, res, ex, s); break;
    /* more rows (batched decode): the T = 8 kernel over chunks of 8 in one launch (W read from memory once);
     * LLM170_CUDA_GEMV_BATCH=mma: tensor cores with the same bits (k_gemv_mma, 0.4-0.9x of this on the H200) */
    default:
        if (nW == 1 && !ex && gemv_batch_mma()) launch_mma<TYPE>(W, xq, ds, y[0], res, T, s);
        else launch_r<TYPE, 8, gemv_rows<8>::R, gemv_unroll<gemv_rows<8>::R>::v, true>(W, nW, xq, ds, y, res, ex, s, 0, T);
    }
}

/* form: the T = 1 kernel (0 k_gemv_q, 2 / 4 / 8 k_gemv_stream with that many rows a group, 11 / 12 / 14
 * k_gemv_lean with 1 / 2 / 4 rows a warp, 122 / 142 k_gemv_pipe with 2 / 4 rows a warp and 2 items in flight,
 * -1 the default below); T > 1 takes k_gemv_q whatever the form */
static int gemv_run(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res, int T,
                    const gemv_experts *ex, cudaStream_t s, int form = -1) {
    if (!W || nW < 1 || nW > GEMV_GROUP || !xq || !ds || T < 1 || (T > 8 && (nW > 1 || ex)) ||
        T > CUDA_GEMV_BATCH_MAX || ((uintptr_t)xq & 15))
        return CUDA_KERR_ARGS;
    for (int i = 0; i < nW; i++) {
        const cuda_qmat *w = &W[i];
        if (w->bias && (ex || T > 8)) return CUDA_KERR_ARGS; /* a bias only on the decode forms (up to 8 rows) */
        if (!w->qs || !w->meta || !y[i] || w->type != W->type || w->K != W->K || w->N < 1 || w->K < 32 ||
            w->K % gemv_meta_group(w->type) || w->K > (int64_t)1 << 30 || w->N > (int64_t)1 << 30 ||
            ((uintptr_t)w->qs & 15) || (gemv_hi_bytes(w->type) && !w->hi))
            return CUDA_KERR_ARGS;
    }
    /* the default at T = 1 without experts: k_gemv_pipe with 2 rows a warp and 2 items in flight where the
     * launch's matrices hold >= 24 Mi weights (member 0's N x K x members), k_gemv_lean with 2 rows a warp else
     * (docs/cuda.md "The pipelined T = 1 GEMV": the pipe everywhere K >= 4096 gave tg128 1.03x lean's on the 27B
     * shape and 1.01x on the 8B but 0.99x on the 35B-A3B, whose K 4096 x N 2048 projections run faster on the
     * lean kernel alone, 3.65 against 4.19 us; with the size rule the 35B-A3B ties and the others gain
     * 1.007-1.015x more. Until 2026-12-07 the pipe also wanted K >= 4096; without it the wide lm_heads of small K
     * take it too, the 0.5B's K 896 x N 151936 alone 28.0 against 40.0 us, its tg128 GPU time a step 0.96x,
     * H100, docs/benchmarks.md); k_gemv_q for the routed experts (an experts form of the lean kernel took
     * 0.87-1.13x its time there). Both load their first weights before the PDL wait (docs/cuda.md "A GEMV's first
     * weights before the wait": tg128 1.01-1.06x on an H100) */
    if (form < 0) form = ex ? 0 : W->N * W->K * nW >= (int64_t)24 << 20 ? 122 : 12;
    if (T == 1 && !ex && form > 10) return gemv_lean_run(W, nW, xq, ds, y, res, form, s);
    if (T == 1 && !ex && form) return gemv_stream_run(W, nW, xq, ds, y, res, form, s);
    const int rc = gemv_by_type(W->type, [&](auto t) {
        launch_type<t.value>(W, nW, xq, ds, y, res, T, ex, s);
        return CUDA_KERR_OK;
    });
    return rc ? rc : launch_status();
}

extern "C" int cuda_gemv_q(const cuda_qmat *W, const int8_t *xq, const float *ds, float *y, int T, cudaStream_t s) {
    return gemv_run(W, 1, xq, ds, &y, NULL, T, NULL, s);
}

extern "C" int cuda_gemv_q_res(const cuda_qmat *W, const int8_t *xq, const float *ds, float *y, float *res, int T,
                               cudaStream_t s) {
    if (!res) return CUDA_KERR_ARGS;
    return gemv_run(W, 1, xq, ds, &y, res, T, NULL, s);
}

extern "C" int cuda_gemv_q_group(const cuda_qmat *W, int n, const int8_t *xq, const float *ds, float *const *y, int T,
                                 cudaStream_t s) {
    return gemv_run(W, n, xq, ds, y, NULL, T, NULL, s);
}

extern "C" int cuda_gemv_q1_form(const cuda_qmat *W, int n, const int8_t *xq, const float *ds, float *const *y,
                                 float *res, int rows, cudaStream_t s) {
    if (rows < 0) return CUDA_KERR_ARGS; /* a form neither runner knows is CUDA_KERR_ARGS from its switch */
    return gemv_run(W, n, xq, ds, y, res, 1, NULL, s, rows);
}

extern "C" int cuda_gemv_q_experts(const cuda_qmat *W, int E, const int32_t *sel, int n_slots, int xdiv,
                                   const int8_t *xq, const float *ds, float *y, cudaStream_t s) {
    if (!sel || E < 1 || xdiv < 1 || n_slots < 0) return CUDA_KERR_ARGS;
    if (!n_slots) return CUDA_KERR_OK;
    const gemv_experts ex = {sel, E, xdiv, n_slots};
    return gemv_run(W, 1, xq, ds, &y, NULL, 1, &ex, s);
}

extern "C" int cuda_gemv_q_experts_group(const cuda_qmat *W, int n, int E, const int32_t *sel, int n_slots, int xdiv,
                                         const int8_t *xq, const float *ds, float *const *y, cudaStream_t s) {
    if (!sel || E < 1 || xdiv < 1 || n_slots < 0) return CUDA_KERR_ARGS;
    if (!n_slots) return CUDA_KERR_OK;
    const gemv_experts ex = {sel, E, xdiv, n_slots};
    return gemv_run(W, n, xq, ds, y, NULL, 1, &ex, s);
}
