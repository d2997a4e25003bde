/* jinja_value: the arena, template values with Python's semantics (truthiness, ==, ordering, str(),
 * repr()), json.dumps for tojson, and a JSON parser for the conversation and tool files.
 *
 * Ownership: all memory comes from the render's arena (jc_alloc) and is released with it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

struct jchunk {
    struct jchunk *next;
    size_t used, cap;
    _Alignas(16) char data[];
};

void *ja_alloc(jarena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    struct jchunk *h = a->head;
    if (!h || h->used + n > h->cap) {
        size_t cap = n > (1u << 16) ? n : (1u << 16);
        if (a->total + cap > JINJA_MAX_MEMORY) return NULL;
        a->total += cap;
        h = malloc(sizeof *h + cap);
        if (!h) return NULL;
        h->next = a->head, h->used = 0, h->cap = cap;
        a->head = h;
    }
    void *p = h->data + h->used;
    h->used += n;
    memset(p, 0, n);
    return p;
}

void ja_free(jarena *a) {
    for (struct jchunk *h = a->head, *nx; h; h = nx) {
        nx = h->next;
        free(h);
    }
    a->head = NULL;
}

void jinja_fail(jctx *c, int line, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) err_set(c->e, ERR_FORMAT, "template line %d: %s", line, msg);
    else err_set(c->e, ERR_FORMAT, "template: %s", msg);
    longjmp(c->jb, 1);
}

void *jc_alloc(jctx *c, size_t n) {
    void *p = ja_alloc(&c->arena, n);
    if (!p) {
        err_set(c->e, ERR_NOMEM, "out of memory rendering the template (the cap is %u MiB)", JINJA_MAX_MEMORY >> 20);
        longjmp(c->jb, 1);
    }
    return p;
}

static jv UNDEF = {.k = JV_UNDEF}, NONE = {.k = JV_NONE}, TRUE_V = {.k = JV_BOOL, .b = true},
          FALSE_V = {.k = JV_BOOL, .b = false};
jv *jv_undef(void) { return &UNDEF; }
jv *jv_none(void) { return &NONE; }
jv *jv_bool(bool b) { return b ? &TRUE_V : &FALSE_V; }

static jv *mk(jctx *c, enum jv_kind k) {
    jv *v = jc_alloc(c, sizeof *v);
    v->k = k;
    return v;
}
jv *jv_int(jctx *c, int64_t i) {
    jv *v = mk(c, JV_INT);
    v->i = i;
    return v;
}
jv *jv_float(jctx *c, double f) {
    jv *v = mk(c, JV_FLOAT);
    v->f = f;
    return v;
}
jv *jv_str(jctx *c, const char *p, size_t n) {
    jv *v = mk(c, JV_STR);
    char *s = jc_alloc(c, n + 1);
    memcpy(s, p, n);
    v->s.p = s, v->s.n = n;
    return v;
}
jv *jv_strz(jctx *c, const char *p) { return jv_str(c, p, strlen(p)); }
jv *jv_list(jctx *c) { return mk(c, JV_LIST); }
jv *jv_dict(jctx *c) { return mk(c, JV_DICT); }
jv *jv_func(jctx *c, jfunc fn, jv *self, const char *name) {
    jv *v = mk(c, JV_FUNC);
    v->fn.fn = fn, v->fn.self = self, v->fn.name = name;
    return v;
}

void jv_push(jctx *c, jv *l, jv *v) {
    if (l->l.n == l->l.cap) {
        size_t cap = l->l.cap ? l->l.cap * 2 : 8;
        jv **nv = jc_alloc(c, cap * sizeof *nv);
        if (l->l.n) memcpy(nv, l->l.v, l->l.n * sizeof *nv);
        l->l.v = nv, l->l.cap = cap;
    }
    l->l.v[l->l.n++] = v;
}

jv *jv_get(jv *d, jv *key) {
    if (d->k != JV_DICT) return NULL;
    for (size_t i = 0; i < d->d.n; i++)
        if (jv_eq(d->d.key[i], key)) return d->d.val[i];
    return NULL;
}

jv *jv_gets(jv *d, const char *key) {
    if (d->k != JV_DICT) return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < d->d.n; i++) {
        jv *k = d->d.key[i];
        if (k->k == JV_STR && k->s.n == n && !memcmp(k->s.p, key, n)) return d->d.val[i];
    }
    return NULL;
}

void jv_set(jctx *c, jv *d, jv *key, jv *v) {
    for (size_t i = 0; i < d->d.n; i++)
        if (jv_eq(d->d.key[i], key)) {
            d->d.val[i] = v;
            return;
        }
    if (d->d.n == d->d.cap) {
        size_t cap = d->d.cap ? d->d.cap * 2 : 8;
        jv **nk = jc_alloc(c, cap * sizeof *nk), **nv = jc_alloc(c, cap * sizeof *nv);
        if (d->d.n) memcpy(nk, d->d.key, d->d.n * sizeof *nk), memcpy(nv, d->d.val, d->d.n * sizeof *nv);
        d->d.key = nk, d->d.val = nv, d->d.cap = cap;
    }
    d->d.key[d->d.n] = key;
    d->d.val[d->d.n++] = v;
}

bool jv_truthy(const jv *v) {
    switch (v->k) {
    case JV_UNDEF: case JV_NONE: return false;
    case JV_BOOL: return v->b;
    case JV_INT: return v->i != 0;
    case JV_FLOAT: return v->f != 0;
    case JV_STR: return v->s.n != 0;
    case JV_LIST: return v->gen || v->l.n != 0;
    case JV_DICT: return v->ns || v->d.n != 0;
    default: return true;
    }
}

static bool is_num(const jv *v) { return v->k == JV_INT || v->k == JV_FLOAT || v->k == JV_BOOL; }
static double num(const jv *v) { return v->k == JV_FLOAT ? v->f : v->k == JV_INT ? (double)v->i : v->b; }

bool jv_eq(const jv *a, const jv *b) {
    if (is_num(a) && is_num(b)) {
        if (a->k != JV_FLOAT && b->k != JV_FLOAT) return (a->k == JV_INT ? a->i : a->b) == (b->k == JV_INT ? b->i : b->b);
        return num(a) == num(b);
    }
    if (a->k != b->k) return false;
    switch (a->k) {
    case JV_UNDEF: case JV_NONE: return true;
    case JV_STR: return a->s.n == b->s.n && !memcmp(a->s.p, b->s.p, a->s.n);
    case JV_LIST:
        if (a->l.n != b->l.n) return false;
        for (size_t i = 0; i < a->l.n; i++)
            if (!jv_eq(a->l.v[i], b->l.v[i])) return false;
        return true;
    case JV_DICT:
        if (a->d.n != b->d.n) return false;
        for (size_t i = 0; i < a->d.n; i++) {
            jv *o = jv_get((jv *)b, a->d.key[i]);
            if (!o || !jv_eq(a->d.val[i], o)) return false;
        }
        return true;
    default: return a == b;
    }
}

const char *jv_kind_name(const jv *v) {
    static const char *names[] = {"undefined", "none", "bool", "int", "float", "str", "list", "dict", "function",
                                  "macro"};
    return v->ns ? "namespace" : names[v->k];
}

int jv_cmp(jctx *c, const jv *a, const jv *b, int line) {
    if (is_num(a) && is_num(b)) {
        double x = num(a), y = num(b);
        return x < y ? -1 : x > y;
    }
    if (a->k == JV_STR && b->k == JV_STR) {
        size_t n = a->s.n < b->s.n ? a->s.n : b->s.n;
        int r = memcmp(a->s.p, b->s.p, n);
        return r ? r : (a->s.n < b->s.n ? -1 : a->s.n > b->s.n);
    }
    jinja_fail(c, line, "cannot compare %s with %s", jv_kind_name(a), jv_kind_name(b));
}

/* ---- text ---- */

