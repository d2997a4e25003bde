/* srv routes anthropic: POST /v1/messages and /v1/messages/count_tokens in Anthropic's shapes: a whole
 * message ({"type": "message", "content": [{"type": "text", ...}], "stop_reason", "usage"}), or the event
 * stream message_start, content_block_start, ping, content_block_delta (text_delta) ..., content_block_stop,
 * message_delta (stop_reason, usage), message_stop. */
#include <stdlib.h>
#include <string.h>

#include "server/routes.h"

static const char *stop_reason(int f) {
    return f == SRV_FIN_LENGTH ? "max_tokens" : f == SRV_FIN_STOP ? "stop_sequence" : "end_turn";
}

static json_t *stop_sequence(int f, int idx, char *const *stop, int n_stop) {
    return f == SRV_FIN_STOP && idx >= 0 && idx < n_stop ? json_string(stop[idx]) : json_null();
}

static json_t *message_json(const char *id, const char *model, json_t *content, json_t *reason, json_t *seq, int n_in,
                            int n_out, int n_cached) {
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:{s:i,s:i,s:i}}", "id", id, "type", "message", "role", "assistant",
                     "model", model, "content", content, "stop_reason", reason, "stop_sequence", seq, "usage",
                     "input_tokens", n_in, "output_tokens", n_out, "cache_read_input_tokens", n_cached);
}

static void block_start(srv_stream *st, json_t *block) {
    st->block = st->n_blocks++;
    srv_stream_event(st, "content_block_start", json_pack("{s:s,s:i,s:o}", "type", "content_block_start", "index",
                                                          st->block, "content_block", block));
}

static void block_stop(srv_stream *st) {
    if (st->block < 0) return;
    srv_stream_event(st, "content_block_stop", json_pack("{s:s,s:i}", "type", "content_block_stop", "index", st->block));
    st->block = -1;
}

static void messages_text(void *ctx, const char *text, size_t len) {
    srv_stream *st = ctx;
    if (st->block < 0) block_start(st, json_pack("{s:s,s:s}", "type", "text", "text", ""));
    srv_stream_event(st, "content_block_delta",
                     json_pack("{s:s,s:i,s:{s:s,s:o}}", "type", "content_block_delta", "index", st->block, "delta", "type",
                               "text_delta", "text", srv_json_text(text, len)));
}

/* A tool_use block: started with an empty input, the input's JSON as one input_json_delta, stopped. */
static void messages_call(void *ctx, srv_tool_call *call) {
    srv_stream *st = ctx;
    block_stop(st);
    srv_make_id(call->id, sizeof call->id, "toolu_");
    block_start(st, json_pack("{s:s,s:s,s:s,s:{}}", "type", "tool_use", "id", call->id, "name", call->name, "input"));
    srv_stream_event(st, "content_block_delta",
                     json_pack("{s:s,s:i,s:{s:s,s:s}}", "type", "content_block_delta", "index", st->block, "delta", "type",
                               "input_json_delta", "partial_json", call->arguments));
    block_stop(st);
    st->n_calls++;
    srv_tool_call_free(call);
}

static void format_messages(srv_stream *st, const srv_delta *d) {
    if (st->tools_on) srv_tool_stream_push(&st->ts, d->text ? d->text : "", d->len, d->finish != SRV_RUNNING,
                                           messages_text, messages_call, st);
    else if (d->len) messages_text(st, d->text, d->len);
    if (d->finish == SRV_RUNNING) return;
    if (d->finish == SRV_FIN_ERROR || d->finish == SRV_FIN_CANCELLED) {
        srv_err e = {500, "", NULL};
        snprintf(e.msg, sizeof e.msg, "generation stopped: %s", d->err[0] ? d->err : "cancelled");
        char *body = srv_error_anthropic(&e, NULL);
        if (body) {
            srv_stream_raw(st, "event: error\ndata: ");
            srv_stream_raw(st, body);
            srv_stream_raw(st, "\n\n");
            free(body);
        }
        st->done = true;
        return;
    }
    block_stop(st);
    srv_stream_event(st, "message_delta",
                     json_pack("{s:s,s:{s:s,s:o},s:{s:i}}", "type", "message_delta", "delta", "stop_reason",
                               st->n_calls ? "tool_use" : stop_reason(d->finish), "stop_sequence",
                               stop_sequence(d->finish, d->stop_index, st->stop, st->n_stop), "usage", "output_tokens",
                               d->n_gen));
    srv_stream_event(st, "message_stop", json_pack("{s:s}", "type", "message_stop"));
    st->done = true;
}

