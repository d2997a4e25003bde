#!/usr/bin/env bash
# llm170 serve against llama-server under the same load: scripts/loadgen.py's concurrent streaming clients
# (distinct 256-token prompts, 64 generated tokens each with ignore_eos, temperature 0.8 with llama.cpp's
# default filters sent explicitly to both) at each client count, on the same model, thread count and slot
# count; one server at a time (never both at once: they would share the cores and each other's page
# cache), alternating for ROUNDS rounds. Prints each round's rows (requests/s, generated tokens/s, TTFT
# p50/p99, ITL p50/p99), then the llm170 / llama-server throughput ratios per round.
#   scripts/bench-server.sh [--llm170 BIN] [--llama-server PATH] [MODEL] [CLIENTS] [ROUNDS] [THREADS] [REQUESTS_PER_CLIENT]
# Defaults: models/qwen2.5-coder-0.5b-instruct.gguf, 1,4,8,16, 2 rounds, 2 threads, 2 requests per client;
# BIN: the llm170 to serve with (default build/llm170; a wrapper script that sets its libraries will do);
# PATH: what scripts/llamacpp-build.sh builds (.cache/llamacpp/build-0.3.36-cpu/bin/llama-server).
# Both servers: 8 slots of 512 tokens (llm170 --parallel 8 --ctx-size 512; llama-server -np 8 -c 4096).
# Environment, for the GPU run (scripts/gpu-vs-llamacpp.sh serve) or other loads; unset, the above:
#   DEVICE         e.g. cuda or cuda:1: llm170 serve --device DEVICE, llama-server -ngl 99 -fa on (every
#                  layer on the GPU, flash attention, as llama-bench -fa 1 -ngl 99 in gpu-vs-llamacpp.sh)
#   SLOTS PER_SLOT the slots and each one's context in tokens (default 8 and 512): a prompt, its BOS and the
#                  generated tokens must fit PER_SLOT
#   PROMPT_TOKENS GEN_TOKENS  each request's prompt tokens and generated tokens (default 256 and 64)
#   LLAMA_LD_PATH  LD_LIBRARY_PATH for llama-server alone (a build with shared libraries moved off its
#                  build tree, as the GPU machine's unpacked --stage-bin one)
#   SERVE_ARGS LLAMA_ARGS  more flags for llm170 serve / llama-server, split at spaces (e.g.
#                  SERVE_ARGS="--prefill-chunk 512", LLAMA_ARGS="-ub 1024"); printed in the table's title
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lserver="$root/.cache/llamacpp/build-0.3.36-cpu/bin/llama-server"
llm=$root/build/llm170
while :; do
  case ${1:-} in
    --llama-server) lserver=$2; shift 2 ;;
    --llm170) llm=$2; shift 2 ;;
    *) break ;;
  esac
done
model=${1:-$root/models/qwen2.5-coder-0.5b-instruct.gguf}
clients=${2:-1,4,8,16}; rounds=${3:-2}; threads=${4:-2}; per_client=${5:-2}
slots=${SLOTS:-8}; per_slot=${PER_SLOT:-512}
prompt_tokens=${PROMPT_TOKENS:-256}; gen_tokens=${GEN_TOKENS:-64}
read -ra llm_args <<< "${SERVE_ARGS:-}"
read -ra ll_args <<< "${LLAMA_ARGS:-}"
if [ -n "${DEVICE:-}" ]; then llm_args=(--device "$DEVICE" "${llm_args[@]}"); ll_args=(-ngl 99 -fa on "${ll_args[@]}"); fi
[ -x "$llm" ] || { echo "build llm170 first (scripts/test.sh or cmake --build build)" >&2; exit 1; }
[ -x "$lserver" ] || { echo "no llama-server at $lserver (scripts/llamacpp-build.sh builds it)" >&2; exit 1; }
[ -f "$model" ] || { echo "no model $model (scripts/get-model.sh fetches it)" >&2; exit 1; }
out=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

healthy() { # the server answers /health with 200 (curl; python3 where the machine has no curl)
  if command -v curl >/dev/null; then curl -sf "http://127.0.0.1:$port/health" >/dev/null
  else python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "http://127.0.0.1:$port/health" 2>/dev/null; fi
}

start() {
  case $1 in
    llm170) "$llm" serve --model "$model" --port "$port" --parallel "$slots" --ctx-size "$per_slot" \
              --threads "$threads" "${llm_args[@]}" >"$out/server.log" 2>&1 & ;;
    llama-server) env ${LLAMA_LD_PATH:+"LD_LIBRARY_PATH=$LLAMA_LD_PATH"} "$lserver" -m "$model" --port "$port" \
              -t "$threads" -tb "$threads" -np "$slots" -c $((slots * per_slot)) "${ll_args[@]}" >"$out/server.log" 2>&1 & ;;
  esac
  pid=$!
  for _ in $(seq 1 600); do
    healthy && return 0
    kill -0 "$pid" 2>/dev/null || { echo "$1 exited:" >&2; tail -20 "$out/server.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "$1 not ready after 120 s" >&2
  exit 1
}

stop() { # a server that died under the load is reported with its log's end, and the rounds go on
  kill "$pid" 2>/dev/null || { echo "$1 had exited:" >&2; tail -20 "$out/server.log" >&2; }
  wait "$pid" 2>/dev/null || true; pid=
}

for r in $(seq 1 "$rounds"); do
  for s in llm170 llama-server; do
    start "$s"
    echo "round $r: $s (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    python3 "$root/scripts/loadgen.py" "http://127.0.0.1:$port" --clients "$clients" --requests-per-client "$per_client" \
      --prompt-tokens "$prompt_tokens" --gen "$gen_tokens" --temperature 0.8 --markdown "$s, round $r" >"$out/$s.$r.txt"
    grep -m1 '^# ' "$out/$s.$r.txt" >&2 # the prompts' lengths as the server's /tokenize counts them
    stop "$s"
  done
done

extra= # what the environment changed, in the title (nothing when it changed nothing)
[ -n "${DEVICE:-}" ] && extra+=", device $DEVICE (llama-server -ngl 99 -fa on)"
[ -n "${PROMPT_TOKENS:-}${GEN_TOKENS:-}" ] && extra+=", $prompt_tokens-token prompts, $gen_tokens generated"
[ -n "${SERVE_ARGS:-}" ] && extra+=", llm170 serve $SERVE_ARGS"
[ -n "${LLAMA_ARGS:-}" ] && extra+=", llama-server $LLAMA_ARGS"
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || "$llm" --version 2>&1 | head -1) # no .git: the binary's
echo "## $(basename "$model"), $threads threads, $slots slots of $per_slot tokens, llm170 $rev, $(basename "$(dirname "$(dirname "$lserver")")")$extra"
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
gpu=
[ -n "${DEVICE:-}" ] && gpu=", $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo 'no nvidia-smi')"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores$gpu, load $(cut -d' ' -f1-3 /proc/loadavg)"
