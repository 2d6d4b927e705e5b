"""neffld: inspect, verify and load AWS Neuron NEFF files without hardware.

    >>> import neffld
    >>> info = neffld.inspect("model.neff")
    >>> info.target, [(t.name, t.dtype, t.shape) for t in info.inputs]
    >>> report = neffld.verify("model.neff")
    >>> with neffld.load("model.neff") as model:
    ...     for core in model.cores:
    ...         print(core.pcore, core.subgraph, core.memory)
    >>> neffld.compare("model.neff", "model.ntff").agrees

Every failure raises :class:`NeffError`, whose ``status`` is the NRT status
(``NRT_STATUS``) that libnrt returns for the same input.
"""

from ._neffld import (
    Comparison,
    Core,
    CoreComparison,
    ImageComparison,
    Model,
    NeffError,
    NeffInfo,
    Problem,
    RowComparison,
    Tensor,
    Variable,
    VerifyReport,
    Weight,
    __version__,
    compare,
    inspect,
    load,
    verify,
)

__all__ = [
    "Comparison",
    "Core",
    "CoreComparison",
    "ImageComparison",
    "Model",
    "NeffError",
    "NeffInfo",
    "Problem",
    "RowComparison",
    "Tensor",
    "Variable",
    "VerifyReport",
    "Weight",
    "__version__",
    "compare",
    "inspect",
    "load",
    "verify",
]
