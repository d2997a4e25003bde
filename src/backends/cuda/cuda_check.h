/* cuda_check: the op-level conformance cases of the CUDA kernels (`llm170 cuda-check`).
 *
 * Each case draws fresh random inputs from its seed (never zeros), computes the CPU reference
 * (engine/ops_ref.h, quant/quant.h, or a reference written beside the case where the CPU has none), runs
 * the kernel and compares with a tolerance the case derives from an error model (stated in a comment at
 * the case). With `bench` it also times the kernel with CUDA events (warm-up, median of many launches,
 * inputs rotated so that they do not sit in L2) and fills us / GB/s / TFLOP/s (0 where meaningless).
 * Two tables: the decode kernels (check_decode*.c) and the prefill kernels (check_prefill.c). */
#ifndef LLM170_BACKENDS_CUDA_CUDA_CHECK_H
#define LLM170_BACKENDS_CUDA_CUDA_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

typedef struct cuda_check_result { double max_err, tol; char detail[160]; double us, gbps, tflops; } cuda_check_result;
typedef struct cuda_check_case {
    const char *op;       /* spelled as the op/kernel: "gemv", "rms_norm_q8", "gemm", "flash_attn_prefill", ... */
    const char *variant;  /* type and shape: "q4_k 4096x14336 T=1" */
    int (*run)(uint64_t seed, bool bench, cuda_check_result *r, err *e); /* 0 ok; bench: also time */
} cuda_check_case;
extern const cuda_check_case cuda_check_decode_cases[]; extern const int cuda_check_decode_n;
extern const cuda_check_case cuda_check_prefill_cases[]; extern const int cuda_check_prefill_n;

#endif
