/* cuda_graph: a small pass of the CUDA executor as one CUDA graph launch (docs/cuda.md).
 *
 * Why: a decode step is ~25 kernels per layer, each launched from the host; on a 0.5B model the launches,
 * not the weights, set the speed. A pass of at most CUDA_GEMV_MAX_ROWS tokens (decode, a speculative
 * verify batch) is recorded instead: begin_pass starts a stream capture (cudaStreamCaptureModeThreadLocal)
 * and every op records into the stream exactly as it would launch; the pass's first download (the host's
 * only wait) ends the capture, updates the graph exec of the last pass of as many tokens in place with the
 * new graph (cudaGraphExecUpdate: same topology, new kernel parameters: positions, cache lengths) or
 * instantiates a new one when the update is refused, and launches it. The kernels and their order are those of the eager
 * run, so the logits are bit-identical to it (`llm170 cuda-check --engine` checks that).
 *
 * Invariants:
 *  - A captured pass's uploads are copied into the pinned staging buffer at capture time, from an offset
 *    that restarts at 0 every pass (the same pass shape records the same addresses, so the exec update
 *    holds), and the capture records the copy from there: the caller's pageable buffer may change before
 *    the graph runs. An upload that does not fit ends the capture, launches it, and the rest of the pass
 *    runs eagerly (slower, never wrong).
 *  - The host writes the staging buffer only while capturing, and a capture starts only after every graph
 *    launched before it has finished (`inflight`: a download waits for the stream; otherwise begin waits):
 *    a running graph never reads bytes of the next pass, and an exec is never updated while it runs.
 *  - Only passes with output rows are captured: they end in a download, so no capture outlives the API call
 *    that began it (ThreadLocal capture must end on the thread that began it). A pass with output rows but
 *    no download (no logits asked for) is ended by the executor's next begin_pass, download or destroy.
 *  - A failure recorded while capturing (x->status) discards the capture at the download that ends it:
 *    nothing of the pass runs, and the first failure stays the one reported. A capture the driver refuses to begin runs the pass eagerly.
 *  - Nothing inside a capture may synchronise or allocate: the ops of a small pass launch kernels and
 *    stream-ordered copies / memsets only (cudaFuncSetAttribute and device attribute queries of the flash
 *    attention and chunked GDN launchers, which 2..8-token passes reach, are host-side calls that capture
 *    permits). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "base/timer.h"

static _Atomic uint64_t n_launched, n_passes, n_updated, n_instantiated, n_eager;
static _Atomic uint64_t ns_capture, ns_update, ns_gpu, n_gpu_timed; /* where a graph pass's time goes */

void cuda_graph_stats_get(cuda_graph_stats *s) {
    s->launched = atomic_load(&n_launched);
    s->passes = atomic_load(&n_passes);
    s->updated = atomic_load(&n_updated);
    s->instantiated = atomic_load(&n_instantiated);
    s->eager = atomic_load(&n_eager);
    s->capture_ns = atomic_load(&ns_capture);
    s->update_ns = atomic_load(&ns_update);
    s->gpu_ns = atomic_load(&ns_gpu);
    s->gpu_timed = atomic_load(&n_gpu_timed);
}

static uint64_t now_ns(void) { return (uint64_t)(timer_now() * 1e9); }

