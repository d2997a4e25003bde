/* jinja_parse: tokens -> tree, by recursive descent with jinja2's grammar and precedence:
 *   expr    := or ["if" or ["else" expr]]
 *   or      := and ("or" and)*          and := not ("and" not)*       not := "not" not | compare
 *   compare := math1 (("=="|"!="|"<"|">"|"<="|">="|"in"|"not in") math1)*
 *   math1   := concat (("+"|"-") concat)*   concat := math2 ("~" math2)*
 *   math2   := pow (("*"|"/"|"//"|"%") pow)*   pow := unary ("**" unary)*
 *   unary   := ("-"|"+") unary | primary postfix* filter*      (filters: "|" name args, "is" ["not"] test)
 * Statements: if/elif/else, for (targets, "if" filter, else), set (name, ns.attr, tuple, block form),
 * macro, break/continue, filter blocks, generation (rendered as its body). Anything else (extends,
 * include, import, call, raw, with, do) is refused naming the construct and line. */
#include <string.h>

#include "chat/jinja.h"

typedef struct parser {
    jctx *c;
    jtok *t;
    size_t n, i;
} parser;

static jtok *cur(parser *P) { return &P->t[P->i]; }
static bool is_op(parser *P, const char *op) {
    jtok *t = cur(P);
    return t->k == JT_OP && t->n == strlen(op) && !memcmp(t->p, op, t->n);
}
static bool is_name(parser *P, const char *nm) {
    jtok *t = cur(P);
    return t->k == JT_NAME && t->n == strlen(nm) && !memcmp(t->p, nm, t->n);
}
static void expect_op(parser *P, const char *op) {
    if (!is_op(P, op)) jinja_fail(P->c, cur(P)->line, "expected '%s'", op);
    P->i++;
}
static const char *take_name(parser *P) {
    jtok *t = cur(P);
    if (t->k != JT_NAME) jinja_fail(P->c, t->line, "expected a name");
    char *s = jc_alloc(P->c, t->n + 1);
    memcpy(s, t->p, t->n);
    P->i++;
    return s;
}

static jnode *node(parser *P, enum jnode_kind k) {
    jnode *n = jc_alloc(P->c, sizeof *n);
    n->k = k;
    n->line = cur(P)->line;
    return n;
}

static void add_kid(parser *P, jnode *parent, jnode *kid) {
    if ((parent->n_kids & (parent->n_kids - 1)) == 0) { /* grow at powers of two */
        size_t cap = parent->n_kids ? parent->n_kids * 2 : 1;
        jnode **nk = jc_alloc(P->c, cap * sizeof *nk);
        if (parent->n_kids) memcpy(nk, parent->kids, parent->n_kids * sizeof *nk);
        parent->kids = nk;
    }
    parent->kids[parent->n_kids++] = kid;
}

static void add_kw(parser *P, jnode *nd, const char *name, jnode *val) {
    const char **kw = jc_alloc(P->c, (nd->n_kw + 1) * sizeof *kw);
    jnode **kv = jc_alloc(P->c, (nd->n_kw + 1) * sizeof *kv);
    if (nd->n_kw) memcpy(kw, nd->kw, nd->n_kw * sizeof *kw), memcpy(kv, nd->kw_vals, nd->n_kw * sizeof *kv);
    kw[nd->n_kw] = name, kv[nd->n_kw] = val;
    nd->kw = kw, nd->kw_vals = kv, nd->n_kw++;
}

static jnode *parse_expr(parser *P);
static jnode *parse_or(parser *P);
static jnode *parse_unary(parser *P, bool with_filter);

/* "(" args ")" into nd's positional and keyword lists */
static void parse_call_args(parser *P, jnode *nd) {
    expect_op(P, "(");
    while (!is_op(P, ")")) {
        if (cur(P)->k == JT_NAME && P->t[P->i + 1].k == JT_OP && P->t[P->i + 1].n == 1 && P->t[P->i + 1].p[0] == '=') {
            const char *nm = take_name(P);
            P->i++;
            add_kw(P, nd, nm, parse_expr(P));
        } else {
            if (nd->n_kw) jinja_fail(P->c, cur(P)->line, "positional argument after a keyword argument");
            add_kid(P, nd, parse_expr(P));
        }
        if (!is_op(P, ",")) break;
        P->i++;
    }
    expect_op(P, ")");
}

