//! What the line modules share: the older lines' preamble and postamble
//! shapes (2.23 and 2.25 take 2.27's), the final branch every line ends
//! with (2.30's bytes), and the Ucode lib figures several lines take. The
//! line modules import this and never each other.

use super::regs::{Record, TableLoad, RECORD};
use super::{of, Part, PerEngine, RuntimeCode};
use crate::manifest::engine::EngineType;

/// Ucode lib per trn1 core (96 MiB + 6,348; 2.23 and 2.25 alike).
pub(super) const TRN1_UCODE: u64 = 100_669_644;

/// Ucode lib per trn2 core under 2.27 (2.23 and 2.25 on trn2, never
/// captured, take it too).
pub(super) const TRN2_UCODE_2_27: u64 = 1_703_936;

/// The head (`a6`, `b1`) before the queue blocks.
const HEAD: u32 = 2;

/// Act tables add 6 slots to act's preamble: the 5-slot table-load block
/// and one more in its fixed body.
const ACT_TABLE_BODY: u32 = 1;

/// The preamble of the lines laid out as 2.27 (2.25 too): head, queue
/// blocks, table blocks, fixed body of `base` slots without tables.
pub(super) fn preamble_parts(c: &RuntimeCode, base: PerEngine) -> Vec<Part> {
    let mut parts = vec![Part::Filler(HEAD), Part::QueueBlocks];
    let mut body = of(base, c.engine) - HEAD;
    match c.engine {
        EngineType::Act if c.act_tables => {
            parts.push(Part::TableBlock(TableLoad::Act));
            body += ACT_TABLE_BODY;
        }
        EngineType::Dve if c.dve_tables => parts.push(Part::TableBlock(TableLoad::Dve)),
        _ => {}
    }
    parts.push(Part::Filler(body));
    parts
}

/// The postamble of every line before 2.30: a fixed body, the queues'
/// resets, the `a6` and the final branch (`None` when its target is not
/// known: filler too).
pub(super) fn postamble_parts(c: &RuntimeCode, base: PerEngine, to: Option<u32>) -> Vec<Part> {
    let branch = match to {
        Some(to) => Part::Branch {
            template: branch_template(),
            to,
        },
        None => Part::Filler(1),
    };
    vec![
        Part::Filler(of(base, c.engine) - 2),
        Part::QueueResets,
        Part::Filler(1),
        branch,
    ]
}

/// The runtime's postambles (pe, act, pool, dve: 11 slots; sp: 9), branch
/// offsets zeroed.
pub(super) static POSTAMBLE_TRN2: &[u8; 53 * RECORD] = include_bytes!("postamble_trn2_2_30.bin");

/// The final branch of every 2.30 postamble (offset zeroed): the form the
/// lines whose postamble bytes are unknown take for theirs.
pub(super) fn branch_template() -> Record {
    let last = &POSTAMBLE_TRN2[POSTAMBLE_TRN2.len() - RECORD..];
    last.try_into().expect("64-byte record")
}
