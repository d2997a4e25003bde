/* srv http: the listener (libmicrohttpd, one thread per connection so a handler may block on its job
 * without holding up others; threads wait on condition variables, never spin), routing, the API key,
 * the body size limit and server-sent-event streaming; and srv_serve, which starts it all. New
 * connections go through accept.c first (whole header block within --timeout, sound request line and
 * framing headers), so MHD only ever sees connections that have sent their headers.
 *
 * Order of checks on a request, all from the headers, before any body byte is read: route known (404) and
 * method (405; HEAD wherever GET is allowed); loading (503); API key (401, every route but /health and the
 * chat page at /;
 * compared in constant time); body size (413, from Content-Length). Then the body is buffered (within the
 * size limit and --timeout) and the handler runs; its errors are 4xx JSON bodies in the API's format. */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/accept.h"
#include "server/routes.h"

enum route_id { R_UI, R_HEALTH, R_MODELS, R_METRICS, R_TOKENIZE, R_DETOKENIZE, R_COMPLETIONS, R_CHAT, R_MESSAGES, R_COUNT };

static const struct route {
    const char *path;
    const char *method;
    enum route_id id;
} routes[] = {
    {"/", "GET", R_UI},
    {"/health", "GET", R_HEALTH},
    {"/v1/health", "GET", R_HEALTH},
    {"/v1/models", "GET", R_MODELS},
    {"/metrics", "GET", R_METRICS},
    {"/tokenize", "POST", R_TOKENIZE},
    {"/detokenize", "POST", R_DETOKENIZE},
    {"/v1/completions", "POST", R_COMPLETIONS},
    {"/v1/chat/completions", "POST", R_CHAT},
    {"/v1/messages", "POST", R_MESSAGES},
    {"/v1/messages/count_tokens", "POST", R_COUNT},
};

/* The chat page (src/server/ui/chat.html, embedded by cmake/embed.cmake). */
extern const unsigned char srv_ui_chat[];
extern const size_t srv_ui_chat_len;

/* Per-request state kept by MHD between calls of the access handler. */
typedef struct conn_req {
    char *body;
    size_t len, cap;
    bool too_big;
    bool replied;          /* an error was queued from the headers alone; the body is not read */
    enum route_id id;
    double t0;             /* when the headers were complete: the body must follow within --timeout */
} conn_req;

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static srv_api route_api(const char *url) {
    return strncmp(url, "/v1/messages", 12) == 0 ? SRV_API_MESSAGES : SRV_API_CHAT;
}

/* Equal strings, in time that depends only on the key's length (not on where they differ). */
static bool key_equal(const char *given, const char *key) {
    size_t gl = strlen(given), kl = strlen(key);
    unsigned diff = gl != kl;
    for (size_t i = 0; i < kl; i++) diff |= (unsigned char)key[i] ^ (unsigned char)(i < gl ? given[i] : 0);
    return diff == 0;
}

static bool authorized(const srv_server *s, struct MHD_Connection *c) {
    if (!s->cfg.api_key) return true;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *xkey = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-api-key");
    bool ok = false;
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0) ok |= key_equal(auth + 7, s->cfg.api_key);
    if (xkey) ok |= key_equal(xkey, s->cfg.api_key);
    return ok;
}

