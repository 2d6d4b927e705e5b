#!/usr/bin/env bash
# Renders `neffld load --map` output to a PNG with headless Chromium, to look
# at the memory map the way a browser shows it.
#   scripts/render-map.sh NEFF OUT.png   (needs Debian's chromium package)
set -euo pipefail
neff=${1:?usage: render-map.sh NEFF OUT.png}
png=${2:?usage: render-map.sh NEFF OUT.png}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo run -q --release -p neffld-cli -- load --quiet --map "$tmp/map.html" "$neff" > /dev/null
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$tmp/profile" --window-size=1250,1600 \
  --screenshot="$png" "file://$tmp/map.html" 2>/dev/null
echo "wrote $png"
