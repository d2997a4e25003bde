/* iquants: the scalar references of the iquants family (see quant_impl.h) and how its files register
 * them. quant_register_iquants (iquants.c) calls one function per file; each sets the QUANT_ISA_SCALAR
 * entry of its types: to_float (bit-exact with gguf-py 0.19's numpy dequantize), from_float where a
 * reference quantizer exists, and vec_dot against the activation type llama.cpp pairs with the type.
 * The functions are declared here (named as in scalar.h: <type>_to_float, <type>_from_float,
 * <type>_vec_dot_<activation>, <type>_to_u8 for prefill's u8 forms) so SIMD variants can hand tails to
 * them and tests can name them.
 *   iq1.c   IQ1_S, IQ1_M               (vec_dot with Q8_K)
 *   iq2.c   IQ2_XXS, IQ2_XS, IQ2_S     (vec_dot with Q8_K)
 *   iq3.c   IQ3_XXS, IQ3_S             (vec_dot with Q8_K)
 *   tq.c    TQ1_0, TQ2_0               (vec_dot with Q8_K; quantize as gguf-py)
 *   fp4.c   MXFP4, NVFP4               (vec_dot with Q8_0; quantize as gguf-py / llama.cpp's reference)
 *   q1_0.c  Q1_0                       (vec_dot with Q8_0; quantize as llama.cpp's reference)
 * Internal to src/quant/. */
#ifndef LLM170_QUANT_IQUANTS_H
#define LLM170_QUANT_IQUANTS_H

#include "quant/quant_impl.h"

/* iq1.c */
void iq1_s_to_float(const void *x, float *y, int64_t n);
void iq1_s_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void iq1_s_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void iq1_m_to_float(const void *x, float *y, int64_t n);
void iq1_m_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void iq1_m_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
/* iq2.c */
void iq2_xxs_to_float(const void *x, float *y, int64_t n);
void iq2_xxs_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void iq2_xxs_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void iq2_xs_to_float(const void *x, float *y, int64_t n);
void iq2_xs_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void iq2_xs_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void iq2_s_to_float(const void *x, float *y, int64_t n);
void iq2_s_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void iq2_s_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
/* iq3.c */
void iq3_xxs_to_float(const void *x, float *y, int64_t n);
void iq3_xxs_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void iq3_xxs_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
void iq3_s_to_float(const void *x, float *y, int64_t n);
void iq3_s_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void iq3_s_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);
/* tq.c */
void tq1_0_to_float(const void *x, float *y, int64_t n);
void tq1_0_from_float(const float *x, void *y, int64_t n);
void tq1_0_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
void tq2_0_to_float(const void *x, float *y, int64_t n);
void tq2_0_from_float(const float *x, void *y, int64_t n);
void tq2_0_vec_dot_q8_k(int64_t n, float *s, const void *x, const void *y);
/* fp4.c */
void mxfp4_to_float(const void *x, float *y, int64_t n);
void mxfp4_from_float(const float *x, void *y, int64_t n);
void mxfp4_vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y);
void nvfp4_to_float(const void *x, float *y, int64_t n);
void nvfp4_from_float(const float *x, void *y, int64_t n);
void nvfp4_vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y);
/* q1_0.c */
void q1_0_to_float(const void *x, float *y, int64_t n);
void q1_0_from_float(const float *x, void *y, int64_t n);
void q1_0_vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y);
void q1_0_to_u8(const void *x, uint8_t *u, float *S, float *M, int64_t n);

void quant_register_iq1(quant_table t);
void quant_register_iq2(quant_table t);
void quant_register_iq3(quant_table t);
void quant_register_tq(quant_table t);
void quant_register_fp4(quant_table t);
void quant_register_q1_0(quant_table t);

#endif
