/* vocab: building a tokenizer from a tok_spec or from a GGUF file's `tokenizer.ggml.*` keys, and the
 * lookups every other file uses (text -> id hash, merge table, special-token list, decoded pieces).
 *
 * Ownership: tok_create copies everything out of the spec; tok_free releases it all. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_impl.h"

const char *tok_model_names(void) {
    return "gpt2 (byte-level BPE), gemma4 (BPE over UTF-8), llama (SentencePiece BPE)";
}

tok_spec tok_spec_default(void) {
    tok_spec s;
    memset(&s, 0, sizeof s);
    s.bos = s.eos = s.unk = s.eot = s.pad = s.eom = -1;
    s.add_bos = s.add_eos = s.add_space_prefix = -1;
    return s;
}

uint64_t tok_hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

uint64_t tok_hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

int32_t tok_find(const tokenizer *t, const char *text, size_t len) {
    for (uint64_t i = tok_hash_bytes(text, len) & t->hash_mask;; i = (i + 1) & t->hash_mask) {
        int32_t id = t->hash[i];
        if (id < 0) return -1;
        size_t n;
        const char *s = tok_text_of(t, id, &n);
        if (n == len && !memcmp(s, text, len)) return id;
    }
}

/* GPT-2's byte alphabet: printable Latin-1 bytes map to themselves, the other 68 to U+0100.. in order. */
static int byte_to_cp(uint8_t b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
    int k = 0;
    for (int c = 0; c < b; c++)
        if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE))) k++;
    return 0x100 + k;
}

