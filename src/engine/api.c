/* api: include/llm170.h on top of the engine (model, kv, forward, sampler) on the device the model
 * params name (backends/backend.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fpenv.h"
#include "engine/forward.h"
#include "chat/chat.h"
#include "engine/sampler.h"
#include "tokenizer/tokenizer.h"
#include "llm170.h"
#include "engine/api_impl.h"

static _Thread_local char last_error[512];

const char *llm170_last_error(void) { return last_error; }

int api_fail(const err *e) {
    snprintf(last_error, sizeof last_error, "%s", e->msg);
    return e->code ? e->code : ERR_ARG;
}
#define fail api_fail

llm170_model_params llm170_model_default_params(void) {
    return (llm170_model_params){.n_threads = 1, .exact = false, .device = NULL};
}

const char *llm170_devices(void) { return backend_devices(); }

int llm170_model_load(const char *path, const llm170_model_params *params, llm170_model **out) {
    err e = {0};
    *out = NULL;
    llm170_model_params p = params ? *params : llm170_model_default_params();
    if (p.n_threads < 1 || p.n_threads > 1024) {
        err_set(&e, ERR_ARG, "n_threads must be in 1..1024, got %d", p.n_threads);
        return fail(&e);
    }
    llm170_model *lm = calloc(1, sizeof *lm);
    if (!lm) return fail(&(err){ERR_NOMEM, "out of memory"});
    lm->n_threads = p.n_threads;
    lm->be = backend_open(p.device, p.n_threads, p.exact, &e);
    if (!lm->be || model_load(&lm->m, path, lm->be, &e)) {
        backend_free(lm->be);
        free(lm);
        return fail(&e);
    }
    /* The tokenizer is optional at load (token-id users need none); text calls report why it is missing. */
    err te = {0};
    if (!gguf_find_kv(lm->m->gguf, "tokenizer.ggml.model"))
        snprintf(lm->tok_err, sizeof lm->tok_err, "%s has no tokenizer (no tokenizer.ggml.model key)", path);
    else if (tok_load_gguf(&lm->tok, lm->m->gguf, &te))
        snprintf(lm->tok_err, sizeof lm->tok_err, "%s: tokenizer: %s", path, te.msg);
    *out = lm;
    return 0;
}

void llm170_model_free(llm170_model *m) {
    if (!m) return;
    tok_free(m->tok);
    model_free(m->m);
    backend_free(m->be);
    free(m);
}

int llm170_model_n_vocab(const llm170_model *m) { return m->m->hp.n_vocab; }
int llm170_model_n_embd(const llm170_model *m) { return m->m->hp.n_embd; }
int llm170_model_n_ctx_train(const llm170_model *m) { return m->m->hp.n_ctx_train; }
const char *llm170_model_arch(const llm170_model *m) { return model_arch_name(m->m->arch); }

uint64_t llm170_model_size(const llm170_model *m) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < gguf_n_tensors(m->m->gguf); i++) n += gguf_tensor_at(m->m->gguf, i)->nbytes;
    return n;
}

uint64_t llm170_model_n_params(const llm170_model *m) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < gguf_n_tensors(m->m->gguf); i++) n += (uint64_t)gguf_tensor_at(m->m->gguf, i)->n_elements;
    return n;
}

/* general.file_type values (llama.cpp's llama_ftype) and the names llama-bench prints for them. */
static const char *ftype_name(uint32_t ft) {
    switch (ft) {
    case 0: return "all F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K - Medium";
    case 11: return "Q3_K - Small";
    case 12: return "Q3_K - Medium";
    case 13: return "Q3_K - Large";
    case 14: return "Q4_K - Small";
    case 15: return "Q4_K - Medium";
    case 16: return "Q5_K - Small";
    case 17: return "Q5_K - Medium";
    case 18: return "Q6_K";
    case 19: return "IQ2_XXS - 2.0625 bpw";
    case 20: return "IQ2_XS - 2.3125 bpw";
    case 21: return "Q2_K - Small";
    case 24: return "IQ1_S - 1.5625 bpw";
    case 25: return "IQ4_NL - 4.5 bpw";
    case 30: return "IQ4_XS";
    case 32: return "BF16";
    default: return "?";
    }
}

