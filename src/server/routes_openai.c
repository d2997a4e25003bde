/* srv routes openai: POST /v1/chat/completions and /v1/completions in OpenAI's response shapes: a whole
 * chat.completion / text_completion, or server-sent chunks (chat.completion.chunk / text_completion) ending
 * with a finish_reason chunk, an optional usage chunk (stream_options.include_usage) and "data: [DONE]". */
#include <stdlib.h>
#include <string.h>

#include "server/routes.h"

static const char *finish_reason(int f) { return f == SRV_FIN_LENGTH ? "length" : "stop"; }

static json_t *usage_json(const srv_delta *d) {
    return json_pack("{s:i,s:i,s:i,s:{s:i}}", "prompt_tokens", d->n_prompt, "completion_tokens", d->n_gen, "total_tokens",
                     d->n_prompt + d->n_gen, "prompt_tokens_details", "cached_tokens", d->n_cached);
}

/* chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]} */
static json_t *chat_logprobs(const srv_server *s, const srv_lp *lp, int n) {
    json_t *content = json_array();
    for (int i = 0; i < n; i++) {
        json_t *top = json_array();
        for (int k = 0; k < lp[i].n_top; k++)
            json_array_append_new(top, json_pack("{s:o,s:f,s:o}", "token", srv_token_text(s, lp[i].top_tok[k]), "logprob",
                                                 (double)lp[i].top_lp[k], "bytes", srv_token_bytes(s, lp[i].top_tok[k])));
        json_array_append_new(content, json_pack("{s:o,s:f,s:o,s:o}", "token", srv_token_text(s, lp[i].token), "logprob",
                                                 (double)lp[i].logprob, "bytes", srv_token_bytes(s, lp[i].token),
                                                 "top_logprobs", top));
    }
    return json_pack("{s:o}", "content", content);
}

/* completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"} */
static json_t *completion_logprobs(const srv_server *s, const srv_lp *lp, int n, size_t *offset) {
    json_t *toks = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    for (int i = 0; i < n; i++) {
        json_t *t = srv_token_text(s, lp[i].token);
        json_array_append_new(offs, json_integer((json_int_t)*offset));
        *offset += json_string_length(t);
        json_array_append_new(toks, t);
        json_array_append_new(lps, json_real(lp[i].logprob));
        json_t *top = json_object();
        for (int k = 0; k < lp[i].n_top; k++) {
            json_t *name = srv_token_text(s, lp[i].top_tok[k]);
            json_object_set_new(top, json_string_value(name), json_real(lp[i].top_lp[k]));
            json_decref(name);
        }
        json_array_append_new(tops, top);
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs", tops, "text_offset", offs);
}

static json_t *chunk_base(const srv_stream *st, const char *object) {
    return json_pack("{s:s,s:s,s:I,s:s,s:s}", "id", st->id, "object", object, "created", (json_int_t)st->created, "model",
                     st->model, "system_fingerprint", "llm170");
}

static void chat_chunk(srv_stream *st, json_t *delta) {
    json_t *c = chunk_base(st, "chat.completion.chunk");
    json_object_set_new(c, "choices", json_pack("[{s:i,s:o,s:n,s:n}]", "index", 0, "delta", delta, "logprobs",
                                                "finish_reason"));
    srv_stream_event(st, NULL, c);
}

static void chat_text(void *ctx, const char *text, size_t len) {
    chat_chunk(ctx, json_pack("{s:o}", "content", srv_json_text(text, len)));
}

/* A tool call as the SDKs assemble it: a first delta with its index, id, type and name (arguments ""),
 * then the arguments as deltas appended to it. */
static void chat_call(void *ctx, srv_tool_call *call) {
    srv_stream *st = ctx;
    srv_make_id(call->id, sizeof call->id, "call_");
    chat_chunk(st, json_pack("{s:[{s:i,s:s,s:s,s:{s:s,s:s}}]}", "tool_calls", "index", st->n_calls, "id", call->id,
                             "type", "function", "function", "name", call->name, "arguments", ""));
    chat_chunk(st, json_pack("{s:[{s:i,s:{s:s}}]}", "tool_calls", "index", st->n_calls, "function", "arguments",
                             call->arguments));
    st->n_calls++;
    srv_tool_call_free(call);
}

static void format_chat(srv_stream *st, const srv_delta *d) {
    if (st->tools_on) {
        srv_tool_stream_push(&st->ts, d->text ? d->text : "", d->len, d->finish != SRV_RUNNING, chat_text, chat_call, st);
    } else if (d->len || d->n_lp) {
        json_t *c = chunk_base(st, "chat.completion.chunk");
        json_t *choice = json_pack("{s:i,s:{s:o},s:o,s:n}", "index", 0, "delta", "content", srv_json_text(d->text, d->len),
                                   "logprobs", st->n_probs >= 0 ? chat_logprobs(st->srv, d->lp, d->n_lp) : json_null(),
                                   "finish_reason");
        json_object_set_new(c, "choices", json_pack("[o]", choice));
        srv_stream_event(st, NULL, c);
    }
    if (d->finish == SRV_RUNNING) return;
    if (d->finish == SRV_FIN_ERROR || d->finish == SRV_FIN_CANCELLED) {
        srv_err e = {500, "", NULL};
        snprintf(e.msg, sizeof e.msg, "generation stopped: %s", d->err[0] ? d->err : "cancelled");
        char *body = srv_error_openai(&e, NULL);
        if (body) {
            srv_stream_raw(st, "data: ");
            srv_stream_raw(st, body);
            srv_stream_raw(st, "\n\n");
            free(body);
        }
    } else {
        json_t *c = chunk_base(st, "chat.completion.chunk");
        json_object_set_new(c, "choices", json_pack("[{s:i,s:{},s:n,s:s}]", "index", 0, "delta", "logprobs",
                                                    "finish_reason", st->n_calls ? "tool_calls" : finish_reason(d->finish)));
        srv_stream_event(st, NULL, c);
        if (st->include_usage) {
            c = chunk_base(st, "chat.completion.chunk");
            json_object_set_new(c, "choices", json_array());
            json_object_set_new(c, "usage", usage_json(d));
            srv_stream_event(st, NULL, c);
        }
    }
    srv_stream_raw(st, "data: [DONE]\n\n");
    st->done = true;
}

static void format_completion(srv_stream *st, const srv_delta *d) {
    bool fin = d->finish == SRV_FIN_EOG || d->finish == SRV_FIN_STOP || d->finish == SRV_FIN_LENGTH;
    if (d->len || d->n_lp || fin) {
        json_t *c = chunk_base(st, "text_completion");
        json_t *choice = json_pack("{s:o,s:i,s:o,s:o}", "text", srv_json_text(d->text, d->len), "index", 0, "logprobs",
                                   st->n_probs >= 0 ? completion_logprobs(st->srv, d->lp, d->n_lp, &st->text_offset)
                                                    : json_null(),
                                   "finish_reason", fin ? json_string(finish_reason(d->finish)) : json_null());
        json_object_set_new(c, "choices", json_pack("[o]", choice));
        srv_stream_event(st, NULL, c);
    }
    if (d->finish == SRV_RUNNING) return;
    if (fin && st->include_usage) {
        json_t *c = chunk_base(st, "text_completion");
        json_object_set_new(c, "choices", json_array());
        json_object_set_new(c, "usage", usage_json(d));
        srv_stream_event(st, NULL, c);
    } else if (!fin) {
        srv_err e = {500, "", NULL};
        snprintf(e.msg, sizeof e.msg, "generation stopped: %s", d->err[0] ? d->err : "cancelled");
        char *body = srv_error_openai(&e, NULL);
        if (body) {
            srv_stream_raw(st, "data: ");
            srv_stream_raw(st, body);
            srv_stream_raw(st, "\n\n");
            free(body);
        }
    }
    srv_stream_raw(st, "data: [DONE]\n\n");
    st->done = true;
}

static void reply_whole(srv_server *s, const srv_params *p, srv_job *j, int fd, srv_reply *r) {
    char *text;
    size_t len;
    srv_lp *lp;
    int n_lp;
    srv_delta fin;
    memset(&fin, 0, sizeof fin);
    bool chat = p->api == SRV_API_CHAT;
    if (srv_collect(j, fd, &text, &len, &lp, &n_lp, &fin) || fin.finish == SRV_FIN_ERROR ||
        fin.finish == SRV_FIN_CANCELLED) {
        srv_reply_unfinished(r, p->api, &fin, fd);
        free(text);
        free(lp);
        return;
    }
    char id[48];
    srv_make_id(id, sizeof id, chat ? "chatcmpl-" : "cmpl-");
    json_t *choice;
    char *content = NULL;
    srv_tool_call *calls = NULL;
    int n_calls = 0;
    if (chat) {
        if (srv_reply_tools(p, text, len, "call_", &content, &calls, &n_calls)) n_calls = 0; /* out of memory */
        json_t *msg = json_pack("{s:s,s:o}", "role", "assistant", "content",
                                n_calls && !content[0] ? json_null()
                                : content              ? srv_json_text(content, strlen(content))
                                                       : srv_json_text(text, len));
        if (n_calls) {
            json_t *tc = json_array();
            for (int i = 0; i < n_calls; i++) {
                json_array_append_new(tc, json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", calls[i].id, "type", "function",
                                                    "function", "name", calls[i].name, "arguments", calls[i].arguments));
                srv_tool_call_free(&calls[i]);
            }
            json_object_set_new(msg, "tool_calls", tc);
        }
        choice = json_pack("{s:i,s:o,s:o,s:s}", "index", 0, "message", msg, "logprobs",
                           p->n_probs >= 0 ? chat_logprobs(s, lp, n_lp) : json_null(), "finish_reason",
                           n_calls ? "tool_calls" : finish_reason(fin.finish));
        free(calls);
        free(content);
    } else {
        size_t off = 0;
        choice = json_pack("{s:o,s:i,s:o,s:s}", "text", srv_json_text(text, len), "index", 0, "logprobs",
                           p->n_probs >= 0 ? completion_logprobs(s, lp, n_lp, &off) : json_null(), "finish_reason",
                           finish_reason(fin.finish));
    }
    json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:s,s:[o],s:o}", "id", id, "object", chat ? "chat.completion" : "text_completion",
                          "created", (json_int_t)time(NULL), "model", p->model ? p->model : s->model_id,
                          "system_fingerprint", "llm170", "choices", choice, "usage", usage_json(&fin));
    srv_reply_json(r, 200, o);
    free(text);
    free(lp);
}

