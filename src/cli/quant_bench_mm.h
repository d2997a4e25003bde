/* quant_bench_mm: the --tokens mode of `llm170 quant-bench` (quant_bench_mm.c): single-thread matrix
 * products of a K-wide weight matrix (about mb MiB) with each token count, row-by-row kernels against the
 * int8 matrix products, as a markdown table on stdout. Returns 0, or 1 when out of memory. */
#ifndef LLM170_CLI_QUANT_BENCH_MM_H
#define LLM170_CLI_QUANT_BENCH_MM_H

#include <stdint.h>

#include "quant/qtype.h"

int quant_bench_matmul(const enum qtype *types, int ntypes, const int *tokens, int ntok, int64_t K, double mb,
                       int reps);

#endif
