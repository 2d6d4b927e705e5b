"""neffld.nrtpy: nrtpy's documented API over the simulated runtime --
configuration, loads, tensor metadata, device tensors whose bytes round-trip
through the device, the documented errors, and execution refused as an
NrtError. Facts about the NEFFs are read from their own neff.json."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import KFUSION, SMALL, neff_json
from neffld import nrtpy
from neffld.nrtpy import NrtError, NrtpyError, NrtpyModel, NrtpyTensor

ATTENTION = next(p for p in KFUSION if p.name == "kfusion__baseline_attention__baseline.neff")
DOCS = Path(__file__).with_name("nrtpy_docs") / "from_the_docs.py"
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


@pytest.fixture(autouse=True)
def fresh_runtime(monkeypatch):
    """Each test starts with no runtime and the environment it had."""
    for var in ("NEURON_RT_VISIBLE_CORES", "NEFFLD_ARCH", "NEFFLD_INSTANCE", "NEFFLD_DEVICE"):
        monkeypatch.delenv(var, raising=False)
    nrtpy.reset()
    yield
    nrtpy.reset()


def declared_io(path):
    """Inputs and outputs by name -> (shape, bytes), read from the NEFF's
    own neff.json graph: arg_nodes are the inputs, heads the outputs, each
    an entry of the shape and dltype lists through node_row_ptr."""
    j = neff_json(path)
    shapes, dtypes, row = j["attrs"]["shape"][1], j["attrs"]["dltype"][1], j["node_row_ptr"]

    def entry(node, index):
        e = row[node] + index
        return list(shapes[e]), int(np.prod(shapes[e])) * ITEMSIZE[dtypes[e]]

    inputs = {j["nodes"][n]["name"]: entry(n, 0) for n in j["arg_nodes"]}
    outputs = {j["nodes"][n]["output_names"][i]: entry(n, i) for n, i, _ in j["heads"]}
    return inputs, outputs


def test_tensors_info_is_the_neffs_own_inputs_and_outputs_by_name():
    for path in (SMALL, ATTENTION):
        model = NrtpyModel.load_from_neff(path)
        for info, want in zip((model.input_tensors_info, model.output_tensors_info), declared_io(path)):
            assert isinstance(info, dict)
            assert {k: (v.shape, v.size) for k, v in info.items()} == want
            assert all(isinstance(v.shape, list) for v in info.values())
        assert model.name == path.stem


def test_tutorial_metadata_prints_as_documented():
    # The debug tutorial's expected output for a 128x512 float32 input.
    info = NrtpyModel.load_from_neff(ATTENTION).input_tensors_info["q_ref"]
    assert f"shape={info.shape}, size={info.size}" == "shape=[128, 512], size=262144"


def test_from_numpy_round_trips_through_the_device():
    rng = np.random.default_rng(7)
    arrays = [
        rng.standard_normal((128, 512)).astype(np.float32),
        rng.integers(-(2**15), 2**15, (3, 5, 7), dtype=np.int16),
        np.asfortranarray(rng.standard_normal((16, 9))),  # made contiguous first
        rng.standard_normal((64, 64)).astype(np.float16)[::2, 1::3],  # a strided view
        np.array(3.5, dtype=np.float64),  # 0-d
        np.frombuffer(bytes(range(12)), dtype="V4"),  # void, as nrtpy's outputs may be
    ]
    tensors = [NrtpyTensor.from_numpy(a, name=f"t{i}") for i, a in enumerate(arrays)]
    for a, t in zip(arrays, tensors):
        back = t.numpy()
        assert (back.shape, back.dtype) == (a.shape, a.dtype) == (t.shape, t.dtype)
        assert back.tobytes() == np.ascontiguousarray(a).tobytes()
        assert back.flags.writeable and back.flags.c_contiguous
    # Each tensor holds its own bytes: rewriting one changes only it.
    tensors[0].write_from_numpy(np.zeros((128, 512), np.float32))
    assert not tensors[0].numpy().any()
    assert tensors[1].numpy().tobytes() == arrays[1].tobytes()
    assert [t.name for t in tensors[:2]] == ["t0", "t1"]


def test_write_from_numpy_checks_bytes_not_shape_or_dtype():
    t = NrtpyTensor.from_numpy(np.ones((1, 10), np.float32), name="input")
    t.write_from_numpy(np.arange(40, dtype=np.uint8))  # 40 bytes: accepted
    assert t.numpy().tobytes() == bytes(range(40))
    assert (t.shape, t.dtype) == ((1, 10), np.float32)
    for wrong in (np.zeros(11, np.float32), np.zeros((1, 10), np.float64), np.zeros(0, np.uint8)):
        with pytest.raises(ValueError, match="40 bytes"):
            t.write_from_numpy(wrong)
    with pytest.raises(TypeError):
        t.write_from_numpy([0.0] * 10)


def test_bytes_live_on_the_device_not_in_the_object():
    # On the accounting-only device nothing is kept, so reading back fails:
    # numpy() reads the device, never a host copy.
    code = (
        "import numpy as np\n"
        "from neffld.nrtpy import NrtpyTensor, NrtError\n"
        "t = NrtpyTensor.from_numpy(np.ones(4, np.float32))\n"
        "try:\n    t.numpy()\nexcept NrtError as e:\n    print(e.status_name, str(e))\n"
    )
    env = dict(os.environ, NEFFLD_DEVICE="null")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.startswith("NRT_FAILURE NRT Error NRT_FAILURE(1): Failed to read tensor: ")


def test_cores_follow_configure_and_the_visible_set():
    nrtpy.configure(visible_cores=range(2))
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "0,1"
    a = NrtpyTensor.from_numpy(np.ones(8, np.float32), core_id=0)
    b = NrtpyTensor.from_numpy(np.ones(8, np.float32), core_id=1)
    assert (a.tensor_ref.core_id, b.tensor_ref.core_id) == (0, 1)
    with pytest.raises(NrtError) as e:
        NrtpyTensor.from_numpy(np.ones(8, np.float32), core_id=2)
    assert (e.value.status, e.value.status_name) == (2, "NRT_INVALID")
    assert "visible vncs: 2" in str(e.value)
    with pytest.raises(NrtError):
        NrtpyModel.load_from_neff(SMALL, core_id=-1)


def test_configure_is_refused_once_the_runtime_is_active_and_reset_clears_it(monkeypatch):
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "3")
    nrtpy.configure(visible_cores=[0, 1])
    NrtpyTensor.from_numpy(np.ones(2, np.float32))
    with pytest.raises(NrtpyError) as e:
        nrtpy.configure(visible_cores=[2])
    assert isinstance(e.value, RuntimeError)
    nrtpy.reset()
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "3"  # as before configure
    nrtpy.configure(visible_cores=[2, 3])
    nrtpy.configure()  # None leaves it as it is
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "2,3"
    nrtpy.reset()
    nrtpy.reset()  # a no-op when nothing runs


@pytest.mark.parametrize(
    "given, error",
    [
        (3, TypeError),
        (True, TypeError),
        ([0, "1"], TypeError),
        ([0, 1.0], TypeError),
        (object(), TypeError),
        ([0, -1], ValueError),
        ([], ValueError),
    ],
)
def test_configure_refuses_as_documented(given, error):
    with pytest.raises(error):
        nrtpy.configure(visible_cores=given)
    assert "NEURON_RT_VISIBLE_CORES" not in os.environ


def test_cores_past_the_instance_are_refused_when_the_runtime_starts():
    nrtpy.configure(visible_cores=[0, 4])  # one trn2 chip has logical cores 0-3
    with pytest.raises(NrtError) as e:
        NrtpyTensor.from_numpy(np.ones(2, np.float32))
    assert e.value.status == 2
    assert str(e.value).startswith("NRT Error NRT_INVALID(2): Failed to initialize runtime: ")
    assert "NEURON_RT_VISIBLE_CORES" in str(e.value)


def test_a_freed_or_reset_tensor_raises_nrtpy_error():
    t = NrtpyTensor.from_numpy(np.ones(4, np.float32), name="gone")
    nrtpy.get_nrtpy_singleton().free_tensor(t)
    for use in (t.numpy, lambda: t.write_from_numpy(np.ones(4, np.float32)),
                lambda: nrtpy.get_nrtpy_singleton().free_tensor(t)):
        with pytest.raises(NrtpyError, match="freed"):
            use()
    u = NrtpyTensor.from_numpy(np.ones(4, np.float32), name="old")
    model = NrtpyModel.load_from_neff(SMALL)
    nrtpy.reset()
    with pytest.raises(NrtpyError, match="reset"):
        u.numpy()
    # Still refused once a new runtime runs: its device is not the old one.
    NrtpyTensor.from_numpy(np.ones(4, np.float32))
    with pytest.raises(NrtpyError, match="reset"):
        u.numpy()
    with pytest.raises(NrtpyError, match="reset"):
        model(inputs={})
    assert issubclass(NrtpyError, RuntimeError) and issubclass(NrtError, RuntimeError)
    with pytest.raises(TypeError):
        nrtpy.get_nrtpy_singleton().free_tensor(np.ones(4))


def test_a_missing_neff_is_nrt_error_with_the_documented_text(tmp_path):
    with pytest.raises(NrtError) as e:
        NrtpyModel.load_from_neff(tmp_path / "nonexistent.neff")
    assert str(e.value).startswith("NRT Error NRT_FAILURE(1): Failed to load model: ")
    assert (e.value.status, e.value.status_name) == (1, "NRT_FAILURE")
    assert "nonexistent.neff" in e.value.message
    bad = tmp_path / "bad.neff"
    bad.write_bytes(b"\0" * 2048)
    with pytest.raises(NrtError) as e:
        NrtpyModel.load_from_neff(str(bad))
    assert str(e.value).startswith(
        "NRT Error NRT_UNSUPPORTED_NEFF_VERSION(10): Failed to load model: Unsupported NEFF packager"
    )
    for wrong in (b"model.neff", 3):
        with pytest.raises(TypeError):
            NrtpyModel.load_from_neff(wrong)


def test_collectives_go_through_the_collectives_load(monkeypatch):
    # Without a root communicator the collectives load is refused, as
    # nrt_load_collectives refuses it; with one, a rank outside the world too.
    with pytest.raises(NrtError) as e:
        NrtpyModel.load_from_neff(SMALL, cc_enabled=True, rank_id=0, world_size=2)
    assert e.value.status == 2 and "NEURON_RT_ROOT_COMM_ID" in str(e.value)
    nrtpy.reset()
    monkeypatch.setenv("NEURON_RT_ROOT_COMM_ID", "10.0.0.1:62182")
    with pytest.raises(NrtError, match="device count 2"):
        NrtpyModel.load_from_neff(SMALL, cc_enabled=True, rank_id=2, world_size=2)
    with pytest.raises(NrtError):
        NrtpyModel.load_from_neff(SMALL, cc_enabled=True, rank_id=-1, world_size=2)
    model = NrtpyModel.load_from_neff(SMALL, cc_enabled=True, rank_id=1, world_size=2)
    assert list(model.input_tensors_info) == ["x", "y"]


def inputs_of(model, dtype=np.float16):
    return {
        name: NrtpyTensor.from_numpy(np.ones(info.shape, dtype), name=name)
        for name, info in model.input_tensors_info.items()
    }


def test_execution_is_refused_as_nrt_error_after_the_binding_is_checked():
    model = NrtpyModel.load_from_neff(SMALL)
    inputs = inputs_of(model)
    for call in (lambda: model(inputs=inputs), lambda: model(inputs, save_trace=True),
                 lambda: model.benchmark(inputs=inputs, warmup_iter=5, benchmark_iter=100),
                 lambda: model.benchmark(inputs, mode="host")):
        with pytest.raises(NrtError) as e:
            call()
        assert str(e.value).startswith("NRT Error NRT_FAILURE(1): Failed to execute model: ")
        assert "nothing executes" in str(e.value)
    outputs = {"output0": NrtpyTensor.from_numpy(np.zeros((128, 128), np.float16))}
    with pytest.raises(NrtError, match="NRT_FAILURE"):
        model(inputs=inputs, outputs=outputs)
    # Binding mistakes: NRT_INVALID naming the tensor.
    wrong = [
        ({"x": inputs["x"]}, None, 'input tensor "y" is missing'),
        ({**inputs, "z": inputs["x"]}, None, 'holds "z"'),
        ({**inputs, "y": NrtpyTensor.from_numpy(np.ones(3, np.float16))}, None, '"y" has 6 bytes; the model expects 65536'),
        (inputs, {}, 'output tensor "output0" is missing'),
    ]
    for given, out, text in wrong:
        with pytest.raises(NrtError) as e:
            model(inputs=given, outputs=out)
        assert e.value.status_name == "NRT_INVALID" and text in str(e.value)
    freed = inputs_of(model)
    nrtpy.get_nrtpy_singleton().free_tensor(freed["x"])
    with pytest.raises(NrtpyError):
        model(inputs=freed)


@pytest.mark.parametrize(
    "kw", [{"mode": "wall"}, {"benchmark_iter": 0}, {"warmup_iter": -1, "benchmark_iter": 0}]
)
def test_benchmark_checks_its_arguments_first(kw):
    model = NrtpyModel.load_from_neff(SMALL)
    with pytest.raises(ValueError):
        model.benchmark(inputs={}, **kw)  # before the binding is looked at


def test_a_tensor_the_device_cannot_hold_is_nrt_error():
    with pytest.raises(NrtError) as e:
        nrtpy.NrtTensor._allocate(1 << 40, 0, "huge")
    assert e.value.status_name == "NRT_RESOURCE"
    with pytest.raises(NrtError) as e:
        NrtpyTensor.from_numpy(np.zeros(0, np.float32))
    assert e.value.status_name == "NRT_INVALID" and "0 bytes" in str(e.value)
    with pytest.raises(TypeError):
        NrtpyTensor.from_numpy(np.array([object()]))
    with pytest.raises(TypeError):
        NrtpyTensor.from_numpy([1.0, 2.0])


def test_an_nrtpy_tensor_over_a_device_tensor_must_match_its_bytes():
    t = NrtpyTensor.from_numpy(np.arange(8, dtype=np.float32), name="a")
    as_u8 = NrtpyTensor(t.tensor_ref, (4, 8), np.uint8)
    assert as_u8.numpy().tobytes() == np.arange(8, dtype=np.float32).tobytes()
    assert as_u8.name == "a" and NrtpyTensor(t.tensor_ref, 32, "u1").shape == (32,)
    with pytest.raises(ValueError):
        NrtpyTensor(t.tensor_ref, (3,), np.float32)
    with pytest.raises(TypeError):
        NrtpyTensor(np.ones(3), (3,), np.float32)


def test_the_runtime_is_the_c_librarys_choice_of_device(monkeypatch):
    # One trn2 chip by default: 4 logical cores of size 2.
    with pytest.raises(NrtError, match="visible vncs: 4"):
        NrtpyTensor.from_numpy(np.ones(2, np.float32), core_id=4)
    nrtpy.reset()
    monkeypatch.setenv("NEFFLD_INSTANCE", "trn2.48xlarge")  # 16 chips
    NrtpyTensor.from_numpy(np.ones(2, np.float32), core_id=63)
    nrtpy.reset()
    monkeypatch.delenv("NEFFLD_INSTANCE")
    monkeypatch.setenv("NEFFLD_ARCH", "trn1")  # a trn2 NEFF meets the LNC gate
    with pytest.raises(NrtError, match="which trn1 cannot take"):
        NrtpyModel.load_from_neff(SMALL)


def docs_run(tmp_path, argv, script):
    shutil.copy(ATTENTION, tmp_path / "model.neff")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEURON_RT_", "NEFFLD_"))}
    out = subprocess.run([sys.executable, *argv, script], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def check_docs_output(lines):
    inputs, _ = declared_io(ATTENTION)
    want = [f"  {name}: shape={shape}, size={size}" for name, (shape, size) in sorted(inputs.items())]
    assert lines[1:1 + len(want)] == want
    assert "round trip: (128, 512) float32 65536.0" in lines
    assert "after write_from_numpy: 0.0 (128, 512) float32 k_ref" in lines
    assert "size check: ValueError" in lines
    assert any(l.startswith("NrtError: NRT Error NRT_FAILURE(1): Failed to execute model: ") for l in lines)
    assert any(l.startswith("missing NEFF: NRT Error NRT_FAILURE(1): Failed to load model: ") for l in lines)
    assert "freed tensor: NrtpyError" in lines and "benchmark: NrtError" in lines
    assert lines[-1] == "done"


def test_a_script_written_from_the_docs_runs_unchanged(tmp_path):
    check_docs_output(docs_run(tmp_path, ["-m", "neffld.nrtpy"], DOCS))


def test_the_docs_script_runs_against_from_neffld_import_nrtpy(tmp_path):
    text = DOCS.read_text()
    text = text.replace("import nrtpy\n", "from neffld import nrtpy\n", 1)
    text = text.replace("from nrtpy import", "from neffld.nrtpy import", 1)
    assert "from neffld import nrtpy" in text and "from neffld.nrtpy import" in text
    script = tmp_path / "script.py"
    script.write_text(text)
    check_docs_output(docs_run(tmp_path, [], script))


def test_the_readme_example_runs(tmp_path):
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    section = readme.split("## nrtpy, without hardware", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "readme.py"
    script.write_text(code)
    lines = docs_run(tmp_path, [], script)
    assert lines[0] == "k_ref [128, 512] 262144"
    assert lines[-1].startswith("NRT Error NRT_FAILURE(1): Failed to execute model: not supported by neffld")


def test_a_tensor_is_freed_when_collected_or_by_free_tensor():
    import gc

    import neffld

    # Three fifths of the core's HBM fits once, not twice: a second one
    # fits only once the first is released.
    hbm = neffld.plan(SMALL, instance="trn2.3xlarge").instance.hbm_size
    size = hbm * 3 // 5

    def big(name):
        return NrtpyTensor(nrtpy.NrtTensor._allocate(size, 0, name), size, np.uint8)

    first = big("first")
    with pytest.raises(NrtError) as e:
        big("second")
    assert e.value.status_name == "NRT_RESOURCE"
    del first
    gc.collect()
    second = big("second")  # the collected tensor's memory is back
    nrtpy.get_nrtpy_singleton().free_tensor(second)
    big("third")


# ---- tensor_cast / tensor_compute (libnrt 2.35) ----

def test_the_enums_are_the_headers():
    # nrt.h's nrt_dtype_t and nrt_op_type_t values (SDK headers).
    D, O = nrtpy.NrtDtype, nrtpy.NrtComputeOp
    assert (D.UNKNOWN, D.INT8, D.BFLOAT16, D.FLOAT16, D.FLOAT32, D.FP8_E4, D.FP8_E5) == (0, 2, 6, 7, 10, 14, 15)
    assert [(o.name, int(o)) for o in O] == [("ADD", 0), ("MAX", 2), ("MIN", 3)]


def test_a_tensors_device_dtype_follows_its_numpy_dtype():
    D = nrtpy.NrtDtype
    cases = {np.float32: D.FLOAT32, np.float16: D.FLOAT16, np.int8: D.INT8, np.uint16: D.UINT16,
             np.int32: D.INT32, np.uint64: D.UINT64, np.float64: None, np.bool_: None}
    for dtype, want in cases.items():
        assert NrtpyTensor.from_numpy(np.zeros(4, dtype)).device_dtype is want, dtype
    assert NrtpyTensor.from_numpy(np.zeros(4, ">f4")).device_dtype is None  # not the device's byte order
    t = NrtpyTensor.from_numpy(np.zeros(4, np.uint16))
    t.device_dtype = D.BFLOAT16  # bfloat16 bits held as uint16
    assert t.device_dtype is D.BFLOAT16 and t.dtype == np.uint16
    with pytest.raises(TypeError):
        t.device_dtype = 6


def test_tensor_ops_are_refused_before_2_35_and_on_trn1(monkeypatch):
    # The newest line (the default) has them; the line before it and trn1
    # refuse them with NRT_FAILURE, saying why.
    one = NrtpyTensor.from_numpy(np.ones(1, np.float32))
    nrtpy.tensor_cast(one, one, 1)
    for var, value, why in (("NEFFLD_RUNTIME", "2.34", "not in runtime 2.34: libnrt 2.35 added it"),
                            ("NEFFLD_ARCH", "trn1", "runs on trn2 and later")):
        nrtpy.reset()
        monkeypatch.setenv(var, value)
        t = NrtpyTensor.from_numpy(np.ones(1, np.float32))
        for call in (lambda: nrtpy.tensor_cast(t, t, 1),
                     lambda: nrtpy.tensor_compute(nrtpy.NrtComputeOp.ADD, [t], t, 1)):
            with pytest.raises(NrtError, match="NRT_FAILURE") as e:
                call()
            assert why in str(e.value), e.value
        monkeypatch.delenv(var)


def bf16_bits(x):
    """float32 -> bfloat16 bits, rounding to nearest even, computed on the
    float32 bit patterns (NaN aside)."""
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def test_tensor_cast_fp32_to_bf16_rounds_to_nearest_even():
    rng = np.random.default_rng(3)
    high = rng.integers(0, 0x7F7F, 512, dtype=np.uint32) << 16
    ties = np.concatenate([high | 0x8000, high | 0x18000 & 0xFFFFFFFF])  # exact halves, even and odd
    x = np.concatenate([
        rng.standard_normal(4096).astype(np.float32) * 1e3,
        ties.view(np.float32),
        np.array([0.0, -0.0, np.inf, -np.inf, 3.4028235e38, 1e-45, -1e-40], np.float32),
    ])
    src = NrtpyTensor.from_numpy(x, name="src")
    dst = NrtpyTensor.from_numpy(np.zeros(x.size, np.uint16), name="dst")
    dst.device_dtype = nrtpy.NrtDtype.BFLOAT16
    nrtpy.tensor_cast(src, dst, x.size)
    got = dst.numpy()
    assert got.tobytes() == bf16_bits(x).tobytes()
    try:
        import ml_dtypes
    except ImportError:
        return
    assert got.tobytes() == x.astype(ml_dtypes.bfloat16).view(np.uint16).tobytes()


def test_tensor_compute_is_numpys_elementwise_reduction():
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(1000).astype(np.float32) for _ in range(3))
    srcs = [NrtpyTensor.from_numpy(v) for v in (a, b, c)]
    dst = NrtpyTensor.from_numpy(np.zeros(1000, np.float32))
    O = nrtpy.NrtComputeOp
    for op, want in ((O.ADD, (a + b) + c), (O.MAX, np.maximum(np.maximum(a, b), c)),
                     (O.MIN, np.minimum(np.minimum(a, b), c))):
        nrtpy.tensor_compute(op, srcs, dst, 1000)
        assert dst.numpy().tobytes() == want.tobytes(), op
    # Exact integers, saturating into int32.
    big = np.full(8, 2**31 - 10, np.int32)
    ints = [NrtpyTensor.from_numpy(big), NrtpyTensor.from_numpy(np.arange(8, dtype=np.int32) * 3)]
    out = NrtpyTensor.from_numpy(np.zeros(8, np.int32))
    nrtpy.tensor_compute(O.ADD, ints, out, 8)
    want = np.clip(big.astype(np.int64) + np.arange(8) * 3, -(2**31), 2**31 - 1)
    assert out.numpy().tolist() == want.tolist()
    # Only the first num_elements are written.
    part = NrtpyTensor.from_numpy(np.full(1000, 7, np.float32))
    nrtpy.tensor_compute(O.ADD, srcs[:1], part, 10)
    assert part.numpy()[:10].tobytes() == a[:10].tobytes() and (part.numpy()[10:] == 7).all()


def test_tensor_op_arguments_are_checked():
    t = NrtpyTensor.from_numpy(np.ones(4, np.float32))
    for call, error in (
        (lambda: nrtpy.tensor_cast(np.ones(4), t, 4), TypeError),
        (lambda: nrtpy.tensor_cast(t, t, -1), ValueError),
        (lambda: nrtpy.tensor_compute(nrtpy.NrtComputeOp.ADD, t, t, 4), TypeError),
        (lambda: nrtpy.tensor_compute("ADD", [t], t, 4), TypeError),
    ):
        with pytest.raises(error):
            call()
    with pytest.raises(NrtError) as e:
        nrtpy.tensor_compute(1, [t], t, 4)  # NRT_OP_FMA: not one compute takes
    assert e.value.status_name == "NRT_INVALID" and "ADD (0), MAX (2) or MIN (3)" in str(e.value)
    none = NrtpyTensor.from_numpy(np.ones(4, np.float64))
    with pytest.raises(NrtError, match="NRT_INVALID.*no device dtype"):
        nrtpy.tensor_cast(none, t, 4)
    with pytest.raises(NrtError, match="NRT_INVALID.*fewer than 5 elements"):
        nrtpy.tensor_cast(t, t, 5)
    gone = NrtpyTensor.from_numpy(np.ones(4, np.float32))
    nrtpy.get_nrtpy_singleton().free_tensor(gone)
    with pytest.raises(NrtpyError):
        nrtpy.tensor_cast(gone, t, 4)
