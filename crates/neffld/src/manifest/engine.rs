//! Tier 3b: the per-engine json files and their blobs (parse.md §5.4, §13.7):
//! instruction streams, static DMA blocks (§5.3.4), activation tables through
//! `act_info.json`, and the DVE tables.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::def::{Def, DmaQueue, Vars};
use super::json::{self, brief, RawValue};
use super::kelf::GraphRef;
use super::{Blob, ManifestError};
use crate::container::Archive;
use crate::ids::VarId;

pub use super::engine_type::EngineType;

/// Most `profile_meta_data` entries an activation set may carry (the kbin has 25 slots).
pub const MAX_ACT_PROFILES: usize = 25;
/// Largest instruction blob the runtime accepts (u32 size).
pub const MAX_INSTR_SIZE: u64 = u32::MAX as u64;

/// The operation a descriptor performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DmaOp {
    Copy,
    Cast,
    Fma,
    Add,
    Min,
    Max,
    Transpose,
}

/// One side of a descriptor. Units are bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub var: String,
    pub var_id: VarId,
    pub dtype: Option<String>,
    pub off: u64,
    pub sizes: Vec<u64>,
    pub steps: Vec<u64>,
}

impl Endpoint {
    /// Exclusive end of the bytes touched: `off + Σ(sizes[k]−1)·steps[k] + 1`;
    /// `None` on u64 overflow.
    pub fn end(&self) -> Option<u64> {
        let mut end = self.off;
        for (s, st) in self.sizes.iter().zip(&self.steps) {
            end = end.checked_add(s.checked_sub(1)?.checked_mul(*st)?)?;
        }
        end.checked_add(1)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transpose {
    pub op: String,
    pub shape: Vec<u64>,
    pub element_size: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaDesc {
    pub from: Endpoint,
    pub to: Endpoint,
    pub op: DmaOp,
    /// Absent → 1.
    pub num_tiling_dimensions: u64,
    pub transpose: Option<Transpose>,
}

/// A static DMA block, keyed by `(queue, id)` and started by one `0xC1` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaBlock {
    pub queue: String,
    pub id: u64,
    /// Completion semaphore; absent → `semaphore_set[id % len]`.
    pub semaphore: Option<u64>,
    pub comment: Option<String>,
    pub descs: Vec<DmaDesc>,
}

/// One requested activation function set (§5.4 item 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActSet {
    pub name: String,
    pub bkt: Blob,
    pub ctrl: Blob,
    pub profile: Blob,
    /// `func_name` of each `profile_meta_data` entry (≤ 25).
    pub functions: Vec<String>,
}

/// A DVE table slot. `Control` is the single sunda table (its own fifth slot, §15 P10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DveSlot {
    Opcode = 0,
    ControlFast = 1,
    ControlSlow = 2,
    Datapath = 3,
    Control = 4,
}

impl DveSlot {
    pub const ALL: [DveSlot; 5] = [
        DveSlot::Opcode,
        DveSlot::ControlFast,
        DveSlot::ControlSlow,
        DveSlot::Datapath,
        DveSlot::Control,
    ];
    pub fn key(self) -> &'static str {
        match self {
            DveSlot::Opcode => "opcode_table",
            DveSlot::ControlFast => "control_fast_table",
            DveSlot::ControlSlow => "control_slow_table",
            DveSlot::Datapath => "datapath_table",
            DveSlot::Control => "control_table",
        }
    }
}

/// One engine's program as the json files describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Engine {
    pub ty: EngineType,
    /// The engine json member; `None` for the placeholder of an absent key.
    pub json_member: Option<String>,
    /// The instruction stream; `None` = empty (placeholder or 0-byte blob).
    pub instr: Option<Blob>,
    /// Blocks by `(queue, id)`.
    pub blocks: BTreeMap<(String, u64), DmaBlock>,
}

