/* simd_x86_u8: the u8 forms (quant.h: w = S * (u - off) - M) of the types prefill meets most, in AVX2
 * (internal to src/quant/; included by simd_avx2.c and simd_avx512.c after simd_x86_kquants.h).
 *
 * Unpacking a weight panel is the int8 matrix products' overhead (gemm.h): the scalar references spend
 * more time there than the products themselves. These write the same bytes and the same S / M floats
 * (formed by the same float operations) as the scalar ones; tests/quant/test_gemm.c checks every ISA's
 * to_u8 against to_float bit for bit. The grid-coded types' forms are in simd_x86_iquants.h; types in
 * neither (Q2_K, Q3_K, Q4_1, Q5_1) use the scalar ones. */
#ifndef LLM170_QUANT_SIMD_X86_U8_H
#define LLM170_QUANT_SIMD_X86_U8_H

#include "quant/scalar.h"

static void SIMD_NAME(q4_0_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q4_0 *x = vx;
    for (int64_t i = 0; i < n / QK4_0; i++, u += QK4_0) {
        S[i] = fp16_to_f32(x[i].d);
        simd_st(u, simd_nibbles_lo_hi(x[i].qs));
    }
}

static void SIMD_NAME(q5_0_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q5_0 *x = vx;
    for (int64_t i = 0; i < n / QK5_0; i++, u += QK5_0) {
        S[i] = fp16_to_f32(x[i].d);
        simd_st(u, simd_q5_values(x[i].qs, x[i].qh));
    }
}

static void SIMD_NAME(q8_0_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q8_0 *x = vx;
    const __m256i flip = _mm256_set1_epi8((char)0x80); /* q + 128 == q ^ 0x80 for int8 q */
    for (int64_t i = 0; i < n / QK8_0; i++, u += QK8_0) {
        S[i] = fp16_to_f32(x[i].d);
        simd_st(u, _mm256_xor_si256(simd_ld(x[i].qs), flip));
    }
}

/* IQ4 levels + 128 as unsigned bytes, indexed by the nibble (pshufb). */
static inline __m256i simd_iq4_u8_table(void) {
    uint8_t t[16];
    for (int k = 0; k < 16; k++) t[k] = (uint8_t)(quant_kvalues_iq4nl[k] + 128);
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)t));
}

static void SIMD_NAME(iq4_nl_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq4_nl *x = vx;
    const __m256i tab = simd_iq4_u8_table();
    for (int64_t i = 0; i < n / QK4_NL; i++, u += QK4_NL) {
        S[i] = fp16_to_f32(x[i].d);
        simd_st(u, _mm256_shuffle_epi8(tab, simd_nibbles_lo_hi(x[i].qs)));
    }
}

static void SIMD_NAME(iq4_xs_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq4_xs *x = vx;
    const __m256i tab = simd_iq4_u8_table();
    for (int64_t i = 0; i < n / QK_K; i++, u += QK_K, S += QK_K / 32) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK_K / 32; j++) {
            const int lo = (x[i].scales_l[j / 2] >> (4 * (j % 2))) & 15, hi = (x[i].scales_h >> (2 * j)) & 3;
            S[j] = d * (float)((lo | hi << 4) - 32);
            simd_st(u + 32 * j, _mm256_shuffle_epi8(tab, simd_nibbles_lo_hi(x[i].qs + 16 * j)));
        }
    }
}

static void SIMD_NAME(q4_k_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    const block_q4_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, u += QK_K, S += QK_K / 32, M += QK_K / 32) {
        quant_k4_scales_f32(x[i].scales, fp16_to_f32(x[i].d), fp16_to_f32(x[i].dmin), S, M);
        for (int g = 0; g < 4; g++) { /* sub-blocks 2g and 2g+1: low and high nibbles of 32 bytes */
            const __m256i q = simd_ld(x[i].qs + 32 * g);
            simd_st(u + 64 * g, simd_lo4(q));
            simd_st(u + 64 * g + 32, simd_hi4(q));
        }
    }
}

static void SIMD_NAME(q5_k_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    const block_q5_K *x = vx;
    const __m256i sixteen = _mm256_set1_epi8(16);
    for (int64_t i = 0; i < n / QK_K; i++, u += QK_K, S += QK_K / 32, M += QK_K / 32) {
        quant_k4_scales_f32(x[i].scales, fp16_to_f32(x[i].d), fp16_to_f32(x[i].dmin), S, M);
        const __m256i qh = simd_ld(x[i].qh); /* bit j of qh[p] is bit 4 of value p of sub-block j */
        for (int g = 0; g < 4; g++) {
            const __m256i q = simd_ld(x[i].qs + 32 * g);
            const __m256i b0 = _mm256_set1_epi8((char)(1 << (2 * g))), b1 = _mm256_set1_epi8((char)(2 << (2 * g)));
            const __m256i h0 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b0), b0), sixteen);
            const __m256i h1 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), sixteen);
            simd_st(u + 64 * g, _mm256_or_si256(simd_lo4(q), h0));
            simd_st(u + 64 * g + 32, _mm256_or_si256(simd_hi4(q), h1));
        }
    }
}

/* Q6_K: u = the raw 6 bits (q + 32). Half h (values 128h..128h+127), quarter c (32 values): low nibble
 * (c / 2 picks the high nibble) of ql[64h + 32(c % 2) ..], bits 2c, 2c+1 of qh[32h ..]. */
static void SIMD_NAME(q6_k_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q6_K *x = vx;
    const __m256i three = _mm256_set1_epi8(3);
    for (int64_t i = 0; i < n / QK_K; i++, u += QK_K, S += QK_K / 16) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK_K / 16; j++) S[j] = d * (float)x[i].scales[j];
        for (int h = 0; h < 2; h++) {
            const __m256i l0 = simd_ld(x[i].ql + 64 * h), l1 = simd_ld(x[i].ql + 64 * h + 32);
            const __m256i qh = simd_ld(x[i].qh + 32 * h);
            const __m256i lo[4] = {simd_lo4(l0), simd_lo4(l1), simd_hi4(l0), simd_hi4(l1)};
            for (int c = 0; c < 4; c++) {
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), three);
                simd_st(u + 128 * h + 32 * c, _mm256_or_si256(lo[c], _mm256_slli_epi16(hi, 4)));
            }
        }
    }
}

static void SIMD_NAME(simd_x86_register_u8)(quant_table t, enum quant_isa isa) {
    t[QT_Q4_0][isa].u8.to_u8 = SIMD_NAME(q4_0_to_u8);
    t[QT_Q5_0][isa].u8.to_u8 = SIMD_NAME(q5_0_to_u8);
    t[QT_Q8_0][isa].u8.to_u8 = SIMD_NAME(q8_0_to_u8);
    t[QT_IQ4_NL][isa].u8.to_u8 = SIMD_NAME(iq4_nl_to_u8);
    t[QT_IQ4_XS][isa].u8.to_u8 = SIMD_NAME(iq4_xs_to_u8);
    t[QT_Q4_K][isa].u8.to_u8 = SIMD_NAME(q4_k_to_u8);
    t[QT_Q5_K][isa].u8.to_u8 = SIMD_NAME(q5_k_to_u8);
    t[QT_Q6_K][isa].u8.to_u8 = SIMD_NAME(q6_k_to_u8);
}

#endif
