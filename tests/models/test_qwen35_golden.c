/* Golden test against an outside reference: tiny random Qwen3.5 models (qwen35 and qwen35moe) built with
 * HF transformers, converted to GGUF by llama.cpp's own convert_hf_to_gguf.py (F16, Q8_0) and
 * llama-quantize (Q4_K_M); reference = transformers' float32 logits at every position of a 64-token
 * prompt and its 32-token greedy continuation, plus two prompts decoded as a batch and the MTP block's
 * logits (the MTP reference is our own plain-torch code from the spec: transformers has no MTP).
 * Fixtures and how to regenerate them: tests/models/README.md.
 *
 * Error measure: per position, max_i |ours_i - ref_i| / max_i |ref_i|; the worst position is reported.
 * Tolerances: on the exact path (weights dequantized to f32, f32 activations) 1e-4 for every file (the
 * issue's bound for F16; for Q8_0 / Q4_K_M files the reference is transformers on the same dequantized
 * weights, so the same bound applies). On the fast path (activations quantized to Q8 / rounded to F16 for
 * the dot products, as llama.cpp pairs them): 1e-2 for F16; for the quantized files the values of
 * qwen35_tol.h, derived from the error's distribution over 100 random prompts and checked on 16 of them
 * by test_qwen35_tolerance (int8 activations; in the MoE model they also flip near-tied router choices at
 * a few positions, which moves those positions' logits by ~0.1-0.3). The greedy stream must equal the reference token for token on the
 * exact path; on the fast path it must too, or else diverge only at a near tie (our token in the
 * reference's top 6 and its logprob within 1.5 nats of the reference's top 1: LESSONS.md's rule). Batch and MTP checks run on the F16 files
 * (their references use the float weights).
 * KV cache types: the cases above run with an f32 cache (their tolerances assume f32 keys and values);
 * the F16 files' fast path also runs with an f16 cache under its 1e-2 (f16 keys / values are rounded by
 * 2^-11, the rounding the F16 dot products already apply to every activation) and with a q8_0 cache
 * under 2e-2 (keys / values rounded to half a step of amax/127 per 32, as q8 activations are: a second
 * source of that rounding). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "llm170.h"
#include "models/qwen35_tol.h"
#include "models/refio.h"

typedef struct golden_case {
    const char *arch, *quant;
    bool exact;
    float tol;
    int cache; /* enum llm170_cache_type of K and V */
} golden_case;

#define F32 LLM170_CACHE_F32
static const golden_case cases[] = {
    {"qwen35", "f16", true, 1e-4f, F32},      {"qwen35", "f16", false, 1e-2f, F32},
    {"qwen35", "q8_0", true, 1e-4f, F32},     {"qwen35", "q8_0", false, QWEN35_TOL_FAST_Q8_0, F32},
    {"qwen35", "q4_k_m", true, 1e-4f, F32},   {"qwen35", "q4_k_m", false, QWEN35_TOL_FAST_Q4_K_M, F32},
    {"qwen35moe", "f16", true, 1e-4f, F32},   {"qwen35moe", "f16", false, 1e-2f, F32},
    {"qwen35moe", "q8_0", true, 1e-4f, F32},  {"qwen35moe", "q8_0", false, QWEN35MOE_TOL_FAST_Q8_0, F32},
    {"qwen35moe", "q4_k_m", true, 1e-4f, F32}, {"qwen35moe", "q4_k_m", false, QWEN35MOE_TOL_FAST_Q4_K_M, F32},
    {"qwen35", "f16", false, 1e-2f, LLM170_CACHE_F16}, {"qwen35moe", "f16", false, 1e-2f, LLM170_CACHE_F16},
    {"qwen35", "f16", false, 2e-2f, LLM170_CACHE_Q8_0}, {"qwen35moe", "f16", false, 2e-2f, LLM170_CACHE_Q8_0},
};

