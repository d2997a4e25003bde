#!/usr/bin/env bash
# llm170 serve against itself: variants (binaries and/or flags) under scripts/loadgen.py's load, one server
# at a time, every variant in every round (each round starting one variant later), so that a noisy
# machine's drift falls on all of them alike.
# Each variant's server: 8 slots of 512 tokens, THREADS threads (as scripts/bench-server.sh runs llm170),
# plus its own flags; the load: C closed-loop streaming clients x 2 requests, 256-token distinct prompts,
# 64 generated tokens, temperature 0.8 with llama.cpp's default filters. Prints a markdown row per run
# (with the load average at its start), then each variant's median over the rounds.
#   scripts/bench-server-ab.sh [--model M] [--clients C] [--rounds R] [--threads T] VARIANT...
# VARIANT: LABEL=BINARY[,FLAG,FLAG...], e.g. old=/tmp/llm170-old new64=build/llm170,--prefill-chunk,64
# Defaults: models/qwen2.5-coder-0.5b-instruct.gguf, 8 clients, 3 rounds, 2 threads.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=$root/models/qwen2.5-coder-0.5b-instruct.gguf clients=8 rounds=3 threads=2
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ -f "$model" ] || { echo "no model $model (scripts/get-model.sh fetches it)" >&2; exit 1; }
for v in "$@"; do
  bin=${v#*=}; bin=${bin%%,*}
  [ -x "$bin" ] || { echo "variant $v: no executable $bin" >&2; exit 1; }
done
out=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

echo "| variant, round | load at start | gen tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | requests |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
variants=("$@")
for r in $(seq 1 "$rounds"); do
  # each round starts one variant later, so that a drift within the rounds falls on every variant alike
  for k in $(seq 0 $(($# - 1))); do
    v=${variants[$(((k + r - 1) % $#))]}
    label=${v%%=*}; spec=${v#*=}
    IFS=, read -r -a parts <<<"$spec"
    "${parts[0]}" serve --model "$model" --port "$port" --parallel 8 --ctx-size 512 --threads "$threads" \
      "${parts[@]:1}" >"$out/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
      curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
      kill -0 "$pid" 2>/dev/null || { echo "$label exited:" >&2; tail -20 "$out/server.log" >&2; exit 1; }
      sleep 0.2
    done
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    python3 "$root/scripts/loadgen.py" "http://127.0.0.1:$port" --clients "$clients" --requests-per-client 2 \
      --temperature 0.8 >"$out/$label.$r.txt"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
    python3 - "$out/$label.$r.txt" "$label, round $r" "$load" <<'EOF'
import json, sys
d = [json.loads(x) for x in open(sys.argv[1]) if x.startswith("{")][0]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {d['tok_s']:.1f} | {1000 * d['ttft_p50']:.0f} | {1000 * d['ttft_p99']:.0f} | "
      f"{1000 * d['itl_p50']:.1f} | {1000 * d['itl_p99']:.1f} | {d['requests']}{' (' + str(d['errors']) + ' failed)' if d['errors'] else ''} |")
EOF
  done
done
echo
python3 - "$out" "$rounds" "$@" <<'EOF'
import json, statistics, sys
out, rounds, variants = sys.argv[1], int(sys.argv[2]), [v.split("=")[0] for v in sys.argv[3:]]
print("| variant: median over the rounds | gen tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms |")
print("|---|---:|---:|---:|---:|---:|")
for v in variants:
    rs = [[json.loads(x) for x in open(f"{out}/{v}.{r}.txt") if x.startswith("{")][0] for r in range(1, rounds + 1)]
    med = lambda k, s=1: statistics.median(x[k] for x in rs) * s
    print(f"| {v} | {med('tok_s'):.1f} | {med('ttft_p50', 1000):.0f} | {med('ttft_p99', 1000):.0f} | "
          f"{med('itl_p50', 1000):.1f} | {med('itl_p99', 1000):.1f} |")
EOF
echo
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