/// All engines of a subgraph plus the engine-held tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Engines {
    pub engines: [Engine; 5],
    pub act_sets: Vec<ActSet>,
    pub act_semaphore: Option<u64>,
    pub dve_tables: [Option<Blob>; 5],
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct RawEngine<'a> {
    #[serde(borrow)]
    dma: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    instr: Option<&'a RawValue>,
    act_info: Option<String>,
    act_semaphore: Option<u64>,
    activation_function_sets: Option<Vec<String>>,
    /// Only the first element is kept.
    #[serde(borrow)]
    dve_tables: Option<json::First<json::Obj<RawDveTables<'a>>>>,
}

/// The tables of `dve_tables[0]`, by [`DveSlot::key`].
#[derive(Deserialize)]
struct RawDveTables<'a> {
    #[serde(borrow)]
    opcode_table: Option<&'a RawValue>,
    #[serde(borrow)]
    control_fast_table: Option<&'a RawValue>,
    #[serde(borrow)]
    control_slow_table: Option<&'a RawValue>,
    #[serde(borrow)]
    datapath_table: Option<&'a RawValue>,
    #[serde(borrow)]
    control_table: Option<&'a RawValue>,
}

impl<'a> RawDveTables<'a> {
    fn get(&self, slot: DveSlot) -> Option<&'a RawValue> {
        match slot {
            DveSlot::Opcode => self.opcode_table,
            DveSlot::ControlFast => self.control_fast_table,
            DveSlot::ControlSlow => self.control_slow_table,
            DveSlot::Datapath => self.datapath_table,
            DveSlot::Control => self.control_table,
        }
    }
}

#[derive(Deserialize)]
struct RawActInfo {
    act_func_sets: Option<Vec<RawActSet>>,
}

#[derive(Deserialize)]
struct RawActSet {
    name: String,
    bkt_bin: Option<String>,
    ctrl_bin: Option<String>,
    profile_json: Option<String>,
}

#[derive(Deserialize)]
struct RawProfile {
    profile_meta_data: Option<Vec<RawProfileEntry>>,
}

/// Only the name is kept; the PWL fields stay in the profile blob, so
/// serde skips them without building values.
#[derive(Deserialize)]
struct RawProfileEntry {
    func_name: Option<String>,
}

#[derive(Deserialize)]
struct RawBlock<'a> {
    queue: Option<String>,
    id: Option<u64>,
    #[serde(borrow)]
    desc: Option<Vec<json::Obj<RawDesc<'a>>>>,
    semaphore: Option<u64>,
    #[serde(rename = "#comment")]
    comment: Option<String>,
}

/// What a malformed block's message names it by.
#[derive(Deserialize, Default)]
struct RawBlockName<'a> {
    #[serde(borrow)]
    queue: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
}

/// A descriptor's keys, each read once its form is known.
#[derive(Deserialize)]
struct RawDesc<'a> {
    #[serde(borrow)]
    op: Option<&'a RawValue>,
    #[serde(borrow)]
    transpose_op: Option<&'a RawValue>,
    #[serde(borrow)]
    transpose_shape: Option<&'a RawValue>,
    #[serde(borrow)]
    transpose_element_size: Option<&'a RawValue>,
    #[serde(borrow)]
    num_tiling_dimensions: Option<&'a RawValue>,
    #[serde(borrow)]
    from: Option<&'a RawValue>,
    #[serde(borrow)]
    from_off: Option<&'a RawValue>,
    #[serde(borrow)]
    from_sizes: Option<&'a RawValue>,
    #[serde(borrow)]
    from_steps: Option<&'a RawValue>,
    #[serde(borrow)]
    from_dtype: Option<&'a RawValue>,
    #[serde(borrow)]
    to: Option<&'a RawValue>,
    #[serde(borrow)]
    to_off: Option<&'a RawValue>,
    #[serde(borrow)]
    to_sizes: Option<&'a RawValue>,
    #[serde(borrow)]
    to_steps: Option<&'a RawValue>,
    #[serde(borrow)]
    to_dtype: Option<&'a RawValue>,
}

