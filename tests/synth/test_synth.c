/* test_synth: synthesizes the tiny presets under every mix into a temp file, reads them back with the GGUF
 * reader, and checks: every planned tensor is there with its shape and type; a few shapes and types
 * written out by hand from llama.cpp's loader and quantizer rules; dequantized values are finite and
 * have the intended scale (weights std ~0.02, norms ~1, ssm_a < 0); the tokenizer arrays are consistent
 * (every merge joins two tokens into a token); the file is deterministic in the seed. It also checks the
 * real presets' parameter counts against the spec's published figures (no file written). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "synth/synth.h"

static char tmp_path[256];

static const gguf_tensor *tensor(const gguf_file *f, const char *name) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    CHECKF(t != NULL, "tensor %s missing", name);
    return t;
}

static void check_shape(const gguf_file *f, const char *name, uint32_t n_dims, int64_t ne0, int64_t ne1,
                        int64_t ne2, int type) {
    const gguf_tensor *t = tensor(f, name);
    if (!t) return;
    CHECKF(t->n_dims == n_dims && t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2,
           "%s: expected %u dims [%lld, %lld, %lld], found %u dims [%lld, %lld, %lld]", name, n_dims,
           (long long)ne0, (long long)ne1, (long long)ne2, t->n_dims, (long long)t->ne[0], (long long)t->ne[1],
           (long long)t->ne[2]);
    if (type >= 0)
        CHECKF((int)t->type == type, "%s: expected type %s, found %s", name, qtype_get((uint32_t)type)->name,
               qtype_get(t->type) ? qtype_get(t->type)->name : "?");
}

/* Dequantizes t and checks its values against how the plan drew them. */
static void check_values(const gguf_tensor *t, const synth_tensor *st) {
    const quant_ops *ops = quant_ops_get(t->type, QUANT_ISA_SCALAR);
    CHECKF(ops && ops->to_float, "%s: no dequantizer for type %u", t->name, t->type);
    if (!ops || !ops->to_float) return;
    float *x = malloc((size_t)t->n_elements * sizeof *x);
    ops->to_float(t->data, x, t->n_elements);
    double sum = 0, sum2 = 0, lo = INFINITY, hi = -INFINITY;
    int64_t nonfinite = 0;
    for (int64_t i = 0; i < t->n_elements; i++) {
        if (!isfinite(x[i])) {
            nonfinite++;
            continue;
        }
        sum += x[i];
        sum2 += (double)x[i] * x[i];
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    CHECKF(nonfinite == 0, "%s: %lld non-finite values", t->name, (long long)nonfinite);
    double n = (double)t->n_elements, mean = sum / n, sd = sqrt(fmax(sum2 / n - mean * mean, 0));
    if (st->init == SYNTH_INIT_WEIGHT && t->n_elements >= 256) {
        CHECKF(fabs(mean) < 0.01, "%s: weight mean %g, expected ~0", t->name, mean);
        CHECKF(sd > 0.005 && sd < 0.08, "%s: weight std %g, expected ~0.02", t->name, sd);
    } else if (st->init == SYNTH_INIT_UNIFORM) {
        double tol = t->type == QT_F32 ? 0 : 1e-2 * fmax(fabs(st->a), fabs(st->b));
        CHECKF(lo >= st->a - tol && hi <= st->b + tol, "%s: values in [%g, %g], expected within [%g, %g]",
               t->name, lo, hi, (double)st->a, (double)st->b);
    } else if (st->init == SYNTH_INIT_ROPE_FREQS) {
        CHECKF(lo >= 1.0 && hi <= 8.0 && x[0] == 1.0f, "%s: rope factors in [%g, %g], first %g; expected 1..8",
               t->name, lo, hi, (double)x[0]);
    }
    size_t len = strlen(t->name);
    if (len > 6 && !strcmp(t->name + len - 6, ".ssm_a")) CHECKF(hi < 0, "%s: ssm_a must be negative, max %g", t->name, hi);
    free(x);
}

/* Every merge "a b" names two tokens whose concatenation is a token (linear scan is fine: 2K tokens). */
static int find_token(const gguf_array *toks, const char *s, size_t len) {
    for (uint64_t i = 0; i < toks->n; i++)
        if (toks->strs[i].len == len && !memcmp(toks->strs[i].ptr, s, len)) return (int)i;
    return -1;
}

static void check_tokenizer(const gguf_file *f, const synth_preset *p) {
    err e = {0};
    gguf_array toks, types, merges;
    CHECK(!gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STRING, &toks, &e));
    CHECK(!gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_INT32, &types, &e));
    CHECK(!gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_STRING, &merges, &e));
    CHECKF(toks.n == (uint64_t)p->n_vocab && types.n == toks.n, "%s: %llu tokens, %llu types, vocab %lld",
           p->name, (unsigned long long)toks.n, (unsigned long long)types.n, (long long)p->n_vocab);
    CHECKF(merges.n == (uint64_t)p->tok_special_base - 256, "%s: %llu merges", p->name,
           (unsigned long long)merges.n);
    CHECK(toks.strs[0].len == 1 && toks.strs[0].ptr[0] == '!');
    int bad = 0;
    char buf[128];
    for (uint64_t i = 0; i < merges.n && i < toks.n; i++) {
        const gguf_str m = merges.strs[i];
        const char *sp = memchr(m.ptr, ' ', m.len);
        if (!sp || m.len >= sizeof buf) {
            bad++;
            continue;
        }
        size_t la = (size_t)(sp - m.ptr), lb = m.len - la - 1;
        memcpy(buf, m.ptr, la);
        memcpy(buf + la, sp + 1, lb);
        if (find_token(&toks, m.ptr, la) < 0 || find_token(&toks, sp + 1, lb) < 0 ||
            find_token(&toks, buf, la + lb) != (int)(256 + i))
            bad++;
    }
    CHECKF(bad == 0, "%s: %d invalid merges", p->name, bad);
    uint32_t bos, eos;
    CHECK(!gguf_get_u32(f, "tokenizer.ggml.bos_token_id", &bos, &e) && bos < toks.n);
    CHECK(!gguf_get_u32(f, "tokenizer.ggml.eos_token_id", &eos, &e) && eos < toks.n);
    const char *want_eos = p->tok == SYNTH_TOK_QWEN35 ? "<|im_end|>" : "<|eot_id|>";
    CHECKF(eos < toks.n && toks.strs[eos].len == strlen(want_eos) && !memcmp(toks.strs[eos].ptr, want_eos, strlen(want_eos)),
           "%s: eos token text", p->name);
    int32_t t_eos;
    memcpy(&t_eos, (const char *)types.data + 4 * eos, 4);
    CHECKF(t_eos == 3, "%s: eos token type %d, expected 3 (control)", p->name, t_eos);
    gguf_str s;
    CHECK(!gguf_get_str(f, "tokenizer.ggml.model", &s, &e) && s.len == 4 && !memcmp(s.ptr, "gpt2", 4));
    CHECK(!gguf_get_str(f, "tokenizer.chat_template", &s, &e) && s.len > 100);
}

