/* srv jsonc mask: the vocabulary sorted by text, and which tokens may come next (see jsonc.h).
 *
 * The walk goes through the sorted texts keeping one automaton state per byte of the current text
 * (states[i] = after its first i bytes). The next text shares lcp bytes with this one, so only its bytes
 * past the shared prefix are fed; and once a byte is refused, every following text that shares the prefix
 * up to that byte is refused without feeding anything. */
#include <stdlib.h>
#include <string.h>

#include "server/jsonc.h"

static const srv_jc_vocab *sort_vocab; /* qsort's context: the vocabulary is built once, at startup */

static int by_text(const void *a, const void *b) {
    const srv_jc_vocab *v = sort_vocab;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    size_t lx = v->len[x], ly = v->len[y];
    int c = memcmp(v->blob + v->off[x], v->blob + v->off[y], lx < ly ? lx : ly);
    return c ? c : (lx > ly) - (lx < ly);
}

/* Whether t (n bytes) can sit inside a JSON string unchanged: no '"', '\\' or control byte, and whole
 * UTF-8 characters (a lead byte with its continuation bytes). */
static bool plain_text(const unsigned char *t, int n) {
    for (int i = 0; i < n; i++) {
        unsigned char c = t[i];
        int more = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : -1;
        if (c < 0x20 || c == '"' || c == '\\' || more < 0 || (more > 0 && i + more >= n)) return false;
        for (int k = 1; k <= more; k++)
            if ((t[i + k] & 0xC0) != 0x80) return false;
        i += more;
    }
    return true;
}

/* Sorts the ids that have a text and finds each one's shared prefix with the one before. */
static void vocab_index(srv_jc_vocab *v) {
    v->n_sorted = 0;
    for (int32_t id = 0; id < v->n_vocab; id++) {
        if (!v->len[id]) continue;
        v->sorted[v->n_sorted++] = id;
        v->plain[id] = plain_text((const unsigned char *)v->blob + v->off[id], v->len[id]);
    }
    sort_vocab = v;
    qsort(v->sorted, (size_t)v->n_sorted, sizeof *v->sorted, by_text);
    for (int k = 1; k < v->n_sorted; k++) {
        const char *a = v->blob + v->off[v->sorted[k - 1]], *b = v->blob + v->off[v->sorted[k]];
        int la = v->len[v->sorted[k - 1]], lb = v->len[v->sorted[k]], l = 0;
        while (l < la && l < lb && a[l] == b[l]) l++;
        v->lcp[k] = (uint8_t)l;
    }
}

static srv_jc_vocab *vocab_alloc(int n_vocab, size_t blob) {
    srv_jc_vocab *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->n_vocab = n_vocab;
    v->blob = malloc(blob);
    v->off = calloc((size_t)n_vocab, sizeof *v->off);
    v->len = calloc((size_t)n_vocab, 1);
    v->sorted = malloc(sizeof *v->sorted * (size_t)n_vocab);
    v->lcp = calloc((size_t)n_vocab, 1);
    v->plain = calloc((size_t)n_vocab, 1);
    if (!v->blob || !v->off || !v->len || !v->sorted || !v->lcp || !v->plain) {
        srv_jc_vocab_free(v);
        return NULL;
    }
    return v;
}

/* Stores text t (n bytes) as token id's; texts of 0 or more than JC_MAX_TOKEN bytes are left out. */
static int vocab_put(srv_jc_vocab *v, size_t *used, size_t *cap, int32_t id, const char *t, size_t n) {
    if (n == 0 || n > JC_MAX_TOKEN) return 0;
    if (*used + n > *cap) {
        char *b = realloc(v->blob, *cap * 2);
        if (!b) return -1;
        v->blob = b, *cap *= 2;
    }
    memcpy(v->blob + *used, t, n);
    v->off[id] = (uint32_t)*used;
    v->len[id] = (uint8_t)n;
    *used += n;
    return 0;
}

int srv_jc_vocab_new(const llm170_model *m, srv_jc_vocab **out) {
    int nv = llm170_model_n_vocab(m);
    size_t cap = (size_t)nv * 8 + 64, used = 0;
    srv_jc_vocab *v = vocab_alloc(nv, cap);
    *out = NULL;
    if (!v) return -1;
    for (int32_t id = 0; id < nv; id++) {
        char *t = NULL;
        size_t n = 0;
        /* end-of-generation and control tokens (no text without special) are never allowed */
        int rc = llm170_token_is_eog(m, id) || llm170_detokenize(m, &id, 1, false, &t, &n) ? 0
                                                                                          : vocab_put(v, &used, &cap, id, t, n);
        free(t);
        if (rc) {
            srv_jc_vocab_free(v);
            return -1;
        }
    }
    vocab_index(v);
    *out = v;
    return 0;
}