void jb_put(jctx *c, jbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        if (cap > JINJA_MAX_OUTPUT + 1) jinja_fail(c, 0, "output larger than %u bytes", JINJA_MAX_OUTPUT);
        char *np = jc_alloc(c, cap);
        if (b->n) memcpy(np, b->p, b->n);
        b->p = np, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
void jb_putz(jctx *c, jbuf *b, const char *s) { jb_put(c, b, s, strlen(s)); }

/* Python's repr(float): the shortest decimal that reads back to the same double, with ".0" when integral. */
static void put_float(jctx *c, jbuf *b, double f) {
    char s[40];
    if (isnan(f)) {
        jb_putz(c, b, "NaN");
        return;
    }
    if (isinf(f)) {
        jb_putz(c, b, f > 0 ? "Infinity" : "-Infinity");
        return;
    }
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(s, sizeof s, "%.*e", prec - 1, f);
        if (strtod(s, NULL) == f) break;
    }
    snprintf(s, sizeof s, "%.*e", prec - 1, f);
    int exp10 = atoi(strchr(s, 'e') + 1);
    if (exp10 < -4 || exp10 >= 16) { /* Python's repr switches to exponent form outside [1e-4, 1e16) */
        jb_putz(c, b, s);
        return;
    }
    int decimals = prec - 1 - exp10;
    snprintf(s, sizeof s, "%.*f", decimals > 0 ? decimals : 0, f);
    jb_putz(c, b, s);
    if (!strchr(s, '.')) jb_putz(c, b, ".0");
}

