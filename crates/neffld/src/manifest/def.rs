//! Tier 3: one subgraph's `def.json` (parse.md §5.3, §13.4): the variable
//! table, the DMA queues, the state-buffer carve-outs, fp8, cc streams, the
//! GPSIMD libraries and the collectives keys. The engine json files it names
//! are read by `engine.rs`.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::engine_type::EngineType;
use super::json::{self, brief, RawValue};
use super::kelf::GraphRef;
use super::npy;
use super::{Blob, ManifestError};
use crate::container::Archive;
use crate::ids::VarId;
use crate::Arch;

/// Most DMA rings one kbin holds (`dma[32]`).
pub const MAX_DMA_QUEUES: usize = 32;
/// Most semaphores in one queue set.
pub const MAX_QUEUE_SEMAPHORES: usize = 32;
/// The EVTACCEL carve-out contract on Cayman (§5.3.5).
pub const EVTACCEL_OFFSET: u64 = 0x37FF8;
pub const EVTACCEL_SIZE: u64 = 8;
pub const EVTACCEL_PARTITIONS: u64 = 128;
/// The major GPSIMD library version this runtime accepts (`1.21.1.0`).
pub const UCODE_MAJOR: u64 = 1;
/// Most ExtISA ops one `ext_isa_ucode_lib_def` may override.
pub const MAX_EXT_ISA_OPS: usize = 18;
/// Most variables one def.json may declare: neffld's own ceiling, not the
/// runtime's. Every variable becomes a record in each later stage (about
/// 1.5 KB of host memory through a load), so the value ceiling of a
/// manifest alone would admit half a million and gigabytes; real NEFFs
/// declare at most 959 (parse.md §13).
pub const MAX_VARS: u64 = 1 << 16;

/// A def.json `type`, with the `kbin_mr_type` it becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VarKind {
    StateBuffer,
    Input,
    Output,
    TmpBuf,
    Virtual,
    Pointer,
    List,
    File,
    /// A pointer table (our decision for `dge-table`, parse.md §5.3.2).
    DgeTable,
    Remote,
}

impl VarKind {
    pub fn from_type(s: &str) -> Option<VarKind> {
        Some(match s {
            "state-buffer" => VarKind::StateBuffer,
            "input" => VarKind::Input,
            "output" => VarKind::Output,
            "tmp-buf" => VarKind::TmpBuf,
            "virtual" => VarKind::Virtual,
            "pointer" => VarKind::Pointer,
            "list" => VarKind::List,
            "file" => VarKind::File,
            "dge-table" => VarKind::DgeTable,
            "remote" => VarKind::Remote,
            _ => return None,
        })
    }

    pub fn type_name(self) -> &'static str {
        match self {
            VarKind::StateBuffer => "state-buffer",
            VarKind::Input => "input",
            VarKind::Output => "output",
            VarKind::TmpBuf => "tmp-buf",
            VarKind::Virtual => "virtual",
            VarKind::Pointer => "pointer",
            VarKind::List => "list",
            VarKind::File => "file",
            VarKind::DgeTable => "dge-table",
            VarKind::Remote => "remote",
        }
    }

    /// `kbin_mr_type`: SB 1, BUFFER 3, TMP_BUF 4, INPUT 5, OUTPUT 6, PTR 7,
    /// VIRTUAL_TMP_BUF 8, LIST 9, PTR_TABLE 10, REMOTE 11.
    #[cfg(any(test, feature = "testkit"))]
    pub fn mr_type(self) -> u32 {
        match self {
            VarKind::StateBuffer => 1,
            VarKind::File => 3,
            VarKind::TmpBuf => 4,
            VarKind::Input => 5,
            VarKind::Output => 6,
            VarKind::Pointer => 7,
            VarKind::Virtual => 8,
            VarKind::List => 9,
            VarKind::DgeTable => 10,
            VarKind::Remote => 11,
        }
    }

    /// Kinds whose `size` the planner needs (§5.3.2).
    fn requires_size(self) -> bool {
        matches!(
            self,
            VarKind::Input
                | VarKind::Output
                | VarKind::TmpBuf
                | VarKind::Virtual
                | VarKind::Pointer
                | VarKind::File
        )
    }
}

/// The scratchpad area a virtual var lives in (`backing_buf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backing {
    /// The default when `backing_buf` is absent (our decision, §5.3.2).
    Local = 0,
    Shared = 1,
    Sharded = 2,
    Main = 3,
}

/// A weight's bytes: where the payload sits in the archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weight {
    pub file_name: String,
    /// The payload (after the npy header, or the whole member).
    pub payload: Blob,
    /// `Some((major, minor))` for an `.npy` member.
    pub npy_version: Option<(u8, u8)>,
    pub npy_descr: Option<String>,
    pub npy_shape: Option<Vec<u64>>,
}

/// An explicit cross-subgraph binding of a `remote` var.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteRef {
    pub rel_sg: u32,
    pub var_id: u32,
}

/// One validated variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Var {
    pub name: String,
    pub id: VarId,
    /// Bytes, a power of two; `None` when absent or 0.
    pub alignment: Option<u64>,
    pub dtype: Option<String>,
    pub shape: Option<Vec<u64>>,
    /// The kind with the facts def.json must give for it, so a stage never
    /// meets a kind without them.
    pub of: VarOf,
}

