"""The Neuron SDK's Python binding, nrtpy, as its documentation states it,
over neffld's simulated runtime: ``from neffld import nrtpy``.

A script written for nrtpy runs unchanged up to execution: configure the
visible cores, load a NEFF, read its inputs and outputs, move numpy arrays
to and from device tensors (their bytes live on the simulated device).
Calling a model, or benchmarking it, raises :class:`NrtError` once its
inputs are checked, as neffld's libnrt refuses ``nrt_execute``: nothing
executes on a simulated device.

    >>> import numpy as np
    >>> from neffld import nrtpy
    >>> from neffld.nrtpy import NrtpyModel, NrtpyTensor, NrtError
    >>> nrtpy.configure(visible_cores=[0, 1])
    >>> model = NrtpyModel.load_from_neff("model.neff", core_id=1)
    >>> {k: (v.shape, v.size) for k, v in model.input_tensors_info.items()}
    >>> t = NrtpyTensor.from_numpy(np.ones((128, 512), np.float32), name="x")
    >>> t.numpy().sum()
    >>> try:
    ...     model(inputs={"x": t})
    ... except NrtError as e:
    ...     print(e)  # NRT Error NRT_FAILURE(1): Failed to execute model: ...

The runtime is the one the C library starts: ``NEFFLD_ARCH`` or
``NEFFLD_INSTANCE`` choose the simulated device (default: one trn2 chip),
``NEFFLD_RUNTIME`` the runtime line, and the runtime's own variables apply.
What differs from AWS's nrtpy is listed in the package's README.
"""

import enum as _enum
import operator as _operator
import os as _os

import numpy as _np

from ._neffld import (
    NrtError,
    NrtpyError,
    NrtTensor,
    TensorMetadata,
    _LoadedModel,
    _nrtpy_active,
    _nrtpy_enums,
    _nrtpy_reset,
    _tensor_cast,
    _tensor_compute,
)

__all__ = [
    "NrtComputeOp",
    "NrtDtype",
    "NrtError",
    "NrtTensor",
    "NrtpyError",
    "NrtpyModel",
    "NrtpySingleton",
    "NrtpyTensor",
    "TensorMetadata",
    "configure",
    "get_nrtpy_singleton",
    "reset",
    "tensor_cast",
    "tensor_compute",
]

_dtypes, _ops = _nrtpy_enums()
NrtDtype = _enum.IntEnum("NrtDtype", _dtypes, module=__name__)
NrtDtype.__doc__ = """A tensor's device dtype: the members of libnrt's ``nrt_dtype_t``
(``NRT_DTYPE_FLOAT32`` is ``NrtDtype.FLOAT32``, 10)."""
NrtComputeOp = _enum.IntEnum("NrtComputeOp", _ops, module=__name__)
NrtComputeOp.__doc__ = """What :func:`tensor_compute` does across its sources: ``ADD``,
``MAX`` or ``MIN`` (libnrt's ``nrt_op_type_t`` codes 0, 2, 3)."""
del _dtypes, _ops

# The device dtype a numpy dtype gives a tensor (little-endian data only):
# numpy's names, bfloat16 and the FP8 types as ml_dtypes names them.
_DEVICE_DTYPES = {
    "float32": NrtDtype.FLOAT32,
    "float16": NrtDtype.FLOAT16,
    "bfloat16": NrtDtype.BFLOAT16,
    "float8_e4m3": NrtDtype.FP8_E4,
    "float8_e5m2": NrtDtype.FP8_E5,
    "int8": NrtDtype.INT8,
    "uint8": NrtDtype.UINT8,
    "int16": NrtDtype.INT16,
    "uint16": NrtDtype.UINT16,
    "int32": NrtDtype.INT32,
    "uint32": NrtDtype.UINT32,
    "int64": NrtDtype.INT64,
    "uint64": NrtDtype.UINT64,
}


def _device_dtype_of(dtype):
    return _DEVICE_DTYPES.get(dtype.name) if dtype.isnative else None


_VISIBLE = "NEURON_RT_VISIBLE_CORES"
# The variable's value before the first configure(), restored by reset().
_before = []


def _shown(value):
    return repr(value) if isinstance(value, (int, str, float)) else f"a {type(value).__name__}"


