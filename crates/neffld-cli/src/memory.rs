//! The memory of a load, rendered: the library's one memory report
//! ([`MemoryReport`]) as JSON and as the runtime's own usage table, with a
//! one-line answer (does it fit, how much of each HBM is used), every
//! allocation the load placed (for the map), and — when it ran out of
//! memory — the request that did not fit.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use neffld::ids::HModel;
use neffld::report::{Column, HbmMemory, MemoryReport, Placed, Refused, Usage};
use serde::Serialize;

use crate::units;

/// The usage-table columns of a row set, by the runtime's names.
pub type Columns = BTreeMap<&'static str, u64>;

/// The usage-table columns of `u` by the runtime's names.
fn columns(u: &Usage) -> Columns {
    Column::ALL.iter().map(|&c| (c.name(), u.get(c))).collect()
}

/// One HBM of `memory.hbm`.
#[derive(Serialize)]
pub struct HbmDoc {
    pub device: u32,
    pub hbm: u32,
    pub cores: Vec<u32>,
    pub size: u64,
    pub base: u64,
    pub allocatable: u64,
    pub capacity: u64,
    pub held: u64,
    pub free: u64,
    pub used: u64,
    pub columns: Columns,
}

/// What one NEFF holds on a core.
#[derive(Serialize)]
pub struct NeffDoc {
    pub id: u32,
    pub name: Option<String>,
    pub total: u64,
    pub columns: Columns,
}

/// One core of `memory.cores`.
#[derive(Serialize)]
pub struct CoreDoc {
    pub pcore: u32,
    pub hbm: u32,
    pub used: u64,
    pub columns: Columns,
    pub neffs: Vec<NeffDoc>,
}

/// One allocation the load placed, on an HBM shown.
#[derive(Serialize)]
pub struct AllocationDoc {
    pub pcore: u32,
    pub hbm: u32,
    pub owner: String,
    pub category: &'static str,
    pub name: String,
    pub address: u64,
    pub size: u64,
    pub charged: u64,
    /// neuron-top's category, which the map colours it by.
    #[serde(skip)]
    pub shown: neffld::report::MonitorCategory,
}

/// The request that did not fit, and its HBM then.
#[derive(Serialize)]
pub struct RefusedDoc {
    pub pcore: u32,
    pub hbm: Option<u32>,
    pub name: String,
    pub category: &'static str,
    pub column: &'static str,
    pub size: u64,
    pub hbm_used: u64,
    pub hbm_free: u64,
    pub hbm_total: u64,
}

/// The `memory` object of `load --json` (docs/cli.md).
#[derive(Serialize)]
pub struct MemoryDoc {
    pub fits: bool,
    pub hbm: Vec<HbmDoc>,
    pub cores: Vec<CoreDoc>,
    pub allocations: Vec<AllocationDoc>,
    pub refused: Option<RefusedDoc>,
}

/// The HBMs worth showing: those a model or a client uses, and the one a
/// refusal was on.
fn shown<'a>(report: &'a MemoryReport, refused: Option<&Refused>) -> Vec<&'a HbmMemory> {
    report
        .hbms
        .iter()
        .filter(|h| {
            h.cores.iter().any(|c| {
                c.model.iter().any(|&b| b > 0) || refused.is_some_and(|r| r.core == c.pcore)
            })
        })
        .collect()
}

