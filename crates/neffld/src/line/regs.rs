//! What every runtime line writes the same way: the DMA register windows of
//! a core, the runtime's register-write records, and the records built from
//! them — the rewritten DMA trigger, a queue's preamble block and its
//! postamble resets, the table-load block, the final branch — and the
//! filler that stands for runtime bytes nobody has seen (docs/decisions.md,
//! "Runtime lines"; the figures are the spec's rules, fitted and checked on
//! real captures of runtimes 2.23, 2.25 and 2.27).
//!
//! A queue's registers sit in a 4 KiB block per queue index: `0x1000 ·
//! (q_idx + 1)` above a window, the M2S side (reads) at the window and the
//! S2M side (writes) `0x20000` above it. In a block, `+0x28` is the ring
//! base, `+0x30` the ring size, `+0x38` the tail-pointer increment that
//! starts descriptors, `+0x64` (S2M) and `+0xb0` (M2S) the resets.

use crate::device::Geometry;
use crate::ids::PCore;
use crate::kbin::RingCounts;
use crate::manifest::engine::EngineType;
use crate::Arch;

use super::Captured;

/// One instruction record.
pub type Record = [u8; RECORD];

pub const RECORD: usize = 64;

/// The runtime's register write: one or two 32-bit writes (widths at bytes
/// 12 and 13, 0 = absent), addresses in words 2 and 3, data in words 4
/// and 5.
pub const OP_WRITE: u8 = 0xA5;

/// The runtime's strided write of four registers of four consecutive DMA
/// engines: the first register in word 2, the stride and kind in word 3,
/// the four values in words 4 to 7.
pub const OP_WRITE4: u8 = 0xAB;

/// Where the runtime's branch (0xA9) keeps its 32-bit slot offset (in bytes).
pub const BRANCH_OFFSET: usize = 48;

/// The queue index of the runtime's own queues (the table loads).
pub const RUNTIME_QUEUE: u32 = 14;

const QUEUE_STRIDE: u64 = 0x1000;
const S2M: u64 = 0x2_0000;
const RING_BASE: u64 = 0x28;
const RING_SIZE: u64 = 0x30;
const TAIL_INCREMENT: u64 = 0x38;
const RESET_S2M: u64 = 0x64;
const RESET_M2S: u64 = 0xb0;
/// What the reset writes put in both registers.
const RESET_VALUE: u64 = 0x100;
/// What every ring-size register of a queue block gets.
const RING_SIZE_VALUE: u64 = 0x00ff_fff0_00ff_fff0;

/// Bytes 1..16 of the runtime's own register writes (as in every 2.30
/// preamble): flags `0x10`, then zeros up to the widths.
const WRITE_HEADER: [u8; 11] = [0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/// Bytes 12..16 of a strided write (as in the 2.30 table-load blocks).
const WRITE4_FLAGS: [u8; 4] = [0x09, 0x01, 0x02, 0x01];

/// The DMA register windows of one physical core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaWindow {
    /// The broadcast window that triggers, resets and S2M posts address
    /// (`W`): one write there reaches the queue on all sixteen DMA engines.
    pub broadcast: u64,
    /// DMA engine 0's register window; engine `k` is `k · engine_stride`
    /// above it.
    pub engines: u64,
    pub engine_stride: u64,
}

