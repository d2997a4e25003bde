/* synth: the tensor plan of a preset, the quantization-mix rules, and the streaming writer.
 * (Presets are in presets.c, the mix rules in mix.c, the tokenizer in vocab.c; the API and ownership are in
 * synth.h.)
 *
 * Shapes are llama.cpp's (ggml ne order [in, out, experts]); the loader (src/models/qwen35.cpp,
 * qwen35moe.cpp, llama.cpp of llama.cpp) creates each tensor with exactly these dims:
 *   global       token_embd {H, V}, output_norm {H}, output {H, V} (absent when tied),
 *                rope_freqs {rope_dim/2} (llama with llama3 rope scaling)
 *   attention    attn_q {H, n_q*d_h} (x2 for qwen35*: per-head [q | gate]), attn_k/attn_v {H, n_kv*d_h},
 *                attn_output {n_q*d_h, H}; qwen35*: attn_q_norm/attn_k_norm {d_h}
 *   GDN          attn_qkv {H, 2*n_k*d_k + n_v*d_v}, attn_gate {H, n_v*d_v}, ssm_conv1d {K, D_c},
 *                ssm_dt.bias {n_v}, ssm_a {n_v}, ssm_beta/ssm_alpha {H, n_v}, ssm_norm {d_v},
 *                ssm_out {n_v*d_v, H}
 *   dense FFN    ffn_gate/ffn_up {H, I}, ffn_down {I, H}
 *   MoE FFN      ffn_gate_inp {H, E}, ffn_gate_exps/ffn_up_exps {H, I_e, E}, ffn_down_exps {I_e, H, E},
 *                ffn_gate_inp_shexp {H}, ffn_gate_shexp/ffn_up_shexp {H, I_s}, ffn_down_shexp {I_s, H}
 *   MTP block    blk.{n_layer}: an attention block + FFN + nextn.eh_proj {2H, H},
 *                nextn.enorm/hnorm/shared_head_norm {H}
 *   qwen4exp     (spec §3.3; no attn_norm/post_attention_norm/output_norm: hyper-connections replace them)
 *                W = S*H: every block hc_{attn,ffn}_norm {W}, _down {W, R}, _up {R, W}, _inject {W, S};
 *                QSA blocks: the attention above + indexer.q_proj {H, n_i*d_i}, indexer.k_proj {H, d_i},
 *                indexer.q_norm/k_norm {d_i}; the PLE block: ple_key {n_p*d_p, W}, ple_value {n_p*d_p, H},
 *                ple_norm_key/query/conv {W}, ple_conv1d {K_p, W}; global output_hc_norm/down/up and
 *                per_layer_token_embd {d_p, rows}; MoE as above with ffn_gate_inp_shexp 1-D
 * Value heads are in the converter's tiled order, but with random weights the order is invisible. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"
#include "base/rng.h"
#include "base/timer.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "synth/synth.h"

static bool is_prime(uint64_t n) {
    if (n < 2) return false;
    for (uint64_t d = 2; d * d <= n; d++)
        if (n % d == 0) return false;
    return true;
}

void synth_ple_hash_make(const synth_preset *p, synth_ple_hash *h) {
    memset(h, 0, sizeof *h);
    h->n_mult = (int)p->ple_ngram;
    h->n_heads = (int)((p->ple_ngram - 1) * p->ple_heads_per);
    if (h->n_mult < 2 || h->n_mult > 8 || h->n_heads > 64 || p->n_vocab <= 0) return;
    const uint64_t seed = 1234, golden = 0x9E3779B97F4A7C15ull; /* base = seed + 10007 * (index in the PLE list = 0) */
    const uint64_t half = ((uint64_t)INT64_MAX / (uint64_t)p->n_vocab) / 2;
    for (int j = 0; j < h->n_mult; j++) {
        uint64_t v = seed + golden * (uint64_t)(j + 1);
        h->mult[j] = 2 * (rng_splitmix64(&v) % half) + 1;
    }
    uint64_t prime = (uint64_t)p->ple_vocab_base, off = 0;
    for (int g = 0; g < h->n_heads; g++) {
        do prime++;
        while (!is_prime(prime));
        h->size[g] = prime;
        h->offset[g] = off;
        off += prime;
    }
    h->rows = (int64_t)((off + 127) / 128 * 128);
}

/* ---- the plan ---------------------------------------------------------------------------------- */

typedef struct planner {
    const synth_preset *p;
    const synth_quant *q;
    synth_plan *plan;
    size_t cap;
    int64_t n_layer_all;
    int rc;
} planner;

