/* encode: text -> ids. The steps, in the order HF tokenizers and llama.cpp take them:
 *   1. invalid UTF-8 is replaced (each maximal invalid subsequence by one U+FFFD);
 *   2. special tokens written in the text are cut out, longest token first over the whole text (with
 *      parse_special off, only user-defined tokens);
 *   3. each remaining fragment goes to the model: BPE runs the pre-tokenizer then merges word by word;
 *      SentencePiece writes spaces as U+2581, adds the leading space after BOS/start/special tokens, and
 *      merges the whole fragment;
 *   4. BOS / EOS are added as the vocabulary says, when asked (TOK_ADD_SPECIAL).
 *
 * Ownership: the returned id array is malloc'd; everything else is freed before return. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_impl.h"

int tok_scratch_grow(void **p, size_t *cap, size_t need, err *e) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    void *q = realloc(*p, n);
    if (!q) return err_set(e, ERR_NOMEM, "out of memory (%zu bytes of tokenizer scratch)", n);
    *p = q, *cap = n;
    return 0;
}

void tok_scratch_free(tok_scratch *s) {
    free(s->sym);
    free(s->heap);
    free(s->buf);
    memset(s, 0, sizeof *s);
}

int tok_ids_push(tok_ids *a, int32_t id, err *e) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        int32_t *v = realloc(a->v, cap * sizeof *v);
        if (!v) return err_set(e, ERR_NOMEM, "out of memory for %zu token ids", cap);
        a->v = v, a->cap = cap;
    }
    a->v[a->n++] = id;
    return 0;
}

/* ---- UTF-8 --------------------------------------------------------------------------------------------- */

int tok_utf8_seq(const unsigned char *s, size_t avail, size_t *used) {
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c < 0x80) {
        *used = 1;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0; /* no overlong forms */
        if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        *used = 1;
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (i >= avail) {
            *used = avail;
            return -1;
        }
        unsigned char lb = i == 1 ? lo : 0x80, hb = i == 1 ? hi : 0xBF;
        if (s[i] < lb || s[i] > hb) {
            *used = i;
            return 0;
        }
    }
    *used = n;
    return 1;
}

int tok_utf8_check(const unsigned char *s, size_t avail) {
    if (!avail) return 0;
    size_t used;
    int r = tok_utf8_seq(s, avail, &used);
    if (r == 1) return (int)used;
    if (r == 0) return 0;
    /* incomplete: how many more bytes the lead byte asks for */
    size_t n = s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    return -(int)(n - avail);
}

int tok_utf8_sanitize(const char *src, size_t len, char **out, size_t *out_len, size_t *n_replaced, err *e) {
    /* each replaced subpart (>= 1 byte) becomes 3 bytes: the output is at most 3x the input */
    char *d = malloc(len * 3 + 1);
    if (!d) return err_set(e, ERR_NOMEM, "out of memory copying %zu bytes of text", len);
    size_t k = 0, bad = 0;
    const unsigned char *s = (const unsigned char *)src;
    for (size_t i = 0; i < len;) {
        size_t used;
        int r = tok_utf8_seq(s + i, len - i, &used);
        if (r == 1) {
            memcpy(d + k, s + i, used);
            k += used;
        } else {
            memcpy(d + k, "\xEF\xBF\xBD", 3);
            k += 3;
            bad++;
        }
        i += used;
    }
    d[k] = 0;
    *out = d;
    *out_len = k;
    if (n_replaced) *n_replaced = bad;
    return 0;
}

/* ---- special tokens ------------------------------------------------------------------------------------ */

/* A fragment: raw text [off, off+len) or a token (id >= 0). */
typedef struct frag {
    size_t off, len;
    int32_t id;
} frag;

typedef struct frag_list {
    frag *v;
    size_t n, cap;
} frag_list;

