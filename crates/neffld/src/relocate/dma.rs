//! DMA rings: static descriptor blocks → UDMA descriptor pairs (stage.md §8.2).
//!
//! Each access pattern of a block is walked into contiguous runs (the
//! innermost size is a byte count, higher sizes repeat with byte strides);
//! every run becomes one TX descriptor (reads the source) and one RX
//! descriptor (writes the destination), chunked at 64 KiB with
//! FIRST/CONCAT/LAST. Endpoints that are model inputs or outputs are not
//! allocated at load, so their descriptors carry a *template* pointer
//! (bit 61, var_id in 54:36, offset in 35:0) that execution resolves; every
//! other endpoint is an absolute device address.
//!
//! This module is pure: addresses come in as [`Target`]s, bytes come out.

use super::RelocError;
use crate::fallible;
use crate::ids::VarId;

/// Largest transfer one descriptor moves (`len` 0 encodes 65536).
pub const MAX_DESC_LEN: u64 = 1 << 16;
/// Size of one encoded descriptor.
pub const DESC_BYTES: u64 = 16;

pub mod len_ctrl {
    pub const META: u32 = 1 << 23;
    pub const FIRST: u32 = 1 << 26;
    pub const LAST: u32 = 1 << 27;
    pub const INT_EN: u32 = 1 << 28;
    /// Strong-ordered write (RX, v3 and later): the barrier on cayman/mariana.
    pub const SOW: u32 = 1 << 29;
    /// Data memory barrier: the barrier on sunda.
    pub const DMB: u32 = 1 << 30;
    pub const CONCAT: u32 = 1 << 31;
}

/// TX `meta_ctrl` of a plain copy: first/last block, copy source data, op 0b010.
pub const META_CTRL_DEFAULT: u32 = 0x0108_0003;
/// Bits 11:8 of `meta_ctrl` carry the block's operation when it is not a
/// copy. The reference encoding of DMA compute ops is not known; this field
/// is ours, so a simulator can tell a cast or transpose from a copy.
pub const META_CTRL_OP_SHIFT: u32 = 8;

/// Template pointers: resolved per execution from the bound IO tensors.
pub const TEMPLATE_BIT: u64 = 1 << 61;
pub const TEMPLATE_VAR_BITS: u32 = 19;
pub const TEMPLATE_OFFSET_BITS: u32 = 36;

/// Encodes a template pointer to byte `offset` of IO variable `var`.
pub fn template(var: VarId, offset: u64) -> Result<u64, RelocError> {
    if u64::from(var.0) >= 1 << TEMPLATE_VAR_BITS || offset >= 1 << TEMPLATE_OFFSET_BITS {
        return Err(RelocError::TemplateRange { var: var.0, offset });
    }
    Ok(TEMPLATE_BIT | (u64::from(var.0) << TEMPLATE_OFFSET_BITS) | offset)
}

/// The `(var, offset)` of a template pointer, or `None` for an absolute one.
pub fn decode_template(ptr: u64) -> Option<(VarId, u64)> {
    (ptr & TEMPLATE_BIT != 0).then(|| {
        let var = (ptr >> TEMPLATE_OFFSET_BITS) & ((1 << TEMPLATE_VAR_BITS) - 1);
        (VarId(var as u32), ptr & ((1 << TEMPLATE_OFFSET_BITS) - 1))
    })
}

/// Where a run of bytes lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A device address fixed at load.
    Abs(u64),
    /// Byte `offset` of an input/output variable, bound at execution.
    Io { var: VarId, offset: u64 },
    /// The padding slot of the ring being built (self-copies).
    RingPad,
}

impl Target {
    fn plus(self, delta: u64) -> Result<Target, RelocError> {
        let overflow = RelocError::AddressOverflow;
        Ok(match self {
            Target::Abs(a) => Target::Abs(a.checked_add(delta).ok_or(overflow)?),
            Target::Io { var, offset } => Target::Io {
                var,
                offset: offset.checked_add(delta).ok_or(overflow)?,
            },
            Target::RingPad => Target::RingPad,
        })
    }

    fn buf_ptr(self, ring_pad: u64) -> Result<u64, RelocError> {
        match self {
            Target::Abs(a) => Ok(a),
            Target::Io { var, offset } => template(var, offset),
            Target::RingPad => Ok(ring_pad),
        }
    }
}

