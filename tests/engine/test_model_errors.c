/* The loader refuses bad models with a message naming the problem: a missing tensor, a tensor of the
 * wrong shape, a type an op cannot use, an unsupported architecture, a missing hyperparameter, a qwen4exp
 * MTP block (no reference we can run has one: docs/qwen4exp.md). Each case rewrites a tiny synth model through
 * the GGUF reader and writer with one thing changed.
 * And what it accepts by converting: a qwen4exp ple_conv1d stored as F16 or BF16 (as llama-quantize leaves
 * it) is widened to F32 at load. The file's logits must equal, bit for bit, those of the F32 file whose taps
 * hold the same rounded values (the widening is exact and the same op runs on the same floats), and stay
 * near the unrounded F32 file's (the taps' rounding, 2^-9 / 2^-8 relative, is all that differs; printed,
 * with a bound of 1e-2 of the largest logit, well above what a 4-tap rounding moves and well below what a
 * wrong or misplaced tap does). Any other type is refused, naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <math.h>

#include "base/fp16.h"
#include "check.h"
#include "gguf/gguf.h"
#include "llm170.h"
#include "synth/synth.h"

/* Copies src to dst, dropping tensor `drop` and key `drop_key`, giving tensor `reshape` the shape {n}
 * (data truncated) and overriding general.architecture with `arch` (each may be NULL). */
static int rewrite(const char *src, const char *dst, const char *drop, const char *reshape, int64_t n,
                   const char *drop_key, const char *arch) {
    err e = {0};
    gguf_file *f = NULL;
    if (gguf_open(&f, src, &e)) return -1;
    gguf_writer *w = gguf_writer_new();
    int rc = 0;
    for (uint64_t i = 0; i < gguf_n_kv(f) && !rc; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (drop_key && !strcmp(kv->key, drop_key)) continue;
        if (arch && !strcmp(kv->key, "general.architecture")) rc = gguf_writer_set_str(w, kv->key, arch);
        else rc = gguf_writer_set_value(w, kv->key, &kv->value);
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f) && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (drop && !strcmp(t->name, drop)) continue;
        if (reshape && !strcmp(t->name, reshape)) {
            int64_t ne[1] = {n};
            rc = gguf_writer_add_tensor(w, t->name, t->type, 1, ne, t->data, &e);
        } else {
            rc = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &e);
        }
    }
    if (!rc) rc = gguf_writer_write(w, dst, &e);
    if (rc) fprintf(stderr, "rewrite: %s\n", e.msg);
    gguf_writer_free(w);
    gguf_close(f);
    return rc;
}

/* Copies a qwen4exp src to dst with qwen4exp.nextn_predict_layers = nextn and block_count grown by it, as a
 * converter keeping the MTP block writes them (the block's tensors are not needed: the key is refused
 * before any tensor is bound). */
static int rewrite_nextn(const char *src, const char *dst, uint32_t nextn) {
    err e = {0};
    gguf_file *f = NULL;
    if (gguf_open(&f, src, &e)) return -1;
    gguf_writer *w = gguf_writer_new();
    int rc = 0;
    for (uint64_t i = 0; i < gguf_n_kv(f) && !rc; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!strcmp(kv->key, "qwen4exp.block_count")) rc = gguf_writer_set_u32(w, kv->key, kv->value.v.u32 + nextn);
        else rc = gguf_writer_set_value(w, kv->key, &kv->value);
    }
    if (!rc) rc = gguf_writer_set_u32(w, "qwen4exp.nextn_predict_layers", nextn);
    for (uint64_t i = 0; i < gguf_n_tensors(f) && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        rc = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &e);
    }
    if (!rc) rc = gguf_writer_write(w, dst, &e);
    if (rc) fprintf(stderr, "rewrite_nextn: %s\n", e.msg);
    gguf_writer_free(w);
    gguf_close(f);
    return rc;
}

/* Copies a qwen4exp src (its ple_conv1d F32) to dst with the ple_conv1d taps rounded through `round` (F16,
 * BF16, or F32: unrounded) and stored as `store` (F16, BF16, F32, or I32 for a type the loader refuses). */