static void put_repr_str(jctx *c, jbuf *b, const char *s, size_t n) {
    bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
    char q = sq && !dq ? '"' : '\'';
    jb_put(c, b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char tmp[8];
        if (ch == (unsigned char)q || ch == '\\') tmp[0] = '\\', tmp[1] = (char)ch, jb_put(c, b, tmp, 2);
        else if (ch == '\n') jb_putz(c, b, "\\n");
        else if (ch == '\r') jb_putz(c, b, "\\r");
        else if (ch == '\t') jb_putz(c, b, "\\t");
        else if (ch < 0x20 || ch == 0x7f) snprintf(tmp, sizeof tmp, "\\x%02x", ch), jb_putz(c, b, tmp);
        else jb_put(c, b, (const char *)&s[i], 1);
    }
    jb_put(c, b, &q, 1);
}

void jv_to_repr(jctx *c, jbuf *b, const jv *v) {
    switch (v->k) {
    case JV_STR: put_repr_str(c, b, v->s.p, v->s.n); return;
    case JV_LIST:
        jb_putz(c, b, "[");
        for (size_t i = 0; i < v->l.n; i++) {
            if (i) jb_putz(c, b, ", ");
            jv_to_repr(c, b, v->l.v[i]);
        }
        jb_putz(c, b, "]");
        return;
    case JV_DICT:
        if (v->ns) {
            jb_putz(c, b, "<Namespace>");
            return;
        }
        jb_putz(c, b, "{");
        for (size_t i = 0; i < v->d.n; i++) {
            if (i) jb_putz(c, b, ", ");
            jv_to_repr(c, b, v->d.key[i]);
            jb_putz(c, b, ": ");
            jv_to_repr(c, b, v->d.val[i]);
        }
        jb_putz(c, b, "}");
        return;
    default: jv_to_str(c, b, v);
    }
}

void jv_to_str(jctx *c, jbuf *b, const jv *v) {
    char tmp[32];
    switch (v->k) {
    case JV_UNDEF: return;
    case JV_NONE: jb_putz(c, b, "None"); return;
    case JV_BOOL: jb_putz(c, b, v->b ? "True" : "False"); return;
    case JV_INT: snprintf(tmp, sizeof tmp, "%lld", (long long)v->i), jb_putz(c, b, tmp); return;
    case JV_FLOAT: put_float(c, b, v->f); return;
    case JV_STR: jb_put(c, b, v->s.p, v->s.n); return;
    case JV_LIST: case JV_DICT:
        if (v->gen) jinja_fail(c, 0, "printing a generator, which jinja2 shows as its address (add |list)");
        jv_to_repr(c, b, v);
        return;
    default: jb_putz(c, b, v->k == JV_MACRO ? "<macro>" : "<function>"); return;
    }
}

static void put_json_str(jctx *c, jbuf *b, const char *s, size_t n) {
    jb_putz(c, b, "\"");
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        const char *esc = NULL;
        char tmp[8];
        if (ch == '"') esc = "\\\"";
        else if (ch == '\\') esc = "\\\\";
        else if (ch == '\n') esc = "\\n";
        else if (ch == '\r') esc = "\\r";
        else if (ch == '\t') esc = "\\t";
        else if (ch == '\b') esc = "\\b";
        else if (ch == '\f') esc = "\\f";
        else if (ch < 0x20) snprintf(tmp, sizeof tmp, "\\u%04x", ch), esc = tmp;
        if (!esc) continue;
        jb_put(c, b, s + run, i - run);
        jb_putz(c, b, esc);
        run = i + 1;
    }
    jb_put(c, b, s + run, n - run);
    jb_putz(c, b, "\"");
}

static void newline_indent(jctx *c, jbuf *b, int indent, int level) {
    jb_putz(c, b, "\n");
    for (int i = 0; i < indent * level; i++) jb_putz(c, b, " ");
}

