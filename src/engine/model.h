/* model: a loaded model — hyperparameters and typed weights per architecture — and its loader.
 *
 * model_load opens a GGUF, reads `general.architecture`, and hands it to that architecture's loader
 * (qwen35.c, ...), which checks every tensor's presence, shape and type and binds it through the backend.
 * Errors name the tensor or key and say what was expected and found.
 * Ownership: a model owns its gguf_file (weights may point into its mapping), the backend's weight
 * storage and the F32 copies of widened tensors (model_bind_f32); it does not own the backend, which must
 * outlive it. */
#ifndef LLM170_ENGINE_MODEL_H
#define LLM170_ENGINE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "backends/backend.h"
#include "gguf/gguf.h"

enum model_arch { ARCH_QWEN35, ARCH_QWEN35MOE, ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3, ARCH_GEMMA3, ARCH_QWEN4EXP, ARCH_COUNT };

/* "qwen35", "qwen35moe", "llama", "qwen2", "qwen3", "gemma3", "qwen4exp" (the GGUF general.architecture values) */
const char *model_arch_name(enum model_arch a);

typedef struct model model;
typedef struct fwd_ctx fwd_ctx;
typedef struct fwd_span fwd_span;

/* One buffer of a block's per-sequence state (engine/kv.h): rows of `width` values of `type` (the
 * cache's row layout, qtype_row_bytes each); recurrent state (F32) is zeroed when the sequence is reset
 * and travels in checkpoints, a cache (KV) does neither. */
typedef struct state_buf {
    enum qtype type;
    int64_t rows, width;
    bool recurrent;
} state_buf;
#define STATE_MAX_BUFS 4

/* What a context asks of its sequence state: positions and the KV cache's types. */
typedef struct state_plan {
    int n_ctx;
    enum qtype type_k, type_v;
} state_plan;

/* An architecture (models/registry.c holds the table: one line each). */
typedef struct arch_def {
    enum model_arch id;
    const char *name;   /* general.architecture */
    /* reads hparams, binds and checks every tensor */
    int (*load)(model *m, err *e);
    /* the trunk of a pass: from the inputs fwd_begin uploaded to the residual stream w.x after the last
     * block (model_forward then runs the shared output head) */
    void (*forward)(model *m, fwd_ctx *c, const fwd_span *spans, int n_spans);
    /* block il's per-sequence state for the plan: fills out[] and returns how many buffers */
    int (*block_state)(const model *m, int il, const state_plan *sp, state_buf out[STATE_MAX_BUFS]);
    /* the MTP block, or NULL: logits / hidden_out of every row, or of the last only (last_only: a drafter
     * catching up on rows whose predictions it already knows pays the vocabulary-wide head once) */
    int (*mtp)(model *m, fwd_ctx *c, int seq, const float *hidden, const int32_t *next, int T, bool last_only,
               float *logits, float *hidden_out, err *e);
} arch_def;

/* The registry's entry for a general.architecture value, or NULL. */
const arch_def *arch_find(const char *name);
/* "qwen35, qwen35moe, ..." */
const char *arch_names(void);

