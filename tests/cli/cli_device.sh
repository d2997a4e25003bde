#!/usr/bin/env bash
# --device on every subcommand that loads a model: 'cpu' works, an unknown or unavailable device is a clear
# error (exit non-zero) naming it and listing the devices this build has.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0; pass=0
ok() { pass=$((pass+1)); }
bad() { echo "FAIL: $*" >&2; fail=$((fail+1)); }

"$bin" synth --preset tiny-llama --out "$dir/m.gguf" --type q8_0 >/dev/null 2>&1 || bad "synth"
printf 'some text to score, long enough for a few tokens of perplexity over one small chunk.\n%.0s' $(seq 20) > "$dir/t.txt"
run() { # cmd args...
  case $1 in
    bench) "$bin" bench -m "$dir/m.gguf" -p 8 -n 4 -r 1 -t 1 "${@:2}" ;;
    infer) "$bin" infer --model "$dir/m.gguf" --prompt-tokens 1,2,3 --n-predict 2 --ignore-eos -t 1 "${@:2}" ;;
    perplexity) "$bin" perplexity --model "$dir/m.gguf" --file "$dir/t.txt" --ctx-size 16 --chunks 1 -t 1 "${@:2}" ;;
    run) "$bin" run --model "$dir/m.gguf" --prompt hi --n-predict 2 -t 1 "${@:2}" ;;
    serve) "$bin" serve --model "$dir/m.gguf" --port 0 "${@:2}" ;;
  esac
}
for cmd in bench infer perplexity run serve; do
  if [ "$cmd" != serve ]; then
    run "$cmd" --device cpu > "$dir/out" 2> "$dir/err" && ok || bad "$cmd --device cpu failed: $(tail -2 "$dir/err")"
  fi
  run "$cmd" --device cuda:7 > "$dir/out" 2> "$dir/err"
  rc=$?
  [ $rc -ne 0 ] && ok || bad "$cmd --device cuda:7 exited 0"
  grep -q "cuda:7" "$dir/err" && grep -qE "this build has cpu|devices: cpu" "$dir/err" && ok \
    || bad "$cmd: the error should name the device and list the build's: $(tail -2 "$dir/err")"
done
echo "cli_device: $pass passed, $fail failed"
[ $fail -eq 0 ]
