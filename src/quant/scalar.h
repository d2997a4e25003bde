/* scalar: the plain-C reference functions of the quant module (internal to src/quant/), declared so that
 * the SIMD files can call them for tails and tests can name them directly.
 *
 * Signatures follow quant.h: to_float(x blocks, y floats, n values), from_float(x floats, y blocks, n),
 * vec_dot(n, *s, x blocks, y activation blocks). n is a multiple of the block size; nothing allocates.
 * Names are <type>_to_float, <type>_from_float and <type>_vec_dot_<activation type>, one per function so
 * that grepping a type name finds its reference.
 *
 * Dequantizers mirror gguf-py 0.19's numpy operation order in float32 (so they are bit-exact with it);
 * the legacy quantizers mirror gguf-py's quantize byte for byte; the k-quant / IQ4 quantizers are our own
 * squared-error searches (kquants_quantize.c). The dot products all have one shape, which SIMD variants
 * mirror: per block an int32 sum of integer products, then one float multiply-add by the block scales. */
#ifndef LLM170_QUANT_SCALAR_H
#define LLM170_QUANT_SCALAR_H

#include <stdint.h>

/* The 16 levels of IQ4_NL and IQ4_XS (ascending). */
extern const int8_t quant_kvalues_iq4nl[16];

/* legacy.c: plain floats */
void f32_to_float(const void *x, float *y, int64_t n);
void f32_from_float(const float *x, void *y, int64_t n);
void f32_vec_dot_f32(int64_t n, float *s, const void *x, const void *y);
void f16_to_float(const void *x, float *y, int64_t n);
void f16_from_float(const float *x, void *y, int64_t n);
void f16_vec_dot_f16(int64_t n, float *s, const void *x, const void *y);
void bf16_to_float(const void *x, float *y, int64_t n);
void bf16_from_float(const float *x, void *y, int64_t n);
void bf16_vec_dot_bf16(int64_t n, float *s, const void *x, const void *y);

/* legacy.c: 32-value blocks */
void q4_0_to_float(const void *x, float *y, int64_t n);
void q4_0_from_float(const float *x, void *y, int64_t n);
void q4_0_vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y);
void q4_1_to_float(const void *x, float *y, int64_t n);
void q4_1_from_float(const float *x, void *y, int64_t n);
void q4_1_vec_dot_q8_1(int64_t n, float *s, const void *x, const void *y);
void q5_0_to_float(const void *x, float *y, int64_t n);
void q5_0_from_float(const float *x, void *y, int64_t n);
void q5_0_vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y);
void q5_1_to_float(const void *x, float *y, int64_t n);
void q5_1_from_float(const float *x, void *y, int64_t n);
void q5_1_vec_dot_q8_1(int64_t n, float *s, const void *x, const void *y);
void q8_0_to_float(const void *x, float *y, int64_t n);
void q8_0_from_float(const float *x, void *y, int64_t n);
void q8_0_vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y);
void q8_1_to_float(const void *x, float *y, int64_t n);
void q8_1_from_float(const float *x, void *y, int64_t n);

/* kquants.c: 256-value super-blocks, and IQ4_NL (32-value blocks) */
void q2_k_to_float(const void *x, float *y, int64_t n);
void q2_k_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void q3_k_to_float(const void *x, float *y, int64_t n);
void q3_k_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void q4_k_to_float(const void *x, float *y, int64_t n);
void q4_k_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void q5_k_to_float(const void *x, float *y, int64_t n);
void q5_k_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void q6_k_to_float(const void *x, float *y, int64_t n);
void q6_k_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void q8_k_to_float(const void *x, float *y, int64_t n);
void q8_k_from_float(const float *x, void *y, int64_t n);
void iq4_nl_to_float(const void *x, float *y, int64_t n);
void iq4_nl_vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y);
void iq4_xs_to_float(const void *x, float *y, int64_t n);
void iq4_xs_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);

/* kquants_quantize.c: reference quantizers (squared-error searches, not bit-compatible with ggml's) */
void q2_k_from_float(const float *x, void *y, int64_t n);
void q3_k_from_float(const float *x, void *y, int64_t n);
void q4_k_from_float(const float *x, void *y, int64_t n);
void q5_k_from_float(const float *x, void *y, int64_t n);
void q6_k_from_float(const float *x, void *y, int64_t n);
void iq4_nl_from_float(const float *x, void *y, int64_t n);
void iq4_xs_from_float(const float *x, void *y, int64_t n);

/* legacy.c and kquants.c: u8 forms (quant.h: w = S[k/sb] * (u[k] - off) - M[k/sb]) */
void q4_0_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void q4_1_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void q5_0_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void q5_1_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void q8_0_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void q2_k_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void q3_k_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void q4_k_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void q5_k_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void q6_k_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void iq4_nl_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void iq4_xs_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);

/* Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K 12-byte scales array. */
static inline void quant_k4_scale_min(const uint8_t *scales, int j, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = scales[j] & 63;
        *m = scales[j + 4] & 63;
    } else {
        *sc = (uint8_t)((scales[j + 4] & 15) | ((scales[j - 4] >> 2) & 0x30));
        *m = (uint8_t)((scales[j + 4] >> 4) | ((scales[j] >> 2) & 0x30));
    }
}

/* The 8 sub-block scales and mins of a Q4_K / Q5_K super-block as the dequantizer forms them:
 * S[j] = d * sc_j, M[j] = dmin * m_j (the u8 forms' S and M). */
static inline void quant_k4_scales_f32(const uint8_t *scales, float d, float dmin, float *S, float *M) {
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        quant_k4_scale_min(scales, j, &sc, &m);
        S[j] = d * (float)sc;
        M[j] = dmin * (float)m;
    }
}

/* The 6-bit signed-offset scale k (0..15) of a Q3_K 12-byte scales array, minus 32 (so -32..31). */
static inline int quant_k3_scale(const uint8_t *scales, int k) {
    int lo = k < 8 ? scales[k] & 15 : scales[k - 8] >> 4;
    int hi = (scales[8 + (k & 3)] >> (2 * (k >> 2))) & 3;
    return (lo | (hi << 4)) - 32;
}

#endif
