/* cuda_prof: where a pass's GPU time goes, op by op (LLM170_CUDA_PROFILE=1; docs/cuda.md).
 *
 * Method: the executor runs every pass eagerly (no graph) and records a CUDA event at the start of each op
 * and at the pass's download. Timing the gaps between consecutive events would measure the host's launch
 * rate, not the kernels, because a stream that has caught up with the host waits for each launch. So the
 * first op of a pass is preceded by a device-side spin (SPIN_US of busy waiting on the GPU's global
 * timer): the host enqueues the whole pass behind it, and when the spin ends the GPU runs the queued
 * kernels back to back, as a graph would. The time between event i and event i + 1 is then op i's kernels
 * plus the GPU's own gap between launches, attributed to op i's label (the op's name; for a matmul, the
 * weight's name without its "blk.N." prefix, so all layers' attn_q add up). A pass longer than the spin
 * (the host fell behind the GPU) is counted and reported: its figures include launch waits.
 *
 * The table (label, calls, total ms, us a call, share) is printed to stderr when the executor is
 * destroyed. Passes measured this way are slower by the spin: the tokens/s of a profiled run mean nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"

#define PROF_MARKS 8192 /* events per pass; marks past it are not timed (counted in `dropped`) */
#define PROF_LABELS 160
#define PROF_LABEL_LEN 48
#define SPIN_US 30000

typedef struct cuda_prof cuda_prof;
struct cuda_prof {
    cudaEvent_t ev[PROF_MARKS];
    char mark[PROF_MARKS][PROF_LABEL_LEN];
    int n_ev, n_marks; /* events created; marks in the current pass */
    struct {
        char label[PROF_LABEL_LEN];
        uint64_t calls;
        double ms;
    } row[PROF_LABELS];
    int n_rows;
    uint64_t passes, late_passes, dropped;
    double pass_ms;
};

bool cx_prof_wanted(void) {
    const char *v = getenv("LLM170_CUDA_PROFILE");
    return v && *v && strcmp(v, "0") != 0;
}

int cx_prof_init(cuda_exec *c, err *e) {
    c->prof = calloc(1, sizeof *c->prof);
    if (!c->prof) return err_set(e, ERR_NOMEM, "out of memory (the op profile)");
    return 0;
}

/* "blk.12.attn_q.weight" -> "attn_q.weight" */
static const char *strip_layer(const char *name) {
    if (strncmp(name, "blk.", 4) != 0) return name;
    const char *p = name + 4;
    while (*p >= '0' && *p <= '9') p++;
    return *p == '.' ? p + 1 : name;
}

void cx_prof_mark(exec *x, const char *op, const char *what) {
    cuda_exec *c = cx_of(x);
    cuda_prof *p = c->prof;
    if (!p || x->status) return;
    if (p->n_marks >= PROF_MARKS) {
        p->dropped++;
        return;
    }
    if (p->n_marks == p->n_ev) {
        if (cudaEventCreate(&p->ev[p->n_ev]) != cudaSuccess) {
            cudaGetLastError();
            p->dropped++;
            return;
        }
        p->n_ev++;
    }
    if (p->n_marks == 0 && cx_kfail(x, cuda_spin_us(SPIN_US, c->st), "profile", "spin")) return;
    if (what && *what) snprintf(p->mark[p->n_marks], PROF_LABEL_LEN, "%s %s", op, strip_layer(what));
    else snprintf(p->mark[p->n_marks], PROF_LABEL_LEN, "%s", op);
    if (cudaEventRecord(p->ev[p->n_marks], c->st) != cudaSuccess) {
        cudaGetLastError();
        p->dropped++;
        return;
    }
    p->n_marks++;
}

/* after the download's wait: every event of the pass has completed */
void cx_prof_collect(exec *x) {
    cuda_exec *c = cx_of(x);
    cuda_prof *p = c->prof;
    if (!p || p->n_marks < 2) {
        if (p) p->n_marks = 0;
        return;
    }
    double total = 0;
    for (int i = 0; i + 1 < p->n_marks; i++) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, p->ev[i], p->ev[i + 1]) != cudaSuccess) {
            cudaGetLastError();
            continue;
        }
        total += ms;
        int r = 0;
        while (r < p->n_rows && strcmp(p->row[r].label, p->mark[i])) r++;
        if (r == p->n_rows) {
            if (p->n_rows == PROF_LABELS) continue;
            memcpy(p->row[r].label, p->mark[i], PROF_LABEL_LEN);
            p->n_rows++;
        }
        p->row[r].calls++;
        p->row[r].ms += ms;
    }
    p->passes++;
    p->pass_ms += total;
    if (total * 1000.0 > SPIN_US) p->late_passes++;
    p->n_marks = 0;
}

typedef struct prof_order { double ms; int r; } prof_order;

static int by_ms(const void *a, const void *b) {
    const double x = ((const prof_order *)a)->ms, y = ((const prof_order *)b)->ms;
    return x < y ? 1 : x > y ? -1 : 0;
}

void cx_prof_free(cuda_exec *c) {
    cuda_prof *p = c->prof;
    if (!p) return;
    if (p->passes) {
        prof_order ord[PROF_LABELS] = {{0, 0}};
        for (int r = 0; r < p->n_rows; r++) ord[r].ms = p->row[r].ms, ord[r].r = r;
        qsort(ord, (size_t)p->n_rows, sizeof ord[0], by_ms);
        fprintf(stderr, "\ncuda profile (%s): %llu passes, %.3f ms of GPU time a pass; %llu passes outran the %d us "
                "spin (their figures include launch waits), %llu marks not timed\n", c->d->name,
                (unsigned long long)p->passes, p->pass_ms / (double)p->passes, (unsigned long long)p->late_passes,
                SPIN_US, (unsigned long long)p->dropped);
        fprintf(stderr, "| %-46s | %9s | %10s | %9s | %6s |\n", "op", "calls", "total ms", "us a call", "share");
        for (int i = 0; i < p->n_rows; i++) {
            const int r = ord[i].r;
            fprintf(stderr, "| %-46s | %9llu | %10.3f | %9.2f | %5.1f%% |\n", p->row[r].label,
                    (unsigned long long)p->row[r].calls, p->row[r].ms, 1000.0 * p->row[r].ms / (double)p->row[r].calls,
                    100.0 * p->row[r].ms / p->pass_ms);
        }
    }
    for (int i = 0; i < p->n_ev; i++) cudaEventDestroy(p->ev[i]);
    free(p);
    c->prof = NULL;
}