/* Adds one tensor; dims d0.. (ne order), 0 ends the list. */
static void add(planner *pl, int layer, const char *suffix, enum synth_init init, float a, float b, int64_t d0,
                int64_t d1, int64_t d2) {
    if (pl->rc) return;
    if (pl->plan->n == pl->cap) {
        size_t cap = pl->cap ? 2 * pl->cap : 256;
        synth_tensor *t = realloc(pl->plan->t, cap * sizeof *t);
        if (!t) {
            pl->rc = ERR_NOMEM;
            return;
        }
        pl->plan->t = t;
        pl->cap = cap;
    }
    synth_tensor *t = &pl->plan->t[pl->plan->n++];
    memset(t, 0, sizeof *t);
    if (layer >= 0)
        snprintf(t->name, sizeof t->name, "blk.%d.%s", layer, suffix);
    else
        snprintf(t->name, sizeof t->name, "%s", suffix);
    int64_t d[3] = {d0, d1, d2};
    t->n_dims = 0;
    for (int i = 0; i < 4; i++) t->ne[i] = 1;
    for (int i = 0; i < 3 && d[i] > 0; i++) t->ne[t->n_dims++] = d[i];
    t->init = init;
    t->a = a;
    t->b = b;
    t->layer = layer;
}

/* llama-quantize's tensor order (weight_name_comparer): by block, global tensors (-1) first, then by name. */
static bool quantize_order_before(const synth_tensor *a, const synth_tensor *b) {
    return a->layer != b->layer ? a->layer < b->layer : strcmp(a->name, b->name) < 0;
}

/* Sets every planned tensor's type. llama-quantize's ffn_down rules count the tensors whose name contains
 * "ffn_down" (hc_ffn_down too: its categories are substrings) in its own order, not the file's, so each
 * one's index is its rank among them in that order. */
static void assign_types(planner *pl) {
    synth_plan *plan = pl->plan;
    for (size_t i = 0; i < plan->n; i++) {
        synth_tensor *t = &plan->t[i];
        int i_ffn_down = -1;
        if (strstr(t->name, "ffn_down")) {
            i_ffn_down = 0;
            for (size_t j = 0; j < plan->n; j++)
                i_ffn_down += strstr(plan->t[j].name, "ffn_down") && quantize_order_before(&plan->t[j], t);
        }
        t->type = synth_tensor_type(pl->p, pl->q, t->name, t->n_dims, t->ne, t->layer, pl->n_layer_all, i_ffn_down);
    }
}

#define W 0.02f /* weight std: the usual initializer_range */
#define WEIGHT(pl, l, s, d0, d1, d2) add(pl, l, s, SYNTH_INIT_WEIGHT, W, 0, d0, d1, d2)
#define NORM(pl, l, s, d0) add(pl, l, s, SYNTH_INIT_UNIFORM, 0.9f, 1.1f, d0, 0, 0)

/* the llama block (attention, then the FFN; no GDN, no gate in attn_q): llama and qwen2 */
static bool llama_block(const synth_preset *p) { return p->arch == SYNTH_ARCH_LLAMA || p->arch == SYNTH_ARCH_QWEN2; }

static void plan_attention(planner *pl, int l) {
    const synth_preset *p = pl->p;
    const bool gated = !llama_block(p); /* qwen35*: attn_q holds [q | gate] per head */
    WEIGHT(pl, l, "attn_q.weight", p->n_embd, p->n_head * p->head_dim * (gated ? 2 : 1), 0);
    WEIGHT(pl, l, "attn_k.weight", p->n_embd, p->n_head_kv * p->head_dim, 0);
    WEIGHT(pl, l, "attn_v.weight", p->n_embd, p->n_head_kv * p->head_dim, 0);
    if (p->arch == SYNTH_ARCH_QWEN2) { /* F32 like every 1-D tensor (synth_tensor_type) */
        add(pl, l, "attn_q.bias", SYNTH_INIT_UNIFORM, -0.5f, 0.5f, p->n_head * p->head_dim, 0, 0);
        add(pl, l, "attn_k.bias", SYNTH_INIT_UNIFORM, -0.5f, 0.5f, p->n_head_kv * p->head_dim, 0, 0);
        add(pl, l, "attn_v.bias", SYNTH_INIT_UNIFORM, -0.5f, 0.5f, p->n_head_kv * p->head_dim, 0, 0);
    }
    WEIGHT(pl, l, "attn_output.weight", p->n_head * p->head_dim, p->n_embd, 0);
    if (gated) {
        NORM(pl, l, "attn_q_norm.weight", p->head_dim);
        NORM(pl, l, "attn_k_norm.weight", p->head_dim);
    }
}

