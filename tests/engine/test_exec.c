/* The execution model (backends/backend.h, engine/forward.h) on the tiny golden fixtures:
 *  - a steady-state pass allocates nothing: malloc / calloc / realloc are counted (interposed; not under
 *    ASan, which owns them) around decode steps, prefills and MTP drafts of contexts made beforehand;
 *  - no host round trip inside a pass: the executor counts its transfers: a pass uploads its inputs (3)
 *    and downloads exactly the outputs asked for (logits: one per out_rows piece; hidden: one);
 *  - backend op calls per layer do not grow with the batch (MoE routing, expert matmuls and output rows are
 *    one call each, not one per row): the 512-token qwen35moe prefill's count is printed and must equal a
 *    16-token one's;
 *  - two contexts of one model decode concurrently from two threads and give, bit for bit, what each
 *    gives alone (run it under ASan or TSan for races);
 *  - errors are values: a pass over the plan, and a failure planted in the executor, come back from the
 *    call with a message; the context stays usable;
 *  - the kernel family of a matmul row (pass_rows, shared by the backends) follows the row's own span:
 *    a long prompt's rows and its output row are bulk only where the span is long and (output rows) all
 *    of it is output; a decode row beside it never is. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/forward.h"
#include "llm170.h"

#define QWEN35MOE "tests/models/fixtures/qwen35moe-f16.gguf"
#define LLAMA "tests/models/fixtures/llama-f16.gguf"

/* ---------------------------------------------------------------- allocation counter */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNT_ALLOCS 0
#else
#define COUNT_ALLOCS 1
static atomic_int counting;
static atomic_long n_allocs;
extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t), *__libc_realloc(void *, size_t);
void *malloc(size_t n) {
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
    return __libc_realloc(p, n);
}
#endif

static void count_begin(void) {
#if COUNT_ALLOCS
    atomic_store(&n_allocs, 0);
    atomic_store(&counting, 1);
#endif
}
static long count_end(void) {
#if COUNT_ALLOCS
    atomic_store(&counting, 0);
    return atomic_load(&n_allocs);
#else
    return 0;
#endif
}

/* ---------------------------------------------------------------- internal API: counts */

static int32_t *tokens(int n, int seed) {
    int32_t *t = malloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++) t[i] = (int32_t)((i * 37 + seed * 11 + 5) % 200);
    return t;
}