impl DmaWindow {
    /// The windows of `pcore`. The captures show trn1 core 0
    /// (`0x0ffff1000000`) and trn2 core 4 (`0x801002080000`, the first core
    /// of its HBM channel); the second core of a trn2 channel writes its
    /// engine registers 16 MiB higher (`0x801003…`). Like the rest of the
    /// runtime's addresses (`device/address.rs`), the windows are taken to
    /// depend only on the core's place in its HBM channel, which extends
    /// them to every core: each trn1 core has a channel of its own and gets
    /// core 0's windows, trn2 and trn3 cores get core 4's or core 5's
    /// (docs/decisions.md, "Runtime lines").
    pub fn of(geometry: &Geometry, pcore: PCore) -> DmaWindow {
        let place = u64::from(pcore.0 % geometry.cores_per_hbm().max(1));
        match geometry.arch() {
            Arch::Sunda => DmaWindow {
                broadcast: 0x0fff_f100_0000,
                engines: 0x0fff_f000_0000,
                engine_stride: 0x4_0000,
            },
            Arch::Cayman | Arch::Mariana => {
                let engines = 0x8010_0200_0000 + place * 0x100_0000;
                DmaWindow {
                    broadcast: engines + 0x8_0000,
                    engines,
                    engine_stride: 0x10_0000,
                }
            }
        }
    }

    /// The window of DMA engine `k`.
    pub fn engine(&self, k: u64) -> u64 {
        self.engines + k * self.engine_stride
    }
}

/// Register `offset` of queue `q_idx`'s block above `window`.
fn reg(window: u64, q_idx: u32, offset: u64) -> u64 {
    window + QUEUE_STRIDE * (u64::from(q_idx) + 1) + offset
}

fn put(r: &mut Record, word: usize, value: u64) {
    r[word * 8..word * 8 + 8].copy_from_slice(&value.to_le_bytes());
}

/// A register write of one or two registers, `header` being its bytes
/// 1..12.
fn write(header: &[u8; 11], first: (u64, u64), second: Option<(u64, u64)>) -> Record {
    let mut r = [0u8; RECORD];
    r[0] = OP_WRITE;
    r[1..12].copy_from_slice(header);
    r[12] = 4;
    put(&mut r, 2, first.0);
    put(&mut r, 4, first.1);
    if let Some((addr, data)) = second {
        r[13] = 4;
        put(&mut r, 3, addr);
        put(&mut r, 5, data);
    }
    r
}

/// What the trigger of one block writes, from the sealed kbin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trigger {
    /// The queue's index ([`crate::kbin::DmaRing::q_idx`]).
    pub q_idx: u32,
    /// A data queue (spill and reload): only its M2S side is kicked.
    pub data: bool,
    pub counts: RingCounts,
}

/// The runtime's rewrite of a `0xC1` DMA trigger (every line that was
/// captured with one): its instruction header (bytes 1..12) kept, the
/// queue name and block id replaced by the tail-increment writes that
/// start the block on every ring of the queue. An IO queue kicks both
/// sides, S2M first (words 2/4) then M2S (3/5); a data queue kicks only
/// M2S, its S2M side being posted once in the preamble.
pub fn trigger(neff: &Record, w: &DmaWindow, t: &Trigger) -> Record {
    let mut header = [0u8; 11];
    header.copy_from_slice(&neff[1..12]);
    let count = |n: u64| n.min(u64::from(u32::MAX));
    let m2s = (
        reg(w.broadcast, t.q_idx, TAIL_INCREMENT),
        count(t.counts.m2s),
    );
    if t.data {
        write(&header, m2s, None)
    } else {
        let s2m = (
            reg(w.broadcast + S2M, t.q_idx, TAIL_INCREMENT),
            count(t.counts.s2m),
        );
        write(&header, s2m, Some(m2s))
    }
}

/// One queue an engine owns, as its preamble and postamble set it up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnedQueue {
    /// Its ring in [`crate::kbin::Kbin::dma_rings`].
    pub ring: usize,
    pub q_idx: u32,
    pub data: bool,
    /// Σ over its blocks of the per-ring S2M counts: what a data queue
    /// posts on its S2M side once.
    pub s2m_total: u64,
    /// The ring bases the preamble fills: for an IO queue the state-buffer
    /// side only, for a data queue both.
    pub m2s_base: bool,
    pub s2m_base: bool,
}

impl OwnedQueue {
    /// Preamble slots of its block: a reset, twelve ring writes, and for a
    /// data queue the S2M post.
    pub fn block_slots(&self) -> u32 {
        if self.data {
            14
        } else {
            13
        }
    }