static enum MHD_Result send_reply(srv_server *s, struct MHD_Connection *c, srv_reply *r) {
    struct MHD_Response *resp;
    if (r->stream) {
        resp = NULL;
    } else {
        resp = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
        if (!resp) free(r->body);
        r->body = NULL;
    }
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", r->ctype ? r->ctype : "application/json");
    if (r->abandoned) srv_metrics_abandoned(&s->mt);
    else srv_metrics_request(&s->mt, r->status);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result send_error(srv_server *s, struct MHD_Connection *c, srv_api api, int status, const char *msg) {
    srv_reply r = {0};
    srv_err e;
    srv_fail(&e, status, NULL, "%s", msg);
    srv_reply_error(&r, api, &e);
    return send_reply(s, c, &r);
}

/* MHD's content reader for a stream: hands out pending event bytes, waiting on the job for more. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    srv_stream *st = cls;
    while (st->off == st->len) {
        if (st->done) return MHD_CONTENT_READER_END_OF_STREAM;
        st->off = st->len = 0;
        int peer = srv_peer_state(st->fd);
        if (peer == SRV_PEER_GONE) {
            srv_job_cancel(st->job);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        srv_delta d;
        if (srv_job_wait(st->job, &st->cur, 25, &d)) st->format(st, &d);
        srv_delta_free(&d);
        /* An SSE comment (clients ignore it) when no event is due: twice a second once the peer sent its
         * FIN, since only a write tells a half-close (it still reads) from a close (it answers with a
         * reset); and every third of --timeout anyway, since MHD closes a connection that has sent
         * nothing for --timeout, which a reply waiting in the queue or a long prefill would otherwise be. */
        double t = mono_s(), every = peer == SRV_PEER_HALF ? 0.5 : st->srv->cfg.timeout_s / 3.0;
        if (st->len == 0 && t - st->probe_t >= every) {
            st->probe_t = t;
            srv_stream_raw(st, ": ping\n\n");
        }
    }
    size_t n = st->len - st->off < max ? st->len - st->off : max;
    memcpy(buf, st->buf + st->off, n);
    st->off += n;
    st->probe_t = mono_s(); /* something is being sent */
    return (ssize_t)n;
}

static void stream_done(void *cls) { srv_stream_free(cls); }

static enum MHD_Result send_stream(srv_server *s, struct MHD_Connection *c, srv_stream *st) {
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_done);
    if (!resp) {
        srv_stream_free(st);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    srv_metrics_request(&s->mt, 200);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result dispatch(srv_server *s, struct MHD_Connection *c, enum route_id id, conn_req *cr) {
    srv_reply r = {0};
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = ci ? ci->connect_fd : -1;
    const char *body = cr->body ? cr->body : "";
    switch (id) {
    case R_UI:
        r.status = 200;
        r.ctype = "text/html; charset=utf-8";
        r.len = srv_ui_chat_len;
        if (!(r.body = malloc(r.len))) return MHD_NO;
        memcpy(r.body, srv_ui_chat, r.len);
        break;
    case R_HEALTH: {
        bool ready = atomic_load(&s->ready);
        srv_reply_json(&r, ready ? 200 : 503, json_pack("{s:s}", "status", ready ? "ok" : "loading model"));
        break;
    }
    case R_METRICS:
        r.status = 200;
        r.ctype = "text/plain; version=0.0.4";
        r.body = srv_metrics_text(&s->mt, &r.len);
        if (!r.body) return MHD_NO;
        break;
    case R_MODELS: srv_route_models(s, &r); break;
    case R_TOKENIZE: srv_route_tokenize(s, body, cr->len, &r); break;
    case R_DETOKENIZE: srv_route_detokenize(s, body, cr->len, &r); break;
    case R_COMPLETIONS: srv_route_openai(s, SRV_API_COMPLETION, body, cr->len, fd, &r); break;
    case R_CHAT: srv_route_openai(s, SRV_API_CHAT, body, cr->len, fd, &r); break;
    case R_MESSAGES: srv_route_messages(s, body, cr->len, fd, &r); break;
    case R_COUNT: srv_route_count_tokens(s, body, cr->len, &r); break;
    }
    if (r.stream) return send_stream(s, c, r.stream);
    return send_reply(s, c, &r);
}

/* The route for url and method; sets *path_known when url is a route under any method. HEAD goes where
 * GET does (MHD sends the headers only). */
static const struct route *find_route(const char *url, const char *method, bool *path_known) {
    const struct route *rt = NULL;
    *path_known = false;
    if (!strcmp(method, "HEAD")) method = "GET";
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
        if (strcmp(routes[i].path, url) != 0) continue;
        *path_known = true;
        if (!strcmp(routes[i].method, method)) rt = &routes[i];
    }
    return rt;
}

/* The first call for a request (headers only): every refusal that needs no body, so an unauthenticated
 * or oversized request is answered without reading a byte of its body. */
