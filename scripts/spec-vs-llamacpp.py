#!/usr/bin/env python3
"""Speculative decoding, llm170 against llama.cpp on the same model, prompts and machine (issue 16 (a), (b)).

usage: spec-vs-llamacpp.py LLM170 LLAMA_SERVER MODEL --draft DRAFT [--prompts N] [--n N] [--threads T]
       [--llm170-modes plain,ngram,draft] [--llamacpp-modes plain,ngram-simple,draft-simple]
       [--prompt-set code|prose]

llm170 runs `infer --timings` per prompt (as scripts/spec-code-edit-bench.py does); llama.cpp runs one
llama-server per mode (`--spec-type TYPE`, `-md DRAFT` for draft-simple; its defaults otherwise), all started
first and idle between requests, each request a /completion of the raw prompt, greedy, N tokens with EOS
ignored, no prompt cache. Every mode of both engines runs on a prompt before the next prompt (a drifting
machine moves them alike). Per mode: decode tokens / decode seconds over all prompts, the ratio to the same
engine's plain decoding, the geometric mean of the per-prompt ratios, drafts kept, and whether the tokens
equal the same engine's plain decoding. The code prompts are scripts/spec-code-edit-prompts.py's (the answer
repeats much of the prompt); the prose prompts ask for new text (where n-gram lookup finds little)."""
import argparse
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

PROSE = [
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how a refrigerator works to a ten-year-old.",
    "Describe the history of the printing press in a few paragraphs.",
    "Write a letter to a friend describing a walk through a forest in autumn.",
    "What are the main causes of the French Revolution? Answer in prose.",
    "Summarise the plot of a detective novel you invent, in about two hundred words.",
]


def chat(text):
    return ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(url, body, timeout=900):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def start_llama(server, model, mode, draft, threads, log_dir):
    port = free_port()
    cmd = [server, "-m", model, "--port", str(port), "-t", str(threads), "-tb", str(threads), "-c", "4096",
           "-np", "1", "--no-webui"]
    if mode != "plain":
        cmd += ["--spec-type", mode]
        if mode.startswith("draft"):
            cmd += ["-md", draft, "-td", str(threads), "-tbd", str(threads)]
    log = open(os.path.join(log_dir, f"llama-server-{mode}.log"), "w")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return p, url
        except Exception:
            pass
        if p.poll() is not None:
            sys.exit(f"llama-server {mode} exited: see {log.name}")
        time.sleep(0.5)
    sys.exit(f"llama-server {mode} did not come up")


def run_llm170(a, prompt, mode):
    cmd = [a.llm170, "infer", "-m", a.model, "--prompt", prompt, "-n", str(a.n), "-t", str(a.threads),
           "--ignore-eos", "--timings"]
    if mode != "plain":
        cmd += ["--spec", mode] + (["--model-draft", a.draft] if mode == "draft" else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"llm170 {mode}: {r.stderr}")
    toks = [json.loads(l)["token"] for l in r.stdout.splitlines()]
    d = re.search(r"decode (\d+) tokens in ([0-9.]+) s", r.stderr)
    s = re.search(r"(\d+) of (\d+) drafts", r.stderr)
    return toks, int(d.group(1)), float(d.group(2)), (int(s.group(1)), int(s.group(2))) if s else (0, 0)


def run_llama(url, a, prompt):
    r = post(url + "/completion", {"prompt": prompt, "n_predict": a.n, "ignore_eos": True, "temperature": 0,
                                   "cache_prompt": False, "return_tokens": True})
    if len(r.get("tokens", [])) != a.n:
        sys.exit(f"llama-server returned {len(r.get('tokens', []))} token ids, expected {a.n} (return_tokens)")
    t = r["timings"]
    # predicted_n counts the first token, which comes from the prompt's pass and costs the generation clock
    # (predicted_ms) nothing: decode figures are the other tokens over that clock, as llm170's are
    return r.get("tokens", []), t["predicted_n"] - 1, t["predicted_ms"] / 1000.0, \
        (t.get("draft_n_accepted", 0), t.get("draft_n", 0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("llm170")
    ap.add_argument("llama_server")
    ap.add_argument("model")
    ap.add_argument("--draft", required=True)
    ap.add_argument("--prompts", type=int, default=6)
    ap.add_argument("--n", type=int, default=192)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--llm170-modes", default="plain,ngram,draft")
    ap.add_argument("--llamacpp-modes", default="plain,ngram-simple,draft-simple")
    ap.add_argument("--prompt-set", default="code", choices=["code", "prose"])
    ap.add_argument("--log-dir", default="/tmp")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    if a.prompt_set == "code":
        out = subprocess.run([sys.executable, os.path.join(here, "spec-code-edit-prompts.py")], capture_output=True,
                             text=True, check=True).stdout
        prompts = [json.loads(l) for l in out.splitlines()][:a.prompts]
    else:
        prompts = [chat(p) for p in PROSE][:a.prompts]
    ours = a.llm170_modes.split(",")
    theirs = a.llamacpp_modes.split(",")
    servers = {m: start_llama(a.llama_server, a.model, m, a.draft, a.threads, a.log_dir) for m in theirs}
    modes = [("llm170", m) for m in ours] + [("llama.cpp", m) for m in theirs]
    tot = {k: [0, 0.0, 0, 0] for k in modes}  # tokens, seconds, kept, drafted
    ratios = {k: [] for k in modes}
    differ = {k: 0 for k in modes}
    try:
        for i, p in enumerate(prompts):
            rate, toks = {}, {}
            for k in modes:
                eng, m = k
                if eng == "llm170":
                    toks[k], n, s, (kept, dr) = run_llm170(a, p, m)
                else:
                    toks[k], n, s, (kept, dr) = run_llama(servers[m][1], a, p)
                tot[k][0] += n; tot[k][1] += s; tot[k][2] += kept; tot[k][3] += dr
                rate[k] = n / s
            for k in modes:
                base = (k[0], "plain")
                ratios[k].append(rate[k] / rate[base])
                if toks[k] != toks[base]:
                    differ[k] += 1
            print(f"prompt {i}: " + ", ".join(f"{e} {m} {rate[(e, m)]:.2f}" for e, m in modes), file=sys.stderr)
    finally:
        for p, _ in servers.values():
            p.terminate()
            p.wait()
    print("| engine | mode | decode t/s | vs its plain (totals) | vs its plain (geomean of prompts) | drafts kept |"
          " tokens = its plain |")
    print("|---|---|---:|---:|---:|---:|---|")
    for k in modes:
        e, m = k
        tps = tot[k][0] / tot[k][1]
        base = tot[(e, "plain")][0] / tot[(e, "plain")][1]
        g = math.exp(sum(map(math.log, ratios[k])) / len(ratios[k]))
        kept = f"{tot[k][2]}/{tot[k][3]} ({100 * tot[k][2] / tot[k][3]:.1f}%)" if tot[k][3] else "-"
        print(f"| {e} | {m} | {tps:.2f} | {tps / base:.3f}x | {g:.3f}x | {kept} | "
              f"{'yes' if differ[k] == 0 else f'no ({differ[k]} of {len(prompts)})'} |")
    lp = tot[("llm170", "plain")][0] / tot[("llm170", "plain")][1]
    cp = tot[("llama.cpp", "plain")][0] / tot[("llama.cpp", "plain")][1] if ("llama.cpp", "plain") in tot else 0
    if cp:
        print(f"\nplain decoding llm170 / llama.cpp: {lp / cp:.3f}x")
    print(f"{len(prompts)} {a.prompt_set} prompts x {a.n} tokens, {a.threads} threads, greedy")


if __name__ == "__main__":
    main()