/* element i of an INT32 / UINT64 array (the file's bytes need not be aligned) */
static int32_t arr_i32(const gguf_array *a, size_t i) {
    int32_t v;
    memcpy(&v, (const char *)a->data + i * sizeof v, sizeof v);
    return v;
}
static uint64_t arr_u64(const gguf_array *a, size_t i) {
    uint64_t v;
    memcpy(&v, (const char *)a->data + i * sizeof v, sizeof v);
    return v;
}

/* tiny-qwen4exp (H 256, S 2, R 64, blocks 0-2 GDN + 3 QSA, PLE on block 1 with 4 heads of rows 64): shapes
 * from spec §3.3 written out by hand, and the keys our loader and llama.cpp's read (§3.2). */

static void check_known_qwen4exp(const gguf_file *f, enum synth_mix m) {
    const bool q4km = m == SYNTH_MIX_Q4_K_M;
    const int Q4K = q4km ? QT_Q4_K : -1, Q6K = q4km ? QT_Q6_K : -1, Q5_0 = q4km ? QT_Q5_0 : -1;
    check_shape(f, "token_embd.weight", 2, 256, 2048, 1, Q4K);
    check_shape(f, "output.weight", 2, 256, 2048, 1, Q6K);
    check_shape(f, "output_hc_norm.weight", 1, 512, 1, 1, QT_F32);
    check_shape(f, "output_hc_down.weight", 2, 512, 64, 1, Q4K);
    check_shape(f, "output_hc_up.weight", 2, 64, 512, 1, Q5_0); /* rows of 64: Q4_K falls back to Q5_0 */
    check_shape(f, "blk.0.hc_attn_inject.weight", 2, 512, 2, 1, Q4K);
    check_shape(f, "blk.2.hc_ffn_norm.weight", 1, 512, 1, 1, QT_F32);
    check_shape(f, "blk.0.attn_qkv.weight", 2, 256, 1024, 1, q4km ? QT_Q5_K : -1);
    check_shape(f, "blk.3.attn_q.weight", 2, 256, 1024, 1, Q4K); /* per-head [q | gate] */
    /* on llama-quantize's keep list: the converter's BF16 */
    check_shape(f, "blk.3.indexer.q_proj.weight", 2, 256, 256, 1, q4km ? QT_BF16 : -1);
    check_shape(f, "blk.3.indexer.k_proj.weight", 2, 256, 64, 1, q4km ? QT_BF16 : -1);
    check_shape(f, "blk.3.indexer.k_norm.weight", 1, 64, 1, 1, QT_F32);
    check_shape(f, "blk.1.ple_key.weight", 2, 256, 512, 1, Q4K);
    check_shape(f, "blk.1.ple_value.weight", 2, 256, 256, 1, Q4K);
    check_shape(f, "blk.1.ple_norm_conv.weight", 1, 512, 1, 1, QT_F32);
    check_shape(f, "blk.1.ple_conv1d.weight", 2, 4, 512, 1, QT_F32);
    /* 4 heads: the primes after 1000 (1009, 1013, 1019, 1021) = 4062 rows, padded to 4096 */
    check_shape(f, "per_layer_token_embd.weight", 2, 64, 4096, 1, Q5_0);
    check_shape(f, "blk.0.ffn_gate_inp_shexp.weight", 1, 256, 1, 1, QT_F32);
    check_shape(f, "blk.3.ffn_down_exps.weight", 3, 256, 256, 16, Q6K); /* 3 >= 7*4/8 */
    CHECK(!gguf_find_tensor(f, "output_norm.weight") && !gguf_find_tensor(f, "blk.0.attn_norm.weight") &&
          !gguf_find_tensor(f, "output_hc_inject.weight") && !gguf_find_tensor(f, "blk.0.ple_key.weight") &&
          !gguf_find_tensor(f, "blk.3.ssm_a") && !gguf_find_tensor(f, "blk.2.indexer.q_proj.weight"));
    /* 3 global + hc 8 + moe 8 per block, GDN 9 x 3 + QSA 10, PLE 6, the table, the head */
    CHECKF(gguf_n_tensors(f) == 1 + 3 + 4 * 16 + 3 * 9 + 10 + 6 + 1 + 1, "tiny-qwen4exp: %llu tensors",
           (unsigned long long)gguf_n_tensors(f));
    err e = {0};
    uint32_t u = 0;
    CHECK(!gguf_get_u32(f, "qwen4exp.block_count", &u, &e) && u == 4);
    CHECK(!gguf_get_u32(f, "qwen4exp.hyper_connection.count", &u, &e) && u == 2);
    CHECK(!gguf_get_u32(f, "qwen4exp.attention.indexer.top_k", &u, &e) && u == 16);
    CHECK(!gguf_get_u32(f, "qwen4exp.ple.eos_token_id", &u, &e) && u == 2016); /* <|endoftext|> */
    CHECK(!gguf_get_u32(f, "qwen4exp.embedding_length_per_layer_input", &u, &e) && u == 64);
    gguf_array a;
    CHECK(!gguf_get_arr(f, "qwen4exp.attention.compress_ratios", GGUF_INT32, &a, &e) && a.n == 4 &&
          arr_i32(&a, 3) == 4 && arr_i32(&a, 2) == 0);
    CHECK(!gguf_get_arr(f, "qwen4exp.ple.layers", GGUF_INT32, &a, &e) && a.n == 1 && arr_i32(&a, 0) == 1);
    CHECK(!gguf_get_arr(f, "qwen4exp.ple.head_vocab_sizes", GGUF_UINT64, &a, &e) && a.n == 4 &&
          arr_u64(&a, 3) == 1021);
}