static void plan_gdn(planner *pl, int l) {
    const synth_preset *p = pl->p;
    const int64_t dk = p->ssm_groups * p->ssm_state, dv = p->ssm_heads * p->ssm_state, dc = 2 * dk + dv;
    WEIGHT(pl, l, "attn_qkv.weight", p->n_embd, dc, 0);
    WEIGHT(pl, l, "attn_gate.weight", p->n_embd, dv, 0);
    /* depthwise conv taps: kaiming-uniform bound for fan-in K=4 is 0.5 */
    add(pl, l, "ssm_conv1d.weight", SYNTH_INIT_UNIFORM, -0.5f, 0.5f, p->ssm_conv, dc, 0);
    add(pl, l, "ssm_dt.bias", SYNTH_INIT_UNIFORM, 0.5f, 1.5f, p->ssm_heads, 0, 0);
    /* ssm_a = -exp(A_log) with A ~ U(1, 16) as HF initializes A_log: always negative */
    add(pl, l, "ssm_a", SYNTH_INIT_UNIFORM, -16.0f, -1.0f, p->ssm_heads, 0, 0);
    WEIGHT(pl, l, "ssm_beta.weight", p->n_embd, p->ssm_heads, 0);
    WEIGHT(pl, l, "ssm_alpha.weight", p->n_embd, p->ssm_heads, 0);
    NORM(pl, l, "ssm_norm.weight", p->ssm_state);
    WEIGHT(pl, l, "ssm_out.weight", dv, p->n_embd, 0);
}

static void plan_ffn(planner *pl, int l) {
    const synth_preset *p = pl->p;
    if (p->n_expert == 0) {
        WEIGHT(pl, l, "ffn_gate.weight", p->n_embd, p->n_ff, 0);
        WEIGHT(pl, l, "ffn_up.weight", p->n_embd, p->n_ff, 0);
        WEIGHT(pl, l, "ffn_down.weight", p->n_ff, p->n_embd, 0);
        return;
    }
    WEIGHT(pl, l, "ffn_gate_inp.weight", p->n_embd, p->n_expert, 0);
    WEIGHT(pl, l, "ffn_gate_exps.weight", p->n_embd, p->n_ff_exp, p->n_expert);
    WEIGHT(pl, l, "ffn_up_exps.weight", p->n_embd, p->n_ff_exp, p->n_expert);
    WEIGHT(pl, l, "ffn_down_exps.weight", p->n_ff_exp, p->n_embd, p->n_expert);
    WEIGHT(pl, l, "ffn_gate_inp_shexp.weight", p->n_embd, 0, 0);
    WEIGHT(pl, l, "ffn_gate_shexp.weight", p->n_embd, p->n_ff_shexp, 0);
    WEIGHT(pl, l, "ffn_up_shexp.weight", p->n_embd, p->n_ff_shexp, 0);
    WEIGHT(pl, l, "ffn_down_shexp.weight", p->n_ff_shexp, p->n_embd, 0);
}

/* A hyper-connection module (spec §2.3) named PREFIX_{norm,down,up,inject}; inject only when with_inject. */
static void plan_hc(planner *pl, int l, const char *prefix, bool with_inject) {
    const synth_preset *p = pl->p;
    const int64_t Wd = p->hc_count * p->n_embd;
    char name[48];
    snprintf(name, sizeof name, "%s_norm.weight", prefix);
    NORM(pl, l, name, Wd);
    snprintf(name, sizeof name, "%s_down.weight", prefix);
    WEIGHT(pl, l, name, Wd, p->hc_rank, 0);
    snprintf(name, sizeof name, "%s_up.weight", prefix);
    WEIGHT(pl, l, name, p->hc_rank, Wd, 0);
    if (!with_inject) return;
    snprintf(name, sizeof name, "%s_inject.weight", prefix);
    WEIGHT(pl, l, name, Wd, p->hc_count, 0);
}

