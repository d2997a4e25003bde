/* bpe: byte-level BPE over one pre-tokenized word.
 *
 * The word's bytes are mapped to GPT-2's byte alphabet (unless the vocabulary uses raw UTF-8), split into
 * characters, and adjacent pairs are merged lowest merge rank first, ties to the leftmost pair: the order
 * HF tokenizers' BPE model applies. A min-heap holds candidate pairs; a popped pair is stale (skipped) if
 * either side has changed since it was pushed, so each merge costs O(log n) and a word of n characters
 * O(n log n). Characters with no token fall back to byte tokens, then to the unknown token.
 *
 * Ownership: works in the caller's tok_scratch; appends to the caller's tok_ids. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_impl.h"

typedef struct bsym {
    uint32_t start, len; /* bytes in the mapped word */
    int32_t id;          /* current token, -1 if the character is not in the vocabulary */
    int32_t prev, next;
} bsym;

typedef struct bpair {
    int32_t rank, left, right, result;
    uint32_t left_len, right_len; /* the sides' lengths when pushed: if either changed, the pair is stale */
} bpair;

static bool pair_less(const bpair *a, const bpair *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(bpair *h, size_t *n, bpair p) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!pair_less(&p, &h[up])) break;
        h[i] = h[up];
        i = up;
    }
    h[i] = p;
}

static bpair heap_pop(bpair *h, size_t *n) {
    bpair top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && pair_less(&h[c + 1], &h[c])) c++;
        if (!pair_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

static const tok_merge *find_merge(const tokenizer *t, int32_t l, int32_t r) {
    if (l < 0 || r < 0 || !t->n_merges) return NULL;
    uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    for (uint64_t i = tok_hash_u64(key) & t->merge_mask;; i = (i + 1) & t->merge_mask) {
        const tok_merge *m = &t->merges[i];
        if (m->rank < 0) return NULL;
        if (m->key == key) return m;
    }
}

static void try_pair(const tokenizer *t, const bsym *s, int32_t l, int32_t r, bpair *h, size_t *nh) {
    if (l < 0 || r < 0) return;
    const tok_merge *m = find_merge(t, s[l].id, s[r].id);
    if (m) heap_push(h, nh, (bpair){m->rank, l, r, m->result, s[l].len, s[r].len});
}

static int push_unknown_bytes(const tokenizer *t, const unsigned char *raw, size_t n, tok_ids *out, err *e) {
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_tok[raw[i]];
        if (id < 0) id = t->unk;
        if (id >= 0) {
            int rc = tok_ids_push(out, id, e);
            if (rc) return rc;
        }
    }
    return 0;
}

int tok_bpe_word(const tokenizer *t, const char *word, size_t len, tok_scratch *sc, tok_ids *out, err *e) {
    /* 1. the word in the model's alphabet */
    const char *w = word;
    size_t wn = len;
    int rc;
    if (t->byte_encode) {
        if ((rc = tok_scratch_grow((void **)&sc->buf, &sc->buf_cap, 2 * len + 1, e))) return rc;
        wn = 0;
        for (size_t i = 0; i < len; i++) wn += (size_t)tok_byte_to_utf8((uint8_t)word[i], sc->buf + wn);
        w = sc->buf;
    }
    size_t nl = 0;
    while (nl < wn && w[nl] == '\n') nl++;
    if (t->ignore_merges || (t->escape_spaces && nl == wn)) {
        /* ignore_merges: a word that is itself a token is taken whole (HF BPE ignore_merges). A run of
         * newlines in gemma4's raw-UTF-8 vocabulary likewise (its merges do not build them). */
        int32_t id = tok_find(t, w, wn);
        if (id >= 0) return tok_ids_push(out, id, e);
    }

    /* 2. one symbol per character */
    if ((rc = tok_scratch_grow(&sc->sym, &sc->sym_cap, (wn + 1) * sizeof(bsym), e)) ||
        (rc = tok_scratch_grow(&sc->heap, &sc->heap_cap, (2 * wn + 2) * sizeof(bpair), e)))
        return rc;
    bsym *s = sc->sym;
    int32_t ns = 0;
    for (size_t i = 0; i < wn;) {
        unsigned char c = (unsigned char)w[i];
        size_t cl = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (cl > wn - i) cl = wn - i;
        s[ns] = (bsym){(uint32_t)i, (uint32_t)cl, tok_find(t, w + i, cl), ns - 1, -1};
        if (ns) s[ns - 1].next = ns;
        ns++;
        i += cl;
    }

    /* 3. merge lowest rank first; each merge pushes at most two pairs (stale ones stay until popped), so
     * the heap is grown on demand before each push. */
    bpair *h = sc->heap;
    size_t nh = 0;
    for (int32_t i = 0; i + 1 < ns; i++) try_pair(t, s, i, i + 1, h, &nh);
    while (nh) {
        bpair p = heap_pop(h, &nh);
        bsym *l = &s[p.left], *r = &s[p.right];
        if (l->len != p.left_len || r->len != p.right_len || l->next != p.right) continue;
        l->len += r->len;
        l->id = p.result;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0) s[r->next].prev = p.left;
        if (nh + 2 > sc->heap_cap / sizeof(bpair)) {
            if ((rc = tok_scratch_grow(&sc->heap, &sc->heap_cap, (nh + 2) * 2 * sizeof(bpair), e))) return rc;
            h = sc->heap;
        }
        try_pair(t, s, l->prev, p.left, h, &nh);
        try_pair(t, s, p.left, l->next, h, &nh);
    }

    /* 4. emit */
    for (int32_t i = ns ? 0 : -1; i >= 0; i = s[i].next) {
        if (s[i].id >= 0) {
            if ((rc = tok_ids_push(out, s[i].id, e))) return rc;
            continue;
        }
        /* a character with no token: the raw bytes it stands for */
        unsigned char raw[4];
        size_t nr = 0;
        const unsigned char *u = (const unsigned char *)w + s[i].start;
        if (t->byte_encode) {
            uint32_t cp = s[i].len == 2 ? (uint32_t)(u[0] & 0x1F) << 6 | (u[1] & 0x3F) : u[0];
            int b = tok_cp_to_byte(cp);
            if (b >= 0) raw[nr++] = (unsigned char)b;
        } else {
            memcpy(raw, u, s[i].len);
            nr = s[i].len;
        }
        if ((rc = push_unknown_bytes(t, raw, nr, out, e))) return rc;
    }
    return 0;
}
