/* jinja_eval: renders a parsed template. Scopes follow jinja2: the template's top level is one scope, a
 * for loop opens a scope for its body (so `set` inside a loop does not leak out, which is why templates
 * use namespace()), a macro call opens a scope whose parent is the top level. Values follow Python:
 * `a or b` yields a or b, `+` adds numbers and joins strings and lists, `in` tests substrings, keys and
 * members. Undefined values print as "" and iterate as empty, but using one as an object is an error,
 * as with jinja2's default Undefined. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

typedef struct jvar {
    const char *name;
    jv *v;
    struct jvar *next;
} jvar;

struct jscope {
    jscope *parent;
    jvar *vars;
};

enum { CTL_NONE, CTL_BREAK, CTL_CONTINUE }; /* c->ctl: set by break/continue, consumed by the loop */

jscope *jscope_new(jctx *c, jscope *parent) {
    jscope *s = jc_alloc(c, sizeof *s);
    s->parent = parent;
    return s;
}

void jscope_set(jctx *c, jscope *s, const char *name, jv *v) {
    for (jvar *x = s->vars; x; x = x->next)
        if (!strcmp(x->name, name)) {
            x->v = v;
            return;
        }
    jvar *x = jc_alloc(c, sizeof *x);
    x->name = name, x->v = v, x->next = s->vars;
    s->vars = x;
}

jv *jscope_get(jscope *s, const char *name) {
    for (; s; s = s->parent)
        for (jvar *x = s->vars; x; x = x->next)
            if (!strcmp(x->name, name)) return x->v;
    return NULL;
}

static void step(jctx *c, int line) {
    if (++c->steps > JINJA_MAX_STEPS) jinja_fail(c, line, "evaluation exceeded the cap of %llu steps", JINJA_MAX_STEPS);
}

/* ---- helpers on strings (Python indexes code points, not bytes) ---- */

static size_t cp_len(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* byte offset of code point index cp */
static size_t cp_off(const char *s, size_t n, size_t cp) {
    size_t k = 0, i = 0;
    for (; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (k == cp) return i;
            k++;
        }
    }
    return n;
}

static int64_t to_int(jctx *c, jv *v, int line) {
    if (v->k == JV_INT) return v->i;
    if (v->k == JV_BOOL) return v->b;
    jinja_fail(c, line, "expected an integer, found %s", jv_kind_name(v));
}

/* Python slice indices for a sequence of length n */
static void slice_bounds(int64_t n, jv *a, jv *b, jv *st, int64_t *start, int64_t *stop, int64_t *stepv, jctx *c,
                         int line) {
    int64_t s = st && st->k != JV_NONE ? to_int(c, st, line) : 1;
    if (s == 0) jinja_fail(c, line, "slice step cannot be zero");
    int64_t lo, hi;
    if (s > 0) {
        lo = a && a->k != JV_NONE ? to_int(c, a, line) : 0;
        hi = b && b->k != JV_NONE ? to_int(c, b, line) : n;
        if (lo < 0) lo += n;
        if (hi < 0) hi += n;
        lo = lo < 0 ? 0 : lo > n ? n : lo;
        hi = hi < 0 ? 0 : hi > n ? n : hi;
    } else {
        lo = n - 1, hi = -1;
        if (a && a->k != JV_NONE) {
            lo = to_int(c, a, line);
            if (lo < 0) lo += n;
            lo = lo < 0 ? -1 : lo >= n ? n - 1 : lo;
        }
        if (b && b->k != JV_NONE) {
            hi = to_int(c, b, line);
            if (hi < 0) hi += n;
            hi = hi < 0 ? -1 : hi >= n ? n - 1 : hi;
        }
    }
    *start = lo, *stop = hi, *stepv = s;
}

