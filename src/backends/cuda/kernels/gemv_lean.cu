/* gemv_lean: the T = 1 GEMV (y[N] = x[K] . W^T, one activation row; plain, residual and grouped forms) with
 * one warp a row group and few instructions a unit, the same bits as k_gemv_q (gemv.cu).
 *
 * Why: the T = 1 GEMV is bound by the SM's instruction issue, not by the bytes in flight (docs/benchmarks.md,
 * "the shared-memory-staged GEMV": the same time on the H100 as on the H200, more loads in flight slower).
 * k_gemv_stream spends ~100 instructions a Q4_K unit and row (cuobjdump -sass: ~200 in its R = 2 loop): at
 * K = 4096 its 4 warps a row give each lane one unit a row group, so every unit pays the row group's address
 * and member arithmetic, the scale decode branches on the lane, and the offset types subtract per byte.
 * The H200 reads 4.45 TB/s over 132 SMs at 1.98 GHz: 17 bytes an SM a clock against 128 thread
 * instructions, so a 16-byte unit must cost well under 120 instructions for the read to be the bound.
 *
 * Here one warp takes a whole row group (R rows): lane l takes units l + 32 k, k = 0, 1, .. (so each row's
 * addresses are formed once and each step is an immediate offset), CH steps' loads issued before their
 * arithmetic. The same bits as k_gemv_q: there (rows of K >= 4096) lane l of warp w sums units w*32 + l +
 * 128 i in i order, the warps' sums are reduced by the butterfly and added in warp order; here unit l + 32 k
 * goes to accumulator k % 4 (NRL = 4 roles), which is warp w = k % 4's sum in the same order, the
 * butterfly is the same per value (warp_sum_many), and the four roles are added in order. Rows of K < 4096
 * have one role (k_gemv_q's one warp a row group). Each unit's integer dot product is exact however it is
 * formed, so the float term (gemv_term's operations) is the same:
 *   - the offset types (Q4_0 - 8, Q5_0 - 16, Q6_K - 32) take the unsigned values and subtract offset * the
 *     activation unit's integer sum (formed once for the unit's R rows), not per byte;
 *   - high nibbles are masked in place (16x the nibble, a u8 x s8 dot product) and the sum shifted by 4;
 *   - the Q4_K / Q5_K scale and min come from shifts and masks fixed per lane (j = lane & 7), no branch.
 *
 * k_gemv_pipe (below) streams the same terms through a persistent grid with the loads of the next items in flight
 * across chunk and row-group ends: ncu later showed the lean kernel waiting on its loads (issue slots 27% busy),
 * not issue-bound, at 2 rows a warp. gemv_run takes it where a launch holds >= 24 Mi weights and this kernel
 * below (docs/cuda.md, "The pipelined T = 1 GEMV"). */
#include <stdint.h>

#include "backends/cuda/kernels/gemv_common.cuh"