/* qwen4exp's blocks: HC + (GDN | QSA with its indexer) + HC + MoE; PLE on one GDN block. */
static void plan_qwen4exp(planner *pl) {
    const synth_preset *p = pl->p;
    const int64_t Wd = p->hc_count * p->n_embd, n_p = (p->ple_ngram - 1) * p->ple_heads_per;
    for (int l = 0; l < (int)p->n_layer; l++) {
        plan_hc(pl, l, "hc_attn", true);
        plan_hc(pl, l, "hc_ffn", true);
        if ((l + 1) % p->full_attn_interval == 0) {
            plan_attention(pl, l);
            WEIGHT(pl, l, "indexer.q_proj.weight", p->n_embd, p->idx_heads * p->idx_dim, 0);
            WEIGHT(pl, l, "indexer.k_proj.weight", p->n_embd, p->idx_dim, 0);
            NORM(pl, l, "indexer.q_norm.weight", p->idx_dim);
            NORM(pl, l, "indexer.k_norm.weight", p->idx_dim);
        } else {
            plan_gdn(pl, l);
        }
        plan_ffn(pl, l);
        if (p->ple_dim > 0 && l == p->ple_layer) {
            WEIGHT(pl, l, "ple_key.weight", n_p * p->ple_dim, Wd, 0);
            WEIGHT(pl, l, "ple_value.weight", n_p * p->ple_dim, p->n_embd, 0);
            NORM(pl, l, "ple_norm_key.weight", Wd);
            NORM(pl, l, "ple_norm_query.weight", Wd);
            NORM(pl, l, "ple_norm_conv.weight", Wd);
            add(pl, l, "ple_conv1d.weight", SYNTH_INIT_UNIFORM, -0.5f, 0.5f, p->ple_conv, Wd, 0);
        }
    }
    plan_hc(pl, -1, "output_hc", false);
    if (p->ple_dim > 0) {
        synth_ple_hash h;
        synth_ple_hash_make(p, &h);
        WEIGHT(pl, -1, "per_layer_token_embd.weight", p->ple_dim, h.rows, 0);
    }
    WEIGHT(pl, -1, "output.weight", p->n_embd, p->n_vocab, 0);
}

int synth_plan_make(const synth_preset *p, enum synth_mix m, synth_plan *out, err *e) {
    const synth_quant q = {.mix = m};
    return synth_plan_make_with(p, &q, out, e);
}

int synth_plan_make_with(const synth_preset *p, const synth_quant *q, synth_plan *out, err *e) {
    memset(out, 0, sizeof *out);
    if ((unsigned)q->mix >= SYNTH_MIX_COUNT) return err_set(e, ERR_ARG, "synth: unknown mix %d", (int)q->mix);
    if (q->n_ov < 0 || q->n_ov > SYNTH_MAX_OVERRIDES)
        return err_set(e, ERR_ARG, "synth: %d tensor type overrides (at most %d)", q->n_ov, SYNTH_MAX_OVERRIDES);
    for (int i = 0; i < q->n_ov; i++)
        if (!q->ov[i].name[0] || !qtype_get(q->ov[i].type) || qtype_get(q->ov[i].type)->blck == 1)
            return err_set(e, ERR_ARG, "synth: override %d ('%s') needs a name and a block-quantized type", i,
                           q->ov[i].name);
    planner pl = {.p = p, .q = q, .plan = out, .n_layer_all = p->n_layer + p->n_mtp};
    WEIGHT(&pl, -1, "token_embd.weight", p->n_embd, p->n_vocab, 0);
    if (p->arch == SYNTH_ARCH_LLAMA && p->rope_scale_factor > 0)
        add(&pl, -1, "rope_freqs.weight", SYNTH_INIT_ROPE_FREQS, 0, 0, p->rope_dim / 2, 0, 0);
    if (p->arch == SYNTH_ARCH_QWEN4EXP) plan_qwen4exp(&pl);
    for (int l = 0; p->arch != SYNTH_ARCH_QWEN4EXP && l < (int)pl.n_layer_all; l++) {
        const bool mtp = l >= p->n_layer;
        NORM(&pl, l, "attn_norm.weight", p->n_embd);
        if (llama_block(p)) {
            plan_attention(&pl, l);
            NORM(&pl, l, "ffn_norm.weight", p->n_embd);
            plan_ffn(&pl, l);
            continue;
        }
        NORM(&pl, l, "post_attention_norm.weight", p->n_embd);
        if (mtp || (l + 1) % p->full_attn_interval == 0)
            plan_attention(&pl, l);
        else
            plan_gdn(&pl, l);
        plan_ffn(&pl, l);
        if (mtp) {
            WEIGHT(&pl, l, "nextn.eh_proj.weight", 2 * p->n_embd, p->n_embd, 0);
            NORM(&pl, l, "nextn.enorm.weight", p->n_embd);
            NORM(&pl, l, "nextn.hnorm.weight", p->n_embd);
            NORM(&pl, l, "nextn.shared_head_norm.weight", p->n_embd);
        }
    }
    if (p->arch != SYNTH_ARCH_QWEN4EXP) NORM(&pl, -1, "output_norm.weight", p->n_embd);
    if (!p->tied && p->arch != SYNTH_ARCH_QWEN4EXP) WEIGHT(&pl, -1, "output.weight", p->n_embd, p->n_vocab, 0);
    if (pl.rc) {
        synth_plan_free(out);
        return err_set(e, pl.rc, "synth: out of memory planning %s", p->name);
    }
    assign_types(&pl);
    for (size_t i = 0; i < out->n; i++) {
        const synth_tensor *t = &out->t[i];
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        uint64_t bytes;
        if (!qtype_get(t->type)) {
            err_set(e, ERR_ARG, "synth: %s: rows of %lld values are no whole number of blocks of the type asked for, "
                    "and llama-quantize has no fallback type for it (HINT: a type with blocks of 32)", t->name,
                    (long long)t->ne[0]);
            synth_plan_free(out);
            return ERR_ARG;
        }
        if (!qtype_nbytes(t->type, n, &bytes)) {
            synth_plan_free(out);
            return err_set(e, ERR_ARG, "synth: %s: %lld values do not fit type %s", t->name, (long long)n,
                           qtype_get(t->type) ? qtype_get(t->type)->name : "?");
        }
        out->n_params += n;
        out->n_bytes += bytes;
    }
    return 0;
}

