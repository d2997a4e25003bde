/* jinja_builtins: the filters, tests, methods and globals chat templates use, with jinja2's (and so
 * Python's) semantics: strings count code points, str.strip()/split() use Python's whitespace,
 * `unique`, `dictsort`, `sort`, `min`, `max` compare strings case-insensitively by default as jinja2
 * does. An unknown filter, test or method is an error naming it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat/jinja.h"

/* ---- argument helpers ---- */

static jv *arg(jargs *a, size_t pos, const char *kw) {
    for (size_t i = 0; i < a->nk; i++)
        if (kw && !strcmp(a->kw[i], kw)) return a->kwv[i];
    return pos < a->n ? a->pos[pos] : NULL;
}

static const jv *need_str(jctx *c, jv *v, const char *what, int line) {
    if (!v || v->k != JV_STR) jinja_fail(c, line, "%s: expected a string, found %s", what, v ? jv_kind_name(v) : "nothing");
    return v;
}

static jv *str_of(jctx *c, const jv *v) {
    if (v->k == JV_STR) return (jv *)v;
    jbuf b = {0};
    jv_to_str(c, &b, v);
    return jv_str(c, b.p ? b.p : "", b.n);
}

/* ---- Python string semantics ---- */

static uint32_t cp_at(const char *s, size_t n, size_t i, size_t *len) {
    unsigned char ch = (unsigned char)s[i];
    size_t k = ch < 0x80 ? 1 : ch < 0xE0 ? 2 : ch < 0xF0 ? 3 : 4;
    if (i + k > n) k = n - i;
    uint32_t cp = k == 1 ? ch : ch & (0x3F >> (k - 1));
    for (size_t j = 1; j < k; j++) cp = cp << 6 | ((unsigned char)s[i + j] & 0x3F);
    *len = k;
    return cp;
}

