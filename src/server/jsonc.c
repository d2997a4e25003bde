/* srv jsonc: the JSON automaton, its forks and its shortest completion (see jsonc.h).
 *
 * A state is a set of stacks, one per alternative still alive. Frames (jc_frame), by kind:
 *   F_VAL  a value of schema node `node` (ANY_NODE: any JSON value) is expected next. An anyOf node forks
 *          the stack at the value's first byte: one copy per alternative whose shortest instance fits in
 *          the frames left, each fed that byte.
 *   F_OBJ  an object: phase O_*; pos = next property index allowed (low 16 bits) and the property being
 *          written (high 16); mask = properties written. Free-form objects (any keys) use no indices.
 *   F_ARR  an array: phase A_*; pos = items begun.
 *   F_STR  a string: phase = UTF-8 continuation bytes still due (bits 0-1) and the first one's range (bits
 *          2-4, U_*); pos = escape state (bits 0-7: 0 plain, 1 after '\', 2..5 in \uXXXX, 6..7 the "\u" of
 *          a surrogate pair's low half due), S_* flags, and for strings with a length limit characters so
 *          far (bits S_COUNT..); mask bit 0 = it is a free-form object's key, bits 32.. = the pattern's DFA
 *          state.
 *   F_NUM  a number: phase N_*; pos = digits so far (integer, fraction, exponent: a byte each); mask bit 0 =
 *          integer only. Bounded numbers keep their value in mask too (jsonc_num.c).
 *   F_LIT  one of a set of literal texts (enum values, property keys with their quotes, true/false/null):
 *          mask = candidates still matching, pos = bytes matched; phase LIT_KEY or LIT_VAL.
 * A parent sets its own phase before pushing a child, so a child that ends just pops (a key literal also
 * tells its object which property it was). Numbers, and literals that are a prefix of another (enum 1 and
 * 12), end only when a byte that cannot continue them arrives; that byte is then fed to the parent.
 *
 * Why stacks never dead-end: a value is begun only if its node's shortest instance (mindepth frames,
 * computed by the linker) fits below JC_MAX_DEPTH, an object offers only keys whose values fit, and every
 * DFA state left after pruning reaches an accepting one; so from any state some bytes close the value
 * (srv_jc_completion writes the shortest). */
#include <stdlib.h>
#include <string.h>

#include "server/jsonc_impl.h"

#define MAX_WS 24
#define MAX_DIGITS 15
#define MAX_EXP 2 /* 1e99 at most: every JSON parser reads it as a finite double */

enum { O_START, O_NEED_KEY, O_IN_KEY, O_AFTER_KEY, O_AFTER_VAL };
enum { A_START, A_NEED_VAL, A_AFTER_VAL };
enum { LIT_VAL, LIT_KEY };
/* the first continuation byte's range after some lead bytes: no overlong forms, surrogates or > U+10FFFF */
enum { U_ANY, U_A0, U_9F, U_90, U_8F };

static const char *const any_lits[3] = {"true", "false", "null"};

