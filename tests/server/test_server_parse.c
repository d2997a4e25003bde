/* The server's model-free pieces: request parsing (the bad-request table: every malformed body gets a 400
 * naming the field, never a crash), the step planner (continuous batching within a token budget), prefix
 * reuse decisions and stop-string holdback. The HTTP end to end is tests/server/cli_server.sh. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "server/request.h"
#include "server/sched.h"

static void expect_bad(srv_api api, const char *body, const char *param, const char *msg_part) {
    srv_params p;
    srv_err e = {0};
    int rc = srv_parse_request(api, body, strlen(body), &p, &e);
    CHECKF(rc == -1 && e.status == 400, "%s: rc %d status %d", body, rc, e.status);
    CHECKF(!param || (e.param && !strcmp(e.param, param)), "%s: param %s, expected %s", body, e.param ? e.param : "-", param);
    CHECKF(strstr(e.msg, msg_part) != NULL, "%s: message '%s' lacks '%s'", body, e.msg, msg_part);
    srv_params_free(&p);
}

static void check_parse(void) {
    srv_params p;
    srv_err e = {0};
    const char *ok = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                     "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi \"},{\"type\":\"text\",\"text\":\"there\"}]}],"
                     "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"max_tokens\":7,\"temperature\":0,"
                     "\"top_k\":5,\"seed\":42,\"stop\":[\"a\",\"bc\"],\"logprobs\":true,\"top_logprobs\":3}";
    CHECKF(srv_parse_request(SRV_API_CHAT, ok, strlen(ok), &p, &e) == 0, "%s", e.msg);
    CHECK(p.stream && p.include_usage && p.max_tokens == 7 && p.sp.temperature == 0 && p.sp.top_k == 5);
    CHECK(p.seed_given && p.sp.seed == 42 && p.n_stop == 2 && !strcmp(p.stop[1], "bc") && p.n_probs == 3);
    CHECKF(p.messages && strstr(p.messages, "\"content\":\"hi there\""), "parts joined: %s", p.messages);
    srv_params_free(&p);

    const char *anth = "{\"model\":\"m\",\"max_tokens\":5,\"system\":[{\"type\":\"text\",\"text\":\"S\"}],"
                       "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],\"stop_sequences\":[\"x\"]}";
    CHECKF(srv_parse_request(SRV_API_MESSAGES, anth, strlen(anth), &p, &e) == 0, "%s", e.msg);
    CHECKF(p.messages && strstr(p.messages, "{\"role\":\"system\",\"content\":\"S\"}") == p.messages + 1,
           "system first: %s", p.messages);
    CHECK(p.max_tokens == 5 && p.n_stop == 1);
    srv_params_free(&p);

    const char *comp = "{\"prompt\":[1,2,3],\"logprobs\":2}";
    CHECKF(srv_parse_request(SRV_API_COMPLETION, comp, strlen(comp), &p, &e) == 0, "%s", e.msg);
    CHECK(p.n_prompt_ids == 3 && p.prompt_ids[2] == 3 && p.n_probs == 2 && p.max_tokens == -1);
    srv_params_free(&p);

    /* the bad-request table */
    expect_bad(SRV_API_CHAT, "{\"messages\": [", NULL, "invalid JSON");
    expect_bad(SRV_API_CHAT, "[1,2]", NULL, "must be a JSON object");
    expect_bad(SRV_API_CHAT, "{}", "messages", "'messages' is required");
    expect_bad(SRV_API_CHAT, "{\"messages\":\"hi\"}", "messages", "must be an array");
    expect_bad(SRV_API_CHAT, "{\"messages\":[]}", "messages", "must not be empty");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"content\":\"x\"}]}", "messages", "no 'role'");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", "messages", "role must be");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages", "content must be");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", "content",
               "only \"text\" parts");
    expect_bad(SRV_API_CHAT, "{\"model\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "model", "must be a string");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":\"9\"}", "max_tokens",
               "must be an integer");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":0}", "max_tokens", "must be in");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":99999999999}", "max_tokens",
               "must be in");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":\"hot\"}", "temperature",
               "must be a number");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":7}", "temperature", "must be in");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":1}", "stream", "must be a boolean");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[1]}", "stop", "must be a string");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":3}", "n", "must be in 1..1");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_logprobs\":3}", "top_logprobs",
               "needs 'logprobs'");
    expect_bad(SRV_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"a\":1,\"a\":2}", NULL, "invalid JSON");
    expect_bad(SRV_API_COMPLETION, "{}", "prompt", "'prompt' is required");
    expect_bad(SRV_API_COMPLETION, "{\"prompt\":[1,-2]}", "prompt", "token id");
    expect_bad(SRV_API_COMPLETION, "{\"prompt\":{}}", "prompt", "must be a string");
    expect_bad(SRV_API_MESSAGES, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "max_tokens", "is required");
    expect_bad(SRV_API_MESSAGES, "{\"max_tokens\":4,\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}", "messages",
               "role must be");
    expect_bad(SRV_API_MESSAGES, "{\"max_tokens\":4,\"system\":7,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
               "system", "must be a string");
}