static bool py_space(uint32_t cp) {
    return (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

static bool in_chars(uint32_t cp, const jv *chars) {
    if (!chars) return py_space(cp);
    for (size_t i = 0; i < chars->s.n;) {
        size_t l;
        if (cp_at(chars->s.p, chars->s.n, i, &l) == cp) return true;
        i += l;
    }
    return false;
}

static jv *py_strip(jctx *c, const jv *s, const jv *chars, bool left, bool right) {
    size_t b = 0, e = s->s.n;
    while (left && b < e) {
        size_t l;
        if (!in_chars(cp_at(s->s.p, e, b, &l), chars)) break;
        b += l;
    }
    while (right && e > b) {
        size_t st = e - 1;
        while (st > b && ((unsigned char)s->s.p[st] & 0xC0) == 0x80) st--;
        size_t l;
        if (!in_chars(cp_at(s->s.p, e, st, &l), chars)) break;
        e = st;
    }
    return jv_str(c, s->s.p + b, e - b);
}

static jv *py_split(jctx *c, const jv *s, const jv *sep, int64_t maxsplit) {
    jv *out = jv_list(c);
    const char *p = s->s.p;
    size_t n = s->s.n, i = 0;
    if (!sep) { /* runs of whitespace, no empty strings */
        while (i < n) {
            size_t l;
            while (i < n && py_space(cp_at(p, n, i, &l))) i += l;
            if (i >= n) break;
            if (maxsplit >= 0 && (int64_t)out->l.n == maxsplit) {
                size_t e = n;
                while (e > i) {
                    size_t st = e - 1;
                    while (st > i && ((unsigned char)p[st] & 0xC0) == 0x80) st--;
                    if (!py_space(cp_at(p, n, st, &l))) break;
                    e = st;
                }
                jv_push(c, out, jv_str(c, p + i, e - i));
                break;
            }
            size_t st = i;
            while (i < n && !py_space(cp_at(p, n, i, &l))) i += l;
            jv_push(c, out, jv_str(c, p + st, i - st));
        }
        return out;
    }
    if (!sep->s.n) jinja_fail(c, 0, "split: empty separator");
    for (;;) {
        const char *hit = maxsplit >= 0 && (int64_t)out->l.n == maxsplit ? NULL : memmem(p + i, n - i, sep->s.p, sep->s.n);
        if (!hit) {
            jv_push(c, out, jv_str(c, p + i, n - i));
            return out;
        }
        jv_push(c, out, jv_str(c, p + i, (size_t)(hit - (p + i))));
        i = (size_t)(hit - p) + sep->s.n;
    }
}

static jv *py_case(jctx *c, const jv *s, int mode) { /* 0 lower, 1 upper, 2 capitalize, 3 title (ASCII) */
    jv *r = jv_str(c, s->s.p, s->s.n);
    char *p = (char *)r->s.p;
    bool word_start = true;
    for (size_t i = 0; i < r->s.n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (mode == 0) p[i] = (char)tolower(ch);
        else if (mode == 1) p[i] = (char)toupper(ch);
        else if (mode == 2) p[i] = (char)(i == 0 ? toupper(ch) : tolower(ch));
        else {
            p[i] = (char)(word_start ? toupper(ch) : tolower(ch));
            word_start = !isalnum(ch) && ch < 0x80;
        }
    }
    return r;
}

static jv *py_replace(jctx *c, const jv *s, const jv *a, const jv *b, int64_t count) {
    jbuf out = {0};
    size_t i = 0;
    int64_t done = 0;
    if (!a->s.n) { /* Python inserts the replacement between every character */
        jb_put(c, &out, b->s.p, b->s.n);
        for (size_t k = 0; k < s->s.n; k++) {
            jb_put(c, &out, s->s.p + k, 1);
            if (k + 1 == s->s.n || ((unsigned char)s->s.p[k + 1] & 0xC0) != 0x80) jb_put(c, &out, b->s.p, b->s.n);
        }
        return jv_str(c, out.p ? out.p : "", out.n);
    }
    for (;;) {
        const char *hit = count >= 0 && done == count ? NULL : memmem(s->s.p + i, s->s.n - i, a->s.p, a->s.n);
        if (!hit) break;
        jb_put(c, &out, s->s.p + i, (size_t)(hit - s->s.p) - i);
        jb_put(c, &out, b->s.p, b->s.n);
        i = (size_t)(hit - s->s.p) + a->s.n;
        done++;
    }
    jb_put(c, &out, s->s.p + i, s->s.n - i);
    return jv_str(c, out.p ? out.p : "", out.n);
}

static bool starts_or_ends(const jv *s, const jv *x, bool ends) {
    if (x->s.n > s->s.n) return false;
    return !memcmp(s->s.p + (ends ? s->s.n - x->s.n : 0), x->s.p, x->s.n);
}

/* ---- methods ---- */

static jv *dispatch_method(jctx *c, jv *fnv, jargs *a, int line);

static const char *const STR_METHODS[] = {"strip", "lstrip", "rstrip", "split", "startswith", "endswith", "upper",
                                          "lower", "title", "capitalize", "replace", "find", "count", "join",
                                          "format", "splitlines", "isdigit", NULL};
static const char *const DICT_METHODS[] = {"get", "items", "keys", "values", NULL};

jv *jinja_method(jctx *c, jv *self, const char *name, int line) {
    (void)line;
    const char *const *list = self->k == JV_STR ? STR_METHODS : self->k == JV_DICT && !self->ns ? DICT_METHODS : NULL;
    for (size_t i = 0; list && list[i]; i++)
        if (!strcmp(list[i], name)) return jv_func(c, dispatch_method, self, list[i]);
    return NULL;
}

static jv *str_format(jctx *c, const jv *fmt, jargs *a, int line) {
    jbuf out = {0};
    size_t auto_i = 0;
    for (size_t i = 0; i < fmt->s.n; i++) {
        char ch = fmt->s.p[i];
        if ((ch == '{' || ch == '}') && i + 1 < fmt->s.n && fmt->s.p[i + 1] == ch) {
            jb_put(c, &out, &ch, 1);
            i++;
            continue;
        }
        if (ch != '{') {
            jb_put(c, &out, &ch, 1);
            continue;
        }
        const char *end = memchr(fmt->s.p + i, '}', fmt->s.n - i);
        if (!end) jinja_fail(c, line, "format: unmatched '{'");
        size_t fl = (size_t)(end - (fmt->s.p + i + 1));
        char field[64];
        if (fl >= sizeof field || memchr(fmt->s.p + i + 1, ':', fl) || memchr(fmt->s.p + i + 1, '!', fl))
            jinja_fail(c, line, "format: only {}, {N} and {name} fields are supported");
        memcpy(field, fmt->s.p + i + 1, fl);
        field[fl] = 0;
        jv *v;
        if (!fl) v = arg(a, auto_i++, NULL);
        else if (isdigit((unsigned char)field[0])) v = arg(a, (size_t)atoi(field), NULL);
        else v = arg(a, (size_t)-1, field);
        if (!v) jinja_fail(c, line, "format: no argument for {%s}", field);
        jv_to_str(c, &out, v);
        i += fl + 1;
    }
    return jv_str(c, out.p ? out.p : "", out.n);
}

static jv *dispatch_method(jctx *c, jv *fnv, jargs *a, int line) {
    jv *self = fnv->fn.self;
    const char *m = fnv->fn.name;
    jv *x = arg(a, 0, NULL), *y = arg(a, 1, NULL), *z = arg(a, 2, NULL);
    if (self->k == JV_DICT) {
        if (!strcmp(m, "get")) {
            jv *r = x ? jv_get(self, x) : NULL;
            return r ? r : y ? y : jv_none();
        }
        jv *out = jv_list(c);
        for (size_t i = 0; i < self->d.n; i++) {
            if (!strcmp(m, "keys")) jv_push(c, out, self->d.key[i]);
            else if (!strcmp(m, "values")) jv_push(c, out, self->d.val[i]);
            else {
                jv *pair = jv_list(c);
                jv_push(c, pair, self->d.key[i]);
                jv_push(c, pair, self->d.val[i]);
                jv_push(c, out, pair);
            }
        }
        return out;
    }
    if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip")) {
        const jv *chars = x && x->k != JV_NONE ? need_str(c, x, m, line) : NULL;
        return py_strip(c, self, chars, m[0] != 'r', m[0] != 'l');
    }
    if (!strcmp(m, "split")) {
        jv *sep = arg(a, 0, "sep"), *mx = arg(a, 1, "maxsplit");
        return py_split(c, self, sep && sep->k != JV_NONE ? need_str(c, sep, "split", line) : NULL,
                        mx ? mx->i : -1);
    }
    if (!strcmp(m, "splitlines")) return py_split(c, py_strip(c, self, jv_strz(c, "\n"), false, true), jv_strz(c, "\n"), -1);
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        bool ends = m[0] == 'e';
        if (x && x->k == JV_LIST) {
            for (size_t i = 0; i < x->l.n; i++)
                if (starts_or_ends(self, need_str(c, x->l.v[i], m, line), ends)) return jv_bool(true);
            return jv_bool(false);
        }
        return jv_bool(starts_or_ends(self, need_str(c, x, m, line), ends));
    }
    if (!strcmp(m, "upper")) return py_case(c, self, 1);
    if (!strcmp(m, "lower")) return py_case(c, self, 0);
    if (!strcmp(m, "capitalize")) return py_case(c, self, 2);
    if (!strcmp(m, "title")) return py_case(c, self, 3);
    if (!strcmp(m, "replace"))
        return py_replace(c, self, need_str(c, x, m, line), need_str(c, y, m, line), z ? z->i : -1);
    if (!strcmp(m, "find") || !strcmp(m, "count")) {
        need_str(c, x, m, line);
        const char *hit = memmem(self->s.p, self->s.n, x->s.p, x->s.n);
        if (m[0] == 'f') {
            if (!hit) return jv_int(c, -1);
            size_t k = 0;
            for (const char *p = self->s.p; p < hit; p++) k += ((unsigned char)*p & 0xC0) != 0x80;
            return jv_int(c, (int64_t)k);
        }
        int64_t k = 0;
        for (size_t i = 0; x->s.n && (hit = memmem(self->s.p + i, self->s.n - i, x->s.p, x->s.n));)
            k++, i = (size_t)(hit - self->s.p) + x->s.n;
        return jv_int(c, k);
    }
    if (!strcmp(m, "join")) {
        jbuf out = {0};
        jv *items = x;
        if (!items || items->k != JV_LIST) jinja_fail(c, line, "join: expected a list");
        for (size_t i = 0; i < items->l.n; i++) {
            if (i) jb_put(c, &out, self->s.p, self->s.n);
            jv_to_str(c, &out, need_str(c, items->l.v[i], "join", line));
        }
        return jv_str(c, out.p ? out.p : "", out.n);
    }
    if (!strcmp(m, "format")) return str_format(c, self, a, line);
    if (!strcmp(m, "isdigit")) {
        bool all = self->s.n > 0;
        for (size_t i = 0; i < self->s.n; i++) all &= isdigit((unsigned char)self->s.p[i]) != 0;
        return jv_bool(all);
    }
    jinja_fail(c, line, "unknown method '%s' of a %s", m, jv_kind_name(self));
}

