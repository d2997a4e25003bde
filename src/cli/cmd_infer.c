/* llm170 infer: prefill one or more prompts (token ids with --prompt-tokens, or text with --prompt,
 * tokenized by the model's own tokenizer) as parallel sequences of one batch, then generate, printing one
 * JSON line per generated token: {"seq": 0, "pos": 5, "token": 123, "text": "..."} ("text" when the
 * model has a tokenizer: the bytes this token completes, never half a UTF-8 character). With
 * --top-logprobs N each line also has "logprob" (the chosen token's log-softmax of the raw logits) and
 * "top": [[id, logprob], ...] (the N most likely tokens, best first), as cross-checks against
 * llama.cpp's n_probs read them. --timings prints on stderr the prefill and decode rates and the time
 * spent choosing tokens (the sampler), to compare sampled decode with greedy decode. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/spec_cli.h"
#include "llm170.h"

#define MAX_PROMPTS 64

/* Prints s as the inside of a JSON string literal (UTF-8 passes through; quotes, backslashes and
 * control characters escaped). */
static void json_print_chars(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') printf("\\n");
        else if (c == '\t') printf("\\t");
        else if (c == '\r') printf("\\r");
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
}

/* Log-softmax of the row for token `tok` and the n most likely tokens (best first, ties by lower id),
 * printed as JSON fields. Computed from the raw logits (before sampling), in double for the sum. */
static void print_top_logprobs(const float *row, int n_vocab, int32_t tok, int n) {
    float mx = row[0];
    for (int v = 1; v < n_vocab; v++) mx = row[v] > mx ? row[v] : mx;
    double sum = 0;
    for (int v = 0; v < n_vocab; v++) sum += exp((double)row[v] - mx);
    double lse = mx + log(sum > 0 ? sum : 1); /* sum >= 1: the max's own term */
    int top[64];
    int k = 0;
    for (int v = 0; v < n_vocab; v++) {
        if (k == n && row[v] <= row[top[k - 1]]) continue;
        int j = k < n ? k++ : k - 1;
        while (j > 0 && row[top[j - 1]] < row[v]) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = v;
    }
    printf(", \"logprob\": %.6f, \"top\": [", row[tok] - lse);
    for (int j = 0; j < k; j++) printf("%s[%d, %.6f]", j ? ", " : "", top[j], row[top[j]] - lse);
    putchar(']');
}

/* One JSON line for token tok of sequence p at position pos; last: the sequence's final token (flushes a
 * held partial character). */
static int print_token(llm170_model *model, llm170_detok *detok, int p, int pos, int32_t tok, bool last,
                       const float *logits, int n_top) {
    printf("{\"seq\": %d, \"pos\": %d, \"token\": %d", p, pos, tok);
    if (detok) {
        /* the bytes this token completes; on a sequence's last token also any held partial character (as
         * U+FFFD) */
        const char *piece = "", *tail = "";
        size_t plen = 0, tlen = 0;
        if (llm170_detok_push(detok, tok, &piece, &plen)) {
            fprintf(stderr, "llm170 infer: %s\n", llm170_last_error());
            return -1;
        }
        printf(", \"text\": \"");
        json_print_chars(piece, plen);
        if (last) {
            llm170_detok_flush(detok, &tail, &tlen);
            json_print_chars(tail, tlen);
        }
        putchar('"');
    }
    if (n_top > 0 && logits) print_top_logprobs(logits, llm170_model_n_vocab(model), tok, n_top);
    printf("}\n");
    return 0;
}

