/* srv request: see request.h. Field names and defaults follow the OpenAI and Anthropic API references;
 * the extra sampling fields (top_k, min_p, repeat_penalty, ignore_eos) are llama-server's. */
#include "server/request.h"

#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s) {
    return s ? strdup(s) : NULL;
}

/* stop: a string or an array of strings (OpenAI "stop", Anthropic "stop_sequences"). */
static int parse_stop(const json_t *o, const char *key, srv_params *p, srv_err *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (json_is_string(v)) v = json_pack("[O]", v);
    else if (json_is_array(v)) json_incref(v);
    else return srv_fail(e, 400, key, "'%s' must be a string or an array of strings, got %s", key, srv_json_type(v));
    int rc = 0;
    if (json_array_size(v) > SRV_MAX_STOP)
        rc = srv_fail(e, 400, key, "'%s' holds at most %d strings, got %zu", key, SRV_MAX_STOP, json_array_size(v));
    for (size_t i = 0; !rc && i < json_array_size(v); i++) {
        json_t *s = json_array_get(v, i);
        if (!json_is_string(s))
            rc = srv_fail(e, 400, key, "'%s[%zu]' must be a string, got %s", key, i, srv_json_type(s));
        else if (json_string_length(s) == 0 || json_string_length(s) > SRV_MAX_STOP_LEN ||
                 strlen(json_string_value(s)) != json_string_length(s))
            rc = srv_fail(e, 400, key, "'%s[%zu]' must have 1..%d bytes and no NUL, got %zu bytes", key, i,
                          SRV_MAX_STOP_LEN, json_string_length(s));
        else p->stop[p->n_stop++] = strdup(json_string_value(s));
    }
    json_decref(v);
    return rc;
}

/* The sampling fields both APIs share (OpenAI names; Anthropic uses the same for these). */
static int parse_sampling(const json_t *o, srv_params *p, srv_err *e) {
    double t = p->sp.temperature, tp = p->sp.top_p, mp = p->sp.min_p, rp = p->sp.repeat_penalty;
    double pp = p->sp.presence_penalty, fp = p->sp.frequency_penalty;
    long long tk = p->sp.top_k, seed = -1, lastn = p->sp.penalty_last_n;
    if (srv_json_num(o, "temperature", 0, 2, &t, e) || srv_json_num(o, "top_p", 0, 1, &tp, e) ||
        srv_json_num(o, "min_p", 0, 1, &mp, e) || srv_json_int(o, "top_k", 0, 1 << 20, &tk, e) ||
        srv_json_num(o, "presence_penalty", -2, 2, &pp, e) || srv_json_num(o, "frequency_penalty", -2, 2, &fp, e) ||
        srv_json_num(o, "repeat_penalty", 0, 10, &rp, e) || srv_json_int(o, "repeat_last_n", 0, 1 << 20, &lastn, e) ||
        srv_json_int(o, "seed", -1, INT64_MAX, &seed, e) || srv_json_bool(o, "ignore_eos", &p->ignore_eos, e))
        return -1;
    p->sp.temperature = (float)t;
    p->sp.top_p = (float)tp;
    p->sp.min_p = (float)mp;
    p->sp.top_k = (int)tk;
    p->sp.presence_penalty = (float)pp;
    p->sp.frequency_penalty = (float)fp;
    p->sp.repeat_penalty = (float)rp;
    p->sp.penalty_last_n = (int)lastn;
    if (seed >= 0) p->sp.seed = (uint64_t)seed, p->seed_given = true;
    return 0;
}

/* Joins the text parts of a content array ({"type": "text", "text": ...}); other part types are refused
 * by name, since the engine reads text only. */
