//! neffld's side of a comparison: what a load put on each physical core, in
//! the terms a capture uses (images read back from the device, the runtime's
//! memory rows under the profiler's names, the variables where they landed).
//!
//! `neffld load --dump` writes this view; [`super::compare`] holds it against
//! a capture.

use crate::api::LoadedModel;
use crate::device::address::device_address;
use crate::device::{Device, DeviceError};
use crate::ids::PCore;
use crate::line::RuntimeLine;
use crate::manifest::engine::EngineType;
use crate::relocate::instr::EngineImage;
use crate::relocate::ipmap::{PatchKind, Section};
use crate::report::memory::{CoreMemory, RowKey};
use crate::stage::core::CoreImage;
use crate::stage::Placement;
use crate::Arch;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use super::compare::{align, Fate, Records};
use super::{Capture, CaptureUuid, Image, MemRow, Subgraph, Version, MEMORY_ROWS, OLD_DMA_ROW};

/// One engine's image as staged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedImage {
    pub engine: EngineType,
    /// The device address of slot 0, as the runtime writes it
    /// ([`device_address`]).
    pub address: u64,
    /// The final staged bytes, read back from the device.
    pub bytes: Vec<u8>,
    pub preamble_slots: u32,
    pub main_slots: u32,
    pub postamble_slots: u32,
    /// Where each of the NEFF's records went, from the relocation's patches.
    pub records: Records,
    /// Slots (image slot ranges) of the runtime's code that are filler, not
    /// the runtime's bytes (its line's are not known there); none for a
    /// capture.
    pub filler: Vec<Range<u32>>,
    /// NEFF records whose rewrite holds values no rule covers (trigger
    /// counts of transposes); none for a capture.
    pub approximate: Vec<u32>,
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
}

/// One memory row of a core: the runtime's name and the profiler's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedRow {
    pub name: String,
    pub usage_type: String,
    pub bytes: u64,
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

/// One variable where it landed (by [`staged`] as the runtime writes the
/// address, by [`variables`] as the simulated device placed it); no address
/// for IO and host variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedVar {
    pub name: String,
    pub kind: &'static str,
    pub address: Option<u64>,
    pub size: Option<u64>,
}

/// One subgraph staged on one physical core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedCore {
    pub pcore: u32,
    pub subgraph: String,
    pub images: Vec<StagedImage>,
    /// Every row of the runtime's list, in its order.
    pub memory: Vec<StagedRow>,
    pub variables: Vec<StagedVar>,
}

impl StagedCore {
    pub fn image(&self, engine: EngineType) -> Option<&StagedImage> {
        self.images.iter().find(|i| i.engine == engine)
    }
}

/// The staged view of every core of a loaded model, image bytes read back
/// from `device` (a `NullDevice` keeps no bytes and fails here); memory rows
/// are the runtime's report ([`crate::report::memory`]) as `line` lists it.
pub fn staged(
    lm: &LoadedModel,
    device: &Device,
    line: RuntimeLine,
) -> Result<Vec<StagedCore>, DeviceError> {
    let geometry = device.geometry();
    lm.cores
        .iter()
        .map(|c| {
            let pcore = c.pcore();
            let images = c
                .engines
                .iter()
                .map(|e| {
                    let mut bytes = vec![0u8; e.image.bytes.len()];
                    device.read(e.handle, 0, &mut bytes)?;
                    Ok(StagedImage {
                        engine: e.engine,
                        address: device_address(geometry, e.pa),
                        bytes,
                        preamble_slots: section_slots(&e.image, Section::Preamble),
                        main_slots: section_slots(&e.image, Section::Main),
                        postamble_slots: section_slots(&e.image, Section::Postamble),
                        records: records_of(&e.image),
                        filler: e.image.filler.clone(),
                        approximate: e.image.approximate.clone(),
                    })
                })
                .collect::<Result<Vec<_>, DeviceError>>()?;
            let memory = memory_rows(device, line, pcore);
            Ok(StagedCore {
                pcore: pcore.0,
                subgraph: c.subgraph.clone(),
                images,
                memory,
                variables: variables(c)
                    .into_iter()
                    .map(|v| StagedVar {
                        address: v.address.map(|a| device_address(geometry, a)),
                        ..v
                    })
                    .collect(),
            })
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

/// Every row of the runtime's memory list for one core, in its order, as
/// the runtime of `line` reports it ([`crate::report::memory`]; also for a
/// device that keeps no bytes).
pub fn memory_rows(device: &Device, line: RuntimeLine, pcore: PCore) -> Vec<StagedRow> {
    CoreMemory::of(device, pcore)
        .report(line)
        .into_iter()
        .map(|r| {
            let (name, usage_type) = row_names(r.key);
            StagedRow {
                name: name.into(),
                usage_type: usage_type.into(),
                bytes: r.bytes(),
            }
        })
        .collect()
}

/// A capture in the same terms, its records placed by [`align`] against the
/// NEFF's own `streams`: to compare two captures, or a capture with itself.
pub fn staged_from_capture(
    capture: &Capture<'_>,
    streams: &BTreeMap<(String, EngineType), &[u8]>,
) -> Vec<StagedCore> {
    capture
        .subgraphs
        .iter()
        .map(|s| StagedCore {
            pcore: s.pcore as u32,
            subgraph: s.name.clone(),
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
                    }
                })
                .collect(),
            memory: s
                .memory
                .iter()
                .map(|r| StagedRow {
                    name: r.name.clone(),
                    usage_type: r.usage_type().to_string(),
                    bytes: r.bytes,
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
pub fn to_capture<'a>(
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
        .filter(|s| s.0 == section)
        .map(|s| s.2)
        .sum()
}

/// The fate of each NEFF record of the main section, from the patch list in
/// one pass (the mapping of `PatchList::neff_to_device`, for every record at
/// once): a delete patch removes its records, a modify patch rewrites them
/// into the slot it produces, anything between patches is copied verbatim.
pub fn records_of(img: &EngineImage) -> Records {
    let main = img
        .layout
        .sections
        .iter()
        .find(|s| s.0 == Section::Main)
        .map_or(0, |s| s.1);
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

/// Every variable of a core in var_id order, where its plan placed it.
pub fn variables(c: &CoreImage) -> Vec<StagedVar> {
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
            let (address, size) = match *p {
                Placement::StateBuffer { pa } => (Some(pa), Some(crate::stage::plan::SB_BYTES)),
                Placement::Hbm { pa, size } | Placement::Scratchpad { pa, size } => {
                    (Some(pa), Some(size))
                }
                Placement::Io | Placement::Host => (None, None),
            };
            StagedVar {
                name,
                kind,
                address,
                size,
            }
        })
        .collect()
}
