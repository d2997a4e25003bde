"""`llm170 serve --spec` gives what the server without it gives, request for request (tests/server/cli_server_spec.sh
starts the servers). LLM170_PLAIN: the server without speculation; LLM170_SPEC: "name=url" pairs, comma-separated,
of servers with it, all on the same model (LLM170_ARCH names it). Every request set runs with several clients at
once on each server; texts, finish reasons, token counts and logprobs must be identical. The prompts make answers
that repeat themselves (random-weight models under negative presence / frequency penalties and repeat_penalty < 1
fall into loops), so n-gram drafts are really accepted, and rejected: /metrics must show both, else the comparison
proves nothing. Covers greedy and seeded sampling (top-k, top-p, min-p, penalties), logprobs, stop strings found in
the plain answers, max_tokens cutting a run of accepted drafts, streaming, JSON-schema-constrained chat (the mask)
and a client that leaves mid-stream (cancellation)."""
import http.client
import json
import os
import socket
import sys
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(__file__))
from srvtest import check, run  # noqa: E402

ARCH = os.environ.get("LLM170_ARCH", "?")
PLAIN = os.environ["LLM170_PLAIN"]
SPECS = [tuple(x.split("=", 1)) for x in os.environ["LLM170_SPEC"].split(",")]
CLIENTS = 4

PROMPTS = ["hello world hello", "def mean(xs):\n    total = 0\n    for x in xs:", "The quick brown fox jumps over",
           "a b c a b c a b", "SELECT name FROM users WHERE"]
# sampling settings: (name, fields)
SAMPLING = [
    ("greedy", {"temperature": 0}),
    ("greedy-loopy", {"temperature": 0, "presence_penalty": -2, "repeat_penalty": 0.8}),
    ("greedy-freq", {"temperature": 0, "presence_penalty": -2, "frequency_penalty": -1}),
    ("sampled", {"temperature": 0.8, "presence_penalty": -2, "frequency_penalty": -0.5}),
    ("sampled-topk", {"temperature": 1.0, "top_k": 40, "top_p": 0.9, "presence_penalty": -2, "frequency_penalty": -1}),
    ("sampled-minp", {"temperature": 0.7, "min_p": 0.05, "presence_penalty": -1.5, "frequency_penalty": -1}),
]
SCHEMA = {"type": "object", "properties": {"tags": {"type": "array", "maxItems": 12,
          "items": {"type": "string", "enum": ["red", "green", "blue"]}}}, "required": ["tags"]}


def post(url, path, body):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    check(r.status == 200, f"{path} answered {r.status}: {data[:300]!r}")
    return data


def ask(url, req):
    """The comparable part of an answer: text, finish reason, completion tokens, logprobs (streamed: text and
    finish reason from the chunks)."""
    path, body = req
    data = post(url, path, body)
    if body.get("stream"):
        text, finish = "", None
        for line in data.decode().split("\n"):
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ch = json.loads(line[6:])["choices"][0]
            text += ch.get("text") or (ch.get("delta") or {}).get("content") or ""
            finish = ch.get("finish_reason") or finish
        return {"text": text, "finish": finish}
    o = json.loads(data)
    ch = o["choices"][0]
    text = ch["text"] if "text" in ch else ch["message"]["content"]
    return {"text": text, "finish": ch["finish_reason"], "n": o["usage"]["completion_tokens"],
            "logprobs": ch.get("logprobs")}


def requests():
    """The first set: every prompt under every sampling setting, some streamed, some short, some with logprobs;
    then constrained chats."""
    out = []
    for i, p in enumerate(PROMPTS):
        for j, (name, fields) in enumerate(SAMPLING):
            body = {"prompt": p, "max_tokens": 48, "ignore_eos": True, "seed": 1000 + 17 * i + j, **fields}
            if (i + j) % 5 == 1:
                body["max_tokens"] = 5 + (i + j) % 7  # a limit inside a run of accepted drafts
            if (i + j) % 4 == 2:
                body["stream"] = True
            if (i + j) % 6 == 3:
                body["logprobs"] = 3
            out.append((f"{name} prompt {i}", ("/v1/completions", body)))
    for i, (name, fields) in enumerate(SAMPLING[:4]):
        body = {"messages": [{"role": "user", "content": f"tags please {i}"}], "max_tokens": 80, "seed": 7 + i,
                "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": SCHEMA}}, **fields}
        out.append((f"json {name}", ("/v1/chat/completions", body)))
    return out


