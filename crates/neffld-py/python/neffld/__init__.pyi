"""Type stubs of neffld (the extension module neffld._neffld)."""

import os
from types import TracebackType
from typing import Any, Literal, Optional, Union

__version__: str

RUNTIME_LINES: tuple[_RuntimeLine, ...]
"""The runtime lines neffld reproduces, oldest first: the last is the
newest, the line a load runs under unless told otherwise."""

PathOrBytes = Union[str, os.PathLike[str], bytes, bytearray, memoryview]
"""A path (str or os.PathLike) to read, or the file's contents (bytes,
bytearray, memoryview or any buffer): bytes are always contents, never a
path. When a short buffer that names an existing file fails as contents,
the error says so (pass a str or a pathlib.Path to name a file)."""

_RuntimeLine = Literal["2.23", "2.25", "2.27", "2.30", "2.31", "2.32", "2.33", "2.34", "2.35"]
"""The runtime lines neffld reproduces, oldest first; the last is the
newest, the default (the library's table of lines; a test holds this list
to it)."""

class NeffError(Exception):
    """Raised for every failure but an argument of the wrong type (that is
    TypeError): an argument's value neffld refuses, a file that cannot be
    read or written, an environment variable's value, a NEFF a gate
    refused, a plan that cannot run, a capture that cannot be read."""

    status: int
    """The NRT status (NRT_STATUS) libnrt returns for the same input."""
    status_name: str
    """Its name, e.g. "NRT_INVALID"."""
    stage: str
    """Who refused it: "usage" (an argument's value: arch="trn9",
    device="gpu", start_core=-2, lnc=0, a plan's malformed word or command
    line; NRT_INVALID), "io" (a file that cannot be read or written: the
    NEFF, the capture, a deployment file, a map; NRT_FAILURE; always one
    of the OSError classes below too), "config" (an
    environment variable's value), else the gate: "guard", "container",
    "parse", "stage", "validate", "device", "registry" (a load, or a plan's
    step that cannot start), "capture" (compare's capture)."""
    message: str
    """The failure without the stage and status decoration, exactly (names
    taken from a file included)."""
    def __str__(self) -> str:
        """As the `neffld` command prints the failure: a "usage" or "io"
        failure as its message alone, any other as "STAGE failed: MESSAGE
        [STATUS]". Control characters (of names taken from a NEFF or a
        capture) are escaped (\\n, \\x1b, ...); only a message written from
        the caller's own words (a command line, a deployment file) keeps
        its line breaks."""

class NeffFileNotFoundError(NeffError, FileNotFoundError):
    """A file neffld was given does not exist (stage "io", NRT_FAILURE):
    `errno` is ENOENT, `filename` the path; `str(e)` as NeffError."""

class NeffPermissionError(NeffError, PermissionError):
    """A file neffld may not read or write (stage "io", NRT_FAILURE)."""

class NeffOSError(NeffError, OSError):
    """Any other file neffld cannot read or write (stage "io",
    NRT_FAILURE): a directory, a file that is not a regular one where one
    is needed; `errno` is set where the system gave one."""

class Tensor:
    """One input or output tensor."""

    name: str
    usage: Literal["input", "output"]
    dtype: str
    """numpy dtype name: "float16", "bfloat16", "float32", "int8", ..."""
    shape: tuple[int, ...]
    size: int
    """Bytes."""

class Collective:
    """One collective of a NEFF, as the loader checked it (`neffld inspect
    --json`'s `collectives`): where its record is, what it does, on how
    much, with whom."""

    subgraph: str
    engine: Literal["pe", "act", "pool", "dve", "sp"]
    index: int
    """Its record's index in the engine's NEFF stream."""
    form: Literal["ptc", "ptc2", "psr"]
    operation: str
    """"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
    "permute", ..., "send" or "receive"."""
    reduce: Optional[Literal["add", "mult", "max", "min"]]
    dtype: Optional[str]
    """The ISA's element type ("float32", "bfloat16", ...); None for a
    send or receive, which moves bytes."""
    elements_in: int
    """Elements this rank contributes (a reduce-scatter's and an
    all-to-all's are every rank's share)."""
    elements_out: int
    """Elements it receives (an all-gather's and an all-to-all's are every
    rank's share)."""
    bytes_in: int
    bytes_out: int
    group: Optional[int]
    """The replica group: an index of def.json's replica_groups."""
    group_size: int
    groups: list[list[int]]
    """The ranks of each group of that replica group ([] for each rank
    alone)."""
    peer: Optional[int]
    """The other rank of a send or receive."""
    input: Optional[str]
    output: Optional[str]
    chaining: Literal["none", "initial", "body", "final"]
    stream: int

