//! `construct_kbin` → `gen_kbin` (parse.md §7): turns each subgraph's
//! manifests into a sealed [`Kbin`], checking every stream on the way.

use std::collections::{BTreeMap, HashMap};

use super::collective::{self, Collective, Decoded, Scan};
use super::isa::{self, DmaTrigger, OpcodeCensus};
use super::pattern::{self, RingCounts};
use super::reloc::{BlockRef, Lowering, Relocation};
use super::vars::{RemoteBinding, ScratchpadSizes, VarTable};
use super::KbinError;
use crate::container::Archive;
use crate::ids::VarId;
use crate::manifest::def::{
    DmaQueue, Fp8Config, QueueKind, ReplicaGroups, SbCarveout, UcodeLib, VarOf,
};
use crate::manifest::engine::{ActSet, DmaBlock, EngineType};
use crate::manifest::{Blob, Manifest, Subgraph};
use crate::Arch;

/// One engine's program, in the slot of its engine type, with what
/// lowering does to each of its pseudo records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineProgram {
    ty: EngineType,
    instr: Option<Blob>,
    ninstr: u64,
    census: OpcodeCensus,
    relocations: Vec<Relocation>,
}

impl EngineProgram {
    pub fn ty(&self) -> EngineType {
        self.ty
    }

    /// The stream; `None` is the empty placeholder.
    #[cfg(any(test, feature = "testkit"))]
    pub fn instr(&self) -> Option<&Blob> {
        self.instr.as_ref()
    }

    /// The stream's bytes (empty for the placeholder).
    pub fn stream<'a>(&self, archive: &'a Archive) -> &'a [u8] {
        self.instr
            .as_ref()
            .map(|b| b.bytes(archive))
            .unwrap_or_default()
    }

    /// Records in the stream (`size >> 6`).
    pub fn ninstr(&self) -> u64 {
        self.ninstr
    }

    pub fn census(&self) -> &OpcodeCensus {
        &self.census
    }

    /// Every record lowering changes, in record order.
    pub fn relocations(&self) -> &[Relocation] {
        &self.relocations
    }
}

/// A DMA ring: its queue and its static blocks in id order, whose access
/// patterns the build held to [`pattern`]'s rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaRing {
    queue: DmaQueue,
    blocks: Vec<DmaBlock>,
    descriptors: u32,
    q_idx: u32,
    counts: Vec<RingCounts>,
    sb_sides: SbSides,
}

/// Which sides of a queue's blocks touch the state buffer: the sides whose
/// ring bases the runtime fills for an IO queue (docs/decisions.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SbSides {
    /// Some descriptor reads the state buffer (`from`).
    pub m2s: bool,
    /// Some descriptor writes it (`to`).
    pub s2m: bool,
}

impl DmaRing {
    pub fn queue(&self) -> &DmaQueue {
        &self.queue
    }

    pub fn blocks(&self) -> &[DmaBlock] {
        &self.blocks
    }

    /// Descriptor pairs the blocks expand into (each of the TX and RX
    /// halves holds this many), at most [`pattern::MAX_RING_DESCRIPTORS`]:
    /// staging sizes the ring from it once.
    pub fn descriptors(&self) -> u32 {
        self.descriptors
    }

    /// The queue's index among the subgraph's queues as the runtime numbers
    /// them (data queues first, then by owner pe, act, pool, dve, sp, then
    /// by name): the register block its trigger and preamble write.
    pub fn q_idx(&self) -> u32 {
        self.q_idx
    }

    /// The runtime's per-ring counts of each block, in block order
    /// ([`pattern::per_ring_counts`]).
    pub fn counts(&self) -> &[RingCounts] {
        &self.counts
    }

    /// The per-ring counts summed over the queue's blocks, M2S and S2M:
    /// what its rings are sized for, and what a data queue posts on its
    /// S2M side.
    pub fn count_totals(&self) -> (u64, u64) {
        self.counts.iter().fold((0, 0), |(m, s), c| {
            (m.saturating_add(c.m2s), s.saturating_add(c.s2m))
        })
    }

    /// The rings the queue spreads over (`num_queues`; 16 when absent).
    pub fn ring_count(&self) -> u64 {
        self.queue.num_queues.filter(|&n| n > 0).unwrap_or(16)
    }

