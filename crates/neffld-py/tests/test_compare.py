"""neffld.compare against the ten real hardware captures, with the capture
side checked against the profiler's own JSON report of each capture."""

import json
from pathlib import Path

import pytest

import neffld
from conftest import FIXTURES

CAPTURES = FIXTURES.parent / "captures"
PAIRS = sorted(CAPTURES.glob("*.ntff"))


def report(ntff):
    return json.loads(ntff.with_suffix("").with_suffix(".profile.json").read_text())


def rows_of(rep, nc):
    """The report's memory rows of one core, without its "Total" line."""
    rows = {r["usage_type"]: r["amount_bytes"] for r in rep["nc_mem_usage"] if r["nc"] == nc}
    total = rows.pop("Total")
    assert total == sum(rows.values())
    return rows


def test_there_are_ten_captures():
    assert len(PAIRS) == 10


@pytest.mark.parametrize("ntff", PAIRS, ids=lambda p: p.stem)
def test_the_capture_side_is_the_profilers_report(ntff):
    neff = FIXTURES / (ntff.stem + ".neff")
    cmp = neffld.compare(neff, ntff)
    rep = report(ntff)
    # The captures ran on logical core 2: physical cores 4 and 5.
    assert [c.pcore_capture for c in cmp.cores] == [4, 5]
    # neffld loads on the capture's logical core, so its cores match.
    assert [c.pcore_ours for c in cmp.cores] == [4, 5]
    for core in cmp.cores:
        assert {i.engine for i in core.images} == {"pe", "act", "pool", "dve", "sp"}
        rows = rows_of(rep, core.pcore_capture)
        assert {r.usage_type: r.capture for r in core.memory if r.capture is not None} == rows
        assert all(r.equal == (r.ours == r.capture) for r in core.memory)
    assert bool(cmp) == cmp.agrees == all(c.agrees for c in cmp.cores)
    # The captures' runtime is 2.30.51; its code is known byte for byte.
    assert cmp.runtime_line == "2.30"
    assert all(i.filler_slots == 0 and i.approximate_records == 0 for c in cmp.cores for i in c.images)
    # Each part prints what it holds, as Python writes it.
    assert repr(cmp) == f"Comparison(agrees=True, cores={len(cmp.cores)})"
    core = cmp.cores[0]
    assert repr(core) == f"CoreComparison({core.subgraph}: agrees=True)"
    i = core.images[0]
    assert repr(i).startswith(f"ImageComparison({i.engine}: agrees=True, address {i.address}, words {i.words}/{i.words} equal")
    r = core.memory[0]
    assert repr(r).startswith(f"RowComparison({r.usage_type}: ours {r.ours}, capture {r.capture}, equal=")
    # Every word of every image is compared, the runtime's own code too.
    for i in (i for c in cmp.cores for i in c.images):
        assert i.words == i.ours["bytes"] // 8 == i.capture["bytes"] // 8
        assert i.words_equal == i.words or not i.agrees


@pytest.mark.parametrize("ntff", PAIRS[:2], ids=lambda p: p.stem)
def test_a_models_memory_keys_are_the_runtimes_row_names(ntff):
    # The profiler's report lists the runtime's memory rows by usage type;
    # a loaded model's cores use the same names.
    names = set(rows_of(report(ntff), 4))
    with neffld.load(FIXTURES / (ntff.stem + ".neff")) as m:
        for core in m.cores:
            assert set(core.memory) == names


def test_bad_captures_raise_neff_error(small_bytes):
    ntff = PAIRS[0]
    neff = FIXTURES / (ntff.stem + ".neff")
    with pytest.raises(neffld.NeffError) as e:
        neffld.compare(neff, b"\0" * 16)
    assert e.value.stage == "capture" and e.value.status != 0
    with pytest.raises(neffld.NeffError) as e:
        neffld.compare(b"\0" * 10, ntff)
    assert (e.value.stage, e.value.status) == ("container", 2)


def test_all_ten_agree_with_the_pool_sp_race_reported_as_such():
    raced = 0
    for ntff in PAIRS:
        cmp = neffld.compare(FIXTURES / (ntff.stem + ".neff"), ntff)
        assert cmp.agrees, ntff.stem
        marks = [i.address for c in cmp.cores for i in c.images]
        assert set(marks) <= {"same", "raced"}
        raced += "raced" in marks
    assert raced == 5


def test_a_capture_of_another_neff_is_refused():
    with pytest.raises(neffld.NeffError) as e:
        neffld.compare(FIXTURES / "matmul_small.neff", PAIRS[0])
    assert e.value.status == 2 and "another NEFF" in e.value.message
