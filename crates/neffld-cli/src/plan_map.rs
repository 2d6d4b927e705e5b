//! `neffld plan --map FILE.html`: the whole instance on one self-contained
//! page — chip by chip, HBM by HBM, one bar per physical core on the HBM's
//! scale, split into what the runtime holds, each NEFF and each tensor, by
//! the runtime's usage-table category — drawn from `plan --json`'s
//! document. Every part is labelled in text as well as drawn: a segment
//! narrower than 2 px would vanish, so the figures are listed beside the bars.

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

/// The parts of one core's bar.
fn parts(core: &Value, tensors: &[&Value]) -> Vec<Part> {
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
        let label = format!("NEFF {} \"{}\"", x["id"], x["name"].as_str().unwrap_or(""));
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
    let mut y = 6.0;
    let mut list = String::new();
    for core in hbm["cores"].as_array().into_iter().flatten() {
        let pcore = n(&core["pcore"]);
        let tensors: Vec<&Value> = doc["tensors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| n(&t["device"]) == device && n(&t["pcore"]) == pcore)
            .collect();
        let _ = writeln!(
            svg,
            "<text x=\"4\" y=\"{:.0}\" class=\"core\">nc{pcore}</text>\
             <rect x=\"{LEFT}\" y=\"{y:.0}\" width=\"{:.1}\" height=\"{BAR}\" class=\"free\"/>",
            y + BAR - 5.0,
            WIDTH - LEFT - RIGHT
        );
        let mut x = LEFT;
        for (label, class, cols) in parts(core, &tensors) {
            let total: u64 = cols.iter().map(|c| c.1).sum();
            let _ = write!(svg, "<g class=\"{class}\"><title>{}</title>", esc(&label));
            for (i, bytes) in &cols {
                let w = (*bytes as f64 * scale).max(2.0);
                let _ = write!(
                    svg,
                    "<rect x=\"{x:.1}\" y=\"{y:.0}\" width=\"{w:.1}\" height=\"{BAR}\" fill=\"{}\"><title>nc{pcore} {} · {} · {}</title></rect>",
                    FILLS[*i],
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
                    "<li class=\"{class}\">nc{pcore} · {} · {} ({})</li>",
                    esc(&label),
                    units::human(total),
                    esc(&detail.join(", "))
                );
            }
        }
        y += BAR + 8.0;
    }
    format!(
        "<svg class=\"hbm\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{:.0}\">\n{svg}</svg>\n<ul>\n{list}</ul>\n",
        y + 2.0
    )
}

/// The whole page from `plan --json`'s document.
pub fn render(doc: &Value) -> String {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let inst = &doc["instance"];
    let mut html = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>neffld plan</title>\n<style>\
         body{font-family:sans-serif;margin:16px} svg{display:block;margin:4px 0}\
         svg text{font:12px monospace} .free{fill:#e9ecef} ul{font:12px monospace;margin:0 0 12px 0}\
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
                .map(|c| format!("nc{}", c["pcore"]))
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
    html.push_str("</body></html>\n");
    html
}
