//! `construct_kbin` → `gen_kbin` (parse.md §7): turns each subgraph's
//! manifests into an owned [`Kbin`], then runs the post-build checks.

use std::collections::{BTreeMap, HashMap};

use super::isa::{self, DmaTrigger, OpcodeCensus};
use super::vars::{RemoteBinding, ScratchpadSizes, VarTable};
use super::KbinError;
use crate::container::Archive;
use crate::ids::VarId;
use crate::manifest::def::{DmaQueue, Fp8Config, ReplicaGroups, SbCarveout, UcodeLib, VarKind};
use crate::manifest::engine::{ActSet, DmaBlock, EngineType};
use crate::manifest::{Blob, Manifest, ParseOptions, Subgraph};
use crate::Arch;

/// One engine's program, in the slot of its engine type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineProgram {
    pub ty: EngineType,
    /// The stream; `None` is the empty placeholder.
    pub instr: Option<Blob>,
    /// `size >> 6`.
    pub ninstr: u64,
    pub census: OpcodeCensus,
}

/// A DMA ring: its queue and its static blocks in id order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaRing {
    pub queue: DmaQueue,
    pub blocks: Vec<DmaBlock>,
}

impl DmaRing {
    /// The block's completion semaphore: its own, else the queue-set rule.
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

/// The in-memory KBIN of one subgraph (parse.md §7.3, §7.6).
#[derive(Clone, Debug, PartialEq)]
pub struct Kbin {
    pub name: String,
    /// Position in `graphs[]` (= relative subgraph id in the logical core).
    pub index: usize,
    pub target: Arch,
    /// Indexed by engine type: PE, ACT, POOL, DVE, SP.
    pub engines: [EngineProgram; 5],
    /// One ring per `dma_queue` entry, in queue-name order.
    pub dma_rings: Vec<DmaRing>,
    pub vars: VarTable,
    pub num_inputs: u32,
    pub num_outputs: u32,
    pub act_sets: Vec<ActSet>,
    pub act_semaphore: Option<u64>,
    /// Indexed by `DveSlot`: opcode, control_fast, control_slow, datapath, control (sunda).
    pub dve_tables: [Option<Blob>; 5],
    pub sb_carveouts: Vec<SbCarveout>,
    pub replica_groups: ReplicaGroups,
    pub src_target_pairs: Vec<serde_json::Value>,
    pub ucode_libs: Vec<UcodeLib>,
    pub default_ucode_lib_requested: bool,
    pub fp8: Option<Fp8Config>,
    pub cc_num_streams: u64,
    pub scratchpad: ScratchpadSizes,
}

impl Kbin {
    pub fn engine(&self, ty: EngineType) -> &EngineProgram {
        &self.engines[ty.index()]
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

/// Builds every kbin, then resolves remote vars and checks the subgraph count.
pub fn build(
    manifest: &Manifest,
    archive: &Archive,
    opts: &ParseOptions,
) -> Result<Vec<Kbin>, KbinError> {
    let mut kbins = Vec::with_capacity(manifest.subgraphs.len());
    for (index, sg) in manifest.subgraphs.iter().enumerate() {
        kbins.push(build_one(index, sg, manifest.kelf.target, archive)?);
    }
    resolve_remote_vars(&mut kbins)?;
    check_subgraph_count(kbins.len(), opts.runtime_lnc)?;
    Ok(kbins)
}

/// `ceil(nkbin / lnc) == 1`, i.e. `1 ≤ nkbin ≤ lnc` (parse.md §7.5, row 63).
pub fn check_subgraph_count(count: usize, lnc: u32) -> Result<(), KbinError> {
    if count == 0 || count as u64 > u64::from(lnc) {
        return Err(KbinError::SubgraphCount { count, lnc });
    }
    Ok(())
}

fn build_one(
    index: usize,
    sg: &Subgraph,
    target: Arch,
    archive: &Archive,
) -> Result<Kbin, KbinError> {
    let vars = VarTable::new(sg.def.vars.clone());
    let mut engines = Vec::with_capacity(5);
    for e in &sg.engines.engines {
        let stream_name = e.instr.as_ref().map_or_else(
            || format!("{}/{}", sg.graph.name, e.ty.key()),
            |b| b.member.clone(),
        );
        let bytes = e
            .instr
            .as_ref()
            .map(|b| b.bytes(archive))
            .unwrap_or_default();
        let census = scan_stream(&stream_name, bytes, &vars, &e.blocks)?;
        engines.push(EngineProgram {
            ty: e.ty,
            instr: e.instr.clone(),
            ninstr: (bytes.len() / isa::RECORD_LEN) as u64,
            census,
        });
    }
    let engines: [EngineProgram; 5] = engines
        .try_into()
        .map_err(|_| KbinError::SubgraphCount { count: 0, lnc: 0 })?;

    let mut blocks_by_queue: BTreeMap<&str, Vec<DmaBlock>> = BTreeMap::new();
    for e in &sg.engines.engines {
        for b in e.blocks.values() {
            blocks_by_queue
                .entry(b.queue.as_str())
                .or_default()
                .push(b.clone());
        }
    }
    let dma_rings = sg
        .def
        .queues
        .values()
        .map(|q| {
            let mut blocks = blocks_by_queue.remove(q.name.as_str()).unwrap_or_default();
            blocks.sort_by_key(|b| b.id);
            DmaRing {
                queue: q.clone(),
                blocks,
            }
        })
        .collect();

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
        act_semaphore: sg.engines.act_semaphore,
        dve_tables: sg.engines.dve_tables.clone(),
        sb_carveouts: sg.def.sb_carveouts.clone(),
        replica_groups: sg.def.replica_groups.clone(),
        src_target_pairs: sg.def.src_target_pairs.clone(),
        ucode_libs: sg.def.ucode_libs.clone(),
        default_ucode_lib_requested: sg.def.default_ucode_lib_requested,
        fp8: sg.def.fp8,
        cc_num_streams: sg.def.cc_num_streams,
        scratchpad,
        vars,
    })
}

/// One pass over a stream (they run to tens of thousands of records, and
/// arrive cold from the inflate): the opcode census; every `0xD4` operand
/// resolves to a var, in bounds (§8.3); every `0xC1` names a block of that
/// engine's json, and every block is triggered exactly once (stage.md §18
/// S6, §14).
fn scan_stream(
    stream: &str,
    bytes: &[u8],
    vars: &VarTable,
    blocks: &BTreeMap<(String, u64), DmaBlock>,
) -> Result<isa::OpcodeCensus, KbinError> {
    let mut counts = [0u64; 256];
    let mut seen: HashMap<(String, u64), u64> = HashMap::new();
    for (i, r) in isa::records(bytes).enumerate() {
        counts[usize::from(r[0])] += 1;
        if let Some((src, dst)) = isa::d4_operands(r) {
            vars.resolve_addr8(src, stream, i as u64)?;
            vars.resolve_addr8(dst, stream, i as u64)?;
            continue;
        }
        let Some(DmaTrigger { queue, block_id }) = isa::trigger(r) else {
            continue;
        };
        let key = (queue, u64::from(block_id));
        if !blocks.contains_key(&key) {
            return Err(KbinError::TriggerWithoutBlock {
                queue: key.0,
                id: block_id,
                stream: stream.to_string(),
                instr: i as u64,
            });
        }
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
    Ok((0..=u8::MAX).zip(counts).filter(|&(_, n)| n > 0).collect())
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
pub fn resolve_remote_vars(kbins: &mut [Kbin]) -> Result<(), KbinError> {
    let n = kbins.len();
    let mut bindings: Vec<Vec<(VarId, RemoteBinding)>> = vec![Vec::new(); n];
    for (i, k) in kbins.iter().enumerate() {
        for v in k.vars.iter().filter(|v| v.kind == VarKind::Remote) {
            let fail = |detail: String| KbinError::RemoteUnresolved {
                first: 0,
                last: n.saturating_sub(1),
                detail,
            };
            let binding = if let Some(r) = v.remote {
                let target = kbins
                    .get(r.rel_sg as usize)
                    .filter(|_| r.rel_sg as usize != i)
                    .and_then(|t| t.vars.get(VarId(r.var_id)))
                    .filter(|t| t.kind != VarKind::Remote)
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
                            .filter(|t| t.kind != VarKind::Remote)
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
        k.vars.remote_bindings = b;
    }
    Ok(())
}
