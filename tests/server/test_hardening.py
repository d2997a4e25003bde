"""llm170 serve against slow, unauthenticated, half-closing and malformed clients, on raw sockets.

Run by tests/server/cli_server_hardening.sh with LLM170_URL, LLM170_KEY (the --api-key), LLM170_PID (the
server's pid, for its RSS) and LLM170_TIMEOUT (its --timeout, short so deadlines show in seconds). Every
socket has a timeout and every loop a deadline. Exits non-zero on the first failed check."""
import json
import os
import socket
import struct
import threading
import time

from srvtest import check, run  # noqa: E402

URL = os.environ["LLM170_URL"]
KEY = os.environ["LLM170_KEY"]
PID = int(os.environ["LLM170_PID"])
TIMEOUT = float(os.environ["LLM170_TIMEOUT"])
# an ASan build keeps freed memory in quarantine (256 MB by default): RSS says nothing there
RSS_SLACK_KB = 1 << 30 if os.environ.get("LLM170_ASAN") == "1" else 0
HOST, PORT = URL.split("//")[1].split(":")
PORT = int(PORT)


def conn(timeout=10.0):
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    return s


def read_all(s, limit=10.0):
    """Everything until EOF (or the time limit); returns (bytes, seconds taken, closed by the server)."""
    out, t0 = b"", time.time()
    s.settimeout(0.2)
    while time.time() - t0 < limit:
        try:
            c = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return out, time.time() - t0, True
        if not c:
            return out, time.time() - t0, True
        out += c
    return out, time.time() - t0, False


def read_response(s, limit=10.0):
    """One HTTP response (Content-Length or chunked until the terminating chunk); returns (status, head, body)."""
    buf, t0 = b"", time.time()
    s.settimeout(0.2)
    while time.time() - t0 < limit:
        if b"\r\n\r\n" in buf:
            head, _, body = buf.partition(b"\r\n\r\n")
            h = head.decode("latin-1").lower()
            if "content-length:" in h:
                n = int(h.split("content-length:")[1].split("\r\n")[0])
                if len(body) >= n:
                    return int(head.split()[1]), head, body[:n]
            elif body.endswith(b"0\r\n\r\n"):
                return int(head.split()[1]), head, body
        try:
            c = s.recv(65536)
        except socket.timeout:
            continue
        if not c:
            break
        buf += c
    head, _, body = buf.partition(b"\r\n\r\n")
    return (int(head.split()[1]) if head.startswith(b"HTTP/") else 0), head, body


def request(method, path, body=b"", key=KEY, extra=b""):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    h = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".encode()
    if key:
        h += b"Authorization: Bearer " + key.encode() + b"\r\n"
    return h + extra + b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data


def metric(name):
    with conn() as s:
        s.sendall(request("GET", "/metrics"))
        st, _, body = read_response(s)
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise KeyError(name)


def rss_kb():
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


CHAT = {"model": "whatever-a-client-hard-codes", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
        "temperature": 0, "ignore_eos": True}


def test_auth_before_body():
    """No key and a large declared body: 401 from the headers alone, the body never sent."""
    for declared in (8_000_000, 9 << 20):
        with conn() as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(declared).encode() + b"\r\n\r\n{")
            t0 = time.time()
            st, _, body = read_response(s, limit=5)
            check(st == 401 and b"API key" in body, f"{declared} bytes declared, no key: status {st} {body[:120]!r}")
            check(time.time() - t0 < 2, "401 without waiting for the body")
    rss0 = rss_kb()
    socks = []
    for _ in range(16):
        s = conn()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 8000000\r\n\r\n" + b"x" * 65536)
        socks.append(s)
    for s in socks:
        st, _, _ = read_response(s, limit=5)
        check(st == 401, f"unauthenticated upload: {st}")
        s.close()
    grew = rss_kb() - rss0
    check(grew < 16 * 1024 + RSS_SLACK_KB, f"16 unauthenticated uploads raised RSS by {grew} kB")
    print(f"  16 unauthenticated 8 MB uploads: 401 each, RSS +{grew} kB")


