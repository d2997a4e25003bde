/* check_util: what the decode conformance cases (check_*.c) share: a pool of device buffers freed in one
 * call, random inputs, error tallies in units of a per-element bound, and the bench bookkeeping. */
#ifndef LLM170_BACKENDS_CUDA_CHECK_UTIL_H
#define LLM170_BACKENDS_CUDA_CHECK_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_util.h"
#include "base/rng.h"

/* Device buffers of one case; dpool_free releases all. */
#define DPOOL_MAX 64
typedef struct dpool { void *p[DPOOL_MAX]; int n; } dpool;
void *dpool_alloc(dpool *d, size_t bytes, err *e);             /* NULL on failure (e set) */
void *dpool_up(dpool *d, const void *host, size_t bytes, err *e); /* alloc + upload */
void dpool_free(dpool *d);

/* Host buffers: malloc that sets e on failure. */
void *hmalloc(size_t bytes, err *e);

void fill_normal(rng *r, float *x, int64_t n, float sd);
void fill_uniform(rng *r, float *x, int64_t n, float lo, float hi);

/* Error tally in units of a bound: note(t, got, want, bound) keeps the largest |got - want| / bound (a
 * NaN or an infinite got counts as infinitely far) and where it happened. */
typedef struct tally { double worst; int64_t at; double got, want; } tally;
void tally_init(tally *t);
void tally_note(tally *t, int64_t i, double got, double want, double bound);

/* Kernel launch status -> err ("what: precondition failed" / "launch failed"). */
int kcheck(int status, err *e, const char *what);

/* Times launch (cu_time over n_inputs rotated input sets) and fills r->us and r->gbps for `bytes` moved
 * per launch. */
int bench_fill(cuda_check_result *r, cu_launch_fn launch, void *ctx, int n_inputs, double bytes, err *e);

/* Copies to rotate through in a bench so that the working set exceeds the H200's 50 MB L2 several times
 * over: enough copies of `bytes` for ~256 MB, at least 1, at most 16. */
int bench_copies(size_t bytes);

#endif
