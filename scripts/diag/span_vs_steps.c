/* span_vs_steps: are the logits of a K-token span (one pass, all_logits) the bits of decoding those K tokens
 * one at a time? Speculative verification relies on it (issue 16: greedy output identical to plain).
 * A diagnostic, not a test: on 2026-12-02 it showed the two differ on Qwen2.5-Coder-1.5B Q4_K_M (e.g.
 * P = 150, K = 2: every logit of row 0, up to 0.335; also with 1 thread), not on the 0.5B.
 *
 *   gcc -O1 -I include scripts/diag/span_vs_steps.c -o /tmp/span_vs_steps -L build -lllm170 -lm
 *   LD_LIBRARY_PATH=build /tmp/span_vs_steps MODEL P K     (P random prompt tokens, then K more)
 * Environment: THREADS (default 2), EXACT (f32 reference matmuls), SAME (compare steps with steps: the
 * control, which must print 0 differing logits). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm170.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: span_vs_steps MODEL P K\n");
        return 2;
    }
    const int P = atoi(argv[2]), K = atoi(argv[3]);
    llm170_model_params mp = llm170_model_default_params();
    mp.n_threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 2;
    mp.exact = getenv("EXACT") != NULL;
    llm170_model *m = NULL;
    llm170_context *c = NULL;
    llm170_context_params cp = llm170_context_default_params();
    if (P < 1 || K < 1 || llm170_model_load(argv[1], &mp, &m) || llm170_context_new(m, &cp, &c)) {
        fprintf(stderr, "span_vs_steps: %s\n", llm170_last_error());
        return 1;
    }
    const int V = llm170_model_n_vocab(m);
    int32_t *t = malloc(sizeof(int32_t) * (size_t)(P + K));
    float *a = malloc(sizeof(float) * (size_t)V * K), *b = malloc(sizeof(float) * (size_t)V * K);
    if (!t || !a || !b) return 1;
    srand(7);
    for (int i = 0; i < P + K; i++) t[i] = rand() % 5000 + 100;
    const llm170_seq_batch prompt = {0, P, t, false};
    for (int pass = 0; pass < 2; pass++) {
        float *dst = pass ? b : a;
        llm170_seq_reset(c, 0);
        if (llm170_decode(c, &prompt, 1)) return 1;
        if (pass == 1 && !getenv("SAME")) { /* the span */
            const llm170_seq_batch span = {0, K, t + P, true};
            if (llm170_decode(c, &span, 1)) return 1;
            for (int k = 0; k < K; k++) memcpy(dst + (size_t)k * V, llm170_logits(c, k), sizeof(float) * (size_t)V);
            continue;
        }
        for (int k = 0; k < K; k++) { /* one token a pass */
            const llm170_seq_batch one = {0, 1, t + P + k, false};
            if (llm170_decode(c, &one, 1)) return 1;
            memcpy(dst + (size_t)k * V, llm170_logits(c, 0), sizeof(float) * (size_t)V);
        }
    }
    for (int k = 0; k < K; k++) {
        int diff = 0;
        double md = 0;
        for (int i = 0; i < V; i++) {
            const float x = a[(size_t)k * V + i], y = b[(size_t)k * V + i];
            if (memcmp(&x, &y, sizeof x)) diff++, md = fabs((double)x - y) > md ? fabs((double)x - y) : md;
        }
        printf("P=%d K=%d row %d: %d of %d logits differ, max %.3g\n", P, K, k, diff, V, md);
    }
    llm170_context_free(c);
    llm170_model_free(m);
    free(t), free(a), free(b);
    return 0;
}
