/* threadpool: a fixed set of worker threads that run one parallel-for at a time.
 *
 * pool_run(p, n, fn, ctx) calls fn(ctx, i, n_threads_used... ) for a split of [0, n) over the threads
 * (the calling thread works too) and returns when all are done. Work is split into contiguous ranges,
 * one per thread, so results never depend on scheduling: the same inputs give the same bits whatever the
 * timing (each output element is computed by exactly one thread in a fixed order). pool_run_dynamic
 * balances uneven items instead, for work whose results do not depend on the thread.
 * Ownership: the pool owns its threads; pool_free joins them. */
#ifndef LLM170_ENGINE_THREADPOOL_H
#define LLM170_ENGINE_THREADPOOL_H

#include <stdint.h>

typedef struct threadpool threadpool;

/* fn computes items [begin, end) of a parallel loop; `thread` is 0..n_threads-1. */
typedef void (*pool_fn)(void *ctx, int64_t begin, int64_t end, int thread);

/* n_threads >= 1 (the caller counts as one). NULL on failure. */
threadpool *pool_new(int n_threads);
void pool_free(threadpool *p);
int pool_n_threads(const threadpool *p);

/* Runs fn over [0, n) split into n_threads contiguous ranges (ranges are multiples of `grain` except the
 * last). Returns when every range is done. Not reentrant: one pool_run at a time per pool. */
void pool_run(threadpool *p, int64_t n, int64_t grain, pool_fn fn, void *ctx);

/* The same, but threads take `grain` items at a time from a shared counter until none are left, so a
 * thread that finishes early takes more. Which thread runs an item then depends on timing: use it only
 * where an item's result does not depend on the thread that computes it (per-thread scratch holds no
 * state from one item to the next). */
void pool_run_dynamic(threadpool *p, int64_t n, int64_t grain, pool_fn fn, void *ctx);

#endif
