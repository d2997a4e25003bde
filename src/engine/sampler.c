/* sampler: see sampler.h. How the candidates are ordered without sorting the vocabulary:
 *
 * The order is by logit, higher first, ties to the lower id. A filter or the draw walks it from the top,
 * so only the prefix it reaches needs sorting. sort_top(j) makes the prefix at least j long: one scan of
 * the logits with a heap of the j largest values seen (most entries cost one comparison with the heap's
 * smallest) gives the j-th largest value, a second scan collects every candidate at or above it (j, or
 * more where values tie), and only those are sorted. A walk that passes the prefix asks for 8 times more.
 *
 * The draw without any filter (all of the vocabulary kept) would walk far down a flat distribution, so it
 * takes another route: one pass computes every weight (a vectorized exp, within a few ulps of libm's),
 * their sum, and the weight of each of 1024 buckets of logit (1/16 of temperature wide, from the maximum
 * down; the last bucket holds the rest, whose weights are below e^-64 of the best). Buckets are in
 * candidate order (a lower logit never lands in an earlier bucket: each step of the bucket formula
 * rounds monotonically), so the bucket where the
 * cumulative weight passes u * sum is found from the bucket sums, and only its members are sorted and
 * walked. Sums are formed in another order than a full sort's walk forms them, which moves the ends of a
 * token's interval of u by a few ulps: test_sampler_select checks every path against the full sort. */
#include "engine/sampler.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

typedef struct cand { int32_t id; float logit; } cand;

enum { N_BUCKETS = 1024, BUCKETS_PER_T = 16 };

struct sampler {
    sampler_params p;
    int n_vocab;
    float *l;         /* n_vocab: the logits after the penalties */
    cand *c;          /* n_vocab: c[0..n_sorted) are the best candidates, in order */
    int n_sorted;
    float *heap;      /* n_vocab / 8 + 1: scratch for sort_top's scan */
    uint16_t *bucket; /* n_vocab: each candidate's bucket (the unfiltered draw) */
    int32_t *hist;    /* ring of the last penalty_last_n tokens */
    int n_hist, hist_pos;
    int *count;       /* n_vocab occurrence counts (scratch) */
    double *pr;       /* n_vocab weights of the sorted prefix (scratch) */
    double bsum[N_BUCKETS];
    rng r;
};

sampler_params sampler_defaults(void) {
    return (sampler_params){.temperature = 0, .top_k = 0, .top_p = 1, .min_p = 0, .repeat_penalty = 1,
                            .presence_penalty = 0, .frequency_penalty = 0, .penalty_last_n = 64, .seed = 0};
}

int sampler_new(sampler **out, const sampler_params *p, int n_vocab, err *e) {
    *out = NULL;
    if (!(p->temperature >= 0) || !isfinite(p->temperature))
        return err_set(e, ERR_ARG, "temperature must be a finite number >= 0, got %g", p->temperature);
    if (!(p->top_p > 0) || p->top_p > 1) return err_set(e, ERR_ARG, "top_p must be in (0, 1], got %g", p->top_p);
    if (!(p->min_p >= 0) || p->min_p > 1) return err_set(e, ERR_ARG, "min_p must be in [0, 1], got %g", p->min_p);
    if (!(p->repeat_penalty > 0) || !isfinite(p->repeat_penalty))
        return err_set(e, ERR_ARG, "repeat_penalty must be > 0, got %g", p->repeat_penalty);
    if (!isfinite(p->presence_penalty) || !isfinite(p->frequency_penalty))
        return err_set(e, ERR_ARG, "presence/frequency penalties must be finite");
    if (p->penalty_last_n < 0) return err_set(e, ERR_ARG, "penalty_last_n must be >= 0");
    if (n_vocab <= 0) return err_set(e, ERR_ARG, "n_vocab must be > 0");
    sampler *s = calloc(1, sizeof *s);
    if (!s) return err_set(e, ERR_NOMEM, "out of memory");
    s->p = *p;
    s->n_vocab = n_vocab;
    size_t n = (size_t)n_vocab;
    s->l = malloc(sizeof(float) * n);
    s->c = malloc(sizeof(cand) * n);
    s->heap = malloc(sizeof(float) * (n / 8 + 1)); /* sort_top scans for fewer than n / 8 */
    s->bucket = malloc(sizeof(uint16_t) * n);
    s->count = calloc(n, sizeof(int));
    s->pr = malloc(sizeof(double) * n);
    s->hist = malloc(sizeof(int32_t) * (size_t)(p->penalty_last_n > 0 ? p->penalty_last_n : 1));
    if (!s->l || !s->c || !s->heap || !s->bucket || !s->count || !s->hist || !s->pr) {
        sampler_free(s);
        return err_set(e, ERR_NOMEM, "out of memory");
    }
    rng_seed(&s->r, p->seed);
    *out = s;
    return 0;
}

