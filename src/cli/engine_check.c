/* engine_check: one model run on two devices through the public API and compared (`llm170 cuda-check
 * --engine`: the CPU against a GPU), with a third run as the truth: the CPU's f32 reference path (`exact`:
 * the file's weights dequantized to f32, activations not rounded). Per model and prompt (100 tokens: the
 * GEMM / flash / chunked-GDN prefill paths of a GPU; 6 tokens: its GEMV and short-prompt paths): the logits
 * after the prompt, then 16 greedy steps.
 *
 * Error model. Both devices run the same weights; what they round differently is the activations: the CPU
 * to q8_0 / q8_K blocks before each matmul, the GPU's GEMV to q8_1 blocks of 32, its GEMM to bf16, its KV
 * cache to f16. Each device's logits therefore sit at some distance e = max |logit - exact| / range from the
 * truth, and that distance is not small in general: it is amplified by the model (a routed MoE whose top-k
 * is near a tie switches experts under a rounding; the 16 random steps reach such ties). The device under
 * test passes when it is no further from the truth than the CPU's own quantized path is, within a factor
 * of 2, and never further than ENGINE_FLOOR (1% of the range) where the CPU happens to be very close:
 *     e_dut <= max(2 * e_cpu, ENGINE_FLOOR)   at every compared step.
 * Basis of the factor 2: the two devices' roundings are of the same size (8 bits per value, blocks of 32 to
 * 256) and independent, so their distances to the truth are draws of one distribution; 2x covers the
 * spread seen between steps while a GPU bug (a wrong block, a wrong expert, a dropped term) moves logits by
 * a large fraction of the range.
 *  - tokens: at every step the device under test picks the truth's token, or one whose truth logit is
 *    within the bound above (of the range) below the truth's best: a near-tie. All three runs are fed the
 *    truth's picks, so all 17 steps (prompt + 16) compare logits of one context. The plain CPU-vs-GPU
 *    distance is printed too.
 *
 * A fourth run (optional, `dsame`): the device under test opened another way that must give the same bits,
 * e.g. a GPU with its CUDA graphs off ("cuda:0:nograph") against the graph run: the same kernels in the
 * same order, so every logit of every step must be bit-identical (memcmp), no tolerance. Any difference
 * is a bug of the capture (a stale upload, a parameter baked into the graph, a pass run twice). The
 * 6-token prompt and every one-token step are captured passes; the 100-token prompt (step 0 of its row)
 * is eager on both, a control of the comparison itself.
 *
 * A fifth run, `bat`: the device under test with ENGINE_BATCH sequences in one context. The compared prompt
 * goes to the last sequence; the others get prompts and tokens of their own (filler), and every greedy step
 * decodes all of them together, one token each, as a server's batched step does (on a GPU, 64 one-token
 * rows or more: the int8 batched product, batched decode attention). The last sequence's logits must meet
 * the same bound against the truth and its picks the same rule; a batch path that mixes rows of sequences,
 * drops a tile or reads another sequence's cache moves them by a large fraction of the range. ENGINE_BATCH
 * is 72: past the batched product's threshold (64 rows), two of its 64-row tiles. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/engine_check.h"
#include "llm170.h"

#define ENGINE_FLOOR 0.01
#define ENGINE_STEPS 16
#define ENGINE_BATCH 72

static double bound_of(double e_cpu) {
    return 2 * e_cpu > ENGINE_FLOOR ? 2 * e_cpu : ENGINE_FLOOR;
}

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

static int open_side(side *s, const char *path, const char *device, bool exact, int n_threads, int n_seq, char *msg,
                     size_t cap) {
    llm170_model_params mp = llm170_model_default_params();
    mp.device = device;
    mp.exact = exact;
    mp.n_threads = n_threads;
    if (llm170_model_load(path, &mp, &s->m)) {
        snprintf(msg, cap, "%s: cannot load on %s: %s", path, device, llm170_last_error());
        return -1;
    }
    llm170_context_params cp = llm170_context_default_params();
    cp.n_seq = n_seq, cp.n_ctx = 512, cp.n_batch = 256;
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

/* a filler token for sequence q of bat (not the compared one) from the compared sequence's token t */
static int32_t filler(int32_t t, int q, int V) { return (int32_t)((t + 7919 * (q + 1)) % (V / 2)); }

/* bat: every sequence reset, the fillers' prompts decoded (a pass each), then the compared prompt in the last */
static int bat_prompt(side *s, const int32_t *toks, int n, char *msg, size_t cap, const char *dev) {
    const int V = llm170_model_n_vocab(s->m);
    int32_t f[128];
    for (int q = 0; q < ENGINE_BATCH; q++) llm170_seq_reset(s->c, q);
    for (int q = 0; q < ENGINE_BATCH - 1; q++) {
        for (int i = 0; i < n; i++) f[i] = filler(toks[i], q, V);
        llm170_seq_batch b = {.seq = q, .n_tokens = n, .tokens = f, .all_logits = false};
        if (llm170_decode(s->c, &b, 1)) {
            snprintf(msg, cap, "decode on %s (a batch of %d): %s", dev, ENGINE_BATCH, llm170_last_error());
            return -1;
        }
    }
    llm170_seq_batch b = {.seq = ENGINE_BATCH - 1, .n_tokens = n, .tokens = toks, .all_logits = false};
    if (llm170_decode(s->c, &b, 1)) {
        snprintf(msg, cap, "decode on %s (a batch of %d): %s", dev, ENGINE_BATCH, llm170_last_error());
        return -1;
    }
    memcpy(s->logits, llm170_logits(s->c, 0), sizeof(float) * (size_t)V);
    return 0;
}

