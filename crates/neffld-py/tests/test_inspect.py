"""neffld.inspect on the real fixtures, checked against facts from outside
the library: the fixtures' README, the header bytes, and neff.json read with
Python's own tarfile."""

import re

import pytest

import neffld
from conftest import ALL, KFUSION, NAME, SMALL, UUID, neff_json


def test_matmul_small_io_matches_the_fixture_readme():
    info = neffld.inspect(SMALL)
    got = [(t.name, t.dtype, t.shape, t.size) for t in info.inputs]
    assert got == [
        ("x", "float16", (128, 256), 128 * 256 * 2),
        ("y", "float16", (256, 128), 256 * 128 * 2),
    ]
    out = [(t.name, t.dtype, t.shape, t.size) for t in info.outputs]
    assert out == [("output0", "float16", (128, 128), 128 * 128 * 2)]
    assert all(t.usage == "input" for t in info.inputs)
    assert info.outputs[0].usage == "output"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_uuid_and_name_are_the_header_bytes(path):
    data = path.read_bytes()
    info = neffld.inspect(str(path))
    assert isinstance(info.uuid, bytes)
    assert info.uuid == data[UUID]
    assert info.name == data[NAME].split(b"\0")[0].decode()


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_every_fixture_is_trn2_with_its_signature_inputs(path):
    # All twelve were compiled for cayman (trn2) with --lnc=2 (fixtures README).
    info = neffld.inspect(path.read_bytes())
    assert info.target == "trn2"
    assert info.lnc == 2
    assert len(info.subgraphs) == 2
    sig = neff_json(path)["metadata"]["signatures"]["default"]["inputs"]
    expected = sorted((n, s["dtype"], tuple(s["shape"])) for n, s in sig.items())
    assert sorted((t.name, t.dtype, t.shape) for t in info.inputs) == expected


@pytest.mark.parametrize("path", KFUSION, ids=lambda p: p.stem)
def test_kfusion_dtype_and_shape_follow_the_file_name(path):
    # kfusion__<variant>_<bf16|fp32>_s<N>__...: q_ref, k_ref, v_ref of [128, N].
    m = re.search(r"_(bf16|fp32)_s(\d+)__", path.name)
    info = neffld.inspect(path)
    assert [t.name for t in info.outputs] == ["kernel_out"]
    assert {t.name for t in info.inputs} == {"q_ref", "k_ref", "v_ref"}
    if m:
        dtype = {"bf16": "bfloat16", "fp32": "float32"}[m.group(1)]
        n = int(m.group(2))
        width = {"bfloat16": 2, "float32": 4}[dtype]
        for t in info.inputs:
            assert (t.dtype, t.shape, t.size) == (dtype, (128, n), 128 * n * width)


def test_paths_bytes_bytearray_and_memoryview_agree(small_bytes):
    by_path = neffld.inspect(SMALL)
    for src in (str(SMALL), small_bytes, bytearray(small_bytes), memoryview(small_bytes)):
        info = neffld.inspect(src)
        assert (info.name, info.uuid, info.target) == (by_path.name, by_path.uuid, by_path.target)
        assert [t.shape for t in info.inputs] == [t.shape for t in by_path.inputs]


def test_members_are_the_archive_members():
    from conftest import members

    assert set(neffld.inspect(SMALL).members) == set(members(SMALL))
