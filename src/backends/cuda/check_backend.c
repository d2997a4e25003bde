/* check_backend: the executor's own kernels, checked through the backend conformance suite
 * (backends/conformance.c) run on the CUDA device cuda-check selected: every exec op called through the
 * CUDA executor's op table on random non-zero inputs of awkward shapes against engine/ops_ref.h or plain
 * double loops, each with the tolerance the suite states per op (exact for data movement and
 * dequantization; 1e-5 of the largest value for float kernels; 5e-3 for flash attention over an f16
 * cache; 1e-4 for the chunked delta rule; an error model of activation rounding for the matmuls). These
 * kernels are reached by it:
 *   covers: k_copy_cols k_set_cols k_gather_rows k_get_rows_f k_get_rows_q k_store_rows_f
 *   covers: k_store_rows_q8_0 k_l2_norm k_add_bias k_scale k_gdn_gates k_conv1d_silu k_moe_combine
 *   covers: k_add_gated_rows k_attention k_gdn_seq k_matmul_f
 *   covers: k_store_rows_seqs k_attn_decode_split_seqs k_attn_decode_merge_seqs
 * (and, through the executor, gemv / quantize / attn_decode / flash_attn_prefill / gemm_q / gdn_chunk /
 * moe_route again). max_err is the number of failed checks; tol 0. The suite's table goes to stdout. */
#include <stdio.h>

#include "backends/conformance.h"
#include "backends/cuda/check_decode.h"
#include "backends/cuda/cuda_backend.h"

int check_backend_conformance(uint64_t seed, bool bench, cuda_check_result *res, err *e) {
    (void)seed, (void)bench; /* the suite draws from its own fixed seed; nothing to time */
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return err_set(e, ERR_IO, "cudaGetDevice failed");
    char name[32];
    snprintf(name, sizeof name, "cuda:%d", dev);
    cuda_backend_register();
    fflush(stdout);
    int n = 0, bad = backend_conformance(name, &n);
    fflush(stdout);
    res->max_err = bad;
    res->tol = 0;
    snprintf(res->detail, sizeof res->detail, "%d of %d checks failed", bad, n);
    if (n < 100) return err_set(e, ERR_IO, "the conformance suite ran only %d checks on %s", n, name);
    return 0;
}
