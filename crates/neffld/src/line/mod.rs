//! Runtime lines: what the runtime itself does around a NEFF, per release
//! line of the runtime — 2.23, 2.25, 2.27 and 2.30 as the hardware captures
//! show it, the later lines as their documentation changes those
//! (docs/decisions.md, "Runtime lines"). What each line is, one row of
//! facts per line, is [`facts`].
//!
//! A load runs under one [`RuntimeLine`] (`neffld load --runtime`,
//! `NEFFLD_RUNTIME`, [`crate::config::Libnrt::line`]). One module
//! per line holds only what that line does — its preamble and postamble
//! layouts and slot counts, the fixed block of instruction memory beside
//! each image, what it allocates for itself when it starts, how it sizes
//! and reports rings — and [`regs`] what every line writes the same way:
//! the DMA register windows, the rewritten DMA trigger, the queue and table
//! blocks, the final branch and the filler for runtime bytes nobody has
//! seen. Where a line's fixed bodies are unknown, its images still have the
//! right length, the generated slots and the NEFF's records in place, and
//! each unknown slot is a [`regs::filler`] the image reports
//! ([`Code::filler`]).

pub mod facts;
pub mod regs;
mod shared;
mod v2_23;
mod v2_25;
mod v2_27;
mod v2_30;

use std::fmt;
use std::ops::Range;

use crate::device::{MemUsage, StartTaken};
use crate::manifest::engine::EngineType;
use crate::Arch;

pub use facts::{ImplicitAsync, LineFacts, LineProvenance, Per, RuntimeLine, StartDelta};
pub use regs::{Bases, DmaWindow, OwnedQueue, Record, TableLoad, Trigger};
pub use v2_30::QueueShape;

/// A line whose rules were fitted on hardware captures: what the loader's
/// stages follow for the runtime's own code, rings and start-up memory. A
/// [`RuntimeLine`] without captures resolves to one
/// ([`RuntimeLine::captured`]), so no stage can be handed a line it has no
/// rules for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Captured {
    V2_23,
    V2_25,
    V2_27,
    V2_30,
}

impl Captured {
    /// The chip this line's captures were taken on (docs/reference
    /// runtime-lines: 2.23 and 2.25 on trn1, 2.27 and 2.30 on trn2; none on
    /// trn3).
    pub fn chip(self) -> Arch {
        match self {
            Captured::V2_23 | Captured::V2_25 => Arch::Sunda,
            Captured::V2_27 | Captured::V2_30 => Arch::Cayman,
        }
    }

    /// The release line this is.
    pub fn line(self) -> RuntimeLine {
        match self {
            Captured::V2_23 => RuntimeLine::V2_23,
            Captured::V2_25 => RuntimeLine::V2_25,
            Captured::V2_27 => RuntimeLine::V2_27,
            Captured::V2_30 => RuntimeLine::V2_30,
        }
    }

    /// `(major, minor)`.
    pub fn version(self) -> (u8, u8) {
        self.line().version()
    }

    fn rules(self) -> &'static dyn Rules {
        match self {
            Captured::V2_23 => &v2_23::V2_23,
            Captured::V2_25 => &v2_25::V2_25,
            Captured::V2_27 => &v2_27::V2_27,
            Captured::V2_30 => &v2_30::V2_30,
        }
    }

    /// Instruction memory the runtime charges beside an image of `engine`
    /// on a core of `role` (its memory row is the image plus this).
    pub(crate) fn fixed_block(self, engine: EngineType, role: CoreRole) -> u64 {
        self.rules().fixed_block(engine, role)
    }

    /// What the runtime allocates for itself on each physical core of
    /// `arch` when it starts, by usage ([`crate::memory::runtime_rows`]).
    pub(crate) fn start_rows(self, arch: Arch) -> [u64; MemUsage::COUNT] {
        self.rules().start_rows(arch)
    }

    /// What a started runtime already holds in each HBM channel's pools,
    /// which decides where a model's first allocations land.
    pub(crate) fn start_taken(self, arch: Arch) -> StartTaken {
        self.rules().start_taken(arch)
    }

    /// Bytes the runtime allocates for a static queue's rings: its
    /// `rings` rings, each with an M2S and an S2M half of 16-byte
    /// descriptors, sized for the queue's per-ring counts summed over its
    /// blocks ([`ring_formula`]), as this line does it.
    pub(crate) fn ring_bytes(self, rings: u64, m2s: u64, s2m: u64) -> u64 {
        self.rules().ring_bytes(ring_formula(rings, m2s, s2m))
    }

    /// Bytes of the ring that loads a table (act or DVE) into its engine;
    /// 0 where the line has none of its own.
    pub(crate) fn table_ring_bytes(self) -> u64 {
        self.rules().table_ring_bytes()
    }

    /// The line lists memory as the oldest runtimes do: one `DMA Rings` row
    /// for the model's queue rings, and a Generic row without the model's
    /// part ([`crate::memory::CoreMemory::report`]).
    pub(crate) fn legacy_rows(self) -> bool {
        self.rules().legacy_rows()
    }
}

