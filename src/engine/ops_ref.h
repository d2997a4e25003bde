/* ops_ref: the naive CPU reference of every engine op, in plain float loops.
 *
 * These are the oracle: the fast CPU paths and every GPU kernel are tested against them. They favour
 * clarity over speed, allocate nothing (callers pass scratch where needed) and state their shapes.
 * Shape alphabet: T tokens, C channels (model width), Hq query heads, Hkv key/value heads of attention,
 * Hk key heads and Hv value heads of a Gated DeltaNet layer, D attention head dim, Dk/Dv GDN key/value
 * head dims, S cached positions. Arrays are row-major with the last-named dimension fastest. */
#ifndef LLM170_ENGINE_OPS_REF_H
#define LLM170_ENGINE_OPS_REF_H

#include <stdbool.h>
#include <stdint.h>

/* y[T][C] = x / sqrt(mean(x^2) + eps) * w   (w may be NULL: no weight). y may alias x. */
void ref_rms_norm(const float *x, const float *w, float *y, int T, int C, float eps);

/* RoPE pairings. NORM rotates adjacent dims (2i, 2i+1): llama GGUFs (the converter permutes llama's q/k
 * rows so this equals HF's rotate-half). NEOX rotates (i, i + n_rot/2): qwen2/qwen3/qwen35/gemma3. */
enum rope_mode { ROPE_NORM, ROPE_NEOX };

typedef struct rope_params {
    enum rope_mode mode;
    int n_rot;        /* dims rotated at the start of each head (even, <= D); the rest pass through */
    float theta;      /* frequency base (rope.freq_base) */
    float freq_scale; /* linear position scaling, 1 / rope.scaling.factor; 1 = none */
} rope_params;

/* x[T][H][D] in place: pair i (0 <= i < n_rot/2) of every head rotated by the angle
 *   pos[t] * freq_scale * theta^(-2i/n_rot) / factors[i]
 * factors: n_rot/2 per-pair divisors (llama3's rope_freqs), or NULL for all 1. */
void ref_rope(float *x, const int32_t *pos, int T, int H, int D, const rope_params *rp, const float *factors);

/* y[T][N] += b[N] (a bias row added to every token) */
void ref_add_bias(float *y, const float *b, int T, int N);

/* y[n] = gelu(g) * u with gelu's tanh approximation (GeGLU; y may alias g or u) */
void ref_geglu(const float *g, const float *u, float *y, int64_t n);

/* y[n] *= s */
void ref_scale(float *y, float s, int64_t n);

/* x[T][H][D] in place: y = x / sqrt(sum(x^2) + eps) * scale, per head. */
void ref_l2_norm(float *x, int T, int H, int D, float eps, float scale);

/* Causal GQA softmax attention for T new queries at positions qpos[t] over S cached keys at positions
 * kpos[s]: key s is visible to query t iff kpos[s] <= qpos[t] and, with a sliding window (window > 0),
 * qpos[t] - kpos[s] < window (the query itself plus window-1 keys before it, as HF and llama.cpp
 * count it); ATTN_NO_WINDOW sees the whole past. q[T][Hq][D], k/v[S][Hkv][D], out[T][Hq][D]; query
 * head h uses kv head h / (Hq/Hkv). scores is scratch of S floats. */
#define ATTN_NO_WINDOW 0
void ref_attention(const float *q, const float *k, const float *v, float *out, const int32_t *qpos,
                   const int32_t *kpos, int T, int S, int Hq, int Hkv, int D, float scale, int window,
                   float *scores);

/* Depthwise causal conv1d with state, then SiLU. x[T][Ch] raw inputs; state[(K-1)][Ch] the previous
 * K-1 raw inputs (oldest first), updated to the last K-1 inputs; w[Ch][K] (w[ch][K-1] multiplies the
 * current token); y[T][Ch]. */
void ref_conv1d_silu(const float *x, float *state, const float *w, float *y, int T, int Ch, int K);

/* Which key head value head j reads: qwen35 GGUFs tile value heads (j mod Hk); HF checkpoints group
 * them (j / (Hv/Hk)). */
enum gdn_head_map { GDN_HEADS_TILED, GDN_HEADS_GROUPED };

static inline int gdn_key_head(int j, int Hk, int Hv, enum gdn_head_map map) {
    return map == GDN_HEADS_TILED ? j % Hk : j / (Hv / Hk);
}

/* One token of the gated delta rule, every value head j (all fp32):
 *   S_j <- exp(g_j) * S_j;  u = beta_j * (v_j - S_j^T k);  S_j <- S_j + k u^T;  o_j = S_j^T q
 * with q, k of key head gdn_key_head(j) (already L2-normalised; q also scaled by Dk^-1/2).
 * S[Hv][Dk][Dv], q/k[Hk][Dk], v[Hv][Dv], g/beta[Hv], o[Hv][Dv]. */
void ref_gdn_step(float *S, const float *q, const float *k, const float *v, const float *g,
                  const float *beta, float *o, int Hk, int Hv, int Dk, int Dv, enum gdn_head_map map);

/* The same rule over T tokens in the chunked (WY / UT transform) form, chunks of `chunk` tokens, starting
 * from state S and leaving the final state in S. q/k[T][Hk][Dk], v[T][Hv][Dv], g/beta[T][Hv],
 * o[T][Hv][Dv]. scratch must hold ref_gdn_chunk_scratch(chunk, Dk, Dv) floats. Equal to T calls of
 * ref_gdn_step up to float rounding. */
void ref_gdn_chunk(float *S, const float *q, const float *k, const float *v, const float *g,
                   const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv, int chunk,
                   enum gdn_head_map map, float *scratch);