static bool is_ws(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

static const jc_node *node_of(const srv_jc_schema *s, unsigned node) {
    return node == ANY_NODE ? NULL : &s->nodes[node];
}

static int mindepth(const srv_jc_schema *s, unsigned node) { return node == ANY_NODE ? 1 : s->nodes[node].mindepth; }

static const char *lit_text(const srv_jc_schema *s, const jc_frame *f, int i) {
    return f->node == ANY_NODE ? any_lits[i] : s->lits[s->nodes[f->node].first + i];
}

static int lit_count(const srv_jc_schema *s, const jc_frame *f) {
    return f->node == ANY_NODE ? 3 : s->nodes[f->node].n;
}

static bool free_keys(const srv_jc_schema *s, const jc_frame *f) {
    return f->node == ANY_NODE || s->nodes[f->node].free_keys;
}

/* The value node of object o's property i (free-form objects: the additionalProperties node). */
static unsigned prop_node(const srv_jc_schema *s, const jc_frame *o, int i) {
    const jc_node *n = node_of(s, o->node);
    if (free_keys(s, o)) return n && n->items >= 0 ? (unsigned)n->items : ANY_NODE;
    return (unsigned)s->lit_node[n->first + i];
}

/* Properties that may be written next in object o (frame index d): from the next index up to the first
 * required one, leaving out optional ones whose values would not fit in the frames above d. */
static uint64_t key_candidates(const srv_jc_schema *s, const jc_frame *o, int d) {
    const jc_node *n = node_of(s, o->node);
    uint64_t cand = 0;
    for (int i = (int)(o->pos & 0xFFFF); i < n->n; i++) {
        bool req = n->required >> i & 1;
        if (req || d + 1 + mindepth(s, prop_node(s, o, i)) <= JC_MAX_DEPTH) cand |= 1ull << i;
        if (req) break;
    }
    return cand;
}

static bool required_done(const srv_jc_schema *s, const jc_frame *o) {
    const jc_node *n = node_of(s, o->node);
    return !n || free_keys(s, o) || (n->required & ~o->mask) == 0;
}

static bool push(jc_stack *k, jc_frame f) {
    if (k->depth == JC_MAX_DEPTH) return false;
    k->f[k->depth++] = f;
    return true;
}

/* A value of node: only if its shortest instance fits in the frames left. */
static bool push_val(const srv_jc_schema *s, jc_stack *k, unsigned node) {
    if (k->depth + mindepth(s, node) > JC_MAX_DEPTH) return false;
    k->f[k->depth++] = (jc_frame){.node = (uint16_t)node, .kind = F_VAL};
    return true;
}

/* A literal frame ends: pops it; a key tells its object which property it was. */
static void lit_pop(jc_stack *k, const jc_frame *f, int idx) {
    bool key = f->phase == LIT_KEY;
    k->depth--;
    if (key) {
        jc_frame *o = &k->f[k->depth - 1];
        o->pos = (uint32_t)(idx + 1) | (uint32_t)idx << 16;
        o->mask |= 1ull << idx;
        o->phase = O_AFTER_KEY;
    }
}

static int lit_step(const srv_jc_schema *s, jc_stack *k, jc_frame *f, unsigned char c) {
    int n = lit_count(s, f), done = -1, longer = 0;
    uint64_t next = 0;
    for (int i = 0; i < n; i++) {
        if (!(f->mask >> i & 1)) continue;
        const char *t = lit_text(s, f, i);
        size_t len = strlen(t);
        if (len == f->pos) done = i;
        else if ((unsigned char)t[f->pos] == c) next |= 1ull << i;
    }
    if (!next) {
        if (done < 0) return BAD;
        lit_pop(k, f, done);
        return REFEED;
    }
    f->mask = next;
    f->pos++;
    done = -1;
    for (int i = 0; i < n; i++) {
        if (!(next >> i & 1)) continue;
        if (strlen(lit_text(s, f, i)) == f->pos) done = i;
        else longer = 1;
    }
    if (done >= 0 && !longer) lit_pop(k, f, done);
    return TAKEN;
}

/* ---- strings ---- */

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c |= 32;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The byte a one-letter escape stands for, or -1 (\u is handled apart). */
static int unescape(unsigned char c) {
    switch (c) {
    case '"': case '\\': case '/': return c;
    case 'b': return 8;
    case 'f': return 12;
    case 'n': return 10;
    case 'r': return 13;
    case 't': return 9;
    }
    return -1;
}

static const char ESCAPES[] = "\"\\/bfnrt";

static const jc_dfa *dfa_of(const srv_jc_schema *s, const jc_node *n) { return n && n->dfa >= 0 ? &s->dfas[n->dfa] : NULL; }

static int dfa_next(const jc_dfa *d, const jc_frame *f, unsigned char c) {
    return d->next[(int)(f->mask >> 32) * d->n_classes + d->cls[c]];
}

static bool dfa_feed(const jc_dfa *d, jc_frame *f, unsigned char c) {
    int nx = dfa_next(d, f, c);
    if (nx < 0) return false;
    f->mask = (f->mask & 0xFFFFFFFFu) | (uint64_t)nx << 32;
    return true;
}

static bool counted(const jc_node *n) { return n && (n->min > 0 || n->max != UINT32_MAX); }

/* F_STR pos: the escape state in the low byte, flags, and characters so far above them. */
#define ESC_HIGH_DUE 6   /* a high surrogate's \uXXXX ended: '\' of its low half due */
#define ESC_U_DUE 7      /* then 'u' */
#define S_FIRST_D 0x100u /* this \u's first hex digit was d */
#define S_LOW_DUE 0x200u /* this \u must be a low surrogate (dc00-dfff) */
#define S_HIGH 0x400u    /* this \u is a high surrogate (d800-dbff) */
#define S_NONZERO 0x800u /* this \u has a nonzero digit (\u0000 is refused in keys: jansson cannot hold it) */
#define S_COUNT 12       /* characters so far (strings with a length limit) */

static int str_step(const srv_jc_schema *s, jc_stack *k, jc_frame *f, unsigned char c) {
    const jc_node *n = node_of(s, f->node);
    const jc_dfa *d = dfa_of(s, n);
    bool cnt = counted(n);
    unsigned esc = f->pos & 0xFF;
    if (f->phase & 3) { /* a UTF-8 continuation byte is due */
        unsigned r = f->phase >> 2;
        unsigned lo = r == U_A0 ? 0xA0 : r == U_90 ? 0x90 : 0x80, hi = r == U_9F ? 0x9F : r == U_8F ? 0x8F : 0xBF;
        if (c < lo || c > hi || (d && !dfa_feed(d, f, c))) return BAD;
        f->phase = (uint8_t)((f->phase & 3) - 1); /* the range was the first one's only */
        return TAKEN;
    }
    if (esc == ESC_HIGH_DUE || esc == ESC_U_DUE) { /* a surrogate pair's second half: \u */
        if (c != (esc == ESC_HIGH_DUE ? '\\' : 'u')) return BAD;
        f->pos = esc == ESC_HIGH_DUE ? f->pos + 1 : (f->pos & ~0xFFu) | 2;
        return TAKEN;
    }
    if (esc == 1) {
        if (c == 'u' && !d) return f->pos++, TAKEN; /* patterns take no \u (a subset: stated in jsonc.h) */
        int u = unescape(c);
        if (u < 0 || (d && !dfa_feed(d, f, (unsigned char)u))) return BAD;
        f->pos &= ~0xFFu;
        return TAKEN;
    }
    if (esc >= 2) { /* \uXXXX: surrogates only in pairs, a high half then a low one (JSON parsers refuse others) */
        int h = hexval(c);
        bool low_due = f->pos & S_LOW_DUE;
        if (h < 0 || (esc == 2 && low_due && h != 0xD)) return BAD;
        if (esc == 2 && h == 0xD) f->pos |= S_FIRST_D;
        if (esc == 3 && (f->pos & S_FIRST_D)) { /* low_due implies a first d */
            bool sur = h >= 8, low = h >= 0xC;
            if (low_due ? !low : low) return BAD;
            if (sur && !low) f->pos |= S_HIGH;
        }
        if (h) f->pos |= S_NONZERO;
        if (esc < 5) return f->pos++, TAKEN;
        if ((f->mask & 1) && !(f->pos & S_NONZERO)) return BAD;
        bool high = f->pos & S_HIGH;
        f->pos = (f->pos & ~(0xFFu | S_FIRST_D | S_LOW_DUE | S_HIGH | S_NONZERO)) | (high ? ESC_HIGH_DUE | S_LOW_DUE : 0);
        return TAKEN;
    }
    if (c == '"') {
        if ((cnt && (f->pos >> S_COUNT) < n->min) || (d && !d->accept[f->mask >> 32])) return BAD;
        k->depth--;
        return TAKEN;
    }
    if (c < 0x20 || (cnt && (f->pos >> S_COUNT) >= n->max)) return BAD;
    if (c == '\\') {
        bool any = !d;
        for (const char *e = ESCAPES; *e && !any; e++) any = dfa_next(d, f, (unsigned char)unescape((unsigned char)*e)) >= 0;
        if (!any) return BAD;
        f->pos = (f->pos | 1) + (cnt ? 1u << S_COUNT : 0);
        return TAKEN;
    }
    if (c >= 0x80) {
        if (c >= 0xC2 && c <= 0xDF) f->phase = 1;
        else if (c >= 0xE0 && c <= 0xEF) f->phase = (uint8_t)(2 | (c == 0xE0 ? U_A0 : c == 0xED ? U_9F : U_ANY) << 2);
        else if (c >= 0xF0 && c <= 0xF4) f->phase = (uint8_t)(3 | (c == 0xF0 ? U_90 : c == 0xF4 ? U_8F : U_ANY) << 2);
        else return BAD;
    }
    if (d && !dfa_feed(d, f, c)) return BAD;
    if (cnt) f->pos += 1u << S_COUNT;
    return TAKEN;
}

/* ---- numbers without bounds ---- */

static int num_step(jc_frame *f, unsigned char c) {
    bool digit = c >= '0' && c <= '9', integer = f->mask & 1;
    unsigned id = f->pos & 0xFF, fd = f->pos >> 8 & 0xFF, ed = f->pos >> 16 & 0xFF;
    switch (f->phase) {
    case N_MINUS:
        if (!digit) return BAD;
        f->phase = c == '0' ? N_ZERO : N_INT;
        f->pos++;
        return TAKEN;
    case N_ZERO:
    case N_INT:
        if (digit && f->phase == N_INT && id < MAX_DIGITS) return f->pos++, TAKEN;
        if (c == '.' && !integer) return f->phase = N_DOT, TAKEN;
        if ((c == 'e' || c == 'E') && !integer) return f->phase = N_E, TAKEN;
        return digit ? BAD : REFEED;
    case N_DOT:
    case N_FRAC:
        if (digit && fd < MAX_DIGITS) return f->pos += 1u << 8, f->phase = N_FRAC, TAKEN;
        if (f->phase == N_DOT) return BAD;
        if (c == 'e' || c == 'E') return f->phase = N_E, TAKEN;
        return digit ? BAD : REFEED;
    case N_E:
        if (c == '+' || c == '-') return f->phase = N_ESIGN, TAKEN;
        /* fall through */
    case N_ESIGN:
    case N_EXP:
        if (digit && ed < MAX_EXP) return f->pos += 1u << 16, f->phase = N_EXP, TAKEN;
        if (f->phase != N_EXP) return BAD;
        return digit ? BAD : REFEED;
    }
    return BAD;
}

static const jc_num *num_of(const srv_jc_schema *s, const jc_frame *f) {
    const jc_node *n = node_of(s, f->node);
    return n && n->num >= 0 ? &s->nums[n->num] : NULL;
}

/* ---- values, objects, arrays ---- */

/* The first byte of a value of f's node: f becomes the frame of that value. */
static int start_value(const srv_jc_schema *s, jc_stack *k, jc_frame *f, unsigned char c) {
    const jc_node *n = node_of(s, f->node);
    int kind = n ? n->kind : JC_ANY;
    bool any = kind == JC_ANY;
    uint16_t nd = any ? ANY_NODE : f->node; /* a schema's "any" node reads like ANY_NODE from here on */
    if (c == '"' && (any || kind == JC_STRING)) {
        *f = (jc_frame){.node = nd, .kind = F_STR};
        return TAKEN;
    }
    if (c == '{' && (any || kind == JC_OBJECT)) {
        *f = (jc_frame){.node = nd, .kind = F_OBJ, .phase = O_START};
        return TAKEN;
    }
    if (c == '[' && (any || kind == JC_ARRAY)) {
        *f = (jc_frame){.node = nd, .kind = F_ARR, .phase = A_START};
        return TAKEN;
    }
    if ((c == '-' || (c >= '0' && c <= '9')) && (any || kind == JC_NUMBER || kind == JC_INTEGER)) {
        *f = (jc_frame){.node = nd, .kind = F_NUM, .phase = N_MINUS, .mask = kind == JC_INTEGER};
        const jc_num *q = num_of(s, f);
        if (q) return jc_num_start(q, f, c);
        return c == '-' ? TAKEN : num_step(f, c);
    }
    if (kind == JC_ENUM || (any && (c == 't' || c == 'f' || c == 'n'))) {
        int cnt = n && !any ? n->n : 3;
        *f = (jc_frame){.node = nd, .kind = F_LIT, .phase = LIT_VAL, .mask = cnt == 64 ? ~0ull : (1ull << cnt) - 1};
        return lit_step(s, k, f, c);
    }
    return BAD;
}

static int obj_step(const srv_jc_schema *s, jc_stack *k, jc_frame *f, unsigned char c) {
    bool fk = free_keys(s, f);
    int d = k->depth - 1;
    bool value_fits = !fk || d + 1 + mindepth(s, prop_node(s, f, 0)) <= JC_MAX_DEPTH; /* free-form keys' values */
    switch (f->phase) {
    case O_START:
    case O_NEED_KEY:
        if (c == '}' && f->phase == O_START && required_done(s, f)) return k->depth--, TAKEN;
        if (c != '"') return BAD;
        if (fk) {
            f->phase = O_AFTER_KEY;
            return value_fits && push(k, (jc_frame){.node = ANY_NODE, .kind = F_STR, .mask = 1}) ? TAKEN : BAD;
        }
        uint64_t cand = key_candidates(s, f, d);
        if (!cand) return BAD;
        f->phase = O_IN_KEY;
        return push(k, (jc_frame){.node = f->node, .kind = F_LIT, .phase = LIT_KEY, .mask = cand}) ? REFEED : BAD;
    case O_AFTER_KEY:
        if (c != ':') return BAD;
        f->phase = O_AFTER_VAL;
        return push_val(s, k, prop_node(s, f, (int)(f->pos >> 16))) ? TAKEN : BAD;
    case O_AFTER_VAL:
        if (c == '}' && required_done(s, f)) return k->depth--, TAKEN;
        if (c == ',' && (fk ? value_fits : key_candidates(s, f, d) != 0)) return f->phase = O_NEED_KEY, TAKEN;
        return BAD;
    }
    return BAD;
}

static unsigned items_of(const srv_jc_schema *s, const jc_frame *f) {
    const jc_node *n = node_of(s, f->node);
    return n && n->items >= 0 ? (unsigned)n->items : ANY_NODE;
}

static int arr_step(const srv_jc_schema *s, jc_stack *k, jc_frame *f, unsigned char c) {
    const jc_node *n = node_of(s, f->node);
    uint32_t min = n ? n->min : 0, max = n ? n->max : UINT32_MAX;
    if (f->phase == A_AFTER_VAL) {
        if (c == ',' && f->pos < max) return f->phase = A_NEED_VAL, TAKEN;
        return c == ']' && f->pos >= min ? (k->depth--, TAKEN) : BAD;
    }
    if (c == ']' && f->phase == A_START && min == 0) return k->depth--, TAKEN;
    if (f->pos >= max) return BAD;
    f->phase = A_AFTER_VAL;
    f->pos++;
    return push_val(s, k, items_of(s, f)) ? REFEED : BAD;
}

/* One byte on one stack: TAKEN, BAD, or FORK (the top frame is a value of an anyOf node: the byte is not
 * consumed; the caller forks). */
static int stack_step(const srv_jc_schema *s, jc_stack *k, unsigned char c) {
    for (;;) {
        if (k->depth == 0) return is_ws(c) && ++k->ws <= MAX_WS ? TAKEN : BAD;
        jc_frame *f = &k->f[k->depth - 1];
        bool ws_place = f->kind == F_VAL || f->kind == F_OBJ || f->kind == F_ARR;
        if (ws_place && is_ws(c)) return ++k->ws <= MAX_WS ? TAKEN : BAD;
        if (f->kind == F_VAL && f->node != ANY_NODE && s->nodes[f->node].kind == JC_ANYOF) return FORK;
        int r = BAD;
        switch (f->kind) {
        case F_VAL: r = start_value(s, k, f, c); break;
        case F_STR: r = str_step(s, k, f, c); break;
        case F_NUM: {
            const jc_num *q = num_of(s, f);
            r = q ? jc_num_step(q, f, c) : num_step(f, c);
            if (r == REFEED) k->depth--;
            break;
        }
        case F_LIT: r = lit_step(s, k, f, c); break;
        case F_OBJ: r = obj_step(s, k, f, c); break;
        case F_ARR: r = arr_step(s, k, f, c); break;
        }
        if (r == BAD) return BAD;
        if (r == TAKEN) {
            k->ws = 0;
            return TAKEN;
        }
    }
}

/* ---- the state: stacks, forks ---- */

static void copy_stack(jc_stack *d, const jc_stack *src) {
    d->depth = src->depth;
    d->ws = src->ws;
    memcpy(d->f, src->f, sizeof src->f[0] * (size_t)src->depth);
}

void srv_jc_copy(srv_jc_state *dst, const srv_jc_state *src) {
    dst->s = src->s;
    dst->n = src->n;
    for (int i = 0; i < src->n; i++) copy_stack(&dst->a[i], &src->a[i]);
}

static bool same_stack(const jc_stack *a, const jc_stack *b) {
    return a->depth == b->depth && a->ws == b->ws && !memcmp(a->f, b->f, sizeof a->f[0] * (size_t)a->depth);
}

/* Appends x to out unless the same parse is there already (alternatives that met again: keep one). */
static void add_stack(jc_stack *out, int *n, const jc_stack *x) {
    for (int i = 0; i < *n; i++)
        if (same_stack(&out[i], x)) return;
    if (*n < JC_MAX_ALTS) copy_stack(&out[(*n)++], x);
}

/* x answered FORK to byte c: one copy per alternative that fits, each fed c; survivors go to out. */
static void fork_stack(const srv_jc_schema *s, const jc_stack *x, unsigned char c, jc_stack *out, int *n) {
    const jc_node *a = &s->nodes[x->f[x->depth - 1].node];
    for (int i = 0; i < a->n; i++) {
        int alt = s->alts[a->first + i];
        if (x->depth - 1 + s->nodes[alt].mindepth > JC_MAX_DEPTH) continue;
        jc_stack y;
        copy_stack(&y, x);
        y.f[y.depth - 1].node = (uint16_t)alt;
        int r = stack_step(s, &y, c);
        if (r == TAKEN) add_stack(out, n, &y);
        else if (r == FORK) fork_stack(s, &y, c, out, n); /* a new value begun within the same byte */
    }
}

static bool feed_byte(srv_jc_state *st, unsigned char c) {
    const srv_jc_schema *s = st->s;
    int w = 0, i = 0, r = BAD;
    for (; i < st->n; i++) { /* in place while nothing forks */
        r = stack_step(s, &st->a[i], c);
        if (r == FORK) break;
        if (r == TAKEN) {
            if (w != i) copy_stack(&st->a[w], &st->a[i]);
            w++;
        }
    }
    if (i == st->n) { /* drop stacks that became the same parse (alternatives that met again) */
        int n = 0;
        for (int j = 0; j < w; j++) {
            bool dup = false;
            for (int m = 0; m < n && !dup; m++) dup = same_stack(&st->a[m], &st->a[j]);
            if (dup) continue;
            if (n != j) copy_stack(&st->a[n], &st->a[j]);
            n++;
        }
        st->n = n;
        return n > 0;
    }
    jc_stack out[JC_MAX_ALTS];
    int n = 0;
    for (int j = 0; j < w; j++) add_stack(out, &n, &st->a[j]);
    fork_stack(s, &st->a[i], c, out, &n);
    for (i++; i < st->n; i++) {
        r = stack_step(s, &st->a[i], c);
        if (r == TAKEN) add_stack(out, &n, &st->a[i]);
        else if (r == FORK) fork_stack(s, &st->a[i], c, out, &n);
    }
    st->n = n;
    for (int j = 0; j < n; j++) copy_stack(&st->a[j], &out[j]);
    return n > 0;
}

void srv_jc_init(srv_jc_state *st, const srv_jc_schema *s) {
    st->s = s;
    st->n = 1;
    st->a[0].depth = 1;
    st->a[0].ws = 0;
    st->a[0].f[0] = (jc_frame){.node = (uint16_t)s->root, .kind = F_VAL};
}

bool srv_jc_feed(srv_jc_state *st, const char *bytes, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!feed_byte(st, (unsigned char)bytes[i])) return false;
    return true;
}

