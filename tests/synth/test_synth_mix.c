/* test_synth_mix: the low-bit mixes (q2_k, iq2_xxs, iq1_s) and --tensor-type overrides give each tensor the
 * type llama-quantize 0.3.36 would (src/llama-quant.cpp; the rules are quoted in src/synth/mix.c), checked
 * by hand on plans (no file written; test_synth checks that files equal their plans):
 *   - attn_v and attn_qkv share llama-quantize's "attn_v" category: Q4_K when n_head / n_head_kv >= 4
 *     (qwen4exp-small: 8 / 2), else Q3_K under q2_k (tiny-qwen4exp: 2 / 1) or, under the IQ mixes, Q4_K
 *     because n_expert >= 4;
 *   - q2_k: ffn_down and attn_output Q3_K; the IQ mixes: the first n_layer / 8 ffn_down tensors counted in
 *     llama-quantize's order (block, then name) Q2_K, so on qwen4exp-small (n / 8 = 1) blk.0.ffn_down_exps is
 *     Q2_K and blk.0.ffn_down_shexp already IQ1_S; its categories are substrings, so hc_ffn_down is an
 *     ffn_down too (Q3_K under q2_k; counted after the block's ffn_down_*); iq1_s's attn_output IQ2_XXS;
 *   - token_embd and per_layer_token_embd are one category (Q2_K under the IQ mixes), output Q5_K (IQ) or
 *     Q6_K; rows that fit no 256-block fall back: Q2_K -> Q4_0, IQ1_S -> IQ4_NL;
 *   - indexer.q_proj / k_proj are on the keep list (BF16 whatever the mix or override); ple_conv1d stays F32;
 *   - an override wins over the rules but not over the keep list, falls back like a rule's type, and a type
 *     with no fallback (Q1_0 on rows of 160) makes the plan fail with the tensor's name;
 *   - the published shape: iq1_s with ffn_down_exps=q1_0 (the file docs/qwen4exp.md ran) is 52.35 GB. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "synth/synth.h"

static int type_of(const synth_plan *plan, const char *name) {
    for (size_t i = 0; i < plan->n; i++)
        if (!strcmp(plan->t[i].name, name)) return (int)plan->t[i].type;
    CHECKF(0, "tensor %s not planned", name);
    return -1;
}

static void expect(const synth_plan *plan, const char *what, const char *name, enum qtype want) {
    const int t = type_of(plan, name);
    if (t < 0) return;
    CHECKF(t == (int)want, "%s: %s is %s, expected %s", what, name, qtype_get((uint32_t)t)->name, qtype_get(want)->name);
}

static bool plan_of(const char *preset, const synth_quant *q, synth_plan *plan, err *e) {
    const synth_preset *p = synth_preset_find(preset);
    CHECKF(p != NULL, "preset %s", preset);
    return p && synth_plan_make_with(p, q, plan, e) == 0;
}

static void check_small(void) {
    synth_plan plan;
    err e = {0};
    synth_quant q = {.mix = SYNTH_MIX_Q2_K};
    if (plan_of("qwen4exp-small", &q, &plan, &e)) {
        const char *w = "small q2_k";
        expect(&plan, w, "blk.0.attn_qkv.weight", QT_Q4_K);
        expect(&plan, w, "blk.3.attn_v.weight", QT_Q4_K);
        expect(&plan, w, "blk.3.attn_output.weight", QT_Q3_K);
        expect(&plan, w, "blk.0.ffn_down_exps.weight", QT_Q3_K);
        expect(&plan, w, "blk.5.ffn_down_shexp.weight", QT_Q3_K);
        expect(&plan, w, "blk.0.attn_gate.weight", QT_Q2_K);
        expect(&plan, w, "blk.0.hc_ffn_down.weight", QT_Q3_K);
        expect(&plan, w, "blk.0.hc_attn_down.weight", QT_Q2_K);
        expect(&plan, w, "blk.0.ffn_up_exps.weight", QT_Q2_K);
        expect(&plan, w, "token_embd.weight", QT_Q2_K);
        expect(&plan, w, "output.weight", QT_Q6_K);
        expect(&plan, w, "per_layer_token_embd.weight", QT_Q4_0); /* rows of 64 */
        expect(&plan, w, "blk.2.hc_attn_up.weight", QT_Q4_0);     /* rows of 128 */
        expect(&plan, w, "blk.3.indexer.q_proj.weight", QT_BF16);
        expect(&plan, w, "blk.1.ple_conv1d.weight", QT_F32);
        synth_plan_free(&plan);
    }
    q.mix = SYNTH_MIX_IQ1_S;
    if (plan_of("qwen4exp-small", &q, &plan, &e)) {
        const char *w = "small iq1_s";
        expect(&plan, w, "blk.0.ffn_down_exps.weight", QT_Q2_K);   /* ffn_down tensor 0 < 8 / 8 */
        expect(&plan, w, "blk.0.ffn_down_shexp.weight", QT_IQ1_S); /* tensor 1: the counter's quirk */
        expect(&plan, w, "blk.1.ffn_down_exps.weight", QT_IQ1_S);
        expect(&plan, w, "blk.0.hc_ffn_down.weight", QT_IQ1_S);
        expect(&plan, w, "blk.0.attn_qkv.weight", QT_Q4_K);
        expect(&plan, w, "blk.3.attn_output.weight", QT_IQ2_XXS);
        expect(&plan, w, "blk.3.attn_q.weight", QT_IQ1_S);
        expect(&plan, w, "token_embd.weight", QT_Q2_K);
        expect(&plan, w, "output.weight", QT_Q5_K);
        expect(&plan, w, "per_layer_token_embd.weight", QT_Q4_0); /* Q2_K, then its fallback */
        expect(&plan, w, "blk.2.hc_attn_up.weight", QT_IQ4_NL);
        expect(&plan, w, "blk.7.indexer.k_proj.weight", QT_BF16);
        synth_plan_free(&plan);
    }
    q.mix = SYNTH_MIX_IQ2_XXS;
    if (plan_of("qwen4exp-small", &q, &plan, &e)) {
        expect(&plan, "small iq2_xxs", "blk.3.attn_output.weight", QT_IQ2_XXS);
        expect(&plan, "small iq2_xxs", "blk.1.ffn_gate_exps.weight", QT_IQ2_XXS);
        synth_plan_free(&plan);
    }
    q.mix = SYNTH_MIX_Q2_K;
    if (plan_of("tiny-qwen4exp", &q, &plan, &e)) { /* 2 heads on 1 KV head */
        expect(&plan, "tiny q2_k", "blk.3.attn_v.weight", QT_Q3_K);
        expect(&plan, "tiny q2_k", "blk.0.attn_qkv.weight", QT_Q3_K);
        synth_plan_free(&plan);
    }
    q.mix = SYNTH_MIX_IQ1_S;
    if (plan_of("tiny-qwen4exp", &q, &plan, &e)) { /* 16 experts */
        expect(&plan, "tiny iq1_s", "blk.3.attn_v.weight", QT_Q4_K);
        synth_plan_free(&plan);
    }
}

