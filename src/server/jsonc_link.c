/* srv jsonc link: the compiler's second pass over the nodes (see jsonc_impl.h), in order:
 *   1. $ref nodes replaced by their targets everywhere (refs that only name each other are refused);
 *   2. anyOf alternatives flattened (an alternative that is itself an anyOf gives its own), duplicates
 *      dropped, so a fork never meets an anyOf again;
 *   3. every node's shortest instance ("canonical value"): its length by fixpoint iteration (recursive
 *      schemas converge; a node with no finite instance keeps JC_INF and is never begun), then along the
 *      choices that reach it, its stack frames and its text;
 *   4. enum / const values that fail their node's other keywords (type, bounds, pattern ...) dropped, by
 *      running the automaton on each; then 3 again;
 *   5. oneOf alternatives proven pairwise disjoint (or refused), the root checked to be an object.
 * Why canonical values are well defined: along a choice the length strictly shrinks (an object or array
 * is longer than its parts; an anyOf picks a non-anyOf alternative of its own length), so the choices
 * form no cycle. */
#include <stdlib.h>
#include <string.h>

#include "server/jsonc_impl.h"

#define MAX_TEXT 65536 /* bytes of a node's shortest instance: every one is kept as text */

static int fail(jc_build *b, const char *msg) { return srv_fail(b->e, 400, "response_format", "%s", msg); }

/* ---- 1. refs ---- */

static int target(const srv_jc_schema *s, int id) {
    for (int k = 0; id >= 0 && s->nodes[id].kind == JC_REF; k++) {
        if (k > s->n_nodes) return -2;
        id = s->nodes[id].items;
    }
    return id;
}

static int resolve(jc_build *b, int *id) {
    if (*id < 0) return 0;
    *id = target(b->s, *id);
    return *id == -2 ? fail(b, "a $ref cycle: references that only name each other, with no schema between") : 0;
}

static int resolve_all(jc_build *b) {
    srv_jc_schema *s = b->s;
    if (resolve(b, &s->root)) return -1;
    for (int i = 0; i < s->n_nodes; i++) {
        jc_node *n = &s->nodes[i];
        if (n->kind == JC_REF) continue;
        if (resolve(b, &n->items)) return -1;
        for (int k = 0; n->kind == JC_OBJECT && k < n->n; k++)
            if (resolve(b, &s->lit_node[n->first + k])) return -1;
        for (int k = 0; n->kind == JC_ANYOF && k < n->n; k++)
            if (resolve(b, &s->alts[n->first + k])) return -1;
    }
    return 0;
}

/* ---- 2. flat alternatives ---- */

static int flatten(const srv_jc_schema *s, int id, int *out, int n, uint8_t *seen) {
    const jc_node *a = &s->nodes[id];
    for (int k = 0; k < a->n; k++) {
        int alt = s->alts[a->first + k];
        if (s->nodes[alt].kind == JC_ANYOF) {
            if (!seen[alt]) seen[alt] = 1, n = flatten(s, alt, out, n, seen);
            continue;
        }
        bool dup = false;
        for (int j = 0; j < n; j++) dup |= out[j] == alt;
        if (!dup && n < 256) out[n++] = alt;
    }
    return n;
}

static int flatten_all(jc_build *b) {
    srv_jc_schema *s = b->s;
    uint8_t *seen = malloc((size_t)s->n_nodes);
    int list[256];
    if (!seen) return fail(b, "out of memory compiling the schema");
    for (int i = 0; i < s->n_nodes; i++) {
        if (s->nodes[i].kind != JC_ANYOF) continue;
        memset(seen, 0, (size_t)s->n_nodes);
        seen[i] = 1;
        int n = flatten(s, i, list, 0, seen);
        if (n == 0) {
            free(seen);
            return fail(b, "an anyOf/oneOf whose only alternatives are itself");
        }
        int *t = jc_room(b, s->alts, s->n_alts, n, &b->cap_alts, sizeof *t);
        if (!t) {
            free(seen);
            return -1;
        }
        s->alts = t;
        memcpy(s->alts + s->n_alts, list, sizeof *list * (size_t)n);
        s->nodes[i].first = s->n_alts, s->nodes[i].n = n;
        s->n_alts += n;
    }
    free(seen);
    return 0;
}

/* ---- 3. shortest instances ---- */

static int sat(int64_t x) { return x >= JC_INF ? JC_INF : (int)x; }

static int len_of(const srv_jc_schema *s, int id) { return id < 0 ? 4 : s->nodes[id].minlen; }

