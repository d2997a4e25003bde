/* Sampler: greedy is the argmax (ties to the lowest id); top-k 1 and min-p 1 reduce to greedy; the same
 * seed gives the same draws; draws at temperature 1 follow the softmax (chi-square on 20k draws); top-p
 * and top-k never return a token outside their set; repetition/presence/frequency penalties move the
 * choice away from seen tokens; bad parameters are refused with the field's name. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "engine/sampler.h"

#define V 8

static sampler *make(sampler_params p) {
    sampler *s = NULL;
    err e = {0};
    CHECKF(sampler_new(&s, &p, V, &e) == 0, "%s", e.msg);
    return s;
}

int main(void) {
    float logits[V] = {0.5f, 2.0f, 1.0f, 2.0f, -1.0f, 0.0f, 1.5f, -3.0f};
    sampler_params p = sampler_defaults();
    sampler *s = make(p);
    CHECK(sampler_sample(s, logits) == 1); /* ids 1 and 3 tie: lowest id */
    sampler_free(s);

    p.temperature = 1.0f;
    p.top_k = 1;
    s = make(p);
    for (int i = 0; i < 50; i++) CHECK(sampler_sample(s, logits) == 1);
    sampler_free(s);

    /* same seed, same stream; another seed, another stream */
    p = sampler_defaults();
    p.temperature = 1.0f;
    p.seed = 11;
    sampler *a = make(p), *b = make(p);
    p.seed = 12;
    sampler *c = make(p);
    int same = 0, diff = 0;
    for (int i = 0; i < 200; i++) {
        int x = sampler_sample(a, logits), y = sampler_sample(b, logits), z = sampler_sample(c, logits);
        same += x == y;
        diff += x != z;
    }
    CHECK(same == 200);
    CHECK(diff > 20);
    sampler_free(a);
    sampler_free(b);
    sampler_free(c);

    /* distribution at temperature 1 matches softmax */
    p = sampler_defaults();
    p.temperature = 1.0f;
    p.seed = 5;
    s = make(p);
    int counts[V] = {0}, n = 20000;
    for (int i = 0; i < n; i++) counts[sampler_sample(s, logits)]++;
    double z = 0, chi2 = 0;
    for (int i = 0; i < V; i++) z += exp(logits[i]);
    for (int i = 0; i < V; i++) {
        double expct = n * exp(logits[i]) / z;
        chi2 += (counts[i] - expct) * (counts[i] - expct) / expct;
    }
    CHECKF(chi2 < 24.3, "chi-square %.1f over 7 degrees of freedom (p < 0.001 would be 24.3)", chi2);
    sampler_free(s);

    /* top-p 0.5: the two top tokens (1, 3) hold 2 * e^2 / z = 0.58 of the mass, so only they come out */
    p.top_p = 0.5f;
    s = make(p);
    for (int i = 0; i < 500; i++) {
        int t = sampler_sample(s, logits);
        CHECKF(t == 1 || t == 3, "top-p returned %d", t);
    }
    sampler_free(s);
    /* top-k 3: ids 1, 3 and 6 */
    p = sampler_defaults();
    p.temperature = 2.0f;
    p.top_k = 3;
    s = make(p);
    for (int i = 0; i < 500; i++) {
        int t = sampler_sample(s, logits);
        CHECKF(t == 1 || t == 3 || t == 6, "top-k returned %d", t);
    }
    sampler_free(s);
    /* min-p 0.5 keeps tokens with p >= 0.5 p_max: e^1.5 / e^2 = 0.61 keeps id 6, e^1 / e^2 = 0.37 drops 2 */
    p = sampler_defaults();
    p.temperature = 1.0f;
    p.min_p = 0.5f;
    s = make(p);
    for (int i = 0; i < 500; i++) {
        int t = sampler_sample(s, logits);
        CHECKF(t == 1 || t == 3 || t == 6, "min-p returned %d", t);
    }
    sampler_free(s);

    /* penalties: after seeing 1 and 3, greedy moves to 6 */
    p = sampler_defaults();
    p.repeat_penalty = 2.0f;
    s = make(p);
    sampler_accept(s, 1);
    sampler_accept(s, 3);
    CHECK(sampler_sample(s, logits) == 6);
    sampler_free(s);
    p = sampler_defaults();
    p.presence_penalty = 1.0f;
    s = make(p);
    sampler_accept(s, 1);
    CHECK(sampler_sample(s, logits) == 3);
    sampler_free(s);
    p = sampler_defaults();
    p.frequency_penalty = 0.3f;
    s = make(p);
    sampler_accept(s, 3);
    sampler_accept(s, 1); /* 1 seen twice: 2.0 - 0.6 = 1.4 < 3's 1.7 */
    sampler_accept(s, 1);
    CHECK(sampler_sample(s, logits) == 3);
    /* the window: penalty_last_n = 64 by default, so logits must not have changed */
    CHECK(logits[1] == 2.0f);
    sampler_free(s);

    /* bad parameters */
    sampler *bad = NULL;
    err e = {0};
    p = sampler_defaults();
    p.top_p = 0;
    CHECK(sampler_new(&bad, &p, V, &e) != 0 && strstr(e.msg, "top_p"));
    p = sampler_defaults();
    p.temperature = NAN;
    CHECK(sampler_new(&bad, &p, V, &e) != 0 && strstr(e.msg, "temperature"));
    p = sampler_defaults();
    p.min_p = 2;
    CHECK(sampler_new(&bad, &p, V, &e) != 0 && strstr(e.msg, "min_p"));
    return check_report("test_sampler");
}