class NeffInfo:
    """What a NEFF declares (see inspect)."""

    name: str
    uuid: bytes
    """The 16 uuid bytes of the header, in stored order."""
    target: Literal["trn1", "trn2", "trn3"]
    neff_version: str
    lnc: int
    inputs: list[Tensor]
    """Declaration order."""
    outputs: list[Tensor]
    subgraphs: list[str]
    members: list[str]
    warnings: list[str]
    collectives: list[Collective]
    """Every collective of the subgraphs, subgraph by subgraph in record
    order."""

class Problem:
    """One thing wrong with a NEFF."""

    stage: str
    status: int
    status_name: str
    message: str

class VerifyReport:
    """The verdict of verify and every problem found; truthy when sound."""

    ok: bool
    verdict: Literal["ok", "fail"]
    status: int
    """Status of the first problem; 0 (NRT_SUCCESS) when sound."""
    status_name: str
    problems: list[Problem]
    warnings: list[str]
    hash_algorithm: str
    hash_result: str
    """"plain", "word-swapped", "mismatch", "skipped" or ""."""
    gates: list[str]
    """Gates passed: "container", "parse", "stage", "validate"."""
    def __bool__(self) -> bool: ...

class Variable:
    """A subgraph variable and where the memory plan put it."""

    var_id: int
    name: str
    type: str
    """def.json type: "file", "input", "output", "state-buffer", ..."""
    placement: Literal["state-buffer", "hbm", "scratchpad", "io", "host"]
    address: Optional[int]
    size: Optional[int]

class Core:
    """One physical core of the model's logical core."""

    pcore: int
    hbm: int
    subgraph: str
    memory: dict[str, int]
    """Bytes charged to this core: every row of the runtime's memory list,
    in its order, keyed by usage type ("Generic", "Tensor Instructions",
    "Weights", ...), zero rows included."""
    images: dict[str, bytes]
    """Engine ("pe", "act", "pool", "dve", "sp") -> its final instruction
    image: the bytes the load relocated and copied to the device at
    image_addresses[engine], as the load keeps them (not read back from the
    device), so the same on the "sim" and the "null" device."""
    image_addresses: dict[str, int]
    """Engine -> the device address of its image, as the runtime writes it."""
    image_filler_slots: dict[str, int]
    """Engine -> the 64-byte slots of its image that are placeholders, not
    the runtime's own code (unknown for the line and chip): 0 where the
    image is the runtime's byte for byte (`neffld load --json` filler_slots)."""
    variables: list[Variable]

class Weight:
    """A weight (file variable): a read-only buffer over the NEFF's bytes.

    numpy.frombuffer(w, dtype) and numpy.asarray(w) make no copy."""

    name: str
    subgraph: str
    file_name: str
    descr: Optional[str]
    dtype: str
    shape: tuple[int, ...]
    size: int
    def numpy(self) -> Any:
        """A read-only numpy array of dtype and shape, without a copy."""
    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

class IoTensors:
    """What a load does not hold: the model's input and output tensors,
    which a framework binds at execute, measured as `plan` charges them
    after a load (the figure `neffld load` prints)."""

    count: int
    """Input and output tensors with bytes."""
    bytes: int
    """Their sizes summed."""
    fits: bool
    """Whether they fit beside the load."""
    hbm_used: dict[int, int]
    """Bytes used on each HBM of the model with them allocated (empty when
    they do not fit)."""
    hbm_free: dict[int, int]
    error: Optional[str]
    """The runtime's refusal when they do not fit, else None."""