/* after a download's wait: the GPU time of the graph launched in this pass */
void cx_graph_timed(cuda_exec *c) {
    if (!c->gtimed) return;
    c->gtimed = false;
    float ms = 0;
    if (cudaEventElapsedTime(&ms, c->gev[0], c->gev[1]) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    atomic_fetch_add(&ns_gpu, (uint64_t)(ms * 1e6f));
    atomic_fetch_add(&n_gpu_timed, 1);
}

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

/* What a captured pass (T <= CUDA_GEMV_MAX_ROWS tokens) uploads: token ids, positions and output row
 * indices (int32 per token, engine/forward.c fwd_begin), and one f32 row of the widest input per token (an
 * MTP pass's hidden states); each piece 256-byte aligned, plus 4 KiB of slack. */
int cx_graph_init(cuda_exec *c, err *e) {
    if (!c->graphs) return 0;
    c->piece_first = CUDA_GRAPH_FIRST_OPS, c->piece_ops = CUDA_GRAPH_PIECE_OPS;
    const char *pv = getenv("LLM170_CUDA_GRAPH_PIECES"); /* tuning: "first,later" ops a piece */
    if (pv && sscanf(pv, "%d,%d", &c->piece_first, &c->piece_ops) != 2)
        return err_set(e, ERR_ARG, "LLM170_CUDA_GRAPH_PIECES='%s': want two numbers, \"first,later\" (0,0: one piece)", pv);
    const size_t T = (size_t)(c->plan.max_tokens < CUDA_GEMV_MAX_ROWS ? c->plan.max_tokens : CUDA_GEMV_MAX_ROWS);
    c->stage_n = 3 * align256(T * sizeof(int32_t)) + align256(T * (size_t)c->K * sizeof(float)) + 4096;
    void *p = NULL;
    if (cudaHostAlloc(&p, c->stage_n, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        return err_set(e, ERR_NOMEM, "cannot create a cuda executor: %zu bytes of pinned host memory for its graph "
                       "uploads (or open the device as cuda:N:nograph)", c->stage_n);
    }
    c->stage = p;
    memset(c->stage, 0, c->stage_n);
    if (cudaEventCreate(&c->gev[0]) != cudaSuccess || cudaEventCreate(&c->gev[1]) != cudaSuccess) {
        cudaGetLastError();
        return err_set(e, ERR_IO, "cannot create a cuda executor: cudaEventCreate failed");
    }
    return 0;
}

/* ends the open capture; the graph when it can run (NULL otherwise: failure recorded, or discarded) */
static cudaGraph_t end_capture(exec *x) {
    cuda_exec *c = cx_of(x);
    c->capturing = false;
    cudaGraph_t g = NULL;
    const cudaError_t ce = cudaStreamEndCapture(c->st, &g);
    if (ce != cudaSuccess || !g || x->status) {
        if (g) cudaGraphDestroy(g);
        cudaGetLastError(); /* an invalidated capture's error is not a later op's */
        if (!x->status)
            exec_fail(x, ERR_IO, "ending the pass's graph capture: cuda error %s (%s)", cudaGetErrorName(ce),
                      cudaGetErrorString(ce));
        return NULL;
    }
    return g;
}

/* ends the open capture and launches its piece: the exec kept for this pass size and piece is updated in
 * place with the new graph (same topology, new kernel parameters) or, when refused, instantiated anew */
static void launch_piece(exec *x) {
    cuda_exec *c = cx_of(x);
    cudaGraph_t g = end_capture(x);
    if (!g) return;
    const uint64_t t1 = now_ns();
    atomic_fetch_add(&ns_capture, t1 - c->t_capture);
    cudaGraphExec_t *ge = &c->gexec[c->cap_T][c->cap_chunk];
    if (*ge) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(*ge, g, &info) == cudaSuccess) {
            atomic_fetch_add(&n_updated, 1);
        } else { /* another shape: a new exec */
            cudaGetLastError();
            cudaGraphExecDestroy(*ge);
            *ge = NULL;
        }
    }
    cudaError_t ce = cudaSuccess;
    if (!*ge) {
        ce = cudaGraphInstantiate(ge, g, 0);
        if (ce != cudaSuccess) *ge = NULL;
        else atomic_fetch_add(&n_instantiated, 1);
    }
    cudaGraphDestroy(g);
    atomic_fetch_add(&ns_update, now_ns() - t1);
    if (c->cap_chunk == 0) c->pass_timed = ce == cudaSuccess && cudaEventRecord(c->gev[0], c->st) == cudaSuccess;
    if (ce == cudaSuccess) ce = cudaGraphLaunch(*ge, c->st);
    cudaGetLastError();
    if (ce != cudaSuccess) {
        c->pass_timed = false;
        exec_fail(x, ERR_IO, "running the pass's graph: cuda error %s (%s)", cudaGetErrorName(ce), cudaGetErrorString(ce));
        return;
    }
    atomic_fetch_add(&n_launched, 1);
    if (c->cap_chunk == 0) atomic_fetch_add(&n_passes, 1);
    c->inflight = true;
}

