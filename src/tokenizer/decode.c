/* decode: ids -> text, whole (tok_decode) or streamed (tok_stream).
 *
 * A token's bytes come from the precomputed pieces (vocab.c). Decoding is exact: no space clean-up. For
 * SentencePiece vocabularies that add a leading space when encoding, the first text-producing token
 * (before it only control tokens) loses one leading space, so decode(encode(s)) == s.
 *
 * The stream holds back the bytes of a character that a token split (byte-fallback tokens and
 * byte-level BPE pieces often end mid-character) and releases them when the character completes; bytes
 * that cannot start or continue a valid character are released as U+FFFD at once.
 *
 * Ownership: tok_decode's text is malloc'd (caller frees); a stream owns its buffers. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_impl.h"

int tok_piece(const tokenizer *t, int32_t id, bool special, const char **piece, size_t *len, err *e) {
    if (id < 0 || (uint32_t)id >= t->n) {
        *piece = "";
        *len = 0;
        return err_set(e, ERR_RANGE, "token id %d is outside the vocabulary (0..%u)", id, t->n - 1);
    }
    uint8_t ty = t->type[id];
    if (!special && (ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_UNKNOWN)) {
        *piece = "";
        *len = 0;
        return 0;
    }
    *piece = t->piece + t->piece_off[id];
    *len = (size_t)(t->piece_off[id + 1] - t->piece_off[id]);
    return 0;
}

/* Whether token id ends the "strip the encoder's leading space" window: true once a token that is not
 * a control token has been seen. Returns the number of leading bytes of the piece to drop. */
static size_t strip_lead(const tokenizer *t, int32_t id, const char *p, size_t n, bool *pending) {
    if (!*pending) return 0;
    if (t->type[id] == TOK_TYPE_CONTROL) return 0;
    *pending = false;
    return n && p[0] == ' ' ? 1 : 0;
}

int tok_decode(const tokenizer *t, const int32_t *ids, size_t n_ids, bool special, char **text, size_t *len,
               err *e) {
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n_ids; i++) {
        const char *p;
        size_t n;
        int rc = tok_piece(t, ids[i], special, &p, &n, e);
        if (rc) return err_wrap(e, "ids[%zu]", i);
        total += n;
    }
    char *s = malloc(total + 1);
    if (!s) return err_set(e, ERR_NOMEM, "out of memory for %zu bytes of text", total);
    bool pending = t->model == TOK_MODEL_SPM && t->add_space_prefix;
    size_t k = 0;
    for (size_t i = 0; i < n_ids; i++) {
        const char *p;
        size_t n;
        tok_piece(t, ids[i], special, &p, &n, NULL);
        size_t skip = strip_lead(t, ids[i], p, n, &pending);
        memcpy(s + k, p + skip, n - skip);
        k += n - skip;
    }
    s[k] = 0;
    *text = s;
    *len = k;
    return 0;
}

struct tok_stream {
    const tokenizer *t;
    bool special;
    bool pending_strip;
    unsigned char held[4]; /* an incomplete character's first bytes */
    size_t n_held;
    char *out;
    size_t out_cap;
};

tok_stream *tok_stream_new(const tokenizer *t, bool special) {
    tok_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->t = t;
    s->special = special;
    s->pending_strip = t->model == TOK_MODEL_SPM && t->add_space_prefix;
    return s;
}

void tok_stream_free(tok_stream *s) {
    if (!s) return;
    free(s->out);
    free(s);
}

int tok_stream_push(tok_stream *s, int32_t id, const char **out, size_t *len, err *e) {
    *out = "";
    *len = 0;
    const char *p;
    size_t n;
    int rc = tok_piece(s->t, id, s->special, &p, &n, e);
    if (rc) return rc;
    size_t skip = strip_lead(s->t, id, p, n, &s->pending_strip);
    p += skip, n -= skip;
    /* worst case every byte becomes U+FFFD (3 bytes) */
    size_t need = 3 * (n + s->n_held) + 1;
    if ((rc = tok_scratch_grow((void **)&s->out, &s->out_cap, need, e))) return rc;
    /* held bytes + this piece, scanned as one run */
    unsigned char run_small[64];
    unsigned char *run = n + s->n_held <= sizeof run_small ? run_small : malloc(n + s->n_held);
    if (!run) return err_set(e, ERR_NOMEM, "out of memory in the stream detokenizer");
    memcpy(run, s->held, s->n_held);
    memcpy(run + s->n_held, p, n);
    size_t rn = n + s->n_held, k = 0, i = 0;
    s->n_held = 0;
    while (i < rn) {
        size_t used;
        int c = tok_utf8_seq(run + i, rn - i, &used);
        if (c > 0) {
            memcpy(s->out + k, run + i, used);
            k += used;
        } else if (c < 0) { /* a valid prefix awaiting more bytes: hold it */
            memcpy(s->held, run + i, used);
            s->n_held = used;
        } else { /* the maximal invalid subpart, as tok_utf8_sanitize replaces it */
            memcpy(s->out + k, "\xEF\xBF\xBD", 3);
            k += 3;
        }
        i += used;
    }
    if (run != run_small) free(run);
    *out = s->out;
    *len = k;
    return 0;
}

int tok_stream_flush(tok_stream *s, const char **out, size_t *len) {
    *out = "";
    *len = 0;
    if (!s->n_held) return 0;
    if (tok_scratch_grow((void **)&s->out, &s->out_cap, 4, NULL)) return ERR_NOMEM;
    memcpy(s->out, "\xEF\xBF\xBD", 3);
    s->n_held = 0;
    *out = s->out;
    *len = 3;
    return 0;
}
