#!/usr/bin/env bash
# cli_perplexity: `llm170 perplexity` and `llm170 infer --top-logprobs` on a tiny fixture model (their
# agreement with llama.cpp on real weights is scripts/crosscheck.py's job, docs/models.md). Checks: the
# perplexity is reported per chunk and finally, is reproducible, and the final value equals the last
# running one; a text shorter than two contexts, a missing file and a missing flag fail with a message;
# greedy infer's chosen token is the first of its top-N, which is sorted, with logprobs <= 0 whose
# probabilities sum to at most 1. $1 is the llm170 binary.
set -u
BIN=${1:?usage: cli_perplexity.sh path/to/llm170}
M=tests/models/fixtures/qwen35-f16.gguf
TXT=tests/crosscheck/genesis-kjv-1-24.txt
TMP=$(mktemp -d /tmp/llm170_cli_ppl.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

"$BIN" perplexity --model "$M" --file "$TXT" --ctx-size 64 --chunks 3 -t 1 >"$TMP/p1.out" 2>"$TMP/p1.err"
check "perplexity exits 0" test $? -eq 0
check "three running values" grep -Eq '^\[1\][0-9.]+,\[2\][0-9.]+,\[3\][0-9.]+,$' "$TMP/p1.out"
check "a final estimate" grep -Eq '^Final estimate: PPL = [0-9]+\.[0-9]{4} \+/- [0-9.]+$' "$TMP/p1.out"
last=$(grep -o '\[3\][0-9.]*' "$TMP/p1.out" | cut -c4-)
final=$(grep -o 'PPL = [0-9.]*' "$TMP/p1.out" | cut -c7-)
check "final = last running value ($final)" test "$last" = "$final"
check "scores the second half of each chunk" grep -q 'scoring 31 tokens per chunk' "$TMP/p1.err"
"$BIN" perplexity --model "$M" --file "$TXT" --ctx-size 64 --chunks 3 -t 2 >"$TMP/p2.out" 2>/dev/null
check "reproducible (1 vs 2 threads)" cmp -s "$TMP/p1.out" "$TMP/p2.out"

printf 'too short' >"$TMP/short.txt"
"$BIN" perplexity --model "$M" --file "$TMP/short.txt" --ctx-size 64 >/dev/null 2>"$TMP/short.err"
check "a short text exits 1" test $? -eq 1
check "a short text says why" grep -q 'at least 2 x n_ctx = 128 are needed' "$TMP/short.err"
"$BIN" perplexity --model "$M" --file /nonexistent.txt >/dev/null 2>"$TMP/nf.err"
check "a missing text exits 1" test $? -eq 1
check "a missing text is named" grep -q nonexistent.txt "$TMP/nf.err"
"$BIN" perplexity --model "$M" >/dev/null 2>&1
check "no --file exits 2" test $? -eq 2

"$BIN" infer --model "$M" --prompt "hello" -n 4 -t 1 --top-logprobs 5 >"$TMP/i.out" 2>"$TMP/i.err"
check "infer --top-logprobs exits 0" test $? -eq 0
check "4 lines" test "$(wc -l <"$TMP/i.out")" -eq 4
# per line: chosen token == first top id, chosen logprob == first top logprob, sorted, <= 0, sum p <= 1
check "top lists are consistent" awk '
    { tok = $0; sub(/.*"token": /, "", tok); sub(/,.*/, "", tok)
      lp = $0; sub(/.*"logprob": /, "", lp); sub(/,.*/, "", lp)
      top = $0; sub(/.*"top": \[\[/, "", top); sub(/\]\]}$/, "", top)
      n = split(top, e, /\], \[/); if (n != 5) bad = 1
      split(e[1], f, /, /); if (f[1] != tok || f[2] != lp) bad = 1
      prev = 1; s = 0
      for (i = 1; i <= n; i++) { split(e[i], f, /, /); if (f[2] > prev || f[2] > 0) bad = 1; prev = f[2]; s += exp(f[2]) }
      if (s > 1.000001) bad = 1 }
    END { exit bad }' "$TMP/i.out"
exit $fail
