#!/usr/bin/env bash
# Renders `neffld plan --map` output in headless Chromium, saves a screenshot,
# and checks the rendered page the way a reader would: one section per chip
# and one picture per HBM of the instance, a labelled line for every NEFF of
# every core and every tensor the JSON report lists, labels at least 10 px.
#   scripts/render-plan-map.sh OUT.png PLAN-ARGS...   (needs Debian's chromium and python3)
# Exits non-zero when a check fails. A plan with a refused step still writes
# a map; it is rendered and checked the same way.
# The command is built where cargo builds (CARGO_TARGET_DIR or the
# workspace's configured target directory), unless NEFFLD_BIN names one.
set -euo pipefail
png=${1:?usage: render-plan-map.sh OUT.png PLAN-ARGS...}
shift
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "${NEFFLD_BIN:-}" ]; then
  cargo build -q -p neffld-cli --manifest-path "$root/Cargo.toml"
  target="$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
fi
bin=${NEFFLD_BIN:-$target/debug/neffld}
"$bin" plan --json --map "$tmp/map.html" "$@" > "$tmp/report.json" || true
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
  --disable-component-update --no-first-run --disable-sync --disable-quic
  --user-data-dir="$tmp/profile")
lines=$(grep -o '<li ' "$tmp/map.html" | wc -l)
bars=$(grep -o '<svg class="hbm"' "$tmp/map.html" | wc -l)
height=$((300 + 20 * lines + 110 * bars))
chromium "${flags[@]}" --window-size=1300,"$height" --screenshot="$png" \
  "file://$tmp/map.html" 2>/dev/null
chromium "${flags[@]}" --dump-dom "file://$tmp/map.html" > "$tmp/dom.html" 2>/dev/null
python3 - "$tmp/report.json" "$tmp/dom.html" <<'PY'
import json, re, sys, html
report = json.load(open(sys.argv[1]))
dom = html.unescape(open(sys.argv[2]).read())
devices = report["memory"]["devices"]
assert dom.count('<section class="chip">') == len(devices), "one section per chip"
hbms = sum(len(d["hbms"]) for d in devices)
assert dom.count('<svg class="hbm"') == hbms, "one picture per HBM"
items = re.findall(r'<li class="(neff|tensor|runtime)">([^<]*)</li>', dom)
for d in devices:
    for h in d["hbms"]:
        assert "ND %d HBM %d" % (d["device"], h["hbm"]) in dom, "no heading for HBM %d" % h["hbm"]
        for c in h["cores"]:
            for n in c["neffs"]:
                want = 'nc%d · NEFF %d "%s"' % (c["pcore"], n["id"], n["name"])
                assert any(k == "neff" and t.startswith(want) for k, t in items), "no line for " + want
for t in report["tensors"]:
    want = "nc%d · tensor %s" % (t["pcore"], t["name"])
    assert any(k == "tensor" and x.startswith(want) for k, x in items), "no line for " + want
sizes = re.findall(r"font:(\d+)px", dom)
assert sizes and min(int(s) for s in sizes) >= 10, "labels smaller than 10 px"
print("plan map ok: %d chip(s), %d HBM picture(s), %d NEFF and tensor line(s), fits %s"
      % (len(devices), hbms, len([i for i in items if i[0] != "runtime"]), report["fits"]))
PY
echo "wrote $png"
