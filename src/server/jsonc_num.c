/* srv jsonc num: numbers with bounds (minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf).
 *
 * A bounded number is written without exponent, with at most 15 integer digits (integers) or 12 integer
 * and JC_NUM_FRAC fraction digits (numbers), so every value it can take is an int64 count of units (1, or
 * 1e-6): the bounds become the smallest and largest valid unit counts, found once by parsing candidate
 * texts with strtod (correctly rounded, as Python's float() and every JSON parser are), so a value the
 * automaton accepts compares to the schema's bounds exactly as a validator compares it.
 *
 * A digit is taken only if some valid value can still be reached: from a prefix, the values reachable are
 * a few ranges of unit counts (stop now, or append j more integer digits, or fraction digits), and each
 * range is checked for a valid multiple. The number ends (a byte that cannot continue it) only on a valid
 * value. multipleOf must be whole: Python's jsonschema tests a fractional one by float division (0.07 /
 * 0.01 is not 7), which no choice of digits can follow reliably, so the compiler refuses it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/jsonc_impl.h"

#define INT_CAP 15     /* integer digits of a bounded integer */
#define NUM_INT_CAP 12 /* integer digits of a bounded number: 12 + 6 fraction digits fit an int64 */

static const int64_t P10[19] = {1,
                                10,
                                100,
                                1000,
                                10000,
                                100000,
                                1000000,
                                10000000,
                                100000000,
                                1000000000,
                                10000000000,
                                100000000000,
                                1000000000000,
                                10000000000000,
                                100000000000000,
                                1000000000000000,
                                10000000000000000,
                                100000000000000000,
                                1000000000000000000};

static int64_t unit_scale(const jc_num *q) { return q->integer ? 1 : P10[JC_NUM_FRAC]; }
static int int_cap(const jc_num *q) { return q->integer ? INT_CAP : NUM_INT_CAP; }

/* the frame's fields (jsonc_impl.h) */
static bool f_neg(const jc_frame *f) { return f->mask >> 1 & 1; }
static int64_t f_units(const jc_frame *f) { return (int64_t)(f->mask >> 2); }
static void f_set(jc_frame *f, bool neg, int64_t u) { f->mask = (uint64_t)u << 2 | (uint64_t)neg << 1 | (f->mask & 1); }

/* The first multiple of m at or above x (m > 0). */
static int64_t ceil_mult(int64_t x, int64_t m) {
    int64_t r = x % m;
    if (r < 0) r += m;
    return r ? x + (m - r) : x;
}

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* Magnitudes [a, b] reachable from a prefix, whose values have `idig` integer digits and need at least
 * `minfrac` fraction digits written. */
typedef struct span {
    int64_t a, b;
    int idig, minfrac;
} span;

/* The spans reachable from frame f (f NULL or a frame before its first digit: every magnitude). */
static int spans(const jc_num *q, const jc_frame *f, span *out) {
    int64_t sc = unit_scale(q), u = f ? f_units(f) : 0;
    int cap = int_cap(q), n = 0;
    unsigned id = f ? f->pos & 0xFF : 0, fd = f ? f->pos >> 8 & 0xFF : 0;
    switch (f ? f->phase : N_MINUS) {
    case N_MINUS:
        out[n++] = (span){0, sc - 1, 1, 0};
        for (int d = 1; d <= cap; d++) out[n++] = (span){P10[d - 1] * sc, P10[d] * sc - 1, d, 0};
        break;
    case N_ZERO: out[n++] = (span){0, sc - 1, 1, 0}; break;
    case N_INT: {
        int64_t i = u / sc;
        for (int j = 0; (int)id + j <= cap; j++) out[n++] = (span){i * P10[j] * sc, (i + 1) * P10[j] * sc - 1, (int)id + j, 0};
        break;
    }
    case N_DOT:
    case N_FRAC: out[n++] = (span){u, u + P10[JC_NUM_FRAC - fd] - 1, (int)id, fd ? (int)fd : 1}; break;
    }
    return n;
}

