//! The address-free arithmetic of DMA access patterns (stage.md §8.2): how
//! many contiguous runs and 64 KiB descriptors each side of a static
//! descriptor expands into, whether the two sides pair up, and whether a
//! ring stays inside the vring limit. None of it depends on where the
//! variables land, so the KBIN build checks it once per block and staging
//! expands the blocks trusting the sealed count.
//!
//! A side's `sizes[0]` is the contiguous run in bytes; higher entries are
//! repeat counts. The manifest layer already refused empty, unequal or
//! zero sizes and steps; the arithmetic here stays total regardless.
//!
//! It also holds the runtime's own count of a block, per ring of its queue
//! ([`per_ring_counts`], rule H of docs/decisions.md), which the runtime's
//! trigger writes and its ring sizes follow, and the ring capacity rule
//! both the runtime's rings and ours use ([`ring_capacity`]).

use super::KbinError;
use crate::ids::VarId;
use crate::manifest::engine::{DmaBlock, DmaOp, Endpoint};

/// Largest transfer one descriptor moves (`len` 0 encodes 65536).
pub const MAX_DESC_LEN: u64 = 1 << 16;

/// Bound on the runs one pattern may expand into, so a hostile pattern
/// cannot make the loader build billions of descriptors.
pub const MAX_RUNS_PER_PATTERN: u64 = 1 << 24;

/// Descriptors one ring (each of its TX and RX halves) may hold: the
/// reference's host-side vrings stop at 16,777,200 (stage.md §8.2).
pub const MAX_RING_DESCRIPTORS: u64 = 16_777_200;

/// Ring capacity for `n` descriptors (stage.md §8.2: fewer than 32 → 64;
/// otherwise linear rings of `round_up_16(n + 16)`). The runtime sizes each
/// of a queue's rings by it too (docs/decisions.md, "Runtime lines").
pub fn ring_capacity(n: u64) -> u64 {
    if n < 32 {
        64
    } else {
        n.saturating_add(16).div_ceil(16).saturating_mul(16)
    }
}

/// What the runtime counts for one block on each ring of its queue: the
/// descriptors its trigger announces per ring, M2S (the `from` side) and
/// S2M (the `to` side).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingCounts {
    pub m2s: u64,
    pub s2m: u64,
    /// False when a descriptor of the block is one rule H does not cover (a
    /// transpose, or a compute op other than a cast): the counts are then
    /// the rule applied anyway, the best-founded value, but not the
    /// runtime's for sure.
    pub ruled: bool,
}

/// Rule H (docs/decisions.md, fitted on real captures of runtimes 2.23 to
/// 2.27 and checked on others): per side of a block, summed over its
/// descriptors, plus one:
/// - a side that is not in the state buffer, has two dimensions, is
///   contiguous (`steps[1] == sizes[0]`) and keeps its dtype counts 2;
/// - any other side counts one descriptor per inner run spread over the
///   queue's `rings`, `ceil(prod(sizes[1..]) / rings)`, with no merging of
///   contiguous dimensions; the M2S side counts twice when the dtypes
///   differ (a cast).
///
/// A block of one descriptor gives the captured figures exactly (3 for a
/// contiguous DRAM side); how several contiguous descriptors add up was
/// never captured, and summing their 2s is our reading.
pub fn per_ring_counts(block: &DmaBlock, rings: u64, in_sb: impl Fn(VarId) -> bool) -> RingCounts {
    let rings = rings.max(1);
    let mut c = RingCounts {
        m2s: 1,
        s2m: 1,
        ruled: true,
    };
    for d in &block.descs {
        let cast = matches!((&d.from.dtype, &d.to.dtype), (Some(a), Some(b)) if a != b);
        let side = |e: &Endpoint| -> u64 {
            let contiguous = !in_sb(e.var_id)
                && e.sizes.len() == 2
                && e.steps.get(1) == e.sizes.first()
                && !cast;
            if contiguous {
                2
            } else {
                run_count(&e.sizes).div_ceil(rings)
            }
        };
        let m2s = side(&d.from);
        c.m2s = c
            .m2s
            .saturating_add(if cast { m2s.saturating_mul(2) } else { m2s });
        c.s2m = c.s2m.saturating_add(side(&d.to));
        c.ruled &= matches!(d.op, DmaOp::Copy | DmaOp::Cast);
    }
    c
}