/// A variable's kind and what the parse required of that kind (§5.3.2);
/// keys def.json may carry on other kinds are not kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VarOf {
    /// Sized by the architecture's window ([`SB_WINDOW`]), never by def.json.
    StateBuffer,
    Input {
        size: u64,
    },
    Output {
        size: u64,
    },
    TmpBuf {
        size: u64,
    },
    Virtual {
        size: u64,
        /// `backing_variable_off`; `backing_offset + size` fits a u64.
        backing_offset: u64,
        backing: Backing,
    },
    /// Its slot is [`POINTER_SLOT`] bytes (the parse refuses any other
    /// `size`).
    Pointer {
        /// A var_id of the same table.
        referenced: VarId,
        /// The slot points at an input or output, so it is filled at every
        /// execution rather than when staged.
        io_ref: bool,
    },
    /// var_ids of the same table, in the order written.
    List {
        items: Vec<VarId>,
    },
    /// As a list; staged as one IO word ([`DGE_TABLE_WORD`]).
    DgeTable {
        items: Vec<VarId>,
    },
    File {
        /// The bytes staged; the payload holds at least as many.
        size: u64,
        weight: Weight,
    },
    /// Aliases a variable of another subgraph, so def.json need not size it.
    Remote {
        size: Option<u64>,
        /// `None`: bound by name (`kbin::build`).
        binding: Option<RemoteRef>,
    },
}

impl VarOf {
    /// Without the facts: what reports and the kbin record name.
    pub fn kind(&self) -> VarKind {
        match self {
            VarOf::StateBuffer => VarKind::StateBuffer,
            VarOf::Input { .. } => VarKind::Input,
            VarOf::Output { .. } => VarKind::Output,
            VarOf::TmpBuf { .. } => VarKind::TmpBuf,
            VarOf::Virtual { .. } => VarKind::Virtual,
            VarOf::Pointer { .. } => VarKind::Pointer,
            VarOf::List { .. } => VarKind::List,
            VarOf::DgeTable { .. } => VarKind::DgeTable,
            VarOf::File { .. } => VarKind::File,
            VarOf::Remote { .. } => VarKind::Remote,
        }
    }
}

pub(crate) use crate::arch::SB_WINDOW;

/// Bytes of the slot a pointer var is staged as.
pub const POINTER_SLOT: u64 = 8;

/// Bytes a `dge-table` is staged as: one IO word (the IO row of 8 bytes
/// every capture shows on the core with a dge-table); its list is resolved
/// on the host, since lowered operands name its variables directly.
pub const DGE_TABLE_WORD: u64 = 8;

impl Var {
    /// The bytes an address into this variable may reach once it is staged
    /// (`mem_ref_to_addr`'s `size`, stage.md §6.2): the SB window for the
    /// state buffer, the slot of a pointer, the one IO word of a
    /// `dge-table`, the declared size otherwise (a `remote` var aliases its
    /// target's placement). `None` for a `list`, which is never staged on
    /// the device: nothing may point into it. Every bound on an operand or
    /// descriptor uses this one rule, and the memory plan gives each
    /// variable exactly this extent.
    pub fn extent(&self) -> Option<u64> {
        match &self.of {
            VarOf::StateBuffer => Some(SB_WINDOW),
            VarOf::Pointer { .. } => Some(POINTER_SLOT),
            VarOf::DgeTable { .. } => Some(DGE_TABLE_WORD),
            VarOf::List { .. } => None,
            VarOf::Input { size }
            | VarOf::Output { size }
            | VarOf::TmpBuf { size }
            | VarOf::Virtual { size, .. }
            | VarOf::File { size, .. } => Some(*size),
            // Unsized in def.json, a remote var reaches no byte of its own.
            VarOf::Remote { size, .. } => Some(size.unwrap_or(0)),
        }
    }
}

/// The variable table of one subgraph: index == var_id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vars {
    pub vars: Vec<Var>,
    by_name: HashMap<String, VarId>,
}

impl Vars {
    pub fn get(&self, id: VarId) -> Option<&Var> {
        self.vars.get(id.0 as usize)
    }
    pub fn by_name(&self, name: &str) -> Option<&Var> {
        self.by_name.get(name).and_then(|&id| self.get(id))
    }
    pub fn len(&self) -> usize {
        self.vars.len()
    }
    #[cfg(any(test, feature = "testkit"))]
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Var> {
        self.vars.iter()
    }
}

/// `type` of a `dma_queue` entry, with the ring type it becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueKind {
    /// IO queue; real NEFFs also run output stores on it (§15 P7).
    In,
    Out,
    Data,
    IndirectMemcpy,
    ActLoad,
    EmbeddingUpdate,
    /// The dynamic-DMA path; ring type DATA with a flag (our decision, §5.3.3).
    Dynamic,
}