/// One side of a descriptor: its variable, offset, sizes, steps and dtype.
struct RawSide<'a> {
    name: &'static str,
    var: Option<&'a RawValue>,
    off: Option<&'a RawValue>,
    sizes: Option<&'a RawValue>,
    steps: Option<&'a RawValue>,
    dtype: Option<&'a RawValue>,
}

impl<'a> RawDesc<'a> {
    fn from(&self) -> RawSide<'a> {
        RawSide {
            name: "from",
            var: self.from,
            off: self.from_off,
            sizes: self.from_sizes,
            steps: self.from_steps,
            dtype: self.from_dtype,
        }
    }

    fn to(&self) -> RawSide<'a> {
        RawSide {
            name: "to",
            var: self.to,
            off: self.to_off,
            sizes: self.to_sizes,
            steps: self.to_steps,
            dtype: self.to_dtype,
        }
    }
}

/// Runs the engine loop (fixed order pe, act, pool, dve, sp).
pub fn parse(archive: &Archive, graph: &GraphRef, def: &Def) -> Result<Engines, ManifestError> {
    let mut warnings = Vec::new();
    let mut act_sets = Vec::new();
    let mut act_semaphore = None;
    let mut dve_tables: [Option<Blob>; 5] = Default::default();
    let mut engines: Vec<Engine> = Vec::with_capacity(5);
    for ty in EngineType::ALL {
        let load_err = |detail: String| ManifestError::EngineLoad {
            engine: ty.key(),
            sg: graph.name.clone(),
            detail,
        };
        let key = def.engine_keys.get(ty.index()).and_then(Option::as_ref);
        let json_name = match key {
            None => {
                warnings.push(format!(
                    "Engine {} not found in NEFF {}, using empty placeholder",
                    ty.key(),
                    graph.name
                ));
                engines.push(Engine {
                    ty,
                    json_member: None,
                    instr: None,
                    blocks: BTreeMap::new(),
                });
                continue;
            }
            Some(Ok(name)) => name.clone(),
            Some(Err(found)) => {
                return Err(load_err(format!(
                    "def.json key {} must name a member, found {found}",
                    ty.key(),
                )))
            }
        };
        let member = graph.member(&json_name);
        let bytes = archive
            .get(&member)
            .ok_or_else(|| load_err(format!("engine json {member} is missing")))?;
        let raw: RawEngine = json::parse(&member, bytes)?;

        let instr_name = match raw.instr.map(json::string) {
            Some(Ok(name)) => name,
            Some(Err(found)) => {
                return Err(load_err(format!(
                    "{member}: instr must be a string, found {found}"
                )))
            }
            None => return Err(load_err(format!("{member} has no instr"))),
        };
        let instr_member = graph.member(&instr_name);
        let blob = Blob::of(archive, &instr_member)
            .ok_or_else(|| load_err(format!("instruction member {instr_member} is missing")))?;
        let size = blob.len() as u64;
        if size > MAX_INSTR_SIZE {
            return Err(ManifestError::InstrTooLarge {
                member: instr_member,
                size,
            });
        }
        if !size.is_multiple_of(64) {
            return Err(ManifestError::InstrNotMultiple {
                member: instr_member,
                size,
            });
        }
        let instr = (size > 0).then_some(blob);

        let mut blocks = BTreeMap::new();
        for b in raw.dma.unwrap_or_default() {
            let block = parse_block(&member, b, &def.vars, &def.queues, Some(ty))?;
            insert_block(&member, &mut blocks, block)?;
        }

        if ty == EngineType::Act {
            act_semaphore = raw.act_semaphore;
            let requested = raw.activation_function_sets.unwrap_or_default();
            if !requested.is_empty() {
                act_sets = load_act_sets(archive, graph, raw.act_info.as_deref(), &requested)?;
            }
        }
        if ty == EngineType::Dve {
            let tables = raw.dve_tables.unwrap_or(json::First {
                first: None,
                len: 0,
            });
            if tables.len > 1 {
                warnings.push(format!(
                    "{member}: dve_tables has {} elements; using the first",
                    tables.len
                ));
            }
            if let Some(json::Obj(t)) = tables.first {
                for slot in DveSlot::ALL {
                    let Some(v) = t.get(slot) else { continue };
                    let dve_err = |detail: String| ManifestError::DveTable {
                        table: slot.key().to_string(),
                        sg: graph.name.clone(),
                        detail,
                    };
                    let name = json::string(v)
                        .map_err(|found| dve_err(format!("expected a member name, found {found}")))?;
                    let path = graph.member(&name);
                    let blob = Blob::of(archive, &path)
                        .ok_or_else(|| dve_err(format!("member {path} is missing")))?;
                    dve_tables[slot as usize] = Some(blob);
                }
            }
        }
        engines.push(Engine {
            ty,
            json_member: Some(member),
            instr,
            blocks,
        });
    }

    // Top-level def.json blocks (no real sample): each belongs to its queue's owner.
    let top_level = match &def.top_level_dma {
        Some(blob) => std::str::from_utf8(blob.bytes(archive))
            .ok()
            .and_then(|text| serde_json::from_str::<Vec<&RawValue>>(text).ok())
            .ok_or_else(|| ManifestError::DefLoad {
                member: def.member.clone(),
                detail: "dma must be an array".into(),
            })?,
        None => Vec::new(),
    };
    for b in top_level {
        let block = parse_block(&def.member, b, &def.vars, &def.queues, None)?;
        let owner = def
            .queues
            .get(&block.queue)
            .map(|q| q.owner.index())
            .unwrap_or(0);
        if let Some(e) = engines.get_mut(owner) {
            insert_block(&def.member, &mut e.blocks, block)?;
        }
    }

    let engines: [Engine; 5] = engines.try_into().map_err(|_| ManifestError::EngineLoad {
        engine: "pe",
        sg: graph.name.clone(),
        detail: "engine table incomplete".into(),
    })?;
    Ok(Engines {
        engines,
        act_sets,
        act_semaphore,
        dve_tables,
        warnings,
    })
}

