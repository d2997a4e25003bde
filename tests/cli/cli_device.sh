#!/usr/bin/env bash
# --device on every subcommand that loads a model: 'cpu' works, an unknown or unavailable device is a clear
# error (exit non-zero) naming it and listing the devices this build has.
set -u
bin=$1
. tests/cli/model_cmds_lib.sh
for cmd in bench infer perplexity run serve; do
  if [ "$cmd" != serve ]; then
    run "$cmd" --device cpu > "$dir/out" 2> "$dir/err" && ok || bad "$cmd --device cpu failed: $(tail -2 "$dir/err")"
  fi
  run "$cmd" --device cuda:7 > "$dir/out" 2> "$dir/err"
  rc=$?
  [ $rc -ne 0 ] && ok || bad "$cmd --device cuda:7 exited 0"
  grep -q "cuda:7" "$dir/err" && grep -qE "this build has cpu|devices: cpu" "$dir/err" && ok \
    || bad "$cmd: the error should name the device and list the build's: $(tail -2 "$dir/err")"
done
echo "cli_device: $pass passed, $fail failed"
[ $fail -eq 0 ]
