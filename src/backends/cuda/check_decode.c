/* check_decode: the table of decode conformance cases (see cuda_check.h): every variant of every decode
 * kernel, small awkward shapes for correctness (K2816: 88 units, not a multiple of 32 lanes; N263: not a
 * multiple of the row tiles) and the real decode shapes that the benchmark times (Llama-3 8B:
 * 4096x4096, 4096x14336, 14336x4096, output head 4096x128256; Qwen2.5-0.5B: 896x4864, head 896x151936).
 * The case bodies and their error models are in check_gemv.c, check_ops.c, check_attn.c, check_gdn.c
 * and check_select.c. Generated-looking on purpose: one line per variant. */
#include <stddef.h>

#include "backends/cuda/check_decode.h"

/* one wrapper per variant, with the case signature of cuda_check.h (s: seed, b: bench, r: result) */
#define CASE(name, call)                                                      \
    static int name(uint64_t s, bool b, cuda_check_result *r, err *e) {       \
        (void)b;                                                              \
        return call;                                                          \
    }

CASE(q8_a, check_q8_1(1, 4096, Q8_PLAIN, s, b, r, e))
CASE(q8_b, check_q8_1(8, 14336, Q8_PLAIN, s, b, r, e))
CASE(q8_c, check_q8_1(1, 4096, Q8_NORM, s, b, r, e))
CASE(q8_d, check_q8_1(5, 2880, Q8_NORM, s, b, r, e))
CASE(q8_g, check_q8_1(1, 5120, Q8_NORM, s, b, r, e))
CASE(q8_h, check_q8_1(1, 896, Q8_NORM, s, b, r, e))
CASE(spin_a, ((void)s, check_spin(300, r, e)))
CASE(pairs_a, check_pairs(s, r, e))
CASE(q8_e, check_q8_1(1, 4864, Q8_SWIGLU, s, b, r, e))
CASE(q8_f, check_q8_1(7, 14336, Q8_SWIGLU, s, b, r, e))
CASE(gv_q4_0_t1, check_gemv(QT_Q4_0, 263, 2816, 1, s, b, r, e))
CASE(gv_q4_0_t2, check_gemv(QT_Q4_0, 263, 2816, 2, s, b, r, e))
CASE(gv_q4_0_t3, check_gemv(QT_Q4_0, 263, 2816, 3, s, b, r, e))
CASE(gv_q4_0_t4, check_gemv(QT_Q4_0, 263, 2816, 4, s, b, r, e))
CASE(gv_q4_0_t5, check_gemv(QT_Q4_0, 263, 2816, 5, s, b, r, e))
CASE(gv_q4_0_t6, check_gemv(QT_Q4_0, 263, 2816, 6, s, b, r, e))
CASE(gv_q4_0_t7, check_gemv(QT_Q4_0, 263, 2816, 7, s, b, r, e))
CASE(gv_q4_0_t8, check_gemv(QT_Q4_0, 263, 2816, 8, s, b, r, e))
CASE(gv_q4_1_t1, check_gemv(QT_Q4_1, 263, 2816, 1, s, b, r, e))
CASE(gv_q4_1_t2, check_gemv(QT_Q4_1, 263, 2816, 2, s, b, r, e))
CASE(gv_q4_1_t3, check_gemv(QT_Q4_1, 263, 2816, 3, s, b, r, e))
CASE(gv_q4_1_t4, check_gemv(QT_Q4_1, 263, 2816, 4, s, b, r, e))
CASE(gv_q4_1_t5, check_gemv(QT_Q4_1, 263, 2816, 5, s, b, r, e))
CASE(gv_q4_1_t6, check_gemv(QT_Q4_1, 263, 2816, 6, s, b, r, e))
CASE(gv_q4_1_t7, check_gemv(QT_Q4_1, 263, 2816, 7, s, b, r, e))
CASE(gv_q4_1_t8, check_gemv(QT_Q4_1, 263, 2816, 8, s, b, r, e))
CASE(gv_q5_0_t1, check_gemv(QT_Q5_0, 263, 2816, 1, s, b, r, e))
CASE(gv_q5_0_t2, check_gemv(QT_Q5_0, 263, 2816, 2, s, b, r, e))
CASE(gv_q5_0_t3, check_gemv(QT_Q5_0, 263, 2816, 3, s, b, r, e))
CASE(gv_q5_0_t4, check_gemv(QT_Q5_0, 263, 2816, 4, s, b, r, e))
CASE(gv_q5_0_t5, check_gemv(QT_Q5_0, 263, 2816, 5, s, b, r, e))
CASE(gv_q5_0_t6, check_gemv(QT_Q5_0, 263, 2816, 6, s, b, r, e))
CASE(gv_q5_0_t7, check_gemv(QT_Q5_0, 263, 2816, 7, s, b, r, e))
CASE(gv_q5_0_t8, check_gemv(QT_Q5_0, 263, 2816, 8, s, b, r, e))
CASE(gv_q8_0_t1, check_gemv(QT_Q8_0, 263, 2816, 1, s, b, r, e))
CASE(gv_q8_0_t2, check_gemv(QT_Q8_0, 263, 2816, 2, s, b, r, e))
CASE(gv_q8_0_t3, check_gemv(QT_Q8_0, 263, 2816, 3, s, b, r, e))
CASE(gv_q8_0_t4, check_gemv(QT_Q8_0, 263, 2816, 4, s, b, r, e))
CASE(gv_q8_0_t5, check_gemv(QT_Q8_0, 263, 2816, 5, s, b, r, e))
CASE(gv_q8_0_t6, check_gemv(QT_Q8_0, 263, 2816, 6, s, b, r, e))
CASE(gv_q8_0_t7, check_gemv(QT_Q8_0, 263, 2816, 7, s, b, r, e))
CASE(gv_q8_0_t8, check_gemv(QT_Q8_0, 263, 2816, 8, s, b, r, e))
CASE(gv_q4_k_t1, check_gemv(QT_Q4_K, 263, 2816, 1, s, b, r, e))
CASE(gv_q4_k_t2, check_gemv(QT_Q4_K, 263, 2816, 2, s, b, r, e))
CASE(gv_q4_k_t3, check_gemv(QT_Q4_K, 263, 2816, 3, s, b, r, e))
CASE(gv_q4_k_t4, check_gemv(QT_Q4_K, 263, 2816, 4, s, b, r, e))
CASE(gv_q4_k_t5, check_gemv(QT_Q4_K, 263, 2816, 5, s, b, r, e))
CASE(gv_q4_k_t6, check_gemv(QT_Q4_K, 263, 2816, 6, s, b, r, e))
CASE(gv_q4_k_t7, check_gemv(QT_Q4_K, 263, 2816, 7, s, b, r, e))
CASE(gv_q4_k_t8, check_gemv(QT_Q4_K, 263, 2816, 8, s, b, r, e))
CASE(gv_q5_k_t1, check_gemv(QT_Q5_K, 263, 2816, 1, s, b, r, e))
CASE(gv_q5_k_t2, check_gemv(QT_Q5_K, 263, 2816, 2, s, b, r, e))
CASE(gv_q5_k_t3, check_gemv(QT_Q5_K, 263, 2816, 3, s, b, r, e))
CASE(gv_q5_k_t4, check_gemv(QT_Q5_K, 263, 2816, 4, s, b, r, e))
CASE(gv_q5_k_t5, check_gemv(QT_Q5_K, 263, 2816, 5, s, b, r, e))
CASE(gv_q5_k_t6, check_gemv(QT_Q5_K, 263, 2816, 6, s, b, r, e))
CASE(gv_q5_k_t7, check_gemv(QT_Q5_K, 263, 2816, 7, s, b, r, e))
CASE(gv_q5_k_t8, check_gemv(QT_Q5_K, 263, 2816, 8, s, b, r, e))
CASE(gv_q6_k_t1, check_gemv(QT_Q6_K, 263, 2816, 1, s, b, r, e))
CASE(gv_q6_k_t2, check_gemv(QT_Q6_K, 263, 2816, 2, s, b, r, e))
CASE(gv_q6_k_t3, check_gemv(QT_Q6_K, 263, 2816, 3, s, b, r, e))
CASE(gv_q6_k_t4, check_gemv(QT_Q6_K, 263, 2816, 4, s, b, r, e))
CASE(gv_q6_k_t5, check_gemv(QT_Q6_K, 263, 2816, 5, s, b, r, e))
CASE(gv_q6_k_t6, check_gemv(QT_Q6_K, 263, 2816, 6, s, b, r, e))
CASE(gv_q6_k_t7, check_gemv(QT_Q6_K, 263, 2816, 7, s, b, r, e))
CASE(gv_q6_k_t8, check_gemv(QT_Q6_K, 263, 2816, 8, s, b, r, e))
CASE(gvb_q4_0_4096_4096_1, check_gemv(QT_Q4_0, 4096, 4096, 1, s, b, r, e))
CASE(gvb_q4_0_4096_14336_1, check_gemv(QT_Q4_0, 14336, 4096, 1, s, b, r, e))
CASE(gvb_q4_0_14336_4096_1, check_gemv(QT_Q4_0, 4096, 14336, 1, s, b, r, e))
CASE(gvb_q4_0_4096_14336_8, check_gemv(QT_Q4_0, 14336, 4096, 8, s, b, r, e))
CASE(gvb_q4_0_896_4864_1, check_gemv(QT_Q4_0, 4864, 896, 1, s, b, r, e))
CASE(gvb_q4_0_896_151936_1, check_gemv(QT_Q4_0, 151936, 896, 1, s, b, r, e))
CASE(gvb_q4_1_4096_4096_1, check_gemv(QT_Q4_1, 4096, 4096, 1, s, b, r, e))
CASE(gvb_q4_1_4096_14336_1, check_gemv(QT_Q4_1, 14336, 4096, 1, s, b, r, e))
CASE(gvb_q4_1_14336_4096_1, check_gemv(QT_Q4_1, 4096, 14336, 1, s, b, r, e))
CASE(gvb_q4_1_4096_14336_8, check_gemv(QT_Q4_1, 14336, 4096, 8, s, b, r, e))
CASE(gvb_q4_1_896_4864_1, check_gemv(QT_Q4_1, 4864, 896, 1, s, b, r, e))
CASE(gvb_q4_1_896_151936_1, check_gemv(QT_Q4_1, 151936, 896, 1, s, b, r, e))
CASE(gvb_q5_0_4096_4096_1, check_gemv(QT_Q5_0, 4096, 4096, 1, s, b, r, e))
CASE(gvb_q5_0_4096_14336_1, check_gemv(QT_Q5_0, 14336, 4096, 1, s, b, r, e))
CASE(gvb_q5_0_14336_4096_1, check_gemv(QT_Q5_0, 4096, 14336, 1, s, b, r, e))
CASE(gvb_q5_0_4096_14336_8, check_gemv(QT_Q5_0, 14336, 4096, 8, s, b, r, e))
CASE(gvb_q5_0_896_4864_1, check_gemv(QT_Q5_0, 4864, 896, 1, s, b, r, e))
CASE(gvb_q5_0_896_151936_1, check_gemv(QT_Q5_0, 151936, 896, 1, s, b, r, e))
CASE(gvb_q8_0_4096_4096_1, check_gemv(QT_Q8_0, 4096, 4096, 1, s, b, r, e))
CASE(gvb_q8_0_4096_14336_1, check_gemv(QT_Q8_0, 14336, 4096, 1, s, b, r, e))
CASE(gvb_q8_0_14336_4096_1, check_gemv(QT_Q8_0, 4096, 14336, 1, s, b, r, e))
CASE(gvb_q8_0_4096_14336_8, check_gemv(QT_Q8_0, 14336, 4096, 8, s, b, r, e))
CASE(gvb_q8_0_896_4864_1, check_gemv(QT_Q8_0, 4864, 896, 1, s, b, r, e))
CASE(gvb_q8_0_896_151936_1, check_gemv(QT_Q8_0, 151936, 896, 1, s, b, r, e))
CASE(gvb_q4_k_4096_4096_1, check_gemv(QT_Q4_K, 4096, 4096, 1, s, b, r, e))
CASE(gvb_q4_k_4096_14336_1, check_gemv(QT_Q4_K, 14336, 4096, 1, s, b, r, e))
CASE(gvb_q4_k_14336_4096_1, check_gemv(QT_Q4_K, 4096, 14336, 1, s, b, r, e))
CASE(gvb_q4_k_4096_14336_8, check_gemv(QT_Q4_K, 14336, 4096, 8, s, b, r, e))
CASE(gvb_q5_k_4096_4096_1, check_gemv(QT_Q5_K, 4096, 4096, 1, s, b, r, e))
CASE(gvb_q5_k_4096_14336_1, check_gemv(QT_Q5_K, 14336, 4096, 1, s, b, r, e))
CASE(gvb_q5_k_14336_4096_1, check_gemv(QT_Q5_K, 4096, 14336, 1, s, b, r, e))
CASE(gvb_q5_k_4096_14336_8, check_gemv(QT_Q5_K, 14336, 4096, 8, s, b, r, e))
CASE(gvb_q6_k_4096_4096_1, check_gemv(QT_Q6_K, 4096, 4096, 1, s, b, r, e))
CASE(gvb_q6_k_4096_14336_1, check_gemv(QT_Q6_K, 14336, 4096, 1, s, b, r, e))
CASE(gvb_q6_k_14336_4096_1, check_gemv(QT_Q6_K, 4096, 14336, 1, s, b, r, e))
CASE(gvb_q6_k_4096_14336_8, check_gemv(QT_Q6_K, 14336, 4096, 8, s, b, r, e))
CASE(gvb_q4_k_5120_17408_1, check_gemv(QT_Q4_K, 17408, 5120, 1, s, b, r, e))
CASE(gvb_q4_k_17408_5120_1, check_gemv(QT_Q4_K, 5120, 17408, 1, s, b, r, e))
CASE(gvb_q6_k_5120_17408_1, check_gemv(QT_Q6_K, 17408, 5120, 1, s, b, r, e))
CASE(gvb_q6_k_17408_5120_1, check_gemv(QT_Q6_K, 5120, 17408, 1, s, b, r, e))
CASE(gvb_q5_k_5120_10240_1, check_gemv(QT_Q5_K, 10240, 5120, 1, s, b, r, e))
CASE(gvb_q4_k_5120_6144_1, check_gemv(QT_Q4_K, 6144, 5120, 1, s, b, r, e))
/* qwen35moe 35B-A3B decode shapes (hidden 2048): the GDN / attention input projection (N 8192), its gate
 * (N 4096), the output projections (K 4096) and a routed expert's rows (K 2048 N 512, K 512 N 2048) */