/* bat: one step of every sequence together, t for the compared one; its logits kept */
static int bat_step(side *s, int32_t t, char *msg, size_t cap, const char *dev) {
    const int V = llm170_model_n_vocab(s->m);
    int32_t tok[ENGINE_BATCH];
    llm170_seq_batch b[ENGINE_BATCH];
    for (int q = 0; q < ENGINE_BATCH; q++) {
        tok[q] = q == ENGINE_BATCH - 1 ? t : filler(t, q, V);
        b[q] = (llm170_seq_batch){.seq = q, .n_tokens = 1, .tokens = &tok[q], .all_logits = false};
    }
    if (llm170_decode(s->c, b, ENGINE_BATCH)) {
        snprintf(msg, cap, "decode on %s (a batch of %d): %s", dev, ENGINE_BATCH, llm170_last_error());
        return -1;
    }
    memcpy(s->logits, llm170_logits(s->c, ENGINE_BATCH - 1), sizeof(float) * (size_t)V);
    return 0;
}

/* the bits of same's logits against dut's: counts an identical step, or writes the first difference to msg */
static int same_bits(const side *dut, const side *same, int V, int i, int *n_same, char *msg, size_t cap,
                     const char *ddut, const char *dsame) {
    if (!memcmp(dut->logits, same->logits, sizeof(float) * (size_t)V)) {
        (*n_same)++;
        return 0;
    }
    int n = 0, first = -1;
    double d = 0;
    for (int k = 0; k < V; k++) {
        if (!memcmp(&dut->logits[k], &same->logits[k], sizeof(float))) continue;
        n++;
        first = first < 0 ? k : first;
        const double e = fabs((double)dut->logits[k] - same->logits[k]);
        if (!(e <= d)) d = e;
    }
    snprintf(msg, cap, "step %d: %s and %s differ in %d of %d logits (first id %d, max |diff| %.3g)", i, ddut, dsame,
             n, V, first, d);
    return 1;
}

