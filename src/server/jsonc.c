/* srv jsonc: the JSON automaton, its shortest completion and the token mask (see jsonc.h).
 *
 * Frames (jc_frame), by kind:
 *   F_VAL  a value of schema node `node` (ANY_NODE: any JSON value) is expected next.
 *   F_OBJ  an object: phase O_*; pos = next property index allowed (low 16 bits) and the property being
 *          written (high 16); mask = properties written. Free-form objects (any keys) use no indices.
 *   F_ARR  an array: phase A_*.
 *   F_STR  a string: pos = escape state (0 plain, 1 after '\', 2..5 in \uXXXX); phase = UTF-8 continuation
 *          bytes still due; mask bit 0 = it is a free-form object's key.
 *   F_NUM  a number: phase N_*; pos = digits so far (integer, fraction, exponent: a byte each); mask bit 0 =
 *          integer only.
 *   F_LIT  one of a set of literal texts (enum values, property keys with their quotes, true/false/null):
 *          mask = candidates still matching, pos = bytes matched; phase LIT_KEY or LIT_VAL.
 * A parent sets its own phase before pushing a child, so a child that ends just pops (a key literal also
 * tells its object which property it was). Numbers, and literals that are a prefix of another (enum 1 and
 * 12), end only when a byte that cannot continue them arrives; that byte is then fed to the parent. */
#include "server/jsonc.h"

#include <stdlib.h>
#include <string.h>

#define ANY_NODE 0xFFFF
#define MAX_WS 24
#define MAX_DIGITS 15
#define MAX_EXP 2 /* 1e99 at most: every JSON parser reads it as a finite double */

enum { F_VAL, F_OBJ, F_ARR, F_STR, F_NUM, F_LIT };
enum { O_START, O_NEED_KEY, O_IN_KEY, O_AFTER_KEY, O_AFTER_VAL };
enum { A_START, A_NEED_VAL, A_AFTER_VAL };
enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };
enum { LIT_VAL, LIT_KEY };
enum { BAD = 0, TAKEN = 1, REFEED = 2 };

static const char *const any_lits[3] = {"true", "false", "null"};

