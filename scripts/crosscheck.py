#!/usr/bin/env python3
"""Cross-check llm170 against llama.cpp on one GGUF: greedy streams with top-N logprobs, and perplexity.

Runs the same prompts (tokenized once, by llama.cpp's /tokenize, and fed as token ids to both engines)
greedily for N tokens in llama.cpp's llama-server (/completion with n_probs: log-softmax of the raw
logits) and in `llm170 infer --top-logprobs`, then compares per prompt:
  match     the two streams are identical;
  near-tie  at the first divergence our token is in llama.cpp's top-N and llama.cpp's top-1 logprob minus
            its logprob of our token is < --gap nats (rounding flips a close call; after it the
            continuations are different texts and are not compared);
  FAIL      otherwise.
Each prompt is also tokenized by `llm170 tokenize`: different ids than llama.cpp's are a FAIL.
It prints a table and exits 1 if any prompt FAILs (or the perplexities differ by more than --ppl-tol).

Any backend reuses it: pass its binary and flags (--llm170 BIN --llm170-flags "-t 8 --backend cuda").
llama.cpp is either run (--llamacpp-bin DIR holding llama-server, llama-perplexity) or replaced by a golden
file written by an earlier run (--ref FILE; --write-ref FILE writes one). Golden file format (text, one
record per line; '#' lines are comments), read also by tests/crosscheck/test_crosscheck_golden.c:
  llm170-crosscheck v1
  prompt P N id0 id1 ...                       prompt P's N token ids (with BOS)
  gen P S tok logprob id1 lp1 ... idK lpK      llama.cpp's greedy token at step S and its top-K
  ppl CTX VALUE [CHUNKS]                       llama-perplexity's final estimate at n_ctx CTX, over every
                                               chunk of the text or over its first CHUNKS chunks

  scripts/crosscheck.py --model M --llm170 build/llm170 --llamacpp-bin DIR [--prompts F] [-n 64]
      [--ppl-file TEXT --ppl-ctx 512 --ppl-chunks 0,16] [--write-ref tests/crosscheck/NAME.golden]
A golden file given with --ref and llama.cpp given with --llamacpp-bin: the perplexities the file lacks are
computed with llama-perplexity (with --write-ref FILE --ref-only: added to the file).
"""
import argparse
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request