class Model:
    """A model loaded on a simulated device; a context manager that unloads
    on exit."""

    name: str
    uuid: bytes
    arch: Literal["trn1", "trn2", "trn3"]
    runtime: _RuntimeLine
    """The runtime line the load reproduced."""
    notes: list[str]
    """What the runtime took when it started beyond the captured rows its
    line carries over, and why, as `neffld load --json`'s notes (2.35's 64
    MiB per NeuronCore for DMA profiling)."""
    runtime_provenance: dict[str, Any]
    """Where the line's behaviour comes from, as `neffld load --json` says:
    "line", "captured_by", "captured_on" (the chip its captures were taken
    on), "documented" and "carried_over" (empty only for a captured line on
    its own chip), and "notes": the documented facts of the lines after the
    captured one, each {"line", "fact", "source", "reproduced"}."""
    device: Literal["sim", "null"]
    vnc: int
    """The logical core, as the runtime numbers it: among the visible
    cores (NEURON_RT_VISIBLE_CORES), from 0 (what start_core takes)."""
    instance_vnc: int
    """The same core as the device numbers it (pcores are its physical
    cores): vnc unless NEURON_RT_VISIBLE_CORES starts past 0."""
    cores: list[Core]
    tensors: list[Tensor]
    """Inputs then outputs, each in name order (nrt_get_model_tensor_info)."""
    inputs: list[Tensor]
    outputs: list[Tensor]
    io_tensors: IoTensors
    """Not held by the load: its inputs and outputs, bound at execute, and
    the memory with them as `plan` counts them."""
    pcores: list[int]
    warnings: list[str]
    collectives: list[Collective]
    collectives_memory: Optional[str]
    """"collectives memory not counted: N collectives in G replica groups"
    when the NEFF has collectives (their engine's device memory is not
    public, so the memory figures leave it out), else None."""
    timings: dict[str, float]
    loaded: bool
    weights: dict[str, Weight]
    def memory_stats(self) -> dict[str, int]:
        """{"used": bytes, "limit": bytes} of the model's logical core."""
    def unload(self) -> None: ...
    def __enter__(self) -> "Model": ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class RowComparison:
    """One memory row on both sides of a comparison."""

    usage_type: str
    ours: Optional[int]
    capture: Optional[int]
    counted: bool
    """False for rows that depend on who ran the model (Profiler Buffers,
    Tensors)."""
    equal: bool

class ImageComparison:
    """One engine's instruction image on both sides."""

    engine: str
    ours: Optional[dict[str, int]]
    """address, bytes, preamble_slots, main_slots, postamble_slots, kept,
    rewritten, deleted."""
    capture: Optional[dict[str, int]]
    records: int
    same_fate: int
    rewritten_words: int
    rewritten_words_equal: int
    words: int
    """8-byte words of the whole image compared at the same offsets (our filler slots left out)."""
    words_equal: int
    filler_slots: int
    """Slots of our image's runtime code that are filler, not the runtime's
    bytes (unknown for the line)."""
    approximate_records: int
    """Records our image rewrote with values no rule covers (the trigger
    counts of DMA transposes)."""
    address: str
    """"same", "raced" (the two cores' images of a racing engine at each
    other's addresses: the runtime's own race) or "differs"."""
    agrees: bool

class CoreComparison:
    """One subgraph on both sides."""

    subgraph: str
    pcore_ours: Optional[int]
    pcore_capture: Optional[int]
    images: list[ImageComparison]
    memory: list[RowComparison]
    agrees: bool

class Comparison:
    """A capture held against neffld's load; truthy when they agree."""

    runtime_line: _RuntimeLine
    """The runtime line neffld loaded under: the capture's."""
    agrees: bool
    cores: list[CoreComparison]
    def __bool__(self) -> bool: ...

def compare(neff: PathOrBytes, capture: PathOrBytes) -> Comparison:
    """Loads the NEFF as the capture's runtime did (architecture, runtime
    line, logical core) and compares images, addresses and memory rows with the capture
    (an .ntff profiler capture). Raises NeffError (TypeError for an
    argument that is neither a path nor bytes)."""

