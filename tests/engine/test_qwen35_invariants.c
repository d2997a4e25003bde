/* Engine invariants on tiny random qwen35 / qwen35moe models (made with synth, F32 and Q8_0 weights):
 *  - a prompt prefilled in chunks of 1, 16, 63 and 64 tokens gives the logits of one pass (up to the GDN
 *    step-vs-chunk rounding: stated tolerance), and so does prefill followed by token-by-token decode;
 *  - a batch of sequences gives bit-identical logits to each sequence alone (rows never mix);
 *  - bad input is refused: token out of range, context overflow, a sequence twice in a batch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"
#include "check.h"
#include "llm170.h"
#include "synth_model.h"

/* Max |diff| / max |logit| allowed between chunkings. With F32 weights activations stay f32 and the only
 * difference is the GDN step-vs-chunk rounding (~1e-6). With quantized weights activations are quantized
 * to Q8 per row; a rounding difference of 1e-7 can move one int8 step, and the recurrent state carries
 * that step to every later position (measured ~1e-2 of the logit range on these noise models), so the
 * bound there is looser. A wrong chunk boundary or a state bug gives O(1) differences. */
#define TOL_F32 2e-5f
/* TOL_QUANT and TOL_QUANT_MOE: 1.5x the largest difference over 12 model seeds (LLM170_QWEN35_SEEDS=12,
 * AVX2: qwen35 Q8_0 mean 1.64e-2, max 2.26e-2; qwen35moe Q8_0 mean 5.80e-2, max 1.29e-1); the earlier
 * 3e-2 and 0.15 were fitted to seed 7 alone and left 1.3x and 1.16x of margin over these 12. */
#define TOL_QUANT 3.5e-2f
/* With quantized experts, such a step can also flip a token's top-k choice between two near-equal router
 * scores, and that token's FFN output then changes by the difference of two experts (the golden test
 * sees 0.11 against transformers for the same reason). Measured up to 7e-2 here (chunks of 1, with
 * row-by-row kernels throughout, as much as with the int8 products); a state or boundary bug still gives
 * O(1). */
#define TOL_QUANT_MOE 0.2f

static float rel_diff(const float *a, const float *b, int n) {
    float num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (d > num || d != d) num = d != d ? INFINITY : d;
        if (fabsf(b[i]) > den) den = fabsf(b[i]);
    }
    return num / (den > 0 ? den : 1);
}

/* Prefills tokens[0..n) into sequence 0 of a fresh context with batch size n_batch; out gets n rows. */
static int prefill(llm170_model *m, const int32_t *tokens, int n, int n_batch, float *out) {
    llm170_context *c = NULL;
    llm170_context_params cp = {.n_seq = 1, .n_ctx = n + 8, .n_batch = n_batch, .cache_type_k = LLM170_CACHE_F32,
                                .cache_type_v = LLM170_CACHE_F32};
    if (llm170_context_new(m, &cp, &c)) return -1;
    llm170_seq_batch b = {.seq = 0, .n_tokens = n, .tokens = tokens, .all_logits = true};
    int rc = llm170_decode(c, &b, 1);
    int V = llm170_model_n_vocab(m);
    for (int i = 0; !rc && i < n; i++) memcpy(out + (size_t)i * V, llm170_logits(c, i), sizeof(float) * V);
    llm170_context_free(c);
    return rc;
}

/* The last row's logits of tokens[0..n) prefilled alone, asking for the last row only (as the batch below
 * does: a prompt's output rows go through the LM head's bulk kernels only when all of them are asked for,
 * so the last row of an all-rows prefill may differ from this in the last bits). */
static int prefill_last(llm170_model *m, const int32_t *tokens, int n, float *out) {
    llm170_context *c = NULL;
    llm170_context_params cp = {.n_seq = 1, .n_ctx = n + 8, .n_batch = 512, .cache_type_k = LLM170_CACHE_F32,
                                .cache_type_v = LLM170_CACHE_F32};
    if (llm170_context_new(m, &cp, &c)) return -1;
    llm170_seq_batch b = {.seq = 0, .n_tokens = n, .tokens = tokens, .all_logits = false};
    int rc = llm170_decode(c, &b, 1);
    if (!rc) memcpy(out, llm170_logits(c, 0), sizeof(float) * (size_t)llm170_model_n_vocab(m));
    llm170_context_free(c);
    return rc;
}

/* The largest chunking / decode difference check_model saw (for LLM170_QWEN35_SEEDS). */
static float seen_max;

