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
    pass_rows pr;          /* the pass (begin_pass) and its rows' kernel families (bulk: BULK_MIN_ROWS) */
    int32_t *count;        /* [max_tokens]: per span, rows sent to one expert */
    /* matmul scratch */
    cbuf xq, rows, acts, panels, gstart, packs, rowbuf;
    /* expert scratch: one expert's gathered rows in and out, their row list and flags */
    cbuf xe, ye, erows, ebulk;
    cbuf scratch;          /* attention / GDN chunk scratch */
    cbuf qsa;              /* QSA selection / sparse attention scratch (cpu_hc.c) */
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

/* cpu_hc.c: the qwen4exp ops (hyper-connections, PLE, QSA) and the scratch they need (floats) */
void cpu_rms_norm_groups(exec *x, const float *in, const weight *w, float *y, int T, int G, int D, float eps);
void cpu_silu_scaled(exec *x, const float *in, float *y, float s, int64_t n);
void cpu_hc_mix(exec *x, const float *xn, const float *gate, float *m, int T, int S, int D);
void cpu_hc_add(exec *x, float *X, const float *y, const float *inj, int T, int S, int D);
void cpu_ple_gate(exec *x, const float *key, const float *query, const float *v, float *out, int T, int S, int D);
void cpu_conv1d_dilated_silu(exec *x, const float *in, float *state, const weight *w, float *y, int T, int Ch, int K,
                             int dil);
void cpu_ngram_rows(exec *x, const int32_t *ids, float *hist, int32_t *rows, int T, const ngram_hash *h);
void cpu_qsa_block_keys(exec *x, const float *raw, float *blk, int b0, int b1, int c, int D, const weight *w,
                        float eps, const rope_params *rp);
void cpu_qsa_select(exec *x, const float *q, const float *blk, const int32_t *qpos, int32_t *sel, int T, int Hi,
                    int D, int c, int n_sel);
void cpu_attention_sparse(exec *x, const float *q, const void *k, const void *v, enum qtype tk, enum qtype tv,
                          float *out, const int32_t *qpos, const int32_t *sel, int T, int Hq, int Hkv, int D,
                          float scale, int c, int n_sel);
int64_t cpu_qsa_scratch(const exec_plan *p, int n_threads);

/* cpu_exec_ops.c: the executor's op table */
extern const exec_ops cpu_exec_ops;

#endif