def _int(what, value):
    """An int argument (any integer type; not a bool)."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{what}: expected an int, not {_shown(value)}")
    return _operator.index(value)


def configure(visible_cores=None):
    """Chooses the NeuronCores the runtime will see, by setting
    ``NEURON_RT_VISIBLE_CORES`` (nothing else); the runtime starts at the
    next nrtpy operation. Allowed before the first operation or after
    :func:`reset`, else :class:`NrtpyError`. ``None`` leaves the variable
    as it is. ``TypeError`` for an int or an element that is not one,
    ``ValueError`` for a negative core id or an empty iterable."""
    if _nrtpy_active():
        raise NrtpyError(
            "configure() is allowed only before the runtime starts (the first"
            " tensor or model) or after nrtpy.reset(); the runtime is active"
        )
    if visible_cores is None:
        return
    if isinstance(visible_cores, int):
        raise TypeError(
            f"visible_cores: expected an iterable of core ids such as [0, 1] or"
            f" range(4), not the int {visible_cores!r}"
        )
    try:
        given = iter(visible_cores)
    except TypeError:
        raise TypeError(
            f"visible_cores: expected an iterable of core ids, not {_shown(visible_cores)}"
        ) from None
    cores = []
    for c in given:
        if isinstance(c, bool) or not hasattr(type(c), "__index__"):
            raise TypeError(f"visible_cores: {_shown(c)} is not an integer core id")
        c = _operator.index(c)
        if c < 0:
            raise ValueError(f"visible_cores: core id {c} is negative")
        cores.append(c)
    if not cores:
        raise ValueError("visible_cores is empty: the runtime needs at least one core")
    if not _before:
        _before.append(_os.environ.get(_VISIBLE))
    _os.environ[_VISIBLE] = ",".join(map(str, cores))


def reset():
    """Closes the runtime (a no-op if it never started) and clears what
    :func:`configure` set (``NEURON_RT_VISIBLE_CORES`` is as it was before
    the first configure()). Every tensor and model of the runtime refuses
    further use with :class:`NrtpyError`."""
    _nrtpy_reset()
    if _before:
        value = _before.pop()
        if value is None:
            _os.environ.pop(_VISIBLE, None)
        else:
            _os.environ[_VISIBLE] = value


class NrtpySingleton:
    """The process's nrtpy runtime, as :func:`get_nrtpy_singleton` returns
    it. Only ``free_tensor`` is public in nrtpy."""

    __slots__ = ()

    def free_tensor(self, tensor):
        """Frees a tensor's device memory now, rather than when it is
        collected; any later use of it raises :class:`NrtpyError` (freeing
        it again included)."""
        if not isinstance(tensor, NrtpyTensor):
            raise TypeError(f"free_tensor: expected an NrtpyTensor, not {_shown(tensor)}")
        tensor.tensor_ref._free()

    def __repr__(self):
        return f"NrtpySingleton({'active' if _nrtpy_active() else 'not started'})"


_SINGLETON = NrtpySingleton()


def get_nrtpy_singleton():
    """The process's nrtpy runtime object (it does not start the runtime)."""
    return _SINGLETON


def _array(what, array):
    """`array` as a C-contiguous numpy array of plain data."""
    if not isinstance(array, _np.ndarray):
        raise TypeError(f"{what}: expected a numpy.ndarray, not {_shown(array)}")
    if array.dtype.hasobject:
        raise TypeError(f"{what}: a {array.dtype} array holds Python objects, not bytes for a device")
    return array if array.flags.c_contiguous else _np.ascontiguousarray(array)


def _bytes_of(array):
    """The bytes of a C-contiguous array, as a flat uint8 view (no copy)."""
    return array.reshape(-1).view(_np.uint8)


