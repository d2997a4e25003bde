/* tokenizer: text <-> token ids, from the vocabulary a GGUF file carries (`tokenizer.ggml.*` keys).
 *
 * Models (`tokenizer.ggml.model`):
 *   "gpt2"  byte-level BPE: the text is split by the pre-tokenizer that `tokenizer.ggml.pre` names (see
 *           tok_pre_names), each piece's bytes are mapped to GPT-2's printable byte alphabet, then merged by
 *           merge rank (`tokenizer.ggml.merges`, "left right" strings, rank = index). A few `pre` values
 *           (gemma4) use raw UTF-8 with spaces written as U+2581 and <0xNN> byte tokens instead.
 *   "llama" SentencePiece BPE: spaces become U+2581, an optional leading space is added, pieces are merged
 *           by score (`tokenizer.ggml.scores`), characters missing from the vocabulary fall back to the
 *           <0xNN> byte tokens.
 * Anything else is refused with a message listing what is supported.
 *
 * Special tokens: control and user-defined tokens (`tokenizer.ggml.token_type` 3 and 4) and the unknown
 * token are matched in the text before the model runs, longest first. With parse_special off only
 * user-defined tokens are matched (as HF tokenizers does: they are "added tokens", not markup).
 *
 * Invalid UTF-8 in input text is not rejected: each maximal invalid subsequence is replaced by U+FFFD
 * (the Unicode "maximal subpart" policy, which Python's errors="replace" and so HF tokenizers follow).
 *
 * Decoding is exact (no clean-up of spaces before punctuation, unlike HF's clean_up_tokenization_spaces):
 * decode(encode(text)) == text for any valid UTF-8 text. The one SentencePiece adjustment: the leading
 * space that encoding adds is removed from the first decoded piece. (With parse_special, SentencePiece
 * also adds a space after each special token, as HF and llama.cpp do; that space decodes as written.)
 *
 * Ownership: a tokenizer owns copies of everything it needs (the gguf_file may be closed after
 * tok_load_gguf). Arrays returned through `int32_t **` / `char **` are malloc'd and the caller frees them.
 * A tokenizer is immutable after creation and may be shared by threads; a tok_stream is not. */
#ifndef LLM170_TOKENIZER_TOKENIZER_H
#define LLM170_TOKENIZER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "gguf/gguf.h"

/* GGUF `tokenizer.ggml.token_type` values. */
enum tok_type {
    TOK_TYPE_UNDEFINED = 0,
    TOK_TYPE_NORMAL = 1,
    TOK_TYPE_UNKNOWN = 2,
    TOK_TYPE_CONTROL = 3,
    TOK_TYPE_USER_DEFINED = 4,
    TOK_TYPE_UNUSED = 5,
    TOK_TYPE_BYTE = 6,
};

enum tok_model { TOK_MODEL_SPM, TOK_MODEL_BPE };

/* Caps: a hostile file cannot make us allocate without bound. */
#define TOK_MAX_TOKENS (1u << 22)
#define TOK_MAX_TOKEN_BYTES 4096u

typedef struct tokenizer tokenizer;

/* An in-memory description of a vocabulary: what tok_load_gguf reads from a file, and what tests build
 * directly. Pointers are only read during tok_create. */
typedef struct tok_spec {
    const char *model;          /* "gpt2" or "llama" */
    const char *pre;            /* pre-tokenizer name for gpt2 (NULL or "" = "default") */
    uint32_t n_tokens;
    const char *const *texts;   /* n_tokens strings */
    const uint32_t *text_lens;  /* NULL: texts are NUL-terminated */
    const float *scores;        /* NULL: all 0 */
    const int32_t *types;       /* enum tok_type; NULL: all normal */
    uint32_t n_merges;
    const char *const *merges;  /* "left right" */
    const uint32_t *merge_lens; /* NULL: NUL-terminated */
    int32_t bos, eos, unk, eot, pad, eom; /* -1: none */
    int add_bos, add_eos, add_space_prefix; /* 0/1, or -1: the model's default */
} tok_spec;

/* A spec with every id -1 and every flag "default". */
tok_spec tok_spec_default(void);

