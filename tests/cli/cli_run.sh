#!/usr/bin/env bash
# cli_run: `llm170 run`, the terminal chat, on tiny fixture models (greedy, so every output is
# reproducible): --prompt gives one answer and exits; its answer is the same as the first reply of the
# interactive chat; /exit and EOF on stdin end the chat with status 0 and no further reply; a second turn
# reuses the KV cache when the template re-renders the first turn unchanged; bad input fails with a
# message and the documented exit code; a file without a chat template runs as plain continuation with a
# bounded reply; replies stop at end-of-turn tokens; a full context drops the oldest turns (the system
# prompt kept) and the chat goes on, also in the middle of a reply; --verbose and /stats print rates;
# short model names go through scripts/get-model.sh. $1 is the llm170 binary.
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

# A file without a chat template: the fixture with its tokenizer.chat_template key renamed (same length,
# so every offset stays valid). Plain continuation, said so, each reply at most 256 tokens unless -n.
NT="$TMP/no-template.gguf"
perl -pe 's/tokenizer\.chat_template/tokenizer.chat_templatX/g' "$LL" >"$NT"
printf 'hi\n' | run --model "$NT" -n -1 --verbose >/dev/null 2>"$TMP/nt0.err" # -n -1: unbounded, as asked
printf 'hi\n' | "$BIN" run --model "$NT" --temp 0 -t 1 --verbose >"$TMP/nt.out" 2>"$TMP/nt.err"
check "no template: exits 0" test $? -eq 0
check "no template: says it continues plain text" grep -q 'no chat template.*plain text continuation' "$TMP/nt.err"
check "no template: no note when --template is given" \
    bash -c "printf 'hi\n' | '$BIN' run --model '$NT' --template chatml --temp 0 -n 4 -t 1 2>&1 >/dev/null | grep -vq 'no chat template'"
ends=0; limits=0; over=0
for p in hi hello 'the cat' 'once upon a time' abc 'x y z' 1 test; do
    printf '%s\n' "$p" | "$BIN" run --model "$NT" --temp 0 -t 1 --verbose >/dev/null 2>"$TMP/ntp.err"
    g=$(grep -ao 'generated [0-9]* tokens' "$TMP/ntp.err" | grep -o '[0-9]*')
    [ "${g:-999}" -gt 256 ] && over=$((over + 1))
    grep -aq 'length limit (256 tokens' "$TMP/ntp.err" && limits=$((limits + 1))
    grep -aqE 'end of turn \((<\|endoftext\|>|<\|im_end\|>), token' "$TMP/ntp.err" && ends=$((ends + 1))
done
check "no template: no reply passes 256 tokens" test $over -eq 0
check "no template: some replies end at the 256-token bound" test $limits -gt 0
check "replies stop at end-of-turn tokens (<|endoftext|>, <|im_end|>)" test $ends -gt 0
check "-n -1 lifts the bound" bash -c "! grep -q 'length limit' '$TMP/nt0.err'"

# A full context: before a turn (the conversation would leave less than a quarter for the reply) the
# oldest turns go, the system prompt stays, every turn is answered.
printf 'hi\nhello there\nthird turn\nfourth turn\n' |
    run --model "$LL" -c 64 -n 12 --system "be brief" --verbose >/dev/null 2>"$TMP/full.err"
check "full context: exits 0" test $? -eq 0
check "full context: every turn answered" test "$(grep -ac '^\[prefill' "$TMP/full.err")" -eq 4
check "full context: oldest turns dropped, system prompt kept" \
    grep -aq 'dropped the [0-9]* oldest messages to make room; the system prompt is kept' "$TMP/full.err"
# ... and during a reply: the reply so far is kept and generation goes on to its -n. Which -n overflows
# in the middle of the second reply depends on the replies' lengths once re-tokenized: try a few.
mid=0; short=0
for n in 38 40 42 44 46; do
    printf 'hi\nhello\n' | run --model "$LL" -c 128 -n $n --verbose >/dev/null 2>"$TMP/mid.err"
    if grep -aq 'context full during the reply: dropped' "$TMP/mid.err"; then
        mid=$((mid + 1))
        [ "$(grep -ao 'generated [0-9]* tokens' "$TMP/mid.err" | tail -1)" = "generated $n tokens" ] || short=1
    fi
done
check "full context during a reply: happens for some -n" test $mid -gt 0
check "full context during a reply: the reply goes on to -n" test $short -eq 0
printf 'hi\n' | run --model "$LL" -c 32 -n 100 --verbose >/dev/null 2>"$TMP/alone.err"
check "a reply that fills the context alone stops and says so" grep -aq 'context full: 32 tokens, and no older turn' "$TMP/alone.err"

# rates: --verbose after each reply, /stats for the last one
printf 'hello\n/stats\n' | run --model "$Q35" >/dev/null 2>"$TMP/stats.err"
check "/stats prints prompt and generation rates" \
    grep -aqE '^\[prefill [0-9]+ tokens \(0 reused\) in [0-9.]+ s, [0-9.]+ tok/s; generated [0-9]+ tokens in [0-9.]+ s, [0-9.]+ tok/s' "$TMP/stats.err"
printf '/stats\n' | run --model "$Q35" >/dev/null 2>"$TMP/stats0.err"
check "/stats before any reply says so" grep -aq 'no reply yet' "$TMP/stats0.err"

# short names: resolved by scripts/get-model.sh beside the binary; unknown ones and a binary without its
# source tree are refused with a message
"$BIN" run --list >"$TMP/list.out" 2>&1
check "--list exits 0" test $? -eq 0
check "--list names the default model with its size" grep -q '^qwen2.5-coder-0.5b *491 MB' "$TMP/list.out"
"$BIN" run --model no-such-model --prompt hi >/dev/null 2>"$TMP/name.err"
check "an unknown short name exits 1" test $? -eq 1
check "an unknown short name lists the known ones" grep -q 'known: qwen2.5-coder-0.5b' "$TMP/name.err"
cp "$BIN" "$TMP/llm170-alone"
"$TMP/llm170-alone" run --model qwen2.5-coder-0.5b --prompt hi >/dev/null 2>"$TMP/alone-bin.err"
check "a binary away from its source tree refuses short names" test $? -eq 1
check "... and says what to do" grep -q 'Pass the path of a .gguf file' "$TMP/alone-bin.err"
exit $fail
