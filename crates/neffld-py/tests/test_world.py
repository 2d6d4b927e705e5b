"""neffld.plan(world=...): the loads as the ranks of one collectives world,
compared before any load, over the 32-rank example of examples/world32 (a
NEFF of one replica group of 32 ranks)."""

from pathlib import Path

import pytest

import neffld

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "world32"
TP32 = EXAMPLE / "tp32.neff"


def test_the_example_deployment_is_a_world_that_agrees():
    p = neffld.plan(str(EXAMPLE / "deploy.toml"))
    assert p.fits is True
    w = p.world
    assert isinstance(w, neffld.PlanWorld)
    assert (w.size, w.hosts, w.cores_per_host) == (32, 1, 64)
    assert w.agrees is True and w.disagreements == []
    assert w.root_comm_assumed is True
    assert [r.rank for r in w.ranks] == list(range(32))
    assert all(r.host == 0 and r.loaded and r.collectives == 4 for r in w.ranks)
    loads = [n for n in p.neffs]
    assert [n.rank for n in loads] == list(range(32))
    assert loads[5].collectives_not_counted == (
        "collectives memory not counted: 4 collectives in 1 replica group on rank 5"
    )
    assert p.to_dict()["world"]["size"] == 32


def test_a_rank_whose_peer_never_loads_is_a_deadlock():
    p = neffld.plan(f"{TP32}@0-30", instance="trn2.48xlarge", world=32)
    assert p.fits is False
    d = p.world.disagreements[0]
    assert isinstance(d, neffld.Disagreement)
    assert (d.kind, d.ranks, d.step) == ("deadlock", (31, 0), 0)
    assert "waits for rank 31" in d.what
    e = p.steps[0].error
    assert (e.stage, e.status_name) == ("collectives", "NRT_TIMEOUT")


def test_a_rank_beyond_the_world_is_refused_by_its_load():
    # Groups of 32 ranks in a world of 2: rank 2 and on are beyond it.
    p = neffld.plan(f"{TP32}@0-1", instance="trn2.48xlarge", world=2)
    assert p.fits is False
    e = p.steps[0].error
    assert (e.stage, e.status_name) == ("collectives", "NRT_RESOURCE")
    assert "beyond the world of 2 ranks" in e.message


def test_world_arguments_are_checked():
    with pytest.raises(TypeError):
        neffld.plan(str(TP32), world="2")
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(str(TP32), world=0)
    assert e.value.stage == "usage"
    with pytest.raises(neffld.NeffError) as e:
        neffld.plan(f"{TP32}@0", hosts=2)
    assert "name the world too" in str(e.value)
