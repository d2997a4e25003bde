/* examples/generate.c: the smallest complete use of the llm170 C API — load a model, prefill a prompt of
 * token ids, generate greedily until an end-of-generation token or N tokens, print the ids.
 *
 *   build/examples/generate MODEL.gguf N_PREDICT ID [ID ...]
 */
#include <stdio.h>
#include <stdlib.h>

#include "llm170.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.gguf N_PREDICT ID [ID ...]\n", argv[0]);
        return 2;
    }
    int n_predict = atoi(argv[2]), n_prompt = argc - 3;
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)n_prompt);
    if (!prompt) return 1;
    for (int i = 0; i < n_prompt; i++) prompt[i] = (int32_t)atoi(argv[3 + i]);

    llm170_model *model = NULL;
    llm170_context *ctx = NULL;
    llm170_sampler *smp = NULL;
    llm170_model_params mp = llm170_model_default_params();
    llm170_context_params cp = llm170_context_default_params();
    cp.n_ctx = n_prompt + n_predict;
    int rc = 1;
    if (llm170_model_load(argv[1], &mp, &model) || llm170_context_new(model, &cp, &ctx) ||
        llm170_sampler_new(model, NULL, &smp)) { /* NULL: greedy */
        fprintf(stderr, "error: %s\n", llm170_last_error());
        goto done;
    }
    int32_t eog[8];
    int n_eog = llm170_model_eog_tokens(model, eog, 8);
    llm170_seq_batch batch = {.seq = 0, .n_tokens = n_prompt, .tokens = prompt};
    int32_t tok;
    for (int i = 0; i < n_predict; i++) {
        if (llm170_decode(ctx, &batch, 1)) {
            fprintf(stderr, "error: %s\n", llm170_last_error());
            goto done;
        }
        tok = llm170_sample(smp, llm170_logits(ctx, 0));
        printf("%d%c", tok, i + 1 < n_predict ? ' ' : '\n');
        int stop = 0;
        for (int k = 0; k < n_eog; k++) stop |= tok == eog[k];
        if (stop) break;
        batch = (llm170_seq_batch){.seq = 0, .n_tokens = 1, .tokens = &tok};
    }
    rc = 0;
done:
    llm170_sampler_free(smp);
    llm170_context_free(ctx);
    llm170_model_free(model);
    free(prompt);
    return rc;
}