/* u8 x s8 four-way dot product plus c (dp4a.u32.s32) */
static __device__ __forceinline__ int dp4a_us(uint32_t a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

/* one unit's raw bytes: q (Q8_0: q and q2) the quants, h the high bits, m the scale bytes (Q4_K / Q5_K the
 * super-block's 16; Q6_K x = the word of this unit's two int8 scales, y = the word of d; Q4_1 x = (d, m);
 * Q4_0 / Q5_0 / Q8_0 x = d) */
template <enum qtype TYPE> struct lean_raw {
    uint4 q, q2;
    uint2 h;
    uint4 m;
};

/* per-lane constants of the Q4_K / Q5_K scale decode (j = lane & 7): sc = ((w1 >> s1) & m1) | ((w3 >> s3) &
 * m3), mn = ((w2 >> s1) & m1) | ((w3 >> (s3 + 4)) & m3) with w1..w3 the scale words: for j < 4 sc = byte j of
 * w1 & 63; for j >= 4 sc = (byte j - 4 of w3 & 15) | (byte j - 4 of w1 >> 2 & 0x30) (gemv_unit_scale) */
struct lean_lane {
    int j, s1, s3;
    uint32_t m1, m3;
};

static __device__ __forceinline__ lean_lane lean_lane_of(int lane) {
    lean_lane c;
    c.j = lane & 7;
    const int sh = 8 * (c.j & 3);
    const bool lo = c.j < 4;
    c.s1 = sh + (lo ? 0 : 2);
    c.s3 = sh;
    c.m1 = lo ? 63u : 0x30u;
    c.m3 = lo ? 0u : 15u;
    return c;
}

/* unit u's loads from a row's planes (q, h, m already at the row's first unit; m of K-quants at the row's first
 * super-block) */
template <enum qtype TYPE>
static __device__ __forceinline__ void lean_load(const uint8_t *__restrict__ q, const uint8_t *__restrict__ h,
                                                 const uint8_t *__restrict__ m, int u, const lean_lane &c,
                                                 lean_raw<TYPE> &r) {
    if (TYPE == QT_Q8_0) {
        const uint4 *p = (const uint4 *)(q + (size_t)u * 32);
        r.q = __ldcs(p), r.q2 = __ldcs(p + 1);
    } else {
        r.q = __ldcs((const uint4 *)(q + (size_t)u * 16));
    }
    if (TYPE == QT_Q5_0 || TYPE == QT_Q5_K) r.h.x = __ldcs((const unsigned *)(h + (size_t)u * 4));
    if (TYPE == QT_Q6_K) r.h = __ldcs((const uint2 *)(h + (size_t)u * 8));
    if (TYPE == QT_Q4_K || TYPE == QT_Q5_K) {
        r.m = __ldcs((const uint4 *)(m + (size_t)(u >> 3) * 16));
    } else if (TYPE == QT_Q6_K) {
        const uint8_t *g = m + (size_t)(u >> 3) * 20;
        r.m.x = __ldcs((const unsigned *)(g + 4 * (c.j >> 1)));
        r.m.y = __ldcs((const unsigned *)(g + 16));
    } else if (TYPE == QT_Q4_1) {
        r.m.x = __ldcs((const unsigned *)(m + (size_t)u * 4));
    } else {
        r.m.x = __ldcs((const unsigned short *)(m + (size_t)u * 2));
    }
}

/* the activation unit: its 32 int8 as x0 (values 0..15) and x1 (16..31), d = (dx, sx), and for the offset
 * types the integer sums of its halves */
struct lean_x {
    int4 x0, x1;
    float2 d;
    int s0, s1;
};

template <enum qtype TYPE>
static __device__ __forceinline__ lean_x lean_xload(const int8_t *__restrict__ xq, const float2 *__restrict__ ds, int u) {
    lean_x x;
    const int4 *xp = (const int4 *)(xq + (size_t)u * 32);
    x.x0 = __ldg(xp), x.x1 = __ldg(xp + 1);
    x.d = __ldg(ds + u);
    x.s0 = x.s1 = 0;
    if (TYPE == QT_Q4_0 || TYPE == QT_Q5_0 || TYPE == QT_Q6_K) {
        const int one = 0x01010101;
        x.s0 = __dp4a(x.x0.x, one, __dp4a(x.x0.y, one, __dp4a(x.x0.z, one, __dp4a(x.x0.w, one, 0))));
        x.s1 = __dp4a(x.x1.x, one, __dp4a(x.x1.y, one, __dp4a(x.x1.z, one, __dp4a(x.x1.w, one, 0))));
    }
    return x;
}

/* value word s (values 4s..4s+3 of the half s >> 2) of a 5- or 6-bit type: the nibbles n (low nibbles for
 * s < 4, else the high ones, in bits 0..3 of each byte) with the high bits of h put at bit 4 (Q5) or 4..5 (Q6) */
template <enum qtype TYPE, int S>
static __device__ __forceinline__ uint32_t lean_hi_word(uint32_t n, const uint2 &h) {
    if (TYPE == QT_Q5_0 || TYPE == QT_Q5_K) {
        /* bit s of each byte of h to bit 4 */
        const uint32_t t = S <= 4 ? h.x << (4 - S) : h.x >> (S - 4);
        return n | (t & 0x10101010u);
    } else {
        /* bits 2 (s & 3) .. + 1 of each byte of word s >> 2 to bits 4..5 */
        const uint32_t w = (S >> 2) ? h.y : h.x;
        constexpr int SH = 2 * (S & 3);
        const uint32_t t = SH <= 4 ? w << (4 - SH) : w >> (SH - 4);
        return n | (t & 0x30303030u);
    }
}

/* the unit's exact integer sum(s): lo over values 0..15, hi over 16..31 (only Q6_K keeps them apart) */
template <enum qtype TYPE>
static __device__ __forceinline__ void lean_isum(const lean_raw<TYPE> &r, const lean_x &x, int &lo, int &hi) {
    const uint32_t q0 = r.q.x, q1 = r.q.y, q2 = r.q.z, q3 = r.q.w;
    if (TYPE == QT_Q8_0) {
        lo = __dp4a((int)q0, x.x0.x, __dp4a((int)q1, x.x0.y, __dp4a((int)q2, x.x0.z, __dp4a((int)q3, x.x0.w, 0))));
        hi = __dp4a((int)r.q2.x, x.x1.x,
                    __dp4a((int)r.q2.y, x.x1.y, __dp4a((int)r.q2.z, x.x1.z, __dp4a((int)r.q2.w, x.x1.w, 0))));
    } else if (TYPE == QT_Q4_0 || TYPE == QT_Q4_1 || TYPE == QT_Q4_K) {
        const uint32_t L = 0x0F0F0F0Fu, H = 0xF0F0F0F0u;
        lo = __dp4a((int)(q0 & L), x.x0.x, __dp4a((int)(q1 & L), x.x0.y, __dp4a((int)(q2 & L), x.x0.z, __dp4a((int)(q3 & L), x.x0.w, 0))));
        /* 16 x the high nibbles, unsigned: the sum is 16 x theirs exactly */
        const int h16 = dp4a_us(q0 & H, x.x1.x, dp4a_us(q1 & H, x.x1.y, dp4a_us(q2 & H, x.x1.z, dp4a_us(q3 & H, x.x1.w, 0))));
        hi = h16 >> 4;
        if (TYPE == QT_Q4_0) lo -= 8 * x.s0, hi -= 8 * x.s1;
    } else {
        const uint32_t L = 0x0F0F0F0Fu;
        const uint32_t w0 = lean_hi_word<TYPE, 0>(q0 & L, r.h), w1 = lean_hi_word<TYPE, 1>(q1 & L, r.h);
        const uint32_t w2 = lean_hi_word<TYPE, 2>(q2 & L, r.h), w3 = lean_hi_word<TYPE, 3>(q3 & L, r.h);
        const uint32_t w4 = lean_hi_word<TYPE, 4>((q0 >> 4) & L, r.h), w5 = lean_hi_word<TYPE, 5>((q1 >> 4) & L, r.h);
        const uint32_t w6 = lean_hi_word<TYPE, 6>((q2 >> 4) & L, r.h), w7 = lean_hi_word<TYPE, 7>((q3 >> 4) & L, r.h);
        lo = __dp4a((int)w0, x.x0.x, __dp4a((int)w1, x.x0.y, __dp4a((int)w2, x.x0.z, __dp4a((int)w3, x.x0.w, 0))));
        hi = __dp4a((int)w4, x.x1.x, __dp4a((int)w5, x.x1.y, __dp4a((int)w6, x.x1.z, __dp4a((int)w7, x.x1.w, 0))));
        if (TYPE == QT_Q5_0) lo -= 16 * x.s0, hi -= 16 * x.s1;
        if (TYPE == QT_Q6_K) lo -= 32 * x.s0, hi -= 32 * x.s1;
    }
}

/* gemv_unit_scale's a, b, sc0, sc1 from the raw scale bytes, the same float operations */
template <enum qtype TYPE>
static __device__ __forceinline__ gemv_scale lean_scale(const lean_raw<TYPE> &r, const lean_lane &c) {
    gemv_scale s;
    s.b = 0.0f;
    s.sc0 = s.sc1 = 1;
    if (TYPE == QT_Q4_K || TYPE == QT_Q5_K) {
        const int sc = (int)(((r.m.y >> c.s1) & c.m1) | ((r.m.w >> c.s3) & c.m3));
        const int mn = (int)(((r.m.z >> c.s1) & c.m1) | ((r.m.w >> (c.s3 + 4)) & c.m3));
        s.a = gemv_f16((uint16_t)(r.m.x & 0xffff)) * (float)sc;
        s.b = -(gemv_f16((uint16_t)(r.m.x >> 16)) * (float)mn);
    } else if (TYPE == QT_Q6_K) {
        const int sh = 16 * (c.j & 1);
        s.a = gemv_f16((uint16_t)(r.m.y & 0xffff));
        s.sc0 = (int)(int8_t)(r.m.x >> sh);
        s.sc1 = (int)(int8_t)(r.m.x >> (sh + 8));
    } else {
        s.a = gemv_f16((uint16_t)(r.m.x & 0xffff));
        if (TYPE == QT_Q4_1) s.b = gemv_f16((uint16_t)(r.m.x >> 16));
    }
    return s;
}

/* gemv_term's float operations on the exact integer sums */
template <enum qtype TYPE>
static __device__ __forceinline__ float lean_term(int lo, int hi, const float2 d, const gemv_scale &sc) {
    constexpr bool HAS_B = TYPE == QT_Q4_1 || TYPE == QT_Q4_K || TYPE == QT_Q5_K;
    const int isum = TYPE == QT_Q6_K ? sc.sc0 * lo + sc.sc1 * hi : lo + hi;
    float p = __fmul_rn(sc.a, __fmul_rn(d.x, (float)isum));
    if (HAS_B) p = __fadd_rn(p, __fmul_rn(sc.b, d.y));
    return p;
}

/* steps k0 .. k0 + CH - 1 of a lane (FULL: all below steps): their loads, then their terms into the roles'
 * accumulators (step k0 + i is role i % NRL: k0 is a multiple of CH, so of NRL) */
template <enum qtype TYPE, int R, int CH, bool FULL>
static __device__ __forceinline__ void lean_chunk_load(const uint8_t *const *qp, const uint8_t *const *hp,
                                                       const uint8_t *const *mp, const lean_lane &c, int k0, int steps,
                                                       lean_raw<TYPE> (*w)[R]) {
#pragma unroll
    for (int i = 0; i < CH; i++)
        if (FULL || k0 + i < steps)
#pragma unroll
            for (int r = 0; r < R; r++) lean_load<TYPE>(qp[r], hp[r], mp[r], (k0 + i) * 32, c, w[i][r]);
}

template <enum qtype TYPE, int R, int NRL, int CH, bool FULL>
static __device__ __forceinline__ void lean_chunk_terms(const int8_t *__restrict__ xq, const float2 *__restrict__ ds,
                                                        const lean_lane &c, int k0, int steps,
                                                        const lean_raw<TYPE> (*w)[R], float *acc) {
#pragma unroll
    for (int i = 0; i < CH; i++) {
        if (!FULL && k0 + i >= steps) break;
        const lean_x x = lean_xload<TYPE>(xq, ds, (k0 + i) * 32);
#pragma unroll
        for (int r = 0; r < R; r++) {
            int lo, hs;
            lean_isum<TYPE>(w[i][r], x, lo, hs);
            acc[r * NRL + i % NRL] =
                __fadd_rn(acc[r * NRL + i % NRL], lean_term<TYPE>(lo, hs, x.d, lean_scale<TYPE>(w[i][r], c)));
        }
    }
}

template <enum qtype TYPE, int R, int NRL, int CH, bool FULL>
static __device__ __forceinline__ void lean_chunk(const uint8_t *const *qp, const uint8_t *const *hp,
                                                  const uint8_t *const *mp, const int8_t *__restrict__ xq,
                                                  const float2 *__restrict__ ds, const lean_lane &c, int k0, int steps,
                                                  float *acc) {
    lean_raw<TYPE> w[CH][R];
    lean_chunk_load<TYPE, R, CH, FULL>(qp, hp, mp, c, k0, steps, w);
    lean_chunk_terms<TYPE, R, NRL, CH, FULL>(xq, ds, c, k0, steps, w, acc);
}

/* row group g's (of member m) first row, and each row's planes at this lane's first unit (rows past N repeat
 * the last: loaded, never written) */
template <enum qtype TYPE, int R>
static __device__ __forceinline__ int lean_group_of(const gemv_mats &P, unsigned m, unsigned g, int U, int lane,
                                                    const uint8_t **qp, const uint8_t **hp, const uint8_t **mp) {
    constexpr int QB = gemv_qs_bytes(TYPE), HB = gemv_hi_bytes(TYPE), MB = gemv_meta_bytes(TYPE);
    constexpr bool KQ = gemv_meta_group(TYPE) == 256;
    const uint8_t *qs = m == 0 ? P.qs[0] : m == 1 ? P.qs[1] : P.qs[2];
    const uint8_t *hi = m == 0 ? P.hi[0] : m == 1 ? P.hi[1] : P.hi[2];
    const uint8_t *meta = m == 0 ? P.meta[0] : m == 1 ? P.meta[1] : P.meta[2];
    const int N = m == 0 ? P.N[0] : m == 1 ? P.N[1] : P.N[2];
    const int row0 = (int)(g - P.b[m]) * R;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const size_t row = (size_t)min(row0 + r, N - 1);
        qp[r] = qs + (row * U + lane) * QB;
        hp[r] = HB ? hi + (row * U + lane) * HB : hi;
        mp[r] = KQ ? meta + (row * (U / 8) + (lane >> 3)) * MB : meta + (row * U + lane) * MB;
    }
    return row0;
}

