#include "engine/sampler.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

typedef struct cand { int32_t id; float logit; } cand;

struct sampler {
    sampler_params p;
    int n_vocab;
    cand *c;          /* n_vocab candidates */
    int32_t *hist;    /* ring of the last penalty_last_n tokens */
    int n_hist, hist_pos;
    int *count;       /* n_vocab occurrence counts (scratch) */
    double *pr;       /* n_vocab probabilities (scratch) */
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
    s->c = malloc(sizeof(cand) * (size_t)n_vocab);
    s->count = calloc((size_t)n_vocab, sizeof(int));
    s->pr = malloc(sizeof(double) * (size_t)n_vocab);
    s->hist = malloc(sizeof(int32_t) * (size_t)(p->penalty_last_n > 0 ? p->penalty_last_n : 1));
    if (!s->c || !s->count || !s->hist || !s->pr) {
        sampler_free(s);
        return err_set(e, ERR_NOMEM, "out of memory");
    }
    rng_seed(&s->r, p->seed);
    *out = s;
    return 0;
}

void sampler_free(sampler *s) {
    if (!s) return;
    free(s->c);
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

static int by_logit_desc(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id - y->id;
}

int32_t sampler_sample(sampler *s, const float *logits) {
    const sampler_params *p = &s->p;
    int n = s->n_vocab;
    for (int i = 0; i < n; i++) s->c[i] = (cand){i, logits[i]};
    /* penalties over the recent history */
    bool pen = p->repeat_penalty != 1 || p->presence_penalty != 0 || p->frequency_penalty != 0;
    if (pen && s->n_hist) {
        for (int i = 0; i < s->n_hist; i++)
            if (s->hist[i] >= 0 && s->hist[i] < n) s->count[s->hist[i]]++;
        for (int i = 0; i < s->n_hist; i++) {
            int32_t t = s->hist[i];
            if (t < 0 || t >= n || s->count[t] == 0) continue;
            float *l = &s->c[t].logit;
            *l = *l > 0 ? *l / p->repeat_penalty : *l * p->repeat_penalty;
            *l -= (float)s->count[t] * p->frequency_penalty + p->presence_penalty;
            s->count[t] = 0; /* apply once per distinct token, and leave the scratch zeroed */
        }
    }
    if (p->temperature <= 0) {
        int best = 0;
        for (int i = 1; i < n; i++)
            if (s->c[i].logit > s->c[best].logit) best = i;
        return s->c[best].id;
    }
    int m = n;
    qsort(s->c, (size_t)n, sizeof(cand), by_logit_desc);
    if (p->top_k > 0 && p->top_k < m) m = p->top_k;
    /* softmax over the kept candidates (at temperature 1 for the p filters, as llama.cpp) */
    double sum = 0, mx = s->c[0].logit;
    double *pr = s->pr;
    for (int i = 0; i < m; i++) sum += pr[i] = exp((double)s->c[i].logit - mx);
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
    /* temperature, then a draw */
    sum = 0;
    for (int i = 0; i < m; i++) sum += pr[i] = exp(((double)s->c[i].logit - mx) / p->temperature);
    double u = (double)(rng_u64(&s->r) >> 11) * 0x1p-53 * sum, acc = 0;
    int32_t pick = s->c[m - 1].id;
    for (int i = 0; i < m; i++) {
        acc += pr[i];
        if (u < acc) {
            pick = s->c[i].id;
            break;
        }
    }
    return pick;
}
