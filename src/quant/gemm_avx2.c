/* gemm_avx2: the int8 matrix-product kernel of gemm.h on AVX2 without VNNI (Zen 2/3, Intel before
 * AVX-512), and the panel interleave of gemm_pack.
 *
 * AVX2 has no u8 x s8 -> int32 dot product: vpmaddubsw multiplies u8 by s8 and adds adjacent pairs into
 * int16, saturating; vpmaddwd by ones then adds int16 pairs into int32. The sums must stay exact, so the
 * method depends on the panel's u range (quant.h's umax; activations q in -128..127):
 *   umax <= 127: a vpmaddubsw lane u0 q0 + u1 q1 lies in [-256 umax, 254 umax], and the sum of d such
 *     lanes stays inside int16 while d * umax <= 128. So d steps (4 values each) are summed in int16
 *     before one vpmaddwd: d = 8 for the 4-bit types (a whole sub-block of 32), 4 for the 5-bit ones, 2
 *     for Q6_K. vpmaddwd shares the multiply pipes with vpmaddubsw, so it costs 1/d of them.
 *   off == 128 (Q8_0, IQ4_NL, IQ4_XS; u up to 255): the signed values w = u - 128 through the sign trick,
 *     vpmaddubsw(|w|, sign(q, w)): |w| <= 128 and sign(q, w) = +-q, exact while q != -128, which the
 *     activation quantizers never write (q8_0_from_float and q8_k_from_float scale the largest magnitude
 *     to 127; the vec_dot kernels rely on it too). A pair is then within 2 * 128 * 127 = 32512, so d = 1,
 *     and the sum is sum (u - 128) q itself, the reference's xo + sum u q: xo is not added.
 * Any other u range has no exact method here: gemm_avx2_supports says so and the type stays on vec_dot.
 *
 * Register tile: the panel's 32 rows (four ymm, one per 8-row group of the layout) x TT = 2 tokens. Per
 * step of 4 values: 4 weight loads, 2 activation broadcasts, 8 vpmaddubsw and 8 int16 adds into 8 sum
 * registers; each weight vector serves both tokens, each broadcast all 32 rows. A third token would need
 * 12 sum registers of the 16 and leave too few for the weights. The float block sums and totals (16
 * vectors) stay in memory, touched once per sub-block. Per sub-block the int32 sums go through one
 * conversion and one fused multiply-add in the order gemm.h defines, so each output is bit-identical to
 * gemm_run_ref. A token group past t1 reuses the last token (results not stored).
 *
 * Three things keep GCC (12) from undoing the tile (without each, the generated inner loop spills or
 * reloads): int16 sums added with vpaddsw, which GCC cannot reassociate into a tree that keeps every
 * product live (the sums never saturate, so the result is vpaddw's); empty asm statements on the weight
 * vectors (else GCC reloads each one per token) and on the sign trick's int32 sums; and one asm "memory"
 * barrier per sub-block that keeps the float sums in memory rather than in the registers the inner loop
 * needs. */
#include <immintrin.h>
#include <string.h>

#include "quant/gemm.h"

#define TT 2              /* tokens per register tile */
#define NG (GEMM_PANEL / 8) /* 8-row groups of a panel, one ymm of int32 lanes each */

static inline __attribute__((always_inline)) __m256i bcast4(const int8_t *q) {
    int32_t v;
    memcpy(&v, q, 4);
    return _mm256_set1_epi32(v);
}

/* One step (values 4 st .. 4 st + 3 of the sub-block at qj) of the unsigned method: h = (first ? 0 : h) +
 * the int16 pair sums of u x q, for 32 rows x TT tokens. */
static inline __attribute__((always_inline)) void step_u8(const uint8_t *u, const int8_t *const qj[TT], int st,
                                                          __m256i h[TT][NG], const bool first) {
    __m256i qb[TT];
    _Pragma("GCC unroll 2")
    for (int i = 0; i < TT; i++) qb[i] = bcast4(qj[i] + 4 * st);
    _Pragma("GCC unroll 4")
    for (int r = 0; r < NG; r++) {
        __m256i w = _mm256_load_si256((const __m256i *)(u + 32 * r));
        __asm__("" : "+x"(w)); /* one load for both tokens (see the header) */
        _Pragma("GCC unroll 2")
        for (int i = 0; i < TT; i++) {
            const __m256i pr = _mm256_maddubs_epi16(w, qb[i]);
            h[i][r] = first ? pr : _mm256_adds_epi16(h[i][r], pr); /* never saturates: d * umax <= 128 */
        }
    }
}