static int join_parts(const json_t *arr, const char *where, json_t **out, srv_err *e) {
    size_t cap = 1, n = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *part = json_array_get(arr, i);
        const char *type = NULL, *text = NULL;
        if (!json_is_object(part))
            return srv_fail(e, 400, "content", "%s.content[%zu] must be an object, got %s", where, i, srv_json_type(part));
        if (srv_json_str(part, "type", &type, e) || srv_json_str(part, "text", &text, e)) return -1;
        if (!type || strcmp(type, "text") != 0)
            return srv_fail(e, 400, "content", "%s.content[%zu]: only \"text\" parts are supported, got type %s", where,
                            i, type ? type : "(none)");
        if (!text) return srv_fail(e, 400, "content", "%s.content[%zu] has no 'text' string", where, i);
        cap += json_string_length(json_object_get(part, "text"));
    }
    char *buf = malloc(cap);
    if (!buf) return srv_fail(e, 400, NULL, "out of memory");
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *t = json_object_get(json_array_get(arr, i), "text");
        memcpy(buf + n, json_string_value(t), json_string_length(t));
        n += json_string_length(t);
    }
    *out = json_stringn(buf, n);
    free(buf);
    return *out ? 0 : srv_fail(e, 400, "content", "%s.content has text with NUL bytes or bad UTF-8", where);
}

/* One message, copied with its content made a string. allow_system: OpenAI accepts system/developer/tool
 * roles inside messages; Anthropic only user and assistant (its system prompt is a top-level field). */
static int norm_message(const json_t *m, size_t i, bool anthropic, json_t *out_arr, srv_err *e) {
    char where[32];
    snprintf(where, sizeof where, "messages[%zu]", i);
    if (!json_is_object(m)) return srv_fail(e, 400, "messages", "%s must be an object, got %s", where, srv_json_type(m));
    const char *role = NULL;
    if (srv_json_str(m, "role", &role, e)) return -1;
    if (!role) return srv_fail(e, 400, "messages", "%s has no 'role'", where);
    static const char *oai_roles[] = {"system", "developer", "user", "assistant", "tool", "function"};
    bool ok = !strcmp(role, "user") || !strcmp(role, "assistant");
    for (size_t r = 0; !anthropic && !ok && r < sizeof oai_roles / sizeof *oai_roles; r++) ok = !strcmp(role, oai_roles[r]);
    if (!ok)
        return srv_fail(e, 400, "messages", "%s.role must be %s, got \"%s\"", where,
                        anthropic ? "\"user\" or \"assistant\"" : "system, developer, user, assistant or tool", role);
    json_t *c = json_object_get(m, "content"), *text = NULL;
    if (anthropic && json_is_array(c)) return srv_norm_anthropic_blocks(c, where, role, out_arr, e);
    if (json_is_string(c)) text = json_incref(c);
    else if (json_is_array(c)) {
        if (join_parts(c, where, &text, e)) return -1;
    } else if (!c || json_is_null(c)) {
        /* an assistant turn may carry tool_calls and no content */
        if (anthropic || strcmp(role, "assistant") != 0)
            return srv_fail(e, 400, "messages", "%s has no 'content'", where);
        text = json_string("");
    } else {
        return srv_fail(e, 400, "messages", "%s.content must be a string or an array of parts, got %s", where,
                        srv_json_type(c));
    }
    json_t *copy = json_deep_copy(m);
    json_object_set_new(copy, "role", json_string(strcmp(role, "developer") ? role : "system"));
    json_object_set_new(copy, "content", text);
    json_array_append_new(out_arr, copy);
    return srv_norm_tool_calls(copy, where, e);
}

static int parse_messages(const json_t *o, srv_params *p, srv_err *e) {
    bool anthropic = p->api == SRV_API_MESSAGES || p->api == SRV_API_COUNT_TOKENS;
    json_t *msgs = json_object_get(o, "messages");
    if (!msgs) return srv_fail(e, 400, "messages", "'messages' is required");
    if (!json_is_array(msgs)) return srv_fail(e, 400, "messages", "'messages' must be an array, got %s", srv_json_type(msgs));
    if (json_array_size(msgs) == 0) return srv_fail(e, 400, "messages", "'messages' must not be empty");
    json_t *arr = json_array();
    if (anthropic) {
        json_t *sys = json_object_get(o, "system"), *text = NULL;
        if (json_is_string(sys)) text = json_incref(sys);
        else if (json_is_array(sys)) {
            if (join_parts(sys, "system", &text, e)) goto fail;
        } else if (sys && !json_is_null(sys)) {
            srv_fail(e, 400, "system", "'system' must be a string or an array of text blocks, got %s", srv_json_type(sys));
            goto fail;
        }
        if (text) json_array_append_new(arr, json_pack("{s:s,s:o}", "role", "system", "content", text));
    }
    for (size_t i = 0; i < json_array_size(msgs); i++)
        if (norm_message(json_array_get(msgs, i), i, anthropic, arr, e)) goto fail;
    p->messages = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    if (srv_parse_tools(o, p, e)) return -1;
    json_t *kw = json_object_get(o, "chat_template_kwargs");
    if (kw && !json_is_null(kw)) {
        bool think = true;
        if (!json_is_object(kw))
            return srv_fail(e, 400, "chat_template_kwargs", "'chat_template_kwargs' must be an object, got %s",
                            srv_json_type(kw));
        if (json_object_get(kw, "enable_thinking")) {
            if (srv_json_bool(kw, "enable_thinking", &think, e)) return -1;
            p->enable_thinking = think;
        }
    }
    return 0;
fail:
    json_decref(arr);
    return -1;
}