static bool is_ws(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

static const jc_node *node_of(const srv_jc_state *st, unsigned node) {
    return node == ANY_NODE ? NULL : &st->s->nodes[node];
}

static const char *lit_text(const srv_jc_state *st, const jc_frame *f, int i) {
    return f->node == ANY_NODE ? any_lits[i] : st->s->lits[st->s->nodes[f->node].first + i];
}

static int lit_count(const srv_jc_state *st, const jc_frame *f) {
    return f->node == ANY_NODE ? 3 : st->s->nodes[f->node].n;
}

static bool free_keys(const srv_jc_state *st, const jc_frame *f) {
    return f->node == ANY_NODE || st->s->nodes[f->node].free_keys;
}

/* The value node of object o's property i (ANY for free-form objects). */
static unsigned prop_node(const srv_jc_state *st, const jc_frame *o, int i) {
    if (free_keys(st, o)) return ANY_NODE;
    return (unsigned)st->s->lit_node[st->s->nodes[o->node].first + i];
}

/* Properties that may be written next in object o: from the next index up to the first required one. */
static uint64_t key_candidates(const srv_jc_state *st, const jc_frame *o) {
    const jc_node *n = node_of(st, o->node);
    uint64_t cand = 0;
    for (int i = (int)(o->pos & 0xFFFF); i < n->n; i++) {
        cand |= 1ull << i;
        if (n->required >> i & 1) break;
    }
    return cand;
}

static bool required_done(const srv_jc_state *st, const jc_frame *o) {
    const jc_node *n = node_of(st, o->node);
    return !n || free_keys(st, o) || (n->required & ~o->mask) == 0;
}

static bool push(srv_jc_state *st, jc_frame f) {
    if (st->depth == JC_MAX_DEPTH) return false;
    st->f[st->depth++] = f;
    return true;
}

/* A literal frame ends: pops it; a key tells its object which property it was. */
static void lit_pop(srv_jc_state *st, const jc_frame *f, int idx) {
    bool key = f->phase == LIT_KEY;
    st->depth--;
    if (key) {
        jc_frame *o = &st->f[st->depth - 1];
        o->pos = (uint32_t)(idx + 1) | (uint32_t)idx << 16;
        o->mask |= 1ull << idx;
        o->phase = O_AFTER_KEY;
    }
}

static int lit_step(srv_jc_state *st, jc_frame *f, unsigned char c) {
    int n = lit_count(st, f), done = -1, longer = 0;
    uint64_t next = 0;
    for (int i = 0; i < n; i++) {
        if (!(f->mask >> i & 1)) continue;
        const char *t = lit_text(st, f, i);
        size_t len = strlen(t);
        if (len == f->pos) done = i;
        else if ((unsigned char)t[f->pos] == c) next |= 1ull << i;
    }
    if (!next) {
        if (done < 0) return BAD;
        lit_pop(st, f, done);
        return REFEED;
    }
    f->mask = next;
    f->pos++;
    done = -1;
    for (int i = 0; i < n; i++) {
        if (!(next >> i & 1)) continue;
        if (strlen(lit_text(st, f, i)) == f->pos) done = i;
        else longer = 1;
    }
    if (done >= 0 && !longer) lit_pop(st, f, done);
    return TAKEN;
}

static int str_step(srv_jc_state *st, jc_frame *f, unsigned char c) {
    if (f->phase) { /* a UTF-8 continuation byte is due */
        if ((c & 0xC0) != 0x80) return BAD;
        f->phase--;
        return TAKEN;
    }
    if (f->pos == 1) {
        if (c == 'u') f->pos = 2;
        else if (strchr("\"\\/bfnrt", c) && c) f->pos = 0;
        else return BAD;
        return TAKEN;
    }
    if (f->pos >= 2) {
        if (!((c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'f'))) return BAD;
        f->pos = f->pos == 5 ? 0 : f->pos + 1;
        return TAKEN;
    }
    if (c == '"') {
        st->depth--;
        return TAKEN;
    }
    if (c == '\\') f->pos = 1;
    else if (c < 0x20) return BAD;
    else if (c >= 0x80) {
        if (c >= 0xC2 && c <= 0xDF) f->phase = 1;
        else if (c >= 0xE0 && c <= 0xEF) f->phase = 2;
        else if (c >= 0xF0 && c <= 0xF4) f->phase = 3;
        else return BAD;
    }
    return TAKEN;
}

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

/* The first byte of a value of f's node: f becomes the frame of that value. */
static int start_value(srv_jc_state *st, jc_frame *f, unsigned char c) {
    const jc_node *n = node_of(st, f->node);
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
        return c == '-' ? TAKEN : num_step(f, c);
    }
    if (kind == JC_ENUM || (any && (c == 't' || c == 'f' || c == 'n'))) {
        int cnt = n && !any ? n->n : 3;
        *f = (jc_frame){.node = nd, .kind = F_LIT, .phase = LIT_VAL, .mask = cnt == 64 ? ~0ull : (1ull << cnt) - 1};
        return lit_step(st, f, c);
    }
    return BAD;
}