/* A whole reply's content blocks: its text (if any, or if there is nothing else) and its tool calls. */
static json_t *whole_content(const srv_params *p, const char *text, size_t len) {
    char *content = NULL;
    srv_tool_call *calls = NULL;
    int n = 0;
    json_t *blocks = json_array();
    if (srv_reply_tools(p, text, len, "toolu_", &content, &calls, &n)) n = 0; /* out of memory: text only */
    if (!n || (content && content[0]))
        json_array_append_new(blocks, json_pack("{s:s,s:o}", "type", "text", "text",
                                                content ? srv_json_text(content, strlen(content)) : srv_json_text(text, len)));
    for (int i = 0; i < n; i++) {
        json_t *input = json_loads(calls[i].arguments, JSON_ALLOW_NUL, NULL);
        json_array_append_new(blocks, json_pack("{s:s,s:s,s:s,s:o}", "type", "tool_use", "id", calls[i].id, "name",
                                                calls[i].name, "input", input ? input : json_object()));
        srv_tool_call_free(&calls[i]);
    }
    free(calls);
    free(content);
    return blocks;
}

void srv_route_messages(srv_server *s, const char *body, size_t len, int fd, srv_reply *r) {
    srv_params p;
    srv_err e;
    int32_t *ids = NULL;
    int n = 0;
    srv_job *j = NULL;
    if (srv_parse_request(SRV_API_MESSAGES, body, len, &p, &e) || srv_check_model(s, p.model, &e) ||
        srv_prompt_tokens(s, &p, &ids, &n, &e) || srv_submit(s, &p, ids, n, &j, &e)) {
        srv_reply_error(r, SRV_API_MESSAGES, &e);
    } else if (p.stream) {
        srv_stream *st = srv_stream_new(s, j, &p, "msg_", fd, format_messages);
        if (!st) {
            srv_job_cancel(j);
            srv_job_release(j);
            srv_fail(&e, 500, NULL, "out of memory");
            srv_reply_error(r, SRV_API_MESSAGES, &e);
        } else {
            srv_stream_event(st, "message_start",
                             json_pack("{s:s,s:o}", "type", "message_start", "message",
                                       message_json(st->id, st->model, json_array(), json_null(), json_null(), n, 0, 0)));
            block_start(st, json_pack("{s:s,s:s}", "type", "text", "text", ""));
            srv_stream_event(st, "ping", json_pack("{s:s}", "type", "ping"));
            r->status = 200;
            r->stream = st;
        }
    } else {
        char *text;
        size_t tlen;
        srv_lp *lp;
        int n_lp;
        srv_delta fin;
        memset(&fin, 0, sizeof fin);
        if (srv_collect(j, fd, &text, &tlen, &lp, &n_lp, &fin) || fin.finish == SRV_FIN_ERROR ||
            fin.finish == SRV_FIN_CANCELLED) {
            srv_reply_unfinished(r, SRV_API_MESSAGES, &fin, fd);
        } else {
            char id[48];
            srv_make_id(id, sizeof id, "msg_");
            json_t *content = whole_content(&p, text, tlen);
            bool called = json_array_size(content) && !strcmp(json_string_value(json_object_get(
                              json_array_get(content, json_array_size(content) - 1), "type")), "tool_use");
            srv_reply_json(r, 200, message_json(id, p.model ? p.model : s->model_id, content,
                                                json_string(called ? "tool_use" : stop_reason(fin.finish)),
                                                stop_sequence(fin.finish, fin.stop_index, p.stop, p.n_stop), fin.n_prompt,
                                                fin.n_gen, fin.n_cached));
        }
        free(text);
        free(lp);
        srv_job_release(j);
    }
    free(ids);
    srv_params_free(&p);
}

void srv_route_count_tokens(srv_server *s, const char *body, size_t len, srv_reply *r) {
    srv_params p;
    srv_err e;
    int32_t *ids = NULL;
    int n = 0;
    if (srv_parse_request(SRV_API_COUNT_TOKENS, body, len, &p, &e) || srv_check_model(s, p.model, &e) ||
        srv_prompt_tokens(s, &p, &ids, &n, &e))
        srv_reply_error(r, SRV_API_COUNT_TOKENS, &e);
    else
        srv_reply_json(r, 200, json_pack("{s:i}", "input_tokens", n));
    free(ids);
    srv_params_free(&p);
}