    /// Postamble slots: the reset, and for a data queue the S2M re-post.
    pub fn reset_slots(&self) -> u32 {
        if self.data {
            2
        } else {
            1
        }
    }
}

/// A ring's two bases (M2S, S2M) in the runtime's address form.
pub type Bases = (u64, u64);

fn reset(w: &DmaWindow, q_idx: u32) -> Record {
    write(
        &WRITE_HEADER,
        (reg(w.broadcast + S2M, q_idx, RESET_S2M), RESET_VALUE),
        Some((reg(w.broadcast, q_idx, RESET_M2S), RESET_VALUE)),
    )
}

fn s2m_post(w: &DmaWindow, q: &OwnedQueue) -> Record {
    write(
        &WRITE_HEADER,
        (reg(w.broadcast + S2M, q.q_idx, TAIL_INCREMENT), q.s2m_total),
        None,
    )
}

/// A strided write of one register of four consecutive DMA engines from
/// `first` on.
fn write4(w: &DmaWindow, first: u64, size: bool, values: [u64; 4]) -> Record {
    let mut r = [0u8; RECORD];
    r[0] = OP_WRITE4;
    r[1] = 0x10;
    r[12..16].copy_from_slice(&WRITE4_FLAGS);
    put(&mut r, 2, first);
    let kind = if size { 0x8000 } else { 1 };
    put(&mut r, 3, ((w.engine_stride / 0x4_0000) << 48) | kind);
    for (i, v) in values.into_iter().enumerate() {
        put(&mut r, 4 + i, v);
    }
    r
}

/// A queue's preamble block: the reset, then for each group of four DMA
/// engines (0, 4, 8, 12) its M2S ring bases, its S2M ring bases and its
/// ring sizes, then for a data queue the S2M post of the whole queue.
///
/// The runtime spreads a queue over sixteen rings, one per DMA engine, at
/// addresses its allocator picks; neffld keeps a queue's descriptors in one
/// ring (`relocate/dma.rs`), whose bases go to DMA engine 0 — the other
/// fifteen are written 0. `bases` is `None` for a queue without a ring.
pub fn queue_block(w: &DmaWindow, q: &OwnedQueue, bases: Option<Bases>) -> Vec<Record> {
    let mut v = Vec::with_capacity(q.block_slots() as usize);
    v.push(reset(w, q.q_idx));
    let (m2s, s2m) = bases.unwrap_or((0, 0));
    let m2s = if q.m2s_base { m2s } else { 0 };
    let s2m = if q.s2m_base { s2m } else { 0 };
    for g in 0..4u64 {
        let group = w.engine(4 * g);
        let first = |base: u64| if g == 0 { [base, 0, 0, 0] } else { [0; 4] };
        v.push(write4(w, reg(group, q.q_idx, RING_BASE), false, first(m2s)));
        v.push(write4(
            w,
            reg(group + S2M, q.q_idx, RING_BASE),
            false,
            first(s2m),
        ));
        v.push(write4(
            w,
            reg(group, q.q_idx, RING_SIZE),
            true,
            [RING_SIZE_VALUE; 4],
        ));
    }
    if q.data {
        v.push(s2m_post(w, q));
    }
    v
}

/// A queue's postamble slots: the reset, and for a data queue the S2M
/// re-post.
pub fn queue_resets(w: &DmaWindow, q: &OwnedQueue) -> Vec<Record> {
    let mut v = vec![reset(w, q.q_idx)];
    if q.data {
        v.push(s2m_post(w, q));
    }
    v
}

/// Which table a table-load block loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableLoad {
    /// The activation tables: DMA engine 9, kick 5.
    Act,
    /// The DVE tables: DMA engine 10, kick 6.
    Dve,
}

impl TableLoad {
    fn engine(self) -> u64 {
        match self {
            TableLoad::Act => 9,
            TableLoad::Dve => 10,
        }
    }

