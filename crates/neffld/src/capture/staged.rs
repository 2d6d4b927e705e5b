//! neffld's side of a comparison: what a load put on each physical core, in
//! the terms a capture uses (images read back from the device, the ledger's
//! rows under the profiler's names, the variables where they landed).
//!
//! `neffld load --dump` writes this view; [`super::compare`] holds it against
//! a capture.

use crate::api::LoadedModel;
use crate::device::ledger::MemUsage;
use crate::device::{Device, DeviceError};
use crate::manifest::engine::EngineType;
use crate::memory::CoreMemory;
use crate::relocate::instr::EngineImage;
use crate::relocate::ipmap::{PatchKind, Section};
use crate::stage::core::CoreImage;
use crate::stage::Placement;
use crate::Arch;

use std::collections::BTreeMap;

use super::compare::{align, Records};
use super::{Capture, MEMORY_ROWS};

/// One engine's image as staged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedImage {
    pub engine: EngineType,
    /// The device address of slot 0.
    pub address: u64,
    /// The final staged bytes, read back from the device.
    pub bytes: Vec<u8>,
    pub preamble_slots: u32,
    pub main_slots: u32,
    pub postamble_slots: u32,
    /// Where each of the NEFF's records went, from the relocation's patches.
    pub records: Records,
}

/// One memory row of a core: the runtime's name and the profiler's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedRow {
    pub name: String,
    pub usage_type: String,
    pub bytes: u64,
}

/// One variable where it landed; no address for IO and host variables.
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
/// are the runtime's report ([`crate::memory`]) for `arch`.
pub fn staged(
    lm: &LoadedModel,
    device: &dyn Device,
    arch: Arch,
) -> Result<Vec<StagedCore>, DeviceError> {
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
                        address: e.pa,
                        bytes,
                        preamble_slots: section_slots(&e.image, Section::Preamble),
                        main_slots: section_slots(&e.image, Section::Main),
                        postamble_slots: section_slots(&e.image, Section::Postamble),
                        records: records_of(&e.image),
                    })
                })
                .collect::<Result<Vec<_>, DeviceError>>()?;
            let report = CoreMemory::of(device, arch, pcore);
            let memory = MemUsage::ALL
                .iter()
                .map(|u| {
                    let (name, usage_type) = MEMORY_ROWS[u.index()];
                    StagedRow {
                        name: name.into(),
                        usage_type: usage_type.into(),
                        bytes: report.row(*u),
                    }
                })
                .collect();
            Ok(StagedCore {
                pcore: pcore.0,
                subgraph: c.subgraph.clone(),
                images,
                memory,
                variables: variables(c),
            })
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

fn section_slots(img: &EngineImage, section: Section) -> u32 {
    img.layout
        .sections
        .iter()
        .filter(|s| s.0 == section)
        .map(|s| s.2)
        .sum()
}

/// The fate of each NEFF record of the main section, from the patch list:
/// a delete patch removes it, a modify patch rewrites it, anything else is
/// copied verbatim.
pub fn records_of(img: &EngineImage) -> Records {
    let main = img
        .layout
        .sections
        .iter()
        .find(|s| s.0 == Section::Main)
        .map_or(0, |s| s.1);
    // Unpatched records map one to one; each patch trades its NEFF
    // records for its device slots.
    let count = img
        .patches
        .of(Section::Main)
        .fold(u64::from(section_slots(img, Section::Main)), |n, p| {
            (n + u64::from(p.neff_count)).saturating_sub(u64::from(p.device_count))
        });
    let mut rewritten = vec![false; count as usize];
    for p in img.patches.of(Section::Main) {
        if p.kind() == PatchKind::Modify {
            for i in p.neff_index..p.neff_index + p.neff_count {
                if let Some(r) = rewritten.get_mut(i as usize) {
                    *r = true;
                }
            }
        }
    }
    let slots = (0..count)
        .map(|i| {
            img.patches
                .neff_to_device(Section::Main, i)
                .map(|s| s as u32 + main)
        })
        .collect();
    Records::from_fates(slots, rewritten)
}

fn variables(c: &CoreImage) -> Vec<StagedVar> {
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
                .unwrap_or_else(|| (format!("var{i}"), "?"));
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
