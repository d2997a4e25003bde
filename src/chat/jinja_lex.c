/* jinja_lex: template text -> tokens.
 *
 * Text between tags becomes JT_TEXT after Jinja's whitespace rules, as transformers' environment sets
 * them (trim_blocks=True, lstrip_blocks=True):
 *   - "{%-", "{{-", "{#-" strip all whitespace before the tag; "-%}", "-}}", "-#}" all whitespace after;
 *   - trim_blocks: one "\n" right after "%}" or "#}" is dropped;
 *   - lstrip_blocks: spaces and tabs between the start of a line and "{%" / "{#" are dropped ("{%+"
 *     keeps them). A text counts as starting a line when it follows a newline inside it, the template
 *     start, or a tag whose end consumed a newline (jinja2's `line_starting`).
 * Comments vanish. Inside tags: names, string literals (Python escapes), integers, floats, operators. */
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

typedef struct lexer {
    jctx *c;
    const char *s;
    size_t n, i;
    int line;
    jtok *v;
    size_t nv, cap;
} lexer;

static void emit(lexer *L, jtok t) {
    if (L->nv == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        jtok *nv = jc_alloc(L->c, cap * sizeof *nv);
        if (L->nv) memcpy(nv, L->v, L->nv * sizeof *nv);
        L->v = nv, L->cap = cap;
    }
    L->v[L->nv++] = t;
}

