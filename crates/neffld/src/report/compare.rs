//! A capture held against what neffld staged: per core and engine, image
//! size, the preamble / main / postamble split, the fate of each of the
//! NEFF's own records (kept verbatim, rewritten in place, deleted), how many
//! 8-byte words of the records both sides rewrote agree, the image address;
//! and the memory rows side by side.
//!
//! A capture says nothing about which slot came from which record: its side
//! is aligned ([`super::align`]); ours is known from the relocation's
//! patches ([`super::staged::records_of`]).

use std::collections::BTreeMap;

use thiserror::Error;

use crate::api::PipelineError;
use crate::api::{LoadError, Runtime};
use crate::config::{DeviceKind, Libnrt, Loader, RuntimeConfig, Topology};
use crate::container::{self, Neff, OpenOptions};
use crate::line::RuntimeLine;
use crate::manifest::engine::EngineType;
use crate::parse::{self, ParsedModel};
use crate::NrtStatus;

use super::align::{align, Aligned, Fate};
use super::staged::{StagedCore, StagedImage, StagedView};
use crate::capture::{Capture, CaptureUuid, Image, Subgraph};
use crate::kbin::isa::RECORD_LEN;
use crate::line::RACING_ENGINES;

testkit_pub! {
    /// The NEFF's own instruction stream of each subgraph and engine.
    fn neff_streams<'n>(
        neff: &'n Neff,
        parsed: &ParsedModel,
    ) -> BTreeMap<(String, EngineType), &'n [u8]> {
        parsed
            .kbins
            .iter()
            .flat_map(|k| {
                k.engines()
                    .iter()
                    .map(|e| ((k.name().to_string(), e.ty()), e.stream(neff.archive())))
            })
            .collect()
    }
}

/// One side of an image comparison (as `compare --json` writes it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ImageSide {
    /// The image's device address.
    pub address: u64,
    /// Its size.
    pub bytes: u64,
    /// Slots of the runtime's code before the NEFF's records.
    pub preamble_slots: u32,
    /// Slots of the NEFF's records.
    pub main_slots: u32,
    /// Slots of the runtime's code after them.
    pub postamble_slots: u32,
    /// NEFF records kept as they were.
    pub kept: u32,
    /// NEFF records rewritten.
    pub rewritten: u32,
    /// NEFF records deleted.
    pub deleted: u32,
}

impl ImageSide {
    fn new(address: u64, bytes: u64, a: &Aligned) -> ImageSide {
        ImageSide {
            address,
            bytes,
            preamble_slots: a.preamble_slots,
            main_slots: a.main_slots,
            postamble_slots: a.postamble_slots,
            kept: a.records.kept(),
            rewritten: a.records.rewritten(),
            deleted: a.records.deleted(),
        }
    }
}

/// How an image's address compares with the capture's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressMatch {
    /// The capture's address (or no image on either side).
    Same,
    /// The address the capture gives the other core's image of the same
    /// engine, and that image has this one's: the runtime's race between
    /// the two cores ([`RACING_ENGINES`]), not a disagreement.
    Raced,
    /// At another address: a disagreement.
    Differs,
}

impl AddressMatch {
    /// The word reports use for it: `same`, `raced` or `differs`.
    pub fn name(self) -> &'static str {
        match self {
            AddressMatch::Same => "same",
            AddressMatch::Raced => "raced",
            AddressMatch::Differs => "differs",
        }
    }
}

/// One engine of one core, both sides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageComparison {
    /// The engine compared.
    pub engine: EngineType,
    /// neffld's image, if it staged one.
    pub ours: Option<ImageSide>,
    /// The capture's image, if it holds one.
    pub capture: Option<ImageSide>,
    /// The addresses of the two sides.
    pub address: AddressMatch,
    /// NEFF records kept, rewritten or deleted alike on both sides.
    pub same_fate: u32,
    /// NEFF records.
    pub records: u32,
    /// 8-byte words of the records both sides rewrote, and how many of them
    /// hold the same bytes.
    pub rewritten_words: u32,
    /// Of those, the words that hold the same bytes.
    pub rewritten_words_equal: u32,
    /// 8-byte words of the whole image (the runtime's preamble and
    /// postamble, the kept records, everything) compared at the same offset
    /// on both sides, our filler slots left out; a size that differs counts
    /// the longer side's words.
    pub words: u32,
    /// Of those, the words that hold the same bytes.
    pub words_equal: u32,
    /// Slots of our image's runtime code that are filler, not the runtime's
    /// bytes (unknown for the load's line).
    pub filler_slots: u32,
    /// Records our image rewrote with values no rule covers (trigger counts
    /// of transposes, collectives records): the image is approximate there.
    pub approximate_records: u32,
}