/* Hand-written expectations from llama.cpp's loader (shapes) and quantizer (Q4_K_M types). */
static void check_known(const gguf_file *f, const synth_preset *p, enum synth_mix m) {
    if (p->arch == SYNTH_ARCH_QWEN4EXP) {
        check_known_qwen4exp(f, m);
        return;
    }
    const bool q4km = m == SYNTH_MIX_Q4_K_M;
    const int Q4K = q4km ? QT_Q4_K : -1, Q6K = q4km ? QT_Q6_K : -1;
    check_shape(f, "token_embd.weight", 2, 256, 2048, 1, Q4K);
    check_shape(f, "output.weight", 2, 256, 2048, 1, Q6K);
    check_shape(f, "output_norm.weight", 1, 256, 1, 1, QT_F32);
    if (p->arch == SYNTH_ARCH_LLAMA) {
        check_shape(f, "rope_freqs.weight", 1, 32, 1, 1, QT_F32);
        check_shape(f, "blk.1.attn_q.weight", 2, 256, 256, 1, Q4K);
        check_shape(f, "blk.1.attn_k.weight", 2, 256, 128, 1, Q4K);
        check_shape(f, "blk.0.attn_v.weight", 2, 256, 128, 1, Q4K); /* use_more_bits(0, 2) is false */
        check_shape(f, "blk.1.attn_v.weight", 2, 256, 128, 1, Q6K); /* 1 >= 7*2/8 */
        check_shape(f, "blk.1.ffn_down.weight", 2, 512, 256, 1, Q6K); /* 1 >= 7*2/8 */
        check_shape(f, "blk.1.ffn_norm.weight", 1, 256, 1, 1, QT_F32);
        CHECK(gguf_n_tensors(f) == 1 + 1 + 2 * 9 + 2);
        return;
    }
    /* qwen35*: blk 0-2 GDN, blk 3 attention, blk 4 MTP */
    check_shape(f, "blk.0.attn_qkv.weight", 2, 256, 1024, 1, q4km ? QT_Q5_K : -1);
    check_shape(f, "blk.0.attn_gate.weight", 2, 256, 512, 1, Q4K);
    check_shape(f, "blk.0.ssm_conv1d.weight", 2, 4, 1024, 1, QT_F32);
    check_shape(f, "blk.0.ssm_a", 1, 4, 1, 1, QT_F32);
    check_shape(f, "blk.0.ssm_dt.bias", 1, 4, 1, 1, QT_F32);
    check_shape(f, "blk.1.ssm_alpha.weight", 2, 256, 4, 1, -1); /* 4 rows of 256: Q8_0 under q4_k_m */
    check_shape(f, "blk.2.ssm_norm.weight", 1, 128, 1, 1, QT_F32);
    check_shape(f, "blk.2.ssm_out.weight", 2, 512, 256, 1, Q4K);
    check_shape(f, "blk.3.attn_q.weight", 2, 256, 1024, 1, Q4K);
    check_shape(f, "blk.3.attn_v.weight", 2, 256, 256, 1, Q4K); /* use_more_bits(3, 5) is false */
    check_shape(f, "blk.3.attn_q_norm.weight", 1, 256, 1, 1, QT_F32);
    check_shape(f, "blk.4.attn_v.weight", 2, 256, 256, 1, Q6K); /* 4 >= 7*5/8 */
    check_shape(f, "blk.4.nextn.eh_proj.weight", 2, 512, 256, 1, Q4K);
    check_shape(f, "blk.4.nextn.shared_head_norm.weight", 1, 256, 1, 1, QT_F32);
    CHECK(gguf_find_tensor(f, "blk.3.attn_qkv.weight") == NULL && gguf_find_tensor(f, "blk.4.ssm_a") == NULL);
    if (p->arch == SYNTH_ARCH_QWEN35MOE) {
        check_shape(f, "blk.0.ffn_gate_inp.weight", 2, 256, 16, 1, QT_F32);
        check_shape(f, "blk.0.ffn_gate_exps.weight", 3, 256, 256, 16, Q4K);
        check_shape(f, "blk.2.ffn_down_exps.weight", 3, 256, 256, 16, Q6K); /* (2 - 0) % 3 == 2 */
        check_shape(f, "blk.1.ffn_down_shexp.weight", 2, 256, 256, 1, Q4K);
        check_shape(f, "blk.4.ffn_gate_inp_shexp.weight", 1, 256, 1, 1, QT_F32);
    } else {
        check_shape(f, "blk.1.ffn_down.weight", 2, 512, 256, 1, Q4K);
        check_shape(f, "blk.2.ffn_down.weight", 2, 512, 256, 1, Q6K); /* (2 - 0) % 3 == 2 */
        check_shape(f, "blk.4.ffn_up.weight", 2, 256, 512, 1, Q4K);
    }
    err e = {0};
    uint32_t u;
    CHECK(!gguf_get_u32(f, "qwen35.block_count", &u, &e) || !gguf_get_u32(f, "qwen35moe.block_count", &u, &e));
    CHECK(u == 5);
}

