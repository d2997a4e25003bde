/* srv jsonc: constrained decoding to JSON, optionally to a JSON schema (response_format json_object /
 * json_schema, forced tool calls). Server-side, over the logits the public API gives: no engine hook.
 *
 * Parts:
 *   - the schema compiler (jsonc_schema.c, jsonc_link.c): a JSON schema into a graph of nodes. Supported:
 *     type (one name or a list), object (properties, required, additionalProperties true / false / a
 *     schema), array (items, minItems, maxItems), string (minLength, maxLength, pattern, format), number
 *     and integer (minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf when whole), boolean,
 *     null, enum and const (any JSON value), anyOf, oneOf (when its alternatives are provably disjoint),
 *     allOf of one schema, $ref to "#", "#/$defs/..", "#/definitions/.." or any JSON pointer in the
 *     document (recursion included), no type (any JSON value); annotations (title, description, default,
 *     examples, deprecated, readOnly, writeOnly, $schema, $id, $comment, $anchor, strict, discriminator) are
 *     ignored. Anything else (not, if, patternProperties, prefixItems, uniqueItems, minProperties, ...) is
 *     refused with a message naming the keyword and its path: a 400, never a silent drop. The root must be
 *     an object (or alternatives that are all objects). Object properties are written in the schema's
 *     order, required ones never skipped, no others (valid under additionalProperties true too).
 *   - patterns (jsonc_regex.c): an ECMA-262 regex subset compiled to a DFA over the string's decoded
 *     bytes; "format" (date, time, date-time, duration, email, hostname, ipv4, ipv6, uuid) is a built-in
 *     pattern of values every checker accepts. Generation may use fewer strings than the pattern allows
 *     (., \S and negated classes stand for printable ASCII only; no \u escapes inside such a string),
 *     never more.
 *   - the automaton (jsonc.c, jsonc_num.c): a pushdown recognizer fed one byte at a time. A state holds up
 *     to JC_MAX_ALTS stacks, one per alternative still alive (anyOf forks one per alternative at the
 *     value's first byte; a stack that refuses a byte dies). Bounded where a model could run away: at
 *     most 24 bytes of whitespace in a row, 15+15+2 digits in a number (bounded ones: 15 digits for
 *     integers, 12 + 6 for numbers, no exponent), nesting JC_MAX_DEPTH frames (a value is only begun if
 *     its shortest instance fits in the frames left); strings must be valid UTF-8.
 *   - the token mask (jsonc_mask.c): which vocabulary entries may come next, found by walking the
 *     vocabulary sorted by bytes so that a rejected prefix rejects every token sharing it. A token is
 *     allowed only if the shortest completion of the value after it still fits in the token budget left,
 *     so a reply that reaches max_tokens is still whole JSON (when max_tokens is too small even for that,
 *     the longest token that begins the shortest completion is taken each time, and the reply may be cut).
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
#define JC_MAX_ALTS 16    /* stacks alive at once; a fork past this keeps the first alternatives (sound) */
#define JC_MAX_PROPS 64   /* properties per object, literals per enum (bit masks) */
#define JC_MAX_TOKEN 128  /* longest token text considered (bytes) */
#define JC_NUM_FRAC 6     /* bounded numbers: fraction digits (values are counted in units of 1e-6) */

enum jc_kind { JC_ANY, JC_OBJECT, JC_ARRAY, JC_STRING, JC_NUMBER, JC_INTEGER, JC_ENUM, JC_ANYOF, JC_REF };

typedef struct jc_node {
    uint8_t kind;
    bool free_keys;      /* object with no properties given: any keys, values of `items` */
    bool closed;         /* object: additionalProperties false */
    bool one_of;         /* anyOf node written as oneOf: its alternatives must be disjoint */
    int items;           /* array: the items' node; free-form object: the values' node; -1: any. ref: target.
                            enum: the node its literals must also satisfy (type, bounds ...), or -1 */
    int first, n;        /* object: its properties' key literals; enum: its literals; anyOf: alts[first..] */
    uint64_t required;   /* object: bit i = property i is required */
    uint32_t min, max;   /* array: minItems, maxItems; string: minLength, maxLength (code points) */
    int dfa;             /* string: its pattern's automaton in dfas[], or -1 */
    int num;             /* number, integer: its bounds in nums[], or -1 */
    int minlen, mindepth;/* the shortest instance (the canonical value): bytes, stack frames */
    char *minv;          /* its text */
} jc_node;