impl fmt::Display for Captured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.line().fmt(f)
    }
}

/// Which physical core of its logical core a subgraph runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoreRole {
    /// The first (or only) physical core: `sg00` of a two-core logical core.
    First,
    /// Any later one: `sg01` of a two-core logical core.
    Second,
}

impl CoreRole {
    /// The role of subgraph `k` of a logical core.
    pub fn of_subgraph(k: usize) -> CoreRole {
        if k == 0 {
            CoreRole::First
        } else {
            CoreRole::Second
        }
    }
}

/// Alignment of every instruction image: one 32 KiB slot, on every line
/// captured (2.30 and 2.27 on trn2; the 0x8000 spacing of trn1's images).
pub const IMAGE_ALIGN: u64 = 0x8000;

/// The order in which a load's instruction images are allocated, as
/// `(role, engine)`: within a core act, dve, pe, pool, sp, and the second
/// core's act first of all (every capture of 2.27 and 2.30; trn1's one
/// core takes the first core's order, the captured rank act, dve, pe,
/// pool, sp). The interleaving of the two cores is 2.30's; on 2.27 it
/// varies from capture to capture. The two cores are built on two threads
/// and in five of the ten 2.30 captures their pool and sp images come
/// second core first, a race nothing in a NEFF decides, so the order of
/// the other five is kept (docs/decisions.md).
const IMAGE_ORDER: [(CoreRole, EngineType); 10] = [
    (CoreRole::Second, EngineType::Act),
    (CoreRole::Second, EngineType::Dve),
    (CoreRole::First, EngineType::Act),
    (CoreRole::Second, EngineType::Pe),
    (CoreRole::First, EngineType::Dve),
    (CoreRole::First, EngineType::Pe),
    (CoreRole::First, EngineType::Pool),
    (CoreRole::Second, EngineType::Pool),
    (CoreRole::First, EngineType::Sp),
    (CoreRole::Second, EngineType::Sp),
];

/// Engines whose images the cores of a logical core place in either order:
/// the pool and sp images of [`IMAGE_ORDER`], which the runtime's two build
/// threads race for. A comparison with a capture reports the two cores'
/// images of such an engine at each other's addresses as this race, not as
/// a disagreement.
pub const RACING_ENGINES: [EngineType; 2] = [EngineType::Pool, EngineType::Sp];

/// Where an image of `role` and `engine` comes in a load's image
/// allocation order ([`IMAGE_ORDER`]); every later core of a logical core
/// larger than two shares the second core's ranks, lower cores first.
pub fn image_rank(role: CoreRole, engine: EngineType) -> usize {
    IMAGE_ORDER
        .iter()
        .position(|&x| x == (role, engine))
        .unwrap_or(IMAGE_ORDER.len())
}

/// The ring formula every captured line sizes a static queue's rings by:
/// `rings · 16 B · (cap(ΣM2S) + cap(ΣS2M))`, the sums being the per-ring
/// counts of the queue's blocks ([`crate::kbin::DmaRing::counts`]) and
/// `cap` [`crate::kbin::pattern::ring_capacity`].
pub fn ring_formula(rings: u64, m2s: u64, s2m: u64) -> u64 {
    use crate::kbin::pattern::ring_capacity;
    rings
        .saturating_mul(16)
        .saturating_mul(ring_capacity(m2s).saturating_add(ring_capacity(s2m)))
}

/// What of a subgraph and its core the runtime's own code for one engine
/// depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeCode {
    pub line: Captured,
    pub engine: EngineType,
    pub role: CoreRole,
    /// The subgraph stages activation tables (the act preamble loads them).
    pub act_tables: bool,
    /// The subgraph stages DVE tables (the dve preamble loads them).
    pub dve_tables: bool,
    /// The static DMA queues the engine owns, in q_idx order: one preamble
    /// block and postamble resets each.
    pub queues: Vec<OwnedQueue>,
    /// The subgraph's dynamic DMA queue sets (2.30 sets them up).
    pub dynamic: QueueShape,
    /// The core's DMA register windows.
    pub window: DmaWindow,
}

/// Where the rings the preamble points at landed, in the runtime's
/// address form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingBases {
    /// By ring of the kbin ([`crate::kbin::Kbin::dma_rings`]); `None` for a
    /// queue without a static ring.
    pub queues: Vec<Option<Bases>>,
    pub act_table: Option<Bases>,
    pub dve_table: Option<Bases>,
}

