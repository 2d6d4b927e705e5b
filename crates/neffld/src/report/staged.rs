//! The staged view of a load: what it put on each physical core, in the
//! terms a person, a capture and a simulator use — every address in the
//! runtime's own form (tagged and channel-local, [`Geometry::runtime_address`]),
//! each engine's final image and where each NEFF record went, the rings and
//! tables, the variables where they landed, and the memory rows as the
//! runtime of the load's line lists them.
//!
//! This is what `neffld load` (and `--dump`) shows, what `neffld compare`
//! holds against a capture, what `nrt_profile_stop` writes and what Python's
//! `model.cores` gives: one view, built here once.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use crate::api::{LoadError, LoadedModel, Model, Runtime};
use crate::capture::{
    Capture, CaptureUuid, Image, MemRow, Subgraph, Version, MEMORY_ROWS, OLD_DMA_ROW,
};
use crate::device::geometry::SB_WINDOW;
use crate::device::{Device, Geometry};
use crate::ids::PCore;
use crate::line::{Captured, RuntimeLine};
use crate::manifest::engine::EngineType;
use crate::relocate::dma::decode_template;
use crate::relocate::instr::EngineImage;
use crate::relocate::ipmap::{PatchKind, Section};
use crate::report::memory::{CoreMemory, RowKey};
use crate::stage::core::CoreImage;
use crate::stage::Placement;
use crate::Arch;

use super::align::{align, Fate, Records};

/// What a load's relocation did to one image's NEFF records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Patches {
    /// Insert patches: device slots with no NEFF record (the runtime's code,
    /// or the extra slots of a pseudo-instruction that expanded).
    pub insert: u32,
    /// Modify patches: a NEFF record rewritten into device slots.
    pub modify: u32,
    /// Delete patches: NEFF records absent from the device image.
    pub delete: u32,
}

/// One engine's image as staged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedImage {
    /// The engine whose stream this is.
    pub engine: EngineType,
    /// The device address of slot 0, as the runtime writes it.
    pub address: u64,
    /// The final image bytes.
    pub bytes: Vec<u8>,
    /// Slots of the runtime's own code before the NEFF's records.
    pub preamble_slots: u32,
    /// Slots of the NEFF's records, as relocated.
    pub main_slots: u32,
    /// Slots of the runtime's own code after them.
    pub postamble_slots: u32,
    /// Where each of the NEFF's records went, from the relocation's patches.
    pub records: Records,
    /// Slots (image slot ranges) of the runtime's code that are filler, not
    /// the runtime's bytes (its line's are not known there); none for a
    /// capture.
    pub filler: Vec<Range<u32>>,
    /// NEFF records whose rewrite holds values no rule covers (trigger
    /// counts of transposes, the collectives' doorbells and loads); none
    /// for a capture.
    pub approximate: Vec<u32>,
    /// Patch counts of the main section (none for a capture).
    pub patches: Patches,
    /// Operands holding an absolute device address.
    pub absolute_operands: u32,
    /// Operands bound to an input or output at execution.
    pub io_templates: u32,
}

impl StagedImage {
    /// Slots that are filler.
    pub fn filler_slots(&self) -> u32 {
        self.filler.iter().map(|r| r.end - r.start).sum()
    }

    /// True when every byte is the runtime's as far as the rules know.
    pub fn exact(&self) -> bool {
        self.filler.is_empty() && self.approximate.is_empty()
    }

    /// The NEFF's records this image was built from.
    pub fn neff_records(&self) -> u32 {
        self.records.fates.len() as u32
    }

    /// The image's instruction slots: one 64-byte record each.
    pub fn slots(&self) -> u64 {
        self.bytes.len() as u64 / crate::kbin::isa::RECORD_LEN as u64
    }

    /// The device address of the slot NEFF record `record` went to (the
    /// record a collective became, say); `None` for a record deleted or
    /// not in the stream.
    pub fn record_address(&self, record: u32) -> Option<u64> {
        match self.records.fates.get(record as usize)? {
            Fate::Kept(slot) | Fate::Rewritten(slot) => self
                .address
                .checked_add(u64::from(*slot) * crate::kbin::isa::RECORD_LEN as u64),
            Fate::Deleted => None,
        }
    }
}

/// A static DMA queue's ring as staged (as `neffld load --json` writes it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StagedRing {
    /// The DMA queue's name in the NEFF.
    pub queue: String,
    /// The ring's device address, as the runtime writes it.
    pub address: u64,
    /// Bytes of the ring.
    pub bytes: u64,
    /// DMA blocks it carries.
    pub blocks: u32,
    /// Descriptor pairs (TX and RX) the blocks use.
    pub descriptor_pairs: u64,
    /// Pairs the ring holds.
    pub capacity: u64,
    /// Descriptors bound to an input or output at execution.
    pub io_templates: u64,
}

