#!/bin/sh
# The whole performance table of docs/performance.md, in one run: the
# round-robin in-process bench, then whole processes paired run by run
# against the floor (read + one libdeflate call, examples/inflate_floor.rs),
# with peak RSS, on matmul_large and on generated NEFFs of 512 MiB
# (incompressible) and SCALE_MIB (default 2048, compressible) of weights.
#
# usage: scripts/perf.sh [SCALE_MIB]
# env:   RUNS (pairs per whole-process row, default 9), SKIP_BENCH=1 (whole
#        processes only), NEFFLD_BIN (the CLI to time; default the release
#        build, so a saved older binary can be timed with the same rows).
set -eu
cd "$(dirname "$0")/.."
SCALE_MIB=${1:-2048}
RUNS=${RUNS:-9}
TARGET=${CARGO_TARGET_DIR:-target}
F=${NEFFLD_FIXTURES:-testdata/fixtures}/matmul_large.neff
cargo build --release -p neffld-cli -p neffld --bin neffld --example inflate_floor --example scale
[ "${SKIP_BENCH:-0}" = 1 ] || cargo bench -p neffld --bench load
BIN=${NEFFLD_BIN:-$TARGET/release/neffld}
FLOOR="$TARGET/release/examples/inflate_floor"
SCALE="$TARGET/release/examples/scale"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
"$SCALE" gen-random "$D/r512.neff" 512 1 >/dev/null
"$SCALE" gen "$D/big.neff" "$SCALE_MIB" 1 >/dev/null
L="$BIN load --quiet --lnc 1 --max-inflated 17179869184"
# The interpreter itself, not a launcher in front of it: pyenv's `python3`
# shim is a bash script that adds 50-170 ms to every Python process.
PY=$(python3 -c 'import sys; print(sys.executable)')
# verify hashes on a second thread beside the inflate; pinned to one CPU,
# the row shows what it costs where no second core is free.
ONE="taskset -c 0"
echo
echo "## Whole processes, $RUNS pairs per row (A/B: median of per-pair ratios)"
python3 scripts/whole_process.py "$RUNS" \
    "load --device null matmul_large ÷ floor" "$BIN load --quiet --device null $F" "$FLOOR $F" \
    "verify matmul_large ÷ floor" "$BIN verify $F" "$FLOOR $F" \
    "verify matmul_large ÷ floor, both on one CPU" "$ONE $BIN verify $F" "$ONE $FLOOR $F" \
    "Python ÷ load --device null matmul_large" "$PY scripts/py_baseline.py $F 1" "$BIN load --quiet --device null $F" \
    "512 MiB incompressible: load --device null ÷ floor" "$L --device null $D/r512.neff" "$FLOOR $D/r512.neff" \
    "512 MiB incompressible: load --validate-hash --device null ÷ floor" "$L --validate-hash --device null $D/r512.neff" "$FLOOR $D/r512.neff" \
    "512 MiB incompressible: load (sim) ÷ floor" "$L $D/r512.neff" "$FLOOR $D/r512.neff" \
    "$SCALE_MIB MiB: load --device null ÷ floor" "$L --device null $D/big.neff" "$FLOOR $D/big.neff" \
    "$SCALE_MIB MiB: load (sim) ÷ floor" "$L $D/big.neff" "$FLOOR $D/big.neff"
echo
echo "file sizes: matmul_large $(wc -c <"$F"), r512 $(wc -c <"$D/r512.neff"), big $(wc -c <"$D/big.neff") bytes"
echo
echo "## Peak RSS added by staging matmul_large on SimDevice (3 processes)"
for i in 1 2 3; do "$SCALE" stage-rss "$F"; done
