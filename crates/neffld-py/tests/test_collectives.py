"""Tensor-parallel NEFFs: inspect and load list each collective, checked
against the NEFF's own engine streams and def.json, read here with the
standard library only."""

import json
import struct
from pathlib import Path

import neffld
from conftest import members

WRITTEN = Path(__file__).resolve().parents[3] / "testdata" / "written"
SAMPLE = WRITTEN / "collectives_sample.neff"
RANK1 = WRITTEN / "collectives_tp2_rank1.neff"

# The collective type byte (PTC +0x20, PTC2 +0x0e) and the ALU op byte.
CTYPES = {1: "all-reduce", 2: "reduce-scatter", 3: "all-gather"}
ALU = {4: "add", 6: "mult", 8: "max", 9: "min"}


def records(stream):
    return [stream[i : i + 64] for i in range(0, len(stream), 64)]


def var_names(def_json):
    return {v["var_id"]: name for name, v in def_json["var"].items()}


def test_the_samples_all_reduce_is_what_its_pe_stream_says():
    m = members(SAMPLE)
    [rec] = records(m["sg00/pe.bin"])
    assert rec[0] == 0xC8
    group, in_id, out_id, n = struct.unpack_from("<HIIQ", rec, 14)
    names = var_names(json.loads(m["sg00/def.json"]))
    for c in (neffld.inspect(SAMPLE).collectives[0], neffld.load(SAMPLE).collectives[0]):
        assert (c.subgraph, c.engine, c.index, c.form) == ("sg00", "pe", 0, "ptc")
        assert c.operation == CTYPES[rec[0x20]]
        assert c.reduce == ALU[rec[12]]
        assert c.dtype == "float32" and rec[13] == 0x0A
        assert (c.elements_in, c.elements_out) == (n, n)
        assert c.bytes_out == 4 * n
        assert (c.group, c.groups, c.group_size) == (group, [], 1)
        assert (c.input, c.output) == (names[in_id], names[out_id])
        assert c.peer is None and c.chaining == "none"
        assert "all-reduce" in repr(c)


def test_a_ranks_collectives_and_their_peers():
    m = members(RANK1)
    stream = records(m["sg00/PE.bin"])
    d = json.loads(m["sg00/def.json"])
    [[group]] = d["replica_groups"]
    ranks = len(group)
    names = var_names(d)
    with neffld.load(RANK1) as model:
        got = model.collectives
        assert model.collectives_memory == (
            f"collectives memory not counted: {len(got)} collectives in 1 replica group"
        )
    # Every PTC, PTC2 and PSR of the stream, in order: PTC2's extension
    # (0xDA) and the rank-id and global-id loads are not collectives.
    kinds = [(i, r) for i, r in enumerate(stream) if r[0] in (0xC8, 0xD9, 0xCB)]
    assert [c.index for c in got] == [i for i, _ in kinds]
    for c, (i, r) in zip(got, kinds):
        if r[0] == 0xC8:
            n = struct.unpack_from("<Q", r, 24)[0]
            op = CTYPES[r[0x20]]
            assert c.operation == op
            spans_in = op == "reduce-scatter"
            spans_out = op == "all-gather"
            assert c.elements_in == n * (ranks if spans_in else 1)
            assert c.elements_out == n * (ranks if spans_out else 1)
            assert c.groups == [group] and c.group_size == ranks
        elif r[0] == 0xD9:
            rows, cols = struct.unpack_from("<II", r, 32)
            assert (c.form, c.operation, c.elements_in) == ("ptc2", CTYPES[r[14]], rows * cols)
        else:
            tensor, peer, send = struct.unpack_from("<IQB", r, 12)
            assert c.form == "psr"
            assert c.operation == ("send" if send else "receive")
            assert c.peer == peer
            assert (c.input if send else c.output) == names[tensor]
    # Rank 1 of 2 sends to rank 0 and receives from rank 0.
    assert [(c.operation, c.peer) for c in got if c.peer is not None] == [
        ("send", 0),
        ("receive", 0),
    ]


def test_a_neff_without_collectives_lists_none(small_bytes):
    assert neffld.inspect(small_bytes).collectives == []
    with neffld.load(small_bytes) as m:
        assert m.collectives == [] and m.collectives_memory is None
