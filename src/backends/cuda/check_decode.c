/* check_decode: conformance cases of the decode kernels (see cuda_check.h). */
#include <stddef.h>

#include "backends/cuda/cuda_check.h"

const cuda_check_case cuda_check_decode_cases[] = {{NULL, NULL, NULL}};
const int cuda_check_decode_n = 0;