impl QueueKind {
    /// `kbin_dma_ring_type`.
    #[cfg(any(test, feature = "testkit"))]
    pub fn ring_type(self) -> u32 {
        match self {
            QueueKind::In => 7,
            QueueKind::Out => 8,
            QueueKind::Data | QueueKind::Dynamic => 6,
            QueueKind::IndirectMemcpy => 9,
            QueueKind::ActLoad => 11,
            QueueKind::EmbeddingUpdate => 15,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct DynamicDma {
    #[serde(rename = "SB_scratch_partition_offset", default)]
    pub sb_scratch_partition_offset: u64,
    #[serde(rename = "SB_scratch_partition_size", default)]
    pub sb_scratch_partition_size: u64,
}

/// One `dma_queue` entry. Its blocks are collected from the engine json files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaQueue {
    pub name: String,
    pub owner: EngineType,
    pub kind: QueueKind,
    /// Kept, never checked (§15 P8).
    pub num_queues: Option<u64>,
    pub semaphore_set: Vec<u64>,
    pub dynamic_dma: Option<DynamicDma>,
    pub embedding_update_sync_semaphore: Option<u64>,
    pub dge: Option<u64>,
}

/// A state-buffer carve-out (`runtime_statebuffer_reservation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SbCarveout {
    /// 1 = EVTACCEL, the only accepted type.
    pub kind: u32,
    /// Byte offset inside a partition.
    pub offset: u64,
    /// Bytes inside a partition.
    pub size: u64,
    pub base_partition: u64,
    pub partitions: u64,
}

/// `fp8_conversion_config` (§5.3.7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Fp8Config {
    pub fp8_range_extension: bool,
    pub emax_fp8_e4m3: u32,
    pub emax_fp8_e5m2: u32,
    pub ocp_sat: bool,
    pub fp8_sis: bool,
    pub fp8_sns: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct UcodeFunction {
    pub name: String,
    pub opcode: i64,
    #[serde(default)]
    pub sub_opcode: i64,
}

/// A GPSIMD custom-op library (§5.3.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UcodeLib {
    pub library: String,
    pub content: Blob,
    pub version: String,
    /// 0 for the opcode-0x85 library, else 6.
    pub flags: u32,
    pub cpu_id: u8,
    pub total_cpus: u8,
    pub functions: Vec<UcodeFunction>,
    pub add_lib: bool,
}

/// Collectives: the replica groups, a list of sets (a collective's group
/// id indexes them), each a list of groups of ranks; bounded as every
/// manifest by [`json::MAX_VALUES`].
pub type ReplicaGroups = Vec<Vec<Vec<u32>>>;

/// def.json's `replica_groups` as written: three levels (sets → groups →
/// ranks) as the compiler writes them, or two (groups → ranks, the HLO's
/// own form), read as the one set they are. `[[]]`, the runtime's sample,
/// is three levels: one set of no groups.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawReplicaGroups {
    Sets(ReplicaGroups),
    OneSet(Vec<Vec<u32>>),
}

impl RawReplicaGroups {
    fn sets(self) -> ReplicaGroups {
        match self {
            RawReplicaGroups::Sets(s) => s,
            RawReplicaGroups::OneSet(groups) => vec![groups],
        }
    }
}

/// Everything def.json says, validated; engine json is read separately.
#[derive(Clone, Debug, PartialEq)]
pub struct Def {
    pub member: String,
    pub version: Option<String>,
    pub vars: Vars,
    pub num_inputs: u32,
    pub num_outputs: u32,
    /// By name (the JSON object's key order is not meaningful).
    pub queues: BTreeMap<String, DmaQueue>,
    pub replica_groups: ReplicaGroups,
    /// How many src/target pair sets there are (§5.3.8): no real sample
    /// shows their form, so they are counted, not kept.
    pub src_target_pairs: usize,
    /// `#rank_world_size`, the compiler's world size (0 in real files
    /// without collectives).
    pub rank_world_size: Option<u64>,
    /// Arch 2 and 4 request the runtime's default Q7 ext-ISA library; we
    /// record the request and stage nothing for it (§5.3.1 row 6).
    pub default_ucode_lib_requested: bool,
    pub ext_isa_ops: usize,
    pub ucode_libs: Vec<UcodeLib>,
    pub sb_carveouts: Vec<SbCarveout>,
    /// Top-level `num_streams` (default 1; §5.3.1 row 10).
    pub cc_num_streams: u64,
    /// `cc_streams.num_streams`, for tooling only.
    pub cc_streams_declared: Option<u64>,
    pub fp8: Option<Fp8Config>,
    pub neff_features: Vec<String>,
    pub runtime_event_count: Option<u64>,
    pub runtime_semaphore_count: Option<u64>,
    /// The `pe/act/pool/dve/sp` keys, by engine type: the member each
    /// names, or what stands there instead of a string.
    pub engine_keys: [Option<Result<String, String>>; 5],
    /// The text of the top-level `dma` array (no real sample), read by the
    /// engines' parse, which holds the other blocks.
    pub top_level_dma: Option<Blob>,
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct RawDef<'a> {
    #[serde(borrow)]
    var: Option<BTreeMap<String, RawVar<'a>>>,
    dma_queue: Option<BTreeMap<String, RawQueue>>,
    replica_groups: Option<RawReplicaGroups>,
    src_target_pairs: Option<json::Count>,
    #[serde(rename = "#rank_world_size")]
    rank_world_size: Option<u64>,
    #[serde(borrow)]
    ext_isa_ucode_lib_def: Option<&'a RawValue>,
    #[serde(borrow)]
    ucode_lib: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    runtime_statebuffer_reservation: Option<&'a RawValue>,
    num_streams: Option<u64>,
    cc_streams: Option<RawCcStreams>,
    #[serde(borrow)]
    dma: Option<&'a RawValue>,
    fp8_conversion_config: Option<Fp8Config>,
    neff_features: Option<Vec<String>>,
    runtime_event_count: Option<u64>,
    runtime_semaphore_count: Option<u64>,
    version: Option<String>,
    #[serde(borrow)]
    pe: Option<&'a RawValue>,
    #[serde(borrow)]
    act: Option<&'a RawValue>,
    #[serde(borrow)]
    pool: Option<&'a RawValue>,
    #[serde(borrow)]
    dve: Option<&'a RawValue>,
    #[serde(borrow)]
    sp: Option<&'a RawValue>,
}

