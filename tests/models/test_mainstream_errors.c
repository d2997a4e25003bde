/* The llama/qwen2/qwen3/gemma3 loaders on altered copies of the golden fixtures: files they must
 * refuse, each with a message naming the problem (a missing q/k norm, RoPE scaling they do not run,
 * a fused or extra tensor they would otherwise skip, logit soft-capping, a malformed layer pattern),
 * and one they must accept: gemma3's sliding_window_pattern written as a bool array equal to the
 * default period-6 pattern gives the reference logits (the fixture itself exercises the default). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gguf/gguf.h"
#include "llm170.h"
#include "models/refio.h"

typedef struct change {
    const char *drop_tensor;  /* tensor left out */
    const char *dup_tensor;   /* tensor copied ... */
    const char *dup_as;       /* ... under this name */
    const char *str_key, *str_val;
    const char *f32_key;
    float f32_val;
    const char *bools_key;    /* a bool array of n_bools values */
    const bool *bools;
    int n_bools;
} change;

static int rewrite(const char *src, const char *dst, const change *c) {
    err e = {0};
    gguf_file *f = NULL;
    if (gguf_open(&f, src, &e)) return -1;
    gguf_writer *w = gguf_writer_new();
    int rc = 0;
    for (uint64_t i = 0; i < gguf_n_kv(f) && !rc; i++) rc = gguf_writer_set_value(w, gguf_kv_at(f, i)->key, &gguf_kv_at(f, i)->value);
    if (!rc && c->str_key) rc = gguf_writer_set_str(w, c->str_key, c->str_val);
    if (!rc && c->f32_key) rc = gguf_writer_set_f32(w, c->f32_key, c->f32_val);
    if (!rc && c->bools_key) rc = gguf_writer_set_arr(w, c->bools_key, GGUF_BOOL, c->bools, (uint64_t)c->n_bools);
    for (uint64_t i = 0; i < gguf_n_tensors(f) && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (c->drop_tensor && !strcmp(t->name, c->drop_tensor)) continue;
        rc = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &e);
        if (!rc && c->dup_tensor && !strcmp(t->name, c->dup_tensor))
            rc = gguf_writer_add_tensor(w, c->dup_as, t->type, t->n_dims, t->ne, t->data, &e);
    }
    if (!rc) rc = gguf_writer_write(w, dst, &e);
    if (rc) fprintf(stderr, "rewrite: %s\n", e.msg);
    gguf_writer_free(w);
    gguf_close(f);
    return rc;
}

static void expect_error(const char *arch, const char *what, const change *c, const char *tmp, const char *needle1,
                         const char *needle2) {
    char src[128];
    snprintf(src, sizeof src, "tests/models/fixtures/%s-f16.gguf", arch);
    CHECKF(rewrite(src, tmp, c) == 0, "%s: rewrite failed", what);
    llm170_model *m = NULL;
    int rc = llm170_model_load(tmp, NULL, &m);
    const char *msg = llm170_last_error();
    CHECKF(rc != 0 && strstr(msg, needle1) && (!needle2 || strstr(msg, needle2)), "%s: rc %d, message '%s'", what,
           rc, msg);
    printf("%-26s -> %s\n", what, rc ? msg : "(loaded)");
    llm170_model_free(m);
}

/* gemma3 with an explicit pattern array equal to the default: one pass over the reference tokens. */
static void pattern_array_matches_reference(const char *tmp) {
    bool pattern[6] = {true, true, true, true, true, false};
    change c = {.bools_key = "gemma3.attention.sliding_window_pattern", .bools = pattern, .n_bools = 6};
    CHECK(rewrite("tests/models/fixtures/gemma3-f16.gguf", tmp, &c) == 0);
    ref_file r;
    if (ref_read(&r, "tests/models/fixtures/gemma3.ref")) {
        CHECKF(0, "cannot read gemma3.ref");
        return;
    }
    llm170_model *m = NULL;
    llm170_model_params mp = {.n_threads = 2, .exact = true};
    llm170_context *ctx = NULL;
    llm170_context_params cp = {.n_seq = 1, .n_ctx = 128, .n_batch = 512, .cache_type_k = LLM170_CACHE_F32,
                                .cache_type_v = LLM170_CACHE_F32}; /* the golden test's f32 expectations */
    int N = (int)(r.n_prompt + r.n_gen), V = (int)r.n_vocab;
    if (llm170_model_load(tmp, &mp, &m) || llm170_context_new(m, &cp, &ctx)) {
        CHECKF(0, "pattern array: %s", llm170_last_error());
    } else {
        llm170_seq_batch all = {.seq = 0, .n_tokens = N, .tokens = r.tokens, .all_logits = true};
        CHECK(llm170_decode(ctx, &all, 1) == 0);
        float worst = 0;
        for (int t = 0; t < N; t++) {
            const float *ours = llm170_logits(ctx, t), *ref = r.logits + (size_t)t * V;
            float num = 0, den = 0;
            for (int i = 0; i < V; i++) num = fmaxf(num, fabsf(ours[i] - ref[i])), den = fmaxf(den, fabsf(ref[i]));
            worst = fmaxf(worst, num / den);
        }
        printf("%-26s -> loads; logits max rel err %.2e\n", "gemma3 pattern as array", worst);
        CHECKF(worst <= 1e-4f, "gemma3 with an explicit default pattern: logits error %g", worst);
    }
    llm170_context_free(ctx);
    llm170_model_free(m);
    ref_free(&r);
}

int main(void) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, "/tmp/llm170-mainstream-errors-%d.gguf", (int)getpid());
    expect_error("qwen3", "qwen3 without a k norm", &(change){.drop_tensor = "blk.1.attn_k_norm.weight"}, tmp,
                 "blk.1.attn_k_norm.weight", "missing");
    expect_error("llama", "llama with yarn scaling", &(change){.str_key = "llama.rope.scaling.type", .str_val = "yarn"},
                 tmp, "yarn", "supported: none, linear");
    expect_error("qwen2", "qwen2 with a fused qkv", &(change){.dup_tensor = "blk.0.attn_q.weight", .dup_as = "blk.0.attn_qkv.weight"},
                 tmp, "blk.0.attn_qkv.weight", "not supported");
    expect_error("llama", "llama with an ffn bias", &(change){.dup_tensor = "blk.2.ffn_norm.weight", .dup_as = "blk.2.ffn_down.bias"},
                 tmp, "blk.2.ffn_down.bias", "not supported");
    expect_error("gemma3", "gemma3 with soft-capping",
                 &(change){.f32_key = "gemma3.final_logit_softcapping", .f32_val = 30.0f}, tmp, "final_logit_softcapping",
                 "not supported");
    bool short_pattern[3] = {true, true, false};
    expect_error("gemma3", "gemma3 pattern too short",
                 &(change){.bools_key = "gemma3.attention.sliding_window_pattern", .bools = short_pattern, .n_bools = 3},
                 tmp, "sliding_window_pattern", "one per layer");
    pattern_array_matches_reference(tmp);
    unlink(tmp);
    return check_report("test_mainstream_errors");
}