void synth_plan_free(synth_plan *plan) {
    if (!plan) return;
    free(plan->t);
    memset(plan, 0, sizeof *plan);
}

/* ---- values ------------------------------------------------------------------------------------- */

#define CHUNK_BYTES (1u << 16) /* unit of generation: values depend on (seed, tensor, chunk) only */

typedef struct fill_state {
    const synth_preset *p;
    uint64_t seed;
    unsigned char *scratch; /* one chunk, for partial chunks */
    float *fscratch;        /* one chunk's values as floats */
    size_t fscratch_n;
    uint64_t done, total;
    double last_report;
    synth_progress_fn progress;
    void *ud;
} fill_state;

typedef struct fill_ctx {
    fill_state *st;
    const synth_tensor *t;
    uint64_t index;       /* tensor number, for seeding */
    uint64_t nbytes;      /* whole tensor */
    uint64_t chunk_bytes; /* a whole number of blocks, about CHUNK_BYTES */
} fill_ctx;

/* llama3 rope scaling factor of frequency pair i (as the converter computes rope_freqs). */
static float rope_freq_factor(const synth_preset *p, int64_t i) {
    const double pi = 3.14159265358979323846;
    double freq = 1.0 / pow((double)p->rope_theta, (double)(2 * i) / (double)p->rope_dim);
    double wavelen = 2 * pi / freq;
    double low_wl = (double)p->rope_orig_ctx / p->rope_low_freq;
    double high_wl = (double)p->rope_orig_ctx / p->rope_high_freq;
    if (wavelen < high_wl) return 1.0f;
    if (wavelen > low_wl) return p->rope_scale_factor;
    double smooth = ((double)p->rope_orig_ctx / wavelen - p->rope_low_freq) / (p->rope_high_freq - p->rope_low_freq);
    return (float)(1.0 / ((1 - smooth) / p->rope_scale_factor + smooth));
}

/* Writes n floats as type t (F32/F16/BF16 by conversion, block types by the reference quantizer). */
static int store_floats(enum qtype t, const float *x, void *dst, int64_t n, err *e) {
    if (t == QT_F32) {
        memcpy(dst, x, (size_t)n * sizeof(float));
    } else if (t == QT_F16) {
        uint16_t *h = dst;
        for (int64_t i = 0; i < n; i++) h[i] = fp16_from_f32(x[i]);
    } else if (t == QT_BF16) {
        uint16_t *h = dst;
        for (int64_t i = 0; i < n; i++) h[i] = bf16_from_f32(x[i]);
    } else {
        const quant_ops *ops = quant_ops_get(t, QUANT_ISA_SCALAR);
        if (!ops || !ops->from_float)
            return err_set(e, ERR_UNSUPPORTED, "synth: no random generator and no quantizer for type %s",
                           qtype_get(t) ? qtype_get(t)->name : "?");
        ops->from_float(x, dst, n);
    }
    return 0;
}

