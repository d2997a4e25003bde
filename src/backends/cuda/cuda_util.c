/* cuda_util: see cuda_util.h. */
#include "backends/cuda/cuda_util.h"

#include <stdio.h>
#include <stdlib.h>

int cu_check(cudaError_t rc, err *e, const char *what) {
    if (rc == cudaSuccess) return 0;
    return err_set(e, ERR_IO, "%s: cuda error %s (%s)", what, cudaGetErrorName(rc), cudaGetErrorString(rc));
}

int cu_select_device(int dev, char *info, size_t info_size, err *e) {
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n == 0)
        return err_set(e, ERR_NOTFOUND, "no CUDA device (%s)",
                       rc != cudaSuccess ? cudaGetErrorString(rc) : "the driver reports none");
    if (dev < 0 || dev >= n) return err_set(e, ERR_ARG, "device %d does not exist (this machine has %d)", dev, n);
    int r;
    if ((r = cu_check(cudaSetDevice(dev), e, "cudaSetDevice"))) return r;
    struct cudaDeviceProp p;
    if ((r = cu_check(cudaGetDeviceProperties(&p, dev), e, "cudaGetDeviceProperties"))) return r;
    if (p.major < 8)
        return err_set(e, ERR_UNSUPPORTED, "device %d (%s) is sm_%d%d; the kernels are built for sm_80 and sm_90",
                       dev, p.name, p.major, p.minor);
    if (info)
        snprintf(info, info_size, "%s, sm_%d%d, %d SMs, %.1f GiB", p.name, p.major, p.minor, p.multiProcessorCount,
                 (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    return 0;
}

int cu_alloc(void **p, size_t bytes, err *e) {
    *p = NULL;
    char what[64];
    snprintf(what, sizeof what, "cudaMalloc(%zu bytes)", bytes);
    return cu_check(cudaMalloc(p, bytes ? bytes : 1), e, what);
}

int cu_upload(void **p, const void *host, size_t bytes, err *e) {
    int r = cu_alloc(p, bytes, e);
    if (!r && bytes) r = cu_check(cudaMemcpy(*p, host, bytes, cudaMemcpyHostToDevice), e, "cudaMemcpy H2D");
    if (r) cu_free(*p), *p = NULL;
    return r;
}

int cu_download(void *host, const void *dev, size_t bytes, err *e) {
    int r = cu_check(cudaDeviceSynchronize(), e, "kernel run");
    if (!r && bytes) r = cu_check(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), e, "cudaMemcpy D2H");
    return r;
}

void cu_free(void *p) {
    if (p) cudaFree(p);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { TIME_PER_GRAPH = 20, TIME_REPS = 15, TIME_WARMUP = 3 };

int cu_time(cu_launch_fn launch, void *ctx, int n_inputs, double *us, err *e) {
    cudaStream_t s = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaEvent_t ev[2] = {NULL, NULL};
    double t[TIME_REPS];
    int r = cu_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), e, "cudaStreamCreate");
    if (!r) r = cu_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), e, "cudaStreamBeginCapture");
    if (!r) {
        for (int i = 0; i < TIME_PER_GRAPH && !r; i++) r = launch(ctx, i % (n_inputs > 0 ? n_inputs : 1), s);
        int r2 = cu_check(cudaStreamEndCapture(s, &g), e, "cudaStreamEndCapture");
        if (!r) r = r2;
    }
    if (!r) r = cu_check(cudaGraphInstantiate(&ge, g, 0), e, "cudaGraphInstantiate");
    if (!r) r = cu_check(cudaEventCreate(&ev[0]), e, "cudaEventCreate");
    if (!r) r = cu_check(cudaEventCreate(&ev[1]), e, "cudaEventCreate");
    for (int i = 0; i < TIME_WARMUP && !r; i++) r = cu_check(cudaGraphLaunch(ge, s), e, "cudaGraphLaunch");
    for (int i = 0; i < TIME_REPS && !r; i++) {
        float ms = 0;
        r = cu_check(cudaEventRecord(ev[0], s), e, "cudaEventRecord");
        if (!r) r = cu_check(cudaGraphLaunch(ge, s), e, "cudaGraphLaunch");
        if (!r) r = cu_check(cudaEventRecord(ev[1], s), e, "cudaEventRecord");
        if (!r) r = cu_check(cudaEventSynchronize(ev[1]), e, "timed run");
        if (!r) r = cu_check(cudaEventElapsedTime(&ms, ev[0], ev[1]), e, "cudaEventElapsedTime");
        t[i] = ms * 1000.0 / TIME_PER_GRAPH;
    }
    if (!r) {
        qsort(t, TIME_REPS, sizeof t[0], cmp_double);
        *us = t[TIME_REPS / 2];
    }
    if (ev[0]) cudaEventDestroy(ev[0]);
    if (ev[1]) cudaEventDestroy(ev[1]);
    if (ge) cudaGraphExecDestroy(ge);
    if (g) cudaGraphDestroy(g);
    if (s) cudaStreamDestroy(s);
    return r;
}
