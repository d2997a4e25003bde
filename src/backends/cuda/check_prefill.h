/* check_prefill: the prefill conformance cases (owner: the CUDA prefill helper), split over
 * check_prefill.c (the table, matrix products), check_prefill_moe.c (the grouped expert product),
 * check_prefill_wgmma.c (the Hopper wgmma product), check_prefill_mmq.c (the int8 expert product) and
 * check_prefill_seq.c (attention, Gated DeltaNet).
 * Internal to the CUDA checks: the shared helpers of those two files. */
#ifndef LLM170_BACKENDS_CUDA_CHECK_PREFILL_H
#define LLM170_BACKENDS_CUDA_CHECK_PREFILL_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cuda/cuda_check.h"
#include "base/rng.h"

/* a kernel launcher's status as an err: 0, or ERR_IO naming the launcher and the status */
int pf_kerr(int status, const char *what, err *e);
/* n normal(0, 1) * scale values */
void pf_normal(rng *r, float *x, int64_t n, float scale);

/* how many of n floats of a differ from b in any bit */
int64_t pf_bits_differ(const float *a, const float *b, int64_t n);
/* the error model of every bf16 product case: sum_k bf16(x_k) bf16(w_k) in double, and its bound
 * K 2^-23 sum |bf16(x_k) bf16(w_k)| (the f32 accumulation's, per output) */
double pf_gemm_ref(const float *x, const float *w, int K, double *bound);
/* one GEMM output y of x . w (K values) against the error model of check_prefill.c: |y - ref| / bound, and
 * the deviation from the f32 product in sigmas into *sig, |y - ref| into *abs_err */
double pf_gemm_score(const float *x, const float *w, int K, float y, double *sig, double *abs_err);

/* the group table g of n slots (cuda_moe_group with tiles of bm) against sel: NULL when it is what
 * cuda_moe_group promises (every slot with a valid expert in exactly one tile of its expert, tiles of 1..bm
 * slots back to back over the list), else the first fault (check_prefill_moe.c) */
const char *pf_moe_table_fault(const int32_t *g, const int32_t *sel, int n, int E, int bm);
/* sel[tokens][topk] = topk distinct random experts of [lo, E) a token (check_prefill_moe.c) */
void pf_moe_route(rng *r, int32_t *sel, int tokens, int topk, int lo, int E);
int pf_moe_case(int type, int E, int N, int K, int tokens, int topk, bool per_slot, bool big, uint64_t seed,
                bool bench, cuda_check_result *r, err *e);
/* the wgmma product (check_prefill_wgmma.c): every output of both tiles (small), or the tile bn sampled and
 * timed (big) */
int pf_wgmma_case(int T, int N, int K, int bn, bool big, uint64_t seed, bool bench, cuda_check_result *r, err *e);
int pf_mmq_case(int type, int E, int N, int K, int tokens, int topk, bool per_slot, bool big, bool dense, uint64_t seed,
                bool bench, cuda_check_result *r, err *e);
int pf_attn_case(int D, int Hq, int Hkv, int T, int pos0, int window, bool big, uint64_t seed, bool bench,
                 cuda_check_result *r, err *e);
int pf_gdn_case(int Hk, int Hv, int T, bool grouped, bool big, uint64_t seed, bool bench, cuda_check_result *r,
                err *e);

#endif
