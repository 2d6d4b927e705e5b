"""neffld.plan and the `neffld` command the package installs: the same
planner as the Rust command, from Python and from PATH."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import neffld
from conftest import LARGE, SMALL

GIB = 1 << 30


def test_plan_returns_objects_over_the_report():
    p = neffld.plan(f"{SMALL}@0-3", instance="trn2.3xlarge")
    assert isinstance(p, neffld.Plan) and p.fits is True
    assert p.instance.name == "trn2.3xlarge" and p.instance.lnc == 2
    # trn2: 8 physical cores per chip, one chip, LNC 2.
    assert p.instance.logical_cores == 4
    assert [s.core for s in p.steps] == [0, 1, 2, 3]
    assert [s.status for s in p.steps] == ["ok"] * 4
    assert all(s.kind == "load" and s.error is None for s in p.steps)
    assert p.parses == 1, "four ranks of one NEFF parse once"
    assert len(p.headroom) == 4 and p.refusal is None and p.solve is None
    # Each rank's IO tensors sit on its own logical core's first physical core.
    assert p.tensors
    for t in p.tensors:
        assert t.pcore == 2 * t.core
    doc = p.to_dict()
    assert doc["command"] == "plan" and doc["fits"] is True
    assert json.loads(p.json) == doc and p.memory == doc["memory"]


def test_a_refused_step_is_the_answer_and_a_mistake_raises():
    # A trn2 HBM has 24 GiB: a 30 GiB tensor never fits.
    p = neffld.plan(f"{SMALL}@0", instance="trn2.3xlarge", tensors=["kv=30GiB@0"])
    assert p.fits is False
    assert [s.status for s in p.steps] == ["ok", "refused"]
    refused = p.steps[-1]
    assert refused.kind == "tensor" and refused.name == "kv" and refused.size == 30 * GIB
    assert refused.error.status_name == "NRT_RESOURCE" and refused.error.own_limit is None
    assert p.to_dict()["error"]["status"] == "NRT_RESOURCE"
    assert p.refusal.step == 1 and p.refusal.size == 30 * GIB
    assert repr(p.refusal) == f"PlanRefusal(step=1: {30 * GIB} bytes of tensors (kv) on ND 0 NC 0)"
    assert repr(p.refusal.log[0]).startswith("LogLine(print_lnc_hbm_details: LNC size is 2.")
    lines = [l.message for l in p.refusal.log]
    assert lines[0] == "LNC size is 2. Neuron Cores using this HBM: NC 0 and NC 1"
    assert lines[1] == (
        "Failed to allocate 30.000GB (alignment: none, usage: tensors) on ND 0:NC 0"
    )
    assert p.headroom[0].largest_tensor < 24 * GIB
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(SMALL, tensors=["kv=2XB@0"])
    assert e.value.status_name == "NRT_INVALID" and "'2XB'" in e.value.message
    with pytest.raises(neffld.NeffError):
        neffld.plan(SMALL, env={"NEURON_NOPE": 1})



def test_env_sets_the_step_ceiling_as_the_process_environment_does():
    # NEFFLD_MAX_STEPS in env= bounds the plan, as --env does the command's.
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(f"{SMALL}@0-3", instance="trn2.3xlarge", env={"NEFFLD_MAX_STEPS": 3})
    assert e.value.status_name == "NRT_INVALID" and "NEFFLD_MAX_STEPS" in e.value.message
    p = neffld.plan(f"{SMALL}@0-3", instance="trn2.3xlarge", env={"NEFFLD_MAX_STEPS": 4})
    assert p.fits is True and len(p.steps) == 4

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
    assert json.loads(out.stdout) == neffld.plan(f"{SMALL}@0", instance="trn2.3xlarge").to_dict()
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
    # Nor does a load named like an option write a file that did not exist.
    for load in ["--map=new.html", "--map", "--json", "--help"]:
        with pytest.raises(neffld.NeffError) as e:
            neffld.plan(load, f"{SMALL}@0")
        assert e.value.stage == "io" and load in e.value.message, load
    assert sorted(x.name for x in tmp_path.iterdir()) == ["victim.txt"]
    # Tensors still run after the loads.
    p = neffld.plan(f"{SMALL}@0", tensors=["kv=1GiB@0"], instance="trn2.3xlarge")
    assert [s.kind for s in p.steps] == ["load", "tensor"]


def test_a_map_that_cannot_be_written_raises(tmp_path):
    # The caller asked for a file: not getting it is an I/O error, not a
    # plan that silently lacks its map.
    where = tmp_path / "missing-dir" / "plan.html"
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(f"{SMALL}@0", map=where)
    assert e.value.stage == "io" and str(where) in e.value.message
    written = tmp_path / "plan.html"
    neffld.plan(f"{SMALL}@0", map=written)
    assert written.read_text().startswith("<!DOCTYPE html>")


def test_monitor_and_sysfs_read_as_their_tools_read_them(tmp_path):
    # The check from outside: two loads on a trn2.3xlarge, read back as
    # neuron-monitor's frontends read its stream (json.loads of each line,
    # the keys neuron-monitor-prometheus.py reads) and as tools read
    # /sys/devices/virtual/neuron_device (each file a decimal number),
    # held against the plan's own document.
    m, s = tmp_path / "m.json", tmp_path / "s"
    p = neffld.plan(
        f"{LARGE}@0", f"{LARGE}@1", instance="trn2.3xlarge", monitor=m, sysfs=s
    )
    doc = p.to_dict()
    assert doc["written"] == {"map": None, "monitor": str(m), "sysfs": str(s)}
    reports = [json.loads(line) for line in m.read_text().splitlines()]
    assert len(reports) == 1
    r = reports[0]
    info = r["instance_info"]
    labels = {
        k: info[k]
        for k in [
            "instance_name",
            "instance_id",
            "instance_type",
            "instance_availability_zone",
            "instance_region",
            "subnet_id",
        ]
    }
    assert labels["instance_type"] == "trn2.3xlarge"
    (runtime,) = r["neuron_runtime_data"]
    assert runtime["error"] == "" and runtime["neuron_runtime_tag"]
    assert all(g["error"] == "" for g in runtime["report"].values())
    assert all(g["error"] == "" for g in r["system_data"].values())
    used = runtime["report"]["memory_used"]
    cores = used["neuron_runtime_used_bytes"]["usage_breakdown"]["neuroncore_memory_usage"]
    kinds = ["constants", "model_code", "model_shared_scratchpad", "runtime_memory", "tensors"]
    device = sum(c[k] for c in cores.values() for k in kinds)
    assert used["neuron_runtime_used_bytes"]["neuron_device"] == device
    planned = sum(
        c["used"] for d in doc["memory"]["devices"] for h in d["hbms"] for c in h["cores"]
    )
    assert device == planned
    assert [int(k) for k in cores] == list(range(p.instance.logical_cores))
    assert [x["model_id"] for x in used["loaded_models"]] == [n["id"] for n in doc["neffs"]]
    hw = r["neuron_hardware_info"]
    assert (hw["neuron_device_count"], hw["neuroncore_per_device_count"]) == (1, 4)

    def counter(path):
        return int((s / path).read_text())

    held = 0
    for core in range(8):
        base = f"neuron0/neuron_core{core}/stats/memory_usage/device_mem"
        kinds = sorted(d.name for d in (s / base).iterdir() if d.is_dir())
        assert len(kinds) == 11
        total = counter(f"{base}/total")
        assert sum(counter(f"{base}/{k}/total") for k in kinds) == total
        held += total
    assert held == sum(h["held"] for h in doc["memory"]["devices"][0]["hbms"])


def test_the_readme_plan_snippet_runs(tmp_path, monkeypatch):
    # The package README's plan example, run as written on a real NEFF.
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start = readme.index("p = neffld.plan(")
    end = readme.index("```", start)
    code = readme[start:end].replace('"model.neff', f'"{LARGE}')
    monkeypatch.chdir(tmp_path)
    scope = {"neffld": neffld}
    lines = code.splitlines()
    exec("\n".join(lines[:-1]), scope)
    result = eval(lines[-1].split("#")[0], scope)
    assert result == (True, {"map": None, "monitor": "m.json", "sysfs": "sysfs"})
    assert (tmp_path / "sysfs" / "neuron0" / "core_count").read_text() == "8"


def test_monitor_and_sysfs_that_cannot_be_written_raise(tmp_path):
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(f"{SMALL}@0", monitor=tmp_path / "missing" / "m.json")
    assert e.value.stage == "io" and "neuron-monitor report" in e.value.message
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine").write_text("keep")
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(f"{SMALL}@0", sysfs=tmp_path / "busy")
    assert e.value.stage == "io" and "sysfs tree" in e.value.message
    assert (tmp_path / "busy" / "mine").read_text() == "keep"
    # Standard output and streams are the command's.
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(f"{SMALL}@0", monitor="-")
    assert e.value.stage == "usage"
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan_argv([f"{SMALL}@0", "--monitor", "-", "--monitor-period", "1"])
    assert e.value.stage == "usage"


def test_a_string_where_a_list_is_expected_is_a_type_error():
    # A lone string used to be read letter by letter.
    for kw in ["tensors", "unloads", "frees"]:
        with pytest.raises(TypeError, match=kw):
            neffld.plan(f"{SMALL}@0", **{kw: "kv=1GiB@0"})
    with pytest.raises(TypeError, match="env"):
        neffld.plan(f"{SMALL}@0", env=["NEURON_RT_VISIBLE_CORES=0"])
    with pytest.raises(TypeError, match="tensors"):
        neffld.plan(f"{SMALL}@0", tensors=[4096])
    with pytest.raises(TypeError, match="argv"):
        neffld.plan_argv("neffld plan x.neff")


def test_a_neffs_bytes_given_to_plan_are_named_not_shown(small_bytes):
    # plan takes paths (a plan may read a NEFF more than once): its bytes
    # are a TypeError that says so, and never holds them (4.5 MB of repr).
    for call in (
        lambda: neffld.plan(small_bytes),
        lambda: neffld.plan(f"{SMALL}@0", bytearray(small_bytes)),
        lambda: neffld.plan(memoryview(small_bytes)),
    ):
        with pytest.raises(TypeError) as e:
            call()
        text = str(e.value)
        assert len(text) < 400, text[:400]
        assert f"object of {len(small_bytes)} bytes" in text
        assert "plan takes NEFF files by path" in text
    for call in (
        lambda: neffld.plan_argv(small_bytes),
        lambda: neffld.plan(f"{SMALL}@0", tensors=[small_bytes]),
        lambda: neffld.plan(f"{SMALL}@0", tensors=small_bytes),
        lambda: neffld.plan(f"{SMALL}@0", instance=small_bytes),
        lambda: neffld.plan(f"{SMALL}@0", env={"NEURON_RT_X": small_bytes}),
    ):
        with pytest.raises(TypeError) as e:
            call()
        assert len(str(e.value)) < 400, str(e.value)[:400]


def test_out_of_range_arguments_name_the_value_and_the_rule():
    # Issue 29 row 14: no OverflowError, no clap `-- -1` tip.
    with pytest.raises(neffld.NeffError, match=r"lnc=-1: a logical-core size is a positive integer"):
        neffld.plan(f"{SMALL}@0", lnc=-1)
    with pytest.raises(neffld.NeffError, match=r"start_core=2147483648: a logical core is -1"):
        neffld.load(str(SMALL), start_core=2**31)


def test_solve_gives_a_size_that_fits_and_one_granule_more_does_not():
    p = neffld.plan(f"{SMALL}@0-3", instance="trn2.3xlarge", solve="kv@0-3")
    s = p.solve
    assert s.kind == "tensor" and s.name == "kv" and s.cores == [0, 1, 2, 3]
    assert s.ranks is None and s.unanswered is None
    size = s.bytes
    assert size % 4096 == 0 and 0 < size < 24 * GIB
    fits = neffld.plan(
        f"{SMALL}@0-3", instance="trn2.3xlarge", tensors=[f"kv={size}@0-3"]
    )
    assert fits.fits is True
    over = neffld.plan(
        f"{SMALL}@0-3", instance="trn2.3xlarge", tensors=[f"kv={size + 4096}@0-3"]
    )
    assert over.fits is False


def test_a_solve_on_the_empty_instance_counts_copies_on_its_cores():
    # Nothing loaded: the question is asked of the empty instance (it was
    # "the deployment has no step"), and LARGE@0,0 counts the copies that
    # fit on core 0, not one per listing.
    kv = neffld.plan(instance="trn2.3xlarge", solve="kv@0").solve
    assert kv.kind == "tensor" and kv.bytes > 20 * GIB
    s = neffld.plan(instance="trn2.3xlarge", solve=f"{LARGE}@0,0").solve
    n = s.ranks
    assert s.kind == "ranks" and n > 2 and s.per_core == [(0, n)]
    assert s.ceiling is None
    fits = neffld.plan(*[f"{LARGE}@0"] * n, instance="trn2.3xlarge")
    assert fits.fits is True
    over = neffld.plan(*[f"{LARGE}@0"] * (n + 1), instance="trn2.3xlarge")
    refused = over.steps[n].error
    assert s.stopped.status_name == refused.status_name == "NRT_RESOURCE"
    assert (s.stopped.status, s.stopped.message) == (refused.status, refused.message)
    assert repr(s) == f"Solve({LARGE}@0,0: {n} copies, then NRT_RESOURCE)"
    # Without @: over every logical core of the instance.
    every = neffld.plan(instance="trn2.3xlarge", solve=str(LARGE)).solve
    assert [c for c, _ in every.per_core] == [0, 1, 2, 3]
    assert every.ranks == sum(k for _, k in every.per_core)
    p = neffld.plan(f"{SMALL}@0-3", instance="trn2.3xlarge")
    assert repr(p.neffs[0]) == f"PlanNeff(1 {SMALL} on core 0)"
    t = p.tensors[0]
    assert repr(t) == f"PlanTensor({t.name}: {t.size} bytes on core 0)"
    with pytest.raises(neffld.NeffError, match="has no step"):
        neffld.plan(instance="trn2.3xlarge")


def test_a_neff_that_cannot_load_is_not_counted_as_no_room():
    # matmul_small is compiled for LNC 2: at LNC 1 it cannot load at all.
    p = neffld.plan(f"{SMALL}@0", instance="trn2.3xlarge", lnc=1)
    copies = p.headroom[0].copies[0]
    assert copies.count == 0
    assert copies.refused.status_name == p.steps[0].error.status_name == "NRT_INVALID"
    assert repr(copies) == f"Copies({SMALL}: cannot load, NRT_INVALID)"
    assert repr(p.headroom[0]).startswith("Headroom(core 0: ")
    pool = p.headroom[0].pools[0]
    assert repr(pool) == f"Pool(main: {pool.free} of {pool.capacity} bytes free, longest {pool.longest})"
    assert repr(p.instance) == "PlanInstance(trn2.3xlarge: 1 chip(s), LNC 1, 8 logical cores)"
    assert [a.argv[a.argv.index("--lnc") + 1] for a in p.advice if a.kind == "lnc"] == ["2"]


def test_each_advice_argv_plans_to_its_fits():
    # Two 11 GiB tensors on cores 0 and 1 at LNC 1 share HBM 0 (24 GiB):
    # refused, with advice (LNC 2, a placement) whose command lines fit.
    p = neffld.plan(instance="trn2.3xlarge", lnc=1, tensors=["kv=11GiB@0,1", "w=2GiB@0,1"])
    assert p.fits is False
    assert p.advice, p.to_dict()
    assert p.to_dict()["advice"][0]["argv"] == p.advice[0].argv
    for a in p.advice:
        assert a.argv[:2] == ["neffld", "plan"]
        assert neffld.plan_argv(a.argv).fits is a.fits, a.argv


def test_an_unused_page_size_and_a_refused_variable_are_said(monkeypatch):
    # A page size the contiguous scratchpad (the newest line, trn2 at LNC 2) does not
    # use is an attribute, as in the document.
    p = neffld.plan(SMALL, instance="trn2.3xlarge", env={"NEURON_SCRATCHPAD_PAGE_SIZE": "1024"})
    assert p.unused_page_size == 1 << 30 == p.to_dict()["unused_page_size"]
    # A variable's value the runtime refuses is stage "config", as in load.
    monkeypatch.setenv("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "maybe")
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(SMALL, instance="trn2.3xlarge")
    assert e.value.stage == "config"


@pytest.mark.parametrize(
    "kwargs, named",
    [
        ({"tensors": ["kv"]}, "tensors 'kv'"),
        ({"unloads": ["bad"]}, "unloads 'bad'"),
        ({"frees": ["bad"]}, "frees 'bad'"),
        ({"solve": "bad"}, "solve 'bad'"),
        ({"env": {"FOO": "1"}}, "env FOO=\"1\""),
    ],
)
def test_a_refused_argument_is_named_as_python_names_it(kwargs, named):
    # Not by the command's flag (--tensor 'kv', --env 'FOO=1').
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(SMALL, instance="trn2.3xlarge", **kwargs)
    assert e.value.stage == "usage"
    assert e.value.message.startswith(named), e.value.message
    assert "--" not in e.value.message.split(":")[0], e.value.message


def test_a_plan_notes_the_newest_lines_start_up_reservation():
    # Per logical core (one per HBM at LNC 2), the default line's plan
    # holds 64 MiB more than 2.34's, and says why.
    from conftest import LARGE

    def per_hbm(p):
        return [
            sum(c["used"] for c in h["cores"]) for h in p.memory["devices"][0]["hbms"]
        ]

    reserved = 64 << 20  # "64 MB per NeuronCore", SDK 2.33's runtime notes
    new = neffld.plan(f"{LARGE}@0", instance="trn2.3xlarge")
    old = neffld.plan(f"{LARGE}@0", instance="trn2.3xlarge", runtime="2.34")
    assert new.runtime == neffld.RUNTIME_LINES[-1]
    assert [a - b for a, b in zip(per_hbm(new), per_hbm(old))] == [reserved] * 4
    assert f"{4 * reserved >> 20} MiB on the 4 logical cores" in new.notes[0], new.notes
    assert old.notes == [] and new.to_dict()["notes"] == new.notes


def test_any_path_the_os_takes_is_a_load_and_no_word_raises_unicode_errors(tmp_path):
    # Issue 40 row 7: os.fsdecode's str of a non-UTF-8 name raised
    # UnicodeEncodeError; it is the file's path.
    odd = os.path.join(os.fsdecode(bytes(tmp_path)), os.fsdecode(b"\xff.neff"))
    shutil.copy(SMALL, os.fsencode(odd))
    p = neffld.plan(f"{odd}@0", instance="trn2.3xlarge", unloads=[f"{odd}@0"])
    assert p.fits is True and [s.kind for s in p.steps] == ["load", "unload"]
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(os.fsdecode(b"\xfe.neff") + "@0", instance="trn2.3xlarge")
    assert e.value.stage == "io"
    # A word that must be text is refused as a value, never UnicodeEncodeError.
    for kwargs in (
        {"tensors": [os.fsdecode(b"kv\xff=4096@0")]},
        {"frees": [os.fsdecode(b"kv\xff@0")]},
        {"instance": os.fsdecode(b"trn2\xff")},
        {"env": {"NEURON_RT_VISIBLE_CORES": os.fsdecode(b"\xff")}},
    ):
        with pytest.raises(neffld.NeffError) as e:
            neffld.plan(f"{SMALL}@0", **kwargs)
        assert e.value.stage == "usage" and "not UTF-8" in e.value.message, kwargs
    # A str no file system can write (a lone surrogate) is the wrong type of
    # word, as for load.
    with pytest.raises(TypeError):
        neffld.plan("\ud800.neff")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    # Issue 40 row 7: the plan blocked in the open of a FIFO with no writer.
    fifo = tmp_path / "f.neff"
    os.mkfifo(fifo)
    code = (
        "import neffld, sys\n"
        "try:\n"
        f"    neffld.plan({str(fifo)!r} + '@0', instance='trn2.3xlarge')\n"
        "except neffld.NeffError as e:\n"
        "    print(e.stage, e.message)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("io ") and "this is a FIFO" in out.stdout, out


def test_a_damaged_neff_is_named_damaged(tmp_path):
    # Issue 40 row 15: a NEFF cut short is damaged, not "does not fit".
    cut = tmp_path / "cut.neff"
    cut.write_bytes(SMALL.read_bytes()[:-100])
    p = neffld.plan(f"{cut}@0", instance="trn2.3xlarge")
    assert p.fits is False and p.steps[0].error.damaged is True
    assert p.no_fix is None and p.advice == []


def test_a_tensor_named_like_a_flag_is_advised_a_size_that_re_plans():
    # Issue 40 rows 4 and 12: a refused tensor named "-t" is advised the
    # largest size that fits; its argv (`--tensor=-t=...`) plans again, as
    # said (`--tensor -t=...` was "unexpected argument '-t'").
    p = neffld.plan(f"{SMALL}@0", instance="trn2.3xlarge", tensors=["-t=30GiB@0"])
    assert p.fits is False
    sized = [a for a in p.advice if a.kind == "tensor_size"]
    assert len(sized) == 1 and sized[0].fits is True
    assert f"--tensor=-t={sized[0].size}@0" in sized[0].argv
    assert 20 * GIB < sized[0].size < 24 * GIB
    again = neffld.plan_argv(sized[0].argv)
    assert again.fits is True and again.steps[-1].size == sized[0].size