/// The parts of `ext_isa_ucode_lib_def` its count reads.
#[derive(Deserialize)]
struct RawExtIsa<'a> {
    #[serde(borrow)]
    functions: Option<&'a RawValue>,
}

/// A carve-out's keys, each read once its form is known.
#[derive(Deserialize)]
struct RawCarveout<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    offset: Option<&'a RawValue>,
    #[serde(borrow)]
    size: Option<&'a RawValue>,
    #[serde(borrow)]
    base_partition: Option<&'a RawValue>,
    #[serde(borrow)]
    partitions: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawCcStreams {
    num_streams: Option<u64>,
}

#[derive(Deserialize)]
struct RawVar<'a> {
    #[serde(rename = "type")]
    ty: Option<String>,
    var_id: Option<u64>,
    size: Option<u64>,
    alignment: Option<u64>,
    dtype: Option<String>,
    shape: Option<Vec<u64>>,
    backing_variable_off: Option<u64>,
    backing_buf: Option<String>,
    referenced_var_id: Option<u64>,
    io_ref: Option<bool>,
    #[serde(borrow)]
    list: Option<&'a RawValue>,
    file_name: Option<String>,
    remote_vtpb_rel_sg_id: Option<u32>,
    remote_var_id: Option<u32>,
}

#[derive(Deserialize)]
struct RawQueue {
    owner: Option<String>,
    #[serde(rename = "type")]
    ty: Option<String>,
    num_queues: Option<u64>,
    semaphore_set: Option<Vec<u64>>,
    semaphore: Option<u64>,
    dynamic_dma: Option<DynamicDma>,
    indirect_memcpy: Option<bool>,
    embedding_update_sync_semaphore: Option<u64>,
    dge: Option<u64>,
}

#[derive(Deserialize)]
struct RawUcodeLib {
    library: Option<String>,
    ulib_to_ucode_version: Option<String>,
    opcode: Option<i64>,
    cpu_id: Option<u64>,
    total_cpus: Option<u64>,
    #[serde(default)]
    functions: Vec<UcodeFunction>,
    #[serde(default)]
    add_lib: Option<bool>,
}

/// Reads and validates one subgraph's def.json. `target` is the resolved
/// kelf target (the Cayman-only rules key on it).
pub fn parse(
    archive: &Archive,
    graph: &GraphRef,
    target: Arch,
    allow_legacy_neff: bool,
) -> Result<Def, ManifestError> {
    let member = graph.definition.clone();
    let bytes = archive.get(&member).ok_or_else(|| ManifestError::DefLoad {
        member: member.clone(),
        detail: "member is missing from the archive".into(),
    })?;
    let vars = json::Table {
        key: "var",
        ceiling: MAX_VARS,
    };
    let raw: RawDef = json::parse_with(&member, bytes, &[vars]).map_err(|e| match e {
        ManifestError::Json { member, detail } => ManifestError::DefLoad { member, detail },
        other => other,
    })?;
    let mut warnings = Vec::new();

    let raw_vars = raw.var.ok_or_else(|| ManifestError::NoOutputs {
        member: member.clone(),
        detail: "there is no var table".into(),
    })?;
    let (vars, num_inputs, num_outputs) =
        parse_vars(archive, graph, &member, raw_vars, &mut warnings)?;

    let raw_queues = raw.dma_queue.unwrap_or_default();
    if raw_queues.len() > MAX_DMA_QUEUES {
        return Err(ManifestError::TooManyQueues {
            member,
            count: raw_queues.len(),
        });
    }
    let mut queues = BTreeMap::new();
    let mut act_load_seen = false;
    for (name, q) in raw_queues {
        let dq = parse_queue(&member, &name, q, &mut act_load_seen, &mut warnings)?;
        queues.insert(name, dq);
    }

    let ext_isa_ops = raw.ext_isa_ucode_lib_def.map_or(0, ext_isa_count);
    if ext_isa_ops > MAX_EXT_ISA_OPS {
        return Err(ManifestError::ExtIsaTooMany {
            member,
            count: ext_isa_ops,
        });
    }
    let ucode_libs = parse_ucode_libs(archive, graph, &member, raw.ucode_lib.unwrap_or_default())?;
    let top_level_dma = match raw.dma {
        None => None,
        Some(dma) if dma.get().starts_with('[') => {
            let whole = Blob::of(archive, &member).expect("the member was read");
            let start = json::offset_in(bytes, dma);
            Some(whole.sub(start, start + dma.get().len()))
        }
        Some(other) => {
            return Err(ManifestError::DefLoad {
                member,
                detail: format!("dma must be an array, found {}", brief(other)),
            })
        }
    };
    let sb_carveouts = parse_carveouts(
        &member,
        raw.runtime_statebuffer_reservation,
        target,
        allow_legacy_neff,
        &mut warnings,
    )?;

    Ok(Def {
        version: raw.version,
        vars,
        num_inputs,
        num_outputs,
        queues,
        replica_groups: raw
            .replica_groups
            .map(RawReplicaGroups::sets)
            .unwrap_or_default(),
        src_target_pairs: raw.src_target_pairs.unwrap_or_default().0,
        rank_world_size: raw.rank_world_size,
        default_ucode_lib_requested: matches!(target, Arch::Sunda | Arch::Mariana),
        ext_isa_ops,
        ucode_libs,
        sb_carveouts,
        cc_num_streams: raw.num_streams.unwrap_or(1),
        cc_streams_declared: raw.cc_streams.and_then(|c| c.num_streams),
        fp8: raw.fp8_conversion_config,
        neff_features: raw.neff_features.unwrap_or_default(),
        runtime_event_count: raw.runtime_event_count,
        runtime_semaphore_count: raw.runtime_semaphore_count,
        engine_keys: [raw.pe, raw.act, raw.pool, raw.dve, raw.sp].map(|k| k.map(json::string)),
        top_level_dma,
        warnings,
        member,
    })
}