/* Hyperparameters; names follow the GGUF keys they come from. */
typedef struct hparams {
    int n_vocab;
    int n_embd;            /* C */
    int n_layer;           /* trunk layers (block_count - nextn_predict_layers) */
    int n_block;           /* block_count: trunk + MTP blocks */
    int n_nextn;           /* MTP blocks (nextn_predict_layers) */
    int n_ctx_train;
    float eps;             /* attention.layer_norm_rms_epsilon */
    /* full attention */
    int n_head;            /* Hq */
    int n_head_kv;         /* Hkv */
    int head_dim;          /* D (attention.key_length == value_length) */
    int n_rot;             /* rope.dimension_count */
    float rope_theta;      /* rope.freq_base (gemma3: of the global layers) */
    /* dense-attention archs (llama.c, gemma3.c); qwen35 uses neither */
    float rope_freq_scale; /* 1 / rope.scaling.factor (linear scaling); 1 = none */
    float attn_scale;      /* softmax scale of q.k: 1/sqrt(D), gemma3's 27B 1/sqrt(C/Hq) */
    /* sliding-window attention (gemma3) */
    int n_swa;             /* attention.sliding_window; 0 = none */
    float rope_theta_swa;  /* rope.freq_base_swa of the sliding-window layers */
    /* qwen35 */
    int full_attn_interval;
    /* gated delta net */
    int ssm_conv;          /* K (ssm.conv_kernel) */
    int ssm_dk;            /* Dk (ssm.state_size) */
    int ssm_hk;            /* Hk (ssm.group_count) */
    int ssm_hv;            /* Hv (ssm.time_step_rank) */
    int ssm_dv;            /* Dv = ssm.inner_size / Hv */
    /* feed-forward */
    int n_ff;              /* dense width */
    int n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    /* qwen4exp: hyper-connections, QSA indexer, PLE (0 / -1 when absent) */
    int hc_count;          /* S residual streams (hyper_connection.count) */
    int hc_rank;           /* R (hyper_connection.low_rank) */
    int idx_heads, idx_dim; /* Hi, Di (attention.indexer.head_count / key_length) */
    int idx_budget;        /* B tokens (attention.indexer.top_k) */
    int idx_ratio;         /* c tokens per compressed block (attention.compress_ratios) */
    int ple_layer;         /* the PLE block (ple.layers[0], 0-based); valid when ple_dim > 0 */
    int ple_conv;          /* K_p (ple.conv_kernel); dilation = ngram size */
    int ple_dim;           /* d_p: width of one n-gram table row (embedding_length_per_layer_input); 0 = no PLE */
    ngram_hash ple_hash;   /* multipliers, head table ranges, reset token */
} hparams;

/* One block's weights; members not used by the block's kind have data == NULL. Shapes in GGUF order
 * {in, out[, experts]}. */
typedef struct layer {
    bool is_gdn;            /* Gated DeltaNet mixer, else (gated) full attention */
    bool is_swa;            /* sliding-window attention (gemma3's local layers) */
    weight attn_norm;       /* {C} */
    weight post_attention_norm; /* {C} qwen35: before the FFN; gemma3: on the attention output */
    /* dense attention blocks (llama, qwen2, qwen3, gemma3) */
    weight attn_q_bias;     /* {Hq*D} qwen2 (optional elsewhere) */
    weight attn_k_bias, attn_v_bias; /* {Hkv*D} */
    weight attn_output_bias; /* {C} optional */
    weight ffn_norm;        /* {C} before the FFN */
    weight post_ffw_norm;   /* {C} gemma3: on the FFN output */
    /* gated full attention */
    weight attn_q;          /* {C, 2*Hq*D}: per head [query | gate] */
    weight attn_k, attn_v;  /* {C, Hkv*D} */
    weight attn_output;     /* {Hq*D, C} */
    weight attn_q_norm, attn_k_norm; /* {D} */
    /* gated delta net */
    weight attn_qkv;        /* {C, 2*Hk*Dk + Hv*Dv} */
    weight attn_gate;       /* {C, Hv*Dv} (z) */
    weight ssm_conv1d;      /* {K, 2*Hk*Dk + Hv*Dv} */
    weight ssm_dt;          /* {Hv} dt bias */
    weight ssm_a;           /* {Hv} = -exp(A_log) */
    weight ssm_beta, ssm_alpha; /* {C, Hv} */
    weight ssm_norm;        /* {Dv} gated-norm weight (not shifted) */
    weight ssm_out;         /* {Hv*Dv, C} */
    /* dense SwiGLU */
    weight ffn_gate, ffn_up; /* {C, I} */
    weight ffn_down;         /* {I, C} */
    /* MoE */
    weight ffn_gate_inp;     /* {C, E} router */
    weight ffn_gate_exps, ffn_up_exps; /* {C, Ie, E} */
    weight ffn_down_exps;    /* {Ie, C, E} */
    weight ffn_gate_inp_shexp; /* {C} shared-expert gate (one output) */
    weight ffn_gate_shexp, ffn_up_shexp; /* {C, Is} */
    weight ffn_down_shexp;   /* {Is, C} */
    /* qwen4exp: hyper-connections around both sub-blocks; QSA indexer; PLE */
    weight hc_attn_norm, hc_ffn_norm;     /* {S*C} grouped norm (+1 folded) */
    weight hc_attn_down, hc_ffn_down;     /* {S*C, R} */
    weight hc_attn_up, hc_ffn_up;         /* {R, S*C} */
    weight hc_attn_inject, hc_ffn_inject; /* {S*C, S} */
    weight idx_q_proj;      /* {C, Hi*Di} */
    weight idx_k_proj;      /* {C, Di} */
    weight idx_q_norm, idx_k_norm; /* {Di} */
    weight ple_key;         /* {n_p*d_p, S*C} */
    weight ple_value;       /* {n_p*d_p, C} */
    weight ple_norm_key, ple_norm_query, ple_norm_conv; /* {S*C} grouped */
    weight ple_conv1d;      /* {K_p, S*C} */
    /* MTP block only */
    weight nextn_eh_proj;    /* {2C, C} */
    weight nextn_enorm, nextn_hnorm, nextn_shared_head_norm; /* {C} */
} layer;