    fn kick(self) -> u64 {
        match self {
            TableLoad::Act => 5,
            TableLoad::Dve => 6,
        }
    }
}

/// Slots of a table-load block.
pub const TABLE_BLOCK_SLOTS: u32 = 5;

/// The table-load block of the lines before 2.30 (5 slots): the runtime
/// queue's reset, the ring bases and size of its ring on the table's DMA
/// engine, and the kick that starts the load.
pub fn table_block(w: &DmaWindow, table: TableLoad, bases: Option<Bases>) -> Vec<Record> {
    let engine = w.engine(table.engine());
    let (m2s, s2m) = bases.unwrap_or((0, 0));
    let q = RUNTIME_QUEUE;
    vec![
        reset(w, q),
        write4(w, reg(engine, q, RING_BASE), false, [m2s, 0, 0, 0]),
        write4(w, reg(engine + S2M, q, RING_BASE), false, [s2m, 0, 0, 0]),
        write4(
            w,
            reg(engine, q, RING_SIZE),
            true,
            [RING_SIZE_VALUE, 0, 0, 0],
        ),
        write(
            &WRITE_HEADER,
            (reg(engine + S2M, q, TAIL_INCREMENT), table.kick()),
            Some((reg(engine, q, TAIL_INCREMENT), table.kick())),
        ),
    ]
}

/// `template` (a final branch) aimed from slot `last` back at slot `to`:
/// `(to − last) · 64` at bytes 48..52.
pub fn branch(template: &Record, to: u32, last: u32) -> Record {
    let mut r = *template;
    let offset = (i64::from(to) - i64::from(last)) * RECORD as i64;
    let offset = i32::try_from(offset).unwrap_or(i32::MIN);
    r[BRANCH_OFFSET..BRANCH_OFFSET + 4].copy_from_slice(&offset.to_le_bytes());
    r
}

/// The first bytes of a filler slot: `0xFF` (no opcode of either the NEFF
/// or the runtime) and `neffld?`.
pub const FILLER_MAGIC: [u8; 8] = *b"\xffneffld?";

/// A slot of runtime code whose bytes are not known: [`FILLER_MAGIC`],
/// then the line (major, minor), the engine index, the section (0 the
/// preamble, 1 the postamble) and the slot's index in it (u16), zeros
/// after. Recognisable on sight and by [`is_filler`]; never executable.
pub fn filler(line: Captured, engine: EngineType, postamble: bool, slot: u32) -> Record {
    let mut r = [0u8; RECORD];
    r[..8].copy_from_slice(&FILLER_MAGIC);
    let (major, minor) = line.version();
    r[8] = major;
    r[9] = minor;
    r[10] = engine.index() as u8;
    r[11] = u8::from(postamble);
    r[12..14].copy_from_slice(&(slot.min(u32::from(u16::MAX)) as u16).to_le_bytes());
    r
}

