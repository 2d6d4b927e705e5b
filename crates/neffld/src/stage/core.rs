//! The per-core build (`kbl_model_add`, stage.md §7): everything one
//! subgraph needs on its physical core, in the reference order — the
//! Event-Accel carve-out check, static DMA rings (data refill and IO
//! queues), activation and DVE tables, GPSIMD libraries on sunda,
//! instruction images (lowered and relocated by [`crate::relocate`]); the
//! core's model table entry under `H_MODEL` follows
//! ([`super::txn::TableEntry`]), owned by the image like everything else.
//!
//! The instruction images themselves are placed for every core of a load
//! before any build ([`place_images`]: the runtime's order and slots, as the
//! captures show them); a build lowers each into its slot once its rings
//! and tables are placed, since the runtime's preamble points at them.
//! What the runtime allocates beside the model's own bytes — the fixed
//! block beside each image, ring and table-ring sizes — is sized by the
//! load's runtime line ([`crate::line`]). Every allocation is
//! made before any byte is copied; the copies (weights, rings, tables,
//! images, in that order) then go to the device as one batch, which it can
//! check under one lock instead of one per copy.

use std::borrow::Cow;

use crate::container::Archive;
use crate::device::address::device_address;
use std::sync::Arc;

use crate::device::{
    AllocReq, AllocSet, Device, Geometry, MemHandle, MemUsage, Owner, Place, Write,
};
use crate::host_pages::ZeroedBuf;
use crate::ids::{HModel, PCore, VarId};
use crate::kbin::isa::RECORD_LEN;
use crate::kbin::{BlockRef, DmaRing, EngineProgram, Kbin};
use crate::line::{
    self, Bases, CoreRole, DmaWindow, OwnedQueue, QueueShape, RingBases, RuntimeCode, Captured,
    Trigger, IMAGE_ALIGN,
};
use crate::manifest::def::QueueKind;
use crate::manifest::engine::{DmaOp, DveSlot, Endpoint, EngineType};
use crate::relocate::dma::{Barrier, DescOp, Pattern, RingBuilder, RingImage, Target, DESC_BYTES};
use crate::relocate::instr::{self, EngineImage, Resolve};
use crate::relocate::RelocError;
use crate::shared::{SharedBytes, SharedSlice};
use crate::Arch;

use super::plan::{self, CorePlan};
use super::txn::TableEntry;
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

/// One subgraph staged on one physical core. It owns everything staged
/// for it (its plan, its build's allocations, its model-table entry):
/// dropping it unstages the subgraph.
#[derive(Debug)]
pub struct CoreImage {
    pub subgraph: String,
    pub h_model: HModel,
    pub plan: CorePlan,
    pub rings: Vec<PlacedRing>,
    pub tables: Vec<PlacedTable>,
    pub engines: Vec<PlacedImage>,
    /// Allocations of the build itself (the plan holds its own).
    pub allocs: AllocSet,
    /// Time spent relocating (ring expansion and instruction lowering).
    pub reloc_time: std::time::Duration,
    /// The core's model-table entry, made last.
    entry: Option<TableEntry>,
}

impl CoreImage {
    /// An empty image of `subgraph` on `plan`'s core; it owns whatever the
    /// plan already holds.
    pub fn new(subgraph: &str, plan: CorePlan) -> CoreImage {
        CoreImage {
            subgraph: subgraph.to_string(),
            h_model: plan.h_model,
            allocs: AllocSet::new(plan.allocs.device()),
            plan,
            rings: Vec::new(),
            tables: Vec::new(),
            engines: Vec::new(),
            reloc_time: std::time::Duration::ZERO,
            entry: None,
        }
    }

    pub fn pcore(&self) -> PCore {
        self.plan.pcore
    }

    /// Lets go of the host's copies of the instruction images and rings
    /// once they are on the device (which holds them, or, keeping no bytes,
    /// needs them no more): what is left is where everything landed, not
    /// what was written there ([`crate::config::RuntimeConfig::retain_images`]).
    pub fn release_images(&mut self) {
        for e in &mut self.engines {
            e.image.bytes = SharedSlice::default();
        }
        for r in &mut self.rings {
            r.image.bytes = SharedSlice::default();
        }
    }

