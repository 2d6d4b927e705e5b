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
use crate::host_pages::ZeroedBuf;
use crate::ids::VarId;
use crate::kbin::pattern::{self, MAX_DESC_LEN};
use crate::shared::SharedSlice;
/// Size of one encoded descriptor.
pub const DESC_BYTES: u64 = 16;

pub mod len_ctrl {
    pub const FIRST: u32 = 1 << 26;
    pub const LAST: u32 = 1 << 27;
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
    pub fn to_bytes(self) -> [u8; 16] {
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
    #[cfg(any(test, feature = "testkit"))]
    pub fn len(&self) -> u64 {
        match self.len_ctrl & 0xFFFF {
            0 => MAX_DESC_LEN,
            n => u64::from(n),
        }
    }

    #[cfg(any(test, feature = "testkit"))]
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
    /// Calls `f(target, len, flags)` for every chunk of at most 64 KiB of
    /// every contiguous run, innermost dimension fastest, a run's chunks
    /// flagged FIRST / CONCAT / LAST.
    fn each_chunk(
        &self,
        mut f: impl FnMut(Target, u64, u32) -> Result<(), RelocError>,
    ) -> Result<(), RelocError> {
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
            let run = self.target.plus(delta)?;
            let mut done = 0;
            while done < len {
                let n = (len - done).min(MAX_DESC_LEN);
                let mut flags = if done == 0 {
                    len_ctrl::FIRST
                } else {
                    len_ctrl::CONCAT
                };
                if done + n == len {
                    flags |= len_ctrl::LAST;
                }
                f(run.plus(done)?, n, flags)?;
                done += n;
            }
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

/// A block whose patterns the KBIN build checked, as its TX/RX pairs.
pub type BlockPatterns<'a> = [(Pattern<'a>, Pattern<'a>, DescOp)];

/// Ring capacity for `n` descriptors ([`pattern::ring_capacity`]).
pub fn ring_capacity(n: usize) -> usize {
    usize::try_from(pattern::ring_capacity(n as u64)).unwrap_or(usize::MAX)
}

/// A placed ring: bytes of the TX ring followed by the RX ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingImage {
    pub capacity: usize,
    /// Shared, so that a device may keep these bytes instead of a copy.
    pub bytes: SharedSlice,
    pub blocks: Vec<(u64, u32, u32)>,
}

impl RingImage {
    /// Every descriptor, TX half then RX half, decoded one at a time (a
    /// ring may hold millions).
    pub fn iter(&self) -> impl Iterator<Item = Descriptor> + '_ {
        self.bytes
            .chunks_exact(16)
            .map(|c| Descriptor::from_bytes(c.try_into().expect("16 bytes")))
    }

    /// TX descriptors then RX descriptors, decoded (tests).
    #[cfg(any(test, feature = "testkit"))]
    pub fn descriptors(&self) -> (Vec<Descriptor>, Vec<Descriptor>) {
        let all: Vec<Descriptor> = self.iter().collect();
        let (tx, rx) = all.split_at(self.capacity.min(all.len()));
        (tx.to_vec(), rx.to_vec())
    }
}

/// One queue's ring, built in place at its device address: the TX half and
/// then the RX half of its final image, reserved once from the count the
/// KBIN build sealed, each slot a 4-byte self-copy at the ring's own
/// address until a block's descriptor is written into it. Expanding a
/// block writes its descriptors straight into their slots, so a ring costs
/// the host its own bytes and nothing of the size of its runs besides (a
/// list of pending descriptors took several times the ring: 3.5 GB for
/// 768 MB of rings).
pub struct RingBuilder {
    capacity: usize,
    pa: u64,
    bytes: ZeroedBuf,
    /// Descriptors written so far into each half.
    tx: usize,
    rx: usize,
    /// `(block id, first descriptor, descriptor count)` in the order added.
    pub blocks: Vec<(u64, u32, u32)>,
}

impl RingBuilder {
    /// Bytes of the ring of `descriptors` pairs: its TX and RX halves back
    /// to back.
    pub fn byte_size(descriptors: u32) -> u64 {
        2 * ring_capacity(descriptors as usize) as u64 * DESC_BYTES
    }