static void run_case(const golden_case *gc, const ref_file *r) {
    char path[256];
    snprintf(path, sizeof path, "tests/models/fixtures/%s-%s.gguf", gc->arch, gc->quant);
    llm170_model *m = NULL;
    llm170_model_params mp = {.n_threads = 2, .exact = gc->exact};
    if (llm170_model_load(path, &mp, &m)) {
        CHECKF(0, "%s: %s", path, llm170_last_error());
        return;
    }
    int V = (int)r->n_vocab, P = (int)r->n_prompt, G = (int)r->n_gen, N = P + G;
    CHECK(llm170_model_n_vocab(m) == V);
    /* F16 files are compared with the float model; quantized files with transformers run on the file's own
     * dequantized weights (records "<quant>.tokens" / "<quant>.logits"). */
    bool f16 = !strcmp(gc->quant, "f16");
    const int32_t *ref_tokens = r->tokens;
    const float *ref_logits = r->logits;
    if (!f16) {
        char name[64];
        snprintf(name, sizeof name, "%s.tokens", gc->quant);
        const ref_record *rt = ref_find(r, name);
        snprintf(name, sizeof name, "%s.logits", gc->quant);
        const ref_record *rl = ref_find(r, name);
        if (!rt || !rl || rt->dims[0] != (uint32_t)N || rl->dims[0] != (uint32_t)N) {
            CHECKF(0, "%s: reference records for %s missing", gc->arch, gc->quant);
            llm170_model_free(m);
            return;
        }
        ref_tokens = rt->data;
        ref_logits = rl->data;
    }
    llm170_context *c = NULL;
    llm170_context_params cp = {.n_seq = 2, .n_ctx = 128, .n_batch = 512, .cache_type_k = gc->cache,
                                .cache_type_v = gc->cache};
    CHECK(llm170_context_new(m, &cp, &c) == 0);

    /* 1. logits at every position of prompt + reference stream, one pass */
    llm170_seq_batch all = {.seq = 0, .n_tokens = N, .tokens = ref_tokens, .all_logits = true};
    CHECK(llm170_decode(c, &all, 1) == 0);
    float worst = 0;
    int worst_at = 0, n_over = 0;
    for (int t = 0; t < N; t++) {
        float e = ref_row_err(llm170_logits(c, t), ref_logits + (size_t)t * V, V);
        if (!(e <= worst)) worst = e, worst_at = t;
        n_over += !(e <= 1e-2f);
    }
    /* 2. MTP: row t = (our final-normed hidden at t, token t+1) vs the reference MTP logits */
    const ref_record *mtp = ref_find(r, "mtp.logits");
    float mtp_worst = 0;
    if (!f16) {
        /* the MTP and batch references use the float weights */
    } else if (mtp && mtp->dims[0] == (uint32_t)(N - 1)) {
        int n = N - 1, C = llm170_model_n_embd(m);
        float *hid = malloc(sizeof(float) * (size_t)n * C), *ml = malloc(sizeof(float) * (size_t)n * V);
        for (int t = 0; t < n; t++) memcpy(hid + (size_t)t * C, llm170_hidden(c, t), sizeof(float) * C);
        CHECKF(llm170_mtp_decode(c, 1, hid, r->tokens + 1, n, ml) == 0, "mtp: %s", llm170_last_error());
        for (int t = 0; t < n; t++) {
            float e = ref_row_err(ml + (size_t)t * V, (const float *)mtp->data + (size_t)t * V, V);
            if (!(e <= mtp_worst)) mtp_worst = e;
        }
        free(hid);
        free(ml);
    } else {
        CHECKF(0, "%s: mtp.logits record missing or of the wrong size", gc->arch);
    }
    /* 3. greedy: prefill the prompt, then 32 greedy steps */
    llm170_seq_reset(c, 0);
    llm170_sampler *s = NULL;
    CHECK(llm170_sampler_new(m, NULL, &s) == 0);
    llm170_seq_batch b = {.seq = 0, .n_tokens = P, .tokens = ref_tokens};
    int first_diff = -1;
    float tie_gap = 0;
    int tie_rank = 0;
    int32_t tok = 0;
    for (int i = 0; i < G; i++) {
        CHECK(llm170_decode(c, &b, 1) == 0);
        tok = llm170_sample(s, llm170_logits(c, 0));
        if (tok != ref_tokens[P + i] && first_diff < 0) {
            first_diff = i;
            /* near-tie measure on the reference's logits at this position */
            const float *rl = ref_logits + (size_t)(P - 1 + i) * V;
            tie_gap = rl[ref_tokens[P + i]] - rl[tok]; /* logit gap == logprob gap */
            for (int v = 0; v < V; v++) tie_rank += rl[v] > rl[tok];
        }
        tok = ref_tokens[P + i]; /* keep following the reference stream */
        b = (llm170_seq_batch){.seq = 0, .n_tokens = 1, .tokens = &tok};
    }
    /* 4. two other prompts as one batch of two sequences */
    float batch_worst = 0;
    const ref_record *bt[2] = {ref_find(r, "batch0.tokens"), ref_find(r, "batch1.tokens")};
    const ref_record *bl[2] = {ref_find(r, "batch0.logits"), ref_find(r, "batch1.logits")};
    if (!f16) {
        /* float-weight reference only */
    } else if (bt[0] && bt[1] && bl[0] && bl[1]) {
        llm170_seq_reset(c, 0);
        llm170_seq_batch two[2];
        for (int q = 0; q < 2; q++)
            two[q] = (llm170_seq_batch){.seq = q, .n_tokens = (int)bt[q]->dims[0], .tokens = bt[q]->data, .all_logits = true};
        CHECK(llm170_decode(c, two, 2) == 0);
        for (int q = 0, row = 0; q < 2; q++)
            for (uint32_t t = 0; t < bt[q]->dims[0]; t++, row++) {
                float e = ref_row_err(llm170_logits(c, row), (const float *)bl[q]->data + (size_t)t * V, V);
                if (!(e <= batch_worst)) batch_worst = e;
            }
    } else {
        CHECKF(0, "%s: batch records missing from the reference", gc->arch);
    }
    printf("%-9s %-6s %-5s logits max rel err %.2e (pos %d)", gc->arch, gc->quant, gc->exact ? "exact" : "fast",
           worst, worst_at);
    if (f16) printf(" | batch %.2e | mtp %.2e", batch_worst, mtp_worst);
    printf(" | greedy %s", first_diff < 0 ? "identical" : "DIFFERS");
    if (first_diff >= 0) printf(" at step %d (rank %d in the reference, gap %.3f nats)", first_diff, tie_rank, tie_gap);
    printf(" | %d/%d rows > 1e-2 | cache %s | tol %.2g\n", n_over, N,
           gc->cache == LLM170_CACHE_F32 ? "f32" : gc->cache == LLM170_CACHE_F16 ? "f16" : "q8_0", gc->tol);
    CHECKF(mtp_worst <= gc->tol, "%s %s: MTP logits error %g > %g", gc->arch, gc->quant, mtp_worst, gc->tol);
    CHECKF(worst <= gc->tol, "%s %s: logits error %g > %g", gc->arch, gc->quant, worst, gc->tol);
    CHECKF(batch_worst <= gc->tol, "%s %s: batch error %g > %g", gc->arch, gc->quant, batch_worst, gc->tol);
    bool near_tie = first_diff >= 0 && !gc->exact && tie_rank < 6 && tie_gap < 1.5f;
    CHECKF(first_diff < 0 || near_tie, "%s %s %s: greedy stream differs at step %d (rank %d, gap %.3f)", gc->arch,
           gc->quant, gc->exact ? "exact" : "fast", first_diff, tie_rank, tie_gap);
    llm170_sampler_free(s);
    llm170_context_free(c);
    llm170_model_free(m);
}

int main(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "tests/models/fixtures/%s.ref", cases[i].arch);
        ref_file r;
        if (ref_read(&r, path)) {
            CHECKF(0, "cannot read %s", path);
            continue;
        }
        run_case(&cases[i], &r);
        ref_free(&r);
    }
    return check_report("test_qwen35_golden");
}
