/* cpu_ops: the CPU backend's fast kernels for the sequence-mixing ops (internal to src/backends/cpu/). Same
 * contracts as their references in ops_ref.h; they differ from them only by float summation order. */
#ifndef LLM170_ENGINE_CPU_OPS_H
#define LLM170_ENGINE_CPU_OPS_H

#include <stdint.h>

#include "engine/ops_ref.h"
#include "quant/qtype.h"
#include "backends/cpu/threadpool.h"

/* Spans shorter than this run the GDN step form token by token (bit-identical to one-token steps, which
 * speculative decoding's verification relies on); longer ones the chunked form. As BULK_MIN_ROWS. */
#define GDN_STEP_MAX_T 16
/* Scratch floats cpu_gdn needs for n_threads threads. */
int64_t cpu_gdn_scratch(int n_threads, int chunk, int Dk, int Dv);

/* ref_gdn_step token by token (T < GDN_STEP_MAX_T) or ref_gdn_chunk (chunks of `chunk`), value heads split
 * over the pool. */
void cpu_gdn(threadpool *pool, float *scratch, float *S, const float *q, const float *k, const float *v,
             const float *g, const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv, int chunk,
             enum gdn_head_map map);

/* cpu_attention.c: ref_attention as blocked matrix products with an online softmax, (head, query block)
 * items split over the pool; keys must be in ascending position order. k and v are caches of type tk / tv
 * (rows of Hkv*D values: F32 read in place; F16, BF16, Q8_0 converted one key block at a time). scratch
 * holds cpu_attention_scratch(n_threads, D) floats (independent of S). */
int64_t cpu_attention_scratch(int n_threads, int D);
void cpu_attention(threadpool *pool, float *scratch, const float *q, const void *k, const void *v, enum qtype tk,
                   enum qtype tv, float *out, const int32_t *qpos, const int32_t *kpos, int T, int S, int Hq, int Hkv,
                   int D, float scale, int window);

/* cpu_elementwise.c: y = silu(g) * u; y *= sigmoid(gate); RMS norm of rows (w may be NULL); the causal
 * conv1d + SiLU of ref_conv1d_silu (returns -1, doing nothing, for K > 16). */
void cpu_silu_mul(threadpool *pool, const float *g, const float *u, float *y, int64_t n);
void cpu_geglu(threadpool *pool, const float *g, const float *u, float *y, int64_t n); /* ref_geglu */
/* ref_rope, bit for bit: tokens split over the pool, each token's cos / sin shared by its heads */
void cpu_rope(threadpool *pool, float *x, const int32_t *pos, int T, int H, int D, const rope_params *rp,
              const float *factors);
void cpu_sigmoid_mul(threadpool *pool, float *y, const float *gate, int64_t n);
void cpu_rms_norm_rows(threadpool *pool, const float *x, const float *w, float *y, int64_t rows, int64_t C, float eps);
int cpu_conv1d_silu(threadpool *pool, const float *x, float *state, const float *w, float *y, int T, int Ch, int K);

#endif
