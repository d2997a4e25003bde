/* gemm_avx512: the int8 matrix-product kernel of gemm.h on AVX-512 VNNI.
 *
 * Register tile: one panel (2 groups of 16 rows, one zmm of int32 lanes each) x 4 tokens. Per step of 4
 * values: 2 weight loads, 4 activation broadcasts (folded into vpdpbusd as {1to16} memory operands), 8
 * vpdpbusd = 512 multiply-adds. Live registers: 8 int32 sub-block sums, 8 float block sums, 8 float
 * totals, 2 weight vectors, 2 scales: 28 of the 32 zmm (the mins, which would need 3 more, get a pass of
 * their own after the main loop). Per sub-block the sums go through one conversion and one fused
 * multiply-add in the order gemm.h defines, so each output is bit-identical to gemm_run_ref. A token group past t1 reuses the last token (results not stored). */
#include <immintrin.h>
#include <string.h>

#include "quant/gemm.h"

#define TT 4 /* tokens per register tile */

static inline __attribute__((always_inline)) void tile(const gemm_panel *p, const gemm_acts *x, int t, int t1,
                                                       const int32_t *rows, float *y, int64_t ldy, const int sb,
                                                       const bool has_min) {
    const int64_t K = p->K, nsb = K / sb, nag = nsb / x->ag;
    gemm_token tk[TT];
    _Pragma("GCC unroll 4")
    for (int i = 0; i < TT; i++) tk[i] = gemm_acts_token(x, t + i < t1 ? t + i : t1 - 1);
    __m512 acc0[TT], acc1[TT];
    _Pragma("GCC unroll 4")
    for (int i = 0; i < TT; i++) acc0[i] = acc1[i] = _mm512_setzero_ps();
    const uint8_t *u = p->u;
    int64_t j = 0;
    for (int64_t g = 0; g < nag; g++) {
        __m512 blk0[TT], blk1[TT];
        _Pragma("GCC unroll 4")
        for (int i = 0; i < TT; i++) blk0[i] = blk1[i] = _mm512_setzero_ps();
        for (int jj = 0; jj < x->ag; jj++, j++) {
            __m512i s0[TT], s1[TT];
            _Pragma("GCC unroll 4")
            for (int i = 0; i < TT; i++) s0[i] = s1[i] = _mm512_set1_epi32(tk[i].xo[j]);
            const int8_t *qj[TT];
            _Pragma("GCC unroll 4")
            for (int i = 0; i < TT; i++) qj[i] = tk[i].q + j * sb;
            _Pragma("GCC unroll 8")
            for (int s = 0; s < sb / 4; s++, u += 4 * GEMM_PANEL) {
                const __m512i w0 = _mm512_load_si512((const void *)u);
                const __m512i w1 = _mm512_load_si512((const void *)(u + 64));
                _Pragma("GCC unroll 4")
                for (int i = 0; i < TT; i++) {
                    int32_t v;
                    memcpy(&v, qj[i] + 4 * s, 4);
                    const __m512i xb = _mm512_set1_epi32(v);
                    s0[i] = _mm512_dpbusd_epi32(s0[i], w0, xb);
                    s1[i] = _mm512_dpbusd_epi32(s1[i], w1, xb);
                }
            }
            const __m512 S0 = _mm512_load_ps(p->S + j * GEMM_PANEL), S1 = _mm512_load_ps(p->S + j * GEMM_PANEL + 16);
            _Pragma("GCC unroll 4")
            for (int i = 0; i < TT; i++) {
                blk0[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0[i]), S0, blk0[i]);
                blk1[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1[i]), S1, blk1[i]);
            }
        }
        _Pragma("GCC unroll 4")
        for (int i = 0; i < TT; i++) {
            const __m512 ab = _mm512_set1_ps(tk[i].a[g]);
            acc0[i] = _mm512_fmadd_ps(blk0[i], ab, acc0[i]);
            acc1[i] = _mm512_fmadd_ps(blk1[i], ab, acc1[i]);
        }
    }
    if (has_min)
        for (j = 0; j < nsb; j++) {
            const __m512 M0 = _mm512_load_ps(p->M + j * GEMM_PANEL), M1 = _mm512_load_ps(p->M + j * GEMM_PANEL + 16);
            _Pragma("GCC unroll 4")
            for (int i = 0; i < TT; i++) {
                const __m512 xb = _mm512_set1_ps(tk[i].xm[j]);
                acc0[i] = _mm512_fnmadd_ps(M0, xb, acc0[i]);
                acc1[i] = _mm512_fnmadd_ps(M1, xb, acc1[i]);
            }
        }
    const int nr = p->nrows;
    const __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    _Pragma("GCC unroll 4")
    for (int i = 0; i < TT; i++) {
        if (t + i >= t1) break;
        float *yr = y + (int64_t)rows[t + i] * ldy;
        _mm512_mask_storeu_ps(yr, m0, acc0[i]);
        _mm512_mask_storeu_ps(yr + 16, m1, acc1[i]);
    }
}

