/* mmq: the grouped expert product of MoE prefill on int8 tensor cores over q8_1 activations,
 *     Y[slot][N] = x[slot / xdiv] . W[e(slot)]^T          for every routed slot,
 * the integer counterpart of gemm_q.cu's cuda_gemm_q_experts (which dequantizes every tile's weights to
 * bf16 in shared memory: at ~16 slots an expert that float work, not the MMAs, is the kernel's time).
 *
 * W: the E experts' N x K matrices back to back ([E * N][K]) in the GEMV layout (gemv_unpack.h, made by
 * cuda_repack at load): per 32-value unit 16 bytes of nibbles (Q8_0: 32 bytes of int8), high bits (Q5_0 /
 * Q5_K: 4 bytes, Q6_K: 8) and scales per unit or per 256-value super-block. Types Q4_0, Q4_1, Q5_0, Q8_0,
 * Q4_K, Q5_K, Q6_K; K % 256 == 0. x: q8_1 rows (kernels/quantize.cu), xq[rows][K] int8 and ds[rows][K/32]
 * (d, d * sum q). Y f32 [n_slots][N]; rows of slots routed nowhere are not written.
 *
 * Why this shape: the weights stay quantized. A lane's fragment word of a unit is one word of the unit's
 * 16 quant bytes (values 4c..4c+3 in its low nibbles, 16+4c.. in its high ones: gemv_unpack_word, a few
 * integer ops, no float per weight), so a k32 step of mma.sync m16n8k32 s8 is exactly one unit, whose
 * int32 sums get the unit's scales afterwards (mmq_unit.h: the arithmetic, its exactness and its error
 * bound). The accumulator of each MMA starts at 1.5 * 2^23 as an integer, so its bits read as a float are
 * 1.5 * 2^23 + sum (|sum| < 2^22): one FADD turns the sum into a float, no I2F (a 1/8-rate conversion).
 * Q6_K's units have two 16-value halves with their own scales: two m16n8k16 MMAs.
 *
 * Tiling: a block of 4 warps computes 64 weight rows (a warp 16: the MMA's M) x one tile of the group table
 * (cuda_moe_group with bm = 8 NT slots of one expert; n8 MMA tiles past the tile's count are skipped, so a
 * tile of 16 slots costs 2 of them), stepping through K 256 values (8 units, one k-quant super-block) at a
 * time. Per step, cp.async copies into one of ST stages: each row's quants, high bits and scale bytes of the
 * step; each slot's 256 int8 activations (gathered by slot / xdiv) and its 8 units' (d, S), stored unit-major
 * so that a lane's two slots are one 16-byte load. ldmatrix reads the fragments: rows of 16 bytes at strides
 * of 16 mod 128 bytes (conflict-free). Each warp decodes its own rows' unit scales into a table once per
 * step (4 per lane). Grid: x the 64-row blocks of N, y the table's tiles (cuda_moe_tiles_max: blocks past
 * the tile count exit). Rows past N read zeros and are not stored.
 *
 * Bits: every output is its row's units in order through mmq_unit_acc, the integer sums exact: nothing
 * depends on the tile's other slots, its size (NT), the stage count or the grid, so a slot's result is the
 * same for any T and any routing of the others (prefill in chunks gives one pass's bits), and the host
 * model (mmq_unit.h over the same q8_1 rows) gives them too.
 *
 * Dense form (cuda_mmq_dense, g NULL): one matrix over T rows in order, tile y the rows 8 NT y ..: the
 * executor's batched decode rows (more than 8 one-token spans in a step), the bits of E = 1 with a table. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "backends/cuda/kernels.h"
#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/mmq_unit.h"
#include "backends/cuda/kernels/prefill_mma.cuh"

#define MMQ_WARPS 4
#define MMQ_THREADS (32 * MMQ_WARPS)
#define MMQ_BW (16 * MMQ_WARPS) /* weight rows a block */
#define MMQ_KS 8                /* units (of 32 values) a k step */
#define MMQ_MAGIC 0x4B400000    /* the bits of 1.5 * 2^23 */