void llm170_model_desc(const llm170_model *m, char *buf, int cap) {
    uint32_t ft = 0;
    double p = (double)llm170_model_n_params(m);
    char size[32];
    if (p >= 1e9) snprintf(size, sizeof size, "%.1fB", p / 1e9);
    else snprintf(size, sizeof size, "%.0fM", p / 1e6);
    bool has_ft = gguf_get_u32(m->m->gguf, "general.file_type", &ft, NULL) == 0;
    snprintf(buf, (size_t)cap, "%s %s %s", model_arch_name(m->m->arch), size, has_ft ? ftype_name(ft) : "?");
}

static int need_tok(const llm170_model *m) {
    if (m->tok) return 0;
    err e;
    err_set(&e, ERR_UNSUPPORTED, "%s", m->tok_err);
    return fail(&e);
}

int llm170_tokenize(const llm170_model *m, const char *text, size_t len, bool add_special, bool parse_special,
                    int32_t **ids, size_t *n_ids) {
    err e = {0};
    if (need_tok(m)) return ERR_UNSUPPORTED;
    unsigned flags = (add_special ? TOK_ADD_SPECIAL : 0) | (parse_special ? TOK_PARSE_SPECIAL : 0);
    if (tok_encode(m->tok, text, len, flags, ids, n_ids, &e)) return fail(&e);
    return 0;
}

int llm170_detokenize(const llm170_model *m, const int32_t *ids, size_t n_ids, bool special, char **text,
                      size_t *len) {
    err e = {0};
    if (need_tok(m)) return ERR_UNSUPPORTED;
    if (tok_decode(m->tok, ids, n_ids, special, text, len, &e)) return fail(&e);
    return 0;
}

bool llm170_token_is_eog(const llm170_model *m, int32_t id) {
    if (m->tok) return tok_is_eog(m->tok, id);
    int32_t eog[8];
    int n = llm170_model_eog_tokens(m, eog, 8);
    for (int i = 0; i < n; i++)
        if (eog[i] == id) return true;
    return false;
}

int llm170_detok_new(const llm170_model *m, bool special, llm170_detok **out) {
    *out = NULL;
    if (need_tok(m)) return ERR_UNSUPPORTED;
    llm170_detok *d = calloc(1, sizeof *d);
    if (!d || !(d->s = tok_stream_new(m->tok, special))) {
        free(d);
        return fail(&(err){ERR_NOMEM, "out of memory"});
    }
    *out = d;
    return 0;
}

void llm170_detok_free(llm170_detok *d) {
    if (!d) return;
    tok_stream_free(d->s);
    free(d);
}

int llm170_detok_push(llm170_detok *d, int32_t id, const char **out, size_t *len) {
    err e = {0};
    if (tok_stream_push(d->s, id, out, len, &e)) return fail(&e);
    return 0;
}

int llm170_detok_flush(llm170_detok *d, const char **out, size_t *len) {
    return tok_stream_flush(d->s, out, len);
}

int llm170_chat_render(const llm170_model *m, const char *messages_json, const char *tools_json,
                       bool add_generation_prompt, int enable_thinking, const char *template_override,
                       char **out, size_t *len) {
    err e = {0};
    gguf_str tmpl = {0};
    if (template_override) {
        const char *b = chat_builtin_template(template_override);
        tmpl.ptr = b ? b : template_override;
        tmpl.len = strlen(tmpl.ptr);
    } else if (gguf_get_str(m->m->gguf, "tokenizer.chat_template", &tmpl, NULL) != 0) {
        err_set(&e, ERR_NOTFOUND,
                "the model file has no chat template (tokenizer.chat_template); pass a template or one of the "
                "built-ins: %s", chat_builtin_names());
        return fail(&e);
    }
    char bos[256] = "", eos[256] = "";
    if (m->tok) {
        size_t n;
        const char *t;
        if (tok_bos(m->tok) >= 0 && (t = tok_token_text(m->tok, tok_bos(m->tok), &n)) && n < sizeof bos) memcpy(bos, t, n);
        if (tok_eos(m->tok) >= 0 && (t = tok_token_text(m->tok, tok_eos(m->tok), &n)) && n < sizeof eos) memcpy(eos, t, n);
    }
    chat_opts o = {.add_generation_prompt = add_generation_prompt, .enable_thinking = enable_thinking,
                   .bos_token = bos, .eos_token = eos};
    if (chat_render(tmpl.ptr, (size_t)tmpl.len, messages_json, strlen(messages_json), tools_json,
                    tools_json ? strlen(tools_json) : 0, &o, out, len, &e))
        return fail(&e);
    return 0;
}