/* response_format (OpenAI: {"type": "text" | "json_object" | "json_schema", "json_schema": {"name",
 * "schema", "strict"}}) and llama-server's "json_schema" (a schema, top level): compiled into p->schema.
 * llama-server's "grammar" (GBNF) is a 400. */
static int parse_response_format(const json_t *o, srv_params *p, srv_err *e) {
    const json_t *rf = json_object_get(o, "response_format"), *js = json_object_get(o, "json_schema");
    const json_t *gbnf = json_object_get(o, "grammar");
    if (gbnf && !json_is_null(gbnf)) /* refused, not dropped: it would change what the reply may be */
        return srv_fail(e, 400, "grammar", "'grammar' (llama.cpp's GBNF) is not supported; constrain the reply with "
                        "'json_schema' or response_format json_schema instead");
    if (js && !json_is_null(js)) {
        if (!json_is_object(js)) return srv_fail(e, 400, "json_schema", "'json_schema' must be a schema object");
        return srv_jc_compile(js, &p->schema, e);
    }
    if (!rf || json_is_null(rf)) return 0;
    const char *type = json_string_value(json_object_get(rf, "type"));
    if (!json_is_object(rf) || !type)
        return srv_fail(e, 400, "response_format", "'response_format' must be an object with a 'type'");
    if (!strcmp(type, "text")) return 0;
    if (!strcmp(type, "json_object")) return srv_jc_compile(NULL, &p->schema, e);
    if (strcmp(type, "json_schema") != 0)
        return srv_fail(e, 400, "response_format", "response_format.type must be text, json_object or json_schema, got %.32s",
                        type);
    const json_t *schema = json_object_get(json_object_get(rf, "json_schema"), "schema");
    if (!json_is_object(schema))
        return srv_fail(e, 400, "response_format", "response_format.json_schema.schema must be a schema object");
    return srv_jc_compile(schema, &p->schema, e);
}

