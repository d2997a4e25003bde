/* iquants: how the files of the iquants family (see quant_impl.h) register into the dispatch table.
 * quant_register_iquants (iquants.c) calls one function per file; each sets the QUANT_ISA_SCALAR entry of
 * its types: to_float (bit-exact with gguf-py 0.19's numpy dequantize), from_float where a reference
 * quantizer exists, and vec_dot against the activation type llama.cpp pairs with the type.
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

void quant_register_iq1(quant_table t);
void quant_register_iq2(quant_table t);
void quant_register_iq3(quant_table t);
void quant_register_tq(quant_table t);
void quant_register_fp4(quant_table t);
void quant_register_q1_0(quant_table t);

#endif
