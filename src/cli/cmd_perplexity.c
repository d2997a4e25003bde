/* llm170 perplexity: the perplexity of a text file, by llama-perplexity's method so the two numbers can
 * be compared directly:
 *   1. tokenize the whole file once (BOS as the vocabulary says, control-token text left as text);
 *   2. cut it into floor(n_tokens / n_ctx) non-overlapping chunks of n_ctx tokens; a chunk's first token
 *      is replaced by BOS when the vocabulary adds one;
 *   3. run each chunk from an empty cache and score only its second half: the logits at positions
 *      j = n_ctx/2 .. n_ctx-2 against the token at j+1 (the first half is context, so every scored token
 *      sees at least n_ctx/2 tokens before it);
 *   4. PPL = exp(mean negative log-likelihood over all scored tokens); the +/- is the standard error of
 *      the mean carried through exp, as llama-perplexity prints it.
 * Prints the running estimate per chunk ("[1]12.3456,[2]...") and "Final estimate: PPL = X +/- E". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "llm170.h"

static void usage(void) {
    fprintf(stderr, "usage: llm170 perplexity --model M --file TEXT [--ctx-size 512] [--threads N] [--device D] [--cache-type-k T] [--cache-type-v T] [--chunks N] [--exact]\n");
}

/* The whole file, NUL-terminated, malloc'd; NULL with a message on failure. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "llm170 perplexity: cannot open '%s'\n", path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) {
                free(buf);
                buf = NULL;
            }
            buf = p;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "llm170 perplexity: out of memory reading '%s'\n", path);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

int cmd_perplexity(int argc, char **argv) {
    const char *path = NULL, *file = NULL;
    int n_ctx = 512, max_chunks = -1, rc = 1, ctk = 0, ctv = 0;
    llm170_model_params mp = llm170_model_default_params();
    mp.n_threads = args_default_threads();
    llm170_model *model = NULL;
    llm170_context *ctx = NULL;
    char *text = NULL;
    int32_t *ids = NULL, *bos = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        bool ok = true;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (!strcmp(a, "--exact")) {
            mp.exact = true;
            continue;
        }
        if (!(v = args_value("perplexity", argc, argv, &i))) goto usage_error;
        if (!strcmp(a, "--model") || !strcmp(a, "-m")) path = v;
        else if (!strcmp(a, "--file") || !strcmp(a, "-f")) file = v;
        else if (!strcmp(a, "--ctx-size") || !strcmp(a, "-c")) ok = args_int("perplexity", a, v, 8, 1 << 20, &n_ctx);
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) ok = args_int("perplexity", a, v, 1, 1024, &mp.n_threads);
        else if (!strcmp(a, "--device")) mp.device = v;
        else if (args_cache_flags("perplexity", a, v, &ctk, &ctv, &ok)) {
        }
        else if (!strcmp(a, "--chunks")) ok = args_int("perplexity", a, v, 1, 1 << 24, &max_chunks);
        else {
            fprintf(stderr, "llm170 perplexity: unknown flag '%s'\n", a);
            goto usage_error;
        }
        if (!ok) {
            rc = 2;
            goto done;
        }
    }
    if (!path || !file) {
        fprintf(stderr, "llm170 perplexity: --model and --file are required\n");
        goto usage_error;
    }
    size_t len = 0, n_tok = 0, n_bos = 0;
    if (!(text = read_file(file, &len))) goto done;
    if (llm170_model_load(path, &mp, &model) || llm170_tokenize(model, text, len, true, false, &ids, &n_tok) ||
        llm170_tokenize(model, "", 0, true, false, &bos, &n_bos)) {
        fprintf(stderr, "llm170 perplexity: %s\n", llm170_last_error());
        goto done;
    }
    if (n_tok < 2 * (size_t)n_ctx) {
        fprintf(stderr, "llm170 perplexity: '%s' has %zu tokens; at least 2 x n_ctx = %d are needed\n", file, n_tok,
                2 * n_ctx);
        goto done;
    }
    int n_chunk = (int)(n_tok / (size_t)n_ctx);
    if (max_chunks > 0 && max_chunks < n_chunk) n_chunk = max_chunks;
    int first = n_ctx / 2, n_vocab = llm170_model_n_vocab(model);
    /* two decodes per chunk: the unscored first half without logits, the second half with all of them
     * (halves the logits buffer: n_ctx/2 x n_vocab floats) */
    llm170_context_params cp = {.n_seq = 1, .n_ctx = n_ctx, .n_batch = n_ctx, .cache_type_k = ctk, .cache_type_v = ctv};
    if (llm170_context_new(model, &cp, &ctx)) {
        fprintf(stderr, "llm170 perplexity: %s\n", llm170_last_error());
        goto done;
    }
    fprintf(stderr, "perplexity: %zu tokens, %d chunks of n_ctx %d, scoring %d tokens per chunk\n", n_tok, n_chunk,
            n_ctx, n_ctx - first - 1);
    double nll = 0, nll2 = 0;
    long count = 0;
    for (int c = 0; c < n_chunk; c++) {
        int32_t *chunk = ids + (size_t)c * (size_t)n_ctx;
        if (n_bos == 1) chunk[0] = bos[0];
        llm170_seq_reset(ctx, 0);
        llm170_seq_batch b1 = {.seq = 0, .n_tokens = first, .tokens = chunk, .all_logits = false};
        llm170_seq_batch b2 = {.seq = 0, .n_tokens = n_ctx - first, .tokens = chunk + first, .all_logits = true};
        if (llm170_decode(ctx, &b1, 1) || llm170_decode(ctx, &b2, 1)) {
            fprintf(stderr, "llm170 perplexity: chunk %d: %s\n", c, llm170_last_error());
            goto done;
        }
        for (int j = first; j < n_ctx - 1; j++) {
            const float *row = llm170_logits(ctx, j - first);
            float mx = row[0];
            for (int v = 1; v < n_vocab; v++) mx = row[v] > mx ? row[v] : mx;
            double sum = 0;
            for (int v = 0; v < n_vocab; v++) sum += exp((double)(row[v] - mx));
            double x = -((double)(row[chunk[j + 1]] - mx) - log(sum > 0 ? sum : 1)); /* sum >= 1 */
            nll += x;
            nll2 += x * x;
            count++;
        }
        printf("[%d]%.4f,", c + 1, exp(nll / (double)count));
        fflush(stdout);
    }
    double mean = nll / (double)count, var = nll2 / (double)count - mean * mean;
    double ppl = exp(mean), pm = var > 0 && count > 1 ? sqrt(var / (double)(count - 1)) * ppl : 0;
    printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", ppl, pm);
    rc = 0;
    goto done;
usage_error:
    usage();
    rc = 2;
done:
    free(text);
    free(ids);
    free(bos);
    llm170_context_free(ctx);
    llm170_model_free(model);
    return rc;
}
