#!/usr/bin/env bash
# llm170 infer / bench / the example program, as a user runs them, on a tiny synth model:
# JSON lines per token for parallel prompts, the same greedy stream from the example, clear errors.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0; pass=0
ok() { pass=$((pass+1)); }
bad() { echo "FAIL: $*" >&2; fail=$((fail+1)); }

"$bin" synth --preset tiny-qwen35 --out "$dir/m.gguf" --type q8_0 >/dev/null 2>&1 || bad "synth"
out=$("$bin" infer --model "$dir/m.gguf" --prompt-tokens 1,2,3 --prompt-tokens 7,8 --n-predict 4 --ignore-eos -t 2)
[ "$(echo "$out" | grep -c '"seq": 0')" = 4 ] && ok || bad "seq 0 should get 4 tokens: $out"
[ "$(echo "$out" | grep -c '"seq": 1')" = 4 ] && ok || bad "seq 1 should get 4 tokens"
echo "$out" | head -1 | grep -Eq '^\{"seq": 0, "pos": 3, "token": [0-9]+, "text": ".*"\}$' && ok || bad "json line format: $(echo "$out" | head -1)"
# the second prompt alone gives the same stream as in the batch
alone=$("$bin" infer --model "$dir/m.gguf" --prompt-tokens 7,8 --n-predict 4 --ignore-eos -t 1 | grep -o '"token": [0-9]*')
inbatch=$(echo "$out" | grep '"seq": 1' | grep -o '"token": [0-9]*')
[ "$alone" = "$inbatch" ] && ok || bad "batched stream differs from alone"
# the example program (public API only) gives the same greedy stream
exdir=$(dirname "$bin")/examples
if [ -x "$exdir/generate" ]; then
  ex=$("$exdir/generate" "$dir/m.gguf" 4 7 8 | tr ' ' '\n' | sed 's/^/"token": /')
  [ "$ex" = "$alone" ] && ok || bad "example stream '$ex' != infer '$alone'"
fi
# seeded sampling is reproducible and differs from greedy for some seed
s1=$("$bin" infer --model "$dir/m.gguf" --prompt-tokens 1,2 --n-predict 8 --ignore-eos --temp 1.5 --top-k 50 --seed 3)
s2=$("$bin" infer --model "$dir/m.gguf" --prompt-tokens 1,2 --n-predict 8 --ignore-eos --temp 1.5 --top-k 50 --seed 3)
[ "$s1" = "$s2" ] && ok || bad "same seed, different streams"
# bad input: clear errors, exit codes 1/2, no crash
err=$("$bin" infer --model "$dir/m.gguf" --prompt-tokens 1,2,3 --n-predict 10 --ctx-size 8 2>&1); rc=$?
[ $rc = 1 ] && echo "$err" | grep -q "exceeds the context size" && ok || bad "prompt over context: rc $rc: $err"
err=$("$bin" infer --model "$dir/m.gguf" --prompt-tokens 1,999999 --n-predict 1 2>&1); rc=$?
[ $rc = 1 ] && echo "$err" | grep -q "outside the vocabulary" && ok || bad "token out of range: rc $rc: $err"
err=$("$bin" infer --model "$dir/m.gguf" --prompt-tokens 1,x 2>&1); rc=$?
[ $rc = 2 ] && ok || bad "bad token list: rc $rc"
# llama is supported: a synthetic one generates
"$bin" synth --preset tiny-llama --out "$dir/l.gguf" --type f32 >/dev/null 2>&1
n=$("$bin" infer --model "$dir/l.gguf" --prompt-tokens 1,2,3 --n-predict 3 2>/dev/null | grep -c '"token"')
[ "$n" = 3 ] && ok || bad "tiny-llama should generate 3 tokens, got $n"
# an unsupported arch: a minimal GGUF (v3, no tensors, one key general.architecture = "mamba")
le64() { printf "$(printf '\\x%02x\\x%02x\\x00\\x00\\x00\\x00\\x00\\x00' $(($1 & 255)) $((($1 >> 8) & 255)))"; }
{ printf 'GGUF\x03\x00\x00\x00'; le64 0; le64 1; le64 20; printf 'general.architecture\x08\x00\x00\x00'; le64 5; printf 'mamba'; } >"$dir/u.gguf"
err=$("$bin" infer --model "$dir/u.gguf" --prompt-tokens 1 2>&1); rc=$?
[ $rc = 1 ] && echo "$err" | grep -q "architecture 'mamba' is not supported (supported: .*llama" && ok || bad "unsupported arch: rc $rc: $err"
# bench prints llama-bench's table
b=$("$bin" bench -m "$dir/m.gguf" -p 16 -n 4 -r 2 -t 1)
echo "$b" | grep -Eq '^\| qwen35 .*\| +pp16 \| +[0-9.]+ ± [0-9.]+ \|$' && ok || bad "bench pp row: $b"
echo "$b" | grep -Eq '\| +tg4 \| +[0-9.]+ ± [0-9.]+ \|$' && ok || bad "bench tg row"
# batched decode of 3 sequences after a 20-token cache (llama-bench's -d), test names say so
b=$("$bin" bench -m "$dir/m.gguf" -p 8 -n 4 -np 3 -d 20 -r 1 -t 2)
echo "$b" | grep -Eq '\| +pp8 @ d20 \| +[0-9.]+ ± [0-9.]+ \|$' && ok || bad "bench pp @ depth row: $b"
echo "$b" | grep -Eq '\| +tg4 x3 @ d20 \| +[0-9.]+ ± [0-9.]+ \|$' && ok || bad "bench batched tg row: $b"
echo "cli_infer: $pass passed, $fail failed"
[ $fail = 0 ]
