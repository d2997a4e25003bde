#!/usr/bin/env bash
# Writes the golden files of tests/crosscheck/test_crosscheck_mtp.c: llama.cpp's MTP (nextn) logits on synth
# qwen35 / qwen35moe files (tests/crosscheck/mtp_llamacpp.cpp, compiled here against a llama.cpp build from
# the llama-cpp-python sdist, scripts/llamacpp-build.sh). Each case: PRESET MIX SYNTH_SEED; the prompt is
# 48 random tokens from seed 1 (the generator's LCG). Needs build/llm170 (synth) and build/tests.
#   scripts/mtp-golden.sh            rewrite tests/crosscheck/*.mtp
#   scripts/mtp-golden.sh --sweep    prompt seeds 1..8 for each case into a temporary folder, each checked by
#                                    test_crosscheck_mtp with a huge tolerance: the error spread the
#                                    tolerances come from (nothing in the tree changes)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=$(scripts/llamacpp-build.sh llama | tail -1)
lb=$(dirname "$bin")
src=.cache/llamacpp/src-${LLAMACPP_PY_VERSION:-0.3.36}/vendor/llama.cpp
gen=.cache/llamacpp/mtp_llamacpp
g++ -O2 -std=c++17 -I "$src/include" -I "$src/src" -I "$src/ggml/include" tests/crosscheck/mtp_llamacpp.cpp -o "$gen" \
  "$lb/src/libllama.a" "$lb/ggml/src/libggml.a" "$lb/ggml/src/libggml-cpu.a" "$lb/ggml/src/libggml-base.a" \
  -fopenmp -lpthread -ldl
cases=("tiny-qwen35 f32 1" "tiny-qwen35moe f32 1" "tiny-qwen35moe q4_k_m 1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in "${cases[@]}"; do
  read -r preset mix seed <<<"$c"
  build/llm170 synth --preset "$preset" --type "$mix" --seed "$seed" --out "$tmp/m.gguf" >/dev/null
  if [ "${1:-}" = "--sweep" ]; then
    for s in 1 2 3 4 5 6 7 8; do
      "$gen" "$tmp/m.gguf" "$s" 48 > "$tmp/g.golden" 2>/dev/null
      build/tests/test_crosscheck_mtp "$tmp/g.golden" "$preset" "$mix" "$seed" 1e9 | grep 'MTP rows' | sed "s/^/prompt seed $s: /"
    done
  else
    out=tests/crosscheck/$preset-$mix.mtp
    "$gen" "$tmp/m.gguf" 1 48 2>/dev/null | sed "s|$tmp/m.gguf|$preset $mix synth seed $seed|" > "$out"
    echo "wrote $out" >&2
  fi
done
