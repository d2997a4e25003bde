#!/usr/bin/env bash
# llm170 serve end to end: a tiny synth model (random weights, real tokenizer and chat template) served on
# free loopback ports (--port 0; the server prints the one it got) by two servers: the main one (8 slots,
# an API key, --strict-model, a ChatML template with tools) and a one-slot one with a queue of one (for
# 429; any model name taken).
# tests/server/test_sdk.py drives them with the official openai and anthropic SDKs; then both must shut
# down cleanly on SIGTERM (exit 0; under ASan the leak check runs at that exit).
set -u
bin=$1
. tests/server/serve_lib.sh
synth_model
start_server "$dir/main.log" --parallel 8 --ctx-size 1024 --threads 1 --api-key test-key-123 --strict-model \
  --chat-template "$(cat tests/server/fixtures/chatml_tools.jinja)"
main=$port
start_server "$dir/queue.log" --parallel 1 --queue 1 --ctx-size 8192 --threads 1
LLM170_URL="http://127.0.0.1:$main" LLM170_QURL="http://127.0.0.1:$port" LLM170_KEY=test-key-123 \
  LLM170_MODEL=tiny LLM170_CTX=1024 "$py" tests/server/test_sdk.py || fail "test_sdk.py"
# an ASan build masks ~50x slower: test_schemas.py then runs a smaller corpus
slow=0; ldd "$bin" 2>/dev/null | grep -q libasan && slow=1
LLM170_URL="http://127.0.0.1:$main" LLM170_KEY=test-key-123 LLM170_MODEL=tiny LLM170_SLOW=$slow "$py" tests/server/test_schemas.py \
  || fail "test_schemas.py"
stop_servers
echo "cli_server: ok"