/* Tokens t, t + 1 against the whole panel. sb, has_min, sgn (the sign trick, for off == 128) and d (steps
 * summed in int16 before vpmaddwd, a power of two dividing sb / 4; 1 when sgn) are constants of each
 * variant, so the loops unroll and the sums stay in registers. */
static inline __attribute__((always_inline)) void tile(const gemm_panel *p, const gemm_acts *x, int t, int t1,
                                                       const int32_t *rows, float *y, int64_t ldy, const int sb,
                                                       const bool has_min, const bool sgn, const int d) {
    const int64_t K = p->K, nsb = K / sb, nag = nsb / x->ag;
    gemm_token tk[TT];
    _Pragma("GCC unroll 2")
    for (int i = 0; i < TT; i++) tk[i] = gemm_acts_token(x, t + i < t1 ? t + i : t1 - 1);
    const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);
    /* the float block sums and totals, in memory (L1): in registers they would take all 16 */
    _Alignas(32) float blk[TT][GEMM_PANEL], acc[TT][GEMM_PANEL];
    _Pragma("GCC unroll 8")
    for (int k = 0; k < TT * GEMM_PANEL; k += 8) _mm256_store_ps(acc[0] + k, _mm256_setzero_ps());
    /* Q8_0 / Q8_1 activations: an activation block is one sub-block, so blk = fma(i, S, 0) goes straight
     * into the total, without the round trip through blk */
    const bool one = x->ag == 1;
    const uint8_t *u = p->u;
    int64_t j = 0;
    for (int64_t g = 0; g < nag; g++) {
        if (!one) {
            _Pragma("GCC unroll 8")
            for (int k = 0; k < TT * GEMM_PANEL; k += 8) _mm256_store_ps(blk[0] + k, _mm256_setzero_ps());
        }
        for (int jj = 0; jj < x->ag; jj++, j++) {
            __m256i s[TT][NG]; /* the sub-block's int32 sums */
            const int8_t *qj[TT];
            _Pragma("GCC unroll 2")
            for (int i = 0; i < TT; i++) qj[i] = tk[i].q + j * sb;
            if (sgn) {
                _Pragma("GCC unroll 2")
                for (int i = 0; i < TT; i++)
                    _Pragma("GCC unroll 4")
                    for (int r = 0; r < NG; r++) s[i][r] = _mm256_setzero_si256();
                _Pragma("GCC unroll 8")
                for (int st = 0; st < sb / 4; st++, u += 4 * GEMM_PANEL) {
                    __m256i qb[TT];
                    _Pragma("GCC unroll 2")
                    for (int i = 0; i < TT; i++) qb[i] = bcast4(qj[i] + 4 * st);
                    _Pragma("GCC unroll 4")
                    for (int r = 0; r < NG; r++) {
                        const __m256i w = _mm256_xor_si256(_mm256_load_si256((const __m256i *)(u + 32 * r)), flip);
                        const __m256i wa = _mm256_abs_epi8(w); /* -128 -> 0x80, read as u8 128 */
                        _Pragma("GCC unroll 2")
                        for (int i = 0; i < TT; i++) {
                            const __m256i pr = _mm256_maddubs_epi16(wa, _mm256_sign_epi8(qb[i], w));
                            s[i][r] = _mm256_add_epi32(s[i][r], _mm256_madd_epi16(pr, ones));
                            __asm__("" : "+x"(s[i][r])); /* a chain, not a tree (see the header) */
                        }
                    }
                }
            } else {
                _Pragma("GCC unroll 8")
                for (int c = 0; c < sb / 4; c += d) {
                    __m256i h[TT][NG]; /* int16 pair sums of d steps */
                    _Pragma("GCC unroll 8")
                    for (int st = c; st < c + d; st++, u += 4 * GEMM_PANEL) step_u8(u, qj, st, h, st == c);
                    _Pragma("GCC unroll 2")
                    for (int i = 0; i < TT; i++) {
                        /* xo joins with the first chunk, so that nothing else is live during it */
                        const __m256i xb = _mm256_set1_epi32(tk[i].xo[j]);
                        _Pragma("GCC unroll 4")
                        for (int r = 0; r < NG; r++)
                            s[i][r] = _mm256_add_epi32(c == 0 ? xb : s[i][r], _mm256_madd_epi16(h[i][r], ones));
                    }
                }
            }
            __m256 ab[TT];
            _Pragma("GCC unroll 2")
            for (int i = 0; i < TT; i++) ab[i] = _mm256_set1_ps(tk[i].a[g]);
            _Pragma("GCC unroll 4")
            for (int r = 0; r < NG; r++) {
                const __m256 S = _mm256_load_ps(p->S + j * GEMM_PANEL + 8 * r);
                _Pragma("GCC unroll 2")
                for (int i = 0; i < TT; i++) {
                    const __m256 b = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[i][r]), S,
                                                     one ? _mm256_setzero_ps() : _mm256_load_ps(blk[i] + 8 * r));
                    if (one) _mm256_store_ps(acc[i] + 8 * r, _mm256_fmadd_ps(b, ab[i], _mm256_load_ps(acc[i] + 8 * r)));
                    else _mm256_store_ps(blk[i] + 8 * r, b);
                }
            }
            __asm__ volatile("" : : "r"(blk), "r"(acc) : "memory"); /* the float sums stay in memory */
        }
        if (one) continue;
        _Pragma("GCC unroll 2")
        for (int i = 0; i < TT; i++) {
            const __m256 ab = _mm256_set1_ps(tk[i].a[g]);
            _Pragma("GCC unroll 4")
            for (int r = 0; r < NG; r++)
                _mm256_store_ps(acc[i] + 8 * r,
                                _mm256_fmadd_ps(_mm256_load_ps(blk[i] + 8 * r), ab, _mm256_load_ps(acc[i] + 8 * r)));
        }
    }
    if (has_min)
        for (j = 0; j < nsb; j++) {
            _Pragma("GCC unroll 2")
            for (int i = 0; i < TT; i++) {
                const __m256 xb = _mm256_set1_ps(tk[i].xm[j]);
                _Pragma("GCC unroll 4")
                for (int r = 0; r < NG; r++)
                    _mm256_store_ps(acc[i] + 8 * r, _mm256_fnmadd_ps(_mm256_load_ps(p->M + j * GEMM_PANEL + 8 * r), xb,
                                                                     _mm256_load_ps(acc[i] + 8 * r)));
            }
        }
    const int nr = p->nrows;
    __m256i keep[NG]; /* lanes of valid rows */
    _Pragma("GCC unroll 4")
    for (int r = 0; r < NG; r++)
        keep[r] = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), _mm256_setr_epi32(8 * r, 8 * r + 1, 8 * r + 2, 8 * r + 3,
                                                                               8 * r + 4, 8 * r + 5, 8 * r + 6, 8 * r + 7));
    _Pragma("GCC unroll 2")
    for (int i = 0; i < TT; i++) {
        if (t + i >= t1) break;
        float *yr = y + (int64_t)rows[t + i] * ldy;
        _Pragma("GCC unroll 4")
        for (int r = 0; r < NG; r++) {
            const __m256 v = _mm256_load_ps(acc[i] + 8 * r);
            if (nr == GEMM_PANEL) _mm256_storeu_ps(yr + 8 * r, v); /* vmaskmovps stores are slow on AMD */
            else _mm256_maskstore_ps(yr + 8 * r, keep[r], v);
        }
    }
}

