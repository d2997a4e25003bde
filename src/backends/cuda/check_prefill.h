/* check_prefill: the prefill conformance cases (owner: the CUDA prefill helper), split over
 * check_prefill.c (the table, matrix products) and check_prefill_seq.c (attention, Gated DeltaNet).
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

int pf_attn_case(int D, int Hq, int Hkv, int T, int pos0, int window, bool big, uint64_t seed, bool bench,
                 cuda_check_result *r, err *e);
int pf_gdn_case(int Hk, int Hv, int T, bool grouped, bool big, uint64_t seed, bool bench, cuda_check_result *r,
                err *e);

#endif