/* the type's bytes per row and step in each plane of the GEMV layout */
template <enum qtype QT> struct mmq_type {
    static constexpr int QSB = gemv_qs_bytes(QT);         /* quants a unit */
    static constexpr int HIB = gemv_hi_bytes(QT);         /* high bits a unit */
    static constexpr bool KQ = gemv_meta_group(QT) == 256; /* one meta group a step (k-quants) or one a unit */
    static constexpr int MB = gemv_meta_bytes(QT);        /* bytes a meta group */
    static constexpr int META = KQ ? MB : MB * MMQ_KS;    /* meta bytes a row and step: 16, 20 (Q6_K) or 32 (Q4_1) */
    static constexpr int MG = META % 16 == 0 ? 16 : 4;    /* their cp.async granule (Q6_K's 20 are only 4-aligned) */
};

/* one stage: quants, high bits and meta of MMQ_BW rows (rows padded by 16 bytes: strides of 16 mod 128), the
 * int8 activations of BS slots (padded likewise) and their (d, S) as [unit][slot]; after the ST stages each
 * warp's scale table [unit][16 rows] (float2) and, for Q6_K, its rows' super-block scale a */
template <enum qtype QT, int NT, int ST> struct mmq_smem {
    typedef mmq_type<QT> T;
    static constexpr int BS = 8 * NT;
    static constexpr int QS_ROW = MMQ_KS * T::QSB + 16;
    static constexpr int HI_ROW = T::HIB > 0 ? MMQ_KS * T::HIB + 16 : 0;
    static constexpr int META_ROW = (T::META + 15) / 16 * 16;
    static constexpr int XQ_ROW = MMQ_KS * 32 + 16;
    static constexpr int QS = 0;
    static constexpr int HI = QS + MMQ_BW * QS_ROW;
    static constexpr int META = HI + MMQ_BW * HI_ROW;
    static constexpr int XQ = META + MMQ_BW * META_ROW;
    static constexpr int DS = XQ + BS * XQ_ROW;
    static constexpr int STAGE = DS + MMQ_KS * BS * 8;
    static constexpr int TAB = ST * STAGE;
    static constexpr int ROWA = TAB + MMQ_WARPS * MMQ_KS * 16 * 8;
    static constexpr int BYTES = ROWA + MMQ_BW * 4;
    /* mmq_load's thread maps: whole rows a pass for every plane, 2 threads a meta row, n8 tiles in pairs */
    static_assert(MMQ_BW % (MMQ_THREADS * 16 / (MMQ_KS * T::QSB)) == 0 && MMQ_THREADS == 2 * MMQ_BW && NT % 2 == 0,
                  "mmq_load's thread maps");
};

struct mmq_args {
    const uint8_t *qs, *hi, *meta; /* the GEMV layout's planes of all E * N rows */
    const int8_t *xq;
    const float *ds;
    float *Y;
    const int32_t *g; /* the group table (cuda_moe_group, tiles of 8 NT slots) */
    int n_slots, xdiv, N, K;
};

/* cp.async of B (4 or 8) bytes, of which src_bytes are read and the rest zero-filled */
template <int B> __device__ __forceinline__ void mmq_cp_async(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(B), "r"(src_bytes));
}

/* d[0..3] = A (16 x 32 s8) . B (32 x 8 s8) as floats (fragments as gemv.cu's mma_k32): the accumulators start
 * at MMQ_MAGIC, so 1.5 * 2^23 + sum is read back as a float and the sum is one exact subtraction away */
