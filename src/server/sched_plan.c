/* srv sched plan: the scheduler's decisions that need no model (see sched.h): the step's token plan,
 * prefix reuse and stop-string holdback. */
#include <string.h>

#include "server/sched.h"

int srv_plan_step(const srv_plan_slot *s, int n, int budget, int chunk, int *take) {
    int total = 0;
    for (int i = 0; i < n; i++) {
        take[i] = s[i].generating ? 1 : 0;
        total += take[i];
    }
    int left = budget - total;
    if (total > 0 && chunk > 0 && left > chunk) left = chunk;
    /* prefilling slots by arrival: a selection pass per chunk keeps this O(n^2) for n <= a few hundred */
    for (;;) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!s[i].generating && s[i].prefill_left > 0 && take[i] == 0 && (best < 0 || s[i].order < s[best].order))
                best = i;
        if (best < 0 || left <= 0) break;
        take[best] = s[best].prefill_left < left ? s[best].prefill_left : left;
        left -= take[best];
        total += take[best];
    }
    return total;
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