static int node_len(const srv_jc_schema *s, const jc_node *n) {
    switch (n->kind) {
    case JC_ANY: return 4;
    case JC_STRING: return sat(2 + (n->dfa >= 0 ? (int64_t)s->dfas[n->dfa].dist[0] : (int64_t)n->min));
    case JC_NUMBER:
    case JC_INTEGER: {
        if (n->num < 0) return 1;
        jc_buf m = {NULL, 0, 0};
        jc_num_complete(&s->nums[n->num], NULL, &m);
        return (int)m.n;
    }
    case JC_ENUM: {
        int best = JC_INF;
        for (int k = 0; k < n->n; k++) best = sat((int64_t)strlen(s->lits[n->first + k])) < best ? (int)strlen(s->lits[n->first + k]) : best;
        return best;
    }
    case JC_ARRAY:
        return n->min == 0 ? 2 : sat(2 + (int64_t)n->min * len_of(s, n->items) + (n->min - 1));
    case JC_OBJECT: {
        int64_t t = 2;
        int req = 0;
        for (int k = 0; !n->free_keys && k < n->n; k++)
            if (n->required >> k & 1) t += (int64_t)strlen(s->lits[n->first + k]) + 1 + len_of(s, s->lit_node[n->first + k]), req++;
        return sat(t + (req > 1 ? req - 1 : 0));
    }
    case JC_ANYOF: {
        int best = JC_INF;
        for (int k = 0; k < n->n; k++) best = len_of(s, s->alts[n->first + k]) < best ? len_of(s, s->alts[n->first + k]) : best;
        return best;
    }
    }
    return JC_INF; /* JC_REF: unreachable once resolved */
}

/* The canonical alternative of an anyOf: the first of the shortest. */
static int choice(const srv_jc_schema *s, const jc_node *n) {
    int best = s->alts[n->first];
    for (int k = 1; k < n->n; k++)
        if (len_of(s, s->alts[n->first + k]) < len_of(s, best)) best = s->alts[n->first + k];
    return best;
}

static int depth_of(srv_jc_schema *s, int id) {
    if (id < 0) return 1;
    jc_node *n = &s->nodes[id];
    if (n->mindepth) return n->mindepth;
    int d = 1;
    if (n->minlen >= JC_INF) d = JC_MAX_DEPTH + 1;
    else if (n->kind == JC_ARRAY && n->min > 0) d = 1 + depth_of(s, n->items);
    else if (n->kind == JC_ANYOF) d = depth_of(s, choice(s, n));
    else if (n->kind == JC_OBJECT && !n->free_keys && n->required) {
        d = 2; /* the object and a key literal */
        for (int k = 0; k < n->n; k++)
            if (n->required >> k & 1) {
                int c = 1 + depth_of(s, s->lit_node[n->first + k]);
                d = c > d ? c : d;
            }
    }
    n = &s->nodes[id];
    return n->mindepth = d > JC_MAX_DEPTH + 1 ? JC_MAX_DEPTH + 1 : d;
}

static const char *text_of(srv_jc_schema *s, int id);

static char *make_text(srv_jc_schema *s, const jc_node *n) {
    jc_buf b = {malloc((size_t)n->minlen + 1), 0, (size_t)n->minlen + 1};
    if (!b.p) return NULL;
    switch (n->kind) {
    case JC_ANY: jc_put(&b, "null"); break;
    case JC_STRING:
        jc_put(&b, "\"");
        if (n->dfa >= 0) { /* the DFA's shortest accepted string */
            const jc_dfa *d = &s->dfas[n->dfa];
            char tmp[3];
            for (int q = 0; !d->accept[q]; q = d->next[q * d->n_classes + d->cls[d->step[q]]]) jc_put(&b, jc_escape(d->step[q], tmp));
        }
        for (uint32_t k = 0; n->dfa < 0 && k < n->min; k++) jc_put(&b, "a");
        jc_put(&b, "\"");
        break;
    case JC_NUMBER:
    case JC_INTEGER:
        if (n->num >= 0) jc_num_complete(&s->nums[n->num], NULL, &b);
        else jc_put(&b, "0");
        break;
    case JC_ENUM: {
        int best = 0;
        for (int k = 1; k < n->n; k++)
            if (strlen(s->lits[n->first + k]) < strlen(s->lits[n->first + best])) best = k;
        jc_put(&b, s->lits[n->first + best]);
        break;
    }
    case JC_ARRAY:
        jc_put(&b, "[");
        for (uint32_t k = 0; k < n->min; k++) {
            if (k) jc_put(&b, ",");
            const char *t = text_of(s, n->items);
            jc_put(&b, t ? t : "");
        }
        jc_put(&b, "]");
        break;
    case JC_OBJECT: {
        jc_put(&b, "{");
        bool comma = false;
        for (int k = 0; !n->free_keys && k < n->n; k++) {
            if (!(n->required >> k & 1)) continue;
            if (comma) jc_put(&b, ",");
            comma = true;
            const char *t = text_of(s, s->lit_node[n->first + k]);
            jc_put(&b, s->lits[n->first + k]);
            jc_put(&b, ":");
            jc_put(&b, t ? t : "");
        }
        jc_put(&b, "}");
        break;
    }
    case JC_ANYOF: {
        const char *t = text_of(s, choice(s, n));
        jc_put(&b, t ? t : "");
        break;
    }
    }
    return b.p;
}