    /// Enters the image's `H_MODEL` in its core's model table (the last
    /// step of a core's build).
    pub fn enter_model_table(&mut self, cores: &Arc<Cores>) -> Result<(), StageError> {
        if self.entry.is_some() {
            return Err(StageError::ModelInDb(self.h_model.0));
        }
        self.entry = Some(TableEntry::enter(cores, self.pcore(), self.h_model)?);
        Ok(())
    }
}

impl Drop for CoreImage {
    /// Unstages in the reverse order of staging: the model-table entry, the
    /// build's allocations, then the plan's allocations and scratchpad
    /// references (`kbl_model_remove` + `model_free`).
    fn drop(&mut self) {
        self.entry.take();
        self.allocs.clear();
        self.plan.allocs.clear();
        self.plan.scratch.take();
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
/// what each block's trigger writes (the kbin's sealed queue index and
/// counts, indexed as its [`BlockRef`]s are), and where the rings landed
/// (filled in once they are placed).
struct CoreResolver<'a> {
    plan: &'a CorePlan,
    kbin: &'a Kbin,
    geometry: &'a Geometry,
    rings: RingBases,
    global_id: u32,
}

/// What the trigger of block `at` of `kbin` writes.
pub(super) fn trigger(kbin: &Kbin, at: BlockRef) -> Trigger {
    let ring = &kbin.dma_rings()[at.ring()];
    Trigger {
        q_idx: ring.q_idx(),
        data: ring.queue().kind == QueueKind::Data,
        counts: ring.counts()[at.block()],
    }
}

impl Resolve for CoreResolver<'_> {
    fn operand(&self, var: VarId, offset: u64) -> Result<Target, RelocError> {
        self.plan.address(var, offset)
    }

    fn trigger(&self, at: BlockRef) -> Trigger {
        trigger(self.kbin, at)
    }

    fn rings(&self) -> &RingBases {
        &self.rings
    }

    fn device_word(&self, pa: u64) -> u64 {
        device_address(self.geometry, pa)
    }

    fn global_id(&self) -> u32 {
        self.global_id
    }
}

impl CoreResolver<'_> {
    fn endpoint(&self, e: &Endpoint) -> Result<Target, RelocError> {
        self.plan.address(e.var_id, e.off)
    }
}

/// The device half of a build in progress. Each allocation goes straight
/// into the image's `allocs`, which free it if the load does not commit.
struct Builder<'a> {
    dev: &'a Device,
    kbin: &'a Kbin,
    pcore: PCore,
    h_model: HModel,
    allocs: &'a mut AllocSet,
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
            .allocs
            .alloc(AllocReq {
                size,
                align,
                core: self.pcore,
                usage,
                owner: Owner::Model(self.h_model),
                place: Place::Kernel,
                hint: what,
            })
            .map_err(|source| StageError::Device {
                subgraph: self.kbin.name().to_string(),
                what: format!("allocating {what}"),
                source,
            })?;
        Ok((a.handle, a.pa.0))
    }

    fn reloc(&self, source: RelocError) -> StageError {
        StageError::Reloc {
            subgraph: self.kbin.name().to_string(),
            source,
        }
    }
}

/// What the runtime's own code for `engine` of `kbin`, on a core of `role`
/// with DMA registers at `window`, depends on under `line`.
fn runtime_code(
    kbin: &Kbin,
    engine: EngineType,
    role: CoreRole,
    line: Captured,
    window: DmaWindow,
) -> RuntimeCode {
    let mut queues: Vec<OwnedQueue> = kbin
        .dma_rings()
        .iter()
        .enumerate()
        .filter(|(_, r)| r.queue().owner == engine && r.queue().kind != QueueKind::Dynamic)
        .map(|(ring, r)| {
            let data = r.queue().kind == QueueKind::Data;
            OwnedQueue {
                ring,
                q_idx: r.q_idx(),
                data,
                s2m_total: r.count_totals().1,
                m2s_base: data || r.sb_sides().m2s,
                s2m_base: data || r.sb_sides().s2m,
            }
        })
        .collect();
    queues.sort_by_key(|q| q.q_idx);
    RuntimeCode {
        line,
        engine,
        role,
        act_tables: !kbin.act_sets().is_empty(),
        dve_tables: kbin.dve_tables().iter().any(Option::is_some),
        queues,
        dynamic: QueueShape::of(kbin.dma_rings().iter().map(DmaRing::queue)),
        window,
    }
}