/* ---- tests ---- */

static bool is_integer(const jv *v) { return v->k == JV_INT; }

bool jinja_test(jctx *c, const char *name, jv *v, jargs *a, int line) {
    jv *x = arg(a, 0, NULL);
    if (!strcmp(name, "defined")) return v->k != JV_UNDEF;
    if (!strcmp(name, "undefined")) return v->k == JV_UNDEF;
    if (!strcmp(name, "none")) return v->k == JV_NONE;
    if (!strcmp(name, "string")) return v->k == JV_STR;
    if (!strcmp(name, "mapping")) return v->k == JV_DICT && !v->ns;
    if (!strcmp(name, "iterable")) return v->k == JV_STR || v->k == JV_LIST || (v->k == JV_DICT && !v->ns) || v->k == JV_UNDEF;
    if (!strcmp(name, "sequence")) return v->k == JV_STR || v->k == JV_LIST || (v->k == JV_DICT && !v->ns) || v->k == JV_UNDEF;
    if (!strcmp(name, "number")) return v->k == JV_INT || v->k == JV_FLOAT || v->k == JV_BOOL;
    if (!strcmp(name, "integer")) return is_integer(v);
    if (!strcmp(name, "float")) return v->k == JV_FLOAT;
    if (!strcmp(name, "boolean")) return v->k == JV_BOOL;
    if (!strcmp(name, "true")) return v->k == JV_BOOL && v->b;
    if (!strcmp(name, "false")) return v->k == JV_BOOL && !v->b;
    if (!strcmp(name, "callable")) return v->k == JV_FUNC || v->k == JV_MACRO;
    if (!strcmp(name, "sameas")) return x && (v == x || (v->k == x->k && (v->k == JV_NONE || v->k == JV_UNDEF || (v->k == JV_BOOL && v->b == x->b))));
    if (!strcmp(name, "escaped")) return false;
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        if (v->k != JV_STR) return false;
        jv *conv = py_case(c, v, name[0] == 'l' ? 0 : 1);
        return jv_eq(conv, v);
    }
    if (!strcmp(name, "odd") || !strcmp(name, "even")) {
        if (!is_integer(v)) jinja_fail(c, line, "test '%s' needs an integer", name);
        return (v->i % 2 != 0) == (name[0] == 'o');
    }
    if (!strcmp(name, "divisibleby")) {
        if (!x || !is_integer(v) || !is_integer(x) || x->i == 0) jinja_fail(c, line, "divisibleby needs integers");
        return v->i % x->i == 0;
    }
    if (!x) jinja_fail(c, line, "unknown test '%s' (or it needs an argument)", name);
    if (!strcmp(name, "eq") || !strcmp(name, "equalto") || !strcmp(name, "==")) return jv_eq(v, x);
    if (!strcmp(name, "ne") || !strcmp(name, "!=")) return !jv_eq(v, x);
    if (!strcmp(name, "lt") || !strcmp(name, "lessthan")) return jv_cmp(c, v, x, line) < 0;
    if (!strcmp(name, "gt") || !strcmp(name, "greaterthan")) return jv_cmp(c, v, x, line) > 0;
    if (!strcmp(name, "le")) return jv_cmp(c, v, x, line) <= 0;
    if (!strcmp(name, "ge")) return jv_cmp(c, v, x, line) >= 0;
    if (!strcmp(name, "in")) {
        if (x->k == JV_STR) return v->k == JV_STR && memmem(x->s.p, x->s.n, v->s.p, v->s.n);
        if (x->k == JV_LIST) {
            for (size_t i = 0; i < x->l.n; i++)
                if (jv_eq(x->l.v[i], v)) return true;
            return false;
        }
        if (x->k == JV_DICT) return jv_get(x, v) != NULL;
        return false;
    }
    jinja_fail(c, line, "unknown test '%s'", name);
}