/* A bounded number: values in units (1 for integers, 10^-JC_NUM_FRAC for numbers). */
typedef struct jc_num {
    int64_t lo, hi;      /* the smallest and largest valid value */
    int64_t mult;        /* values are multiples of this (1: any) */
    bool integer;
} jc_num;

/* A pattern's DFA over decoded bytes (a JSON escape like \n feeds one byte, 0x0A). State 0 starts; every
 * state can still reach an accepting one (the others were pruned). */
typedef struct jc_dfa {
    int n_states, n_classes;
    uint8_t cls[256];    /* byte -> class */
    int16_t *next;       /* [state * n_classes + class]: the next state, -1: refused */
    uint8_t *accept;     /* per state */
    int32_t *dist;       /* per state: JSON bytes of the shortest accepted rest (closing quote not counted) */
    uint8_t *step;       /* per state: that rest's first decoded byte */
} jc_dfa;

typedef struct srv_jc_schema {
    jc_node *nodes;
    int n_nodes;
    char **lits;         /* literal texts: "\"key\"" for properties, JSON values for enums */
    int *lit_node;       /* per literal: the property's value node (objects), -1 for enum values */
    int n_lits;
    int *alts;           /* anyOf alternatives (node ids; never anyOf nodes themselves after linking) */
    int n_alts;
    jc_num *nums;
    int n_nums;
    jc_dfa *dfas;
    int n_dfas;
    int root;
} srv_jc_schema;

/* Compiles a JSON schema (NULL: json_object, any object). Returns 0, or -1 with e filled (400). */
int srv_jc_compile(const json_t *schema, srv_jc_schema **out, srv_err *e);
/* The schema for a forced tool call: {"name": a tool's name, "arguments": that tool's parameters}, one
 * alternative per tool. tools: the request's tools (OpenAI shape). name: the named function or NULL. */
int srv_jc_tool_call_schema(const char *tools_json, const char *name, srv_jc_schema **out, srv_err *e);
void srv_jc_schema_free(srv_jc_schema *s);

/* One stack frame (16 bytes; see jsonc.c for the fields' meaning per kind). */
typedef struct jc_frame {
    uint16_t node;
    uint8_t kind, phase;
    uint32_t pos;
    uint64_t mask;
} jc_frame;

/* One alternative's parse: a pushdown stack. */
typedef struct jc_stack {
    int depth;           /* frames in use; 0 once the root value is closed */
    int ws;              /* whitespace bytes in a row */
    jc_frame f[JC_MAX_DEPTH];
} jc_stack;

typedef struct srv_jc_state {
    const srv_jc_schema *s;
    int n;               /* stacks alive (0 only after a refused byte) */
    jc_stack a[JC_MAX_ALTS];
} srv_jc_state;

void srv_jc_init(srv_jc_state *st, const srv_jc_schema *s);
/* Feeds bytes; false (state undefined) if they cannot continue a valid value. */
bool srv_jc_feed(srv_jc_state *st, const char *bytes, size_t n);
/* The root value is closed (what follows may only be whitespace). */
bool srv_jc_done(const srv_jc_state *st);
/* Every stack is inside a string without constraints (length, pattern), with no escape or UTF-8 sequence
 * open: any text without quote, backslash or control bytes keeps the state as it is. */
bool srv_jc_plain_string(const srv_jc_state *st);
/* The shortest text that closes the value from st, into out (cap bytes, NUL-terminated, cut if longer);
 * its whole length. */
size_t srv_jc_completion(const srv_jc_state *st, char *out, size_t cap);
/* Copies st's stacks in use (cheaper than a struct copy). */
void srv_jc_copy(srv_jc_state *dst, const srv_jc_state *src);

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
