#!/usr/bin/env bash
# Stages a planted-bug binary beside the real one, for a device call that proves a check can fail: applies
# scripts/plants/NAME.patch to the tree, builds llm170 in the given build folder, copies it gzipped to
# .devbin/plant/llm170.gz, then reverts the patch and rebuilds (only the patched files recompile). Run after
# scripts/gpu-stage.sh (which empties .devbin/). scripts/gpu-e2e.sh runs the planted binary when it is there
# and expects its check to FAIL.
#   scripts/gpu-stage-plant.sh [build-cuda] [cudagraph-stale-upload]
# cudagraph-stale-upload: a captured pass's upload skips the copy into the staging buffer once an exec
# exists, so every graph after the first replays the first pass's token ids and positions: the engine
# check's "graph = nograph bit for bit" comparison must fail from the second greedy step on.
set -eu
build=${1:-build-cuda}
patch=scripts/plants/${2:-cudagraph-stale-upload}.patch
git apply "$patch"
trap 'git apply -R "$patch" && nice cmake --build "$build" -j2 --target llm170 > /dev/null' EXIT
nice cmake --build "$build" -j2 --target llm170
mkdir -p .devbin/plant
cp "$build/llm170" .devbin/plant/llm170
gzip -9f .devbin/plant/llm170
du -sh .devbin
