#!/usr/bin/env python3
"""Trim the profiler's JSON reports to what the tests read.

    scripts/trim_profile_json.py SRC_DIR testdata/captures

For each SRC_DIR/<name>.profile.json (`neuron-profile view --output-format
json` of <name>.ntff) writes testdata/captures/<name>.profile.json with:

- `nc_mem_usage`, `model_info`, `neff_header`, `metadata`: as reported;
- `instruction`: one entry per distinct (subgraph, label, pc), keeping only
  `subgraph`, `label` (the engine), `pc`, `opcode` and `operands`, sorted by
  those keys. An instruction executed many times differs only in timing,
  which no test reads.

The output is deterministic (sorted keys, fixed order), so running the script
again over the same reports gives the same bytes.
"""

import json
import pathlib
import sys

KEEP = ("nc_mem_usage", "model_info", "neff_header", "metadata")
INSTR_FIELDS = ("subgraph", "label", "pc", "opcode", "operands")


def trim(report):
    out = {k: report[k] for k in KEEP if k in report}
    seen = {}
    for i in report.get("instruction", []):
        key = (i.get("subgraph"), i.get("label"), i.get("pc"))
        if key not in seen:
            seen[key] = {f: i.get(f) for f in INSTR_FIELDS}
    out["instruction"] = [seen[k] for k in sorted(seen, key=lambda k: (str(k[0]), str(k[1]), k[2]))]
    return out


def main():
    src, dst = map(pathlib.Path, sys.argv[1:3])
    dst.mkdir(parents=True, exist_ok=True)
    for p in sorted(src.glob("*.profile.json")):
        with p.open() as f:
            t = trim(json.load(f))
        text = json.dumps(t, sort_keys=True, indent=None, separators=(",", ":"))
        # One instruction per line keeps diffs readable.
        text = text.replace('},{"label"', '},\n{"label"')
        (dst / p.name).write_text(text + "\n")
        print(f"{p.name}: {p.stat().st_size} -> {len(text) + 1} bytes, "
              f"{len(t['instruction'])} instructions")


if __name__ == "__main__":
    main()