/// One 16-byte UDMA descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub len_ctrl: u32,
    pub meta_ctrl: u32,
    pub buf_ptr: u64,
}

impl Descriptor {
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&self.len_ctrl.to_le_bytes());
        b[4..8].copy_from_slice(&self.meta_ctrl.to_le_bytes());
        b[8..].copy_from_slice(&self.buf_ptr.to_le_bytes());
        b
    }

    pub fn from_bytes(b: &[u8; 16]) -> Descriptor {
        Descriptor {
            len_ctrl: u32::from_le_bytes(b[..4].try_into().expect("4 bytes")),
            meta_ctrl: u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")),
            buf_ptr: u64::from_le_bytes(b[8..].try_into().expect("8 bytes")),
        }
    }

    /// Bytes moved (the 16-bit field, 0 meaning 65536).
    pub fn len(&self) -> u64 {
        match self.len_ctrl & 0xFFFF {
            0 => MAX_DESC_LEN,
            n => u64::from(n),
        }
    }

    pub fn is_empty(&self) -> bool {
        false
    }
}

/// The operation of a block's descriptors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescOp {
    Copy = 0,
    Cast = 1,
    Transpose = 2,
    Fma = 3,
    Add = 4,
    Min = 5,
    Max = 6,
}

/// One side of a static descriptor: a base target and its access pattern.
#[derive(Clone, Copy, Debug)]
pub struct Pattern<'a> {
    pub target: Target,
    /// `sizes[0]` is the contiguous run in bytes; higher entries are repeat counts.
    pub sizes: &'a [u64],
    /// `steps[k]` is the byte stride of dimension `k` (`steps[0]` is 1 in real files).
    pub steps: &'a [u64],
}

/// Bound on the runs one pattern may expand into, so a hostile pattern
/// cannot make the loader build billions of descriptors.
pub const MAX_RUNS_PER_PATTERN: u64 = 1 << 24;

/// Descriptors one ring (each of its TX and RX halves) may hold: the
/// reference's host-side vrings stop at 16,777,200 (stage.md §8.2).
pub const MAX_RING_DESCRIPTORS: u64 = 16_777_200;

impl Pattern<'_> {
    fn run_count(&self) -> Result<u64, RelocError> {
        if self.sizes.is_empty() || self.sizes.len() != self.steps.len() || self.sizes.contains(&0)
        {
            return Err(RelocError::BadPattern(
                "sizes and steps must be non-empty, of equal length, with no 0 size".into(),
            ));
        }
        let mut n: u64 = 1;
        for &s in &self.sizes[1..] {
            n = n
                .checked_mul(s)
                .filter(|&n| n <= MAX_RUNS_PER_PATTERN)
                .ok_or_else(|| {
                    RelocError::BadPattern(format!(
                        "more than {MAX_RUNS_PER_PATTERN} contiguous runs"
                    ))
                })?;
        }
        Ok(n)
    }

    /// Descriptors the pattern expands into (runs times 64 KiB chunks per
    /// run), computed without expanding it.
    fn desc_count(&self) -> Result<u64, RelocError> {
        let runs = self.run_count()?;
        Ok(runs.saturating_mul(self.sizes[0].div_ceil(MAX_DESC_LEN)))
    }

    /// `(byte offset from the base, run length)` of every contiguous run,
    /// innermost dimension fastest.
    fn runs(&self) -> Result<Vec<(u64, u64)>, RelocError> {
        let n = self.run_count()?;
        let mut out = fallible::with_capacity(n as usize, "DMA runs")?;
        let outer = &self.sizes[1..];
        let mut idx = vec![0u64; outer.len()];
        for _ in 0..n {
            let mut delta: u64 = 0;
            for (k, &i) in idx.iter().enumerate() {
                delta = i
                    .checked_mul(self.steps[k + 1])
                    .and_then(|d| delta.checked_add(d))
                    .ok_or(RelocError::AddressOverflow)?;
            }
            out.push((delta, self.sizes[0]));
            for (k, i) in idx.iter_mut().enumerate() {
                *i += 1;
                if *i < outer[k] {
                    break;
                }
                *i = 0;
            }
        }
        Ok(out)
    }
}

/// How the last descriptor of a block orders its writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Barrier {
    /// DMB on the last TX descriptor (sunda).
    Dmb,
    /// Strong-ordered write on the last RX descriptor (v3 and later).
    Sow,
}

