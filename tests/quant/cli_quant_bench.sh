#!/usr/bin/env bash
# cli_quant_bench: `llm170 quant-bench` runs a tiny configuration and prints a well-formed markdown table,
# and bad arguments fail with status 2 and a message. It checks the harness, not speed: timings on a
# shared machine (or under ASan with -j2) are not assertable, and a pause of the process can legitimately
# print 0.00 GB/s. So every figure must have its format (GB/s with two decimals, ns/row an integer,
# speedups N.Nx, or "-" where a kernel is missing), every type its known bits/value and one row per ISA,
# and the two figures of a kernel must describe the same row size: GB/s x ns/row = bytes per row
# (both come from one timing, so this holds whatever the timing, up to the printed rounding).
# Usage: cli_quant_bench.sh llm170
set -u
BIN=$1
fail=0
pass=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

out=$("$BIN" quant-bench --mb 0.05 --reps 1 --isa all --type Q4_0,Q4_K,F16 2>&1)
status=$?
[ $status -eq 0 ] && ok || bad "tiny run exited $status: $out"
echo "$out" | grep -q "^| type | bits/value | isa | dequant GB/s | dequant ns/row | dot GB/s | dot ns/row | dot vs scalar |$" &&
    ok || bad "no table header"
n=$(echo "$out" | sed -n 's/.* in rows of \([0-9]*\) values;.*/\1/p')
[ -n "$n" ] && ok || bad "the conditions line does not give the row length"
# bits/value of each type (block bytes x 8 / block values): Q4_0 18x8/32, Q4_K 144x8/256, F16 2x8/1
if echo "$out" | awk -F'|' -v n="${n:-0}" '
    function cell(s) { gsub(/^ +| +$/, "", s); return s }
    # GB/s and ns/row of one kernel: both "-", or formatted figures whose product is the row size
    function pair(g, t, what) {
        if (g == "-" && t == "-") return
        if (g !~ /^[0-9]+\.[0-9][0-9]$/ || t !~ /^[0-9]+$/) { print "  bad " what " cells: " g ", " t; bad = 1; return }
        lo = (g - 0.005) * (t - 0.5); hi = (g + 0.005) * (t + 0.5)
        if (rb < lo * 0.999 || rb > hi * 1.001) { print "  " what ": " g " GB/s x " t " ns/row is not " rb " bytes"; bad = 1 }
    }
    BEGIN { want["Q4_0"] = "4.50"; want["Q4_K"] = "4.50"; want["F16"] = "16.00" }
    NF == 10 && $2 !~ /type|---/ {
        ty = cell($2); bits = cell($3); isa = cell($4)
        if (!(ty in want)) { print "  unexpected type " ty; bad = 1; next }
        if (bits != want[ty]) { print "  " ty ": bits/value " bits ", expected " want[ty]; bad = 1 }
        if (isa !~ /^(scalar|avx2|avx512|neon)$/ || seen[ty, isa]++) { print "  " ty ": isa " isa " unknown or twice"; bad = 1 }
        rows[ty]++; isas[isa]++
        rb = n * bits / 8
        pair(cell($5), cell($6), ty " " isa " dequant")
        pair(cell($7), cell($8), ty " " isa " dot")
        sp = cell($9)
        if (sp != "-" && sp !~ /^[0-9]+\.[0-9]x$/) { print "  " ty " " isa ": speedup " sp; bad = 1 }
        if (isa == "scalar" && sp != "1.0x" && sp != "-") { print "  " ty ": scalar speedup " sp; bad = 1 }
    }
    END {
        for (t in want) if (!((t, "scalar") in seen)) { print "  no scalar row for " t; bad = 1 }
        for (t in want) if (rows[t] != rows["Q4_0"]) { print "  " t ": " rows[t] " rows, Q4_0 has " rows["Q4_0"]; bad = 1 }
        exit bad
    }'; then ok; else bad "table rows: $out"; fi

# --tokens: the matrix-product table, a row per type and token count: K, a positive row count, GMAC/s
# with one decimal (0.0 allowed: timing), and the int8 columns either both figures or both "-"
out=$("$BIN" quant-bench --mb 0.1 --reps 1 --type Q4_K,Q8_0 --n 512 --tokens 1,20 2>&1)
status=$?
[ $status -eq 0 ] && ok || bad "--tokens run exited $status: $out"
[ "$(echo "$out" | grep -Ec '^\| (Q4_K|Q8_0) \| 512 \| [1-9][0-9]* \| (1|20) \| [0-9]+\.[0-9] \| ([0-9]+\.[0-9] \| [0-9]+\.[0-9]{2}|- \| -) \|$')" = 4 ] &&
    ok || bad "--tokens rows: $out"
[ "$(echo "$out" | grep -Ec '^\| (Q4_K \| 512 \| [0-9]+ \| 1|Q4_K \| 512 \| [0-9]+ \| 20|Q8_0 \| 512 \| [0-9]+ \| 1|Q8_0 \| 512 \| [0-9]+ \| 20) \|')" = 4 ] &&
    ok || bad "--tokens: not one row per type and token count: $out"

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