static jv *do_slice(jctx *c, jv *v, jv *a, jv *b, jv *st, int line) {
    if (v->k == JV_LIST || v->k == JV_STR) {
        int64_t n = v->k == JV_LIST ? (int64_t)v->l.n : (int64_t)cp_len(v->s.p, v->s.n);
        int64_t lo, hi, s;
        slice_bounds(n, a, b, st, &lo, &hi, &s, c, line);
        if (v->k == JV_LIST) {
            jv *r = jv_list(c);
            for (int64_t i = lo; s > 0 ? i < hi : i > hi; i += s) jv_push(c, r, v->l.v[i]);
            return r;
        }
        jbuf out = {0};
        for (int64_t i = lo; s > 0 ? i < hi : i > hi; i += s) {
            size_t o = cp_off(v->s.p, v->s.n, (size_t)i), e = cp_off(v->s.p, v->s.n, (size_t)i + 1);
            jb_put(c, &out, v->s.p + o, e - o);
        }
        return jv_str(c, out.p ? out.p : "", out.n);
    }
    jinja_fail(c, line, "cannot slice a %s", jv_kind_name(v));
}

static jv *do_index(jctx *c, jv *v, jv *key, int line) {
    if (v->k == JV_DICT) {
        jv *r = jv_get(v, key);
        return r ? r : jv_undef();
    }
    if (v->k == JV_LIST || v->k == JV_STR) {
        if (key->k != JV_INT && key->k != JV_BOOL) {
            if (key->k == JV_STR) {
                jv *m = jinja_method(c, v, key->s.p, line);
                return m ? m : jv_undef();
            }
            jinja_fail(c, line, "%s indices must be integers, found %s", jv_kind_name(v), jv_kind_name(key));
        }
        int64_t n = v->k == JV_LIST ? (int64_t)v->l.n : (int64_t)cp_len(v->s.p, v->s.n);
        int64_t i = to_int(c, key, line);
        if (i < 0) i += n;
        if (i < 0 || i >= n) return jv_undef();
        if (v->k == JV_LIST) return v->l.v[i];
        size_t o = cp_off(v->s.p, v->s.n, (size_t)i), e = cp_off(v->s.p, v->s.n, (size_t)i + 1);
        return jv_str(c, v->s.p + o, e - o);
    }
    if (v->k == JV_UNDEF) jinja_fail(c, line, "cannot index an undefined value");
    jinja_fail(c, line, "cannot index a %s", jv_kind_name(v));
}

static jv *get_attr(jctx *c, jv *v, const char *name, int line) {
    if (v->k == JV_UNDEF) jinja_fail(c, line, "'%s' of an undefined value: the object is undefined", name);
    if (v->k == JV_DICT && !v->ns) {
        /* jinja2 tries the Python attribute first: dict methods shadow keys of the same name */
        if (strcmp(name, "get") && strcmp(name, "items") && strcmp(name, "keys") && strcmp(name, "values")) {
            jv *r = jv_gets(v, name);
            return r ? r : jv_undef();
        }
    }
    if (v->k == JV_DICT && v->ns) {
        jv *r = jv_gets(v, name);
        return r ? r : jv_undef();
    }
    jv *m = jinja_method(c, v, name, line);
    return m ? m : jv_undef();
}

/* ---- operators ---- */

static bool numeric(const jv *v) { return v->k == JV_INT || v->k == JV_FLOAT || v->k == JV_BOOL; }
static double fnum(const jv *v) { return v->k == JV_FLOAT ? v->f : v->k == JV_INT ? (double)v->i : v->b; }

