//! What the runtime allocates for itself on every physical core when it
//! starts, before any model, and where. The figures are the line's: the
//! rows of the captured line it carries over ([`crate::line::Captured::start_rows`],
//! [`crate::line::Captured::start_taken`]) and its own start-up deltas over them
//! ([`LineFacts::start`]); the runtime allocates them for real
//! ([`crate::api::Runtime`]), so they are in the one ledger every memory
//! report projects ([`crate::report::memory`]).

use crate::device::alloc::{charged_size, SMALL_REQUEST_MAX};
use crate::device::{Geometry, MemUsage, Place, Pool, StartTaken};
use crate::line::{LineFacts, Per, StartDelta};
use crate::Arch;

/// Where the runtime's start-up allocations go on a device, and what of the
/// regions its line holds at the bottom of each channel's pools they leave
/// over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartPlan {
    /// Held back at start, beside the start-up allocations (the same in
    /// every channel).
    pub held: StartTaken,
    /// Each row of each physical core, in order: the core, the usage, the
    /// bytes, and where it goes.
    pub rows: Vec<(u32, MemUsage, u64, Place)>,
}

/// The runtime's start on a device of `geometry` and `arch`, at
/// logical-core size `lnc`, under the line of `facts`, with the line's
/// start-up deltas that `kept` keeps (a variable may turn one off).
///
/// The captures show a started runtime holding a region at the bottom of
/// each channel's small pool (2.27, 2.30) or main pool (2.23) before any
/// model: a model's first allocations land right above it. The rows the
/// runtime reports for itself are placed inside those regions, in order,
/// while they fit, and the rest of each region is held back, so the region
/// ends where the captures show it. A row too large for what is left (the
/// trn1 microcode, 96 MiB) goes to the top of the channel instead, where it
/// moves no model allocation. A line's delta over the captured rows (2.35's
/// 64 MiB) goes where the kernel sends a request of its size, the main pool
/// when it is larger than the small pool's requests, at the top of that
/// pool: it moves no model allocation either, and the room left for a
/// large tensor is smaller by it. A delta counted per logical core is
/// charged on the first physical core of each.
pub fn start_plan(
    geometry: &Geometry,
    arch: Arch,
    lnc: u32,
    facts: &LineFacts,
    kept: impl Fn(&StartDelta) -> bool,
) -> StartPlan {
    let line = facts.captured(arch);
    let region = line.start_taken(arch);
    let captured = line.start_rows(arch);
    let lnc = lnc.max(1);
    let captured_rows: Vec<(MemUsage, u64)> = MemUsage::ALL
        .into_iter()
        .map(|u| (u, captured[u.index()]))
        .filter(|&(_, bytes)| bytes > 0)
        .collect();
    let deltas_of = |core: u32| {
        facts
            .start
            .iter()
            .filter(|d| kept(d))
            .filter(move |d| d.per == Per::PhysicalCore || core.is_multiple_of(lnc))
    };
    let cores_per_channel = geometry.cores_per_hbm().max(1);
    let mut held = None;
    let mut rows = Vec::new();
    for channel in 0..geometry.cores() / cores_per_channel {
        let has_small = !region.no_small_pool;
        let (mut small_left, mut main_left) = (region.small_pool, region.main_pool);
        for core in channel * cores_per_channel..(channel + 1) * cores_per_channel {
            for &(usage, bytes) in &captured_rows {
                let charged = charged_size(bytes).unwrap_or(u64::MAX);
                let place = if has_small && charged <= small_left {
                    small_left -= charged;
                    Place::First(Pool::Small)
                } else if charged <= main_left {
                    main_left -= charged;
                    Place::First(Pool::Main)
                } else {
                    Place::Top
                };
                rows.push((core, usage, bytes, place));
            }
            for d in deltas_of(core) {
                let small = charged_size(d.bytes).is_some_and(|c| c <= SMALL_REQUEST_MAX);
                let pool = if has_small && small {
                    Pool::Small
                } else {
                    Pool::Main
                };
                rows.push((core, d.usage, d.bytes, Place::TopOf(pool)));
            }
        }
        // Every channel holds what the first leaves: the device holds one
        // region per channel (the deltas are outside it).
        held.get_or_insert(StartTaken {
            small_pool: small_left,
            main_pool: main_left,
            no_small_pool: region.no_small_pool,
        });
    }
    StartPlan {
        held: held.unwrap_or(region),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::{Captured, RuntimeLine};

    /// On 2.30 trn2 every row of both cores of a channel fits the region the
    /// captures show (0x3b0000 at the bottom of the small pool): only the
    /// rest is held back, so the region still ends at 0x3b0000.
    #[test]
    fn start_rows_fill_the_held_region_and_the_rest_is_held_back() {
        let g = Geometry::for_arch(Arch::Cayman);
        let plan = start_plan(&g, Arch::Cayman, 2, RuntimeLine::V2_30.facts(), |_| true);
        let region = Captured::V2_30.start_taken(Arch::Cayman);
        let per_channel: u64 = plan.rows[..plan.rows.len() / 4]
            .iter()
            .map(|&(_, _, b, place)| {
                assert_eq!(place, Place::First(Pool::Small));
                charged_size(b).unwrap()
            })
            .sum();
        assert_eq!(plan.held.small_pool + per_channel, region.small_pool);
        assert_eq!(plan.rows.len(), 8 * 4, "four rows on each of 8 cores");
    }

    /// On 2.23 trn1 the microcode (96 MiB) is far larger than the region at
    /// the bottom of the main pool: it goes to the top; the small rows fill
    /// the region.
    #[test]
    fn a_row_larger_than_the_region_goes_to_the_top() {
        let g = Geometry::for_arch(Arch::Sunda);
        let plan = start_plan(&g, Arch::Sunda, 1, RuntimeLine::V2_23.facts(), |_| true);
        let ucode = plan
            .rows
            .iter()
            .find(|r| r.1 == MemUsage::UcodeLib)
            .unwrap();
        assert_eq!((ucode.2, ucode.3), (100_669_644, Place::Top));
        let stdio = plan
            .rows
            .iter()
            .find(|r| r.1 == MemUsage::PoolStdio)
            .unwrap();
        assert_eq!(stdio.3, Place::First(Pool::Main));
        let region = Captured::V2_23.start_taken(Arch::Sunda);
        assert_eq!(plan.held.main_pool, region.main_pool - 4096);
        assert!(plan.held.no_small_pool);
    }

    /// 2.35's 64 MiB for DMA profiling is one row per logical core (on its
    /// first physical core), at the top of the main pool, where the kernel
    /// sends a request of its size: what 2.34 holds at the bottom of each
    /// pool is unchanged, so a model lands where it did.
    #[test]
    fn the_2_35_reservation_is_per_logical_core_and_moves_nothing() {
        let g = Geometry::for_arch(Arch::Cayman);
        let older = start_plan(&g, Arch::Cayman, 2, RuntimeLine::V2_34.facts(), |_| true);
        let reserved = |lnc: u32, kept: bool| {
            let plan = start_plan(&g, Arch::Cayman, lnc, RuntimeLine::V2_35.facts(), |_| kept);
            assert_eq!(plan.held, older.held);
            let extra: Vec<(u32, u64, Place)> = plan
                .rows
                .iter()
                .filter(|r| r.1 == MemUsage::Notification)
                .map(|r| (r.0, r.2, r.3))
                .collect();
            assert_eq!(plan.rows.len() - extra.len(), older.rows.len());
            extra
        };
        let at = |cores: &[u32]| -> Vec<(u32, u64, Place)> {
            cores
                .iter()
                .map(|&c| (c, 64 << 20, Place::TopOf(Pool::Main)))
                .collect()
        };
        assert_eq!(reserved(2, true), at(&[0, 2, 4, 6]));
        assert_eq!(reserved(1, true), at(&[0, 1, 2, 3, 4, 5, 6, 7]));
        assert_eq!(reserved(2, false), at(&[]));
    }
}
