/* synth: random-weight GGUF files in the exact shapes of real models.
 *
 * A preset (presets.c) holds a real model's hyperparameters. From it, synth_plan lists every tensor as
 * llama.cpp's converter names and shapes it (ggml ne order: ne[0] is the input/fastest dimension), each
 * with the type a quantization mix gives it and how its values are drawn. synth_write streams the file:
 * metadata (architecture keys, general.*, a complete gpt2-style tokenizer), then every tensor's bytes,
 * produced chunk by chunk through the GGUF writer's fill callback, so a 20 GB model never sits in memory.
 * Values are deterministic in (seed, tensor, chunk) and do not depend on how the writer slices its calls.
 *
 * The files load in llama.cpp (its loader checks every tensor's name and shape against the
 * hyperparameters); scripts/synth-llamacpp-check.sh is the proof. They are for benchmarks and loader tests:
 * the weights are noise, so the text they produce is noise too.
 *
 * Ownership: presets are static. A plan (synth_plan) is heap memory the caller frees with synth_plan_free.
 * A vocabulary (synth_vocab_build) is owned by its synth_vocab and freed with synth_vocab_free. */
#ifndef LLM170_SYNTH_SYNTH_H
#define LLM170_SYNTH_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "quant/qtype.h"

/* QWEN2: the llama block with q / k / v biases and NEOX rope (the engine's qwen2 arch) */
enum synth_arch { SYNTH_ARCH_LLAMA, SYNTH_ARCH_QWEN35, SYNTH_ARCH_QWEN35MOE, SYNTH_ARCH_QWEN4EXP, SYNTH_ARCH_QWEN2 };

/* Which tokenizer layout the preset imitates (ids of special tokens, pre-tokenizer name, template). */
enum synth_tok { SYNTH_TOK_QWEN35, SYNTH_TOK_LLAMA3 };

/* Quantization mixes. F32/F16/Q8_0 follow llama.cpp's converter (convert_hf_to_gguf --outtype); Q4_0, Q4_K_M,
 * Q2_K, IQ2_XXS and IQ1_S follow llama-quantize's per-tensor rules (see synth_tensor_type in mix.c). */
enum synth_mix {
    SYNTH_MIX_F32, SYNTH_MIX_F16, SYNTH_MIX_Q8_0, SYNTH_MIX_Q4_0, SYNTH_MIX_Q4_K_M, SYNTH_MIX_Q2_K,
    SYNTH_MIX_IQ2_XXS, SYNTH_MIX_IQ1_S, SYNTH_MIX_COUNT
};

typedef struct synth_preset {
    const char *name;       /* "qwen35-27b" */
    const char *model_name; /* general.name, e.g. "Qwen3.5-27B" */
    enum synth_arch arch;
    enum synth_tok tok;
    /* common transformer shape */
    int64_t n_embd;      /* H */
    int64_t n_layer;     /* trunk layers (MTP not included) */
    int64_t n_mtp;       /* MTP (nextn) blocks stored after the trunk as blk.{n_layer..} */
    int64_t n_head;      /* n_q */
    int64_t n_head_kv;   /* n_kv */
    int64_t head_dim;    /* d_h */
    int64_t n_ff;        /* dense FFN width I (0 for MoE) */
    int64_t n_vocab;     /* V, the token_embd rows (padded vocab) */
    int64_t n_ctx;       /* context_length */
    int64_t rope_dim;    /* rotated dims per head */
    float rope_theta;
    float rms_eps;
    bool tied;           /* no output.weight: lm_head = token_embd */
    /* Gated DeltaNet (qwen35*) */
    int64_t ssm_conv;    /* K */
    int64_t ssm_state;   /* d_k = d_v */
    int64_t ssm_groups;  /* n_k */
    int64_t ssm_heads;   /* n_v */
    int64_t full_attn_interval;
    int32_t rope_sections[4];
    /* MoE (qwen35moe, qwen4exp) */
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    /* qwen4exp (specs/qwen4exp.md §1.1): hyper-connections S streams of rank R; the QSA indexer (heads, head
     * dim, token budget B, compression ratio c); PLE on 0-based block ple_layer when ple_dim > 0: n-grams of
     * ple_ngram tokens, ple_heads_per hash heads per order, table rows of ple_dim (d_p), conv kernel K_p, and
     * the prime-table base (each head's size is the next prime after the previous head's). The PLE reset
     * token is tok_special_base (<|endoftext|>). */
    int64_t hc_count, hc_rank;
    int64_t idx_heads, idx_dim, idx_budget, idx_ratio;
    int64_t ple_layer, ple_ngram, ple_heads_per, ple_dim, ple_conv, ple_vocab_base;
    /* llama3 rope scaling (llama): factor 0 = none */
    float rope_scale_factor, rope_low_freq, rope_high_freq;
    int64_t rope_orig_ctx;
    int64_t tok_special_base; /* id of the first special token (<|endoftext|> / <|begin_of_text|>) */
    const char *source; /* where the numbers come from */
} synth_preset;

size_t synth_preset_count(void);
const synth_preset *synth_preset_at(size_t i);
const synth_preset *synth_preset_find(const char *name); /* NULL if unknown */
const char *synth_arch_name(enum synth_arch a);          /* "qwen35", ... (general.architecture) */

