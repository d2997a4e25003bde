/* srv accept: see accept.h. One thread, one poll() over the listener, a wake-up pipe and every connection
 * in its prelude (waiting for its header block) or in a lingering close (reply sent, input drained). */
#include "server/accept.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LINGER_S 2.0 /* how long a refused connection's input is drained before the close */

/* ---- the pure check ---- */

static bool is_tchar(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c);
}

/* The request line buf[0..n) (no line end): METHOD SP TARGET SP HTTP/d.d. With partial, n bytes are only
 * the start of the line so far: true while they can still begin a valid one. */
static bool request_line_ok(const char *buf, size_t n, bool partial) {
    size_t i = 0, m = 0;
    while (i < n && is_tchar((unsigned char)buf[i])) i++;
    if (i == n) return partial && i <= 32;
    if (i == 0 || i > 32 || buf[i] != ' ') return false;
    m = ++i;
    while (i < n && (unsigned char)buf[i] > 0x20 && (unsigned char)buf[i] < 0x7f) i++;
    if (i == n) return partial;
    if (i == m || buf[i] != ' ') return false;
    i++;
    static const char v[] = "HTTP/d.d";
    size_t k = 0;
    for (; k < 8 && i < n; k++, i++) {
        char c = buf[i];
        if (v[k] == 'd' ? !(c >= '0' && c <= '9') : c != v[k]) return false;
    }
    return partial ? i == n : k == 8 && i == n;
}

static bool ieq_prefix(const char *line, size_t n, const char *name) {
    size_t l = strlen(name);
    return n > l && line[l] == ':' && strncasecmp(line, name, l) == 0;
}

/* A header's value without the surrounding blanks. */
static void header_value(const char *line, size_t n, const char **v, size_t *vn) {
    const char *p = (const char *)memchr(line, ':', n) + 1, *end = line + n;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t')) end--;
    *v = p;
    *vn = (size_t)(end - p);
}

/* The first chunk-size line of a chunked body, if it has arrived: hex digits, an optional extension. */
static int chunk_check(const char *buf, size_t n, size_t max_body, srv_err *e) {
    const char *nl = memchr(buf, '\n', n);
    size_t len = nl ? (size_t)(nl - buf) : n, digits = 0;
    unsigned long long size = 0;
    while (digits < len && strchr("0123456789abcdefABCDEF", buf[digits]) && buf[digits]) {
        if (digits == 15) {
            size_t k = strspn(buf, "0123456789abcdefABCDEF");
            return srv_fail(e, 400, NULL, "the chunk size %.*s overflows (at most 15 hex digits)", (int)(k < 32 ? k : 32), buf);
        }
        char c = buf[digits++];
        size = size * 16 + (unsigned long long)(c <= '9' ? c - '0' : (c | 32) - 'a' + 10);
    }
    if (digits < len && buf[digits] != ';' && buf[digits] != '\r')
        return srv_fail(e, 400, NULL, "malformed chunk size line");
    if (nl && digits == 0) return srv_fail(e, 400, NULL, "malformed chunk size line (no hex digits)");
    if (size > max_body)
        return srv_fail(e, 413, NULL, "a chunk of %llu bytes exceeds the body limit of %zu bytes", size, max_body);
    return 0;
}