static void check_plan(void) {
    /* two generating slots, three prefilling ones (arrival order 5, 2, 9), budget 10 */
    srv_plan_slot s[5] = {{true, 0, 1, 1}, {false, 6, 5, 0}, {false, 4, 2, 0}, {true, 0, 3, 1}, {false, 30, 9, 0}};
    int take[5];
    int total = srv_plan_step(s, 5, 10, 0, take);
    CHECKF(total == 10 && take[0] == 1 && take[3] == 1, "total %d", total);
    CHECKF(take[2] == 4 && take[1] == 4 && take[4] == 0, "oldest prefill first: %d %d %d", take[2], take[1], take[4]);
    /* decoding never starves, even with a budget smaller than the generating slots */
    srv_plan_slot g[3] = {{true, 0, 0, 1}, {true, 0, 1, 1}, {false, 8, 2, 0}};
    total = srv_plan_step(g, 3, 1, 0, take);
    CHECK(total == 2 && take[0] == 1 && take[1] == 1 && take[2] == 0);
    srv_plan_slot idle[2] = {{false, 0, 0, 0}, {false, 0, 1, 0}};
    CHECK(srv_plan_step(idle, 2, 64, 0, take) == 0);
    /* a prefill chunk of 5 while slots generate: the oldest prompt takes 4, the next 1, the third none */
    total = srv_plan_step(s, 5, 10, 5, take);
    CHECKF(total == 7 && take[0] == 1 && take[3] == 1, "chunk: total %d", total);
    CHECKF(take[2] == 4 && take[1] == 1 && take[4] == 0, "chunk: %d %d %d", take[2], take[1], take[4]);
    /* no slot generating: the chunk does not apply, the whole budget prefills */
    srv_plan_slot p[2] = {{false, 30, 1, 0}, {false, 30, 2, 0}};
    total = srv_plan_step(p, 2, 40, 5, take);
    CHECKF(total == 40 && take[0] == 30 && take[1] == 10, "no decode: total %d (%d %d)", total, take[0], take[1]);
    /* speculating slots: their spans (pending token + drafts) count against the budget, prefill gets the rest
       (14 tokens: the 30-token prompt goes in even pieces of 10) */
    srv_plan_slot sp[3] = {{true, 0, 0, 5}, {true, 0, 1, 1}, {false, 30, 2, 0}};
    total = srv_plan_step(sp, 3, 20, 0, take);
    CHECKF(total == 16 && take[0] == 5 && take[1] == 1 && take[2] == 10, "spans: total %d (%d %d %d)", total, take[0],
           take[1], take[2]);
}

/* The step planner's even pieces and its rule against slivers (the ITL tail of `llm170 serve` at 8 clients:
 * docs/benchmarks.md, "Server: where the inter-token latency tail came from"). */
static void check_plan_pieces(void) {
    int take[3];
    /* a 255-token prompt under a cap of 96 beside a running stream: 85 + 85 + 85, not 96 + 96 + 63 */
    srv_plan_slot a[2] = {{true, 0, 0, 1}, {false, 255, 1, 0}};
    int total = srv_plan_step(a, 2, 512, 96, take);
    CHECKF(total == 86 && take[1] == 85, "even pieces: %d", take[1]);
    a[1].prefill_left = 170;
    CHECKF(srv_plan_step(a, 2, 512, 96, take) == 86 && take[1] == 85, "even pieces, second: %d", take[1]);
    a[1].prefill_left = 85;
    CHECKF(srv_plan_step(a, 2, 512, 96, take) == 86 && take[1] == 85, "even pieces, last: %d", take[1]);
    /* a prompt that fits the cap is taken whole */
    a[1].prefill_left = 96;
    CHECKF(srv_plan_step(a, 2, 512, 96, take) == 97 && take[1] == 96, "whole: %d", take[1]);
    /* the 11 tokens the first piece leaves are no sliver of the next prompt: it waits for its own step */
    srv_plan_slot b[3] = {{true, 0, 0, 1}, {false, 255, 1, 0}, {false, 255, 2, 0}};
    total = srv_plan_step(b, 3, 512, 96, take);
    CHECKF(total == 86 && take[1] == 85 && take[2] == 0, "no sliver: %d %d", take[1], take[2]);
    /* ... but a prompt those tokens finish takes them */
    b[2].prefill_left = 11;
    total = srv_plan_step(b, 3, 512, 96, take);
    CHECKF(total == 97 && take[1] == 85 && take[2] == 11, "finishing piece: %d %d", take[1], take[2]);
    /* with no stream running the budget is filled, short piece or not */
    srv_plan_slot c[2] = {{false, 500, 1, 0}, {false, 255, 2, 0}};
    total = srv_plan_step(c, 2, 512, 96, take);
    CHECKF(total == 512 && take[0] == 500 && take[1] == 12, "no decode: %d %d", take[0], take[1]);
    /* the batch order: the decode rows side by side before the prompt pieces, slot order among equals */
    int t8[8] = {1, 1, 1, 85, 0, 1, 1, 12}, order[8];
    int nb = srv_plan_order(t8, 8, order);
    CHECKF(nb == 7 && order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 5 && order[4] == 6 &&
               order[5] == 7 && order[6] == 3,
           "order: %d %d %d %d %d %d %d", order[0], order[1], order[2], order[3], order[4], order[5], order[6]);
}