static int frag_insert(frag_list *l, size_t at, frag f, err *e) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        frag *v = realloc(l->v, cap * sizeof *v);
        if (!v) return err_set(e, ERR_NOMEM, "out of memory splitting special tokens");
        l->v = v, l->cap = cap;
    }
    memmove(l->v + at + 1, l->v + at, (l->n - at) * sizeof *l->v);
    l->v[at] = f;
    l->n++;
    return 0;
}

/* Cuts every occurrence of special token `id` out of the raw fragments (llama.cpp's partition order:
 * this runs for each special token in turn, longest first). */
static int cut_token(const tokenizer *t, const char *text, frag_list *l, int32_t id, err *e) {
    size_t tn;
    const char *tt = tok_text_of(t, id, &tn);
    for (size_t i = 0; i < l->n;) {
        frag f = l->v[i];
        const char *hit = f.id < 0 && f.len >= tn ? memmem(text + f.off, f.len, tt, tn) : NULL;
        if (!hit) {
            i++;
            continue;
        }
        size_t at = (size_t)(hit - text);
        frag left = {f.off, at - f.off, -1}, tok = {at, tn, id}, right = {at + tn, f.off + f.len - at - tn, -1};
        int rc;
        /* f becomes [left] token [right]; the right part is searched next */
        if (left.len) {
            l->v[i++] = left;
            if ((rc = frag_insert(l, i, tok, e))) return rc;
        } else {
            l->v[i] = tok;
        }
        if (right.len && (rc = frag_insert(l, i + 1, right, e))) return rc;
        i++;
    }
    return 0;
}

#define GRAM_MIN_TEXT 4096
#define GRAM_BITS 23 /* 1 MiB of bits: ~12% of slots set by a 1 MB text */

static uint32_t gram_hash(const char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return (v * 2654435761u) >> (32 - GRAM_BITS);
}

static uint64_t *gram_set(const char *text, size_t n) {
    uint64_t *g = calloc((1u << GRAM_BITS) / 64, sizeof *g);
    if (!g) return NULL; /* no filter: every token is searched, as without one */
    for (size_t i = 0; i + 4 <= n; i++) {
        uint32_t h = gram_hash(text + i);
        g[h >> 6] |= 1ull << (h & 63);
    }
    return g;
}

static bool gram_maybe(const uint64_t *g, const char *tok, size_t n) {
    for (size_t i = 0; i + 4 <= n; i++) {
        uint32_t h = gram_hash(tok + i);
        if (!(g[h >> 6] >> (h & 63) & 1)) return false;
    }
    return true;
}

/* ---- models -------------------------------------------------------------------------------------------- */

typedef struct word_ctx {
    const tokenizer *t;
    tok_scratch *sc;
    tok_ids *out;
} word_ctx;

static int bpe_word_cb(void *ctx, const char *w, size_t n, err *e) {
    word_ctx *c = ctx;
    return tok_bpe_word(c->t, w, n, c->sc, c->out, e);
}

/* ' ' -> U+2581, with an optional leading one, into *buf (not sc->buf: the BPE path uses that per word). */
static int escape_spaces(const char *s, size_t n, bool prefix, char **buf, size_t *cap, size_t *out_n, err *e) {
    int rc = tok_scratch_grow((void **)buf, cap, 3 * n + 4, e);
    if (rc) return rc;
    size_t k = 0;
    if (prefix) memcpy(*buf, "\xE2\x96\x81", 3), k = 3;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') memcpy(*buf + k, "\xE2\x96\x81", 3), k += 3;
        else (*buf)[k++] = s[i];
    }
    *out_n = k;
    return 0;
}

/* SentencePiece merges run over a whole fragment, so a long text makes one huge merge heap. When no token
 * has U+2581 after another character (t->spm_word_split, checked at load; true of vocabularies trained
 * with split_by_whitespace), no merge can cross the point before a U+2581 that follows a non-U+2581
 * character, and the fragment is merged in independent pieces with the same result. */
