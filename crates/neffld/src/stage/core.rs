//! The per-core build (`kbl_model_add`, stage.md §7): everything one
//! subgraph needs on its physical core, in the reference order — the
//! Event-Accel carve-out check, static DMA rings (data refill and IO
//! queues), activation and DVE tables, GPSIMD libraries on sunda,
//! instruction images (lowered and relocated by [`crate::relocate`]), and
//! finally the core's model table entry under `H_MODEL`.
//!
//! Rings are placed before the instruction images because lowering a
//! `0xC1` trigger needs its block's place in the ring. Every allocation is
//! made before any byte is copied; the copies (weights, rings, tables,
//! images, in that order) then go to the device as one batch, which it can
//! check under one lock instead of one per copy.

use crate::container::Archive;
use crate::device::{AllocReq, Device, MemHandle, MemUsage, Write};
use crate::ids::{HModel, PCore, VarId};
use crate::kbin::{BlockRef, DmaRing, Kbin};
use crate::manifest::def::QueueKind;
use crate::manifest::engine::{DmaOp, DveSlot, Endpoint, EngineType};
use crate::relocate::dma::{
    expand_block, Barrier, DescOp, Pattern, RingBuilder, RingImage, Target,
};
use crate::relocate::instr::{self, EngineImage, Resolve, TriggerBinding};
use crate::relocate::RelocError;
use crate::Arch;

use super::plan::{self, CorePlan};
use super::{Cores, StageError};

/// An engine's image where it landed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacedImage {
    pub engine: EngineType,
    pub handle: MemHandle,
    pub pa: u64,
    pub image: EngineImage,
}

/// A queue's static ring where it landed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacedRing {
    pub queue: String,
    pub kind: QueueKind,
    pub handle: MemHandle,
    pub pa: u64,
    pub image: RingImage,
}

/// A table copied to the device (activation or DVE tables, GPSIMD libraries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacedTable {
    pub what: String,
    pub handle: MemHandle,
    pub pa: u64,
    pub len: u64,
}

/// One subgraph staged on one physical core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreImage {
    pub subgraph: String,
    pub h_model: HModel,
    pub plan: CorePlan,
    pub rings: Vec<PlacedRing>,
    pub tables: Vec<PlacedTable>,
    pub engines: Vec<PlacedImage>,
    /// Allocations of the build itself (the plan holds its own).
    pub allocs: Vec<MemHandle>,
    /// Time spent relocating (ring expansion and instruction lowering).
    pub reloc_time: std::time::Duration,
}

impl CoreImage {
    pub fn pcore(&self) -> PCore {
        self.plan.pcore
    }
}

fn instr_usage(e: EngineType) -> MemUsage {
    match e {
        EngineType::Pe => MemUsage::InstrPe,
        EngineType::Act => MemUsage::InstrAct,
        EngineType::Pool => MemUsage::InstrPool,
        EngineType::Dve => MemUsage::InstrDve,
        EngineType::Sp => MemUsage::InstrSp,
    }
}

fn ring_usage(kind: QueueKind) -> MemUsage {
    match kind {
        QueueKind::Data => MemUsage::DmaRingSpill,
        QueueKind::In | QueueKind::Out => MemUsage::DmaRingIo,
        _ => MemUsage::DmaRing,
    }
}

fn desc_op(op: DmaOp) -> DescOp {
    match op {
        DmaOp::Copy => DescOp::Copy,
        DmaOp::Cast => DescOp::Cast,
        DmaOp::Transpose => DescOp::Transpose,
        DmaOp::Fma => DescOp::Fma,
        DmaOp::Add => DescOp::Add,
        DmaOp::Min => DescOp::Min,
        DmaOp::Max => DescOp::Max,
    }
}

/// Address resolution for one subgraph on its core: the plan's addresses,
/// and where each block of each ring landed (indexed as the kbin's
/// [`BlockRef`]s are).
struct CoreResolver<'a> {
    plan: &'a CorePlan,
    blocks: Vec<Vec<TriggerBinding>>,
}

impl Resolve for CoreResolver<'_> {
    fn operand(&self, var: VarId, offset: u64) -> Result<Target, RelocError> {
        self.plan.address(var, offset)
    }

    fn block(&self, at: BlockRef) -> TriggerBinding {
        self.blocks[at.ring()][at.block()]
    }
}

impl CoreResolver<'_> {
    fn endpoint(&self, e: &Endpoint) -> Result<Target, RelocError> {
        self.plan.address(e.var_id, e.off)
    }
}

/// The device half of a build in progress: what it allocated so far.
struct Builder<'a> {
    dev: &'a dyn Device,
    kbin: &'a Kbin,
    pcore: PCore,
    allocs: Vec<MemHandle>,
    reloc_time: std::time::Duration,
}