static const char *text_of(srv_jc_schema *s, int id) {
    if (id < 0) return "null";
    jc_node *n = &s->nodes[id];
    if (!n->minv && n->minlen < JC_INF) {
        char *t = make_text(s, n);
        s->nodes[id].minv = t;
    }
    return s->nodes[id].minv;
}

static int shortest_instances(jc_build *b) {
    srv_jc_schema *s = b->s;
    for (int i = 0; i < s->n_nodes; i++) {
        free(s->nodes[i].minv);
        s->nodes[i].minv = NULL;
        s->nodes[i].minlen = JC_INF;
        s->nodes[i].mindepth = 0;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < s->n_nodes; i++) {
            int l = node_len(s, &s->nodes[i]);
            if (l < s->nodes[i].minlen) s->nodes[i].minlen = l, changed = true;
        }
    }
    for (int i = 0; i < s->n_nodes; i++) {
        jc_node *n = &s->nodes[i];
        if (n->kind == JC_REF) continue;
        if (n->minlen < JC_INF && n->minlen > MAX_TEXT)
            return fail(b, "a part of the schema's smallest instance is over 65536 bytes (large minItems or minLength?)");
        depth_of(s, i);
        if (n->minlen < JC_INF && !text_of(s, i)) return fail(b, "out of memory compiling the schema");
    }
    return 0;
}

/* ---- 4. enum values against their other keywords ---- */

static int filter_enums(jc_build *b, bool *dropped) {
    srv_jc_schema *s = b->s;
    *dropped = false;
    for (int i = 0; i < s->n_nodes; i++) {
        jc_node *n = &s->nodes[i];
        if (n->kind != JC_ENUM || n->items < 0) continue;
        int keep = 0;
        for (int k = 0; k < n->n; k++) {
            char *lit = s->lits[n->first + k];
            if (jc_accepts_from(s, n->items, lit)) s->lits[n->first + keep++] = lit;
            else free(lit), *dropped = true;
        }
        for (int k = keep; k < n->n; k++) s->lits[n->first + k] = strdup(""); /* freed with the others */
        n->n = keep;
        n->items = -1;
        if (keep == 0) return fail(b, "an enum/const none of whose values meets the schema's other keywords there "
                                      "(type, bounds, length, pattern)");
    }
    return 0;
}

/* ---- 5. oneOf and the root ---- */

enum { T_OBJ = 1, T_ARR = 2, T_STR = 4, T_NUM = 8, T_TRUE = 16, T_FALSE = 32, T_NULL = 64 };

static unsigned lit_type(const char *t) {
    switch (t[0]) {
    case '{': return T_OBJ;
    case '[': return T_ARR;
    case '"': return T_STR;
    case 't': return T_TRUE;
    case 'f': return T_FALSE;
    case 'n': return T_NULL;
    }
    return T_NUM;
}

static unsigned types(const srv_jc_schema *s, int id) {
    if (id < 0) return 127;
    const jc_node *n = &s->nodes[id];
    unsigned t = 0;
    switch (n->kind) {
    case JC_OBJECT: return T_OBJ;
    case JC_ARRAY: return T_ARR;
    case JC_STRING: return T_STR;
    case JC_NUMBER:
    case JC_INTEGER: return T_NUM;
    case JC_ENUM:
        for (int k = 0; k < n->n; k++) t |= lit_type(s->lits[n->first + k]);
        return t;
    case JC_ANYOF:
        for (int k = 0; k < n->n; k++) t |= types(s, s->alts[n->first + k]);
        return t;
    }
    return 127;
}

static bool same_literal(const char *x, const char *y) {
    json_t *a = json_loads(x, JSON_DECODE_ANY, NULL), *b = json_loads(y, JSON_DECODE_ANY, NULL);
    bool same = !a || !b || json_is_object(a) || json_is_array(a) || json_equal(a, b) || /* containers: assume so */
                (json_is_number(a) && json_is_number(b) && json_number_value(a) == json_number_value(b));
    json_decref(a), json_decref(b);
    return same;
}

static void num_range(const srv_jc_schema *s, const jc_node *n, double *lo, double *hi) {
    *lo = -1e300, *hi = 1e300;
    if (n->num < 0) return;
    const jc_num *q = &s->nums[n->num];
    double sc = q->integer ? 1 : 1e6;
    *lo = (double)q->lo / sc, *hi = (double)q->hi / sc;
}

/* Every value of enum e is outside number node q: another type, out of its range, or not whole where q is
 * an integer. */