static int rewrite_ple_conv(const char *src, const char *dst, enum qtype round, enum qtype store) {
    err e = {0};
    gguf_file *f = NULL;
    if (gguf_open(&f, src, &e)) return -1;
    gguf_writer *w = gguf_writer_new();
    int rc = 0, found = 0;
    for (uint64_t i = 0; i < gguf_n_kv(f) && !rc; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        rc = gguf_writer_set_value(w, kv->key, &kv->value);
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f) && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        const char *sfx = strstr(t->name, ".ple_conv1d.weight");
        if (!sfx || t->type != QT_F32) {
            rc = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &e);
            continue;
        }
        const int64_t n = t->n_elements;
        void *conv = malloc(4 * (size_t)n);
        found++;
        for (int64_t k = 0; k < n; k++) {
            float v;
            memcpy(&v, (const char *)t->data + 4 * k, 4);
            if (round == QT_F16) v = fp16_to_f32(fp16_from_f32(v));
            if (round == QT_BF16) v = bf16_to_f32(bf16_from_f32(v));
            if (store == QT_F16) ((uint16_t *)conv)[k] = fp16_from_f32(v);
            else if (store == QT_BF16) ((uint16_t *)conv)[k] = bf16_from_f32(v);
            else if (store == QT_I32) ((int32_t *)conv)[k] = (int32_t)(v * 1000.0f);
            else ((float *)conv)[k] = v;
        }
        rc = gguf_writer_add_tensor(w, t->name, store, t->n_dims, t->ne, conv, &e); /* copies the data */
        free(conv);
    }
    if (!rc && !found) rc = err_set(&e, ERR_FORMAT, "no F32 ple_conv1d in %s", src);
    if (!rc) rc = gguf_writer_write(w, dst, &e);
    if (rc) fprintf(stderr, "rewrite_ple_conv: %s\n", e.msg);
    gguf_writer_free(w);
    gguf_close(f);
    return rc;
}

#define PLE_TOKENS 12

/* The logits of all PLE_TOKENS positions of a fixed prompt ([PLE_TOKENS][n_vocab], malloc'd), or NULL. */
static float *prompt_logits(const char *path, int *n_vocab) {
    llm170_model *m = NULL;
    if (llm170_model_load(path, NULL, &m)) {
        CHECKF(0, "load %s: %s", path, llm170_last_error());
        return NULL;
    }
    llm170_context *c = NULL;
    llm170_context_params cp = llm170_context_default_params();
    cp.n_ctx = 64;
    float *out = NULL;
    if (!llm170_context_new(m, &cp, &c)) {
        int32_t toks[PLE_TOKENS];
        for (int i = 0; i < PLE_TOKENS; i++) toks[i] = 17 + 61 * i; /* ordinary tokens of the tiny vocab */
        const llm170_seq_batch b = {.seq = 0, .n_tokens = PLE_TOKENS, .tokens = toks, .all_logits = true};
        *n_vocab = llm170_model_n_vocab(m);
        if (!llm170_decode(c, &b, 1)) {
            out = malloc(sizeof(float) * (size_t)PLE_TOKENS * (size_t)*n_vocab);
            for (int i = 0; i < PLE_TOKENS; i++)
                memcpy(out + (size_t)i * *n_vocab, llm170_logits(c, i), sizeof(float) * (size_t)*n_vocab);
        }
    }
    CHECKF(out != NULL, "decode %s: %s", path, llm170_last_error());
    llm170_context_free(c);
    llm170_model_free(m);
    return out;
}

/* ple_conv1d stored as `store` (F16 / BF16) loads, widened: logits as described in the header. */
static void check_ple_conv_widened(const char *f32_path, const char *tmp, const char *tmp_ref,
                                   enum qtype store) {
    const char *name = qtype_get((uint32_t)store)->name;
    CHECK(rewrite_ple_conv(f32_path, tmp, store, store) == 0);
    CHECK(rewrite_ple_conv(f32_path, tmp_ref, store, QT_F32) == 0);
    int nv = 0, nv_ref = 0, nv_f32 = 0;
    float *got = prompt_logits(tmp, &nv), *ref = prompt_logits(tmp_ref, &nv_ref);
    float *f32 = prompt_logits(f32_path, &nv_f32);
    if (got && ref && f32 && nv == nv_ref && nv == nv_f32) {
        const size_t n = (size_t)PLE_TOKENS * (size_t)nv;
        CHECKF(memcmp(got, ref, sizeof(float) * n) == 0,
               "%s ple_conv1d: logits differ from the F32 file with the same rounded taps", name);
        double dmax = 0.0, lmax = 0.0;
        for (size_t i = 0; i < n; i++) {
            dmax = fmax(dmax, fabs((double)got[i] - (double)f32[i]));
            lmax = fmax(lmax, fabs((double)f32[i]));
        }
        CHECKF(dmax <= 1e-2 * lmax, "%s ple_conv1d: max |logit - F32 file's| %.3g > 1e-2 * %.3g", name, dmax, lmax);
        printf("%-22s -> loads (widened); logits %s the rounded-F32 file's; max |diff| vs the F32 file %.3g "
               "(max |logit| %.3g)\n", name, memcmp(got, ref, sizeof(float) * n) ? "!=" : "==", dmax, lmax);
    }
    free(got), free(ref), free(f32);
}