static int cmp_keys(const void *x, const void *y) {
    const jv *a = *(jv *const *)x, *bb = *(jv *const *)y;
    if (a->k != JV_STR || bb->k != JV_STR) return 0;
    size_t n = a->s.n < bb->s.n ? a->s.n : bb->s.n;
    int r = memcmp(a->s.p, bb->s.p, n);
    return r ? r : (a->s.n < bb->s.n ? -1 : a->s.n > bb->s.n);
}

void jv_to_json(jctx *c, jbuf *b, const jv *v, int indent, bool sort_keys, int level) {
    switch (v->k) {
    case JV_UNDEF: jinja_fail(c, 0, "tojson: cannot serialize an undefined value");
    case JV_NONE: jb_putz(c, b, "null"); return;
    case JV_BOOL: jb_putz(c, b, v->b ? "true" : "false"); return;
    case JV_INT: case JV_FLOAT: jv_to_str(c, b, v); return;
    case JV_STR: put_json_str(c, b, v->s.p, v->s.n); return;
    case JV_LIST:
        if (v->gen) jinja_fail(c, 0, "tojson: Object of type generator is not JSON serializable (add |list)");
        if (!v->l.n) {
            jb_putz(c, b, "[]");
            return;
        }
        jb_putz(c, b, "[");
        for (size_t i = 0; i < v->l.n; i++) {
            if (i) jb_putz(c, b, indent >= 0 ? "," : ", ");
            if (indent >= 0) newline_indent(c, b, indent, level + 1);
            jv_to_json(c, b, v->l.v[i], indent, sort_keys, level + 1);
        }
        if (indent >= 0) newline_indent(c, b, indent, level);
        jb_putz(c, b, "]");
        return;
    case JV_DICT: {
        if (!v->d.n) {
            jb_putz(c, b, "{}");
            return;
        }
        size_t n = v->d.n;
        jv **order = jc_alloc(c, n * sizeof *order);
        memcpy(order, v->d.key, n * sizeof *order);
        if (sort_keys) qsort(order, n, sizeof *order, cmp_keys);
        jb_putz(c, b, "{");
        for (size_t i = 0; i < n; i++) {
            if (i) jb_putz(c, b, indent >= 0 ? "," : ", ");
            if (indent >= 0) newline_indent(c, b, indent, level + 1);
            jv *k = order[i];
            if (k->k == JV_STR) put_json_str(c, b, k->s.p, k->s.n);
            else {
                jbuf kb = {0};
                jv_to_str(c, &kb, k);
                put_json_str(c, b, kb.p ? kb.p : "", kb.n);
            }
            jb_putz(c, b, ": ");
            jv_to_json(c, b, jv_get((jv *)v, k), indent, sort_keys, level + 1);
        }
        if (indent >= 0) newline_indent(c, b, indent, level);
        jb_putz(c, b, "}");
        return;
    }
    default: jinja_fail(c, 0, "tojson: cannot serialize a %s", jv_kind_name(v));
    }
}

/* ---- JSON input ---- */

typedef struct jparse {
    jctx *c;
    const char *s;
    size_t n, i;
    const char *what;
    int depth;
} jparse;

__attribute__((noreturn)) static void jp_fail(jparse *p, const char *msg) {
    jinja_fail(p->c, 0, "%s: invalid JSON at byte %zu: %s", p->what, p->i, msg);
}

static void jp_ws(jparse *p) {
    while (p->i < p->n && strchr(" \t\r\n", p->s[p->i])) p->i++;
}

static void put_utf8(jctx *c, jbuf *b, uint32_t cp) {
    char u[4];
    size_t k;
    if (cp < 0x80) u[0] = (char)cp, k = 1;
    else if (cp < 0x800) u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 63)), k = 2;
    else if (cp < 0x10000)
        u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 63)), u[2] = (char)(0x80 | (cp & 63)), k = 3;
    else
        u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 63)), u[2] = (char)(0x80 | ((cp >> 6) & 63)),
        u[3] = (char)(0x80 | (cp & 63)), k = 4;
    jb_put(c, b, u, k);
}

static uint32_t jp_hex4(jparse *p) {
    if (p->i + 4 > p->n) jp_fail(p, "short \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        char h = p->s[p->i++];
        v = v * 16 + (uint32_t)(h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                : h >= 'A' && h <= 'F' ? h - 'A' + 10 : (jp_fail(p, "bad hex digit"), 0));
    }
    return v;
}