#define GEMM_VARIANT(name, SB, MIN)                                                                    \
    static void name(const gemm_panel *p, const gemm_acts *x, int t0, int t1, const int32_t *rows,     \
                     float *y, int64_t ldy) {                                                          \
        for (int t = t0; t < t1; t += TT) tile(p, x, t, t1, rows, y, ldy, SB, MIN);                    \
    }
GEMM_VARIANT(run_sb32, 32, false)
GEMM_VARIANT(run_sb32_min, 32, true)
GEMM_VARIANT(run_sb16, 16, false)
GEMM_VARIANT(run_sb16_min, 16, true)

void gemm_run_avx512(const gemm_panel *p, const gemm_acts *x, int t0, int t1, const int32_t *rows, float *y,
                     int64_t ldy) {
    if (p->sb == 32) (p->has_min ? run_sb32_min : run_sb32)(p, x, t0, t1, rows, y, ldy);
    else (p->has_min ? run_sb16_min : run_sb16)(p, x, t0, t1, rows, y, ldy);
}

/* The panel interleave of gemm_pack: src holds GEMM_PANEL rows of K bytes (row r at src + r * K); step s
 * of row r goes to dst + 4 * (GEMM_PANEL * s + r). Per group of 16 rows and 16 steps this is a 16 x 16
 * transpose of 32-bit words: 4x4 transposes inside each 128-bit lane (unpack 32 / 64), then a 4x4
 * transpose of the lanes (two rounds of shuffle_i32x4). Steps past the last multiple of 16 go one word
 * at a time. */
void gemm_interleave_avx512(const uint8_t *src, int64_t K, uint8_t *dst) {
    const int64_t nstep = K / 4, full = nstep / 16 * 16;
    for (int grp = 0; grp < GEMM_PANEL / 16; grp++) {
        const uint8_t *s = src + (size_t)grp * 16 * K;
        uint8_t *d = dst + 64 * grp;
        for (int64_t st = 0; st < full; st += 16) {
            __m512i r[16], t[16];
            for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_si512((const void *)(s + (size_t)i * K + 4 * st));
            for (int i = 0; i < 16; i += 2) {
                t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
                t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
            }
            /* o[4G + k] lane L = column 4L + k of rows 4G..4G+3 */
            __m512i o[16];
            for (int G = 0; G < 4; G++) {
                const __m512i a0 = t[4 * G], a1 = t[4 * G + 1], b0 = t[4 * G + 2], b1 = t[4 * G + 3];
                o[4 * G + 0] = _mm512_unpacklo_epi64(a0, b0);
                o[4 * G + 1] = _mm512_unpackhi_epi64(a0, b0);
                o[4 * G + 2] = _mm512_unpacklo_epi64(a1, b1);
                o[4 * G + 3] = _mm512_unpackhi_epi64(a1, b1);
            }
            for (int k = 0; k < 4; k++) {
                const __m512i u0 = _mm512_shuffle_i32x4(o[k], o[4 + k], 0x44);
                const __m512i u1 = _mm512_shuffle_i32x4(o[k], o[4 + k], 0xEE);
                const __m512i u2 = _mm512_shuffle_i32x4(o[8 + k], o[12 + k], 0x44);
                const __m512i u3 = _mm512_shuffle_i32x4(o[8 + k], o[12 + k], 0xEE);
                _mm512_store_si512((void *)(d + 4 * GEMM_PANEL * (st + 0 + k)), _mm512_shuffle_i32x4(u0, u2, 0x88));
                _mm512_store_si512((void *)(d + 4 * GEMM_PANEL * (st + 4 + k)), _mm512_shuffle_i32x4(u0, u2, 0xDD));
                _mm512_store_si512((void *)(d + 4 * GEMM_PANEL * (st + 8 + k)), _mm512_shuffle_i32x4(u1, u3, 0x88));
                _mm512_store_si512((void *)(d + 4 * GEMM_PANEL * (st + 12 + k)), _mm512_shuffle_i32x4(u1, u3, 0xDD));
            }
        }
        for (int64_t st = full; st < nstep; st++)
            for (int i = 0; i < 16; i++) memcpy(d + 4 * GEMM_PANEL * st + 4 * i, s + (size_t)i * K + 4 * st, 4);
    }
}