/* starts capturing piece `chunk` of the current pass */
static bool begin_piece(exec *x, int chunk) {
    cuda_exec *c = cx_of(x);
    if (cudaStreamBeginCapture(c->st, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError(); /* the rest of the pass runs eagerly */
        atomic_fetch_add(&n_eager, 1);
        return false;
    }
    c->capturing = true;
    c->t_capture = now_ns();
    c->cap_chunk = chunk;
    c->cap_ops = 0;
    return true;
}

void cx_graph_end(exec *x) {
    cuda_exec *c = cx_of(x);
    if (!c->capturing) return;
    launch_piece(x);
    /* the pass's GPU span: from its first piece's launch to the end of its last */
    c->gtimed = c->pass_timed && !x->status && cudaEventRecord(c->gev[1], c->st) == cudaSuccess;
    c->pass_timed = false;
    cudaGetLastError();
}

void cx_graph_tick(exec *x) {
    cx_bind(x); /* every op and matmul comes through here */
    cuda_exec *c = cx_of(x);
    if (!c->capturing) return;
    const int limit = c->cap_chunk == 0 ? c->piece_first : c->piece_ops;
    if (limit <= 0 || c->cap_ops++ < limit || c->cap_chunk + 1 >= CUDA_GRAPH_PIECES) return;
    const int next = c->cap_chunk + 1;
    launch_piece(x);
    if (!x->status) begin_piece(x, next);
}

void cx_graph_begin(exec *x) {
    cuda_exec *c = cx_of(x);
    if (c->capturing) return;
    if (!c->graphs || x->status || c->pr.T < 1 || c->pr.T > CUDA_GEMV_MAX_ROWS || c->pr.n_out < 1) return;
    if (c->inflight) { /* its staged bytes and its execs stay untouched until it has run */
        const cudaError_t ce = cudaStreamSynchronize(c->st);
        if (ce != cudaSuccess) {
            exec_fail(x, ERR_IO, "the previous pass: cuda error %s (%s)", cudaGetErrorName(ce), cudaGetErrorString(ce));
            return;
        }
        c->inflight = false;
    }
    c->cap_T = c->pr.T;
    c->stage_off = 0;
    begin_piece(x, 0);
}

bool cx_graph_upload(exec *x, void *dst, const void *src, size_t bytes) {
    cuda_exec *c = cx_of(x);
    if (!c->capturing) return false;
    const size_t off = align256(c->stage_off);
    if (off > c->stage_n || bytes > c->stage_n - off) { /* too big to stage: what is recorded runs now */
        atomic_fetch_add(&n_eager, 1);
        cx_graph_end(x);
        return false;
    }
    memcpy(c->stage + off, src, bytes);
    c->stage_off = off + bytes;
    const cudaError_t ce = cudaMemcpyAsync(dst, c->stage + off, bytes, cudaMemcpyHostToDevice, c->st);
    if (ce != cudaSuccess)
        exec_fail(x, ERR_IO, "upload (captured): cuda error %s (%s)", cudaGetErrorName(ce), cudaGetErrorString(ce));
    return true;
}

void cx_graph_free(cuda_exec *c) {
    if (c->capturing) {
        cudaGraph_t g = NULL;
        c->capturing = false;
        if (cudaStreamEndCapture(c->st, &g) == cudaSuccess && g) cudaGraphDestroy(g);
        cudaGetLastError();
    }
    if (c->st) cudaStreamSynchronize(c->st); /* a launched graph still reads the staging buffer */
    for (int t = 0; t <= CUDA_GEMV_MAX_ROWS; t++)
        for (int k = 0; k < CUDA_GRAPH_PIECES; k++)
            if (c->gexec[t][k]) cudaGraphExecDestroy(c->gexec[t][k]), c->gexec[t][k] = NULL;
    if (c->stage) cudaFreeHost(c->stage);
    c->stage = NULL;
    for (int i = 0; i < 2; i++)
        if (c->gev[i]) cudaEventDestroy(c->gev[i]), c->gev[i] = NULL;
}