def stops(plain):
    """The second set: requests whose stop strings occur in the plain answers (a stop inside a run)."""
    out = []
    for (name, (path, body)), ans in plain:
        t = ans["text"]
        if path != "/v1/completions" or len(t) < 40 or len(out) >= 8:
            continue
        s = t[24:30]
        out.append((f"{name} stop {s!r}", (path, {**body, "stop": [s], "max_tokens": 64})))
    return out


def run_all(url, reqs):
    with ThreadPoolExecutor(CLIENTS) as ex:
        return list(zip(reqs, ex.map(lambda r: ask(url, r[1]), reqs)))


def metric(url, name):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    c.close()
    for line in body.split("\n"):
        if line.startswith(name + " "):
            return float(line.split()[1])
    check(False, f"/metrics has no {name}")
    return 0


def compare(what, plain, spec):
    bad = 0
    for ((name, _), a), (_, b) in zip(plain, spec):
        if a != b:
            bad += 1
            if bad <= 3:
                keys = [k for k in a if a[k] != b.get(k)]
                print(f"  {what}: {name}: {', '.join(keys)} differ:\n    plain {a['text']!r:.160}\n"
                      f"    spec  {b['text']!r:.160}", file=sys.stderr)
    check(bad == 0, f"{ARCH} {what}: {bad} of {len(plain)} answers differ from the server without --spec")


plain_results = {}


def test_identical():
    reqs = requests()
    plain = run_all(PLAIN, reqs)
    plain_stop = run_all(PLAIN, stops(plain))
    check(len(plain_stop) >= 4, f"{ARCH}: only {len(plain_stop)} answers long enough for a stop string")
    check(any(a["finish"] == "stop" for _, a in plain_stop), f"{ARCH}: no stop string was hit")
    gen_plain = metric(PLAIN, "llm170_generated_tokens_total")
    for name, url in SPECS:
        spec = run_all(url, reqs)
        compare(name, plain, spec)
        compare(name + " (stop strings)", plain_stop, run_all(url, stops(plain)))
        drafted, accepted = metric(url, "llm170_spec_drafted_total"), metric(url, "llm170_spec_accepted_total")
        rounds = metric(url, "llm170_spec_rounds_total")
        gen = metric(url, "llm170_generated_tokens_total")
        print(f"  {ARCH} {name}: {len(reqs) + len(plain_stop)} answers identical to the plain server's; {rounds:.0f} "
              f"rounds, {accepted:.0f} of {drafted:.0f} drafts accepted; {gen:.0f} tokens generated (plain {gen_plain:.0f})")
        check(accepted > 0 and accepted < drafted, f"{ARCH} {name}: {accepted:.0f} of {drafted:.0f} drafts accepted: the "
              "test needs both accepted and rejected drafts")
        check(gen == gen_plain, f"{ARCH} {name}: {gen:.0f} tokens generated, the plain server {gen_plain:.0f}")
    plain_results["n"] = len(reqs)


def test_json_valid():
    """The constrained answers parse and follow the schema (on the speculating servers too: compared above)."""
    reqs = [r for r in requests() if r[1][0] == "/v1/chat/completions"]
    for (name, _), ans in run_all(SPECS[0][1], reqs):
        o = json.loads(ans["text"]) if ans["finish"] == "stop" else None
        check(o is None or (isinstance(o.get("tags"), list) and all(t in ("red", "green", "blue") for t in o["tags"])),
              f"{name}: {ans['text']!r} does not follow the schema")


def test_cancel():
    """A streaming client that leaves mid-answer is cancelled on a speculating server, which goes on serving."""
    name, url = SPECS[0]
    before = metric(url, "llm170_requests_cancelled_total")
    u = urllib.parse.urlparse(url)
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    body = json.dumps({"prompt": PROMPTS[0], "max_tokens": 400, "ignore_eos": True, "temperature": 0,
                       "stream": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
              + str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    while b"data: " not in got:
        got += s.recv(4096)
    s.close()
    for _ in range(100):
        if metric(url, "llm170_requests_cancelled_total") > before:
            break
        time.sleep(0.05)
    check(metric(url, "llm170_requests_cancelled_total") > before, f"{name}: the gone client's job was not cancelled")
    a = ask(url, ("/v1/completions", {"prompt": PROMPTS[1], "max_tokens": 16, "temperature": 0}))
    b = ask(PLAIN, ("/v1/completions", {"prompt": PROMPTS[1], "max_tokens": 16, "temperature": 0}))
    check(a == b, f"{name}: after a cancellation: {a} vs {b}")
    print(f"  {ARCH} {name}: a client gone mid-stream was cancelled; the next answer still identical")


run(f"test_spec_serve {ARCH}", [test_identical, test_json_valid, test_cancel])
