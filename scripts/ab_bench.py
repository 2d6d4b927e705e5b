#!/usr/bin/env python3
"""Before/after comparison of two builds of the load bench.

Runs BEFORE and AFTER alternately (B A B A ...), each with a few
round-robin rounds, and prints per row the median of the per-run medians
and AFTER/BEFORE. Build each binary with
`cargo bench -p neffld --bench load --no-run` and copy it aside.

usage: ab_bench.py BEFORE AFTER [RUNS] [ROUNDS]
"""
import os
import statistics
import subprocess
import sys


def run(binary, rounds):
    env = dict(os.environ, NEFFLD_BENCH_ROUNDS=str(rounds))
    out = subprocess.run([binary, "--bench"], env=env, capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].replace(".", "", 1).isdigit():
            rows[cells[0]] = float(cells[1])
    return rows


def main():
    before, after = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 7
    samples = {before: [], after: []}
    for _ in range(runs):
        for b in (before, after):
            samples[b].append(run(b, rounds))
    print("| row | before ms | after ms | after/before | before runs | after runs |")
    print("|---|---:|---:|---:|---|---|")
    for row in samples[after][0]:
        bs = [r[row] for r in samples[before] if row in r]
        as_ = [r[row] for r in samples[after] if row in r]
        if not bs or not as_:
            continue
        b, a = statistics.median(bs), statistics.median(as_)
        ratio = a / b if b else float("nan")
        fmt = lambda v: " ".join(f"{x:.2f}" for x in v)
        print(f"| {row} | {b:.3f} | {a:.3f} | {ratio:.2f} | {fmt(bs)} | {fmt(as_)} |")


if __name__ == "__main__":
    main()
