/* srv jsonc regex: a JSON schema "pattern" (ECMA-262 syntax, the subset below) compiled to a DFA over the
 * string's decoded bytes, for the string frames of the automaton (jsonc.c).
 *
 * Supported: literals (UTF-8 characters whole), ., classes [a-z_] and [^...] with ranges and escapes,
 * \d \D \w \W \s \S, escaped punctuation, \n \t \r \f, \xHH and \uXXXX (ASCII in classes), groups ( ) and
 * (?: ) and (?<name> ), alternation |, quantifiers * + ? {n} {n,} {n,m} (lazy forms too: same language),
 * ^ at the start and $ at the end. A pattern without ^ may be preceded by any text, one without $
 * followed by any (JSON schema patterns are searches, not whole matches). Refused with a message:
 * backreferences, lookaround, \b \B \p, flags, anchors elsewhere, non-ASCII in classes, over-large
 * patterns.
 *
 * Generation takes a subset of what the pattern matches, never more: ., \S, \D, \W and negated classes
 * stand for printable ASCII (minus their exclusions) only, \s for space, tab, newline, carriage return
 * and form feed; a byte the decoder cannot write in a string (other control bytes: they would need \u)
 * is dropped from every class. So every string the DFA accepts matches the pattern.
 *
 * Pipeline: recursive descent into a syntax tree of byte sets, concatenation, alternation and repetition;
 * a Thompson NFA (repetitions unrolled: at most MAX_NFA states); byte classes (bytes no set tells apart);
 * subset construction (at most MAX_DFA states); states that cannot reach an accepting one pruned; per
 * state, the shortest accepted rest (in JSON bytes: an escaped byte costs 2) for the completion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/jsonc_impl.h"

#define MAX_AST 4096
#define MAX_NFA 4096
#define MAX_DFA 2000
#define MAX_REP 256 /* {n,m} bounds */

typedef struct bset {
    uint64_t w[4];
} bset;

static void bs_add(bset *s, unsigned c) { s->w[c >> 6] |= 1ull << (c & 63); }
static bool bs_has(const bset *s, unsigned c) { return s->w[c >> 6] >> (c & 63) & 1; }
static void bs_range(bset *s, unsigned a, unsigned b) {
    for (unsigned c = a; c <= b; c++) bs_add(s, c);
}

enum { R_SET, R_CAT, R_ALT, R_REP, R_EMPTY };

typedef struct rnode {
    uint8_t kind;
    int a, b;       /* children (CAT, ALT), child (REP: a) */
    int min, max;   /* REP; max -1: unbounded */
    int set;        /* SET: index in sets */
} rnode;

typedef struct rparse {
    const char *p, *end;
    rnode *ast;
    int n_ast;
    bset *sets;
    int n_sets;
    char *why;
    size_t why_cap;
    int err;
} rparse;

static int fail(rparse *r, const char *fmt, const char *what) {
    if (!r->err) snprintf(r->why, r->why_cap, fmt, what);
    r->err = 1;
    return -1;
}

static int node(rparse *r, rnode n) {
    if (r->err) return -1;
    if (r->n_ast == MAX_AST) return fail(r, "the pattern is too large (%s)", "syntax tree");
    r->ast[r->n_ast] = n;
    return r->n_ast++;
}

static int set_node(rparse *r, const bset *s) {
    if (r->err) return -1;
    if (r->n_sets == MAX_AST) return fail(r, "the pattern is too large (%s)", "character sets");
    r->sets[r->n_sets] = *s;
    return node(r, (rnode){.kind = R_SET, .set = r->n_sets++});
}

static int cat(rparse *r, int a, int b) {
    if (a < 0) return b;
    return b < 0 ? a : node(r, (rnode){.kind = R_CAT, .a = a, .b = b});
}