impl ImageComparison {
    /// Same size, split, record fates and rewritten words, at the same
    /// address or the one the race gave it.
    pub fn agrees(&self) -> bool {
        match (&self.ours, &self.capture) {
            (Some(o), Some(c)) => {
                ImageSide { address: 0, ..*o } == ImageSide { address: 0, ..*c }
                    && self.address != AddressMatch::Differs
                    && self.same_fate == self.records
                    && self.rewritten_words_equal == self.rewritten_words
                    && self.words_equal == self.words
            }
            (None, None) => true,
            _ => false,
        }
    }
}

/// One memory row, both sides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowComparison {
    /// The profiler's name.
    pub usage_type: String,
    /// neffld's bytes, if it has the row.
    pub ours: Option<u64>,
    /// The capture's bytes, if it has the row.
    pub capture: Option<u64>,
    /// False for rows that are not the model's (Profiler Buffers, Tensors):
    /// shown, never counted against agreement.
    pub counted: bool,
}

impl RowComparison {
    /// The same bytes on both sides (or the row absent from both).
    pub fn equal(&self) -> bool {
        self.ours == self.capture
    }
}

/// Rows that depend on who ran the model, not on the model.
pub(crate) const UNCOUNTED_ROWS: [&str; 2] = ["profiler buffers", "tensor"];

/// One subgraph, both sides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreComparison {
    /// The subgraph's name, what the sides are matched by.
    pub subgraph: String,
    /// The physical core neffld staged it on.
    pub pcore_ours: Option<u32>,
    /// The physical core it ran on in the capture.
    pub pcore_capture: Option<u64>,
    /// Every engine's image, both sides.
    pub images: Vec<ImageComparison>,
    /// Every memory row, both sides.
    pub memory: Vec<RowComparison>,
}

impl CoreComparison {
    /// Same core, every image agreeing and every counted row equal.
    pub fn agrees(&self) -> bool {
        self.pcore_ours.map(u64::from) == self.pcore_capture
            && self.images.iter().all(ImageComparison::agrees)
            && self.memory.iter().all(|r| !r.counted || r.equal())
    }
}

/// A whole comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// The runtime line neffld loaded under (the capture's, when it names
    /// one neffld knows).
    pub line: RuntimeLine,
    /// One entry per subgraph of either side.
    pub cores: Vec<CoreComparison>,
}

/// How much of a comparison agrees, counted as the issue tables count it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Images on both sides.
    pub images: u32,
    /// Of those, every NEFF record kept, rewritten or deleted alike and
    /// every rewritten word equal.
    pub records_equal: u32,
    /// Of those, the same size.
    pub sizes_equal: u32,
    /// Of those, every compared byte the same ([`ImageComparison::words`]).
    pub bytes_equal: u32,
    /// Of those, at the same address.
    pub addresses_equal: u32,
    /// Of those, at the address the capture gives the other core's image
    /// of the engine, the runtime's race ([`AddressMatch::Raced`]).
    pub addresses_raced: u32,
    /// Counted memory rows (not Profiler Buffers or Tensors) and how many
    /// are equal.
    pub rows: u32,
    /// Of those, the rows that are equal.
    pub rows_equal: u32,
}

impl Comparison {
    /// True only when every core agrees in every respect.
    pub fn agrees(&self) -> bool {
        self.cores.iter().all(CoreComparison::agrees)
    }

    /// The counts of what agrees.
    pub fn tally(&self) -> Tally {
        let mut t = Tally::default();
        for c in &self.cores {
            for i in &c.images {
                let (Some(o), Some(k)) = (&i.ours, &i.capture) else {
                    continue;
                };
                t.images += 1;
                t.records_equal += u32::from(
                    i.same_fate == i.records && i.rewritten_words_equal == i.rewritten_words,
                );
                t.sizes_equal += u32::from(o.bytes == k.bytes);
                t.bytes_equal += u32::from(i.words_equal == i.words);
                t.addresses_equal += u32::from(o.address == k.address);
                t.addresses_raced += u32::from(i.address == AddressMatch::Raced);
            }
            for r in c.memory.iter().filter(|r| r.counted) {
                t.rows += 1;
                t.rows_equal += u32::from(r.equal());
            }
        }
        t
    }
}

