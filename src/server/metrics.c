/* srv metrics: see metrics.h. Names follow Prometheus conventions (llm170_ prefix, _total counters,
 * _seconds units); TTFT is a histogram so p50/p99 can be computed by the scraper. */
#include "server/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double ttft_bounds[8] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

void srv_metrics_init(srv_metrics *m, int n_slots) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->n_slots = n_slots;
}

void srv_metrics_destroy(srv_metrics *m) { pthread_mutex_destroy(&m->mu); }

void srv_metrics_request(srv_metrics *m, int status) {
    pthread_mutex_lock(&m->mu);
    if (status < 300) m->req_2xx++;
    else if (status < 500) m->req_4xx++;
    else m->req_5xx++;
    if (status == 429) m->rejected_429++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_abandoned(srv_metrics *m) {
    pthread_mutex_lock(&m->mu);
    m->abandoned++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_ttft(srv_metrics *m, double s) {
    pthread_mutex_lock(&m->mu);
    m->ttft_sum += s;
    m->ttft_count++;
    for (int i = 0; i < 8; i++)
        if (s <= ttft_bounds[i]) m->ttft_bucket[i]++;
    pthread_mutex_unlock(&m->mu);
}

char *srv_metrics_text(srv_metrics *m, size_t *len) {
    size_t cap = 8192;
    char *b = malloc(cap);
    if (!b) return NULL;
    pthread_mutex_lock(&m->mu);
    int n = snprintf(b, cap,
        "# HELP llm170_requests_total HTTP requests answered, by status class.\n"
        "# TYPE llm170_requests_total counter\n"
        "llm170_requests_total{status=\"2xx\"} %llu\nllm170_requests_total{status=\"4xx\"} %llu\n"
        "llm170_requests_total{status=\"5xx\"} %llu\n"
        "# HELP llm170_requests_rejected_total Requests refused with 429 because the queue was full.\n"
        "# TYPE llm170_requests_rejected_total counter\nllm170_requests_rejected_total %llu\n"
        "# HELP llm170_requests_cancelled_total Generations stopped because the client went away.\n"
        "# TYPE llm170_requests_cancelled_total counter\nllm170_requests_cancelled_total %llu\n"
        "# HELP llm170_requests_abandoned_total Requests whose client left before a whole answer was sent.\n"
        "# TYPE llm170_requests_abandoned_total counter\nllm170_requests_abandoned_total %llu\n"
        "# HELP llm170_prompt_tokens_total Prompt tokens received.\n"
        "# TYPE llm170_prompt_tokens_total counter\nllm170_prompt_tokens_total %llu\n"
        "# HELP llm170_prompt_tokens_cached_total Prompt tokens reused from a slot's cache (not decoded).\n"
        "# TYPE llm170_prompt_tokens_cached_total counter\nllm170_prompt_tokens_cached_total %llu\n"
        "# HELP llm170_generated_tokens_total Tokens generated.\n"
        "# TYPE llm170_generated_tokens_total counter\nllm170_generated_tokens_total %llu\n"
        "# HELP llm170_constrained_tokens_total Tokens drawn under a JSON constraint.\n"
        "# TYPE llm170_constrained_tokens_total counter\nllm170_constrained_tokens_total %llu\n"
        "# HELP llm170_constrained_masks_total Constrained tokens whose first draw was refused (the vocabulary mask was built).\n"
        "# TYPE llm170_constrained_masks_total counter\nllm170_constrained_masks_total %llu\n"
        "# HELP llm170_spec_rounds_total Speculative rounds: a slot's span with drafts verified in a step.\n"
        "# TYPE llm170_spec_rounds_total counter\nllm170_spec_rounds_total %llu\n"
        "# HELP llm170_spec_drafted_total Draft tokens verified.\n"
        "# TYPE llm170_spec_drafted_total counter\nllm170_spec_drafted_total %llu\n"
        "# HELP llm170_spec_accepted_total Draft tokens accepted (emitted without a pass of their own).\n"
        "# TYPE llm170_spec_accepted_total counter\nllm170_spec_accepted_total %llu\n"
        "# HELP llm170_decode_steps_total Batched forward passes.\n"
        "# TYPE llm170_decode_steps_total counter\nllm170_decode_steps_total %llu\n"
        "# HELP llm170_decode_seconds_total Time inside batched forward passes.\n"
        "# TYPE llm170_decode_seconds_total counter\nllm170_decode_seconds_total %.6f\n"
        "# HELP llm170_tokens_per_second Tokens (prompt and generated) decoded per second in the last step.\n"
        "# TYPE llm170_tokens_per_second gauge\nllm170_tokens_per_second %.3f\n"
        "# HELP llm170_queue_length Requests waiting for a free slot.\n"
        "# TYPE llm170_queue_length gauge\nllm170_queue_length %d\n"
        "# HELP llm170_slots_busy Slots running a request.\n"
        "# TYPE llm170_slots_busy gauge\nllm170_slots_busy %d\n"
        "# HELP llm170_slots_total Slots (parallel sequences).\n"
        "# TYPE llm170_slots_total gauge\nllm170_slots_total %d\n"
        "# HELP llm170_time_to_first_token_seconds Time from request to its first generated token.\n"
        "# TYPE llm170_time_to_first_token_seconds histogram\n",
        (unsigned long long)m->req_2xx, (unsigned long long)m->req_4xx, (unsigned long long)m->req_5xx,
        (unsigned long long)m->rejected_429, (unsigned long long)m->cancelled, (unsigned long long)m->abandoned, (unsigned long long)m->prompt_tokens,
        (unsigned long long)m->cached_tokens, (unsigned long long)m->gen_tokens, (unsigned long long)m->jc_tokens,
        (unsigned long long)m->jc_masks, (unsigned long long)m->spec_rounds, (unsigned long long)m->spec_drafted,
        (unsigned long long)m->spec_accepted, (unsigned long long)m->steps,
        m->decode_seconds, m->last_step_tps, m->queue_len, m->slots_busy, m->n_slots);
    for (int i = 0; i < 8 && n > 0 && (size_t)n < cap; i++)
        n += snprintf(b + n, cap - (size_t)n, "llm170_time_to_first_token_seconds_bucket{le=\"%g\"} %llu\n",
                      ttft_bounds[i], (unsigned long long)m->ttft_bucket[i]);
    if (n > 0 && (size_t)n < cap)
        n += snprintf(b + n, cap - (size_t)n,
                      "llm170_time_to_first_token_seconds_bucket{le=\"+Inf\"} %llu\n"
                      "llm170_time_to_first_token_seconds_sum %.6f\nllm170_time_to_first_token_seconds_count %llu\n",
                      (unsigned long long)m->ttft_count, m->ttft_sum, (unsigned long long)m->ttft_count);
    pthread_mutex_unlock(&m->mu);
    if (n < 0 || (size_t)n >= cap) {
        free(b);
        return NULL;
    }
    *len = (size_t)n;
    return b;
}
