#!/usr/bin/env bash
# cli_synth_qwen4exp: `llm170 synth --preset tiny-qwen4exp` files are qwen4exp models our engine loads and
# runs (infer and bench, every mix synth writes); gguf-dump names the qwen4exp keys; a batch of two prompts
# gives each the stream it gets alone (selection binds: budget 16 tokens, prompts of 40); the published
# shape is listed at its spec size; bad input fails with a message. When llama.cpp's binaries are there
# ($LLAMA_BIN, default .cache/llamacpp/build-0.3.36-cpu/bin), llama-bench loads the Q4_K_M and iq1_s files too (it
# checks every tensor's shape against the hyperparameters). $1 is the llm170 binary.
set -u
BIN=${1:?usage: cli_synth_qwen4exp.sh path/to/llm170}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LLAMA_BIN=${LLAMA_BIN:-$ROOT/.cache/llamacpp/build-0.3.36-cpu/bin}
TMP=$(mktemp -d /tmp/llm170_cli_q4x.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

p40=$(seq -s, 3 42)
# iq1_s+: the mix of the published-shape run (docs/qwen4exp.md): iq1_s with the experts' down projections in Q1_0
for t in f32 f16 q8_0 q4_0 q4_k_m q2_k iq2_xxs iq1_s iq1_s+; do
    ov=(); [ "$t" = iq1_s+ ] && ov=(--tensor-type ffn_down_exps=q1_0)
    "$BIN" synth --preset tiny-qwen4exp --out "$TMP/$t.gguf" --type "${t%+}" "${ov[@]}" --seed 5 2>"$TMP/synth.err"
    check "synth tiny-qwen4exp $t exits 0" test $? -eq 0
    "$BIN" infer --model "$TMP/$t.gguf" --prompt-tokens "$p40" --n-predict 6 --ignore-eos -t 2 >"$TMP/$t.out" 2>"$TMP/$t.err"
    check "infer on the $t file exits 0 ($(tail -1 "$TMP/$t.err"))" test $? -eq 0
    check "infer on the $t file gives 6 tokens" test "$(grep -c '"seq": 0' "$TMP/$t.out")" = 6
done

# batch = alone on the Q4_K_M file (selection active: 40-token prompts, 4 blocks selected of up to 10)
"$BIN" infer --model "$TMP/q4_k_m.gguf" --prompt-tokens "$p40" --prompt-tokens "$(seq -s, 100 139)" --n-predict 6 \
    --ignore-eos -t 2 >"$TMP/batch.out" 2>&1
"$BIN" infer --model "$TMP/q4_k_m.gguf" --prompt-tokens "$(seq -s, 100 139)" --n-predict 6 --ignore-eos -t 1 \
    >"$TMP/alone.out" 2>&1
check "a prompt in a batch of two gets the stream it gets alone" \
    test "$(grep '"seq": 1' "$TMP/batch.out" | grep -o '"token": [0-9]*')" = "$(grep -o '"token": [0-9]*' "$TMP/alone.out")"

"$BIN" bench -m "$TMP/q4_k_m.gguf" -p 32 -n 4 -r 1 -t 2 >"$TMP/bench.out" 2>&1
check "bench runs on the Q4_K_M file" grep -Eq '\| +tg4 +\|' "$TMP/bench.out"

"$BIN" gguf-dump --meta-only "$TMP/q4_k_m.gguf" >"$TMP/dump.out" 2>&1
check "gguf-dump exits 0" test $? -eq 0
for k in 'hyper_connection.count +uint32 +2 +# hyper-connection residual streams S' \
         'hyper_connection.low_rank +uint32 +64 +# ' \
         'attention.indexer.head_count +uint32 +4 +# QSA' 'attention.indexer.key_length +uint32 +64 +# ' \
         'attention.indexer.top_k +uint32 +16 +# QSA token budget' \
         'attention.compress_ratios +\[int32 x 4\] 0, 0, 0, 4 +# ' 'ple.layers +\[int32 x 1\] 1 +# ' \
         'ple.ngram_size +uint32 +3 +# ' 'ple.heads_per_ngram +uint32 +2 +# ' 'ple.conv_kernel +uint32 +4 +# ' \
         'ple.layer_multipliers +\[uint64 x 3\] [0-9]+, [0-9]+, [0-9]+ +# ' \
         'ple.head_offsets +\[uint64 x 4\] 0, 1009, 2022, 3041 +# ' \
         'ple.head_vocab_sizes +\[uint64 x 4\] 1009, 1013, 1019, 1021 +# ' 'ple.eos_token_id +uint32 +2016 +# ' \
         'ple.image_token_id +uint32 +2028 +# ' 'embedding_length_per_layer_input +uint32 +64 +# PLE table row width'; do
    check "gguf-dump names qwen4exp.${k%% *}" grep -Eq "^  qwen4exp\.$k" "$TMP/dump.out"
done

"$BIN" synth --list >"$TMP/list.out" 2>&1
check "synth --list has the published shape (176.94 B parameters)" \
    grep -Eq '^qwen4exp-flash-next +qwen4exp +1769[0-9]{8}' "$TMP/list.out"
check "synth --list has the small preset" grep -q '^qwen4exp-small ' "$TMP/list.out"

check "the iq1_s+ file records its override" grep -aq 'type iq1_s --tensor-type ffn_down_exps=Q1_0 --seed 5' "$TMP/iq1_s+.gguf"
"$BIN" synth --preset tiny-qwen4exp --type iq1_s --tensor-type ffn_down_exps --out "$TMP/x.gguf" >"$TMP/o" 2>"$TMP/e"
check "--tensor-type without =TYPE exits 2 and says so" bash -c "test $? -eq 2 && grep -q 'expects NAME=TYPE' '$TMP/e'"
"$BIN" synth --preset tiny-qwen4exp --type f16 --tensor-type ffn_down_exps=q1_0 --out "$TMP/x.gguf" >"$TMP/o" 2>"$TMP/e"
check "--tensor-type under a converter mix exits 2" bash -c "test $? -eq 2 && grep -q 'needs a llama-quantize mix' '$TMP/e'"
"$BIN" synth --preset tiny-qwen4exp --type iq1_s --tensor-type per_layer=q1_0 --out "$TMP/x.gguf" >"$TMP/o" 2>"$TMP/e"
check "an override no row fits fails with the tensor's name" \
    bash -c "test $? -eq 1 && grep -q 'per_layer_token_embd.weight: rows of 64' '$TMP/e'"

# bad input: a qwen4exp file with a block's tensor cut off is refused with its name
"$BIN" synth --preset tiny-qwen4exp --type q5_x --out "$TMP/x.gguf" >"$TMP/o" 2>"$TMP/e"
check "unknown --type exits 2 and says so" bash -c "test $? -eq 2 && grep -q \"unknown --type 'q5_x'\" '$TMP/e'"
head -c 60000 "$TMP/q4_k_m.gguf" >"$TMP/cut.gguf"
"$BIN" infer --model "$TMP/cut.gguf" --prompt-tokens 1,2 --n-predict 1 >"$TMP/o" 2>"$TMP/e"
check "a truncated file is refused with a message" bash -c "test $? -ne 0 && test -s '$TMP/e'"

if [ -x "$LLAMA_BIN/llama-bench" ]; then
    "$LLAMA_BIN/llama-bench" -m "$TMP/q4_k_m.gguf" -p 16 -n 4 -r 1 -t 2 -o md >"$TMP/lb.out" 2>&1
    check "llama-bench loads and runs the Q4_K_M file" grep -Eq '^\| qwen4exp .*\| +tg4 +\|' "$TMP/lb.out"
    "$LLAMA_BIN/llama-bench" -m "$TMP/iq1_s+.gguf" -p 16 -n 4 -r 1 -t 2 -o md >"$TMP/lb1.out" 2>&1
    check "llama-bench loads and runs the iq1_s + Q1_0 file" grep -Eq '^\| qwen4exp .*\| +tg4 +\|' "$TMP/lb1.out"
else
    echo "skip: no llama-bench in $LLAMA_BIN (set LLAMA_BIN)"
fi
exit $fail