    /// The ring of `descriptors` pairs (the count the KBIN build sealed)
    /// placed at `pa`, every slot a self-copy until written.
    pub fn new(descriptors: u32, pa: u64) -> Result<RingBuilder, RelocError> {
        let capacity = ring_capacity(descriptors as usize);
        let len = usize::try_from(RingBuilder::byte_size(descriptors)).unwrap_or(usize::MAX);
        let mut bytes = ZeroedBuf::new(len, "a DMA ring image")?;
        for (half, meta_ctrl) in bytes
            .bytes_mut()
            .chunks_exact_mut(capacity * DESC_BYTES as usize)
            .zip([META_CTRL_DEFAULT, 0])
        {
            let pad = Descriptor {
                len_ctrl: 4 | len_ctrl::FIRST | len_ctrl::LAST,
                meta_ctrl,
                buf_ptr: pa,
            }
            .to_bytes();
            for slot in half.chunks_exact_mut(DESC_BYTES as usize) {
                slot.copy_from_slice(&pad);
            }
        }
        Ok(RingBuilder {
            capacity,
            pa,
            bytes,
            tx: 0,
            rx: 0,
            blocks: Vec::new(),
        })
    }

    /// Where descriptor `i` of a half is in the image.
    fn slot(&self, tx: bool, i: usize) -> usize {
        (if tx { i } else { self.capacity + i }) * DESC_BYTES as usize
    }

    /// Writes the next descriptor of one half (`len` ≤ 65536, which
    /// encodes as 0).
    fn put(
        &mut self,
        tx: bool,
        target: Target,
        len: u64,
        flags: u32,
        op: DescOp,
    ) -> Result<(), RelocError> {
        let i = if tx { self.tx } else { self.rx };
        if i >= self.capacity {
            return Err(RelocError::RingOverflow {
                capacity: self.capacity,
            });
        }
        let meta_ctrl = if tx {
            META_CTRL_DEFAULT | ((op as u32) << META_CTRL_OP_SHIFT)
        } else {
            0
        };
        let d = Descriptor {
            len_ctrl: (len % MAX_DESC_LEN) as u32 | flags,
            meta_ctrl,
            buf_ptr: target.buf_ptr(self.pa)?,
        };
        let at = self.slot(tx, i);
        self.bytes.bytes_mut()[at..at + DESC_BYTES as usize].copy_from_slice(&d.to_bytes());
        if tx {
            self.tx += 1;
        } else {
            self.rx += 1;
        }
        Ok(())
    }

    /// Expands a block into the ring; returns its first descriptor index.
    /// Runs of the two sides pair up one to one; when their counts differ
    /// (DMA transposes, whose device semantics are not documented) each
    /// side keeps its own runs and the shorter side is padded with 4-byte
    /// self-copies so pairs stay aligned. Indices fit in `u32`: the KBIN
    /// build held the ring to [`pattern::MAX_RING_DESCRIPTORS`].
    pub fn add_block(
        &mut self,
        id: u64,
        descs: &BlockPatterns<'_>,
        barrier: Barrier,
    ) -> Result<u32, RelocError> {
        let first = self.tx;
        for (from, to, op) in descs {
            from.each_chunk(|t, len, flags| self.put(true, t, len, flags, *op))?;
            to.each_chunk(|t, len, flags| self.put(false, t, len, flags, *op))?;
            let pad = len_ctrl::FIRST | len_ctrl::LAST;
            while self.tx < self.rx {
                self.put(true, Target::RingPad, 4, pad, *op)?;
            }
            while self.rx < self.tx {
                self.put(false, Target::RingPad, 4, pad, *op)?;
            }
        }
        let count = self.tx - first;
        if count > 0 {
            let (tx, flag) = match barrier {
                Barrier::Dmb => (true, len_ctrl::DMB),
                Barrier::Sow => (false, len_ctrl::SOW),
            };
            let at = self.slot(tx, first + count - 1);
            let word = &mut self.bytes.bytes_mut()[at..at + 4];
            let len_ctrl = u32::from_le_bytes((&*word).try_into().expect("4 bytes")) | flag;
            word.copy_from_slice(&len_ctrl.to_le_bytes());
        }
        self.blocks.push((id, first as u32, count as u32));
        Ok(first as u32)
    }

    /// Descriptor pairs written so far.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.tx
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.tx == 0
    }

