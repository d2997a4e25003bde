/* tok_impl: the tokenizer's internal layout, shared by the files of src/tokenizer/ only.
 *
 * Token texts live in one arena (`text`, offsets in `tok_off`); lookups go through an open-addressing
 * hash of text -> id (`hash`, power-of-two size, -1 = empty). BPE merges are a second hash keyed by the
 * pair of token ids (left, right) giving the merge's rank and the merged token. Decoded pieces (what each
 * token prints as, with special=true) are precomputed into `piece` at creation. */
#ifndef LLM170_TOKENIZER_TOK_IMPL_H
#define LLM170_TOKENIZER_TOK_IMPL_H

#include "tokenizer/tokenizer.h"

typedef struct tok_merge {
    uint64_t key;   /* (uint64)left << 32 | right; 0 with rank -1 = empty slot */
    int32_t rank;
    int32_t result; /* the merged token */
} tok_merge;

typedef struct tok_pretok tok_pretok; /* compiled pre-tokenizer regexes (pretok.c) */

struct tokenizer {
    enum tok_model model;
    uint32_t n;
    char *text;        /* arena of token texts (not NUL-separated) */
    uint64_t *tok_off; /* n + 1 offsets into text */
    float *score;
    uint8_t *type;     /* enum tok_type */
    int32_t *hash;     /* text -> id */
    uint64_t hash_mask;

    tok_merge *merges; /* BPE */
    uint64_t merge_mask;
    uint32_t n_merges;

    int32_t *special;  /* ids matched in text before the model: longest text first */
    uint32_t n_special;

    char *piece;       /* arena of decoded pieces */
    uint64_t *piece_off;

    int32_t byte_tok[256]; /* token for each raw byte (<0xNN> or byte-level char), -1 if none */

    int32_t bos, eos, unk, eot, pad, eom;
    int32_t eog[32]; /* end-of-generation ids (tok_is_eog) */
    uint32_t n_eog;
    bool add_bos, add_eos, add_space_prefix;
    bool escape_spaces;  /* SPM-style: ' ' -> U+2581 before the model */
    bool byte_encode;    /* GPT-2 byte alphabet */
    bool ignore_merges;  /* a whole pre-token found in the vocabulary is taken as is (llama3, ...) */
    bool spm_word_split; /* no token has U+2581 after another character: SPM may merge word by word */
    tok_pretok *pretok;
    const char *pre_name;
};

static inline const char *tok_text_of(const tokenizer *t, int32_t id, size_t *len) {
    *len = (size_t)(t->tok_off[id + 1] - t->tok_off[id]);
    return t->text + t->tok_off[id];
}

uint64_t tok_hash_bytes(const char *s, size_t n);
uint64_t tok_hash_u64(uint64_t x); /* merge-table key mixer */

/* GPT-2 byte alphabet: the UTF-8 encoding (2 bytes at most) of the code point byte b maps to. */
int tok_byte_to_utf8(uint8_t b, char out[2]);
/* The inverse over a code point; -1 if cp is not in the alphabet. */
int tok_cp_to_byte(uint32_t cp);

/* Pre-tokenizer (pretok.c): compiles the rules for a name; NULL name = "default". */
int tok_pretok_new(tok_pretok **out, const char *name, const char **canonical, err *e);
void tok_pretok_free(tok_pretok *p);
/* The flags a pre-tokenizer implies (llama.cpp and HF agree on these per name). */
void tok_pretok_flags(const tok_pretok *p, bool *byte_encode, bool *ignore_merges, bool *escape_spaces,
                      int *default_add_bos);
/* Splits text[0..len) into words; calls fn(ctx, start, end) for each in order. */
typedef int (*tok_word_fn)(void *ctx, const char *word, size_t len, err *e);
int tok_pretok_split(const tok_pretok *p, const char *text, size_t len, tok_word_fn fn, void *ctx, err *e);

/* Classifies the UTF-8 sequence at s: 1 = valid (*used = its length), 0 = invalid (*used = the maximal
 * subpart to replace by one U+FFFD, >= 1), -1 = a valid prefix cut off by the end (*used = avail). */
int tok_utf8_seq(const unsigned char *s, size_t avail, size_t *used);

/* A growable id vector. */
typedef struct tok_ids {
    int32_t *v;
    size_t n, cap;
} tok_ids;
int tok_ids_push(tok_ids *a, int32_t id, err *e);

/* Scratch memory one encode call reuses across words (grown, never shrunk; freed by tok_scratch_free). */
typedef struct tok_scratch {
    void *sym;
    size_t sym_cap; /* bytes */
    void *heap;
    size_t heap_cap; /* bytes */
    char *buf;
    size_t buf_cap;
} tok_scratch;
int tok_scratch_grow(void **p, size_t *cap, size_t need, err *e);
void tok_scratch_free(tok_scratch *s);

/* Models: append the ids of one word / fragment of plain text (already escaped where the model needs it). */
int tok_bpe_word(const tokenizer *t, const char *word, size_t len, tok_scratch *sc, tok_ids *out, err *e);
int tok_spm_text(const tokenizer *t, const char *text, size_t len, tok_scratch *sc, tok_ids *out, err *e);

#endif
