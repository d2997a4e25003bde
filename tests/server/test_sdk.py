"""llm170 serve against the official openai and anthropic SDKs (their own request builders and parsers).

Run by tests/server/cli_server.sh with LLM170_URL (http://127.0.0.1:PORT), LLM170_KEY (the --api-key) and
LLM170_MODEL (the model id). The model is a random-weight synth model: text is noise but deterministic
under greedy decoding, which is what the checks compare. Exits non-zero on the first failed check; a
missing SDK is a failure, not a skip (CI installs them)."""
import concurrent.futures
import json
import os
import socket
import struct
import time
import urllib.error
import urllib.request

import anthropic  # noqa: E402  (ImportError here fails the test, as it must)
import openai

from srvtest import check, run  # noqa: E402

URL = os.environ["LLM170_URL"]
QURL = os.environ["LLM170_QURL"]  # a second server: one slot, a queue of one, no API key
KEY = os.environ["LLM170_KEY"]
MODEL = os.environ["LLM170_MODEL"]
N_CTX = int(os.environ["LLM170_CTX"])
oai = openai.OpenAI(base_url=URL + "/v1", api_key=KEY, max_retries=0, timeout=120)
ant = anthropic.Anthropic(base_url=URL, api_key=KEY, max_retries=0, timeout=120)


def msgs(text, system=True):
    return ([{"role": "system", "content": "You are terse."}] if system else []) + [{"role": "user", "content": text}]


def chat(text, system=True, **kw):
    kw.setdefault("max_tokens", 12)
    return oai.chat.completions.create(model=MODEL, messages=msgs(text, system), temperature=0, **kw)


def chat_stream(text, **kw):
    kw.setdefault("max_tokens", 12)
    out, usage, finish, chunks = "", None, None, 0
    for c in oai.chat.completions.create(model=MODEL, messages=msgs(text), temperature=0, stream=True, **kw):
        chunks += 1
        if c.usage:
            usage = c.usage
        for ch in c.choices:
            out += ch.delta.content or ""
            finish = ch.finish_reason or finish
    return out, usage, finish, chunks


def raw(method, path, body=None, headers=None, key=KEY):
    """(status, parsed JSON body) of a plain HTTP request; body: bytes or an object to JSON-encode."""
    h = {"Content-Type": "application/json"}
    if key is not None:
        h["Authorization"] = "Bearer " + key
    h.update(headers or {})
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, text


def metric(name, url=URL):
    req = urllib.request.Request(url + "/metrics", headers={"Authorization": "Bearer " + KEY})
    with urllib.request.urlopen(req, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise KeyError(name)


def test_models_health():
    ids = [m.id for m in oai.models.list()]
    check(ids == [MODEL], f"models list {ids}")
    check(raw("GET", "/health", key=None)[0] == 200, "health without a key is open")


def test_chat():
    r = chat("hello there")
    c = r.choices[0]
    check(r.object == "chat.completion" and c.message.role == "assistant", "chat shape")
    check(len(c.message.content) > 0 and c.finish_reason in ("stop", "length"), f"chat content {c}")
    check(r.usage.completion_tokens >= 1 and r.usage.prompt_tokens > 5, f"usage {r.usage}")
    check(r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, "total_tokens")
    s, usage, finish, chunks = chat_stream("hello there", stream_options={"include_usage": True})
    check(s == c.message.content, f"streamed chat equals the whole answer: {s!r} vs {c.message.content!r}")
    check(usage is not None and usage.completion_tokens == r.usage.completion_tokens, f"usage chunk {usage}")
    check(finish == c.finish_reason and chunks >= 3, f"finish {finish}, {chunks} chunks")
    # the same prompt again reused the slot's cached prefix (a GDN state checkpoint on this hybrid model)
    # and still gave the same text (checked above)
    cached = usage.prompt_tokens_details.cached_tokens
    check(cached == usage.prompt_tokens - 1, f"prefix reuse: {cached} of {usage.prompt_tokens} prompt tokens cached")
    s2, usage2, _, _ = chat_stream("hello there")
    check(s2 == s and usage2 is None, "no usage chunk unless asked")
    r = chat("count to ten", max_tokens=5, extra_body={"ignore_eos": True})
    check(r.usage.completion_tokens == 5 and r.choices[0].finish_reason == "length", "max_tokens honoured")


def test_completions():
    r = oai.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=10, temperature=0)
    text = r.choices[0].text
    check(r.object == "text_completion" and len(text) > 0, f"completion {r}")
    s = "".join(c.choices[0].text for c in oai.completions.create(
        model=MODEL, prompt="Once upon a time", max_tokens=10, temperature=0, stream=True) if c.choices)
    check(s == text, f"streamed completion equals the whole one: {s!r} vs {text!r}")
    ids = raw("POST", "/tokenize", {"content": "Once upon a time", "add_special": True})[1]["tokens"]
    r2 = oai.completions.create(model=MODEL, prompt=ids, max_tokens=10, temperature=0)
    check(r2.choices[0].text == text, "token-id prompt gives the same completion")
    check(raw("POST", "/detokenize", {"tokens": ids})[1]["content"].endswith("Once upon a time"), "detokenize")


