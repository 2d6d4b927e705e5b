"""neffld.load: the model on a simulated device, its cores, memory, images,
variables and tensors; unloaded when the with-block ends."""

import ast
import io
import json
from pathlib import Path

import numpy as np
import pytest

import neffld
from conftest import ALL, KFUSION, LARGE, SMALL, UUID, members

ENGINES = {"pe", "act", "pool", "dve", "sp"}


def test_matmul_small_loads_on_two_physical_cores(small_bytes):
    with neffld.load(SMALL) as m:
        assert m.loaded
        assert (m.name, m.uuid) == ("file.neff", small_bytes[UUID])
        assert m.arch == "trn2" and m.device == "sim"
        assert m.vnc == 0
        assert len(m.cores) == 2 and m.pcores == [c.pcore for c in m.cores]
        assert len(set(m.pcores)) == 2
        assert [c.subgraph for c in m.cores] == ["sg00", "sg01"]
        tensors = [(t.name, t.usage, t.dtype, t.shape, t.size) for t in m.tensors]
        assert tensors == [
            ("x", "input", "float16", (128, 256), 65536),
            ("y", "input", "float16", (256, 128), 65536),
            ("output0", "output", "float16", (128, 128), 32768),
        ]
        assert [t.name for t in m.inputs] == ["x", "y"]
        assert [t.name for t in m.outputs] == ["output0"]
    assert not m.loaded


def test_variables_follow_def_json(small_bytes):
    import json

    with neffld.load(small_bytes) as m:
        for core in m.cores:
            spec = json.loads(members(SMALL)[f"{core.subgraph}/def.json"])["var"]
            got = {v.name: (v.var_id, v.type) for v in core.variables}
            assert got == {n: (d["var_id"], d["type"]) for n, d in spec.items()}
            by_name = {v.name: v for v in core.variables}
            for n in ("x", "y", "output0"):
                assert (by_name[n].placement, by_name[n].address) == ("io", None)
            w = by_name["identity_82_sg0000"]
            assert w.placement == "hbm" and w.address and w.size == spec[w.name]["size"]
            assert w.address % spec[w.name]["alignment"] == 0


def test_memory_is_charged_per_core_and_released_on_unload():
    m = neffld.load(SMALL)
    for core in m.cores:
        assert all(isinstance(k, str) and v >= 0 for k, v in core.memory.items())
        assert any(core.memory.values()), "every staged core charges device memory"
        # The weight, a 128x128 float16 identity, is charged on each core.
        assert core.memory["Weights"] == 128 * 128 * 2
    stats = m.memory_stats()
    assert stats["used"] == sum(sum(c.memory.values()) for c in m.cores)
    assert stats["limit"] > stats["used"]
    m.unload()
    # Everything the model charged is released: at least its two weights.
    assert m.memory_stats()["used"] <= stats["used"] - 2 * 128 * 128 * 2
    m.unload()  # a second unload does nothing


def test_images_are_the_engines_instruction_streams():
    with neffld.load(SMALL) as m:
        addresses = set()
        for core in m.cores:
            assert set(core.images) == ENGINES == set(core.image_addresses)
            for engine, image in core.images.items():
                assert isinstance(image, bytes) and image
                # Neuron instructions are 64-byte records.
                assert len(image) % 64 == 0
                addresses.add(core.image_addresses[engine])
        assert len(addresses) == 2 * len(ENGINES)



def test_images_are_the_loads_own_on_either_device():
    # The images are what the load relocated and copied to the device, kept
    # by the load: the "null" device, which keeps no bytes, has them too,
    # and the stub says so rather than promising bytes read back from it.
    with neffld.load(SMALL, device="sim") as sim, neffld.load(SMALL, device="null") as null:
        for a, b in zip(sim.cores, null.cores, strict=True):
            assert a.images == b.images and all(a.images.values())
            assert a.image_addresses == b.image_addresses
    stub = ast.parse(Path(neffld.__file__).with_name("__init__.pyi").read_text())
    core = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Core")
    body = core.body
    at = next(i for i, n in enumerate(body) if isinstance(n, ast.AnnAssign) and n.target.id == "images")
    doc = " ".join(body[at + 1].value.value.split())
    assert "as read back from the device" not in doc and "empty" not in doc
    assert 'the same on the "sim" and the "null" device' in doc

