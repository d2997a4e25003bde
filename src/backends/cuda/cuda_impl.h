/* cuda_impl (internal to src/backends/cuda/): the CUDA device and executor structs shared by
 * cuda_backend.c (device, weights, executor creation), cuda_matmul.c (the matmuls) and cuda_exec.c (the other ops).
 *
 * Ownership: the device owns every cuda_weight (a list freed by destroy) and the device memory of the
 * weights; an executor owns its stream and its scratch. weight.data of a model's weight points at its
 * cuda_weight (host memory holding device pointers): models never dereference it. */
#ifndef LLM170_BACKENDS_CUDA_CUDA_IMPL_H
#define LLM170_BACKENDS_CUDA_CUDA_IMPL_H

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/kernels.h"

/* A span of more than this many tokens of one sequence is a "bulk" run: its rows go to the prefill GEMM
 * (bf16 tensor cores); shorter spans to the q8_1 GEMV (up to 8 rows per launch). The choice is per span,
 * so a sequence's rows never change kernel family with what else shares the batch. */
#define CUDA_GEMV_MAX_ROWS 8
/* A captured pass is launched in pieces (cuda_graph.c): the first after CUDA_GRAPH_FIRST_OPS ops, then every
 * CUDA_GRAPH_PIECE_OPS, at most CUDA_GRAPH_PIECES pieces (the last takes the rest), so the GPU runs the
 * first layers while the host records the next. */
#define CUDA_GRAPH_PIECES 16
#define CUDA_GRAPH_FIRST_OPS 12
#define CUDA_GRAPH_PIECE_OPS 64

typedef struct cuda_weight {
    enum qtype type;
    int64_t K, N, E;      /* row width, rows per expert, experts (1 if none) */
    void *raw;            /* device copy of the GGUF bytes: F32 / F16 / BF16 values, the GEMM's blocks */
    void *planes;         /* quantized types: the GEMV layout (one allocation: qs | hi | meta) */
    cuda_qmat q;          /* all E * N rows of the GEMV layout (q.N = E * N) */
    size_t qs_row, hi_row, meta_row; /* bytes per row of each plane */
    struct cuda_weight *next;
} cuda_weight;

typedef struct cuda_dev {
    int dev;
    char name[24];        /* "cuda:N", or "cuda:N:nograph" */
    bool graphs;          /* executors capture small passes into CUDA graphs (off: the ":nograph" suffix) */
    char info[160];       /* GPU name, compute capability, memory */
    int64_t max_in;       /* largest ne[0] of the weights bound so far */
    int64_t max_dq;       /* most values of one quantized matrix the GEMM's two-pass path takes (N <= 65535) */
    cuda_weight *weights; /* every weight bound (freed by destroy) */
    size_t weight_bytes;
} cuda_dev;

