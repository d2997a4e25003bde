/* The loader refuses bad models with a message naming the problem: a missing tensor, a tensor of the
 * wrong shape, a type an op cannot use, an unsupported architecture, a missing hyperparameter, a qwen4exp
 * MTP block (no reference we can run has one: docs/qwen4exp.md). Each case rewrites a tiny synth model through
 * the GGUF reader and writer with one thing changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    unlink(base);
    unlink(bad);
    return check_report("test_model_errors");
}