impl StagedRing {
    /// The descriptors the blocks use: a TX and an RX one per pair.
    pub fn descriptors(&self) -> u64 {
        2 * self.descriptor_pairs
    }
}

/// A table copied to the device (activation and DVE tables, their rings,
/// GPSIMD libraries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedTable {
    /// What the table is (`act table`, a GPSIMD library's name, …).
    pub what: String,
    /// Its device address, as the runtime writes it.
    pub address: u64,
    /// Its size.
    pub bytes: u64,
}

/// One memory row of a core: the runtime's name and the profiler's, the
/// runtime's own part and the models' (a capture does not split them: both
/// are 0 there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedRow {
    /// The runtime's name for the row (`pe`, `act table`, …).
    pub name: String,
    /// The profiler's usage type for it.
    pub usage_type: String,
    /// Bytes charged in all.
    pub bytes: u64,
    /// Of those, the runtime's own (what it takes when it starts).
    pub runtime: u64,
    /// Of those, the model's.
    pub model: u64,
}

impl StagedRow {
    /// The row as a capture writes it: by name, without an id (v5 and later).
    pub fn to_mem_row(&self) -> MemRow {
        MemRow {
            id: None,
            name: self.name.clone(),
            bytes: self.bytes,
        }
    }
}

/// One variable where it landed; no address for IO and host variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedVar {
    /// Its id in the subgraph's `def.json`.
    pub var_id: u32,
    /// Its name in `def.json`.
    pub name: String,
    /// The NEFF's type (`file`, `virtual`, ...).
    pub kind: &'static str,
    /// Where the plan put it: `state-buffer`, `hbm`, `scratchpad`, `io`
    /// (bound at every execution) or `host`.
    pub placement: &'static str,
    /// Its device address, when it has one on the device.
    pub address: Option<u64>,
    /// Its size in bytes, when the NEFF gives one.
    pub size: Option<u64>,
}

/// One subgraph staged on one physical core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedCore {
    /// The physical core it is on.
    pub pcore: u32,
    /// The HBM channel that core uses.
    pub hbm: u32,
    /// The subgraph's name (`sg00`, …).
    pub subgraph: String,
    /// Scratchpad pages it uses.
    pub scratchpad_pages: u32,
    /// Every engine's instruction image.
    pub images: Vec<StagedImage>,
    /// Its static DMA rings.
    pub rings: Vec<StagedRing>,
    /// The tables copied for it.
    pub tables: Vec<StagedTable>,
    /// Every row of the runtime's list, in its order.
    pub memory: Vec<StagedRow>,
    /// Where each variable landed.
    pub variables: Vec<StagedVar>,
}

impl StagedCore {
    /// Instruction slots of every image of the core.
    pub fn instruction_slots(&self) -> u64 {
        self.images.iter().map(StagedImage::slots).sum()
    }

    /// DMA descriptors of every ring of the core.
    pub fn descriptors(&self) -> u64 {
        self.rings.iter().map(StagedRing::descriptors).sum()
    }

    /// Operands and descriptors bound to an input or output at execution,
    /// in the images and the rings together.
    pub fn io_templates(&self) -> u64 {
        self.images
            .iter()
            .map(|i| u64::from(i.io_templates))
            .sum::<u64>()
            + self.rings.iter().map(|r| r.io_templates).sum::<u64>()
    }

    /// The image of `engine`, if it has one.
    pub fn image(&self, engine: EngineType) -> Option<&StagedImage> {
        self.images.iter().find(|i| i.engine == engine)
    }
}

/// Everything a load staged, on the device (`ND n`) it is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedView {
    /// The NEFF's name.
    pub name: String,
    /// The NEFF's uuid.
    pub uuid: [u8; 16],
    /// The chip it was staged for.
    pub arch: Arch,
    /// The runtime line whose rules staged it.
    pub line: RuntimeLine,
    /// The device (`ND n`) it is on.
    pub device: u32,
    /// One entry per subgraph, each on its physical core.
    pub cores: Vec<StagedCore>,
}

impl StagedView {
    /// The view of a loaded model.
    pub fn of(rt: &Runtime, model: &Model) -> Result<StagedView, LoadError> {
        let (nd, device) = rt.device_of(model)?;
        let line = rt.config().line();
        let rules = rt.config().captured_line();
        let cores = rt.with_model(model, |lm| cores(lm, device, rules))?;
        Ok(StagedView {
            name: model.name.clone(),
            uuid: model.uuid,
            arch: rt.config().topology.arch,
            line,
            device: nd,
            cores,
        })
    }

