#!/usr/bin/env bash
# Regenerates the golden files of tests/crosscheck (test_crosscheck_golden, cli_perplexity_real) with
# llama.cpp: builds it from the llama-cpp-python sdist (scripts/llamacpp-build.sh, into .cache/), fetches
# the pinned models (scripts/get-model.sh), then for each model writes tests/crosscheck/NAME.golden:
# llama-server's greedy 64-token streams with top-6 logprobs for tests/crosscheck/prompts.txt, and
# llama-perplexity's figures on tests/crosscheck/genesis-kjv-1-24.txt at n_ctx 512 over every chunk and
# over the first 16 (scripts/crosscheck.py --write-ref --ref-only --ppl-chunks 0,16). About 10 minutes per
# model on 2 cores, plus the llama.cpp build once.
#   scripts/crosscheck-golden.sh [NAME...]     NAME: gemma3-270m, qwen2.5-coder-0.5b (default: both)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(gemma3-270m qwen2.5-coder-0.5b)
bin=$(scripts/llamacpp-build.sh llama-perplexity llama-server | tail -1)
for name in "${names[@]}"; do
  model=$(scripts/get-model.sh "$name" | tail -1)
  echo "== $name: $model" >&2
  scripts/crosscheck.py --model "$model" --llm170 build/llm170 --llamacpp-bin "$bin" -t 2 \
      --ppl-file tests/crosscheck/genesis-kjv-1-24.txt --ppl-chunks 0,16 --write-ref "tests/crosscheck/$name.golden" --ref-only
  echo "wrote tests/crosscheck/$name.golden ($(grep '^ppl' "tests/crosscheck/$name.golden"))" >&2
done
