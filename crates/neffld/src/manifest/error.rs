//! The S2 error type: everything the manifest chain can reject (parse.md §9
//! rows 19–59). Every variant names the member, variable or key involved and,
//! where there is one, what was expected and what was found. Messages keep the
//! reference wording where the spec quotes one.

use thiserror::Error;

use crate::arch::Chip;
use crate::{Arch, NrtStatus};

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ManifestError {
    // ---- any manifest (row 20) -------------------------------------------
    #[error("invalid JSON in {member}: {detail}")]
    Json { member: String, detail: String },
    #[error("duplicate key {key} in {member}")]
    DuplicateKey { key: String, member: String },
    /// neffld's own ceiling ([`super::json::MAX_VALUES`]), not the runtime's.
    #[error("{member} holds more than {ceiling} JSON values (the ceiling was passed at {at}): neffld's own ceiling on one manifest member, against a small NEFF that parses into gigabytes of host memory; real manifests hold a few hundred thousand")]
    TooManyValues {
        member: String,
        at: String,
        ceiling: u64,
    },
    /// neffld's own ceiling on one table ([`super::json::Table`]).
    #[error("{key} in {member} has more than {ceiling} entries: neffld's own ceiling on that table, against a small NEFF that parses into gigabytes of host memory; real NEFFs have at most a few thousand")]
    TooManyEntries {
        member: String,
        key: &'static str,
        ceiling: u64,
    },

    // ---- neff.json (rows 19, 21–29) ---------------------------------------
    #[error("Invalid NN: {name}, neff.json is missing (and there is no kelp.json either)")]
    NeffJsonMissing { name: String },
    #[error("Missing required fields in NEFF JSON: {member} has no {key}")]
    NeffJsonMissingField { member: String, key: &'static str },
    #[error("Missing dltype or shape in attrs of {member}")]
    MissingDltypeOrShape { member: String },
    #[error("Invalid {what} data format in {member}: expected [\"<tag>\", [..]], found {found}")]
    InvalidAttrFormat {
        member: String,
        what: &'static str,
        found: String,
    },
    #[error("EID {eid} out of bounds for dtypes/shapes in {member} ({len} entries)")]
    EidOutOfBounds {
        member: String,
        eid: u64,
        len: usize,
    },
    #[error("Output node ID {node} out of bounds in {member} ({len} nodes)")]
    OutputNodeOutOfBounds {
        member: String,
        node: u64,
        len: usize,
    },
    #[error("Node index {index} out of bounds in {member}: {what} has {len} entries")]
    NodeIndexOutOfBounds {
        member: String,
        index: u64,
        what: &'static str,
        len: usize,
    },
    #[error("Invalid head entry {index} in {member}: {detail}")]
    InvalidHead {
        member: String,
        index: usize,
        detail: String,
    },
    #[error("Too many dimensions ({ndim}) for tensor {name}: at most 32")]
    TooManyDims { name: String, ndim: usize },
    #[error("Invalid shape for {name}: {detail}")]
    InvalidShape { name: String, detail: String },
    #[error(
        "No KELF node found in NEFF JSON {member} (no node has attrs.func_name == \"__kelf\")"
    )]
    NoKelfNode { member: String },
    #[error("KELF node found but missing 'kelf' attribute (node {node} of {member})")]
    KelfAttrMissing { member: String, node: String },
    #[error("KELF attribute is not a string (node {node} of {member}, found {found})")]
    KelfAttrNotString {
        member: String,
        node: String,
        found: String,
    },

    // ---- kelf json (rows 30–34) -------------------------------------------
    #[error("Invalid KELF json {member}: {detail}")]
    InvalidKelf { member: String, detail: String },
    #[error("invalid string (.) in {version} (KELF version in {member} must be <major>.<minor>)")]
    InvalidVersion { member: String, version: String },
    #[error("Invalid target '{target}' in {member} (expected sunda, v2, cayman, v3, mariana, v4, * or empty)")]
    InvalidTarget { member: String, target: String },
    /// The runtime's own message, then neffld's: which chip the NEFF is
    /// for and the compiler's flag for this one.
    #[error("Loading a NEFF compiled for a different arch is not allowed, NEFF arch: v{}, instance arch: v{}. Please ensure that --target <correct_arch> is passed as a neuronx-cc command line flag. To override, set NEURON_RT_ALLOW_LEGACY_NEFF=1 and restart. (neffld: the NEFF was compiled for {}; {})", neff.id(), chip.arch.id(), neff.instance(), chip.recompile())]
    ArchMismatch { neff: Arch, chip: Chip },
    #[error("Duplicate graph name {name} in {member}")]
    DuplicateGraph { member: String, name: String },
    /// Row 63, raised as soon as the kelf json gives the graph count (the
    /// reference raises it after building every kbin): a kelf json listing
    /// 10^5 graphs that all name one small def.json would otherwise cost
    /// 1.4 GB and seconds before the same reject.
    #[error("NEFF has {count} subgraphs, which do not fit one logical core of size {lnc}")]
    SubgraphCount { count: usize, lnc: u32 },

    // ---- def.json and vars (rows 35–42a, 59) ------------------------------
    #[error("Failed to load subgraph definition {member}: {detail}")]
    DefLoad { member: String, detail: String },
    #[error("Subgraph definition {member} has no Outputs ({detail})")]
    NoOutputs { member: String, detail: String },
    #[error("Failed to parse, key: type (variable {var} in {member})")]
    VarMissingType { member: String, var: String },
    #[error("missing <var_id> (variable {var} in {member})")]
    VarMissingId { member: String, var: String },
    #[error("Unknown variable type {ty} for {var} (in {member})")]
    UnknownVarType {
        member: String,
        var: String,
        ty: String,
    },
    #[error("Missing or invalid {key} for variable {var} (in {member}): {detail}")]
    VarKey {
        member: String,
        var: String,
        key: &'static str,
        detail: String,
    },
    #[error("Invalid pointer variable {var} (in {member}): {detail}")]
    InvalidPointer {
        member: String,
        var: String,
        detail: String,
    },
    #[error(
        "alignment provided not power of 2. alignment={alignment} (variable {var} in {member})"
    )]
    AlignmentNotPowerOfTwo {
        member: String,
        var: String,
        alignment: u64,
    },
    #[error("Failed to parse, key: list (variable {var} in {member}): expected an array of var_ids, found {found}")]
    ListUnparsable {
        member: String,
        var: String,
        found: String,
    },
    #[error("List of {var} references unknown var_id {id} (in {member}, {count} variables)")]
    ListUnknownVarId {
        member: String,
        var: String,
        id: u64,
        count: usize,
    },
    #[error("Failed to get neff weight content for {var}: {detail}")]
    WeightMissing { var: String, detail: String },
    #[error("Weight {var} has {have} bytes, variable size is {size} (member {member})")]
    WeightTooShort {
        var: String,
        member: String,
        have: u64,
        size: u64,
    },
    #[error("NUMPY {member} bad header {found:x} != 0x4e93{detail}")]
    NpyBadHeader {
        member: String,
        found: u32,
        detail: String,
    },
    #[error("Unexpected var_ids set! max={max}, size={size} (in {member})")]
    VarIdsNotDense {
        member: String,
        max: u64,
        size: usize,
    },
    #[error("Duplicate var_id {id} ({first}, {second}) in {member}")]
    DuplicateVarId {
        member: String,
        id: u64,
        first: String,
        second: String,
    },
    #[error("Device print dtype {dtype} has {len} characters, at most 15 are supported (variable {var})")]
    VarDtypeTooLong {
        var: String,
        dtype: String,
        len: usize,
    },
    #[error(
        "Variable {var} has {ndim} shape dimensions; shape dimentions of up to 8 are supported"
    )]
    VarShapeTooLong { var: String, ndim: usize },

    // ---- dma_queue (rows 43–46) -------------------------------------------
    #[error("Invalid owner '{owner}' for DMA queue {queue} (in {member}; expected pe, act, pool, dve or sp)")]
    InvalidQueueOwner {
        member: String,
        queue: String,
        owner: String,
    },
    #[error("missing <type> in {queue} (DMA queue in {member})")]
    QueueMissingType { member: String, queue: String },
    #[error("Invalid type '{ty}' for DMA queue {queue} (in {member})")]
    InvalidQueueType {
        member: String,
        queue: String,
        ty: String,
    },
    #[error("Too many DMA queues ({count} > 32) in {member}")]
    TooManyQueues { member: String, count: usize },
    #[error("Invalid act_load queue {queue} in {member}: {detail}")]
    InvalidActLoadQueue {
        member: String,
        queue: String,
        detail: String,
    },
    #[error("Missing embedding_update_sync_semaphore in {queue} (in {member})")]
    MissingEmbeddingSync { member: String, queue: String },
    #[error("Runtime supports maximum of 32 semaphores per queue set, found: {count} (queue {queue} in {member})")]
    TooManySemaphores {
        member: String,
        queue: String,
        count: usize,
    },

    // ---- DMA blocks (rows 47–48d) -----------------------------------------
    #[error("Unknown dma operation: {op} (block {queue}/{id} in {member})")]
    UnknownDmaOp {
        member: String,
        queue: String,
        id: u64,
        op: String,
    },
    #[error(
        "Invalid cce desc ap without dtype (block {queue}/{id} in {member}, endpoint {endpoint})"
    )]
    DescWithoutDtype {
        member: String,
        queue: String,
        id: u64,
        endpoint: &'static str,
    },
    #[error("Size cannot be 0 (block {queue}/{id} in {member}, endpoint {endpoint})")]
    DescZeroSize {
        member: String,
        queue: String,
        id: u64,
        endpoint: &'static str,
    },
    #[error("Malformed DMA block {queue}/{id} in {member}: {detail}")]
    MalformedDmaBlock {
        member: String,
        queue: String,
        id: String,
        detail: String,
    },
    #[error("DMA block {queue}/{id}: unknown queue or wrong owner (in {member}: {detail})")]
    DmaBlockQueue {
        member: String,
        queue: String,
        id: u64,
        detail: String,
    },
    #[error("Duplicate DMA block {queue}/{id} in {member}")]
    DuplicateDmaBlock {
        member: String,
        queue: String,
        id: u64,
    },
    #[error("DMA descriptor references unknown variable {var} (block {queue}/{id} in {member})")]
    DmaUnknownVariable {
        member: String,
        queue: String,
        id: u64,
        var: String,
    },
    #[error("Variable {var} is not staged in HBM (DMA block {queue}/{id} in {member})")]
    DmaNotStaged {
        member: String,
        queue: String,
        id: u64,
        var: String,
    },
    #[error(
        "DMA descriptor out of bounds of {var} ({end} > {size}) (block {queue}/{id} in {member})"
    )]
    DmaOutOfBounds {
        member: String,
        queue: String,
        id: u64,
        var: String,
        /// Exclusive end in bytes; `u64::MAX` when the arithmetic overflowed.
        end: u64,
        size: u64,
    },

    // ---- carve-outs (rows 49–51) ------------------------------------------
    #[error("Invalid runtime_statebuffer_reservation type {ty} (in {member})")]
    InvalidCarveoutType { member: String, ty: String },
    #[error("Missing or corrupted runtime_statebuffer_reservation field in def.json and NEURON_RT_ALLOW_LEGACY_NEFF=1 is not set. Potentially a legacy neff without proper compiler support ({member}: {detail})")]
    MissingCarveout { member: String, detail: String },
    #[error("{detail} → Failed to verify Event Accel State Buffer carveout (in {member})")]
    CarveoutContract { member: String, detail: String },

    // ---- ucode libs (rows 52–56) ------------------------------------------
    #[error("Mismatch between GPSIMD lib version and NRT version! (library {library}: {version}, runtime 1.21.1.0)")]
    UcodeVersionMismatch { library: String, version: String },
    #[error("Missing GPSIMD lib version! (library {library})")]
    UcodeVersionMissing { library: String },
    #[error("Invalid cpu_id {cpu_id} for UCode Library {library}")]
    UcodeCpuId { library: String, cpu_id: u64 },
    #[error("UCode Library {library} has invalid number of total cpus {total}")]
    UcodeTotalCpus { library: String, total: u64 },
    #[error("UCode Library {library} has already been added")]
    UcodeDuplicate { library: String },
    #[error("Invalid UCode Library entry in {member}: {detail}")]
    UcodeInvalid { member: String, detail: String },
    #[error("Number of ExtISA Op trying to load {count} exceeds the maximum 18 (in {member})")]
    ExtIsaTooMany { member: String, count: usize },

    // ---- engines (rows 57–58a) --------------------------------------------
    #[error("Instruction size {size} for {member} exceeds maximum supported size 4294967295")]
    InstrTooLarge { member: String, size: u64 },
    #[error("Instruction size {size} for {member} is not a multiple of 64")]
    InstrNotMultiple { member: String, size: u64 },
    #[error("Failed to load engine {engine} of {sg}: {detail}")]
    EngineLoad {
        engine: &'static str,
        sg: String,
        detail: String,
    },
    #[error("Failed to load activation set {set} of {sg}: {detail}")]
    ActSet {
        set: String,
        sg: String,
        detail: String,
    },
    #[error("Failed to load DVE table {table} of {sg}: {detail}")]
    DveTable {
        table: String,
        sg: String,
        detail: String,
    },

    // ---- tensor info cross-check (ours) -----------------------------------
    #[error("I/O tensor {name}: neff.json gives {neff_size} bytes but {usage} variable {name} in {member} has size {var_size}")]
    IoSizeMismatch {
        name: String,
        usage: &'static str,
        neff_size: u64,
        member: String,
        var_size: u64,
    },

}

impl ManifestError {
    /// Every manifest reject is `NRT_INVALID` (parse.md §9); the host
    /// running out of memory is `HostOom`'s, not a manifest's.
    pub fn status(&self) -> NrtStatus {
        NrtStatus::Invalid
    }
}
