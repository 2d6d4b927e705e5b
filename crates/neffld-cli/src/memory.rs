//! The memory of a load, rendered: the library's one memory report
//! ([`MemoryReport`]) as JSON and as the runtime's own usage table, with a
//! one-line answer (does it fit, how much of each HBM is used), every
//! allocation the load placed (for the map), and — when it ran out of
//! memory — the request that did not fit.

use std::fmt::Write as _;

use neffld::ids::HModel;
use neffld::report::{Column, HbmMemory, MemoryReport, Placed, Refused, Usage};
use serde_json::{json, Map, Value};

use crate::units;

/// The usage-table columns of `u` by the runtime's names.
fn columns(u: &Usage) -> Value {
    let m: Map<String, Value> = Column::ALL
        .iter()
        .map(|&c| (c.name().to_string(), json!(u.get(c))))
        .collect();
    Value::Object(m)
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
) -> Value {
    let hbms = shown(report, refused);
    let hbm_rows: Vec<Value> = hbms
        .iter()
        .map(|h| {
            let u = h.usage();
            json!({"device": report.device, "hbm": h.hbm,
                   "cores": h.cores.iter().map(|c| c.pcore.0).collect::<Vec<_>>(),
                   "size": h.size, "base": h.base, "allocatable": h.allocatable, "capacity": h.capacity, "held": h.held, "free": h.free(),
                   "used": u.total(), "columns": columns(&u)})
        })
        .collect();
    let core_rows: Vec<Value> = hbms
        .iter()
        .flat_map(|h| h.cores.iter().map(move |c| (h.hbm, c)))
        .map(|(hbm, c)| {
            let u = c.usage();
            let neffs: Vec<Value> = c
                .models
                .iter()
                .map(|(id, rows)| {
                    let u = Usage::of(rows);
                    json!({"id": id.0, "name": name(*id), "total": u.neff_total(), "columns": columns(&u)})
                })
                .collect();
            json!({"pcore": c.pcore.0, "hbm": hbm, "used": u.total(), "columns": columns(&u), "neffs": neffs})
        })
        .collect();
    // The allocations on the HBMs shown: the runtime's own on the cores
    // of other HBMs are not this load's, and the map pictures these HBMs.
    let allocations: Vec<Value> = placed
        .iter()
        .filter(|a| hbms.iter().any(|h| h.hbm == a.hbm))
        .map(|a| {
            json!({"pcore": a.core.0, "hbm": a.hbm, "owner": a.owner.to_string(),
                   "category": a.usage.name(), "name": a.name,
                   "address": a.address, "size": a.size, "charged": a.charged})
        })
        .collect();
    let refused = refused.map_or(Value::Null, |r| {
        let h = report.hbm_of(r.core);
        json!({"pcore": r.core.0, "hbm": h.map(|h| h.hbm), "name": r.hint,
               "category": r.usage.name(), "column": Column::of(r.usage).name(), "size": r.size,
               "hbm_used": h.map_or(0, |h| h.usage().total()), "hbm_free": h.map_or(0, |h| h.free()),
               "hbm_total": h.map_or(0, |h| h.size)})
    });
    json!({"fits": refused.is_null(), "hbm": hbm_rows, "cores": core_rows,
           "allocations": allocations, "refused": refused})
}

/// The one-line answer near the top of the human report.
pub fn answer(memory: &Value) -> String {
    let per_hbm: Vec<String> = memory["hbm"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| {
            format!(
                "HBM {} {} used, {} free",
                h["hbm"],
                units::human(h["used"].as_u64().unwrap_or(0)),
                units::human(h["free"].as_u64().unwrap_or(0)),
            ) + &format!(" of {}", units::human(h["size"].as_u64().unwrap_or(0)))
        })
        .collect();
    let fits = if memory["fits"] == true { "yes" } else { "no" };
    format!("fits: {fits}; {}", per_hbm.join("; "))
}

/// One sentence a person can act on: the runtime's message stays first in
/// the error; this follows it.
pub fn refusal_sentence(memory: &Value) -> Option<String> {
    let r = memory["refused"].as_object()?;
    let n = |k: &str| r[k].as_u64().unwrap_or(0);
    let core = memory["cores"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["pcore"] == r["pcore"]);
    let mut largest: Vec<(String, u64)> = core
        .and_then(|c| c["columns"].as_object())
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
        .filter(|&(_, b)| b > 0)
        .collect();
    largest.sort_by_key(|p| std::cmp::Reverse(p.1));
    let list: Vec<String> = largest
        .iter()
        .map(|(what, b)| format!("{what} {}", units::human(*b)))
        .collect();
    Some(format!(
        "{} {:?} ({}) needs {} on nc{}, whose HBM {} holds {} with {} free; nc{} holds {}",
        r["category"].as_str().unwrap_or("?"),
        r["name"].as_str().unwrap_or("?"),
        r["column"].as_str().unwrap_or("?"),
        units::bytes(n("size")),
        n("pcore"),
        n("hbm"),
        units::human(n("hbm_total")),
        units::human(n("hbm_free")),
        n("pcore"),
        if list.is_empty() {
            "nothing".to_string()
        } else {
            list.join(", ")
        }
    ))
}

/// The human table: the runtime's usage table of each HBM shown, then the
/// NEFF id → name mapping.
pub fn human(report: &MemoryReport, memory: &Value, refused: Option<&Refused>) -> String {
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
    let neffs: Vec<&Value> = memory["cores"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["neffs"].as_array().into_iter().flatten())
        .collect();
    if !neffs.is_empty() {
        let _ = writeln!(t, "NEFF id to name mapping:");
        let mut seen = Vec::new();
        for n in neffs {
            if !seen.contains(&n["id"]) {
                seen.push(n["id"].clone());
                let _ = writeln!(t, "{}: {}", n["id"], n["name"]);
            }
        }
    }
    t
}

/// The cores of one `memory.hbm` entry: `nc0, nc1`.
pub fn sharing(hbm: &Value) -> String {
    let cores: Vec<String> = hbm["cores"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| format!("nc{c}"))
        .collect();
    cores.join(", ")
}
