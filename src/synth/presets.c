/* presets: the real models synth imitates, and tiny ones for tests.
 *
 * Sources of the numbers (each entry's `source` repeats its own):
 *  - Qwen3.5 family: /work/shared/specs/qwen35.md §1.2 (the table of published models, built from the
 *    transformers config classes, hub config replicas and parameter arithmetic that matches llama.cpp's
 *    reported counts). Common to all: d_h 256, rotary 64 dims (partial_rotary_factor 0.25), theta 1e7,
 *    d_k = d_v 128, conv K 4, eps 1e-6, full attention every 4th layer, vocab 248320 (padded), context
 *    262144, 1 MTP layer, mrope sections [11,11,10] (+0 as the converter writes it). Special tokens
 *    start at 248044 (<|endoftext|>, eos/pad ids in §1.1 of the spec).
 *  - Llama-3.1-8B(-Instruct): meta-llama's public config.json: hidden 4096, 32 layers, 32 heads, 8 KV
 *    heads, intermediate 14336, vocab 128256, rope_theta 500000, rms_norm_eps 1e-5, 131072 positions,
 *    rope_scaling llama3 (factor 8, low_freq_factor 1, high_freq_factor 4, original 8192), untied;
 *    the last 256 ids are special tokens from 128000 (<|begin_of_text|>).
 *  - Qwen3.8-Flash-Next (qwen4exp): /work/shared/specs/qwen4exp.md §1.1 "published" column and §3.2 (the
 *    GGUF keys of the published file): hidden 2560, 48 layers (QSA every 4th), 24/2 heads of 256, GDN 16 key /
 *    48 value heads of 128, 512 experts top 10 of width 640, shared 640, hyper-connections 4 x rank 320,
 *    indexer 4 heads x 128, budget 2048, ratio 4, PLE on block 1 (3-grams x 8 heads, rows of 160, prime
 *    base 20,000,000, conv 4), vocab 248320; no MTP block (the published GGUF dropped it, and our loader
 *    refuses MTP). The n-gram table alone is 51.2 B parameters (320,001,536 rows).
 *  - qwen4exp-small: made up for speed runs on 2 cores: the published layer pattern and every feature at
 *    hidden 1024, 8 layers, 64 experts top 8, the published indexer budget (2048 tokens), so QSA is dense to
 *    depth 2051 and sparse beyond, as in the real model. qwen4exp-small-dense: the same file with a budget of
 *    the whole context (32768 tokens), the dense baseline of QSA's speed study.
 *  - tiny-*: made up; the smallest shapes that keep every quantized row a multiple of 256 (so the
 *    Q4_K_M mix needs no fallback types) and keep the real layer pattern (GDN x3 + attention, MTP). */
#include <string.h>

#include "synth/synth.h"

#define QWEN35_COMMON                                                                                  \
    .tok = SYNTH_TOK_QWEN35, .n_mtp = 1, .head_dim = 256, .n_vocab = 248320, .n_ctx = 262144,          \
    .rope_dim = 64, .rope_theta = 1e7f, .rms_eps = 1e-6f, .ssm_conv = 4, .ssm_state = 128,             \
    .ssm_groups = 16, .full_attn_interval = 4, .rope_sections = {11, 11, 10, 0},                       \
    .tok_special_base = 248044

/* qwen4exp-small and its dense twin: everything but the indexer budget */
#define QWEN4EXP_SMALL                                                                                      \
    .arch = SYNTH_ARCH_QWEN4EXP, .tok = SYNTH_TOK_QWEN35, .n_embd = 1024, .n_layer = 8, .n_head = 8,         \
    .n_head_kv = 2, .head_dim = 128, .n_vocab = 32768, .n_ctx = 32768, .rope_dim = 32, .rope_theta = 1e7f,   \
    .rms_eps = 1e-6f, .ssm_conv = 4, .ssm_state = 128, .ssm_groups = 8, .ssm_heads = 16,                     \
    .full_attn_interval = 4, .rope_sections = {5, 5, 6, 0}, .n_expert = 64, .n_expert_used = 8,              \
    .n_ff_exp = 256, .n_ff_shexp = 256, .hc_count = 4, .hc_rank = 128, .idx_heads = 4, .idx_dim = 128,      \
    .idx_ratio = 4, .ple_layer = 1, .ple_ngram = 3, .ple_heads_per = 8, .ple_dim = 64, .ple_conv = 4,        \
    .ple_vocab_base = 20000, .tok_special_base = 32768 - 32