    /// The view as a version-6 capture, in the shape the real runtime
    /// writes (what `nrt_profile_stop` saves): images in the data area,
    /// every memory row by name, the whole uuid in field 4.5. neffld's own
    /// version stands as the runtime's; no driver, instance or timing
    /// fields. Images borrow from the view ([`Capture::into_owned`]
    /// detaches them).
    pub fn to_capture(&self) -> Capture<'_> {
        let mut c = to_capture(&self.name, self.uuid, self.arch, &self.cores);
        for s in &mut c.subgraphs {
            s.device = u64::from(self.device);
        }
        c
    }
}

/// Every core of a loaded model on `device`, as `line` lists memory.
fn cores(lm: &LoadedModel, device: &Device, line: Captured) -> Vec<StagedCore> {
    let g = device.geometry();
    let addr = |pa: u64| g.runtime_address(pa);
    lm.cores
        .iter()
        .map(|c| {
            let pcore = c.pcore();
            let images = c
                .engines
                .iter()
                .map(|e| {
                    let img = &e.image;
                    let count = |k: PatchKind| {
                        img.patches
                            .of(Section::Main)
                            .filter(|p| p.kind() == k)
                            .count() as u32
                    };
                    StagedImage {
                        engine: e.engine,
                        address: addr(e.pa),
                        bytes: img.bytes.to_vec(),
                        preamble_slots: section_slots(img, Section::Preamble),
                        main_slots: section_slots(img, Section::Main),
                        postamble_slots: section_slots(img, Section::Postamble),
                        records: records_of(img),
                        filler: img.filler.clone(),
                        approximate: img.approximate.clone(),
                        patches: Patches {
                            insert: count(PatchKind::Insert),
                            modify: count(PatchKind::Modify),
                            delete: count(PatchKind::Delete),
                        },
                        absolute_operands: img.abs_operands.len() as u32,
                        io_templates: img.io_operands.len() as u32,
                    }
                })
                .collect();
            let rings = c
                .rings
                .iter()
                .map(|r| StagedRing {
                    queue: r.queue.clone(),
                    address: addr(r.pa),
                    bytes: r.image.bytes.len() as u64,
                    blocks: r.image.blocks.len() as u32,
                    descriptor_pairs: r.image.blocks.iter().map(|b| u64::from(b.2)).sum(),
                    capacity: r.image.capacity as u64,
                    io_templates: r
                        .image
                        .iter()
                        .filter(|d| decode_template(d.buf_ptr).is_some())
                        .count() as u64,
                })
                .collect();
            let tables = c
                .tables
                .iter()
                .map(|t| StagedTable {
                    what: t.what.clone(),
                    address: addr(t.pa),
                    bytes: t.len,
                })
                .collect();
            StagedCore {
                pcore: pcore.0,
                hbm: g.hbm_of(pcore).unwrap_or(0),
                subgraph: c.subgraph.clone(),
                scratchpad_pages: c.plan.scratch_pages(),
                images,
                rings,
                tables,
                memory: memory_rows(device, line, pcore),
                variables: variables(c, g),
            }
        })
        .collect()
}

/// The runtime's name and the profiler's of a row of the runtime's list.
pub fn row_names(key: RowKey) -> (&'static str, &'static str) {
    match key {
        RowKey::Usage(u) => MEMORY_ROWS[u.index()],
        RowKey::DmaRings => OLD_DMA_ROW,
    }
}

testkit_pub! {
    /// Every row of the runtime's memory list for one core, in its order, as
    /// the runtime of `line` reports it ([`crate::report::memory`]).
    fn memory_rows(device: &Device, line: Captured, pcore: PCore) -> Vec<StagedRow> {
        CoreMemory::of(device, pcore)
            .report(line)
            .into_iter()
            .map(|r| {
                let (name, usage_type) = row_names(r.key);
                StagedRow {
                    name: name.into(),
                    usage_type: usage_type.into(),
                    bytes: r.bytes(),
                    runtime: r.runtime,
                    model: r.model,
                }
            })
            .collect()
    }
}

/// Every variable of a core in var_id order, where its plan placed it.
fn variables(c: &CoreImage, g: &Geometry) -> Vec<StagedVar> {
    c.plan
        .vars
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (name, kind) = c
                .plan
                .var_meta
                .get(i)
                .map(|(n, k)| (n.clone(), k.type_name()))
                .unwrap_or_else(|| ("?".to_string(), "?"));
            let (placement, at) = match *p {
                Placement::StateBuffer { pa } => ("state-buffer", Some((pa, SB_WINDOW))),
                Placement::Hbm { pa, size } => ("hbm", Some((pa, size))),
                Placement::Scratchpad { pa, size } => ("scratchpad", Some((pa, size))),
                Placement::Io => ("io", None),
                Placement::Host => ("host", None),
            };
            StagedVar {
                var_id: i as u32,
                name,
                kind,
                placement,
                address: at.map(|(pa, _)| g.runtime_address(pa)),
                size: at.map(|(_, size)| size),
            }
        })
        .collect()
}

