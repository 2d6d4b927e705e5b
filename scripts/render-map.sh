#!/usr/bin/env bash
# Renders `neffld load --map` output in headless Chromium, saves a screenshot,
# and checks the rendered page the way a reader would: every allocation the
# JSON report lists has a labelled row in the DOM, and labels are legible
# (font size at least 10 px, not clipped to nothing).
#   scripts/render-map.sh NEFF OUT.png   (needs Debian's chromium and python3)
# Exits non-zero when a check fails. A failed load still writes a map; the
# script renders and checks it the same way.
# The command is built where cargo builds (CARGO_TARGET_DIR or the
# workspace's configured target directory), unless NEFFLD_BIN names one.
set -euo pipefail
neff=${1:?usage: render-map.sh NEFF OUT.png}
png=${2:?usage: render-map.sh NEFF OUT.png}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "${NEFFLD_BIN:-}" ]; then
  cargo build -q -p neffld-cli --manifest-path "$root/Cargo.toml"
  target="$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
fi
bin=${NEFFLD_BIN:-$target/debug/neffld}
"$bin" load --quiet --json --map "$tmp/map.html" "$neff" > "$tmp/report.json" || true
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
  --disable-component-update --no-first-run --disable-sync --disable-quic
  --user-data-dir="$tmp/profile")
# Size the window to the page so the screenshot holds every row.
rows=$(grep -o '<g class=' "$tmp/map.html" | wc -l)
height=$((400 + 20 * rows))
chromium "${flags[@]}" --window-size=1300,"$height" --screenshot="$png" \
  "file://$tmp/map.html" 2>/dev/null
chromium "${flags[@]}" --dump-dom "file://$tmp/map.html" > "$tmp/dom.html" 2>/dev/null
python3 - "$tmp/report.json" "$tmp/dom.html" <<'PY'
import json, re, sys, html
report = json.load(open(sys.argv[1]))
dom = open(sys.argv[2]).read()
allocs = report["memory"]["allocations"]
texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", dom)]
missing = [a for a in allocs
           if not any(t.endswith("@ %#x" % a["address"]) and a["name"][-20:] in t for t in texts)]
assert not missing, "allocations without a labelled row: %s" % missing
rows = len(re.findall(r'<g class="alloc">', dom))
assert rows == len(allocs), "%d rows for %d allocations" % (rows, len(allocs))
sizes = re.findall(r"svg text\{font:(\d+)px", dom)
assert sizes and min(int(s) for s in sizes) >= 10, "labels smaller than 10 px"
hbms = report["memory"]["hbm"]
assert dom.count("<svg") == len(hbms), "one picture per HBM"
for h in hbms:
    assert "whole HBM %d:" % h["hbm"] in dom, "no used/total line for HBM %d" % h["hbm"]
print("map ok: %d allocations on %d HBM picture(s), status %s" % (len(allocs), len(hbms), report["status"]))
PY
echo "wrote $png"