/// The `memory` object of `load --json` (docs/cli.md): `name` names a
/// NEFF by its id.
pub fn report(
    report: &MemoryReport,
    name: &dyn Fn(HModel) -> Option<String>,
    placed: &[Placed],
    refused: Option<&Refused>,
) -> MemoryDoc {
    let hbms = shown(report, refused);
    let hbm = hbms
        .iter()
        .map(|h| {
            let u = h.usage();
            HbmDoc {
                device: report.device,
                hbm: h.hbm,
                cores: h.cores.iter().map(|c| c.pcore.0).collect(),
                size: h.size,
                base: h.base,
                allocatable: h.allocatable,
                capacity: h.capacity,
                held: h.held,
                free: h.free(),
                used: u.total(),
                columns: columns(&u),
            }
        })
        .collect();
    let cores = hbms
        .iter()
        .flat_map(|h| h.cores.iter().map(move |c| (h.hbm, c)))
        .map(|(hbm, c)| {
            let u = c.usage();
            let neffs = c
                .models
                .iter()
                .map(|(id, rows)| {
                    let u = Usage::of(rows);
                    NeffDoc {
                        id: id.0,
                        name: name(*id),
                        total: u.neff_total(),
                        columns: columns(&u),
                    }
                })
                .collect();
            CoreDoc {
                pcore: c.pcore.0,
                hbm,
                used: u.total(),
                columns: columns(&u),
                neffs,
            }
        })
        .collect();
    // The allocations on the HBMs shown: the runtime's own on the cores
    // of other HBMs are not this load's, and the map pictures these HBMs.
    let allocations = placed
        .iter()
        .filter(|a| hbms.iter().any(|h| h.hbm == a.hbm))
        .map(|a| AllocationDoc {
            pcore: a.core.0,
            hbm: a.hbm,
            owner: a.owner.to_string(),
            category: a.usage.name(),
            name: a.name.clone(),
            address: a.address,
            size: a.size,
            charged: a.charged,
            shown: neffld::report::MonitorCategory::of_usage(a.usage),
        })
        .collect();
    let refused = refused.map(|r| {
        let h = report.hbm_of(r.core);
        RefusedDoc {
            pcore: r.core.0,
            hbm: h.map(|h| h.hbm),
            name: r.hint.clone(),
            category: r.usage.name(),
            column: Column::of(r.usage).name(),
            size: r.size,
            hbm_used: h.map_or(0, |h| h.usage().total()),
            hbm_free: h.map_or(0, |h| h.free()),
            hbm_total: h.map_or(0, |h| h.size),
        }
    });
    MemoryDoc {
        fits: refused.is_none(),
        hbm,
        cores,
        allocations,
        refused,
    }
}

/// The one-line answer near the top of the human report.
pub fn answer(memory: &MemoryDoc) -> String {
    let per_hbm: Vec<String> = memory
        .hbm
        .iter()
        .map(|h| {
            format!(
                "HBM {} {} used, {} free of {}",
                h.hbm,
                units::human(h.used),
                units::human(h.free),
                units::human(h.size)
            )
        })
        .collect();
    let fits = if memory.fits { "yes" } else { "no" };
    format!("fits: {fits}; {}", per_hbm.join("; "))
}

/// One sentence a person can act on: the runtime's message stays first in
/// the error; this follows it.
pub fn refusal_sentence(memory: &MemoryDoc) -> Option<String> {
    let r = memory.refused.as_ref()?;
    let core = memory.cores.iter().find(|c| c.pcore == r.pcore);
    let mut largest: Vec<(&str, u64)> = core
        .into_iter()
        .flat_map(|c| c.columns.iter())
        .map(|(&k, &v)| (k, v))
        .filter(|&(_, b)| b > 0)
        .collect();
    largest.sort_by_key(|p| std::cmp::Reverse(p.1));
    let list: Vec<String> = largest
        .iter()
        .map(|(what, b)| format!("{what} {}", units::human(*b)))
        .collect();
    Some(format!(
        "{} {:?} ({}) needs {} on nc{}, whose HBM {} holds {} with {} free; nc{} holds {}",
        r.category,
        r.name,
        r.column,
        units::bytes(r.size),
        r.pcore,
        r.hbm.unwrap_or(0),
        units::human(r.hbm_total),
        units::human(r.hbm_free),
        r.pcore,
        if list.is_empty() {
            "nothing".to_string()
        } else {
            list.join(", ")
        }
    ))
}

/// The human table: the runtime's usage table of each HBM shown, then the
/// NEFF id → name mapping.
pub fn human(report: &MemoryReport, memory: &MemoryDoc, refused: Option<&Refused>) -> String {
    let mut t = String::new();
    let hbms = shown(report, refused);
    if hbms.is_empty() {
        return t;
    }
    let _ = writeln!(
        t,
        "\nmemory (as the runtime's usage table; MB and GB are MiB and GiB)"
    );
    for h in hbms {
        t.push_str(&report.usage_table(h));
    }
    let neffs: Vec<&NeffDoc> = memory.cores.iter().flat_map(|c| &c.neffs).collect();
    if !neffs.is_empty() {
        let _ = writeln!(t, "NEFF id to name mapping:");
        let mut seen = Vec::new();
        for n in neffs {
            if !seen.contains(&n.id) {
                seen.push(n.id);
                let _ = writeln!(t, "{}: {}", n.id, name_json(n.name.as_deref()));
            }
        }
    }
    t
}

/// A NEFF's name as the mapping has always printed it: a JSON string, or
/// `null` when the load has none for the id.
fn name_json(name: Option<&str>) -> String {
    serde_json::to_string(&name).expect("a string always serialises")
}

/// The cores of one `memory.hbm` entry: `nc0, nc1`.
pub fn sharing(hbm: &HbmDoc) -> String {
    let cores: Vec<String> = hbm.cores.iter().map(|c| format!("nc{c}")).collect();
    cores.join(", ")
}