CASE(gvb_q5_k_2048_8192_1, check_gemv(QT_Q5_K, 8192, 2048, 1, s, b, r, e))
CASE(gvb_q4_k_2048_8192_1, check_gemv(QT_Q4_K, 8192, 2048, 1, s, b, r, e))
CASE(gvb_q6_k_2048_8192_1, check_gemv(QT_Q6_K, 8192, 2048, 1, s, b, r, e))
CASE(gvb_q5_k_2048_4096_1, check_gemv(QT_Q5_K, 4096, 2048, 1, s, b, r, e))
CASE(gvb_q4_k_4096_2048_1, check_gemv(QT_Q4_K, 2048, 4096, 1, s, b, r, e))
CASE(gvb_q4_k_2048_512_1, check_gemv(QT_Q4_K, 512, 2048, 1, s, b, r, e))
CASE(gvb_q6_k_512_2048_1, check_gemv(QT_Q6_K, 2048, 512, 1, s, b, r, e))
CASE(gvx_q4_k_gu, check_gemv_experts(QT_Q4_K, 256, 512, 2048, 8, 8, 2, s, b, r, e))
CASE(gvx_q6_k_down, check_gemv_experts(QT_Q6_K, 256, 2048, 512, 8, 1, 1, s, b, r, e))
CASE(gvx_q4_k_down, check_gemv_experts(QT_Q4_K, 256, 2048, 512, 8, 1, 1, s, b, r, e))
CASE(gvx_q4_0_odd, check_gemv_experts(QT_Q4_0, 64, 37, 320, 4, 1, 2, s, b, r, e))
CASE(gvx_q5_k_odd, check_gemv_experts(QT_Q5_K, 48, 20, 512, 3, 3, 1, s, b, r, e))
CASE(gvb_q4_k_t20, check_gemv(QT_Q4_K, 263, 2816, 20, s, b, r, e))
CASE(gvb_q4_0_t64, check_gemv(QT_Q4_0, 263, 2816, 64, s, b, r, e))
CASE(gvb_q4_k_4096_2048_64, check_gemv(QT_Q4_K, 2048, 4096, 64, s, b, r, e))
CASE(gvb_q6_k_4096_2048_64, check_gemv(QT_Q6_K, 2048, 4096, 64, s, b, r, e))
CASE(gvb_q4_1_t24, check_gemv(QT_Q4_1, 263, 2816, 24, s, b, r, e))
CASE(gvb_q5_0_t9, check_gemv(QT_Q5_0, 263, 2816, 9, s, b, r, e))
CASE(gvb_q8_0_4096_t40, check_gemv(QT_Q8_0, 263, 4096, 40, s, b, r, e))
CASE(gvb_q5_k_4096_t33, check_gemv(QT_Q5_K, 263, 4096, 33, s, b, r, e))
CASE(gvb_q6_k_t64, check_gemv(QT_Q6_K, 263, 2816, 64, s, b, r, e))
CASE(gvb_q4_k_14336_t17, check_gemv(QT_Q4_K, 300, 14336, 17, s, b, r, e))
CASE(gvb_q4_0_896_t24, check_gemv(QT_Q4_0, 263, 896, 24, s, b, r, e))
CASE(gvb_q4_k_4096_14336_16, check_gemv(QT_Q4_K, 14336, 4096, 16, s, b, r, e))
CASE(gvb_q4_k_4096_14336_64, check_gemv(QT_Q4_K, 14336, 4096, 64, s, b, r, e))
CASE(gvb_q6_k_4096_14336_64, check_gemv(QT_Q6_K, 14336, 4096, 64, s, b, r, e))
CASE(gvb_q4_k_14336_4096_64, check_gemv(QT_Q4_K, 4096, 14336, 64, s, b, r, e))
CASE(gvb_q6k_head, check_gemv(QT_Q6_K, 128256, 4096, 1, s, b, r, e))
CASE(rn_a, check_rms_norm(1, 4096, true, s, b, r, e))
CASE(rn_b, check_rms_norm(64, 128, true, s, b, r, e))
CASE(rn_c, check_rms_norm(3, 896, false, s, b, r, e))
CASE(ew_a, check_eltwise(0, 14336, s, b, r, e))
CASE(ew_b, check_eltwise(1, 10243, s, b, r, e))
CASE(ew_c, check_eltwise(2, 6145, s, b, r, e))
CASE(ew_d, check_eltwise(3, 4099, s, b, r, e))
CASE(nb_a, check_bf16_out(0, 300, 5120, s, r, e))
CASE(nb_b, check_bf16_out(0, 9, 2048, s, r, e))
CASE(nb_c, check_bf16_out(1, 37, 17408, s, r, e))
CASE(rp_a, check_rope(2, 32, 128, 128, ROPE_NEOX, false, 32768, s, r, e))
CASE(rp_b, check_rope(3, 24, 256, 64, ROPE_NEOX, false, 32768, s, r, e))
CASE(rp_c, check_rope(3, 32, 128, 128, ROPE_NORM, true, 32768, s, r, e))
CASE(rp_d, check_rope(1, 8, 64, 32, ROPE_NORM, false, 4096, s, r, e))
CASE(at_0, check_attn(1024, 1000, 32, 8, 128, 0, s, b, r, e))
CASE(at_1, check_attn(4608, 4500, 24, 4, 256, 0, s, b, r, e))
CASE(at_2, check_attn(3000, 2900, 8, 4, 256, 512, s, b, r, e))
CASE(at_3, check_attn(300, 257, 14, 2, 64, 0, s, b, r, e))
CASE(at_4, check_attn(32768, 32768, 32, 8, 128, 0, s, b, r, e))
CASE(at_5, check_attn(32768, 32000, 16, 2, 256, 4096, s, b, r, e))
CASE(gd_32_tiled, check_gdn(16, 32, GDN_HEADS_TILED, 1, s, b, r, e))
CASE(gd_32_grouped, check_gdn(16, 32, GDN_HEADS_GROUPED, 1, s, b, r, e))
CASE(gd_48_tiled, check_gdn(16, 48, GDN_HEADS_TILED, 1, s, b, r, e))
CASE(gd_48_grouped, check_gdn(16, 48, GDN_HEADS_GROUPED, 1, s, b, r, e))
CASE(gd_16_tiled, check_gdn(16, 16, GDN_HEADS_TILED, 1, s, b, r, e))
CASE(gd_32_tiled_3, check_gdn(16, 32, GDN_HEADS_TILED, 3, s, b, r, e))
CASE(gd_48_grouped_5, check_gdn(16, 48, GDN_HEADS_GROUPED, 5, s, b, r, e))
CASE(mr_a, check_moe_route(1, 256, 8, CUDA_MOE_SOFTMAX, 1, s, r, e))
CASE(mr_b, check_moe_route(4, 128, 8, CUDA_MOE_SOFTMAX, 1, s, r, e))
CASE(mr_c, check_moe_route(2, 64, 6, CUDA_MOE_SIGMOID, 0, s, r, e))
CASE(mr_d, check_moe_route(3, 512, 10, CUDA_MOE_SOFTMAX, 1, s, r, e))
CASE(mr_e, check_moe_route(2, 1000, 8, CUDA_MOE_SIGMOID, 1, s, r, e))
CASE(am_a, check_argmax(1, 151936, s, b, r, e))
CASE(am_b, check_argmax(4, 262144, s, b, r, e))
CASE(am_c, check_argmax(3, 32000, s, b, r, e))

