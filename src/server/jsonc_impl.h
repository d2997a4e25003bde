/* srv jsonc internals shared by jsonc*.c (not for the rest of the server): frame kinds and phases, the
 * completion buffer, bounded numbers (jsonc_num.c), patterns (jsonc_regex.c) and the compiler's linking
 * pass (jsonc_link.c). */
#ifndef LLM170_SERVER_JSONC_IMPL_H
#define LLM170_SERVER_JSONC_IMPL_H

#include "server/jsonc.h"

#define ANY_NODE 0xFFFF
#define JC_INF (1 << 28) /* minlen of a node with no finite instance */

enum { F_VAL, F_OBJ, F_ARR, F_STR, F_NUM, F_LIT };
enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };
enum { BAD = 0, TAKEN = 1, REFEED = 2, FORK = 3 };

/* A completion being written: keeps what fits in cap (NUL-terminated), counts all of it. */
typedef struct jc_buf {
    char *p;
    size_t n, cap;
} jc_buf;

void jc_put(jc_buf *b, const char *s);
void jc_putn(jc_buf *b, const char *s, size_t n);

/* ---- bounded numbers (jsonc_num.c) ----
 * A bounded number's frame: phase N_*; pos: digits so far (integer part in byte 0, fraction in byte 1);
 * mask: bit 0 integer only, bit 1 negative, bits 2.. the magnitude so far in units. */
int jc_num_start(const jc_num *q, jc_frame *f, unsigned char c);
int jc_num_step(const jc_num *q, jc_frame *f, unsigned char c);
/* The rest of the shortest valid number from frame f (f NULL: the whole number). false if none. */
bool jc_num_complete(const jc_num *q, const jc_frame *f, jc_buf *b);
/* Bounds from a schema's minimum / maximum / exclusive* / multipleOf (v: the schema object). 0, or -1
 * with e filled. */
int jc_num_bounds(const json_t *v, bool integer, const char *path, jc_num *out, srv_err *e);

/* ---- patterns (jsonc_regex.c) ---- */
/* Compiles an ECMA-262 regex (the subset in jsonc.h) into out. 0, or -1 with why filled. */
int jc_regex_compile(const char *re, jc_dfa *out, char *why, size_t why_cap);
/* The built-in pattern of a "format" value, or NULL if the format is not supported. */
const char *jc_format_regex(const char *format);
void jc_dfa_free(jc_dfa *d);
/* The JSON text of decoded byte c inside a string: itself, or its escape. */
const char *jc_escape(unsigned char c, char tmp[3]);

/* ---- the compiler's state (jsonc_schema.c, jsonc_link.c) ---- */
typedef struct jc_build {
    srv_jc_schema *s;
    int cap_nodes, cap_lits, cap_alts, cap_nums, cap_dfas;
    const json_t *doc;   /* the document "#" names */
    struct jc_ref {
        const json_t *target;
        int node;
    } *refs;
    int n_refs, cap_refs;
    srv_err *e;
} jc_build;

int jc_new_node(jc_build *b, uint8_t kind);
/* arr (n elements of elem bytes in use, *cap allocated) with room for `more`: the array, maybe moved, or
 * NULL with b->e filled (arr is then untouched). */
void *jc_room(jc_build *b, void *arr, int n, int more, int *cap, size_t elem);
/* After every node is compiled: refs resolved, anyOf flattened, oneOf checked, enums filtered, shortest
 * instances found. 0, or -1 with b->e filled. */
int jc_link(jc_build *b);

/* The automaton on one stack from a given node (jsonc.c): used by the linker to filter enum values. */
bool jc_accepts_from(const srv_jc_schema *s, int node, const char *text);

#endif