def read_prompts(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                out.append(line.replace("\\n", "\n"))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


class LlamaServer:
    """llama-server on a free local port, one slot, for the duration of a with-block."""

    def __init__(self, bindir, model, threads, n_ctx, extra):
        self.port = free_port()
        self.log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"crosscheck-server-{self.port}.log"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(bindir, "llama-server"), "-m", model, "-t", str(threads), "-c", str(n_ctx), "-np", "1",
             "--host", "127.0.0.1", "--port", str(self.port)] + extra, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        for _ in range(600):
            if self.proc.poll() is not None:
                sys.exit(f"crosscheck: llama-server exited early; see {self.log.name}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        sys.exit("crosscheck: llama-server did not become ready in 5 minutes")

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


def llamacpp_reference(args, prompts):
    """{'prompts': [[ids]], 'gen': [[(tok, lp, [(id, lp)...])...]], 'ppl': {(ctx, chunks): value}} from llama.cpp."""
    ref = {"prompts": [], "gen": [], "ppl": {}}
    with LlamaServer(args.llamacpp_bin, args.model, args.threads, 4096, shlex.split(args.llamacpp_flags)) as srv:
        for text in prompts:
            ids = post(srv.url + "/tokenize", {"content": text, "add_special": True, "parse_special": True})["tokens"]
            r = post(srv.url + "/completion", {
                "prompt": ids, "n_predict": args.n_predict, "temperature": 0, "top_k": 1, "n_probs": args.top,
                "ignore_eos": True, "cache_prompt": False, "repeat_penalty": 1.0, "dry_multiplier": 0,
                "post_sampling_probs": False})
            steps = []
            for p in r["completion_probabilities"]:
                steps.append((p["id"], p["logprob"], [(t["id"], t["logprob"]) for t in p["top_logprobs"]]))
            ref["prompts"].append(ids)
            ref["gen"].append(steps)
    add_llamacpp_ppl(args, ref)
    return ref


def add_llamacpp_ppl(args, ref):
    """llama-perplexity's figure for each --ppl-chunks count that ref lacks (0: every chunk)."""
    for chunks in (args.ppl_chunks if args.ppl_file else []):
        if (args.ppl_ctx, chunks) in ref["ppl"]:
            continue
        cmd = [os.path.join(args.llamacpp_bin, "llama-perplexity"), "-m", args.model, "-f", args.ppl_file, "-c",
               str(args.ppl_ctx), "-t", str(args.threads), "-b", str(args.ppl_ctx)] + shlex.split(args.llamacpp_flags)
        if chunks:
            cmd += ["--chunks", str(chunks)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        m = re.search(r"Final estimate: PPL = ([0-9.]+)", out.stdout + out.stderr)
        if not m:
            sys.exit("crosscheck: llama-perplexity gave no final estimate:\n" + (out.stdout + out.stderr)[-2000:])
        ref["ppl"][(args.ppl_ctx, chunks)] = float(m.group(1))


def write_ref(path, ref, args):
    with open(path, "w") as f:
        f.write("llm170-crosscheck v1\n")
        f.write(f"# made by scripts/crosscheck.py from llama.cpp ({args.ref_label}) on {os.path.basename(args.model)}\n")
        f.write(f"# greedy, {args.n_predict} tokens per prompt, top-{args.top} logprobs of the raw logits; "
                f"prompts: {args.prompts}\n")
        for i, ids in enumerate(ref["prompts"]):
            f.write(f"prompt {i} {len(ids)} {' '.join(map(str, ids))}\n")
        for i, steps in enumerate(ref["gen"]):
            for s, (tok, lp, top) in enumerate(steps):
                f.write(f"gen {i} {s} {tok} {lp:.6f} " + " ".join(f"{t} {l:.6f}" for t, l in top) + "\n")
        for (ctx, chunks), v in sorted(ref["ppl"].items()):
            f.write(f"# perplexity: llama-perplexity -c {ctx} -b {ctx} -t {args.threads}"
                    f"{f' --chunks {chunks}' if chunks else ''} on {args.ppl_file}\n")
            f.write(f"ppl {ctx} {v:.4f}{f' {chunks}' if chunks else ''}\n")


def read_ref(path):
    ref = {"prompts": [], "gen": [], "ppl": {}}
    with open(path) as f:
        if f.readline().strip() != "llm170-crosscheck v1":
            sys.exit(f"crosscheck: {path} is not an llm170-crosscheck v1 file")
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "prompt":
                ref["prompts"].append([int(x) for x in w[3:]])
                ref["gen"].append([])
            elif w[0] == "gen":
                top = [(int(w[i]), float(w[i + 1])) for i in range(5, len(w), 2)]
                ref["gen"][int(w[1])].append((int(w[3]), float(w[4]), top))
            elif w[0] == "ppl":
                ref["ppl"][(int(w[1]), int(w[3]) if len(w) > 3 else 0)] = float(w[2])
    return ref


def llm170_streams(args, ref):
    """Our greedy streams, [(tok, lp, top)] per prompt, from one `llm170 infer` run (all prompts at once)."""
    cmd = [args.llm170, "infer", "--model", args.model, "-n", str(args.n_predict), "--ignore-eos", "--top-logprobs",
           str(args.top), "-t", str(args.threads)] + shlex.split(args.llm170_flags)
    for ids in ref["prompts"]:
        cmd += ["--prompt-tokens", ",".join(map(str, ids))]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("crosscheck: llm170 infer failed: " + out.stderr[-2000:])
    ours = [[] for _ in ref["prompts"]]
    for line in out.stdout.splitlines():
        d = json.loads(line)
        ours[d["seq"]].append((d["token"], d["logprob"], [tuple(t) for t in d["top"]]))
    return ours


def llm170_tokens(args, text):
    """Our tokenization of a prompt (BOS as the vocabulary says, control tokens parsed, as llama.cpp's)."""
    out = subprocess.run([args.llm170, "tokenize", "--model", args.model, "--text", text], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("crosscheck: llm170 tokenize failed: " + out.stderr[-2000:])
    return json.loads(out.stdout)


def compare(ref_steps, our_steps, gap):
    """(verdict, first divergence text, max |logprob diff| of the shared tokens before it)."""
    dmax = 0.0
    for s, ((rt, rlp, rtop), (ot, olp, _)) in enumerate(zip(ref_steps, our_steps)):
        if rt == ot:
            dmax = max(dmax, abs(rlp - olp))
            continue
        ref_lp = dict(rtop)
        if ot in ref_lp and rtop[0][1] - ref_lp[ot] < gap:
            return "near-tie", f"step {s}: ours {ot} vs {rt}, gap {rtop[0][1] - ref_lp[ot]:.3f}", dmax
        why = f"gap {rtop[0][1] - ref_lp[ot]:.3f}" if ot in ref_lp else "ours not in ref top"
        return "FAIL", f"step {s}: ours {ot} vs {rt}, {why}", dmax
    if len(our_steps) < len(ref_steps):
        return "FAIL", f"ours stopped after {len(our_steps)} tokens", dmax
    return "match", "-", dmax


def llm170_ppl(args, chunks):
    cmd = [args.llm170, "perplexity", "--model", args.model, "--file", args.ppl_file, "--ctx-size", str(args.ppl_ctx),
           "-t", str(args.threads)] + (["--chunks", str(chunks)] if chunks else []) + shlex.split(args.llm170_flags)
    out = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"Final estimate: PPL = ([0-9.]+)", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit("crosscheck: llm170 perplexity failed: " + (out.stdout + out.stderr)[-2000:])
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--llm170", required=True, help="the llm170 binary")
    ap.add_argument("--llm170-flags", default="", help="extra flags for llm170 (backend, exact, ...)")
    ap.add_argument("--llamacpp-bin", help="llama.cpp's bin folder (llama-server, llama-perplexity)")
    ap.add_argument("--llamacpp-flags", default="", help="extra flags for llama-server and llama-perplexity")
    ap.add_argument("--ref", help="a golden file to compare against instead of running llama.cpp")
    ap.add_argument("--write-ref", help="write llama.cpp's results as a golden file")
    ap.add_argument("--ref-only", action="store_true", help="with --write-ref: write it and stop (no llm170 run)")
    ap.add_argument("--ref-label", default="llama-cpp-python 0.3.36 sdist, CPU build")
    ap.add_argument("--prompts", default="tests/crosscheck/prompts.txt")
    ap.add_argument("-n", "--n-predict", type=int, default=64)
    ap.add_argument("--top", type=int, default=6)
    ap.add_argument("--gap", type=float, default=1.5, help="near-tie threshold in nats")
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count())
    ap.add_argument("--ppl-file", help="text for the perplexity comparison")
    ap.add_argument("--ppl-ctx", type=int, default=512)
    ap.add_argument("--ppl-chunks", default="0",
                    help="comma-separated chunk counts to compare (0: every chunk of the text)")
    ap.add_argument("--ppl-tol", type=float, default=0.002, help="allowed relative PPL difference")
    args = ap.parse_args()
    args.ppl_chunks = [int(c) for c in args.ppl_chunks.split(",")]
    if not args.ref and not args.llamacpp_bin:
        ap.error("give --llamacpp-bin DIR (run llama.cpp) or --ref FILE (a golden file)")

    prompts = read_prompts(args.prompts)
    ref = read_ref(args.ref) if args.ref else llamacpp_reference(args, prompts)
    if args.ref and args.llamacpp_bin:
        add_llamacpp_ppl(args, ref)
    if args.write_ref:
        write_ref(args.write_ref, ref, args)
        if args.ref_only:
            return
    ours = llm170_streams(args, ref)

    bad = 0
    counts = {}
    print("| # | prompt | tokens | result | first divergence | max abs dlogprob before it |")
    print("|---|---|---|---|---|---|")
    for i, (steps, mine) in enumerate(zip(ref["gen"], ours)):
        verdict, where, dmax = compare(steps, mine, args.gap)
        # the streams start from llama.cpp's prompt tokens; our tokenizer must give the same ones
        same_tokens = i < len(prompts) and llm170_tokens(args, prompts[i]) == ref["prompts"][i]
        if not same_tokens:
            verdict = "FAIL"
        counts[verdict] = counts.get(verdict, 0) + 1
        bad += verdict == "FAIL"
        label = prompts[i] if i < len(prompts) else f"prompt {i}"
        label = label.replace("\n", "\\n").replace("|", "\\|")
        label = label[:40] + ("..." if len(label) > 40 else "")
        print(f"| {i} | `{label}` | {'same' if same_tokens else 'DIFFER'} | {verdict} | {where} | {dmax:.3f} |")
    print("\n" + ", ".join(f"{v} {c}" for v, c in counts.items()) + f" of {len(ours)} prompts x {args.n_predict} tokens")

    for chunks in (args.ppl_chunks if args.ppl_file else []):
        theirs = ref["ppl"].get((args.ppl_ctx, chunks))
        if theirs is None:
            sys.exit(f"crosscheck: the reference has no perplexity at n_ctx {args.ppl_ctx}, chunks {chunks or 'all'}")
        ours_ppl = llm170_ppl(args, chunks)
        rel = abs(ours_ppl - theirs) / theirs
        ok = rel <= args.ppl_tol
        bad += not ok
        print(f"perplexity (n_ctx {args.ppl_ctx}, {os.path.basename(args.ppl_file)}, chunks {chunks or 'all'}): "
              f"llm170 {ours_ppl:.4f}, llama.cpp {theirs:.4f}, difference {100 * rel:.3f}% "
              f"({'ok' if ok else 'FAIL'}: limit {100 * args.ppl_tol:.1f}%)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