int llm170_model_eog_tokens(const llm170_model *m, int32_t *ids, int cap) {
    static const char *keys[] = {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                 "tokenizer.ggml.eom_token_id"};
    int n = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        uint32_t v;
        if (gguf_get_u32(m->m->gguf, keys[i], &v, NULL) != 0 || v >= (uint32_t)m->m->hp.n_vocab) continue;
        bool dup = false;
        for (int j = 0; j < n && j < cap; j++) dup |= ids[j] == (int32_t)v;
        if (!dup && n < cap) ids[n++] = (int32_t)v;
    }
    return n;
}

static const struct {
    const char *name;
    enum qtype type;
} cache_types[] = {[LLM170_CACHE_DEFAULT] = {"default", QT_COUNT}, [LLM170_CACHE_F32] = {"f32", QT_F32},
                   [LLM170_CACHE_F16] = {"f16", QT_F16},     [LLM170_CACHE_BF16] = {"bf16", QT_BF16},
                   [LLM170_CACHE_Q8_0] = {"q8_0", QT_Q8_0}};
#define N_CACHE_TYPES (int)(sizeof cache_types / sizeof cache_types[0])

int llm170_cache_type_from_name(const char *name) {
    for (int i = 1; i < N_CACHE_TYPES; i++)
        if (!strcmp(name, cache_types[i].name)) return i;
    err e;
    err_set(&e, ERR_ARG, "cache type '%s' is not one of f32, f16, bf16, q8_0", name);
    fail(&e);
    return -1;
}

llm170_context_params llm170_context_default_params(void) {
    return (llm170_context_params){.n_seq = 1, .n_ctx = 4096, .n_batch = 512};
}

int llm170_context_new(llm170_model *m, const llm170_context_params *params, llm170_context **out) {
    err e = {0};
    *out = NULL;
    llm170_context_params p = params ? *params : llm170_context_default_params();
    if (p.n_seq < 1 || p.n_ctx < 1 || p.n_batch < 1) {
        err_set(&e, ERR_ARG, "n_seq, n_ctx and n_batch must be >= 1 (got %d, %d, %d)", p.n_seq, p.n_ctx, p.n_batch);
        return fail(&e);
    }
    if (p.cache_type_k < 0 || p.cache_type_k >= N_CACHE_TYPES || p.cache_type_v < 0 || p.cache_type_v >= N_CACHE_TYPES) {
        err_set(&e, ERR_ARG, "cache types must be enum llm170_cache_type values (got %d, %d)", p.cache_type_k,
                p.cache_type_v);
        return fail(&e);
    }
    llm170_context *c = calloc(1, sizeof *c);
    if (!c) return fail(&(err){ERR_NOMEM, "out of memory"});
    c->model = m;
    c->p = p;
    c->spans = calloc((size_t)p.n_seq, sizeof *c->spans);
    c->chunk = calloc((size_t)p.n_seq, sizeof *c->chunk);
    c->off = calloc((size_t)p.n_seq, sizeof *c->off);
    if (!c->spans || !c->chunk || !c->off) {
        llm170_context_free(c);
        return fail(&(err){ERR_NOMEM, "out of memory"});
    }
    const enum qtype dflt = backend_default_cache_type(m->be);
    state_plan sp = {p.n_ctx, p.cache_type_k ? cache_types[p.cache_type_k].type : dflt,
                     p.cache_type_v ? cache_types[p.cache_type_v].type : dflt};
    if (fwd_ctx_init(&c->fc, m->m, p.n_batch, p.n_seq, &sp, m->n_threads, &e)) {
        llm170_context_free(c);
        return fail(&e);
    }
    c->kv = c->fc.kv;
    *out = c;
    return 0;
}

/* the output rows of reserve_out, below */
static void out_free(llm170_context *c) {
    backend *be = c->out_pinned ? c->model->be : NULL;
    backend_host_free(be, c->logits);
    backend_host_free(be, c->hidden);
    c->logits = c->hidden = NULL;
}