void sampler_free(sampler *s) {
    if (!s) return;
    free(s->l);
    free(s->c);
    free(s->heap);
    free(s->bucket);
    free(s->hist);
    free(s->count);
    free(s->pr);
    free(s);
}

void sampler_accept(sampler *s, int32_t token) {
    if (s->p.penalty_last_n <= 0) return;
    s->hist[s->hist_pos] = token;
    s->hist_pos = (s->hist_pos + 1) % s->p.penalty_last_n;
    if (s->n_hist < s->p.penalty_last_n) s->n_hist++;
}

static int by_order(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id - y->id;
}

/* Sift-down in a heap of floats whose root is the smallest. */
static void heap_down(float *h, int n, int i) {
    for (;;) {
        int a = 2 * i + 1, b = a + 1, w = i;
        if (a < n && h[a] < h[w]) w = a;
        if (b < n && h[b] < h[w]) w = b;
        if (w == i) return;
        float t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* Makes c[0..n_sorted) the best candidates in order, n_sorted >= j (see the top of the file). */
static void sort_top(sampler *s, int j) {
    int n = s->n_vocab, k = 0;
    const float *l = s->l;
    if (j > n / 8) {
        for (int i = 0; i < n; i++) s->c[i] = (cand){i, l[i]};
        k = n;
    } else {
        float *h = s->heap;
        memcpy(h, l, sizeof *h * (size_t)j);
        for (int i = j / 2 - 1; i >= 0; i--) heap_down(h, j, i);
        float h0 = h[0]; /* the heap's smallest, kept in a register for the scan */
        for (int i = j; i < n; i++)
            if (l[i] > h0) {
                h[0] = l[i];
                heap_down(h, j, 0);
                h0 = h[0];
            }
        float th = h0; /* the j-th largest value: at least j candidates are >= th */
        for (int i = 0; i < n; i++)
            if (l[i] >= th) s->c[k++] = (cand){i, l[i]};
    }
    qsort(s->c, (size_t)k, sizeof *s->c, by_order);
    s->n_sorted = k;
}

/* Candidate i in order, sorting a longer prefix when i is past the sorted one. */
static inline const cand *nth(sampler *s, int i) {
    if (i >= s->n_sorted) {
        int want = 8 * s->n_sorted;
        sort_top(s, want > i + 1 ? want : i + 1 > 64 ? i + 1 : 64);
    }
    return &s->c[i];
}

/* exp(x) for four doubles, within a few ulps of libm's for x <= 0 (0 below -708, and for -inf): x = k ln2
 * + r with |r| <= ln2/2, exp(r) by its Taylor series to r^13 (remainder < 4e-18 relative), times 2^k
 * built in the exponent bits. Plain vector code, so each target clone below vectorizes it for its ISA. */
typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4i __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
#define V4(c) ((v4d){(c), (c), (c), (c)})

enum { VEXP_U = 2 }; /* vectors in flight: independent polynomial chains keep the multiply-adds busy (4
                      * spill AVX2's 16 registers: 1.5x slower on 262k logits) */

static inline void vexp4(v4d *xs) { /* xs[0..VEXP_U) in place (pointers: vector arguments would depend on
                                     * the ISA's ABI) */
    static const double inv_fact[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                                      1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0,
                                      1.0 / 6.0, 0.5, 1.0, 1.0};
    const v4d lo = V4(-708.0), shifter = V4(0x1.8p52);
    v4i under[VEXP_U], k[VEXP_U];
    v4d r[VEXP_U], p[VEXP_U];
    for (int u = 0; u < VEXP_U; u++) {
        v4d x = xs[u];
        under[u] = x < lo;
        x = (v4d)(((v4i)x & ~under[u]) | ((v4i)lo & under[u]));
        v4d t = x * V4(0x1.71547652b82fep0) + shifter; /* x log2(e), rounded to an integer in the low bits */
        v4d kd = t - shifter;
        k[u] = (v4i)t - (v4i)shifter;
        r[u] = x - kd * V4(6.93147180369123816490e-01) - kd * V4(1.90821492927058770002e-10);
        p[u] = V4(1.0 / 6227020800.0);
    }
    for (int i = 0; i < 13; i++)
        for (int u = 0; u < VEXP_U; u++) p[u] = p[u] * r[u] + V4(inv_fact[i]);
    for (int u = 0; u < VEXP_U; u++) {
        v4d res = p[u] * (v4d)((k[u] + 1023) << 52);
        xs[u] = (v4d)((v4i)res & ~under[u]);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SAMPLER_HOT __attribute__((target_clones("arch=x86-64-v3", "default"), optimize("fp-contract=fast")))
#else
#define SAMPLER_HOT
#endif

/* The sum of w[i] = exp((l[i] - mx) * (1 / t)) over i < n, in interleaved partial sums. With w, the
 * weights are stored there, each candidate's bucket in bucket[i] (round((mx - l[i]) * (1 / t) * 16),
 * capped at N_BUCKETS - 1, NaN too: rounding is monotonic, so a lower logit never gets an earlier bucket)
 * and the weight of each bucket summed in bsum. VEXP_U vectors at a time. */
static SAMPLER_HOT double weights(const float *l, int n, double mx, double t, double *w, uint16_t *bucket,
                                  double *bsum) {
    enum { U = VEXP_U };
    v4d acc[U];
    for (int u = 0; u < U; u++) acc[u] = V4(0.0);
    const v4d vmx = V4(mx), vit = V4(1.0 / t), top = V4((double)(N_BUCKETS - 1)), shifter = V4(0x1.8p52);
    for (int i = 0; i < n; i += 4 * U) {
        int m = n - i < 4 * U ? n - i : 4 * U;
        v4d x[U], d[U];
        for (int u = 0; u < U; u++) {
            if (m == 4 * U) {
                v4f f; /* four floats widened in registers (lane by lane stores would stall the load) */
                memcpy(&f, l + i + 4 * u, sizeof f);
                x[u] = __builtin_convertvector(f, v4d);
            } else {
                x[u] = V4(-INFINITY); /* the tail: -inf weighs 0 */
                for (int j = 0; j < 4 && 4 * u + j < m; j++) x[u][j] = l[i + 4 * u + j];
            }
            d[u] = (vmx - x[u]) * vit * V4((double)BUCKETS_PER_T);
            x[u] = (x[u] - vmx) * vit;
        }
        vexp4(x);
        for (int u = 0; u < U; u++) acc[u] += x[u];
        if (!w) continue;
        for (int u = 0; u < U; u++) {
            v4i in = d[u] < top;
            d[u] = (v4d)(((v4i)d[u] & in) | ((v4i)top & ~in));
            v4i b = (v4i)(d[u] + shifter) - (v4i)shifter;
            if (m == 4 * U) memcpy(w + i + 4 * u, &x[u], sizeof x[u]);
            for (int j = 0; j < 4 && 4 * u + j < m; j++) {
                if (m < 4 * U) w[i + 4 * u + j] = x[u][j];
                bucket[i + 4 * u + j] = (uint16_t)b[j];
            }
        }
    }
    if (w)
        for (int i = 0; i < n; i++) bsum[bucket[i]] += w[i];
    for (int u = 1; u < U; u++) acc[0] += acc[u];
    return (acc[0][0] + acc[0][1]) + (acc[0][2] + acc[0][3]);
}

/* The first index of the largest l[i] (greedy's token; NaN entries are never chosen unless all are):
 * the maximum through eight-wide vectors, then the first index holding it. A plain running argmax would
 * be one long chain of dependent compare-and-moves, ~5x slower on 150k-260k entries. */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

static SAMPLER_HOT int argmax(const float *l, int n) {
    v8f m = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f x;
        memcpy(&x, l + i, sizeof x);
        v8i gt = x > m;
        m = (v8f)(((v8i)x & gt) | ((v8i)m & ~gt));
    }
    float best = -INFINITY;
    for (int j = 0; j < 8; j++) best = m[j] > best ? m[j] : best;
    for (; i < n; i++) best = l[i] > best ? l[i] : best;
    for (i = 0; i < n; i++)
        if (l[i] == best) return i;
    return 0; /* every entry NaN (or -inf: then index 0 is the first of them, found above) */
}

/* The draw when every candidate is kept: u * sum located through the bucket sums (top of the file). */
static int32_t draw_all(sampler *s, double mx, double u) {
    const float *l = s->l;
    int n = s->n_vocab;
    double t = s->p.temperature;
    memset(s->bsum, 0, sizeof s->bsum);
    double sum = weights(l, n, mx, t, s->pr, s->bucket, s->bsum);
    double target = u * sum, acc = 0;
    int b = 0, last = 0;
    for (; b < N_BUCKETS; b++) {
        if (s->bsum[b] > 0) last = b;
        if (target < acc + s->bsum[b]) break;
        acc += s->bsum[b];
    }
    if (b == N_BUCKETS) b = last; /* u * sum rounded past the total: the last candidate of the last bucket */
    int k = 0;
    for (int i = 0; i < n; i++)
        if (s->bucket[i] == b) s->c[k++] = (cand){i, l[i]};
    qsort(s->c, (size_t)k, sizeof *s->c, by_order);
    for (int i = 0; i < k; i++) {
        acc += s->pr[s->c[i].id];
        if (target < acc) return s->c[i].id;
    }
    return s->c[k - 1].id;
}

int32_t sampler_pick(sampler *s, const float *logits, double u) {
    const sampler_params *p = &s->p;
    int n = s->n_vocab;
    float *l = s->l;
    memcpy(l, logits, sizeof *l * (size_t)n);
    /* penalties over the recent history */
    bool pen = p->repeat_penalty != 1 || p->presence_penalty != 0 || p->frequency_penalty != 0;
    if (pen && s->n_hist) {
        for (int i = 0; i < s->n_hist; i++)
            if (s->hist[i] >= 0 && s->hist[i] < n) s->count[s->hist[i]]++;
        for (int i = 0; i < s->n_hist; i++) {
            int32_t t = s->hist[i];
            if (t < 0 || t >= n || s->count[t] == 0) continue;
            l[t] = l[t] > 0 ? l[t] / p->repeat_penalty : l[t] * p->repeat_penalty;
            l[t] -= (float)s->count[t] * p->frequency_penalty + p->presence_penalty;
            s->count[t] = 0; /* apply once per distinct token, and leave the scratch zeroed */
        }
    }
    int best = argmax(l, n);
    if (p->temperature <= 0) return best;
    double mx = l[best];
    s->n_sorted = 0;
    int m = n; /* candidates kept: c[0..m) in order, or all n while m == n */
    if (p->top_k > 0 && p->top_k < m) {
        m = p->top_k;
        sort_top(s, m);
    }
    /* pr[i]: the weight at temperature 1 of candidate i in order, as far as the filters look */
    double *pr = s->pr;
    int n_pr = 0;
    if (p->top_p < 1) {
        double sum = 0; /* the normaliser over every kept candidate: in order when they are a prefix */
        if (m < n)
            for (int i = 0; i < m; i++) sum += exp((double)s->c[i].logit - mx);
        else
            sum = weights(l, n, mx, 1.0, NULL, NULL, NULL);
        double acc = 0;
        for (int i = 0; i < m; i++) {
            pr[n_pr++] = exp((double)nth(s, i)->logit - mx);
            acc += pr[i] / sum;
            if (acc >= p->top_p) {
                m = i + 1;
                break;
            }
        }
    }
    if (p->min_p > 0) {
        if (n_pr == 0) pr[n_pr++] = exp((double)nth(s, 0)->logit - mx);
        int keep = 1;
        while (keep < m) {
            if (keep >= n_pr) pr[n_pr++] = exp((double)nth(s, keep)->logit - mx);
            if (!(pr[keep] >= p->min_p * pr[0])) break;
            keep++;
        }
        m = keep;
    }
    if (m == n) return draw_all(s, mx, u);
    /* temperature, then the draw: the first candidate in order whose cumulative weight passes u * sum */
    double t = p->temperature, sum = 0;
    for (int i = 0; i < m; i++) sum += pr[i] = exp(((double)s->c[i].logit - mx) / t);
    double target = u * sum, acc = 0;
    for (int i = 0; i < m; i++) {
        acc += pr[i];
        if (target < acc) return s->c[i].id;
    }
    return s->c[m - 1].id; /* u * sum rounded past the last cumulative weight */
}

int32_t sampler_sample(sampler *s, const float *logits) {
    double u = s->p.temperature > 0 ? (double)(rng_u64(&s->r) >> 11) * 0x1p-53 : 0;
    return sampler_pick(s, logits, u);
}