__device__ __forceinline__ void mmq_k32(float *f, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                        uint32_t b1) {
    int d[4];
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %10, %10, %10};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(MMQ_MAGIC));
#pragma unroll
    for (int e = 0; e < 4; e++) f[e] = __fsub_rn(__int_as_float(d[e]), 12582912.0f);
}
/* the same over 16 values (a0 / a1: rows g / g + 8, b0: column g): Q6_K's halves */
__device__ __forceinline__ void mmq_k16(float *f, uint32_t a0, uint32_t a1, uint32_t b0) {
    int d[4];
    asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %7, %7, %7};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a0), "r"(a1), "r"(b0), "r"(MMQ_MAGIC));
#pragma unroll
    for (int e = 0; e < 4; e++) f[e] = __fsub_rn(__int_as_float(d[e]), 12582912.0f);
}

/* issue the copies of step kt into stage st: rows row0 .. row0 + 63 of W (those at n0 + r >= N zero-filled)
 * and the tile's cnt8 activation rows xrow[] (-1: zero-filled). A row's bytes of a step are contiguous in
 * each plane, so thread tid always takes granule tid % CH of rows tid / CH + k 128 / CH (CH granules a row):
 * one base address a copy class, advanced by constant strides. */
template <enum qtype QT, int NT, int ST>
__device__ __forceinline__ void mmq_load(uint8_t *st, int kt, const mmq_args &a, size_t row0, int n0, int cnt8,
                                         const int *xrow) {
    typedef mmq_type<QT> T;
    typedef mmq_smem<QT, NT, ST> L;
    const int tid = threadIdx.x, U = a.K / 32;
    const uint32_t base = pf_smem_addr(st);
    { /* quants: 8 or 16 granules a row */
        constexpr int CH = MMQ_KS * T::QSB / 16, RS = MMQ_THREADS / CH;
        const int c = tid % CH, r = tid / CH;
        const size_t stride = (size_t)RS * U * T::QSB;
        const uint8_t *src = a.qs + ((row0 + r) * U + (size_t)kt * MMQ_KS) * T::QSB + 16 * c;
#pragma unroll
        for (int k = 0; k < MMQ_BW / RS; k++) {
            const bool ok = n0 + r + k * RS < a.N;
            pf_cp_async16(base + L::QS + (r + k * RS) * L::QS_ROW + 16 * c, ok ? src + k * stride : a.qs, ok ? 16 : 0);
        }
    }
    if constexpr (T::HIB > 0) { /* high bits: 2 (Q5_0 / Q5_K) or 4 (Q6_K) granules a row */
        constexpr int CH = MMQ_KS * T::HIB / 16, RS = MMQ_THREADS / CH;
        const int c = tid % CH, r = tid / CH;
        const size_t stride = (size_t)RS * U * T::HIB;
        const uint8_t *src = a.hi + ((row0 + r) * U + (size_t)kt * MMQ_KS) * T::HIB + 16 * c;
#pragma unroll
        for (int k = 0; k < MMQ_BW / RS; k++) {
            const bool ok = n0 + r + k * RS < a.N;
            pf_cp_async16(base + L::HI + (r + k * RS) * L::HI_ROW + 16 * c, ok ? src + k * stride : a.hi, ok ? 16 : 0);
        }
    }
    { /* meta: one group a row (k-quants) or 8 unit metas */
        const int r = tid % MMQ_BW, h = tid / MMQ_BW; /* 2 threads a row */
        const bool ok = n0 + r < a.N;
        const size_t group = T::KQ ? (row0 + r) * (size_t)(U / 8) + kt : (row0 + r) * U + (size_t)kt * MMQ_KS;
        const uint8_t *src = a.meta + group * T::MB;
        const uint32_t dst = base + L::META + r * L::META_ROW;
        if constexpr (T::MG == 4) { /* Q6_K's 20 bytes: granules h, h + 2, h + 4 */
#pragma unroll
            for (int c = h; c < T::META / 4; c += 2) mmq_cp_async<4>(dst + 4 * c, ok ? src + 4 * c : a.meta, ok ? 4 : 0);
        } else {
#pragma unroll
            for (int c = h; c < T::META / 16; c += 2) pf_cp_async16(dst + 16 * c, ok ? src + 16 * c : a.meta, ok ? 16 : 0);
        }
    }
    { /* activations: 16 granules a slot row, 8 rows a pass */
        const int c = tid & 15;
#pragma unroll
        for (int k = 0; k < NT; k++) {
            const int r = (tid >> 4) + 8 * k;
            if (r >= cnt8) break;
            const int x = xrow[r];
            const int8_t *src = x >= 0 ? a.xq + (size_t)x * a.K + (size_t)kt * 256 + 16 * c : a.xq;
            pf_cp_async16(base + L::XQ + r * L::XQ_ROW + 16 * c, src, x >= 0 ? 16 : 0);
        }
    }
    { /* their (d, S): 8 units a slot row, 16 rows a pass, stored [unit][slot] */
        const int u = tid & 7;
#pragma unroll
        for (int k = 0; k < NT / 2; k++) {
            const int r = (tid >> 3) + 16 * k;
            if (r >= cnt8) break;
            const int x = xrow[r];
            const float *src = x >= 0 ? a.ds + ((size_t)x * U + (size_t)kt * MMQ_KS + u) * 2 : a.ds;
            mmq_cp_async<8>(base + L::DS + (u * L::BS + r) * 8, src, x >= 0 ? 8 : 0);
        }
    }
}