bool srv_jc_done(const srv_jc_state *st) {
    for (int i = 0; i < st->n; i++)
        if (st->a[i].depth == 0) return true;
    return false;
}

bool srv_jc_plain_string(const srv_jc_state *st) {
    for (int i = 0; i < st->n; i++) {
        const jc_stack *k = &st->a[i];
        const jc_frame *f = k->depth ? &k->f[k->depth - 1] : NULL;
        const jc_node *n = f ? node_of(st->s, f->node) : NULL;
        if (!f || f->kind != F_STR || (f->pos & 0xFF) || (f->phase & 3) || counted(n) || dfa_of(st->s, n)) return false;
    }
    return st->n > 0;
}

bool jc_accepts_from(const srv_jc_schema *s, int node, const char *text) {
    srv_jc_state st = {.s = s, .n = 1};
    st.a[0].depth = 1;
    st.a[0].f[0] = (jc_frame){.node = (uint16_t)node, .kind = F_VAL};
    return srv_jc_feed(&st, text, strlen(text)) && srv_jc_feed(&st, " ", 1) && srv_jc_done(&st);
}

/* ---- the shortest completion ---- */

void jc_putn(jc_buf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++, b->n++)
        if (b->n + 1 < b->cap) b->p[b->n] = s[i];
    if (b->cap) b->p[b->n < b->cap ? b->n : b->cap - 1] = 0;
}

