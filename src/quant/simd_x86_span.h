/* simd_x86_span: dot products of one weight row with a SPAN of 1..QUANT_DOTN_MAX activation rows, up to
 * eight of them per pass over the row (quant.h: vec_dotn; internal to src/quant/, included by
 * simd_avx2.c and simd_avx512.c after simd_x86_multi.h).
 *
 * Why: a speculative verification is a span of 2-9 tokens of one sequence, and it must cost little more
 * than one decode step. The fixed-width kernels cover spans of 4 (and 8 on AVX-512); a span of 3, 5 or 9
 * left one-row vec_dot calls, each unpacking the weight row again, and one row alone runs at about half
 * the per-row rate of a multi-row kernel (it pays a block's unpacking, scales and mins alone, about as
 * many instructions as its products; measured L2-resident on Zen 3): a 3-token span cost ~2x
 * a decode step (docs/benchmarks.md, issue 16). Here a span of up to SPAN_CH rows (6 for Q6_K) is one
 * pass over the weight row, each block loaded and unpacked once for all of them; longer spans are split
 * into even chunks (9 = 5 + 4, never a lone row), the later ones reading the row again from L1 (a row is
 * at most a few KB: the weights come from memory once either way).
 *
 * Exactness: per row, the same int32 lanes as that ISA's vec_dot (integer sums in another order are the
 * same integers) and the same float operations in the same order (one conversion and fused multiply-add
 * per block and lane, the final horizontal sum), so s[j] is bit-identical to vec_dot(n, &s[j], x, y_j):
 * a token's logits do not depend on how many tokens share its span. tests/quant/test_quant_dot4.c checks
 * every nrows 1..QUANT_DOTN_MAX against vec_dot.
 *
 * Shape: one always-inline function per type over a whole row for a constant row count nj (1..SPAN_CH),
 * instantiated for each nj by SPAN_DISPATCH, so that each instance's loops over rows unroll and the
 * per-row int32 sums stay in registers (16 ymm on AVX2: 8 sums + the unpacked group and its scales; the
 * float accumulators, touched once per block, are what the compiler spills). Block-outer with all rows'
 * accumulators in a stack array and a chunk dispatch per block was tried: 1.22x the instructions of
 * vec_dot4 at four rows (cachegrind; the per-block row loops and dispatch) and ~1.28x its CPU time on
 * the 2-core Zen 3 VM (contended). */
#ifndef LLM170_QUANT_SIMD_X86_SPAN_H
#define LLM170_QUANT_SIMD_X86_SPAN_H

#include <assert.h>

#define SPAN_CH 8 /* rows per pass over the weight row, at most */
#define SPAN_INLINE static inline __attribute__((always_inline))

/* vec_dotn: the rows in ceil(nrows / MAXC) chunks as even as possible (MAXC <= SPAN_CH), each chunk
 * FN(n, s, x, y, nj) with nj a constant in every call (so that each instance unrolls), y the chunk's row
 * pointers */
#define SPAN_DISPATCH(NAME, FN, XT, YT, MAXC)                                                             \
    static void SIMD_NAME(NAME)(int64_t n, float *s, const void *vx, const void *vy, size_t ystride, int nrows) { \
        assert(nrows >= 1 && nrows <= QUANT_DOTN_MAX);                                                \
        const XT *x = vx;                                                                             \
        const YT *y[QUANT_DOTN_MAX];                                                                  \
        for (int j = 0; j < nrows; j++) y[j] = (const YT *)((const char *)vy + (size_t)j * ystride);  \
        const int nch = (nrows + (MAXC) - 1) / (MAXC);                                                \
        for (int c = 0, j0 = 0; c < nch; c++) {                                                       \
            const int j1 = nrows * (c + 1) / nch;                                                     \
            switch (j1 - j0) {                                                                        \
            case 8: FN(n, s + j0, x, y + j0, 8); break;                                               \
            case 7: FN(n, s + j0, x, y + j0, 7); break;                                               \
            case 6: FN(n, s + j0, x, y + j0, 6); break;                                               \
            case 5: FN(n, s + j0, x, y + j0, 5); break;                                               \
            case 4: FN(n, s + j0, x, y + j0, 4); break;                                               \
            case 3: FN(n, s + j0, x, y + j0, 3); break;                                               \
            case 2: FN(n, s + j0, x, y + j0, 2); break;                                               \
            default: FN(n, s + j0, x, y + j0, 1); break;                                              \
            }                                                                                         \
            j0 = j1;                                                                                  \
        }                                                                                             \
    }
