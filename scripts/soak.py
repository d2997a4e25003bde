#!/usr/bin/env python3
"""Soak test of llm170 serve: N clients for a bounded time, each looping over a mix of requests:
streamed and whole chat, a tool call (tools with tool_choice auto), schema-constrained output
(response_format json_schema), and a streamed chat whose client disconnects mid-answer (a reset after a
few chunks). Loopback only; every request has a timeout, and the run stops by itself.

usage: scripts/soak.py URL --pid PID [--clients 32] [--seconds 600] [--max-tokens 48] [--api-key K]

Reports: requests by kind and status, 5xx (must be 0), hangs (requests that hit the client timeout; must be
0), the server's RSS sampled every 5 s (flat after warm-up), invalid JSON under a schema (must be 0), and
/metrics at the end (slots busy and queue length must be 0). Exits 1 if any of those fails. Standard
library only."""
import argparse
import http.client
import json
import random
import socket
import struct
import sys
import threading
import time
import urllib.parse

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "score": {"type": "integer"},
                                           "tags": {"type": "array", "items": {"type": "string"}}},
          "required": ["name", "score"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]
TOPICS = ["the sea", "a city at night", "mountains", "a library", "rain", "trains", "bread", "the moon"]


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Soak:
    def __init__(self, a):
        u = urllib.parse.urlparse(a.url)
        self.host, self.port, self.a = u.hostname, u.port or 80, a
        self.lock = threading.Lock()
        self.counts = {}
        self.errors = []
        self.hangs = 0
        self.bad_json = 0
        self.stop_at = time.time() + a.seconds

    def count(self, kind, status):
        with self.lock:
            self.counts[(kind, status)] = self.counts.get((kind, status), 0) + 1

    def headers(self):
        h = {"Content-Type": "application/json"}
        if self.a.api_key:
            h["Authorization"] = "Bearer " + self.a.api_key
        return h

    def post(self, kind, body, stream=False, abort_after=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=self.a.timeout)
        try:
            c.request("POST", "/v1/chat/completions", json.dumps(body), self.headers())
            sock = c.sock  # getresponse() hands the socket to a response that will close, leaving c.sock None
            r = c.getresponse()
            if not stream or r.status != 200:
                data = r.read()
                self.count(kind, r.status)
                if r.status >= 500:
                    self.errors.append(f"{kind}: {r.status} {data[:200]!r}")
                return r.status, data
            chunks = 0
            for line in r:
                if line.startswith(b"data: "):
                    chunks += 1
                    if line.startswith(b"data: {\"error\""):
                        self.errors.append(f"{kind}: error event {line[:200]!r}")
                if abort_after is not None and chunks >= abort_after:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.close()  # a reset: the client is gone
                    self.count(kind, "aborted")
                    return None, b""
            self.count(kind, r.status)
            return r.status, b""
        except (socket.timeout, TimeoutError):
            with self.lock:
                self.hangs += 1
            self.count(kind, "timeout")
            return None, b""
        except OSError as e:
            self.count(kind, "conn-error")
            self.errors.append(f"{kind}: {e!r}")
            return None, b""
        finally:
            c.close()

    def client(self, i):
        rnd = random.Random(i)
        while time.time() < self.stop_at:
            try:
                self.one(rnd)
            except Exception as e:  # noqa: BLE001 (a client thread must not die silently)
                self.count("client", "exception")
                self.errors.append(f"client {i}: {e!r}")

    def one(self, rnd):
        """One request of a random kind."""
        msgs = [{"role": "user", "content": f"Write about {rnd.choice(TOPICS)}. ({rnd.random():.6f})"}]
        base = {"model": "soak", "messages": msgs, "max_tokens": self.a.max_tokens,
                "temperature": rnd.choice([0, 0.8])}
        kind = rnd.choice(["stream", "whole", "tools", "schema", "disconnect"])
        if kind == "stream":
            self.post(kind, {**base, "stream": True}, stream=True)
        elif kind == "whole":
            self.post(kind, base)
        elif kind == "tools":
            self.post(kind, {**base, "tools": TOOLS, "messages": [
                {"role": "user", "content": f"What is the weather in {rnd.choice(['Paris', 'Oslo', 'Lima'])}?"}]})
        elif kind == "schema":
            st, data = self.post(kind, {**base, "response_format": {
                "type": "json_schema", "json_schema": {"name": "s", "schema": SCHEMA}}})
            if st == 200:
                try:
                    doc = json.loads(json.loads(data)["choices"][0]["message"]["content"])
                    ok = isinstance(doc, dict) and "name" in doc and isinstance(doc.get("score"), int)
                except (ValueError, KeyError, TypeError):
                    ok = False
                if not ok:
                    with self.lock:
                        self.bad_json += 1
        else:
            self.post(kind, {**base, "stream": True, "max_tokens": 4 * self.a.max_tokens}, stream=True,
                      abort_after=rnd.randint(2, 6))

    def metrics(self):
        c = http.client.HTTPConnection(self.host, self.port, timeout=30)
        c.request("GET", "/metrics", headers=self.headers())
        text = c.getresponse().read().decode()
        return {l.split()[0]: float(l.split()[1]) for l in text.splitlines() if l and not l.startswith("#")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--timeout", type=float, default=600, help="per request: longer counts as a hang")
    ap.add_argument("--api-key")
    a = ap.parse_args()
    s = Soak(a)
    m0 = s.metrics()
    threads = [threading.Thread(target=s.client, args=(i,), daemon=True) for i in range(a.clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    rss = []
    while any(t.is_alive() for t in threads):
        rss.append((time.time() - t0, rss_kb(a.pid)))
        time.sleep(5)
    for t in threads:
        t.join()
    wall = time.time() - t0
    time.sleep(1)
    m1 = s.metrics()
    total = sum(s.counts.values())
    print(f"soak: {a.clients} clients, {a.seconds:.0f} s of new requests ({wall:.0f} s until the last ended), "
          f"max_tokens {a.max_tokens}: {total} requests")
    for k in sorted(s.counts, key=str):
        print(f"  {k[0]:10s} {str(k[1]):10s} {s.counts[k]}")
    n5xx = sum(v for (k, st), v in s.counts.items() if isinstance(st, int) and st >= 500)
    d = {k: m1.get(k, 0) - m0.get(k, 0) for k in m1}
    c4, c5 = d.get('llm170_requests_total{status="4xx"}', 0), d.get('llm170_requests_total{status="5xx"}', 0)
    warm = [r for t, r in rss if t >= min(60, wall / 4)]
    print(f"  5xx {n5xx}, hangs {s.hangs}, invalid schema JSON {s.bad_json}, errors {len(s.errors)}")
    print(f"  RSS: start {rss[0][1] / 1024:.0f} MB, after warm-up min {min(warm) / 1024:.0f} / max "
          f"{max(warm) / 1024:.0f} MB, end {rss[-1][1] / 1024:.0f} MB ({len(rss)} samples)")
    print(f"  server: generated {d.get('llm170_generated_tokens_total', 0):.0f} tokens "
          f"({d.get('llm170_generated_tokens_total', 0) / wall:.1f}/s), cancelled "
          f"{d.get('llm170_requests_cancelled_total', 0):.0f}, abandoned {d.get('llm170_requests_abandoned_total', 0):.0f}, "
          f"4xx {c4:.0f}, 5xx {c5:.0f}; "
          f"at the end: slots busy {m1['llm170_slots_busy']:.0f}, queue {m1['llm170_queue_length']:.0f}")
    for e in s.errors[:10]:
        print("  error:", e)
    ok = n5xx == 0 and s.hangs == 0 and s.bad_json == 0 and m1["llm170_slots_busy"] == 0 and \
        m1["llm170_queue_length"] == 0 and not s.errors
    print("soak:", "ok" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