/// Places the instruction image of every engine of every core of a load,
/// and the runtime's block beside each, before any core is built (as the
/// plan places weights, so that addresses do not depend on thread timing).
///
/// The blocks come first, then the images, both in the order the runtime
/// allocates images ([`line::image_rank`]), each image on a 32 KiB
/// boundary. With the blocks in the gaps the plan's alignments leave, the
/// images of a load fill consecutive slots right above the weights, as in
/// every 2.30 capture. A line without blocks (2.23) places the images
/// alone. An image's size is known before its lowering
/// ([`instr::image_len`]), which needs the rings and tables the builds
/// place afterwards.
///
/// `images[k]` is the image of `kbins[k]`; each allocation goes into its
/// `allocs` (its guard frees it), each image's placement into `engines`,
/// in the kbin's engine order, bytes to come.
pub fn place_images(
    kbins: &[Kbin],
    archive: &Archive,
    images: &mut [CoreImage],
    line: Captured,
) -> Result<(), StageError> {
    let mut order = Vec::new();
    for ((k, kbin), image) in kbins.iter().enumerate().zip(images.iter()) {
        let role = CoreRole::of_subgraph(k);
        let window = DmaWindow::of(image.allocs.device().geometry(), image.plan.pcore);
        for e in kbin.engines() {
            let (code, len) = code_and_image_len(kbin, e, role, line, window, archive);
            order.push((line::image_rank(role, e.ty()), k, code, len));
        }
    }
    order.sort_by_key(|(rank, k, _, _)| (*rank, *k));
    let blocks = order
        .iter()
        .map(|(_, k, code, _)| (*k, code.engine, code.fixed_block(), 0, "runtime block"))
        .filter(|&(_, _, size, _, _)| size > 0);
    let slots = order
        .iter()
        .map(|(_, k, code, len)| (*k, code.engine, *len, IMAGE_ALIGN, "instructions"));
    for (k, engine, size, align, what) in blocks.chain(slots).collect::<Vec<_>>() {
        let (Some(kbin), Some(image)) = (kbins.get(k), images.get_mut(k)) else {
            continue;
        };
        let what = format!("{}/{} {what}", kbin.name(), engine.key());
        let req = AllocReq {
            size,
            align,
            core: image.plan.pcore,
            usage: instr_usage(engine),
            owner: Owner::Model(image.h_model),
            place: Place::Kernel,
            hint: &what,
        };
        let a = image
            .allocs
            .alloc(req)
            .map_err(|source| StageError::Device {
                subgraph: kbin.name().to_string(),
                what: format!("allocating {what}"),
                source,
            })?;
        if align != 0 {
            image.engines.push(PlacedImage {
                engine,
                handle: a.handle,
                pa: a.pa.0,
                image: EngineImage::default(),
            });
        }
    }
    for (kbin, image) in kbins.iter().zip(images.iter_mut()) {
        image
            .engines
            .sort_by_key(|p| kbin.engines().iter().position(|e| e.ty() == p.engine));
    }
    Ok(())
}

/// The runtime code around an engine's image and the image's exact length,
/// for its placement and for its lowering.
fn code_and_image_len(
    kbin: &Kbin,
    e: &EngineProgram,
    role: CoreRole,
    line: Captured,
    window: DmaWindow,
    archive: &Archive,
) -> (RuntimeCode, u64) {
    let code = runtime_code(kbin, e.ty(), role, line, window);
    let records = (e.stream(archive).len() / RECORD_LEN) as u64;
    let len = instr::image_len(records, e.relocations(), &code);
    (code, len)
}