/// A descriptor before its ring is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    pub target: Target,
    pub len: u64,
    /// `len_ctrl` flag bits (FIRST, LAST, CONCAT, barriers).
    pub flags: u32,
    pub op: DescOp,
}

/// The TX and RX descriptors of one block (equal counts: they are pairs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockDescriptors {
    pub tx: Vec<Pending>,
    pub rx: Vec<Pending>,
}

/// Splits one run into ≤ 64 KiB chunks with FIRST / CONCAT / LAST.
fn chunk(target: Target, len: u64, op: DescOp, out: &mut Vec<Pending>) -> Result<(), RelocError> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(MAX_DESC_LEN);
        let mut flags = 0;
        if done == 0 {
            flags |= len_ctrl::FIRST;
        } else {
            flags |= len_ctrl::CONCAT;
        }
        if done + n == len {
            flags |= len_ctrl::LAST;
        }
        out.push(Pending {
            target: target.plus(done)?,
            len: n,
            flags,
            op,
        });
        done += n;
    }
    Ok(())
}

/// Expands the descriptors of one block into TX/RX pairs. Runs of the two
/// sides pair up one to one; when their counts differ (DMA transposes,
/// whose device semantics are not documented) each side keeps its own runs
/// and the shorter side is padded with self-copies so pairs stay aligned.
pub fn expand_block(
    descs: &[(Pattern<'_>, Pattern<'_>, DescOp)],
) -> Result<BlockDescriptors, RelocError> {
    expand_block_within(descs, MAX_RING_DESCRIPTORS)
}

/// [`expand_block`] for a ring with room for `room` more descriptors: a
/// block that would not fit is refused before anything is expanded.
pub fn expand_block_within(
    descs: &[(Pattern<'_>, Pattern<'_>, DescOp)],
    room: u64,
) -> Result<BlockDescriptors, RelocError> {
    let mut count: u64 = 0;
    for (from, to, _) in descs {
        let pairs = from.desc_count()?.max(to.desc_count()?);
        count = count.saturating_add(pairs);
    }
    if count > room {
        return Err(RelocError::RingFull {
            count: count.saturating_add(MAX_RING_DESCRIPTORS - room.min(MAX_RING_DESCRIPTORS)),
            max: MAX_RING_DESCRIPTORS,
        });
    }
    let mut out = BlockDescriptors::default();
    fallible::reserve(&mut out.tx, count as usize, "DMA descriptors")?;
    fallible::reserve(&mut out.rx, count as usize, "DMA descriptors")?;
    for (from, to, op) in descs {
        let (fr, tr) = (from.runs()?, to.runs()?);
        if fr.len() != tr.len() && *op != DescOp::Transpose {
            return Err(RelocError::BadPattern(format!(
                "source has {} runs, destination {} (only a transpose may differ)",
                fr.len(),
                tr.len()
            )));
        }
        if *op == DescOp::Copy {
            if let Some(((_, a), (_, b))) = fr.iter().zip(&tr).find(|((_, a), (_, b))| a != b) {
                return Err(RelocError::BadPattern(format!(
                    "a copy moves {a} bytes from and {b} bytes to"
                )));
            }
        }
        for (delta, len) in fr {
            chunk(from.target.plus(delta)?, len, *op, &mut out.tx)?;
        }
        for (delta, len) in tr {
            chunk(to.target.plus(delta)?, len, *op, &mut out.rx)?;
        }
        let pad = out.tx.len().max(out.rx.len());
        for side in [&mut out.tx, &mut out.rx] {
            while side.len() < pad {
                side.push(Pending {
                    target: Target::RingPad,
                    len: 4,
                    flags: len_ctrl::FIRST | len_ctrl::LAST,
                    op: *op,
                });
            }
        }
    }
    Ok(out)
}

/// Ring capacity for `n` descriptors (stage.md §8.2: fewer than 32 → 64;
/// otherwise linear rings of `round_up_16(n + 16)`).
pub fn ring_capacity(n: usize) -> usize {
    if n < 32 {
        64
    } else {
        (n + 16).div_ceil(16) * 16
    }
}

/// One queue's rings before placement: the blocks in trigger order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingBuilder {
    pairs: BlockDescriptors,
    /// `(block id, first descriptor, descriptor count)` in the order added.
    pub blocks: Vec<(u64, u32, u32)>,
}

