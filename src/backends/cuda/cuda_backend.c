/* cuda_backend: the CUDA device (weights uploaded at load, device memory from cudaMalloc) and executor
 * (one stream, scratch sized once from the plan); the matmuls are in cuda_matmul.c.
 *
 * Weights: F32 / F16 / BF16 tensors are uploaded as they are. The quantized types the kernels run (Q4_0,
 * Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K) are uploaded twice: repacked into the GEMV layout (repack.h; also
 * what get_rows dequantizes from) and as GGUF blocks for the prefill GEMM (kernels/gemm_q.cu), which reads
 * that layout. Any other type is an error naming the tensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/repack.h"

/* ---------------------------------------------------------------- failures */

int cx_kfail(exec *x, int status, const char *op, const char *what) {
    if (status == CUDA_KERR_OK) return 0;
    const char *why = status == CUDA_KERR_ARGS          ? "a kernel precondition failed"
                      : status == CUDA_KERR_UNSUPPORTED ? "a type or shape the kernels do not handle"
                                                        : "the launch failed";
    cudaError_t ce = status == CUDA_KERR_LAUNCH ? cudaGetLastError() : cudaSuccess;
    exec_fail(x, status == CUDA_KERR_UNSUPPORTED ? ERR_UNSUPPORTED : status == CUDA_KERR_ARGS ? ERR_ARG : ERR_IO,
              "%s%s%s%s: %s%s%s", op, *what ? " '" : "", what, *what ? "'" : "", why, ce != cudaSuccess ? ": " : "",
              ce != cudaSuccess ? cudaGetErrorString(ce) : "");
    return status;
}

const float *cx_f32(exec *x, const weight *w, const char *op) {
    const cuda_weight *cw = w->data;
    if (w->type != QT_F32) {
        exec_fail(x, ERR_UNSUPPORTED, "%s: weight '%s' is %s, the op needs F32", op, w->name,
                  qtype_get((uint32_t)w->type)->name);
        return NULL;
    }
    return cw->raw;
}

/* ---------------------------------------------------------------- the pass */

/* The executor's device becomes the calling thread's current one: a context may be driven from another
 * thread than the one that made it (the server's scheduler thread), and the CUDA runtime's current device
 * is per thread (0 unless set). Remembered per thread, so an op costs one compare. */
void cx_bind(exec *x) {
    static _Thread_local int bound = -1;
    const int dev = cx_of(x)->d->dev;
    if (bound == dev) return;
    const cudaError_t ce = cudaSetDevice(dev);
    if (ce != cudaSuccess) {
        exec_fail(x, ERR_IO, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(ce));
        return;
    }
    bound = dev;
}

/* a pass of <= CUDA_GEMV_MAX_ROWS tokens with output rows is captured into a CUDA graph (cuda_graph.c);
 * the ops since the last download (a pass without one) are launched first */
void cx_begin_pass(exec *x, const pass_span *spans, int n_spans) {
    cx_bind(x);
    x->stats.n_ops++;
    cx_pend_flush(x, NULL); /* the previous pass's last op, if it had no download */
    cx_of(x)->xq_src = cx_of(x)->xb_src = NULL;
    cx_graph_end(x);
    pass_rows_begin(x, &cx_of(x)->pr, spans, n_spans);
    cx_graph_begin(x);
}

/* ---------------------------------------------------------------- device */

static int oom(err *e, const char *what, size_t need) {
    size_t fr = 0, tot = 0;
    cudaGetLastError(); /* clear the allocation failure */
    cudaMemGetInfo(&fr, &tot);
    return err_set(e, ERR_NOMEM, "%s: %.1f MiB of GPU memory needed, %.1f MiB free of %.1f MiB", what,
                   (double)need / (1 << 20), (double)fr / (1 << 20), (double)tot / (1 << 20));
}