def inspect(path_or_bytes: PathOrBytes) -> NeffInfo:
    """Name, uuid, target and I/O tensors, through the container, manifest
    and KBIN gates (hash not required). Raises NeffError (TypeError for an
    argument that is neither a path nor bytes)."""

def verify(path_or_bytes: PathOrBytes, stage: bool = True) -> VerifyReport:
    """Every gate, hash required, every problem found; with `stage`, a load
    on the architecture NEFFLD_ARCH or NEFFLD_INSTANCE names, else the
    NEFF's own target, as `load` resolves it. Raises NeffError only when
    the input cannot be read (stage "io") or a variable's value is refused
    ("config"); TypeError for an argument that is neither a path nor
    bytes."""

def load(
    path_or_bytes: PathOrBytes,
    arch: Optional[Literal["trn1", "trn2", "trn3"]] = None,
    device: Literal["sim", "null"] = "sim",
    start_core: int = -1,
    runtime: Optional[str] = None,
) -> Model:
    """Loads the NEFF (nrt_load, S0-S5) onto a fresh simulated device of
    `arch` (default: the architecture NEFFLD_ARCH or NEFFLD_INSTANCE names,
    else the NEFF's target; a NEFF for another architecture is refused
    unless NEURON_RT_ALLOW_LEGACY_NEFF=1), reproducing runtime line `runtime`
    (a line of _RuntimeLine or a version such as "2.27.23"; default:
    NEFFLD_RUNTIME, else the newest line, the runtime users run). The runtime's
    environment variables apply; the logical-core size defaults to the
    NEFF's own. Raises NeffError: stage "usage" for a refused value of
    `arch`, `device`, `runtime` or `start_core` (-1 or 0 to 2**31-1), "io"
    for a path that cannot be read, else the gate that refused the load;
    TypeError for an argument of the wrong type."""

class PlanInstance:
    """The instance a plan ran on."""

    name: Optional[str]
    """Instance type (None: one chip of `arch`)."""
    chip: Optional[str]
    arch: Literal["trn1", "trn2", "trn3"]
    chips: int
    cores_per_chip: int
    hbms_per_chip: int
    hbm_size: int
    lnc: int
    logical_cores: int
    visible_cores: Optional[list[int]]
    """The logical cores the process sees when NEURON_RT_VISIBLE_CORES or
    NEURON_RT_NUM_CORES restricts them (None: all); the plan numbers them
    from 0."""
    visible_by: Optional[str]
    """The setting that restricted them ("NEURON_RT_VISIBLE_CORES=4-7")."""

class StepError:
    """Why a step was refused."""

    stage: str
    status: int
    status_name: str
    message: str
    own_limit: Optional[str]
    """neffld's own ceiling rather than the runtime's: the setting that raises it."""
    damaged: bool
    """The NEFF's own bytes are damaged (cut short, a digest, gzip stream or
    tar that does not check): no change to the deployment loads it."""

class PlanStep:
    """One step of a plan as it ran."""

    index: int
    kind: Literal["load", "tensor", "unload", "free"]
    file: Optional[str]
    name: Optional[str]
    size: Optional[int]
    core: Optional[int]
    """The logical core it ran on."""
    device: Optional[int]
    pcores: list[int]
    status: Literal["ok", "refused"]
    error: Optional[StepError]
    held_after: int

class LogLine:
    """One line of the runtime's log."""

    function: str
    message: str

class Pool:
    """The free bytes of one allocator pool of an HBM."""

    pool: Literal["main", "small"]
    capacity: int
    free: int
    longest: int

class PlanRefusal:
    """The first refusal for want of device memory, as the runtime logs it."""

    step: int
    device: int
    pcore: int
    hbm: Optional[int]
    size: int
    alignment: int
    usage: str
    category: str
    what: str
    explain: Optional[str]
    pools: list[Pool]
    log: list[LogLine]

class PlanNeff:
    """A NEFF loaded where the plan stopped."""

    id: int
    name: str
    file: str
    device: int
    core: int
    pcores: list[int]
    rank: Optional[int]
    """Its rank, for a rank of a world (world=)."""
    collectives_not_counted: Optional[str]
    """The device memory of its collectives, which its rows leave out (no
    public fact sizes it): "collectives memory not counted: 6 collectives in
    2 replica groups on rank 0"; None without collectives."""