def test_slow_clients_dropped():
    """A silent socket and half a request line are answered 408 and closed within --timeout (plus the
    1/4 s poll tick and slack); a body that stalls is dropped after --timeout too."""
    for sent in (b"", b"POST /v1/chat/compl"):
        with conn() as s:
            s.sendall(sent)
            out, took, closed = read_all(s, limit=TIMEOUT + 5)
            check(closed and took < TIMEOUT + 1.5, f"{sent!r}: closed {closed} after {took:.2f} s")
            check(out.startswith(b"HTTP/1.1 408"), f"{sent!r}: answered {out[:60]!r}")
    with conn() as s:  # headers complete, body stalls
        s.sendall(request("POST", "/v1/chat/completions", b"x" * 100)[:-90])
        out, took, closed = read_all(s, limit=TIMEOUT + 5)
        check(closed and took < TIMEOUT + 1.5, f"stalled body: closed {closed} after {took:.2f} s")
    with conn() as s:  # a body dribbled one byte per 0.3 s: under the inactivity timeout, not the deadline
        s.sendall(request("POST", "/v1/chat/completions", b"x" * 200)[:-200])
        t0, closed = time.time(), False
        while time.time() - t0 < TIMEOUT + 4 and not closed:
            try:
                s.sendall(b"x")
            except OSError:
                closed = True
            time.sleep(0.3)
            s.settimeout(0.01)
            try:
                closed = closed or s.recv(100) == b""
            except socket.timeout:
                pass
            except OSError:
                closed = True
        took = time.time() - t0
        check(closed and took < TIMEOUT + 1.5, f"dribbled body: closed {closed} after {took:.2f} s")
    print(f"  silent, half-line, stalled and dribbled clients closed within --timeout {TIMEOUT:g} s")


LORIS_S = float(os.environ.get("LLM170_LORIS_S", "6"))  # 60 for the figure in docs/benchmarks.md


def test_slowloris():
    """64 connections dribbling header bytes: /health and a chat request are answered throughout, and the
    server's RSS stays flat. Bounded: LORIS_S seconds."""
    stop = threading.Event()

    def loris():
        while not stop.is_set():
            try:
                s = conn(timeout=2)
                s.sendall(b"GET /health HTTP/1.1\r\n")
                while not stop.is_set():
                    s.sendall(b"X-a: b\r\n")
                    time.sleep(0.5)
            except OSError:
                pass

    rss0 = rss_kb()
    threads = [threading.Thread(target=loris, daemon=True) for _ in range(64)]
    for t in threads:
        t.start()
    worst, t0, n = 0.0, time.time(), 0
    while time.time() - t0 < LORIS_S:
        t1 = time.time()
        with conn() as s:
            s.sendall(request("GET", "/health", key=None))
            st, _, _ = read_response(s, limit=5)
        check(st == 200, f"/health during slowloris: {st}")
        with conn() as s:
            s.sendall(request("POST", "/v1/chat/completions", CHAT))
            st, _, body = read_response(s, limit=30)
        check(st == 200, f"chat during slowloris: {st} {body[:100]!r}")
        worst = max(worst, time.time() - t1)
        n += 1
    stop.set()
    for t in threads:
        t.join(timeout=3)
    grew = rss_kb() - rss0
    check(grew < 8 * 1024 + RSS_SLACK_KB, f"slowloris raised RSS by {grew} kB")
    print(f"  64 slowloris connections for {LORIS_S:g} s: {n} health+chat rounds answered, worst {worst:.2f} s, "
          f"RSS +{grew} kB")


def test_half_close_not_cancel():
    """shutdown(SHUT_WR) after sending is legal HTTP: the answer still comes, whole, streamed or not."""
    for stream in (False, True):
        with conn() as s:
            s.sendall(request("POST", "/v1/chat/completions", {**CHAT, "stream": stream}))
            s.shutdown(socket.SHUT_WR)
            st, _, body = read_response(s, limit=30)
        if stream:
            check(st == 200 and b"data: [DONE]" in body and b'"finish_reason":"length"' in body,
                  f"half-closed stream: {st} {body[-200:]!r}")
        else:
            check(st == 200 and json.loads(body)["usage"]["completion_tokens"] == 8, f"half-closed: {st} {body!r}")
    print("  half-closed clients answered in full (stream and not)")


