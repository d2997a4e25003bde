/* cpu_impl (internal to src/backends/cpu/): the CPU device and executor structs shared by cpu_backend.c
 * (device, executor, matmuls) and cpu_exec_ops.c (the other ops). */
#ifndef LLM170_BACKENDS_CPU_IMPL_H
#define LLM170_BACKENDS_CPU_IMPL_H

#include "backends/backend.h"
#include "backends/cpu/threadpool.h"

/* A span of at least this many tokens of one sequence makes "bulk" rows: where the CPU's int8 matrix
 * products (quant/gemm.h) start to beat its row-by-row kernels, panel unpacking included (one Xeon core,
 * a 1024 x 2048 matrix: at 16 tokens 1.0x for Q6_K, 1.2x Q4_K, 2.4x Q8_0; at 8 tokens 0.5-0.6x for the
 * k-quants). CPU policy: derived from the pass's spans (exec_ops.begin_pass), never seen by models. */
#define BULK_MIN_ROWS 16
#define GDN_CHUNK 64

typedef struct cpu_dev {
    int n_threads;
    bool exact;
    int64_t max_in;        /* largest ne[0] of the weights bound so far */
    int64_t max_expert_out; /* largest ne[1] of the 3-D (expert) weights */
} cpu_dev;

/* A buffer sized at exec_new; `need` beyond its capacity is a failure recorded in the executor. */
typedef struct cbuf {
    void *p;
    size_t cap;
} cbuf;

typedef struct cpu_exec {
    cpu_dev *d;
    threadpool *pool;
    exec_plan plan;
    int R;                 /* most rows of one matmul call (max of max_tokens and max_out) */
    /* the pass (begin_pass) */
    int T, n_spans, n_out;
    uint8_t *bulk, *out_bulk; /* [R] */
    uint8_t *ones;         /* [R] all 1 (MM_RUN) */
    int32_t *span_of;      /* [R]: the span of each token row */
    int32_t *count;        /* [max_tokens]: per span, rows sent to one expert */
    /* matmul scratch */
    cbuf xq, rows, acts, panels, gstart, packs, rowbuf;
    /* expert scratch: one expert's gathered rows in and out, their row list and flags */
    cbuf xe, ye, erows, ebulk;
    cbuf scratch;          /* attention / GDN chunk scratch */
} cpu_exec;

static inline cpu_exec *cpu_of(exec *x) { return x->impl; }

/* Returns the buffer if it holds `need` bytes, else records the failure in x and returns NULL. */
void *cbuf_get(exec *x, cbuf *b, size_t need, const char *what);

/* y[T][ne1] = x . W(expert)^T with per-row bulk flags (NULL: none); the matmul core of both matmul ops */
void cpu_mm(exec *ex, const weight *w, int expert, const float *x, float *y, int T, const uint8_t *bulk);

/* cpu_backend.c: the ops that use the matmul core, and the executor's destructor */
void cpu_begin_pass(exec *x, const pass_span *spans, int n_spans);
void cpu_matmul(exec *x, const weight *w, int expert, const float *in, float *y, int T, mm_rows rows);
void cpu_matmul_experts(exec *x, const weight *w, const int32_t *sel, int K, const float *in, bool in_per_slot,
                        float *y, int T);
void cpu_exec_destroy(exec *x);

/* cpu_exec_ops.c: the executor's op table */
extern const exec_ops cpu_exec_ops;

#endif