    pub fn sb_sides(&self) -> SbSides {
        self.sb_sides
    }

    /// The block's completion semaphore: its own, else the queue-set rule.
    #[cfg(any(test, feature = "testkit"))]
    pub fn semaphore(&self, block: &DmaBlock) -> Option<u64> {
        block.semaphore.or_else(|| {
            let set = &self.queue.semaphore_set;
            let len = set.len() as u64;
            (len > 0)
                .then(|| set.get((block.id % len) as usize).copied())
                .flatten()
        })
    }
}

/// The in-memory KBIN of one subgraph (parse.md §7.3, §7.6), sealed: only
/// [`build`] makes one, after every check passed.
#[derive(Clone, Debug, PartialEq)]
pub struct Kbin {
    name: String,
    index: usize,
    target: Arch,
    engines: [EngineProgram; 5],
    dma_rings: Vec<DmaRing>,
    vars: VarTable,
    num_inputs: u32,
    num_outputs: u32,
    act_sets: Vec<ActSet>,
    dve_tables: [Option<Blob>; 5],
    sb_carveouts: Vec<SbCarveout>,
    ucode_libs: Vec<UcodeLib>,
    default_ucode_lib_requested: bool,
    fp8: Option<Fp8Config>,
    cc_num_streams: u64,
    replica_groups: ReplicaGroups,
    collectives: Vec<Collective>,
    scratchpad: ScratchpadSizes,
}