class WorldRank:
    """One rank of a world (world=)."""

    rank: int
    step: int
    file: str
    core: Optional[int]
    """The logical core it loaded on, numbered across the hosts (None: the
    plan stopped before its load)."""
    host: Optional[int]
    loaded: bool
    collectives: int
    groups: int

class Disagreement:
    """Two ranks of a world that do not agree."""

    kind: str
    """"world_size", "mismatch" or "deadlock"."""
    group: Optional[list[int]]
    index: Optional[int]
    """The collective's place in the group's ordered list."""
    ranks: tuple[int, int]
    """The rank compared against (or waited for), and the rank whose load
    step is refused."""
    what: str
    runtime_log: list[str]
    """What the line's runtime logs for it, where known."""
    runtime_finds: bool
    step: int

class PlanWorld:
    """A world of ranks (world=): its shape, ranks, and whether they agree."""

    size: int
    hosts: int
    cores_per_host: int
    chips_per_host: int
    root_comm: str
    root_comm_assumed: bool
    """NEURON_RT_ROOT_COMM_ID is not set: the plan loads as though the
    framework had set root_comm."""
    signature_check: bool
    replica_group_cap: int
    ranks: list[WorldRank]
    disagreements: list[Disagreement]
    agrees: bool

class PlanTensor:
    """A device tensor held where the plan stopped."""

    name: str
    size: int
    core: int
    device: int
    pcore: int
    hbm: int
    io_of: Optional[int]

class Copies:
    """How many more copies of one NEFF fit on a core."""

    file: str
    count: int
    at_least: bool
    """Counting stopped before a copy was refused (at 256 copies, or at the
    plan's NEFFLD_MAX_HEADROOM allocations): at least count fit."""
    refused: Optional[StepError]
    """Why the NEFF cannot load on the core at all, memory aside (count is then 0)."""

class Headroom:
    """What more fits on one logical core."""

    core: int
    device: int
    pcores: list[int]
    hbm: int
    hbm_free: int
    largest_tensor: int
    shared_with: list[int]
    pools: list[Pool]
    explain: Optional[str]
    copies: list[Copies]

class Advice:
    """One piece of advice, judged by planning again with it."""

    kind: Literal[
        "scratchpad_page",
        "paged_scratchpad",
        "lnc",
        "placement",
        "spread",
        "tensor_size",
        "without_neff",
    ]
    change: str
    argv: list[str]
    """The whole `neffld plan` command line that applies it (plan_argv plans
    it); a path that is not UTF-8 is given as `os.fsdecode` gives it."""
    moves: Optional[list[tuple[int, int]]]
    """A placement's or a spread's moves, (from, to) logical cores (a
    spread moves the core's steps from `to_dict()`'s `from_step` on)."""
    size: Optional[int]
    """A tensor_size's bytes: the refused tensor at the largest size that
    fits on its cores beside the rest (what solve="NAME@CORES" answers)."""
    reason: str
    fits: bool
    completed_before: int
    completed_after: int
    held_before: int
    held_after: int
    saves: int
    fullest_hbm_before: int
    fullest_hbm_after: int
    unblocked: Optional[tuple[int, int, int]]
    """The refused step it lets through: (step, free before, free after)."""

class Solve:
    """A question (solve=) and its answer."""

    kind: Literal["tensor", "ranks"]
    query: str
    name: Optional[str]
    file: Optional[str]
    cores: Optional[list[int]]
    bytes: Optional[int]
    ranks: Optional[int]
    """Copies of FILE.neff that fit, every core together."""
    per_core: Optional[list[tuple[int, int]]]
    """Each core counted, in the order listed: (core, copies it took)."""
    stopped: Optional[StepError]
    """Why the last core to stop took no further copy."""
    ceiling: Optional[str]
    """neffld's own ceiling that stopped the count (then at least ranks)."""
    unanswered: Optional[str]