/* a row group's end: its roles' sums over the warp, added in role order, written (and added to the residual) */
template <int R, int NRL>
static __device__ __forceinline__ void lean_finish(const gemv_mats &P, unsigned m, int row0, float *acc, int lane) {
    constexpr int NV = R * NRL, LG = log2_of<NV>::v;
    warp_sum_many<NV>(acc, lane); /* lane l now holds value l >> (5 - LG) in acc[0] */
    float *__restrict__ y = m == 0 ? P.y[0] : m == 1 ? P.y[1] : P.y[2];
    float *__restrict__ res = m == 0 ? P.res : NULL;
    const int N = m == 0 ? P.N[0] : m == 1 ? P.N[1] : P.N[2];
    /* row r's roles are values r * NRL .. + NRL - 1, held from lane (r * NRL + role) << (5 - LG): lane r adds
     * them in role order (k_gemv_q's order of its warps' sums) */
    float s = __shfl_sync(0xffffffffu, acc[0], ((lane % R) * NRL) << (5 - LG));
#pragma unroll
    for (int i = 1; i < NRL; i++) s = __fadd_rn(s, __shfl_sync(0xffffffffu, acc[0], ((lane % R) * NRL + i) << (5 - LG)));
    if (lane < R && row0 + lane < N) {
        s = gemv_biased(gemv_bias_of(P, m), row0 + lane, s);
        y[row0 + lane] = s;
        if (res) res[row0 + lane] = __fadd_rn(res[row0 + lane], s);
    }
}