/// Runtime code for one section of an image.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Code {
    pub records: Vec<Record>,
    /// Slots (indexes in `records`) that are [`regs::filler`], not the
    /// runtime's bytes.
    pub filler: Vec<Range<u32>>,
}

/// A piece of a preamble or postamble.
enum Part {
    /// The runtime's own bytes, as captured.
    Known(Vec<Record>),
    /// Runtime bytes nobody has seen.
    Filler(u32),
    /// One block per owned queue ([`regs::queue_block`]).
    QueueBlocks,
    /// A table-load block ([`regs::table_block`]).
    TableBlock(TableLoad),
    /// The owned queues' resets ([`regs::queue_resets`]).
    QueueResets,
    /// The final branch (`template` aimed at preamble slot `to`).
    Branch { template: Record, to: u32 },
}

/// What a line decides. Every method of a line is one of these.
trait Rules: Sync {
    fn preamble(&self, c: &RuntimeCode) -> Vec<Part>;
    /// `pre` is the preamble's slot count (the final branch's target is
    /// counted from it).
    fn postamble(&self, c: &RuntimeCode, pre: u32) -> Vec<Part>;
    fn fixed_block(&self, engine: EngineType, role: CoreRole) -> u64;
    fn start_rows(&self, arch: Arch) -> [u64; MemUsage::COUNT];
    fn start_taken(&self, arch: Arch) -> StartTaken;
    /// The line's rings for a queue of `formula` bytes ([`ring_formula`]).
    fn ring_bytes(&self, formula: u64) -> u64 {
        formula
    }
    fn table_ring_bytes(&self) -> u64 {
        TABLE_RING_BYTES
    }
    fn legacy_rows(&self) -> bool {
        false
    }
}

/// A table-load ring (qActTable, qDveTable): 2,048 bytes, the difference of
/// the DMA Rings Runtime rows of the core with act tables (32,768) and the
/// one without (30,720) in every 2.30 capture, and the `2048 · T` of 2.27's.
const TABLE_RING_BYTES: u64 = 2048;

fn slots(parts: &[Part], c: &RuntimeCode) -> u32 {
    parts
        .iter()
        .map(|p| match p {
            Part::Known(v) => v.len() as u32,
            Part::Filler(n) => *n,
            Part::QueueBlocks => c.queues.iter().map(OwnedQueue::block_slots).sum(),
            Part::TableBlock(_) => regs::TABLE_BLOCK_SLOTS,
            Part::QueueResets => c.queues.iter().map(OwnedQueue::reset_slots).sum(),
            Part::Branch { .. } => 1,
        })
        .sum()
}

/// The parts, made records; the last slot of the whole image is `last`
/// (for the branch).
fn assemble(
    parts: Vec<Part>,
    c: &RuntimeCode,
    rings: &RingBases,
    postamble: bool,
    last: u32,
) -> Code {
    let mut code = Code::default();
    for part in parts {
        let at = code.records.len() as u32;
        match part {
            Part::Known(v) => code.records.extend(v),
            Part::Filler(n) => {
                code.records
                    .extend((at..at + n).map(|s| regs::filler(c.line, c.engine, postamble, s)));
                match code.filler.last_mut() {
                    Some(last) if last.end == at => last.end += n,
                    _ if n > 0 => code.filler.push(at..at + n),
                    _ => {}
                }
            }
            Part::QueueBlocks => {
                for q in &c.queues {
                    let bases = rings.queues.get(q.ring).copied().flatten();
                    code.records.extend(regs::queue_block(&c.window, q, bases));
                }
            }
            Part::TableBlock(t) => {
                let bases = match t {
                    TableLoad::Act => rings.act_table,
                    TableLoad::Dve => rings.dve_table,
                };
                code.records.extend(regs::table_block(&c.window, t, bases));
            }
            Part::QueueResets => {
                for q in &c.queues {
                    code.records.extend(regs::queue_resets(&c.window, q));
                }
            }
            Part::Branch { template, to } => code.records.push(regs::branch(&template, to, last)),
        }
    }
    code
}

impl RuntimeCode {
    /// Slots the runtime puts before the NEFF's first record.
    pub fn preamble_slots(&self) -> u32 {
        slots(&self.line.rules().preamble(self), self)
    }

    /// Slots after the NEFF's last kept record.
    pub fn postamble_slots(&self) -> u32 {
        let rules = self.line.rules();
        slots(&rules.postamble(self, self.preamble_slots()), self)
    }

    /// Instruction memory the runtime keeps beside the image.
    pub fn fixed_block(&self) -> u64 {
        self.line.fixed_block(self.engine, self.role)
    }