static void check_counts(const char *path, bool moe) {
    err e = {0};
    backend *be = cpu_backend_new(2, false, &e);
    model *m = NULL;
    CHECKF(be && model_load(&m, path, be, &e) == 0, "%s: %s", path, e.msg);
    if (!m) return;
    fwd_ctx c;
    state_plan sp = {1100, QT_F32, QT_F32};
    CHECKF(fwd_ctx_init(&c, m, 512, 2, &sp, 2, &e) == 0, "%s", e.msg);
    const int V = m->hp.n_vocab, C = m->hp.n_embd, L = m->hp.n_layer;
    float *logits = malloc(sizeof(float) * (size_t)V * 512), *hidden = malloc(sizeof(float) * (size_t)C * 512);
    int32_t *p512 = tokens(512, 1), *p16 = tokens(16, 2);
    uint64_t per_layer[2];
    const int lens[2] = {512, 16};
    for (int k = 0; k < 2; k++) {
        fwd_span s = {k, lens[k], k ? p16 : p512, FWD_OUT_LAST};
        exec_stats before = c.x->stats;
        count_begin();
        int rc = model_forward(m, &c, &s, 1, logits, NULL, &e);
        long allocs = count_end();
        CHECKF(rc == 0, "%s", e.msg);
        exec_stats d = {c.x->stats.n_ops - before.n_ops, c.x->stats.n_uploads - before.n_uploads,
                        c.x->stats.n_downloads - before.n_downloads};
        per_layer[k] = d.n_ops / (uint64_t)L;
        printf("%s: %d-token prefill: %llu op calls (%llu per layer over %d layers), %llu uploads, %llu downloads, "
               "%ld allocations\n", path, lens[k], (unsigned long long)d.n_ops, (unsigned long long)per_layer[k], L,
               (unsigned long long)d.n_uploads, (unsigned long long)d.n_downloads, allocs);
        CHECKF(d.n_downloads == 1, "a prefill asking for the last logits downloads once, not %llu",
               (unsigned long long)d.n_downloads);
        CHECKF(d.n_uploads == 3, "a pass uploads ids, positions and output rows, not %llu uploads",
               (unsigned long long)d.n_uploads);
        if (COUNT_ALLOCS) CHECKF(allocs == 0, "a %d-token pass allocated %ld times", lens[k], allocs);
    }
    CHECKF(per_layer[0] == per_layer[1], "op calls per layer grow with the batch: %llu at 512 tokens, %llu at 16",
           (unsigned long long)per_layer[0], (unsigned long long)per_layer[1]);
    /* decode steps of both sequences in one pass, logits and hidden of every row */
    for (int step = 0; step < 3; step++) {
        int32_t t0 = 7 + step, t1 = 9 + step;
        fwd_span s[2] = {{0, 1, &t0, FWD_OUT_LAST}, {1, 1, &t1, FWD_OUT_LAST}};
        exec_stats before = c.x->stats;
        count_begin();
        int rc = model_forward(m, &c, s, 2, logits, hidden, &e);
        long allocs = count_end();
        CHECKF(rc == 0, "%s", e.msg);
        uint64_t dl = c.x->stats.n_downloads - before.n_downloads;
        CHECKF(dl == 2, "a decode step asking for logits and hidden downloads twice, not %llu", (unsigned long long)dl);
        if (COUNT_ALLOCS) CHECKF(allocs == 0, "decode step %d allocated %ld times", step, allocs);
    }
    /* all 512 logits rows: one download per out_rows piece */
    {
        fwd_span s = {1, 300, p512, FWD_OUT_ALL};
        exec_stats before = c.x->stats;
        count_begin();
        int rc = model_forward(m, &c, &s, 1, logits, NULL, &e);
        long allocs = count_end();
        CHECKF(rc == 0, "%s", e.msg);
        uint64_t dl = c.x->stats.n_downloads - before.n_downloads;
        uint64_t want = (uint64_t)((300 + c.w.out_rows - 1) / c.w.out_rows);
        CHECKF(dl == want, "300 logits rows in pieces of %d: %llu downloads, expected %llu", c.w.out_rows,
               (unsigned long long)dl, (unsigned long long)want);
        if (COUNT_ALLOCS) CHECKF(allocs == 0, "an all-logits pass allocated %ld times", allocs);
    }
    if (moe && m->def->mtp && m->hp.n_nextn > 0) {
        int32_t next[4] = {3, 4, 5, 6};
        count_begin();
        int rc = m->def->mtp(m, &c, 0, hidden, next, 2, false, logits, NULL, &e);
        long allocs = count_end();
        CHECKF(rc == 0, "MTP: %s", e.msg);
        if (COUNT_ALLOCS) CHECKF(allocs == 0, "an MTP draft allocated %ld times", allocs);
        /* the same two rows again, the head on the last only (a drafter's catch-up): its logits are the
           all-rows call's last row, bit for bit (two rows take the row-by-row kernels either way), in one
           download */
        c.kv->seqs[0].mtp_past -= 2;
        float *last = malloc(sizeof(float) * (size_t)V);
        exec_stats d0 = c.x->stats;
        rc = last ? m->def->mtp(m, &c, 0, hidden, next, 2, true, last, NULL, &e) : -1;
        CHECKF(rc == 0, "MTP, last row only: %s", e.msg);
        CHECKF(c.x->stats.n_downloads - d0.n_downloads == 1, "MTP, last row only: %llu downloads, expected 1",
               (unsigned long long)(c.x->stats.n_downloads - d0.n_downloads));
        CHECKF(rc == 0 && memcmp(last, logits + V, sizeof(float) * (size_t)V) == 0,
               "MTP, last row only: its logits differ from the all-rows call's last row");
        free(last);
    }
    /* errors are values: a pass over the plan, a planted executor failure; then the context still works */
    fwd_span big = {0, 513, p512, FWD_OUT_LAST};
    int32_t *p513 = tokens(513, 3);
    big.tokens = p513;
    CHECK(model_forward(m, &c, &big, 1, logits, NULL, &e) == ERR_RANGE && strstr(e.msg, "batch size"));
    int32_t t = 5;
    fwd_span one = {0, 1, &t, FWD_OUT_LAST};
    int past = c.kv->seqs[0].n_past;
    exec_fail(c.x, ERR_NOMEM, "planted: %d bytes needed, %d available", 100, 10);
    int rc = model_forward(m, &c, &one, 1, logits, NULL, &e);
    printf("planted failure: %s\n", e.msg);
    CHECKF(rc == ERR_NOMEM && strstr(e.msg, "100 bytes needed, 10 available") && strstr(e.msg, "reset"),
           "rc %d: %s", rc, e.msg);
    CHECKF(c.kv->seqs[0].n_past == 0, "the failed batch's sequence was reset (n_past %d, was %d)",
           c.kv->seqs[0].n_past, past);
    CHECKF(model_forward(m, &c, &one, 1, logits, NULL, &e) == 0, "usable after the failure: %s", e.msg);
    free(logits), free(hidden), free(p512), free(p16), free(p513);
    fwd_ctx_free(&c, m);
    model_free(m);
    backend_free(be);
}

/* ---------------------------------------------------------------- concurrency (public API) */