fn insert_block(
    member: &str,
    blocks: &mut BTreeMap<(String, u64), DmaBlock>,
    block: DmaBlock,
) -> Result<(), ManifestError> {
    let key = (block.queue.clone(), block.id);
    if blocks.contains_key(&key) {
        return Err(ManifestError::DuplicateDmaBlock {
            member: member.to_string(),
            queue: block.queue,
            id: block.id,
        });
    }
    blocks.insert(key, block);
    Ok(())
}

/// Validates one block (rows 47–48d). `engine` is the engine whose json
/// holds it (`None` for a top-level block: the owner is not checked).
fn parse_block(
    member: &str,
    v: &RawValue,
    vars: &Vars,
    queues: &BTreeMap<String, DmaQueue>,
    engine: Option<EngineType>,
) -> Result<DmaBlock, ManifestError> {
    let malformed = |queue: &str, id: String, detail: String| ManifestError::MalformedDmaBlock {
        member: member.to_string(),
        queue: queue.to_string(),
        id,
        detail,
    };
    let raw: RawBlock = json::object(v).map_err(|detail| {
        let name: RawBlockName = json::object(v).unwrap_or_default();
        let queue = name.queue.and_then(json::as_string);
        let id = name.id.map_or("?".to_string(), brief);
        malformed(queue.as_deref().unwrap_or("?"), id, detail)
    })?;
    let id_shown = raw.id.map_or("?".to_string(), |id| id.to_string());
    let queue = raw
        .queue
        .ok_or_else(|| malformed("?", id_shown.clone(), "no queue".into()))?;
    let malformed = |detail: &str| malformed(&queue, id_shown.clone(), detail.into());
    let id = raw.id.ok_or_else(|| malformed("no id"))?;
    let desc = raw.desc.ok_or_else(|| malformed("no desc"))?;
    if desc.is_empty() {
        return Err(malformed("desc is empty"));
    }
    let q = queues
        .get(&queue)
        .ok_or_else(|| ManifestError::DmaBlockQueue {
            member: member.to_string(),
            queue: queue.clone(),
            id,
            detail: "no such dma_queue".into(),
        })?;
    if let Some(e) = engine {
        if q.owner != e {
            return Err(ManifestError::DmaBlockQueue {
                member: member.to_string(),
                queue: queue.clone(),
                id,
                detail: format!("queue owner is {}, block is in {}", q.owner.key(), e.key()),
            });
        }
    }
    let mut descs = Vec::with_capacity(desc.len());
    for json::Obj(d) in desc {
        descs.push(parse_desc(member, &queue, id, d, vars)?);
    }
    Ok(DmaBlock {
        queue,
        id,
        semaphore: raw.semaphore,
        comment: raw.comment,
        descs,
    })
}