/* Blocks of GEMV_MAX_WARPS warps, a warp a row group of R rows (row group g = blockIdx.x * warps + warp over
 * the members' groups, gemv_mats_of with R rows a "block"); NRL roles (4 for K >= 4096, else 1); CH steps a
 * chunk (a multiple of NRL: the role of step k is then its place in the chunk). */
template <enum qtype TYPE, int R, int NRL, int CH>
__global__ void __launch_bounds__(32 * GEMV_MAX_WARPS)
    k_gemv_lean(const gemv_mats P, const int8_t *__restrict__ xq, const float2 *__restrict__ ds, int K) {
    pdl_weights_first(); /* the first chunk's weights are loaded before pdl_enter() */
    static_assert(CH % NRL == 0, "a chunk holds whole rounds of the roles");
    constexpr int NV = R * NRL;
    static_assert(NV == pow2_ceil<NV>::v && NV <= 32, "R * NRL: a power of two <= 32");
    const int lane = threadIdx.x & 31;
    const unsigned g = blockIdx.x * GEMV_MAX_WARPS + (threadIdx.x >> 5);
    if (g >= P.b[P.n]) return; /* no barrier in this kernel: a warp past the last group just leaves */
    const unsigned m = gemv_member(P, g);
    const int U = K / 32;
    const uint8_t *qp[R], *hp[R], *mp[R];
    const int row0 = lean_group_of<TYPE, R>(P, m, g, U, lane, qp, hp, mp);
    const int steps = (U - lane + 31) / 32; /* this lane's units: lane + 32 k < U */
    const lean_lane c = lean_lane_of(lane);
    xq += (size_t)lane * 32;
    ds += lane;
    float acc[NV];
#pragma unroll
    for (int i = 0; i < NV; i++) acc[i] = 0.0f;
    { /* the first chunk: its weights in flight while the kernel before this one finishes */
        lean_raw<TYPE> w[CH][R];
        if (CH <= steps) lean_chunk_load<TYPE, R, CH, true>(qp, hp, mp, c, 0, steps, w);
        else lean_chunk_load<TYPE, R, CH, false>(qp, hp, mp, c, 0, steps, w);
        pdl_enter();
        if (CH <= steps) lean_chunk_terms<TYPE, R, NRL, CH, true>(xq, ds, c, 0, steps, w, acc);
        else lean_chunk_terms<TYPE, R, NRL, CH, false>(xq, ds, c, 0, steps, w, acc);
    }
    int k0 = CH;
    for (; k0 + CH <= steps; k0 += CH) lean_chunk<TYPE, R, NRL, CH, true>(qp, hp, mp, xq, ds, c, k0, steps, acc);
    if (k0 < steps) lean_chunk<TYPE, R, NRL, CH, false>(qp, hp, mp, xq, ds, c, k0, steps, acc);
    lean_finish<R, NRL>(P, m, row0, acc, lane);
}

