/* srv jsonc: constrained decoding to JSON, optionally to a JSON schema (response_format json_object /
 * json_schema, forced tool calls). Server-side, over the logits the public API gives: no engine hook.
 *
 * Three parts:
 *   - the schema compiler (jsonc_schema.c): a JSON schema into a small tree of nodes. Supported: type
 *     object (properties, required, additionalProperties), array (items), string, number, integer,
 *     boolean, null, enum and const (of scalars), and no type (any JSON value); annotations (title,
 *     description, default, examples, format, $schema, strict) are ignored. Anything else (anyOf, $ref,
 *     pattern, minLength, type lists, ...) is refused with a message naming the keyword and its path, so a
 *     400 is never a silent drop. The root must be an object. Object properties are written in the
 *     schema's order, required ones never skipped, no others (valid under additionalProperties true too).
 *   - the automaton (jsonc.c): a pushdown recognizer fed one byte at a time; a state is a fixed-size value
 *     (copied to try a token). Bounded where a model could run away: at most 24 bytes of whitespace in a
 *     row, 15+15+2 digits in a number, nesting 24 deep; strings must be valid UTF-8.
 *   - the token mask (jsonc.c): which vocabulary entries may come next, found by walking the vocabulary
 *     sorted by bytes so that a rejected prefix rejects every token sharing it. A token is allowed only if
 *     the shortest completion of the value after it still fits in the token budget left, so a reply that
 *     reaches max_tokens is still whole JSON (when max_tokens is too small even for that, the longest token
 *     that begins the shortest completion is taken each time, and the reply may be cut).
 * Sampling (sched.c) draws from the raw logits first and keeps the token if the automaton accepts it; only
 * otherwise does it mask and draw again. That is exact for greedy decoding and for plain temperature
 * sampling (rejection sampling: P(a) = p(a)/p(allowed)); with top-k/top-p the filters see the unmasked
 * logits on the first draw, a small departure stated here.
 *
 * Ownership: a schema is immutable after compiling and may be shared; states are plain values. */
#ifndef LLM170_SERVER_JSONC_H
#define LLM170_SERVER_JSONC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llm170.h"
#include "server/json.h"

#define JC_MAX_DEPTH 24
#define JC_MAX_PROPS 64   /* properties per object, literals per enum (bit masks) */
#define JC_MAX_TOKEN 128  /* longest token text considered (bytes) */

enum jc_kind { JC_ANY, JC_OBJECT, JC_ARRAY, JC_STRING, JC_NUMBER, JC_INTEGER, JC_ENUM };

typedef struct jc_node {
    uint8_t kind;
    bool free_keys;      /* object with no properties given: any keys, any values */
    int items;           /* array: node of the items, or -1 for any */
    int first, n;        /* object: its properties' key literals and nodes; enum: its literals */
    uint64_t required;   /* object: bit i = property i is required */
} jc_node;

typedef struct srv_jc_schema {
    jc_node *nodes;
    int n_nodes;
    char **lits;         /* literal texts: "\"key\"" for properties, JSON values for enums */
    int *lit_node;       /* per literal: the property's value node (objects), -1 for enum values */
    int n_lits;
    int root;
} srv_jc_schema;

/* Compiles a JSON schema (NULL: json_object, any object). Returns 0, or -1 with e filled (400). */
int srv_jc_compile(const json_t *schema, srv_jc_schema **out, srv_err *e);
/* The schema for a forced tool call: {"name": one of names, "arguments": the tool's parameters if there is
 * one name, else any object}. tools: the request's tools (OpenAI shape). name: the named function or NULL. */
int srv_jc_tool_call_schema(const char *tools_json, const char *name, srv_jc_schema **out, srv_err *e);
void srv_jc_schema_free(srv_jc_schema *s);

/* One stack frame (16 bytes; see jsonc.c for the fields' meaning per kind). */
typedef struct jc_frame {
    uint16_t node;
    uint8_t kind, phase;
    uint32_t pos;
    uint64_t mask;
} jc_frame;

typedef struct srv_jc_state {
    const srv_jc_schema *s;
    int depth;           /* frames in use; 0 once the root value is closed */
    int ws;              /* whitespace bytes in a row */
    jc_frame f[JC_MAX_DEPTH];
} srv_jc_state;

void srv_jc_init(srv_jc_state *st, const srv_jc_schema *s);
/* Feeds bytes; false (state undefined) if they cannot continue a valid value. */
bool srv_jc_feed(srv_jc_state *st, const char *bytes, size_t n);
/* The root value is closed (what follows may only be whitespace). */
bool srv_jc_done(const srv_jc_state *st);
/* Inside a string, with no escape or UTF-8 sequence open. */
bool srv_jc_plain_string(const srv_jc_state *st);
/* The shortest text that closes the value from st, into out (cap bytes, NUL-terminated); its length. */
size_t srv_jc_completion(const srv_jc_state *st, char *out, size_t cap);

/* The vocabulary as the mask sees it: each token's text, and the ids sorted by text. */
typedef struct srv_jc_vocab {
    int n_vocab;
    char *blob;          /* all texts */
    uint32_t *off;       /* per id: offset in blob */
    uint8_t *len;        /* per id: bytes (0: never allowed: control tokens, end of generation, too long) */
    uint8_t *plain;      /* per id: 1 if its text can sit in a JSON string as it is (no quote, backslash or
                            control byte; whole UTF-8 characters) */
    int32_t *sorted;     /* ids with len > 0, by text */
    uint8_t *lcp;        /* per sorted position: bytes shared with the previous one */
    int n_sorted;
} srv_jc_vocab;

int srv_jc_vocab_new(const llm170_model *m, srv_jc_vocab **out);
/* A vocabulary of the given texts (id = index), for tests. NULL if out of memory. */
srv_jc_vocab *srv_jc_vocab_from_texts(const char *const *texts, int n);
void srv_jc_vocab_free(srv_jc_vocab *v);
/* allowed[id] = 1 for each token that may come next from st (0 otherwise). budget: tokens that may still
 * be generated (the completion rule above). Returns how many are allowed. */
int srv_jc_mask(const srv_jc_state *st, const srv_jc_vocab *v, int budget, uint8_t *allowed);
/* Whether token id may come next (the cheap check made before any mask). */
bool srv_jc_token_ok(const srv_jc_state *st, const srv_jc_vocab *v, int budget, int32_t id);

#endif