const cuda_check_case cuda_check_decode_cases[] = {
    {"quantize_q8_1", "T1 K4096", q8_a},
    {"quantize_q8_1", "T8 K14336", q8_b},
    {"rms_norm_q8_1", "T1 K4096", q8_c},
    {"rms_norm_q8_1", "T5 K2880", q8_d},
    {"rms_norm_q8_1", "T1 K5120", q8_g},
    {"rms_norm_q8_1", "T1 K896", q8_h},
    {"spin", "300 us", spin_a},
    {"pairs", "rope2 l2_norm2 store_rows2 add_gated_rows_res", pairs_a},
    {"swiglu_q8_1", "T1 K4864", q8_e},
    {"swiglu_q8_1", "T7 K14336", q8_f},
    {"gemv", "q4_0 K2816 N263 T1", gv_q4_0_t1},
    {"gemv", "q4_0 K2816 N263 T2", gv_q4_0_t2},
    {"gemv", "q4_0 K2816 N263 T3", gv_q4_0_t3},
    {"gemv", "q4_0 K2816 N263 T4", gv_q4_0_t4},
    {"gemv", "q4_0 K2816 N263 T5", gv_q4_0_t5},
    {"gemv", "q4_0 K2816 N263 T6", gv_q4_0_t6},
    {"gemv", "q4_0 K2816 N263 T7", gv_q4_0_t7},
    {"gemv", "q4_0 K2816 N263 T8", gv_q4_0_t8},
    {"gemv", "q4_1 K2816 N263 T1", gv_q4_1_t1},
    {"gemv", "q4_1 K2816 N263 T2", gv_q4_1_t2},
    {"gemv", "q4_1 K2816 N263 T3", gv_q4_1_t3},
    {"gemv", "q4_1 K2816 N263 T4", gv_q4_1_t4},
    {"gemv", "q4_1 K2816 N263 T5", gv_q4_1_t5},
    {"gemv", "q4_1 K2816 N263 T6", gv_q4_1_t6},
    {"gemv", "q4_1 K2816 N263 T7", gv_q4_1_t7},
    {"gemv", "q4_1 K2816 N263 T8", gv_q4_1_t8},
    {"gemv", "q5_0 K2816 N263 T1", gv_q5_0_t1},
    {"gemv", "q5_0 K2816 N263 T2", gv_q5_0_t2},
    {"gemv", "q5_0 K2816 N263 T3", gv_q5_0_t3},
    {"gemv", "q5_0 K2816 N263 T4", gv_q5_0_t4},
    {"gemv", "q5_0 K2816 N263 T5", gv_q5_0_t5},
    {"gemv", "q5_0 K2816 N263 T6", gv_q5_0_t6},
    {"gemv", "q5_0 K2816 N263 T7", gv_q5_0_t7},
    {"gemv", "q5_0 K2816 N263 T8", gv_q5_0_t8},
    {"gemv", "q8_0 K2816 N263 T1", gv_q8_0_t1},
    {"gemv", "q8_0 K2816 N263 T2", gv_q8_0_t2},
    {"gemv", "q8_0 K2816 N263 T3", gv_q8_0_t3},
    {"gemv", "q8_0 K2816 N263 T4", gv_q8_0_t4},
    {"gemv", "q8_0 K2816 N263 T5", gv_q8_0_t5},
    {"gemv", "q8_0 K2816 N263 T6", gv_q8_0_t6},
    {"gemv", "q8_0 K2816 N263 T7", gv_q8_0_t7},
    {"gemv", "q8_0 K2816 N263 T8", gv_q8_0_t8},
    {"gemv", "q4_k K2816 N263 T1", gv_q4_k_t1},
    {"gemv", "q4_k K2816 N263 T2", gv_q4_k_t2},
    {"gemv", "q4_k K2816 N263 T3", gv_q4_k_t3},
    {"gemv", "q4_k K2816 N263 T4", gv_q4_k_t4},
    {"gemv", "q4_k K2816 N263 T5", gv_q4_k_t5},
    {"gemv", "q4_k K2816 N263 T6", gv_q4_k_t6},
    {"gemv", "q4_k K2816 N263 T7", gv_q4_k_t7},
    {"gemv", "q4_k K2816 N263 T8", gv_q4_k_t8},
    {"gemv", "q5_k K2816 N263 T1", gv_q5_k_t1},
    {"gemv", "q5_k K2816 N263 T2", gv_q5_k_t2},
    {"gemv", "q5_k K2816 N263 T3", gv_q5_k_t3},
    {"gemv", "q5_k K2816 N263 T4", gv_q5_k_t4},
    {"gemv", "q5_k K2816 N263 T5", gv_q5_k_t5},
    {"gemv", "q5_k K2816 N263 T6", gv_q5_k_t6},
    {"gemv", "q5_k K2816 N263 T7", gv_q5_k_t7},
    {"gemv", "q5_k K2816 N263 T8", gv_q5_k_t8},
    {"gemv", "q6_k K2816 N263 T1", gv_q6_k_t1},
    {"gemv", "q6_k K2816 N263 T2", gv_q6_k_t2},
    {"gemv", "q6_k K2816 N263 T3", gv_q6_k_t3},
    {"gemv", "q6_k K2816 N263 T4", gv_q6_k_t4},
    {"gemv", "q6_k K2816 N263 T5", gv_q6_k_t5},
    {"gemv", "q6_k K2816 N263 T6", gv_q6_k_t6},
    {"gemv", "q6_k K2816 N263 T7", gv_q6_k_t7},
    {"gemv", "q6_k K2816 N263 T8", gv_q6_k_t8},
    {"gemv", "q4_0 K4096 N4096 T1", gvb_q4_0_4096_4096_1},
    {"gemv", "q4_0 K4096 N14336 T1", gvb_q4_0_4096_14336_1},
    {"gemv", "q4_0 K14336 N4096 T1", gvb_q4_0_14336_4096_1},
    {"gemv", "q4_0 K4096 N14336 T8", gvb_q4_0_4096_14336_8},
    {"gemv", "q4_0 K896 N4864 T1", gvb_q4_0_896_4864_1},
    {"gemv", "q4_0 K896 N151936 T1", gvb_q4_0_896_151936_1},
    {"gemv", "q4_1 K4096 N4096 T1", gvb_q4_1_4096_4096_1},
    {"gemv", "q4_1 K4096 N14336 T1", gvb_q4_1_4096_14336_1},
    {"gemv", "q4_1 K14336 N4096 T1", gvb_q4_1_14336_4096_1},
    {"gemv", "q4_1 K4096 N14336 T8", gvb_q4_1_4096_14336_8},
    {"gemv", "q4_1 K896 N4864 T1", gvb_q4_1_896_4864_1},
    {"gemv", "q4_1 K896 N151936 T1", gvb_q4_1_896_151936_1},
    {"gemv", "q5_0 K4096 N4096 T1", gvb_q5_0_4096_4096_1},
    {"gemv", "q5_0 K4096 N14336 T1", gvb_q5_0_4096_14336_1},
    {"gemv", "q5_0 K14336 N4096 T1", gvb_q5_0_14336_4096_1},
    {"gemv", "q5_0 K4096 N14336 T8", gvb_q5_0_4096_14336_8},
    {"gemv", "q5_0 K896 N4864 T1", gvb_q5_0_896_4864_1},
    {"gemv", "q5_0 K896 N151936 T1", gvb_q5_0_896_151936_1},
    {"gemv", "q8_0 K4096 N4096 T1", gvb_q8_0_4096_4096_1},
    {"gemv", "q8_0 K4096 N14336 T1", gvb_q8_0_4096_14336_1},
    {"gemv", "q8_0 K14336 N4096 T1", gvb_q8_0_14336_4096_1},
    {"gemv", "q8_0 K4096 N14336 T8", gvb_q8_0_4096_14336_8},
    {"gemv", "q8_0 K896 N4864 T1", gvb_q8_0_896_4864_1},
    {"gemv", "q8_0 K896 N151936 T1", gvb_q8_0_896_151936_1},
    {"gemv", "q4_k K4096 N4096 T1", gvb_q4_k_4096_4096_1},
    {"gemv", "q4_k K4096 N14336 T1", gvb_q4_k_4096_14336_1},
    {"gemv", "q4_k K14336 N4096 T1", gvb_q4_k_14336_4096_1},
    {"gemv", "q4_k K4096 N14336 T8", gvb_q4_k_4096_14336_8},
    {"gemv", "q5_k K4096 N4096 T1", gvb_q5_k_4096_4096_1},
    {"gemv", "q5_k K4096 N14336 T1", gvb_q5_k_4096_14336_1},
    {"gemv", "q5_k K14336 N4096 T1", gvb_q5_k_14336_4096_1},
    {"gemv", "q5_k K4096 N14336 T8", gvb_q5_k_4096_14336_8},
    {"gemv", "q6_k K4096 N4096 T1", gvb_q6_k_4096_4096_1},
    {"gemv", "q6_k K4096 N14336 T1", gvb_q6_k_4096_14336_1},
    {"gemv", "q6_k K14336 N4096 T1", gvb_q6_k_14336_4096_1},
    {"gemv", "q6_k K4096 N14336 T8", gvb_q6_k_4096_14336_8},
    {"gemv", "q4_k K5120 N17408 T1", gvb_q4_k_5120_17408_1},
    {"gemv", "q4_k K17408 N5120 T1", gvb_q4_k_17408_5120_1},
    {"gemv", "q6_k K5120 N17408 T1", gvb_q6_k_5120_17408_1},
    {"gemv", "q6_k K17408 N5120 T1", gvb_q6_k_17408_5120_1},
    {"gemv", "q5_k K5120 N10240 T1", gvb_q5_k_5120_10240_1},
    {"gemv", "q4_k K5120 N6144 T1", gvb_q4_k_5120_6144_1},
    {"gemv", "q5_k K2048 N8192 T1", gvb_q5_k_2048_8192_1},
    {"gemv", "q4_k K2048 N8192 T1", gvb_q4_k_2048_8192_1},
    {"gemv", "q6_k K2048 N8192 T1", gvb_q6_k_2048_8192_1},
    {"gemv", "q5_k K2048 N4096 T1", gvb_q5_k_2048_4096_1},
    {"gemv", "q4_k K4096 N2048 T1", gvb_q4_k_4096_2048_1},
    {"gemv", "q4_k K2048 N512 T1", gvb_q4_k_2048_512_1},
    {"gemv", "q6_k K512 N2048 T1", gvb_q6_k_512_2048_1},
    {"gemv_experts", "q4_k E256 K2048 N512 8 slots, gate + up", gvx_q4_k_gu},
    {"gemv_experts", "q6_k E256 K512 N2048 8 slots, a row each", gvx_q6_k_down},
    {"gemv_experts", "q4_k E256 K512 N2048 8 slots, a row each", gvx_q4_k_down},
    {"gemv_experts", "q4_0 E64 K320 N37 4 slots, a row each, x2", gvx_q4_0_odd},
    {"gemv_experts", "q5_k E48 K512 N20 3 slots, one row", gvx_q5_k_odd},
    {"gemv", "q4_k K2816 N263 T20 (batched)", gvb_q4_k_t20},
    {"gemv", "q4_0 K2816 N263 T64 (batched)", gvb_q4_0_t64},
    {"gemv", "q4_k K4096 N2048 T64 (batched)", gvb_q4_k_4096_2048_64},
    {"gemv", "q6_k K4096 N2048 T64 (batched)", gvb_q6_k_4096_2048_64},
    {"gemv", "q4_1 K2816 N263 T24 (batched)", gvb_q4_1_t24},
    {"gemv", "q5_0 K2816 N263 T9 (batched)", gvb_q5_0_t9},
    {"gemv", "q8_0 K4096 N263 T40 (batched)", gvb_q8_0_4096_t40},
    {"gemv", "q5_k K4096 N263 T33 (batched)", gvb_q5_k_4096_t33},
    {"gemv", "q6_k K2816 N263 T64 (batched)", gvb_q6_k_t64},
    {"gemv", "q4_k K14336 N300 T17 (batched)", gvb_q4_k_14336_t17},
    {"gemv", "q4_0 K896 N263 T24 (batched)", gvb_q4_0_896_t24},
    {"gemv", "q4_k K4096 N14336 T16 (batched)", gvb_q4_k_4096_14336_16},
    {"gemv", "q4_k K4096 N14336 T64 (batched)", gvb_q4_k_4096_14336_64},
    {"gemv", "q6_k K4096 N14336 T64 (batched)", gvb_q6_k_4096_14336_64},
    {"gemv", "q4_k K14336 N4096 T64 (batched)", gvb_q4_k_14336_4096_64},
    {"gemv", "q6_k K4096 N128256 T1", gvb_q6k_head},
    {"rms_norm", "R1 C4096 w", rn_a},
    {"rms_norm", "R64 C128 w (heads)", rn_b},
    {"rms_norm", "R3 C896 no w", rn_c},
    {"swiglu", "n14336", ew_a},
    {"rms_norm_bf16", "R300 C5120 w", nb_a},
    {"rms_norm_bf16", "R9 C2048", nb_b},
    {"swiglu_bf16", "T37 x 17408", nb_c},
    {"geglu", "n10243", ew_b},
    {"sigmoid_mul", "n6145", ew_c},
    {"add", "n4099", ew_d},
    {"rope", "neox T2 H32 D128 n_rot128", rp_a},
    {"rope", "neox T3 H24 D256 n_rot64 (partial)", rp_b},
    {"rope", "norm T3 H32 D128 factors", rp_c},
    {"rope", "norm T1 H8 D64 n_rot32 (partial)", rp_d},
    {"attn_decode", "S1000/1024 Hq32 Hkv8 D128", at_0},
    {"attn_decode", "S4500/4608 Hq24 Hkv4 D256", at_1},
    {"attn_decode", "S2900/3000 Hq8 Hkv4 D256 win512", at_2},
    {"attn_decode", "S257/300 Hq14 Hkv2 D64", at_3},
    {"attn_decode", "S32768/32768 Hq32 Hkv8 D128", at_4},
    {"attn_decode", "S32000/32768 Hq16 Hkv2 D256 win4096", at_5},
    {"gdn_step", "Hk16 Hv32 D128 tiled", gd_32_tiled},
    {"gdn_step", "Hk16 Hv32 D128 grouped", gd_32_grouped},
    {"gdn_step", "Hk16 Hv48 D128 tiled", gd_48_tiled},
    {"gdn_step", "Hk16 Hv48 D128 grouped", gd_48_grouped},
    {"gdn_step", "Hk16 Hv16 D128 (8 column blocks a head)", gd_16_tiled},
    {"gdn_step", "Hk16 Hv32 D128 tiled, 3 sequences", gd_32_tiled_3},
    {"gdn_step", "Hk16 Hv48 D128 grouped, 5 sequences", gd_48_grouped_5},
    {"moe_route", "T1 E256 K8 softmax renorm", mr_a},
    {"moe_route", "T4 E128 K8 softmax renorm", mr_b},
    {"moe_route", "T2 E64 K6 sigmoid", mr_c},
    {"moe_route", "T3 E512 K10 softmax renorm", mr_d},
    {"moe_route", "T2 E1000 K8 sigmoid renorm", mr_e},
    {"argmax", "T1 V151936", am_a},
    {"argmax", "T4 V262144", am_b},
    {"argmax", "T3 V32000", am_c},
    {"backend", "every exec op vs ops_ref (conformance.c)", check_backend_conformance},
};
const int cuda_check_decode_n = (int)(sizeof cuda_check_decode_cases / sizeof cuda_check_decode_cases[0]);
