#!/usr/bin/env bash
# `llm170 serve --device D` on a model: 6 concurrent greedy completions (ignore_eos, 24 tokens) must each
# return 24 tokens, and the first prompt's text must equal its text when served alone (a request's result
# does not depend on what shares its batch: 6 rows a decode step exercises the GEMV at T = 5..8); then a
# streamed chat completion must end with [DONE]. scripts/gpu-e2e.sh runs it on the GPU machine.
# Usage: serve-check.sh LLM170 MODEL DEVICE PORT (prints a line per check; exit 1 on any failure)
set -u
bin=$1 model=$2 dev=$3 port=$4
log=$(mktemp)
"$bin" serve --model "$model" --device "$dev" --port "$port" --parallel 8 --ctx-size 256 > "$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log" /tmp/sc-*.json' EXIT
for _ in $(seq 1 300); do # until it answers, or has exited (a bad model path fails at once, not after 60 s)
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/health" > /dev/null || { echo "serve: not ready"; tail -5 "$log"; exit 1; }
grep -m1 "ready:" "$log"
req() { curl -s "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
  -d "{\"prompt\": \"$1\", \"max_tokens\": 24, \"temperature\": 0, \"ignore_eos\": true}"; }
# field FILE KEY...: the JSON value at that path (a numeric key indexes a list); empty if absent
field() {
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d = d[int(k)] if k.isdigit() else d[k]
print(d)' "$@" 2>/dev/null
}
fail=0
req "The first prompt, alone" > /tmp/sc-alone.json
for i in 1 2 3 4 5 6; do
  p="The first prompt, alone"; [ "$i" -gt 1 ] && p="Another prompt number $i of six"
  req "$p" > "/tmp/sc-$i.json" &
done
wait $(jobs -p | grep -v "^$pid$") 2>/dev/null
for i in 1 2 3 4 5 6; do
  n=$(field "/tmp/sc-$i.json" usage completion_tokens)
  [ "$n" = 24 ] && echo "ok: request $i gave 24 tokens" || { echo "FAIL: request $i: $(head -c 300 /tmp/sc-$i.json)"; fail=1; }
done
a=$(field /tmp/sc-alone.json choices 0 text)
b=$(field /tmp/sc-1.json choices 0 text)
[ -n "$a" ] && [ "$a" = "$b" ] && echo "ok: the same text alone and in a batch of 6" || { echo "FAIL: alone / batched differ: '$a' / '$b'"; fail=1; }
s=$(curl -sN "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": true}')
echo "$s" | tail -2 | grep -q "data: \[DONE\]" && echo "ok: a streamed chat ends with [DONE]" || { echo "FAIL: stream: $(echo "$s" | tail -c 300)"; fail=1; }
exit $fail
