/* blocks: the byte layout of every ggml block format, as stored in GGUF files (little-endian).
 *
 * `ggml_half` fields are IEEE halves stored as raw bits (convert with base/fp16.h). Sizes are pinned with
 * _Static_assert: a layout that drifts by a byte would misread every published file.
 * QK = values per block: 32 for the legacy and IQ4_NL/MXFP4 types, 256 ("super-block") for the k-quants,
 * the IQ types and TQ types. */
#ifndef LLM170_QUANT_BLOCKS_H
#define LLM170_QUANT_BLOCKS_H

#include <stdint.h>

typedef uint16_t ggml_half;

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define QK_K 256
#define K_SCALE_SIZE 12
#define QK4_NL 32
#define QK_MXFP4 32
#define QK_NVFP4 64
#define QK_NVFP4_SUB 16
#define QK1_0 128

/* Q4_0: x = d * (q - 8); q in 0..15, low nibbles are values 0..15, high nibbles 16..31. */
typedef struct { ggml_half d; uint8_t qs[QK4_0 / 2]; } block_q4_0;
_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0 size");

/* Q4_1: x = d * q + m. */
typedef struct { ggml_half d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;
_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1 size");

/* Q5_0: x = d * (q - 16); the 5th bit of value j is bit j of qh. */
typedef struct { ggml_half d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0;
_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0 size");

/* Q5_1: x = d * q + m. */
typedef struct { ggml_half d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1;
_Static_assert(sizeof(block_q5_1) == 24, "block_q5_1 size");

/* Q8_0: x = d * q. */
typedef struct { ggml_half d; int8_t qs[QK8_0]; } block_q8_0;
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0 size");

/* Q8_1: x = d * q; s = d * sum(q) (precomputed for the Q4_1/Q5_1 dot products). Activations only. */
typedef struct { ggml_half d, s; int8_t qs[QK8_1]; } block_q8_1;
_Static_assert(sizeof(block_q8_1) == 36, "block_q8_1 size");

/* Q2_K: 16 sub-blocks of 16; scales[i] = scale (low 4 bits) | min (high 4 bits);
 * x = d * scale * q - dmin * min, q in 0..3. */
typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; ggml_half d, dmin; } block_q2_K;
_Static_assert(sizeof(block_q2_K) == 84, "block_q2_K size");

/* Q3_K: 16 sub-blocks of 16, 6-bit scales packed in 12 bytes; x = d * (scale - 32) * (q - 4 * !hbit). */
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; ggml_half d; } block_q3_K;
_Static_assert(sizeof(block_q3_K) == 110, "block_q3_K size");

/* Q4_K: 8 sub-blocks of 32, 6-bit scales and mins packed in 12 bytes; x = d * sc * q - dmin * m. */
typedef struct { ggml_half d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; } block_q4_K;
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K size");

/* Q5_K: as Q4_K with a 5th bit per value in qh. */
typedef struct { ggml_half d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K;
_Static_assert(sizeof(block_q5_K) == 176, "block_q5_K size");

/* Q6_K: 16 sub-blocks of 16 with int8 scales; x = d * scale * (q - 32), q 6 bits (4 in ql, 2 in qh). */
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; ggml_half d; } block_q6_K;
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K size");

/* Q8_K: activations for the k-quant dot products; float scale, bsums = sums of each group of 16. */
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K size");

/* IQ2_XXS: 8 groups of 32; each group = 2 x uint32: 4 grid indices (8 bits) + 4 x 7 sign bits + 4-bit scale. */
typedef struct { ggml_half d; uint16_t qs[QK_K / 8]; } block_iq2_xxs;
_Static_assert(sizeof(block_iq2_xxs) == 66, "block_iq2_xxs size");

/* IQ2_XS: 9-bit grid index + 7 sign bits per uint16; 4-bit scales per 16 values. */
typedef struct { ggml_half d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; } block_iq2_xs;
_Static_assert(sizeof(block_iq2_xs) == 74, "block_iq2_xs size");

/* IQ2_S: 10-bit grid index (8 bits in qs, 2 in qh), explicit sign bytes, 4-bit scales. */
typedef struct { ggml_half d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; } block_iq2_s;
_Static_assert(sizeof(block_iq2_s) == 82, "block_iq2_s size");

/* IQ3_XXS: 8-bit indices into a 256-entry grid of 4 values, then per 32 values a uint32 of signs+scale. */
typedef struct { ggml_half d; uint8_t qs[3 * QK_K / 8]; } block_iq3_xxs;
_Static_assert(sizeof(block_iq3_xxs) == 98, "block_iq3_xxs size");

/* IQ3_S: 9-bit indices into a 512-entry grid, explicit signs, 4-bit scales. */
typedef struct { ggml_half d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[QK_K / 64]; } block_iq3_s;
_Static_assert(sizeof(block_iq3_s) == 110, "block_iq3_s size");

/* IQ1_S: 11-bit indices into a 2048-entry grid of 8 values in {-1,0,1}; qh holds 3-bit scale, high index
 * bits and the sign of a per-group delta. */
typedef struct { ggml_half d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; } block_iq1_s;
_Static_assert(sizeof(block_iq1_s) == 50, "block_iq1_s size");

/* IQ1_M: as IQ1_S with per-16 deltas; the fp16 super-block scale is spread over the top nibbles of the
 * 4 uint16 scales. */
typedef struct { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; } block_iq1_m;
_Static_assert(sizeof(block_iq1_m) == 56, "block_iq1_m size");

/* IQ4_NL: as Q4_0 but q indexes a fixed non-linear table of 16 int8 values. */
typedef struct { ggml_half d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;
_Static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl size");

/* IQ4_XS: the IQ4_NL table over 8 sub-blocks of 32 with 6-bit scales (4 low bits in scales_l, 2 high in
 * scales_h); x = d * (scale - 32) * table[q]. */
typedef struct { ggml_half d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; } block_iq4_xs;
_Static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs size");

/* TQ1_0: ternary, 5 values per byte in base 3 (qs), 4 per byte in qh; x = d * (t - 1). */
typedef struct { uint8_t qs[(QK_K - 4 * QK_K / 64) / 5]; uint8_t qh[QK_K / 64]; ggml_half d; } block_tq1_0;
_Static_assert(sizeof(block_tq1_0) == 54, "block_tq1_0 size");

/* TQ2_0: ternary, 2 bits per value; x = d * (q - 1). */
typedef struct { uint8_t qs[QK_K / 4]; ggml_half d; } block_tq2_0;
_Static_assert(sizeof(block_tq2_0) == 66, "block_tq2_0 size");

/* MXFP4: OCP microscaling FP4 (E2M1) with a shared E8M0 exponent e. */
typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4;
_Static_assert(sizeof(block_mxfp4) == 17, "block_mxfp4 size");

/* NVFP4: 4 sub-blocks of 16 E2M1 values, each with an unsigned E4M3 scale byte d[s] (bias 7, no sign);
 * sub-block s: values 0..7 in the low nibbles of qs[8s..8s+8), values 8..15 in the high nibbles. */
typedef struct { uint8_t d[QK_NVFP4 / QK_NVFP4_SUB]; uint8_t qs[QK_NVFP4 / 2]; } block_nvfp4;
_Static_assert(sizeof(block_nvfp4) == 36, "block_nvfp4 size");

/* Q1_0: 1 bit per value, x = bit ? d : -d; value j is bit j % 8 of qs[j / 8]. */
typedef struct { ggml_half d; uint8_t qs[QK1_0 / 8]; } block_q1_0;
_Static_assert(sizeof(block_q1_0) == 18, "block_q1_0 size");

#endif
