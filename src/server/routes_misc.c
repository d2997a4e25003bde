/* srv routes misc: GET /v1/models and llama-server's POST /tokenize and /detokenize. */
#include <stdlib.h>
#include <string.h>

#include "server/routes.h"

void srv_route_models(srv_server *s, srv_reply *r) {
    json_t *m = json_pack("{s:s,s:s,s:I,s:s,s:{s:i,s:i,s:I,s:I}}", "id", s->model_id, "object", "model", "created",
                          (json_int_t)s->created, "owned_by", "llm170", "meta", "n_ctx", s->cfg.n_ctx, "n_vocab",
                          llm170_model_n_vocab(s->m), "n_params", (json_int_t)llm170_model_n_params(s->m), "size",
                          (json_int_t)llm170_model_size(s->m));
    srv_reply_json(r, 200, json_pack("{s:s,s:[o]}", "object", "list", "data", m));
}

static json_t *load_object(const char *body, size_t len, srv_err *e) {
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) {
        srv_fail(e, 400, NULL, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
        return NULL;
    }
    if (!json_is_object(o)) {
        srv_fail(e, 400, NULL, "the request body must be a JSON object, got %s", srv_json_type(o));
        json_decref(o);
        return NULL;
    }
    return o;
}

/* {"content": text, "add_special": false, "parse_special": true, "with_pieces": false} -> {"tokens": [...]} */
void srv_route_tokenize(srv_server *s, const char *body, size_t len, srv_reply *r) {
    srv_err e;
    json_t *o = load_object(body, len, &e);
    const char *text = NULL;
    bool add = false, parse = true, pieces = false;
    if (!o || srv_json_str(o, "content", &text, &e) || srv_json_bool(o, "add_special", &add, &e) ||
        srv_json_bool(o, "parse_special", &parse, &e) || srv_json_bool(o, "with_pieces", &pieces, &e) ||
        (!text && srv_fail(&e, 400, "content", "'content' (a string) is required"))) {
        srv_reply_error(r, SRV_API_COMPLETION, &e);
        json_decref(o);
        return;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    if (llm170_tokenize(s->m, text, json_string_length(json_object_get(o, "content")), add, parse, &ids, &n)) {
        srv_fail(&e, 400, "content", "cannot tokenize: %s", llm170_last_error());
        srv_reply_error(r, SRV_API_COMPLETION, &e);
    } else {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, pieces ? json_pack("{s:i,s:o}", "id", ids[i], "piece", srv_token_text(s, ids[i]))
                                            : json_integer(ids[i]));
        srv_reply_json(r, 200, json_pack("{s:o}", "tokens", a));
    }
    free(ids);
    json_decref(o);
}

/* {"tokens": [ids]} -> {"content": text} */
void srv_route_detokenize(srv_server *s, const char *body, size_t len, srv_reply *r) {
    srv_err e;
    json_t *o = load_object(body, len, &e), *a = o ? json_object_get(o, "tokens") : NULL;
    int nv = llm170_model_n_vocab(s->m);
    if (o && !json_is_array(a)) srv_fail(&e, 400, "tokens", "'tokens' must be an array of token ids, got %s", srv_json_type(a));
    int32_t *ids = o && json_is_array(a) ? malloc(sizeof(int32_t) * (json_array_size(a) + 1)) : NULL;
    bool ok = ids != NULL;
    for (size_t i = 0; ok && i < json_array_size(a); i++) {
        json_t *t = json_array_get(a, i);
        ok = json_is_integer(t) && json_integer_value(t) >= 0 && json_integer_value(t) < nv;
        if (!ok) srv_fail(&e, 400, "tokens", "tokens[%zu] must be a token id in 0..%d, got %s", i, nv - 1, srv_json_type(t));
        else ids[i] = (int32_t)json_integer_value(t);
    }
    char *text = NULL;
    size_t tl = 0;
    if (ok && llm170_detokenize(s->m, ids, json_array_size(a), false, &text, &tl)) {
        ok = false;
        srv_fail(&e, 400, "tokens", "cannot detokenize: %s", llm170_last_error());
    }
    if (ok) srv_reply_json(r, 200, json_pack("{s:o}", "content", srv_json_text(text, tl)));
    else srv_reply_error(r, SRV_API_COMPLETION, &e);
    free(text);
    free(ids);
    json_decref(o);
}