static int gen_chunk(fill_ctx *c, uint64_t ci, void *dst, uint64_t nbytes, err *e) {
    fill_state *st = c->st;
    const synth_tensor *t = c->t;
    const qtype_info *qi = qtype_get(t->type);
    const int64_t nblocks = (int64_t)(nbytes / qi->type_size), n = nblocks * qi->blck;
    const int64_t first = (int64_t)(ci * (c->chunk_bytes / qi->type_size)) * qi->blck;
    uint64_t s = st->seed ^ (c->index * 0x9e3779b97f4a7c15ull) ^ (ci * 0xd1b54a32d192ed03ull);
    rng r;
    rng_seed(&r, rng_splitmix64(&s));
    if (t->init == SYNTH_INIT_WEIGHT && qi->blck > 1 && quant_random_blocks(t->type, dst, nblocks, t->a, &r))
        return 0;
    if ((size_t)n > st->fscratch_n) {
        float *f = realloc(st->fscratch, (size_t)n * sizeof(float));
        if (!f) return err_set(e, ERR_NOMEM, "synth: out of memory for %lld floats", (long long)n);
        st->fscratch = f;
        st->fscratch_n = (size_t)n;
    }
    float *x = st->fscratch;
    switch (t->init) {
    case SYNTH_INIT_WEIGHT: {
        /* uniform with the requested std: cheaper than normals and as good for benchmarks */
        const float h = t->a * 1.7320508f;
        for (int64_t i = 0; i < n; i++) x[i] = rng_uniform(&r, -h, h);
        break;
    }
    case SYNTH_INIT_UNIFORM:
        for (int64_t i = 0; i < n; i++) x[i] = rng_uniform(&r, t->a, t->b);
        break;
    case SYNTH_INIT_ROPE_FREQS:
        for (int64_t i = 0; i < n; i++) x[i] = rope_freq_factor(st->p, first + i);
        break;
    }
    return store_floats(t->type, x, dst, n, e);
}

static int fill_cb(void *vctx, void *buf, uint64_t offset, uint64_t nbytes, err *e) {
    fill_ctx *c = vctx;
    fill_state *st = c->st;
    unsigned char *out = buf;
    uint64_t pos = offset, end = offset + nbytes;
    if (end > c->nbytes || end < offset)
        return err_set(e, ERR_ARG, "synth: %s: writer asked for bytes [%llu, %llu) of %llu", c->t->name,
                       (unsigned long long)offset, (unsigned long long)end, (unsigned long long)c->nbytes);
    while (pos < end) {
        uint64_t ci = pos / c->chunk_bytes, cstart = ci * c->chunk_bytes;
        uint64_t clen = c->nbytes - cstart < c->chunk_bytes ? c->nbytes - cstart : c->chunk_bytes;
        uint64_t from = pos - cstart, take = clen - from < end - pos ? clen - from : end - pos;
        int rc;
        if (from == 0 && take == clen) {
            rc = gen_chunk(c, ci, out, clen, e);
        } else {
            rc = gen_chunk(c, ci, st->scratch, clen, e);
            memcpy(out, st->scratch + from, take);
        }
        if (rc) return err_wrap(e, "tensor %s", c->t->name);
        out += take;
        pos += take;
    }
    st->done += nbytes;
    if (st->progress) {
        double now = timer_now();
        if (now - st->last_report >= 1.0 || st->done == st->total) {
            st->last_report = now;
            st->progress(st->ud, st->done, st->total);
        }
    }
    return 0;
}

/* ---- metadata ----------------------------------------------------------------------------------- */