void srv_route_openai(srv_server *s, srv_api api, const char *body, size_t len, int fd, srv_reply *r) {
    srv_params p;
    srv_err e;
    int32_t *ids = NULL;
    int n = 0;
    srv_job *j = NULL;
    if (srv_parse_request(api, body, len, &p, &e) || srv_check_model(s, p.model, &e) ||
        srv_prompt_tokens(s, &p, &ids, &n, &e) || srv_submit(s, &p, ids, n, &j, &e)) {
        srv_reply_error(r, api, &e);
    } else if (p.stream) {
        srv_stream *st = srv_stream_new(s, j, &p, api == SRV_API_CHAT ? "chatcmpl-" : "cmpl-", fd,
                                        api == SRV_API_CHAT ? format_chat : format_completion);
        if (!st) {
            srv_job_cancel(j);
            srv_job_release(j);
            srv_fail(&e, 500, NULL, "out of memory");
            srv_reply_error(r, api, &e);
        } else {
            if (api == SRV_API_CHAT) {
                /* the first chunk names the role, as OpenAI's does */
                json_t *c = chunk_base(st, "chat.completion.chunk");
                json_object_set_new(c, "choices", json_pack("[{s:i,s:{s:s,s:s},s:n,s:n}]", "index", 0, "delta", "role",
                                                            "assistant", "content", "", "logprobs", "finish_reason"));
                srv_stream_event(st, NULL, c);
            }
            r->status = 200;
            r->stream = st;
        }
    } else {
        reply_whole(s, &p, j, fd, r);
        srv_job_release(j);
    }
    free(ids);
    srv_params_free(&p);
}
