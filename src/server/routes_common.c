/* srv routes common: what the endpoint handlers share: error and JSON replies, the model-name check,
 * prompt building (chat template, tokenizer, context checks), job submission and collection, and the
 * server-sent-events stream object. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "server/routes.h"

void srv_reply_json(srv_reply *r, int status, json_t *v) {
    r->status = status;
    r->ctype = "application/json";
    r->body = srv_json_dump(v, &r->len);
    if (!r->body) {
        r->status = 500;
        r->body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}");
        r->len = strlen(r->body);
    }
}

void srv_reply_error(srv_reply *r, srv_api api, const srv_err *e) {
    bool anthropic = api == SRV_API_MESSAGES || api == SRV_API_COUNT_TOKENS;
    r->status = e->status;
    r->ctype = "application/json";
    r->body = anthropic ? srv_error_anthropic(e, &r->len) : srv_error_openai(e, &r->len);
}

int srv_check_model(const srv_server *s, const char *model, srv_err *e) {
    if (!model || !s->cfg.strict_model || !strcmp(model, s->model_id) || !strcmp(model, s->file_base) || !strcmp(model, s->cfg.model_path))
        return 0;
    return srv_fail(e, 404, "model", "The model '%s' does not exist; this server serves '%s' (GET /v1/models)", model,
                    s->model_id);
}

/* The chat prompt: the template on the messages, with the tools unless tool_choice is "none". A template
 * that ignores tools (its text is the same without them) is a 400, never a silent drop. A forced call
 * (tool_choice "required" or a name) is written in the template's own format: where the tools prompt shows
 * Hermes tags, "<tool_call>\n" goes after the generation prompt (p->prefill); then the call's JSON
 * {"name", "arguments"} is constrained to the tools' names and (for one tool) its parameters' schema. */
static int render_prompt(srv_server *s, srv_params *p, char **text, size_t *len, srv_err *e) {
    const char *tools = p->tool_choice == SRV_TOOLS_NONE ? NULL : p->tools;
    if (llm170_chat_render(s->m, p->messages, tools, true, p->enable_thinking, s->chat_template, text, len))
        return srv_fail(e, 400, "messages", "the chat template failed on these messages: %s", llm170_last_error());
    if (!tools) return 0;
    char *plain = NULL;
    size_t plen = 0;
    int rc = llm170_chat_render(s->m, p->messages, NULL, true, p->enable_thinking, s->chat_template, &plain, &plen);
    bool same = rc == 0 && plen == *len && !memcmp(plain, *text, plen);
    free(plain);
    if (same) {
        free(*text);
        *text = NULL;
        return srv_fail(e, 400, "tools", "this model's chat template does not render tools, so it cannot call them "
                        "(start the server with a --chat-template that does, or send no tools)");
    }
    if (p->tool_choice == SRV_TOOLS_AUTO) return 0;
    if (p->schema) {
        free(*text);
        *text = NULL;
        return srv_fail(e, 400, "tool_choice", "a forced tool call and response_format together are not supported");
    }
    if (srv_jc_tool_call_schema(p->tools, p->tool_choice == SRV_TOOLS_NAMED ? p->tool_name : NULL, &p->schema, e)) {
        free(*text);
        *text = NULL;
        return -1;
    }
    const char *pre = strstr(*text, "<tool_call>") ? "<tool_call>\n" : "";
    char *t = realloc(*text, *len + strlen(pre) + 1);
    if (!t || !(p->prefill = strdup(pre))) {
        free(t ? t : *text);
        *text = NULL;
        return srv_fail(e, 400, NULL, "out of memory");
    }
    memcpy(t + *len, pre, strlen(pre) + 1);
    *len += strlen(pre);
    *text = t;
    return 0;
}

int srv_prompt_tokens(srv_server *s, srv_params *p, int32_t **ids, int *n, srv_err *e) {
    *ids = NULL;
    *n = 0;
    size_t nt = 0;
    int32_t *t = NULL;
    if (p->messages) {
        char *text;
        size_t len;
        if (render_prompt(s, p, &text, &len, e)) return -1;
        /* the template writes the BOS token itself where the model wants one */
        int rc = llm170_tokenize(s->m, text, len, false, true, &t, &nt);
        free(text);
        if (rc) return srv_fail(e, 400, "messages", "cannot tokenize the prompt: %s", llm170_last_error());
    } else if (p->prompt) {
        if (llm170_tokenize(s->m, p->prompt, strlen(p->prompt), true, true, &t, &nt))
            return srv_fail(e, 400, "prompt", "cannot tokenize the prompt: %s", llm170_last_error());
    } else {
        int nv = llm170_model_n_vocab(s->m);
        for (size_t i = 0; i < p->n_prompt_ids; i++)
            if (p->prompt_ids[i] >= nv)
                return srv_fail(e, 400, "prompt", "prompt[%zu] = %d is outside the vocabulary (0..%d)", i, p->prompt_ids[i],
                                nv - 1);
        nt = p->n_prompt_ids;
        t = malloc(sizeof(int32_t) * (nt ? nt : 1));
        if (!t) return srv_fail(e, 400, NULL, "out of memory");
        memcpy(t, p->prompt_ids, sizeof(int32_t) * nt);
    }
    *ids = t;
    *n = (int)nt;
    return 0;
}

