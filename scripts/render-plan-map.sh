#!/usr/bin/env bash
# Renders `neffld plan --map` output in headless Chromium, saves a screenshot,
# and checks the rendered page the way a reader would: one section per chip
# and one picture per HBM of the instance (each HBM once, every core that
# uses it marked on it with its logical core), a labelled line for every
# NEFF of every core (header name and file) and every tensor the JSON report
# lists (ranks with identical allocations on one line naming their cores),
# the NEFFs with their ranks grouped, the headroom and the advice,
# labels at least 10 px.
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
# Ranks with identical allocations: one line for the group, naming its
# physical cores (ND:nc) in data-pcores.
ranks = [(set(m.split()), t) for m, t in
         re.findall(r'<li class="ranks" data-pcores="([^"]*)">([^<]*)</li>', dom)]
def grouped(device, pcore, what):
    return any("%d:%d" % (device, pcore) in m and what in t for m, t in ranks)
for d in devices:
    for h in d["hbms"]:
        assert "ND %d HBM %d" % (d["device"], h["hbm"]) in dom, "no heading for HBM %d" % h["hbm"]
        for c in h["cores"]:
            for n in c["neffs"]:
                want = 'nc%d · NEFF %d "%s"' % (c["pcore"], n["id"], n["name"])
                assert any(k == "neff" and t.startswith(want) for k, t in items) or \
                    grouped(d["device"], c["pcore"], 'NEFF "%s"' % n["name"]), "no line for " + want
for t in report["tensors"]:
    want = "nc%d · tensor %s" % (t["pcore"], t["name"])
    assert any(k == "tensor" and x.startswith(want) for k, x in items) or \
        grouped(t["device"], t["pcore"], "tensor %s" % t["name"]), "no line for " + want
for d in devices:
    for h in d["hbms"]:
        marks = re.findall(r"ND %d HBM %d — cores ([^—]*) —" % (d["device"], h["hbm"]), dom)
        assert len(marks) == 1, "HBM %d of ND %d shown once" % (h["hbm"], d["device"])
        for c in h["cores"]:
            assert "nc%d" % c["pcore"] in marks[0], "core nc%d on its HBM" % c["pcore"]
for s in report["steps"]:
    if s["status"] == "ok" and s["core"] is not None and s["pcores"]:
        assert "nc%d (logical core %d)" % (s["pcores"][0], s["core"]) in dom, "logical core %d named" % s["core"]
for n in report["neffs"]:
    base = n["file"].rsplit("/", 1)[-1]
    assert '%s ("%s") ×' % (base, n["name"]) in dom, "ranks of %s grouped" % base
if report["headroom"]:
    assert "<h2>Headroom</h2>" in dom, "headroom shown"
for a in report["advice"]:
    assert a["change"] in dom and " ".join(a["argv"]) in dom, "advice shown: " + a["change"]
if report.get("no_fix"):
    assert report["no_fix"] in dom, "no fix shown"
sizes = re.findall(r"font:(\d+)px", dom)
assert sizes and min(int(s) for s in sizes) >= 10, "labels smaller than 10 px"
print("plan map ok: %d chip(s), %d HBM picture(s), %d NEFF and tensor line(s), %d line(s) of identical ranks, fits %s"
      % (len(devices), hbms, len([i for i in items if i[0] != "runtime"]), len(ranks), report["fits"]))
PY
echo "wrote $png"