/* Bytes the decoder can write inside a string: printable ASCII, \b \t \n \f \r (escapes), UTF-8 bytes. */
static bset writable(void) {
    bset s = {{0}};
    bs_range(&s, 0x20, 0x7E);
    bs_range(&s, 0x80, 0xF4);
    bs_add(&s, 8), bs_add(&s, 9), bs_add(&s, 10), bs_add(&s, 12), bs_add(&s, 13);
    return s;
}

static bset printable(void) {
    bset s = {{0}};
    bs_range(&s, 0x20, 0x7E);
    return s;
}

/* \d \w \s and their negations as byte sets; 0 if c is none of them. */
static bool class_escape(char c, bset *s) {
    bset b = {{0}};
    switch (c | 32) {
    case 'd': bs_range(&b, '0', '9'); break;
    case 'w': bs_range(&b, '0', '9'), bs_range(&b, 'a', 'z'), bs_range(&b, 'A', 'Z'), bs_add(&b, '_'); break;
    case 's': bs_add(&b, ' '), bs_add(&b, '\t'), bs_add(&b, '\n'), bs_add(&b, '\r'), bs_add(&b, '\f'); break;
    default: return false;
    }
    if (c >= 'A' && c <= 'Z') { /* \D \W \S: printable ASCII outside the class */
        bset p = printable();
        for (int i = 0; i < 4; i++) p.w[i] &= ~b.w[i];
        b = p;
    }
    for (int i = 0; i < 4; i++) s->w[i] |= b.w[i];
    return true;
}

static int hex_digits(rparse *r, int n) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = r->p < r->end ? *r->p++ : 0;
        int h = c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
        if (h < 0) return fail(r, "%s: a hex escape needs its digits", "\\x or \\u");
        v = v * 16 + h;
    }
    return v;
}

/* One escaped character after '\' (not a class escape): its code point, or -1 (r->err set). */
static int char_escape(rparse *r) {
    char c = r->p < r->end ? *r->p++ : 0;
    switch (c) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return 0x0B;
    case '0': return 0;
    case 'x': return hex_digits(r, 2);
    case 'u': return hex_digits(r, 4);
    case 0: return fail(r, "the pattern ends in %s", "a backslash");
    }
    if (strchr("^$\\.*+?()[]{}|/-\"'", c)) return (unsigned char)c;
    char what[3] = {'\\', c, 0};
    return fail(r, "'%s' is not supported in patterns (backreferences, \\b, \\B, \\p and control escapes are not)", what);
}

/* The UTF-8 bytes of code point cp as a concatenation of one-byte sets. */
static int literal(rparse *r, unsigned cp) {
    unsigned char u[4];
    int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (n == 1) u[0] = (unsigned char)cp;
    else if (n == 2) u[0] = (unsigned char)(0xC0 | cp >> 6), u[1] = (unsigned char)(0x80 | (cp & 63));
    else if (n == 3) u[0] = (unsigned char)(0xE0 | cp >> 12), u[1] = (unsigned char)(0x80 | (cp >> 6 & 63)), u[2] = (unsigned char)(0x80 | (cp & 63));
    else u[0] = (unsigned char)(0xF0 | cp >> 18), u[1] = (unsigned char)(0x80 | (cp >> 12 & 63)), u[2] = (unsigned char)(0x80 | (cp >> 6 & 63)), u[3] = (unsigned char)(0x80 | (cp & 63));
    int out = -1;
    for (int i = 0; i < n; i++) {
        bset s = {{0}};
        bs_add(&s, u[i]);
        out = cat(r, out, set_node(r, &s));
    }
    return out;
}

/* A raw UTF-8 character of the pattern text: its code point. */
static unsigned utf8_char(rparse *r) {
    unsigned char c = (unsigned char)*r->p++;
    int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    unsigned cp = more ? c & (0x3F >> more) : c;
    for (int i = 0; i < more && r->p < r->end; i++) cp = cp << 6 | ((unsigned char)*r->p++ & 63);
    return cp;
}