static void *cd_alloc(backend *b, size_t bytes) {
    cuda_dev *d = b->impl;
    void *p = NULL;
    if (!bytes || cudaSetDevice(d->dev) != cudaSuccess) return NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    /* zeroed before any executor's stream (non-blocking: no implicit order with this memset) uses it */
    if (cudaMemset(p, 0, bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void cd_free(backend *b, void *p) {
    (void)b;
    if (p) cudaFree(p);
}

static void weight_release(cuda_weight *cw) {
    cu_free(cw->raw);
    cu_free(cw->planes);
    free(cw);
}

/* A tensor's bytes on the device, with UP_SLACK zeroed bytes after them: the prefill GEMM loads blocks in
 * 16-byte pieces, so the last piece of a row of 210-byte Q6_K (or 176-byte Q5_K) blocks reaches up to 15
 * bytes past the tensor's end (never used, but outside the allocation without the slack). */
#define UP_SLACK 256
static int up(void **dst, const void *src, size_t bytes, const char *name, err *e) {
    char what[200];
    snprintf(what, sizeof what, "tensor '%s'", name);
    if (cudaMalloc(dst, bytes + UP_SLACK) != cudaSuccess) {
        *dst = NULL;
        return oom(e, what, bytes + UP_SLACK);
    }
    int rc = cu_check(cudaMemset((char *)*dst + bytes, 0, UP_SLACK), e, what);
    return rc ? rc : cu_check(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice), e, what);
}

static int cd_weight_init(backend *b, weight *w, const gguf_tensor *t, err *e) {
    cuda_dev *d = b->impl;
    const enum qtype ty = (enum qtype)t->type;
    const qtype_info *in = qtype_get(t->type);
    const bool quant = ty == QT_Q4_0 || ty == QT_Q4_1 || ty == QT_Q5_0 || ty == QT_Q8_0 || ty == QT_Q4_K ||
                       ty == QT_Q5_K || ty == QT_Q6_K;
    if (!in || (!quant && !cuda_is_float_type(ty)))
        return err_set(e, ERR_UNSUPPORTED,
                       "tensor '%s': type %s is not supported by the cuda backend (it runs F32, F16, BF16, Q4_0, Q4_1, "
                       "Q5_0, Q8_0, Q4_K, Q5_K, Q6_K; requantize the file, or use --device cpu)",
                       t->name, in ? in->name : "?");
    int rc = cu_check(cudaSetDevice(d->dev), e, "cudaSetDevice");
    if (rc) return rc;
    cuda_weight *cw = calloc(1, sizeof *cw);
    if (!cw) return err_set(e, ERR_NOMEM, "out of memory");
    cw->type = ty;
    cw->K = t->ne[0];
    cw->E = t->n_dims >= 3 ? t->ne[2] : 1;
    cw->N = t->n_dims >= 2 ? t->ne[1] : 1;
    rc = up(&cw->raw, t->data, t->nbytes, t->name, e);
    if (!rc && quant) {
        const int64_t rows = (int64_t)(t->n_elements / (uint64_t)cw->K);
        size_t qs, hi, meta;
        if ((rc = cuda_repack_sizes(ty, 1, cw->K, &cw->qs_row, &cw->hi_row, &cw->meta_row, e)) ||
            (rc = cuda_repack_sizes(ty, rows, cw->K, &qs, &hi, &meta, e))) {
            char why[sizeof e->msg];
            snprintf(why, sizeof why, "%s", e->msg);
            err_set(e, rc, "tensor '%s': %s", t->name, why);
        } else {
            /* planes 256-byte aligned inside one allocation */
            const size_t o_hi = (qs + 255) & ~(size_t)255, o_meta = o_hi + ((hi + 255) & ~(size_t)255);
            char *h = malloc(o_meta + meta);
            if (!h) rc = err_set(e, ERR_NOMEM, "tensor '%s': out of host memory to repack", t->name);
            if (!rc) rc = cuda_repack(ty, t->data, rows, cw->K, h, hi ? h + o_hi : NULL, h + o_meta, e);
            if (!rc) rc = up(&cw->planes, h, o_meta + meta, t->name, e);
            free(h);
            if (!rc)
                cw->q = (cuda_qmat){.type = ty, .N = rows, .K = cw->K, .qs = cw->planes,
                                    .hi = hi ? (char *)cw->planes + o_hi : NULL, .meta = (char *)cw->planes + o_meta};
            d->weight_bytes += o_meta + meta;
        }
    }
    if (rc) {
        weight_release(cw);
        return rc;
    }
    d->weight_bytes += t->nbytes;
    cw->next = d->weights;
    d->weights = cw;
    w->name = t->name;
    w->type = ty;
    w->n_dims = (int)t->n_dims;
    for (int i = 0; i < 4; i++) w->ne[i] = t->ne[i];
    w->nbytes = t->nbytes;
    w->data = cw;
    if (t->ne[0] > d->max_in) d->max_in = t->ne[0];
    if (quant && cw->N <= 65535 && cw->K % 64 == 0 && cw->N * cw->K > d->max_dq) d->max_dq = cw->N * cw->K;
    return 0;
}

void cx_destroy(exec *x) {
    if (!x) return;
    cuda_exec *c = x->impl;
    if (c) {
        c->pend.n = 0, c->pop.kind = CX_POP_NONE;
        cx_graph_free(c); /* an open capture is discarded */
        if (c->st) {
            cudaStreamSynchronize(c->st);
            cudaStreamDestroy(c->st);
        }
        cx_prof_free(c); /* prints the op profile */
        void *dbufs[] = {c->xq, c->ds, c->xb, c->attn, c->gdn, c->gpart, c->wdq, c->gdn_sync, c->moe_g};
        for (size_t i = 0; i < sizeof dbufs / sizeof dbufs[0]; i++) cu_free(dbufs[i]);
        pass_rows_free(&c->pr);
        free(c);
    }
    free(x);
}

/* Sizes every scratch buffer for the plan's worst call: activations of R (or routed RK) rows of the widest
 * input, the split-K partials of a decode attention over n_ctx positions, the chunked GDN's per-chunk
 * matrices for max_tokens. */
static exec *cd_exec_new(backend *b, const exec_plan *plan, err *e) {
    cuda_dev *d = b->impl;
    if (cu_check(cudaSetDevice(d->dev), e, "cudaSetDevice")) return NULL;
    exec *x = calloc(1, sizeof *x);
    cuda_exec *c = calloc(1, sizeof *c);
    if (!x || !c) {
        free(x), free(c);
        err_set(e, ERR_NOMEM, "out of memory");
        return NULL;
    }
    x->dev = b, x->ops = &cuda_exec_ops, x->impl = c;
    c->d = d;
    c->graphs = d->graphs && !cx_prof_wanted(); /* a profiled pass runs eagerly (cuda_prof.c) */
    c->plan = *plan;
    const int maxT = plan->max_tokens > 0 ? plan->max_tokens : 1;
    c->plan.max_tokens = maxT;
    if (pass_rows_init(&c->pr, &c->plan, CUDA_GEMV_MAX_ROWS + 1)) {
        cx_destroy(x);
        err_set(e, ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->RK = plan->moe_k > 0 && (int64_t)maxT * plan->moe_k > c->pr.R ? maxT * plan->moe_k : c->pr.R;
    int64_t K = plan->max_in > d->max_in ? plan->max_in : d->max_in > 0 ? d->max_in : 32;
    c->K = K = (K + 63) / 64 * 64;
    const size_t R = (size_t)c->pr.R, RK = (size_t)c->RK;
    /* the GEMM's split-K slices: its largest split shape (2048 rows, any K that splits) at R rows; none
     * when no pass reaches the GEMM */
    c->gpart_n = R > CUDA_GEMV_MAX_ROWS ? cuda_gemm_part_floats((int)R, 2048, 4096) : 0;
    if (plan->attn_d > 0 && plan->attn_d % 32 == 0 && plan->attn_d <= 256 && plan->attn_hq > 0 && plan->n_ctx > 0)
        c->attn_n = cuda_attn_decode_scratch(plan->n_ctx, plan->attn_hq, plan->attn_d);
    /* the sequences of a batched decode step one attend_decode launch takes at the planned context: as many
     * as 64 MiB of partials hold (2-3 MB a sequence on 8B-27B shapes at n_ctx >= 4096; 0.3 MB at 640), at
     * least 16, at most CUDA_ATTN_SEQS_MAX and the pass's tokens; more of shorter sequences fit */
    c->attn_seqs = 1;
    if (c->attn_n > 0) {
        const int64_t fit = ((int64_t)64 << 20) / (c->attn_n * (int64_t)sizeof(float));
        c->attn_seqs = fit < 16 ? 16 : fit > CUDA_ATTN_SEQS_MAX ? CUDA_ATTN_SEQS_MAX : (int)fit;
        if (c->attn_seqs > maxT) c->attn_seqs = maxT;
    }
    /* the grouped expert product's table (experts_gemm): every routed slot of a pass of GEMM rows, any E */
    if (plan->moe_k > 0 && R > CUDA_GEMV_MAX_ROWS)
        c->moe_g_n = cuda_moe_group_ints((int)RK, (int)RK, CUDA_MMQ_TILE_MIN); /* tiles of either kernel */
    if (plan->gdn_dk == 128 && plan->gdn_dv == 128 && plan->gdn_hv > 0 && maxT > 1)
        c->gdn_n = cuda_gdn_chunk_scratch(maxT, plan->gdn_hv);
    struct { void **p; size_t n; } want[] = {
        {(void **)&c->xq, RK * (size_t)K},
        {(void **)&c->ds, RK * (size_t)(K / 32) * 2 * sizeof(float)},
        {(void **)&c->xb, (plan->moe_k > 0 && RK > R ? RK : R) * (size_t)K * 2}, /* MoE: the routed slots' rows */
        {(void **)&c->moe_g, (size_t)c->moe_g_n * sizeof(int32_t)},
        {(void **)&c->gpart, (size_t)c->gpart_n * sizeof(float)},
        {(void **)&c->wdq, R > CUDA_GEMV_MAX_ROWS ? (size_t)d->max_dq * 2 : 0},
        {(void **)&c->attn, (size_t)c->attn_n * (size_t)c->attn_seqs * sizeof(float)},
        {(void **)&c->gdn, (size_t)c->gdn_n * sizeof(float)},
        {(void **)&c->gdn_sync, plan->gdn_hv > 0 ? (size_t)CUDA_GDN_MAX_SEQS * 2 * plan->gdn_hv * sizeof(unsigned) : 0},
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) total += want[i].n;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!want[i].n) continue;
        if (cudaMalloc(want[i].p, want[i].n) != cudaSuccess) {
            *want[i].p = NULL;
            cx_destroy(x);
            char what[160];
            snprintf(what, sizeof what, "cannot create a cuda executor for %d-token passes (scratch)", maxT);
            oom(e, what, total);
            return NULL;
        }
    }
    if ((c->gdn_sync && cu_check(cudaMemset(c->gdn_sync, 0, (size_t)CUDA_GDN_MAX_SEQS * 2 * plan->gdn_hv *
                                                                   sizeof(unsigned)),
                                 e, "cudaMemset")) ||
        cu_check(cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking), e, "cudaStreamCreate") ||
        cx_graph_init(c, e) || (cx_prof_wanted() && cx_prof_init(c, e))) {
        cx_destroy(x);
        return NULL;
    }
    return x;
}

static void cd_destroy(backend *b) {
    cuda_dev *d = b->impl;
    for (cuda_weight *w = d->weights, *n; w; w = n) {
        n = w->next;
        weight_release(w);
    }
    free(d);
    free(b);
}

/* page-locked host memory (portable: any device's copies may use it) */
static void *cd_host_alloc(backend *b, size_t bytes) {
    cuda_dev *d = b->impl;
    void *p = NULL;
    if (!bytes || cudaSetDevice(d->dev) != cudaSuccess) return NULL;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}

static void cd_host_free(backend *b, void *p) {
    (void)b;
    cudaFreeHost(p);
}

static enum qtype cd_default_cache_type(const backend *b) {
    (void)b; /* llama.cpp's default; the split-K decode and flash prefill kernels read f16 caches */
    return QT_F16;
}

/* every cache type through the general attention kernel (D <= 256); Q8_0 rows in whole blocks */
static bool cd_cache_type_ok(const backend *b, enum qtype t, int64_t D) {
    (void)b;
    if (D < 1 || D > 256) return false;
    if (t == QT_F32 || t == QT_F16 || t == QT_BF16) return true;
    return t == QT_Q8_0 && D % 32 == 0;
}

static const backend_ops cuda_backend_ops = {
    .destroy = cd_destroy,
    .alloc = cd_alloc,
    .free = cd_free,
    .weight_init = cd_weight_init,
    .exec_new = cd_exec_new,
    .default_cache_type = cd_default_cache_type,
    .cache_type_ok = cd_cache_type_ok,
    .host_alloc = cd_host_alloc,
    .host_free = cd_host_free,
};

/* "cuda", "cuda:N", either with ":nograph" */
backend *cuda_backend_new(const char *device, err *e) {
    int n = 0;
    const char *rest = device + 4;
    if (!strncmp(device, "cuda:", 5) && device[5] >= '0' && device[5] <= '9') {
        char *end = NULL;
        long v = strtol(device + 5, &end, 10);
        if (v > 1024) rest = "?";
        else n = (int)v, rest = end;
    }
    const bool graphs = strcmp(rest, ":nograph") != 0;
    if (strncmp(device, "cuda", 4) || (*rest && graphs))
        return err_set(e, ERR_ARG, "device '%s': expected cuda or cuda:N, optionally followed by :nograph", device),
               NULL;
    backend *b = calloc(1, sizeof *b);
    cuda_dev *d = calloc(1, sizeof *d);
    if (!b || !d) {
        free(b), free(d);
        err_set(e, ERR_NOMEM, "out of memory");
        return NULL;
    }
    d->dev = n;
    d->graphs = graphs;
    snprintf(d->name, sizeof d->name, "cuda:%d%s", n, graphs ? "" : ":nograph");
    if (cu_select_device(n, d->info, sizeof d->info, e)) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg);
        err_set(e, e->code, "device '%s': %s (devices: %s)", device, why, backend_devices());
        free(b), free(d);
        return NULL;
    }
    b->name = d->name;
    b->ops = &cuda_backend_ops;
    b->impl = d;
    return b;
}

/* "cuda:0,cuda:1" for the GPUs of this machine ("" when none) */
static const char *cuda_list(void) {
    static char list[128];
    int n = 0;
    list[0] = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return list;
    }
    for (int i = 0, o = 0; i < n && o < (int)sizeof list - 16; i++)
        o += snprintf(list + o, sizeof list - (size_t)o, "%scuda:%d", i ? "," : "", i);
    return list;
}

static backend *cuda_open(const char *device, int n_threads, bool exact, err *e) {
    (void)n_threads, (void)exact; /* CPU settings */
    return cuda_backend_new(device, e);
}

void cuda_backend_register(void) {
    static const backend_provider p = {.prefix = "cuda", .list = cuda_list, .open = cuda_open};
    backend_register(&p);
}
