/* jinja: the internals of the chat-template renderer (a Jinja2 subset), shared by the files of src/chat/ only.
 *
 * Pipeline: jinja_lex (template text -> tokens, applying Jinja's whitespace control with trim_blocks and
 * lstrip_blocks on, as transformers configures it) -> jinja_parse (tokens -> tree) -> jinja_eval (tree +
 * variables -> text). Values follow Python's semantics where templates can see them (truthiness, str(),
 * ==, json.dumps for tojson), because the reference is jinja2 running in Python.
 *
 * Memory: everything of one render (tokens, tree, values, strings) lives in one arena freed at the end,
 * so nothing here frees individually. Errors: jinja_fail records "line N: ..." in the context's err and
 * longjmps to the render's entry point; the arena is freed there too. */
#ifndef LLM170_CHAT_JINJA_H
#define LLM170_CHAT_JINJA_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Caps (a template is untrusted input): */
#define JINJA_MAX_DEPTH 64           /* nested macro calls / expression recursion */
#define JINJA_MAX_OUTPUT (64u << 20) /* bytes of rendered text */
#define JINJA_MAX_STEPS 10000000ull  /* evaluation steps (bounds loops over huge ranges) */
#define JINJA_MAX_MEMORY (512u << 20) /* bytes one render may allocate */

/* ---- arena ---- */
typedef struct jarena {
    struct jchunk *head;
    size_t total; /* bytes allocated, capped at JINJA_MAX_MEMORY */
} jarena;
void *ja_alloc(jarena *a, size_t n); /* zeroed; NULL only on out of memory (the caller fails) */
void ja_free(jarena *a);

typedef struct jctx jctx;

/* ---- values ---- */
enum jv_kind { JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_FUNC, JV_MACRO };

typedef struct jv jv;
typedef struct jargs {
    jv **pos;
    size_t n;
    const char **kw; /* keyword names */
    jv **kwv;
    size_t nk;
} jargs;
/* A builtin; `fn` is the function value itself (its fn.self is the bound object of a method). */
typedef jv *(*jfunc)(jctx *c, jv *fn, jargs *a, int line);

struct jv {
    enum jv_kind k;
    bool ns;  /* a namespace(): attributes may be assigned */
    bool markup; /* a string marked safe (jinja2 Markup): `+` HTML-escapes a plain string joined to it */
    bool gen; /* a list standing for a Python generator (jinja2's map/select results): always truthy,
               * no len(), not JSON-serializable, until |list makes it a list */
    union {
        bool b;
        int64_t i;
        double f;
        struct { const char *p; size_t n; } s;
        struct { jv **v; size_t n, cap; } l;
        struct { jv **key, **val; size_t n, cap; } d;
        struct { jfunc fn; jv *self; const char *name; } fn;
        struct { struct jnode *node; } m;
    };
};

jv *jv_undef(void);
jv *jv_none(void);
jv *jv_bool(bool b);
jv *jv_int(jctx *c, int64_t i);
jv *jv_float(jctx *c, double f);
jv *jv_str(jctx *c, const char *p, size_t n); /* copies */
jv *jv_strz(jctx *c, const char *p);
jv *jv_list(jctx *c);
jv *jv_dict(jctx *c);
jv *jv_func(jctx *c, jfunc fn, jv *self, const char *name);
void jv_push(jctx *c, jv *list, jv *v);
void jv_set(jctx *c, jv *dict, jv *key, jv *v); /* replaces an equal key in place (keeps order) */
jv *jv_get(jv *dict, jv *key);                  /* NULL if absent */
jv *jv_gets(jv *dict, const char *key);
bool jv_truthy(const jv *v);
bool jv_eq(const jv *a, const jv *b);
int jv_cmp(jctx *c, const jv *a, const jv *b, int line); /* <0, 0, >0; numbers and strings only */
const char *jv_kind_name(const jv *v);

/* A growable byte buffer in the arena. */
typedef struct jbuf {
    char *p;
    size_t n, cap;
} jbuf;
void jb_put(jctx *c, jbuf *b, const char *s, size_t n);
void jb_putz(jctx *c, jbuf *b, const char *s);