typedef struct cuda_exec {
    cuda_dev *d;
    cudaStream_t st;
    exec_plan plan;
    int RK;               /* most activation rows quantized at once (R, or routed slots T * moe_k) */
    int64_t K;            /* widest matmul input the scratch holds */
    pass_rows pr;         /* the pass (begin_pass); per row, GEMM family (1: spans > CUDA_GEMV_MAX_ROWS) or GEMV */
    /* device scratch, sized by exec_new */
    int8_t *xq;           /* [RK][K] q8_1 activations */
    float *ds;            /* [RK][K / 32][2] their scales */
    const float *xq_src;  /* xq / ds hold q8_1 of xq_src[xq_n][xq_K] (NULL: nothing reusable; cuda_matmul.c) */
    struct {              /* GEMVs not launched yet (cx_pend_flush): the next matmul over the same q8_1 rows
                           * may join them (one launch), or an add of their output into a residual */
        int n;            /* 0: none pending */
        cuda_qmat q[CUDA_GEMV_GROUP];
        float *y[CUDA_GEMV_GROUP];
        int T;
        const char *name; /* the first weight's, for a failure */
        const int32_t *sel; /* routed experts (cx_matmul_experts): the slots' expert ids; NULL: plain GEMVs */
        int E, slots, xdiv; /* experts a matrix holds, routed slots, slots per q8_1 row (as cuda_gemv_q_experts) */
    } pend;
    struct {              /* float-weight matmuls not launched yet (cx_pend_flush): the next one of the same
                           * type and K over the same input joins them (one launch; the MoE router and the
                           * shared expert's gate). Never pending together with pend (each flushes the other) */
        int n;            /* 0: none pending */
        const void *W[CUDA_MATMUL_F_GROUP];
        float *y[CUDA_MATMUL_F_GROUP];
        int N[CUDA_MATMUL_F_GROUP];
        const float *x;
        int type, K, T;
        const char *name; /* the first weight's, for a failure */
    } fpend;
    struct {              /* a rope, store_rows or l2_norm of a small pass not launched yet: the same op on a
                           * second buffer right after it joins it (q and k; the K and V stores; cx_pop_flush);
                           * an add_gated_rows: the add of its output into the residual right after it joins it;
                           * a moe_combine: an add_gated_rows into its output, then that add, join it */
        int kind;         /* CX_POP_* */
        float *x;         /* rope, l2_norm, add_gated_rows: the buffer */
        void *dst;        /* store_rows */
        const float *src; /* store_rows; add_gated_rows: in; moe_combine: the routed rows */
        const int32_t *pos;
        const float *factors; /* rope; add_gated_rows: the gate; moe_combine: the routing weights */
        const int32_t *sel;   /* moe_combine: the routed experts */
        const float *in2, *gate2; /* moe_combine joined by add_gated_rows: its in and gate */
        rope_params rp;
        int T, H, D, type;
        int64_t rows, width;
        float eps, scale;
    } pop;
    int xq_n;
    int64_t xq_K;
    uint16_t *xb;         /* [R][K] bf16 activations of the GEMM ([RK][K] in an MoE executor) */
    const float *xb_src;  /* xb holds bf16 of xb_src[xb_n][xb_K] (NULL: nothing reusable; cuda_matmul.c bf16_in);
                           * dropped wherever xq_src is */
    int xb_n;
    int64_t xb_K;
    int32_t *moe_g;       /* the grouped expert product's slot lists and tiles (cuda_moe_group) */
    int64_t moe_g_n;      /* ints moe_g holds: cuda_moe_group_ints of RK slots (0: no pass of GEMM rows) */
    float *gpart;         /* the GEMM's split-K slices (cuda_gemm_part_floats of R rows at its largest) */
    uint16_t *wdq;        /* the GEMM's two-pass path: one matrix dequantized to bf16 (d->max_dq values) */
    int64_t gpart_n;
    float *attn;          /* split-K decode attention partials: attn_seqs sequences at the planned context */
    int64_t attn_n;       /* floats one sequence needs at the planned context (cuda_attn_decode_scratch) */
    int attn_seqs;        /* sequences the partials hold at the planned context (attend_decode takes more
                           * of shorter ones in one launch) */
    unsigned int *gdn_sync; /* gdn_decode's counters ([CUDA_GDN_MAX_SEQS][2 plan.gdn_hv], zero between launches) */
    float *gdn;           /* chunked GDN scratch */
    int64_t gdn_n;
    /* the CUDA graph of a small pass (cuda_graph.c) */
    bool graphs;          /* capture passes of <= CUDA_GEMV_MAX_ROWS tokens (the device's setting) */
    bool capturing;       /* st is recording the current pass */
    bool inflight;        /* a graph was launched and no download has waited for it since */
    int cap_T;            /* tokens of the pass being captured */
    int cap_chunk;        /* which piece of the pass is being captured (0: the first) */
    int cap_ops;          /* ops recorded into that piece so far */
    int piece_first, piece_ops; /* ops of the first piece and of the later ones (CUDA_GRAPH_*_OPS, or
                                 * LLM170_CUDA_GRAPH_PIECES="first,later"; 0,0: one piece a pass) */
    bool pass_timed;      /* gev[0] marks the launch of the pass's first piece */
    /* per pass size T (1..8): the last graph instantiated for it, updated in place while the pass shape holds
     * (a decode step and a speculative verify batch each keep theirs) */
    cudaGraphExec_t gexec[CUDA_GEMV_MAX_ROWS + 1][CUDA_GRAPH_PIECES];
    char *stage;          /* pinned host buffer: the bytes of a captured pass's uploads */
    size_t stage_n, stage_off;
    uint64_t t_capture;   /* when the open capture began (host ns) */
    cudaEvent_t gev[2];   /* around the last graph launch: its GPU time (cx_graph_timed) */
    bool gtimed;          /* gev holds a launch not yet counted */
    struct cuda_prof *prof; /* the op profile (LLM170_CUDA_PROFILE; cuda_prof.c), NULL when off */
} cuda_exec;

