//! The memory report: what the device holds per core and per HBM, by the
//! library's own usage categories (whatever names it reports appear as
//! rows, none is listed here), every allocation, and — when a load ran out
//! of memory — the request that did not fit.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use neffld::device::{Geometry, LiveAlloc};
use neffld::ids::PCore;
use serde_json::{json, Value};

use crate::recorder::Refused;
use crate::units;

/// The `memory` object of `load --json` (docs/cli.md).
pub fn report(geometry: &Geometry, placed: &[LiveAlloc], refused: Option<&Refused>) -> Value {
    let total = geometry.usable_bytes_per_channel();
    let hbm_of = |c: PCore| geometry.hbm_of(c).unwrap_or(0);
    let mut cores: BTreeMap<u32, BTreeMap<&'static str, u64>> = BTreeMap::new();
    let mut channels: BTreeMap<u32, u64> = BTreeMap::new();
    for a in placed {
        *cores
            .entry(a.core.0)
            .or_default()
            .entry(a.usage.name())
            .or_default() += a.charged;
        *channels.entry(a.channel).or_default() += a.charged;
    }
    if let Some(r) = refused {
        cores.entry(r.core.0).or_default();
        channels.entry(hbm_of(r.core)).or_default();
    }
    let core_rows: Vec<Value> = cores
        .iter()
        .map(|(&c, cats)| {
            json!({"pcore": c, "hbm": hbm_of(PCore(c)), "used": cats.values().sum::<u64>(),
                   "hbm_total": total, "categories": cats})
        })
        .collect();
    let hbm_rows: Vec<Value> = channels
        .iter()
        .map(|(&ch, &used)| {
            let sharing: Vec<u32> = (0..geometry.cores())
                .filter(|&c| hbm_of(PCore(c)) == ch)
                .collect();
            json!({"hbm": ch, "cores": sharing, "used": used, "total": total})
        })
        .collect();
    let allocations: Vec<Value> = placed
        .iter()
        .map(|a| {
            json!({"pcore": a.core.0, "hbm": a.channel, "category": a.usage.name(), "name": a.hint,
                   "address": a.pa.0, "size": a.size, "charged": a.charged})
        })
        .collect();
    let refused = refused.map_or(Value::Null, |r| {
        let ch = hbm_of(r.core);
        json!({"pcore": r.core.0, "hbm": ch, "name": r.hint, "category": r.usage, "size": r.size,
               "hbm_used": channels.get(&ch).copied().unwrap_or(0), "hbm_total": total})
    });
    json!({"cores": core_rows, "hbm": hbm_rows, "allocations": allocations, "refused": refused})
}

/// One sentence a person can act on: the runtime's message stays first in
/// the error; this follows it.
pub fn refusal_sentence(memory: &Value) -> Option<String> {
    let r = memory["refused"].as_object()?;
    let n = |k: &str| r[k].as_u64().unwrap_or(0);
    let ch = n("hbm");
    let mut placed: Vec<(String, u64)> = Vec::new();
    for c in memory["cores"].as_array().into_iter().flatten() {
        if c["hbm"].as_u64() != Some(ch) {
            continue;
        }
        for (cat, b) in c["categories"].as_object().into_iter().flatten() {
            placed.push((format!("nc{} {cat}", c["pcore"]), b.as_u64().unwrap_or(0)));
        }
    }
    placed.sort_by_key(|p| std::cmp::Reverse(p.1));
    let list: Vec<String> = placed
        .iter()
        .map(|(what, b)| format!("{what} {}", units::human(*b)))
        .collect();
    Some(format!(
        "{} {:?} needs {} on nc{}, whose HBM {ch} holds {} of which {} is already placed ({})",
        r["category"].as_str().unwrap_or("?"),
        r["name"].as_str().unwrap_or("?"),
        units::bytes(n("size")),
        n("pcore"),
        units::human(n("hbm_total")),
        units::human(n("hbm_used")),
        if list.is_empty() {
            "nothing".to_string()
        } else {
            list.join(", ")
        }
    ))
}

/// The human table: categories down, cores across, then used / total per
/// core and per HBM.
pub fn human(memory: &Value) -> String {
    let mut t = String::new();
    let cores: Vec<&Value> = memory["cores"].as_array().into_iter().flatten().collect();
    if cores.is_empty() {
        return t;
    }
    let mut cats: Vec<&str> = cores
        .iter()
        .flat_map(|c| c["categories"].as_object().into_iter().flatten())
        .map(|(k, _)| k.as_str())
        .collect();
    cats.sort_unstable();
    cats.dedup();
    let cell = |b: u64| format!("{b} ({})", units::human(b));
    let _ = writeln!(t, "\nmemory (device HBM charged, by category)");
    let _ = write!(t, "  {:<24}", "category");
    for c in &cores {
        let _ = write!(t, " {:>24}", format!("nc{}", c["pcore"]));
    }
    let _ = writeln!(t);
    for cat in &cats {
        let _ = write!(t, "  {cat:<24}");
        for c in &cores {
            let b = c["categories"][*cat].as_u64();
            let _ = write!(t, " {:>24}", b.map_or("-".to_string(), cell));
        }
        let _ = writeln!(t);
    }
    let _ = write!(t, "  {:<24}", "total");
    for c in &cores {
        let _ = write!(t, " {:>24}", cell(c["used"].as_u64().unwrap_or(0)));
    }
    let _ = writeln!(t);
    for c in &cores {
        let _ = writeln!(
            t,
            "  nc{} uses {} of HBM {}",
            c["pcore"],
            units::used_of(
                c["used"].as_u64().unwrap_or(0),
                c["hbm_total"].as_u64().unwrap_or(0)
            ),
            c["hbm"]
        );
    }
    for h in memory["hbm"].as_array().into_iter().flatten() {
        let _ = writeln!(
            t,
            "  HBM {} (cores {}): {} used",
            h["hbm"],
            sharing(h),
            units::used_of(
                h["used"].as_u64().unwrap_or(0),
                h["total"].as_u64().unwrap_or(0)
            )
        );
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