_Static_assert(SPAN_CH == 8, "SPAN_DISPATCH lists chunks of 1..8 rows");

#define SPAN_ROWS _Pragma("GCC unroll 8") for (int j = 0; j < nj; j++)

/* ---- Q4_K / Q5_K against Q8_K: per block acc += isum * (d * dy), accm += mins; s = hsum(acc - accm) ---- */
/* UNPACK sets u_lo / u_hi, the unsigned values of group g's two sub-blocks (2g: low nibbles, 2g + 1: high) */
#define SPAN_K4(NAME, BLOCK, ...)                                                                     \
    SPAN_INLINE void SIMD_NAME(NAME)(int64_t n, float *s, const BLOCK *x, const block_q8_K *const *y, const int nj) { \
        __m256 acc[SPAN_CH], accm[SPAN_CH];                                                           \
        SPAN_ROWS acc[j] = accm[j] = _mm256_setzero_ps();                                             \
        for (int64_t b = 0; b < n / QK_K; b++) {                                                      \
            simd_prefetch(&x[b], (int)sizeof x[b]);                                                   \
            uint64_t sc8, mn8;                                                                        \
            simd_k4_unpack(x[b].scales, &sc8, &mn8);                                                  \
            const float d = _cvtsh_ss(x[b].d), dmin = _cvtsh_ss(x[b].dmin);                           \
            const __m256i mdup = simd_k4_mdup(mn8), sc = simd_u8x8_i16x2(sc8);                        \
            SPAN_ROWS accm[j] = simd_k4_mins_dup(accm[j], mdup, &y[j][b], dmin);                      \
            __m256i isum[SPAN_CH];                                                                    \
            SPAN_ROWS isum[j] = _mm256_setzero_si256();                                               \
            for (int g = 0; g < 4; g++) {                                                             \
                __m256i u_lo, u_hi;                                                                   \
                __VA_ARGS__                                                                           \
                const __m256i s0 = simd_pick(sc, 2 * g, 2 * g), s1 = simd_pick(sc, 2 * g + 1, 2 * g + 1); \
                SPAN_ROWS {                                                                           \
                    isum[j] = simd_dot_u8s8_scaled(isum[j], u_lo, simd_ld(y[j][b].qs + 64 * g), s0);  \
                    isum[j] = simd_dot_u8s8_scaled(isum[j], u_hi, simd_ld(y[j][b].qs + 64 * g + 32), s1); \
                }                                                                                     \
            }                                                                                         \
            SPAN_ROWS acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_set1_ps(d * y[j][b].d), acc[j]); \
        }                                                                                             \
        SPAN_ROWS s[j] = simd_hsum_ps(_mm256_sub_ps(acc[j], accm[j]));                                \
    }

SPAN_K4(q4_k_span, block_q4_K, {
    const __m256i q = simd_ld(x[b].qs + 32 * g);
    u_lo = simd_lo4(q);
    u_hi = simd_hi4(q);
})
SPAN_K4(q5_k_span, block_q5_K, {
    const __m256i q = simd_ld(x[b].qs + 32 * g), qh = simd_ld(x[b].qh), sixteen = _mm256_set1_epi8(16);
    const __m256i b0 = _mm256_set1_epi8((char)(1 << (2 * g))), b1 = _mm256_set1_epi8((char)(2 << (2 * g)));
    u_lo = _mm256_or_si256(simd_lo4(q), _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b0), b0), sixteen));
    u_hi = _mm256_or_si256(simd_hi4(q), _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), sixteen));
})
SPAN_DISPATCH(q4_k_vec_dotn_q8_k, SIMD_NAME(q4_k_span), block_q4_K, block_q8_K, 8)
SPAN_DISPATCH(q5_k_vec_dotn_q8_k, SIMD_NAME(q5_k_span), block_q5_K, block_q8_K, 8)