def test_the_weight_is_the_npy_member_without_a_copy():
    # The independent reading: numpy's own loader on the archive member.
    member = members(SMALL)["sg00/value_sg0000_identity_82_CRSM.npy"]
    expected = np.load(io.BytesIO(member))
    with neffld.load(SMALL) as m:
        w = m.weights["identity_82_sg0000"]
        assert (w.dtype, w.shape, w.size) == ("float16", expected.shape, expected.nbytes)
        a = w.numpy()
        assert a.dtype == np.float16 and a.shape == expected.shape
        assert np.array_equal(a, expected)
        # It is an identity matrix.
        assert np.array_equal(a.reshape(128, 128), np.eye(128, dtype=np.float16))
        # No copy: numpy views the weight's own buffer, read-only.
        assert not a.flags.writeable and not a.flags.owndata
        raw = np.frombuffer(w, dtype=np.uint8)
        assert np.shares_memory(raw, np.frombuffer(w, dtype=np.float16))
        assert raw.__array_interface__["data"][0] == a.__array_interface__["data"][0]
        mv = memoryview(w)
        assert mv.readonly and mv.nbytes == w.size and len(w) == w.size
        with pytest.raises((TypeError, BufferError, ValueError)):
            np.frombuffer(w, dtype=np.uint8)[0] = 1


def test_start_core_and_arch_are_honoured():
    with neffld.load(SMALL, arch="trn2", start_core=2) as m:
        assert m.vnc == 2
        # LNC 2 on trn2: logical core 2 is physical cores 4 and 5.
        assert m.pcores == [4, 5]


def test_the_runtime_line_is_an_option():
    with neffld.load(SMALL, device="null") as m:
        # The runtime users run, on every chip: the newest line.
        assert m.runtime == neffld.RUNTIME_LINES[-1]
    # matmul_large's subgraphs need 8 MiB of scratchpad each: one 64 MiB
    # step of the contiguous region per core (2.33 on) ...
    with neffld.load(LARGE, device="null") as m:
        assert m.cores[0].memory["Shared Scratchpad"] == 64 << 20
    # ... where 2.30 holds one 512 MiB page.
    with neffld.load(LARGE, device="null", runtime="2.30") as m:
        assert m.cores[0].memory["Shared Scratchpad"] == 512 << 20
    with neffld.load(SMALL, device="null", runtime="2.27.23") as m:
        assert m.runtime == "2.27"
        # 2.27's instruction block beside pe's image: 1600 bytes.
        pe = m.cores[0].memory["Tensor Instructions"]
    with neffld.load(SMALL, device="null", runtime="2.30") as m:
        assert m.cores[0].memory["Tensor Instructions"] != pe
    with pytest.raises(neffld.NeffError) as e:
        neffld.load(SMALL, runtime="2.26")
    assert "'2.26'" in str(e.value)


def test_the_null_device_loads_too():
    with neffld.load(LARGE, device="null") as m:
        assert m.device == "null"
        assert m.inputs[1].shape == (32768, 65536)
        assert m.inputs[1].size == 32768 * 65536 * 2


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_every_fixture_loads_and_unloads(path):
    info = neffld.inspect(path)
    with neffld.load(path) as m:
        assert (m.name, m.uuid, m.arch) == (info.name, info.uuid, info.target)
        assert {t.name for t in m.inputs} == {t.name for t in info.inputs}
        assert {t.name for t in m.outputs} == {t.name for t in info.outputs}
        assert len(m.cores) == len(info.subgraphs)
        for c in m.cores:
            assert c.images and c.memory and c.variables
    assert not m.loaded


def test_an_exception_in_the_block_still_unloads():
    with pytest.raises(RuntimeError):
        with neffld.load(KFUSION[0]) as m:
            used = m.memory_stats()["used"]
            weights = sum(c.memory["Weights"] for c in m.cores)
            raise RuntimeError("boom")
    assert not m.loaded
    assert weights > 0
    assert m.memory_stats()["used"] <= used - weights


def test_a_model_says_where_its_line_comes_from():
    # As `neffld load --json` does: the trn1 demo under the default line
    # carries 2.23's captures (of trn1) over; 2.23 itself carries nothing.
    demo = Path(__file__).resolve().parents[3] / "examples" / "demo.neff"
    p = neffld.load(demo).runtime_provenance
    newest = neffld.RUNTIME_LINES[-1]
    assert (p["line"], p["captured_by"], p["captured_on"]) == (newest, "2.23", "trn1")
    assert "memory rows" in p["carried_over"]
    # The documented facts of the lines after 2.23 up to the newest, each
    # with its source.
    assert [n["line"] for n in p["notes"]][-1] == newest
    assert all(n["source"] and n["fact"] for n in p["notes"])
    p = neffld.load(demo, runtime="2.23").runtime_provenance
    assert (p["captured_on"], p["carried_over"]) == ("trn1", [])
    p = neffld.load(demo, runtime="2.30").runtime_provenance
    assert p["captured_on"] == "trn2" and p["carried_over"], p