/* completions' prompt: a string, a one-element array of a string, or an array of token ids. */
static int parse_prompt(const json_t *o, srv_params *p, srv_err *e) {
    json_t *v = json_object_get(o, "prompt");
    if (!v) return srv_fail(e, 400, "prompt", "'prompt' is required");
    if (json_is_array(v) && json_array_size(v) == 1 && json_is_string(json_array_get(v, 0))) v = json_array_get(v, 0);
    if (json_is_string(v)) {
        if (strlen(json_string_value(v)) != json_string_length(v))
            return srv_fail(e, 400, "prompt", "'prompt' must not contain NUL bytes");
        p->prompt = strdup(json_string_value(v));
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return srv_fail(e, 400, "prompt", "'prompt' must be a string, a one-string array or a non-empty array of "
                        "token ids, got %s", json_is_array(v) ? "an empty or multi-prompt array" : srv_json_type(v));
    p->n_prompt_ids = json_array_size(v);
    p->prompt_ids = malloc(sizeof(int32_t) * p->n_prompt_ids);
    if (!p->prompt_ids) return srv_fail(e, 400, "prompt", "out of memory");
    for (size_t i = 0; i < p->n_prompt_ids; i++) {
        json_t *t = json_array_get(v, i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > INT32_MAX)
            return srv_fail(e, 400, "prompt", "'prompt[%zu]' must be a token id (integer >= 0), got %s", i, srv_json_type(t));
        p->prompt_ids[i] = (int32_t)json_integer_value(t);
    }
    return 0;
}

/* OpenAI logprobs: chat has logprobs (bool) + top_logprobs (0..20); completions has logprobs (int 0..5,
 * we allow up to 20 like llama-server). */
static int parse_logprobs(const json_t *o, srv_params *p, srv_err *e) {
    if (p->api == SRV_API_CHAT) {
        bool on = false;
        long long top = 0;
        if (srv_json_bool(o, "logprobs", &on, e) || srv_json_int(o, "top_logprobs", 0, SRV_MAX_TOP_LOGPROBS, &top, e))
            return -1;
        if (json_object_get(o, "top_logprobs") && !json_is_null(json_object_get(o, "top_logprobs")) && !on)
            return srv_fail(e, 400, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
        p->n_probs = on ? (int)top : -1;
    } else {
        long long n = -1;
        if (srv_json_int(o, "logprobs", 0, SRV_MAX_TOP_LOGPROBS, &n, e)) return -1;
        p->n_probs = (int)n;
    }
    return 0;
}

int srv_parse_request(srv_api api, const char *body, size_t len, srv_params *p, srv_err *e) {
    memset(p, 0, sizeof *p);
    p->api = api;
    p->max_tokens = -1;
    p->n_probs = -1;
    p->enable_thinking = -1;
    /* The APIs' defaults: temperature 1 (OpenAI and Anthropic), every filter and penalty off; greedy only
     * when asked for (temperature 0). Spelled out rather than taken from the engine so that this file
     * (and fuzz/fuzz_request.c) needs jansson only. */
    p->sp = (llm170_sampler_params){.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f,
                                    .repeat_penalty = 1.0f, .presence_penalty = 0.0f, .frequency_penalty = 0.0f,
                                    .penalty_last_n = 64, .seed = 0};
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) return srv_fail(e, 400, NULL, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
    int rc = -1;
    if (!json_is_object(o)) {
        srv_fail(e, 400, NULL, "the request body must be a JSON object, got %s", srv_json_type(o));
        goto done;
    }
    const char *model = NULL;
    if (srv_json_str(o, "model", &model, e)) goto done;
    p->model = dup_str(model);
    if (api == SRV_API_COUNT_TOKENS) {
        rc = parse_messages(o, p, e);
        goto done;
    }
    long long n = 1, max_tokens = -1;
    if (srv_json_bool(o, "stream", &p->stream, e) || srv_json_int(o, "n", 1, 1, &n, e) || parse_sampling(o, p, e))
        goto done;
    if (api == SRV_API_MESSAGES) {
        if (!json_object_get(o, "max_tokens")) {
            srv_fail(e, 400, "max_tokens", "'max_tokens' is required");
            goto done;
        }
        if (srv_json_int(o, "max_tokens", 1, SRV_MAX_TOKENS_CAP, &max_tokens, e) || parse_stop(o, "stop_sequences", p, e) ||
            parse_messages(o, p, e))
            goto done;
    } else {
        /* max_completion_tokens is the newer name of max_tokens in chat */
        if (srv_json_int(o, "max_tokens", 1, SRV_MAX_TOKENS_CAP, &max_tokens, e) ||
            srv_json_int(o, "max_completion_tokens", 1, SRV_MAX_TOKENS_CAP, &max_tokens, e) ||
            parse_stop(o, "stop", p, e) || parse_logprobs(o, p, e) || parse_response_format(o, p, e))
            goto done;
        json_t *so = json_object_get(o, "stream_options");
        if (so && !json_is_null(so)) {
            if (!json_is_object(so)) {
                srv_fail(e, 400, "stream_options", "'stream_options' must be an object, got %s", srv_json_type(so));
                goto done;
            }
            if (srv_json_bool(so, "include_usage", &p->include_usage, e)) goto done;
        }
        if (api == SRV_API_CHAT ? parse_messages(o, p, e) : parse_prompt(o, p, e)) goto done;
    }
    p->max_tokens = max_tokens;
    rc = 0;
done:
    json_decref(o);
    return rc;
}

void srv_params_free(srv_params *p) {
    free(p->model);
    for (int i = 0; i < p->n_stop; i++) free(p->stop[i]);
    free(p->prompt);
    free(p->prompt_ids);
    free(p->messages);
    free(p->tools);
    free(p->tool_name);
    free(p->prefill);
    srv_jc_schema_free(p->schema);
    memset(p, 0, sizeof *p);
}