/* the pipe's load cursor: item (lg, lk)'s loads into slot w (a lane past its units loads nothing), then the
 * cursor moves to the next item (the next row group's planes at its first step) */
template <enum qtype TYPE, int R>
static __device__ __forceinline__ void pipe_load(const gemv_mats &P, int U, int S, int steps, unsigned W, unsigned G,
                                                 int lane, const lean_lane &c, const uint8_t **qp, const uint8_t **hp,
                                                 const uint8_t **mp, unsigned &lg, int &lk, lean_raw<TYPE> *w) {
    if (lk < steps)
#pragma unroll
        for (int r = 0; r < R; r++) lean_load<TYPE>(qp[r], hp[r], mp[r], lk * 32, c, w[r]);
    if (++lk == S) {
        lk = 0, lg += W;
        if (lg < G) lean_group_of<TYPE, R>(P, gemv_member(P, lg), lg, U, lane, qp, hp, mp);
    }
}

/* k_gemv_lean's work as a pipeline (the "pipe" forms): a persistent grid, each warp taking row groups g, g + W,
 * .. (W the grid's warps) and their S = ceil(U / 32) steps as one stream of items (row group, step), with the
 * loads of D items in flight while it computes (item j's term, then item j + D's loads into its slot): a
 * warp's loads do not drain at each row group's end and the next group's start, as k_gemv_lean's do.
 * ncu (H100, Q4_K K 5120 N 17408): k_gemv_lean R = 2 holds 12 warps an SM (130 registers), whose warps wait on
 * their loads 61% of their cycles, the issue slots 27% busy, DRAM 53% of peak, and the time follows the SM
 * clock, not the memory's. The same terms into the same accumulators in the same order as k_gemv_lean (step
 * k of a row group to role k % NRL, a lane's steps past its units skipped), so the same bits. */