/* ---- filters ---- */

static jv *as_list(jctx *c, jv *v, int line) {
    jv *l = jv_list(c);
    if (v->k == JV_LIST) return v;
    if (v->k == JV_UNDEF) return l;
    if (v->k == JV_DICT) {
        for (size_t i = 0; i < v->d.n; i++) jv_push(c, l, v->d.key[i]);
        return l;
    }
    if (v->k == JV_STR) {
        for (size_t i = 0; i < v->s.n;) {
            size_t len;
            cp_at(v->s.p, v->s.n, i, &len);
            jv_push(c, l, jv_str(c, v->s.p + i, len));
            i += len;
        }
        return l;
    }
    jinja_fail(c, line, "expected a sequence, found %s", jv_kind_name(v));
}

/* jinja2's attribute lookup for filters (attribute="a.b" walks dots; missing is undefined) */
static jv *attr_path(jctx *c, jv *v, const jv *path) {
    const char *p = path->s.p;
    size_t n = path->s.n;
    while (n) {
        const char *dot = memchr(p, '.', n);
        size_t len = dot ? (size_t)(dot - p) : n;
        char key[128];
        if (len >= sizeof key) return jv_undef();
        memcpy(key, p, len);
        key[len] = 0;
        jv *r = NULL;
        if (v->k == JV_DICT) r = jv_gets(v, key);
        else if (v->k == JV_LIST && isdigit((unsigned char)key[0])) {
            size_t i = (size_t)atoi(key);
            r = i < v->l.n ? v->l.v[i] : NULL;
        }
        v = r ? r : jv_undef();
        if (!dot) break;
        p = dot + 1;
        n -= len + 1;
    }
    (void)c;
    return v;
}