/// How many ExtISA ops `ext_isa_ucode_lib_def` overrides: the length of
/// its `functions` array, else its number of keys; nothing else is read.
fn ext_isa_count(def: &RawValue) -> usize {
    let Some(keys) = json::object_len(def) else {
        return 0;
    };
    json::object::<RawExtIsa>(def)
        .ok()
        .and_then(|e| e.functions)
        .and_then(json::array_len)
        .unwrap_or(keys)
}

fn parse_vars(
    archive: &Archive,
    graph: &GraphRef,
    member: &str,
    raw: BTreeMap<String, RawVar<'_>>,
    warnings: &mut Vec<String>,
) -> Result<(Vars, u32, u32), ManifestError> {
    let mut by_id: BTreeMap<u64, Var> = BTreeMap::new();
    let mut raw_lists: Vec<(u64, String, &RawValue)> = Vec::new();
    let (mut num_inputs, mut num_outputs) = (0u32, 0u32);
    for (name, rv) in raw {
        let ty = rv
            .ty
            .as_deref()
            .ok_or_else(|| ManifestError::VarMissingType {
                member: member.to_string(),
                var: name.clone(),
            })?;
        let id = rv.var_id.ok_or_else(|| ManifestError::VarMissingId {
            member: member.to_string(),
            var: name.clone(),
        })?;
        let kind = VarKind::from_type(ty).ok_or_else(|| ManifestError::UnknownVarType {
            member: member.to_string(),
            var: name.clone(),
            ty: ty.to_string(),
        })?;
        let var_key = |key: &'static str, detail: String| ManifestError::VarKey {
            member: member.to_string(),
            var: name.clone(),
            key,
            detail,
        };
        let var_id = u32::try_from(id)
            .map(VarId)
            .map_err(|_| var_key("var_id", format!("{id} does not fit 32 bits")))?;
        let missing_size = || {
            var_key(
                "size",
                format!("a {} variable needs a size", kind.type_name()),
            )
        };
        // Before the other keys, so a missing size is the error reported.
        if kind.requires_size() && rv.size.is_none() {
            return Err(missing_size());
        }
        let alignment = match rv.alignment {
            None | Some(0) => None,
            Some(a) if a.is_power_of_two() => Some(a),
            Some(a) => {
                return Err(ManifestError::AlignmentNotPowerOfTwo {
                    member: member.to_string(),
                    var: name.clone(),
                    alignment: a,
                })
            }
        };
        if let Some(d) = &rv.dtype {
            if d.len() > 15 {
                return Err(ManifestError::VarDtypeTooLong {
                    var: name.clone(),
                    dtype: d.clone(),
                    len: d.len(),
                });
            }
        }
        if let Some(s) = &rv.shape {
            if s.len() > 8 {
                return Err(ManifestError::VarShapeTooLong {
                    var: name.clone(),
                    ndim: s.len(),
                });
            }
        }
        let of = match kind {
            VarKind::StateBuffer => VarOf::StateBuffer,
            VarKind::Input => {
                num_inputs = num_inputs.saturating_add(1);
                VarOf::Input {
                    size: rv.size.ok_or_else(missing_size)?,
                }
            }
            VarKind::Output => {
                num_outputs = num_outputs.saturating_add(1);
                VarOf::Output {
                    size: rv.size.ok_or_else(missing_size)?,
                }
            }
            VarKind::TmpBuf => VarOf::TmpBuf {
                size: rv.size.ok_or_else(missing_size)?,
            },
            VarKind::Virtual => {
                let size = rv.size.ok_or_else(missing_size)?;
                let off = rv.backing_variable_off.ok_or_else(|| {
                    var_key(
                        "backing_variable_off",
                        "a virtual variable needs one".into(),
                    )
                })?;
                off.checked_add(size).ok_or_else(|| {
                    var_key(
                        "backing_variable_off",
                        format!("{off} + size {size} overflows u64"),
                    )
                })?;
                let backing = match rv.backing_buf.as_deref() {
                    None | Some("local") => Backing::Local,
                    Some("shared") => Backing::Shared,
                    Some("sharded") => Backing::Sharded,
                    Some("main") => Backing::Main,
                    Some(other) => {
                        return Err(var_key(
                            "backing_buf",
                            format!("'{other}' is not local, shared, sharded or main"),
                        ))
                    }
                };
                if matches!(backing, Backing::Sharded | Backing::Main) {
                    warnings.push(format!(
                        "variable {name}: backing area {:?} has no real sample; sized like the local one",
                        backing
                    ));
                }
                VarOf::Virtual {
                    size,
                    backing_offset: off,
                    backing,
                }
            }
            VarKind::Pointer => {
                let invalid = |detail: String| ManifestError::InvalidPointer {
                    member: member.to_string(),
                    var: name.clone(),
                    detail,
                };
                if rv.size != Some(POINTER_SLOT) {
                    return Err(invalid(format!(
                        "size must be 8, found {}",
                        rv.size.map_or("none".into(), |s| s.to_string())
                    )));
                }
                let r = rv
                    .referenced_var_id
                    .ok_or_else(|| invalid("referenced_var_id is missing".into()))?;
                let r = u32::try_from(r)
                    .map_err(|_| invalid(format!("referenced_var_id {r} does not fit 32 bits")))?;
                VarOf::Pointer {
                    referenced: VarId(r),
                    io_ref: rv.io_ref.unwrap_or(false),
                }
            }
            VarKind::List | VarKind::DgeTable => {
                let list = rv.list.ok_or_else(|| ManifestError::ListUnparsable {
                    member: member.to_string(),
                    var: name.clone(),
                    found: "no list".into(),
                })?;
                raw_lists.push((id, name.clone(), list));
                // Empty until every var_id is known: the ids are checked
                // against the whole table once the loop is done.
                let items = Vec::new();
                if kind == VarKind::List {
                    VarOf::List { items }
                } else {
                    VarOf::DgeTable { items }
                }
            }
            VarKind::File => {
                let size = rv.size.ok_or_else(missing_size)?;
                let weight = load_weight(
                    archive,
                    graph,
                    &name,
                    rv.file_name.as_deref(),
                    size,
                    warnings,
                )?;
                VarOf::File { size, weight }
            }
            VarKind::Remote => VarOf::Remote {
                size: rv.size,
                binding: match (rv.remote_vtpb_rel_sg_id, rv.remote_var_id) {
                    (Some(rel_sg), Some(var_id)) => Some(RemoteRef { rel_sg, var_id }),
                    _ => None,
                },
            },
        };
        let var = Var {
            name: name.clone(),
            id: var_id,
            alignment,
            dtype: rv.dtype,
            shape: rv.shape,
            of,
        };
        if let Some(first) = by_id.get(&id) {
            return Err(ManifestError::DuplicateVarId {
                member: member.to_string(),
                id,
                first: first.name.clone(),
                second: name,
            });
        }
        by_id.insert(id, var);
    }

    // Post-loop invariants: density (always, per subgraph), then outputs.
    if let Some((&max, _)) = by_id.last_key_value() {
        if max.checked_add(1) != Some(by_id.len() as u64) {
            return Err(ManifestError::VarIdsNotDense {
                member: member.to_string(),
                max,
                size: by_id.len(),
            });
        }
    }
    if num_outputs == 0 {
        return Err(ManifestError::NoOutputs {
            member: member.to_string(),
            detail: format!("none of its {} variables has type output", by_id.len()),
        });
    }
    let count = by_id.len();
    for (id, name, list) in raw_lists {
        let ids = json::u64_list(list).ok_or_else(|| ManifestError::ListUnparsable {
            member: member.to_string(),
            var: name.clone(),
            found: brief(list),
        })?;
        let mut out = Vec::with_capacity(ids.len());
        for e in ids {
            if e >= count as u64 {
                return Err(ManifestError::ListUnknownVarId {
                    member: member.to_string(),
                    var: name.clone(),
                    id: e,
                    count,
                });
            }
            out.push(VarId(e as u32));
        }
        if let Some(Var {
            of: VarOf::List { items } | VarOf::DgeTable { items },
            ..
        }) = by_id.get_mut(&id)
        {
            *items = out;
        }
    }
    for v in by_id.values() {
        if let VarOf::Pointer { referenced: r, .. } = v.of {
            if r.0 as usize >= count {
                return Err(ManifestError::InvalidPointer {
                    member: member.to_string(),
                    var: v.name.clone(),
                    detail: format!("referenced_var_id {} is not a variable", r.0),
                });
            }
        }
    }
    let vars: Vec<Var> = by_id.into_values().collect();
    let by_name = vars.iter().map(|v| (v.name.clone(), v.id)).collect();
    Ok((Vars { vars, by_name }, num_inputs, num_outputs))
}