static int parse_class(rparse *r) {
    bset s = {{0}};
    bool neg = r->p < r->end && *r->p == '^';
    if (neg) r->p++;
    bool first = true;
    while (r->p < r->end && (*r->p != ']' || first)) {
        first = false;
        int lo;
        if (*r->p == '\\') {
            r->p++;
            if (r->p < r->end && class_escape(*r->p, &s)) {
                r->p++;
                continue;
            }
            if (r->p < r->end && *r->p == 'b') lo = 8, r->p++; /* [\b] is backspace */
            else lo = char_escape(r);
        } else if ((unsigned char)*r->p >= 0x80) {
            return fail(r, "%s", "non-ASCII characters in a character class are not supported");
        } else {
            lo = (unsigned char)*r->p++;
        }
        if (lo < 0) return -1;
        int hi = lo;
        if (r->p + 1 < r->end && *r->p == '-' && r->p[1] != ']') {
            r->p++;
            if (*r->p == '\\') r->p++, hi = char_escape(r);
            else if ((unsigned char)*r->p >= 0x80) return fail(r, "%s", "non-ASCII characters in a character class are not supported");
            else hi = (unsigned char)*r->p++;
            if (hi < 0) return -1;
            if (hi < lo) return fail(r, "%s", "a class range out of order");
        }
        if (hi >= 0x80) return fail(r, "%s", "non-ASCII characters in a character class are not supported");
        bs_range(&s, (unsigned)lo, (unsigned)hi);
    }
    if (r->p >= r->end) return fail(r, "%s", "an unclosed character class");
    r->p++;
    if (neg) {
        bset p = printable();
        for (int i = 0; i < 4; i++) p.w[i] &= ~s.w[i];
        s = p;
    }
    return set_node(r, &s);
}

static int parse_alt(rparse *r);

/* Whether p starts a {n}, {n,} or {n,m} quantifier (else ECMA reads '{' as a literal). */
static bool quantifier_at(const char *p, const char *end) {
    const char *q = p + 1;
    while (q < end && *q >= '0' && *q <= '9') q++;
    if (q == p + 1) return false;
    if (q < end && *q == ',')
        for (q++; q < end && *q >= '0' && *q <= '9'; q++) {}
    return q < end && *q == '}';
}

static int parse_atom(rparse *r) {
    char c = *r->p;
    if (c == '(') {
        r->p++;
        if (r->p < r->end && *r->p == '?') {
            if (r->p + 1 < r->end && r->p[1] == ':') r->p += 2;
            else if (r->p + 2 < r->end && r->p[1] == '<' && r->p[2] != '=' && r->p[2] != '!') {
                const char *gt = memchr(r->p, '>', (size_t)(r->end - r->p));
                if (!gt) return fail(r, "%s", "an unclosed group name");
                r->p = gt + 1;
            } else {
                return fail(r, "%s", "lookaround and inline flags ((?= (?! (?<= (?<! (?i)) are not supported in patterns");
            }
        }
        int x = parse_alt(r);
        if (r->err) return -1;
        if (r->p >= r->end || *r->p != ')') return fail(r, "%s", "an unclosed group");
        r->p++;
        return x < 0 ? node(r, (rnode){.kind = R_EMPTY}) : x;
    }
    if (c == '[') {
        r->p++;
        return parse_class(r);
    }
    if (c == '.') {
        r->p++;
        bset s = printable();
        return set_node(r, &s);
    }
    if (c == '\\') {
        r->p++;
        bset s = {{0}};
        if (r->p < r->end && class_escape(*r->p, &s)) {
            r->p++;
            return set_node(r, &s);
        }
        int cp = char_escape(r);
        return cp < 0 ? -1 : literal(r, (unsigned)cp);
    }
    if (c == '^' || c == '$') return fail(r, "'%s' is supported only at the pattern's start (^) or end ($)", c == '^' ? "^" : "$");
    if (c == '*' || c == '+' || c == '?' || (c == '{' && quantifier_at(r->p, r->end)))
        return fail(r, "%s", "a quantifier with nothing to repeat");
    if ((unsigned char)c >= 0x80) return literal(r, utf8_char(r));
    r->p++;
    return literal(r, (unsigned char)c);
}

