#!/usr/bin/env bash
# cli_run: `llm170 run`, the terminal chat, on tiny fixture models (greedy, so every output is
# reproducible): --prompt gives one answer and exits; its answer is the same as the first reply of the
# interactive chat; /exit and EOF on stdin end the chat with status 0 and no further reply; a second turn
# reuses the KV cache when the template re-renders the first turn unchanged; bad input fails with a
# message and the documented exit code. $1 is the llm170 binary.
set -u
BIN=${1:?usage: cli_run.sh path/to/llm170}
Q35=tests/models/fixtures/qwen35-f16.gguf   # has its own (Qwen3.5) chat template
G3=tests/models/fixtures/gemma3-f16.gguf
LL=tests/models/fixtures/llama-f16.gguf
TMP=$(mktemp -d /tmp/llm170_cli_run.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
run() { "$BIN" run --temp 0 -n 12 -t 1 "$@"; }

# --prompt: one answer, then exit
run --model "$Q35" --prompt "hello" >"$TMP/p1.out" 2>"$TMP/p1.err"
check "--prompt exits 0" test $? -eq 0
check "--prompt prints an answer" test "$(wc -c <"$TMP/p1.out")" -gt 1
check "--prompt prints no chat prompt" bash -c "! grep -q '^> ' '$TMP/p1.out'"
run --model "$Q35" --prompt "hello" >"$TMP/p2.out" 2>/dev/null
check "greedy --prompt is reproducible" cmp -s "$TMP/p1.out" "$TMP/p2.out"

# /exit: the first reply equals the --prompt answer; nothing is generated for /exit or after it
printf 'hello\n/exit\nnever answered\n' | run --model "$Q35" --verbose >"$TMP/i.out" 2>"$TMP/i.err"
check "/exit exits 0" test $? -eq 0
check "the chat's first reply equals --prompt's answer" \
    bash -c "printf '> %s\\n> ' \"\$(cat '$TMP/p1.out')\" | cmp -s - '$TMP/i.out'"
check "exactly one reply before /exit" test "$(grep -c '^\[prefill' "$TMP/i.err")" -eq 1

# EOF on stdin ends the chat after answering what was read
printf 'hello\nhow are you' | run --model "$Q35" --verbose >"$TMP/e.out" 2>"$TMP/e.err"
check "EOF exits 0" test $? -eq 0
check "both lines answered before EOF" test "$(grep -c '^\[prefill' "$TMP/e.err")" -eq 2
: | run --model "$Q35" >/dev/null 2>&1
check "EOF at once exits 0" test $? -eq 0

# KV reuse: chatml re-renders turn 1 unchanged (with a 3-token reply that survives detokenize/tokenize),
# so turn 2 prefills only what is new, and answers exactly as when the whole conversation is prefilled;
# on the recurrent qwen35 (its GDN state carries over) and on the attention-only llama
for m in "$Q35" "$LL"; do
    printf 'hello\nagain\nthird\n' | run --model "$m" --template chatml -n 3 --verbose >"$TMP/g.out" 2>"$TMP/g.err"
    check "$m: chatml chat exits 0" test $? -eq 0
    check "$m: turn 1 reuses nothing" bash -c "sed -n 1p <(grep '^\[prefill' '$TMP/g.err') | grep -q '(0 reused)'"
    check "$m: turn 2 reuses the cache" bash -c "sed -n 2p <(grep '^\[prefill' '$TMP/g.err') | grep -Eq '\([1-9][0-9]* reused\)'"
    printf 'hello\nagain\nthird\n' | run --model "$m" --template chatml -n 3 --no-reuse >"$TMP/n.out" 2>/dev/null
    check "$m: replies with reuse = replies with full prefill" cmp -s "$TMP/g.out" "$TMP/n.out"
done
printf '/reset\nagain\n' | run --model "$G3" --verbose >/dev/null 2>"$TMP/r.err"
check "/reset forgets the conversation" grep -q 'conversation cleared' "$TMP/r.err"

# bad input
"$BIN" run --model /nonexistent.gguf --prompt hi >/dev/null 2>"$TMP/bad.err"
check "a missing model exits 1" test $? -eq 1
check "a missing model is named" grep -q 'nonexistent.gguf' "$TMP/bad.err"
"$BIN" run --prompt hi >/dev/null 2>"$TMP/usage.err"
check "no --model exits 2" test $? -eq 2
"$BIN" run --model "$Q35" --ctx-size 16 --prompt "a prompt far too long for sixteen tokens of context, surely" \
    >/dev/null 2>"$TMP/ctx.err"
check "an over-long prompt exits 1" test $? -eq 1
check "an over-long prompt says why" grep -q 'no longer fits the context' "$TMP/ctx.err"
exit $fail