class NrtpyTensor:
    """A tensor resident in the (simulated) device's HBM: its bytes are on
    the device, read back by :meth:`numpy`. The device memory is freed when
    the object (and every other NrtpyTensor over the same
    :class:`NrtTensor`) is collected, or by ``free_tensor``."""

    __slots__ = ("tensor_ref", "shape", "dtype", "name", "_device_dtype", "__weakref__")

    def __init__(self, tensor_ref, shape, dtype, name=None):
        if not isinstance(tensor_ref, NrtTensor):
            raise TypeError(f"tensor_ref: expected an NrtTensor, not {_shown(tensor_ref)}")
        if not isinstance(shape, tuple) and hasattr(type(shape), "__index__"):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)):
            raise TypeError(f"shape: expected a tuple of ints or an int, not {_shown(shape)}")
        shape = tuple(_int("shape", d) for d in shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"shape {shape} has a negative dimension")
        dtype = _np.dtype(dtype)
        if dtype.hasobject:
            raise TypeError(f"dtype {dtype} holds Python objects, not bytes for a device")
        nbytes = int(_np.prod(shape, dtype=_np.int64)) * dtype.itemsize
        if nbytes != tensor_ref.size:
            raise ValueError(
                f"shape {shape} of {dtype} is {nbytes} bytes; the tensor holds {tensor_ref.size}"
            )
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name: expected a str or None, not {_shown(name)}")
        self.tensor_ref = tensor_ref
        self.shape = shape
        self.dtype = dtype
        self.name = tensor_ref.name if name is None else name
        self._device_dtype = _device_dtype_of(dtype)

    @property
    def device_dtype(self):
        """The device dtype :func:`tensor_cast` and :func:`tensor_compute`
        read the tensor's elements as: derived from the numpy dtype
        (float32 -> ``NrtDtype.FLOAT32``, ml_dtypes' bfloat16 ->
        ``BFLOAT16``, ...), ``None`` for one with no device counterpart
        (float64, bool, big-endian data). Set it to read the same bytes as
        another type (a uint16 array holding bfloat16 bits)."""
        return self._device_dtype

    @device_dtype.setter
    def device_dtype(self, value):
        if value is not None and not isinstance(value, NrtDtype):
            raise TypeError(f"device_dtype: expected an NrtDtype or None, not {_shown(value)}")
        self._device_dtype = value

    @classmethod
    def from_numpy(cls, array, name=None, core_id=0):
        """Allocates a device tensor on visible core ``core_id`` and copies
        ``array`` (made contiguous first) into it. ``NrtError`` when the
        device refuses the allocation (no memory left, a core the runtime
        does not see, an empty array)."""
        data = _array("array", array)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name: expected a str or None, not {_shown(name)}")
        core_id = _int("core_id", core_id)
        ref = NrtTensor._allocate(data.nbytes, core_id, "tensor" if name is None else name)
        ref._write_from(_bytes_of(data))
        return cls(ref, array.shape, array.dtype, name)

    def numpy(self):
        """The tensor's bytes read back from the device, as a new array of
        its shape and dtype."""
        out = _np.empty(self.shape, self.dtype)
        self.tensor_ref._read_into(_bytes_of(out))
        return out

    def write_from_numpy(self, array):
        """Overwrites the tensor in place with ``array`` (made contiguous
        first), which must be exactly the tensor's size in bytes
        (``ValueError`` otherwise; its shape and dtype may differ)."""
        data = _array("array", array)
        if data.nbytes != self.tensor_ref.size:
            raise ValueError(
                f"write_from_numpy: the array is {data.nbytes} bytes; tensor"
                f" {self.name!r} is {self.tensor_ref.size} bytes"
            )
        self.tensor_ref._write_from(_bytes_of(data))

    def __repr__(self):
        return f"NrtpyTensor({self.name!r}, shape={self.shape}, dtype={self.dtype})"


def _typed(what, tensor):
    if not isinstance(tensor, NrtpyTensor):
        raise TypeError(f"{what}: expected an NrtpyTensor, not {_shown(tensor)}")
    dtype = tensor.device_dtype
    return (tensor.tensor_ref, 0 if dtype is None else int(dtype))


def _count(num_elements):
    n = _int("num_elements", num_elements)
    if n < 0:
        raise ValueError(f"num_elements must be 0 or more, not {n}")
    return n


def tensor_cast(src, dst, num_elements):
    """Converts the first ``num_elements`` elements of ``src`` from its
    device dtype into ``dst``'s, on the device (libnrt 2.35's
    ``nrt_tensor_cast``: trn2 and later, both tensors on one core, rounding
    to nearest even). ``NrtError`` when the runtime refuses: a line before
    2.35 or a trn1 runtime (NRT_FAILURE), a tensor without a device dtype,
    a pair of dtypes it does not convert, too few elements, tensors on two
    cores (NRT_INVALID)."""
    _tensor_cast(_typed("src", src), _typed("dst", dst), _count(num_elements))


def tensor_compute(op, srcs, dst, num_elements):
    """Applies ``op`` (an :class:`NrtComputeOp`: ADD, MAX or MIN) across
    the tensors of ``srcs``, element by element, into ``dst``, for the
    first ``num_elements`` elements (libnrt 2.35's ``nrt_tensor_compute``);
    refused as :func:`tensor_cast` is, and for an empty ``srcs`` or an
    operation it does not take."""
    if isinstance(op, bool) or not hasattr(type(op), "__index__"):
        raise TypeError(f"op: expected an NrtComputeOp, not {_shown(op)}")
    if isinstance(srcs, NrtpyTensor) or not isinstance(srcs, (list, tuple)):
        raise TypeError(f"srcs: expected a list of NrtpyTensor, not {_shown(srcs)}")
    typed = [_typed(f"srcs[{i}]", t) for i, t in enumerate(srcs)]
    op = _operator.index(op)
    if op < 0:
        raise ValueError(f"op {op} is not an NrtComputeOp")
    _tensor_compute(op, typed, _typed("dst", dst), _count(num_elements))


def _binding(what, tensors):
    """A dict of name -> NrtpyTensor as (name, NrtTensor) pairs."""
    if not hasattr(tensors, "items"):
        raise TypeError(f"{what}: expected a dict of name -> NrtpyTensor, not {_shown(tensors)}")
    pairs = []
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"{what}: the key {_shown(name)} is not a tensor name (str)")
        if not isinstance(t, NrtpyTensor):
            raise TypeError(f"{what}[{name!r}]: expected an NrtpyTensor, not {_shown(t)}")
        pairs.append((name, t.tensor_ref))
    return pairs