static int number(rparse *r) {
    int v = 0, any = 0;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9' && v <= MAX_REP) v = v * 10 + (*r->p++ - '0'), any = 1;
    return any ? v : -1;
}

static int parse_repeat(rparse *r) {
    int x = parse_atom(r);
    while (!r->err && r->p < r->end) {
        int min, max;
        char c = *r->p;
        if (c == '*') min = 0, max = -1, r->p++;
        else if (c == '+') min = 1, max = -1, r->p++;
        else if (c == '?') min = 0, max = 1, r->p++;
        else if (c == '{') {
            const char *save = r->p++;
            min = number(r);
            max = min;
            if (min >= 0 && r->p < r->end && *r->p == ',') {
                r->p++;
                max = r->p < r->end && *r->p == '}' ? -1 : number(r);
            }
            if (min < 0 || (max < 0 && max != -1) || r->p >= r->end || *r->p != '}') {
                r->p = save; /* not a quantifier: ECMA reads a lone { as a literal */
                break;
            }
            r->p++;
            if (min > MAX_REP || max > MAX_REP) return fail(r, "repetition counts above 256 are not supported (%s)", "{n,m}");
            if (max >= 0 && max < min) return fail(r, "%s", "a repetition {n,m} with m < n");
        } else {
            break;
        }
        if (r->p < r->end && *r->p == '?') r->p++; /* lazy: the same language */
        x = node(r, (rnode){.kind = R_REP, .a = x, .min = min, .max = max});
    }
    return x;
}

static int parse_cat(rparse *r) {
    int x = -1;
    while (!r->err && r->p < r->end && *r->p != '|' && *r->p != ')') {
        x = cat(r, x, parse_repeat(r));
    }
    return x;
}

static int parse_alt(rparse *r) {
    int x = parse_cat(r);
    while (!r->err && r->p < r->end && *r->p == '|') {
        r->p++;
        int y = parse_cat(r);
        if (x < 0) x = node(r, (rnode){.kind = R_EMPTY});
        if (y < 0) y = node(r, (rnode){.kind = R_EMPTY});
        x = node(r, (rnode){.kind = R_ALT, .a = x, .b = y});
    }
    return x;
}

/* ---- Thompson NFA ---- */

typedef struct nstate {
    int set;        /* >= 0: a byte of sets[set] leads to out1; -1: epsilon edges out1, out2 */
    int out1, out2;
} nstate;

typedef struct nfa {
    nstate *st;
    int n;
    rparse *r;
} nfa;

static int nnew(nfa *m, int set) {
    if (m->n == MAX_NFA) return fail(m->r, "the pattern is too large (%s; fewer or smaller repetitions)", "NFA");
    m->st[m->n] = (nstate){set, -1, -1};
    return m->n++;
}

/* Builds ast node x between new states: *s (entry) and the returned exit (an epsilon state, out1 open). */
static int build(nfa *m, int x, int *s) {
    const rnode *a = &m->r->ast[x];
    if (m->r->err) return -1;
    if (a->kind == R_EMPTY) return *s = nnew(m, -1);
    if (a->kind == R_SET) {
        *s = nnew(m, a->set);
        int e = nnew(m, -1);
        if (*s >= 0) m->st[*s].out1 = e;
        return e;
    }
    if (a->kind == R_CAT || a->kind == R_ALT) {
        int sa, sb, ea = build(m, a->a, &sa), eb = build(m, a->b, &sb);
        if (m->r->err) return -1;
        if (a->kind == R_CAT) {
            m->st[ea].out1 = sb;
            *s = sa;
            return eb;
        }
        *s = nnew(m, -1);
        int e = nnew(m, -1);
        if (m->r->err) return -1;
        m->st[*s].out1 = sa, m->st[*s].out2 = sb;
        m->st[ea].out1 = e, m->st[eb].out1 = e;
        return e;
    }
    /* R_REP: min copies, then a loop (max unbounded) or max - min optional copies */
    int cur = *s = nnew(m, -1);
    for (int i = 0; i < a->min && !m->r->err; i++) {
        int si, ei = build(m, a->a, &si);
        if (m->r->err) return -1;
        m->st[cur].out1 = si;
        cur = ei;
    }
    int e = nnew(m, -1);
    if (m->r->err) return -1;
    if (a->max < 0) {
        int si, ei = build(m, a->a, &si);
        if (m->r->err) return -1;
        m->st[cur].out1 = si, m->st[cur].out2 = e;
        m->st[ei].out1 = cur;
        return e;
    }
    for (int i = a->min; i < a->max && !m->r->err; i++) {
        int si, ei = build(m, a->a, &si);
        if (m->r->err) return -1;
        m->st[cur].out1 = si, m->st[cur].out2 = e;
        cur = ei;
    }
    m->st[cur].out1 = e;
    return e;
}

