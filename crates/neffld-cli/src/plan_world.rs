//! The human report's world of ranks (`plan --world`) and the collectives
//! memory a plan's rows leave out: runs of alike ranks and NEFFs are one
//! line each; the JSON document keeps every rank and NEFF.

use std::fmt::Write as _;

use neffld::plan::deployment::core_list;
use neffld::plan::{DisagreementKind, Plan};
use neffld::text::count;

use crate::style::Style;

/// Disagreements printed in full; the rest are counted (the JSON document
/// holds every one).
const SHOWN: usize = 8;

/// The world: its shape, its ranks by host, and whether they agree.
pub fn world(t: &mut String, p: &Plan, style: Style) {
    let Some(w) = &p.world else { return };
    let s = &w.shape;
    let on = p
        .instance
        .map_or(format!("{} chip", p.arch.instance()), |i| {
            i.name.to_string()
        });
    let _ = writeln!(
        t,
        "\nworld     {} on {} of {on} ({} each); root communicator {}{}; runtime {} compares {}; at most {} per NEFF",
        count(u64::from(s.size), "rank"),
        count(u64::from(s.hosts), "host"),
        count(u64::from(s.cores_per_host), "logical core"),
        w.root_comm,
        if s.root_comm_assumed {
            " (assumed: NEURON_RT_ROOT_COMM_ID is not set)"
        } else {
            ""
        },
        p.line,
        if w.signature_check {
            "each replica group's signature (operations, sizes, peers, in order)"
        } else {
            "how many collectives each rank has"
        },
        count(u64::from(w.replica_group_cap), "replica group"),
    );
    // Consecutive ranks of one file, host and collectives are one line.
    let mut at = 0;
    while at < w.ranks.len() {
        let r = &w.ranks[at];
        let alike = |x: &neffld::plan::RankPlan| {
            (x.file == r.file, x.host, x.collectives, x.groups)
                == (true, r.host, r.collectives, r.groups)
        };
        let n = w.ranks[at..].iter().take_while(|x| alike(x)).count();
        let run = &w.ranks[at..at + n];
        let ranks: Vec<u32> = run.iter().map(|x| x.rank).collect();
        let cores: Vec<u32> = run.iter().filter_map(|x| x.core).collect();
        let _ = writeln!(
            t,
            "ranks     {}: {} {}; {} in {}{}",
            core_list(&ranks),
            r.file.display(),
            match r.host {
                Some(h) => format!(
                    "on host {h}, {} {}",
                    if cores.len() == 1 { "core" } else { "cores" },
                    core_list(&cores)
                ),
                None => "not run (the plan stopped before)".into(),
            },
            count(r.collectives as u64, "collective"),
            count(r.groups as u64, "replica group"),
            if n > 1 { " each" } else { "" },
        );
        at += n;
    }
    if w.ranks.len() < s.size as usize {
        let never: Vec<u32> = (w.ranks.len() as u32..s.size).collect();
        let _ = writeln!(t, "ranks     {}: no load step", core_list(&never));
    }
    if w.agrees() {
        let _ = writeln!(
            t,
            "{}",
            style.ok("agree     yes: every replica group's ranks do the same collectives in the same order, every send meets its receive, and every peer loads")
        );
        return;
    }
    let _ = writeln!(
        t,
        "{}",
        style.fail(&format!(
            "agree     no: {}",
            count(w.disagreements.len() as u64, "disagreement")
        ))
    );
    for d in w.disagreements.iter().take(SHOWN) {
        let kind = match d.kind {
            DisagreementKind::WorldSize => "world size",
            DisagreementKind::Mismatch => "mismatch",
            DisagreementKind::Deadlock => "deadlock",
            _ => "disagreement",
        };
        let _ = writeln!(
            t,
            "  - step {} (rank {}) [{kind}]: {}",
            d.step + 1,
            d.ranks.1,
            d.what
        );
        for line in &d.runtime_log {
            let _ = writeln!(t, "      runtime {} logs: {line}", p.line);
        }
    }
    if w.disagreements.len() > SHOWN {
        let _ = writeln!(
            t,
            "  ({} more in --json's world.disagreements)",
            w.disagreements.len() - SHOWN
        );
    }
}

