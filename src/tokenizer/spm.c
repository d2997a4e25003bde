/* spm: SentencePiece BPE (tokenizer.ggml.model = "llama") over one fragment of text.
 *
 * The caller has already written spaces as U+2581 and added the leading one. Characters start as
 * symbols; an adjacent pair whose concatenation is a vocabulary token is a candidate with that token's
 * score; the highest score merges first, ties to the leftmost pair (SentencePiece's bpe_model order). A
 * symbol left with no token falls back to its bytes' <0xNN> tokens, then to the unknown token.
 *
 * Ownership: works in the caller's tok_scratch; appends to the caller's tok_ids. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_impl.h"

typedef struct ssym {
    uint32_t start, len;
    int32_t id;
    int32_t prev, next;
} ssym;

typedef struct spair {
    float score;
    int32_t left, right, id;
    uint32_t size; /* bytes of the pair when pushed: a pair whose sides changed no longer adds up */
} spair;

static bool pair_before(const spair *a, const spair *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(spair *h, size_t *n, spair p) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!pair_before(&p, &h[up])) break;
        h[i] = h[up];
        i = up;
    }
    h[i] = p;
}

static spair heap_pop(spair *h, size_t *n) {
    spair top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && pair_before(&h[c + 1], &h[c])) c++;
        if (!pair_before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

static void try_pair(const tokenizer *t, const char *text, const ssym *s, int32_t l, int32_t r, spair *h,
                     size_t *nh) {
    if (l < 0 || r < 0) return;
    uint32_t size = s[l].len + s[r].len;
    int32_t id = tok_find(t, text + s[l].start, size);
    if (id < 0) return;
    heap_push(h, nh, (spair){t->score[id], l, r, id, size});
}

int tok_spm_text(const tokenizer *t, const char *text, size_t len, tok_scratch *sc, tok_ids *out, err *e) {
    int rc;
    if ((rc = tok_scratch_grow(&sc->sym, &sc->sym_cap, (len + 1) * sizeof(ssym), e)) ||
        (rc = tok_scratch_grow(&sc->heap, &sc->heap_cap, (2 * len + 2) * sizeof(spair), e)))
        return rc;
    ssym *s = sc->sym;
    int32_t ns = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)text[i];
        size_t cl = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (cl > len - i) cl = len - i;
        s[ns] = (ssym){(uint32_t)i, (uint32_t)cl, tok_find(t, text + i, cl), ns - 1, -1};
        if (ns) s[ns - 1].next = ns;
        ns++;
        i += cl;
    }
    spair *h = sc->heap;
    size_t nh = 0;
    for (int32_t i = 0; i + 1 < ns; i++) try_pair(t, text, s, i, i + 1, h, &nh);
    while (nh) {
        spair p = heap_pop(h, &nh);
        ssym *l = &s[p.left], *r = &s[p.right];
        if (l->len == 0 || r->len == 0 || l->len + r->len != p.size || l->next != p.right) continue;
        l->len += r->len;
        l->id = p.id;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0) s[r->next].prev = p.left;
        if (nh + 2 > sc->heap_cap / sizeof(spair)) {
            if ((rc = tok_scratch_grow(&sc->heap, &sc->heap_cap, (nh + 2) * 2 * sizeof(spair), e))) return rc;
            h = sc->heap;
        }
        try_pair(t, text, s, l->prev, p.left, h, &nh);
        try_pair(t, text, s, p.left, l->next, h, &nh);
    }
    for (int32_t i = ns ? 0 : -1; i >= 0; i = s[i].next) {
        if (s[i].id >= 0) {
            if ((rc = tok_ids_push(out, s[i].id, e))) return rc;
            continue;
        }
        for (uint32_t k = 0; k < s[i].len; k++) { /* byte fallback */
            int32_t id = t->byte_tok[(unsigned char)text[s[i].start + k]];
            if (id < 0) id = t->unk;
            if (id >= 0 && (rc = tok_ids_push(out, id, e))) return rc;
        }
    }
    return 0;
}
