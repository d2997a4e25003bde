/* mix: which type each tensor gets under a quantization mix, as llama.cpp's tools would choose it.
 * (The plan and writer are in synth.c; the API is in synth.h.)
 *
 * f32 / f16 / q8_0 are convert_hf_to_gguf.py --outtype mixes; the others are llama-quantize ftypes applied to
 * a converted file, so they follow llama-quantize's per-tensor rules (src/llama-quant.cpp of the llama-cpp-
 * python 0.3.36 sdist: tensor_allows_quantization, llama_tensor_get_type_impl, tensor_type_fallback),
 * except where a comment says otherwise. Rules for shapes no preset has (8-expert models, 70B, Falcon) are
 * left out. */
#include <string.h>

#include "synth/synth.h"

static const char *const mix_names[SYNTH_MIX_COUNT] = {"f32", "f16", "q8_0", "q4_0", "q4_k_m", "q2_k", "iq2_xxs", "iq1_s"};

const char *synth_mix_name(enum synth_mix m) { return (unsigned)m < SYNTH_MIX_COUNT ? mix_names[m] : "?"; }

int synth_mix_from_name(const char *name) {
    for (int i = 0; i < SYNTH_MIX_COUNT; i++)
        if (!strcmp(mix_names[i], name)) return i;
    return -1;
}

/* llama_ftype values: ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q4_0 2, MOSTLY_Q8_0 7, MOSTLY_Q2_K 10, MOSTLY_Q4_K_M 15,
 * MOSTLY_IQ2_XXS 19, MOSTLY_IQ1_S 24. */
uint32_t synth_mix_file_type(enum synth_mix m) {
    static const uint32_t ft[SYNTH_MIX_COUNT] = {0, 1, 7, 2, 15, 10, 19, 24};
    return (unsigned)m < SYNTH_MIX_COUNT ? ft[m] : 0;
}