/* The published file's keys (spec §3.2), as llama.cpp's gguf-py names them. */
static int set_qwen4exp_keys(gguf_writer *w, const synth_preset *p) {
    int rc = 0;
    rc |= gguf_writer_set_u32(w, "qwen4exp.hyper_connection.count", (uint32_t)p->hc_count);
    rc |= gguf_writer_set_u32(w, "qwen4exp.hyper_connection.low_rank", (uint32_t)p->hc_rank);
    rc |= gguf_writer_set_u32(w, "qwen4exp.attention.indexer.head_count", (uint32_t)p->idx_heads);
    rc |= gguf_writer_set_u32(w, "qwen4exp.attention.indexer.key_length", (uint32_t)p->idx_dim);
    rc |= gguf_writer_set_u32(w, "qwen4exp.attention.indexer.top_k", (uint32_t)p->idx_budget);
    int32_t ratios[256];
    if (p->n_layer > 256) return ERR_ARG;
    for (int64_t i = 0; i < p->n_layer; i++) ratios[i] = (i + 1) % p->full_attn_interval == 0 ? (int32_t)p->idx_ratio : 0;
    rc |= gguf_writer_set_arr(w, "qwen4exp.attention.compress_ratios", GGUF_INT32, ratios, (uint64_t)p->n_layer);
    if (p->ple_dim <= 0) return rc;
    synth_ple_hash h;
    synth_ple_hash_make(p, &h);
    const int32_t ple_layer = (int32_t)p->ple_layer;
    rc |= gguf_writer_set_arr(w, "qwen4exp.ple.layers", GGUF_INT32, &ple_layer, 1);
    rc |= gguf_writer_set_u32(w, "qwen4exp.ple.ngram_size", (uint32_t)p->ple_ngram);
    rc |= gguf_writer_set_u32(w, "qwen4exp.ple.heads_per_ngram", (uint32_t)p->ple_heads_per);
    rc |= gguf_writer_set_u32(w, "qwen4exp.ple.conv_kernel", (uint32_t)p->ple_conv);
    rc |= gguf_writer_set_arr(w, "qwen4exp.ple.layer_multipliers", GGUF_UINT64, h.mult, (uint64_t)h.n_mult);
    rc |= gguf_writer_set_arr(w, "qwen4exp.ple.head_offsets", GGUF_UINT64, h.offset, (uint64_t)h.n_heads);
    rc |= gguf_writer_set_arr(w, "qwen4exp.ple.head_vocab_sizes", GGUF_UINT64, h.size, (uint64_t)h.n_heads);
    rc |= gguf_writer_set_u32(w, "qwen4exp.ple.eos_token_id", (uint32_t)p->tok_special_base); /* <|endoftext|> */
    rc |= gguf_writer_set_u32(w, "qwen4exp.ple.image_token_id", (uint32_t)p->tok_special_base + 12); /* <|image_pad|> */
    rc |= gguf_writer_set_u32(w, "qwen4exp.embedding_length_per_layer_input", (uint32_t)p->ple_dim);
    return rc;
}

static int set_arch_keys(gguf_writer *w, const synth_preset *p) {
    const char *a = synth_arch_name(p->arch);
    char k[128];
    int rc = 0;
#define U32(key, val) (snprintf(k, sizeof k, "%s." key, a), rc |= gguf_writer_set_u32(w, k, (uint32_t)(val)))
#define F32(key, val) (snprintf(k, sizeof k, "%s." key, a), rc |= gguf_writer_set_f32(w, k, (float)(val)))
    const int64_t n_layer_all = p->n_layer + p->n_mtp;
    U32("context_length", p->n_ctx);
    U32("embedding_length", p->n_embd);
    U32("block_count", n_layer_all);
    if (p->n_ff) U32("feed_forward_length", p->n_ff);
    U32("attention.head_count", p->n_head);
    U32("attention.head_count_kv", p->n_head_kv);
    U32("attention.key_length", p->head_dim);
    U32("attention.value_length", p->head_dim);
    F32("attention.layer_norm_rms_epsilon", p->rms_eps);
    F32("rope.freq_base", p->rope_theta);
    U32("rope.dimension_count", p->rope_dim);
    if (p->arch == SYNTH_ARCH_LLAMA) {
        U32("vocab_size", p->n_vocab);
    } else if (!llama_block(p)) {
        snprintf(k, sizeof k, "%s.rope.dimension_sections", a);
        rc |= gguf_writer_set_arr(w, k, GGUF_INT32, p->rope_sections, 4);
        U32("ssm.conv_kernel", p->ssm_conv);
        U32("ssm.state_size", p->ssm_state);
        U32("ssm.group_count", p->ssm_groups);
        U32("ssm.time_step_rank", p->ssm_heads);
        U32("ssm.inner_size", p->ssm_heads * p->ssm_state);
        U32("full_attention_interval", p->full_attn_interval);
        /* the converter writes layer_types as this flag array (MTP blocks are attention) */
        bool *recr = calloc((size_t)n_layer_all, sizeof *recr);
        if (!recr) return ERR_NOMEM;
        for (int64_t i = 0; i < p->n_layer; i++) recr[i] = (i + 1) % p->full_attn_interval != 0;
        snprintf(k, sizeof k, "%s.attention.recurrent_layers", a);
        rc |= gguf_writer_set_arr(w, k, GGUF_BOOL, recr, (uint64_t)n_layer_all);
        free(recr);
        if (p->n_mtp) U32("nextn_predict_layers", p->n_mtp);
        if (p->n_expert) {
            U32("expert_count", p->n_expert);
            U32("expert_used_count", p->n_expert_used);
            U32("expert_feed_forward_length", p->n_ff_exp);
            U32("expert_shared_feed_forward_length", p->n_ff_shexp);
        }
    }
    if (p->arch == SYNTH_ARCH_QWEN4EXP) rc |= set_qwen4exp_keys(w, p);
#undef U32
#undef F32
    return rc;
}

