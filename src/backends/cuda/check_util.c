/* check_util: see check_util.h. */
#include "backends/cuda/check_util.h"

#include <math.h>
#include <stdlib.h>

#include "backends/cuda/kernels.h"

void *dpool_alloc(dpool *d, size_t bytes, err *e) {
    if (d->n >= DPOOL_MAX) {
        err_set(e, ERR_RANGE, "check: more than %d device buffers in one case", DPOOL_MAX);
        return NULL;
    }
    void *p = NULL;
    if (cu_alloc(&p, bytes, e)) return NULL;
    d->p[d->n++] = p;
    return p;
}

void *dpool_up(dpool *d, const void *host, size_t bytes, err *e) {
    void *p = dpool_alloc(d, bytes, e);
    if (p && bytes && cu_check(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice), e, "cudaMemcpy H2D")) return NULL;
    return p;
}

void dpool_free(dpool *d) {
    for (int i = 0; i < d->n; i++) cu_free(d->p[i]);
    d->n = 0;
}

void *hmalloc(size_t bytes, err *e) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) err_set(e, ERR_NOMEM, "check: out of host memory (%zu bytes)", bytes);
    return p;
}

void fill_normal(rng *r, float *x, int64_t n, float sd) {
    for (int64_t i = 0; i < n; i++) x[i] = sd * rng_normal(r);
}

void fill_uniform(rng *r, float *x, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) x[i] = rng_uniform(r, lo, hi);
}

void tally_init(tally *t) {
    t->worst = 0;
    t->at = -1;
    t->got = t->want = 0;
}

void tally_note(tally *t, int64_t i, double got, double want, double bound) {
    double d = fabs(got - want);
    double q = isfinite(got) ? (bound > 0 ? d / bound : (d > 0 ? INFINITY : 0)) : INFINITY;
    if (q > t->worst || t->at < 0) {
        if (q >= t->worst) t->worst = q, t->at = i, t->got = got, t->want = want;
    }
}

int kcheck(int status, err *e, const char *what) {
    if (status == CUDA_KERR_OK) return 0;
    return err_set(e, status == CUDA_KERR_LAUNCH ? ERR_IO : ERR_ARG, "%s: %s", what,
                   status == CUDA_KERR_LAUNCH ? "kernel launch failed"
                   : status == CUDA_KERR_UNSUPPORTED ? "unsupported type or shape" : "precondition failed");
}

int bench_copies(size_t bytes) {
    size_t want = (size_t)256 << 20;
    int n = (int)((want + bytes - 1) / (bytes ? bytes : 1));
    return n < 1 ? 1 : n > 16 ? 16 : n;
}

int bench_fill(cuda_check_result *r, cu_launch_fn launch, void *ctx, int n_inputs, double bytes, err *e) {
    double us;
    int rc = cu_time(launch, ctx, n_inputs, &us, e);
    if (rc) return rc;
    r->us = us;
    r->gbps = bytes / us * 1e-3;
    return 0;
}