/* the MMAs of one resident step (stage st) for this warp's 16 rows and the tile's cnt slots into acc[n8 tile]
 * (c0, c1: row g, slots 2c, 2c + 1 of the n8 tile; c2, c3: row g + 8) */
template <enum qtype QT, int NT, int ST>
__device__ __forceinline__ void mmq_step(const uint8_t *st, float2 *tab, float *rowa, int cnt, float (&acc)[NT][4]) {
    typedef mmq_type<QT> T;
    typedef mmq_smem<QT, NT, ST> L;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
    { /* the warp's scale table: lane -> row lane % 16, units 4 (lane / 16) .. + 3 */
        const int rr = lane & 15, j0 = (lane >> 4) * 4;
        const uint8_t *m = st + L::META + (16 * warp + rr) * L::META_ROW;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int j = j0 + i;
            float p0, p1, a6;
            mmq_unit_scale(QT, T::KQ ? m : m + j * T::MB, T::KQ ? j : 0, &p0, &p1, &a6);
            tab[j * 16 + rr] = make_float2(p0, p1);
            if (QT == QT_Q6_K && i == 0 && j0 == 0) rowa[rr] = a6;
        }
        __syncwarp();
    }
    float a6[2] = {0.0f, 0.0f};
    if constexpr (QT == QT_Q6_K) a6[0] = rowa[g], a6[1] = rowa[g + 8];
    /* ldmatrix row addresses: lane l gives row (l & 7) of matrix l >> 3 */
    const int lr = (lane & 7) + ((lane >> 3) & 1) * 8, lm = lane >> 4;
    const uint32_t qs_lane = pf_smem_addr(st + L::QS + (16 * warp + lr) * L::QS_ROW);
    const uint32_t xq_lane = pf_smem_addr(st + L::XQ + (lane & 7) * L::XQ_ROW + ((lane >> 3) & 1) * 16 + lm * 32);
    const uint8_t *hi_g = st + L::HI + (16 * warp + g) * L::HI_ROW, *hi_g8 = hi_g + 8 * L::HI_ROW;
