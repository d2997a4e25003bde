#!/usr/bin/env python3
"""The kernels of one decode step from an ncu CSV (scripts/gpu-ncu.sh): each kernel's duration
(gpu__time_duration.sum, ncu --csv --print-units base), the step taken as the kernels from the second-last
launch of the marker kernel (--marker, default k_get_rows: a pass's first op is the embedding lookup; bench's
tg feeds token ids, so there is no argmax in its steps) to the last. Prints the step's kernel count and summed
kernel time, then a line per kernel name and grid (calls, total, share, mean), largest first, and with
--list N the step's first N kernels in launch order. Sum of kernel time against the graph's step time (bench's
"GPU ... us" line) is the share of the step not spent inside kernels (launch gaps, PDL waits)."""
import argparse
import collections
import csv
import re
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--list", type=int, default=0)
    ap.add_argument("--marker", default="k_get_rows")
    a = ap.parse_args()
    with open(a.csv, errors="replace") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own "==PROF==" lines and the program's output out
    rows = []
    for d in csv.DictReader(lines):
        if d.get("Metric Name") != "gpu__time_duration.sum":
            continue
        ns = float(d["Metric Value"].replace(",", ""))  # ncu writes thousands separators
        rows.append((d["Kernel Name"], d.get("Grid Size", ""), ns))
    starts = [i for i, r in enumerate(rows) if a.marker in r[0]]
    print(f"{len(rows)} kernels profiled, {len(starts)} step starts ({a.marker})")
    if len(starts) < 2:
        sys.exit("ncu_step: fewer than two step starts; profile more kernels (-c) or more steps (-n)")
    step = rows[starts[-2]:starts[-1]]
    total = sum(r[2] for r in step)
    print(f"last whole step: {len(step)} kernels, {total / 1000:.1f} us inside kernels")
    agg = collections.defaultdict(lambda: [0, 0.0])
    for name, grid, ns in step:
        k = f"{re.sub(r'[(<].*', '', name)[:48]} {grid}"
        agg[k][0] += 1
        agg[k][1] += ns
    for k, (n, ns) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        print(f"{ns / 1000:8.1f} us {100 * ns / total:5.1f}% {n:4d} x {ns / n / 1000:6.2f} us  {k}")
    for name, grid, ns in step[:a.list]:
        print(f"{ns / 1000:8.2f} us  {re.sub(r'[(<].*', '', name)[:60]} {grid}")


if __name__ == "__main__":
    main()