class NrtpyModel:
    """A NEFF loaded on the (simulated) device: create it with
    :meth:`load_from_neff`. Unloaded when collected."""

    __slots__ = ("_model", "name", "input_tensors_info", "output_tensors_info", "__weakref__")

    def __init__(self, model, name):
        if not isinstance(model, _LoadedModel):
            raise TypeError("NrtpyModel is created by NrtpyModel.load_from_neff(neff_path)")
        self._model = model
        self.name = name
        self.input_tensors_info = model._tensors_info("input")
        self.output_tensors_info = model._tensors_info("output")

    @classmethod
    def load_from_neff(cls, neff_path, name=None, core_id=0, cc_enabled=False, rank_id=0, world_size=1):
        """Loads the NEFF at ``neff_path`` (``str`` or ``pathlib.Path``) on
        visible core ``core_id``, as ``nrt_load`` does; with ``cc_enabled``,
        as rank ``rank_id`` of ``world_size`` (``nrt_load_collectives``,
        which needs ``NEURON_RT_ROOT_COMM_ID``). ``name`` defaults to the
        file's stem. A NEFF that cannot be read or loaded raises
        ``NrtError`` ("NRT Error NRT_FAILURE(1): Failed to load model: ...").
        """
        if not isinstance(neff_path, (str, _os.PathLike)):
            raise TypeError(f"neff_path: expected a str or pathlib.Path, not {_shown(neff_path)}")
        path = _os.fspath(neff_path)
        if not isinstance(path, str):
            raise TypeError("neff_path: expected a str or pathlib.Path, not a bytes path")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name: expected a str or None, not {_shown(name)}")
        if not isinstance(cc_enabled, bool):
            raise TypeError(f"cc_enabled: expected True or False, not {_shown(cc_enabled)}")
        core_id = _int("core_id", core_id)
        rank_id = _int("rank_id", rank_id)
        world_size = _int("world_size", world_size)
        model = _LoadedModel._load(path, core_id, cc_enabled, rank_id, world_size)
        if name is None:
            name = _os.path.splitext(_os.path.basename(path))[0]
        return cls(model, name)

    def __call__(self, inputs, outputs=None, save_trace=False, ntff_name=None):
        """Executes the model -- which the simulated device cannot: once
        the inputs (and outputs, when given) are checked against the model
        by name and size, as libnrt checks them, raises ``NrtError``
        ("NRT Error NRT_FAILURE(1): Failed to execute model: ..."). A
        binding mistake is ``NrtError`` NRT_INVALID(2); a freed tensor or a
        model of a reset runtime ``NrtpyError``."""
        bound = _binding("inputs", inputs)
        out = None if outputs is None else _binding("outputs", outputs)
        if not isinstance(save_trace, bool):
            raise TypeError(f"save_trace: expected True or False, not {_shown(save_trace)}")
        if ntff_name is not None and not isinstance(ntff_name, (str, _os.PathLike)):
            raise TypeError(f"ntff_name: expected a str or None, not {_shown(ntff_name)}")
        self._model._execute(bound, out)

    def benchmark(self, inputs, outputs=None, warmup_iter=5, benchmark_iter=5, mode="device"):
        """Benchmarks the model -- which the simulated device cannot run:
        ``ValueError`` for a ``mode`` other than "device" or "host" or a
        ``benchmark_iter`` below 1 (or a negative ``warmup_iter``), then as
        :meth:`__call__`, ``NrtError``."""
        warmup_iter = _int("warmup_iter", warmup_iter)
        benchmark_iter = _int("benchmark_iter", benchmark_iter)
        if mode not in ("device", "host"):
            raise ValueError(f"mode must be 'device' or 'host', not {mode!r}")
        if benchmark_iter < 1:
            raise ValueError(f"benchmark_iter must be at least 1, not {benchmark_iter}")
        if warmup_iter < 0:
            raise ValueError(f"warmup_iter must be 0 or more, not {warmup_iter}")
        self(inputs, outputs)

    def __repr__(self):
        return f"NrtpyModel({self.name!r}, core_id={self._model._core_id})"


def _run(argv):
    """``python -m neffld.nrtpy SCRIPT [ARG...]``: runs a script written for
    nrtpy unchanged, its ``import nrtpy`` answered by this module."""
    import runpy
    import sys

    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m neffld.nrtpy SCRIPT [ARG...]\n\n"
              "Runs SCRIPT (written for AWS's nrtpy) with `import nrtpy` answered by neffld.nrtpy.")
        return 0 if argv else 2
    from neffld import nrtpy

    sys.modules["nrtpy"] = nrtpy
    sys.argv = list(argv)
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    import sys as _sys

    _sys.exit(_run(_sys.argv[1:]))