static int set_tokenizer_keys(gguf_writer *w, const synth_vocab *v) {
    int rc = 0;
    rc |= gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    rc |= gguf_writer_set_str(w, "tokenizer.ggml.pre", v->pre);
    rc |= gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tokens, v->n_tokens);
    rc |= gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, v->types, v->n_tokens);
    rc |= gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v->merges, v->n_merges);
    rc |= gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos);
    rc |= gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos);
    if (v->pad >= 0) rc |= gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)v->pad);
    rc |= gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
    rc |= gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", v->add_eos);
    rc |= gguf_writer_set_str(w, "tokenizer.chat_template", v->chat_template);
    return rc;
}

int synth_write(const synth_preset *p, enum synth_mix m, uint64_t seed, const char *path,
                synth_progress_fn progress, void *ud, err *e) {
    const synth_quant q = {.mix = m};
    return synth_write_with(p, &q, seed, path, progress, ud, e);
}

int synth_write_with(const synth_preset *p, const synth_quant *q, uint64_t seed, const char *path,
                     synth_progress_fn progress, void *ud, err *e) {
    const enum synth_mix m = q->mix;
    synth_plan plan;
    int rc = synth_plan_make_with(p, q, &plan, e);
    if (rc) return rc;
    synth_vocab vocab;
    rc = synth_vocab_build(p, &vocab, e);
    if (rc) {
        synth_plan_free(&plan);
        return rc;
    }
    fill_state st = {.p = p, .seed = seed, .total = plan.n_bytes, .progress = progress, .ud = ud};
    fill_ctx *ctx = calloc(plan.n, sizeof *ctx);
    st.scratch = malloc(CHUNK_BYTES + 512);
    gguf_writer *w = gguf_writer_new();
    if (!ctx || !st.scratch || !w) {
        rc = err_set(e, ERR_NOMEM, "synth: out of memory");
        goto done;
    }
    /* the command that reproduces the file, overrides included: a reader can tell the mix from it */
    char desc[1024], ovs[SYNTH_MAX_OVERRIDES * 72] = "";
    for (int i = 0; i < q->n_ov; i++) {
        size_t used = strlen(ovs);
        snprintf(ovs + used, sizeof ovs - used, " --tensor-type %s=%s", q->ov[i].name, qtype_get(q->ov[i].type)->name);
    }
    snprintf(desc, sizeof desc, "synthetic random weights in the shapes of %s (llm170 synth --preset %s "
             "--type %s%s --seed %llu)", p->model_name, p->name, synth_mix_name(m), ovs, (unsigned long long)seed);
    char name[128];
    snprintf(name, sizeof name, "%s (synthetic)", p->model_name);
    int krc = 0;
    krc |= gguf_writer_set_str(w, "general.architecture", synth_arch_name(p->arch));
    krc |= gguf_writer_set_str(w, "general.type", "model");
    krc |= gguf_writer_set_str(w, "general.name", name);
    krc |= gguf_writer_set_str(w, "general.description", desc);
    krc |= gguf_writer_set_u32(w, "general.file_type", synth_mix_file_type(m));
    krc |= gguf_writer_set_u32(w, "general.quantization_version", 2);
    krc |= set_arch_keys(w, p);
    krc |= set_tokenizer_keys(w, &vocab);
    if (krc) {
        rc = err_set(e, krc < 0 ? krc : ERR_NOMEM, "synth: setting the metadata of %s failed", p->name);
        goto done;
    }
    for (size_t i = 0; i < plan.n; i++) {
        const synth_tensor *t = &plan.t[i];
        const qtype_info *qi = qtype_get(t->type);
        uint64_t nb;
        qtype_nbytes(t->type, t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3], &nb);
        ctx[i] = (fill_ctx){.st = &st, .t = t, .index = i, .nbytes = nb,
                            .chunk_bytes = qi->type_size * (CHUNK_BYTES / qi->type_size)};
        rc = gguf_writer_add_tensor_fill(w, t->name, t->type, t->n_dims, t->ne, fill_cb, &ctx[i], e);
        if (rc) goto done;
    }
    st.last_report = timer_now();
    rc = gguf_writer_write(w, path, e);
done:
    gguf_writer_free(w);
    free(ctx);
    free(st.scratch);
    free(st.fscratch);
    synth_vocab_free(&vocab);
    synth_plan_free(&plan);
    return rc;
}