/* A valid value of sign neg with magnitude in [a, b] and at most fdig fraction digits: its magnitude, or -1. */
static int64_t pick(const jc_num *q, bool neg, int64_t a, int64_t b, int fdig) {
    int64_t step = q->integer ? 1 : P10[JC_NUM_FRAC - fdig], m = q->mult / gcd64(q->mult, step);
    if (m > INT64_MAX / step) return -1;
    m *= step; /* lcm(step, mult) */
    int64_t lo = neg ? -b : a, hi = neg ? -a : b;
    if (lo < q->lo) lo = q->lo;
    if (hi > q->hi) hi = q->hi;
    if (lo > hi) return -1;
    int64_t x = ceil_mult(lo, m);
    if (x > hi) return -1;
    return x < 0 ? -x : x;
}

static bool reachable(const jc_num *q, const jc_frame *f) {
    span sp[INT_CAP + 2];
    int n = spans(q, f, sp);
    for (int i = 0; i < n; i++)
        if (pick(q, f_neg(f), sp[i].a, sp[i].b, q->integer ? 0 : JC_NUM_FRAC) >= 0) return true;
    return false;
}

static bool valid(const jc_num *q, bool neg, int64_t u) {
    int64_t v = neg ? -u : u;
    return v >= q->lo && v <= q->hi && v % q->mult == 0;
}

int jc_num_step(const jc_num *q, jc_frame *f, unsigned char c) {
    bool digit = c >= '0' && c <= '9', neg = f_neg(f);
    int64_t sc = unit_scale(q), u = f_units(f), dv = c - '0';
    unsigned id = f->pos & 0xFF, fd = f->pos >> 8 & 0xFF;
    jc_frame g = *f;
    switch (f->phase) {
    case N_MINUS:
        if (!digit) return BAD;
        g.phase = dv ? N_INT : N_ZERO;
        g.pos = 1;
        f_set(&g, neg, dv * sc);
        break;
    case N_ZERO:
    case N_INT:
        if (digit && (f->phase == N_ZERO || (int)id == int_cap(q))) return BAD;
        if (digit) {
            g.pos++;
            f_set(&g, neg, (u / sc * 10 + dv) * sc);
        } else if (c == '.' && !q->integer) {
            g.phase = N_DOT;
        } else {
            return valid(q, neg, u) ? REFEED : BAD;
        }
        break;
    case N_DOT:
    case N_FRAC:
        if (digit && fd < JC_NUM_FRAC) {
            g.phase = N_FRAC;
            g.pos += 1u << 8;
            f_set(&g, neg, u + dv * P10[JC_NUM_FRAC - 1 - fd]);
        } else if (digit || f->phase == N_DOT) {
            return BAD;
        } else {
            return valid(q, neg, u) ? REFEED : BAD;
        }
        break;
    default: return BAD;
    }
    if (!reachable(q, &g)) return BAD;
    *f = g;
    return TAKEN;
}

int jc_num_start(const jc_num *q, jc_frame *f, unsigned char c) {
    if (c != '-') return jc_num_step(q, f, c);
    f_set(f, true, 0);
    return reachable(q, f) ? TAKEN : BAD;
}

/* The text of a value: sign, integer part, nfrac fraction digits. */
static int num_text(const jc_num *q, bool neg, int64_t u, int nfrac, char *out, size_t cap) {
    int64_t sc = unit_scale(q);
    int n = snprintf(out, cap, "%s%lld", neg ? "-" : "", (long long)(u / sc));
    if (nfrac > 0) { /* the first nfrac of the JC_NUM_FRAC fraction digits */
        char frac[24]; /* 6 digits: u % sc < 1e6 */
        snprintf(frac, sizeof frac, "%06lld", (long long)(u % sc));
        n += snprintf(out + n, cap - (size_t)n, ".%.*s", nfrac & 7, frac);
    }
    return n;
}