static jnode *parse_primary(parser *P) {
    jtok *t = cur(P);
    jnode *n;
    if (t->k == JT_STR) {
        jbuf b = {0};
        while (cur(P)->k == JT_STR) jb_put(P->c, &b, cur(P)->p, cur(P)->n), P->i++; /* "a" "b" concatenates */
        n = node(P, JN_LIT);
        n->lit = jv_str(P->c, b.p ? b.p : "", b.n);
        return n;
    }
    if (t->k == JT_INT || t->k == JT_FLOAT) {
        n = node(P, JN_LIT);
        n->lit = t->k == JT_INT ? jv_int(P->c, t->i) : jv_float(P->c, t->f);
        P->i++;
        return n;
    }
    if (t->k == JT_NAME) {
        const char *nm = take_name(P);
        n = node(P, JN_LIT);
        if (!strcmp(nm, "true") || !strcmp(nm, "True")) n->lit = jv_bool(true);
        else if (!strcmp(nm, "false") || !strcmp(nm, "False")) n->lit = jv_bool(false);
        else if (!strcmp(nm, "none") || !strcmp(nm, "None")) n->lit = jv_none();
        else n->k = JN_NAME, n->name = nm;
        return n;
    }
    if (is_op(P, "(")) {
        P->i++;
        if (is_op(P, ")")) {
            P->i++;
            return node(P, JN_TUPLE);
        }
        jnode *e = parse_expr(P);
        if (is_op(P, ",")) {
            n = node(P, JN_TUPLE);
            add_kid(P, n, e);
            while (is_op(P, ",")) {
                P->i++;
                if (is_op(P, ")")) break;
                add_kid(P, n, parse_expr(P));
            }
            e = n;
        }
        expect_op(P, ")");
        return e;
    }
    if (is_op(P, "[")) {
        P->i++;
        n = node(P, JN_LIST);
        while (!is_op(P, "]")) {
            add_kid(P, n, parse_expr(P));
            if (!is_op(P, ",")) break;
            P->i++;
        }
        expect_op(P, "]");
        return n;
    }
    if (is_op(P, "{")) {
        P->i++;
        n = node(P, JN_DICT);
        while (!is_op(P, "}")) {
            add_kid(P, n, parse_expr(P));
            expect_op(P, ":");
            add_kid(P, n, parse_expr(P));
            if (!is_op(P, ",")) break;
            P->i++;
        }
        expect_op(P, "}");
        return n;
    }
    jinja_fail(P->c, t->line, "unexpected %s in an expression",
               t->k == JT_VAR_END || t->k == JT_BLOCK_END ? "end of tag" : t->k == JT_EOF ? "end of template" : "token");
}

static jnode *parse_postfix(parser *P, jnode *e) {
    for (;;) {
        if (is_op(P, ".")) {
            P->i++;
            jnode *n = node(P, JN_ATTR);
            n->a = e;
            if (cur(P)->k == JT_INT) { /* x.0 is x[0] */
                n->k = JN_INDEX;
                n->b = node(P, JN_LIT);
                n->b->lit = jv_int(P->c, cur(P)->i);
                P->i++;
            } else {
                n->name = take_name(P);
            }
            e = n;
        } else if (is_op(P, "[")) {
            P->i++;
            jnode *parts[3] = {NULL, NULL, NULL};
            int np = 0;
            bool slice = false;
            for (;;) {
                if (!is_op(P, ":") && !is_op(P, "]")) parts[np] = parse_expr(P);
                if (is_op(P, ":") && np < 2) {
                    slice = true;
                    np++;
                    P->i++;
                    continue;
                }
                break;
            }
            expect_op(P, "]");
            jnode *n = node(P, slice ? JN_SLICE : JN_INDEX);
            n->a = e;
            if (slice) n->b = parts[0], n->c = parts[1], n->d = parts[2];
            else n->b = parts[0];
            if (!slice && !n->b) jinja_fail(P->c, n->line, "empty subscript");
            e = n;
        } else if (is_op(P, "(")) {
            jnode *n = node(P, JN_CALL);
            n->a = e;
            parse_call_args(P, n);
            e = n;
        } else {
            return e;
        }
    }
}