/// Holds `capture` against `ours` (staged under the capture's line,
/// [`capture_line`]), matching cores by subgraph name; `streams` are the
/// NEFF's own records ([`neff_streams`]).
pub fn compare(
    capture: &Capture<'_>,
    ours: &[StagedCore],
    streams: &BTreeMap<(String, EngineType), &[u8]>,
) -> Comparison {
    let line = capture_line(capture);
    let mut names: Vec<&str> = capture.subgraphs.iter().map(|s| s.name.as_str()).collect();
    for c in ours {
        if !names.contains(&c.subgraph.as_str()) {
            names.push(&c.subgraph);
        }
    }
    let cores = names
        .into_iter()
        .map(|name| {
            let theirs = capture.subgraphs.iter().find(|s| s.name == name);
            let mine = ours.iter().find(|c| c.subgraph == name);
            CoreComparison {
                subgraph: name.to_string(),
                pcore_ours: mine.map(|c| c.pcore),
                pcore_capture: theirs.map(|s| s.pcore),
                images: EngineType::ALL
                    .into_iter()
                    .map(|e| {
                        let stream = streams
                            .get(&(name.to_string(), e))
                            .copied()
                            .unwrap_or_default();
                        compare_image(
                            e,
                            mine.and_then(|c| c.image(e)),
                            theirs.and_then(|s| s.image(e)),
                            stream,
                        )
                    })
                    .collect(),
                memory: compare_rows(mine, theirs),
            }
        })
        .collect();
    let mut cmp = Comparison { line, cores };
    mark_race(&mut cmp);
    cmp
}

/// Marks the images of a racing engine whose addresses the two cores hold
/// swapped ([`AddressMatch::Raced`]).
fn mark_race(cmp: &mut Comparison) {
    let address = |cmp: &Comparison, core: usize, engine: EngineType| {
        let i = cmp.cores[core].images.iter().find(|i| i.engine == engine)?;
        Some((i.ours.as_ref()?.address, i.capture.as_ref()?.address))
    };
    if cmp.cores.len() != 2 {
        return;
    }
    for engine in RACING_ENGINES {
        let (Some((ours_a, theirs_a)), Some((ours_b, theirs_b))) =
            (address(cmp, 0, engine), address(cmp, 1, engine))
        else {
            continue;
        };
        if ours_a != theirs_a && ours_a == theirs_b && ours_b == theirs_a {
            for core in &mut cmp.cores {
                for i in core.images.iter_mut().filter(|i| i.engine == engine) {
                    i.address = AddressMatch::Raced;
                }
            }
        }
    }
}

fn compare_image(
    engine: EngineType,
    ours: Option<&StagedImage>,
    theirs: Option<&Image<'_>>,
    stream: &[u8],
) -> ImageComparison {
    let records = (stream.len() / RECORD_LEN) as u32;
    let theirs_aligned = theirs.map(|i| (i, align(&i.bytes, stream)));
    let ours_side = ours.map(|i| ImageSide {
        address: i.address,
        bytes: i.bytes.len() as u64,
        preamble_slots: i.preamble_slots,
        main_slots: i.main_slots,
        postamble_slots: i.postamble_slots,
        kept: i.records.kept(),
        rewritten: i.records.rewritten(),
        deleted: i.records.deleted(),
    });
    let capture = theirs_aligned
        .as_ref()
        .map(|(i, a)| ImageSide::new(i.address, i.bytes.len() as u64, a));
    let address = if ours_side.as_ref().map(|o| o.address) == capture.as_ref().map(|c| c.address) {
        AddressMatch::Same
    } else {
        AddressMatch::Differs
    };
    let mut cmp = ImageComparison {
        engine,
        ours: ours_side,
        capture,
        address,
        same_fate: 0,
        records,
        rewritten_words: 0,
        rewritten_words_equal: 0,
        words: 0,
        words_equal: 0,
        filler_slots: ours.map_or(0, StagedImage::filler_slots),
        approximate_records: ours.map_or(0, |i| i.approximate.len() as u32),
    };
    let (Some(mine), Some((img, a))) = (ours, &theirs_aligned) else {
        return cmp;
    };
    (cmp.words, cmp.words_equal) = word_tally(mine, &img.bytes);
    let our_bytes = &mine.bytes;
    for (mine, theirs) in mine.records.fates.iter().zip(&a.records.fates) {
        match (mine, theirs) {
            (Fate::Kept(_), Fate::Kept(_)) | (Fate::Deleted, Fate::Deleted) => cmp.same_fate += 1,
            (Fate::Rewritten(x), Fate::Rewritten(y)) => {
                cmp.same_fate += 1;
                let at = |b: &[u8], s: u32| {
                    b.get(s as usize * RECORD_LEN..(s as usize + 1) * RECORD_LEN)
                        .map(<[u8]>::to_vec)
                        .unwrap_or_default()
                };
                let (m, t) = (at(our_bytes, *x), at(&img.bytes, *y));
                for (wm, wt) in m.chunks(8).zip(t.chunks(8)) {
                    cmp.rewritten_words += 1;
                    cmp.rewritten_words_equal += u32::from(wm == wt);
                }
            }
            _ => {}
        }
    }
    cmp
}

