#!/usr/bin/env bash
# llm170 serve against slow, unauthenticated, half-closing and malformed clients (tests/server/
# test_hardening.py, raw sockets on 127.0.0.1), on a server with a short --timeout so the deadlines show in
# seconds. Bounded: every wait in the script has a deadline.
set -u
bin=$1
. tests/server/serve_lib.sh
synth_model
start_server "$dir/h.log" --parallel 2 --ctx-size 4096 --threads 1 --api-key k123 --timeout 2 --max-connections 128
asan=0; ldd "$bin" 2>/dev/null | grep -q libasan && asan=1
LLM170_URL="http://127.0.0.1:$port" LLM170_KEY=k123 LLM170_PID=$pid LLM170_TIMEOUT=2 LLM170_ASAN=$asan \
  "$py" tests/server/test_hardening.py || fail "test_hardening.py"
stop_servers
echo "cli_server_hardening: ok"
