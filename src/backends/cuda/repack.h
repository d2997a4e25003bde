/* repack: GGUF weight rows into the CUDA GEMV layout (host side, plain C; described in
 * kernels/gemv_unpack.h). GGUF blocks of 18, 20, 22, 34 and 210 bytes cannot be read with aligned 16-byte
 * loads; the layout splits each row into three planes (quants, high bits, scales) whose units are 16-byte
 * aligned, at the same number of bytes (Q6_K: 20 instead of 18 scale bytes per 256 values, +1%). */
#ifndef LLM170_BACKENDS_CUDA_REPACK_H
#define LLM170_BACKENDS_CUDA_REPACK_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "quant/qtype.h"

/* Bytes of the three planes for an [N][K] matrix of type t (hi is 0 for types without high bits).
 * Fails naming the type if the GEMV does not handle it, or if K is not a multiple of its block. */
int cuda_repack_sizes(enum qtype t, int64_t N, int64_t K, size_t *qs, size_t *hi, size_t *meta, err *e);

/* src: N rows of K values in GGUF blocks; qs / hi / meta: buffers of cuda_repack_sizes' sizes */
int cuda_repack(enum qtype t, const void *src, int64_t N, int64_t K, void *qs, void *hi, void *meta, err *e);

#endif