static jv *arith(jctx *c, const char *op, jv *a, jv *b, int line) {
    if (!strcmp(op, "~")) {
        jbuf s = {0};
        jv_to_str(c, &s, a);
        jv_to_str(c, &s, b);
        return jv_str(c, s.p ? s.p : "", s.n);
    }
    if (!strcmp(op, "+")) {
        if (a->k == JV_STR && b->k == JV_STR) {
            jbuf s = {0};
            bool markup = a->markup || b->markup;
            /* Markup + str escapes the plain side, as markupsafe does */
            if (markup && !a->markup) a = jinja_escape(c, a);
            if (markup && !b->markup) b = jinja_escape(c, b);
            jb_put(c, &s, a->s.p, a->s.n);
            jb_put(c, &s, b->s.p, b->s.n);
            jv *r = jv_str(c, s.p ? s.p : "", s.n);
            r->markup = markup;
            return r;
        }
        if (a->k == JV_LIST && b->k == JV_LIST) {
            jv *r = jv_list(c);
            for (size_t i = 0; i < a->l.n; i++) jv_push(c, r, a->l.v[i]);
            for (size_t i = 0; i < b->l.n; i++) jv_push(c, r, b->l.v[i]);
            return r;
        }
    }
    if (!strcmp(op, "*") && ((a->k == JV_STR && b->k == JV_INT) || (a->k == JV_INT && b->k == JV_STR))) {
        jv *s = a->k == JV_STR ? a : b;
        int64_t n = a->k == JV_INT ? a->i : b->i;
        jbuf out = {0};
        for (int64_t i = 0; i < n; i++) jb_put(c, &out, s->s.p, s->s.n);
        return jv_str(c, out.p ? out.p : "", out.n);
    }
    if (!numeric(a) || !numeric(b))
        jinja_fail(c, line, "unsupported operand types for %s: %s and %s", op, jv_kind_name(a), jv_kind_name(b));
    bool ints = a->k != JV_FLOAT && b->k != JV_FLOAT;
    int64_t x = ints ? (a->k == JV_INT ? a->i : a->b) : 0, y = ints ? (b->k == JV_INT ? b->i : b->b) : 0;
    double fx = fnum(a), fy = fnum(b);
    switch (op[0]) {
    case '+': return ints ? jv_int(c, x + y) : jv_float(c, fx + fy);
    case '-': return ints ? jv_int(c, x - y) : jv_float(c, fx - fy);
    case '*':
        if (op[1] == '*') return ints && y >= 0 ? jv_int(c, (int64_t)llround(pow((double)x, (double)y))) : jv_float(c, pow(fx, fy));
        return ints ? jv_int(c, x * y) : jv_float(c, fx * fy);
    case '/':
        if (fy == 0) jinja_fail(c, line, "division by zero");
        if (op[1] == '/') {
            if (ints) return jv_int(c, (int64_t)floor((double)x / (double)y));
            return jv_float(c, floor(fx / fy));
        }
        return jv_float(c, fx / fy);
    case '%':
        if (fy == 0) jinja_fail(c, line, "modulo by zero");
        if (ints) {
            int64_t r = x % y;
            if (r && ((r < 0) != (y < 0))) r += y;
            return jv_int(c, r);
        }
        return jv_float(c, fx - fy * floor(fx / fy));
    }
    jinja_fail(c, line, "unknown operator %s", op);
}

static bool contains(jctx *c, jv *hay, jv *needle, int line) {
    if (hay->k == JV_STR) {
        if (needle->k != JV_STR) jinja_fail(c, line, "'in <string>' needs a string on the left, found %s", jv_kind_name(needle));
        return needle->s.n == 0 || memmem(hay->s.p, hay->s.n, needle->s.p, needle->s.n) != NULL;
    }
    if (hay->k == JV_LIST) {
        for (size_t i = 0; i < hay->l.n; i++)
            if (jv_eq(hay->l.v[i], needle)) return true;
        return false;
    }
    if (hay->k == JV_DICT) return jv_get(hay, needle) != NULL;
    if (hay->k == JV_UNDEF) return false;
    jinja_fail(c, line, "'in' needs a string, list or mapping on the right, found %s", jv_kind_name(hay));
}

/* ---- calls ---- */

static void eval_args(jctx *c, jscope *s, jnode *nd, jargs *a) {
    a->n = nd->n_kids;
    a->pos = jc_alloc(c, (a->n + 1) * sizeof *a->pos);
    for (size_t i = 0; i < a->n; i++) a->pos[i] = jinja_eval(c, s, nd->kids[i]);
    a->nk = nd->n_kw;
    a->kw = nd->kw;
    a->kwv = jc_alloc(c, (a->nk + 1) * sizeof *a->kwv);
    for (size_t i = 0; i < a->nk; i++) a->kwv[i] = jinja_eval(c, s, nd->kw_vals[i]);
}