void jc_put(jc_buf *b, const char *s) { jc_putn(b, s, strlen(s)); }

const char *jc_escape(unsigned char c, char tmp[3]) {
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\t': return "\\t";
    case '\r': return "\\r";
    case '\b': return "\\b";
    case '\f': return "\\f";
    }
    tmp[0] = (char)c, tmp[1] = 0;
    return tmp;
}

static int shortest_lit(const srv_jc_schema *s, const jc_frame *f) {
    int best = -1;
    for (int i = 0; i < lit_count(s, f); i++)
        if ((f->mask >> i & 1) && (best < 0 || strlen(lit_text(s, f, i)) < strlen(lit_text(s, f, best)))) best = i;
    return best;
}

static void min_value(const srv_jc_schema *s, unsigned node, jc_buf *b) { jc_put(b, node == ANY_NODE ? "null" : s->nodes[node].minv); }

/* Object o's required properties from index `from` on, each as ,"key":min (the first comma only if asked). */
static void rest_required(const srv_jc_schema *s, const jc_frame *o, int from, bool comma, jc_buf *b) {
    const jc_node *n = node_of(s, o->node);
    for (int i = from; n && !free_keys(s, o) && i < n->n; i++) {
        if (!(n->required >> i & 1)) continue;
        if (comma) jc_put(b, ",");
        comma = true;
        jc_put(b, s->lits[n->first + i]);
        jc_put(b, ":");
        min_value(s, prop_node(s, o, i), b);
    }
}