static jnode *parse_filters(parser *P, jnode *e) {
    for (;;) {
        if (is_op(P, "|")) {
            P->i++;
            jnode *n = node(P, JN_FILTER);
            n->a = e;
            n->name = take_name(P);
            if (is_op(P, "(")) parse_call_args(P, n);
            e = n;
        } else if (is_name(P, "is")) {
            P->i++;
            jnode *n = node(P, JN_TEST);
            n->a = e;
            if (is_name(P, "not")) n->negate = true, P->i++;
            n->name = take_name(P);
            jtok *t = cur(P);
            if (is_op(P, "(")) {
                parse_call_args(P, n);
            } else if ((t->k == JT_NAME || t->k == JT_STR || t->k == JT_INT || t->k == JT_FLOAT || is_op(P, "[") ||
                        is_op(P, "{")) &&
                       !is_name(P, "else") && !is_name(P, "or") && !is_name(P, "and") && !is_name(P, "if") &&
                       !is_name(P, "in") && !is_name(P, "is")) {
                add_kid(P, n, parse_postfix(P, parse_primary(P)));
            }
            e = n;
        } else {
            return e;
        }
    }
}

static jnode *parse_unary(parser *P, bool with_filter) {
    jnode *e;
    if (is_op(P, "-")) {
        P->i++;
        e = node(P, JN_NEG);
        e->a = parse_unary(P, false);
    } else if (is_op(P, "+")) {
        P->i++;
        e = parse_unary(P, false);
    } else {
        e = parse_postfix(P, parse_primary(P));
    }
    return with_filter ? parse_filters(P, e) : e;
}

static jnode *bin(parser *P, const char *op, jnode *a, jnode *b) {
    jnode *n = node(P, JN_BIN);
    n->name = op, n->a = a, n->b = b;
    return n;
}

static jnode *parse_pow(parser *P) {
    jnode *e = parse_unary(P, true);
    while (is_op(P, "**")) P->i++, e = bin(P, "**", e, parse_unary(P, true));
    return e;
}

static jnode *parse_math2(parser *P) {
    jnode *e = parse_pow(P);
    for (;;) {
        const char *op = is_op(P, "*") ? "*" : is_op(P, "/") ? "/" : is_op(P, "//") ? "//" : is_op(P, "%") ? "%" : NULL;
        if (!op) return e;
        P->i++;
        e = bin(P, op, e, parse_pow(P));
    }
}

static jnode *parse_concat(parser *P) {
    jnode *e = parse_math2(P);
    while (is_op(P, "~")) P->i++, e = bin(P, "~", e, parse_math2(P));
    return e;
}

static jnode *parse_math1(parser *P) {
    jnode *e = parse_concat(P);
    for (;;) {
        const char *op = is_op(P, "+") ? "+" : is_op(P, "-") ? "-" : NULL;
        if (!op) return e;
        P->i++;
        e = bin(P, op, e, parse_concat(P));
    }
}

static jnode *parse_compare(parser *P) {
    jnode *e = parse_math1(P);
    for (;;) {
        static const char *ops[] = {"==", "!=", "<=", ">=", "<", ">"};
        const char *op = NULL;
        for (size_t k = 0; k < 6 && !op; k++)
            if (is_op(P, ops[k])) op = ops[k];
        if (op) {
            P->i++;
        } else if (is_name(P, "in")) {
            op = "in";
            P->i++;
        } else if (is_name(P, "not") && P->t[P->i + 1].k == JT_NAME && P->t[P->i + 1].n == 2 &&
                   !memcmp(P->t[P->i + 1].p, "in", 2)) {
            op = "not in";
            P->i += 2;
        } else {
            return e;
        }
        e = bin(P, op, e, parse_math1(P));
    }
}

static jnode *parse_not(parser *P) {
    if (is_name(P, "not")) {
        P->i++;
        jnode *n = node(P, JN_NOT);
        n->a = parse_not(P);
        return n;
    }
    return parse_compare(P);
}

static jnode *parse_and(parser *P) {
    jnode *e = parse_not(P);
    while (is_name(P, "and")) {
        P->i++;
        jnode *n = node(P, JN_AND);
        n->a = e, n->b = parse_not(P);
        e = n;
    }
    return e;
}

static jnode *parse_or(parser *P) {
    jnode *e = parse_and(P);
    while (is_name(P, "or")) {
        P->i++;
        jnode *n = node(P, JN_OR);
        n->a = e, n->b = parse_and(P);
        e = n;
    }
    return e;
}