#pragma unroll
    for (int u = 0; u < MMQ_KS; u += 2) {
        uint32_t aw[2][4]; /* units u, u + 1: a0 (row g, word c), a1 (row g + 8), a2 / a3 (word c + 4) */
        if constexpr (QT == QT_Q8_0) {
#pragma unroll
            for (int uu = 0; uu < 2; uu++) pf_ldmatrix_x4(aw[uu], qs_lane + (u + uu) * 32 + lm * 16);
        } else {
            uint32_t q[4]; /* (row g, u), (g + 8, u), (g, u + 1), (g + 8, u + 1): word c of each unit */
            pf_ldmatrix_x4(q, qs_lane + (u + lm) * 16);
#pragma unroll
            for (int uu = 0; uu < 2; uu++) {
                uint32_t h0[2] = {0, 0}, h8[2] = {0, 0};
                if constexpr (T::HIB == 4) {
                    h0[0] = *(const uint32_t *)(hi_g + (u + uu) * 4);
                    h8[0] = *(const uint32_t *)(hi_g8 + (u + uu) * 4);
                } else if constexpr (T::HIB == 8) {
                    const uint2 v0 = *(const uint2 *)(hi_g + (u + uu) * 8), v8 = *(const uint2 *)(hi_g8 + (u + uu) * 8);
                    h0[0] = v0.x, h0[1] = v0.y, h8[0] = v8.x, h8[1] = v8.y;
                }
                aw[uu][0] = gemv_unpack_word(QT, q[2 * uu], h0, c);
                aw[uu][1] = gemv_unpack_word(QT, q[2 * uu + 1], h8, c);
                aw[uu][2] = gemv_unpack_word(QT, q[2 * uu], h0, c + 4);
                aw[uu][3] = gemv_unpack_word(QT, q[2 * uu + 1], h8, c + 4);
            }
        }
        float2 sc[2][2]; /* [unit][row g, g + 8] */
#pragma unroll
        for (int uu = 0; uu < 2; uu++) sc[uu][0] = tab[(u + uu) * 16 + g], sc[uu][1] = tab[(u + uu) * 16 + g + 8];
#pragma unroll
        for (int j = 0; j < NT; j++) {
            if (8 * j >= cnt) break; /* uniform over the block */
            uint32_t b[4]; /* b0, b1 of unit u, then of unit u + 1 (slot 8j + g, words c and c + 4) */
            pf_ldmatrix_x4(b, xq_lane + 8 * j * L::XQ_ROW + u * 32);
#pragma unroll
            for (int uu = 0; uu < 2; uu++) {
                const float4 dv = *(const float4 *)(st + L::DS + ((u + uu) * L::BS + 8 * j + 2 * c) * 8);
                float lo[4], hi[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                if constexpr (QT == QT_Q6_K) {
                    mmq_k16(lo, aw[uu][0], aw[uu][1], b[2 * uu]);
                    mmq_k16(hi, aw[uu][2], aw[uu][3], b[2 * uu + 1]);
                } else {
                    mmq_k32(lo, aw[uu][0], aw[uu][1], aw[uu][2], aw[uu][3], b[2 * uu], b[2 * uu + 1]);
                }
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float2 p = sc[uu][e >> 1];
                    acc[j][e] = mmq_unit_acc(QT, acc[j][e], lo[e], hi[e], e & 1 ? dv.z : dv.x, e & 1 ? dv.w : dv.y,
                                             p.x, p.y, a6[e >> 1]);
                }
            }
        }
    }
}

/* grid (ceil(N / 64), cuda_moe_tiles_max(n_slots, E, 8 NT)), MMQ_THREADS threads, mmq_smem::BYTES of dynamic
 * shared memory. Block (x, y): rows 64x .. of tile y's expert, the tile's slots. Launch bounds: 3 blocks an
 * SM (what the shared memory allows at best) lets ptxas use up to 170 registers; it takes 71-128 (sm_90, no
 * spills). */