int srv_prelude_check(const char *buf, size_t n, size_t max_body, srv_err *e) {
    size_t i = 0;
    /* RFC 9112 2.2: a server should ignore empty lines before the request line */
    while (i < n && i < 8 && (buf[i] == '\r' || buf[i] == '\n')) i++;
    const char *nl = memchr(buf + i, '\n', n - i);
    if (!nl) {
        size_t pn = n - i;
        if (pn && buf[i + pn - 1] == '\r') pn--;
        if (!request_line_ok(buf + i, pn, true))
            return srv_fail(e, 400, NULL, "malformed request line (expected METHOD /path HTTP/1.1)");
        if (n >= SRV_MAX_HEADER) return srv_fail(e, 431, NULL, "the request line is longer than %d bytes", SRV_MAX_HEADER);
        return 0;
    }
    size_t ll = (size_t)(nl - (buf + i));
    if (ll && buf[i + ll - 1] == '\r') ll--;
    if (!request_line_ok(buf + i, ll, false))
        return srv_fail(e, 400, NULL, "malformed request line (expected METHOD /path HTTP/1.1)");
    i = (size_t)(nl - buf) + 1;
    const char *cl = NULL;
    size_t cl_n = 0;
    bool chunked = false, has_te = false;
    for (;;) {
        nl = memchr(buf + i, '\n', n - i);
        if (!nl) {
            if (n >= SRV_MAX_HEADER) return srv_fail(e, 431, NULL, "the request headers exceed %d bytes", SRV_MAX_HEADER);
            return 0;
        }
        const char *line = buf + i;
        size_t len = (size_t)(nl - line);
        if (len && line[len - 1] == '\r') len--;
        i = (size_t)(nl - buf) + 1;
        if (i > SRV_MAX_HEADER) return srv_fail(e, 431, NULL, "the request headers exceed %d bytes", SRV_MAX_HEADER);
        if (len == 0) break;
        size_t k = 0;
        while (k < len && is_tchar((unsigned char)line[k])) k++;
        if (k == 0 || k == len || line[k] != ':')
            return srv_fail(e, 400, NULL, "malformed header line %.40s", line);
        const char *v;
        size_t vn;
        header_value(line, len, &v, &vn);
        if (ieq_prefix(line, len, "Content-Length")) {
            if (vn == 0 || vn > 19 || strspn(v, "0123456789") < vn)
                return srv_fail(e, 400, NULL, "Content-Length must be a decimal number, got '%.*s'", (int)(vn < 40 ? vn : 40), v);
            if (cl && (cl_n != vn || memcmp(cl, v, vn) != 0))
                return srv_fail(e, 400, NULL, "conflicting Content-Length headers (%.*s and %.*s)", (int)(cl_n < 20 ? cl_n : 20),
                                cl, (int)(vn < 20 ? vn : 20), v);
            cl = v, cl_n = vn;
        } else if (ieq_prefix(line, len, "Transfer-Encoding")) {
            if (has_te || vn != 7 || strncasecmp(v, "chunked", 7) != 0)
                return srv_fail(e, 400, NULL, "unsupported Transfer-Encoding '%.*s' (only a single 'chunked')",
                                (int)(vn < 40 ? vn : 40), v);
            has_te = chunked = true;
        }
    }
    if (cl && chunked) return srv_fail(e, 400, NULL, "both Content-Length and Transfer-Encoding were sent");
    if (chunked && i < n) return chunk_check(buf + i, n - i, max_body, e) ? -1 : 1;
    return 1;
}

/* ---- the listener ---- */