/// The 8-byte words of two images compared at the same offsets, our
/// filler slots left out: (compared, equal). Words only one side has count
/// as compared and unequal.
fn word_tally(ours: &StagedImage, theirs: &[u8]) -> (u32, u32) {
    let filler = |word: usize| {
        let slot = (word * 8 / RECORD_LEN) as u32;
        ours.filler.iter().any(|r| r.contains(&slot))
    };
    let longest = ours.bytes.len().max(theirs.len()).div_ceil(8);
    let (mut words, mut equal) = (0u32, 0u32);
    /// The word at `w` of `b`: its last may be short; past the end, none.
    fn at(b: &[u8], w: usize) -> Option<&[u8]> {
        b.get(w * 8..).map(|rest| &rest[..rest.len().min(8)])
    }
    for w in (0..longest).filter(|&w| !filler(w)) {
        words += 1;
        equal += u32::from(matches!(
            (at(&ours.bytes, w), at(theirs, w)),
            (Some(a), Some(b)) if !a.is_empty() && a == b
        ));
    }
    (words, equal)
}

fn compare_rows(ours: Option<&StagedCore>, theirs: Option<&Subgraph<'_>>) -> Vec<RowComparison> {
    fn row(rows: &mut Vec<RowComparison>, name: &str, usage_type: &str) -> usize {
        if let Some(i) = rows.iter().position(|r| r.usage_type == usage_type) {
            return i;
        }
        rows.push(RowComparison {
            usage_type: usage_type.to_string(),
            ours: None,
            capture: None,
            counted: !UNCOUNTED_ROWS.contains(&name),
        });
        rows.len() - 1
    }
    let mut rows = Vec::new();
    for r in theirs.map(|s| &s.memory[..]).unwrap_or_default() {
        let i = row(&mut rows, &r.name, r.usage_type());
        rows[i].capture = Some(r.bytes);
    }
    for r in ours.map(|c| &c.memory[..]).unwrap_or_default() {
        let i = row(&mut rows, &r.name, &r.usage_type);
        rows[i].ours = Some(r.bytes);
    }
    rows
}

/// Why a NEFF could not be loaded to be compared with a capture.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CompareError {
    /// The capture names a chip neffld does not model.
    #[error("capture names architecture code {0}, which neffld does not know (1 trn1, 2 trn2)")]
    UnknownArch(u64),
    /// The capture's cores are not one logical core neffld can load on.
    #[error("capture's physical cores {pcores:?} are not one logical core of size {lnc}")]
    Cores {
        /// The capture's physical cores.
        pcores: Vec<u64>,
        /// The logical-core size.
        lnc: u32,
    },
    /// The NEFF did not load.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The staged images could not be read back.
    #[error("reading the staged images back: {0}")]
    Device(PipelineError),
    /// The capture is of another NEFF (name or uuid differ).
    #[error("the capture is of another NEFF: it names {capture_name:?} with uuid {capture_uuid}, this NEFF is {neff_name:?} with uuid {neff_uuid}")]
    OtherNeff {
        /// The NEFF name the capture holds.
        capture_name: String,
        /// The uuid the capture holds (hex).
        capture_uuid: String,
        /// This NEFF's name.
        neff_name: String,
        /// This NEFF's uuid (hex).
        neff_uuid: String,
    },
}