/* The DFA's shortest accepted rest from state q, as JSON text. */
static void dfa_rest(const jc_dfa *d, int q, jc_buf *b) {
    char tmp[3];
    while (!d->accept[q]) {
        unsigned char u = d->step[q];
        jc_put(b, jc_escape(u, tmp));
        q = d->next[q * d->n_classes + d->cls[u]];
    }
}

static void str_rest(const srv_jc_schema *s, const jc_frame *f, jc_buf *b) {
    const jc_node *n = node_of(s, f->node);
    const jc_dfa *d = dfa_of(s, n);
    unsigned esc = f->pos & 0xFF, due = f->phase & 3, r = f->phase >> 2;
    if (d) {
        int q = (int)(f->mask >> 32);
        if (esc == 1) { /* the escape letter whose byte leads to the shortest rest */
            int best = -1, bq = -1;
            for (const char *e = ESCAPES; *e; e++) {
                int nq = d->next[q * d->n_classes + d->cls[unescape((unsigned char)*e)]];
                if (nq >= 0 && (best < 0 || d->dist[nq] < d->dist[bq])) best = *e, bq = nq;
            }
            char letter[2] = {(char)best, 0};
            jc_put(b, letter);
            q = bq;
        }
        dfa_rest(d, q, b); /* continuation bytes due are on the DFA's path too */
    } else {
        for (unsigned k = 0; k < due; k++) jc_put(b, k == 0 && r == U_A0 ? "\xa0" : k == 0 && r == U_90 ? "\x90" : "\x80");
        if (esc == 1) jc_put(b, "n");
        if (esc == ESC_HIGH_DUE) jc_put(b, "\\udc00");
        if (esc == ESC_U_DUE) jc_put(b, "udc00");
        if (esc >= 2 && esc <= 5 && (f->pos & S_LOW_DUE)) /* the low half: dc00 */
            jc_put(b, esc == 2 ? "dc00" : esc == 3 ? "c00" : esc == 4 ? "00" : "0");
        else
            for (unsigned k = esc; k >= 2 && k < 6; k++) jc_put(b, k == 5 && (f->mask & 1) && !(f->pos & S_NONZERO) ? "1" : "0");
        for (uint32_t k = counted(n) ? f->pos >> S_COUNT : 0; counted(n) && k < n->min; k++) jc_put(b, "a");
    }
    jc_put(b, "\"");
}