static bool has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* llama-quantize's "use_more_bits": the first and last eighth of the layers and every third between. */
static bool use_more_bits(int64_t i_layer, int64_t n_layers) {
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

/* llama-quantize's fallback when a row (ne[0]) is not a whole number of blocks: the 256-value IQ types go
 * to IQ4_NL, Q2_K / Q3_K to Q4_0, Q4_K / Q5_K / Q6_K to Q5_0 / Q5_1 / Q8_0 (all 32-value blocks), and F16
 * when even 32 does not divide the row. It has none for other blocks over 32 values (Q1_0's 128: it stops
 * with "no tensor type fallback is defined"): QT_COUNT here, which synth_plan_make reports. */
static enum qtype fallback_type(enum qtype t, int64_t ne0) {
    if (ne0 % qtype_get(t)->blck == 0) return t;
    enum qtype f = t;
    switch (t) {
    case QT_IQ1_S: case QT_IQ1_M: case QT_IQ2_XXS: case QT_IQ2_XS: case QT_IQ2_S: case QT_IQ3_XXS: case QT_IQ3_S:
    case QT_IQ4_XS: f = QT_IQ4_NL; break;
    case QT_Q2_K: case QT_Q3_K: f = QT_Q4_0; break;
    case QT_Q4_K: f = QT_Q5_0; break;
    case QT_Q5_K: f = QT_Q5_1; break;
    case QT_Q6_K: f = QT_Q8_0; break;
    default:
        if (qtype_get(t)->blck > 32) return QT_COUNT;
        break;
    }
    return ne0 % qtype_get(f)->blck == 0 ? f : QT_F16;
}

/* The type a llama-quantize mix gives a quantizable tensor other than output / token embeddings. */
static enum qtype quantize_rule(const synth_preset *p, enum synth_mix m, const char *name, int i_layer,
                                int64_t n_layer_all, int i_ffn_down) {
    /* attn_qkv is in llama-quantize's attn_v category ("more sensitive to quantization") */
    const bool attn_v = has(name, "attn_v.weight") || has(name, "attn_qkv.weight");
    const bool ffn_down = has(name, "ffn_down"), attn_out = has(name, "attn_output.weight");
    const bool gqa4 = p->n_head_kv > 0 && p->n_head / p->n_head_kv >= 4;
    switch (m) {
    case SYNTH_MIX_Q4_K_M:
        /* llama.cpp master of 2026-05, the mix of the H200 measurements in GPU.md: attn_v and every ffn_down
         * (dense, experts, shared expert) Q6_K on use_more_bits blocks (i = the block number, n = block_count
         * incl. MTP); GDN attn_qkv Q5_K and ssm_alpha / ssm_beta Q8_0. The 0.3.36 quantizer still rotated
         * attn_qkv with attn_v and left ssm_alpha / ssm_beta at Q4_K. */
        if (has(name, "attn_v.weight") || ffn_down) return use_more_bits(i_layer, n_layer_all) ? QT_Q6_K : QT_Q4_K;
        if (has(name, "attn_qkv.weight")) return QT_Q5_K;
        if (has(name, "ssm_alpha.weight") || has(name, "ssm_beta.weight")) return QT_Q8_0;
        return QT_Q4_K;
    case SYNTH_MIX_Q2_K:
        if (attn_v) return gqa4 ? QT_Q4_K : QT_Q3_K;
        if (ffn_down || attn_out) return QT_Q3_K;
        return QT_Q2_K;
    case SYNTH_MIX_IQ2_XXS:
    case SYNTH_MIX_IQ1_S:
        /* llama-quantize wants an importance matrix for these; the rules do not depend on it. ffn_down's
         * "first eighth" counts ffn_down tensors in its order (by block, then name: ffn_down_exps before
         * ffn_down_shexp) against n = block_count, so on an MoE with a shared expert it covers n / 16 blocks. */
        if (attn_v) return gqa4 || p->n_expert >= 4 ? QT_Q4_K : QT_Q2_K;
        if (ffn_down && i_ffn_down < n_layer_all / 8) return QT_Q2_K;
        if (attn_out && m == SYNTH_MIX_IQ1_S) return QT_IQ2_XXS;
        return m == SYNTH_MIX_IQ1_S ? QT_IQ1_S : QT_IQ2_XXS;
    default: return QT_Q4_0;
    }
}

/* The rules, in the order llama.cpp applies them:
 *  1. The converter keeps in F32: 1-D tensors, *_norm.weight, anything not named *.weight (ssm_a,
 *     ssm_dt.bias), the convs (ssm_conv1d, qwen4exp's ple_conv1d) and the MoE routers ffn_gate_inp; llama-quantize
 *     leaves them so too, except ple_conv1d, which it would store as F16 (no quantized type fits rows of 4
 *     and its name is not on the keep list): kept F32 here, as our loader wants (160 KB at the published shape).
 *  2. f32 / f16 / q8_0: everything else in that type (Q8_0 needs ne[0] % 32 == 0, else F16).
 *  3. llama-quantize mixes: indexer.q_proj / indexer.k_proj are on its keep list, so they stay in the
 *     converter's type: BF16 (--outtype auto of a bf16 checkpoint, as the published file has them).
 *     output.weight (and token_embd when tied, as the two are one tensor) Q6_K, or Q5_K under the IQ mixes;
 *     token_embd and per_layer_token_embd (one "token embedding" category) the base type, Q2_K under the IQ
 *     mixes; the rest by quantize_rule. --tensor-type overrides (synth_quant) come before all of these but
 *     after the keep list. Rows that do not fit the block fall back (fallback_type). */
enum qtype synth_tensor_type(const synth_preset *p, const synth_quant *q, const char *name, uint32_t n_dims,
                             const int64_t *ne, int i_layer, int64_t n_layer_all, int i_ffn_down) {
    const enum synth_mix m = q->mix;
    if (n_dims < 2 || !ends_with(name, ".weight") || has(name, "_norm.weight") || has(name, "conv1d") ||
        has(name, "ffn_gate_inp.weight"))
        return QT_F32;
    switch (m) {
    case SYNTH_MIX_F32: return QT_F32;
    case SYNTH_MIX_F16: return QT_F16;
    case SYNTH_MIX_Q8_0: return ne[0] % 32 == 0 ? QT_Q8_0 : QT_F16;
    case SYNTH_MIX_COUNT: return QT_F32;
    default: break;
    }
    if (has(name, "indexer.q_proj.weight") || has(name, "indexer.k_proj.weight")) return QT_BF16;
    for (int i = 0; i < q->n_ov; i++) /* the first match wins, as in llama-quantize */
        if (has(name, q->ov[i].name)) return fallback_type(q->ov[i].type, ne[0]);
    const bool iq = m == SYNTH_MIX_IQ2_XXS || m == SYNTH_MIX_IQ1_S;
    const enum qtype base = m == SYNTH_MIX_Q4_0 ? QT_Q4_0 : m == SYNTH_MIX_Q4_K_M ? QT_Q4_K
                          : m == SYNTH_MIX_Q2_K ? QT_Q2_K : m == SYNTH_MIX_IQ2_XXS ? QT_IQ2_XXS : QT_IQ1_S;
    const bool output = !strcmp(name, "output.weight");
    const bool embd = !strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight");
    enum qtype t;
    if (output || (p->tied && !strcmp(name, "token_embd.weight")))
        t = ne[0] % qtype_get(base)->blck != 0 ? QT_Q8_0 : iq ? QT_Q5_K : QT_Q6_K;
    else if (embd)
        t = iq ? QT_Q2_K : base;
    else if (m == SYNTH_MIX_Q4_0)
        t = QT_Q4_0;
    else
        t = quantize_rule(p, m, name, i_layer, n_layer_all, i_ffn_down);
    return fallback_type(t, ne[0]);
}