int srv_submit(srv_server *s, srv_params *p, const int32_t *ids, int n, srv_job **out, srv_err *e) {
    *out = NULL;
    const char *param = p->messages ? "messages" : "prompt";
    if (n == 0) return srv_fail(e, 400, param, "the prompt is empty (0 tokens)");
    if (n >= s->cfg.n_ctx)
        return srv_fail(e, 400, param, "the prompt has %d tokens but the context holds %d per request (with room for at "
                        "least one generated token); shorten it or restart the server with a larger --ctx-size",
                        n, s->cfg.n_ctx);
    if (p->max_tokens > s->cfg.n_ctx)
        return srv_fail(e, 400, "max_tokens", "max_tokens = %lld exceeds the context size %d", p->max_tokens, s->cfg.n_ctx);
    srv_gen g = {.max_tokens = p->max_tokens > 0 ? (int)p->max_tokens : s->cfg.n_ctx, .sp = p->sp,
                 .n_probs = p->n_probs, .ignore_eos = p->ignore_eos, .schema = p->schema};
    if (!p->seed_given) {
        uint64_t seed = (uint64_t)time(NULL);
        if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed ^= (uint64_t)clock();
        g.sp.seed = seed;
    }
    if (p->n_stop) {
        g.stop = calloc((size_t)p->n_stop, sizeof(char *));
        for (int i = 0; g.stop && i < p->n_stop; i++) g.stop[g.n_stop++] = strdup(p->stop[i]);
    }
    srv_job *j = srv_job_new(ids, n, &g);
    if (j) p->schema = NULL; /* the job owns it now */
    for (int i = 0; i < g.n_stop; i++) free(g.stop[i]);
    free(g.stop);
    if (!j) return srv_fail(e, 400, NULL, "out of memory");
    if (srv_sched_submit(s->sched, j)) {
        srv_job_release(j);
        return srv_fail(e, 429, NULL, "the server is busy: %d requests are already waiting for a slot; retry later",
                        s->cfg.queue_cap);
    }
    *out = j;
    return 0;
}

int srv_peer_state(int fd) {
    if (fd < 0) return SRV_PEER_OK;
    struct pollfd pf = {.fd = fd, .events = POLLRDHUP};
    if (poll(&pf, 1, 0) <= 0) return SRV_PEER_OK;
    if (pf.revents & (POLLHUP | POLLERR | POLLNVAL)) return SRV_PEER_GONE;
    return pf.revents & POLLRDHUP ? SRV_PEER_HALF : SRV_PEER_OK;
}

bool srv_client_gone(int fd) { return srv_peer_state(fd) == SRV_PEER_GONE; }

int srv_collect(srv_job *j, int fd, char **text, size_t *len, srv_lp **lp, int *n_lp, srv_delta *fin) {
    srv_cursor cur = {0};
    size_t cap = 256;
    int cap_lp = 0;
    *text = malloc(cap);
    *len = 0;
    *lp = NULL;
    *n_lp = 0;
    for (;;) {
        srv_delta d;
        srv_job_wait(j, &cur, 25, &d);
        if (*text && *len + d.len + 1 > cap) {
            cap = (*len + d.len + 1) * 2;
            char *t = realloc(*text, cap);
            if (!t) free(*text);
            *text = t;
        }
        if (*text) {
            memcpy(*text + *len, d.text ? d.text : "", d.len);
            *len += d.len;
            (*text)[*len] = 0;
        }
        if (d.n_lp) {
            if (*n_lp + d.n_lp > cap_lp) {
                cap_lp = (*n_lp + d.n_lp) * 2;
                srv_lp *t = realloc(*lp, sizeof(srv_lp) * (size_t)cap_lp);
                if (t) *lp = t;
                else cap_lp = *n_lp;
            }
            for (int i = 0; i < d.n_lp && *n_lp < cap_lp; i++) (*lp)[(*n_lp)++] = d.lp[i];
        }
        if (d.finish != SRV_RUNNING) {
            *fin = d;
            free(fin->text);
            free(fin->lp);
            fin->text = NULL;
            fin->lp = NULL;
            return *text ? 0 : -1;
        }
        srv_delta_free(&d);
        if (srv_client_gone(fd)) {
            srv_job_cancel(j);
            return -1;
        }
    }
}

void srv_reply_unfinished(srv_reply *r, srv_api api, const srv_delta *fin, int fd) {
    srv_err e;
    bool gone = srv_client_gone(fd);
    if (fin->finish == SRV_FIN_ERROR) srv_fail(&e, 500, NULL, "generation failed: %s", fin->err);
    else srv_fail(&e, gone ? 400 : 503, NULL, "the request was cancelled before it finished");
    srv_reply_error(r, api, &e);
    r->abandoned = gone && fin->finish != SRV_FIN_ERROR;
}