template <enum qtype TYPE, int R, int NRL, int D>
__global__ void __launch_bounds__(32 * GEMV_MAX_WARPS)
    k_gemv_pipe(const gemv_mats P, const int8_t *__restrict__ xq, const float2 *__restrict__ ds, int K) {
    pdl_weights_first(); /* the first D items' weights are loaded before pdl_enter() */
    constexpr int NV = R * NRL;
    static_assert(NV == pow2_ceil<NV>::v && NV <= 32, "R * NRL: a power of two <= 32");
    const int lane = threadIdx.x & 31;
    const unsigned W = gridDim.x * GEMV_MAX_WARPS, G = P.b[P.n];
    const unsigned g0 = blockIdx.x * GEMV_MAX_WARPS + (threadIdx.x >> 5);
    const int U = K / 32, S = (U + 31) / 32, steps = (U - lane + 31) / 32;
    if (g0 >= G) return; /* no barrier in this kernel; such a warp reads nothing */
    const int total = (int)((G - 1 - g0) / W + 1) * S; /* this warp's items */
    const lean_lane c = lean_lane_of(lane);
    xq += (size_t)lane * 32;
    ds += lane;
    /* the load cursor (row group lg, step lk, its rows' planes) and the compute cursor (cg, ck) */
    const uint8_t *qp[R], *hp[R], *mp[R];
    unsigned lg = g0, cg = g0;
    int lk = 0, ck = 0;
    unsigned cm = gemv_member(P, g0);
    int crow0 = lean_group_of<TYPE, R>(P, cm, g0, U, lane, qp, hp, mp);
    lean_raw<TYPE> w[D][R];
#pragma unroll
    for (int i = 0; i < D; i++) {
        if (i >= total) break;
        pipe_load<TYPE, R>(P, U, S, steps, W, G, lane, c, qp, hp, mp, lg, lk, w[i]);
    }
    pdl_enter();
    float acc[NV];
#pragma unroll
    for (int i = 0; i < NV; i++) acc[i] = 0.0f;
    for (int j0 = 0; j0 < total; j0 += D) {
#pragma unroll
        for (int i = 0; i < D; i++) {
            if (j0 + i >= total) break; /* uniform over the warp */
            if (ck < steps) {
                const lean_x x = lean_xload<TYPE>(xq, ds, ck * 32);
                const int role = NRL == 1 ? 0 : ck & (NRL - 1);
#pragma unroll
                for (int r = 0; r < R; r++) {
                    int lo, hs;
                    lean_isum<TYPE>(w[i][r], x, lo, hs);
                    const float t = lean_term<TYPE>(lo, hs, x.d, lean_scale<TYPE>(w[i][r], c));
#pragma unroll
                    for (int q = 0; q < NRL; q++)
                        if (q == role) acc[r * NRL + q] = __fadd_rn(acc[r * NRL + q], t);
                }
            }
            if (j0 + i + D < total) pipe_load<TYPE, R>(P, U, S, steps, W, G, lane, c, qp, hp, mp, lg, lk, w[i]);
            if (++ck == S) {
                lean_finish<R, NRL>(P, cm, crow0, acc, lane);
#pragma unroll
                for (int v = 0; v < NV; v++) acc[v] = 0.0f;
                ck = 0, cg += W;
                if (cg < G) cm = gemv_member(P, cg), crow0 = (int)(cg - P.b[cm]) * R;
            }
        }
    }
}