/// `file` vars: `<sg_dir>/<file_name>`; `.npy` members are sliced after
/// their header, anything else is the whole member.
fn load_weight(
    archive: &Archive,
    graph: &GraphRef,
    var: &str,
    file_name: Option<&str>,
    size: u64,
    warnings: &mut Vec<String>,
) -> Result<Weight, ManifestError> {
    let file_name = file_name.ok_or_else(|| ManifestError::WeightMissing {
        var: var.to_string(),
        detail: "the variable has no file_name".into(),
    })?;
    let path = graph.member(file_name);
    let blob = Blob::of(archive, &path).ok_or_else(|| ManifestError::WeightMissing {
        var: var.to_string(),
        detail: format!("member {path} is missing from the archive"),
    })?;
    let bytes = blob.bytes(archive);
    let (payload, npy_version, npy_descr, npy_shape) = if file_name.ends_with(".npy") {
        let n = npy::parse(&path, bytes)?;
        warnings.extend(n.warnings.iter().cloned());
        let sub = blob.sub(n.data_offset, bytes.len());
        (sub, Some(n.version), n.descr, n.shape)
    } else {
        (blob, None, None, None)
    };
    let have = payload.len() as u64;
    if have < size {
        return Err(ManifestError::WeightTooShort {
            var: var.to_string(),
            member: path,
            have,
            size,
        });
    }
    if have > size {
        warnings.push(format!(
            "weight {var} has {have} bytes, variable size is {size}; only {size} are staged"
        ));
    }
    Ok(Weight {
        file_name: file_name.to_string(),
        payload,
        npy_version,
        npy_descr,
        npy_shape,
    })
}