/* ---- subset construction ---- */

static void closure(const nfa *m, uint64_t *set, int *stack) {
    int top = 0;
    for (int i = 0; i < m->n; i++)
        if (set[i >> 6] >> (i & 63) & 1) stack[top++] = i;
    while (top) {
        const nstate *q = &m->st[stack[--top]];
        if (q->set >= 0) continue;
        int outs[2] = {q->out1, q->out2};
        for (int k = 0; k < 2; k++) {
            int o = outs[k];
            if (o >= 0 && !(set[o >> 6] >> (o & 63) & 1)) set[o >> 6] |= 1ull << (o & 63), stack[top++] = o;
        }
    }
}

static unsigned hash_set(const uint64_t *w, int words) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < words; i++) h = (h ^ w[i]) * 0x100000001B3ull;
    return (unsigned)(h ^ h >> 29);
}

/* JSON bytes to write decoded byte c in a string: 1 raw, 2 escaped, 0 not writable. */
static int byte_cost(unsigned c) {
    if (c == '"' || c == '\\' || c == 8 || c == 9 || c == 10 || c == 12 || c == 13) return 2;
    return (c >= 0x20 && c < 0x7F) || (c >= 0x80 && c <= 0xF4) ? 1 : 0;
}

static int subset_construct(nfa *m, int start, int fin, jc_dfa *out) {
    rparse *r = m->r;
    /* byte classes: bytes that every set holds or lacks alike */
    int ncls = 1;
    for (int i = 0; i < r->n_sets; i++) {
        int map[512], nc = 0;
        uint8_t next_cls[256];
        memset(map, -1, sizeof map);
        for (int b = 0; b < 256; b++) {
            int key = out->cls[b] * 2 + bs_has(&r->sets[i], (unsigned)b);
            if (map[key] < 0) map[key] = nc++;
            next_cls[b] = (uint8_t)map[key];
        }
        memcpy(out->cls, next_cls, 256);
        ncls = nc;
    }
    int rep[256], cost[256];
    for (int c = 0; c < 256; c++) rep[c] = -1, cost[c] = 0; /* ncls <= 256 */
    for (int b = 0; b < 256; b++) { /* each class's cheapest writable byte */
        int c = out->cls[b], k = byte_cost((unsigned)b);
        if (rep[c] < 0 || (k && (!cost[c] || k < cost[c]))) rep[c] = b, cost[c] = k;
    }
    int words = (m->n + 63) / 64, n = 0, rc = -1;
    uint64_t *sets = calloc((size_t)MAX_DFA * (size_t)words, 8), *tmp = calloc((size_t)words, 8);
    int16_t *next = malloc(sizeof *next * (size_t)MAX_DFA * (size_t)ncls);
    int *ht = malloc(sizeof *ht * 4096), *stack = malloc(sizeof *stack * (size_t)m->n), *keep = malloc(sizeof *keep * MAX_DFA);
    uint8_t *acc = calloc(MAX_DFA, 1);
    if (!sets || !tmp || !next || !ht || !stack || !keep || !acc) {
        fail(r, "%s", "out of memory");
        goto done;
    }
    memset(ht, -1, sizeof *ht * 4096);
    sets[start >> 6] |= 1ull << (start & 63);
    closure(m, sets, stack);
    ht[hash_set(sets, words) & 4095] = 0;
    n = 1;
    for (int i = 0; i < n; i++) {
        const uint64_t *cur = sets + (size_t)i * (size_t)words;
        acc[i] = cur[fin >> 6] >> (fin & 63) & 1;
        for (int c = 0; c < ncls; c++) {
            memset(tmp, 0, (size_t)words * 8);
            bool any = false;
            for (int w = 0; w < words; w++)
                for (uint64_t bits = cur[w]; bits; bits &= bits - 1) {
                    const nstate *q = &m->st[w * 64 + __builtin_ctzll(bits)];
                    if (q->set >= 0 && bs_has(&r->sets[q->set], (unsigned)rep[c]))
                        tmp[q->out1 >> 6] |= 1ull << (q->out1 & 63), any = true;
                }
            int id = -1;
            if (any) {
                closure(m, tmp, stack);
                unsigned h = hash_set(tmp, words) & 4095;
                for (; ht[h] >= 0; h = (h + 1) & 4095)
                    if (!memcmp(sets + (size_t)ht[h] * (size_t)words, tmp, (size_t)words * 8)) break;
                if (ht[h] < 0) {
                    if (n == MAX_DFA) {
                        fail(r, "the pattern is too complex (over %s DFA states)", "2000");
                        goto done;
                    }
                    memcpy(sets + (size_t)n * (size_t)words, tmp, (size_t)words * 8);
                    ht[h] = n++;
                }
                id = ht[h];
            }
            next[i * ncls + c] = (int16_t)id;
        }
    }
    /* prune the states that cannot reach an accepting one */
    for (int i = 0; i < n; i++) keep[i] = acc[i];
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < n; i++)
            for (int c = 0; c < ncls && !keep[i]; c++)
                if (next[i * ncls + c] >= 0 && keep[next[i * ncls + c]]) keep[i] = 1, changed = true;
    }
    if (!keep[0]) {
        fail(r, "%s", "the pattern matches no string the decoder writes (printable ASCII, tab, newline, return, form "
             "feed and the pattern's own UTF-8 characters)");
        goto done;
    }
    int kept = 0;
    for (int i = 0; i < n; i++) keep[i] = keep[i] ? kept++ : -1;
    out->n_states = kept, out->n_classes = ncls;
    out->next = malloc(sizeof *out->next * (size_t)kept * (size_t)ncls);
    out->accept = calloc((size_t)kept, 1);
    out->dist = malloc(sizeof *out->dist * (size_t)kept);
    out->step = calloc((size_t)kept, 1);
    if (!out->next || !out->accept || !out->dist || !out->step) {
        fail(r, "%s", "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if (keep[i] < 0) continue;
        out->accept[keep[i]] = acc[i];
        out->dist[keep[i]] = acc[i] ? 0 : JC_INF;
        for (int c = 0; c < ncls; c++) {
            int t = next[i * ncls + c];
            out->next[keep[i] * ncls + c] = (int16_t)(t >= 0 && cost[c] ? keep[t] : -1);
        }
    }
    /* the shortest accepted rest from each state (Bellman-Ford; edges cost 1 or 2) */
    for (bool changed = true; changed;) {
        changed = false;
        for (int q = 0; q < kept; q++)
            for (int c = 0; c < ncls; c++) {
                int t = out->next[q * ncls + c];
                if (t >= 0 && out->dist[t] + cost[c] < out->dist[q])
                    out->dist[q] = out->dist[t] + cost[c], out->step[q] = (uint8_t)rep[c], changed = true;
            }
    }
    rc = 0;
done:
    if (rc) jc_dfa_free(out);
    free(sets), free(tmp), free(next), free(ht), free(stack), free(keep), free(acc);
    return rc;
}