int srv_listen(const char *host, int port, int *bound_port) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int gai = getaddrinfo(host, portstr, &hints, &ai);
    if (gai != 0) {
        fprintf(stderr, "llm170 serve: cannot resolve --host %s: %s\n", host, gai_strerror(gai));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0) {
        fprintf(stderr, "llm170 serve: cannot listen on %s:%d (%s: in use, or not an address of this host)\n", host, port,
                strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    *bound_port = port;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                     : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* ---- the thread ---- */

typedef struct pending {
    int fd;
    bool closing;   /* refused: draining input until EOF or the linger deadline */
    double deadline;
    struct sockaddr_storage addr;
    socklen_t addrlen;
} pending;

struct srv_acceptor {
    int listen_fd, wake[2];
    struct MHD_Daemon *d;
    srv_metrics *mt;
    srv_accept_params p;
    pthread_t thread;
    pending *conns;
    int n;
    char *peek;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *reason(int status) {
    switch (status) {
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    default: return "Bad Request";
    }
}

/* Sends the error reply (best effort: a socket buffer takes it whole) and starts the lingering close. */
static void refuse(srv_acceptor *a, pending *c, const srv_err *e, bool count) {
    size_t blen = 0;
    char *body = srv_error_openai(e, &blen);
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
                      e->status, reason(e->status), body ? blen : 0);
    if (send(c->fd, head, (size_t)hn, MSG_NOSIGNAL | MSG_DONTWAIT) == hn && body)
        (void)!send(c->fd, body, blen, MSG_NOSIGNAL | MSG_DONTWAIT);
    free(body);
    shutdown(c->fd, SHUT_WR);
    c->closing = true;
    c->deadline = now_s() + LINGER_S;
    if (count) srv_metrics_request(a->mt, e->status);
}

static void drop(srv_acceptor *a, int k) {
    a->conns[k] = a->conns[--a->n];
}

/* New bytes on connection k: decides whether it goes to MHD, is refused, or waits. */
static void look(srv_acceptor *a, int k) {
    pending *c = &a->conns[k];
    if (c->closing) {
        char sink[4096];
        ssize_t r = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            close(c->fd);
            drop(a, k);
        }
        return;
    }
    ssize_t r = recv(c->fd, a->peek, SRV_MAX_HEADER + 64, MSG_PEEK | MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (r <= 0) { /* gone before it asked anything */
        close(c->fd);
        drop(a, k);
        return;
    }
    srv_err e;
    int rc = srv_prelude_check(a->peek, (size_t)r, a->p.max_body, &e);
    if (rc < 0) {
        refuse(a, c, &e, true);
    } else if (rc > 0) {
        /* MHD owns (and closes) the socket from here, also when it cannot take it */
        MHD_add_connection(a->d, c->fd, (struct sockaddr *)&c->addr, c->addrlen);
        drop(a, k);
    }
}

static void expire(srv_acceptor *a, double now) {
    for (int k = 0; k < a->n; k++) {
        pending *c = &a->conns[k];
        if (now < c->deadline) continue;
        if (c->closing) {
            close(c->fd);
            drop(a, k--);
            continue;
        }
        srv_err e;
        char b;
        bool sent_some = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
        srv_fail(&e, 408, NULL, "the request did not arrive within %d s (--timeout)", a->p.timeout_s);
        refuse(a, c, &e, sent_some);
    }
}

static void *accept_main(void *arg) {
    srv_acceptor *a = arg;
    struct pollfd *pf = calloc((size_t)a->p.max_pending + 2, sizeof *pf);
    if (!pf) return NULL;
    for (;;) {
        int np = 0;
        pf[np++] = (struct pollfd){.fd = a->wake[0], .events = POLLIN};
        pf[np++] = (struct pollfd){.fd = a->n < a->p.max_pending ? a->listen_fd : -1, .events = POLLIN};
        for (int k = 0; k < a->n; k++) pf[np++] = (struct pollfd){.fd = a->conns[k].fd, .events = POLLIN};
        int r = poll(pf, (nfds_t)np, 250);
        if (r < 0 && errno != EINTR) break;
        if (pf[0].revents) break; /* told to stop */
        /* connections first (indices match conns[] as polled; look() may drop one, so go backwards) */
        for (int k = a->n - 1; k >= 0; k--)
            if (pf[2 + k].revents) look(a, k);
        if (pf[1].revents & POLLIN) {
            pending c = {.addrlen = sizeof c.addr};
            c.fd = accept4(a->listen_fd, (struct sockaddr *)&c.addr, &c.addrlen, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (c.fd >= 0) {
                c.deadline = now_s() + a->p.timeout_s;
                a->conns[a->n++] = c;
            }
        }
        expire(a, now_s());
    }
    free(pf);
    return NULL;
}

srv_acceptor *srv_acceptor_start(int listen_fd, struct MHD_Daemon *d, srv_metrics *mt, const srv_accept_params *p) {
    srv_acceptor *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->listen_fd = listen_fd;
    a->d = d;
    a->mt = mt;
    a->p = *p;
    a->conns = calloc((size_t)p->max_pending, sizeof *a->conns);
    a->peek = malloc(SRV_MAX_HEADER + 64);
    if (!a->conns || !a->peek || pipe2(a->wake, O_CLOEXEC) != 0) {
        free(a->conns), free(a->peek), free(a);
        return NULL;
    }
    if (pthread_create(&a->thread, NULL, accept_main, a) != 0) {
        close(a->wake[0]), close(a->wake[1]);
        free(a->conns), free(a->peek), free(a);
        return NULL;
    }
    return a;
}

void srv_acceptor_stop(srv_acceptor *a) {
    if (!a) return;
    (void)!write(a->wake[1], "x", 1);
    pthread_join(a->thread, NULL);
    for (int k = 0; k < a->n; k++) close(a->conns[k].fd);
    close(a->listen_fd);
    close(a->wake[0]), close(a->wake[1]);
    free(a->conns), free(a->peek), free(a);
}