fn parse_queue(
    member: &str,
    name: &str,
    q: RawQueue,
    act_load_seen: &mut bool,
    warnings: &mut Vec<String>,
) -> Result<DmaQueue, ManifestError> {
    let owner_s = q.owner.as_deref().unwrap_or("");
    let owner = EngineType::from_key(owner_s).ok_or_else(|| ManifestError::InvalidQueueOwner {
        member: member.to_string(),
        queue: name.to_string(),
        owner: owner_s.to_string(),
    })?;
    let ty =
        q.ty.as_deref()
            .ok_or_else(|| ManifestError::QueueMissingType {
                member: member.to_string(),
                queue: name.to_string(),
            })?;
    let kind = match ty {
        "in" => QueueKind::In,
        "out" => QueueKind::Out,
        "data" if q.indirect_memcpy == Some(true) => QueueKind::IndirectMemcpy,
        "data" => QueueKind::Data,
        "act_load" => QueueKind::ActLoad,
        "embedding_update" => QueueKind::EmbeddingUpdate,
        "dynamic" => QueueKind::Dynamic,
        other => {
            return Err(ManifestError::InvalidQueueType {
                member: member.to_string(),
                queue: name.to_string(),
                ty: other.to_string(),
            })
        }
    };
    if kind == QueueKind::ActLoad {
        if q.num_queues.is_some_and(|n| n != 1) || *act_load_seen {
            return Err(ManifestError::InvalidActLoadQueue {
                member: member.to_string(),
                queue: name.to_string(),
                detail: if *act_load_seen {
                    "a second act_load queue".into()
                } else {
                    "num_queues must be 1".into()
                },
            });
        }
        *act_load_seen = true;
    }
    if kind == QueueKind::EmbeddingUpdate && q.embedding_update_sync_semaphore.is_none() {
        return Err(ManifestError::MissingEmbeddingSync {
            member: member.to_string(),
            queue: name.to_string(),
        });
    }
    let semaphore_set = match (q.semaphore_set, q.semaphore) {
        (Some(set), _) => set,
        (None, Some(s)) => vec![s],
        (None, None) => Vec::new(),
    };
    if semaphore_set.len() > MAX_QUEUE_SEMAPHORES {
        return Err(ManifestError::TooManySemaphores {
            member: member.to_string(),
            queue: name.to_string(),
            count: semaphore_set.len(),
        });
    }
    if matches!(kind, QueueKind::In | QueueKind::Out) && q.num_queues.is_some_and(|n| n > 1) {
        // The reference message for queue sets on IO queues is contradicted
        // by every static-DMA NEFF (§15 P8); noted, never raised.
        tracing::debug!("queue {name}: num_queues on an IO queue (accepted)");
    }
    if kind == QueueKind::Dynamic && q.dynamic_dma.is_none() && owner == EngineType::Pool {
        warnings.push(format!(
            "dynamic queue {name} owned by pool has no dynamic_dma scratch"
        ));
    }
    Ok(DmaQueue {
        name: name.to_string(),
        owner,
        kind,
        num_queues: q.num_queues,
        semaphore_set,
        dynamic_dma: q.dynamic_dma,
        embedding_update_sync_semaphore: q.embedding_update_sync_semaphore,
        dge: q.dge,
    })
}

