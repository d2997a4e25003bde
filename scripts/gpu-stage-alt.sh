#!/usr/bin/env bash
# Stages another version of llm170 beside the real one, for a device call that compares two trees in one
# run (scripts/gpu-variants.sh: a variant named NAME runs it): the difference between HEAD and REF (a branch or
# commit) applied to the tree as a patch, llm170 built in the given build folder, staged (stripped) as
# .devstage/alt-NAME/llm170 and packed into .devbin/bundle.tar.xz with the others (scripts/gpu-bundle.sh; a
# tree whose GEMV kernels differ added 4 MB to the 6.3 MB bundle: with the tracked files that is at the
# 64 MiB a call carries), then the patch reverted and llm170 rebuilt (only the files it touched recompile).
# Run after scripts/gpu-stage.sh (which empties .devbin/). The tree must be clean.
#   scripts/gpu-stage-alt.sh NAME REF [build-cuda]      e.g. scripts/gpu-stage-alt.sh meta gemv-meta
set -eu
name=$1 ref=$2 build=${3:-build-cuda}
[ -z "$(git status --porcelain --untracked-files=no)" ] || { echo "gpu-stage-alt: the tree has changes"; exit 1; }
patch=$(mktemp)
git diff --binary HEAD "$ref" > "$patch"
[ -s "$patch" ] || { echo "gpu-stage-alt: $ref does not differ from HEAD"; exit 1; }
git apply "$patch"
trap 'git apply -R "$patch" && rm -f "$patch" && nice cmake --build "$build" -j2 --target llm170 > /dev/null' EXIT
nice cmake --build "$build" -j2 --target llm170
mkdir -p ".devstage/alt-$name"
cp "$build/llm170" ".devstage/alt-$name/llm170"
strip ".devstage/alt-$name/llm170"
echo "$(git rev-parse --short "$ref") ($ref)" > ".devstage/alt-$name/ref"
mkdir -p ".devbin/alt-$name" && cp ".devstage/alt-$name/ref" ".devbin/alt-$name/ref"
scripts/gpu-bundle.sh