static void expect_load_error(const char *path, const char *what, const char *needle1, const char *needle2) {
    llm170_model *m = NULL;
    int rc = llm170_model_load(path, NULL, &m);
    const char *msg = llm170_last_error();
    CHECKF(rc != 0 && strstr(msg, needle1) && (!needle2 || strstr(msg, needle2)), "%s: rc %d, message '%s'", what,
           rc, msg);
    printf("%-22s -> %s\n", what, msg);
    llm170_model_free(m);
}

int main(void) {
    char base[64], bad[64];
    snprintf(base, sizeof base, "/tmp/llm170-model-errors-%d.gguf", (int)getpid());
    snprintf(bad, sizeof bad, "/tmp/llm170-model-errors-%d-bad.gguf", (int)getpid());
    err e = {0};
    int rc = synth_write(synth_preset_find("tiny-qwen35"), synth_mix_from_name("f32"), 3, base, NULL, NULL, &e);
    CHECKF(rc == 0, "synth: %s", e.msg);
    llm170_model *m = NULL;
    CHECKF(llm170_model_load(base, NULL, &m) == 0, "the unmodified model loads: %s", llm170_last_error());
    llm170_model_free(m);

    CHECK(rewrite(base, bad, "blk.1.ssm_a", NULL, 0, NULL, NULL) == 0);
    expect_load_error(bad, "missing tensor", "blk.1.ssm_a", "missing");
    CHECK(rewrite(base, bad, NULL, "blk.2.attn_norm.weight", 128, NULL, NULL) == 0);
    expect_load_error(bad, "misshaped tensor", "blk.2.attn_norm.weight", "{128}");
    CHECK(rewrite(base, bad, NULL, NULL, 0, "qwen35.ssm.conv_kernel", NULL) == 0);
    expect_load_error(bad, "missing key", "qwen35.ssm.conv_kernel", NULL);
    CHECK(rewrite(base, bad, NULL, NULL, 0, NULL, "mamba2") == 0);
    expect_load_error(bad, "unsupported arch", "mamba2", "supported: qwen35");
    expect_load_error("/tmp/llm170-no-such-file.gguf", "missing file", "llm170-no-such-file", NULL);

    rc = synth_write(synth_preset_find("tiny-qwen4exp"), synth_mix_from_name("q4_0"), 3, base, NULL, NULL, &e);
    CHECKF(rc == 0, "synth: %s", e.msg);
    CHECK(rewrite_nextn(base, bad, 1) == 0);
    expect_load_error(bad, "qwen4exp MTP block", "nextn_predict_layers = 1", "nothing to test one against");
    CHECK(rewrite_nextn(base, bad, 0) == 0); /* the key at 0: no MTP block, loads */
    m = NULL;
    CHECKF(llm170_model_load(bad, NULL, &m) == 0, "nextn_predict_layers = 0 loads: %s", llm170_last_error());
    llm170_model_free(m);

    /* a ple_conv1d in half precision is widened; another type is refused */
    char ref[64];
    snprintf(ref, sizeof ref, "/tmp/llm170-model-errors-%d-ref.gguf", (int)getpid());
    rc = synth_write(synth_preset_find("tiny-qwen4exp"), synth_mix_from_name("f32"), 3, base, NULL, NULL, &e);
    CHECKF(rc == 0, "synth: %s", e.msg);
    check_ple_conv_widened(base, bad, ref, QT_F16);
    check_ple_conv_widened(base, bad, ref, QT_BF16);
    CHECK(rewrite_ple_conv(base, bad, QT_F32, QT_I32) == 0);
    expect_load_error(bad, "I32 ple_conv1d", "blk.1.ple_conv1d.weight", "has type I32");
    unlink(ref);
    unlink(base);
    unlink(bad);
    return check_report("test_model_errors");
}
