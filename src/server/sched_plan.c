/* srv sched plan: the scheduler's decisions that need no model (see sched.h): the step's token plan,
 * speculation's step costs, prefix reuse and stop-string holdback. */
#include <string.h>

#include "server/sched.h"

int srv_plan_step(const srv_plan_slot *s, int n, int budget, int chunk, int *take) {
    int total = 0;
    for (int i = 0; i < n; i++) {
        take[i] = s[i].generating ? (s[i].span > 1 ? s[i].span : 1) : 0;
        total += take[i];
    }
    int left = budget - total;
    const bool decoding = total > 0 && chunk > 0; /* the step's length delays running streams */
    if (decoding && left > chunk) left = chunk;
    const int cap = left; /* prompt tokens this step may take */
    /* prefilling slots by arrival: a selection pass per chunk keeps this O(n^2) for n <= a few hundred */
    for (;;) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!s[i].generating && s[i].prefill_left > 0 && take[i] == 0 && (best < 0 || s[i].order < s[best].order))
                best = i;
        if (best < 0 || left <= 0) break;
        int want = s[best].prefill_left;
        if (want > cap) {
            /* the fewest steps of at most `cap` tokens, in even pieces: 255 tokens under a cap of 96 go as
               85 + 85 + 85, not 96 + 96 + 63 (the same passes, a shorter longest step) */
            int pieces = (want + cap - 1) / cap;
            want = (want + pieces - 1) / pieces;
        }
        if (want > left) want = left;
        /* beside running streams, under a cap that holds full pieces, a piece that leaves part of its prompt
           for later is never a sliver: it would run row by row (a CPU pass takes the int8 products only for
           spans of >= 16 tokens) at several times a full piece's cost per token, lengthening the streams'
           step, and the prompt needs as many later steps either way */
        if (decoding && cap >= 2 * SRV_PLAN_MIN_PIECE && want < SRV_PLAN_MIN_PIECE && want < s[best].prefill_left)
            break;
        take[best] = want;
        left -= want;
        total += want;
    }
    return total;
}

int srv_plan_order(const int *take, int n, int *order) {
    int nb = 0;
    for (int i = 0; i < n; i++) {
        if (!take[i]) continue;
        int k = nb++;
        for (; k > 0 && take[order[k - 1]] > take[i]; k--) order[k] = order[k - 1]; /* stable insertion */
        order[k] = i;
    }
    return nb;
}

void srv_step_cost_add(srv_step_cost *c, int rows, double seconds) {
    if (rows < 1 || rows >= c->n || seconds <= 0) return;
    double *t = &c->t[rows];
    *t = *t > 0 ? 0.75 * *t + 0.25 * seconds : seconds; /* moving average: the machine's load drifts */
}

double srv_step_cost_at(const srv_step_cost *c, int rows) {
    if (rows >= 1 && rows < c->n && c->t[rows] > 0) return c->t[rows];
    int lo = rows - 1, hi = rows + 1;
    while (lo >= 1 && (lo >= c->n || c->t[lo] <= 0)) lo--;
    while (hi < c->n && c->t[hi] <= 0) hi++;
    if (lo >= 1 && hi < c->n) return c->t[lo] + (c->t[hi] - c->t[lo]) * (rows - lo) / (hi - lo);
    if (lo >= 1) return c->t[lo] * (1.0 + 0.1 * (rows - lo) / lo);
    if (hi < c->n) return c->t[hi];
    return -1;
}

bool srv_spec_costs(const srv_step_cost *c, int others, int tokens, int kmax, double *costs) {
    const double base = srv_step_cost_at(c, others + 1);
    if (base <= 0) return false;
    costs[0] = base / (tokens > 1 ? tokens : 1);
    for (int k = 1; k <= kmax; k++) {
        double more = srv_step_cost_at(c, others + 1 + k) - base;
        costs[k] = costs[0] + (more > 0 ? more : 0); /* measurements are noisy: never cheaper than no drafts */
    }
    return true;
}

int srv_prefix_reuse(const int32_t *cache, int n_cache, int ckpt_pos, bool recurrent, const int32_t *prompt,
                     int n_prompt, int *how) {
    int limit = n_prompt - 1, common = 0;
    while (common < n_cache && common < limit && cache[common] == prompt[common]) common++;
    *how = SRV_REUSE_NONE;
    if (common == 0) return 0;
    if (common == n_cache) {
        *how = SRV_REUSE_KEEP;
        return common;
    }
    if (!recurrent) {
        *how = SRV_REUSE_TRUNCATE;
        return common;
    }
    if (ckpt_pos > 0 && common >= ckpt_pos) {
        *how = SRV_REUSE_RESTORE;
        return ckpt_pos;
    }
    return 0;
}

size_t srv_stop_scan(const char *text, size_t len, size_t emitted, char *const *stop, int n_stop, int *hit) {
    *hit = -1;
    size_t cut = len;
    for (int i = 0; i < n_stop; i++) {
        size_t sl = strlen(stop[i]);
        /* a match can only end after `emitted`, so it starts at most sl-1 bytes before it */
        size_t from = emitted >= sl ? emitted - sl + 1 : 0;
        const char *p = from < len ? memmem(text + from, len - from, stop[i], sl) : NULL;
        if (p && (size_t)(p - text) < cut) {
            cut = (size_t)(p - text);
            *hit = i;
        }
    }
    if (*hit >= 0) return cut < emitted ? emitted : cut;
    /* hold back the longest tail that is a proper prefix of some stop string */
    size_t safe = len;
    for (int i = 0; i < n_stop; i++) {
        size_t sl = strlen(stop[i]);
        for (size_t k = sl - 1 < len ? sl - 1 : len; k > 0; k--)
            if (len - k < safe && memcmp(text + len - k, stop[i], k) == 0) {
                safe = len - k;
                break;
            }
    }
    return safe < emitted ? emitted : safe;
}