template <enum qtype TYPE, int R, int NRL, int CH>
static int launch_lean(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                       cudaStream_t s) {
    const gemv_mats P = gemv_mats_of(W, nW, y, res, R); /* "blocks" of R rows: a warp's row group */
    const unsigned groups = P.b[nW], grid = (groups + GEMV_MAX_WARPS - 1) / GEMV_MAX_WARPS;
    kl(k_gemv_lean<TYPE, R, NRL, CH>, grid, 32 * GEMV_MAX_WARPS, 0, s, P, xq, (const float2 *)ds, (int)W->K);
    return launch_status();
}

/* roles from K alone (k_gemv_q's warps a row group); steps a chunk so that a lane has ~8 units in flight */
template <enum qtype TYPE, int R>
static int launch_lean_r(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                         cudaStream_t s) {
    constexpr int CH = R == 1 ? 8 : 4;
    if (W->K / 32 >= 128) return launch_lean<TYPE, R, 4, 4>(W, nW, xq, ds, y, res, s);
    return launch_lean<TYPE, R, 1, CH>(W, nW, xq, ds, y, res, s);
}

/* The grid: at most the blocks that fit at once (a persistent grid), sized so that every warp takes the same
 * number of row groups: rounds of the full grid, then as many warps as that many rounds need (the full grid left
 * its last round partly empty: ncu on the H100, Q4_K K5120 N17408, SMs active 80% of the kernel's cycles; this
 * grid: alone 0.98-1.0x the time, tg128 1.004-1.006x, docs/benchmarks.md). A row's bits do not depend on it. */
