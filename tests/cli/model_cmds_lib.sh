# Shared by tests/cli/cli_device.sh and cli_cache_type.sh (sourced): a temp dir $dir with a tiny synth
# model and a text to score, pass/fail counters, and `run CMD ARGS...`, which runs each subcommand that
# makes a context (bench, infer, perplexity, run, serve) on that model with small settings plus ARGS.
# Needs $bin (the llm170 binary).
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
    run) "$bin" run --model "$dir/m.gguf" --prompt hi --n-predict 2 --temp 0 -t 1 "${@:2}" ;;
    serve) "$bin" serve --model "$dir/m.gguf" --port 0 --threads 1 --ctx-size 64 --parallel 1 "${@:2}" ;;
  esac
}
