#!/usr/bin/env bash
# cli_tokenize: `llm170 tokenize` / `detokenize` on two real vocabularies (llama.cpp's test GGUFs for
# llama-spm and gpt-2, committed under tests/tokenizer/fixtures). Expected ids are HF tokenizers' (the
# same strings appear in the vocabularies' .out references); the rest checks flags, output formats and
# errors. Usage: cli_tokenize.sh path/to/llm170
set -u
BIN=$1
F=tests/tokenizer/fixtures
SPM=$F/llama-spm.gguf
GPT2=$F/gpt-2.gguf
fail=0
pass=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

expect() { # name, expected, actual
    if [ "$2" == "$3" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        printf 'FAIL %s\n  expected: %s\n  found:    %s\n' "$1" "$2" "$3"
    fi
}

expect "spm ids" "[1, 15043, 3186]" "$("$BIN" tokenize --model $SPM --text "Hello world")"
expect "spm --no-bos" "[15043, 3186]" "$("$BIN" tokenize --model $SPM --no-bos --text "Hello world")"
expect "gpt2 ids (no BOS in this vocabulary)" "[15496, 995]" "$("$BIN" tokenize --model $GPT2 --text "Hello world")"
expect "gpt2 parse special" "[15496, 995, 50256]" \
    "$("$BIN" tokenize --model $GPT2 --text "Hello world<|endoftext|>")"
expect "gpt2 --no-parse-special" "[15496, 995, 27, 91, 437, 1659, 5239, 91, 29]" \
    "$("$BIN" tokenize --model $GPT2 --no-parse-special --text "Hello world<|endoftext|>")"
expect "stdin" "[15496, 995]" "$(printf 'Hello world' | "$BIN" tokenize --model $GPT2 --stdin)"
printf ' Hello\n\tworld' > "$TMP/in.txt"
expect "file" "[18435, 198, 197, 6894]" "$("$BIN" tokenize --model $GPT2 --file "$TMP/in.txt")"
expect "show" "$(printf '     1 -> %s\n 15043 -> %s' "'<s>'" "' Hello'")" \
    "$("$BIN" tokenize --model $SPM --text "Hello" --show)"

# invalid UTF-8: replaced by U+FFFD (itself a token, 30140, in this vocabulary), with a note on stderr
expect "invalid utf-8 ids" "[1, 263, 30140, 29890]" \
    "$(printf 'a\xffb' | "$BIN" tokenize --model $SPM --stdin 2>"$TMP/err")"
expect "invalid utf-8 note" "1" "$(grep -c 'replaced by U+FFFD' "$TMP/err")"

# detokenize: ids in the llama-tokenize format or comma-separated; the encoder's space is stripped
expect "detokenize" "<s>Hello world" "$("$BIN" detokenize --model $SPM 1,15043,3186)"
expect "detokenize brackets" "<s>Hello world" "$("$BIN" detokenize --model $SPM "[1, 15043, 3186]")"
expect "detokenize --no-special" "Hello world" "$("$BIN" detokenize --model $SPM --no-special 1,15043,3186)"
expect "round trip gpt2" " Hello
	world" "$("$BIN" detokenize --model $GPT2 18435,198,197,6894)"

# errors: exit status and a message that names the problem
"$BIN" detokenize --model $SPM 1,32000 >/dev/null 2>"$TMP/err"
expect "id out of range status" "1" "$?"
expect "id out of range message" "1" "$(grep -c '32000 is outside the vocabulary' "$TMP/err")"
"$BIN" tokenize --model $SPM >/dev/null 2>&1
expect "no input is a usage error" "2" "$?"
"$BIN" tokenize --model $SPM --text a --stdin >/dev/null 2>&1
expect "two inputs is a usage error" "2" "$?"
"$BIN" tokenize --model "$TMP/missing.gguf" --text a >/dev/null 2>&1
expect "missing model" "1" "$?"
expect "help lists pre-tokenizers" "1" "$("$BIN" tokenize --help | grep -c 'qwen35')"

echo "cli_tokenize: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
