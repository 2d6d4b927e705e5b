//! Where each of a NEFF's records went in an instruction image that says
//! nothing of it (a capture's): found by matching the records against the
//! image slot by slot (docs/reference/capture.md). neffld's own images know
//! it from their relocation patches ([`super::staged::records_of`]).

use crate::kbin::isa::RECORD_LEN;

/// What became of one NEFF record in an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Copied verbatim to this slot.
    Kept(u32),
    /// Rewritten in place at this slot.
    Rewritten(u32),
    /// Not in the image.
    Deleted,
}

/// The fate of each NEFF record of one engine, in NEFF order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Records {
    /// One fate per record, in NEFF order.
    pub fates: Vec<Fate>,
}

impl Records {
    fn count(&self, f: impl Fn(&Fate) -> bool) -> u32 {
        self.fates.iter().filter(|x| f(x)).count() as u32
    }

    /// Records kept as they were.
    pub fn kept(&self) -> u32 {
        self.count(|f| matches!(f, Fate::Kept(_)))
    }

    /// Records rewritten in place.
    pub fn rewritten(&self) -> u32 {
        self.count(|f| matches!(f, Fate::Rewritten(_)))
    }

    /// Records the runtime dropped.
    pub fn deleted(&self) -> u32 {
        self.count(|f| matches!(f, Fate::Deleted))
    }
}

/// An image split into the runtime's code and the NEFF's records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aligned {
    /// Slots of the runtime's code before the records.
    pub preamble_slots: u32,
    /// Slots the records take.
    pub main_slots: u32,
    /// Slots of the runtime's code after them.
    pub postamble_slots: u32,
    /// What became of each record.
    pub records: Records,
}

/// Records looked ahead when a slot differs from the record expected there.
const LOOKAHEAD: usize = 8;
/// Records whose first slots are tried as the start of the main part.
const START_RECORDS: usize = 4;
/// Occurrences of each of those tried.
const START_OCCURRENCES: usize = 4;

fn slots(b: &[u8]) -> Vec<&[u8]> {
    b.chunks_exact(RECORD_LEN).collect()
}

/// Equal non-zero bytes past the opcode and flag bytes: how much of a record
/// survives in a slot. A rewrite keeps most operands; the runtime's own
/// records share little but zeros with a NEFF record.
fn kinship(slot: &[u8], rec: &[u8]) -> usize {
    slot.iter()
        .zip(rec)
        .skip(2)
        .filter(|(a, b)| a == b && **a != 0)
        .count()
}

/// Walks the records from slot `start`: a record equal to the slot is kept;
/// otherwise it was rewritten in place or deleted, whichever lets more of the
/// following records match verbatim, and on a tie whichever the slot is
/// closer kin to. Returns the fates and the slot after the last record.
fn walk(s: &[&[u8]], r: &[&[u8]], start: usize) -> (Vec<Fate>, usize) {
    let mut j = start;
    let mut fates = Vec::with_capacity(r.len());
    let matches = |i0: usize, j0: usize| {
        (0..LOOKAHEAD - 1)
            .filter(|k| {
                let (i, j) = (i0 + k, j0 + k);
                i < r.len() && j < s.len() && s[j] == r[i]
            })
            .count()
    };
    for i in 0..r.len() {
        if j < s.len() && s[j] == r[i] {
            fates.push(Fate::Kept(j as u32));
            j += 1;
            continue;
        }
        let rewrite = j < s.len() && {
            let (as_rewrite, as_delete) = (matches(i + 1, j + 1), matches(i + 1, j));
            as_rewrite > as_delete
                || (as_rewrite == as_delete && {
                    let here = kinship(s[j], r[i]);
                    here > 0 && r.get(i + 1).is_none_or(|next| here >= kinship(s[j], next))
                })
        };
        if rewrite {
            fates.push(Fate::Rewritten(j as u32));
            j += 1;
        } else {
            fates.push(Fate::Deleted);
        }
    }
    (fates, j)
}

/// Splits `image` around the NEFF's own `stream` (both in 64-byte records).
/// The main part starts where the walk keeps the most records verbatim,
/// among the first few places where one of the first records appears.
pub fn align(image: &[u8], stream: &[u8]) -> Aligned {
    let s = slots(image);
    let r = slots(stream);
    let mut starts: Vec<usize> = r
        .iter()
        .take(START_RECORDS)
        .enumerate()
        .flat_map(|(i, rec)| {
            s.iter()
                .enumerate()
                .filter(move |(j, slot)| *j >= i && *slot == rec)
                .map(move |(j, _)| j - i)
                .take(START_OCCURRENCES)
        })
        .collect();
    starts.sort_unstable();
    starts.dedup();
    let best = starts
        .into_iter()
        .map(|p| {
            let (fates, end) = walk(&s, &r, p);
            let kept = fates.iter().filter(|f| matches!(f, Fate::Kept(_))).count();
            (kept, std::cmp::Reverse(p), fates, end)
        })
        .max_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    match best {
        Some((_, std::cmp::Reverse(p), fates, end)) => Aligned {
            preamble_slots: p as u32,
            main_slots: (end - p) as u32,
            postamble_slots: (s.len() - end) as u32,
            records: Records { fates },
        },
        // No record appears verbatim: nothing can be placed.
        None => Aligned {
            preamble_slots: 0,
            main_slots: 0,
            postamble_slots: s.len() as u32,
            records: Records {
                fates: vec![Fate::Deleted; r.len()],
            },
        },
    }
}
