/* The connection prelude's check (srv_prelude_check, src/server/accept.c): which first bytes of a
 * connection go on to MHD (1), wait for more (0) or are refused with which status (-1). Each partial
 * prefix of a good request must wait, never be refused. The sockets end to end: cli_server_hardening.sh. */
#include <string.h>

#include "check.h"
#include "server/accept.h"

static int run(const char *s, srv_err *e) { return srv_prelude_check(s, strlen(s), 1 << 20, e); }

static void expect(const char *s, int rc, int status) {
    srv_err e = {0};
    int got = run(s, &e);
    CHECKF(got == rc && (rc >= 0 || e.status == status), "%.60s: rc %d status %d, expected rc %d status %d", s, got,
           e.status, rc, status);
}

int main(void) {
    const char *good[] = {
        "GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
        "\r\nPOST /v1/chat/completions HTTP/1.1\r\nContent-Length: 12\r\nContent-Length: 12\r\n\r\n{\"a\":1}",
        "POST /tokenize HTTP/1.0\nTransfer-Encoding: chunked\n\n1f;ext=1\r\n",
        "OPTIONS * HTTP/1.1\r\n\r\n",
    };
    for (size_t g = 0; g < sizeof good / sizeof *good; g++) {
        expect(good[g], 1, 0);
        /* every proper prefix ending before the blank line waits */
        const char *end = strstr(good[g] + 2, "\n\n") ? strstr(good[g] + 2, "\n\n") + 1 : strstr(good[g], "\r\n\r\n") + 3;
        for (size_t n = 0; n < (size_t)(end - good[g]); n++) {
            srv_err e = {0};
            int rc = srv_prelude_check(good[g], n, 1 << 20, &e);
            CHECKF(rc == 0, "%zu bytes of good request %zu: rc %d (%s)", n, g, rc, e.msg);
        }
    }
    expect("GARBAGE\r\n\r\n", -1, 400);
    expect("GET\r\n\r\n", -1, 400);
    expect("GET /\r\n\r\n", -1, 400);
    expect("GET / HTTP/1.1 x\r\n\r\n", -1, 400);
    expect("GET  / HTTP/1.1\r\n\r\n", -1, 400);
    expect("\x16\x03\x01\x02", -1, 400); /* a TLS hello: refused before any line end */
    expect("G\x01", -1, 400);
    expect("GET / HTTP/1.1\r\nno colon here\r\n\r\n", -1, 400);
    expect("GET / HTTP/1.1\r\n folded: x\r\n\r\n", -1, 400);
    expect("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\n", -1, 400);
    expect("POST / HTTP/1.1\r\nContent-Length: 5x\r\n\r\n", -1, 400);
    expect("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", -1, 400);
    expect("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -1, 400);
    expect("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n", -1, 400);
    expect("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n7fffffff\r\n", -1, 413);
    expect("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", -1, 400);
    expect("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10", 1, 0); /* the rest is MHD's */
    static char big[SRV_MAX_HEADER + 100];
    memset(big, 'a', sizeof big - 1);
    memcpy(big, "GET /", 5);
    expect(big, -1, 431);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    expect(big, -1, 431);
    return check_report("test_server_http");
}
