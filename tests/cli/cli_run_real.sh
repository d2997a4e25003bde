#!/usr/bin/env bash
# cli_run_real: `llm170 run` with the default model, Qwen2.5-Coder-0.5B-Instruct (real weights, fetched by
# scripts/get-model.sh on first use; the test is skipped, exit 77, if it cannot be fetched). Greedy, so
# the answers are reproducible: a one-shot --prompt answers the France question with Paris and stops at
# the model's end-of-turn token <|im_end|>; a two-turn chat by short name answers both questions, reuses
# the first turn's cache, and /exit ends it with status 0. $1 is the llm170 binary.
set -u
BIN=${1:?usage: cli_run_real.sh path/to/llm170}
NAME=qwen2.5-coder-0.5b
if ! scripts/get-model.sh "$NAME" >/dev/null 2>&1; then
    echo "SKIP: $NAME could not be fetched (offline?); run scripts/get-model.sh $NAME"
    exit 77
fi
TMP=$(mktemp -d /tmp/llm170_cli_run_real.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

"$BIN" run --model "$NAME" --temp 0 -t 2 --verbose --prompt "What is the capital of France?" >"$TMP/p.out" 2>"$TMP/p.err"
check "--prompt exits 0" test $? -eq 0
check "the answer names Paris" grep -q 'Paris' "$TMP/p.out"
check "the reply ends at <|im_end|>" grep -q 'end of turn (<|im_end|>' "$TMP/p.err"
check "the reply is short (no loop)" test "$(grep -o 'generated [0-9]* tokens' "$TMP/p.err" | grep -o '[0-9]*')" -lt 40

printf 'What is the capital of France?\nAnd of Germany?\n/exit\nnever answered\n' |
    "$BIN" run --model "$NAME" --temp 0 -t 2 --verbose >"$TMP/c.out" 2>"$TMP/c.err"
check "the chat exits 0" test $? -eq 0
check "two replies, none after /exit" test "$(grep -c '^\[prefill' "$TMP/c.err")" -eq 2
check "turn 1 names Paris" bash -c "sed -n 1p '$TMP/c.out' | grep -q Paris"
check "turn 2 names Berlin" bash -c "sed -n 2p '$TMP/c.out' | grep -q Berlin"
check "turn 2 reuses turn 1's cache" bash -c "grep '^\[prefill' '$TMP/c.err' | sed -n 2p | grep -Eq '\([1-9][0-9]* reused\)'"
if [ $fail -ne 0 ]; then
    echo "--- stdout"; cat "$TMP/c.out"; echo "--- stderr"; cat "$TMP/c.err"
fi
exit $fail