template <enum qtype QT, int NT, int ST>
__global__ void __launch_bounds__(MMQ_THREADS, 3) mmq_experts_kernel(mmq_args a) {
    pdl_enter();
    typedef mmq_smem<QT, NT, ST> L;
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ int slot_s[L::BS], xrow_s[L::BS];
    int e = 0, first, cnt;
    if (a.g) {
        if ((int)blockIdx.y >= a.g[a.n_slots]) return; /* past the tiles: uniform over the block */
        const int32_t *tile = a.g + a.n_slots + 1 + 3 * blockIdx.y;
        e = tile[0], first = tile[1], cnt = tile[2];
    } else { /* one matrix, the slots in order (cuda_mmq_dense): tile y is slots BS y .. */
        first = (int)blockIdx.y * L::BS, cnt = min(L::BS, a.n_slots - first);
    }
    const int cnt8 = (cnt + 7) & ~7;
    const int n0 = blockIdx.x * MMQ_BW, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int r = threadIdx.x; r < L::BS; r += MMQ_THREADS) {
        const int slot = r < cnt ? (a.g ? a.g[first + r] : first + r) : -1;
        slot_s[r] = slot, xrow_s[r] = slot < 0 ? -1 : slot / a.xdiv;
    }
    __syncthreads();
    const size_t row0 = (size_t)e * a.N + n0;
    const int nk = a.K / 256;
    float2 *tab = (float2 *)(smem + L::TAB) + warp * MMQ_KS * 16;
    float *rowa = (float *)(smem + L::ROWA) + warp * 16;
    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int q = 0; q < 4; q++) acc[j][q] = 0.0f;

#pragma unroll
    for (int s = 0; s < ST - 1; s++) {
        if (s < nk) mmq_load<QT, NT, ST>(smem + s * L::STAGE, s, a, row0, n0, cnt8, xrow_s);
        pf_cp_async_commit();
    }
    for (int kt = 0; kt < nk; kt++) {
        /* step kt resident; the barrier also says every warp is done with step kt - 1, whose stage is refilled */
        pf_cp_async_wait<ST - 2>();
        __syncthreads();
        if (kt + ST - 1 < nk)
            mmq_load<QT, NT, ST>(smem + ((kt + ST - 1) % ST) * L::STAGE, kt + ST - 1, a, row0, n0, cnt8, xrow_s);
        pf_cp_async_commit();
        mmq_step<QT, NT, ST>(smem + (kt % ST) * L::STAGE, tab, rowa, cnt, acc);
    }
    pf_cp_async_wait<0>();

    const int g = lane >> 2, c = lane & 3;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        if (8 * j >= cnt) break;
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int i = 8 * j + 2 * c + (q & 1), n = n0 + 16 * warp + g + 8 * (q >> 1);
            if (i < cnt && n < a.N) a.Y[(size_t)slot_s[i] * a.N + n] = acc[j][q];
        }
    }
}

/* ---- launchers ---- */

static bool mmq_type_ok(int type) {
    switch (type) {
    case QT_Q4_0: case QT_Q4_1: case QT_Q5_0: case QT_Q8_0: case QT_Q4_K: case QT_Q5_K: case QT_Q6_K: return true;
    default: return false;
    }
}

extern "C" int cuda_mmq_experts_supports(int type, int64_t K) { return mmq_type_ok(type) && K >= 256 && K % 256 == 0; }

/* 64-slot tiles (8 n8 MMA tiles) once experts average 48 slots (about 768 tokens of top 8 of 256), else 32:
 * the tile never changes a bit, only how often an expert's weights are read and unpacked */
extern "C" int cuda_mmq_tile(int n_slots, int E) { return E > 0 && n_slots >= 48 * E ? 64 : 32; }

