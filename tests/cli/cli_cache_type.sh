#!/usr/bin/env bash
# -ctk/-ctv (--cache-type-k/--cache-type-v, llama.cpp's names) on every subcommand that makes a context:
# an f16 cache works (serve: the server starts with it and answers a completion), and a type that is not
# one of f32, f16, bf16, q8_0 is a clear error before any model is loaded: exit 2, naming the flag, the
# value and the types there are. $1 is the llm170 binary.
set -u
bin=$1
. tests/cli/model_cmds_lib.sh
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$dir"' EXIT

for cmd in bench infer perplexity run serve; do
  for flag in -ctk --cache-type-v; do
    run "$cmd" $flag f17 > "$dir/out" 2> "$dir/err" < /dev/null
    rc=$?
    [ $rc -eq 2 ] && ok || bad "$cmd $flag f17: exit $rc, expected 2: $(tail -2 "$dir/err")"
    grep -q -- "$flag: cache type 'f17' is not one of f32, f16, bf16, q8_0" "$dir/err" && ok \
      || bad "$cmd $flag f17: the error should name the flag, the value and the types: $(tail -2 "$dir/err")"
  done
  [ "$cmd" = serve ] && continue
  run "$cmd" -ctk f16 -ctv f16 > "$dir/out" 2> "$dir/err" < /dev/null && ok \
    || bad "$cmd -ctk f16 -ctv f16 failed: $(tail -2 "$dir/err")"
done

# run: the long names too; greedy answers from an f16 cache are printed like any other
run run --cache-type-k f16 --cache-type-v f16 > "$dir/out" 2> "$dir/err" < /dev/null && ok \
  || bad "run --cache-type-k f16 --cache-type-v f16 failed: $(tail -2 "$dir/err")"
[ -s "$dir/out" ] && ok || bad "run with an f16 cache printed no answer"

# serve with an f16 cache: ready, answers a completion, exits 0 on SIGTERM
"$bin" serve --model "$dir/m.gguf" --port 0 --threads 1 --ctx-size 64 --parallel 1 -ctk f16 -ctv f16 \
  2> "$dir/serve.log" &
srv=$!
for _ in $(seq 1 600); do
  grep -q "ready:" "$dir/serve.log" && break
  kill -0 "$srv" 2>/dev/null || break
  sleep 0.05
done
if grep -q "ready:" "$dir/serve.log"; then
  ok
  port=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$dir/serve.log" | sed 's/.*://')
  python3 - "$port" > "$dir/resp" 2>&1 <<'EOF'
import json, sys, urllib.request
req = urllib.request.Request("http://127.0.0.1:%s/v1/completions" % sys.argv[1],
                             data=json.dumps({"prompt": "hi", "max_tokens": 3, "temperature": 0}).encode(),
                             headers={"Content-Type": "application/json"})
r = json.load(urllib.request.urlopen(req, timeout=60))
assert r["usage"]["completion_tokens"] >= 1, r
print("completion ok")
EOF
  grep -q "completion ok" "$dir/resp" && ok || bad "serve -ctk f16: no completion: $(tail -3 "$dir/resp")"
  kill -TERM "$srv"
  wait "$srv" && ok || bad "serve -ctk f16: exit status $? after SIGTERM"
else
  bad "serve -ctk f16 -ctv f16 did not become ready: $(tail -3 "$dir/serve.log")"
  kill "$srv" 2>/dev/null
fi
srv=
echo "cli_cache_type: $pass passed, $fail failed"
[ $fail -eq 0 ]
