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
    >>> p.fits, p.refusal.log[1].message, p.advice[0].change, p.advice[0].fits

An argument of a type a function does not take raises ``TypeError``; every
other failure raises :class:`NeffError`, whose ``status`` is the NRT status
(``NRT_STATUS``) that libnrt returns for the same input and whose ``stage``
says who refused it: ``"usage"`` for an argument's value (``NRT_INVALID``),
``"io"`` for a file that cannot be read or written (``NRT_FAILURE``), as the
``neffld`` command reports both, ``"config"`` for an environment variable's
value, else the gate that refused the NEFF, the plan or the capture. A
file that cannot be read or written is also an ``OSError``:
:class:`NeffFileNotFoundError` (a ``FileNotFoundError``),
:class:`NeffPermissionError` (a ``PermissionError``), else
:class:`NeffOSError`, with ``errno`` and ``filename`` where known.
"""

import os as _os
import reprlib as _reprlib
from collections.abc import Mapping as _Mapping

from ._neffld import _plan, _plan_argv
from ._neffld import (
    Advice,
    Collective,
    Comparison,
    Copies,
    Core,
    CoreComparison,
    Disagreement,
    Headroom,
    ImageComparison,
    IoTensors,
    LogLine,
    Model,
    NeffError,
    NeffFileNotFoundError,
    NeffInfo,
    NeffOSError,
    NeffPermissionError,
    Plan,
    PlanInstance,
    PlanNeff,
    PlanRefusal,
    PlanStep,
    PlanTensor,
    PlanWorld,
    Pool,
    Problem,
    RowComparison,
    Solve,
    StepError,
    Tensor,
    Variable,
    VerifyReport,
    Weight,
    WorldRank,
    RUNTIME_LINES,
    __version__,
    compare,
    inspect,
    load,
    verify,
)

__all__ = [
    "Advice",
    "Collective",
    "Comparison",
    "Copies",
    "Core",
    "CoreComparison",
    "Disagreement",
    "Headroom",
    "ImageComparison",
    "IoTensors",
    "LogLine",
    "Model",
    "NeffError",
    "NeffFileNotFoundError",
    "NeffInfo",
    "NeffOSError",
    "NeffPermissionError",
    "Plan",
    "PlanInstance",
    "PlanNeff",
    "PlanRefusal",
    "PlanStep",
    "PlanTensor",
    "PlanWorld",
    "Pool",
    "Problem",
    "RowComparison",
    "Solve",
    "StepError",
    "Tensor",
    "Variable",
    "VerifyReport",
    "Weight",
    "WorldRank",
    "RUNTIME_LINES",
    "__version__",
    "compare",
    "inspect",
    "load",
    "plan",
    "plan_argv",
    "verify",
]


_BUFFERS = (bytes, bytearray, memoryview)

_repr = _reprlib.Repr()
_repr.maxstring = _repr.maxlong = 60


def _shown(value):
    """`value` in a message: a string or a number as a (shortened) repr,
    anything else by its type (and a buffer's size), never whole: a NEFF's
    bytes given by mistake are megabytes."""
    if isinstance(value, str):
        return f"the string {_repr.repr(value)}"
    if isinstance(value, (int, float)) or value is None:
        return _repr.repr(value)
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    if isinstance(value, _BUFFERS):
        return f"{article} {name} object of {memoryview(value).nbytes} bytes"
    return "an object" if name == "object" else f"{article} {name} object"


def _words(what, value, files=False):
    """A list of strings (or paths) given for `what`; a lone string is a
    mistake (it would be read letter by letter). With `files`, the words
    name files, and a buffer is told that plan takes paths."""
    not_contents = (
        ": plan takes NEFF files by path (str or os.PathLike), never their"
        " contents, since a plan may read a NEFF more than once; write the"
        " bytes to a file and pass its path"
    )
    if isinstance(value, (str, *_BUFFERS)) or not hasattr(value, "__iter__"):
        why = not_contents if files and isinstance(value, _BUFFERS) else ""
        raise TypeError(f"{what}: expected a list of strings, not {_shown(value)}{why}")
    words = []
    for w in value:
        if not isinstance(w, (str, _os.PathLike)):
            why = not_contents if files and isinstance(w, _BUFFERS) else ""
            raise TypeError(f"{what}: {_shown(w)} is not a string or a path{why}")
        words.append(_os_word(what, w))
    return words


def _os_word(what, value):
    """`value` (a str or a path) as a str the OS can take: any path
    `os.fsdecode` gives, undecodable bytes included; a str no file system
    encoding can write (a lone surrogate) is a TypeError, as for `load`."""
    word = _os.fspath(value)
    if isinstance(word, bytes):
        word = _os.fsdecode(word)
    try:
        _os.fsencode(word)
    except UnicodeEncodeError as e:
        raise TypeError(f"{what}: {_shown(word)} is not a usable path or word: {e}") from e
    return word


def _text(what, value):
    if value is None:
        return None
    if not isinstance(value, (str, _os.PathLike)):
        raise TypeError(f"{what}: expected a string or a path, not {_shown(value)}")
    return _os_word(what, value)


def plan(
    *loads,
    instance=None,
    lnc=None,
    runtime=None,
    env=None,
    tensors=(),
    unloads=(),
    frees=(),
    io_tensors=True,
    map=None,
    monitor=None,
    sysfs=None,
    solve=None,
    max_inflated=None,
    world=None,
    hosts=None,
) -> Plan:
    """Plans a deployment on a simulated instance, as `neffld plan` does,
    and returns a :class:`Plan` (`to_dict()` gives the document `neffld
    plan --json` prints, docs/cli.md).

    `loads` are "FILE" or "FILE@CORES" strings (or paths), or one
    deployment file (*.toml); a load is always a file, never an option, and
    any path the OS takes (`os.fsdecode` of bytes that are not UTF-8 too).
    `tensors` "NAME=SIZE@CORES", `unloads` "FILE@CORES" and `frees`
    "NAME@CORES" (lists) run after the loads, in that order (interleave them
    in a deployment file); `env` maps runtime variables to values. A
    refused step is the answer (`plan.fits` is False), not an exception.
    An argument of the wrong type (a string where a list is expected, the
    bytes of a NEFF rather than its path, lnc="2") raises TypeError; a value
    the planner refuses (lnc=0, an unknown instance, a malformed tensor)
    NeffError with stage "usage" (a name that must be text and is not
    UTF-8 too); a file that cannot be read or written (a load, the
    deployment file, the `map`, `monitor` or `sysfs`; a FIFO or a device,
    refused at once) NeffError with stage "io".

    `map` writes the HTML map of the instance, `monitor` the deployment as
    neuron-monitor reports it (one line of JSON), `sysfs` the directory of
    the driver's sysfs tree (`neuron0/neuron_core0/stats/...`); each as the
    command's `--map`, `--monitor` and `--sysfs` do (docs/cli.md), and
    `plan.to_dict()["written"]` says where.

    `solve` asks for a figure instead of a verdict: "NAME@CORES" gives in
    `plan.solve.bytes` the largest tensor NAME that fits on every listed
    core at once beside the deployment; "FILE.neff[@CORES]" gives in
    `plan.solve.ranks` how many copies of FILE fit on the listed cores
    (else every core of the instance; `plan.solve.per_core` by core). With
    no load, either is asked of the empty instance. Each advice item
    carries `argv`, the whole command line that applies it: give it to
    `plan_argv` to plan it again.

    `world=N` makes the loads the N ranks of one collectives world: rank r
    is the r-th load, loaded as `nrt_load_collectives(..., r, N)` loads it,
    and the ranks' collectives are compared before any load (`plan.world`:
    its ranks and hosts, `plan.world.disagreements`; a disagreement refuses
    the step of the rank that differs). `hosts=K` spreads a world over K
    instances of the type (default: as many as its ranks need).
    """
    # Types here (TypeError); values, as for every other argument, in the
    # extension (NeffError, stage "usage").
    for name, value in (("lnc", lnc), ("max_inflated", max_inflated), ("world", world), ("hosts", hosts)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{name}: expected an int, not {_shown(value)}")
    if env is None:
        env = {}
    if not isinstance(env, _Mapping):
        raise TypeError(
            f"env: expected a mapping of variable names to values, not {_shown(env)}"
        )
    if not isinstance(io_tensors, bool):
        raise TypeError(f"io_tensors: expected True or False, not {_shown(io_tensors)}")
    pairs = []
    for k, v in env.items():
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (str, int)):
            raise TypeError(
                f"env: {_shown(k)} maps to {_shown(v)}:"
                " a variable name (a string) maps to a string or an int"
            )
        pairs.append((_os_word("env", k), _os_word("env", str(v))))
    return _plan(
        _words("loads", loads, files=True),
        _text("instance", instance),
        lnc,
        _text("runtime", runtime),
        pairs,
        _words("tensors", tensors),
        _words("unloads", unloads),
        _words("frees", frees),
        io_tensors,
        _text("map", map),
        _text("monitor", monitor),
        _text("sysfs", sysfs),
        _text("solve", solve),
        max_inflated,
        world,
        hosts,
    )


def plan_argv(argv) -> Plan:
    """Plans a `neffld plan` command line given as a list of words (an
    advice item's `argv`, with or without the leading "neffld", "plan"),
    read as the command reads it, and returns its :class:`Plan`.

    A command line the command would refuse raises NeffError (stage
    "usage"), its message the command's own, lines and all. So does one
    that asks for the command's help (`--help`, `-h`): plan_argv returns a
    Plan, never help text; `neffld plan --help` prints it."""
    words = _words("argv", argv)
    if words[:2] == ["neffld", "plan"]:
        words = words[2:]
    elif words[:1] == ["plan"]:
        words = words[1:]
    return _plan_argv(words)