def test_logprobs():
    r = chat("logprobs please", max_tokens=6, logprobs=True, top_logprobs=3, extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs.content
    check(len(lp) == r.usage.completion_tokens == 6, f"{len(lp)} logprob entries")
    for e in lp:
        tops = [t.logprob for t in e.top_logprobs]
        check(len(tops) == 3 and tops == sorted(tops, reverse=True), f"top_logprobs sorted {tops}")
        check(e.logprob <= 0 and abs(e.logprob - tops[0]) < 1e-5, f"greedy token is the top one {e.logprob} {tops}")
        check(e.token == e.top_logprobs[0].token and isinstance(e.bytes, list), "token and bytes")
    s = "".join(e.token for e in lp)
    check(s == r.choices[0].message.content or r.choices[0].message.content.startswith(s[:1]), "tokens spell the text")
    r = oai.completions.create(model=MODEL, prompt="abc", max_tokens=4, temperature=0, logprobs=2,
                               extra_body={"ignore_eos": True})
    l = r.choices[0].logprobs
    check(len(l.tokens) == 4 and len(l.token_logprobs) == 4 and len(l.top_logprobs) == 4, f"completion logprobs {l}")
    check(l.text_offset[0] == 0 and all(x <= 0 for x in l.token_logprobs), "offsets and values")


def test_stop():
    full = chat("stop strings", max_tokens=24, extra_body={"ignore_eos": True}).choices[0].message.content
    cut = len(full) // 2
    stop = full[cut:cut + 3]
    want = full[:full.find(stop)]
    r = chat("stop strings", max_tokens=24, stop=[stop], extra_body={"ignore_eos": True})
    check(r.choices[0].message.content == want and r.choices[0].finish_reason == "stop",
          f"stop {stop!r}: {r.choices[0].message.content!r} vs {want!r}")
    s, _, finish, _ = chat_stream("stop strings", max_tokens=24, stop=[stop], extra_body={"ignore_eos": True})
    check(s == want and finish == "stop", f"streamed text holds the stop string back: {s!r} vs {want!r}")
    m = ant.messages.create(model=MODEL, max_tokens=24, system="You are terse.",
                            messages=[{"role": "user", "content": "stop strings"}], stop_sequences=[stop],
                            extra_body={"ignore_eos": True, "temperature": 0})
    check(m.stop_reason == "stop_sequence" and m.stop_sequence == stop and m.content[0].text == want,
          f"anthropic stop_sequences {m}")


def test_messages():
    # this SDK version has no temperature argument: it goes in the body as the API defines it
    kw = dict(model=MODEL, max_tokens=12, system="You are terse.", extra_body={"temperature": 0},
              messages=[{"role": "user", "content": [{"type": "text", "text": "hello there"}]}])
    m = ant.messages.create(**kw)
    check(m.type == "message" and m.role == "assistant" and m.content[0].type == "text", f"message shape {m}")
    check(m.stop_reason in ("end_turn", "max_tokens") and m.usage.output_tokens >= 1, f"stop/usage {m}")
    check(m.content[0].text == chat("hello there").choices[0].message.content, "messages and chat agree (same prompt)")
    with ant.messages.stream(**kw) as st:
        text = "".join(st.text_stream)
        final = st.get_final_message()
    check(text == m.content[0].text and final.content[0].text == text, f"streamed message {text!r}")
    check(final.stop_reason == m.stop_reason and final.usage.output_tokens == m.usage.output_tokens, "stream final")
    types = []
    with ant.messages.stream(**kw) as st:
        for ev in st:
            types.append(ev.type)
    for t in ("message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
              "message_stop"):
        check(t in types, f"event {t} in {types}")
    n = ant.messages.count_tokens(model=MODEL, system="You are terse.",
                                  messages=[{"role": "user", "content": "hello there"}])
    check(n.input_tokens == m.usage.input_tokens, f"count_tokens {n.input_tokens} vs {m.usage.input_tokens}")


def test_concurrent():
    # short prompts and 8 tokens keep this fast under ASan (a -O0 build prefills ~20 ms/token); the answers
    # still differ between prompts (checked)
    prompts = [f"q{i}" + "?" * (i % 3) for i in range(16)]
    alone = [chat(p, system=False, max_tokens=8).choices[0].message.content for p in prompts]
    steps0 = metric("llm170_decode_steps_total")
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        together = list(ex.map(lambda p: chat(p, system=False, max_tokens=8).choices[0].message.content, prompts))
    for i in range(16):
        check(together[i] == alone[i], f"client {i}: concurrent {together[i]!r} vs alone {alone[i]!r}")
    check(len(set(alone)) > 1, "different prompts give different answers")
    steps = metric("llm170_decode_steps_total") - steps0
    check(steps < 16 * 8, f"batched: {steps} steps for 16 concurrent requests of up to 8 tokens")
    print(f"16 concurrent clients: {steps:.0f} batched steps")


def test_disconnect():
    cancelled0 = metric("llm170_requests_cancelled_total")
    host, port = URL.split("//")[1].split(":")
    body = json.dumps({"model": MODEL, "messages": msgs("go on forever"), "max_tokens": N_CTX // 2, "stream": True,
                       "ignore_eos": True, "temperature": 0}).encode()
    s = socket.create_connection((host, int(port)))
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Authorization: Bearer " + KEY.encode() + b"\r\nContent-Length: " + str(len(body)).encode() +
              b"\r\n\r\n" + body)
    got = b""
    while got.count(b"data: ") < 4:
        got += s.recv(4096)
    check(metric("llm170_slots_busy") >= 1, "the streaming request holds a slot")
    s.close()
    t0 = time.time()
    while time.time() - t0 < 10 and (metric("llm170_slots_busy") > 0 or
                                      metric("llm170_requests_cancelled_total") == cancelled0):
        time.sleep(0.02)
    check(metric("llm170_slots_busy") == 0, "the slot is freed after the client left")
    check(metric("llm170_requests_cancelled_total") == cancelled0 + 1, "counted as cancelled")
    print(f"disconnect noticed and slot freed in {time.time() - t0:.3f} s")
    check(len(chat("still serving?").choices[0].message.content) > 0, "the server keeps serving")