static void check_file(const synth_preset *p, enum synth_mix m) {
    err e = {0};
    int rc = synth_write(p, m, 42, tmp_path, NULL, NULL, &e);
    CHECKF(rc == 0, "synth_write %s %s: %s", p->name, synth_mix_name(m), e.msg);
    if (rc) return;
    gguf_file *f = NULL;
    rc = gguf_open(&f, tmp_path, &e);
    CHECKF(rc == 0, "gguf_open %s %s: %s", p->name, synth_mix_name(m), e.msg);
    if (rc) return;
    synth_plan plan;
    CHECK(synth_plan_make(p, m, &plan, &e) == 0);
    CHECKF(gguf_n_tensors(f) == plan.n, "%s: %llu tensors in file, %zu planned", p->name,
           (unsigned long long)gguf_n_tensors(f), plan.n);
    for (size_t i = 0; i < plan.n; i++) {
        const synth_tensor *st = &plan.t[i];
        const gguf_tensor *t = tensor(f, st->name);
        if (!t) continue;
        CHECKF(t->type == st->type && t->n_dims == st->n_dims && !memcmp(t->ne, st->ne, sizeof t->ne),
               "%s: type/shape differ from the plan", st->name);
        check_values(t, st);
    }
    synth_plan_free(&plan);
    check_known(f, p, m);
    check_tokenizer(f, p);
    gguf_close(f);
}