static inline cuda_exec *cx_of(exec *x) { return x->impl; }
static inline bool cuda_is_float_type(enum qtype t) { return t == QT_F32 || t == QT_F16 || t == QT_BF16; }

/* A kernel launcher's status -> the executor's failure record (first one wins); returns status != 0 */
int cx_kfail(exec *x, int status, const char *op, const char *what);
/* An F32 weight's device values (norm weights, biases, conv kernels, gates); NULL + failure otherwise */
const float *cx_f32(exec *x, const weight *w, const char *op);

enum { CX_POP_NONE, CX_POP_ROPE, CX_POP_STORE, CX_POP_L2, CX_POP_GATED, CX_POP_COMBINE, CX_POP_COMBINE_GATED };
/* launches the deferred small op, if any (cuda_exec.c) */
void cx_pop_flush(exec *x);
/* Launches the deferred small op, the deferred float matmuls and then the deferred GEMV, if any, adding its
 * output into res[T][N] in the same launch when res is not NULL (an add fused into it). Every op, upload and
 * download calls it first (cuda_matmul.c). */
void cx_pend_flush(exec *x, float *res);
/* cuda_backend.c: the pass, the executor's destructor */
/* makes the executor's device the calling thread's current one (every op, upload, download and pass) */
void cx_bind(exec *x);
void cx_begin_pass(exec *x, const pass_span *spans, int n_spans);
void cx_destroy(exec *x);
/* cuda_matmul.c: the matmul ops */
void cx_matmul(exec *x, const weight *w, int expert, const float *in, float *y, int T, mm_rows rows);
void cx_matmul_experts(exec *x, const weight *w, const int32_t *sel, int K, const float *in, bool in_per_slot,
                       float *y, int T);

/* cuda_graph.c: capture of small passes (docs/cuda.md). cx_graph_init sizes the staging buffer for plan
 * (0 or ERR_NOMEM with a message); cx_graph_begin starts capturing the pass begin_pass just described
 * (begin_pass ends and launches an open capture before it describes the new pass); cx_graph_end ends an open capture and launches it (or
 * discards it when the executor has failed); cx_graph_upload records an upload into the capture through
 * the staging buffer (false: not capturing, or the bytes did not fit and the capture was ended and
 * launched: the caller copies eagerly); cx_graph_free discards an open capture and frees it all. */
int cx_graph_init(cuda_exec *c, err *e);
void cx_graph_begin(exec *x);
void cx_graph_end(exec *x);
bool cx_graph_upload(exec *x, void *dst, const void *src, size_t bytes);
void cx_graph_free(cuda_exec *c);
void cx_graph_timed(cuda_exec *c); /* after a download's wait: counts the GPU time of the pass's graph */
/* at the start of every op: while capturing, launches the piece recorded so far once it holds enough ops
 * and goes on capturing the rest of the pass into the next piece */
void cx_graph_tick(exec *x);

/* cuda_prof.c: the op profile (docs/cuda.md). cx_prof_wanted: LLM170_CUDA_PROFILE is set (graphs are then
 * off); cx_prof_init allocates it; cx_prof_mark records the start of an op (label op, plus the weight's
 * name without its layer when what is given), the first mark of a pass behind a device-side spin;
 * cx_prof_collect (after a download's wait) adds the pass's times to the table; cx_prof_free prints the
 * table to stderr and frees it. Every call does nothing when the profile is off. */
bool cx_prof_wanted(void);
int cx_prof_init(cuda_exec *c, err *e);
void cx_prof_mark(exec *x, const char *op, const char *what);
void cx_prof_collect(exec *x);
void cx_prof_free(cuda_exec *c);
/* cuda_exec.c: the executor's op table */
extern const exec_ops cuda_exec_ops;

#endif