/* qwen4exp's PLE hash constants as transformers derives them (spec §2.7.1): head g's table size is the
 * (g+1)-th prime after ple_vocab_base, offsets their prefix sums; multiplier j = 2 (splitmix64(seed +
 * 0x9E3779B97F4A7C15 (j+1)) mod half) + 1 with half = floor((2^63-1) / n_vocab) / 2 and seed 1234 (the
 * config default). rows = the table's row count (the sum padded up to a multiple of 128). n_p =
 * (ple_ngram - 1) * ple_heads_per <= 64 heads, ple_ngram <= 8. */
typedef struct synth_ple_hash {
    uint64_t mult[8], size[64], offset[64];
    int n_mult, n_heads;
    int64_t rows;
} synth_ple_hash;
void synth_ple_hash_make(const synth_preset *p, synth_ple_hash *h);

const char *synth_mix_name(enum synth_mix m); /* "q4_k_m", ... */
int synth_mix_from_name(const char *name);    /* -1 if unknown */
uint32_t synth_mix_file_type(enum synth_mix m); /* general.file_type (llama_ftype) */

/* llama-quantize's --tensor-type NAME=TYPE: under a llama-quantize mix, a quantizable tensor whose name
 * contains NAME gets TYPE instead of the mix's choice (then the same row fallback). llama-quantize takes NAME
 * as a regex it searches for; synth takes a plain substring, which is what a plain name means there too. */
#define SYNTH_MAX_OVERRIDES 8
typedef struct synth_override {
    char name[48];
    enum qtype type;
} synth_override;

/* A mix and its overrides: what llama-quantize's file type and --tensor-type options say together. */
typedef struct synth_quant {
    enum synth_mix mix;
    int n_ov;
    synth_override ov[SYNTH_MAX_OVERRIDES];
} synth_quant;

/* How a tensor's values are drawn. */
enum synth_init {
    SYNTH_INIT_WEIGHT,     /* zero-mean noise of std `a` (quantized: quant_random_blocks with scale a) */
    SYNTH_INIT_UNIFORM,    /* uniform in [a, b) (norms ~1, ssm_a = -exp(A_log) < 0, conv taps) */
    SYNTH_INIT_ROPE_FREQS, /* llama3 rope scaling factors, computed from the preset */
};

typedef struct synth_tensor {
    char name[64];
    uint32_t n_dims;
    int64_t ne[4]; /* unused dims 1 */
    enum qtype type;
    enum synth_init init;
    float a, b;
    int layer; /* -1 for global tensors */
} synth_tensor;

typedef struct synth_plan {
    synth_tensor *t;
    size_t n;
    int64_t n_params;
    uint64_t n_bytes; /* tensor data, without alignment padding */
} synth_plan;

/* Lists p's tensors in file order with their types under mix m (and q's overrides). Returns 0 or a negative
 * err code. */
int synth_plan_make(const synth_preset *p, enum synth_mix m, synth_plan *out, err *e);
int synth_plan_make_with(const synth_preset *p, const synth_quant *q, synth_plan *out, err *e);
void synth_plan_free(synth_plan *plan);

/* The type llama.cpp would give a tensor under q (the rules are in mix.c). n_layer_all counts the MTP
 * blocks; i_layer is the tensor's block (-1 for global tensors); i_ffn_down is its index among the file's
 * ffn_down tensors in llama-quantize's order (by block, then name), -1 for other tensors. */
enum qtype synth_tensor_type(const synth_preset *p, const synth_quant *q, const char *name, uint32_t n_dims,
                             const int64_t *ne, int i_layer, int64_t n_layer_all, int i_ffn_down);

/* A gpt2-style (byte-level BPE) vocabulary of p->n_vocab tokens: 256 byte tokens in GPT-2's byte-to-
 * unicode order, merged tokens "to", "tok", "tok0", "tok1", ... (each one merge of two earlier tokens, so
 * every merge's result is a token), the model's special tokens at their real ids, and [PADn] padding. */
typedef struct synth_vocab {
    char **tokens;     /* n_vocab NUL-terminated strings */
    int32_t *types;    /* llama token types: 1 normal, 3 control, 4 user-defined, 5 unused, 6 byte */
    char **merges;     /* "left right" */
    size_t n_tokens, n_merges;
    int32_t bos, eos, pad;
    bool add_bos, add_eos;
    const char *pre;           /* tokenizer.ggml.pre */
    const char *chat_template; /* static */
    char *arena;               /* all strings live here */
} synth_vocab;

int synth_vocab_build(const synth_preset *p, synth_vocab *v, err *e);
void synth_vocab_free(synth_vocab *v);

/* Progress: called now and then while writing with bytes written so far and the total. */
typedef void (*synth_progress_fn)(void *ud, uint64_t done, uint64_t total);

/* Writes p under mix m (and q's overrides, which general.description records) with seed to path. Returns 0
 * or a negative err code. */
int synth_write(const synth_preset *p, enum synth_mix m, uint64_t seed, const char *path,
                synth_progress_fn progress, void *ud, err *e);
int synth_write_with(const synth_preset *p, const synth_quant *q, uint64_t seed, const char *path,
                     synth_progress_fn progress, void *ud, err *e);

#endif