/* ---- Q6_K against Q8_K: isum starts at -32 * sum sc * bsums (the offset of every value) ---------------- */
SPAN_INLINE void SIMD_NAME(q6_k_span)(int64_t n, float *s, const block_q6_K *x, const block_q8_K *const *y,
                                      const int nj) {
    __m256 acc[SPAN_CH];
    SPAN_ROWS acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        const __m128i s8 = _mm_loadu_si128((const __m128i *)x[b].scales);
        const __m256i s16 = _mm256_cvtepi8_epi16(s8);
        const float d = _cvtsh_ss(x[b].d);
        __m256i isum[SPAN_CH];
        SPAN_ROWS isum[j] =
            _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(simd_scaled_bsums(s16, &y[j][b]), 5));
        for (int h = 0; h < 2; h++) {
            __m256i u[4];
            simd_q6_half(x[b].ql + 64 * h, x[b].qh + 32 * h, u);
            const __m256i sc = simd_i8x8_i16x2(h ? _mm_srli_si128(s8, 8) : s8);
            for (int k = 0; k < 4; k++) {
                const __m256i sk = simd_pick(sc, 2 * k, 2 * k + 1);
                SPAN_ROWS isum[j] = simd_dot_u8s8_scaled(isum[j], u[k], simd_ld(y[j][b].qs + 128 * h + 32 * k), sk);
            }
        }
        SPAN_ROWS acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_set1_ps(d * y[j][b].d), acc[j]);
    }
    SPAN_ROWS s[j] = simd_hsum_ps(acc[j]);
}
/* six rows at most: with the half's four unpacked groups and the scale pick live, eight sums do not fit 16 ymm */
SPAN_DISPATCH(q6_k_vec_dotn_q8_k, SIMD_NAME(q6_k_span), block_q6_K, block_q8_K, 6)

/* ---- 32-value blocks against Q8_0 (Q5_0, Q8_0): per block isum = |q| . (y * sign(q)), acc += isum * (dx * dy) ---- */
#define SPAN_S8(NAME, BLOCK, QEXPR)                                                                   \
    SPAN_INLINE void SIMD_NAME(NAME)(int64_t n, float *s, const BLOCK *x, const block_q8_0 *const *y, const int nj) { \
        __m256 acc[SPAN_CH];                                                                          \
        SPAN_ROWS acc[j] = _mm256_setzero_ps();                                                       \
        for (int64_t b = 0; b < n / 32; b++) {                                                        \
            simd_prefetch(&x[b], (int)sizeof x[b]);                                                   \
            const __m256i q = (QEXPR), aq = _mm256_sign_epi8(q, q);                                   \
            const float dx = _cvtsh_ss(x[b].d);                                                       \
            SPAN_ROWS {                                                                               \
                const __m256i yq = _mm256_sign_epi8(simd_load32(y[j][b].qs), q);                     \
                const __m256i isum = simd_dot_u8s8(_mm256_setzero_si256(), aq, yq);                   \
                acc[j] = simd_scale_acc(acc[j], isum, dx * _cvtsh_ss(y[j][b].d));                     \
            }                                                                                         \
        }                                                                                             \
        SPAN_ROWS s[j] = simd_hsum_ps(acc[j]);                                                        \
    }
SPAN_S8(q8_0_span, block_q8_0, simd_load32(x[b].qs))
SPAN_S8(q5_0_span, block_q5_0, _mm256_sub_epi8(simd_q5_values(x[b].qs, x[b].qh), _mm256_set1_epi8(16)))
SPAN_DISPATCH(q8_0_vec_dotn_q8_0, SIMD_NAME(q8_0_span), block_q8_0, block_q8_0, 8)
SPAN_DISPATCH(q5_0_vec_dotn_q8_0, SIMD_NAME(q5_0_span), block_q5_0, block_q8_0, 8)

#undef SPAN_S8
#undef SPAN_K4
#undef SPAN_ROWS
#undef SPAN_DISPATCH
#undef SPAN_INLINE
#undef SPAN_CH

static void SIMD_NAME(simd_x86_register_span)(quant_table t, enum quant_isa isa) {
    static const struct {
        enum qtype type;
        quant_vec_dotn_fn fn;
    } span[] = {
        {QT_Q4_K, SIMD_NAME(q4_k_vec_dotn_q8_k)}, {QT_Q5_K, SIMD_NAME(q5_k_vec_dotn_q8_k)},
        {QT_Q6_K, SIMD_NAME(q6_k_vec_dotn_q8_k)}, {QT_Q5_0, SIMD_NAME(q5_0_vec_dotn_q8_0)},
        {QT_Q8_0, SIMD_NAME(q8_0_vec_dotn_q8_0)},
    };
    for (size_t i = 0; i < sizeof span / sizeof span[0]; i++) t[span[i].type][isa].vec_dotn = span[i].fn;
}

#endif