fn parse_desc(
    member: &str,
    queue: &str,
    id: u64,
    d: RawDesc<'_>,
    vars: &Vars,
) -> Result<DmaDesc, ManifestError> {
    // A name that is not a string is named by what stands there.
    let name = |v: &RawValue| json::string(v).unwrap_or_else(|found| found);
    let transpose = d.transpose_op.map(|t| Transpose {
        op: name(t),
        shape: d.transpose_shape.and_then(json::u64_list).unwrap_or_default(),
        element_size: d.transpose_element_size.and_then(json::as_u64),
    });
    let op = if transpose.is_some() {
        DmaOp::Transpose
    } else {
        match d.op.map(name).as_deref() {
            None | Some("copy") => DmaOp::Copy,
            Some("cast") => DmaOp::Cast,
            Some("fma") => DmaOp::Fma,
            Some("add") => DmaOp::Add,
            Some("min") => DmaOp::Min,
            Some("max") => DmaOp::Max,
            Some("transpose") => DmaOp::Transpose,
            Some(other) => {
                return Err(ManifestError::UnknownDmaOp {
                    member: member.to_string(),
                    queue: queue.to_string(),
                    id,
                    op: other.to_string(),
                })
            }
        }
    };
    let from = endpoint(member, queue, id, d.from(), vars, op)?;
    let to = endpoint(member, queue, id, d.to(), vars, op)?;
    Ok(DmaDesc {
        from,
        to,
        op,
        num_tiling_dimensions: d
            .num_tiling_dimensions
            .and_then(json::as_u64)
            .unwrap_or(1),
        transpose,
    })
}