/// Contiguous runs of one side: the product of its repeat counts
/// (saturating).
pub fn run_count(sizes: &[u64]) -> u64 {
    sizes
        .get(1..)
        .unwrap_or_default()
        .iter()
        .fold(1u64, |n, &s| n.saturating_mul(s))
}

/// Descriptors one side expands into: its runs times the 64 KiB chunks of
/// one run (saturating).
pub fn desc_count(sizes: &[u64]) -> u64 {
    let run = sizes.first().copied().unwrap_or(0);
    run_count(sizes).saturating_mul(run.div_ceil(MAX_DESC_LEN))
}

/// Descriptor pairs the blocks of one ring expand into, in block order,
/// refusing what staging could not build: a side of more than
/// [`MAX_RUNS_PER_PATTERN`] runs, a block or a ring past the vring limit
/// (`NRT_QUEUE_FULL`), sides whose runs do not pair up (only a transpose
/// may differ in run count, and a copy moves equal runs). The checks come
/// in the order the expansion used to meet them: a block's sizes, its
/// count, its pairing, then the ring's running total.
pub(super) fn ring_descriptors(
    subgraph: &str,
    queue: &str,
    blocks: &[DmaBlock],
) -> Result<u32, KbinError> {
    let full = |count| KbinError::RingFull {
        subgraph: subgraph.to_string(),
        queue: queue.to_string(),
        count,
        max: MAX_RING_DESCRIPTORS,
    };
    let mut total: u64 = 0;
    for block in blocks {
        let refuse = |detail: String| KbinError::BadPattern {
            subgraph: subgraph.to_string(),
            queue: queue.to_string(),
            id: block.id,
            detail,
        };
        let mut count: u64 = 0;
        for d in &block.descs {
            let sides = [&d.from.sizes, &d.to.sizes];
            if sides.iter().any(|s| run_count(s) > MAX_RUNS_PER_PATTERN) {
                return Err(refuse(format!(
                    "more than {MAX_RUNS_PER_PATTERN} contiguous runs"
                )));
            }
            let pairs = desc_count(&d.from.sizes).max(desc_count(&d.to.sizes));
            count = count.saturating_add(pairs);
        }
        if count > MAX_RING_DESCRIPTORS {
            return Err(full(count));
        }
        for d in &block.descs {
            let (from, to) = (run_count(&d.from.sizes), run_count(&d.to.sizes));
            if from != to && d.op != DmaOp::Transpose {
                return Err(refuse(format!(
                    "source has {from} runs, destination {to} (only a transpose may differ)"
                )));
            }
            let run = |sizes: &[u64]| sizes.first().copied().unwrap_or(0);
            let (a, b) = (run(&d.from.sizes), run(&d.to.sizes));
            if d.op == DmaOp::Copy && a != b {
                return Err(refuse(format!(
                    "a copy moves {a} bytes from and {b} bytes to"
                )));
            }
        }
        total = total.saturating_add(count);
        if total > MAX_RING_DESCRIPTORS {
            return Err(full(total));
        }
    }
    // At most MAX_RING_DESCRIPTORS, so it fits.
    Ok(total as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::VarId;
    use crate::manifest::engine::{DmaDesc, Endpoint};
    use crate::NrtStatus;

    fn side(sizes: &[u64], steps: &[u64]) -> Endpoint {
        Endpoint {
            var: "v".into(),
            var_id: VarId(1),
            dtype: None,
            off: 0,
            sizes: sizes.to_vec(),
            steps: steps.to_vec(),
        }
    }

    fn block(id: u64, descs: &[(Endpoint, Endpoint, DmaOp)]) -> DmaBlock {
        DmaBlock {
            queue: "q".into(),
            id,
            semaphore: None,
            comment: None,
            descs: descs
                .iter()
                .map(|(from, to, op)| DmaDesc {
                    from: from.clone(),
                    to: to.clone(),
                    op: *op,
                    num_tiling_dimensions: 1,
                    transpose: None,
                })
                .collect(),
        }
    }

    fn count(blocks: &[DmaBlock]) -> Result<u32, KbinError> {
        ring_descriptors("sg00", "q", blocks)
    }

    #[test]
    fn counts_are_runs_times_64k_chunks_and_the_longer_side() {
        // F1 example: file → SB, 128 runs of 2 bytes.
        let a = side(&[2, 128], &[1, 256]);
        let b = side(&[2, 128], &[1, 262144]);
        assert_eq!(count(&[block(0, &[(a, b, DmaOp::Copy)])]), Ok(128));
        // One run of 64 KiB + 33,032 bytes: two chunks.
        let long = side(&[65536 + 33032], &[1]);
        assert_eq!(desc_count(&long.sizes), 2);
        // A transpose keeps each side's runs; the ring holds the longer.
        let from = side(&[256, 4], &[1, 256]);
        let to = side(&[2, 128, 4], &[1, 262144, 2]);
        let t = block(3, &[(from, to, DmaOp::Transpose)]);
        assert_eq!(count(&[t.clone(), t]), Ok(2 * 512));
    }

    #[test]
    fn sides_that_do_not_pair_are_refused() {
        let from = side(&[444, 4], &[1, 444]);
        let to = side(&[222, 4], &[1, 262144]);
        assert_eq!(
            count(&[block(0, &[(from.clone(), to.clone(), DmaOp::Cast)])]),
            Ok(4)
        );
        let e = count(&[block(5, &[(from, to, DmaOp::Copy)])]).unwrap_err();
        assert_eq!(e.status(), NrtStatus::Invalid);
        assert_eq!(
            e.to_string(),
            "sg00: DMA access pattern of block q/5: a copy moves 444 bytes from and 222 bytes to"
        );
        let from = side(&[256, 4], &[1, 256]);
        let to = side(&[2, 128, 4], &[1, 262144, 2]);
        let e = count(&[block(6, &[(from, to, DmaOp::Cast)])]).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("source has 4 runs, destination 512 (only a transpose may differ)"),
            "{e}"
        );
    }

    #[test]
    fn hostile_run_counts_are_refused_from_the_arithmetic() {
        let huge = side(&[1, 1 << 20, 1 << 20], &[1, 1, 1]);
        let e = count(&[block(0, &[(huge.clone(), huge, DmaOp::Copy)])]).unwrap_err();
        assert!(matches!(e, KbinError::BadPattern { .. }), "{e}");
        assert!(e
            .to_string()
            .ends_with("more than 16777216 contiguous runs"));
        // A product past u64 saturates instead of wrapping to a small count.
        let wrap = side(&[1, 1 << 32, 1 << 32], &[1, 1, 1]);
        assert_eq!(run_count(&wrap.sizes), u64::MAX);
    }

    #[test]
    fn the_vring_limit_holds_per_block_and_per_ring() {
        // 2^24 runs of 64 bytes, and one run of 2^40 bytes (2^24 chunks).
        for p in [side(&[64, 1 << 24], &[1, 0]), side(&[1 << 40], &[1])] {
            let e = count(&[block(0, &[(p.clone(), p, DmaOp::Copy)])]).unwrap_err();
            assert_eq!(
                e,
                KbinError::RingFull {
                    subgraph: "sg00".into(),
                    queue: "q".into(),
                    count: 1 << 24,
                    max: MAX_RING_DESCRIPTORS
                }
            );
            assert_eq!(e.status(), NrtStatus::QueueFull);
            assert!(e.to_string().ends_with(
                "Descriptor limit reached. Descriptors in vring 16777216, Max allowed 16777200"
            ));
        }
        // Two blocks that fit alone but not together: the running total.
        let half = side(&[64, MAX_RING_DESCRIPTORS / 2 + 1], &[1, 0]);
        let b = block(0, &[(half.clone(), half, DmaOp::Copy)]);
        assert_eq!(count(std::slice::from_ref(&b)), Ok(8_388_601));
        assert!(matches!(
            count(&[b.clone(), b]),
            Err(KbinError::RingFull { count, .. }) if count == MAX_RING_DESCRIPTORS + 2
        ));
    }
}