/* --spec: the prompts one after another, each through llm170_spec on its own sequence. */
static int infer_spec(llm170_model *model, llm170_context *ctx, spec_cli *sc, int32_t **prompts, const int *lens,
                      int n_prompts, llm170_sampler **samplers, llm170_detok **detok, int n_predict,
                      bool ignore_eos, bool timings) {
    llm170_spec_stats sum = {0};
    double t_prefill = 0, t_decode = 0;
    int n_prefill = 0;
    int32_t out[64];
    for (int p = 0; p < n_prompts; p++) {
        llm170_spec *s = NULL;
        if (llm170_spec_new(ctx, p, &sc->p, &s)) {
            fprintf(stderr, "llm170 infer: %s\n", llm170_last_error());
            return 1;
        }
        double t0 = timer_now();
        int rc = llm170_spec_prompt(s, prompts[p], lens[p]);
        t_prefill += timer_now() - t0;
        n_prefill += lens[p];
        t0 = timer_now();
        for (int done = 0; !rc && done < n_predict;) {
            int cap = n_predict - done < 64 ? n_predict - done : 64;
            int n = llm170_spec_next(s, samplers[p], out, cap);
            if (n < 0) {
                rc = 1;
                break;
            }
            for (int i = 0; i < n && !rc; i++, done++) {
                bool stop = !ignore_eos && llm170_token_is_eog(model, out[i]);
                rc = print_token(model, detok ? detok[p] : NULL, p, lens[p] + done, out[i], stop || done + 1 == n_predict, NULL, 0);
                if (stop) done = n_predict;
            }
            fflush(stdout);
        }
        t_decode += timer_now() - t0;
        if (rc) fprintf(stderr, "llm170 infer: %s\n", llm170_last_error());
        llm170_spec_stats st;
        llm170_spec_get_stats(s, &st);
        llm170_spec_free(s);
        if (rc) return 1;
        spec_cli_stats_add(&sum, &st);
    }
    if (timings) {
        /* the first token of each prompt comes from the prefill's logits: decode rate over the others */
        const int64_t n_dec = sum.tokens - n_prompts;
        fprintf(stderr, "timings: prefill %d tokens in %.3f s (%.1f tok/s); decode %lld tokens in %.3f s (%.2f tok/s)\n",
                n_prefill, t_prefill, n_prefill / t_prefill, (long long)n_dec, t_decode,
                t_decode > 0 ? n_dec / t_decode : 0.0);
        spec_cli_report(stderr, sc, &sum);
    }
    return 0;
}

static void usage(void) {
    fprintf(stderr,
            "usage: llm170 infer --model M (--prompt-tokens 1,2,3 | --prompt TEXT) [...more prompts] [--n-predict N]\n"
            "         [--threads N] [--device D] [--cache-type-k T] [--cache-type-v T] [--ctx-size N] [--batch-size N] [--exact] [--ignore-eos] [--top-logprobs N]\n"
            "         [--timings] %s\n"
            "         [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty X]\n"
            "         [--presence-penalty X] [--frequency-penalty X] [--repeat-last-n N] [--seed N]\n",
            spec_cli_usage());
}