/* case-insensitive ordering for sort/unique/dictsort/min/max, as jinja2's ignore_case */
static int cmp_ci(jctx *c, const jv *a, const jv *b, bool case_sensitive, int line) {
    if (!case_sensitive && a->k == JV_STR && b->k == JV_STR) {
        jv *la = py_case(c, a, 0), *lb = py_case(c, b, 0);
        return jv_cmp(c, la, lb, line);
    }
    return jv_cmp(c, a, b, line);
}

typedef struct sort_ctx {
    jctx *c;
    jv **keys;
    bool cs;
    int line;
} sort_ctx;

/* stable merge sort of items by keys (Python's sort is stable) */
static void sort_items(sort_ctx *sx, jv **items, jv **keys, size_t n, bool reverse) {
    if (n < 2) return;
    size_t h = n / 2;
    sort_items(sx, items, keys, h, reverse);
    sort_items(sx, items + h, keys + h, n - h, reverse);
    jv **ti = jc_alloc(sx->c, n * sizeof *ti), **tk = jc_alloc(sx->c, n * sizeof *tk);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int r = cmp_ci(sx->c, keys[j], keys[i], sx->cs, sx->line);
        bool take_right = reverse ? r > 0 : r < 0;
        if (take_right) ti[k] = items[j], tk[k++] = keys[j++];
        else ti[k] = items[i], tk[k++] = keys[i++];
    }
    while (i < h) ti[k] = items[i], tk[k++] = keys[i++];
    while (j < n) ti[k] = items[j], tk[k++] = keys[j++];
    memcpy(items, ti, n * sizeof *ti);
    memcpy(keys, tk, n * sizeof *tk);
}

static jv *filter_select(jctx *c, jscope *s, jv *v, jargs *a, bool by_attr, bool keep, int line) {
    (void)s;
    jv *items = jv_truthy(v) ? as_list(c, v, line) : jv_list(c), *out = jv_list(c); /* jinja2: `if value:` */
    out->gen = true;
    size_t first = by_attr ? 1 : 0;
    jv *attr = by_attr ? arg(a, 0, NULL) : NULL;
    jv *test = arg(a, first, NULL);
    jargs ta = {0};
    if (a->n > first + 1) ta.pos = a->pos + first + 1, ta.n = a->n - first - 1;
    for (size_t i = 0; i < items->l.n; i++) {
        jv *x = items->l.v[i];
        jv *subject = by_attr ? attr_path(c, x, need_str(c, attr, "selectattr", line)) : x;
        bool r = test ? jinja_test(c, need_str(c, test, "select test", line)->s.p, subject, &ta, line) : jv_truthy(subject);
        if (r == keep) jv_push(c, out, x);
    }
    return out;
}

static void indent_text(jctx *c, jbuf *out, const jv *s, const char *pad, bool first, bool blank) {
    size_t i = 0;
    bool line_start = true, is_first = true;
    while (i < s->s.n) {
        const char *nl = memchr(s->s.p + i, '\n', s->s.n - i);
        size_t e = nl ? (size_t)(nl - s->s.p) : s->s.n;
        bool empty = e == i;
        if (line_start && (is_first ? first : true) && (blank || !empty)) jb_putz(c, out, pad);
        jb_put(c, out, s->s.p + i, e - i);
        if (nl) jb_putz(c, out, "\n");
        i = nl ? e + 1 : e;
        is_first = false;
        line_start = true;
    }
}