def test_stream_outlives_timeout():
    """A streamed reply that waits in the queue longer than --timeout before its first token is not cut:
    keep-alive comments keep MHD's inactivity timeout away (it had closed such streams, cancelling them).
    Both slots are held by long answers for 3 x --timeout, then those clients reset and the stream runs."""
    ab = metric("llm170_requests_abandoned_total")
    blockers = []
    for _ in range(2):
        s = conn(timeout=120)
        s.sendall(request("POST", "/v1/chat/completions", {**CHAT, "max_tokens": 4000}))
        blockers.append(s)
    t0 = time.time()
    while time.time() - t0 < 10 and metric("llm170_slots_busy") < 2:
        time.sleep(0.02)
    with conn(timeout=120) as s:
        s.sendall(request("POST", "/v1/chat/completions", {**CHAT, "stream": True}))
        time.sleep(3 * TIMEOUT + 0.5)
        for b in blockers:
            b.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            b.close()
        st, _, body = read_response(s, limit=110)
    waited = time.time() - t0
    check(st == 200 and b"data: [DONE]" in body and b'"finish_reason":"length"' in body,
          f"a stream queued {3 * TIMEOUT + 0.5:g} s (--timeout {TIMEOUT:g}) ends whole: {body[-200:]!r}")
    print(f"  a stream queued {3 * TIMEOUT + 0.5:g} s behind two long answers (--timeout {TIMEOUT:g} s) came whole "
          f"({waited:.1f} s in all)")
    # the blockers' replies are counted as abandoned when the server finds their connections gone, which can be
    # after the stream above has ended: wait for that here, or it lands in the next test's counts
    t1 = time.time()
    while time.time() - t1 < 10 and (metric("llm170_requests_abandoned_total") < ab + 2 or
                                     metric("llm170_slots_busy") > 0):
        time.sleep(0.05)


def test_abandoned_not_4xx():
    """A client that resets its connection mid-answer: its job is cancelled and counted as abandoned,
    not as a client error."""
    c4, ab, cancelled = metric('llm170_requests_total{status="4xx"}'), metric("llm170_requests_abandoned_total"), \
        metric("llm170_requests_cancelled_total")
    s = conn()
    s.sendall(request("POST", "/v1/chat/completions", {**CHAT, "max_tokens": 3000}))
    t0 = time.time()
    while time.time() - t0 < 10 and metric("llm170_slots_busy") < 1:
        time.sleep(0.02)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
    s.close()
    while time.time() - t0 < 15 and (metric("llm170_requests_abandoned_total") == ab or
                                      metric("llm170_requests_cancelled_total") == cancelled):
        time.sleep(0.05)  # the reply is abandoned at once; the scheduler cancels the job at its next step
    ab2, cancelled2 = metric("llm170_requests_abandoned_total"), metric("llm170_requests_cancelled_total")
    check(ab2 == ab + 1, f"counted as abandoned (abandoned {ab} -> {ab2}, cancelled {cancelled} -> {cancelled2}, "
          f"after {time.time() - t0:.1f} s)")
    check(cancelled2 == cancelled + 1, f"its job was cancelled (cancelled {cancelled} -> {cancelled2})")
    check(metric('llm170_requests_total{status="4xx"}') == c4, "not counted as a 4xx")


def test_malformed():
    cases = [
        (b"GARBAGE\r\n\r\n", 400), (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400), (b"GET\r\n\r\n", 400),
        (request("POST", "/tokenize", b'{"content":"a"}', extra=b"Content-Length: 99\r\n"), 400),
        (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc\r\n", 400),
        (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n7fffffff\r\nabc\r\n", 413),
        (b"GET /health HTTP/1.1\r\n" + b"X-Long: " + b"a" * 20000 + b"\r\n\r\n", 431),
    ]
    for raw, want in cases:
        with conn() as s:
            s.sendall(raw)
            out, took, closed = read_all(s, limit=5)
        check(out.startswith(b"HTTP/1.1 %d" % want) and closed, f"{raw[:40]!r}: {out[:80]!r} closed {closed}")
        check(b'"error"' in out, f"{raw[:40]!r}: a JSON error body")
    with conn() as s:
        s.sendall(b"HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n")
        out, _, _ = read_all(s, limit=TIMEOUT + 3)
    check(out.startswith(b"HTTP/1.1 200") and out.endswith(b"\r\n\r\n"), f"HEAD /health: {out!r}")
    # a well-formed chunked upload still works
    with conn() as s:
        s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
                  b"\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"con\r\nc\r\ntent\":\"ab\"}\r\n0\r\n\r\n")
        st, _, body = read_response(s)
    check(st == 200 and b"tokens" in body, f"chunked upload: {st} {body!r}")


def test_any_model_name():
    with conn() as s:
        s.sendall(request("POST", "/v1/chat/completions", CHAT))
        st, _, body = read_response(s, limit=30)
    check(st == 200 and json.loads(body)["model"] == CHAT["model"], f"any model name: {st} {body[:200]!r}")

run("test_hardening", [test_malformed, test_any_model_name, test_auth_before_body, test_half_close_not_cancel,
                       test_stream_outlives_timeout,
                       test_abandoned_not_4xx, test_slow_clients_dropped, test_slowloris])