/* Same seed, same bytes; another seed, other bytes. */
static void check_determinism(void) {
    const synth_preset *p = synth_preset_find("tiny-llama");
    err e = {0};
    char path2[300];
    snprintf(path2, sizeof path2, "%s.b", tmp_path);
    CHECK(synth_write(p, SYNTH_MIX_Q4_K_M, 7, tmp_path, NULL, NULL, &e) == 0);
    CHECK(synth_write(p, SYNTH_MIX_Q4_K_M, 7, path2, NULL, NULL, &e) == 0);
    gguf_file *a = NULL, *b = NULL;
    if (gguf_open(&a, tmp_path, &e) || gguf_open(&b, path2, &e)) {
        CHECKF(0, "open: %s", e.msg);
        gguf_close(a);
        return;
    }
    const gguf_tensor *ta = gguf_find_tensor(a, "blk.1.ffn_up.weight"), *tb = gguf_find_tensor(b, "blk.1.ffn_up.weight");
    CHECK(ta && tb && ta->nbytes == tb->nbytes && !memcmp(ta->data, tb->data, ta->nbytes));
    gguf_close(b);
    CHECK(synth_write(p, SYNTH_MIX_Q4_K_M, 8, path2, NULL, NULL, &e) == 0);
    CHECK(gguf_open(&b, path2, &e) == 0);
    tb = b ? gguf_find_tensor(b, "blk.1.ffn_up.weight") : NULL;
    CHECK(ta && tb && memcmp(ta->data, tb->data, ta->nbytes) != 0);
    gguf_close(a);
    gguf_close(b);
    unlink(path2);
}

