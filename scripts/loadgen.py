#!/usr/bin/env python3
"""Load generator for OpenAI-compatible servers (llm170 serve, llama-server, vLLM, ...).

usage: scripts/loadgen.py http://127.0.0.1:8080 [--clients 1,4,8,16] [--prompt-tokens 256] [--gen 64]
                          [--requests-per-client 2] [--temperature T] [--model NAME] [--api-key K]
                          [--markdown LABEL]

For each concurrency C, C client threads each send --requests-per-client streaming /v1/completions
requests back to back (a closed loop). Every prompt, in every level, is distinct from its first token on (a
request number leads it), so no server can reuse another request's prompt cache; its length is calibrated to
--prompt-tokens with the server's /tokenize when it has one (llama-server and llm170 do). Generation is
forced to --gen tokens (ignore_eos); greedy, or with --temperature T sampled with llama.cpp's default
filters sent explicitly (top_k 40, top_p 0.95, min_p 0.05) and a seed per request, so every server samples
alike. Reported per C:
  throughput  generated tokens / wall time of the whole round (all clients); requests/s likewise
  TTFT        request sent -> first content chunk, p50 / p99 over requests
  ITL         gap between consecutive content chunks, p50 / p99 over all gaps
Standard library only, so it runs wherever Python does."""
import argparse
import http.client
import json
import statistics
import threading
import time
import urllib.parse

WORDS = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge every box of mixed "
         "liquor near old towers and rivers under bright winter skies").split()


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Client:
    def __init__(self, url, api_key):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port or 80
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = "Bearer " + api_key

    def post(self, path, body):
        c = http.client.HTTPConnection(self.host, self.port, timeout=600)
        c.request("POST", path, json.dumps(body), self.headers)
        return c, c.getresponse()

    def n_tokens(self, text):
        try:
            c, r = self.post("/tokenize", {"content": text, "add_special": False})
            data = r.read()
            c.close()
            return len(json.loads(data)["tokens"]) if r.status == 200 else None
        except (OSError, ValueError, KeyError):
            return None

    def stream(self, body):
        """(t_first, [chunk arrival times], completion tokens from usage or None), times from the send."""
        t0 = time.perf_counter()
        c, r = self.post("/v1/completions", body)
        if r.status != 200:
            raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
        times, usage = [], None
        for line in r:
            line = line.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            ev = json.loads(line[6:])
            if ev.get("usage"):
                usage = ev["usage"].get("completion_tokens")
            if any(ch.get("text") for ch in ev.get("choices", [])):
                times.append(time.perf_counter() - t0)
        c.close()
        return times, usage


def make_prompt(client, i, target):
    """A prompt of about target tokens (the most words that stay within it) led by its own request number."""
    def text(n):
        return " ".join([f"Request {i}:"] + [WORDS[(i * 7 + k) % len(WORDS)] for k in range(n)])

    if client.n_tokens(text(1)) is None:
        return text(int(target * 0.75))  # about 1.3 tokens per English word without a tokenizer
    lo, hi = 1, 4 * target
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if client.n_tokens(text(mid)) <= target:
            lo = mid
        else:
            hi = mid - 1
    return text(lo)


def sampling(temperature, seed):
    """The request fields that set sampling (greedy at temperature 0)."""
    if temperature == 0:
        return {"temperature": 0}
    return {"temperature": temperature, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "seed": seed}


def run_level(client, model, conc, per_client, prompts, gen, temperature=0.0):
    results, errors, lock = [], [], threading.Lock()

    def worker(w):
        for k in range(per_client):
            i = (w * per_client + k) % len(prompts)
            body = {"prompt": prompts[i], "max_tokens": gen, "stream": True, "ignore_eos": True,
                    "stream_options": {"include_usage": True}, **sampling(temperature, 1000 + i)}
            if model:
                body["model"] = model
            try:
                r = client.stream(body)
                with lock:
                    results.append(r)
            except Exception as e:  # noqa: BLE001 - a failed request is reported, not fatal
                with lock:
                    errors.append(str(e))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    gen_tokens = sum(u if u is not None else len(ts) for ts, u in results)
    ttft = [ts[0] for ts, _ in results if ts]
    itl = [b - a for ts, _ in results for a, b in zip(ts, ts[1:])]
    return {"clients": conc, "requests": len(results), "errors": len(errors), "wall_s": wall,
            "gen_tokens": gen_tokens, "tok_s": gen_tokens / wall, "req_s": len(results) / wall,
            "ttft_p50": percentile(ttft, 50),
            "ttft_p99": percentile(ttft, 99), "itl_p50": percentile(itl, 50), "itl_p99": percentile(itl, 99),
            "first_error": errors[0] if errors else ""}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--clients", default="1,4,8,16")
    ap.add_argument("--prompt-tokens", type=int, default=256)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--requests-per-client", type=int, default=2)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--model", default=None)
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--markdown", default=None, help="also print markdown table rows labelled with this")
    a = ap.parse_args()
    client = Client(a.url.rstrip("/"), a.api_key)
    levels = [int(x) for x in a.clients.split(",")]
    # each level its own prompts: a level repeating an earlier one's would time a server's cache of old
    # prompts (llama-server keeps them in RAM, --cache-ram), not its serving
    n_prompts = sum(levels) * a.requests_per_client
    prompts = [make_prompt(client, i, a.prompt_tokens) for i in range(n_prompts)]
    lens = [client.n_tokens(p) for p in prompts[:4]]
    print(f"# {a.url}: prompts of {lens} tokens (first 4), {a.gen} generated, {a.requests_per_client} requests per client, "
          f"temperature {a.temperature}")
    # one short request first so that page-ins and thread start-up do not land in the first level
    client.stream({"prompt": "warm up", "max_tokens": 4, "temperature": 0, "stream": True, **({"model": a.model} if a.model else {})})
    rows, first = [], 0
    for c in levels:
        n = c * a.requests_per_client
        r = run_level(client, a.model, c, a.requests_per_client, prompts[first: first + n], a.gen, a.temperature)
        first += n
        rows.append(r)
        print(json.dumps(r), flush=True)
    if a.markdown:
        for r in rows:
            print(f"| {a.markdown} | {r['clients']} | {r['req_s']:.3f} | {r['tok_s']:.1f} | {1000 * r['ttft_p50']:.0f} | "
                  f"{1000 * r['ttft_p99']:.0f} | {1000 * r['itl_p50']:.1f} | {1000 * r['itl_p99']:.1f} | "
                  f"{r['requests']}{'' if not r['errors'] else ' (' + str(r['errors']) + ' failed)'} |")


if __name__ == "__main__":
    main()