int64_t ref_gdn_chunk_scratch(int chunk, int Dk, int Dv);

/* MoE routing of one token: p[E] = softmax(logits) (sigmoid(logits) when `sigmoid`), sel[K] the K experts
 * of largest p, best first, ties to the lower expert id, w[K] their p, divided by their sum when renorm.
 * p is the caller's scratch of E floats (it holds the gate values afterwards). Needs 1 <= K <= E. */
void ref_moe_route(const float *logits, int E, int K, bool sigmoid, bool renorm, float *p, int32_t *sel, float *w);

/* ---- hyper-connections, n-gram embeddings (PLE), QSA sparse attention: qwen4exp (ops_ref_hc.c) ----
 * Extra alphabet: S residual streams of width D (a wide row is [S][D]), Hi indexer heads, c tokens per
 * compressed block, n_sel selected blocks. */

/* Grouped RMS norm: y[T][G][D] = x / sqrt(mean over the group's D values of x^2 + eps) * w[G*D] (each
 * group its own slice of w; w may be NULL). y may alias x. */
void ref_rms_norm_groups(const float *x, const float *w, float *y, int T, int G, int D, float eps);

/* y[n] = silu(s * x) (y may alias x) */
void ref_silu_scaled(const float *x, float *y, float s, int64_t n);

/* Hyper-connection read: m[T][D] = (1/S) sum_s sigmoid(gate[t][s][d]) * xn[t][s][d] (a mean over streams). */
void ref_hc_mix(const float *xn, const float *gate, float *m, int T, int S, int D);

/* Hyper-connection write: X[t][s][:] += 2 sigmoid(inj[t][s] / S) * y[t][:]; X [T][S][D], y [T][D], inj [T][S]. */
void ref_hc_add(float *X, const float *y, const float *inj, int T, int S, int D);

/* PLE gate: per stream z = key[t][s] . query[t][s] / sqrt(D), g = sign(z) sqrt(max(|z|, 1e-6)) (sign(0) = 0),
 * out[t][s][:] = sigmoid(g) * v[t][:]. key, query, out [T][S][D]; v [T][D]. */
void ref_ple_gate(const float *key, const float *query, const float *v, float *out, int T, int S, int D);

/* Depthwise causal conv1d with dilation `dil`, then SiLU: y[t][c] = silu(sum_j w[c][j] x[t - (K-1-j) dil][c]).
 * state[(K-1) dil][Ch]: the previous inputs, oldest first (zeros for a fresh sequence), updated to the
 * last (K-1) dil inputs. x, y [T][Ch]; w [Ch][K]. ref_conv1d_silu is dil = 1. */
void ref_conv1d_dilated_silu(const float *x, float *state, const float *w, float *y, int T, int Ch, int K, int dil);

/* Hashed n-gram rows (qwen4exp PLE, spec qwen4exp.md 2.7): token t with context c_0 = ids[t], c_1, .. c_{N-1}
 * (earlier tokens; once a predecessor is `eos` or missing it and everything before it read as eos),
 * mix_n = XOR_{j<n} c_j * mult[j] (uint64), head g of n-gram order n = 2 + g / heads_per gets row
 * mix_n % size[g] + offset[g]. rows[T][n_heads]. hist[N-1] carries the last N-1 tokens (most recent last)
 * as id + 1 in floats, 0 = none (reads as eos): a zeroed state is a fresh sequence. */
#define NGRAM_MAX_N 4
#define NGRAM_MAX_HEADS 64
typedef struct ngram_hash {
    int n;           /* N, the largest n-gram */
    int heads_per;   /* heads per n-gram order; n_heads = (N-1) * heads_per */
    int32_t eos;     /* the reset token */
    uint64_t mult[NGRAM_MAX_N];
    uint64_t size[NGRAM_MAX_HEADS], offset[NGRAM_MAX_HEADS];
} ngram_hash;
void ref_ngram_rows(const int32_t *ids, float *hist, int32_t *rows, int T, const ngram_hash *h);

/* QSA block keys b0 <= b < b1: blk[b] = rope at position b*c (rms_norm(mean_{j<c} raw[b*c + j]) * w).
 * raw [>= b1*c][D] indexer keys, blk [>= b1][D]; the rope of rp (its n_rot first dims, the rest pass). */
void ref_qsa_block_keys(const float *raw, float *blk, int b0, int b1, int c, int D, const float *w, float eps,
                        const rope_params *rp);

/* QSA block selection for T queries at positions qpos[t]: n = qpos + 1 visible tokens, nb = n / c complete
 * blocks. nb <= n_sel: every block. Else the n_sel blocks of largest score sum_h relu(q[t][h] . blk[b])
 * (b < nb; ties to the lower block). sel[T][n_sel]: the blocks in ascending order, then -1. q [T][Hi][D];
 * scores: scratch of nb floats. */
void ref_qsa_select(const float *q, const float *blk, const int32_t *qpos, int32_t *sel, int T, int Hi, int D,
                    int c, int n_sel, float *scores);

/* ref_attention restricted to each query's selection: the rows of blocks sel[t][..] (b*c .. b*c+c-1) and
 * the tail rows c*nb .. qpos[t] (the incomplete block). k/v [S][Hkv][D]; scores: scratch of n_sel*c + c
 * floats. */
void ref_attention_sparse(const float *q, const float *k, const float *v, float *out, const int32_t *qpos,
                          const int32_t *sel, int T, int Hq, int Hkv, int D, float scale, int c, int n_sel,
                          float *scores);

#endif