def open_request(url, path, body):
    """Sends a request on a raw socket and returns the socket (closing it with abort() is the client going
    away: a reset; a plain close only half-closes as far as the server can tell, and a half-close is legal)."""
    host, port = url.split("//")[1].split(":")
    data = json.dumps(body).encode()
    s = socket.create_connection((host, int(port)))
    s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Authorization: Bearer " + KEY.encode() + b"\r\nContent-Length: " + str(len(data)).encode() +
              b"\r\n\r\n" + data)
    return s


def abort(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def wait_metric(name, value, url=URL, timeout=10):
    t0 = time.time()
    while time.time() - t0 < timeout and metric(name, url) != value:
        time.sleep(0.02)
    return metric(name, url) == value


def test_queue_full():
    """One slot busy, one request queued: the next gets 429 with an error body; both waiting non-streaming
    requests are cancelled when their clients leave, and the server keeps serving."""
    long = {"prompt": "a", "max_tokens": 8000, "ignore_eos": True, "temperature": 0}
    a = open_request(QURL, "/v1/completions", long)
    check(wait_metric("llm170_slots_busy", 1, QURL), "first request holds the only slot")
    b = open_request(QURL, "/v1/completions", long)
    check(wait_metric("llm170_queue_length", 1, QURL), "second request waits in the queue")
    req = urllib.request.Request(QURL + "/v1/completions", data=json.dumps(long).encode(), method="POST")
    try:
        urllib.request.urlopen(req, timeout=30)
        check(False, "a third request with a full queue was accepted")
    except urllib.error.HTTPError as e:
        body = json.loads(e.read())
        check(e.code == 429 and body["error"]["type"] == "rate_limit_error", f"429 body {body}")
    abort(a)
    abort(b)
    check(wait_metric("llm170_requests_cancelled_total", 2, QURL), "both left clients' requests cancelled")
    check(wait_metric("llm170_slots_busy", 0, QURL) and wait_metric("llm170_queue_length", 0, QURL), "all free")
    r = openai.OpenAI(base_url=QURL + "/v1", api_key="none", max_retries=0).completions.create(
        model=MODEL, prompt="b", max_tokens=3, temperature=0)
    check(r.usage.completion_tokens >= 1, "the one-slot server keeps serving")
    r = openai.OpenAI(base_url=QURL + "/v1", api_key="none", max_retries=0).completions.create(
        model="gpt-4o-mini", prompt="b", max_tokens=3, temperature=0)
    check(r.model == "gpt-4o-mini", "without --strict-model any model name is served")


def bad(path, body, status, anthropic_fmt=False, **kw):
    st, b = raw("POST", path, body, **kw)
    check(st == status, f"{path} {str(body)[:80]!r}: status {st}, expected {status}: {b}")
    if anthropic_fmt:
        check(isinstance(b, dict) and b.get("type") == "error" and b["error"]["message"], f"anthropic error body {b}")
    else:
        check(isinstance(b, dict) and isinstance(b.get("error"), dict) and b["error"]["message"], f"openai error body {b}")
    return b


def test_bad_requests():
    C, M = "/v1/chat/completions", "/v1/messages"
    ok = {"model": MODEL, "messages": msgs("x"), "max_tokens": 4}
    table = [
        (C, b"{not json", 400), (C, b"", 400), (C, b"[]", 400), (C, {"model": MODEL}, 400),
        (C, {**ok, "messages": "hi"}, 400), (C, {**ok, "messages": []}, 400), (C, {**ok, "max_tokens": "4"}, 400),
        (C, {**ok, "temperature": "hot"}, 400), (C, {**ok, "stream": "yes"}, 400), (C, {**ok, "stop": 3}, 400),
        (C, {**ok, "messages": [{"role": "user"}]}, 400), (C, {**ok, "messages": [{"content": "x"}]}, 400),
        (C, {**ok, "model": "gpt-9"}, 404), (C, {**ok, "max_tokens": 10 ** 12}, 400),
        (C, {**ok, "max_tokens": N_CTX + 1}, 400), (C, {**ok, "max_tokens": -1}, 400),
        (C, {**ok, "messages": msgs("word " * N_CTX)}, 400), (C, {**ok, "n": 2}, 400),
        ("/v1/completions", {"model": MODEL}, 400), ("/v1/completions", {"prompt": [1, 10 ** 9]}, 400),
        ("/v1/completions", {"prompt": ""}, 400) if False else ("/v1/completions", {"prompt": 5}, 400),
        ("/v1/completions", {"prompt": "x", "grammar": "root ::= \"yes\""}, 400),
        ("/tokenize", {"content": 5}, 400), ("/detokenize", {"tokens": ["a"]}, 400),
    ]
    for path, body, status in table:
        bad(path, body, status)
    for body, status in [(b"{", 400), ({"model": MODEL, "messages": msgs("x")}, 400),
                         ({"model": MODEL, "max_tokens": 4, "messages": [{"role": "tool", "content": "x"}]}, 400),
                         ({"model": "claude-9", "max_tokens": 4, "messages": [{"role": "user", "content": "x"}]}, 404)]:
        bad(M, body, status, anthropic_fmt=True)
    bad(C, ok, 401, key="wrong-key")
    bad(C, ok, 401, key=None)
    bad(M, {"model": MODEL, "max_tokens": 4, "messages": [{"role": "user", "content": "x"}]}, 401, anthropic_fmt=True,
        key="wrong")
    # an oversized body is refused from its Content-Length, before the server reads it
    host, port = URL.split("//")[1].split(":")
    with socket.create_connection((host, int(port))) as sk:
        sk.sendall(b"POST " + C.encode() + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
                   b"\r\nContent-Type: application/json\r\nContent-Length: " + str(9 << 20).encode() + b"\r\n\r\n{")
        resp = b""
        while b"\r\n\r\n" not in resp or not resp.rstrip().endswith(b"}"):
            chunk = sk.recv(4096)
            if not chunk:
                break
            resp += chunk
    head, _, body = resp.partition(b"\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 413") and b"larger than the limit" in body, f"413 for a 9 MiB body: {resp[:300]!r}")
    bad("/v1/nothing", {}, 404)
    st, _ = raw("GET", C)
    check(st == 405, f"GET on a POST route: {st}")
    # the SDKs surface these as their own error types with the server's message
    try:
        oai.chat.completions.create(model="gpt-9", messages=msgs("x"))
        check(False, "unknown model accepted")
    except openai.NotFoundError as e:
        check("does not exist" in str(e), f"openai NotFoundError message {e}")
    try:
        openai.OpenAI(base_url=URL + "/v1", api_key="nope", max_retries=0).models.list()
        check(False, "wrong key accepted")
    except openai.AuthenticationError:
        check(True, "")
    try:
        anthropic.Anthropic(base_url=URL, api_key="nope", max_retries=0).messages.create(
            model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "x"}])
        check(False, "wrong key accepted")
    except anthropic.AuthenticationError:
        check(True, "")
    try:
        ant.messages.create(model=MODEL, max_tokens=10 ** 9, messages=[{"role": "user", "content": "x"}])
        check(False, "absurd max_tokens accepted")
    except anthropic.BadRequestError as e:
        check("max_tokens" in str(e), f"anthropic BadRequestError {e}")
    check(metric('llm170_requests_total{status="5xx"}') == 0, "no 5xx at all")

TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                       "required": ["city"]}}}


def test_tools_rendered():
    """Tools reach the template (the prompt grows by them) in both APIs, a history with calls and results
    renders, and malformed tool fields are 400s. What a real model does with them: test_tools.py."""
    base = chat("weather?", max_tokens=1).usage.prompt_tokens
    withtools = chat("weather?", max_tokens=1, tools=[TOOL]).usage.prompt_tokens
    check(withtools > base + 20, f"tools rendered: {base} -> {withtools} prompt tokens")
    none = chat("weather?", max_tokens=1, tools=[TOOL], tool_choice="none").usage.prompt_tokens
    check(none == base, f"tool_choice none renders no tools: {none} vs {base}")
    kw = dict(model=MODEL, system="You are terse.", messages=[{"role": "user", "content": "weather?"}])
    a0 = ant.messages.count_tokens(**kw).input_tokens
    a1 = ant.messages.count_tokens(tools=[{"name": "get_weather", "description": "Weather in a city",
                                           "input_schema": TOOL["function"]["parameters"]}], **kw).input_tokens
    check(a0 == base and a1 == withtools, f"anthropic tools rendered alike: {a0}/{a1} vs {base}/{withtools}")
    hist = msgs("weather in Paris?") + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    r = oai.chat.completions.create(model=MODEL, messages=hist, tools=[TOOL], max_tokens=2, temperature=0)
    check(r.usage.prompt_tokens > withtools, f"history with a call and its result: {r.usage.prompt_tokens}")
    ahist = [{"role": "user", "content": "weather in Paris?"},
             {"role": "assistant", "content": [{"type": "text", "text": "Checking."}, {
                 "type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}]
    n = ant.messages.count_tokens(model=MODEL, messages=ahist).input_tokens
    check(n > a0, f"anthropic history with tool_use and tool_result: {n}")
    C = "/v1/chat/completions"
    ok = {"model": MODEL, "messages": msgs("x"), "max_tokens": 2}
    for body in ({**ok, "tools": {}}, {**ok, "tools": [{"type": "function"}]}, {**ok, "tool_choice": "required"},
                 {**ok, "tools": [TOOL], "tool_choice": {"type": "function", "function": {"name": "nope"}}},
                 {**ok, "tools": [TOOL], "tool_choice": "sometimes"},
                 {**ok, "messages": msgs("x") + [{"role": "assistant", "tool_calls": [{"function": {"name": "f",
                                                                                                    "arguments": "{"}}]}]}):
        bad(C, body, 400)
    bad("/v1/messages", {"model": MODEL, "max_tokens": 2, "messages": [{"role": "user", "content": "x"}],
                         "tools": [{"type": "web_search_20250305", "name": "web_search"}]}, 400, anthropic_fmt=True)


run("test_sdk", [test_models_health, test_chat, test_completions, test_logprobs, test_stop, test_messages,
                 test_concurrent, test_disconnect, test_queue_full, test_bad_requests, test_tools_rendered])
