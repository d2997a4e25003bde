#!/usr/bin/env bash
# Every planted-bug patch (scripts/plants/*.patch, staged for device calls by scripts/gpu-stage-plant.sh to
# prove that a check can fail) must still apply to the tree: a plant that no longer applies proves nothing,
# and is found only when a device call is spent on it (gemv-t-dependent had gone stale that way). Runs
# without a GPU; `git apply --check` works outside a git checkout too. Usage: cli_... [llm170, unused] [root]
set -u
root=${2:-.}
bad=0 n=0
for p in "$root"/scripts/plants/*.patch; do
  [ -f "$p" ] || continue
  n=$((n + 1))
  if ! (cd "$root" && git apply --check "$p" 2> /tmp/plant-apply.$$); then
    echo "plant $(basename "$p") no longer applies: $(head -2 /tmp/plant-apply.$$ | tr '\n' ' ')"
    bad=1
  fi
done
rm -f /tmp/plant-apply.$$
[ $n -gt 0 ] || { echo "cli_cuda_plants_apply: no plants found under $root/scripts/plants"; exit 1; }
if [ $bad -ne 0 ]; then echo "cli_cuda_plants_apply: FAIL"; exit 1; fi
echo "cli_cuda_plants_apply: all $n plants apply"