impl Builder<'_> {
    fn alloc(
        &mut self,
        what: &str,
        size: u64,
        align: u64,
        usage: MemUsage,
    ) -> Result<(MemHandle, u64), StageError> {
        let a = self
            .dev
            .alloc(AllocReq {
                size,
                align,
                core: self.pcore,
                usage,
                hint: what,
            })
            .map_err(|source| StageError::Device {
                subgraph: self.kbin.name().to_string(),
                what: format!("allocating {what}"),
                source,
            })?;
        self.allocs.push(a.handle);
        Ok((a.handle, a.pa.0))
    }

    fn reloc(&self, source: RelocError) -> StageError {
        StageError::Reloc {
            subgraph: self.kbin.name().to_string(),
            source,
        }
    }
}

/// Where each block of a ring landed, in block order.
type RingBindings = Vec<TriggerBinding>;

/// Expands, places and writes one queue's static ring.
fn build_ring(
    b: &mut Builder<'_>,
    r: &CoreResolver<'_>,
    ring: &DmaRing,
    arch: Arch,
) -> Result<Option<(PlacedRing, RingBindings)>, StageError> {
    if ring.blocks().is_empty() {
        return Ok(None); // dynamic queues: descriptors are generated at execution
    }
    let barrier = if arch == Arch::Sunda {
        Barrier::Dmb
    } else {
        Barrier::Sow
    };
    let mut builder = RingBuilder::default();
    for block in ring.blocks() {
        let mut descs = Vec::with_capacity(block.descs.len());
        for d in &block.descs {
            let from = r.endpoint(&d.from).map_err(|e| b.reloc(e))?;
            let to = r.endpoint(&d.to).map_err(|e| b.reloc(e))?;
            descs.push((
                Pattern {
                    target: from,
                    sizes: &d.from.sizes,
                    steps: &d.from.steps,
                },
                Pattern {
                    target: to,
                    sizes: &d.to.sizes,
                    steps: &d.to.steps,
                },
                desc_op(d.op),
            ));
        }
        let t = std::time::Instant::now();
        let expanded = expand_block(&descs).map_err(|e| b.reloc(e))?;
        b.reloc_time += t.elapsed();
        builder
            .add_block(block.id, expanded, barrier)
            .map_err(|e| b.reloc(e))?;
    }
    let (handle, pa) = b.alloc(
        &format!("ring {}", ring.queue().name),
        builder.byte_size(),
        0,
        ring_usage(ring.queue().kind),
    )?;
    let image = builder.place(pa).map_err(|e| b.reloc(e))?;
    let mut bindings = Vec::with_capacity(ring.blocks().len());
    for (block, &(_, first, count)) in ring.blocks().iter().zip(&image.blocks) {
        let semaphore = ring.semaphore(block).unwrap_or(0) as u32;
        bindings.push(TriggerBinding {
            ring_pa: pa,
            first,
            count,
            semaphore,
        });
    }
    Ok(Some((
        PlacedRing {
            queue: ring.queue().name.clone(),
            kind: ring.queue().kind,
            handle,
            pa,
            image,
        },
        bindings,
    )))
}

/// Builds one subgraph on its core. Consumes the plan: on failure the
/// partial build and the plan are released (`model_free`) before returning.
pub fn build(
    dev: &dyn Device,
    cores: &Cores,
    kbin: &Kbin,
    archive: &Archive,
    plan: CorePlan,
    h_model: HModel,
    arch: Arch,
) -> Result<CoreImage, StageError> {
    let mut b = Builder {
        dev,
        kbin,
        pcore: plan.pcore,
        allocs: Vec::new(),
        reloc_time: std::time::Duration::ZERO,
    };
    match build_parts(&mut b, cores, kbin, archive, &plan, h_model, arch) {
        Ok((rings, tables, engines)) => Ok(CoreImage {
            subgraph: kbin.name().to_string(),
            h_model,
            plan,
            rings,
            tables,
            engines,
            allocs: b.allocs,
            reloc_time: b.reloc_time,
        }),
        Err(e) => {
            for &h in b.allocs.iter().rev() {
                let _ = dev.free(h);
            }
            plan::release(dev, cores, &plan);
            Err(e)
        }
    }
}

type Parts = (Vec<PlacedRing>, Vec<PlacedTable>, Vec<PlacedImage>);