    /// The finished image.
    pub fn finish(self) -> RingImage {
        let bytes = self.bytes.freeze();
        let len = bytes.len();
        RingImage {
            capacity: self.capacity,
            bytes: SharedSlice::new(bytes, 0..len),
            blocks: self.blocks,
        }
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

    /// The descriptors of one block built alone, TX and RX (in a ring sized
    /// for them, at a made-up address).
    fn block(descs: &BlockPatterns<'_>, count: u32) -> (Vec<Descriptor>, Vec<Descriptor>) {
        let mut ring = RingBuilder::new(count, 0x700_0000).unwrap();
        ring.add_block(0, descs, Barrier::Sow).unwrap();
        assert_eq!(ring.len(), count as usize);
        let (mut tx, mut rx) = ring.finish().descriptors();
        tx.truncate(count as usize);
        rx.truncate(count as usize);
        (tx, rx)
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
        let (tx, rx) = block(&[(from, to, DescOp::Copy)], 128);
        assert_eq!(tx[1].buf_ptr, 0x100_0000 + 256);
        assert_eq!(rx[127].buf_ptr, 0x1_0000_0000_0000 + 87032 + 127 * 262144);
        let plain = len_ctrl::FIRST | len_ctrl::LAST;
        assert!(tx.iter().all(|d| d.len() == 2 && d.len_ctrl == 2 | plain));
        assert!(rx[..127].iter().all(|d| d.len_ctrl == 2 | plain));
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
        let mut ring = RingBuilder::new(2, 0x900_0000).unwrap();
        ring.add_block(0, &[(from, to, DescOp::Copy)], Barrier::Sow)
            .unwrap();
        let img = ring.finish();
        assert_eq!(img.capacity, 64);
        assert_eq!(img.bytes.len(), 2 * 64 * 16);
        let (tx, rx) = img.descriptors();
        assert_eq!(tx[0].len_ctrl & !0xFFFF, len_ctrl::FIRST);
        assert_eq!(tx[1].len_ctrl & !0xFFFF, len_ctrl::CONCAT | len_ctrl::LAST);
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
        assert_eq!(rx[63].buf_ptr, 0x900_0000);
        assert_eq!(img.blocks, vec![(0, 0, 2)]);
    }

    #[test]
    fn casts_scale_and_carry_their_op() {
        let from = pat(Target::Abs(0x1000), &[444, 4], &[1, 444]);
        let to = pat(Target::Abs(0x9000), &[222, 4], &[1, 262144]);
        let cast = [(from, to, DescOp::Cast)];
        let (tx, rx) = block(&cast, 4);
        assert_eq!((tx[0].len(), rx[0].len()), (444, 222));
        // Sized once from the count the KBIN build seals, as staging does.
        let mut ring = RingBuilder::new(8, 0x10_0000).unwrap();
        assert_eq!(ring.add_block(3, &cast, Barrier::Dmb).unwrap(), 0);
        assert_eq!(ring.add_block(7, &cast, Barrier::Dmb).unwrap(), 4);
        assert_eq!(ring.blocks, vec![(3, 0, 4), (7, 4, 4)]);
        let (tx, _) = ring.finish().descriptors();
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
        let (tx, rx) = block(&[(from, to, DescOp::Transpose)], 512);
        let pad = |d: &&Descriptor| d.buf_ptr == 0x700_0000;
        assert_eq!(rx.iter().filter(|d| !pad(d)).count(), 512);
        assert_eq!(tx.iter().filter(pad).count(), 508);
        let moved =
            |v: &[Descriptor]| -> u64 { v.iter().filter(|d| !pad(d)).map(Descriptor::len).sum() };
        assert_eq!(moved(&tx), moved(&rx));
    }

    #[test]
    fn address_arithmetic_past_64_bits_is_refused() {
        let wrap = pat(Target::Abs(u64::MAX - 10), &[4, 2], &[1, 100]);
        let mut ring = RingBuilder::new(2, 0).unwrap();
        assert_eq!(
            ring.add_block(0, &[(wrap, wrap, DescOp::Copy)], Barrier::Sow),
            Err(RelocError::AddressOverflow)
        );
    }

    /// A ring sized for fewer descriptors than its blocks expand into is
    /// refused, not written past.
    #[test]
    fn a_ring_smaller_than_its_blocks_is_refused() {
        let p = pat(Target::Abs(0x1000), &[4, 100], &[1, 4]);
        let mut ring = RingBuilder::new(10, 0).unwrap();
        let e = ring.add_block(0, &[(p, p, DescOp::Copy)], Barrier::Sow);
        assert_eq!(e, Err(RelocError::RingOverflow { capacity: 64 }));
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