int tok_byte_to_utf8(uint8_t b, char out[2]) {
    int cp = byte_to_cp(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

static int16_t cp_inv[0x144];
static pthread_once_t cp_inv_once = PTHREAD_ONCE_INIT;

static void build_cp_inv(void) {
    for (int i = 0; i < 0x144; i++) cp_inv[i] = -1;
    for (int b = 0; b < 256; b++) cp_inv[byte_to_cp((uint8_t)b)] = (int16_t)b;
}

int tok_cp_to_byte(uint32_t cp) {
    pthread_once(&cp_inv_once, build_cp_inv);
    return cp < 0x144 ? cp_inv[cp] : -1;
}

void tok_free(tokenizer *t) {
    if (!t) return;
    free(t->text);
    free(t->tok_off);
    free(t->score);
    free(t->type);
    free(t->hash);
    free(t->merges);
    free(t->special);
    free(t->piece);
    free(t->piece_off);
    tok_pretok_free(t->pretok);
    free(t);
}

static int build_hash(tokenizer *t, err *e) {
    uint64_t cap = 16;
    while (cap < (uint64_t)t->n * 2) cap <<= 1;
    t->hash = malloc(cap * sizeof *t->hash);
    if (!t->hash) return err_set(e, ERR_NOMEM, "out of memory for the token hash (%u tokens)", t->n);
    memset(t->hash, 0xff, cap * sizeof *t->hash);
    t->hash_mask = cap - 1;
    for (uint32_t id = 0; id < t->n; id++) {
        size_t len;
        const char *s = tok_text_of(t, (int32_t)id, &len);
        uint64_t i = tok_hash_bytes(s, len) & t->hash_mask;
        for (;; i = (i + 1) & t->hash_mask) {
            int32_t o = t->hash[i];
            if (o < 0) break;
            size_t on;
            const char *os = tok_text_of(t, o, &on);
            if (on == len && !memcmp(os, s, len)) break; /* duplicate text: the later id wins, as in llama.cpp */
        }
        t->hash[i] = (int32_t)id;
    }
    return 0;
}

static int build_merges(tokenizer *t, const tok_spec *s, err *e) {
    uint64_t cap = 16;
    while (cap < (uint64_t)s->n_merges * 2) cap <<= 1;
    t->merges = calloc(cap, sizeof *t->merges);
    if (!t->merges) return err_set(e, ERR_NOMEM, "out of memory for %u merges", s->n_merges);
    for (uint64_t i = 0; i < cap; i++) t->merges[i].rank = -1;
    t->merge_mask = cap - 1;
    char buf[2 * TOK_MAX_TOKEN_BYTES + 2];
    for (uint32_t r = 0; r < s->n_merges; r++) {
        const char *m = s->merges[r];
        size_t len = s->merge_lens ? s->merge_lens[r] : strlen(m);
        /* The separator is the first space after the first byte: a left part never starts with a space
         * (the byte alphabet writes space as U+0120) but SPM-style parts may be "▁" which is not ' '. */
        const char *sp = len > 1 ? memchr(m + 1, ' ', len - 1) : NULL;
        if (!sp || len > sizeof buf)
            return err_set(e, ERR_FORMAT, "tokenizer.ggml.merges[%u]: expected \"left right\", found '%.*s'", r,
                           (int)(len > 64 ? 64 : len), m);
        size_t ln = (size_t)(sp - m), rn = len - ln - 1;
        int32_t l = tok_find(t, m, ln), rr = tok_find(t, sp + 1, rn);
        memcpy(buf, m, ln);
        memcpy(buf + ln, sp + 1, rn);
        int32_t res = tok_find(t, buf, ln + rn);
        if (l < 0 || rr < 0 || res < 0) continue; /* cannot apply: a part or the result is not a token */
        uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)rr;
        uint64_t i = tok_hash_u64(key) & t->merge_mask;
        while (t->merges[i].rank >= 0 && t->merges[i].key != key) i = (i + 1) & t->merge_mask;
        if (t->merges[i].rank >= 0) continue; /* duplicate: the first (lowest) rank stays */
        t->merges[i] = (tok_merge){key, (int32_t)r, res};
        t->n_merges++;
    }
    return 0;
}

static int byte_token_value(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return -1;
    unsigned v;
    char hex[3] = {s[3], s[4], 0};
    if (sscanf(hex, "%2x", &v) != 1) return -1;
    return (int)v;
}

/* What each token prints as (special=true), computed once: decoding is then a copy. */
static int build_pieces(tokenizer *t, err *e) {
    uint64_t total = t->tok_off[t->n];
    t->piece = malloc(total + 1);
    t->piece_off = malloc(((size_t)t->n + 1) * sizeof *t->piece_off);
    if (!t->piece || !t->piece_off) return err_set(e, ERR_NOMEM, "out of memory for decoded pieces");
    uint64_t k = 0;
    for (uint32_t id = 0; id < t->n; id++) {
        t->piece_off[id] = k;
        size_t n;
        const char *s = tok_text_of(t, (int32_t)id, &n);
        switch (t->type[id]) {
        case TOK_TYPE_CONTROL:
        case TOK_TYPE_UNKNOWN:
        case TOK_TYPE_USER_DEFINED:
            memcpy(t->piece + k, s, n);
            k += n;
            break;
        case TOK_TYPE_BYTE: {
            int v = byte_token_value(s, n);
            if (v >= 0) t->piece[k++] = (char)v;
            break;
        }
        case TOK_TYPE_NORMAL:
            if (t->model == TOK_MODEL_SPM || t->escape_spaces) {
                /* U+2581 (3 bytes) -> ' ': the piece never grows */
                for (size_t i = 0; i < n;) {
                    if (i + 3 <= n && !memcmp(s + i, "\xE2\x96\x81", 3)) {
                        t->piece[k++] = ' ';
                        i += 3;
                    } else {
                        t->piece[k++] = s[i++];
                    }
                }
            } else {
                /* byte alphabet -> bytes: each 1-2 byte character gives one byte */
                for (size_t i = 0; i < n;) {
                    const unsigned char *u = (const unsigned char *)s + i;
                    uint32_t cp = u[0];
                    size_t cl = 1;
                    if (u[0] >= 0xC0 && u[0] < 0xE0 && i + 1 < n) cp = (uint32_t)(u[0] & 0x1F) << 6 | (u[1] & 0x3F), cl = 2;
                    int b = cl <= 2 ? tok_cp_to_byte(cp) : -1;
                    if (b >= 0 && (cl == 2 || u[0] < 0x80)) {
                        t->piece[k++] = (char)b;
                        i += cl;
                    } else { /* not in the alphabet: keep the character as written */
                        size_t c = u[0] < 0xE0 ? cl : u[0] < 0xF0 ? 3 : 4;
                        if (i + c > n) c = n - i;
                        memcpy(t->piece + k, s + i, c);
                        k += c, i += c;
                    }
                }
            }
            break;
        default: /* unused / undefined tokens print nothing, as in llama.cpp */
            break;
        }
    }
    t->piece_off[t->n] = k;
    return 0;
}

static int cmp_special(const void *a, const void *b, void *ctx) {
    const tokenizer *t = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    uint64_t lx = t->tok_off[x + 1] - t->tok_off[x], ly = t->tok_off[y + 1] - t->tok_off[y];
    if (lx != ly) return lx > ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Turn-end tokens that end generation whatever the file's eos says (llama.cpp's list, for the models
 * llm170 targets). */
static const char *const EOG_TEXTS[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                        "<|eom_id|>", "<EOT>", "<|end_of_text|>", "<end_of_utterance>",
                                        "<|return|>", "<|call|>", "<turn|>"};

static void add_eog(tokenizer *t, int32_t id) {
    if (id < 0 || t->n_eog == sizeof t->eog / sizeof t->eog[0] || tok_is_eog(t, id)) return;
    t->eog[t->n_eog++] = id;
}

bool tok_is_eog(const tokenizer *t, int32_t id) {
    for (uint32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return true;
    return false;
}

static int check_id(const char *what, int32_t id, uint32_t n, err *e) {
    if (id < -1 || id >= (int64_t)n)
        return err_set(e, ERR_FORMAT, "tokenizer %s id %d is outside the vocabulary (0..%u)", what, id, n - 1);
    return 0;
}

int tok_create(tokenizer **out, const tok_spec *s, err *e) {
    *out = NULL;
    if (!s->model) return err_set(e, ERR_FORMAT, "tokenizer model missing; supported: %s", tok_model_names());
    if (s->n_tokens == 0 || s->n_tokens > TOK_MAX_TOKENS)
        return err_set(e, ERR_FORMAT, "tokenizer has %u tokens, expected 1..%u", s->n_tokens, TOK_MAX_TOKENS);
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) return err_set(e, ERR_NOMEM, "out of memory for the tokenizer");
    int rc = 0;
    if (!strcmp(s->model, "gpt2") || !strcmp(s->model, "gemma4")) {
        /* "gemma4" is BPE over raw UTF-8 whatever `pre` says (llama.cpp reads it so) */
        t->model = TOK_MODEL_BPE;
        int def_bos;
        rc = tok_pretok_new(&t->pretok, !strcmp(s->model, "gemma4") ? "gemma4" : s->pre, &t->pre_name, e);
        if (rc) goto fail;
        tok_pretok_flags(t->pretok, &t->byte_encode, &t->ignore_merges, &t->escape_spaces, &def_bos);
        t->add_bos = s->add_bos >= 0 ? s->add_bos : def_bos;
        t->add_eos = s->add_eos > 0;
        t->add_space_prefix = s->add_space_prefix > 0;
    } else if (!strcmp(s->model, "llama")) {
        t->model = TOK_MODEL_SPM;
        t->pre_name = "";
        t->escape_spaces = true;
        t->add_bos = s->add_bos != 0;
        t->add_eos = s->add_eos > 0;
        t->add_space_prefix = s->add_space_prefix != 0;
    } else {
        rc = err_set(e, ERR_UNSUPPORTED, "unknown tokenizer model '%s' (tokenizer.ggml.model); supported: %s",
                     s->model, tok_model_names());
        goto fail;
    }
    t->n = s->n_tokens;
    t->tok_off = malloc(((size_t)t->n + 1) * sizeof *t->tok_off);
    t->score = calloc(t->n, sizeof *t->score);
    t->type = malloc(t->n);
    uint64_t total = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        size_t len = s->text_lens ? s->text_lens[i] : strlen(s->texts[i]);
        if (len > TOK_MAX_TOKEN_BYTES) {
            rc = err_set(e, ERR_FORMAT, "token %u is %zu bytes long, the cap is %u", i, len, TOK_MAX_TOKEN_BYTES);
            goto fail;
        }
        total += len;
    }
    t->text = malloc(total + 1);
    if (!t->tok_off || !t->score || !t->type || !t->text) {
        rc = err_set(e, ERR_NOMEM, "out of memory for %u tokens", t->n);
        goto fail;
    }
    uint64_t k = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        size_t len = s->text_lens ? s->text_lens[i] : strlen(s->texts[i]);
        t->tok_off[i] = k;
        memcpy(t->text + k, s->texts[i], len);
        k += len;
        t->score[i] = s->scores ? s->scores[i] : 0.0f;
        int32_t ty = s->types ? s->types[i] : TOK_TYPE_NORMAL;
        t->type[i] = (uint8_t)(ty >= 0 && ty <= TOK_TYPE_BYTE ? ty : TOK_TYPE_UNDEFINED);
    }
    t->tok_off[t->n] = k;
    if ((rc = check_id("bos", s->bos, t->n, e)) || (rc = check_id("eos", s->eos, t->n, e)) ||
        (rc = check_id("unknown", s->unk, t->n, e)) || (rc = check_id("eot", s->eot, t->n, e)) ||
        (rc = check_id("padding", s->pad, t->n, e)) || (rc = check_id("eom", s->eom, t->n, e)))
        goto fail;
    t->bos = s->bos, t->eos = s->eos, t->unk = s->unk, t->eot = s->eot, t->pad = s->pad, t->eom = s->eom;
    /* A default the file did not state gives way to a missing id; a stated one must be honoured. */
    if (s->add_bos < 0 && t->bos < 0) t->add_bos = false;
    if ((t->add_bos && t->bos < 0) || (t->add_eos && t->eos < 0)) {
        rc = err_set(e, ERR_FORMAT, "tokenizer asks to add %s but has no %s token id",
                     t->add_bos && t->bos < 0 ? "BOS" : "EOS", t->add_bos && t->bos < 0 ? "bos" : "eos");
        goto fail;
    }
    if ((rc = build_hash(t, e))) goto fail;
    if (t->model == TOK_MODEL_BPE && (rc = build_merges(t, s, e))) goto fail;

    for (int b = 0; b < 256; b++) {
        char buf[8];
        int32_t id = -1;
        if (t->model == TOK_MODEL_BPE && t->byte_encode) {
            id = tok_find(t, buf, (size_t)tok_byte_to_utf8((uint8_t)b, buf));
        } else {
            snprintf(buf, sizeof buf, "<0x%02X>", b);
            id = tok_find(t, buf, 6);
            if (id < 0 && b < 0x80) {
                buf[0] = (char)b;
                id = tok_find(t, buf, 1);
            }
        }
        t->byte_tok[b] = id;
    }

    t->special = malloc((size_t)t->n * sizeof *t->special);
    if (!t->special) {
        rc = err_set(e, ERR_NOMEM, "out of memory for the special-token list");
        goto fail;
    }
    for (uint32_t i = 0; i < t->n; i++) {
        uint8_t ty = t->type[i];
        if ((ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_USER_DEFINED || ty == TOK_TYPE_UNKNOWN) &&
            t->tok_off[i + 1] > t->tok_off[i])
            t->special[t->n_special++] = (int32_t)i;
    }
    qsort_r(t->special, t->n_special, sizeof *t->special, cmp_special, t);
    if ((rc = build_pieces(t, e))) goto fail;
    add_eog(t, t->eos);
    add_eog(t, t->eot);
    add_eog(t, t->eom);
    for (size_t i = 0; i < sizeof EOG_TEXTS / sizeof EOG_TEXTS[0]; i++)
        add_eog(t, tok_find(t, EOG_TEXTS[i], strlen(EOG_TEXTS[i])));
    t->spm_word_split = t->model == TOK_MODEL_SPM;
    for (uint32_t i = 0; i < t->n && t->spm_word_split; i++) {
        size_t n;
        const char *x = tok_text_of(t, (int32_t)i, &n);
        /* a character other than U+2581 followed by U+2581: a merge could cross a word start */
        for (size_t j = 1; j + 3 <= n; j++)
            if (!memcmp(x + j, "\xE2\x96\x81", 3) && (j < 3 || memcmp(x + j - 3, "\xE2\x96\x81", 3))) {
                t->spm_word_split = false;
                break;
            }
    }
    *out = t;
    return 0;
