/* simd_x86_register: which x86 kernels exist, as one registration function shared by simd_avx2.c and
 * simd_avx512.c (internal to src/quant/). Include after simd_x86_legacy.h and simd_x86_kquants.h.
 * Each set member is tested against the scalar one by tests/quant/test_quant_simd.c; the vec_dot_type
 * of every row is the scalar table's pairing. The grid-coded types (IQ1_S .. IQ3_S, Q1_0) register from
 * simd_x86_iquants.h, the multi-row and u8 members from their own headers. */
#ifndef LLM170_QUANT_SIMD_X86_REGISTER_H
#define LLM170_QUANT_SIMD_X86_REGISTER_H

#include "quant/quant_impl.h"

static void SIMD_NAME(simd_x86_register)(quant_table t, enum quant_isa isa) {
    /* vec_dot */
    t[QT_F32][isa] = (quant_ops){.vec_dot = SIMD_NAME(f32_vec_dot_f32), .vec_dot_type = QT_F32};
    t[QT_F16][isa] = (quant_ops){.vec_dot = SIMD_NAME(f16_vec_dot_f16), .vec_dot_type = QT_F16};
    t[QT_BF16][isa] = (quant_ops){.vec_dot = SIMD_NAME(bf16_vec_dot_bf16), .vec_dot_type = QT_BF16};
    t[QT_Q4_0][isa] = (quant_ops){.vec_dot = SIMD_NAME(q4_0_vec_dot_q8_0), .vec_dot_type = QT_Q8_0};
    t[QT_Q4_1][isa] = (quant_ops){.vec_dot = SIMD_NAME(q4_1_vec_dot_q8_1), .vec_dot_type = QT_Q8_1};
    t[QT_Q5_0][isa] = (quant_ops){.vec_dot = SIMD_NAME(q5_0_vec_dot_q8_0), .vec_dot_type = QT_Q8_0};
    t[QT_Q5_1][isa] = (quant_ops){.vec_dot = SIMD_NAME(q5_1_vec_dot_q8_1), .vec_dot_type = QT_Q8_1};
    t[QT_Q8_0][isa] = (quant_ops){.vec_dot = SIMD_NAME(q8_0_vec_dot_q8_0), .vec_dot_type = QT_Q8_0};
    t[QT_IQ4_NL][isa] = (quant_ops){.vec_dot = SIMD_NAME(iq4_nl_vec_dot_q8_0), .vec_dot_type = QT_Q8_0};
    t[QT_Q2_K][isa] = (quant_ops){.vec_dot = SIMD_NAME(q2_k_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_Q3_K][isa] = (quant_ops){.vec_dot = SIMD_NAME(q3_k_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_Q4_K][isa] = (quant_ops){.vec_dot = SIMD_NAME(q4_k_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_Q5_K][isa] = (quant_ops){.vec_dot = SIMD_NAME(q5_k_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_Q6_K][isa] = (quant_ops){.vec_dot = SIMD_NAME(q6_k_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_IQ4_XS][isa] = (quant_ops){.vec_dot = SIMD_NAME(iq4_xs_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    /* to_float */
    t[QT_F16][isa].to_float = SIMD_NAME(f16_to_float);
    t[QT_BF16][isa].to_float = SIMD_NAME(bf16_to_float);
    t[QT_Q4_0][isa].to_float = SIMD_NAME(q4_0_to_float);
    t[QT_Q8_0][isa].to_float = SIMD_NAME(q8_0_to_float);
    t[QT_Q4_K][isa].to_float = SIMD_NAME(q4_k_to_float);
    t[QT_Q6_K][isa].to_float = SIMD_NAME(q6_k_to_float);
    /* from_float of the activation formats (their rows carry no dot product of their own) */
    t[QT_Q8_0][isa].from_float = SIMD_NAME(q8_0_from_float);
    t[QT_Q8_1][isa] = (quant_ops){.from_float = SIMD_NAME(q8_1_from_float), .vec_dot_type = QT_Q8_1};
    t[QT_Q8_K][isa] = (quant_ops){.from_float = SIMD_NAME(q8_k_from_float), .vec_dot_type = QT_Q8_K};
}

#endif