/// A placed ring: bytes of the TX ring followed by the RX ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingImage {
    pub capacity: usize,
    pub bytes: Vec<u8>,
    pub blocks: Vec<(u64, u32, u32)>,
}

impl RingImage {
    /// TX descriptors then RX descriptors, decoded (tests and the validator).
    pub fn descriptors(&self) -> (Vec<Descriptor>, Vec<Descriptor>) {
        let all: Vec<Descriptor> = self
            .bytes
            .chunks_exact(16)
            .map(|c| Descriptor::from_bytes(c.try_into().expect("16 bytes")))
            .collect();
        let (tx, rx) = all.split_at(self.capacity.min(all.len()));
        (tx.to_vec(), rx.to_vec())
    }
}

impl RingBuilder {
    /// Appends a block; returns its first descriptor index.
    pub fn add_block(
        &mut self,
        id: u64,
        block: BlockDescriptors,
        barrier: Barrier,
    ) -> Result<u32, RelocError> {
        let first = self.pairs.tx.len();
        let count = block.tx.len();
        if count == 0 {
            return Err(RelocError::BadPattern(format!("block {id} moves nothing")));
        }
        let total = (first as u64).saturating_add(count as u64);
        if total > MAX_RING_DESCRIPTORS {
            return Err(RelocError::RingFull {
                count: total,
                max: MAX_RING_DESCRIPTORS,
            });
        }
        fallible::reserve(&mut self.pairs.tx, count, "a DMA ring")?;
        fallible::reserve(&mut self.pairs.rx, count, "a DMA ring")?;
        let mut block = block;
        match barrier {
            Barrier::Dmb => block.tx[count - 1].flags |= len_ctrl::DMB,
            Barrier::Sow => block.rx[count - 1].flags |= len_ctrl::SOW,
        }
        self.pairs.tx.extend(block.tx);
        self.pairs.rx.extend(block.rx);
        let (first, count) = (u32::try_from(first), u32::try_from(count));
        let full = |_| RelocError::RingFull {
            count: total,
            max: MAX_RING_DESCRIPTORS,
        };
        let (first, count) = (first.map_err(full)?, count.map_err(full)?);
        self.blocks.push((id, first, count));
        Ok(first)
    }

    pub fn len(&self) -> usize {
        self.pairs.tx.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.tx.is_empty()
    }

    /// Descriptors the ring can still take.
    pub fn room(&self) -> u64 {
        MAX_RING_DESCRIPTORS.saturating_sub(self.len() as u64)
    }

    /// Bytes the placed ring needs (TX and RX rings back to back).
    pub fn byte_size(&self) -> u64 {
        2 * ring_capacity(self.len()) as u64 * DESC_BYTES
    }

