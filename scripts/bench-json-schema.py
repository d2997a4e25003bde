#!/usr/bin/env python3
"""Decode speed with and without a JSON schema constraint, against a running llm170 serve (or any
OpenAI-compatible server): usage: bench-json-schema.py URL [ROUNDS] [MAX_TOKENS].

Each round streams the same prompt twice, free and constrained (response_format json_schema), alternating
which goes first so drift on a busy machine hits both alike; the decode rate of a reply is (tokens - 1) /
(time of its last chunk - time of its first), so prompt processing is left out. Prints per-round rates and
the medians, and the ratio free/constrained (the slowdown; the issue's target is <= 1.2x)."""
import json
import statistics
import sys
import time
import urllib.request

URL = sys.argv[1].rstrip("/")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
MAX = int(sys.argv[3]) if len(sys.argv) > 3 else 96
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "age", "city", "hobbies", "bio"],
          "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"},
                         "hobbies": {"type": "array", "items": {"type": "string"}}, "bio": {"type": "string"}}}
PROMPT = ("Describe a fictional person as a JSON object with name, age, city, hobbies (a list) and a long bio "
          "of several sentences.")


def one(constrained):
    body = {"model": "m", "messages": [{"role": "user", "content": PROMPT}], "temperature": 0, "max_tokens": MAX,
            "stream": True, "stream_options": {"include_usage": True}}
    if constrained:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA}}
    req = urllib.request.Request(URL + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    first = last = None
    n, text = 0, ""
    with urllib.request.urlopen(req, timeout=600) as r:
        for line in r:
            if not line.startswith(b"data: {"):
                continue
            c = json.loads(line[6:])
            if c.get("usage"):
                n = c["usage"]["completion_tokens"]
            for ch in c["choices"]:
                if ch["delta"].get("content"):
                    last = time.time()
                    first = first or last
                    text += ch["delta"]["content"]
    if constrained:
        json.loads(text)  # must parse
    return (n - 1) / (last - first) if n > 1 and last > first else 0.0, n


free, cons = [], []
for r in range(ROUNDS):
    order = (False, True) if r % 2 == 0 else (True, False)
    for c in order:
        rate, n = one(c)
        (cons if c else free).append(rate)
        print(f"round {r}: {'schema' if c else 'free  '} {n:4d} tokens {rate:7.2f} tok/s", flush=True)
mf, mc = statistics.median(free), statistics.median(cons)
print(f"median decode: free {mf:.2f} tok/s, with schema {mc:.2f} tok/s, slowdown {mf / mc:.3f}x ({ROUNDS} rounds, "
      f"max_tokens {MAX}, temperature 0)")