template <enum qtype QT, int NT, int ST> static int mmq_cfg(const mmq_args &a, int E, cudaStream_t s) {
    typedef mmq_smem<QT, NT, ST> L;
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
        return CUDA_KERR_LAUNCH;
    if (optin - 1024 < (int)L::BYTES) return CUDA_KERR_UNSUPPORTED; /* 1 KB kept for the static tables */
    if (cudaFuncSetAttribute(mmq_experts_kernel<QT, NT, ST>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)L::BYTES) != cudaSuccess ||
        cudaFuncSetAttribute(mmq_experts_kernel<QT, NT, ST>, cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxShared) != cudaSuccess)
        return CUDA_KERR_LAUNCH;
    const int64_t tiles = a.g ? cuda_moe_tiles_max(a.n_slots, E, L::BS) : (a.n_slots + L::BS - 1) / L::BS;
    const dim3 grid((unsigned)((a.N + MMQ_BW - 1) / MMQ_BW), (unsigned)tiles);
    kl(mmq_experts_kernel<QT, NT, ST>, grid, MMQ_THREADS, (size_t)L::BYTES, s, a);
    return pf_launched();
}

/* 3 stages where K has 3 steps or more, else 2 (K = 512: both steps' copies in flight at once) */
template <enum qtype QT> static int mmq_launch(const mmq_args &a, int E, int bm, cudaStream_t s) {
    const bool st3 = a.K / 256 >= 3;
    if (bm == 64) return st3 ? mmq_cfg<QT, 8, 3>(a, E, s) : mmq_cfg<QT, 8, 2>(a, E, s);
    return st3 ? mmq_cfg<QT, 4, 3>(a, E, s) : mmq_cfg<QT, 4, 2>(a, E, s);
}

extern "C" int cuda_mmq_experts(const cuda_qmat *W, int E, const int8_t *xq, const float *ds, int xdiv,
                                const int32_t *g, int bm, float *Y, int n_slots, cudaStream_t s) {
    if (!W) return CUDA_KERR_ARGS;
    if (!cuda_mmq_experts_supports(W->type, W->K)) return CUDA_KERR_UNSUPPORTED;
    const bool need_hi = gemv_hi_bytes(W->type) > 0;
    if (!W->qs || !W->meta || (need_hi && !W->hi) || !xq || !ds || (!g && E != 1) || !Y || E < 1 || n_slots < 1 ||
        xdiv < 1 || W->N < 1 || W->N > INT32_MAX / 2 || (bm != 32 && bm != 64) ||
        cuda_moe_tiles_max(n_slots, E, bm) > 65535 ||
        (((uintptr_t)W->qs | (uintptr_t)W->meta | (uintptr_t)(need_hi ? W->hi : NULL) | (uintptr_t)xq) & 15) ||
        ((uintptr_t)ds & 7) || ((uintptr_t)Y & 3))
        return CUDA_KERR_ARGS;
    const mmq_args a = {(const uint8_t *)W->qs, (const uint8_t *)W->hi, (const uint8_t *)W->meta, xq, ds, Y, g,
                        n_slots, xdiv, (int)W->N, (int)W->K};
    switch (W->type) {
    case QT_Q4_0: return mmq_launch<QT_Q4_0>(a, E, bm, s);
    case QT_Q4_1: return mmq_launch<QT_Q4_1>(a, E, bm, s);
    case QT_Q5_0: return mmq_launch<QT_Q5_0>(a, E, bm, s);
    case QT_Q8_0: return mmq_launch<QT_Q8_0>(a, E, bm, s);
    case QT_Q4_K: return mmq_launch<QT_Q4_K>(a, E, bm, s);
    case QT_Q5_K: return mmq_launch<QT_Q5_K>(a, E, bm, s);
    default: return mmq_launch<QT_Q6_K>(a, E, bm, s);
    }
}

/* one matrix over T rows in order: the tiles cuda_moe_group would make for E = 1 (every slot on expert 0),
 * without the table */
extern "C" int cuda_mmq_dense(const cuda_qmat *W, const int8_t *xq, const float *ds, float *Y, int T, int bm,
                              cudaStream_t s) {
    if (W && W->bias) return CUDA_KERR_ARGS; /* as the batched GEMV: the executor adds a bias after */
    return cuda_mmq_experts(W, 1, xq, ds, 1, NULL, bm, Y, T, s);
}