jv *jinja_filter(jctx *c, jscope *s, const char *name, jv *v, jargs *a, int line) {
    jv *x = arg(a, 0, NULL);
    if (!strcmp(name, "tojson")) {
        jv *ind = arg(a, 0, "indent"), *sk = arg(a, 3, "sort_keys"), *sep = arg(a, 2, "separators");
        if (sep && sep->k != JV_NONE) jinja_fail(c, line, "tojson: custom separators are not supported");
        jbuf b = {0};
        jv_to_json(c, &b, v, ind && ind->k == JV_INT ? (int)ind->i : -1, sk && jv_truthy(sk), 0);
        return jv_str(c, b.p ? b.p : "", b.n);
    }
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        if (v->k == JV_STR) {
            size_t k = 0;
            for (size_t i = 0; i < v->s.n; i++) k += ((unsigned char)v->s.p[i] & 0xC0) != 0x80;
            return jv_int(c, (int64_t)k);
        }
        if (v->k == JV_LIST && v->gen) jinja_fail(c, line, "object of type 'generator' has no len() (add |list)");
        if (v->k == JV_LIST) return jv_int(c, (int64_t)v->l.n);
        if (v->k == JV_DICT) return jv_int(c, (int64_t)v->d.n);
        if (v->k == JV_UNDEF) return jv_int(c, 0);
        jinja_fail(c, line, "length of a %s", jv_kind_name(v));
    }
    if (!strcmp(name, "trim")) {
        jv *chars = arg(a, 0, "chars");
        return py_strip(c, str_of(c, v), chars && chars->k != JV_NONE ? chars : NULL, true, true);
    }
    if (!strcmp(name, "string")) return str_of(c, v);
    if (!strcmp(name, "safe")) {
        if (v->k != JV_STR || v->markup) return v->k == JV_STR ? v : str_of(c, v);
        jv *r = jv_str(c, v->s.p, v->s.n);
        r->markup = true;
        return r;
    }
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        jv *def = arg(a, 0, "default_value"), *boolean = arg(a, 1, "boolean");
        bool use = boolean && jv_truthy(boolean) ? !jv_truthy(v) : v->k == JV_UNDEF;
        return use ? (def ? def : jv_strz(c, "")) : v;
    }
    if (!strcmp(name, "upper")) return py_case(c, str_of(c, v), 1);
    if (!strcmp(name, "lower")) return py_case(c, str_of(c, v), 0);
    if (!strcmp(name, "capitalize")) return py_case(c, str_of(c, v), 2);
    if (!strcmp(name, "title")) return py_case(c, str_of(c, v), 3);
    if (!strcmp(name, "replace")) {
        jv *cnt = arg(a, 2, "count");
        return py_replace(c, str_of(c, v), need_str(c, x, "replace", line), need_str(c, arg(a, 1, NULL), "replace", line),
                          cnt && cnt->k == JV_INT ? cnt->i : -1);
    }
    if (!strcmp(name, "join")) {
        jv *items = as_list(c, v, line), *attr = arg(a, 1, "attribute"), *sep = arg(a, 0, "d");
        jbuf b = {0};
        for (size_t i = 0; i < items->l.n; i++) {
            if (i && sep) jv_to_str(c, &b, sep);
            jv_to_str(c, &b, attr ? attr_path(c, items->l.v[i], attr) : items->l.v[i]);
        }
        return jv_str(c, b.p ? b.p : "", b.n);
    }
    if (!strcmp(name, "items")) {
        jv *out = jv_list(c);
        if (v->k == JV_UNDEF) return out;
        if (v->k != JV_DICT) jinja_fail(c, line, "items of a %s", jv_kind_name(v));
        for (size_t i = 0; i < v->d.n; i++) {
            jv *pair = jv_list(c);
            jv_push(c, pair, v->d.key[i]);
            jv_push(c, pair, v->d.val[i]);
            jv_push(c, out, pair);
        }
        return out;
    }
    if (!strcmp(name, "list")) {
        jv *l = as_list(c, v, line), *out = jv_list(c);
        for (size_t i = 0; i < l->l.n; i++) jv_push(c, out, l->l.v[i]);
        return out;
    }
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        if (name[0] == 'l' && v->gen) jinja_fail(c, line, "last: 'generator' object is not reversible (add |list)");
        jv *l = as_list(c, v, line);
        if (!l->l.n) return jv_undef();
        return l->l.v[name[0] == 'f' ? 0 : l->l.n - 1];
    }
    if (!strcmp(name, "reverse")) {
        if (v->k == JV_STR) {
            jv *l = as_list(c, v, line);
            jbuf b = {0};
            for (size_t i = l->l.n; i-- > 0;) jb_put(c, &b, l->l.v[i]->s.p, l->l.v[i]->s.n);
            return jv_str(c, b.p ? b.p : "", b.n);
        }
        jv *l = as_list(c, v, line), *out = jv_list(c);
        for (size_t i = l->l.n; i-- > 0;) jv_push(c, out, l->l.v[i]);
        return out;
    }
    if (!strcmp(name, "selectattr")) return filter_select(c, s, v, a, true, true, line);
    if (!strcmp(name, "rejectattr")) return filter_select(c, s, v, a, true, false, line);
    if (!strcmp(name, "select")) return filter_select(c, s, v, a, false, true, line);
    if (!strcmp(name, "reject")) return filter_select(c, s, v, a, false, false, line);
    if (!strcmp(name, "map")) {
        jv *items = jv_truthy(v) ? as_list(c, v, line) : jv_list(c), *out = jv_list(c);
        jv *attr = arg(a, (size_t)-1, "attribute");
        out->gen = true;
        jv *def = arg(a, (size_t)-1, "default");
        for (size_t i = 0; i < items->l.n; i++) {
            jv *r;
            if (attr) {
                r = attr_path(c, items->l.v[i], need_str(c, attr, "map", line));
                if (r->k == JV_UNDEF && def) r = def;
            } else {
                jargs rest = {0};
                if (a->n > 1) rest.pos = a->pos + 1, rest.n = a->n - 1;
                r = jinja_filter(c, s, need_str(c, x, "map filter name", line)->s.p, items->l.v[i], &rest, line);
            }
            jv_push(c, out, r);
        }
        return out;
    }
    if (!strcmp(name, "unique") || !strcmp(name, "sort") || !strcmp(name, "dictsort") || !strcmp(name, "min") ||
        !strcmp(name, "max")) {
        jv *cs_v = arg(a, (size_t)-1, "case_sensitive"), *attr = arg(a, (size_t)-1, "attribute");
        bool cs = cs_v && jv_truthy(cs_v);
        jv *items;
        if (!strcmp(name, "dictsort")) {
            if (v->k != JV_DICT) jinja_fail(c, line, "dictsort of a %s", jv_kind_name(v));
            jargs none = {0};
            items = jinja_filter(c, s, "items", v, &none, line);
            cs = arg(a, 0, "case_sensitive") && jv_truthy(arg(a, 0, "case_sensitive"));
        } else {
            items = as_list(c, v, line);
        }
        size_t n = items->l.n;
        jv **it = jc_alloc(c, (n + 1) * sizeof *it), **keys = jc_alloc(c, (n + 1) * sizeof *keys);
        for (size_t i = 0; i < n; i++) {
            it[i] = items->l.v[i];
            keys[i] = !strcmp(name, "dictsort") ? it[i]->l.v[0] : attr ? attr_path(c, it[i], attr) : it[i];
        }
        if (!strcmp(name, "unique")) {
            jv *out = jv_list(c);
            for (size_t i = 0; i < n; i++) {
                bool seen = false;
                for (size_t j = 0; j < out->l.n && !seen; j++) {
                    jv *k2 = attr ? attr_path(c, out->l.v[j], attr) : out->l.v[j];
                    seen = (keys[i]->k == JV_STR && k2->k == JV_STR) ? cmp_ci(c, keys[i], k2, cs, line) == 0 : jv_eq(keys[i], k2);
                }
                if (!seen) jv_push(c, out, it[i]);
            }
            return out;
        }
        jv *rev = arg(a, (size_t)-1, "reverse");
        if (!strcmp(name, "sort") && a->n) rev = a->pos[0];
        sort_ctx sx = {c, keys, cs, line};
        sort_items(&sx, it, keys, n, rev && jv_truthy(rev));
        if (!strcmp(name, "min") || !strcmp(name, "max")) {
            if (!n) return jv_undef();
            return name[1] == 'i' ? it[0] : it[n - 1];
        }
        jv *out = jv_list(c);
        for (size_t i = 0; i < n; i++) jv_push(c, out, it[i]);
        return out;
    }
    if (!strcmp(name, "indent")) {
        jv *w = arg(a, 0, "width"), *first = arg(a, 1, "first"), *blank = arg(a, 2, "blank");
        char pad[256];
        if (w && w->k == JV_STR) snprintf(pad, sizeof pad, "%.*s", (int)w->s.n, w->s.p);
        else {
            int64_t k = w ? w->i : 4;
            if (k < 0 || k > 200) k = 4;
            memset(pad, ' ', (size_t)k);
            pad[k] = 0;
        }
        jbuf b = {0};
        indent_text(c, &b, str_of(c, v), pad, first && jv_truthy(first), blank && jv_truthy(blank));
        return jv_str(c, b.p ? b.p : "", b.n);
    }
    if (!strcmp(name, "int")) {
        if (v->k == JV_INT) return v;
        if (v->k == JV_FLOAT) return jv_int(c, (int64_t)v->f);
        if (v->k == JV_BOOL) return jv_int(c, v->b);
        if (v->k == JV_STR) {
            char *end;
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%.*s", (int)(v->s.n < 63 ? v->s.n : 63), v->s.p);
            long long r = strtoll(tmp, &end, 10);
            if (end != tmp && !*end) return jv_int(c, r);
        }
        return x ? x : jv_int(c, 0);
    }
    if (!strcmp(name, "float")) {
        if (v->k == JV_FLOAT) return v;
        if (v->k == JV_INT) return jv_float(c, (double)v->i);
        return x ? x : jv_float(c, 0);
    }
    if (!strcmp(name, "abs")) {
        if (v->k == JV_INT) return jv_int(c, v->i < 0 ? -v->i : v->i);
        if (v->k == JV_FLOAT) return jv_float(c, v->f < 0 ? -v->f : v->f);
        jinja_fail(c, line, "abs of a %s", jv_kind_name(v));
    }
    if (!strcmp(name, "e") || !strcmp(name, "escape")) return jinja_escape(c, v);
    if (!strcmp(name, "wordcount")) {
        jv *words = py_split(c, str_of(c, v), NULL, -1);
        return jv_int(c, (int64_t)words->l.n);
    }
    jinja_fail(c, line, "unsupported filter '%s'", name);
}