static int obj_step(srv_jc_state *st, jc_frame *f, unsigned char c) {
    bool fk = free_keys(st, f);
    switch (f->phase) {
    case O_START:
    case O_NEED_KEY:
        if (c == '}' && f->phase == O_START && required_done(st, f)) return st->depth--, TAKEN;
        if (c != '"') return BAD;
        if (fk) {
            f->phase = O_AFTER_KEY;
            return push(st, (jc_frame){.node = ANY_NODE, .kind = F_STR, .mask = 1}) ? TAKEN : BAD;
        }
        uint64_t cand = key_candidates(st, f);
        if (!cand) return BAD;
        f->phase = O_IN_KEY;
        return push(st, (jc_frame){.node = f->node, .kind = F_LIT, .phase = LIT_KEY, .mask = cand}) ? REFEED : BAD;
    case O_AFTER_KEY:
        if (c != ':') return BAD;
        f->phase = O_AFTER_VAL;
        return push(st, (jc_frame){.node = (uint16_t)prop_node(st, f, (int)(f->pos >> 16)), .kind = F_VAL}) ? TAKEN : BAD;
    case O_AFTER_VAL:
        if (c == '}' && required_done(st, f)) return st->depth--, TAKEN;
        if (c == ',' && (fk || key_candidates(st, f))) return f->phase = O_NEED_KEY, TAKEN;
        return BAD;
    }
    return BAD;
}

static int arr_step(srv_jc_state *st, jc_frame *f, unsigned char c) {
    if (f->phase == A_AFTER_VAL) {
        if (c == ',') return f->phase = A_NEED_VAL, TAKEN;
        return c == ']' ? (st->depth--, TAKEN) : BAD;
    }
    if (c == ']' && f->phase == A_START) return st->depth--, TAKEN;
    const jc_node *n = node_of(st, f->node);
    f->phase = A_AFTER_VAL;
    uint16_t items = n && n->items >= 0 ? (uint16_t)n->items : ANY_NODE;
    return push(st, (jc_frame){.node = items, .kind = F_VAL}) ? REFEED : BAD;
}

static bool step(srv_jc_state *st, unsigned char c) {
    for (;;) {
        if (st->depth == 0) return is_ws(c) && ++st->ws <= MAX_WS;
        jc_frame *f = &st->f[st->depth - 1];
        bool ws_place = f->kind == F_VAL || f->kind == F_OBJ || f->kind == F_ARR;
        if (ws_place && is_ws(c)) return ++st->ws <= MAX_WS;
        int r = BAD;
        switch (f->kind) {
        case F_VAL: r = start_value(st, f, c); break;
        case F_STR: r = str_step(st, f, c); break;
        case F_NUM:
            r = num_step(f, c);
            if (r == REFEED) st->depth--;
            break;
        case F_LIT: r = lit_step(st, f, c); break;
        case F_OBJ: r = obj_step(st, f, c); break;
        case F_ARR: r = arr_step(st, f, c); break;
        }
        if (r == BAD) return false;
        if (r == TAKEN) {
            st->ws = 0;
            return true;
        }
    }
}

void srv_jc_init(srv_jc_state *st, const srv_jc_schema *s) {
    memset(st, 0, sizeof *st);
    st->s = s;
    st->depth = 1;
    st->f[0] = (jc_frame){.node = (uint16_t)s->root, .kind = F_VAL};
}

bool srv_jc_feed(srv_jc_state *st, const char *bytes, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!step(st, (unsigned char)bytes[i])) return false;
    return true;
}

bool srv_jc_done(const srv_jc_state *st) { return st->depth == 0; }

bool srv_jc_plain_string(const srv_jc_state *st) {
    const jc_frame *f = st->depth ? &st->f[st->depth - 1] : NULL;
    return f && f->kind == F_STR && f->pos == 0 && f->phase == 0;
}

/* ---- the shortest completion ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void put(sbuf *b, const char *s) {
    for (; *s; s++)
        if (b->n + 1 < b->cap) b->p[b->n++] = *s;
    b->p[b->n < b->cap ? b->n : b->cap - 1] = 0;
}

static int shortest_lit(const srv_jc_state *st, const jc_frame *f) {
    int best = -1;
    for (int i = 0; i < lit_count(st, f); i++)
        if ((f->mask >> i & 1) && (best < 0 || strlen(lit_text(st, f, i)) < strlen(lit_text(st, f, best)))) best = i;
    return best;
}

static void min_value(const srv_jc_state *st, unsigned node, sbuf *b);

/* Object o's required properties from index `from` on, each as ,"key":min (the first comma only if asked). */
static void rest_required(const srv_jc_state *st, const jc_frame *o, int from, bool comma, sbuf *b) {
    const jc_node *n = node_of(st, o->node);
    for (int i = from; n && !free_keys(st, o) && i < n->n; i++) {
        if (!(n->required >> i & 1)) continue;
        if (comma) put(b, ",");
        comma = true;
        put(b, st->s->lits[n->first + i]);
        put(b, ":");
        min_value(st, prop_node(st, o, i), b);
    }
}