/// True for a slot [`filler`] made.
#[cfg(any(test, feature = "testkit"))]
pub fn is_filler(slot: &[u8]) -> bool {
    slot.starts_with(&FILLER_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(r: &Record, w: usize) -> u64 {
        u64::from_le_bytes(r[w * 8..w * 8 + 8].try_into().unwrap())
    }

    fn trn1_core0() -> DmaWindow {
        DmaWindow::of(&Geometry::for_arch(Arch::Sunda), PCore(0))
    }

    #[test]
    fn windows_follow_the_core_place_in_its_channel() {
        let trn2 = Geometry::for_arch(Arch::Cayman);
        // The captured ones: trn1 core 0, trn2 core 4 (and core 5's engines).
        assert_eq!(trn1_core0().broadcast, 0x0fff_f100_0000);
        assert_eq!(DmaWindow::of(&trn2, PCore(4)).broadcast, 0x8010_0208_0000);
        assert_eq!(DmaWindow::of(&trn2, PCore(5)).engines, 0x8010_0300_0000);
        // Extended by the geometry.
        assert_eq!(
            DmaWindow::of(&trn2, PCore(0)),
            DmaWindow::of(&trn2, PCore(4))
        );
        assert_eq!(
            DmaWindow::of(&trn2, PCore(7)),
            DmaWindow::of(&trn2, PCore(5))
        );
        let trn1 = Geometry::for_arch(Arch::Sunda);
        assert_eq!(DmaWindow::of(&trn1, PCore(1)), trn1_core0());
        // The groups of four engines: trn1 0x100000 apart, trn2 0x400000.
        assert_eq!(trn1_core0().engine(4), 0x0fff_f010_0000);
        assert_eq!(DmaWindow::of(&trn2, PCore(4)).engine(4), 0x8010_0240_0000);
    }

    #[test]
    fn a_data_trigger_kicks_m2s_only() {
        let neff = [0x11u8; 64];
        let t = Trigger {
            q_idx: 1,
            data: true,
            counts: RingCounts {
                m2s: 17,
                s2m: 9,
                ruled: true,
            },
        };
        let r = trigger(&neff, &trn1_core0(), &t);
        assert_eq!(r[0], 0xA5);
        assert_eq!(&r[1..12], &[0x11; 11]);
        assert_eq!(&r[12..16], &[4, 0, 0, 0]);
        // W + 0x1000·(1+1) + 0x38.
        assert_eq!(word(&r, 2), 0x0fff_f100_2038);
        assert_eq!((word(&r, 3), word(&r, 4), word(&r, 5)), (0, 17, 0));
        assert_eq!((word(&r, 6), word(&r, 7)), (0, 0));
    }

    #[test]
    fn a_queue_block_is_a_reset_twelve_ring_writes_and_a_post() {
        let w = trn1_core0();
        let q = OwnedQueue {
            ring: 0,
            q_idx: 0,
            data: true,
            s2m_total: 0x2d,
            m2s_base: true,
            s2m_base: true,
        };
        let b = queue_block(&w, &q, Some((0x10_0000, 0x20_0000)));
        assert_eq!(b.len(), 14);
        // Reset: S2M +0x064 and M2S +0x0b0 of queue 0, both 0x100.
        assert_eq!(
            (
                word(&b[0], 2),
                word(&b[0], 3),
                word(&b[0], 4),
                word(&b[0], 5)
            ),
            (0x0fff_f102_1064, 0x0fff_f100_10b0, 0x100, 0x100)
        );
        // Group 1 (engines 4..7): M2S base, S2M base, size, at G_1.
        assert_eq!(word(&b[4], 2), 0x0fff_f010_1028);
        assert_eq!(word(&b[5], 2), 0x0fff_f012_1028);
        assert_eq!(word(&b[6], 2), 0x0fff_f010_1030);
        assert_eq!(word(&b[4], 3), 0x0001_0000_0000_0001);
        assert_eq!(word(&b[6], 3), 0x0001_0000_0000_8000);
        assert_eq!(word(&b[6], 7), 0x00ff_fff0_00ff_fff0);
        assert_eq!(word(&b[1], 4), 0x10_0000, "engine 0's M2S base");
        assert_eq!(word(&b[2], 4), 0x20_0000, "engine 0's S2M base");
        // The post: S2M tail increment of queue 0 gets the queue's total.
        assert_eq!((word(&b[13], 2), word(&b[13], 4)), (0x0fff_f102_1038, 0x2d));
        assert_eq!(b[13][13], 0, "one write");
        assert_eq!(queue_resets(&w, &q), vec![b[0], b[13]]);
    }

    #[test]
    fn filler_names_line_engine_section_and_slot() {
        let f = filler(Captured::V2_27, EngineType::Pool, true, 7);
        assert!(is_filler(&f));
        assert_eq!(&f[8..14], &[2, 27, 2, 1, 7, 0]);
        assert!(!is_filler(&[0xA5; 64]));
    }
}