#define GEMM_VARIANT(name, SB, MIN, SGN, D)                                                            \
    static void name(const gemm_panel *p, const gemm_acts *x, int t0, int t1, const int32_t *rows,     \
                     float *y, int64_t ldy) {                                                          \
        for (int t = t0; t < t1; t += TT) tile(p, x, t, t1, rows, y, ldy, SB, MIN, SGN, D);            \
    }
GEMM_VARIANT(run_sb32_d8, 32, false, false, 8)
GEMM_VARIANT(run_sb32_d4, 32, false, false, 4)
GEMM_VARIANT(run_sb32_d2, 32, false, false, 2)
GEMM_VARIANT(run_sb32_d1, 32, false, false, 1)
GEMM_VARIANT(run_sb32_min_d8, 32, true, false, 8)
GEMM_VARIANT(run_sb32_min_d4, 32, true, false, 4)
GEMM_VARIANT(run_sb32_min_d2, 32, true, false, 2)
GEMM_VARIANT(run_sb32_min_d1, 32, true, false, 1)
GEMM_VARIANT(run_sb32_sgn, 32, false, true, 1)
GEMM_VARIANT(run_sb16_d4, 16, false, false, 4)
GEMM_VARIANT(run_sb16_d2, 16, false, false, 2)
GEMM_VARIANT(run_sb16_d1, 16, false, false, 1)
GEMM_VARIANT(run_sb16_min_d4, 16, true, false, 4)
GEMM_VARIANT(run_sb16_min_d2, 16, true, false, 2)
GEMM_VARIANT(run_sb16_min_d1, 16, true, false, 1)
GEMM_VARIANT(run_sb16_sgn, 16, false, true, 1)