/* Parameter counts of the real presets against the spec's table (text model, MTP excluded) and
 * Llama-3.1-8B's published 8.03B. */
static void check_param_counts(void) {
    static const struct { const char *name; double params; } want[] = {
        {"qwen35-27b", 26.90e9}, {"qwen35-9b", 8.95e9}, {"qwen35-0.8b", 0.75e9},
        {"qwen35moe-35b-a3b", 34.66e9}, {"llama-8b", 8.03e9},
        {"qwen25-0.5b", 0.494032768e9}, /* Qwen2.5-0.5B's published count, q / k / v biases included */
        {"qwen4exp-flash-next", 176.94e9}, /* specs/qwen4exp.md 1.3: body 125.74B + n-gram table 51.20B */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const synth_preset *p = synth_preset_find(want[i].name);
        synth_plan plan;
        err e = {0};
        CHECK(p && synth_plan_make(p, SYNTH_MIX_Q4_K_M, &plan, &e) == 0);
        if (!p) continue;
        char mtp[32];
        snprintf(mtp, sizeof mtp, "blk.%lld.", (long long)p->n_layer);
        double n = 0;
        for (size_t j = 0; j < plan.n; j++)
            if (strncmp(plan.t[j].name, mtp, strlen(mtp)))
                n += (double)(plan.t[j].ne[0] * plan.t[j].ne[1] * plan.t[j].ne[2]);
        CHECKF(fabs(n / want[i].params - 1) < 0.01, "%s: %.4g parameters without MTP, expected %.4g", p->name, n,
               want[i].params);
        if (!strcmp(p->name, "qwen35-27b")) /* spec 5.2: a Q4_K_M file of about 16.5 GB (+-5%) */
            CHECKF(fabs((double)plan.n_bytes / 16.5e9 - 1) < 0.05, "27b q4_k_m: %.3f GB", 1e-9 * (double)plan.n_bytes);
        if (!strcmp(p->name, "qwen4exp-flash-next")) { /* spec 1.3: the table is 320,001,536 x 160 */
            const synth_tensor *t = &plan.t[plan.n - 2];
            CHECKF(!strcmp(t->name, "per_layer_token_embd.weight") && t->ne[0] == 160 && t->ne[1] == 320001536,
                   "flash-next n-gram table %s [%lld, %lld]", t->name, (long long)t->ne[0], (long long)t->ne[1]);
            CHECKF(fabs((n - (double)t->ne[0] * (double)t->ne[1]) / 125.74e9 - 1) < 0.01, "flash-next body %.4g", n);
        }
        if (!strcmp(p->name, "qwen25-0.5b")) /* exact: 1% would not see a missing bias (3,072 parameters a kind) */
            CHECKF(n == 494032768.0, "qwen25-0.5b: %.0f parameters, Qwen2.5-0.5B has 494,032,768", n);
        if (!strcmp(p->name, "llama-8b")) /* published Llama-3.1-8B-Instruct Q4_K_M files: 4.92 GB */
            CHECKF(fabs((double)plan.n_bytes / 4.92e9 - 1) < 0.01, "8b q4_k_m: %.3f GB", 1e-9 * (double)plan.n_bytes);
        synth_plan_free(&plan);
    }
}