srv_jc_vocab *srv_jc_vocab_from_texts(const char *const *texts, int n) {
    size_t cap = 64, used = 0;
    srv_jc_vocab *v = vocab_alloc(n, cap);
    for (int id = 0; v && id < n; id++)
        if (vocab_put(v, &used, &cap, id, texts[id], strlen(texts[id]))) {
            srv_jc_vocab_free(v);
            return NULL;
        }
    if (v) vocab_index(v);
    return v;
}

void srv_jc_vocab_free(srv_jc_vocab *v) {
    if (!v) return;
    free(v->blob), free(v->off), free(v->len), free(v->sorted), free(v->lcp), free(v->plain);
    free(v);
}

/* The budget rule: a token is allowed only if, after it, the shortest completion of the value still fits
 * in the tokens left (each byte of a completion is at worst one token: byte-level vocabularies have every
 * byte). Checked per token only when the budget is near (computing a completion costs a walk of the stack);
 * far from it, no single token can grow the completion past the budget. */
#define NEAR 256

static bool fits(const srv_jc_state *after, int budget_after) {
    char comp[1024];
    return (int)srv_jc_completion(after, comp, sizeof comp) <= budget_after;
}

static bool near_budget(const srv_jc_state *st, int budget) {
    char comp[1024];
    return budget <= (int)srv_jc_completion(st, comp, sizeof comp) + 1 + NEAR;
}

bool srv_jc_token_ok(const srv_jc_state *st, const srv_jc_vocab *v, int budget, int32_t id) {
    if (id < 0 || id >= v->n_vocab || v->len[id] == 0) return false;
    srv_jc_state tmp;
    srv_jc_copy(&tmp, st);
    if (!srv_jc_feed(&tmp, v->blob + v->off[id], v->len[id])) return false;
    return !near_budget(st, budget) || fits(&tmp, budget - 1);
}

/* Whether after (a token's end state) is still inside the same plain string as st on every stack, with
 * every frame below it unchanged: then its shortest completion is st's (the common case, tokens of text
 * in a string). */
static bool same_string(const srv_jc_state *st, const srv_jc_state *after) {
    if (after->n != st->n || !srv_jc_plain_string(after)) return false;
    for (int i = 0; i < st->n; i++) {
        const jc_stack *a = &st->a[i], *b = &after->a[i];
        if (a->depth != b->depth || memcmp(a->f, b->f, sizeof a->f[0] * (size_t)(a->depth - 1))) return false;
    }
    return true;
}

int srv_jc_mask(const srv_jc_state *st, const srv_jc_vocab *v, int budget, uint8_t *allowed) {
    memset(allowed, 0, (size_t)v->n_vocab);
    bool near = near_budget(st, budget);
    char comp0[1024];
    bool in_string = srv_jc_plain_string(st);
    bool string_fits = in_string && (int)srv_jc_completion(st, comp0, sizeof comp0) <= budget - 1;
    srv_jc_state *states = malloc(sizeof *states * (JC_MAX_TOKEN + 1));
    if (!states) return 0;
    srv_jc_copy(&states[0], st);
    int count = 0;
    int valid = 0;         /* states[0..valid] hold the previous text's prefix */
    int refused = 1 << 30; /* the previous text's prefix up to this byte was refused */
    for (int k = 0; k < v->n_sorted; k++) {
        int32_t id = v->sorted[k];
        const char *t = v->blob + v->off[id];
        int len = v->len[id], lcp = k ? v->lcp[k] : 0;
        if (in_string && v->plain[id]) {
            /* plain text inside a plain string: taken, and the state stays the same string; no walk (the
             * next text is walked from its first byte, as this one's states were not made) */
            if (!near || string_fits) allowed[id] = 1, count++;
            valid = 0;
            refused = 1 << 30;
            continue;
        }
        if (lcp > refused) continue; /* shares the refused prefix */
        int d = lcp < valid ? lcp : valid;
        refused = 1 << 30;
        for (; d < len; d++) {
            srv_jc_copy(&states[d + 1], &states[d]);
            if (!srv_jc_feed(&states[d + 1], t + d, 1)) {
                refused = d;
                break;
            }
        }
        valid = d;
        if (d < len) continue;
        bool ok = !near;
        if (!ok && in_string && same_string(st, &states[len])) ok = string_fits;
        else if (!ok) ok = fits(&states[len], budget - 1);
        if (ok) allowed[id] = 1, count++;
    }
    free(states);
    if (count == 0 && near) {
        /* the budget was too small from the start: spell the shortest completion in as few tokens as the
         * vocabulary allows (the longest token that begins it), as far as it goes */
        char comp[1024];
        size_t cl = srv_jc_completion(st, comp, sizeof comp);
        int32_t best = -1;
        for (int k = 0; k < v->n_sorted; k++) {
            int32_t id = v->sorted[k];
            if (v->len[id] <= cl && !memcmp(v->blob + v->off[id], comp, v->len[id]) && (best < 0 || v->len[id] > v->len[best]))
                best = id;
        }
        if (best >= 0) allowed[best] = 1, count = 1;
    }
    return count;
}
