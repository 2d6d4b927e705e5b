"""Type stubs of neffld.nrtpy: nrtpy's documented API over neffld's
simulated runtime."""

import enum
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Optional, Union

import numpy

class NrtpyError(RuntimeError):
    """A misuse of nrtpy itself: a tensor used after free_tensor() or
    reset(), a model of a runtime reset since, configure() while the
    runtime is active."""

class NrtError(RuntimeError):
    """The runtime refused a call. `str(e)` is "NRT Error
    NRT_<NAME>(<code>): <what failed>: <why>", as nrtpy writes it ("NRT Error
    NRT_FAILURE(1): Failed to load model: cannot read ...")."""

    status: int
    """The NRT status (NRT_STATUS), e.g. 1."""
    status_name: str
    """Its name, e.g. "NRT_FAILURE"."""
    message: str
    """Why, as neffld's runtime says it (libnrt logs it before nrtpy raises)."""

class NrtDtype(enum.IntEnum):
    """A device dtype: libnrt's nrt_dtype_t (NRT_DTYPE_FLOAT32 is FLOAT32)."""

    UNKNOWN = 0
    UINT64 = 1
    INT8 = 2
    UINT8 = 3
    INT16 = 4
    UINT16 = 5
    BFLOAT16 = 6
    FLOAT16 = 7
    INT32 = 8
    UINT32 = 9
    FLOAT32 = 10
    FP32R = 11
    INT64 = 12
    FP8_E3 = 13
    FP8_E4 = 14
    FP8_E5 = 15

class NrtComputeOp(enum.IntEnum):
    """tensor_compute's operation (nrt_op_type_t codes)."""

    ADD = 0
    MAX = 2
    MIN = 3

class TensorMetadata:
    """One input or output of a loaded model."""

    shape: list[int]
    size: int
    """Bytes."""

class NrtTensor:
    """A device tensor (`nrt_tensor_allocate`, device placement): its bytes
    are on the simulated device; freed when collected."""

    size: int
    """Bytes."""
    name: str
    core_id: int
    """The visible logical core it is on."""

class NrtpyTensor:
    """A tensor resident in the simulated device's HBM."""

    tensor_ref: NrtTensor
    shape: tuple[int, ...]
    dtype: numpy.dtype[Any]
    name: str
    device_dtype: Optional[NrtDtype]
    """The device dtype tensor_cast and tensor_compute read it as: from the
    numpy dtype (float32 -> FLOAT32, ml_dtypes.bfloat16 -> BFLOAT16, ...),
    None for one with no device counterpart; settable."""
    def __init__(
        self,
        tensor_ref: NrtTensor,
        shape: Union[tuple[int, ...], int],
        dtype: Any,
        name: Optional[str] = None,
    ) -> None:
        """A view of `tensor_ref` with this shape and dtype, which must be
        its size in bytes (ValueError otherwise). `name` defaults to the
        device tensor's."""
    @classmethod
    def from_numpy(
        cls, array: numpy.ndarray[Any, Any], name: Optional[str] = None, core_id: int = 0
    ) -> NrtpyTensor:
        """Allocates a device tensor on visible core `core_id` and copies the
        array (made contiguous) into it; NrtError when the device refuses."""
    def numpy(self) -> numpy.ndarray[Any, Any]:
        """The bytes read back from the device, as a new array."""
    def write_from_numpy(self, array: numpy.ndarray[Any, Any]) -> None:
        """Overwrites the tensor in place; the array must be exactly its
        size in bytes (ValueError otherwise)."""

class NrtpyModel:
    """A NEFF loaded on the simulated device; unloaded when collected."""

    name: str
    input_tensors_info: dict[str, TensorMetadata]
    output_tensors_info: dict[str, TensorMetadata]
    def __init__(self, model: Any, name: str) -> None:
        """Internal: use load_from_neff."""
    @classmethod
    def load_from_neff(
        cls,
        neff_path: Union[str, os.PathLike[str]],
        name: Optional[str] = None,
        core_id: int = 0,
        cc_enabled: bool = False,
        rank_id: int = 0,
        world_size: int = 1,
    ) -> NrtpyModel:
        """Loads the NEFF on visible core `core_id` (with `cc_enabled`, as
        rank `rank_id` of `world_size`); NrtError when it cannot."""
    def __call__(
        self,
        inputs: Mapping[str, NrtpyTensor],
        outputs: Optional[Mapping[str, NrtpyTensor]] = None,
        save_trace: bool = False,
        ntff_name: Optional[Union[str, os.PathLike[str]]] = None,
    ) -> Optional[dict[str, NrtpyTensor]]:
        """Always raises: NrtError NRT_INVALID(2) for a binding mistake,
        else NrtError NRT_FAILURE(1) "Failed to execute model" (nothing
        executes on a simulated device); NrtpyError for a freed tensor."""
    def benchmark(
        self,
        inputs: Mapping[str, NrtpyTensor],
        outputs: Optional[Mapping[str, NrtpyTensor]] = None,
        warmup_iter: int = 5,
        benchmark_iter: int = 5,
        mode: Literal["device", "host"] = "device",
    ) -> Any:
        """ValueError for a bad mode or benchmark_iter < 1, then as
        __call__: always raises."""

class NrtpySingleton:
    """The process's nrtpy runtime."""

    def free_tensor(self, tensor: NrtpyTensor) -> None:
        """Frees the tensor's device memory now."""

def configure(visible_cores: Optional[Iterable[int]] = None) -> None:
    """Sets NEURON_RT_VISIBLE_CORES for the runtime's next start; NrtpyError
    while it is active, TypeError for an int or a non-integer core,
    ValueError for a negative core or none at all."""

def reset() -> None:
    """Closes the runtime and undoes configure()."""

def get_nrtpy_singleton() -> NrtpySingleton: ...

def tensor_cast(src: NrtpyTensor, dst: NrtpyTensor, num_elements: int) -> None:
    """Converts num_elements of src from its device dtype into dst's, on the
    device (libnrt 2.35, trn2+, round to nearest even); NrtError when
    refused."""

def tensor_compute(
    op: NrtComputeOp, srcs: Sequence[NrtpyTensor], dst: NrtpyTensor, num_elements: int
) -> None:
    """op (ADD, MAX, MIN) across srcs element by element into dst (libnrt
    2.35); NrtError when refused."""