class Plan:
    """A planned deployment (`neffld plan`)."""

    fits: bool
    instance: PlanInstance
    runtime: str
    notes: list[str]
    """What the runtime takes when it starts beyond the captured rows its
    line carries over, and why, a sentence each (2.35 reserves 64 MiB per
    NeuronCore for DMA profiling), as `neffld plan` notes it."""
    scratchpad_page: int
    contiguous_scratchpad: bool
    unused_page_size: Optional[int]
    """A page size NEURON_SCRATCHPAD_PAGE_SIZE asked for that the contiguous
    scratchpad does not use (None: none asked, or pages used)."""
    io_tensors: bool
    planned_steps: int
    parses: int
    steps: list[PlanStep]
    refusal: Optional[PlanRefusal]
    neffs: list[PlanNeff]
    tensors: list[PlanTensor]
    headroom: list[Headroom]
    advice: list[Advice]
    no_fix: Optional[str]
    solve: Optional[Solve]
    world: Optional[PlanWorld]
    """The world the loads were the ranks of (world=)."""
    json: str
    """The document `neffld plan --json` prints."""
    memory: dict[str, Any]
    """Every device's memory where the plan stopped, as in the document."""
    def to_dict(self) -> dict[str, Any]:
        """The document `neffld plan --json` prints, as a dict."""

def plan(
    *loads: Union[str, os.PathLike[str]],
    instance: Optional[str] = None,
    lnc: Optional[int] = None,
    runtime: Optional[str] = None,
    env: Optional[dict[str, Union[str, int]]] = None,
    tensors: "tuple[str, ...] | list[str]" = (),
    unloads: "tuple[str, ...] | list[str]" = (),
    frees: "tuple[str, ...] | list[str]" = (),
    io_tensors: bool = True,
    map: Optional[Union[str, os.PathLike[str]]] = None,
    monitor: Optional[Union[str, os.PathLike[str]]] = None,
    sysfs: Optional[Union[str, os.PathLike[str]]] = None,
    solve: Optional[Union[str, os.PathLike[str]]] = None,
    max_inflated: Optional[int] = None,
    world: Optional[int] = None,
    hosts: Optional[int] = None,
) -> Plan:
    """Plans a deployment on a simulated instance (`neffld plan`): LOADs
    "FILE" or "FILE@CORES" (always files, never options), or one deployment
    file; returns a Plan (fits, steps, refusal with the runtime's log lines,
    headroom, advice each with the argv that applies it, solve: the largest
    tensor NAME@CORES, or how many copies of FILE.neff fit on CORES or,
    without @CORES, over the instance; with no load, asked of the empty
    instance). A refused
    step is the answer (fits is False), not an exception. Raises TypeError
    for an argument of the wrong type (a string where a list is expected,
    a NEFF's bytes rather than its path: a plan may read a NEFF more than
    once, lnc="2", a str no file system can encode); NeffError with stage
    "usage" for a value the planner refuses (lnc=0, an unknown instance, a
    malformed tensor, a name that is not UTF-8 text), "io" for a file that
    cannot be read or written (a load, the deployment file, the map,
    monitor or sysfs; a FIFO or a device, refused at once). A file is any
    path the OS takes: `os.fsdecode(b"\\xff.neff")` names the file of
    those bytes. map: the HTML map; monitor: the deployment as
    neuron-monitor reports it, one line of JSON; sysfs: a directory, the
    driver's sysfs tree (neuron0/neuron_core0/stats/...), missing, empty
    or an earlier such tree; as the command's --map, --monitor and --sysfs
    (docs/cli.md); to_dict()["written"] says where. world=N makes the
    loads the N ranks of one collectives world, compared before any load
    (plan.world); hosts=K spreads it over K instances."""

def plan_argv(argv: "list[str] | tuple[str, ...]") -> Plan:
    """Plans a `neffld plan` command line (an advice item's argv, with or
    without the leading "neffld", "plan"); returns its Plan. A command line
    the command refuses raises NeffError (stage "usage", the command's own
    message, lines and all); so does one asking for the command's help
    (`--help`, `-h`): `neffld plan --help` prints that."""
