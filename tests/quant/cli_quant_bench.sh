#!/usr/bin/env bash
# cli_quant_bench: `llm170 quant-bench` runs a tiny configuration and prints one markdown row per type and
# ISA with positive throughputs, and bad arguments fail with status 2 and a message. It checks the
# harness, not speed (timings on a shared machine are not assertable). Usage: cli_quant_bench.sh llm170
set -u
BIN=$1
fail=0
pass=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

out=$("$BIN" quant-bench --mb 0.05 --reps 1 --isa all --type Q4_0,Q4_K,F16 2>&1)
status=$?
[ $status -eq 0 ] && ok || bad "tiny run exited $status: $out"
# one row per type and available ISA; scalar always runs
for t in Q4_0 Q4_K F16; do
    echo "$out" | grep -q "^| $t | [0-9.]* | scalar | " && ok || bad "no scalar row for $t"
    # the dot column (6th field) of every row of this type is a positive number
    if echo "$out" | awk -F'|' -v t=" $t " '$2 == t && !($7 + 0 > 0) { bad = 1 } END { exit bad }'; then ok; else
        bad "non-positive dot GB/s for $t"; fi
done
echo "$out" | grep -q "^| type | bits/value | isa |" && ok || bad "no table header"

# --tokens: the matrix-product table, a row per type and token count with positive figures
out=$("$BIN" quant-bench --mb 0.1 --reps 1 --type Q4_K,Q8_0 --n 512 --tokens 1,20 2>&1)
status=$?
[ $status -eq 0 ] && ok || bad "--tokens run exited $status: $out"
[ "$(echo "$out" | grep -Ec '^\| (Q4_K|Q8_0) \| 512 \| [0-9]+ \| (1|20) \| [0-9.]*[1-9][0-9.]* \|')" = 4 ] && ok ||
    bad "--tokens rows: $out"

"$BIN" quant-bench --type NOPE > /dev/null 2>&1
[ $? -eq 2 ] && ok || bad "unknown type did not exit 2"
"$BIN" quant-bench --isa bogus > /dev/null 2>&1
[ $? -eq 2 ] && ok || bad "unknown isa did not exit 2"
"$BIN" quant-bench --reps 0 > /dev/null 2>&1
[ $? -eq 2 ] && ok || bad "--reps 0 did not exit 2"
msg=$("$BIN" quant-bench --type NOPE 2>&1)
echo "$msg" | grep -q "unknown type 'NOPE'" && ok || bad "unknown type message: $msg"

echo "cli_quant_bench: $pass passed, $fail failed"
[ $fail -eq 0 ]