static jnode *parse_expr(parser *P) {
    jnode *e = parse_or(P);
    while (is_name(P, "if")) {
        P->i++;
        jnode *n = node(P, JN_COND);
        n->a = e;
        n->b = parse_or(P);
        if (is_name(P, "else")) {
            P->i++;
            n->c = parse_or(P);
        }
        e = n;
    }
    return e;
}

/* ---- statements ---- */

static void block_end(parser *P) {
    if (cur(P)->k != JT_BLOCK_END) jinja_fail(P->c, cur(P)->line, "expected the end of the tag ('%%}')");
    P->i++;
}

/* Parses statements until a block tag whose name is one of `stops` ('|'-separated); leaves P at that
 * name (after "{%"). Returns the body. */
static jnode *parse_body(parser *P, const char *stops);

static bool at_stop(parser *P, const char *stops) {
    jtok *t = cur(P);
    if (t->k != JT_NAME) return false;
    for (const char *p = stops; *p;) {
        size_t len = strcspn(p, "|");
        if (len == t->n && !memcmp(p, t->p, len)) return true;
        p += len + (p[len] == '|');
    }
    return false;
}

static jnode *parse_stmt(parser *P) {
    int line = cur(P)->line;
    jtok *t = cur(P);
    if (t->k != JT_NAME) jinja_fail(P->c, line, "expected a statement name after '{%%'");
    const char *kw = take_name(P);
    if (!strcmp(kw, "if")) {
        jnode *n = node(P, JN_IF), *top = n;
        n->line = line;
        n->a = parse_expr(P);
        block_end(P);
        for (;;) {
            n->b = parse_body(P, "elif|else|endif");
            const char *which = take_name(P);
            if (!strcmp(which, "elif")) {
                jnode *m = node(P, JN_IF);
                m->a = parse_expr(P);
                block_end(P);
                n->c = m;
                n = m;
                continue;
            }
            if (!strcmp(which, "else")) {
                block_end(P);
                n->c = parse_body(P, "endif");
                take_name(P);
            }
            block_end(P);
            return top;
        }
    }
    if (!strcmp(kw, "for")) {
        jnode *n = node(P, JN_FOR);
        n->line = line;
        const char *names[8];
        size_t nn = 0;
        bool paren = is_op(P, "(");
        if (paren) P->i++;
        do {
            if (nn == 8) jinja_fail(P->c, line, "too many loop targets");
            names[nn++] = take_name(P);
        } while (is_op(P, ",") && (P->i++, true));
        if (paren) expect_op(P, ")");
        n->names = jc_alloc(P->c, nn * sizeof *n->names);
        memcpy(n->names, names, nn * sizeof *names);
        n->n_names = nn;
        if (!is_name(P, "in")) jinja_fail(P->c, line, "expected 'in' in the for statement");
        P->i++;
        n->a = parse_or(P); /* jinja2: the iterable is parsed without the conditional expression */
        if (is_name(P, "if")) {
            P->i++;
            n->d = parse_expr(P);
        }
        if (is_name(P, "recursive")) jinja_fail(P->c, line, "unsupported construct: recursive for loops");
        block_end(P);
        n->b = parse_body(P, "else|endfor");
        if (!strcmp(take_name(P), "else")) {
            block_end(P);
            n->c = parse_body(P, "endfor");
            take_name(P);
        }
        block_end(P);
        return n;
    }
    if (!strcmp(kw, "set")) {
        jnode *n = node(P, JN_SET);
        n->line = line;
        const char *names[8];
        size_t nn = 0;
        names[nn++] = take_name(P);
        if (is_op(P, ".")) { /* ns.attr = value */
            P->i++;
            n->name = names[0];
            n->names = jc_alloc(P->c, sizeof *n->names);
            n->names[0] = take_name(P);
            n->n_names = 1;
            n->negate = true; /* marks attribute assignment */
        } else {
            while (is_op(P, ",")) {
                P->i++;
                if (nn == 8) jinja_fail(P->c, line, "too many assignment targets");
                names[nn++] = take_name(P);
            }
            n->name = names[0];
            if (nn > 1) {
                n->names = jc_alloc(P->c, nn * sizeof *n->names);
                memcpy(n->names, names, nn * sizeof *names);
                n->n_names = nn;
            }
        }
        if (cur(P)->k == JT_BLOCK_END && nn == 1 && !n->negate) { /* {% set x %}...{% endset %} */
            n->k = JN_SET_BLOCK;
            block_end(P);
            n->b = parse_body(P, "endset");
            take_name(P);
            block_end(P);
            return n;
        }
        expect_op(P, "=");
        n->a = parse_expr(P);
        if (is_op(P, ",")) { /* a, b = 1, 2 */
            jnode *tup = node(P, JN_TUPLE);
            add_kid(P, tup, n->a);
            while (is_op(P, ",")) P->i++, add_kid(P, tup, parse_expr(P));
            n->a = tup;
        }
        block_end(P);
        return n;
    }
    if (!strcmp(kw, "macro")) {
        jnode *n = node(P, JN_MACRO);
        n->line = line;
        n->name = take_name(P);
        expect_op(P, "(");
        const char *names[32] = {0};
        jnode *defs[32] = {0};
        size_t nn = 0;
        while (!is_op(P, ")")) {
            if (nn == 32) jinja_fail(P->c, line, "too many macro parameters");
            names[nn] = take_name(P);
            defs[nn] = NULL;
            if (is_op(P, "=")) P->i++, defs[nn] = parse_expr(P);
            nn++;
            if (!is_op(P, ",")) break;
            P->i++;
        }
        expect_op(P, ")");
        block_end(P);
        n->names = jc_alloc(P->c, (nn + 1) * sizeof *n->names);
        n->defaults = jc_alloc(P->c, (nn + 1) * sizeof *n->defaults);
        memcpy(n->names, names, nn * sizeof *names);
        memcpy(n->defaults, defs, nn * sizeof *defs);
        n->n_names = nn;
        n->b = parse_body(P, "endmacro");
        take_name(P);
        if (cur(P)->k == JT_NAME) P->i++; /* {% endmacro name %} */
        block_end(P);
        return n;
    }
    if (!strcmp(kw, "break") || !strcmp(kw, "continue")) {
        jnode *n = node(P, kw[0] == 'b' ? JN_BREAK : JN_CONTINUE);
        n->line = line;
        block_end(P);
        return n;
    }
    if (!strcmp(kw, "generation")) { /* transformers' assistant-mask tag: renders its body */
        block_end(P);
        jnode *n = parse_body(P, "endgeneration");
        take_name(P);
        block_end(P);
        return n;
    }
    if (!strcmp(kw, "filter")) {
        jnode *n = node(P, JN_FILTER_BLOCK);
        n->line = line;
        n->name = take_name(P);
        jnode *args = node(P, JN_FILTER);
        if (is_op(P, "(")) parse_call_args(P, args);
        n->a = args;
        block_end(P);
        n->b = parse_body(P, "endfilter");
        take_name(P);
        block_end(P);
        return n;
    }
    jinja_fail(P->c, line, "unsupported construct: {%% %s %%}", kw);
}

