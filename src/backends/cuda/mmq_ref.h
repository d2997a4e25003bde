/* mmq_ref: the host model of the integer expert GEMM (kernels/mmq.cu) and its error bound (plain C: the
 * conformance case check_prefill_mmq.c and the GPU-less test tests/cuda/cuda_mmq_test.c use it).
 *
 * mmq_ref_dot is one output of the kernel computed on the host with the kernel's own unit arithmetic
 * (kernels/mmq_unit.h, over the GEMV layout's planes decoded by kernels/gemv_unpack.h): the same bits as
 * the device for the same q8_1 row. With the unquantized row and the CPU's dequantized weights it also gives
 * the double reference and the bound of mmq_unit.h. */
#ifndef LLM170_BACKENDS_CUDA_MMQ_REF_H
#define LLM170_BACKENDS_CUDA_MMQ_REF_H

#include <stdint.h>

#include "quant/qtype.h"

/* What one output is checked against (mmq_ref_dot fills it when x and wf are given). */
typedef struct mmq_ref_cmp {
    double ref;     /* sum_k wf_k x_k: the CPU's dequantized weights times the unquantized activations */
    double bound;   /* mmq_unit.h's bound on |y - ref| */
    double ref_q;   /* sum_k w'_k d_k x8_k: the exact product of the same integers and scales */
    double bound_q; /* the float work's part of the bound: |y - ref_q| <= bound_q */
} mmq_ref_cmp;

/* The kernel's output for row r of an [rows][K] matrix of type t in the GEMV layout (planes qs, hi, meta as
 * cuda_repack writes them; hi NULL for types without high bits) and one q8_1 activation row (xq[K],
 * ds[K/32][2]). x (the unquantized row, K floats) and wf (to_float of weight row r) may be NULL; with both,
 * *cmp is filled. K % 32 == 0. */
float mmq_ref_dot(enum qtype t, const uint8_t *qs, const uint8_t *hi, const uint8_t *meta, int64_t r, int64_t K,
                  const int8_t *xq, const float *ds, const float *x, const float *wf, mmq_ref_cmp *cmp);

/* xq[K], ds[K/32][2] = q8_1 of x[K] with kernels/quantize.cu's operations, in the same order (d = amax / 127,
 * q = roundf(x * (1 / d)), ds = (d, d * sum q)); K % 32 == 0. The host quantizer of every cuda-check case
 * (check_gemv.c, check_gdn.c) and of cuda_mmq_test. */
void check_ref_q8_1(const float *x, int8_t *xq, float *ds, int64_t K);

#endif
