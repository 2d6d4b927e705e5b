"""The README's Python example runs as a reader copies it, from the root of
the checkout (its paths are the example NEFF's)."""

import contextlib
import io
import os
import re
from pathlib import Path

import neffld

ROOT = Path(__file__).resolve().parents[3]


def test_the_readme_python_example_runs(monkeypatch):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) == 1, "the README has one Python example"
    monkeypatch.chdir(ROOT)
    for name in ("NEFFLD_ARCH", "NEFFLD_INSTANCE", "NEURON_RT_VISIBLE_CORES"):
        monkeypatch.delenv(name, raising=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md", "exec"), {})
    # One line per physical core of the model: pcore, subgraph, weights.
    lines = out.getvalue().splitlines()
    with neffld.load(os.path.join("examples", "demo.neff")) as model:
        expected = [f"{c.pcore} {c.subgraph} {c.memory['Weights']}" for c in model.cores]
    assert lines == expected and lines
