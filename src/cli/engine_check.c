/* engine_check: one model run on two devices through the public API and compared (`llm170 cuda-check
 * --engine`: the CPU against a GPU). Per model and prompt (100 tokens: the GEMM / flash / chunked-GDN
 * prefill paths of a GPU; 6 tokens: its GEMV and short-prompt paths): the logits after the prompt, then 16
 * greedy steps, each device feeding back its own pick.
 *
 * Pass criteria:
 *  - logits: max |a - b| over the vocabulary, relative to the reference's logit range (max - min), within
 *    ENGINE_TOL at every compared step. Basis: both devices round the activations of every matmul to 8 bits
 *    per value (the CPU to q8_0 / q8_K blocks, the GPU's GEMV to q8_1 blocks of 32, its GEMM to bf16, with
 *    weights to bf16 too), each a relative error of at most 2^-8 of its block's largest value, about 0.3%
 *    of a matmul output's rms after averaging over K independent roundings; the two devices' roundings are
 *    independent, and a trunk of n layers of ~7 matmuls plus the head compounds them as sqrt(7n + 1)
 *    (~5 for 4 layers): ~2% of the range. The GPU's f16 KV cache (2^-11 relative) and float summation
 *    order add far less. ENGINE_TOL = 5% leaves 2.5x of that estimate; the measured values are printed.
 *  - tokens: the greedy streams are equal, or at their first divergence the reference's logit of the other
 *    device's pick is within ENGINE_TOL of the range below its own best (a near-tie); the steps after a
 *    divergence are not compared. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/engine_check.h"
#include "llm170.h"

#define ENGINE_TOL 0.05
#define ENGINE_STEPS 16

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* max |a - b| / (max(a) - min(a)); *range = that range */
static double logit_err(const float *a, const float *b, int n, double *range) {
    double mx = -INFINITY, mn = INFINITY, d = 0;
    for (int i = 0; i < n; i++) {
        mx = a[i] > mx ? a[i] : mx;
        mn = a[i] < mn ? a[i] : mn;
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= d)) d = e; /* NaN propagates */
    }
    *range = mx - mn;
    return d / (mx > mn ? mx - mn : 1);
}

typedef struct side {
    llm170_model *m;
    llm170_context *c;
    float *logits;
} side;

static int open_side(side *s, const char *path, const char *device, int n_threads, char *msg, size_t cap) {
    llm170_model_params mp = llm170_model_default_params();
    mp.device = device;
    mp.n_threads = n_threads;
    if (llm170_model_load(path, &mp, &s->m)) {
        snprintf(msg, cap, "%s: cannot load on %s: %s", path, device, llm170_last_error());
        return -1;
    }
    llm170_context_params cp = llm170_context_default_params();
    cp.n_seq = 1, cp.n_ctx = 512, cp.n_batch = 256;
    if (llm170_context_new(s->m, &cp, &s->c)) {
        snprintf(msg, cap, "%s: cannot create a context on %s: %s", path, device, llm170_last_error());
        return -1;
    }
    s->logits = malloc(sizeof(float) * (size_t)llm170_model_n_vocab(s->m));
    return s->logits ? 0 : -1;
}

static void close_side(side *s) {
    llm170_context_free(s->c);
    llm170_model_free(s->m);
    free(s->logits);
}

static int step(side *s, const int32_t *toks, int n, char *msg, size_t cap, const char *dev) {
    llm170_seq_batch b = {.seq = 0, .n_tokens = n, .tokens = toks, .all_logits = false};
    if (llm170_decode(s->c, &b, 1)) {
        snprintf(msg, cap, "decode on %s: %s", dev, llm170_last_error());
        return -1;
    }
    memcpy(s->logits, llm170_logits(s->c, 0), sizeof(float) * (size_t)llm170_model_n_vocab(s->m));
    return 0;
}

/* one prompt on both sides from empty sequences; prints a row, returns 0 if it passed */
static int compare_prompt(side *ref, side *dut, const char *dref, const char *ddut, const char *label, int n_prompt) {
    const int V = llm170_model_n_vocab(ref->m);
    int32_t toks[128];
    char msg[512] = "";
    for (int i = 0; i < n_prompt; i++) toks[i] = (int32_t)((i * 7919 + 13) % (V / 2)); /* ordinary tokens */
    llm170_seq_reset(ref->c, 0);
    llm170_seq_reset(dut->c, 0);
    double worst = 0, first = 0, range = 0;
    int equal = 0, tie_at = -1, bad = 0;
    if (step(ref, toks, n_prompt, msg, sizeof msg, dref) || step(dut, toks, n_prompt, msg, sizeof msg, ddut)) {
        bad = 1;
    } else {
        first = worst = logit_err(ref->logits, dut->logits, V, &range);
        for (int i = 0; i < ENGINE_STEPS; i++) {
            const int ta = argmax(ref->logits, V), tb = argmax(dut->logits, V);
            if (ta != tb) {
                const double gap = (double)ref->logits[ta] - ref->logits[tb];
                if (gap <= ENGINE_TOL * range) {
                    tie_at = i;
                } else {
                    bad = 1;
                    snprintf(msg, sizeof msg, "step %d: %s picks %d, %s %d (gap %.3g of a range %.3g)", i, dref, ta,
                             ddut, tb, gap, range);
                }
                break;
            }
            equal++;
            const int32_t t = ta;
            if (step(ref, &t, 1, msg, sizeof msg, dref) || step(dut, &t, 1, msg, sizeof msg, ddut)) {
                bad = 1;
                break;
            }
            double r2, e = logit_err(ref->logits, dut->logits, V, &r2);
            worst = e > worst || e != e ? e : worst;
        }
    }
    if (!bad && !(worst <= ENGINE_TOL)) {
        bad = 1;
        snprintf(msg, sizeof msg, "logits differ by %.3g of their range (tolerance %.2g)", worst, ENGINE_TOL);
    }
    printf("| %s | %d | %.2e | %.2e | %d/%d%s | %s | %s\n", label, n_prompt, first, worst, equal, ENGINE_STEPS,
           tie_at >= 0 ? " (near-tie)" : "", bad ? "FAIL" : "pass", msg);
    fflush(stdout);
    return bad;
}

int engine_check_model(const char *path, const char *label, const char *dref, const char *ddut, int n_threads) {
    side a = {0}, b = {0};
    char msg[512] = "";
    int bad = 0;
    if (open_side(&a, path, dref, n_threads, msg, sizeof msg) || open_side(&b, path, ddut, n_threads, msg, sizeof msg)) {
        printf("| %s | - | - | - | - | FAIL | %s\n", label, msg);
        bad = 1;
    } else {
        bad |= compare_prompt(&a, &b, dref, ddut, label, 100);
        bad |= compare_prompt(&a, &b, dref, ddut, label, 6);
    }
    if (a.m) close_side(&a);
    if (b.m) close_side(&b);
    return bad;
}

void engine_check_header(const char *dref, const char *ddut) {
    printf("engine check: %s (reference) vs %s; tolerance %.2g of the logit range; %d greedy steps\n", dref, ddut,
           ENGINE_TOL, ENGINE_STEPS);
    printf("| model | prompt | logit err (prefill) | worst | tokens equal | result | note\n|---|---:|---:|---:|---|---|---|\n");
}
