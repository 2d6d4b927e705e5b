#!/usr/bin/env python3
"""Whole-process pairs: runs command A and command B in turn (A B A B ...),
each as a fresh process, and reports the median of the per-pair ratios A/B
of wall time and of CPU time (user + system), their spread, and each
command's median peak RSS (the child's own ru_maxrss). Pairing keeps a ratio
meaningful while a shared machine's speed drifts; quote medians, and read
the min-max spread as the noise.

usage: whole_process.py RUNS NAME 'COMMAND A' 'COMMAND B' [NAME A B ...]

Commands are split as a shell splits words and run without a shell; their
output is discarded. One warm-up pair precedes the counted ones.
"""
import os
import shlex
import statistics
import subprocess
import sys
import time


def run(cmd):
    """Wall seconds, CPU seconds and peak RSS (KiB) of one process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed ({status}): {shlex.join(cmd)}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def spread(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}–{max(xs):.2f})"


def main():
    if len(sys.argv) < 5 or (len(sys.argv) - 2) % 3:
        sys.exit(__doc__)
    runs = int(sys.argv[1])
    rows = sys.argv[2:]
    print("| row | wall A/B, median of pairs (min–max) | CPU A/B | "
          "A wall ms | B wall ms | A peak MiB | B peak MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for i in range(0, len(rows), 3):
        name, a, b = rows[i], shlex.split(rows[i + 1]), shlex.split(rows[i + 2])
        run(a), run(b)
        pairs = [(run(a), run(b)) for _ in range(runs)]
        wall = [x[0] / y[0] for x, y in pairs]
        cpu = [x[1] / y[1] for x, y in pairs]
        med = lambda k, j: statistics.median(p[k][j] for p in pairs)
        print(f"| {name} | {spread(wall)} | {spread(cpu)} | "
              f"{med(0, 0) * 1e3:.1f} | {med(1, 0) * 1e3:.1f} | "
              f"{med(0, 2) / 1024:.0f} | {med(1, 2) / 1024:.0f} |", flush=True)


if __name__ == "__main__":
    main()