int cmd_infer(int argc, char **argv) {
    const char *path = NULL, *texts[MAX_PROMPTS];
    int n_texts = 0;
    int32_t *prompts[MAX_PROMPTS];
    int lens[MAX_PROMPTS], n_prompts = 0, n_predict = 32, n_ctx = 0, n_batch = 512, n_top = 0, rc = 1, ctk = 0, ctv = 0;
    bool ignore_eos = false, timings = false;
    llm170_model_params mp = llm170_model_default_params();
    mp.n_threads = args_default_threads();
    llm170_sampler_params sp = llm170_sampler_default_params();
    llm170_model *model = NULL;
    llm170_context *ctx = NULL;
    llm170_sampler *samplers[MAX_PROMPTS] = {0};
    llm170_detok *detok[MAX_PROMPTS] = {0};
    spec_cli sc;
    spec_cli_init(&sc);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        bool ok = true;
        if (!strcmp(a, "--exact")) {
            mp.exact = true;
            continue;
        }
        if (!strcmp(a, "--ignore-eos")) {
            ignore_eos = true;
            continue;
        }
        if (!strcmp(a, "--timings")) {
            timings = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            rc = 0;
            goto done;
        }
        if (!(v = args_value("infer", argc, argv, &i))) goto usage_error;
        if (!strcmp(a, "--model") || !strcmp(a, "-m")) path = v;
        else if (!strcmp(a, "--prompt-tokens")) {
            if (n_prompts == MAX_PROMPTS) {
                fprintf(stderr, "llm170 infer: at most %d prompts\n", MAX_PROMPTS);
                goto done;
            }
            ok = args_int_list("infer", a, v, &prompts[n_prompts], &lens[n_prompts]);
            if (ok) n_prompts++;
        } else if (!strcmp(a, "--prompt") || !strcmp(a, "-p")) {
            if (n_prompts + n_texts == MAX_PROMPTS) {
                fprintf(stderr, "llm170 infer: at most %d prompts\n", MAX_PROMPTS);
                goto done;
            }
            texts[n_texts++] = v;
        } else if (!strcmp(a, "--n-predict") || !strcmp(a, "-n")) ok = args_int("infer", a, v, 0, 1 << 24, &n_predict);
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) ok = args_int("infer", a, v, 1, 1024, &mp.n_threads);
        else if (!strcmp(a, "--device")) mp.device = v;
        else if (args_cache_flags("infer", a, v, &ctk, &ctv, &ok) || spec_cli_flag("infer", a, v, &sc, &ok)) {
        }
        else if (!strcmp(a, "--ctx-size") || !strcmp(a, "-c")) ok = args_int("infer", a, v, 1, 1 << 24, &n_ctx);
        else if (!strcmp(a, "--batch-size") || !strcmp(a, "-b")) ok = args_int("infer", a, v, 1, 1 << 20, &n_batch);
        else if (!strcmp(a, "--temp")) ok = args_float("infer", a, v, 0, 100, &sp.temperature);
        else if (!strcmp(a, "--top-k")) ok = args_int("infer", a, v, 0, 1 << 24, &sp.top_k);
        else if (!strcmp(a, "--top-p")) ok = args_float("infer", a, v, 1e-9, 1, &sp.top_p);
        else if (!strcmp(a, "--min-p")) ok = args_float("infer", a, v, 0, 1, &sp.min_p);
        else if (!strcmp(a, "--repeat-penalty")) ok = args_float("infer", a, v, 1e-3, 100, &sp.repeat_penalty);
        else if (!strcmp(a, "--presence-penalty")) ok = args_float("infer", a, v, -100, 100, &sp.presence_penalty);
        else if (!strcmp(a, "--frequency-penalty")) ok = args_float("infer", a, v, -100, 100, &sp.frequency_penalty);
        else if (!strcmp(a, "--repeat-last-n")) ok = args_int("infer", a, v, 0, 1 << 20, &sp.penalty_last_n);
        else if (!strcmp(a, "--seed")) ok = args_u64("infer", a, v, &sp.seed);
        else if (!strcmp(a, "--top-logprobs")) ok = args_int("infer", a, v, 0, 64, &n_top);
        else {
            fprintf(stderr, "llm170 infer: unknown flag '%s'\n", a);
            goto usage_error;
        }
        if (!ok) {
            rc = 2;
            goto done;
        }
    }
    if (!path || n_prompts + n_texts == 0) {
        fprintf(stderr, "llm170 infer: --model and at least one --prompt-tokens or --prompt are required\n");
        goto usage_error;
    }
    if (sc.p.type != LLM170_SPEC_NONE && n_top > 0) {
        fprintf(stderr, "llm170 infer: --top-logprobs is not available with --spec\n");
        goto usage_error;
    }
    if (llm170_model_load(path, &mp, &model) || !spec_cli_load("infer", &sc, &mp)) {
        if (!model) fprintf(stderr, "llm170 infer: %s\n", llm170_last_error());
        goto done;
    }
    for (int i = 0; i < n_texts; i++) {
        size_t n = 0;
        if (llm170_tokenize(model, texts[i], strlen(texts[i]), true, true, &prompts[n_prompts], &n)) {
            fprintf(stderr, "llm170 infer: %s\n", llm170_last_error());
            goto done;
        }
        lens[n_prompts++] = (int)n;
        if (n == 0) {
            fprintf(stderr, "llm170 infer: prompt %d tokenizes to nothing\n", i);
            goto done;
        }
    }
    int longest = 0;
    for (int p = 0; p < n_prompts; p++) longest = lens[p] > longest ? lens[p] : longest;
    if (n_ctx == 0) n_ctx = longest + n_predict;
    if (longest + n_predict > n_ctx) {
        fprintf(stderr, "llm170 infer: a prompt of %d tokens plus %d to generate exceeds the context size %d\n",
                longest, n_predict, n_ctx);
        goto done;
    }
    llm170_context_params cp = {.n_seq = n_prompts, .n_ctx = n_ctx, .n_batch = n_batch, .cache_type_k = ctk,
                                .cache_type_v = ctv};
    if (llm170_context_new(model, &cp, &ctx)) {
        fprintf(stderr, "llm170 infer: %s\n", llm170_last_error());
        goto done;
    }
    bool has_text = llm170_detok_new(model, false, &detok[0]) == 0;
    for (int p = 1; has_text && p < n_prompts; p++) has_text = llm170_detok_new(model, false, &detok[p]) == 0;
    llm170_seq_batch batch[MAX_PROMPTS];
    int32_t next[MAX_PROMPTS];
    bool active[MAX_PROMPTS];
    for (int p = 0; p < n_prompts; p++) {
        llm170_sampler_params spp = sp;
        spp.seed = sp.seed + (uint64_t)p; /* distinct streams per sequence, reproducible from --seed */
        if (llm170_sampler_new(model, &spp, &samplers[p])) {
            fprintf(stderr, "llm170 infer: %s\n", llm170_last_error());
            goto done;
        }
        for (int t = 0; t < lens[p]; t++) llm170_sampler_accept(samplers[p], prompts[p][t]);
        batch[p] = (llm170_seq_batch){.seq = p, .n_tokens = lens[p], .tokens = prompts[p]};
        active[p] = true;
    }
    if (sc.p.type != LLM170_SPEC_NONE) {
        rc = infer_spec(model, ctx, &sc, prompts, lens, n_prompts, samplers, has_text ? detok : NULL, n_predict,
                        ignore_eos, timings);
        goto done;
    }
    int n_batch_seqs = n_prompts, n_prefill = 0, n_decoded = 0;
    for (int p = 0; p < n_prompts; p++) n_prefill += lens[p];
    /* timings: step 0 is the prefill; later steps (a forward pass, the sampler, the output) are decode */
    double t_start = timer_now(), t_prefill = 0, t_sample = 0;
    for (int step = 0; step < n_predict && n_batch_seqs > 0; step++) {
        if (step == 1) t_prefill = timer_now() - t_start;
        if (step > 0) n_decoded += n_batch_seqs;
        if (llm170_decode(ctx, batch, n_batch_seqs)) {
            fprintf(stderr, "llm170 infer: %s\n", llm170_last_error());
            goto done;
        }
        int row = 0, n_next = 0;
        for (int b = 0; b < n_batch_seqs; b++, row++) {
            int p = batch[b].seq;
            const float *logits = llm170_logits(ctx, row);
            double ts = timer_now();
            int32_t tok = llm170_sample(samplers[p], logits);
            t_sample += timer_now() - ts;
            llm170_sampler_accept(samplers[p], tok);
            bool stop = !ignore_eos && llm170_token_is_eog(model, tok);
            if (print_token(model, has_text ? detok[p] : NULL, p, llm170_seq_len(ctx, p), tok,
                            stop || step + 1 == n_predict, logits, n_top))
                goto done;
            if (stop) {
                active[p] = false;
                continue;
            }
            next[p] = tok;
        }
        fflush(stdout);
        for (int p = 0; p < n_prompts; p++)
            if (active[p]) batch[n_next++] = (llm170_seq_batch){.seq = p, .n_tokens = 1, .tokens = &next[p]};
        n_batch_seqs = n_next;
    }
    if (timings) {
        double t_all = timer_now() - t_start, t_decode = t_all - t_prefill;
        if (t_prefill == 0) t_prefill = t_all, t_decode = 0; /* one step: no decode */
        fprintf(stderr, "timings: prefill %d tokens in %.3f s (%.1f tok/s); decode %d tokens in %.3f s (%.2f tok/s); "
                        "sampler %.3f ms per token\n",
                n_prefill, t_prefill, n_prefill / t_prefill, n_decoded, t_decode,
                t_decode > 0 ? n_decoded / t_decode : 0.0,
                1e3 * t_sample / (n_decoded + n_prompts > 0 ? n_decoded + n_prompts : 1));
    }
    rc = 0;
    goto done;
usage_error:
    usage();
    rc = 2;
done:
    for (int p = 0; p < n_prompts; p++) {
        free(prompts[p]);
        llm170_sampler_free(samplers[p]);
        llm170_detok_free(detok[p]);
    }
    llm170_context_free(ctx);
    spec_cli_free(&sc);
    llm170_model_free(model);
    return rc;
}
