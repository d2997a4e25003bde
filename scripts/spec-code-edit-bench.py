#!/usr/bin/env python3
"""Speculative decoding on the code-editing prompts (docs/benchmarks.md, "Speculative decoding").

usage: spec-code-edit-bench.py LLM170 MODEL [--n N] [--threads T] [--draft DRAFT] [--modes plain,ngram,draft]
       [--prompts N] [--extra "FLAGS"] [--base LLM170_B]

For each prompt of scripts/spec-code-edit-prompts.py, runs `llm170 infer --timings` once per mode, the
modes interleaved prompt by prompt (a drifting machine moves them alike), greedy, N tokens (EOS ignored,
so every mode decodes the same number of tokens). Reads the decode rate and the spec line from stderr,
checks that every mode produced the same tokens as plain decoding, and prints per-mode totals: decode
tokens / decode seconds, the ratio to plain, and acceptance figures; then the geometric mean over the
prompts of each prompt's ratio to plain (steadier than the totals where the machine's load drifts).
With --base, a mode written MODE@base runs that other binary (e.g. `--modes plain,ngram,ngram@base
--base old/llm170`: a change against the binary before it, alternated prompt by prompt in one run)."""
import argparse
import json
import math
import re
import subprocess
import sys
import os

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("llm170")
    ap.add_argument("model")
    ap.add_argument("--n", type=int, default=192)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--draft")
    ap.add_argument("--modes", default="plain,ngram")
    ap.add_argument("--extra", default="", help="more infer flags for the spec modes")
    ap.add_argument("--prompts", type=int, default=20, help="the first N prompts only")
    ap.add_argument("--base", help="the binary that MODE@base modes run")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    prompts = [json.loads(l) for l in subprocess.run([sys.executable, os.path.join(here, "spec-code-edit-prompts.py")],
                                                     capture_output=True, text=True, check=True).stdout.splitlines()][:a.prompts]
    modes = a.modes.split(",")
    tot = {m: [0, 0.0] for m in modes}
    acc = {m: [0, 0, 0, 0] for m in modes}  # kept, drafted, rounds, passes
    mismatches = 0
    ratios = {m: [] for m in modes}  # per prompt: decode rate / plain's (the modes run back to back)
    for i, p in enumerate(prompts):
        toks = {}
        rate = {}
        for m in modes:
            kind, _, which = m.partition("@")
            if which and (which != "base" or not a.base):
                sys.exit(f"mode {m}: only MODE@base, with --base BINARY")
            cmd = [a.base if which else a.llm170, "infer", "-m", a.model, "--prompt", p, "-n", str(a.n),
                   "-t", str(a.threads), "--ignore-eos", "--timings"]
            if kind != "plain":
                cmd += ["--spec", kind] + (["--model-draft", a.draft] if kind == "draft" else []) + a.extra.split()
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"{m} prompt {i}: {r.stderr}")
            toks[m] = [json.loads(l)["token"] for l in r.stdout.splitlines()]
            d = re.search(r"decode (\d+) tokens in ([0-9.]+) s", r.stderr)
            tot[m][0] += int(d.group(1))
            tot[m][1] += float(d.group(2))
            rate[m] = int(d.group(1)) / float(d.group(2))
            s = re.search(r"in (\d+) passes .*?(\d+) rounds: (\d+) of (\d+) drafts", r.stderr)
            if s:
                acc[m][3] += int(s.group(1)); acc[m][2] += int(s.group(2))
                acc[m][0] += int(s.group(3)); acc[m][1] += int(s.group(4))
            if m != "plain" and toks[m] != toks["plain"]:
                mismatches += 1
                print(f"prompt {i} {m}: tokens differ from plain", file=sys.stderr)
        for m in modes:
            ratios[m].append(rate[m] / rate["plain"])
        print(f"prompt {i}: " + ", ".join(f"{m} {rate[m]:.2f} t/s ({rate[m] / rate['plain']:.2f}x)" for m in modes) +
              "; so far " + ", ".join(f"{m} {tot[m][0] / tot[m][1]:.2f}" for m in modes), file=sys.stderr)
    base = tot["plain"][0] / tot["plain"][1]
    print(f"| mode | decode t/s | vs plain | drafts kept | kept per round | tokens per pass |")
    print(f"| ---- | ---------: | -------: | ----------: | -------------: | --------------: |")
    for m in modes:
        tps = tot[m][0] / tot[m][1]
        k, d, r, n = acc[m]
        extra = (f"{k}/{d} ({100 * k / d:.1f}%) | {k / r:.2f} | {(tot[m][0] + len(prompts)) / n:.2f}" if d else "- | - | 1.00")
        print(f"| {m} | {tps:.2f} | {tps / base:.3f}x | {extra} |")
    # a drifting machine moves the totals; each prompt's modes ran within a minute of each other
    print("\nper-prompt ratio to plain, geometric mean: " +
          ", ".join(f"{m} {math.exp(sum(map(math.log, ratios[m])) / len(ratios[m])):.3f}x" for m in modes if m != "plain"))
    print(f"{len(prompts)} prompts x {a.n} tokens, {a.threads} threads; outputs identical to plain: "
          f"{'yes' if mismatches == 0 else f'NO ({mismatches} differ)'}")

if __name__ == "__main__":
    main()