static enum MHD_Result on_headers(srv_server *s, struct MHD_Connection *c, const char *url, const char *method,
                                  conn_req *cr) {
    srv_api api = route_api(url);
    bool path_known;
    const struct route *rt = find_route(url, method, &path_known);
    char msg[384];
    cr->replied = true;
    if (!rt) {
        snprintf(msg, sizeof msg, path_known ? "%s is not allowed on %.200s" : "no route %s %.200s", method, url);
        return send_error(s, c, api, path_known ? 405 : 404, msg);
    }
    /* the health check and the chat page are open (the page asks for the key and sends it itself) */
    bool open = rt->id == R_HEALTH || rt->id == R_UI;
    if (!open && !atomic_load(&s->ready)) return send_error(s, c, api, 503, "the model is still loading");
    if (!open && !authorized(s, c))
        return send_error(s, c, api, 401, "invalid or missing API key (send 'Authorization: Bearer KEY' or 'x-api-key')");
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > s->cfg.max_body) {
        snprintf(msg, sizeof msg, "the request body is larger than the limit of %zu bytes", s->cfg.max_body);
        return send_error(s, c, api, 413, msg);
    }
    cr->replied = false;
    cr->id = rt->id;
    cr->t0 = mono_s();
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    srv_server *s = cls;
    conn_req *cr = *con_cls;
    if (!cr) {
        if (!(cr = calloc(1, sizeof *cr))) return MHD_NO;
        *con_cls = cr;
        return on_headers(s, c, url, method, cr);
    }
    if (cr->replied) { /* MHD does not read the body of an answered request; close if it ever asks */
        *upload_size = 0;
        return MHD_NO;
    }
    if (*upload_size) {
        /* a body dribbled in slower than --timeout allows: drop the connection */
        if (mono_s() - cr->t0 > s->cfg.timeout_s) return MHD_NO;
        if (cr->too_big || cr->len + *upload_size > s->cfg.max_body) {
            cr->too_big = true;
        } else {
            if (cr->len + *upload_size + 1 > cr->cap) {
                size_t cap = (cr->len + *upload_size + 1) * 2;
                char *b = realloc(cr->body, cap);
                if (!b) return MHD_NO;
                cr->body = b;
                cr->cap = cap;
            }
            memcpy(cr->body + cr->len, upload, *upload_size);
            cr->len += *upload_size;
            cr->body[cr->len] = 0;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (cr->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "the request body is larger than the limit of %zu bytes", s->cfg.max_body);
        return send_error(s, c, route_api(url), 413, msg);
    }
    return dispatch(s, c, cr->id, cr);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls, (void)c, (void)toe;
    conn_req *cr = *con_cls;
    if (!cr) return;
    free(cr->body);
    free(cr);
    *con_cls = NULL;
}

/* Refuses a model file bigger than the memory available (two servers started at once can freeze a host). */
static int check_memory(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0; /* the loader reports a missing file */
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    if (kb && (unsigned long long)st.st_size > kb * 1024ull) {
        fprintf(stderr, "llm170 serve: %s needs %.1f GiB but only %.1f GiB of memory is available; refusing to load\n",
                path, (double)st.st_size / (1 << 30), (double)kb / (1 << 20));
        return -1;
    }
    return 0;
}

/* The chat template: --chat-template, else the file's, else (files without one, like some GGUF
 * conversions) the built-in of the model's family, said on stderr so the choice is visible. */
static void pick_template(srv_server *s) {
    s->chat_template = s->cfg.chat_template;
    if (s->chat_template) return;
    char *out = NULL;
    size_t len;
    if (llm170_chat_render(s->m, "[{\"role\":\"user\",\"content\":\"x\"}]", NULL, true, -1, NULL, &out, &len) == 0) {
        free(out);
        return;
    }
    const char *arch = llm170_model_arch(s->m);
    s->chat_template = !strncmp(arch, "gemma", 5) ? "gemma" : !strcmp(arch, "llama") ? "llama3" : "chatml";
    fprintf(stderr, "llm170 serve: the model file has no chat template; using the built-in '%s' "
            "(--chat-template picks another)\n", s->chat_template);
}

/* The MHD daemon (no listener of its own: accept.c hands it connections) and the acceptor on a new
 * listening socket. Returns the daemon, or NULL after saying why. */
static struct MHD_Daemon *start_daemon(srv_server *s, srv_acceptor **acc, int *port) {
    int lfd = srv_listen(s->cfg.host, s->cfg.port, port);
    if (lfd < 0) return NULL;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
                     MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    /* the inactivity timeout covers kept-alive idle connections and stalled bodies or readers; a handler
     * waiting on its job is not inactive (MHD is inside the callback, not polling) */
    struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_NOTIFY_COMPLETED,
                                            on_completed, s, MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->cfg.max_conns,
                                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg.timeout_s, MHD_OPTION_END);
    srv_accept_params ap = {.timeout_s = s->cfg.timeout_s, .max_pending = s->cfg.max_conns, .max_body = s->cfg.max_body};
    if (!d || !(*acc = srv_acceptor_start(lfd, d, &s->mt, &ap))) {
        fprintf(stderr, "llm170 serve: cannot start the HTTP daemon\n");
        if (d) MHD_stop_daemon(d);
        close(lfd);
        return NULL;
    }
    return d;
}

