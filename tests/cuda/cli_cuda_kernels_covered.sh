#!/usr/bin/env bash
# Every CUDA kernel (each `__global__` in src/backends/cuda/kernels/*.cu) must be named on a "covers:"
# line of a conformance case (src/backends/cuda/check_*.c), so no kernel is ever silently left unchecked.
# Runs without a GPU and without nvcc ($1, the llm170 binary, is not needed). Usage: cli_... [repo root]
set -u
root=${2:-.}
kernels=$(cat "$root"/src/backends/cuda/kernels/*.cu 2>/dev/null |
  perl -0777 -ne 'while (/__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?(\w+)\s*\(/g) { print "$1\n" }' | sort -u)
covered=$(grep -h "covers:" "$root"/src/backends/cuda/check_*.c 2>/dev/null | sed 's/.*covers://' | tr -c 'A-Za-z0-9_\n' ' ' |
  tr ' ' '\n' | grep -v '^$' | sort -u)
missing=0
for k in $kernels; do
  if ! grep -qx "$k" <<<"$covered"; then echo "kernel $k has no conformance case (no 'covers: $k' in check_*.c)"; missing=1; fi
done
# Programmatic dependent launch (cuda_common.cuh): every kernel is launched through kl() and begins with
# pdl_enter(), or it could read its input before the kernel that writes it has finished.
for f in "$root"/src/backends/cuda/kernels/*.cu; do
  if grep -n '<<<' "$f"; then echo "$f: a kernel launched with <<< >>> (use kl(), cuda_common.cuh)"; missing=1; fi
  bad=$(perl -0777 -ne 'while (/__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?(\w+)\s*\([^{]*\{\s*([^;]*;)/g) {
      print "$1\n" unless $2 eq "pdl_enter();" || $2 eq "pdl_weights_first();" }' "$f")
  # a kernel that begins with pdl_weights_first(); (weights loaded before the wait) must still reach pdl_enter(); as
  # a statement of its own (not under an if) before the next kernel of its file begins
  bad+=" "$(perl -0777 -ne 'my @k = split /(?=__global__)/; for (@k) {
      next unless /^__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?(\w+)\s*\([^{]*\{\s*pdl_weights_first\(\);/;
      print "$1\n" unless /[;{}]\s*pdl_enter\(\);/ }' "$f")
  for k in $bad; do echo "$f: kernel $k does not begin with pdl_enter(); (or with pdl_weights_first(); and reach pdl_enter(); later)"; missing=1; done
done
n=$(grep -c . <<<"$kernels")
[ -z "$kernels" ] && n=0
if [ $missing -ne 0 ]; then echo "cli_cuda_kernels_covered: FAIL"; exit 1; fi
echo "cli_cuda_kernels_covered: all $n kernels have a case"
