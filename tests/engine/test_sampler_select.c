/* Sampler selection: the sampler sorts only the prefix of candidates that its filters and its draw reach
 * (engine/sampler.c). This test keeps the full-sort implementation it replaced (ref_dist and ref_draw below: qsort of
 * the whole vocabulary, then top-k -> top-p -> min-p -> temperature -> the draw) and checks that both
 * choose the same token for the same uniform u, on random logits (Gaussian of several scales, ties, -inf
 * entries, vocabularies from 1 to 150k) under random parameter sets (every filter on and off, penalties)
 * and many u per case (0 and random ones). The same token for every u is the same
 * distribution: each token owns the same interval of u. Sums are formed in another order only when no
 * filter cuts the vocabulary (the normaliser over all of it), which moves an interval's ends by a few
 * ulps; a random u lands within that of an end with probability ~1e-13 per draw, far below one in this
 * test's ~50k draws (u = 1 - 2^-53, just below the end of the last interval, would land there on purpose:
 * it is left out). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "check.h"
#include "engine/sampler.h"

typedef struct rcand { int32_t id; float logit; } rcand;

static int ref_desc(const void *a, const void *b) {
    const rcand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id - y->id;
}

/* The full-sort sampler as it was (sampler.c before partial selection), split in two so that the sort is
 * done once per case: ref_dist leaves the kept candidates in order in c[0..m) with their weights in
 * pr[0..m) and returns m; ref_draw is the draw for a given u. */
static int ref_dist(const sampler_params *p, const int32_t *hist, int n_hist, const float *logits, int n,
                    rcand *c, double *pr) {
    int *count = calloc((size_t)n, sizeof *count);
    for (int i = 0; i < n; i++) c[i] = (rcand){i, logits[i]};
    if (p->repeat_penalty != 1 || p->presence_penalty != 0 || p->frequency_penalty != 0) {
        for (int i = 0; i < n_hist; i++) count[hist[i]]++;
        for (int i = 0; i < n_hist; i++) {
            int32_t t = hist[i];
            if (count[t] == 0) continue;
            float *l = &c[t].logit;
            *l = *l > 0 ? *l / p->repeat_penalty : *l * p->repeat_penalty;
            *l -= (float)count[t] * p->frequency_penalty + p->presence_penalty;
            count[t] = 0;
        }
    }
    int m = n;
    qsort(c, (size_t)n, sizeof *c, ref_desc);
    if (p->top_k > 0 && p->top_k < m) m = p->top_k;
    double sum = 0, mx = c[0].logit;
    for (int i = 0; i < m; i++) sum += pr[i] = exp((double)c[i].logit - mx);
    if (p->top_p < 1) {
        double acc = 0;
        for (int i = 0; i < m; i++) {
            acc += pr[i] / sum;
            if (acc >= p->top_p) {
                m = i + 1;
                break;
            }
        }
    }
    if (p->min_p > 0) {
        int keep = 1;
        while (keep < m && pr[keep] >= p->min_p * pr[0]) keep++;
        m = keep;
    }
    for (int i = 0; i < m; i++) pr[i] = exp(((double)c[i].logit - mx) / p->temperature);
    free(count);
    return m;
}

static int32_t ref_draw(const rcand *c, const double *pr, int m, double u) {
    double sum = 0;
    for (int i = 0; i < m; i++) sum += pr[i];
    double target = u * sum, acc = 0;
    int32_t pick = c[m - 1].id;
    for (int i = 0; i < m; i++) {
        acc += pr[i];
        if (target < acc) {
            pick = c[i].id;
            break;
        }
    }
    return pick;
}

static float pick_of(rng *r, const float *v, int n) { return v[rng_u64(r) % (uint64_t)n]; }