static jv *call_macro(jctx *c, jv *m, jargs *a, int line) {
    jnode *def = m->m.node;
    if (++c->depth > JINJA_MAX_DEPTH) jinja_fail(c, line, "macro calls nested deeper than %d", JINJA_MAX_DEPTH);
    jscope *sc = jscope_new(c, c->globals);
    if (a->n > def->n_names) jinja_fail(c, line, "macro '%s' takes %zu arguments, %zu given", def->name, def->n_names, a->n);
    for (size_t i = 0; i < def->n_names; i++) {
        jv *v = NULL;
        if (i < a->n) v = a->pos[i];
        for (size_t k = 0; k < a->nk; k++)
            if (!strcmp(a->kw[k], def->names[i])) v = a->kwv[k];
        if (!v) v = def->defaults[i] ? jinja_eval(c, sc, def->defaults[i]) : jv_undef();
        jscope_set(c, sc, def->names[i], v);
    }
    for (size_t k = 0; k < a->nk; k++) {
        bool known = false;
        for (size_t i = 0; i < def->n_names; i++) known |= !strcmp(a->kw[k], def->names[i]);
        if (!known) jinja_fail(c, line, "macro '%s' has no parameter '%s'", def->name, a->kw[k]);
    }
    jbuf out = {0};
    jinja_render_body(c, sc, def->b, &out);
    c->depth--;
    return jv_str(c, out.p ? out.p : "", out.n);
}

static jv *call_value(jctx *c, jv *f, jargs *a, int line) {
    if (f->k == JV_FUNC) return f->fn.fn(c, f, a, line); /* the function value: fn.self, fn.name */
    if (f->k == JV_MACRO) return call_macro(c, f, a, line);
    if (f->k == JV_UNDEF) jinja_fail(c, line, "call of an undefined function");
    jinja_fail(c, line, "a %s is not callable", jv_kind_name(f));
}

jv *jinja_eval(jctx *c, jscope *s, jnode *e) {
    step(c, e->line);
    switch (e->k) {
    case JN_LIT: return e->lit;
    case JN_NAME: {
        jv *v = jscope_get(s, e->name);
        return v ? v : jv_undef();
    }
    case JN_ATTR: return get_attr(c, jinja_eval(c, s, e->a), e->name, e->line);
    case JN_INDEX: {
        jv *v = jinja_eval(c, s, e->a), *k = jinja_eval(c, s, e->b);
        if (v->k == JV_DICT && v->ns && k->k == JV_STR) return get_attr(c, v, k->s.p, e->line);
        return do_index(c, v, k, e->line);
    }
    case JN_SLICE:
        return do_slice(c, jinja_eval(c, s, e->a), e->b ? jinja_eval(c, s, e->b) : NULL,
                        e->c ? jinja_eval(c, s, e->c) : NULL, e->d ? jinja_eval(c, s, e->d) : NULL, e->line);
    case JN_CALL: {
        jargs a;
        jv *f = jinja_eval(c, s, e->a);
        eval_args(c, s, e, &a);
        return call_value(c, f, &a, e->line);
    }
    case JN_FILTER: {
        jargs a;
        jv *v = jinja_eval(c, s, e->a);
        eval_args(c, s, e, &a);
        return jinja_filter(c, s, e->name, v, &a, e->line);
    }
    case JN_TEST: {
        jargs a;
        jv *v = jinja_eval(c, s, e->a);
        eval_args(c, s, e, &a);
        bool r = jinja_test(c, e->name, v, &a, e->line);
        return jv_bool(e->negate ? !r : r);
    }
    case JN_NOT: return jv_bool(!jv_truthy(jinja_eval(c, s, e->a)));
    case JN_NEG: {
        jv *v = jinja_eval(c, s, e->a);
        if (v->k == JV_INT) return jv_int(c, -v->i);
        if (v->k == JV_FLOAT) return jv_float(c, -v->f);
        jinja_fail(c, e->line, "bad operand for unary -: %s", jv_kind_name(v));
    }
    case JN_AND: {
        jv *a = jinja_eval(c, s, e->a);
        return jv_truthy(a) ? jinja_eval(c, s, e->b) : a;
    }
    case JN_OR: {
        jv *a = jinja_eval(c, s, e->a);
        return jv_truthy(a) ? a : jinja_eval(c, s, e->b);
    }
    case JN_COND:
        if (jv_truthy(jinja_eval(c, s, e->b))) return jinja_eval(c, s, e->a);
        return e->c ? jinja_eval(c, s, e->c) : jv_undef();
    case JN_LIST: case JN_TUPLE: {
        jv *l = jv_list(c);
        for (size_t i = 0; i < e->n_kids; i++) jv_push(c, l, jinja_eval(c, s, e->kids[i]));
        return l;
    }
    case JN_DICT: {
        jv *d = jv_dict(c);
        for (size_t i = 0; i + 1 < e->n_kids; i += 2)
            jv_set(c, d, jinja_eval(c, s, e->kids[i]), jinja_eval(c, s, e->kids[i + 1]));
        return d;
    }
    case JN_BIN: {
        jv *a = jinja_eval(c, s, e->a), *b = jinja_eval(c, s, e->b);
        const char *op = e->name;
        if (!strcmp(op, "==")) return jv_bool(jv_eq(a, b));
        if (!strcmp(op, "!=")) return jv_bool(!jv_eq(a, b));
        if (!strcmp(op, "in")) return jv_bool(contains(c, b, a, e->line));
        if (!strcmp(op, "not in")) return jv_bool(!contains(c, b, a, e->line));
        if (op[0] == '<' || op[0] == '>') {
            int r = jv_cmp(c, a, b, e->line);
            if (!strcmp(op, "<")) return jv_bool(r < 0);
            if (!strcmp(op, ">")) return jv_bool(r > 0);
            if (!strcmp(op, "<=")) return jv_bool(r <= 0);
            return jv_bool(r >= 0);
        }
        return arith(c, op, a, b, e->line);
    }
    default: jinja_fail(c, e->line, "not an expression");
    }
}