jv *jinja_escape(jctx *c, jv *v) {
    if (v->k == JV_STR && v->markup) return v;
    jv *sv = str_of(c, v);
    jbuf b = {0};
    for (size_t i = 0; i < sv->s.n; i++) {
        char ch = sv->s.p[i];
        const char *r = ch == '&' ? "&amp;" : ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '"' ? "&#34;"
                      : ch == '\'' ? "&#39;" : NULL;
        if (r) jb_putz(c, &b, r);
        else jb_put(c, &b, &ch, 1);
    }
    jv *out = jv_str(c, b.p ? b.p : "", b.n);
    out->markup = true;
    return out;
}

/* ---- globals ---- */

static jv *g_raise(jctx *c, jv *fn, jargs *a, int line) {
    (void)fn;
    jv *m = arg(a, 0, NULL);
    jbuf b = {0};
    if (m) jv_to_str(c, &b, m);
    jinja_fail(c, line, "raise_exception: %s", b.p ? b.p : "");
}

static jv *g_strftime(jctx *c, jv *fn, jargs *a, int line) {
    (void)fn;
    const jv *f = need_str(c, arg(a, 0, NULL), "strftime_now", line);
    char out[256];
    time_t now = c->now ? (time_t)c->now : time(NULL);
    struct tm tm;
    if (c->now) gmtime_r(&now, &tm); /* a fixed time (tests) is taken as UTC, to be machine-independent */
    else localtime_r(&now, &tm);
    size_t n = strftime(out, sizeof out, f->s.p, &tm);
    return jv_str(c, out, n);
}

