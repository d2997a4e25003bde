/* srv accept: the listening socket and the "prelude" of each new connection, before libmicrohttpd sees it.
 *
 * Why: MHD gives a connection its own thread as soon as it is accepted, waits on it for as long as its
 * inactivity timeout, and closes a connection whose request line it cannot parse without answering. Here
 * one thread accepts and watches every new connection with poll() (peeking, not reading) until its whole
 * header block has arrived; only then is it handed to MHD (MHD_add_connection), which reads it again. So:
 *   - a socket that sends nothing, or half a request line, holds no MHD thread and is answered 408 and
 *     closed after the request timeout (slowloris costs a poll entry, not a thread);
 *   - a garbage request line, a malformed header line, conflicting Content-Length headers, or a chunked
 *     body whose first chunk size overflows get a 400 (an oversized chunk a 413, an oversized header block
 *     a 431) with a JSON error body, then a lingering close (the rest of the input is drained so the reply
 *     is not lost to a reset).
 * Later requests on a kept-alive connection are MHD's (its inactivity timeout is the same --timeout).
 *
 * srv_prelude_check is the pure part (unit-tested in tests/server/test_server_http.c). */
#ifndef LLM170_SERVER_ACCEPT_H
#define LLM170_SERVER_ACCEPT_H

#include <microhttpd.h>
#include <stddef.h>

#include "server/json.h"
#include "server/metrics.h"

#define SRV_MAX_HEADER 16384 /* bytes of request line and headers */

/* Looks at the first n bytes a connection sent. Returns 1 when the header block is complete and sound,
 * 0 when more bytes are needed to decide, -1 with e filled (status and message) when it must be refused. */
int srv_prelude_check(const char *buf, size_t n, size_t max_body, srv_err *e);

/* Opens a listening TCP socket on host:port (port 0: any free one). Returns the fd, or -1 after saying
 * why on stderr; *bound_port receives the port. */
int srv_listen(const char *host, int port, int *bound_port);

typedef struct srv_acceptor srv_acceptor;

typedef struct srv_accept_params {
    int timeout_s;      /* a connection's whole header block must arrive within this */
    int max_pending;    /* connections in the prelude at once; the listener waits while this many are */
    size_t max_body;
} srv_accept_params;

/* Starts the accepting thread on listen_fd (which it then owns) for daemon d (started with
 * MHD_USE_NO_LISTEN_SOCKET). mt counts refused requests. NULL on failure. */
srv_acceptor *srv_acceptor_start(int listen_fd, struct MHD_Daemon *d, srv_metrics *mt, const srv_accept_params *p);
/* Stops the thread and closes the listener and every connection still in its prelude. */
void srv_acceptor_stop(srv_acceptor *a);

#endif
