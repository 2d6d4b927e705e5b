//! `neffld plan --map FILE.html`: the whole instance on one self-contained
//! page — chip by chip, each HBM once: one bar on the HBM's scale holding
//! every core that uses it one after the other (so a neighbour's use is
//! seen where it takes room), each core's span marked with its physical and
//! logical core, split into what the runtime holds, each NEFF (header name
//! and file) and each tensor, by the runtime's usage-table category; then
//! the NEFFs with their ranks grouped, the headroom and the advice — drawn
//! from `plan --json`'s document. Every part is labelled in text as well as
//! drawn: a segment narrower than 2 px would vanish, so the figures are
//! listed beside the bars.

use std::fmt::Write as _;

use neffld::report::Column;
use serde_json::Value;

use crate::units;

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const BAR: f64 = 18.0;

/// One fill per usage-table column, in the table's order.
const FILLS: [&str; Column::COUNT] = [
    "#c92a2a", "#2b8a3e", "#1c7ed6", "#e67700", "#ae3ec9", "#0c8599", "#5c940d", "#d6336c",
    "#364fc7", "#a61e4d", "#495057", "#f08c00", "#20c997",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// One part of a core's bar: who holds it (a label and a class: runtime,
/// neff or tensor) and its bytes by column index.
type Part = (String, &'static str, Vec<(usize, u64)>);

/// The file name (without its folder) of a path.
fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The logical core of a physical core (`ND device`, `pcore`), from the
/// steps that ran on it.
fn logical(doc: &Value, device: u64, pcore: u64) -> Option<u64> {
    doc["steps"].as_array()?.iter().find_map(|s| {
        let on = s["device"].as_u64() == Some(device)
            && s["pcores"]
                .as_array()
                .is_some_and(|p| p.iter().any(|x| x.as_u64() == Some(pcore)));
        on.then(|| s["core"].as_u64()).flatten()
    })
}

/// The parts of one core's bar.
fn parts(core: &Value, tensors: &[&Value], doc: &Value) -> Vec<Part> {
    let cols = |c: &Value| -> Vec<(usize, u64)> {
        Column::ALL
            .iter()
            .enumerate()
            .map(|(i, col)| (i, n(&c[col.name()])))
            .filter(|&(_, b)| b > 0)
            .collect()
    };
    let mut out = Vec::new();
    // What the core's models and tensors do not hold is the runtime's.
    let mut runtime: Vec<(usize, u64)> = Column::ALL
        .iter()
        .enumerate()
        .map(|(i, col)| {
            let all = n(&core["columns"][col.name()]);
            let neffs: u64 = core["neffs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| n(&x["columns"][col.name()]))
                .sum();
            let client: u64 = if *col == Column::Tensors {
                tensors.iter().map(|t| n(&t["size"])).sum()
            } else {
                0
            };
            (i, all.saturating_sub(neffs + client))
        })
        .collect();
    runtime.retain(|&(_, b)| b > 0);
    out.push(("runtime".to_string(), "runtime", runtime));
    for x in core["neffs"].as_array().into_iter().flatten() {
        let file = doc["neffs"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["id"] == x["id"])
            .and_then(|r| r["file"].as_str())
            .map_or(String::new(), |f| format!(" ({})", base(f)));
        let label = format!(
            "NEFF {} \"{}\"{file}",
            x["id"],
            x["name"].as_str().unwrap_or("")
        );
        out.push((label, "neff", cols(&x["columns"])));
    }
    for t in tensors {
        out.push((
            format!("tensor {}", t["name"].as_str().unwrap_or("")),
            "tensor",
            vec![(Column::Tensors as usize, n(&t["size"]))],
        ));
    }
    out
}

fn hbm_svg(device: u64, hbm: &Value, doc: &Value) -> String {
    let size = n(&hbm["size"]).max(1);
    let scale = (WIDTH - LEFT - RIGHT) / size as f64;
    let mut svg = String::new();
    let mut list = String::new();
    let y = 6.0;
    // One bar for the HBM: each core's parts after the previous core's.
    let _ = writeln!(
        svg,
        "<text x=\"4\" y=\"{:.0}\" class=\"core\">HBM {}</text>\
         <rect x=\"{LEFT}\" y=\"{y:.0}\" width=\"{:.1}\" height=\"{BAR}\" class=\"free\"/>",
        y + BAR - 5.0,
        hbm["hbm"],
        WIDTH - LEFT - RIGHT
    );
    let mut x = LEFT;
    let mut marks = String::new();
    for core in hbm["cores"].as_array().into_iter().flatten() {
        let pcore = n(&core["pcore"]);
        let vnc = logical(doc, device, pcore);
        let who = match vnc {
            Some(v) => format!("nc{pcore} (core {v})"),
            None => format!("nc{pcore}"),
        };
        let tensors: Vec<&Value> = doc["tensors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| n(&t["device"]) == device && n(&t["pcore"]) == pcore)
            .collect();
        let start = x;
        for (label, class, cols) in parts(core, &tensors, doc) {
            let total: u64 = cols.iter().map(|c| c.1).sum();
            let _ = write!(svg, "<g class=\"{class}\"><title>{}</title>", esc(&label));
            for (i, bytes) in &cols {
                let w = (*bytes as f64 * scale).max(2.0);
                let _ = write!(
                    svg,
                    "<rect x=\"{x:.1}\" y=\"{y:.0}\" width=\"{w:.1}\" height=\"{BAR}\" fill=\"{}\"><title>{} {} · {} · {}</title></rect>",
                    FILLS[*i],
                    esc(&who),
                    esc(&label),
                    Column::ALL[*i].name(),
                    units::bytes(*bytes)
                );
                x = (x + w).min(WIDTH - RIGHT);
            }
            let _ = writeln!(svg, "</g>");
            if total > 0 {
                let detail: Vec<String> = cols
                    .iter()
                    .map(|(i, b)| format!("{} {}", Column::ALL[*i].name(), units::human(*b)))
                    .collect();
                let _ = writeln!(
                    list,
                    "<li class=\"{class}\">nc{pcore} · {} · {} ({}){}</li>",
                    esc(&label),
                    units::human(total),
                    esc(&detail.join(", ")),
                    vnc.map_or(String::new(), |v| format!(" · logical core {v}"))
                );
            }
        }
        // The core's span, marked under the bar (labelled when wide enough
        // for its label; the heading names every core either way).
        if x - start >= 90.0 {
            let _ = writeln!(
                marks,
                "<line x1=\"{start:.1}\" x2=\"{:.1}\" y1=\"{:.0}\" y2=\"{:.0}\" stroke=\"#343a40\"/>\
                 <text x=\"{start:.1}\" y=\"{:.0}\" class=\"core\">{}</text>",
                x,
                y + BAR + 3.0,
                y + BAR + 3.0,
                y + BAR + 16.0,
                esc(&who)
            );
        }
    }
    format!(
        "<svg class=\"hbm\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{:.0}\">\n{svg}{marks}</svg>\n<ul>\n{list}</ul>\n",
        y + BAR + 24.0
    )
}

/// The NEFFs loaded, ranks of one file grouped: file, header name, how many
/// loads on which logical cores.
fn neffs_html(doc: &Value) -> String {
    let mut groups: Vec<(String, String, Vec<u32>)> = Vec::new();
    for r in doc["neffs"].as_array().into_iter().flatten() {
        let file = r["file"].as_str().unwrap_or("").to_string();
        let name = r["name"].as_str().unwrap_or("").to_string();
        let core = r["core"].as_u64().unwrap_or(0) as u32;
        match groups.iter_mut().find(|g| g.0 == file && g.1 == name) {
            Some(g) => g.2.push(core),
            None => groups.push((file, name, vec![core])),
        }
    }
    if groups.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>NEFFs</h2>\n<ul class=\"neffs\">\n");
    for (file, name, cores) in groups {
        let _ = writeln!(
            out,
            "<li>{} (\"{}\") × {} on logical core{} {}</li>",
            esc(base(&file)),
            esc(&name),
            cores.len(),
            if cores.len() == 1 { "" } else { "s" },
            neffld::plan::deployment::core_list(&cores)
        );
    }
    out.push_str("</ul>\n");
    out
}

/// Headroom, cores with the same figures grouped; solve; advice.
fn answers_html(doc: &Value) -> String {
    let mut out = String::new();
    let rows = doc["headroom"].as_array().cloned().unwrap_or_default();
    if !rows.is_empty() {
        out.push_str("<h2>Headroom</h2>\n<ul class=\"headroom\">\n");
        let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
        for h in &rows {
            let shared = h["shared_with"].as_array().cloned().unwrap_or_default();
            let core = h["core"].as_u64().unwrap_or(0);
            if shared.iter().any(|o| o.as_u64().is_some_and(|o| o < core)) {
                continue;
            }
            let copies: Vec<String> = h["copies"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    format!(
                        "{}{} more of {}",
                        if c["at_least"] == true { "≥" } else { "" },
                        c["count"],
                        base(c["file"].as_str().unwrap_or(""))
                    )
                })
                .collect();
            let text = format!(
                "HBM {}{}: {} free, largest tensor {}{}",
                h["hbm"],
                if shared.is_empty() {
                    String::new()
                } else {
                    " (shared by these cores, counted once)".to_string()
                },
                units::human(n(&h["hbm_free"])),
                units::human_floor(n(&h["largest_tensor"])),
                if copies.is_empty() {
                    String::new()
                } else {
                    format!("; {}", copies.join(", "))
                }
            );
            let mut cores = vec![core as u32];
            cores.extend(shared.iter().filter_map(|o| o.as_u64()).map(|o| o as u32));
            match groups.iter_mut().find(|g| g.0 == text) {
                Some(g) => g.1.extend(cores),
                None => groups.push((text, cores)),
            }
        }
        for (text, mut cores) in groups {
            cores.sort_unstable();
            let _ = writeln!(
                out,
                "<li>logical core{} {}: {}</li>",
                if cores.len() == 1 { "" } else { "s" },
                neffld::plan::deployment::core_list(&cores),
                esc(&text)
            );
        }
        out.push_str("</ul>\n");
    }
    let solve = &doc["solve"];
    if !solve.is_null() {
        let answer = if let Some(b) = solve["bytes"].as_u64() {
            format!("at most {b} bytes ({}) on each core", units::human_floor(b))
        } else if let Some(r) = solve["ranks"].as_u64() {
            format!("{r} more of {} tried", solve["tried"])
        } else {
            format!("no answer: {}", solve["unanswered"].as_str().unwrap_or(""))
        };
        let _ = writeln!(
            out,
            "<h2>Solve</h2>\n<p>{}: {}</p>",
            esc(solve["query"].as_str().unwrap_or("")),
            esc(&answer)
        );
    }
    let advice = doc["advice"].as_array().cloned().unwrap_or_default();
    if !advice.is_empty() || !doc["no_fix"].is_null() {
        out.push_str("<h2>Advice</h2>\n<ul class=\"advice\">\n");
        for a in &advice {
            let argv: Vec<&str> = a["argv"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| w.as_str())
                .collect();
            let _ = writeln!(
                out,
                "<li>{} — {} (fits: {})<br><code>{}</code></li>",
                esc(a["change"].as_str().unwrap_or("")),
                esc(a["reason"].as_str().unwrap_or("")),
                if a["fits"] == true { "yes" } else { "no" },
                esc(&argv.join(" "))
            );
        }
        if let Some(n) = doc["no_fix"].as_str() {
            let _ = writeln!(out, "<li class=\"fail\">{}</li>", esc(n));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// The whole page from `plan --json`'s document.
pub fn render(doc: &Value) -> String {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let inst = &doc["instance"];
    let mut html = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>neffld plan</title>\n<style>\
         body{font-family:sans-serif;margin:16px} svg{display:block;margin:4px 0}\
         svg text{font:12px monospace} .free{fill:#e9ecef} ul{font:12px monospace;margin:0 0 12px 0}\
         code{font:12px monospace}\
         .legend span{display:inline-block;padding:2px 8px;margin:2px;color:#fff;border-radius:3px;font-size:12px}\
         .fail{color:#c92a2a} section.chip{border-top:1px solid #adb5bd;margin-top:10px}\
         </style></head><body>\n",
    );
    let _ = writeln!(
        html,
        "<h1>neffld plan: {}</h1>\n<p>{} chip{} ({} cores, {} HBMs each), LNC {}, runtime {} — {}</p>",
        esc(inst["name"].as_str().unwrap_or(inst["arch"].as_str().unwrap_or(""))),
        inst["chips"],
        if n(&inst["chips"]) == 1 { "" } else { "s" },
        inst["cores_per_chip"],
        inst["hbms_per_chip"],
        inst["lnc"],
        esc(&s(&doc["runtime"])),
        if doc["fits"] == true {
            "every step fits".to_string()
        } else {
            "a step was refused".to_string()
        }
    );
    if !doc["error"].is_null() {
        let _ = writeln!(
            html,
            "<p class=\"fail\">{}</p>",
            esc(&s(&doc["error"]["message"]))
        );
    }
    html.push_str("<p class=\"legend\">");
    for (i, c) in Column::ALL.iter().enumerate() {
        let _ = write!(
            html,
            "<span style=\"background:{}\">{}</span>",
            FILLS[i],
            c.name()
        );
    }
    html.push_str("</p>\n");
    html.push_str(&neffs_html(doc));
    for dev in doc["memory"]["devices"].as_array().into_iter().flatten() {
        let nd = n(&dev["device"]);
        let _ = writeln!(
            html,
            "<section class=\"chip\"><h2>ND {nd}{}</h2>",
            inst["chip"]
                .as_str()
                .map_or(String::new(), |c| format!(" ({c})"))
        );
        for hbm in dev["hbms"].as_array().into_iter().flatten() {
            let cores: Vec<String> = hbm["cores"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let p = n(&c["pcore"]);
                    match logical(doc, nd, p) {
                        Some(v) => format!("nc{p} (logical core {v})"),
                        None => format!("nc{p}"),
                    }
                })
                .collect();
            let _ = writeln!(
                html,
                "<h3>ND {nd} HBM {} — cores {} — {} used, {} free</h3>",
                hbm["hbm"],
                cores.join(", "),
                esc(&units::used_of(n(&hbm["used"]), n(&hbm["size"]))),
                units::human(n(&hbm["free"]))
            );
            let r = &doc["refusal"];
            if r["device"].as_u64() == Some(nd) && r["hbm"] == hbm["hbm"] {
                let _ = writeln!(
                    html,
                    "<p class=\"fail\">did not fit: nc{} {} {} needs {}, {} free</p>",
                    r["pcore"],
                    esc(r["usage"].as_str().unwrap_or("")),
                    esc(r["what"].as_str().unwrap_or("")),
                    units::human(n(&r["size"])),
                    units::human(n(&hbm["free"]))
                );
            }
            html.push_str(&hbm_svg(nd, hbm, doc));
        }
        html.push_str("</section>\n");
    }
    html.push_str(&answers_html(doc));
    html.push_str("</body></html>\n");
    html
}
