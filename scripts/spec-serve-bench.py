#!/usr/bin/env python3
"""`llm170 serve --spec ngram` against `llm170 serve` on the code-editing prompts (docs/benchmarks.md, "Server:
speculative decoding per slot").

usage: spec-serve-bench.py LLM170 MODEL [--clients 1,4] [--prompts N] [--rounds R] [--n N] [--threads T]
       [--parallel P] [--spec-flags "--spec ngram"]

Starts both servers (same binary, model, --parallel, --threads; B adds --spec-flags); only one is ever busy.
For each round and each client count C, runs the workload on A then B (odd rounds B then A: A B B A ...):
C closed-loop clients share the first N prompts of scripts/spec-code-edit-prompts.py (each prompt once;
client k takes prompts k, k+C, ...), /v1/completions, greedy, max_tokens --n, EOS honoured. Per run: the
generated tokens (usage) / wall time of the whole run, the load average at its start, and for B the drafts
and accepted drafts (deltas of /metrics). Prints a markdown row per run, the B/A ratios per round, and which
answers differ between the servers (they may, at a near-tie, also without --spec: a prompt's prefill goes
through other kernels when a slot's cached prefix is reused or concurrent steps cut it into other pieces,
which depends on the clients' timing; tests/server/cli_server_spec.sh checks exactness where that cannot
happen). The answers go to /tmp/spec-serve-bench-answers.json. Standard library only."""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def post(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        sys.exit(f"port {port}: {r.status} {data[:300]!r}")
    return json.loads(data)


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    out = {}
    for line in text.split("\n"):
        m = re.match(r"(llm170_spec_\w+_total|llm170_generated_tokens_total) (\S+)", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def start(binary, model, args, log):
    p = subprocess.Popen([binary, "serve", "--model", model, "--port", "0"] + args, stderr=open(log, "w"))
    for _ in range(1200):
        text = open(log).read()
        if "ready:" in text:
            return p, int(re.search(r"listening on http://[0-9.]+:(\d+)", text).group(1))
        if p.poll() is not None:
            sys.exit(f"server exited: {text}")
        time.sleep(0.1)
    sys.exit("server not ready")


def workload(port, prompts, clients, n):
    """Returns (answers by prompt, generated tokens, seconds)."""
    answers, tokens = {}, [0]
    lock = threading.Lock()

    def client(k):
        for i in range(k, len(prompts), clients):
            o = post(port, {"prompt": prompts[i], "max_tokens": n, "temperature": 0})
            with lock:
                answers[i] = o["choices"][0]["text"]
                tokens[0] += o["usage"]["completion_tokens"]

    t0 = time.time()
    with ThreadPoolExecutor(clients) as ex:
        list(ex.map(client, range(clients)))
    return answers, tokens[0], time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("llm170")
    ap.add_argument("model")
    ap.add_argument("--clients", default="1,4")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--n", type=int, default=192)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--spec-flags", default="--spec ngram")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    prompts = [json.loads(l) for l in subprocess.run([sys.executable, os.path.join(here, "spec-code-edit-prompts.py")],
                                                     capture_output=True, text=True, check=True).stdout.splitlines()]
    prompts = prompts[:a.prompts]
    common = ["--parallel", str(a.parallel), "--threads", str(a.threads), "--ctx-size", "1024"]
    pa, port_a = start(a.llm170, a.model, common, "/tmp/spec-serve-bench-a.log")
    pb, port_b = start(a.llm170, a.model, common + a.spec_flags.split(), "/tmp/spec-serve-bench-b.log")
    servers = {"A": port_a, "B": port_b}
    print(f"A: serve {' '.join(common)}\nB: serve {' '.join(common)} {a.spec_flags}\n")
    print("| round | clients | server | load avg | tokens | seconds | t/s | drafts accepted |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    ratios, results = {}, {}
    try:
        for r in range(a.rounds):
            for c in [int(x) for x in a.clients.split(",")]:
                rate = {}
                for name in ("AB" if r % 2 == 0 else "BA"):
                    port = servers[name]
                    load = os.getloadavg()[0]
                    m0 = metrics(port)
                    ans, tok, sec = workload(port, prompts, c, a.n)
                    m1 = metrics(port)
                    d = {k: m1.get(k, 0) - m0.get(k, 0) for k in m1}
                    acc = (f"{d['llm170_spec_accepted_total']:.0f}/{d['llm170_spec_drafted_total']:.0f} "
                           f"({100 * d['llm170_spec_accepted_total'] / max(d['llm170_spec_drafted_total'], 1):.0f}%)"
                           if name == "B" else "")
                    rate[name] = tok / sec
                    results.setdefault((c, name), []).append(ans)
                    print(f"| {r + 1} | {c} | {name} | {load:.2f} | {tok} | {sec:.1f} | {tok / sec:.2f} | {acc} |", flush=True)
                ratios.setdefault(c, []).append(rate["B"] / rate["A"])
        json.dump({f"{c} {name} run {r}": ans for (c, name), v in results.items() for r, ans in enumerate(v)},
                  open("/tmp/spec-serve-bench-answers.json", "w"), indent=1)
        print()
        for c, rs in ratios.items():
            print(f"clients {c}: B/A per round " + ", ".join(f"{x:.3f}x" for x in rs))
            for r, (a_ans, b_ans) in enumerate(zip(results[(c, "A")], results[(c, "B")])):
                diff = [i for i in a_ans if a_ans[i] != b_ans[i]]
                print(f"  round {r + 1}: answers " + (f"differ for prompts {diff}" if diff else "identical"))
    finally:
        for p in (pa, pb):
            p.terminate()
            p.wait()


if __name__ == "__main__":
    main()
