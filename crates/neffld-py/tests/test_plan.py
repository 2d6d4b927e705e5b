"""neffld.plan and the `neffld` command the package installs: the same
planner as the Rust command, from Python and from PATH."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import neffld
from conftest import SMALL

GIB = 1 << 30


def test_plan_returns_the_json_document_of_the_command():
    doc = neffld.plan(f"{SMALL}@0-3", instance="trn2.3xlarge")
    assert doc["command"] == "plan" and doc["fits"] is True
    assert doc["instance"]["name"] == "trn2.3xlarge"
    assert [s["core"] for s in doc["steps"]] == [0, 1, 2, 3]
    assert doc["parses"] == 1, "four ranks of one NEFF parse once"
    assert len(doc["headroom"]) == 4
    # Each rank's IO tensors sit on its own logical core's first physical core.
    for t in doc["tensors"]:
        assert t["pcore"] == 2 * t["core"]


def test_a_refused_step_is_the_answer_and_a_mistake_raises():
    # A trn2 HBM has 24 GiB: a 30 GiB tensor never fits.
    doc = neffld.plan(f"{SMALL}@0", instance="trn2.3xlarge", tensors=["kv=30GiB@0"])
    assert doc["fits"] is False
    assert doc["error"]["status"] == "NRT_RESOURCE"
    lines = [l["message"] for l in doc["refusal"]["log"]]
    assert lines[0] == "LNC size is 2. Neuron Cores using this HBM: NC 0 and NC 1"
    assert lines[1] == (
        "Failed to allocate 30.000GB (alignment: none, usage: tensors) on ND 0:NC 0"
    )
    assert doc["headroom"][0]["largest_tensor"] < 24 * GIB
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(SMALL, tensors=["kv=2XB@0"])
    assert e.value.status_name == "NRT_INVALID" and "'2XB'" in e.value.message
    with pytest.raises(neffld.NeffError):
        neffld.plan(SMALL, env={"NEURON_NOPE": 1})


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


def test_the_neffld_command_is_on_path_with_every_subcommand():
    exe = shutil.which("neffld", path=os.path.dirname(sys.executable))
    assert exe, "pip install puts neffld beside the interpreter"
    version = run(exe, "--version")
    assert version.returncode == 0 and version.stdout.startswith("neffld ")
    for sub in ["inspect", "verify", "load", "plan", "compare", "extract", "pack"]:
        h = run(exe, sub, "--help")
        assert h.returncode == 0 and "Exit status:" in h.stdout, sub
    out = run(exe, "plan", "--json", "--instance", "trn2.3xlarge", f"{SMALL}@0")
    assert out.returncode == 0
    assert json.loads(out.stdout) == neffld.plan(f"{SMALL}@0", instance="trn2.3xlarge")
    bad = run(exe, "plan", "--tensor", "kv=1QB@0", str(SMALL))
    assert bad.returncode == 2 and "'1QB' has an unknown unit" in bad.stderr
    refused = run(exe, "load", "--json", "--quiet", "--arch", "trn1", str(SMALL))
    assert refused.returncode == 1


def test_python_dash_m_runs_the_same_command():
    out = run(sys.executable, "-m", "neffld", "inspect", "--json", str(SMALL))
    assert out.returncode == 0
    assert json.loads(out.stdout)["command"] == "inspect"
    assert run(sys.executable, "-m", "neffld", "frobnicate").returncode == 2


def test_a_load_is_always_a_file_name(tmp_path, monkeypatch):
    # Issue 29 row 6: a load that looks like an option is a file that does
    # not exist, never `--map` (which wrote HTML over the victim).
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan("--map=victim.txt", f"{SMALL}@0")
    assert "--map=victim.txt" in str(e.value)
    assert victim.read_text() == "keep"
    # Tensors still run after the loads.
    doc = neffld.plan(f"{SMALL}@0", tensors=["kv=1GiB@0"], instance="trn2.3xlarge")
    assert [s["kind"] for s in doc["steps"]] == ["load", "tensor"]


def test_out_of_range_arguments_name_the_value_and_the_rule():
    # Issue 29 row 14: no OverflowError, no clap `-- -1` tip.
    with pytest.raises(ValueError, match=r"lnc=-1: a logical-core size is a positive integer"):
        neffld.plan(f"{SMALL}@0", lnc=-1)
    with pytest.raises(neffld.NeffError, match=r"start_core=2147483648: a logical core is -1"):
        neffld.load(str(SMALL), start_core=2**31)


def test_solve_gives_a_size_that_fits_and_one_granule_more_does_not():
    doc = neffld.plan(f"{SMALL}@0-3", instance="trn2.3xlarge", solve="kv@0-3")
    s = doc["solve"]
    assert s["kind"] == "tensor" and s["name"] == "kv" and s["cores"] == [0, 1, 2, 3]
    size = s["bytes"]
    assert size % 4096 == 0 and 0 < size < 24 * GIB
    fits = neffld.plan(
        f"{SMALL}@0-3", instance="trn2.3xlarge", tensors=[f"kv={size}@0-3"]
    )
    assert fits["fits"] is True
    over = neffld.plan(
        f"{SMALL}@0-3", instance="trn2.3xlarge", tensors=[f"kv={size + 4096}@0-3"]
    )
    assert over["fits"] is False


def test_each_advice_argv_plans_to_its_fits():
    # Two 11 GiB tensors on cores 0 and 1 at LNC 1 share HBM 0 (24 GiB):
    # refused, with advice (LNC 2, a placement) whose command lines fit.
    doc = neffld.plan(instance="trn2.3xlarge", lnc=1, tensors=["kv=11GiB@0,1", "w=2GiB@0,1"])
    assert doc["fits"] is False
    assert doc["advice"], doc
    for a in doc["advice"]:
        assert a["argv"][:2] == ["neffld", "plan"]
        assert neffld.plan_argv(a["argv"])["fits"] is a["fits"], a["argv"]