/// Expands, places and writes one queue's static ring. The allocation is
/// the line's size for the queue's rings ([`Captured::ring_bytes`]),
/// which holds neffld's one ring of the same descriptors, but when chunking
/// runs of more than 64 KiB makes ours longer than the runtime counts.
fn build_ring(
    b: &mut Builder<'_>,
    r: &CoreResolver<'_>,
    ring: &DmaRing,
    arch: Arch,
    line: Captured,
) -> Result<Option<PlacedRing>, StageError> {
    if ring.blocks().is_empty() {
        return Ok(None); // dynamic queues: descriptors are generated at execution
    }
    let barrier = if arch == Arch::Sunda {
        Barrier::Dmb
    } else {
        Barrier::Sow
    };
    // Placed first, so that the ring is built in place at its address
    // (its size follows from the sealed count).
    let (m2s, s2m) = ring.count_totals();
    let runtime_bytes = line.ring_bytes(ring.ring_count(), m2s, s2m);
    let (handle, pa) = b.alloc(
        &format!("ring {}", ring.queue().name),
        runtime_bytes.max(RingBuilder::byte_size(ring.descriptors())),
        0,
        ring_usage(ring.queue().kind),
    )?;
    let mut builder = RingBuilder::new(ring.descriptors(), pa).map_err(|e| b.reloc(e))?;
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
        builder
            .add_block(block.id, &descs, barrier)
            .map_err(|e| b.reloc(e))?;
        b.reloc_time += t.elapsed();
    }
    let image = builder.finish();
    Ok(Some(PlacedRing {
        queue: ring.queue().name.clone(),
        kind: ring.queue().kind,
        handle,
        pa,
        image,
    }))
}

/// Builds one subgraph on its core into `image` (which holds its plan);
/// `role` says which core of its logical core it is and `line` which
/// runtime's, both of which the runtime's own code depends on, and
/// `global_id` is what a global-id load writes. The image
/// owns whatever the build allocates: on failure, or a panic, dropping it
/// frees that, so nothing here unwinds by hand.
pub fn build(
    kbin: &Kbin,
    archive: &Archive,
    image: &mut CoreImage,
    arch: Arch,
    role: CoreRole,
    line: Captured,
    global_id: u32,
) -> Result<(), StageError> {
    let dev = Arc::clone(image.allocs.device());
    let mut b = Builder {
        dev: &dev,
        kbin,
        pcore: image.plan.pcore,
        h_model: image.h_model,
        allocs: &mut image.allocs,
        reloc_time: std::time::Duration::ZERO,
    };
    let placed = std::mem::take(&mut image.engines);
    let (rings, tables, engines) = build_parts(
        &mut b,
        kbin,
        archive,
        &image.plan,
        (arch, role, line, global_id),
        placed,
    )?;
    image.reloc_time = b.reloc_time;
    image.rings = rings;
    image.tables = tables;
    image.engines = engines;
    Ok(())
}

type Parts = (Vec<PlacedRing>, Vec<PlacedTable>, Vec<PlacedImage>);

/// The runtime's four activation-table buffers and their sizes on trn2:
/// 64 + 8 + 8 + 2 KiB = 83,968 bytes, the Scalar Table row of every capture
/// whose core has act tables (one eighth of the 512/64/64/16 KiB host
/// staging buffers of stage.md §7 step 10). Bucket and control blobs of
/// every set are copied, concatenated, into the first two; a buffer grows
/// to fit when the sets need more.
const ACT_TABLE_BUFFERS: [(&str, u64); 4] = [
    ("bkt", 64 << 10),
    ("ctrl", 8 << 10),
    ("profile", 8 << 10),
    ("map", 2 << 10),
];

/// One blob borrowed, or several joined.
fn joined<'a>(parts: &[&'a [u8]]) -> Cow<'a, [u8]> {
    match parts {
        [one] => Cow::Borrowed(one),
        _ => Cow::Owned(parts.concat()),
    }
}

/// The two bases of a placed ring: its TX (M2S) half and its RX (S2M)
/// half, in the runtime's address form.
fn ring_bases(geometry: &Geometry, ring: &PlacedRing) -> Bases {
    let rx = ring.pa + ring.image.capacity as u64 * DESC_BYTES;
    (
        device_address(geometry, ring.pa),
        device_address(geometry, rx),
    )
}