fn parse_carveouts(
    member: &str,
    raw: Option<&RawValue>,
    target: Arch,
    allow_legacy_neff: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<SbCarveout>, ManifestError> {
    let cayman = target == Arch::Cayman;
    let missing = |detail: String| ManifestError::MissingCarveout {
        member: member.to_string(),
        detail,
    };
    let parsed: Result<Vec<SbCarveout>, ManifestError> = match raw.map(|r| (r, json::elements(r))) {
        None => Err(missing("the key is absent".into())),
        Some((_, Some(entries))) => entries
            .iter()
            .enumerate()
            .map(|(i, &e)| {
                let lacks = || {
                    missing(format!(
                        "entry {i} lacks one of type, offset, size, base_partition, partitions: {}",
                        brief(e)
                    ))
                };
                let c: RawCarveout = json::object(e).map_err(|_| lacks())?;
                let num = |v: Option<&RawValue>| v.and_then(json::as_u64);
                match (
                    c.ty.and_then(json::as_string),
                    num(c.offset),
                    num(c.size),
                    num(c.base_partition),
                    num(c.partitions),
                ) {
                    (
                        Some(ty),
                        Some(offset),
                        Some(size),
                        Some(base_partition),
                        Some(partitions),
                    ) => {
                        if ty != "evtaccel" {
                            return Err(ManifestError::InvalidCarveoutType {
                                member: member.to_string(),
                                ty,
                            });
                        }
                        Ok(SbCarveout {
                            kind: 1,
                            offset,
                            size,
                            base_partition,
                            partitions,
                        })
                    }
                    _ => Err(lacks()),
                }
            })
            .collect(),
        Some((other, None)) => Err(missing(format!(
            "expected an array, found {}",
            brief(other)
        ))),
    };
    let carveouts = match parsed {
        Ok(c) => c,
        Err(e @ ManifestError::InvalidCarveoutType { .. }) => return Err(e),
        Err(e) if !cayman => {
            if raw.is_some() {
                warnings.push(format!(
                    "ignoring a malformed runtime_statebuffer_reservation: {e}"
                ));
            }
            return Ok(Vec::new());
        }
        Err(e) if allow_legacy_neff => {
            warnings.push(format!(
                "{member} has no evtaccel reservation on SBUF (accepted: NEURON_RT_ALLOW_LEGACY_NEFF=1): {e}"
            ));
            return Ok(Vec::new());
        }
        Err(e) => return Err(e),
    };
    if cayman {
        for c in &carveouts {
            let contract = |detail: String| ManifestError::CarveoutContract {
                member: member.to_string(),
                detail,
            };
            if c.base_partition != 0 {
                return Err(contract(format!(
                    "Event Accel carveout SB partition must start at 0. Got {}",
                    c.base_partition
                )));
            }
            if c.partitions != EVTACCEL_PARTITIONS {
                return Err(contract(format!(
                    "Event Accel carveout must span {EVTACCEL_PARTITIONS} partitions. Got {}",
                    c.partitions
                )));
            }
            if c.offset != EVTACCEL_OFFSET {
                return Err(contract(format!(
                    "Event Accel carveout offset must be {EVTACCEL_OFFSET:#x}. Got {:#x}",
                    c.offset
                )));
            }
            if c.size != EVTACCEL_SIZE {
                return Err(contract(format!(
                    "Event Accel carveout size must be {EVTACCEL_SIZE}. Got {}",
                    c.size
                )));
            }
        }
    }
    Ok(carveouts)
}

fn parse_ucode_libs(
    archive: &Archive,
    graph: &GraphRef,
    member: &str,
    raw: Vec<&RawValue>,
) -> Result<Vec<UcodeLib>, ManifestError> {
    let mut out: Vec<UcodeLib> = Vec::with_capacity(raw.len());
    if !raw.is_empty() {
        tracing::debug!("Loading ucode libs specified in ucode_lib.json from the NEFF");
    }
    for v in raw {
        let invalid = |detail: String| ManifestError::UcodeInvalid {
            member: member.to_string(),
            detail,
        };
        let r: RawUcodeLib = json::object(v).map_err(invalid)?;
        let library = r
            .library
            .ok_or_else(|| invalid("an entry has no library".into()))?;
        let version =
            r.ulib_to_ucode_version
                .ok_or_else(|| ManifestError::UcodeVersionMissing {
                    library: library.clone(),
                })?;
        let major = version
            .split('.')
            .next()
            .and_then(|m| m.trim().parse::<u64>().ok());
        if major != Some(UCODE_MAJOR) {
            return Err(ManifestError::UcodeVersionMismatch { library, version });
        }
        let cpu_id = r.cpu_id.unwrap_or(0);
        if cpu_id != 0 {
            return Err(ManifestError::UcodeCpuId { library, cpu_id });
        }
        let total = r.total_cpus.unwrap_or(0);
        if !matches!(total, 0 | 1 | 8) {
            return Err(ManifestError::UcodeTotalCpus { library, total });
        }
        if out.iter().any(|l| l.library == library) {
            return Err(ManifestError::UcodeDuplicate { library });
        }
        let path = graph.member(&library);
        let content = Blob::of(archive, &path)
            .ok_or_else(|| invalid(format!("library member {path} is missing")))?;
        let flags = if matches!(r.opcode, Some(-123) | Some(0x85)) {
            0
        } else {
            6
        };
        out.push(UcodeLib {
            library,
            content,
            version,
            flags,
            cpu_id: 0,
            total_cpus: total as u8,
            functions: r.functions,
            add_lib: r.add_lib.unwrap_or(false),
        });
    }
    Ok(out)
}