static void arr_rest(const srv_jc_schema *s, const jc_frame *f, jc_buf *b) {
    const jc_node *n = node_of(s, f->node);
    uint32_t min = n ? n->min : 0, have = f->pos;
    unsigned items = items_of(s, f);
    if (f->phase == A_NEED_VAL) min_value(s, items, b), have++;
    for (; have < min; have++) {
        if (have > 0) jc_put(b, ",");
        min_value(s, items, b);
    }
    jc_put(b, "]");
}

static void obj_rest(const srv_jc_schema *s, const jc_frame *f, int d, int picked, jc_buf *b) {
    bool fk = free_keys(s, f);
    int next = (int)(f->pos & 0xFFFF);
    if (f->phase == O_IN_KEY || f->phase == O_AFTER_KEY) {
        int cur = f->phase == O_IN_KEY ? picked : (int)(f->pos >> 16);
        jc_put(b, ":");
        min_value(s, prop_node(s, f, cur), b);
        rest_required(s, f, cur + 1, true, b);
    } else if (f->phase == O_NEED_KEY) {
        const jc_node *n = node_of(s, f->node);
        bool any_req = false;
        for (int i = next; !fk && i < n->n; i++) any_req |= n->required >> i & 1;
        if (fk) {
            jc_put(b, "\"\":");
            min_value(s, prop_node(s, f, 0), b);
        } else if (any_req) {
            rest_required(s, f, next, false, b);
        } else { /* the first property that fits (the comma was taken only if there is one) */
            int i = __builtin_ctzll(key_candidates(s, f, d));
            jc_put(b, s->lits[n->first + i]);
            jc_put(b, ":");
            min_value(s, prop_node(s, f, i), b);
        }
    } else {
        rest_required(s, f, next, f->phase == O_AFTER_VAL, b);
    }
    jc_put(b, "}");
}