static void check_overrides(void) {
    synth_plan plan;
    err e = {0};
    synth_quant q = {.mix = SYNTH_MIX_IQ1_S, .n_ov = 2};
    snprintf(q.ov[0].name, sizeof q.ov[0].name, "ffn_down_exps");
    q.ov[0].type = QT_Q1_0;
    snprintf(q.ov[1].name, sizeof q.ov[1].name, "indexer");
    q.ov[1].type = QT_Q1_0;
    if (plan_of("qwen4exp-flash-next", &q, &plan, &e)) {
        const char *w = "flash-next iq1_s + overrides";
        expect(&plan, w, "blk.0.ffn_down_exps.weight", QT_Q1_0);  /* before the rules' Q2_K */
        expect(&plan, w, "blk.40.ffn_down_exps.weight", QT_Q1_0); /* rows of 640 = 5 blocks of 128 */
        expect(&plan, w, "blk.0.ffn_down_shexp.weight", QT_Q4_0);  /* Q2_K on rows of 640 */
        expect(&plan, w, "blk.1.hc_ffn_down.weight", QT_Q2_K);     /* ffn_down tensor 5 of 6 */
        expect(&plan, w, "blk.2.ffn_down_exps.weight", QT_Q1_0);
        expect(&plan, w, "blk.2.ffn_down_shexp.weight", QT_IQ4_NL); /* tensor 7: IQ1_S, on rows of 640 */
        expect(&plan, w, "blk.40.ffn_down_shexp.weight", QT_IQ4_NL);
        expect(&plan, w, "blk.3.indexer.q_proj.weight", QT_BF16); /* the keep list comes first */
        expect(&plan, w, "per_layer_token_embd.weight", QT_Q4_0);
        expect(&plan, w, "blk.0.hc_attn_up.weight", QT_IQ4_NL);   /* rows of 320 */
        CHECKF(plan.n_bytes > 52.30e9 && plan.n_bytes < 52.40e9, "%s: %.3f GB", w, 1e-9 * (double)plan.n_bytes);
        synth_plan_free(&plan);
    } else {
        CHECKF(0, "plan: %s", e.msg);
    }
    q.n_ov = 1;
    snprintf(q.ov[0].name, sizeof q.ov[0].name, "per_layer_token_embd");
    if (plan_of("qwen4exp-small", &q, &plan, &e)) { /* rows of 64: no block of 128 fits, no fallback */
        CHECKF(0, "Q1_0 on rows of 64 was planned");
        synth_plan_free(&plan);
    } else {
        CHECKF(strstr(e.msg, "per_layer_token_embd.weight") && strstr(e.msg, "no fallback"), "message: %s", e.msg);
    }
}

int main(void) {
    check_small();
    check_overrides();
    return check_report("test_synth_mix");
}
