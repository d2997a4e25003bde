#!/usr/bin/env bash
# Side-by-side CPU benchmark: `llm170 bench` and llama.cpp's `llama-bench` on the same GGUF file, the same
# thread count and the same tests, one engine at a time (never both at once: they would evict each other's
# mmapped weights), alternating for ROUNDS rounds; prints both tables and the llm170/llama.cpp ratios.
#   scripts/bench-vs-llamacpp.sh MODEL.gguf [THREADS] [P] [N] [REPS] [ROUNDS]
set -euo pipefail
model=$1; threads=${2:-$(nproc)}; p=${3:-512}; n=${4:-128}; reps=${5:-5}; rounds=${6:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
llm="$root/build/llm170"
[ -x "$llm" ] || { echo "build llm170 first (scripts/test.sh or cmake --build build)" >&2; exit 1; }
lbin=$("$root/scripts/llamacpp-build.sh" 2>/dev/null | tail -1)
out=$(mktemp -d)
for r in $(seq 1 "$rounds"); do
  "$llm" bench -m "$model" -p "$p" -n "$n" -r "$reps" -t "$threads" > "$out/llm170.$r.md"
  "$lbin/llama-bench" -m "$model" -p "$p" -n "$n" -r "$reps" -t "$threads" > "$out/llamacpp.$r.md" 2>/dev/null
done
echo "## llm170 ($(git -C "$root" rev-parse --short HEAD))"; cat "$out/llm170.1.md"
echo; echo "## llama.cpp"; cat "$out/llamacpp.1.md"
echo; echo "## ratio llm170 / llama.cpp (t/s, per round)"
for r in $(seq 1 "$rounds"); do
  for t in "pp$p" "tg$n"; do
    a=$(grep -E "\| +$t \|" "$out/llm170.$r.md" | awk -F'|' '{print $(NF-1)}' | awk '{print $1}')
    b=$(grep -E "\| +$t \|" "$out/llamacpp.$r.md" | awk -F'|' '{print $(NF-1)}' | awk '{print $1}')
    [ -n "$a" ] && [ -n "$b" ] && printf 'round %d %-8s llm170 %8.2f  llama.cpp %8.2f  ratio %.2f\n' "$r" "$t" "$a" "$b" "$(echo "$a / $b" | bc -l)"
  done
done
echo; echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$out"
