/* quant_impl: how the quant module's files fill its dispatch table (internal to src/quant/).
 *
 * quant.c owns a table ops[type][isa]. Each family file registers its functions into it from one
 * function, called once at first use:
 *   legacy.c   F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1         (scalar)
 *   kquants.c  Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS         (scalar)
 *   iquants.c  IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0
 *   *_avx2.c, *_avx512.c, *_neon.c: the SIMD variants of the above
 * A register function sets only the members it implements; the others stay NULL. */
#ifndef LLM170_QUANT_IMPL_H
#define LLM170_QUANT_IMPL_H

#include "quant/quant.h"

typedef quant_ops quant_table[QT_COUNT][QUANT_ISA_COUNT];

void quant_register_legacy(quant_table t);
void quant_register_kquants(quant_table t);
void quant_register_iquants(quant_table t);
#if LLM170_HAVE_X86_SIMD
void quant_register_avx2(quant_table t);
void quant_register_avx512(quant_table t);
#endif
#if LLM170_HAVE_NEON
void quant_register_neon(quant_table t);
#endif

#endif