    /// Encodes the rings for placement at `pa`; padding slots and self-copies
    /// point at the ring's own first bytes.
    pub fn place(&self, pa: u64) -> Result<RingImage, RelocError> {
        let capacity = ring_capacity(self.len());
        let mut bytes =
            fallible::with_capacity(2 * capacity * DESC_BYTES as usize, "a DMA ring image")?;
        for (side, is_tx) in [(&self.pairs.tx, true), (&self.pairs.rx, false)] {
            for p in side {
                let meta_ctrl = if is_tx {
                    META_CTRL_DEFAULT | ((p.op as u32) << META_CTRL_OP_SHIFT)
                } else {
                    0
                };
                // len ≤ 65536 by construction; 65536 encodes as 0.
                let len_field = (p.len % MAX_DESC_LEN) as u32;
                let d = Descriptor {
                    len_ctrl: len_field | p.flags,
                    meta_ctrl,
                    buf_ptr: p.target.buf_ptr(pa)?,
                };
                bytes.extend_from_slice(&d.to_bytes());
            }
            for _ in side.len()..capacity {
                let meta_ctrl = if is_tx { META_CTRL_DEFAULT } else { 0 };
                let d = Descriptor {
                    len_ctrl: 4 | len_ctrl::FIRST | len_ctrl::LAST,
                    meta_ctrl,
                    buf_ptr: pa,
                };
                bytes.extend_from_slice(&d.to_bytes());
            }
        }
        Ok(RingImage {
            capacity,
            bytes,
            blocks: self.blocks.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(target: Target, sizes: &'static [u64], steps: &'static [u64]) -> Pattern<'static> {
        Pattern {
            target,
            sizes,
            steps,
        }
    }

    #[test]
    fn template_round_trip_and_limits() {
        let t = template(VarId(3), 0xF_0000_0000).unwrap();
        assert_eq!(t, (1 << 61) | (3 << 36) | 0xF_0000_0000);
        assert_eq!(decode_template(t), Some((VarId(3), 0xF_0000_0000)));
        assert_eq!(decode_template(0x1234), None);
        assert!(template(VarId(1 << 19), 0).is_err());
        assert!(template(VarId(1), 1 << 36).is_err());
    }

    #[test]
    fn a_weight_load_into_the_state_buffer() {
        // F1 example: file → SB, sizes [2,128] steps [1,256] → SB steps [1,262144].
        let from = pat(Target::Abs(0x100_0000), &[2, 128], &[1, 256]);
        let to = pat(
            Target::Abs(0x1_0000_0000_0000 + 87032),
            &[2, 128],
            &[1, 262144],
        );
        let b = expand_block(&[(from, to, DescOp::Copy)]).unwrap();
        assert_eq!(b.tx.len(), 128);
        assert_eq!(b.rx.len(), 128);
        assert_eq!(b.tx[1].target, Target::Abs(0x100_0000 + 256));
        assert_eq!(
            b.rx[127].target,
            Target::Abs(0x1_0000_0000_0000 + 87032 + 127 * 262144)
        );
        assert!(b
            .tx
            .iter()
            .all(|p| p.len == 2 && p.flags == len_ctrl::FIRST | len_ctrl::LAST));
    }

    #[test]
    fn long_runs_chunk_at_64k_and_io_becomes_templates() {
        let from = pat(
            Target::Io {
                var: VarId(1),
                offset: 100,
            },
            &[65536 + 33032],
            &[1],
        );
        let to = pat(Target::Abs(0x200_0000), &[65536 + 33032], &[1]);
        let mut ring = RingBuilder::default();
        let b = expand_block(&[(from, to, DescOp::Copy)]).unwrap();
        assert_eq!(b.tx.len(), 2);
        assert_eq!(b.tx[0].flags, len_ctrl::FIRST);
        assert_eq!(b.tx[1].flags, len_ctrl::CONCAT | len_ctrl::LAST);
        ring.add_block(0, b, Barrier::Sow).unwrap();
        let img = ring.place(0x900_0000).unwrap();
        assert_eq!(img.capacity, 64);
        assert_eq!(img.bytes.len(), 2 * 64 * 16);
        let (tx, rx) = img.descriptors();
        assert_eq!(tx[0].len(), 65536);
        assert_eq!(tx[0].len_ctrl & 0xFFFF, 0, "65536 encodes as 0");
        assert_eq!(tx[1].len(), 33032);
        assert_eq!(decode_template(tx[0].buf_ptr), Some((VarId(1), 100)));
        assert_eq!(
            decode_template(tx[1].buf_ptr),
            Some((VarId(1), 100 + 65536))
        );
        assert_eq!(tx[0].meta_ctrl, META_CTRL_DEFAULT);
        assert_eq!(rx[0].meta_ctrl, 0);
        assert_eq!(rx[1].buf_ptr, 0x200_0000 + 65536);
        assert!(
            rx[1].len_ctrl & len_ctrl::SOW != 0,
            "barrier on the last RX chunk"
        );
        assert!(rx[0].len_ctrl & len_ctrl::SOW == 0);
        // Padding: self-copies of 4 bytes at the ring itself.
        assert_eq!(tx[2].buf_ptr, 0x900_0000);
        assert_eq!(tx[2].len(), 4);
        assert_eq!(img.blocks, vec![(0, 0, 2)]);
    }

    #[test]
    fn casts_scale_and_copies_must_match() {
        let from = pat(Target::Abs(0x1000), &[444, 4], &[1, 444]);
        let to = pat(Target::Abs(0x9000), &[222, 4], &[1, 262144]);
        let b = expand_block(&[(from, to, DescOp::Cast)]).unwrap();
        assert_eq!((b.tx[0].len, b.rx[0].len), (444, 222));
        let e = expand_block(&[(from, to, DescOp::Copy)]).unwrap_err();
        assert!(e.to_string().contains("444"), "{e}");
        let mut ring = RingBuilder::default();
        ring.add_block(7, b, Barrier::Dmb).unwrap();
        let (tx, _) = ring.place(0x10_0000).unwrap().descriptors();
        assert_eq!(
            tx[0].meta_ctrl,
            META_CTRL_DEFAULT | (1 << META_CTRL_OP_SHIFT)
        );
        assert!(tx[3].len_ctrl & len_ctrl::DMB != 0);
    }

    #[test]
    fn transposes_with_different_run_counts_are_padded_into_pairs() {
        let from = pat(Target::Abs(0x1000), &[256, 4], &[1, 256]);
        let to = pat(Target::Abs(0x9000), &[2, 128, 4], &[1, 262144, 2]);
        let b = expand_block(&[(from, to, DescOp::Transpose)]).unwrap();
        assert_eq!(b.tx.len(), b.rx.len());
        assert_eq!(
            b.rx.iter().filter(|p| p.target != Target::RingPad).count(),
            512
        );
        assert_eq!(
            b.tx.iter().filter(|p| p.target == Target::RingPad).count(),
            508
        );
        let total_tx: u64 =
            b.tx.iter()
                .filter(|p| p.target != Target::RingPad)
                .map(|p| p.len)
                .sum();
        let total_rx: u64 =
            b.rx.iter()
                .filter(|p| p.target != Target::RingPad)
                .map(|p| p.len)
                .sum();
        assert_eq!(total_tx, total_rx);
    }

    #[test]
    fn ring_descriptor_limit_is_checked_before_expanding() {
        // 2^24 runs of 64 bytes (a 0 stride keeps them in bounds), and one
        // run of 2^40 bytes (2^24 chunks): each past the vring limit.
        let runs = pat(Target::Abs(0), &[64, 1 << 24], &[1, 0]);
        let long = pat(
            Target::Io {
                var: VarId(1),
                offset: 0,
            },
            &[1 << 40],
            &[1],
        );
        for p in [runs, long] {
            let t = std::time::Instant::now();
            let e = expand_block(&[(p, p, DescOp::Copy)]).unwrap_err();
            assert_eq!(
                e,
                RelocError::RingFull {
                    count: 1 << 24,
                    max: MAX_RING_DESCRIPTORS
                }
            );
            assert_eq!(e.status(), crate::NrtStatus::QueueFull);
            assert!(t.elapsed() < std::time::Duration::from_secs(1));
        }
        assert!(expand_block(&[(long, long, DescOp::Copy)])
            .unwrap_err()
            .to_string()
            .starts_with(
                "Descriptor limit reached. Descriptors in vring 16777216, Max allowed 16777200"
            ));
        // The limit is per ring: a block that fits alone does not fit a ring
        // with too little room left.
        let one = pat(Target::Abs(0), &[64, 3], &[1, 64]);
        assert_eq!(
            expand_block_within(&[(one, one, DescOp::Copy)], 3)
                .unwrap()
                .tx
                .len(),
            3
        );
        assert!(matches!(
            expand_block_within(&[(one, one, DescOp::Copy)], 2),
            Err(RelocError::RingFull { count, .. }) if count == MAX_RING_DESCRIPTORS + 1
        ));
    }

    #[test]
    fn hostile_patterns_are_bounded() {
        let huge = pat(Target::Abs(0), &[1, 1 << 20, 1 << 20], &[1, 1, 1]);
        assert!(matches!(
            expand_block(&[(huge, huge, DescOp::Copy)]),
            Err(RelocError::BadPattern(_))
        ));
        let zero = pat(Target::Abs(0), &[0], &[1]);
        assert!(expand_block(&[(zero, zero, DescOp::Copy)]).is_err());
        let wrap = pat(Target::Abs(u64::MAX - 10), &[4, 2], &[1, 100]);
        assert_eq!(
            expand_block(&[(wrap, wrap, DescOp::Copy)]).unwrap_err(),
            RelocError::AddressOverflow
        );
    }

    #[test]
    fn ring_capacity_rules() {
        assert_eq!(ring_capacity(0), 64);
        assert_eq!(ring_capacity(31), 64);
        assert_eq!(ring_capacity(32), 48);
        assert_eq!(ring_capacity(100), 128);
        assert_eq!(ring_capacity(112), 128);
        assert_eq!(ring_capacity(113), 144);
    }
}