srv_stream *srv_stream_new(srv_server *s, srv_job *j, const srv_params *p, const char *id_prefix, int fd,
                           srv_format_fn format) {
    srv_stream *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->srv = s;
    st->job = j;
    st->fd = fd;
    st->format = format;
    st->api = p->api;
    srv_make_id(st->id, sizeof st->id, id_prefix);
    st->model = strdup(p->model ? p->model : s->model_id);
    st->created = time(NULL);
    st->include_usage = p->include_usage;
    st->n_probs = p->n_probs;
    for (int i = 0; i < p->n_stop; i++) st->stop[st->n_stop++] = strdup(p->stop[i]);
    st->block = -1;
    if ((st->tools_on = srv_tools_on(p))) {
        srv_tool_names_from_json(p->tools, &st->names);
        srv_tool_stream_init(&st->ts, &st->names);
        /* a forced call's opening is part of the reply: the parser sees it first (it only opens a call) */
        if (p->prefill) srv_tool_stream_push(&st->ts, p->prefill, strlen(p->prefill), false, NULL, NULL, NULL);
    }
    return st;
}

void srv_stream_free(srv_stream *st) {
    if (!st) return;
    /* a stream ended before its job did (the client left): stop generating for it */
    srv_job_cancel(st->job);
    srv_job_release(st->job);
    free(st->buf);
    free(st->model);
    for (int i = 0; i < st->n_stop; i++) free(st->stop[i]);
    srv_tool_stream_free(&st->ts);
    srv_tool_names_free(&st->names);
    free(st);
}

void srv_stream_raw(srv_stream *st, const char *text) {
    size_t n = strlen(text);
    if (st->len + n > st->cap) {
        size_t cap = (st->len + n) * 2 + 256;
        char *b = realloc(st->buf, cap);
        if (!b) return;
        st->buf = b;
        st->cap = cap;
    }
    memcpy(st->buf + st->len, text, n);
    st->len += n;
}

void srv_stream_event(srv_stream *st, const char *event, json_t *v) {
    char *s = srv_json_dump(v, NULL);
    if (!s) return;
    if (event) {
        srv_stream_raw(st, "event: ");
        srv_stream_raw(st, event);
        srv_stream_raw(st, "\n");
    }
    srv_stream_raw(st, "data: ");
    srv_stream_raw(st, s);
    srv_stream_raw(st, "\n\n");
    free(s);
}

json_t *srv_token_text(const srv_server *s, int32_t tok) {
    char *t = NULL;
    size_t n = 0;
    if (llm170_detokenize(s->m, &tok, 1, false, &t, &n)) return json_string("");
    json_t *v = srv_json_text(t, n);
    free(t);
    return v ? v : json_string("");
}

json_t *srv_token_bytes(const srv_server *s, int32_t tok) {
    char *t = NULL;
    size_t n = 0;
    json_t *a = json_array();
    if (llm170_detokenize(s->m, &tok, 1, false, &t, &n)) return a;
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer((unsigned char)t[i]));
    free(t);
    return a;
}

bool srv_tools_on(const srv_params *p) { return p->tools && p->tool_choice != SRV_TOOLS_NONE; }

int srv_reply_tools(const srv_params *p, const char *text, size_t len, const char *id_prefix, char **content,
                    srv_tool_call **calls, int *n_calls) {
    *calls = NULL;
    *n_calls = 0;
    if (!srv_tools_on(p)) {
        *content = malloc(len + 1);
        if (!*content) return -1;
        memcpy(*content, text, len);
        (*content)[len] = 0;
        return 0;
    }
    size_t pl = p->prefill ? strlen(p->prefill) : 0;
    char *full = malloc(pl + len + 1);
    if (!full) return -1;
    memcpy(full, p->prefill ? p->prefill : "", pl);
    memcpy(full + pl, text, len);
    full[pl + len] = 0;
    srv_tool_names names;
    srv_tool_names_from_json(p->tools, &names);
    int rc = srv_tools_parse(full, pl + len, &names, content, calls, n_calls);
    srv_tool_names_free(&names);
    free(full);
    for (int i = 0; rc == 0 && i < *n_calls; i++) srv_make_id((*calls)[i].id, sizeof (*calls)[i].id, id_prefix);
    return rc;
}

void srv_make_id(char *out, size_t cap, const char *prefix) {
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char r[24] = {0};
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        for (size_t i = 0; i < sizeof r; i++) r[i] = (unsigned char)rand();
    size_t n = (size_t)snprintf(out, cap, "%s", prefix);
    for (size_t i = 0; i < sizeof r && n + 1 < cap; i++) out[n++] = al[r[i] % (sizeof al - 1)];
    out[n < cap ? n : cap - 1] = 0;
}