void llm170_context_free(llm170_context *c) {
    if (!c) return;
    if (c->fc.x) fwd_ctx_free(&c->fc, c->model->m);
    free(c->spans);
    free(c->chunk);
    free(c->off);
    out_free(c);
    free(c);
}

/* Ensures room for n output rows: up to OUT_PINNED_ROWS (a decode step of up to 64 sequences) in the device's
 * host memory (CUDA: page-locked, where a pass's downloads land without the driver's bounce; 1.07x tg128 on the
 * 0.5B shape, docs/benchmarks.md), more (a prompt asking for every row: perplexity) or when the device has
 * none left, in plain memory. The rows held move along (a pass that fails leaves them readable, as before it). */
#define OUT_PINNED_ROWS 64
static int reserve_out(llm170_context *c, int n, err *e) {
    if (n <= c->cap_out) return 0;
    const hparams *hp = &c->model->m->hp;
    const size_t nl = sizeof(float) * (size_t)n * (size_t)hp->n_vocab, nh = sizeof(float) * (size_t)n * (size_t)hp->n_embd;
    bool pinned = n <= OUT_PINNED_ROWS;
    float *l = pinned ? backend_host_alloc(c->model->be, nl) : NULL, *h = l ? backend_host_alloc(c->model->be, nh) : NULL;
    if (!h) {
        if (l) backend_host_free(c->model->be, l);
        pinned = false;
        l = malloc(nl), h = malloc(nh);
        if (!l || !h) {
            free(l), free(h);
            return err_set(e, ERR_NOMEM, "cannot allocate logits for %d rows", n);
        }
    }
    if (c->cap_out) {
        memcpy(l, c->logits, sizeof(float) * (size_t)c->cap_out * (size_t)hp->n_vocab);
        memcpy(h, c->hidden, sizeof(float) * (size_t)c->cap_out * (size_t)hp->n_embd);
    }
    out_free(c);
    c->logits = l, c->hidden = h, c->out_pinned = pinned;
    c->cap_out = n;
    return 0;
}

int llm170_decode(llm170_context *c, const llm170_seq_batch *seqs, int n_seqs) {
    err e = {0};
    const hparams *hp = &c->model->m->hp;
    if (n_seqs <= 0 || n_seqs > c->p.n_seq) {
        err_set(&e, ERR_ARG, "a batch holds 1..%d sequences, got %d", c->p.n_seq, n_seqs);
        return fail(&e);
    }
    fwd_span *spans = c->spans;
    int n_out = 0;
    for (int i = 0; i < n_seqs; i++) {
        spans[i] = (fwd_span){seqs[i].seq, seqs[i].n_tokens, seqs[i].tokens,
                              seqs[i].all_logits ? FWD_OUT_ALL : FWD_OUT_LAST};
        if (seqs[i].tokens == NULL && seqs[i].n_tokens > 0) {
            err_set(&e, ERR_ARG, "sequence %d: tokens is NULL", seqs[i].seq);
            return fail(&e);
        }
    }
    int rc = 0;
    /* Validate the whole batch up front (model_forward checks each chunk, but a failure after some chunks
     * ran would leave sequences half-advanced). */
    for (int i = 0; i < n_seqs && !rc; i++) {
        if (spans[i].seq < 0 || spans[i].seq >= c->p.n_seq || spans[i].n <= 0) {
            rc = err_set(&e, ERR_ARG, "batch entry %d: sequence %d with %d tokens is invalid", i, spans[i].seq, spans[i].n);
        } else {
            int past = c->kv->seqs[spans[i].seq].n_past;
            if (past + spans[i].n > c->p.n_ctx)
                rc = err_set(&e, ERR_RANGE, "sequence %d: %d cached + %d new tokens exceed the context size %d",
                             spans[i].seq, past, spans[i].n, c->p.n_ctx);
            for (int t = 0; t < spans[i].n && !rc; t++)
                if (spans[i].tokens[t] < 0 || spans[i].tokens[t] >= hp->n_vocab)
                    rc = err_set(&e, ERR_RANGE, "token id %d is outside the vocabulary (0..%d)", spans[i].tokens[t],
                                 hp->n_vocab - 1);
        }
        for (int j = 0; j < i && !rc; j++)
            if (spans[j].seq == spans[i].seq) rc = err_set(&e, ERR_ARG, "sequence %d appears twice", spans[i].seq);
        n_out += fwd_span_rows(&spans[i]);
    }
    if (!rc) rc = reserve_out(c, n_out, &e);
    /* Chunked prefill: forward passes of at most n_batch tokens, taking the spans in order; a span cut
     * into pieces asks for its last row only from its final piece. */
    int done_out = 0;
    int *off = c->off; /* tokens of each span already decoded */
    fwd_span *chunk = c->chunk;
    memset(off, 0, sizeof(int) * (size_t)n_seqs);
    while (!rc) {
        int n_chunk = 0, budget = c->p.n_batch;
        for (int i = 0; i < n_seqs && budget > 0; i++) {
            int left = spans[i].n - off[i];
            if (left <= 0) continue;
            int take = left < budget ? left : budget;
            chunk[n_chunk] = (fwd_span){spans[i].seq, take, spans[i].tokens + off[i], spans[i].out};
            if (take < left && spans[i].out == FWD_OUT_LAST) chunk[n_chunk].out = FWD_OUT_NONE;
            off[i] += take;
            budget -= take;
            n_chunk++;
        }
        if (!n_chunk) break;
        rc = model_forward(c->model->m, &c->fc, chunk, n_chunk, c->logits + (size_t)done_out * (size_t)hp->n_vocab,
                           c->hidden + (size_t)done_out * (size_t)hp->n_embd, &e);
        done_out += fwd_n_out(chunk, n_chunk);
    }
    if (rc) return fail(&e);
    c->n_out = done_out;
    return 0;
}