int srv_serve(const srv_config *cfg) {
    srv_server *s = calloc(1, sizeof *s);
    if (!s) return 1;
    s->cfg = *cfg;
    s->created = time(NULL);
    const char *base = strrchr(cfg->model_path, '/');
    snprintf(s->file_base, sizeof s->file_base, "%s", base ? base + 1 : cfg->model_path);
    snprintf(s->model_id, sizeof s->model_id, "%s", cfg->alias ? cfg->alias : s->file_base);
    srv_metrics_init(&s->mt, cfg->n_slots);
    /* SIGINT/SIGTERM are taken with sigwait below; block them before any thread starts so none gets them.
     * SIGPIPE: a client that left must not kill the server. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    int rc = 1, port = 0;
    srv_acceptor *acc = NULL;
    struct MHD_Daemon *d = start_daemon(s, &acc, &port);
    if (!d) goto out;
    bool v6 = strchr(cfg->host, ':') != NULL;
    fprintf(stderr, "llm170 serve: listening on http://%s%s%s:%d (loading %s)\n", v6 ? "[" : "", cfg->host, v6 ? "]" : "",
            port, cfg->model_path);
    llm170_model_params mp = llm170_model_default_params();
    mp.n_threads = cfg->n_threads;
    mp.device = cfg->device;
    llm170_context_params cp = {.n_seq = cfg->n_slots, .n_ctx = cfg->n_ctx, .n_batch = cfg->n_batch,
                                .cache_type_k = cfg->cache_type_k, .cache_type_v = cfg->cache_type_v};
    srv_sched_params sp = {cfg->n_slots, cfg->n_ctx, cfg->n_batch, cfg->queue_cap, cfg->prefill_chunk, cfg->spec};
    if (check_memory(cfg->model_path)) goto out;
    if (llm170_model_load(cfg->model_path, &mp, &s->m) || llm170_context_new(s->m, &cp, &s->ctx)) {
        fprintf(stderr, "llm170 serve: %s\n", llm170_last_error());
        goto out;
    }
    int src = srv_sched_new(s->m, s->ctx, &sp, &s->mt, &s->sched);
    if (src) {
        if (src == SRV_SCHED_ESPEC) fprintf(stderr, "llm170 serve: --spec: %s\n", llm170_last_error());
        else fprintf(stderr, "llm170 serve: cannot start the scheduler\n");
        goto out;
    }
    pick_template(s);
    if (cfg->spec.type != LLM170_SPEC_NONE)
        fprintf(stderr, "llm170 serve: speculative decoding per slot: %s, draft-min %d, draft-max %d%s\n",
                cfg->spec.type == LLM170_SPEC_NGRAM ? "n-gram lookup" : "a draft model", cfg->spec.draft_min,
                cfg->spec.draft_max, cfg->spec.adaptive ? " (adaptive)" : " (fixed)");
    char desc[128];
    llm170_model_desc(s->m, desc, sizeof desc);
    fprintf(stderr, "llm170 serve: ready: %s as '%s' on %s, %d slots of %d tokens, %d threads\n", desc, s->model_id,
            cfg->device ? cfg->device : "cpu", cfg->n_slots, cfg->n_ctx, cfg->n_threads);
    atomic_store(&s->ready, true);
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "llm170 serve: signal %d, shutting down\n", sig);
    rc = 0;
out:
    /* stop the scheduler first so waiting handlers see their jobs end (and new submits fail), then the
     * listener (which joins the connection threads), then free what they used */
    atomic_store(&s->ready, false);
    srv_sched_stop(s->sched);
    srv_acceptor_stop(acc);
    if (d) MHD_stop_daemon(d);
    srv_sched_free(s->sched);
    llm170_context_free(s->ctx);
    llm170_model_free(s->m);
    srv_metrics_destroy(&s->mt);
    free(s);
    return rc;
}
