/* fuzz_request: libFuzzer target for the server's request parsing and JSON handling (src/server/request.c,
 * json.c, sched_plan.c), everything a client's bytes reach before the model is involved.
 *
 * The first input byte picks the endpoint (chat, completions, messages, count_tokens); the rest is the
 * body. A parse must either succeed with values inside their documented caps (checked here) or fail with
 * a 4xx status and a message; both error-body writers must then produce JSON that parses back. On
 * success the normalized messages must be a JSON array again, and the stop-string scanner runs over the
 * body's bytes with the request's stop strings (its result must lie in [emitted, len]). Built by
 * fuzz/CMakeLists.txt; run with build-fuzz/fuzz/fuzz_request fuzz/corpus-work/request -dict=fuzz/request.dict. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/json.h"
#include "server/request.h"
#include "server/sched.h"

static void must_parse_back(char *body) {
    if (!body) abort();
    json_t *v = json_loads(body, 0, NULL);
    if (!v || !json_is_object(v)) abort();
    json_decref(v);
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    srv_api api = (srv_api)(data[0] % 4);
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    srv_params p;
    srv_err e = {0};
    if (srv_parse_request(api, body, len, &p, &e) != 0) {
        if (e.status < 400 || e.status > 499 || !e.msg[0]) abort();
        must_parse_back(srv_error_openai(&e, NULL));
        must_parse_back(srv_error_anthropic(&e, NULL));
    } else {
        if (p.n_stop < 0 || p.n_stop > SRV_MAX_STOP || p.n_probs < -1 || p.n_probs > SRV_MAX_TOP_LOGPROBS) abort();
        if (p.max_tokens != -1 && (p.max_tokens < 1 || p.max_tokens > SRV_MAX_TOKENS_CAP)) abort();
        if (!(p.sp.temperature >= 0 && p.sp.temperature <= 2 && p.sp.top_p >= 0 && p.sp.top_p <= 1)) abort();
        for (int i = 0; i < p.n_stop; i++)
            if (!p.stop[i] || !p.stop[i][0] || strlen(p.stop[i]) > SRV_MAX_STOP_LEN) abort();
        int n_prompts = (p.prompt != NULL) + (p.prompt_ids != NULL) + (p.messages != NULL);
        if (n_prompts != 1) abort();
        if (p.messages) {
            json_t *m = json_loads(p.messages, 0, NULL);
            if (!m || !json_is_array(m) || json_array_size(m) == 0) abort();
            json_decref(m);
        }
        int hit;
        size_t emitted = len / 2;
        size_t safe = srv_stop_scan(body, len, emitted, p.stop, p.n_stop, &hit);
        if (safe < emitted || safe > len || hit >= p.n_stop) abort();
    }
    srv_params_free(&p);
    json_t *t = srv_json_text(body, len);
    if (!t) abort();
    json_decref(t);
    return 0;
}
