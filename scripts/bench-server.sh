#!/usr/bin/env bash
# llm170 serve against llama-server under the same load: scripts/loadgen.py's concurrent streaming clients
# (distinct 256-token prompts, 64 generated tokens each with ignore_eos, temperature 0.8 with llama.cpp's
# default filters sent explicitly to both) at each client count, on the same model, thread count and slot
# count; one server at a time (never both at once: they would share the cores and each other's page
# cache), alternating for ROUNDS rounds. Prints each round's rows (requests/s, generated tokens/s, TTFT
# p50/p99, ITL p50/p99), then the llm170 / llama-server throughput ratios per round.
#   scripts/bench-server.sh [--llama-server PATH] [MODEL] [CLIENTS] [ROUNDS] [THREADS] [REQUESTS_PER_CLIENT]
# Defaults: models/qwen2.5-coder-0.5b-instruct.gguf, 1,4,8,16, 2 rounds, 2 threads, 2 requests per client;
# PATH: what scripts/llamacpp-build.sh builds (.cache/llamacpp/build-0.3.36-cpu/bin/llama-server).
# Both servers: 8 slots of 512 tokens (llm170 --parallel 8 --ctx-size 512; llama-server -np 8 -c 4096).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lserver="$root/.cache/llamacpp/build-0.3.36-cpu/bin/llama-server"
if [ "${1:-}" = "--llama-server" ]; then lserver=$2; shift 2; fi
model=${1:-$root/models/qwen2.5-coder-0.5b-instruct.gguf}
clients=${2:-1,4,8,16}; rounds=${3:-2}; threads=${4:-2}; per_client=${5:-2}
slots=8; per_slot=512
llm="$root/build/llm170"
[ -x "$llm" ] || { echo "build llm170 first (scripts/test.sh or cmake --build build)" >&2; exit 1; }
[ -x "$lserver" ] || { echo "no llama-server at $lserver (scripts/llamacpp-build.sh builds it)" >&2; exit 1; }
[ -f "$model" ] || { echo "no model $model (scripts/get-model.sh fetches it)" >&2; exit 1; }
out=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

start() {
  case $1 in
    llm170) "$llm" serve --model "$model" --port "$port" --parallel "$slots" --ctx-size "$per_slot" \
              --threads "$threads" >"$out/server.log" 2>&1 & ;;
    llama-server) "$lserver" -m "$model" --port "$port" -t "$threads" -tb "$threads" -np "$slots" \
              -c $((slots * per_slot)) >"$out/server.log" 2>&1 & ;;
  esac
  pid=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { echo "$1 exited:" >&2; tail -20 "$out/server.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "$1 not ready after 120 s" >&2
  exit 1
}

stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

for r in $(seq 1 "$rounds"); do
  for s in llm170 llama-server; do
    start "$s"
    echo "round $r: $s (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    python3 "$root/scripts/loadgen.py" "http://127.0.0.1:$port" --clients "$clients" --requests-per-client "$per_client" \
      --temperature 0.8 --markdown "$s, round $r" >"$out/$s.$r.txt"
    stop
  done
done

echo "## $(basename "$model"), $threads threads, $slots slots of $per_slot tokens, llm170 $(git -C "$root" rev-parse --short HEAD), $(basename "$(dirname "$(dirname "$lserver")")")"
echo
echo "| server | clients | requests/s | gen tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | requests |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for r in $(seq 1 "$rounds"); do
  for s in llm170 llama-server; do grep '^|' "$out/$s.$r.txt"; done
done
echo
python3 - "$out" "$rounds" <<'EOF'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def rows(s, r):
    return {d["clients"]: d for d in (json.loads(x) for x in open(f"{out}/{s}.{r}.txt") if x.startswith("{"))}
for r in range(1, rounds + 1):
    a, b = rows("llm170", r), rows("llama-server", r)
    print(f"round {r}, llm170 / llama-server gen tok/s: " +
          ", ".join(f"{c} clients {a[c]['tok_s'] / b[c]['tok_s']:.2f}x" for c in sorted(a) if c in b and b[c]["tok_s"]))
EOF
echo
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