impl CompareError {
    /// The `NRT_STATUS` a C caller would see.
    pub fn status(&self) -> NrtStatus {
        match self {
            CompareError::Load(e) => e.status(),
            CompareError::Device(e) => e.status(),
            CompareError::UnknownArch(_)
            | CompareError::Cores { .. }
            | CompareError::OtherNeff { .. } => NrtStatus::Invalid,
        }
    }
}

/// The logical core of size `lnc` whose physical cores the capture's
/// subgraphs ran on; `None` unless they all belong to one.
pub fn logical_core(capture: &Capture<'_>, lnc: u32) -> Option<u32> {
    let lnc = u64::from(lnc.max(1));
    let mut lcores = capture.subgraphs.iter().map(|s| s.pcore / lnc);
    let first = lcores.next()?;
    lcores
        .all(|l| l == first)
        .then(|| u32::try_from(first).ok())
        .flatten()
}

/// The runtime line a capture was taken under: the line of its runtime
/// version (field 8) when neffld knows it, else the default line (a capture
/// neffld wrote names neffld's own version).
pub fn capture_line(capture: &Capture<'_>) -> RuntimeLine {
    capture
        .runtime
        .as_ref()
        .and_then(|v| RuntimeLine::of_version(v.major, v.minor))
        .unwrap_or(RuntimeLine::NEWEST)
}

/// Loads `neff` on a fresh simulated runtime of the capture's architecture
/// and runtime line ([`capture_line`]), on the capture's logical core, and
/// compares; unloads before returning. Also returns neffld's staged view.
/// What `neffld compare` answers: does neffld stage a NEFF as the real
/// runtime did, image by image and memory row by memory row.
///
/// ```
/// use neffld::report::compare::load_and_compare;
///
/// let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");
/// let neff = std::fs::read(format!("{data}/fixtures/kfusion__baseline_attention__baseline.neff"))?;
/// let ntff = std::fs::read(format!("{data}/captures/kfusion__baseline_attention__baseline.ntff"))?;
/// let capture = neffld::capture::read(&ntff)?;
/// let (comparison, _ours) = load_and_compare(&neff, &capture)?;
/// assert!(comparison.cores.iter().all(|c| c.agrees()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_and_compare(
    neff: &[u8],
    capture: &Capture<'_>,
) -> Result<(Comparison, StagedView), CompareError> {
    let arch = capture
        .arch()
        .ok_or(CompareError::UnknownArch(capture.arch_code))?;
    let line = capture_line(capture);
    let config = RuntimeConfig {
        topology: Topology {
            arch,
            ..Default::default()
        },
        libnrt: Libnrt {
            line: Some(line),
            ..Default::default()
        },
        loader: Loader {
            device: DeviceKind::Sim,
            ..Default::default()
        },
    };
    let lnc = config.lnc_size();
    let vnc = logical_core(capture, lnc).ok_or_else(|| CompareError::Cores {
        pcores: capture.subgraphs.iter().map(|s| s.pcore).collect(),
        lnc,
    })?;
    let opened = container::open(neff, &OpenOptions::default()).map_err(LoadError::from)?;
    let header = &opened.header();
    if !capture.uuid.matches(&header.uuid) {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        return Err(CompareError::OtherNeff {
            capture_name: capture.neff_name.clone(),
            capture_uuid: match &capture.uuid {
                CaptureUuid::Full(u) => hex(u),
                CaptureUuid::Prefix(p) => format!("{}…", hex(p)),
            },
            neff_name: header.name_str(),
            neff_uuid: hex(&header.uuid),
        });
    }
    let parsed = parse::parse(&opened, &crate::manifest::ParseOptions::new(arch, lnc))
        .map_err(LoadError::pipeline)?;
    let streams = neff_streams(&opened, &parsed);
    let rt = Runtime::new(config)?;
    let model = rt.load(neff, Some(vnc))?;
    let ours = StagedView::of(&rt, &model);
    rt.unload(&model)?;
    let ours = ours?;
    Ok((compare(capture, &ours.cores, &streams), ours))
}