int jc_regex_compile(const char *re, jc_dfa *out, char *why, size_t why_cap) {
    memset(out, 0, sizeof *out);
    size_t len = strlen(re);
    rparse r = {.p = re, .end = re + len, .why = why, .why_cap = why_cap};
    size_t slashes = 0; /* backslashes before a final '$': an odd count escapes it */
    while (len > 1 && slashes + 1 < len && re[len - 2 - slashes] == '\\') slashes++;
    bool head = len && re[0] == '^', tail = len && re[len - 1] == '$' && slashes % 2 == 0;
    if (head) r.p++;
    if (tail) r.end--;
    r.ast = malloc(sizeof *r.ast * MAX_AST);
    r.sets = malloc(sizeof *r.sets * MAX_AST);
    nfa m = {.st = malloc(sizeof(nstate) * MAX_NFA), .r = &r};
    int rc = -1;
    if (!r.ast || !r.sets || !m.st) {
        fail(&r, "%s", "out of memory");
        goto done;
    }
    int x = parse_alt(&r);
    if (!r.err && r.p < r.end) fail(&r, "%s", "an unbalanced ')'");
    bset any = printable();
    int star = r.err ? -1 : node(&r, (rnode){.kind = R_REP, .a = set_node(&r, &any), .min = 0, .max = -1});
    if (x < 0 && !r.err) x = node(&r, (rnode){.kind = R_EMPTY});
    if (!head) x = cat(&r, star, x);
    if (!tail) x = cat(&r, x, star);
    bset w = writable();
    for (int i = 0; i < r.n_sets; i++)
        for (int k = 0; k < 4; k++) r.sets[i].w[k] &= w.w[k];
    int start = -1, fin = r.err ? -1 : build(&m, x, &start);
    if (r.err) goto done;
    rc = subset_construct(&m, start, fin, out);
done:
    free(r.ast), free(r.sets), free(m.st);
    return rc;
}

