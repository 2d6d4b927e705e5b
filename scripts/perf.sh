#!/bin/sh
# The whole performance table of docs/performance.md: the round-robin bench
# (all in-process rows, one run), then the one-process-per-measurement RSS
# and scale rows. Usage: scripts/perf.sh [SCALE_MIB] (default 2048).
set -eu
cd "$(dirname "$0")/.."
SCALE_MIB=${1:-2048}
TARGET=${CARGO_TARGET_DIR:-target}
cargo bench -p neffld --bench load
cargo build --release -p neffld --example scale
E="$TARGET/release/examples/scale"
F=${NEFFLD_FIXTURES:-testdata/fixtures}
echo
echo "## Peak RSS added by staging matmul_large on SimDevice (3 processes)"
for i in 1 2 3; do "$E" stage-rss "$F/matmul_large.neff"; done
echo
echo "## Scale: ${SCALE_MIB} MiB of weights across 8 subgraphs (one process per line)"
N=$(mktemp -d)/scale.neff
"$E" gen "$N" "$SCALE_MIB" 8
for dev in null sim null sim; do "$E" load "$N" "$dev" 8; done
rm -f "$N"
