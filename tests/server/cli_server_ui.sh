#!/usr/bin/env bash
# The web chat page in headless Chromium (tests/server/test_ui.py), against a synth model behind an API
# key. Needs Debian's chromium and chromium-driver (scripts/install-deps.sh --ci); skipped (77) without
# them. LLM170_SHOT=path.png keeps a screenshot.
set -u
bin=$1
command -v chromedriver >/dev/null && [ -x /usr/bin/chromium ] || { echo "cli_server_ui: skipped (no chromium)"; exit 77; }
# under ASan a browser and a slow server time out on a busy machine; the server's paths the page uses are
# the ones cli_server.sh covers under ASan
ldd "$bin" 2>/dev/null | grep -q libasan && { echo "cli_server_ui: skipped (ASan build)"; exit 77; }
. tests/server/serve_lib.sh
synth_model
start_server "$dir/ui.log" --parallel 2 --ctx-size 4096 --threads 1 --api-key ui-key
dport=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
chromedriver --port="$dport" >"$dir/driver.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$dport/status" >/dev/null && break; sleep 0.1; done
LLM170_URL="http://127.0.0.1:$port" LLM170_KEY=ui-key LLM170_DRIVER="http://127.0.0.1:$dport" \
  "$py" tests/server/test_ui.py || fail "test_ui.py"
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null; unset 'pids[-1]'
stop_servers
echo "cli_server_ui: ok"