const float *llm170_logits(const llm170_context *c, int i) {
    if (i < 0 || i >= c->n_out) return NULL;
    return c->logits + (size_t)i * (size_t)c->model->m->hp.n_vocab;
}

const float *llm170_hidden(const llm170_context *c, int i) {
    if (i < 0 || i >= c->n_out) return NULL;
    return c->hidden + (size_t)i * (size_t)c->model->m->hp.n_embd;
}

int llm170_mtp_decode(llm170_context *c, int seq, const float *hidden, const int32_t *next, int n, float *logits) {
    err e = {0};
    if (!c->model->m->def->mtp) {
        err_set(&e, ERR_UNSUPPORTED, "%s models have no MTP block", model_arch_name(c->model->m->arch));
        return fail(&e);
    }
    const unsigned fp = fpenv_enter(); /* as model_forward: base/fpenv.h */
    const int rc = c->model->m->def->mtp(c->model->m, &c->fc, seq, hidden, next, n, false, logits, NULL, &e);
    fpenv_leave(fp);
    return rc ? fail(&e) : 0;
}

int llm170_seq_len(const llm170_context *c, int seq) {
    return seq >= 0 && seq < c->p.n_seq ? c->kv->seqs[seq].n_past : -1;
}

void llm170_seq_reset(llm170_context *c, int seq) {
    if (seq >= 0 && seq < c->p.n_seq) kv_reset(c->kv, seq);
}

/* A checkpoint: this header, then kv_rec_floats floats. */
typedef struct seq_ckpt {
    uint32_t magic;
    int32_t n_past, mtp_past;
    int32_t n_floats;
} seq_ckpt;
_Static_assert(sizeof(seq_ckpt) == 16, "checkpoint header is 16 bytes so the floats after it stay aligned");
#define SEQ_CKPT_MAGIC 0x4b43534cu /* "LSCK" */

static int check_seq(const llm170_context *c, int seq, err *e) {
    if (seq < 0 || seq >= c->p.n_seq) return err_set(e, ERR_ARG, "sequence %d is outside 0..%d", seq, c->p.n_seq - 1);
    return 0;
}

int llm170_seq_truncate(llm170_context *c, int seq, int n) {
    err e = {0};
    if (check_seq(c, seq, &e)) return fail(&e);
    seq_cache *sc = &c->kv->seqs[seq];
    if (n < 0 || n > sc->n_past) {
        err_set(&e, ERR_RANGE, "sequence %d holds %d tokens; cannot truncate it to %d", seq, sc->n_past, n);
        return fail(&e);
    }
    if (n == 0) {
        kv_reset(c->kv, seq);
        return 0;
    }
    if (n != sc->n_past && kv_rec_floats(c->kv) > 0) {
        err_set(&e, ERR_UNSUPPORTED, "%s has recurrent blocks whose state cannot be rolled back from %d to %d "
                "tokens; restore a checkpoint (llm170_seq_restore_state) instead",
                model_arch_name(c->model->m->arch), sc->n_past, n);
        return fail(&e);
    }
    sc->n_past = n;
    if (sc->mtp_past > n) sc->mtp_past = n;
    return 0;
}

