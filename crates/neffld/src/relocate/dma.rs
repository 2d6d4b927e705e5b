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
//! It trusts the patterns: the KBIN build checked how they pair up and
//! counted the ring ([`crate::kbin::pattern`]), so expanding one fails only
//! on address arithmetic or host memory.

use super::RelocError;
use crate::fallible;
use crate::ids::VarId;
use crate::kbin::pattern::{self, MAX_DESC_LEN};
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

impl Pattern<'_> {
    /// Chunks every contiguous run into `out`, innermost dimension fastest.
    fn push_runs(&self, op: DescOp, out: &mut Vec<Pending>) -> Result<(), RelocError> {
        let Some((&len, outer)) = self.sizes.split_first() else {
            return Ok(());
        };
        let steps = self.steps.get(1..).unwrap_or_default();
        let mut idx = vec![0u64; outer.len()];
        for _ in 0..pattern::run_count(self.sizes) {
            let mut delta: u64 = 0;
            for (&i, &step) in idx.iter().zip(steps) {
                delta = i
                    .checked_mul(step)
                    .and_then(|d| delta.checked_add(d))
                    .ok_or(RelocError::AddressOverflow)?;
            }
            chunk(self.target.plus(delta)?, len, op, out)?;
            for (i, &n) in idx.iter_mut().zip(outer) {
                *i += 1;
                if *i < n {
                    break;
                }
                *i = 0;
            }
        }
        Ok(())
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

/// A block whose patterns the KBIN build checked, as its TX/RX pairs.
pub type BlockPatterns<'a> = [(Pattern<'a>, Pattern<'a>, DescOp)];

/// Expands the descriptors of one block into TX/RX pairs. Runs of the two
/// sides pair up one to one; when their counts differ (DMA transposes,
/// whose device semantics are not documented) each side keeps its own runs
/// and the shorter side is padded with self-copies so pairs stay aligned.
pub fn expand_block(descs: &BlockPatterns<'_>) -> Result<BlockDescriptors, RelocError> {
    let mut out = BlockDescriptors::default();
    expand_into(&mut out, descs)?;
    Ok(out)
}

/// Appends the pairs of one block to `out`, with room reserved for them
/// first (nothing to do when the ring was sized from the sealed count).
fn expand_into(out: &mut BlockDescriptors, descs: &BlockPatterns<'_>) -> Result<(), RelocError> {
    let count = descs.iter().fold(0u64, |n, (from, to, _)| {
        let pairs = pattern::desc_count(from.sizes).max(pattern::desc_count(to.sizes));
        n.saturating_add(pairs)
    });
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    fallible::reserve(&mut out.tx, count, "DMA descriptors")?;
    fallible::reserve(&mut out.rx, count, "DMA descriptors")?;
    for (from, to, op) in descs {
        from.push_runs(*op, &mut out.tx)?;
        to.push_runs(*op, &mut out.rx)?;
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
    Ok(())
}

/// Ring capacity for `n` descriptors ([`pattern::ring_capacity`]).
pub fn ring_capacity(n: usize) -> usize {
    usize::try_from(pattern::ring_capacity(n as u64)).unwrap_or(usize::MAX)
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
    /// An empty ring with room for `descriptors` pairs (the count the KBIN
    /// build sealed), reserved once.
    pub fn with_capacity(descriptors: u32) -> Result<RingBuilder, RelocError> {
        let n = descriptors as usize;
        Ok(RingBuilder {
            pairs: BlockDescriptors {
                tx: fallible::with_capacity(n, "a DMA ring")?,
                rx: fallible::with_capacity(n, "a DMA ring")?,
            },
            blocks: Vec::new(),
        })
    }

    /// Expands a block into the ring; returns its first descriptor index.
    /// Indices fit in `u32`: the KBIN build held the ring to
    /// [`pattern::MAX_RING_DESCRIPTORS`].
    pub fn add_block(
        &mut self,
        id: u64,
        descs: &BlockPatterns<'_>,
        barrier: Barrier,
    ) -> Result<u32, RelocError> {
        let first = self.pairs.tx.len();
        expand_into(&mut self.pairs, descs)?;
        let (side, flag) = match barrier {
            Barrier::Dmb => (&mut self.pairs.tx, len_ctrl::DMB),
            Barrier::Sow => (&mut self.pairs.rx, len_ctrl::SOW),
        };
        if let Some(last) = side[first..].last_mut() {
            last.flags |= flag;
        }
        let count = self.pairs.tx.len() - first;
        self.blocks.push((id, first as u32, count as u32));
        Ok(first as u32)
    }

    pub fn len(&self) -> usize {
        self.pairs.tx.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.tx.is_empty()
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
        ring.add_block(0, &[(from, to, DescOp::Copy)], Barrier::Sow)
            .unwrap();
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
    fn casts_scale_and_carry_their_op() {
        let from = pat(Target::Abs(0x1000), &[444, 4], &[1, 444]);
        let to = pat(Target::Abs(0x9000), &[222, 4], &[1, 262144]);
        let cast = [(from, to, DescOp::Cast)];
        let b = expand_block(&cast).unwrap();
        assert_eq!((b.tx[0].len, b.rx[0].len), (444, 222));
        // Sized once from the count the KBIN build seals, as staging does.
        let mut ring = RingBuilder::with_capacity(8).unwrap();
        assert_eq!(ring.add_block(3, &cast, Barrier::Dmb).unwrap(), 0);
        assert_eq!(ring.add_block(7, &cast, Barrier::Dmb).unwrap(), 4);
        assert_eq!(ring.blocks, vec![(3, 0, 4), (7, 4, 4)]);
        let (tx, _) = ring.place(0x10_0000).unwrap().descriptors();
        assert_eq!(
            tx[0].meta_ctrl,
            META_CTRL_DEFAULT | (1 << META_CTRL_OP_SHIFT)
        );
        assert!(tx[3].len_ctrl & len_ctrl::DMB != 0);
        assert!(
            tx[2].len_ctrl & len_ctrl::DMB == 0,
            "only each block's last"
        );
        assert!(tx[7].len_ctrl & len_ctrl::DMB != 0);
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
    fn address_arithmetic_past_64_bits_is_refused() {
        let wrap = pat(Target::Abs(u64::MAX - 10), &[4, 2], &[1, 100]);
        assert_eq!(
            expand_block(&[(wrap, wrap, DescOp::Copy)]).unwrap_err(),
            RelocError::AddressOverflow
        );
        let mut ring = RingBuilder::default();
        assert_eq!(
            ring.add_block(0, &[(wrap, wrap, DescOp::Copy)], Barrier::Sow),
            Err(RelocError::AddressOverflow)
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
