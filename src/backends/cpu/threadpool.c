/* threadpool: workers wait on a generation counter; each pool_run publishes a job, bumps the generation,
 * works its own range and waits until every worker has reported done. Workers spin briefly before
 * sleeping on a condition variable, so back-to-back small jobs (decode) do not pay a wake-up each. */
#include "backends/cpu/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/fpenv.h"

struct threadpool {
    int n_threads;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int generation;
    atomic_int pending;  /* workers still running the current job */
    atomic_bool quit;
    /* the current job */
    pool_fn fn;
    void *ctx;
    int64_t n, grain;
    bool dynamic;        /* pool_run_dynamic: threads take grains from `next` */
    atomic_llong next;
};

#define POOL_SPINS_BEFORE_YIELD 2000

typedef struct worker_arg { threadpool *p; int id; } worker_arg;

static void run_range(threadpool *p, int id) {
    if (p->dynamic) {
        for (;;) {
            const int64_t begin = atomic_fetch_add_explicit(&p->next, p->grain, memory_order_relaxed);
            if (begin >= p->n) return;
            p->fn(p->ctx, begin, begin + p->grain < p->n ? begin + p->grain : p->n, id);
        }
    }
    int64_t blocks = (p->n + p->grain - 1) / p->grain;
    int64_t per = blocks / p->n_threads, extra = blocks % p->n_threads;
    int64_t b0 = id * per + (id < extra ? id : extra);
    int64_t b1 = b0 + per + (id < extra ? 1 : 0);
    int64_t begin = b0 * p->grain, end = b1 * p->grain;
    if (end > p->n) end = p->n;
    if (begin < end) p->fn(p->ctx, begin, end, id);
}

static void *worker(void *arg) {
    fpenv_enter(); /* for the thread's life: see base/fpenv.h */
    worker_arg *wa = arg;
    threadpool *p = wa->p;
    int id = wa->id;
    free(wa);
    int seen = 0;
    for (;;) {
        int spins = 0;
        while (atomic_load_explicit(&p->generation, memory_order_acquire) == seen && !atomic_load(&p->quit)) {
            if (++spins < 20000) continue;
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->quit)) pthread_cond_wait(&p->cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit)) return NULL;
        seen = atomic_load(&p->generation);
        run_range(p, id);
        atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
    }
}

threadpool *pool_new(int n_threads) {
    if (n_threads < 1) return NULL;
    threadpool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n_threads = n_threads;
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa || (wa->p = p, wa->id = i, pthread_create(&p->threads[i], NULL, worker, wa)) != 0) {
            free(wa);
            p->n_threads = i; /* only the threads that started */
            pool_free(p);
            return NULL;
        }
    }
    return p;
}

void pool_free(threadpool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, true);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}

int pool_n_threads(const threadpool *p) { return p->n_threads; }

static void run(threadpool *p, int64_t n, int64_t grain, pool_fn fn, void *ctx, bool dynamic) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    p->dynamic = dynamic;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->grain = grain;
    if (p->n_threads == 1) {
        run_range(p, 0);
        return;
    }
    atomic_store(&p->pending, p->n_threads - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    run_range(p, 0);
    /* Wait for the workers: spin (a worker is usually a few microseconds behind), then yield the core, so
     * that a worker the OS preempted for another thread of the process (a server's connection threads)
     * gets it back instead of this thread burning it. */
    for (int spins = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0;)
        if (++spins > POOL_SPINS_BEFORE_YIELD) sched_yield();
}

void pool_run(threadpool *p, int64_t n, int64_t grain, pool_fn fn, void *ctx) { run(p, n, grain, fn, ctx, false); }

void pool_run_dynamic(threadpool *p, int64_t n, int64_t grain, pool_fn fn, void *ctx) {
    run(p, n, grain, fn, ctx, true);
}
