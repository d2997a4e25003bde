# Shared by tests/server/cli_*.sh (sourced): a temp dir, cleanup of the servers started, and start_server.
# Needs $bin (the llm170 binary).
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
# the SDKs (and jsonschema) come from scripts/test.sh's project-local venv when it exists
py=python3; [ -x .cache/venv-test/bin/python ] && py=.cache/venv-test/bin/python
fail() { echo "FAIL: $*" >&2; for l in "$dir"/*.log; do [ -f "$l" ] && tail -20 "$l" >&2; done; exit 1; }

# synth_model: a tiny random-weight model with a real tokenizer and chat template at $dir/m.gguf
synth_model() { "$bin" synth --preset tiny-qwen35 --out "$dir/m.gguf" --type q8_0 >/dev/null 2>&1 || fail "synth"; }

# start_server LOG ARGS...: starts a server on a free port, waits until it is ready, sets $port and $pid
# (the model: $model if set, else $dir/m.gguf)
start_server() {
  local log=$1; shift
  "$bin" serve --model "${model:-$dir/m.gguf}" --port 0 --alias tiny "$@" 2>"$log" &
  pid=$!
  pids+=($pid)
  for _ in $(seq 1 600); do
    grep -qs "ready:" "$log" && break
    kill -0 "$pid" 2>/dev/null || fail "server exited: $(cat "$log")"
    sleep 0.05
  done
  grep -q "ready:" "$log" || fail "server not ready"
  port=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$log" | sed 's/.*://')
}

# stop_servers: SIGTERM to every server; each must exit 0 (under ASan the leak check runs at that exit)
stop_servers() {
  for p in "${pids[@]}"; do kill -TERM "$p"; done
  for p in "${pids[@]}"; do wait "$p" || fail "server exit status $? after SIGTERM"; done
  pids=()
}
