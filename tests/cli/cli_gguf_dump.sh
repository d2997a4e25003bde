#!/usr/bin/env bash
# cli_gguf_dump: `llm170 synth` writes a tiny model and `llm170 gguf-dump` describes it; bad inputs
# (a missing file, a file that is not GGUF, no argument) fail with a message and the documented exit
# code, without crashing. $1 is the llm170 binary.
set -u
BIN=${1:?usage: cli_gguf_dump.sh path/to/llm170}
TMP=$(mktemp -d /tmp/llm170_cli_dump.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

"$BIN" synth --preset tiny-qwen35 --out "$TMP/m.gguf" --type q4_k_m --seed 3 2>"$TMP/synth.err"
check "synth tiny-qwen35 exits 0" test $? -eq 0
"$BIN" gguf-dump "$TMP/m.gguf" >"$TMP/dump.out" 2>"$TMP/dump.err"
check "gguf-dump exits 0" test $? -eq 0
check "prints the architecture" grep -q '^architecture: qwen35$' "$TMP/dump.out"
check "prints a hyperparameter" grep -Eq 'qwen35\.ssm\.group_count +uint32 +2$' "$TMP/dump.out"
check "prints a tensor line" grep -Eq '^  blk\.0\.attn_qkv\.weight +Q5_K +\[256, 1024\] +' "$TMP/dump.out"
check "prints the mix" grep -Eq '^  Q4_K +[0-9]+ ' "$TMP/dump.out"
check "prints the total bpw" grep -q 'bits per weight' "$TMP/dump.out"
check "prints the tokenizer" grep -Eq '^  eos_token_id +[0-9]+ "<\|im_end\|>"' "$TMP/dump.out"
check "prints the merges count" grep -Eq '^  merges +1760$' "$TMP/dump.out"

"$BIN" gguf-dump --meta-only "$TMP/m.gguf" >"$TMP/meta.out" 2>&1
check "--meta-only exits 0" test $? -eq 0
check "--meta-only has no tensor table" bash -c "! grep -q 'attn_qkv.weight' '$TMP/meta.out'"
"$BIN" gguf-dump --all-tokens "$TMP/m.gguf" >"$TMP/all.out" 2>&1
check "--all-tokens lists the last token" grep -Eq '^ +2047  unused +"\[PAD2047\]"' "$TMP/all.out"

"$BIN" gguf-dump "$TMP/missing.gguf" >"$TMP/o" 2>"$TMP/e"
check "missing file exits 1" test $? -eq 1
check "missing file says why" grep -q "missing.gguf" "$TMP/e"
head -c 4096 /dev/urandom >"$TMP/junk.bin"
"$BIN" gguf-dump "$TMP/junk.bin" >"$TMP/o" 2>"$TMP/e"
check "non-GGUF file exits 1" test $? -eq 1
check "non-GGUF file says why" grep -q "junk.bin" "$TMP/e"
: >"$TMP/empty.gguf"
"$BIN" gguf-dump "$TMP/empty.gguf" >"$TMP/o" 2>"$TMP/e"
check "empty file exits 1" test $? -eq 1
"$BIN" gguf-dump >"$TMP/o" 2>"$TMP/e"
check "no argument exits 2" test $? -eq 2
"$BIN" synth --preset no-such-model --out "$TMP/x.gguf" >"$TMP/o" 2>"$TMP/e"
check "unknown preset exits 2" test $? -eq 2
"$BIN" synth --list >"$TMP/list.out" 2>&1
check "synth --list names the presets" grep -q '^qwen35-27b ' "$TMP/list.out"

exit $fail