void jv_to_str(jctx *c, jbuf *b, const jv *v);  /* Python str() */
void jv_to_repr(jctx *c, jbuf *b, const jv *v); /* Python repr() */
/* json.dumps(v, ensure_ascii=False, indent=indent (<0: None), sort_keys) */
void jv_to_json(jctx *c, jbuf *b, const jv *v, int indent, bool sort_keys, int level);
/* Parses JSON text into values (objects keep their key order). */
jv *jv_from_json(jctx *c, const char *s, size_t n, const char *what);

/* ---- tokens ---- */
enum jtok_kind { JT_TEXT, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END, JT_NAME, JT_STR, JT_INT,
                 JT_FLOAT, JT_OP, JT_EOF };
typedef struct jtok {
    enum jtok_kind k;
    const char *p; /* text / name / op / decoded string */
    size_t n;
    int64_t i;
    double f;
    int line;
} jtok;
void jinja_lex(jctx *c, const char *src, size_t n, jtok **out, size_t *n_out);

/* ---- tree ---- */
enum jnode_kind {
    /* statements */
    JN_TEXT, JN_OUT, JN_IF, JN_FOR, JN_SET, JN_SET_BLOCK, JN_MACRO, JN_BREAK, JN_CONTINUE, JN_FILTER_BLOCK,
    JN_BODY,
    /* expressions */
    JN_LIT, JN_NAME, JN_ATTR, JN_INDEX, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST, JN_NOT, JN_NEG, JN_BIN, JN_AND,
    JN_OR, JN_COND, JN_LIST, JN_DICT, JN_TUPLE,
};

typedef struct jnode jnode;
struct jnode {
    enum jnode_kind k;
    int line;
    const char *name; /* NAME, ATTR attribute, FILTER/TEST name, BIN operator, SET target, MACRO name */
    jv *lit;
    jnode *a, *b, *c, *d; /* operands / cond, body, else / for: target-less iter, body, else, filter */
    jnode **kids;         /* BODY statements, CALL/FILTER/TEST positional args, LIST/TUPLE/DICT items */
    size_t n_kids;
    const char **kw;      /* CALL/FILTER/TEST keyword names (values in kw_vals) */
    jnode **kw_vals;
    size_t n_kw;
    const char **names;   /* FOR targets, MACRO params, SET tuple targets */
    jnode **defaults;     /* MACRO param defaults (NULL = required) */
    size_t n_names;
    bool negate;          /* TEST: "is not" */
};
jnode *jinja_parse(jctx *c, jtok *toks, size_t n);

/* ---- evaluation ---- */
typedef struct jscope jscope;
struct jctx {
    jarena arena;
    err *e;
    jmp_buf jb;
    jscope *globals;
    jbuf out;
    int depth;
    uint64_t steps;
    int ctl; /* pending break / continue */
    long long now; /* strftime_now's time (UTC) when nonzero, else the local current time */
};
__attribute__((noreturn, format(printf, 3, 4))) void jinja_fail(jctx *c, int line, const char *fmt, ...);
void *jc_alloc(jctx *c, size_t n); /* fails the render on out of memory */

jscope *jscope_new(jctx *c, jscope *parent);
void jscope_set(jctx *c, jscope *s, const char *name, jv *v);
jv *jscope_get(jscope *s, const char *name); /* NULL if unbound */
void jinja_render_body(jctx *c, jscope *s, jnode *body, jbuf *out);
jv *jinja_eval(jctx *c, jscope *s, jnode *e);

/* builtins (jinja_builtins.c) */
jv *jinja_filter(jctx *c, jscope *s, const char *name, jv *v, jargs *a, int line);
bool jinja_test(jctx *c, const char *name, jv *v, jargs *a, int line);
jv *jinja_method(jctx *c, jv *self, const char *name, int line); /* NULL if self has no such method */
void jinja_add_globals(jctx *c, jscope *g);
jv *jinja_escape(jctx *c, jv *v); /* HTML-escaped Markup string of str(v) (identity on Markup) */

#endif