typedef struct job {
    llm170_model *m;
    int seed;
    float *out; /* the last logits row after a prompt and 8 greedy steps */
    int rc;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    llm170_context *c = NULL;
    llm170_context_params cp = {.n_seq = 1, .n_ctx = 128, .n_batch = 32};
    int nv = llm170_model_n_vocab(j->m);
    int32_t *p = tokens(40, j->seed);
    j->rc = llm170_context_new(j->m, &cp, &c);
    llm170_seq_batch b = {0, 40, p, false};
    if (!j->rc) j->rc = llm170_decode(c, &b, 1);
    for (int step = 0; step < 8 && !j->rc; step++) {
        const float *l = llm170_logits(c, 0);
        int32_t best = 0;
        for (int i = 1; i < nv; i++) best = l[i] > l[best] ? i : best;
        llm170_seq_batch s = {0, 1, &best, false};
        j->rc = llm170_decode(c, &s, 1);
    }
    if (!j->rc) memcpy(j->out, llm170_logits(c, 0), sizeof(float) * (size_t)nv);
    llm170_context_free(c);
    free(p);
    return NULL;
}

static void check_concurrent(const char *path) {
    llm170_model *m;
    llm170_model_params mp = llm170_model_default_params();
    mp.n_threads = 2;
    if (llm170_model_load(path, &mp, &m)) {
        CHECKF(0, "%s", llm170_last_error());
        return;
    }
    int nv = llm170_model_n_vocab(m);
    job alone[2], together[2];
    for (int k = 0; k < 2; k++) {
        alone[k] = (job){m, k + 1, malloc(sizeof(float) * (size_t)nv), 0};
        together[k] = (job){m, k + 1, malloc(sizeof(float) * (size_t)nv), 0};
        run_job(&alone[k]);
    }
    pthread_t th[2];
    for (int k = 0; k < 2; k++) pthread_create(&th[k], NULL, run_job, &together[k]);
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < 2; k++) {
        CHECKF(alone[k].rc == 0 && together[k].rc == 0, "%s: %s", path, llm170_last_error());
        CHECKF(!memcmp(alone[k].out, together[k].out, sizeof(float) * (size_t)nv),
               "%s: context %d decoding beside another gives other logits than alone", path, k);
        free(alone[k].out), free(together[k].out);
    }
    printf("%s: two contexts decoding from two threads = each alone, bit for bit\n", path);
    llm170_model_free(m);
}

static void check_device_errors(void) {
    llm170_model *m = NULL;
    llm170_model_params mp = llm170_model_default_params();
    mp.device = "cuda:3";
    CHECK(llm170_model_load(LLAMA, &mp, &m) != 0 && m == NULL);
    printf("unknown device: %s\n", llm170_last_error());
    CHECKF(strstr(llm170_last_error(), "cuda:3") && strstr(llm170_last_error(), llm170_devices()),
           "the error names the device and what the build has: %s", llm170_last_error());
    mp.device = "cpu";
    CHECK(llm170_model_load(LLAMA, &mp, &m) == 0);
    llm170_model_free(m);
}

static void check_pass_rows(void) {
    exec x = {0};
    pass_rows p;
    exec_plan plan = {.max_tokens = 64, .max_out = 8};
    CHECK(pass_rows_init(&p, &plan, 16) == 0);
    /* a 40-token prompt with its last row as output, a decode token, a 20-token prompt fully output */
    const pass_span spans[] = {{40, 1}, {1, 1}, {20, 20}};
    pass_rows_begin(&x, &p, spans, 3);
    CHECK(x.status == 0 && p.T == 61 && p.n_out == 22 && p.n_spans == 3);
    const uint8_t *f;
    CHECK(pass_rows_family(&x, &p, "w", 61, MM_ROWS_PASS, &f));
    CHECKF(f[0] == 1 && f[39] == 1 && f[40] == 0 && f[41] == 1 && f[60] == 1, "token rows %d %d %d %d %d", f[0], f[39],
           f[40], f[41], f[60]);
    CHECK(pass_rows_family(&x, &p, "w", 22, (mm_rows){MM_OUT, 0}, &f));
    /* out rows: the prompt's last row (not all of it is output: row-by-row), the decode row, 20 bulk */
    CHECKF(f[0] == 0 && f[1] == 0 && f[2] == 1 && f[21] == 1, "output rows %d %d %d %d", f[0], f[1], f[2], f[21]);
    CHECK(pass_rows_family(&x, &p, "w", 5, (mm_rows){MM_ROWWISE, 0}, &f) && f == NULL);
    /* misuse is an error value, not a crash */
    CHECK(!pass_rows_family(&x, &p, "w", 60, MM_ROWS_PASS, &f) && x.status != 0);
    x.status = 0;
    CHECK(!pass_rows_family(&x, &p, "w", 3, (mm_rows){MM_OUT, 20}, &f) && x.status != 0);
    x.status = 0;
    const pass_span big[] = {{65, 1}};
    pass_rows_begin(&x, &p, big, 1);
    CHECK(x.status != 0 && p.T == 0);
    pass_rows_free(&p);
}

int main(void) {
    check_pass_rows();
    check_counts(QWEN35MOE, true);
    check_counts(LLAMA, false);
    check_concurrent(QWEN35MOE);
    check_concurrent(LLAMA);
    check_device_errors();
    return check_report("test_exec");
}