impl Kbin {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Position in `graphs[]` (= relative subgraph id in the logical core).
    #[cfg(any(test, feature = "testkit"))]
    pub fn index(&self) -> usize {
        self.index
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn target(&self) -> Arch {
        self.target
    }

    /// Indexed by engine type: PE, ACT, POOL, DVE, SP.
    pub fn engines(&self) -> &[EngineProgram; 5] {
        &self.engines
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn engine(&self, ty: EngineType) -> &EngineProgram {
        &self.engines[ty.index()]
    }

    /// One ring per `dma_queue` entry, in queue-name order.
    pub fn dma_rings(&self) -> &[DmaRing] {
        &self.dma_rings
    }

    pub fn vars(&self) -> &VarTable {
        &self.vars
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn num_inputs(&self) -> u32 {
        self.num_inputs
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn num_outputs(&self) -> u32 {
        self.num_outputs
    }

    pub fn act_sets(&self) -> &[ActSet] {
        &self.act_sets
    }

    /// Indexed by `DveSlot`: opcode, control_fast, control_slow, datapath, control (sunda).
    pub fn dve_tables(&self) -> &[Option<Blob>; 5] {
        &self.dve_tables
    }

    /// The Event-Accel reservations, already held to their contract by the
    /// manifest layer (stage.md §7 step 3).
    #[cfg(any(test, feature = "testkit"))]
    pub fn sb_carveouts(&self) -> &[SbCarveout] {
        &self.sb_carveouts
    }

    pub fn ucode_libs(&self) -> &[UcodeLib] {
        &self.ucode_libs
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn default_ucode_lib_requested(&self) -> bool {
        self.default_ucode_lib_requested
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn fp8(&self) -> Option<Fp8Config> {
        self.fp8
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn cc_num_streams(&self) -> u64 {
        self.cc_num_streams
    }

    pub fn scratchpad(&self) -> ScratchpadSizes {
        self.scratchpad
    }

    /// def.json's replica groups: sets of groups of ranks, a collective's
    /// group id indexing the sets.
    pub fn replica_groups(&self) -> &ReplicaGroups {
        &self.replica_groups
    }

    /// Every collective of the subgraph's streams, engine by engine in
    /// record order, as the build checked them.
    pub fn collectives(&self) -> &[Collective] {
        &self.collectives
    }

    /// True when every stream is at most `[B1, CC]` and no queue exists
    /// (the second graph of an LNC-2 NKI kernel, parse.md §13.12).
    pub fn is_idle(&self) -> bool {
        self.dma_rings.is_empty()
            && self.engines.iter().all(|e| {
                e.census
                    .keys()
                    .all(|&op| op == isa::OP_SET_ORDERING_MODE || op == isa::OP_PSEUDO_BRANCH_LABEL)
            })
    }
}

/// Builds every kbin, resolves remote vars, then checks and counts every
/// ring's access patterns (last, where staging used to meet them). The
/// subgraph count was held to the logical core by the manifest layer,
/// before any subgraph was read (parse.md §7.5).
pub fn build(manifest: &Manifest, archive: &Archive) -> Result<Vec<Kbin>, KbinError> {
    let mut kbins = Vec::with_capacity(manifest.subgraphs.len());
    for (index, sg) in manifest.subgraphs.iter().enumerate() {
        kbins.push(build_one(index, sg, manifest.kelf.target, archive)?);
    }
    resolve_remote_vars(&mut kbins)?;
    for k in &mut kbins {
        let in_sb = |id: VarId| {
            k.vars
                .get(id)
                .is_some_and(|v| matches!(v.of, VarOf::StateBuffer))
        };
        for r in &mut k.dma_rings {
            r.descriptors = pattern::ring_descriptors(&k.name, &r.queue.name, &r.blocks)?;
            let rings = r.ring_count();
            r.counts = r
                .blocks
                .iter()
                .map(|b| pattern::per_ring_counts(b, rings, in_sb))
                .collect();
            for d in r.blocks.iter().flat_map(|b| &b.descs) {
                r.sb_sides.m2s |= in_sb(d.from.var_id);
                r.sb_sides.s2m |= in_sb(d.to.var_id);
            }
        }
    }
    Ok(kbins)
}

/// The runtime's queue numbering: every queue of the subgraph ranked data
/// queues first, then by owner in engine order, then by name.
fn q_indexes(queues: &[&DmaQueue]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..queues.len()).collect();
    order.sort_by_key(|&i| {
        let q = queues[i];
        (q.kind != QueueKind::Data, q.owner.index(), q.name.as_str())
    });
    let mut idx = vec![0; queues.len()];
    for (rank, i) in order.into_iter().enumerate() {
        idx[i] = rank as u32;
    }
    idx
}

/// Where each block landed, by (engine index, queue, block id).
type BlockRefs = HashMap<(usize, String, u64), BlockRef>;

/// The rings of a subgraph (uncounted), and where each engine's blocks
/// landed in them.
fn rings(sg: &Subgraph) -> (Vec<DmaRing>, BlockRefs) {
    let mut by_queue: BTreeMap<&str, Vec<(usize, &DmaBlock)>> = BTreeMap::new();
    for (e, engine) in sg.engines.engines.iter().enumerate() {
        for b in engine.blocks.values() {
            by_queue.entry(b.queue.as_str()).or_default().push((e, b));
        }
    }
    let mut refs = HashMap::new();
    let mut rings = Vec::with_capacity(sg.def.queues.len());
    let queues: Vec<&DmaQueue> = sg.def.queues.values().collect();
    let q_idx = q_indexes(&queues);
    for (r, q) in queues.into_iter().enumerate() {
        let mut blocks = by_queue.remove(q.name.as_str()).unwrap_or_default();
        blocks.sort_by_key(|(_, b)| b.id);
        for (i, (e, b)) in blocks.iter().enumerate() {
            refs.insert((*e, b.queue.clone(), b.id), BlockRef::new(r, i));
        }
        rings.push(DmaRing {
            queue: q.clone(),
            blocks: blocks.into_iter().map(|(_, b)| b.clone()).collect(),
            descriptors: 0,
            q_idx: q_idx[r],
            counts: Vec::new(),
            sb_sides: SbSides::default(),
        });
    }
    (rings, refs)
}

fn build_one(
    index: usize,
    sg: &Subgraph,
    target: Arch,
    archive: &Archive,
) -> Result<Kbin, KbinError> {
    let vars = VarTable::new(sg.def.vars.clone());
    let (dma_rings, block_refs) = rings(sg);
    let mut programs = Vec::with_capacity(5);
    let mut collectives = Vec::new();
    for (ei, e) in sg.engines.engines.iter().enumerate() {
        let stream_name = e.instr.as_ref().map_or_else(
            || format!("{}/{}", sg.graph.name, e.ty.key()),
            |b| b.member.clone(),
        );
        let bytes = e
            .instr
            .as_ref()
            .map(|b| b.bytes(archive))
            .unwrap_or_default();
        let block_ref =
            |queue: &str, id: u64| block_refs.get(&(ei, queue.to_string(), id)).copied();
        let mut cc = Scan::new(
            &vars,
            &sg.def.replica_groups,
            sg.def.cc_num_streams,
            target != Arch::Sunda,
            e.ty,
            &stream_name,
        );
        let (census, relocations) =
            scan_stream(bytes, &e.blocks, &block_ref, &mut cc, &mut collectives)?;
        programs.push(EngineProgram {
            ty: e.ty,
            instr: e.instr.clone(),
            ninstr: (bytes.len() / isa::RECORD_LEN) as u64,
            census,
            relocations,
        });
    }
    let engines: [EngineProgram; 5] = std::array::from_fn(|_| programs.remove(0));

    let scratchpad = vars.scratchpad();
    Ok(Kbin {
        name: sg.graph.name.clone(),
        index,
        target,
        engines,
        dma_rings,
        num_inputs: sg.def.num_inputs,
        num_outputs: sg.def.num_outputs,
        act_sets: sg.engines.act_sets.clone(),
        dve_tables: sg.engines.dve_tables.clone(),
        sb_carveouts: sg.def.sb_carveouts.clone(),
        ucode_libs: sg.def.ucode_libs.clone(),
        default_ucode_lib_requested: sg.def.default_ucode_lib_requested,
        fp8: sg.def.fp8,
        cc_num_streams: sg.def.cc_num_streams,
        replica_groups: sg.def.replica_groups.clone(),
        collectives,
        scratchpad,
        vars,
    })
}

/// One pass over a stream (they run to tens of thousands of records, and
/// arrive cold from the inflate): the opcode census, and what lowering does
/// to each pseudo record (stage.md §8.1) — `0xCC` and EXIT are deleted;
/// every `0xD4` operand resolves to a staged var, in bounds (§8.3); every
/// `0xC1` names a block of that engine's json, and every block is triggered
/// exactly once (stage.md §18 S6, §14); the collectives band is decoded and
/// checked by [`collective`], its collectives pushed onto `collectives`;
/// any other pseudo opcode is refused.
fn scan_stream(
    bytes: &[u8],
    blocks: &BTreeMap<(String, u64), DmaBlock>,
    block_ref: &dyn Fn(&str, u64) -> Option<BlockRef>,
    cc: &mut Scan<'_>,
    collectives: &mut Vec<Collective>,
) -> Result<(OpcodeCensus, Vec<Relocation>), KbinError> {
    let stream = cc.stream;
    let vars = cc.vars;
    // The census first: it sizes the relocation list exactly, so the list
    // never grows by copying (a Pool stream holds thousands of them).
    let census = isa::census(bytes);
    let pseudo: u64 = census
        .iter()
        .filter(|&(&op, _)| isa::is_pseudo(op))
        .map(|(_, n)| n)
        .sum();
    let mut relocations = Vec::with_capacity(pseudo as usize);
    let mut seen: HashMap<(String, u64), u64> = HashMap::new();
    // The record a PTC2 consumed as its extension.
    let mut extension = None;
    let whole = &bytes[..bytes.len() / isa::RECORD_LEN * isa::RECORD_LEN];
    for (i, r) in isa::records(bytes).enumerate() {
        let op = r[0];
        if !isa::is_pseudo(op) {
            continue;
        }
        let instr = i as u64;
        let refuse = |detail: &'static str| KbinError::Pseudo {
            opcode: op,
            instr,
            stream: stream.to_string(),
            detail,
        };
        let lowering = match op {
            _ if extension == Some(i) => Lowering::Delete,
            isa::OP_PSEUDO_BRANCH_LABEL => Lowering::Delete,
            isa::OP_PSEUDO_INST if r[12] == isa::PSEUDO_INST_EXIT => Lowering::Delete,
            isa::OP_PSEUDO_DMA_DIRECT2D => {
                let (src, dst) = isa::d4_operands(r).expect("a 64-byte 0xD4 record");
                Lowering::Direct {
                    src: vars.resolve_addr8(src, stream, instr)?,
                    dst: vars.resolve_addr8(dst, stream, instr)?,
                }
            }
            isa::OP_PSEUDO_DMATRIGGER => {
                let DmaTrigger { queue, block_id } =
                    isa::trigger(r).expect("a 64-byte 0xC1 record");
                let key = (queue, u64::from(block_id));
                let found = blocks
                    .contains_key(&key)
                    .then(|| block_ref(&key.0, key.1))
                    .flatten();
                let Some(at) = found else {
                    return Err(KbinError::TriggerWithoutBlock {
                        queue: key.0,
                        id: block_id,
                        stream: stream.to_string(),
                        instr,
                    });
                };
                let n = seen.entry(key.clone()).or_insert(0);
                *n += 1;
                if *n > 1 {
                    return Err(KbinError::BlockTriggeredTwice {
                        queue: key.0,
                        id: block_id,
                        stream: stream.to_string(),
                        count: *n,
                    });
                }
                Lowering::Trigger(at)
            }
            _ if collective::is_collective_band(op) => match cc.decode(whole, i)? {
                Decoded::Collective {
                    collective,
                    lowering,
                    pair,
                } => {
                    collectives.push(collective);
                    if pair {
                        extension = Some(i + 1);
                    }
                    Lowering::Collective(lowering)
                }
                Decoded::Load(lowering) => Lowering::Collective(lowering),
            },
            isa::OP_FUNCTION_BEGIN | isa::OP_FUNCTION_CALL => {
                return Err(refuse(
                    "function sections are not supported (no producer emits them)",
                ))
            }
            _ => return Err(refuse("unknown pseudo opcode")),
        };
        relocations.push(Relocation::new(i as u32, lowering));
    }
    if let Some(b) = blocks
        .values()
        .find(|b| !seen.contains_key(&(b.queue.clone(), b.id)))
    {
        return Err(KbinError::BlockNeverTriggered {
            queue: b.queue.clone(),
            id: b.id,
            stream: stream.to_string(),
        });
    }
    Ok((census, relocations))
}

/// Binds every `remote` var to a var of another subgraph of the same logical
/// core (parse.md §7.4; no real sample, so the rule is ours):
/// * an explicit `remote_vtpb_rel_sg_id` + `remote_var_id` pair in def.json
///   must name an existing, non-remote var of that subgraph;
/// * otherwise the var binds **by name**: the subgraphs after this one are
///   searched in relative order (`i+1, i+2, …`, wrapping to `0`), and the
///   first one with a non-remote var of the same name wins.
///
/// Anything else fails the whole load (row 62).
fn resolve_remote_vars(kbins: &mut [Kbin]) -> Result<(), KbinError> {
    let n = kbins.len();
    let mut bindings: Vec<Vec<(VarId, RemoteBinding)>> = vec![Vec::new(); n];
    for (i, k) in kbins.iter().enumerate() {
        for v in k.vars.iter() {
            let VarOf::Remote { binding: explicit, .. } = v.of else {
                continue;
            };
            let fail = |detail: String| KbinError::RemoteUnresolved {
                first: 0,
                last: n.saturating_sub(1),
                detail,
            };
            let binding = if let Some(r) = explicit {
                let target = kbins
                    .get(r.rel_sg as usize)
                    .filter(|_| r.rel_sg as usize != i)
                    .and_then(|t| t.vars.get(VarId(r.var_id)))
                    .filter(|t| !matches!(t.of, VarOf::Remote { .. }))
                    .ok_or_else(|| {
                        fail(format!(
                            "remote var {} of {} names var {} of relative subgraph {}, which does not exist",
                            v.name, k.name, r.var_id, r.rel_sg
                        ))
                    })?;
                RemoteBinding {
                    rel_sg: r.rel_sg,
                    var_id: target.id,
                }
            } else {
                (1..n)
                    .map(|d| (i + d) % n)
                    .find_map(|j| {
                        kbins[j]
                            .vars
                            .by_name(&v.name)
                            .filter(|t| !matches!(t.of, VarOf::Remote { .. }))
                            .map(|t| RemoteBinding {
                                rel_sg: j as u32,
                                var_id: t.id,
                            })
                    })
                    .ok_or_else(|| {
                        fail(format!(
                            "no other subgraph defines a variable named {} (remote in {})",
                            v.name, k.name
                        ))
                    })?
            };
            bindings[i].push((v.id, binding));
        }
    }
    for (k, b) in kbins.iter_mut().zip(bindings) {
        k.vars.set_remote_bindings(b);
    }
    Ok(())
}