    /// The preamble, its queue and table blocks pointing at `rings`.
    pub fn preamble(&self, rings: &RingBases) -> Code {
        assemble(self.line.rules().preamble(self), self, rings, false, 0)
    }

    /// The postamble of an image whose NEFF part is `main_slots` long.
    pub fn postamble(&self, main_slots: u32) -> Code {
        let rules = self.line.rules();
        let pre = self.preamble_slots();
        let parts = rules.postamble(self, pre);
        let last = (pre + main_slots + slots(&parts, self)).saturating_sub(1);
        assemble(parts, self, &RingBases::default(), true, last)
    }
}

/// Preamble and postamble slot counts per engine, in [`EngineType::ALL`]
/// order (pe, act, pool, dve, sp).
type PerEngine = [u32; 5];

fn of(table: PerEngine, engine: EngineType) -> u32 {
    table[engine.index()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_from_names_and_versions() {
        assert_eq!("2.27".parse(), Ok(RuntimeLine::V2_27));
        assert_eq!("2.27.23".parse(), Ok(RuntimeLine::V2_27));
        assert_eq!("2.30.51".parse(), Ok(RuntimeLine::V2_30));
        assert_eq!(" 2.23.27 ".parse(), Ok(RuntimeLine::V2_23));
        for bad in [
            "2.26",
            "3.0",
            "2",
            "2.x",
            "",
            "2.27.",
            "v2.27",
            "2.27.1 2",
            "2.27.x",
            "2.27.1.2.3",
        ] {
            let e = bad.parse::<RuntimeLine>().unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
        }
        assert_eq!(RuntimeLine::V2_25.to_string(), "2.25");
        assert_eq!(RuntimeLine::of_version(2, 30), Some(RuntimeLine::V2_30));
        assert_eq!("2.34.10".parse(), Ok(RuntimeLine::V2_34));
        assert_eq!(RuntimeLine::of_version(2, 33), Some(RuntimeLine::V2_33));
        assert_eq!(RuntimeLine::of_version(2, 26), None);
        let e = "2.26".parse::<RuntimeLine>().unwrap_err();
        let every = RuntimeLine::ALL.map(|l| l.to_string()).join(", ");
        assert!(e.contains(&every) && every.starts_with("2.23, 2.25, 2.27, 2.30, 2.31"), "{e}");
        let (major, minor) = RuntimeLine::NEWEST.version();
        assert_eq!(RuntimeLine::of_version(major.into(), u64::from(minor) + 1), None);
        assert_eq!(RuntimeLine::NEWEST, *RuntimeLine::ALL.last().unwrap());
    }

    /// A line without captures follows the newest captured line of its
    /// chip; a captured line follows itself.
    #[test]
    fn newer_lines_carry_over_the_newest_captured_rules_of_their_chip() {
        for line in RuntimeLine::ALL.into_iter().filter(|&l| l > RuntimeLine::V2_30) {
            assert_eq!(line.captured(Arch::Sunda), Captured::V2_23);
            assert_eq!(line.captured(Arch::Cayman), Captured::V2_30);
            assert_eq!(line.captured(Arch::Mariana), Captured::V2_30);
            let p = line.provenance(Arch::Cayman);
            assert_eq!(p.captured_by, RuntimeLine::V2_30);
            assert!(!p.carried_over.is_empty());
            assert_eq!(p.documented.is_empty(), line == RuntimeLine::V2_31);
            assert_eq!(p.notes.first().map(|n| n.line), Some(RuntimeLine::V2_31));
            assert_eq!(p.notes.last().map(|n| n.line), Some(line));
        }
        for c in [Captured::V2_23, Captured::V2_25, Captured::V2_27, Captured::V2_30] {
            for arch in [Arch::Sunda, Arch::Cayman, Arch::Mariana] {
                assert_eq!(c.line().captured(arch), c);
                // Its own captures only on the chip they were taken on.
                let p = c.line().provenance(arch);
                assert_eq!(p.carried_over.is_empty(), arch == c.chip(), "{c:?} {arch:?}");
                assert_eq!(p.captured_on, c.chip().instance());
            }
        }
        assert_eq!(Captured::V2_23.chip(), Arch::Sunda);
        assert_eq!(Captured::V2_30.chip(), Arch::Cayman);
        assert!(RuntimeLine::V2_31.virtual_placement());
        assert!(!RuntimeLine::V2_32.virtual_placement());
    }

    #[test]
    fn the_ring_formula() {
        // One queue of pool IO blocks: 3 and 9 per ring, 16 rings.
        assert_eq!(ring_formula(16, 9, 3), 16 * 16 * (64 + 64));
        // 40 descriptors per ring: cap = roundup16(56) = 64; 50: 80.
        assert_eq!(ring_formula(16, 40, 50), 16 * 16 * (64 + 80));
    }
}
