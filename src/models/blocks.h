/* blocks (internal to src/models/): the building blocks the architecture files share: common
 * hyperparameters, binding of attention / FFN / norm weights, attention with its KV cache, a feed-forward
 * with a given activation, and the per-sequence state of an attention block.
 *
 * Shapes: T tokens of the pass, C = n_embd, Hq/Hkv heads of D = head_dim, I = n_ff, V = n_vocab.
 * Activations live in the context's arena (fwd_work); blocks read w.h and write w.y. */
#ifndef LLM170_MODELS_BLOCKS_H
#define LLM170_MODELS_BLOCKS_H

#include "engine/forward.h"

/* Reads the hyperparameters every dense-attention arch has (block_count, widths, heads, key_length,
 * rope base / dimension / linear scaling, rms epsilon) and checks them; attn_scale = 1/sqrt(D). */
int llama_read_hparams(model *m, err *e);

/* Reads what the GDN + gated-attention hybrids (qwen35, qwen4exp) share: block_count, context_length,
 * widths, attention heads and key/value length, rope dims and base, eps, the ssm.* keys (ssm_dv derived), and
 * checks their consistency. */
int blk_read_hybrid_hparams(model *m, err *e);

/* Binds token_embd, output_norm, output (tied to token_embd when absent), output.bias if present,
 * and sizes the layer array. */
int blk_bind_globals(model *m, err *e);

/* Binds block il's attention: attn_norm, attn_q/k/v/output with their optional biases, and the q/k
 * norms ({D}; required iff qk_norm). Refuses fused or extra tensors this code would silently skip. */
int llama_bind_attention(model *m, int il, bool qk_norm, err *e);

/* Binds blk.il.<suffix> as an F32 norm weight of C values. */
int blk_bind_norm(model *m, int il, const char *suffix, weight *w, err *e);

/* Binds block il's FFN projections ffn_gate/ffn_up {C, I} and ffn_down {I, C}. */
int blk_bind_ffn(model *m, int il, err *e);

/* Self-attention of block il over every span: reads w.h, writes w.y. q/k get their biases, their
 * per-head norms (when bound), RoPE with rp (and the model's rope_freqs when present); new keys and
 * values are appended to each span's cache; window is the sliding window or ATTN_NO_WINDOW. */
void llama_attention(model *m, fwd_ctx *c, int il, const fwd_span *spans, int n_spans, const rope_params *rp,
                     int window);

/* Appends a pass's keys k and values v ([T][Hkv*D]) to each span's cache of block il and attends the
 * queries q ([T][Hq*D]) over it into att: the one-token spans (decode steps) through attend_decode, up to
 * ATTN_DECODE_MAX_SEQS a call, the others span by span through store_rows and attention. */
void blk_attend_cache(model *m, fwd_ctx *c, int il, const fwd_span *spans, int n_spans, const float *q,
                      const float *k, const float *v, float *att, float scale, int window);

/* Gated feed-forward y = (act(h Wgate) * h Wup) Wdown with width I: reads w.h, writes w.y. */
enum blk_act { ACT_SILU, ACT_GELU_TANH };
void blk_ffn(model *m, fwd_ctx *c, const layer *L, int I, enum blk_act act);

/* Gated attention projections (qwen35 / qwen4exp): q and gate from the per-head interleaved attn_q, k, v;
 * q/k norms and partial NEOX RoPE. Reads w.h; q, gate [T][Hq*D], k, v [T][Hkv*D]; uses w.a as scratch. */
void blk_gated_qkv(model *m, fwd_ctx *c, const layer *L, float *q, float *gate, float *k, float *v);

/* Gated DeltaNet over every span (state buffers 0 = conv, 1 = S of block il): reads w.h, writes w.y; the
 * output gate is silu (qwen35) or sigmoid (qwen4exp). Uses w.a-d, w.f, w.g, w.beta. */
enum gdn_gate { GDN_GATE_SILU, GDN_GATE_SIGMOID };
void blk_gdn(model *m, fwd_ctx *c, const layer *L, int il, const fwd_span *spans, int n_spans, enum gdn_gate gate);

/* MoE with a shared expert (qwen35 spec §2.5): softmax router, top-k renormalised, grouped expert matmuls,
 * plus the shared expert times sigmoid(gate . x). Reads w.h, writes w.y; uses w.a-d and the moe slots. */
void blk_moe(model *m, fwd_ctx *c, const layer *L);

/* The per-sequence state of an attention block: k and v caches of n_ctx rows of Hkv*D values in the
 * plan's cache types. */
int blk_attention_state(const model *m, const state_plan *sp, state_buf out[STATE_MAX_BUFS]);

#endif