template <enum qtype TYPE, int R, int NRL, int D>
static int launch_pipe(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                       cudaStream_t s) {
    const gemv_mats P = gemv_mats_of(W, nW, y, res, R);
    const unsigned cap = gemv_capacity<k_gemv_pipe<TYPE, R, NRL, D>>();
    if (!cap) return CUDA_KERR_LAUNCH;
    const unsigned groups = P.b[nW], cap_w = cap * GEMV_MAX_WARPS;
    const unsigned rounds = (groups + cap_w - 1) / cap_w, warps = (groups + rounds - 1) / rounds;
    const unsigned grid = (warps + GEMV_MAX_WARPS - 1) / GEMV_MAX_WARPS;
    kl(k_gemv_pipe<TYPE, R, NRL, D>, grid, 32 * GEMV_MAX_WARPS, 0, s, P, xq, (const float2 *)ds, (int)W->K);
    return launch_status();
}

template <enum qtype TYPE, int R, int D>
static int launch_pipe_r(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                         cudaStream_t s) {
    if (W->K / 32 >= 128) return launch_pipe<TYPE, R, 4, D>(W, nW, xq, ds, y, res, s);
    return launch_pipe<TYPE, R, 1, D>(W, nW, xq, ds, y, res, s);
}

template <enum qtype TYPE>
static int launch_lean_type(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y,
                            float *res, int form, cudaStream_t s) {
    switch (form) {
    case 11: return launch_lean_r<TYPE, 1>(W, nW, xq, ds, y, res, s);
    case 12: return launch_lean_r<TYPE, 2>(W, nW, xq, ds, y, res, s);
    case 14: return launch_lean_r<TYPE, 4>(W, nW, xq, ds, y, res, s);
    case 122: return launch_pipe_r<TYPE, 2, 2>(W, nW, xq, ds, y, res, s);
    case 142: return launch_pipe_r<TYPE, 4, 2>(W, nW, xq, ds, y, res, s);
    default: return CUDA_KERR_ARGS;
    }
}

/* Preconditions are gemv_run's (gemv.cu), which calls this only for T = 1. form (cuda_gemv_q1_form's numbers):
 * 11, 12, 14 k_gemv_lean with 1, 2, 4 rows a warp; 122, 142 k_gemv_pipe with 2, 4 rows a warp and 2 items in
 * flight (each with its first weights loaded before the PDL wait); others CUDA_KERR_ARGS */
int gemv_lean_run(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res, int form,
                  cudaStream_t s) {
    return gemv_by_type(W->type, [&](auto t) { return launch_lean_type<t.value>(W, nW, xq, ds, y, res, form, s); });
}
