#!/usr/bin/env bash
# llm170 serve end to end: a tiny synth model (random weights, real tokenizer and chat template) served on
# free loopback ports (--port 0; the server prints the one it got) by two servers: the main one (8 slots,
# an API key) and a one-slot one with a queue of one (for 429). tests/server/test_sdk.py drives them with
# the official openai and anthropic SDKs; then both must shut down cleanly on SIGTERM (exit 0; under ASan
# the leak check runs at that exit).
set -u
bin=$1
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
# the SDKs come from scripts/test.sh's project-local venv when it exists
py=python3; [ -x .cache/venv-test/bin/python ] && py=.cache/venv-test/bin/python
fail() { echo "FAIL: $*" >&2; for l in "$dir"/*.log; do [ -f "$l" ] && tail -20 "$l" >&2; done; exit 1; }

"$bin" synth --preset tiny-qwen35 --out "$dir/m.gguf" --type q8_0 >/dev/null 2>&1 || fail "synth"

# start_server LOG ARGS...: starts a server, waits until it is ready, sets $port
start_server() {
  local log=$1; shift
  "$bin" serve --model "$dir/m.gguf" --port 0 --alias tiny "$@" 2>"$log" &
  pids+=($!)
  for _ in $(seq 1 600); do
    grep -q "ready:" "$log" && break
    kill -0 "${pids[-1]}" 2>/dev/null || fail "server exited: $(cat "$log")"
    sleep 0.05
  done
  grep -q "ready:" "$log" || fail "server not ready"
  port=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$log" | sed 's/.*://')
}

start_server "$dir/main.log" --parallel 8 --ctx-size 256 --threads 1 --api-key test-key-123
main=$port
start_server "$dir/queue.log" --parallel 1 --queue 1 --ctx-size 8192 --threads 1
LLM170_URL="http://127.0.0.1:$main" LLM170_QURL="http://127.0.0.1:$port" LLM170_KEY=test-key-123 \
  LLM170_MODEL=tiny LLM170_CTX=256 "$py" tests/server/test_sdk.py || fail "test_sdk.py (SDKs: scripts/test.sh installs them)"

for p in "${pids[@]}"; do kill -TERM "$p"; done
for p in "${pids[@]}"; do wait "$p" || fail "server exit status $? after SIGTERM"; done
pids=()
echo "cli_server: ok"