fn build_parts<'a>(
    b: &mut Builder<'_>,
    kbin: &'a Kbin,
    archive: &'a Archive,
    plan: &'a CorePlan,
    (arch, role, line, global_id): (Arch, CoreRole, Captured, u32),
    mut placed: Vec<PlacedImage>,
) -> Result<Parts, StageError> {
    let geometry = b.dev.geometry();
    let mut resolver = CoreResolver {
        plan,
        kbin,
        geometry,
        rings: RingBases::default(),
        global_id,
    };
    let mut bases = RingBases {
        queues: vec![None; kbin.dma_rings().len()],
        ..RingBases::default()
    };

    // Static DMA rings: data-refill queues first, then the IO queues.
    let mut rings = Vec::new();
    let mut ordered: Vec<(usize, &DmaRing)> = kbin.dma_rings().iter().enumerate().collect();
    ordered.sort_by_key(|(_, r)| !matches!(r.queue().kind, QueueKind::Data));
    for (index, ring) in ordered {
        if let Some(placed) = build_ring(b, &resolver, ring, arch, line)? {
            bases.queues[index] = Some(ring_bases(geometry, &placed));
            rings.push(placed);
        }
    }

    // Activation tables, DVE tables, GPSIMD libraries (sunda only), each
    // with the bytes to copy into it.
    let mut tables: Vec<(PlacedTable, Cow<'a, [u8]>)> = Vec::new();
    let mut table = |b: &mut Builder<'_>,
                     what: String,
                     size: u64,
                     bytes: Cow<'a, [u8]>,
                     usage: MemUsage|
     -> Result<u64, StageError> {
        let (handle, pa) = b.alloc(&what, size, 0, usage)?;
        tables.push((
            PlacedTable {
                what,
                handle,
                pa,
                len: size,
            },
            bytes,
        ));
        Ok(pa)
    };
    if !kbin.act_sets().is_empty() {
        let bkt: Vec<&[u8]> = kbin
            .act_sets()
            .iter()
            .map(|s| s.bkt.bytes(archive))
            .collect();
        let ctrl: Vec<&[u8]> = kbin
            .act_sets()
            .iter()
            .map(|s| s.ctrl.bytes(archive))
            .collect();
        for (i, (name, capacity)) in ACT_TABLE_BUFFERS.iter().enumerate() {
            let bytes = match i {
                0 => joined(&bkt),
                1 => joined(&ctrl),
                _ => Cow::Borrowed(&[][..]),
            };
            let size = (*capacity).max(bytes.len() as u64);
            table(b, format!("act {name}"), size, bytes, MemUsage::ActTable)?;
        }
    }
    for slot in DveSlot::ALL {
        if let Some(blob) = &kbin.dve_tables()[slot as usize] {
            let bytes = blob.bytes(archive);
            table(
                b,
                format!("dve {}", slot.key()),
                bytes.len() as u64,
                Cow::Borrowed(bytes),
                MemUsage::Generic,
            )?;
        }
    }
    if arch == Arch::Sunda {
        for lib in kbin.ucode_libs() {
            let bytes = lib.content.bytes(archive);
            table(
                b,
                format!("ucode {}", lib.library),
                bytes.len() as u64,
                Cow::Borrowed(bytes),
                MemUsage::UcodeLib,
            )?;
        }
    }
    // The rings that load the tables into the engines: qActTable and
    // qDveTable in the captures' queue lists, one DMA_RING each, of the
    // line's size (none on a line without them).
    let has_dve = kbin.dve_tables().iter().any(Option::is_some);
    let ring_bytes = line.table_ring_bytes();
    for (queue, present, base) in [
        (
            "qActTable",
            !kbin.act_sets().is_empty(),
            &mut bases.act_table,
        ),
        ("qDveTable", has_dve, &mut bases.dve_table),
    ] {
        if present && ring_bytes > 0 {
            let pa = table(
                b,
                format!("ring {queue}"),
                ring_bytes,
                Cow::Borrowed(&[][..]),
                MemUsage::DmaRing,
            )?;
            *base = Some((
                device_address(geometry, pa),
                device_address(geometry, pa + ring_bytes / 2),
            ));
        }
    }

    // Instruction images, placed for every core of the load before any
    // build ([`place_images`]): lowered here into their slots, all of this
    // core's into one host buffer (in huge pages when large enough: a
    // tenth of a one-shot load went to faulting in 4 KiB pages for them,
    // docs/performance.md).
    resolver.rings = bases;
    let window = DmaWindow::of(geometry, plan.pcore);
    let engines: Vec<_> = placed
        .iter()
        .map(|p| {
            kbin.engines().iter().find(|e| e.ty() == p.engine).map(|e| {
                let (code, len) = code_and_image_len(kbin, e, role, line, window, archive);
                (e, code, len as usize)
            })
        })
        .collect();
    let total = engines.iter().flatten().map(|(_, _, len)| *len).sum();
    let mut images_buf = ZeroedBuf::new(total, "a core's instruction images")
        .map_err(|oom| b.reloc(RelocError::HostMemory(oom)))?;
    let mut rest = images_buf.bytes_mut();
    for (p, engine) in placed.iter_mut().zip(&engines) {
        let Some((e, code, len)) = engine else {
            continue;
        };
        let (mine, after) = rest.split_at_mut(*len);
        rest = after;
        let name = format!("{}/{}", kbin.name(), e.ty().key());
        let t = std::time::Instant::now();
        p.image = instr::lower(
            &name,
            e.stream(archive),
            e.relocations(),
            p.pa,
            code,
            &resolver,
            mine,
        )
        .map_err(|err| b.reloc(err))?;
        b.reloc_time += t.elapsed();
    }
    let images_buf = images_buf.freeze();
    let mut at = 0;
    for (p, engine) in placed.iter_mut().zip(&engines) {
        let len = engine.as_ref().map_or(0, |(_, _, len)| *len);
        p.image.bytes = SharedSlice::new(images_buf.clone(), at..at + len);
        at += len;
    }

    // Every copy, as one batch. The rings and images are the loaded
    // model's own buffers: the device may keep them instead of a copy, so
    // the host holds them once. A weight is offered only when it is most
    // of the inflated payload, which keeping it would keep alive.
    let mut copies = Copies::default();
    for (handle, bytes, name) in plan::weight_copies(kbin, archive, plan) {
        let shared = (bytes.len() >= WEIGHT_BY_REFERENCE_MIN).then(|| archive.shared());
        copies.push_from(handle, bytes, shared, Fill::Weight(name));
    }
    for r in &rings {
        let shared = Some(r.image.bytes.shared());
        copies.push_from(r.handle, &r.image.bytes, shared, Fill::Ring(&r.queue));
    }
    for (t, bytes) in &tables {
        copies.push(t.handle, bytes.as_ref(), Fill::Table(&t.what));
    }
    for e in &placed {
        let shared = Some(e.image.bytes.shared());
        copies.push_from(e.handle, &e.image.bytes, shared, Fill::Image(e.engine));
    }
    copies.send(b.dev, kbin)?;
    let tables = tables.into_iter().map(|(t, _)| t).collect();
    Ok((rings, tables, placed))
}

/// A weight at least this large may be kept by the device as a reference
/// into the inflated payload instead of a copy: populating and copying a
/// gigabyte of weights cost as much as inflating them. Below it, keeping a
/// weight would keep the whole payload (every member, debug info
/// included) alive for a small part of it.
pub const WEIGHT_BY_REFERENCE_MIN: usize = 64 << 20;

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
        self.push_from(handle, data, None, what);
    }

    /// [`Copies::push`] of bytes that lie in `shared`, which the device may
    /// keep instead of copying them.
    fn push_from(
        &mut self,
        handle: MemHandle,
        data: &'a [u8],
        shared: Option<&'a SharedBytes>,
        what: Fill<'a>,
    ) {
        if !data.is_empty() {
            self.writes.push(Write {
                handle,
                offset: 0,
                data,
                shared,
            });
            self.what.push(what);
        }
    }

    fn send(self, dev: &Device, kbin: &Kbin) -> Result<(), StageError> {
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