/* The PLE hash constants derived for the published shape equal the spec's (§2.7.1), which match the
 * checkpoint's buffers as three parties read them. */
static void check_ple_hash(void) {
    static const uint64_t primes[16] = {20000003, 20000023, 20000033, 20000047, 20000059, 20000063,
                                        20000069, 20000077, 20000081, 20000093, 20000107, 20000147,
                                        20000153, 20000159, 20000161, 20000171};
    synth_ple_hash h;
    synth_ple_hash_make(synth_preset_find("qwen4exp-flash-next"), &h);
    CHECK(h.n_mult == 3 && h.n_heads == 16);
    CHECKF(h.mult[0] == 23703573157769ull && h.mult[1] == 20109073645365ull && h.mult[2] == 8052911324071ull,
           "multipliers %llu %llu %llu", (unsigned long long)h.mult[0], (unsigned long long)h.mult[1],
           (unsigned long long)h.mult[2]);
    for (int g = 0; g < 16; g++) CHECKF(h.size[g] == primes[g], "head %d: size %llu", g, (unsigned long long)h.size[g]);
    CHECK(h.offset[1] == 20000003 && h.offset[15] == 300001275ull);
    CHECKF(h.rows == 320001536, "rows %lld", (long long)h.rows);
}

/* qwen4exp-small-dense is qwen4exp-small with QSA's budget at the whole context (the speed study's dense
 * baseline): every other field equal, so the same seed gives the same weights. */
static void check_dense_twin(void) {
    const synth_preset *a = synth_preset_find("qwen4exp-small"), *b = synth_preset_find("qwen4exp-small-dense");
    CHECK(a && b);
    if (!a || !b) return;
    synth_preset x, y; /* memcpy: the static presets' padding is zero and comes along */
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    CHECKF(y.idx_budget >= y.n_ctx && x.idx_budget < x.n_ctx, "budgets %lld / %lld, context %lld",
           (long long)x.idx_budget, (long long)y.idx_budget, (long long)y.n_ctx);
    x.name = y.name, x.model_name = y.model_name, x.source = y.source, x.idx_budget = y.idx_budget;
    CHECK(!memcmp(&x, &y, sizeof x));
}

int main(void) {
    snprintf(tmp_path, sizeof tmp_path, "/tmp/llm170_test_synth_%d.gguf", (int)getpid());
    const char *tiny[] = {"tiny-qwen35", "tiny-qwen35moe", "tiny-llama", "tiny-qwen4exp"};
    for (size_t i = 0; i < sizeof tiny / sizeof tiny[0]; i++) {
        const synth_preset *p = synth_preset_find(tiny[i]);
        CHECKF(p != NULL, "preset %s missing", tiny[i]);
        if (!p) continue;
        for (int m = 0; m < SYNTH_MIX_COUNT; m++) check_file(p, (enum synth_mix)m);
    }
    check_determinism();
    check_param_counts();
    check_ple_hash();
    check_dense_twin();
    unlink(tmp_path);
    return check_report("test_synth");
}