static jv *jp_string(jparse *p) {
    jbuf b = {0};
    p->i++; /* opening quote */
    for (;;) {
        if (p->i >= p->n) jp_fail(p, "unterminated string");
        char ch = p->s[p->i++];
        if (ch == '"') break;
        if (ch != '\\') {
            jb_put(p->c, &b, &ch, 1);
            continue;
        }
        if (p->i >= p->n) jp_fail(p, "unterminated escape");
        char esc = p->s[p->i++];
        switch (esc) {
        case '"': case '\\': case '/': jb_put(p->c, &b, &esc, 1); break;
        case 'n': jb_putz(p->c, &b, "\n"); break;
        case 't': jb_putz(p->c, &b, "\t"); break;
        case 'r': jb_putz(p->c, &b, "\r"); break;
        case 'b': jb_putz(p->c, &b, "\b"); break;
        case 'f': jb_putz(p->c, &b, "\f"); break;
        case 'u': {
            uint32_t cp = jp_hex4(p);
            if (cp >= 0xD800 && cp < 0xDC00 && p->i + 6 <= p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
                p->i += 2;
                uint32_t lo = jp_hex4(p);
                if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else jp_fail(p, "unpaired surrogate");
            }
            put_utf8(p->c, &b, cp);
            break;
        }
        default: jp_fail(p, "unknown escape");
        }
    }
    return jv_str(p->c, b.p ? b.p : "", b.n);
}

static jv *jp_value(jparse *p) {
    jp_ws(p);
    if (p->i >= p->n) jp_fail(p, "unexpected end");
    if (++p->depth > 512) jp_fail(p, "nested too deeply");
    char ch = p->s[p->i];
    jv *v;
    if (ch == '{') {
        v = jv_dict(p->c);
        p->i++;
        jp_ws(p);
        if (p->i < p->n && p->s[p->i] == '}') p->i++;
        else
            for (;;) {
                jp_ws(p);
                if (p->i >= p->n || p->s[p->i] != '"') jp_fail(p, "expected a key string");
                jv *k = jp_string(p);
                jp_ws(p);
                if (p->i >= p->n || p->s[p->i++] != ':') jp_fail(p, "expected ':'");
                jv_set(p->c, v, k, jp_value(p));
                jp_ws(p);
                if (p->i < p->n && p->s[p->i] == ',') {
                    p->i++;
                    continue;
                }
                if (p->i < p->n && p->s[p->i] == '}') {
                    p->i++;
                    break;
                }
                jp_fail(p, "expected ',' or '}'");
            }
    } else if (ch == '[') {
        v = jv_list(p->c);
        p->i++;
        jp_ws(p);
        if (p->i < p->n && p->s[p->i] == ']') p->i++;
        else
            for (;;) {
                jv_push(p->c, v, jp_value(p));
                jp_ws(p);
                if (p->i < p->n && p->s[p->i] == ',') {
                    p->i++;
                    continue;
                }
                if (p->i < p->n && p->s[p->i] == ']') {
                    p->i++;
                    break;
                }
                jp_fail(p, "expected ',' or ']'");
            }
    } else if (ch == '"') {
        v = jp_string(p);
    } else if (!strncmp(p->s + p->i, "true", 4) && p->i + 4 <= p->n) {
        p->i += 4, v = jv_bool(true);
    } else if (!strncmp(p->s + p->i, "false", 5) && p->i + 5 <= p->n) {
        p->i += 5, v = jv_bool(false);
    } else if (!strncmp(p->s + p->i, "null", 4) && p->i + 4 <= p->n) {
        p->i += 4, v = jv_none();
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
        size_t st = p->i;
        bool fl = false;
        while (p->i < p->n && strchr("+-0123456789.eE", p->s[p->i])) fl |= strchr(".eE", p->s[p->i++]) != NULL;
        char tmp[64];
        size_t len = p->i - st < 63 ? p->i - st : 63;
        memcpy(tmp, p->s + st, len);
        tmp[len] = 0;
        char *end;
        if (fl) {
            double d = strtod(tmp, &end);
            v = jv_float(p->c, d);
        } else {
            long long x = strtoll(tmp, &end, 10);
            v = jv_int(p->c, x);
        }
        if (*end) jp_fail(p, "bad number");
    } else {
        jp_fail(p, "unexpected character");
    }
    p->depth--;
    return v;
}

jv *jv_from_json(jctx *c, const char *s, size_t n, const char *what) {
    jparse p = {c, s, n, 0, what, 0};
    jv *v = jp_value(&p);
    jp_ws(&p);
    if (p.i != n) jp_fail(&p, "trailing characters");
    return v;
}
