"""neffld: inspect, verify and load AWS Neuron NEFF files without hardware.

    >>> import neffld
    >>> info = neffld.inspect("model.neff")
    >>> info.target, [(t.name, t.dtype, t.shape) for t in info.inputs]
    >>> report = neffld.verify("model.neff")
    >>> with neffld.load("model.neff") as model:
    ...     for core in model.cores:
    ...         print(core.pcore, core.subgraph, core.memory)
    >>> neffld.compare("model.neff", "model.ntff").agrees
    >>> p = neffld.plan("dense.neff@0,0", instance="trn2.3xlarge", lnc=1,
    ...                 tensors=["kv=4GiB@1"])
    >>> p["fits"], p["refusal"]["log"][1]["message"], p["advice"][0]["change"]

Every failure raises :class:`NeffError`, whose ``status`` is the NRT status
(``NRT_STATUS``) that libnrt returns for the same input.
"""

import json as _json
import os as _os
from typing import Any as _Any

from ._neffld import _plan
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
    "plan",
    "plan_argv",
    "verify",
]


def plan(
    *loads,
    instance=None,
    lnc=None,
    runtime=None,
    env=None,
    tensors=(),
    unloads=(),
    io_tensors=True,
    map=None,
    solve=None,
) -> dict[str, _Any]:
    """Plans a deployment on a simulated instance, as `neffld plan` does,
    and returns the document `neffld plan --json` prints (docs/cli.md).

    `loads` are "FILE" or "FILE@CORES" strings (or paths), or one deployment
    file (*.toml); `tensors` "NAME=SIZE@CORES" and `unloads` "FILE@CORES"
    run after the loads (interleave them in a deployment file); `env` maps
    runtime variables to values. A refused step is the answer
    (`["fits"]` is False), not an exception; a usage or I/O error raises
    NeffError.

    `solve` asks for a figure instead of a verdict: "NAME@CORES" gives in
    `["solve"]["bytes"]` the largest tensor NAME that fits on every listed
    core at once beside the deployment; "FILE.neff[@CORES]" gives in
    `["solve"]["ranks"]` how many more loads of FILE fit. Each advice item
    carries `["argv"]`, the whole command line that applies it: give it to
    `plan_argv` to plan it again.
    """
    # Every option in its `--name=value` form, the loads after `--`: a load
    # is always a file name, never an option (`'--map=victim.txt'` as a
    # load used to write the map over victim.txt). Tensors and unloads run
    # after the loads (the `plan_document` order), wherever they stand.
    args = []
    if instance is not None:
        args.append(f"--instance={instance}")
    if lnc is not None:
        if isinstance(lnc, bool) or not isinstance(lnc, int) or lnc < 1:
            raise ValueError(f"lnc={lnc!r}: a logical-core size is a positive integer (1 or 2)")
        args.append(f"--lnc={lnc}")
    if runtime is not None:
        args.append(f"--runtime={runtime}")
    for k, v in (env or {}).items():
        args.append(f"--env={k}={v}")
    for t in tensors:
        args.append(f"--tensor={t}")
    for u in unloads:
        args.append(f"--unload={_os.fspath(u)}")
    if not io_tensors:
        args.append("--no-io-tensors")
    if map is not None:
        args.append(f"--map={_os.fspath(map)}")
    if solve is not None:
        args.append(f"--solve={_os.fspath(solve)}")
    args.append("--")
    args += [_os.fspath(x) for x in loads]
    return _json.loads(_plan(args))


def plan_argv(argv) -> dict[str, _Any]:
    """Plans a `neffld plan` command line given as a list of words (an
    advice item's `["argv"]`, with or without the leading "neffld", "plan")
    and returns its `--json` document."""
    words = [str(w) for w in argv]
    if words[:2] == ["neffld", "plan"]:
        words = words[2:]
    elif words[:1] == ["plan"]:
        words = words[1:]
    return _json.loads(_plan(words))