static void check_model(const char *preset, const char *mix, int n_threads, uint64_t seed) {
    float TOL = !strcmp(mix, "f32") ? TOL_F32 : strstr(preset, "moe") ? TOL_QUANT_MOE : TOL_QUANT;
    seen_max = 0;
    llm170_model *m = synth_model_load(preset, mix, seed, n_threads);
    if (!m) return;
    int V = llm170_model_n_vocab(m), T = 130;
    int32_t tok[600];
    rng r;
    rng_seed(&r, seed == 7 ? 1 : seed);
    for (int i = 0; i < 600; i++) tok[i] = (int32_t)(rng_u64(&r) % (uint64_t)V);
    float *ref = malloc(sizeof(float) * (size_t)T * V), *got = malloc(sizeof(float) * (size_t)T * V);
    CHECK(prefill(m, tok, T, 512, ref) == 0);
    int chunks[] = {1, 16, 63, 64};
    for (int i = 0; i < 4; i++) {
        CHECK(prefill(m, tok, T, chunks[i], got) == 0);
        float d = rel_diff(got, ref, T * V);
        printf("%s %s threads=%d: prefill in chunks of %2d vs one pass: max rel diff %.2e\n", preset, mix, n_threads,
               chunks[i], d);
        CHECKF(d < TOL, "%s chunk %d: %g", preset, chunks[i], d);
        if (d > seen_max) seen_max = d;
    }
    /* chunks of 512 need a longer prompt: 600 tokens in one pass vs 512 + 88 */
    {
        float *r600 = malloc(sizeof(float) * 600 * (size_t)V), *g600 = malloc(sizeof(float) * 600 * (size_t)V);
        CHECK(prefill(m, tok, 600, 1024, r600) == 0);
        CHECK(prefill(m, tok, 600, 512, g600) == 0);
        float d = rel_diff(g600, r600, 600 * V);
        printf("%s %s threads=%d: prefill of 600 in chunks of 512 vs one pass: max rel diff %.2e\n", preset, mix,
               n_threads, d);
        CHECKF(d < TOL, "%s chunk 512: %g", preset, d);
        if (d > seen_max) seen_max = d;
        free(r600);
        free(g600);
    }
    /* batch of three sequences vs each alone (bit-exact) */
    llm170_context *c = NULL;
    llm170_context_params cp = {.n_seq = 3, .n_ctx = 256, .n_batch = 512, .cache_type_k = LLM170_CACHE_F32,
                                .cache_type_v = LLM170_CACHE_F32};
    CHECK(llm170_context_new(m, &cp, &c) == 0);
    int lens[3] = {130, 50, 7};
    llm170_seq_batch b[3];
    for (int s = 0; s < 3; s++) b[s] = (llm170_seq_batch){.seq = s, .n_tokens = lens[s], .tokens = tok + s, .all_logits = false};
    CHECK(llm170_decode(c, b, 3) == 0);
    for (int s = 0; s < 3; s++) {
        CHECK(prefill_last(m, tok + s, lens[s], got) == 0);
        const float *row = llm170_logits(c, s);
        CHECKF(row && memcmp(row, got, sizeof(float) * V) == 0,
               "%s: sequence %d in a batch differs from alone", preset, s);
    }
    /* then decode one token for sequences 0 and 2 together, compare with a one-pass prefill */
    int32_t nxt[2] = {5, 9};
    llm170_seq_batch d2[2] = {{.seq = 0, .n_tokens = 1, .tokens = &nxt[0]}, {.seq = 2, .n_tokens = 1, .tokens = &nxt[1]}};
    CHECK(llm170_decode(c, d2, 2) == 0);
    int32_t seq2[8];
    memcpy(seq2, tok + 2, sizeof(int32_t) * 7);
    seq2[7] = 9;
    CHECK(prefill(m, seq2, 8, 512, got) == 0);
    float d = rel_diff(llm170_logits(c, 1), got + (size_t)7 * V, V);
    printf("%s %s: decode step after a batched prefill vs one pass: max rel diff %.2e\n", preset, mix, d);
    CHECKF(d < TOL, "%s decode vs prefill: %g", preset, d);
    if (d > seen_max) seen_max = d;
    /* bad input */
    int32_t bad = V;
    llm170_seq_batch bb = {.seq = 1, .n_tokens = 1, .tokens = &bad};
    CHECK(llm170_decode(c, &bb, 1) != 0 && strstr(llm170_last_error(), "outside the vocabulary"));
    llm170_seq_batch twice[2] = {{.seq = 1, .n_tokens = 1, .tokens = nxt}, {.seq = 1, .n_tokens = 1, .tokens = nxt}};
    CHECK(llm170_decode(c, twice, 2) != 0 && strstr(llm170_last_error(), "twice"));
    CHECK(llm170_seq_len(c, 1) == 50); /* refused batches do not advance */
    int32_t *many = calloc(300, sizeof(int32_t));
    llm170_seq_batch big = {.seq = 1, .n_tokens = 300, .tokens = many};
    CHECK(llm170_decode(c, &big, 1) != 0 && strstr(llm170_last_error(), "exceed the context size"));
    free(many);
    llm170_context_free(c);
    free(ref);
    free(got);
    llm170_model_free(m);
}

/* LLM170_QWEN35_SEEDS=N: the largest difference per model seed 1..N, for the quantized models (the
 * measurement behind TOL_QUANT and TOL_QUANT_MOE). */
static void measure_seeds(int n) {
    const char *presets[] = {"tiny-qwen35", "tiny-qwen35moe"};
    for (int p = 0; p < 2; p++) {
        float mx = 0, sum = 0;
        for (int k = 1; k <= n; k++) {
            check_model(presets[p], "q8_0", 2, (uint64_t)k);
            printf("SEED %s %d %.3e\n", presets[p], k, seen_max);
            sum += seen_max;
            if (seen_max > mx) mx = seen_max;
        }
        printf("%s q8_0 over %d model seeds: largest difference mean %.3e, max %.3e\n", presets[p], n, sum / n, mx);
    }
}

int main(void) {
    const char *env = getenv("LLM170_QWEN35_SEEDS");
    if (env && atoi(env) > 0) {
        measure_seeds(atoi(env));
        return check_report("test_qwen35_invariants");
    }
    check_model("tiny-qwen35", "f32", 1, 7);
    check_model("tiny-qwen35", "q8_0", 2, 7);
    check_model("tiny-qwen35moe", "f32", 2, 7);
    check_model("tiny-qwen35moe", "q8_0", 2, 7); /* quantized experts: bulk rows per (sequence, expert) */
    return check_report("test_qwen35_invariants");
}