/* [sb == 32][has_min][log2 d] */
static const gemm_run_fn run_u8[2][2][4] = {
    {{run_sb16_d1, run_sb16_d2, run_sb16_d4, NULL}, {run_sb16_min_d1, run_sb16_min_d2, run_sb16_min_d4, NULL}},
    {{run_sb32_d1, run_sb32_d2, run_sb32_d4, run_sb32_d8},
     {run_sb32_min_d1, run_sb32_min_d2, run_sb32_min_d4, run_sb32_min_d8}},
};

bool gemm_avx2_supports(int off, int umax, bool has_min) { return umax <= 127 || (off == 128 && !has_min); }

void gemm_run_avx2(const gemm_panel *p, const gemm_acts *x, int t0, int t1, const int32_t *rows, float *y,
                   int64_t ldy) {
    if (p->umax > 127) { /* off == 128 and no mins (gemm_avx2_supports): the sign trick */
        (p->sb == 32 ? run_sb32_sgn : run_sb16_sgn)(p, x, t0, t1, rows, y, ldy);
        return;
    }
    int l = p->sb == 32 ? 3 : 2; /* log2 of the most steps whose int16 sums cannot saturate: d * umax <= 128 */
    while (l > 0 && (p->umax << l) > 128) l--;
    run_u8[p->sb == 32][p->has_min][l](p, x, t0, t1, rows, y, ldy);
}

/* The panel interleave of gemm_pack: src holds GEMM_PANEL rows of K bytes (row r at src + r * K, K a
 * multiple of 32); step s of row r goes to dst + 4 * (GEMM_PANEL * s + r). Per group of 8 rows and 8
 * steps this is an 8 x 8 transpose of 32-bit words: 2 x 2 blocks inside each 128-bit lane (unpack 32,
 * then 64), then the lanes (permute2x128). */
void gemm_interleave_avx2(const uint8_t *src, int64_t K, uint8_t *dst) {
    for (int grp = 0; grp < GEMM_PANEL / 8; grp++) {
        const uint8_t *s = src + (size_t)grp * 8 * K;
        uint8_t *d = dst + 32 * grp;
        for (int64_t st = 0; st < K / 4; st += 8) {
            __m256i r[8], t[8], o[8];
            for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_si256((const __m256i *)(s + (size_t)i * K + 4 * st));
            for (int i = 0; i < 8; i += 2) {
                t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);     /* steps 0 1 | 4 5 of rows i, i+1 */
                t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]); /* steps 2 3 | 6 7 */
            }
            for (int G = 0; G < 2; G++) { /* rows 4G..4G+3: o[4G + k] = step k | step k + 4 */
                o[4 * G + 0] = _mm256_unpacklo_epi64(t[4 * G], t[4 * G + 2]);
                o[4 * G + 1] = _mm256_unpackhi_epi64(t[4 * G], t[4 * G + 2]);
                o[4 * G + 2] = _mm256_unpacklo_epi64(t[4 * G + 1], t[4 * G + 3]);
                o[4 * G + 3] = _mm256_unpackhi_epi64(t[4 * G + 1], t[4 * G + 3]);
            }
            for (int k = 0; k < 4; k++) {
                _mm256_store_si256((__m256i *)(d + 4 * GEMM_PANEL * (st + k)), _mm256_permute2x128_si256(o[k], o[4 + k], 0x20));
                _mm256_store_si256((__m256i *)(d + 4 * GEMM_PANEL * (st + k + 4)),
                                   _mm256_permute2x128_si256(o[k], o[4 + k], 0x31));
            }
        }
    }
}