/// What the memory rows leave out: each NEFF's collectives, which no
/// public fact sizes; runs of one file and note are one line.
pub fn collectives_memory(t: &mut String, p: &Plan) {
    let mut at = 0;
    while at < p.neffs.len() {
        let n0 = &p.neffs[at];
        let Some(note) = &n0.collectives_not_counted else {
            at += 1;
            continue;
        };
        let n = p.neffs[at..]
            .iter()
            .take_while(|x| x.file == n0.file && x.collectives_not_counted.as_ref() == Some(note))
            .count();
        let run = &p.neffs[at..at + n];
        let ranks: Vec<u32> = run.iter().filter_map(|x| x.rank).collect();
        let whose = match ranks.len() {
            0 => String::new(),
            1 => format!(" on rank {}", ranks[0]),
            _ => format!(" on each of ranks {}", core_list(&ranks)),
        };
        let loads = if ranks.is_empty() && n > 1 {
            format!(", each of {n} loads")
        } else {
            String::new()
        };
        let _ = writeln!(t, "{note}{whose} ({}{loads})", n0.file.display());
        at += n;
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The map's section of the world (`plan --map` with `--world`): its shape,
/// its ranks by host, every disagreement with the runtime's lines, and the
/// collectives memory the bars leave out.
pub fn world_html(r: &neffld::plan::PlanReport) -> String {
    let mut out = String::new();
    let notes: Vec<&str> = r
        .neffs
        .iter()
        .filter_map(|n| n.collectives_not_counted.as_deref())
        .collect();
    if let Some(w) = &r.world {
        let s = &w.shape;
        let _ = writeln!(
            out,
            "<h2>World</h2>\n<p>{} on {} ({} each), root communicator {}{}; {}</p>\n<ul class=\"world\">",
            count(u64::from(s.size), "rank"),
            count(u64::from(s.hosts), "host"),
            count(u64::from(s.cores_per_host), "logical core"),
            esc(&w.root_comm),
            if s.root_comm_assumed { " (assumed)" } else { "" },
            if w.agrees() {
                "the ranks agree"
            } else {
                "<span class=\"fail\">the ranks do not agree</span>"
            }
        );
        let mut at = 0;
        while at < w.ranks.len() {
            let first = &w.ranks[at];
            let n = w.ranks[at..]
                .iter()
                .take_while(|x| x.file == first.file && x.host == first.host)
                .count();
            let ranks: Vec<u32> = w.ranks[at..at + n].iter().map(|x| x.rank).collect();
            let cores: Vec<u32> = w.ranks[at..at + n].iter().filter_map(|x| x.core).collect();
            let _ = writeln!(
                out,
                "<li>ranks {}: {} on {}{}</li>",
                core_list(&ranks),
                esc(&first.file.display().to_string()),
                first
                    .host
                    .map_or("no host (not run)".into(), |h| format!("host {h}")),
                if cores.is_empty() {
                    String::new()
                } else {
                    format!(", logical cores {}", core_list(&cores))
                }
            );
            at += n;
        }
        for d in &w.disagreements {
            let _ = writeln!(
                out,
                "<li class=\"fail\">step {}: {}{}</li>",
                d.step + 1,
                esc(&d.what),
                d.runtime_log
                    .iter()
                    .map(|l| format!("<br><code>{}</code>", esc(l)))
                    .collect::<String>()
            );
        }
        out.push_str("</ul>\n");
    }
    if !notes.is_empty() {
        out.push_str("<h2>Not counted</h2>\n<ul class=\"uncounted\">\n");
        let mut shown: Vec<&str> = Vec::new();
        for n in &r.neffs {
            let Some(note) = n.collectives_not_counted.as_deref() else {
                continue;
            };
            // One line per NEFF file: its ranks' notes differ by the rank.
            if shown.contains(&n.file.as_str()) {
                continue;
            }
            shown.push(&n.file);
            let more = r
                .neffs
                .iter()
                .filter(|m| m.file == n.file && m.collectives_not_counted.is_some())
                .count();
            let _ = writeln!(
                out,
                "<li>{} ({}{})</li>",
                esc(note),
                esc(&n.file),
                if more > 1 {
                    format!(", and its {} other loads alike", more - 1)
                } else {
                    String::new()
                }
            );
        }
        out.push_str("</ul>\n");
    }
    out
}