/* Qwen2.5-0.5B's shape, in its own arch (qwen2, with q / k / v biases) and in the llama arch (without) */
#define QWEN25_05B_SHAPE                                                                                        \
    .tok = SYNTH_TOK_LLAMA3, .n_embd = 896, .n_layer = 24, .n_head = 14, .n_head_kv = 2, .head_dim = 64,        \
    .n_ff = 4864, .n_vocab = 151936, .n_ctx = 32768, .rope_dim = 64, .rope_theta = 1000000.0f, .rms_eps = 1e-6f, \
    .tied = true, .tok_special_base = 151936 - 256

static const synth_preset presets[] = {
    {.name = "qwen35-27b", .model_name = "Qwen3.5-27B", .arch = SYNTH_ARCH_QWEN35, QWEN35_COMMON,
     .n_embd = 5120, .n_layer = 64, .n_head = 24, .n_head_kv = 4, .ssm_heads = 48, .n_ff = 17408,
     .source = "specs/qwen35.md 1.2 (high confidence; llama.cpp reports 24.353B repeating params)"},
    {.name = "qwen35-9b", .model_name = "Qwen3.5-9B", .arch = SYNTH_ARCH_QWEN35, QWEN35_COMMON,
     .n_embd = 4096, .n_layer = 32, .n_head = 16, .n_head_kv = 4, .ssm_heads = 32, .n_ff = 12288,
     .source = "specs/qwen35.md 1.2 (medium-high; 8.95B params matches GGUF metadata)"},
    {.name = "qwen35-0.8b", .model_name = "Qwen3.5-0.8B", .arch = SYNTH_ARCH_QWEN35, QWEN35_COMMON,
     .n_embd = 1024, .n_layer = 24, .n_head = 8, .n_head_kv = 2, .ssm_heads = 16, .n_ff = 3584,
     .tied = true, .source = "specs/qwen35.md 1.2 (high; replica of hub config @2fc06364), tied embeddings"},
    {.name = "qwen35moe-35b-a3b", .model_name = "Qwen3.5-35B-A3B", .arch = SYNTH_ARCH_QWEN35MOE,
     QWEN35_COMMON, .n_embd = 2048, .n_layer = 40, .n_head = 16, .n_head_kv = 2, .ssm_heads = 32,
     .n_expert = 256, .n_expert_used = 8, .n_ff_exp = 512, .n_ff_shexp = 512,
     .source = "specs/qwen35.md 1.2 (high): E 256, k 8, I_e 512, I_s 512"},
    {.name = "llama-8b", .model_name = "Llama-3.1-8B-Instruct", .arch = SYNTH_ARCH_LLAMA,
     .tok = SYNTH_TOK_LLAMA3, .n_embd = 4096, .n_layer = 32, .n_head = 32, .n_head_kv = 8, .head_dim = 128,
     .n_ff = 14336, .n_vocab = 128256, .n_ctx = 131072, .rope_dim = 128, .rope_theta = 500000.0f,
     .rms_eps = 1e-5f, .rope_scale_factor = 8.0f, .rope_low_freq = 1.0f, .rope_high_freq = 4.0f,
     .rope_orig_ctx = 8192, .tok_special_base = 128000,
     .source = "meta-llama/Llama-3.1-8B config.json (public): rope_scaling llama3 8/1/4/8192"},
    {.name = "llama-qwen25-0.5b", .model_name = "Qwen2.5-0.5B shape (llama arch)", .arch = SYNTH_ARCH_LLAMA,
     QWEN25_05B_SHAPE,
     .source = "Qwen/Qwen2.5-0.5B config.json shapes (hidden 896, 24 layers, 14/2 heads, ff 4864, vocab 151936, "
               "tied) in the llama arch: no q/k/v biases (speed runs only)"},
    {.name = "qwen25-0.5b", .model_name = "Qwen2.5-0.5B", .arch = SYNTH_ARCH_QWEN2, QWEN25_05B_SHAPE,
     .source = "Qwen/Qwen2.5-0.5B config.json (public): hidden 896, 24 layers, 14/2 heads, ff 4864, vocab 151936, "
               "tied, q/k/v biases (494,032,768 parameters)"},
    {.name = "qwen4exp-flash-next", .model_name = "Qwen3.8-Flash-Next", .arch = SYNTH_ARCH_QWEN4EXP,
     .tok = SYNTH_TOK_QWEN35, .n_embd = 2560, .n_layer = 48, .n_head = 24, .n_head_kv = 2, .head_dim = 256,
     .n_vocab = 248320, .n_ctx = 262144, .rope_dim = 64, .rope_theta = 1e7f, .rms_eps = 1e-6f, .ssm_conv = 4,
     .ssm_state = 128, .ssm_groups = 16, .ssm_heads = 48, .full_attn_interval = 4, .rope_sections = {11, 11, 10, 0},
     .n_expert = 512, .n_expert_used = 10, .n_ff_exp = 640, .n_ff_shexp = 640, .hc_count = 4, .hc_rank = 320,
     .idx_heads = 4, .idx_dim = 128, .idx_budget = 2048, .idx_ratio = 4, .ple_layer = 1, .ple_ngram = 3,
     .ple_heads_per = 8, .ple_dim = 160, .ple_conv = 4, .ple_vocab_base = 20000000, .tok_special_base = 248044,
     .source = "specs/qwen4exp.md 1.1 + 3.2 (published config replicas and the measured GGUF): 176.94B params "
               "with the 51.2B n-gram table"},
    {.name = "qwen4exp-small", .model_name = "qwen4exp-small", QWEN4EXP_SMALL, .idx_budget = 2048,
     .source = "made up: flash-next's pattern and features at hidden 1024, 8 layers, 64 experts (2-core speed runs)"},
    {.name = "qwen4exp-small-dense", .model_name = "qwen4exp-small-dense", QWEN4EXP_SMALL, .idx_budget = 32768,
     .source = "qwen4exp-small with an indexer budget of its whole context: QSA never drops a block (the dense "
               "baseline of the QSA speed study; same seed, same weights)"},
    {.name = "tiny-qwen35", .model_name = "tiny-qwen35", .arch = SYNTH_ARCH_QWEN35, .tok = SYNTH_TOK_QWEN35,
     .n_embd = 256, .n_layer = 4, .n_mtp = 1, .n_head = 2, .n_head_kv = 1, .head_dim = 256, .n_ff = 512,
     .n_vocab = 2048, .n_ctx = 4096, .rope_dim = 64, .rope_theta = 1e7f, .rms_eps = 1e-6f, .ssm_conv = 4,
     .ssm_state = 128, .ssm_groups = 2, .ssm_heads = 4, .full_attn_interval = 4,
     .rope_sections = {11, 11, 10, 0}, .tok_special_base = 2048 - 32,
     .source = "made up: qwen35 layer pattern (3 GDN + 1 attention + MTP), n_v/n_k = 2"},
    {.name = "tiny-qwen35moe", .model_name = "tiny-qwen35moe", .arch = SYNTH_ARCH_QWEN35MOE,
     .tok = SYNTH_TOK_QWEN35, .n_embd = 256, .n_layer = 4, .n_mtp = 1, .n_head = 2, .n_head_kv = 1,
     .head_dim = 256, .n_vocab = 2048, .n_ctx = 4096, .rope_dim = 64, .rope_theta = 1e7f, .rms_eps = 1e-6f,
     .ssm_conv = 4, .ssm_state = 128, .ssm_groups = 2, .ssm_heads = 4, .full_attn_interval = 4,
     .rope_sections = {11, 11, 10, 0}, .n_expert = 16, .n_expert_used = 4, .n_ff_exp = 256,
     .n_ff_shexp = 256, .tok_special_base = 2048 - 32,
     .source = "made up: qwen35moe layer pattern, 16 experts, 4 used"},
    {.name = "tiny-qwen4exp", .model_name = "tiny-qwen4exp", .arch = SYNTH_ARCH_QWEN4EXP,
     .tok = SYNTH_TOK_QWEN35, .n_embd = 256, .n_layer = 4, .n_head = 2, .n_head_kv = 1, .head_dim = 256,
     .n_vocab = 2048, .n_ctx = 4096, .rope_dim = 64, .rope_theta = 1e7f, .rms_eps = 1e-6f, .ssm_conv = 4,
     .ssm_state = 128, .ssm_groups = 2, .ssm_heads = 4, .full_attn_interval = 4, .rope_sections = {11, 11, 10, 0},
     .n_expert = 16, .n_expert_used = 4, .n_ff_exp = 256, .n_ff_shexp = 256, .hc_count = 2, .hc_rank = 64,
     .idx_heads = 4, .idx_dim = 64, .idx_budget = 16, .idx_ratio = 4, .ple_layer = 1, .ple_ngram = 3,
     .ple_heads_per = 2, .ple_dim = 64, .ple_conv = 4, .ple_vocab_base = 1000, .tok_special_base = 2048 - 32,
     .source = "made up: qwen4exp pattern (3 GDN + 1 QSA), 2 streams, budget 16 (4 blocks), PLE on block 1"},
    {.name = "tiny-llama", .model_name = "tiny-llama", .arch = SYNTH_ARCH_LLAMA, .tok = SYNTH_TOK_LLAMA3,
     .n_embd = 256, .n_layer = 2, .n_head = 4, .n_head_kv = 2, .head_dim = 64, .n_ff = 512,
     .n_vocab = 2048, .n_ctx = 4096, .rope_dim = 64, .rope_theta = 500000.0f, .rms_eps = 1e-5f,
     .rope_scale_factor = 8.0f, .rope_low_freq = 1.0f, .rope_high_freq = 4.0f, .rope_orig_ctx = 8192,
     .tok_special_base = 2048 - 256, .source = "made up: llama 3 shapes scaled down, llama3 rope scaling"},
    {.name = "tiny-qwen2", .model_name = "tiny-qwen2", .arch = SYNTH_ARCH_QWEN2, .tok = SYNTH_TOK_LLAMA3,
     .n_embd = 256, .n_layer = 2, .n_head = 4, .n_head_kv = 2, .head_dim = 64, .n_ff = 512, .n_vocab = 2048,
     .n_ctx = 4096, .rope_dim = 64, .rope_theta = 1000000.0f, .rms_eps = 1e-6f, .tied = true,
     .tok_special_base = 2048 - 256, .source = "made up: Qwen2.5 shapes scaled down (q / k / v biases, tied)"},
};

size_t synth_preset_count(void) { return sizeof presets / sizeof presets[0]; }

const synth_preset *synth_preset_at(size_t i) { return i < synth_preset_count() ? &presets[i] : NULL; }

const synth_preset *synth_preset_find(const char *name) {
    for (size_t i = 0; i < synth_preset_count(); i++)
        if (!strcmp(presets[i].name, name)) return &presets[i];
    return NULL;
}

const char *synth_arch_name(enum synth_arch a) {
    switch (a) {
    case SYNTH_ARCH_LLAMA: return "llama";
    case SYNTH_ARCH_QWEN35: return "qwen35";
    case SYNTH_ARCH_QWEN35MOE: return "qwen35moe";
    case SYNTH_ARCH_QWEN4EXP: return "qwen4exp";
    case SYNTH_ARCH_QWEN2: return "qwen2";
    }
    return "?";
}
