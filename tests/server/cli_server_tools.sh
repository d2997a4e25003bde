#!/usr/bin/env bash
# Tool calls end to end through the official SDKs on a real model (tests/server/test_tools.py). Needs
# models/qwen2.5-coder-0.5b-instruct.gguf (scripts/get-model.sh); skipped (77) without it.
set -u
bin=$1
model=models/qwen2.5-coder-0.5b-instruct.gguf
[ -f "$model" ] || { echo "cli_server_tools: skipped ($model absent; scripts/get-model.sh fetches it)"; exit 77; }
# a sanitizer build decodes a 0.5B model too slowly for this loop
ldd "$bin" 2>/dev/null | grep -q libasan && { echo "cli_server_tools: skipped (ASan build)"; exit 77; }
. tests/server/serve_lib.sh
ln -s "$(realpath "$model")" "$dir/m.gguf"
start_server "$dir/tools.log" --parallel 2 --ctx-size 2048 --threads 2
LLM170_URL="http://127.0.0.1:$port" "$py" tests/server/test_tools.py || fail "test_tools.py"
stop_servers
echo "cli_server_tools: ok"