int main(void) {
    static const int sizes[] = {1, 2, 7, 64, 65, 300, 1000, 4099, 32000, 151936};
    static const float scales[] = {0.3f, 1.0f, 3.0f, 10.0f};
    static const float temps[] = {0.1f, 0.5f, 0.8f, 1.0f, 1.5f, 4.0f};
    static const float top_ps[] = {1.0f, 1.0f, 0.95f, 0.5f, 0.1f, 0.999f};
    static const float min_ps[] = {0.0f, 0.0f, 0.05f, 0.5f, 1e-6f};
    rng r;
    rng_seed(&r, 2026);
    int cases = 0, draws = 0, mismatches = 0, distinct_multi = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int n = sizes[si], reps = n > 10000 ? 16 : 120, n_draws = n > 10000 ? 16 : 48;
        float *logits = malloc(sizeof *logits * (size_t)n);
        rcand *rc = malloc(sizeof *rc * (size_t)n);
        double *rw = malloc(sizeof *rw * (size_t)n);
        for (int rep = 0; rep < reps; rep++) {
            /* logits: Gaussian; every third case rounded to steps of 0.5 (many ties); some -inf */
            float scale = pick_of(&r, scales, 4);
            for (int i = 0; i < n; i++) {
                logits[i] = scale * rng_normal(&r);
                if (rep % 3 == 1) logits[i] = roundf(logits[i] * 2) / 2;
                if (rep % 5 == 2 && i % 7 == 3 && n > 1) logits[i] = -INFINITY;
            }
            sampler_params p = sampler_defaults();
            p.temperature = pick_of(&r, temps, 6);
            static const int k_choice[] = {0, 0, 1, 5, 40, -1, -2, -3};
            int k = k_choice[rng_u64(&r) % 8];
            p.top_k = k == -1 ? n - 1 : k == -2 ? n : k == -3 ? n + 5 : k;
            p.top_p = pick_of(&r, top_ps, 6);
            p.min_p = pick_of(&r, min_ps, 5);
            int32_t hist[32];
            int n_hist = 0;
            if (rep % 4 == 3) {
                p.repeat_penalty = 1.3f;
                p.presence_penalty = 0.5f;
                p.frequency_penalty = 0.2f;
                p.penalty_last_n = 32;
                for (int i = 0; i < 32; i++) hist[n_hist++] = (int32_t)(rng_u64(&r) % (uint64_t)(n < 8 ? n : 8));
            }
            sampler *s = NULL;
            err e = {0};
            CHECKF(sampler_new(&s, &p, n, &e) == 0, "%s", e.msg);
            if (!s) continue;
            for (int i = 0; i < n_hist; i++) sampler_accept(s, hist[i]);
            int rm = ref_dist(&p, hist, n_hist, logits, n, rc, rw);
            int32_t first = -1;
            bool multi = false;
            for (int d = 0; d < n_draws; d++) {
                double u = d == 0 ? 0.0 : (double)(rng_u64(&r) >> 11) * 0x1p-53;
                int32_t got = sampler_pick(s, logits, u), want = ref_draw(rc, rw, rm, u);
                draws++;
                if (got != want && mismatches++ < 10)
                    fprintf(stderr, "n %d temp %g top_k %d top_p %g min_p %g pen %d u %.17g: got %d, full sort %d\n",
                            n, p.temperature, p.top_k, p.top_p, p.min_p, n_hist > 0, u, got, want);
                if (d == 0) first = got;
                multi |= got != first;
            }
            distinct_multi += multi;
            sampler_free(s);
            cases++;
        }
        free(logits);
        free(rc);
        free(rw);
    }
    CHECKF(mismatches == 0, "%d of %d draws chose another token than the full sort", mismatches, draws);
    /* the cases must exercise draws, not only filters that leave one token */
    CHECKF(distinct_multi > cases / 3, "only %d of %d cases drew more than one token", distinct_multi, cases);
    printf("%d cases, %d draws, %d with several tokens drawn\n", cases, draws, distinct_multi);
    return check_report("test_sampler_select");
}
