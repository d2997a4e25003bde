/* check_decode: the decode conformance case bodies (check_gemv.c, check_ops.c, check_attn.c, check_gdn.c,
 * check_select.c); check_decode.c lists their variants in cuda_check_decode_cases. Each returns 0 with
 * res filled (max_err and tol as described at its definition), or an error code with e set. */
#ifndef LLM170_BACKENDS_CUDA_CHECK_DECODE_H
#define LLM170_BACKENDS_CUDA_CHECK_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/mmq_ref.h" /* check_ref_q8_1 */

enum { Q8_PLAIN, Q8_NORM, Q8_SWIGLU }; /* check_q8_1's kernels: quantize, rms_norm_q8_1, swiglu_q8_1 */
int check_spin(int us, cuda_check_result *res, err *e); /* check_ops.c */
int check_pairs(uint64_t seed, cuda_check_result *res, err *e); /* check_ops.c */
int check_q8_1(int T, int K, int mode, uint64_t seed, bool bench, cuda_check_result *res, err *e);
int check_gemv(enum qtype type, int N, int K, int T, uint64_t seed, bool bench, cuda_check_result *res, err *e);
int check_gemv_experts(enum qtype type, int E, int N, int K, int n_slots, int xdiv, int nm, uint64_t seed, bool bench,
                       cuda_check_result *res, err *e);
int check_rms_norm(int R, int C, bool weighted, uint64_t seed, bool bench, cuda_check_result *res, err *e);
int check_eltwise(int op, int64_t n, uint64_t seed, bool bench, cuda_check_result *res, err *e);
/* op 0: cuda_rms_norm_bf16 (weighted when R > 9), 1: cuda_swiglu_bf16, over R x C: y bit for bit the plain
 * kernel's, yb bf16(y) (host rounding); max_err counts the values that differ (tol 0) */
int check_bf16_out(int op, int R, int C, uint64_t seed, cuda_check_result *res, err *e);
int check_rope(int T, int H, int D, int n_rot, enum rope_mode mode, bool factors, int max_pos, uint64_t seed,
               cuda_check_result *res, err *e);
int check_attn(int S_max, int n_kv, int Hq, int Hkv, int D, int window, uint64_t seed, bool bench,
               cuda_check_result *res, err *e);
int check_gdn(int Hk, int Hv, enum gdn_head_map map, int n, uint64_t seed, bool bench, cuda_check_result *res, err *e);
int check_moe_route(int T, int E, int K, enum cuda_moe_gating gating, int renorm, uint64_t seed,
                    cuda_check_result *res, err *e);
int check_argmax(int T, int V, uint64_t seed, bool bench, cuda_check_result *res, err *e);
/* check_backend.c: the backend conformance suite on the current device (the executor's kernels) */
int check_backend_conformance(uint64_t seed, bool bench, cuda_check_result *res, err *e);

#endif