/* one prompt on the three (four) sides from empty sequences; prints a row, returns 0 if it passed */
static int compare_prompt(side *ex, side *ref, side *dut, side *same, side *bat, const char *dref, const char *ddut,
                          const char *dsame, const char *label, int n_prompt) {
    const int V = llm170_model_n_vocab(ref->m);
    int32_t toks[128];
    char msg[512] = "";
    for (int i = 0; i < n_prompt; i++) toks[i] = (int32_t)((i * 7919 + 13) % (V / 2)); /* ordinary tokens */
    llm170_seq_reset(ex->c, 0);
    llm170_seq_reset(ref->c, 0);
    llm170_seq_reset(dut->c, 0);
    if (same) llm170_seq_reset(same->c, 0);
    double worst_dut = 0, worst_cpu = 0, worst_pair = 0, worst_bat = 0, range = 0;
    int equal = 0, n_ties = 0, bad = 0, n_same = 0;
    if (step(ex, toks, n_prompt, msg, sizeof msg, "cpu exact") || step(ref, toks, n_prompt, msg, sizeof msg, dref) ||
        step(dut, toks, n_prompt, msg, sizeof msg, ddut) ||
        (same && step(same, toks, n_prompt, msg, sizeof msg, dsame)) || (bat && bat_prompt(bat, toks, n_prompt, msg, sizeof msg, ddut)))
        bad = 1;
    for (int i = 0; !bad; i++) {
        if (same && same_bits(dut, same, V, i, &n_same, msg, sizeof msg, ddut, dsame)) {
            bad = 1;
            break;
        }
        double r2;
        const double e_dut = logit_err(ex->logits, dut->logits, V, &range), e_cpu = logit_err(ex->logits, ref->logits, V, &r2),
                     e_pair = logit_err(ref->logits, dut->logits, V, &r2), b = bound_of(e_cpu);
        worst_pair = e_pair > worst_pair || e_pair != e_pair ? e_pair : worst_pair;
        worst_cpu = e_cpu > worst_cpu ? e_cpu : worst_cpu;
        worst_dut = e_dut > worst_dut || e_dut != e_dut ? e_dut : worst_dut;
        if (!(e_dut <= b)) {
            bad = 1;
            snprintf(msg, sizeof msg, "step %d: %s is %.3g of the range from f32, %s %.3g (bound %.3g)", i, ddut, e_dut,
                     dref, e_cpu, b);
            break;
        }
        if (bat) {
            const double e_bat = logit_err(ex->logits, bat->logits, V, &r2);
            worst_bat = e_bat > worst_bat || e_bat != e_bat ? e_bat : worst_bat;
            const int ta = argmax(ex->logits, V), tb = argmax(bat->logits, V);
            if (!(e_bat <= b)) {
                bad = 1;
                snprintf(msg, sizeof msg,
                         "step %d: %s in a batch of %d is %.3g of the range from f32, %s %.3g (bound %.3g)", i, ddut,
                         ENGINE_BATCH, e_bat, dref, e_cpu, b);
                break;
            }
            if (ta != tb && !((double)ex->logits[ta] - ex->logits[tb] <= b * range)) {
                bad = 1;
                snprintf(msg, sizeof msg,
                         "step %d: f32 picks %d, %s in a batch of %d %d (gap %.3g of the range, bound %.3g)", i, ta,
                         ddut, ENGINE_BATCH, tb, ((double)ex->logits[ta] - ex->logits[tb]) / range, b);
                break;
            }
        }
        if (i == ENGINE_STEPS) break;
        const int ta = argmax(ex->logits, V), tb = argmax(dut->logits, V);
        if (ta != tb) {
            const double gap = (double)ex->logits[ta] - ex->logits[tb];
            if (gap <= b * range) {
                n_ties++;
            } else {
                bad = 1;
                snprintf(msg, sizeof msg, "step %d: f32 picks %d, %s %d (gap %.3g of a range %.3g, bound %.3g)", i, ta, ddut,
                         tb, gap / range, range, b);
                break;
            }
        } else {
            equal++;
        }
        const int32_t t = ta; /* every side follows the truth's pick, so every step compares one context */
        if (step(ex, &t, 1, msg, sizeof msg, "cpu exact") || step(ref, &t, 1, msg, sizeof msg, dref) ||
            step(dut, &t, 1, msg, sizeof msg, ddut) || (same && step(same, &t, 1, msg, sizeof msg, dsame)) ||
            (bat && bat_step(bat, t, msg, sizeof msg, ddut)))
            bad = 1;
    }
    char bits[32] = "-";
    if (same) snprintf(bits, sizeof bits, "%d/%d", n_same, ENGINE_STEPS + 1);
    char wb[32] = "-";
    if (bat) snprintf(wb, sizeof wb, "%.2e", worst_bat);
    printf("| %s | %d | %.2e | %.2e | %.2e | %s | %d/%d, %d near-ties | %s | %s | %s\n", label, n_prompt, worst_cpu,
           worst_dut, worst_pair, wb, equal, ENGINE_STEPS, n_ties, bits, bad ? "FAIL" : "pass", msg);
    fflush(stdout);
    return bad;
}

int engine_check_model(const char *path, const char *label, const char *dref, const char *ddut, const char *dsame,
                       int n_threads) {
    side x = {0}, a = {0}, b = {0}, s = {0}, q = {0};
    char msg[512] = "";
    int bad = 0;
    if (open_side(&x, path, dref, true, n_threads, 1, msg, sizeof msg) ||
        open_side(&a, path, dref, false, n_threads, 1, msg, sizeof msg) ||
        open_side(&b, path, ddut, false, n_threads, 1, msg, sizeof msg) ||
        (dsame && open_side(&s, path, dsame, false, n_threads, 1, msg, sizeof msg)) ||
        open_side(&q, path, ddut, false, n_threads, ENGINE_BATCH, msg, sizeof msg)) {
        printf("| %s | - | - | - | - | - | - | - | FAIL | %s\n", label, msg);
        bad = 1;
    } else {
        bad |= compare_prompt(&x, &a, &b, dsame ? &s : NULL, &q, dref, ddut, dsame, label, 100);
        bad |= compare_prompt(&x, &a, &b, dsame ? &s : NULL, &q, dref, ddut, dsame, label, 6);
    }
    if (x.m) close_side(&x);
    if (a.m) close_side(&a);
    if (b.m) close_side(&b);
    if (s.m) close_side(&s);
    if (q.m) close_side(&q);
    return bad;
}

void engine_check_header(const char *dref, const char *ddut, const char *dsame) {
    printf("engine check: %s and %s against %s's f32 path (exact); %s passes within max(2 x %s's distance, %.2g) of the "
           "logit range; %d greedy steps",
           dref, ddut, dref, ddut, dref, ENGINE_FLOOR, ENGINE_STEPS);
    if (dsame) printf("; %s's logits bit-identical to %s's at every step", ddut, dsame);
    printf("; %s in a batch of %d held to the same bound", ddut, ENGINE_BATCH);
    printf("\n| model | prompt | %s vs f32 (worst) | %s vs f32 (worst) | %s vs %s | %s in a batch of %d vs f32 | "
           "picks equal | steps = %s | result | note\n|---|---:|---:|---:|---:|---:|---|---|---|---|\n",
           dref, ddut, ddut, dref, ddut, ENGINE_BATCH, dsame ? dsame : "-");
}