def test_shapes_print_as_the_tuples_they_are():
    m = neffld.load(SMALL)
    t = m.tensors[0]
    assert isinstance(t.shape, tuple)
    assert f"shape={t.shape}" in repr(t)


def test_the_signature_shows_the_defaults():
    import inspect

    sig = inspect.signature(neffld.load)
    assert sig.parameters["start_core"].default == -1
    assert sig.parameters["device"].default == "sim"


def test_an_image_says_how_much_of_it_is_placeholder():
    # Placeholder slots start with the marker; the count is theirs. The
    # captured line on trn2 (2.30) has none; the default line carries 2.30's
    # code over to trn2, also none; a trn1 NEFF under the newest line
    # carries 2.23's.
    marker = bytes.fromhex("ff6e6566666c643f")
    demo = Path(__file__).resolve().parents[3] / "examples" / "demo.neff"
    for path, runtime in ((SMALL, "2.30"), (demo, neffld.RUNTIME_LINES[-1])):
        for core in neffld.load(path, runtime=runtime).cores:
            for engine, image in core.images.items():
                slots = [image[i : i + 64] for i in range(0, len(image), 64)]
                placeholders = sum(s.startswith(marker) for s in slots)
                assert core.image_filler_slots[engine] == placeholders, (path, engine)


def test_the_newest_line_reserves_64_mib_per_neuroncore_for_dma_profiling():
    # Runtime 2.35 (the default) takes 64 MiB per NeuronCore at start for
    # host-device DMA profiling (SDK 2.33's runtime notes): on the first
    # physical core of the logical core, under Profiler Buffers, and in
    # nrt_get_vnc_memory_stats; 2.34 does not.
    mib = 1 << 20
    with neffld.load(LARGE, device="null") as new, neffld.load(
        LARGE, device="null", runtime="2.34"
    ) as old:
        assert new.runtime == neffld.RUNTIME_LINES[-1]
        assert new.cores[0].memory["Profiler Buffers"] == 64 * mib
        assert new.cores[1].memory.get("Profiler Buffers", 0) == 0
        assert old.cores[0].memory.get("Profiler Buffers", 0) == 0
        grown = new.memory_stats()["used"] - old.memory_stats()["used"]
        assert grown == 64 * mib
        assert len(new.notes) == 1 and "64 MiB per NeuronCore" in new.notes[0]
        assert old.notes == []


def test_the_dma_profiling_reservation_can_be_left_out(monkeypatch):
    monkeypatch.setenv("NEFFLD_DMA_PROFILING", "0")
    with neffld.load(LARGE, device="null") as m:
        assert m.cores[0].memory.get("Profiler Buffers", 0) == 0
        assert "NEFFLD_DMA_PROFILING=0 leaves it out" in m.notes[0]


def test_a_visible_core_is_core_0_and_says_which_core_of_the_device_it_is(monkeypatch):
    """NEURON_RT_VISIBLE_CORES=2: the model is on the runtime's core 0 (what
    start_core takes), the device's logical core 2 (trn2 at LNC 2: physical
    cores 4 and 5); memory_stats() asks about that core. Model.vnc said 2 and
    memory_stats() raised ("visible vncs: 1")."""
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "2")
    for start in (-1, 0):
        with neffld.load(SMALL, start_core=start) as m:
            assert (m.vnc, m.instance_vnc, m.pcores) == (0, 2, [4, 5])
            assert m.memory_stats()["used"] > 0
    with pytest.raises(neffld.NeffError):
        neffld.load(SMALL, start_core=2)


def test_io_tensors_are_what_the_load_does_not_hold_counted_as_plan_counts_them():
    """matmul_large's inputs and outputs (4 GiB: the input and output
    variables of its subgraphs' def.json, by name, read with tarfile) are not
    held by the load; with them, the model's HBM is what the plan of the same
    NEFF reports."""
    io_vars = {}
    for name, data in members(LARGE).items():
        if name.endswith("/def.json"):
            for var, v in json.loads(data)["var"].items():
                if v.get("type") in ("input", "output"):
                    io_vars[var] = v["size"]
    sizes = list(io_vars.values())
    planned = neffld.plan(str(LARGE)).memory["devices"][0]["hbms"][0]
    with neffld.load(LARGE) as m:
        io = m.io_tensors
        assert (io.count, io.bytes, io.fits, io.error) == (len(sizes), sum(sizes), True, None)
        assert (io.hbm_used[0], io.hbm_free[0]) == (planned["used"], planned["free"])
        # The load itself holds none of it.
        held = m.memory_stats()["used"]
        assert held < sum(sizes) and held + sum(sizes) <= io.hbm_used[0]