static bool enum_outside(const srv_jc_schema *s, const jc_node *e, const jc_node *q) {
    double lo, hi;
    num_range(s, q, &lo, &hi);
    for (int k = 0; k < e->n; k++) {
        json_t *v = json_loads(s->lits[e->first + k], JSON_DECODE_ANY, NULL);
        double x = json_number_value(v);
        bool inside = json_is_number(v) && x >= lo && x <= hi && (q->kind == JC_NUMBER || x == (double)(long long)x);
        json_decref(v);
        if (inside) return false;
    }
    return true;
}

static int find_key(const srv_jc_schema *s, const jc_node *o, const char *key) {
    for (int k = 0; k < o->n; k++)
        if (!strcmp(s->lits[o->first + k], key)) return k;
    return -1;
}

static bool disjoint(const srv_jc_schema *s, int a, int b, int depth);

/* Some property required by x is required by y with a disjoint value, or is one y forbids. */
static bool objects_apart(const srv_jc_schema *s, const jc_node *x, const jc_node *y, int depth) {
    for (int k = 0; k < x->n; k++) {
        if (!(x->required >> k & 1)) continue;
        int j = find_key(s, y, s->lits[x->first + k]);
        if (j < 0 && y->closed) return true;
        if (j >= 0 && (y->required >> j & 1) && disjoint(s, s->lit_node[x->first + k], s->lit_node[y->first + j], depth + 1))
            return true;
    }
    return false;
}

/* Whether no value can be valid against both nodes (false when unsure). */
static bool disjoint(const srv_jc_schema *s, int a, int b, int depth) {
    if (depth > 8 || a < 0 || b < 0) return false;
    if (!(types(s, a) & types(s, b))) return true;
    const jc_node *x = &s->nodes[a], *y = &s->nodes[b];
    if (x->kind == JC_ANYOF || y->kind == JC_ANYOF) {
        const jc_node *u = x->kind == JC_ANYOF ? x : y;
        int other = u == x ? b : a;
        for (int k = 0; k < u->n; k++)
            if (!disjoint(s, s->alts[u->first + k], other, depth + 1)) return false;
        return true;
    }
    if (x->kind == JC_ENUM && y->kind == JC_ENUM) {
        for (int i = 0; i < x->n; i++)
            for (int j = 0; j < y->n; j++)
                if (same_literal(s->lits[x->first + i], s->lits[y->first + j])) return false;
        return true;
    }
    if (x->kind == JC_OBJECT && y->kind == JC_OBJECT && !x->free_keys && !y->free_keys)
        return objects_apart(s, x, y, depth) || objects_apart(s, y, x, depth);
    if (x->kind == JC_ENUM && (y->kind == JC_NUMBER || y->kind == JC_INTEGER)) return enum_outside(s, x, y);
    if (y->kind == JC_ENUM && (x->kind == JC_NUMBER || x->kind == JC_INTEGER)) return enum_outside(s, y, x);
    if ((x->kind == JC_NUMBER || x->kind == JC_INTEGER) && (y->kind == JC_NUMBER || y->kind == JC_INTEGER)) {
        double xl, xh, yl, yh;
        num_range(s, x, &xl, &xh), num_range(s, y, &yl, &yh);
        return xh < yl || yh < xl;
    }
    return false;
}

static int check_one_of(jc_build *b) {
    const srv_jc_schema *s = b->s;
    for (int i = 0; i < s->n_nodes; i++) {
        const jc_node *n = &s->nodes[i];
        if (n->kind != JC_ANYOF || !n->one_of) continue;
        for (int x = 0; x < n->n; x++)
            for (int y = x + 1; y < n->n; y++)
                if (!disjoint(s, s->alts[n->first + x], s->alts[n->first + y], 0))
                    return fail(b, "oneOf: two alternatives may both match one value, and the output must match exactly one; "
                                   "oneOf is supported when its alternatives exclude each other (different types, different "
                                   "const/enum values of a property both require, a required property the other forbids, "
                                   "disjoint number ranges); use anyOf where either may match");
    }
    return 0;
}

int jc_link(jc_build *b) {
    srv_jc_schema *s = b->s;
    bool dropped;
    if (resolve_all(b) || flatten_all(b) || shortest_instances(b) || filter_enums(b, &dropped)) return -1;
    if (dropped && shortest_instances(b)) return -1;
    if (check_one_of(b)) return -1;
    if (types(s, s->root) != T_OBJ)
        return fail(b, "the schema's root must be an object (\"type\": \"object\", or alternatives that all are)");
    if (s->nodes[s->root].minlen >= JC_INF)
        return fail(b, "the schema has no finite instance (a required property leads back to its own object)");
    if (s->nodes[s->root].mindepth > JC_MAX_DEPTH)
        return fail(b, "the schema's smallest instance nests deeper than 24 levels");
    return 0;
}