/* Speculation's step costs: interpolation, the optimistic guess above the longest measured step, and the
 * per-token price of a step shared by several slots. */
static void check_step_costs(void) {
    double t[40] = {0}, costs[5];
    srv_step_cost c = {t, 40};
    CHECK(srv_step_cost_at(&c, 4) < 0 && !srv_spec_costs(&c, 0, 1, 4, costs));
    srv_step_cost_add(&c, 4, 0.040);
    srv_step_cost_add(&c, 12, 0.080);
    CHECK(srv_step_cost_at(&c, 2) == 0.040);                        /* below: the smallest measured */
    CHECKF(fabs(srv_step_cost_at(&c, 8) - 0.060) < 1e-12, "interpolated: %g", srv_step_cost_at(&c, 8));
    CHECKF(fabs(srv_step_cost_at(&c, 24) - 0.088) < 1e-12, "extrapolated: %g", srv_step_cost_at(&c, 24)); /* +10% per 12 rows */
    srv_step_cost_add(&c, 4, 0.080); /* a moving average */
    CHECKF(fabs(srv_step_cost_at(&c, 4) - 0.050) < 1e-12, "average: %g", srv_step_cost_at(&c, 4));
    /* 4 slots, 3 others' rows: a token costs t(4) / 4, k drafts add t(4 + k) - t(4) */
    CHECK(srv_spec_costs(&c, 3, 4, 4, costs));
    CHECKF(fabs(costs[0] - 0.0125) < 1e-12 && fabs(costs[4] - (0.0125 + 0.065 - 0.050)) < 1e-12, "costs %g %g",
           costs[0], costs[4]);
    /* one slot alone: t(1) and t(1 + k) */
    double u[8] = {0};
    srv_step_cost d = {u, 8};
    srv_step_cost_add(&d, 1, 0.020);
    srv_step_cost_add(&d, 3, 0.030);
    CHECK(srv_spec_costs(&d, 0, 1, 2, costs) && costs[0] == 0.020 && fabs(costs[2] - 0.030) < 1e-12);
}

static void check_reuse(void) {
    int32_t cache[6] = {1, 2, 3, 4, 5, 6}, p1[5] = {1, 2, 3, 9, 9}, p2[8] = {1, 2, 3, 4, 5, 6, 7, 8}, p3[4] = {1, 2, 3, 4};
    int how;
    CHECK(srv_prefix_reuse(cache, 6, -1, false, p1, 5, &how) == 3 && how == SRV_REUSE_TRUNCATE);
    CHECK(srv_prefix_reuse(cache, 6, -1, true, p1, 5, &how) == 0 && how == SRV_REUSE_NONE);
    CHECK(srv_prefix_reuse(cache, 6, 2, true, p1, 5, &how) == 2 && how == SRV_REUSE_RESTORE);
    CHECK(srv_prefix_reuse(cache, 6, 2, true, p2, 8, &how) == 6 && how == SRV_REUSE_KEEP);
    /* the same prompt again: one token is left to decode */
    CHECK(srv_prefix_reuse(cache, 6, 3, true, p3, 4, &how) == 3 && how == SRV_REUSE_RESTORE);
    CHECK(srv_prefix_reuse(cache, 4, 3, true, p3, 4, &how) == 3 && how == SRV_REUSE_RESTORE);
    CHECK(srv_prefix_reuse(cache, 3, -1, true, p3, 4, &how) == 3 && how == SRV_REUSE_KEEP);
    CHECK(srv_prefix_reuse(cache, 0, -1, false, p3, 4, &how) == 0 && how == SRV_REUSE_NONE);
}

static void check_stop(void) {
    char *stop[2] = {"STOP", "\xc3\xa9nd"};
    int hit;
    const char *t = "hello ST";
    CHECK(srv_stop_scan(t, strlen(t), 0, stop, 2, &hit) == 6 && hit == -1); /* "ST" held back */
    t = "hello STOP there";
    CHECK(srv_stop_scan(t, strlen(t), 6, stop, 2, &hit) == 6 && hit == 0);
    t = "x \xc3\xa9n";
    CHECK(srv_stop_scan(t, strlen(t), 0, stop, 2, &hit) == 2 && hit == -1);
    t = "x \xc3\xa9nd";
    CHECK(srv_stop_scan(t, strlen(t), 2, stop, 2, &hit) == 2 && hit == 1);
    t = "plain";
    CHECK(srv_stop_scan(t, strlen(t), 0, stop, 2, &hit) == 5 && hit == -1);
    CHECK(srv_stop_scan(t, strlen(t), 0, NULL, 0, &hit) == 5 && hit == -1);
}

int main(void) {
    check_parse();
    check_plan();
    check_plan_pieces();
    check_step_costs();
    check_reuse();
    check_stop();
    return check_report("test_server_parse");
}