fn build_parts<'a>(
    b: &mut Builder<'_>,
    cores: &Cores,
    kbin: &'a Kbin,
    archive: &'a Archive,
    plan: &'a CorePlan,
    h_model: HModel,
    arch: Arch,
) -> Result<Parts, StageError> {
    let mut resolver = CoreResolver {
        plan,
        blocks: vec![Vec::new(); kbin.dma_rings().len()],
    };

    // Static DMA rings: data-refill queues first, then the IO queues.
    let mut rings = Vec::new();
    let mut ordered: Vec<(usize, &DmaRing)> = kbin.dma_rings().iter().enumerate().collect();
    ordered.sort_by_key(|(_, r)| !matches!(r.queue().kind, QueueKind::Data));
    for (index, ring) in ordered {
        if let Some((placed, bindings)) = build_ring(b, &resolver, ring, arch)? {
            resolver.blocks[index] = bindings;
            rings.push(placed);
        }
    }

    // Activation tables, DVE tables, GPSIMD libraries (sunda only), each
    // with the bytes to copy into it.
    let mut tables: Vec<(PlacedTable, &[u8])> = Vec::new();
    let mut table = |b: &mut Builder<'_>,
                     what: String,
                     bytes: &'a [u8],
                     usage: MemUsage|
     -> Result<(), StageError> {
        let (handle, pa) = b.alloc(&what, bytes.len() as u64, 0, usage)?;
        let len = bytes.len() as u64;
        tables.push((
            PlacedTable {
                what,
                handle,
                pa,
                len,
            },
            bytes,
        ));
        Ok(())
    };
    for set in kbin.act_sets() {
        table(
            b,
            format!("act {} bkt", set.name),
            set.bkt.bytes(archive),
            MemUsage::ActTable,
        )?;
        table(
            b,
            format!("act {} ctrl", set.name),
            set.ctrl.bytes(archive),
            MemUsage::ActTable,
        )?;
    }
    for slot in DveSlot::ALL {
        if let Some(blob) = &kbin.dve_tables()[slot as usize] {
            table(
                b,
                format!("dve {}", slot.key()),
                blob.bytes(archive),
                MemUsage::Generic,
            )?;
        }
    }
    if arch == Arch::Sunda {
        for lib in kbin.ucode_libs() {
            table(
                b,
                format!("ucode {}", lib.library),
                lib.content.bytes(archive),
                MemUsage::UcodeLib,
            )?;
        }
    }

    // Instruction images, SP last.
    let mut engines = Vec::with_capacity(5);
    for e in kbin.engines() {
        let name = format!("{}/{}", kbin.name(), e.ty().key());
        let t = std::time::Instant::now();
        let mut image = instr::lower(&name, e.stream(archive), e.relocations(), 0, &resolver)
            .map_err(|err| b.reloc(err))?;
        b.reloc_time += t.elapsed();
        let (handle, pa) = b.alloc(
            &format!("{name} instructions"),
            image.bytes.len() as u64,
            image.alignment(),
            instr_usage(e.ty()),
        )?;
        image.layout.base = pa;
        engines.push(PlacedImage {
            engine: e.ty(),
            handle,
            pa,
            image,
        });
    }

    // Every copy, as one batch.
    let mut copies = Copies::default();
    for (handle, bytes, name) in plan::weight_copies(kbin, archive, plan) {
        copies.push(handle, bytes, Fill::Weight(name));
    }
    for r in &rings {
        copies.push(r.handle, &r.image.bytes, Fill::Ring(&r.queue));
    }
    for (t, bytes) in &tables {
        copies.push(t.handle, bytes, Fill::Table(&t.what));
    }
    for e in &engines {
        copies.push(e.handle, &e.image.bytes, Fill::Image(e.engine));
    }
    copies.send(b.dev, kbin)?;

    // The core's model table.
    if !cores.lock(plan.pcore).models.insert(h_model) {
        return Err(StageError::ModelInDb(h_model.0));
    }
    let tables = tables.into_iter().map(|(t, _)| t).collect();
    Ok((rings, tables, engines))
}

/// What a copy of a build fills, named in its error message.
#[derive(Clone, Copy, Debug)]
enum Fill<'a> {
    Weight(&'a str),
    Ring(&'a str),
    Table(&'a str),
    Image(EngineType),
}

/// The copies of one build, in order.
#[derive(Default)]
struct Copies<'a> {
    writes: Vec<Write<'a>>,
    what: Vec<Fill<'a>>,
}

impl<'a> Copies<'a> {
    /// Queues a copy of `data` to the start of `handle`; empty ones are
    /// skipped.
    fn push(&mut self, handle: MemHandle, data: &'a [u8], what: Fill<'a>) {
        if !data.is_empty() {
            self.writes.push(Write {
                handle,
                offset: 0,
                data,
            });
            self.what.push(what);
        }
    }

    fn send(self, dev: &dyn Device, kbin: &Kbin) -> Result<(), StageError> {
        dev.write_all(&self.writes).map_err(|(i, source)| {
            let what = match self.what[i] {
                Fill::Weight(name) | Fill::Table(name) => name.to_string(),
                Fill::Ring(queue) => format!("ring {queue}"),
                Fill::Image(engine) => format!("{}/{} instructions", kbin.name(), engine.key()),
            };
            StageError::Device {
                subgraph: kbin.name().to_string(),
                what: format!("copying {what}"),
                source,
            }
        })
    }
}