static void min_value(const srv_jc_state *st, unsigned node, sbuf *b) {
    const jc_node *n = node_of(st, node);
    switch (n ? n->kind : JC_ANY) {
    case JC_ANY: put(b, "null"); break;
    case JC_STRING: put(b, "\"\""); break;
    case JC_NUMBER:
    case JC_INTEGER: put(b, "0"); break;
    case JC_ARRAY: put(b, "[]"); break;
    case JC_ENUM: {
        jc_frame f = {.node = (uint16_t)node, .kind = F_LIT, .mask = ~0ull};
        put(b, lit_text(st, &f, shortest_lit(st, &f)));
        break;
    }
    case JC_OBJECT: {
        jc_frame o = {.node = (uint16_t)node, .kind = F_OBJ};
        put(b, "{");
        rest_required(st, &o, 0, false, b);
        put(b, "}");
        break;
    }
    }
}

size_t srv_jc_completion(const srv_jc_state *st, char *out, size_t cap) {
    sbuf b = {out, 0, cap};
    out[0] = 0;
    int picked = -1; /* the key a LIT_KEY frame above its object completes to */
    for (int d = st->depth - 1; d >= 0; d--) {
        const jc_frame *f = &st->f[d];
        switch (f->kind) {
        case F_VAL: min_value(st, f->node, &b); break;
        case F_STR:
            for (unsigned k = 0; k < f->phase; k++) put(&b, "\x80");
            if (f->pos == 1) put(&b, "n");
            for (unsigned k = f->pos; k >= 2 && k < 6; k++) put(&b, "0");
            put(&b, "\"");
            break;
        case F_NUM:
            if (f->phase == N_MINUS || f->phase == N_DOT || f->phase == N_E || f->phase == N_ESIGN) put(&b, "0");
            break;
        case F_LIT: {
            int i = shortest_lit(st, f);
            put(&b, lit_text(st, f, i) + f->pos);
            if (f->phase == LIT_KEY) picked = i;
            break;
        }
        case F_ARR:
            if (f->phase == A_NEED_VAL) {
                const jc_node *n = node_of(st, f->node);
                min_value(st, n && n->items >= 0 ? (unsigned)n->items : ANY_NODE, &b);
            }
            put(&b, "]");
            break;
        case F_OBJ: {
            bool fk = free_keys(st, f);
            int next = (int)(f->pos & 0xFFFF);
            if (f->phase == O_IN_KEY || f->phase == O_AFTER_KEY) {
                int cur = f->phase == O_IN_KEY ? picked : (int)(f->pos >> 16);
                put(&b, ":");
                min_value(st, prop_node(st, f, cur), &b);
                rest_required(st, f, cur + 1, true, &b);
            } else if (f->phase == O_NEED_KEY) {
                const jc_node *n = node_of(st, f->node);
                bool any_req = false;
                for (int i = next; !fk && i < n->n; i++) any_req |= n->required >> i & 1;
                if (fk) put(&b, "\"\":null");
                else if (any_req) rest_required(st, f, next, false, &b);
                else {
                    put(&b, st->s->lits[n->first + next]);
                    put(&b, ":");
                    min_value(st, prop_node(st, f, next), &b);
                }
            } else {
                rest_required(st, f, next, f->phase == O_AFTER_VAL, &b);
            }
            put(&b, "}");
            break;
        }
        }
    }
    return b.n;
}