static int spm_segments(const tokenizer *t, const char *s, size_t n, tok_scratch *sc, tok_ids *out, err *e) {
    if (!t->spm_word_split) return tok_spm_text(t, s, n, sc, out, e);
    size_t start = 0;
    for (size_t i = 1; i + 3 <= n; i++) {
        if (memcmp(s + i, "\xE2\x96\x81", 3) || (i >= 3 && !memcmp(s + i - 3, "\xE2\x96\x81", 3))) continue;
        int rc = tok_spm_text(t, s + start, i - start, sc, out, e);
        if (rc) return rc;
        start = i;
        i += 2;
    }
    return tok_spm_text(t, s + start, n - start, sc, out, e);
}

int tok_encode(const tokenizer *t, const char *text, size_t len, unsigned flags, int32_t **ids, size_t *n_ids,
               err *e) {
    *ids = NULL;
    *n_ids = 0;
    char *clean = NULL, *esc = NULL;
    size_t clean_n, esc_cap = 0;
    tok_ids out = {0};
    tok_scratch sc = {0};
    frag_list fl = {0};
    int rc = tok_utf8_sanitize(text, len, &clean, &clean_n, NULL, e);
    if (rc) return rc;
    if (clean_n && (rc = frag_insert(&fl, 0, (frag){0, clean_n, -1}, e))) goto done;
    /* Vocabularies carry thousands of special tokens (Gemma: ~6k "<unusedN>"); searching a long text for
     * each is slow. A token can only occur if each of its 4-byte windows occurs in the text, so a bit set
     * of the text's hashed 4-grams rules most out in O(1) each (no false negatives: exactness is kept). */
    uint64_t *grams = NULL;
    if (clean_n >= GRAM_MIN_TEXT && t->n_special > 8) grams = gram_set(clean, clean_n);
    for (uint32_t i = 0; i < t->n_special && !rc; i++) {
        int32_t id = t->special[i];
        if (!(flags & TOK_PARSE_SPECIAL) && t->type[id] != TOK_TYPE_USER_DEFINED) continue;
        size_t tn;
        const char *tt = tok_text_of(t, id, &tn);
        if (grams && !gram_maybe(grams, tt, tn)) continue;
        rc = cut_token(t, clean, &fl, id, e);
    }
    free(grams);
    if (rc) goto done;

    bool add_special = flags & TOK_ADD_SPECIAL;
    if (add_special && t->add_bos && (rc = tok_ids_push(&out, t->bos, e))) goto done;
    bool prev_special = true; /* SentencePiece: a space is prefixed at the start and after special tokens */
    word_ctx wc = {t, &sc, &out};
    for (size_t i = 0; i < fl.n && !rc; i++) {
        frag f = fl.v[i];
        if (f.id >= 0) {
            rc = tok_ids_push(&out, f.id, e);
            prev_special = true;
            continue;
        }
        const char *s = clean + f.off;
        size_t n = f.len;
        if (t->model == TOK_MODEL_SPM) {
            if (!(rc = escape_spaces(s, n, t->add_space_prefix && prev_special, &esc, &esc_cap, &n, e)))
                rc = spm_segments(t, esc, n, &sc, &out, e);
        } else {
            if (t->escape_spaces) {
                if ((rc = escape_spaces(s, n, false, &esc, &esc_cap, &n, e))) break;
                s = esc;
            }
            rc = tok_pretok_split(t->pretok, s, n, bpe_word_cb, &wc, e);
        }
        prev_special = false;
    }
    if (!rc && add_special && t->add_eos) rc = tok_ids_push(&out, t->eos, e);
done:
    free(clean);
    free(esc);
    free(fl.v);
    tok_scratch_free(&sc);
    if (rc) {
        free(out.v);
        return rc;
    }
    if (!out.v) out.v = malloc(sizeof *out.v); /* callers may free an empty result like any other */
    if (!out.v) return err_set(e, ERR_NOMEM, "out of memory");
    *ids = out.v;
    *n_ids = out.n;
    return 0;
}