fn endpoint(
    member: &str,
    queue: &str,
    id: u64,
    raw: RawSide<'_>,
    vars: &Vars,
    op: DmaOp,
) -> Result<Endpoint, ManifestError> {
    let malformed = |detail: String| ManifestError::MalformedDmaBlock {
        member: member.to_string(),
        queue: queue.to_string(),
        id: id.to_string(),
        detail,
    };
    let side = raw.name;
    let name = raw
        .var
        .and_then(json::as_string)
        .ok_or_else(|| malformed(format!("descriptor has no string {side}")))?;
    let var = vars
        .by_name(&name)
        .ok_or_else(|| ManifestError::DmaUnknownVariable {
            member: member.to_string(),
            queue: queue.to_string(),
            id,
            var: name.clone(),
        })?;
    let off = raw
        .off
        .and_then(json::as_u64)
        .ok_or_else(|| malformed(format!("{side}_off is missing or not an unsigned integer")))?;
    let sizes = raw.sizes.and_then(json::u64_list).ok_or_else(|| {
        malformed(format!(
            "{side}_sizes is missing or not a list of unsigned integers"
        ))
    })?;
    let steps = raw.steps.and_then(json::u64_list).ok_or_else(|| {
        malformed(format!(
            "{side}_steps is missing or not a list of unsigned integers"
        ))
    })?;
    if sizes.is_empty() || sizes.len() != steps.len() {
        return Err(malformed(format!(
            "{side}_sizes has {} entries and {side}_steps {}",
            sizes.len(),
            steps.len()
        )));
    }
    if sizes.contains(&0) {
        return Err(ManifestError::DescZeroSize {
            member: member.to_string(),
            queue: queue.to_string(),
            id,
            endpoint: side,
        });
    }
    let dtype = raw.dtype.and_then(json::as_string);
    if dtype.is_none() && !matches!(op, DmaOp::Copy | DmaOp::Transpose) {
        return Err(ManifestError::DescWithoutDtype {
            member: member.to_string(),
            queue: queue.to_string(),
            id,
            endpoint: side,
        });
    }
    let ep = Endpoint {
        var: name.clone(),
        var_id: var.id,
        dtype,
        off,
        sizes,
        steps,
    };
    let Some(size) = var.extent() else {
        return Err(ManifestError::DmaNotStaged {
            member: member.to_string(),
            queue: queue.to_string(),
            id,
            var: name,
        });
    };
    match ep.end() {
        Some(end) if end <= size => {}
        end => {
            return Err(ManifestError::DmaOutOfBounds {
                member: member.to_string(),
                queue: queue.to_string(),
                id,
                var: name,
                end: end.unwrap_or(u64::MAX),
                size,
            })
        }
    }
    Ok(ep)
}

/// Resolves the requested sets through `act_info.json` (rows 58a).
fn load_act_sets(
    archive: &Archive,
    graph: &GraphRef,
    act_info: Option<&str>,
    requested: &[String],
) -> Result<Vec<ActSet>, ManifestError> {
    let mut out = Vec::with_capacity(requested.len());
    for name in requested {
        let err = |detail: String| ManifestError::ActSet {
            set: name.clone(),
            sg: graph.name.clone(),
            detail,
        };
        let info_name = act_info.ok_or_else(|| err("Activation.json has no act_info".into()))?;
        let info_member = graph.member(info_name);
        let bytes = archive
            .get(&info_member)
            .ok_or_else(|| err(format!("{info_member} is missing")))?;
        let info: RawActInfo = json::parse(&info_member, bytes)?;
        let entry = info
            .act_func_sets
            .unwrap_or_default()
            .into_iter()
            .find(|s| &s.name == name)
            .ok_or_else(|| err(format!("{info_member} lists no such set")))?;
        let blob = |key: &str, v: Option<String>| -> Result<Blob, ManifestError> {
            let n = v.ok_or_else(|| err(format!("the set has no {key}")))?;
            let path = graph.member(&n);
            Blob::of(archive, &path).ok_or_else(|| err(format!("member {path} is missing")))
        };
        let bkt = blob("bkt_bin", entry.bkt_bin)?;
        let ctrl = blob("ctrl_bin", entry.ctrl_bin)?;
        let profile = blob("profile_json", entry.profile_json)?;
        let p: RawProfile = json::parse(&profile.member, profile.bytes(archive))?;
        let meta = p.profile_meta_data.unwrap_or_default();
        if meta.len() > MAX_ACT_PROFILES {
            return Err(err(format!(
                "{} has {} profile_meta_data entries, at most {MAX_ACT_PROFILES}",
                profile.member,
                meta.len()
            )));
        }
        let functions = meta
            .into_iter()
            .map(|m| m.func_name.unwrap_or_default())
            .collect();
        out.push(ActSet {
            name: name.clone(),
            bkt,
            ctrl,
            profile,
            functions,
        });
    }
    Ok(out)
}