static jnode *parse_body(parser *P, const char *stops) {
    jnode *body = node(P, JN_BODY);
    for (;;) {
        jtok *t = cur(P);
        if (t->k == JT_EOF) {
            if (stops) jinja_fail(P->c, t->line, "unexpected end of template: expected {%% %s %%}", stops);
            return body;
        }
        if (t->k == JT_TEXT) {
            jnode *n = node(P, JN_TEXT);
            n->lit = jv_str(P->c, t->p, t->n);
            add_kid(P, body, n);
            P->i++;
        } else if (t->k == JT_VAR_BEGIN) {
            P->i++;
            jnode *n = node(P, JN_OUT);
            n->a = parse_expr(P);
            if (cur(P)->k != JT_VAR_END) jinja_fail(P->c, cur(P)->line, "expected '}}'");
            P->i++;
            add_kid(P, body, n);
        } else if (t->k == JT_BLOCK_BEGIN) {
            P->i++;
            if (stops && at_stop(P, stops)) return body;
            add_kid(P, body, parse_stmt(P));
        } else {
            jinja_fail(P->c, t->line, "unexpected token outside a tag");
        }
    }
}

jnode *jinja_parse(jctx *c, jtok *toks, size_t n) {
    parser P = {c, toks, n, 0};
    return parse_body(&P, NULL);
}