/// A capture in the same terms, its records placed by [`align`] against the
/// NEFF's own `streams`: to compare two captures, or a capture with itself.
pub fn from_capture(
    capture: &Capture<'_>,
    streams: &BTreeMap<(String, EngineType), &[u8]>,
) -> Vec<StagedCore> {
    capture
        .subgraphs
        .iter()
        .map(|s| StagedCore {
            pcore: s.pcore as u32,
            hbm: 0,
            subgraph: s.name.clone(),
            scratchpad_pages: 0,
            images: s
                .images
                .iter()
                .map(|i| {
                    let stream = streams
                        .get(&(s.name.clone(), i.engine))
                        .copied()
                        .unwrap_or_default();
                    let a = align(&i.bytes, stream);
                    StagedImage {
                        engine: i.engine,
                        address: i.address,
                        bytes: i.bytes.to_vec(),
                        preamble_slots: a.preamble_slots,
                        main_slots: a.main_slots,
                        postamble_slots: a.postamble_slots,
                        records: a.records,
                        filler: Vec::new(),
                        approximate: Vec::new(),
                        patches: Patches::default(),
                        absolute_operands: 0,
                        io_templates: 0,
                    }
                })
                .collect(),
            rings: Vec::new(),
            tables: Vec::new(),
            memory: s
                .memory
                .iter()
                .map(|r| StagedRow {
                    name: r.name.clone(),
                    usage_type: r.usage_type().to_string(),
                    bytes: r.bytes,
                    runtime: 0,
                    model: 0,
                })
                .collect(),
            variables: Vec::new(),
        })
        .collect()
}

/// A version-6 capture of what neffld staged, in the shape the real runtime
/// writes (what `nrt_profile_stop` saves): images in the data area, every
/// memory row by name, the whole uuid in field 4.5. neffld's own version
/// stands as the runtime's; no driver, instance or timing fields. Images
/// borrow from `cores` ([`Capture::into_owned`] detaches them).
fn to_capture<'a>(
    neff_name: &str,
    uuid: [u8; 16],
    arch: Arch,
    cores: &'a [StagedCore],
) -> Capture<'a> {
    let version = |s: &str| s.parse::<u64>().unwrap_or(0);
    let mut v = env!("CARGO_PKG_VERSION").split('.');
    Capture {
        version: 6,
        neff_name: neff_name.to_string(),
        uuid: CaptureUuid::Full(uuid),
        arch_code: Capture::arch_code_of(arch),
        runtime: Some(Version {
            major: v.next().map_or(0, version),
            minor: v.next().map_or(0, version),
            patch: v.next().map_or(0, version),
            git_hash: None,
        }),
        driver: None,
        collectives: None,
        instance_type: None,
        instance_id: None,
        capture_time: None,
        subgraphs: cores
            .iter()
            .map(|c| Subgraph {
                name: c.subgraph.clone(),
                device: 0,
                pcore: c.pcore.into(),
                images: c
                    .images
                    .iter()
                    .map(|i| Image {
                        engine: i.engine,
                        address: i.address,
                        bytes: Cow::Borrowed(&i.bytes[..]),
                    })
                    .collect(),
                memory: c.memory.iter().map(StagedRow::to_mem_row).collect(),
                duration_ps: None,
            })
            .collect(),
    }
}

fn section_slots(img: &EngineImage, section: Section) -> u32 {
    img.layout
        .sections
        .iter()
        .filter(|s| s.section == section)
        .map(|s| s.slots)
        .sum()
}

testkit_pub! {
    /// The fate of each NEFF record of the main section, from the patch list in
    /// one pass (the mapping of `PatchList::neff_to_device`, for every record at
    /// once): a delete patch removes its records, a modify patch rewrites them
    /// into the slot it produces, anything between patches is copied verbatim.
    fn records_of(img: &EngineImage) -> Records {
        let main = img.layout.span(Section::Main).map_or(0, |s| s.first);
        let main_slots = u64::from(section_slots(img, Section::Main));
        let mut fates = Vec::new();
        let (mut dev, mut neff) = (0u64, 0u64);
        let slot = |dev: u64| (dev + u64::from(main)) as u32;
        for p in img.patches.of(Section::Main) {
            let at = u64::from(p.neff_index);
            while neff < at {
                fates.push(Fate::Kept(slot(dev)));
                dev += 1;
                neff += 1;
            }
            let fate = match p.kind() {
                PatchKind::Delete => Fate::Deleted,
                _ => Fate::Rewritten(slot(dev)),
            };
            fates.extend(std::iter::repeat_n(fate, p.neff_count as usize));
            neff += u64::from(p.neff_count);
            dev += u64::from(p.device_count);
        }
        while dev < main_slots {
            fates.push(Fate::Kept(slot(dev)));
            dev += 1;
        }
        Records { fates }
    }
}
