#!/usr/bin/env bash
# --spec as a user runs it (issue 16): `infer --spec ngram|draft` prints the tokens plain decoding prints,
# greedy and sampled with a seed (tests/engine/test_spec.c proves the loop over many prompts; this checks
# the command's wiring); `bench --spec ngram --temp T` runs the plain and speculative tests on a sampled
# stream and prints the speed-up; the misuses are clear errors (exit 2 or 1 with a message): --temp
# without --spec in bench, --spec draft without --model-draft, --spec mtp on a model without an MTP block,
# an unknown --spec. $1 is the llm170 binary.
set -u
bin=$1
. tests/cli/model_cmds_lib.sh
"$bin" synth --preset tiny-llama --out "$dir/d.gguf" --type q8_0 --seed 2 >/dev/null 2>&1 || bad "synth draft"
# a prompt that repeats, so n-gram drafts are proposed and some kept
p=$(seq -s, 5 40),$(seq -s, 5 40)
gen() { "$bin" infer --model "$dir/m.gguf" --prompt-tokens "$p" --n-predict 48 --ignore-eos -t 1 "$@" 2>"$dir/err"; }
for sampling in "--temp 0" "--temp 0.9 --seed 7"; do
  # shellcheck disable=SC2086
  gen $sampling > "$dir/plain" || bad "infer plain ($sampling): $(tail -1 "$dir/err")"
  for spec in "--spec ngram" "--spec ngram --draft-max 3 --spec-adaptive 0" "--spec draft --model-draft $dir/d.gguf"; do
    # shellcheck disable=SC2086
    gen $sampling $spec --timings > "$dir/spec" || bad "infer $spec ($sampling): $(tail -1 "$dir/err")"
    cmp -s "$dir/plain" "$dir/spec" && ok || bad "infer $spec ($sampling): tokens differ from plain decoding"
    grep -q "drafts kept" "$dir/err" && ok || bad "infer $spec --timings: no speculation line: $(tail -2 "$dir/err")"
  done
done
[ "$(wc -l < "$dir/plain")" -eq 48 ] && ok || bad "infer printed $(wc -l < "$dir/plain") tokens, expected 48"

run bench --spec ngram --temp 1000 -n 16 > "$dir/out" 2> "$dir/err" && ok || bad "bench --spec ngram --temp: $(tail -1 "$dir/err")"
grep -q "tg16 temp 1000" "$dir/out" && grep -q "tg16 spec ngram" "$dir/out" && grep -q "speed-up" "$dir/out" && ok \
  || bad "bench --spec ngram --temp 1000: rows or speed-up missing: $(cat "$dir/out")"

expect_fail() { # want_rc message args...
  local want=$1 msg=$2; shift 2
  "$@" > "$dir/out" 2> "$dir/err" < /dev/null
  local rc=$?
  [ $rc -eq "$want" ] && ok || bad "$*: exit $rc, expected $want"
  grep -q -- "$msg" "$dir/err" && ok || bad "$*: the error should say '$msg': $(tail -2 "$dir/err")"
}
expect_fail 2 "--temp samples the --spec test" run bench --temp 2
expect_fail 1 "model-draft" run infer --spec draft
expect_fail 1 "MTP" run infer --spec mtp
expect_fail 2 "ngram" run infer --spec lookahead
echo "cli_spec: $pass passed, $fail failed"
[ $fail -eq 0 ]
