/* srv metrics: the counters behind GET /metrics (Prometheus text format 0.0.4). Updated by HTTP threads
 * (requests by status) and the scheduler (tokens, queue, slots, time to first token); one mutex guards
 * all of it, taken a few times per step at most. The struct is owned by the server and lives as long. */
#ifndef LLM170_SERVER_METRICS_H
#define LLM170_SERVER_METRICS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct srv_metrics {
    pthread_mutex_t mu;
    uint64_t req_2xx, req_4xx, req_5xx, rejected_429, cancelled, abandoned;
    uint64_t prompt_tokens, cached_tokens, gen_tokens, steps;
    uint64_t jc_tokens, jc_masks;  /* constrained tokens drawn; of those, how many needed the full mask */
    uint64_t spec_rounds, spec_drafted, spec_accepted; /* speculative rounds (spans with drafts), drafts, drafts kept */
    double decode_seconds;       /* wall time inside llm170_decode */
    double ttft_sum;             /* seconds from submit to first token, summed over jobs that got one */
    uint64_t ttft_count;
    uint64_t ttft_bucket[8];     /* cumulative counts for SRV_TTFT_BOUNDS */
    int queue_len, slots_busy, n_slots;
    double last_step_tps;        /* tokens decoded per second in the last step */
} srv_metrics;

void srv_metrics_init(srv_metrics *m, int n_slots);
void srv_metrics_destroy(srv_metrics *m);
void srv_metrics_request(srv_metrics *m, int status);
/* A request whose client left before its answer (not a client error: counted apart from the 4xx). */
void srv_metrics_abandoned(srv_metrics *m);
void srv_metrics_ttft(srv_metrics *m, double seconds);
/* The Prometheus text (malloc'd; caller frees). */
char *srv_metrics_text(srv_metrics *m, size_t *len);

#endif