size_t llm170_seq_state_size(const llm170_context *c) {
    return sizeof(seq_ckpt) + sizeof(float) * (size_t)kv_rec_floats(c->kv);
}

int llm170_seq_save_state(const llm170_context *c, int seq, void *buf, size_t cap) {
    err e = {0};
    if (check_seq(c, seq, &e)) return fail(&e);
    size_t need = llm170_seq_state_size(c);
    if (!buf || cap < need) {
        err_set(&e, ERR_RANGE, "a state checkpoint needs %zu bytes, the buffer has %zu", need, buf ? cap : 0);
        return fail(&e);
    }
    const seq_cache *sc = &c->kv->seqs[seq];
    seq_ckpt h = {SEQ_CKPT_MAGIC, sc->n_past, sc->mtp_past, (int32_t)kv_rec_floats(c->kv)};
    memcpy(buf, &h, sizeof h);
    kv_rec_save(c->kv, seq, (char *)buf + sizeof h);
    return 0;
}

int llm170_seq_restore_state(llm170_context *c, int seq, const void *buf, size_t size) {
    err e = {0};
    if (check_seq(c, seq, &e)) return fail(&e);
    seq_ckpt h;
    if (!buf || size < sizeof h) {
        err_set(&e, ERR_FORMAT, "a state checkpoint has at least %zu bytes, got %zu", sizeof h, buf ? size : 0);
        return fail(&e);
    }
    memcpy(&h, buf, sizeof h);
    seq_cache *sc = &c->kv->seqs[seq];
    if (h.magic != SEQ_CKPT_MAGIC || h.n_floats != kv_rec_floats(c->kv) || size != llm170_seq_state_size(c)) {
        err_set(&e, ERR_FORMAT, "not a state checkpoint of this context's model (magic %08x, %d floats, %zu "
                "bytes; expected %d floats, %zu bytes)", h.magic, h.n_floats, size, (int)kv_rec_floats(c->kv),
                llm170_seq_state_size(c));
        return fail(&e);
    }
    if (h.n_past < 0 || h.n_past > sc->n_past) {
        err_set(&e, ERR_RANGE, "the checkpoint is at %d tokens but sequence %d holds only %d: it was reset or "
                "refilled since the checkpoint", h.n_past, seq, sc->n_past);
        return fail(&e);
    }
    kv_rec_restore(c->kv, seq, (const char *)buf + sizeof h);
    sc->n_past = h.n_past;
    if (sc->mtp_past > h.mtp_past) sc->mtp_past = h.mtp_past;
    return 0;
}

llm170_sampler_params llm170_sampler_default_params(void) {
    sampler_params d = sampler_defaults();
    return (llm170_sampler_params){d.temperature, d.top_k, d.top_p, d.min_p, d.repeat_penalty, d.presence_penalty,
                                   d.frequency_penalty, d.penalty_last_n, d.seed};
}

int llm170_sampler_new(const llm170_model *m, const llm170_sampler_params *p, llm170_sampler **out) {
    err e = {0};
    *out = NULL;
    llm170_sampler_params q = p ? *p : llm170_sampler_default_params();
    sampler_params sp = {q.temperature, q.top_k, q.top_p, q.min_p, q.repeat_penalty, q.presence_penalty,
                         q.frequency_penalty, q.penalty_last_n, q.seed};
    llm170_sampler *s = calloc(1, sizeof *s);
    if (!s) return fail(&(err){ERR_NOMEM, "out of memory"});
    if (sampler_new(&s->s, &sp, m->m->hp.n_vocab, &e)) {
        free(s);
        return fail(&e);
    }
    *out = s;
    return 0;
}

void llm170_sampler_free(llm170_sampler *s) {
    if (!s) return;
    sampler_free(s->s);
    free(s);
}

void llm170_sampler_accept(llm170_sampler *s, int32_t token) { sampler_accept(s->s, token); }
int32_t llm170_sample(llm170_sampler *s, const float *logits) { return sampler_sample(s->s, logits); }