void jc_dfa_free(jc_dfa *d) {
    free(d->next), free(d->accept), free(d->dist), free(d->step);
    memset(d, 0, sizeof *d);
}

static const char *const FORMATS[][2] = {
    {"date", "^[12][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])$"},
    {"time", "^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"},
    {"date-time", "^[12][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                  "(\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"},
    /* RFC 3339 appendix A: years, months, days in order without gaps; hours, minutes, seconds likewise */
    {"duration", "^P(([0-9]{1,4}Y([0-9]{1,2}M([0-9]{1,3}D)?)?|[0-9]{1,2}M([0-9]{1,3}D)?|[0-9]{1,3}D)"
                 "(T([0-9]{1,2}H([0-9]{1,2}M([0-9]{1,2}S)?)?|[0-9]{1,2}M([0-9]{1,2}S)?|[0-9]{1,2}S))?|"
                 "T([0-9]{1,2}H([0-9]{1,2}M([0-9]{1,2}S)?)?|[0-9]{1,2}M([0-9]{1,2}S)?|[0-9]{1,2}S)|[0-9]{1,3}W)$"},
    {"email", "^[a-z0-9]+([._+-][a-z0-9]+)*@[a-z0-9]+(-[a-z0-9]+)*(\\.[a-z0-9]+(-[a-z0-9]+)*)*\\.[a-z]{2,6}$"},
    {"hostname", "^[a-z]([a-z0-9-]{0,20}[a-z0-9])?(\\.[a-z]([a-z0-9-]{0,20}[a-z0-9])?){0,3}$"},
    {"ipv4", "^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$"},
    {"ipv6", "^[0-9a-f]{1,4}(:[0-9a-f]{1,4}){7}$"},
    {"uuid", "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"},
};

const char *jc_format_regex(const char *format) {
    for (size_t i = 0; i < sizeof FORMATS / sizeof *FORMATS; i++)
        if (!strcmp(format, FORMATS[i][0])) return FORMATS[i][1];
    return NULL;
}
