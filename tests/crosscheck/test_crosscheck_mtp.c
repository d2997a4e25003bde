/* test_crosscheck_mtp: llm170's MTP block against llama.cpp's on the same files (issue 16 (d)). transformers
 * does not build the MTP block, so llama.cpp (0.3.36, its draft-mtp path) is the outside reference: its
 * logits for the pairs (x[p+1], h[p]) of a random prompt are in tests/crosscheck/NAME.mtp, written by
 * scripts/mtp-golden.sh (tests/crosscheck/mtp_llamacpp.cpp) from the synth file that this test writes again
 * (synth is deterministic in its seed).
 *
 * Per row: the log-sum-exp of the row and the logits of llama.cpp's top 8 tokens within TOL (absolute, in
 * logit units), and llm170's best token = llama.cpp's unless the two are within TOL of each other there.
 * TOL by type, from the spread over prompt seeds 1..8 (scripts/mtp-golden.sh --sweep, 2026-12-05): f32 files
 * compute every product in f32 in both engines (the generator runs llama.cpp with f32 caches and no flash
 * attention), only the order of additions differs: max 1.8e-6 over 16 runs of tiny-qwen35 and -qwen35moe,
 * bound 2e-5. Quantized files quantize activations in both engines, and a rounding flip in one value moves
 * a logit by ~1e-3: q4_k_m max 1.6e-2 over 16 runs (q8_0 2.0e-2 over 8), bound 5e-2. A wrong MTP wiring
 * (the order of [embedding ; hidden] before eh_proj, a norm skipped or swapped) moves the
 * logits by far more (planted: see the commit that added this test). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "llm170.h"
#include "synth_model.h"

#define TOP 8
#define PMAX 256

typedef struct golden_case {
    const char *file, *preset, *mix;
    uint64_t synth_seed;
    double tol;
} golden_case;

static const golden_case CASES[] = {
    {"tests/crosscheck/tiny-qwen35-f32.mtp", "tiny-qwen35", "f32", 1, 2e-5},
    {"tests/crosscheck/tiny-qwen35moe-f32.mtp", "tiny-qwen35moe", "f32", 1, 2e-5},
    {"tests/crosscheck/tiny-qwen35moe-q4_k_m.mtp", "tiny-qwen35moe", "q4_k_m", 1, 5e-2},
};

typedef struct golden_row {
    double lse;
    int id[TOP];
    double logit[TOP];
} golden_row;

/* The golden file: "prompt t0 t1 ..." then "row p lse X id:logit ..." lines; n tokens, n - 1 rows. */
static int read_golden(const char *path, int32_t *prompt, golden_row *rows) {
    FILE *f = fopen(path, "r");
    CHECKF(f != NULL, "cannot open %s (scripts/mtp-golden.sh writes it)", path);
    if (!f) return 0;
    char line[4096];
    int n = 0, nr = 0;
    while (fgets(line, sizeof line, f)) {
        char *s = line, *end;
        if (!strncmp(s, "prompt", 6)) {
            s += 6;
            for (long v = strtol(s, &end, 10); end != s && n < PMAX; v = strtol(s, &end, 10)) prompt[n++] = (int32_t)v, s = end;
        } else if (!strncmp(s, "row", 3) && nr < PMAX) {
            golden_row *r = &rows[nr];
            int used = 0;
            if (sscanf(s, "row %*d lse %lf%n", &r->lse, &used) != 1) break;
            s += used;
            int j = 0;
            for (; j < TOP; j++) {
                if (sscanf(s, " %d:%lf%n", &r->id[j], &r->logit[j], &used) != 2) break;
                s += used;
            }
            CHECKF(j == TOP, "%s: row %d has %d of %d top entries", path, nr, j, TOP);
            nr++;
        }
    }
    fclose(f);
    CHECKF(n >= 2 && nr == n - 1, "%s: %d prompt tokens and %d rows", path, n, nr);
    return n >= 2 && nr == n - 1 ? n : 0;
}

static double lse(const float *l, int V) {
    double mx = l[0], s = 0;
    for (int v = 1; v < V; v++) mx = l[v] > mx ? l[v] : mx;
    for (int v = 0; v < V; v++) s += exp(l[v] - mx);
    return mx + log(s);
}

static void check_case(const golden_case *gc) {
    static int32_t prompt[PMAX];
    static golden_row rows[PMAX];
    const int n = read_golden(gc->file, prompt, rows);
    if (!n) return;
    llm170_model *m = synth_model_load(gc->preset, gc->mix, gc->synth_seed, 2);
    if (!m) return;
    llm170_context *c = NULL;
    llm170_context_params cp = llm170_context_default_params();
    cp.n_ctx = 512;
    CHECKF(llm170_context_new(m, &cp, &c) == 0, "context: %s", llm170_last_error());
    const int V = llm170_model_n_vocab(m), E = llm170_model_n_embd(m);
    float *hidden = malloc(sizeof(float) * (size_t)n * E), *logits = malloc(sizeof(float) * (size_t)n * V);
    llm170_seq_batch b = {0, n, prompt, true};
    int rc = c && hidden && logits ? llm170_decode(c, &b, 1) : -1;
    CHECKF(rc == 0, "decode: %s", llm170_last_error());
    if (!rc) {
        for (int p = 0; p < n; p++) memcpy(hidden + (size_t)p * E, llm170_hidden(c, p), sizeof(float) * E);
        rc = llm170_mtp_decode(c, 0, hidden, prompt + 1, n - 1, logits);
        CHECKF(rc == 0, "mtp: %s", llm170_last_error());
    }
    if (!rc) {
        double worst = 0;
        int worst_row = 0, top_same = 0;
        for (int p = 0; p < n - 1; p++) {
            const float *l = logits + (size_t)p * V;
            const golden_row *r = &rows[p];
            double d = fabs(lse(l, V) - r->lse);
            for (int j = 0; j < TOP; j++) {
                double dj = fabs(l[r->id[j]] - r->logit[j]);
                d = dj > d ? dj : d;
            }
            if (d > worst) worst = d, worst_row = p;
            CHECKF(d <= gc->tol, "%s: row %d: max |llm170 - llama.cpp| %.3g over the lse and top %d > %.3g", gc->file,
                   p, d, TOP, gc->tol);
            int best = 0;
            for (int v = 1; v < V; v++) best = l[v] > l[best] ? v : best;
            top_same += best == r->id[0];
            CHECKF(best == r->id[0] || fabs(l[best] - l[r->id[0]]) <= gc->tol,
                   "%s: row %d: llm170's best token %d (%.6g), llama.cpp's %d (llm170 gives it %.6g)", gc->file, p, best,
                   l[best], r->id[0], l[r->id[0]]);
        }
        printf("%s (%s %s): %d MTP rows, max |diff| %.3g (row %d; tolerance %.3g), best token equal on %d\n", gc->file,
               gc->preset, gc->mix, n - 1, worst, worst_row, gc->tol, top_same);
    }
    free(hidden);
    free(logits);
    llm170_context_free(c);
    llm170_model_free(m);
}

/* With no arguments, the committed cases; `test_crosscheck_mtp FILE PRESET MIX SYNTH_SEED TOL` checks one other
 * golden file (scripts/mtp-golden.sh --sweep: the spread over prompt seeds that the tolerances come from). */
int main(int argc, char **argv) {
    if (argc == 6) {
        const golden_case gc = {argv[1], argv[2], argv[3], strtoull(argv[4], NULL, 10), atof(argv[5])};
        check_case(&gc);
    } else {
        for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) check_case(&CASES[i]);
    }
    return check_report("test_crosscheck_mtp");
}
