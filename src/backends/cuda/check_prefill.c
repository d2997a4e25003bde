/* check_prefill: conformance cases of the prefill kernels (owner: the CUDA prefill helper). */
#include <stddef.h>

#include "backends/cuda/cuda_check.h"

const cuda_check_case cuda_check_prefill_cases[] = {{NULL, NULL, NULL}};
const int cuda_check_prefill_n = 0;