struct model {
    enum model_arch arch;
    const arch_def *def;
    hparams hp;
    gguf_file *gguf;
    backend *be;
    weight token_embd;   /* {C, V} */
    weight output_norm;  /* {C} */
    weight output;       /* {C, V}; == token_embd when tied */
    bool tied;
    weight output_bias;  /* {V} optional (qwen2 files may carry one) */
    weight rope_freqs;   /* {n_rot/2} optional: llama3 RoPE per-pair frequency divisors */
    weight output_hc_norm, output_hc_down, output_hc_up; /* qwen4exp's final mixer: {S*C}, {S*C, R}, {R, S*C} */
    weight per_layer_token_embd; /* qwen4exp PLE n-gram table {d_p, rows} */
    layer *layers;       /* n_block */
    void **owned;        /* n_owned host buffers (model_bind_f32's widened copies), freed by model_free */
    int n_owned;
};

/* Loads path on backend be. Returns 0 and *out, or a negative err code with a message. */
int model_load(model **out, const char *path, backend *be, err *e);
void model_free(model *m);


/* ---- shared loader helpers (model.c) ---- */
/* Binds tensor `name` with exactly n_dims dims ne[0..n_dims) into w. required=false: an absent tensor
 * leaves w zeroed and returns 0. Any present tensor with another shape is an error naming it. */
int model_bind(model *m, weight *w, const char *name, int n_dims, const int64_t *ne, bool required, err *e);
/* Requires an F32 weight (norms, biases, gates read as plain floats). */
int model_require_f32(const weight *w, err *e);
/* model_bind for a weight read as plain floats: an F32 tensor binds as it is, an F16 or BF16 one is widened
 * (exactly) to an F32 copy the model owns and that copy is bound, any other type is an error naming it.
 * For small tensors a converter may store in half precision that llama.cpp's graph casts to F32. */
int model_bind_f32(model *m, weight *w, const char *name, int n_dims, const int64_t *ne, bool required, err *e);
/* Reads "{arch}.{key}" as u32 into *out (required) */
int model_get_u32(model *m, const char *key, int *out, err *e);
/* Reads "{arch}.{key}" as f32 into *out; an absent key leaves *out unchanged when !required. */
int model_get_f32(model *m, const char *key, float *out, bool required, err *e);

#endif
