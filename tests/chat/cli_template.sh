#!/usr/bin/env bash
# cli_template: `llm170 template` renders committed fixtures byte-identically to jinja2 (the expected
# files come from scripts/gen_chat_fixtures.py; strftime_now is not used by these templates), built-in
# fallbacks render, and bad input fails with a message. Usage: cli_template.sh path/to/llm170
set -u
BIN=$1
F=tests/chat/fixtures
fail=0
pass=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

check() { # name, command status, expected file, actual file
    if [ "$2" -eq 0 ] && cmp -s "$3" "$4"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $1 (status $2)"
        diff <(head -c 400 "$3") <(head -c 400 "$4") | head -10
    fi
}

"$BIN" template --template $F/templates/Qwen3.5-4B.jinja --messages $F/conv/tools.json \
    --tools $F/conv/functions.json --add-generation-prompt --enable-thinking --bos '<s>' --eos '</s>' > "$TMP/out"
check "Qwen3.5 tools + thinking" $? "$F/expected/Qwen3.5-4B.tools.gT.txt" "$TMP/out"
"$BIN" template --template $F/templates/google-gemma-2-2b-it.jinja --messages $F/conv/nosystem.json \
    --add-generation-prompt --bos '<s>' --eos '</s>' > "$TMP/out"
check "gemma-2 user turn" $? "$F/expected/google-gemma-2-2b-it.nosystem.g.txt" "$TMP/out"
"$BIN" template --template $F/templates/deepseek-ai-DeepSeek-V3.1.jinja --messages $F/conv/thinking.json \
    --bos '<s>' --eos '</s>' > "$TMP/out"
check "DeepSeek-V3.1 thinking" $? "$F/expected/deepseek-ai-DeepSeek-V3.1.thinking.-.txt" "$TMP/out"

printf '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n' > "$TMP/want"
printf '[{"role": "user", "content": "Hi"}]' > "$TMP/conv.json"
"$BIN" template --builtin chatml --messages "$TMP/conv.json" --add-generation-prompt > "$TMP/out"
check "builtin chatml" $? "$TMP/want" "$TMP/out"

# errors: a model without a template names the fallbacks; a template error names the line
"$BIN" template --model tests/tokenizer/fixtures/gpt-2.gguf --messages "$TMP/conv.json" >/dev/null 2>"$TMP/err"
if [ $? -eq 1 ] && grep -q 'no tokenizer.chat_template' "$TMP/err" && grep -q chatml "$TMP/err"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL model without template"; cat "$TMP/err"; fi
printf 'ok\n{%% for x in %%}' > "$TMP/bad.jinja"
"$BIN" template --template "$TMP/bad.jinja" --messages "$TMP/conv.json" >/dev/null 2>"$TMP/err"
if [ $? -eq 1 ] && grep -q 'line 2' "$TMP/err"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL syntax error message"; cat "$TMP/err"; fi
"$BIN" template --builtin chatml >/dev/null 2>&1
if [ $? -eq 2 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL usage"; fi

echo "cli_template: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