int tok_create(tokenizer **out, const tok_spec *spec, err *e);
/* Reads tokenizer.ggml.{model,pre,tokens,scores,token_type,merges,bos_token_id,eos_token_id,
 * unknown_token_id,eot_token_id,eom_token_id,padding_token_id,add_bos_token,add_eos_token,
 * add_space_prefix}. */
int tok_load_gguf(tokenizer **out, const gguf_file *f, err *e);
void tok_free(tokenizer *t);

/* Names the supported values, comma-separated (for messages and --help). */
const char *tok_model_names(void);
const char *tok_pre_names(void);

uint32_t tok_n_tokens(const tokenizer *t);
enum tok_model tok_model_kind(const tokenizer *t);
const char *tok_pre_name(const tokenizer *t); /* the canonical pre-tokenizer name ("" for llama) */
int32_t tok_bos(const tokenizer *t);          /* -1 if none */
int32_t tok_eos(const tokenizer *t);
int32_t tok_eot(const tokenizer *t);
/* End of generation: eos, eot, eom, and the turn-end tokens chat models emit ("<|im_end|>",
 * "<|eot_id|>", "<end_of_turn>", "<|endoftext|>", ...: the list llama.cpp uses), so a generation loop
 * stops on any of them. */
bool tok_is_eog(const tokenizer *t, int32_t id);
bool tok_add_bos(const tokenizer *t);
bool tok_add_eos(const tokenizer *t);
enum tok_type tok_token_type(const tokenizer *t, int32_t id);
/* The token's text as stored in the vocabulary (not decoded). */
const char *tok_token_text(const tokenizer *t, int32_t id, size_t *len);
/* The id of an exact vocabulary string, or -1. */
int32_t tok_find(const tokenizer *t, const char *text, size_t len);

enum tok_encode_flags {
    TOK_ADD_SPECIAL = 1,   /* prepend BOS / append EOS as the vocabulary's add_bos / add_eos say */
    TOK_PARSE_SPECIAL = 2, /* match control tokens written in the text */
};

/* Encodes len bytes of text. *ids is malloc'd (free it), *n_ids its length. */
int tok_encode(const tokenizer *t, const char *text, size_t len, unsigned flags, int32_t **ids,
               size_t *n_ids, err *e);

/* The bytes one token decodes to. Control and unknown tokens give "" unless `special`. The pointer is
 * owned by the tokenizer. An id out of range is ERR_RANGE. The bytes may be a partial UTF-8 character. */
int tok_piece(const tokenizer *t, int32_t id, bool special, const char **piece, size_t *len, err *e);

/* Decodes ids into *text (malloc'd, NUL-terminated, *len bytes without the NUL). */
int tok_decode(const tokenizer *t, const int32_t *ids, size_t n_ids, bool special, char **text, size_t *len,
               err *e);

/* Incremental detokenizer for streaming generation: each push returns the bytes that became complete
 * UTF-8 characters; a character split across tokens is held back until its last byte arrives. Bytes that
 * can never form a valid character are emitted as U+FFFD (the same policy as tok_encode's input). */
typedef struct tok_stream tok_stream;
tok_stream *tok_stream_new(const tokenizer *t, bool special); /* NULL on out of memory */
void tok_stream_free(tok_stream *s);
/* *out points into the stream's buffer, valid until the next call on s. */
int tok_stream_push(tok_stream *s, int32_t id, const char **out, size_t *len, err *e);
/* Ends the stream: a held incomplete character is emitted as U+FFFD. */
int tok_stream_flush(tok_stream *s, const char **out, size_t *len);

/* UTF-8 helpers (shared with the CLI and tests). tok_utf8_sanitize copies src into a malloc'd string
 * with every maximal invalid subsequence replaced by U+FFFD; *n_replaced counts replacements. */
int tok_utf8_sanitize(const char *src, size_t len, char **out, size_t *out_len, size_t *n_replaced, err *e);
/* Length of the valid UTF-8 sequence at s (1..4), 0 if s[0..avail) starts an invalid sequence, or -k if
 * it is a valid but incomplete prefix that needs k more bytes. */
int tok_utf8_check(const unsigned char *s, size_t avail);

#endif