static bool is_ws(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v'; }

static int count_lines(const char *s, size_t n) {
    int k = 0;
    for (size_t i = 0; i < n; i++) k += s[i] == '\n';
    return k;
}

/* Tokens inside one tag, up to its closing delimiter `close` ("}}" or "%}"). Returns the index just past
 * the delimiter; *strip_after tells whether it was "-}}" / "-%}". */
static size_t lex_tag(lexer *L, size_t i, const char *close, bool *strip_after) {
    for (;;) {
        while (i < L->n && is_ws(L->s[i])) L->line += L->s[i++] == '\n';
        if (i >= L->n) jinja_fail(L->c, L->line, "unclosed tag: expected '%s'", close);
        const char *p = L->s + i;
        if (p[0] == '-' && i + 2 < L->n && p[1] == close[0] && p[2] == close[1]) {
            *strip_after = true;
            return i + 3;
        }
        if (i + 1 < L->n && p[0] == close[0] && p[1] == close[1]) {
            *strip_after = false;
            return i + 2;
        }
        jtok t = {.line = L->line};
        if ((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z') || p[0] == '_') {
            size_t k = 1;
            while (i + k < L->n && ((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z') || p[k] == '_' ||
                                    (p[k] >= '0' && p[k] <= '9')))
                k++;
            t.k = JT_NAME, t.p = p, t.n = k;
            i += k;
        } else if (p[0] >= '0' && p[0] <= '9') {
            size_t k = 0;
            bool fl = false;
            while (i + k < L->n && ((p[k] >= '0' && p[k] <= '9') || p[k] == '_' ||
                                    (p[k] == '.' && !fl && i + k + 1 < L->n && p[k + 1] >= '0' && p[k + 1] <= '9')))
                fl |= p[k++] == '.';
            if (i + k + 1 < L->n && (p[k] == 'e' || p[k] == 'E')) { /* exponent: 1e16, 2.5e-3 */
                size_t q = k + 1;
                if (i + q < L->n && (p[q] == '+' || p[q] == '-')) q++;
                if (i + q < L->n && p[q] >= '0' && p[q] <= '9') {
                    while (i + q < L->n && p[q] >= '0' && p[q] <= '9') q++;
                    k = q;
                    fl = true;
                }
            }
            char tmp[64];
            size_t m = 0;
            for (size_t j = 0; j < k && m < 63; j++)
                if (p[j] != '_') tmp[m++] = p[j];
            tmp[m] = 0;
            if (fl) t.k = JT_FLOAT, t.f = strtod(tmp, NULL);
            else t.k = JT_INT, t.i = strtoll(tmp, NULL, 10);
            i += k;
        } else if (p[0] == '\'' || p[0] == '"') {
            char q = p[0];
            jbuf b = {0};
            size_t j = i + 1;
            for (;; j++) {
                if (j >= L->n) jinja_fail(L->c, L->line, "unterminated string literal");
                char ch = L->s[j];
                if (ch == q) break;
                if (ch == '\n') L->line++;
                if (ch == '\\' && j + 1 < L->n) {
                    char e = L->s[++j];
                    const char *r = e == 'n' ? "\n" : e == 't' ? "\t" : e == 'r' ? "\r" : NULL;
                    if (r) jb_putz(L->c, &b, r);
                    else if (e == '\\' || e == '\'' || e == '"') jb_put(L->c, &b, &e, 1);
                    else jb_put(L->c, &b, L->s + j - 1, 2); /* unknown escapes stay as written (Python) */
                    continue;
                }
                jb_put(L->c, &b, &ch, 1);
            }
            t.k = JT_STR, t.p = b.p ? b.p : "", t.n = b.n;
            i = j + 1;
        } else {
            static const char *ops2[] = {"//", "**", "==", "!=", "<=", ">="};
            t.k = JT_OP, t.p = p, t.n = 1;
            for (size_t k = 0; k < sizeof ops2 / sizeof ops2[0]; k++)
                if (i + 1 < L->n && p[0] == ops2[k][0] && p[1] == ops2[k][1]) t.n = 2;
            if (t.n == 1 && !strchr("+-*/%~<>=()[]{}.,:|!", p[0]))
                jinja_fail(L->c, L->line, "unexpected character '%c' in a tag", p[0]);
            i += t.n;
        }
        emit(L, t);
    }
}

void jinja_lex(jctx *c, const char *src, size_t n, jtok **out, size_t *n_out) {
    lexer L = {c, src, n, 0, 1, NULL, 0, 0};
    bool line_starting = true;
    size_t i = 0;
    while (i <= n) {
        /* find the next tag */
        size_t j = i;
        while (j + 1 < n && !(src[j] == '{' && (src[j + 1] == '{' || src[j + 1] == '%' || src[j + 1] == '#'))) j++;
        if (j + 1 >= n) j = n;
        size_t ts = i, te = j; /* text [ts, te) */
        char kind = j < n ? src[j + 1] : 0;
        char mod = j + 2 < n ? src[j + 2] : 0;
        if (kind && mod == '-') {
            while (te > ts && is_ws(src[te - 1])) te--;
        } else if ((kind == '%' || kind == '#') && mod != '+') {
            /* lstrip_blocks: the text's last line, if only whitespace and a line start, goes */
            size_t lpos = te;
            while (lpos > ts && src[lpos - 1] != '\n') lpos--;
            bool has_nl = lpos > ts;
            size_t q = lpos;
            while (q < te && is_ws(src[q])) q++;
            if ((has_nl || line_starting) && q == te) te = lpos;
        }
        if (te > ts) emit(&L, (jtok){.k = JT_TEXT, .p = src + ts, .n = te - ts, .line = L.line});
        L.line += count_lines(src + i, j - i);
        if (j >= n) break;
        size_t k = j + 2 + (mod == '-' || mod == '+');
        bool strip_after = false;
        if (kind == '#') {
            const char *end = NULL;
            for (size_t q = k; q + 1 < n; q++)
                if (src[q] == '#' && src[q + 1] == '}') {
                    end = src + q;
                    break;
                }
            if (!end) jinja_fail(c, L.line, "unclosed comment");
            strip_after = end > src + k && end[-1] == '-';
            L.line += count_lines(src + k, (size_t)(end - (src + k)));
            k = (size_t)(end - src) + 2;
        } else if (kind == '{') {
            emit(&L, (jtok){.k = JT_VAR_BEGIN, .line = L.line});
            k = lex_tag(&L, k, "}}", &strip_after);
            emit(&L, (jtok){.k = JT_VAR_END, .line = L.line});
        } else {
            emit(&L, (jtok){.k = JT_BLOCK_BEGIN, .line = L.line});
            k = lex_tag(&L, k, "%}", &strip_after);
            emit(&L, (jtok){.k = JT_BLOCK_END, .line = L.line});
        }
        line_starting = false;
        if (!strip_after && kind != '{' && k < n && src[k] == '\n') { /* trim_blocks */
            k++;
            L.line++;
            line_starting = true;
        }
        if (strip_after) {
            /* jinja2's "-%}" regex consumes the whitespace, so line_starting follows its last char */
            size_t q = k;
            while (q < n && is_ws(src[q])) q++;
            line_starting = q > k && src[q - 1] == '\n';
            L.line += count_lines(src + k, q - k);
            k = q;
        }
        i = k;
    }
    emit(&L, (jtok){.k = JT_EOF, .line = L.line});
    *out = L.v;
    *n_out = L.nv;
}
