/* srv routes: the seam between http.c (connections, auth, bodies, streaming) and the endpoint handlers
 * (routes_openai.c, routes_anthropic.c, routes_misc.c, shared helpers in routes_common.c).
 *
 * A handler fills a srv_reply: either a whole body (status, malloc'd body, content type) or a stream
 * (status 200 and a srv_stream whose format callback turns job output into server-sent events). http.c
 * frees the body; a stream is freed with srv_stream_free once the connection is done with it. */
#ifndef LLM170_SERVER_ROUTES_H
#define LLM170_SERVER_ROUTES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "llm170.h"
#include "server/json.h"
#include "server/metrics.h"
#include "server/request.h"
#include "server/sched.h"
#include "server/server.h"
#include "server/toolcall.h"

typedef struct srv_server {
    srv_config cfg;
    llm170_model *m;
    llm170_context *ctx;
    srv_sched *sched;
    srv_metrics mt;
    atomic_bool ready;
    char model_id[256];
    char file_base[256];
    const char *chat_template; /* passed to llm170_chat_render: NULL (the file's), a built-in or a text */
    time_t created;
} srv_server;

typedef struct srv_stream srv_stream;
typedef void (*srv_format_fn)(srv_stream *st, const srv_delta *d);

struct srv_stream {
    srv_server *srv;
    srv_job *job;
    srv_cursor cur;
    srv_format_fn format; /* appends events for d to buf; sets done after the last one */
    int fd;               /* the client's socket, polled for hang-ups */
    double probe_t;       /* when bytes were last handed to MHD (see stream_read's keep-alive comments) */
    bool done;
    char *buf;            /* pending bytes of events not yet sent */
    size_t len, off, cap;
    /* what the formatters need */
    srv_api api;
    char id[48];
    char *model;
    time_t created;
    bool include_usage;
    int n_probs;
    char *stop[SRV_MAX_STOP];
    int n_stop;
    size_t text_offset;   /* completions logprobs: bytes of text so far */
    /* tool calls (a request with tools, tool_choice not "none"): text goes through ts */
    bool tools_on;
    srv_tool_names names;
    srv_tool_stream ts;
    int n_calls;          /* calls sent so far */
    int block;            /* Anthropic: the open content block's index, or -1 */
    int n_blocks;         /* Anthropic: content blocks started so far */
};

typedef struct srv_reply {
    int status;
    char *body;
    size_t len;
    const char *ctype;
    srv_stream *stream;
    bool abandoned;       /* the client left: counted apart from the 4xx */
} srv_reply;

/* Handlers. fd: the client's socket (a handler waiting for a whole answer polls it to cancel early). */
void srv_route_openai(srv_server *s, srv_api api, const char *body, size_t len, int fd, srv_reply *r);
void srv_route_messages(srv_server *s, const char *body, size_t len, int fd, srv_reply *r);
void srv_route_count_tokens(srv_server *s, const char *body, size_t len, srv_reply *r);
void srv_route_tokenize(srv_server *s, const char *body, size_t len, srv_reply *r);
void srv_route_detokenize(srv_server *s, const char *body, size_t len, srv_reply *r);
void srv_route_models(srv_server *s, srv_reply *r);

/* ---- shared by the handlers (routes_common.c) ---- */

/* An error reply in the API's format. */
void srv_reply_error(srv_reply *r, srv_api api, const srv_err *e);
/* A JSON reply (takes v). */
void srv_reply_json(srv_reply *r, int status, json_t *v);
/* With --strict-model, checks the requested model name against the loaded one (404 if it is another);
 * else any name is accepted, as llama-server does (clients hard-code names). */
int srv_check_model(const srv_server *s, const char *model, srv_err *e);
/* The prompt's tokens (malloc'd into *ids): rendered with the chat template for messages, tokenized,
 * checked against the context and vocabulary. */
int srv_prompt_tokens(srv_server *s, srv_params *p, int32_t **ids, int *n, srv_err *e);
/* Validates, builds and submits a job for p (whose stop strings it copies). 429 when the queue is full. */
int srv_submit(srv_server *s, srv_params *p, const int32_t *ids, int n, srv_job **out, srv_err *e);
/* Waits for the whole output of j, cancelling if the client at fd goes away (SRV_PEER_GONE: a half-close
 * is not leaving). Returns 0, or -1 if the client left. Fills *text (malloc'd), the logprob entries
 * (malloc'd) and the final delta. */
int srv_collect(srv_job *j, int fd, char **text, size_t *len, srv_lp **lp, int *n_lp, srv_delta *fin);
/* What the peer at fd did: SRV_PEER_OK; SRV_PEER_HALF, it sent its FIN (shutdown(SHUT_WR), legal HTTP, or
 * a close: only a write tells which); SRV_PEER_GONE, the connection was reset or is closed both ways. */
enum { SRV_PEER_OK, SRV_PEER_HALF, SRV_PEER_GONE };
int srv_peer_state(int fd);
bool srv_client_gone(int fd);
/* The reply for a whole answer that did not finish: 500 if the engine failed, else the job was cancelled:
 * by the client leaving (marked abandoned; nobody reads the 400) or by the server stopping (503). */
void srv_reply_unfinished(srv_reply *r, srv_api api, const srv_delta *fin, int fd);
/* A new stream for j (takes the job reference) with the request's details. */
srv_stream *srv_stream_new(srv_server *s, srv_job *j, const srv_params *p, const char *id_prefix, int fd,
                           srv_format_fn format);
void srv_stream_free(srv_stream *st);
/* Appends "data: JSON\n\n" (event: NAME first if given); takes v. */
void srv_stream_event(srv_stream *st, const char *event, json_t *v);
void srv_stream_raw(srv_stream *st, const char *text);
/* A token's text (bytes, for logprobs). */
json_t *srv_token_text(const srv_server *s, int32_t tok);
json_t *srv_token_bytes(const srv_server *s, int32_t tok);
/* Whether p's reply is searched for tool calls. */
bool srv_tools_on(const srv_params *p);
/* A whole reply (p->prefill + text) split into content and tool calls, each call given an id of
 * id_prefix + random (all malloc'd; free the calls with srv_tool_call_free, then the array). Without
 * tools: all of it is content. */
int srv_reply_tools(const srv_params *p, const char *text, size_t len, const char *id_prefix, char **content,
                    srv_tool_call **calls, int *n_calls);
/* A random id of prefix + 24 alphanumerics. */
void srv_make_id(char *out, size_t cap, const char *prefix);

#endif