fail:
    tok_free(t);
    return rc;
}

/* ---- GGUF ---------------------------------------------------------------------------------------------- */

static int opt_i32(const gguf_file *f, const char *key, int32_t *v, err *e) {
    if (!gguf_find_kv(f, key)) return 0;
    uint32_t u;
    int rc = gguf_get_u32(f, key, &u, e);
    if (rc) {
        int32_t i; /* some writers store ids as int32 (e.g. -1 for none) */
        if (gguf_get_i32(f, key, &i, NULL)) return rc;
        *v = i < 0 ? -1 : i;
        return 0;
    }
    *v = (int32_t)u;
    return 0;
}

static int opt_bool(const gguf_file *f, const char *key, int *v, err *e) {
    if (!gguf_find_kv(f, key)) return 0;
    bool b;
    int rc = gguf_get_bool(f, key, &b, e);
    if (!rc) *v = b;
    return rc;
}

int tok_load_gguf(tokenizer **out, const gguf_file *f, err *e) {
    *out = NULL;
    char model[64], pre[64] = "";
    int rc = gguf_get_cstr(f, "tokenizer.ggml.model", model, sizeof model, e);
    if (rc) return err_wrap(e, "tokenizer (supported models: %s)", tok_model_names());
    if (gguf_find_kv(f, "tokenizer.ggml.pre") && (rc = gguf_get_cstr(f, "tokenizer.ggml.pre", pre, sizeof pre, e)))
        return rc;
    if (!strcmp(model, "gpt2") && !pre[0])
        return err_set(e, ERR_UNSUPPORTED,
                       "tokenizer.ggml.pre is missing, so the pre-tokenizer is unknown; re-convert the model with a "
                       "current converter");
    gguf_array toks, scores = {0}, types = {0}, merges = {0};
    if ((rc = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STRING, &toks, e))) return rc;
    if (toks.n == 0 || toks.n > TOK_MAX_TOKENS)
        return err_set(e, ERR_FORMAT, "tokenizer.ggml.tokens has %llu entries, expected 1..%u",
                       (unsigned long long)toks.n, TOK_MAX_TOKENS);
    if (gguf_find_kv(f, "tokenizer.ggml.scores") &&
        (rc = gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_FLOAT32, &scores, e)))
        return rc;
    if (gguf_find_kv(f, "tokenizer.ggml.token_type") &&
        (rc = gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_INT32, &types, e)))
        return rc;
    if (gguf_find_kv(f, "tokenizer.ggml.merges") &&
        (rc = gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_STRING, &merges, e)))
        return rc;
    if ((scores.n && scores.n != toks.n) || (types.n && types.n != toks.n))
        return err_set(e, ERR_FORMAT, "tokenizer arrays disagree: %llu tokens, %llu scores, %llu token types",
                       (unsigned long long)toks.n, (unsigned long long)scores.n, (unsigned long long)types.n);
    if (merges.n > TOK_MAX_TOKENS * 2ull)
        return err_set(e, ERR_FORMAT, "tokenizer.ggml.merges has %llu entries, the cap is %u",
                       (unsigned long long)merges.n, TOK_MAX_TOKENS * 2);

    tok_spec s = tok_spec_default();
    s.model = model;
    s.pre = pre;
    s.n_tokens = (uint32_t)toks.n;
    s.n_merges = (uint32_t)merges.n;
    const char **texts = malloc(toks.n * sizeof *texts);
    uint32_t *lens = malloc(toks.n * sizeof *lens);
    const char **mt = malloc((merges.n + 1) * sizeof *mt);
    uint32_t *ml = malloc((merges.n + 1) * sizeof *ml);
    float *sc = scores.n ? malloc(toks.n * sizeof *sc) : NULL;
    int32_t *ty = types.n ? malloc(toks.n * sizeof *ty) : NULL;
    if (!texts || !lens || !mt || !ml || (scores.n && !sc) || (types.n && !ty)) {
        rc = err_set(e, ERR_NOMEM, "out of memory reading the vocabulary");
        goto done;
    }
    for (uint64_t i = 0; i < toks.n; i++) {
        if (toks.strs[i].len > TOK_MAX_TOKEN_BYTES) {
            rc = err_set(e, ERR_FORMAT, "tokenizer.ggml.tokens[%llu] is %llu bytes, the cap is %u",
                         (unsigned long long)i, (unsigned long long)toks.strs[i].len, TOK_MAX_TOKEN_BYTES);
            goto done;
        }
        texts[i] = toks.strs[i].ptr, lens[i] = (uint32_t)toks.strs[i].len;
    }
    for (uint64_t i = 0; i < merges.n; i++) {
        if (merges.strs[i].len > 2 * TOK_MAX_TOKEN_BYTES + 1) {
            rc = err_set(e, ERR_FORMAT, "tokenizer.ggml.merges[%llu] is too long", (unsigned long long)i);
            goto done;
        }
        mt[i] = merges.strs[i].ptr, ml[i] = (uint32_t)merges.strs[i].len;
    }
    /* The arrays' raw bytes are little-endian and possibly unaligned in the mapping: copy them out. */
    if (sc) memcpy(sc, scores.data, toks.n * sizeof *sc);
    if (ty) memcpy(ty, types.data, toks.n * sizeof *ty);
    s.texts = texts, s.text_lens = lens, s.merges = mt, s.merge_lens = ml, s.scores = sc, s.types = ty;
    if ((rc = opt_i32(f, "tokenizer.ggml.bos_token_id", &s.bos, e)) ||
        (rc = opt_i32(f, "tokenizer.ggml.eos_token_id", &s.eos, e)) ||
        (rc = opt_i32(f, "tokenizer.ggml.unknown_token_id", &s.unk, e)) ||
        (rc = opt_i32(f, "tokenizer.ggml.eot_token_id", &s.eot, e)) ||
        (rc = opt_i32(f, "tokenizer.ggml.eom_token_id", &s.eom, e)) ||
        (rc = opt_i32(f, "tokenizer.ggml.padding_token_id", &s.pad, e)) ||
        (rc = opt_bool(f, "tokenizer.ggml.add_bos_token", &s.add_bos, e)) ||
        (rc = opt_bool(f, "tokenizer.ggml.add_eos_token", &s.add_eos, e)) ||
        (rc = opt_bool(f, "tokenizer.ggml.add_space_prefix", &s.add_space_prefix, e)))
        goto done;
    rc = tok_create(out, &s, e);
done:
    free(texts);
    free(lens);
    free(mt);
    free(ml);
    free(sc);
    free(ty);
    return rc;
}

uint32_t tok_n_tokens(const tokenizer *t) { return t->n; }
enum tok_model tok_model_kind(const tokenizer *t) { return t->model; }
const char *tok_pre_name(const tokenizer *t) { return t->pre_name; }
int32_t tok_bos(const tokenizer *t) { return t->bos; }
int32_t tok_eos(const tokenizer *t) { return t->eos; }
int32_t tok_eot(const tokenizer *t) { return t->eot; }
bool tok_add_bos(const tokenizer *t) { return t->add_bos; }
bool tok_add_eos(const tokenizer *t) { return t->add_eos; }

enum tok_type tok_token_type(const tokenizer *t, int32_t id) {
    return id >= 0 && (uint32_t)id < t->n ? (enum tok_type)t->type[id] : TOK_TYPE_UNDEFINED;
}

const char *tok_token_text(const tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || (uint32_t)id >= t->n) {
        *len = 0;
        return "";
    }
    return tok_text_of(t, id, len);
}