/* ---- statements ---- */

static jv *iter_list(jctx *c, jv *v, int line) {
    if (v->k == JV_LIST) return v;
    jv *l = jv_list(c);
    if (v->k == JV_UNDEF || v->k == JV_NONE) {
        if (v->k == JV_NONE) jinja_fail(c, line, "cannot iterate over None");
        return l;
    }
    if (v->k == JV_DICT) {
        for (size_t i = 0; i < v->d.n; i++) jv_push(c, l, v->d.key[i]);
        return l;
    }
    if (v->k == JV_STR) {
        for (size_t i = 0; i < v->s.n;) {
            size_t k = i + 1;
            while (k < v->s.n && ((unsigned char)v->s.p[k] & 0xC0) == 0x80) k++;
            jv_push(c, l, jv_str(c, v->s.p + i, k - i));
            i = k;
        }
        return l;
    }
    jinja_fail(c, line, "cannot iterate over a %s", jv_kind_name(v));
}

static void bind_targets(jctx *c, jscope *s, const char **names, size_t n, jv *v, int line) {
    if (n == 1) {
        jscope_set(c, s, names[0], v);
        return;
    }
    if (v->k != JV_LIST || v->l.n != n)
        jinja_fail(c, line, "cannot unpack a %s into %zu names", jv_kind_name(v), n);
    for (size_t i = 0; i < n; i++) jscope_set(c, s, names[i], v->l.v[i]);
}