bool jc_num_complete(const jc_num *q, const jc_frame *f, jc_buf *b) {
    span sp[INT_CAP + 2];
    int n = spans(q, f, sp), best_len = 1 << 30, best_frac = 0;
    int64_t best = -1;
    bool best_neg = false;
    for (int sign = 0; sign < 2; sign++) {
        bool neg = f ? f_neg(f) : sign == 1;
        if (f && sign == 1) break;
        for (int i = 0; i < n; i++)
            for (int fdig = 0; fdig <= (q->integer ? 0 : JC_NUM_FRAC); fdig++) {
                int64_t u = pick(q, neg, sp[i].a, sp[i].b, fdig);
                if (u < 0) continue;
                int nfrac = fdig > sp[i].minfrac ? fdig : sp[i].minfrac;
                int len = neg + sp[i].idig + (nfrac ? 1 + nfrac : 0);
                if (len < best_len) best_len = len, best = u, best_neg = neg, best_frac = nfrac;
                break; /* more fraction digits are only longer */
            }
    }
    if (best < 0) return false;
    char t[48];
    num_text(q, best_neg, best, best_frac, t, sizeof t);
    size_t have = 0; /* the prefix already written: sign, digits, dot, fraction digits */
    if (f) {
        have = (size_t)f_neg(f) + (f->phase == N_MINUS ? 0 : (f->pos & 0xFF));
        if (f->phase == N_DOT || f->phase == N_FRAC) have += 1 + (f->pos >> 8 & 0xFF);
    }
    jc_put(b, t + have);
    return true;
}

/* A unit count's value as a validator reads the text we would write for it. */
static double value_of(const jc_num *q, int64_t v) {
    if (q->integer) return (double)v; /* |v| < 1e15: exact */
    char t[48];
    num_text(q, v < 0, v < 0 ? -v : v, JC_NUM_FRAC, t, sizeof t);
    return strtod(t, NULL);
}

static bool above(const jc_num *q, int64_t v, double x, bool strict) {
    double y = value_of(q, v);
    return strict ? y > x : y >= x;
}

int jc_num_bounds(const json_t *v, bool integer, const char *path, jc_num *out, srv_err *e) {
    static const char *const keys[4] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
    *out = (jc_num){.integer = integer, .mult = 1};
    int64_t sc = unit_scale(out), cap = P10[int_cap(out)] * sc - 1;
    out->lo = -cap, out->hi = cap;
    for (int k = 0; k < 4; k++) {
        const json_t *b = json_object_get(v, keys[k]);
        if (!b) continue;
        if (!json_is_number(b))
            return srv_fail(e, 400, "response_format", "%s.%s must be a number (draft-4 boolean forms are not supported)",
                            path, keys[k]);
        double x = json_number_value(b), c = ceil(x * (double)sc);
        bool strict = k == 1 || k == 3;
        int64_t u = c < (double)-cap ? -cap - 1 : c > (double)cap ? cap + 1 : (int64_t)c;
        if (k < 2) { /* the smallest count whose value is >= x (> x): start near x*sc, then step to it */
            for (int i = 0; i < 8 && u > -cap && above(out, u - 1, x, strict); i++) u--;
            for (int i = 0; i < 8 && u <= cap && !above(out, u, x, strict); i++) u++;
            if (u > out->lo) out->lo = u;
        } else { /* the largest count whose value is <= x (< x) */
            for (int i = 0; i < 8 && u < cap && !above(out, u + 1, x, !strict); i++) u++;
            for (int i = 0; i < 8 && u >= -cap && above(out, u, x, !strict); i++) u--;
            if (u < out->hi) out->hi = u;
        }
    }
    const json_t *m = json_object_get(v, "multipleOf");
    if (m) {
        double x = json_number_value(m);
        if (!json_is_number(m) || x <= 0 || x != floor(x) || x > 1e12)
            return srv_fail(e, 400, "response_format", "%s.multipleOf: only a positive whole number up to 1e12 is supported "
                            "(a fractional one is tested by float division, which validators round differently)", path);
        out->mult = (int64_t)x * sc;
    }
    if (out->lo > out->hi || ceil_mult(out->lo, out->mult) > out->hi)
        return srv_fail(e, 400, "response_format", "%s: no %s satisfies its minimum/maximum/multipleOf (within +-1e%d)", path,
                        integer ? "integer" : "number", int_cap(out));
    return 0;
}