static void stack_completion(const srv_jc_schema *s, const jc_stack *k, jc_buf *b) {
    int picked = -1; /* the key a LIT_KEY frame above its object completes to */
    for (int d = k->depth - 1; d >= 0; d--) {
        const jc_frame *f = &k->f[d];
        switch (f->kind) {
        case F_VAL: min_value(s, f->node, b); break;
        case F_STR: str_rest(s, f, b); break;
        case F_NUM: {
            const jc_num *q = num_of(s, f);
            if (q) jc_num_complete(q, f, b);
            else if (f->phase == N_MINUS || f->phase == N_DOT || f->phase == N_E || f->phase == N_ESIGN) jc_put(b, "0");
            break;
        }
        case F_LIT: {
            int i = shortest_lit(s, f);
            jc_put(b, lit_text(s, f, i) + f->pos);
            if (f->phase == LIT_KEY) picked = i;
            break;
        }
        case F_ARR: arr_rest(s, f, b); break;
        case F_OBJ: obj_rest(s, f, d, picked, b); break;
        }
    }
}

size_t srv_jc_completion(const srv_jc_state *st, char *out, size_t cap) {
    int best = 0;
    size_t best_n = (size_t)-1;
    for (int i = 0; i < st->n && st->n > 1; i++) { /* measure each stack's, write the shortest */
        jc_buf m = {NULL, 0, 0};
        stack_completion(st->s, &st->a[i], &m);
        if (m.n < best_n) best_n = m.n, best = i;
    }
    jc_buf b = {out, 0, cap};
    if (cap) out[0] = 0;
    if (st->n > 0) stack_completion(st->s, &st->a[best], &b);
    return b.n;
}