static jv *g_namespace(jctx *c, jv *fn, jargs *a, int line) {
    (void)fn;
    jv *ns = jv_dict(c);
    ns->ns = !strcmp(fn->fn.name, "namespace");
    for (size_t i = 0; i < a->n; i++) {
        jv *d = a->pos[i];
        if (d->k != JV_DICT) jinja_fail(c, line, "%s(): positional arguments must be mappings", fn->fn.name);
        for (size_t k = 0; k < d->d.n; k++) jv_set(c, ns, d->d.key[k], d->d.val[k]);
    }
    for (size_t i = 0; i < a->nk; i++) jv_set(c, ns, jv_strz(c, a->kw[i]), a->kwv[i]);
    return ns;
}

static jv *g_range(jctx *c, jv *fn, jargs *a, int line) {
    (void)fn;
    int64_t lo = 0, hi, st = 1;
    if (a->n == 1) hi = a->pos[0]->i;
    else if (a->n >= 2) lo = a->pos[0]->i, hi = a->pos[1]->i, st = a->n > 2 ? a->pos[2]->i : 1;
    else jinja_fail(c, line, "range() needs 1 to 3 integers");
    if (st == 0) jinja_fail(c, line, "range() step cannot be zero");
    jv *l = jv_list(c);
    for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) {
        if (l->l.n >= 1000000) jinja_fail(c, line, "range() larger than 1000000 items");
        jv_push(c, l, jv_int(c, i));
    }
    return l;
}

void jinja_add_globals(jctx *c, jscope *g) {
    jscope_set(c, g, "raise_exception", jv_func(c, g_raise, NULL, "raise_exception"));
    jscope_set(c, g, "strftime_now", jv_func(c, g_strftime, NULL, "strftime_now"));
    jscope_set(c, g, "namespace", jv_func(c, g_namespace, NULL, "namespace"));
    jscope_set(c, g, "dict", jv_func(c, g_namespace, NULL, "dict"));
    jscope_set(c, g, "range", jv_func(c, g_range, NULL, "range"));
}
