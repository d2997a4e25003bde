#!/usr/bin/env bash
# synth-llamacpp-check: proof that `llm170 synth` files are real models to llama.cpp. For each preset it
# synthesizes a Q4_K_M file, runs llama-bench on it (llama.cpp loads every tensor and checks each
# shape against the hyperparameters before it runs anything), records the result and deletes the file.
#
# usage: scripts/synth-llamacpp-check.sh [PRESET...]     (default: every preset, smallest first)
# env:   LLM170=path/to/llm170            (default build/llm170)
#        LLAMA_BIN=llama.cpp bin folder    (default .cache/llamacpp/build-0.3.36-cpu/bin)
#        SYNTH_DIR=where files are written (default .cache/synth; each is deleted after its run)
#        THREADS=2  GEN=4  GEN_BIG=1 (tokens generated for presets over 10 GB)  TYPE=q4_k_m
#        MTP_MAX_GB=2 (qwen35* files up to this size also run llama-cli --spec-type draft-mtp, which
#                      loads the MTP block blk.N.nextn.* with its shapes checked and drafts with it;
#                      llama-bench skips MTP tensors; -c 512 keeps the KV cache small)
# Output: one markdown row per preset and test (file size, synth time, llama-bench pp/tg rows, MTP
# result) on stdout, and the full logs in $SYNTH_DIR/logs/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLM170=${LLM170:-$ROOT/build/llm170}
LLAMA_BIN=${LLAMA_BIN:-$ROOT/.cache/llamacpp/build-0.3.36-cpu/bin}
SYNTH_DIR=${SYNTH_DIR:-$ROOT/.cache/synth}
THREADS=${THREADS:-2}
GEN=${GEN:-4}
GEN_BIG=${GEN_BIG:-1}
TYPE=${TYPE:-q4_k_m}
MTP_MAX_GB=${MTP_MAX_GB:-2}
PRESETS=("$@")
[ ${#PRESETS[@]} -gt 0 ] || PRESETS=(tiny-llama tiny-qwen2 tiny-qwen35 tiny-qwen35moe tiny-qwen4exp qwen25-0.5b qwen35-0.8b qwen4exp-small llama-8b qwen35-9b qwen35-27b qwen35moe-35b-a3b qwen4exp-flash-next)

[ -x "$LLM170" ] || { echo "no llm170 binary at $LLM170 (set LLM170=...)" >&2; exit 1; }
[ -x "$LLAMA_BIN/llama-bench" ] || { echo "no llama-bench in $LLAMA_BIN (scripts/llamacpp-build.sh builds it)" >&2; exit 1; }
mkdir -p "$SYNTH_DIR/logs"

echo "| preset | file | synth s | llama-bench model | size | params | test | t/s | MTP draft |"
echo "|---|---|---|---|---|---|---|---|---|"
status=0
for p in "${PRESETS[@]}"; do
    f="$SYNTH_DIR/$p-$TYPE.gguf"
    # the data size from --list (GB) decides the generation length and whether the disk has room
    gb=$("$LLM170" synth --list | awk -v p="$p" -v t="$TYPE" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == t) col = i }
        $1 == p { print $(2 * col - 4) }')
    avail_gb=$(df -P -BG "$SYNTH_DIR" | awk 'NR == 2 { sub("G", "", $4); print $4 }')
    if [ -n "$gb" ] && awk -v g="$gb" -v a="$avail_gb" 'BEGIN { exit !(g + 5 > a) }'; then
        echo "| $p | skipped: needs ${gb} GB, ${avail_gb} GB free | | | | | | | |"
        continue
    fi
    n=$GEN
    if [ -n "$gb" ] && awk -v g="$gb" 'BEGIN { exit !(g > 10) }'; then n=$GEN_BIG; fi
    t0=$(date +%s.%N)
    if ! "$LLM170" synth --preset "$p" --type "$TYPE" --out "$f" 2>"$SYNTH_DIR/logs/$p.synth.log"; then
        echo "| $p | synth failed: $(tail -1 "$SYNTH_DIR/logs/$p.synth.log") | | | | | | | |"
        status=1
        continue
    fi
    t1=$(date +%s.%N)
    size=$(stat -c %s "$f")
    # MTP: llama-cli with the MTP drafter loads blk.N.nextn.* (shape-checked) and runs it
    mtp="-"
    if [[ $p == qwen35* || $p == tiny-qwen35* ]] && awk -v g="$gb" -v m="$MTP_MAX_GB" 'BEGIN { exit !(g <= m) }'; then
        if timeout 600 "$LLAMA_BIN/llama-cli" -m "$f" --spec-type draft-mtp -c 512 -p hello -n 4 -t "$THREADS" \
            --single-turn --no-warmup -v </dev/null >"$SYNTH_DIR/logs/$p.mtp.log" 2>&1 &&
            grep -aq "mtp_h_input" "$SYNTH_DIR/logs/$p.mtp.log"; then
            mtp="ok"
        else
            mtp="FAILED"
            status=1
        fi
    fi
    log="$SYNTH_DIR/logs/$p.bench.log"
    if "$LLAMA_BIN/llama-bench" -m "$f" -p 16 -n "$n" -r 1 -t "$THREADS" -o md >"$log" 2>&1; then
        grep -E '^\| .*\| +(pp|tg)[0-9]+ ' "$log" | while IFS='|' read -r _ model msize params _backend _thr test tps _; do
            printf '| %s | %.3f GB | %.1f | %s | %s | %s | %s | %s | %s |\n' "$p" "$(awk -v s="$size" 'BEGIN { print s / 1e9 }')" \
                "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$(echo $model)" "$(echo $msize)" "$(echo $params)" \
                "$(echo $test)" "$(echo $tps)" "$mtp"
        done
    else
        echo "| $p | $(awk -v s="$size" 'BEGIN { printf "%.3f", s / 1e9 }') GB | | llama-bench FAILED: $(grep -m1 -iE 'error|failed' "$log") | | | | | $mtp |"
        status=1
    fi
    rm -f "$f"
done
exit $status