static void render_for(jctx *c, jscope *s, jnode *nd, jbuf *out) {
    jv *items = iter_list(c, jinja_eval(c, s, nd->a), nd->line);
    jscope *ls = jscope_new(c, s);
    if (nd->d) { /* the loop's "if" filter runs before loop.length is known */
        jv *kept = jv_list(c);
        for (size_t i = 0; i < items->l.n; i++) {
            bind_targets(c, ls, nd->names, nd->n_names, items->l.v[i], nd->line);
            if (jv_truthy(jinja_eval(c, ls, nd->d))) jv_push(c, kept, items->l.v[i]);
        }
        items = kept;
    }
    size_t n = items->l.n;
    /* one loop object per loop, its fields replaced each iteration (as jinja2's LoopContext advances);
     * the numbers are fresh values, since a template may keep one (set ns.idx = loop.index0) */
    static const char *const fields[] = {"index", "index0", "revindex", "revindex0", "first", "last", "length",
                                         "depth", "depth0", "previtem", "nextitem"};
    jv *loop = jv_dict(c);
    for (size_t f = 0; f < 11; f++) jv_set(c, loop, jv_strz(c, fields[f]), jv_undef());
    loop->d.val[6] = jv_int(c, (int64_t)n);
    loop->d.val[7] = jv_int(c, 1);
    loop->d.val[8] = jv_int(c, 0);
    for (size_t i = 0; i < n; i++) {
        loop->d.val[0] = jv_int(c, (int64_t)i + 1);
        loop->d.val[1] = jv_int(c, (int64_t)i);
        loop->d.val[2] = jv_int(c, (int64_t)(n - i));
        loop->d.val[3] = jv_int(c, (int64_t)(n - i - 1));
        loop->d.val[4] = jv_bool(i == 0);
        loop->d.val[5] = jv_bool(i + 1 == n);
        loop->d.val[9] = i ? items->l.v[i - 1] : jv_undef();
        loop->d.val[10] = i + 1 < n ? items->l.v[i + 1] : jv_undef();
        jscope_set(c, ls, "loop", loop);
        bind_targets(c, ls, nd->names, nd->n_names, items->l.v[i], nd->line);
        jinja_render_body(c, ls, nd->b, out);
        if (c->ctl == CTL_BREAK) {
            c->ctl = CTL_NONE;
            break;
        }
        c->ctl = CTL_NONE;
    }
    if (n == 0 && nd->c) jinja_render_body(c, s, nd->c, out);
}

void jinja_render_body(jctx *c, jscope *s, jnode *body, jbuf *out) {
    for (size_t i = 0; i < body->n_kids && c->ctl == CTL_NONE; i++) {
        jnode *nd = body->kids[i];
        step(c, nd->line);
        switch (nd->k) {
        case JN_TEXT: jb_put(c, out, nd->lit->s.p, nd->lit->s.n); break;
        case JN_OUT: jv_to_str(c, out, jinja_eval(c, s, nd->a)); break;
        case JN_BODY: jinja_render_body(c, s, nd, out); break;
        case JN_IF: {
            jnode *b = nd;
            while (b && b->k == JN_IF && !jv_truthy(jinja_eval(c, s, b->a))) b = b->c;
            if (b) jinja_render_body(c, s, b->k == JN_IF ? b->b : b, out);
            break;
        }
        case JN_FOR: render_for(c, s, nd, out); break;
        case JN_SET: {
            jv *v = jinja_eval(c, s, nd->a);
            if (nd->negate) { /* ns.attr = v */
                jv *ns = jscope_get(s, nd->name);
                if (!ns || ns->k != JV_DICT || !ns->ns)
                    jinja_fail(c, nd->line, "cannot assign an attribute of '%s': it is not a namespace", nd->name);
                jv_set(c, ns, jv_strz(c, nd->names[0]), v);
            } else if (nd->n_names > 1) {
                bind_targets(c, s, nd->names, nd->n_names, v, nd->line);
            } else {
                jscope_set(c, s, nd->name, v);
            }
            break;
        }
        case JN_SET_BLOCK: {
            jbuf b = {0};
            jinja_render_body(c, s, nd->b, &b);
            jscope_set(c, s, nd->name, jv_str(c, b.p ? b.p : "", b.n));
            break;
        }
        case JN_MACRO: {
            jv *m = jc_alloc(c, sizeof *m);
            m->k = JV_MACRO;
            m->m.node = nd;
            jscope_set(c, s, nd->name, m);
            break;
        }
        case JN_BREAK: c->ctl = CTL_BREAK; break;
        case JN_CONTINUE: c->ctl = CTL_CONTINUE; break;
        case JN_FILTER_BLOCK: {
            jbuf b = {0};
            jinja_render_body(c, s, nd->b, &b);
            jargs a;
            eval_args(c, s, nd->a, &a);
            jv_to_str(c, out, jinja_filter(c, s, nd->name, jv_str(c, b.p ? b.p : "", b.n), &a, nd->line));
            break;
        }
        default: jinja_fail(c, nd->line, "not a statement");
        }
    }
}
