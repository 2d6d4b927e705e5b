//! `neffld load --map FILE.html`: one self-contained page with an SVG per
//! core showing where every variable, instruction image, ring and table
//! landed. Items are laid out left to right in address order on a
//! compressed axis — widths grow with log2 of the size and unused address
//! ranges collapse into small breaks — because a linear axis over a 24 GiB
//! channel turns every allocation into a hairline. Hovering shows the exact
//! name, address and size (SVG `<title>`, no script needed).

use serde_json::Value;

const WIDTH: f64 = 1180.0;
const LEFT: f64 = 430.0;
const ROW: f64 = 18.0;
/// Longest label drawn (the hover text always has the whole name).
const LABEL_MAX: usize = 64;
/// Pixels drawn for a collapsed gap between two non-adjacent items.
const GAP: f64 = 6.0;

struct Item {
    label: String,
    kind: &'static str,
    addr: u64,
    size: u64,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn color(kind: &str) -> &'static str {
    match kind {
        "weight" => "#2b8a3e",
        "scratchpad" => "#e67700",
        "state-buffer" => "#868e96",
        "image" => "#1c7ed6",
        "ring" => "#ae3ec9",
        "table" => "#c92a2a",
        _ => "#495057",
    }
}

fn items(core: &Value) -> Vec<Item> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let mut out = Vec::new();
    for v in core["variables"].as_array().into_iter().flatten() {
        let (Some(addr), Some(size)) = (v["address"].as_u64(), v["size"].as_u64()) else {
            continue;
        };
        let kind = match (v["placement"].as_str(), v["type"].as_str()) {
            (Some("state-buffer"), _) => "state-buffer",
            (Some("scratchpad"), _) => "scratchpad",
            (_, Some("file")) => "weight",
            _ => "variable",
        };
        out.push(Item {
            label: format!("var {} ({})", s(&v["name"]), s(&v["type"])),
            kind,
            addr,
            size,
        });
    }
    for e in core["images"].as_array().into_iter().flatten() {
        let (addr, size) = (
            e["address"].as_u64().unwrap_or(0),
            e["bytes"].as_u64().unwrap_or(0),
        );
        out.push(Item {
            label: format!("{} instructions", s(&e["engine"])),
            kind: "image",
            addr,
            size,
        });
    }
    for r in core["rings"].as_array().into_iter().flatten() {
        let (addr, size) = (
            r["address"].as_u64().unwrap_or(0),
            r["bytes"].as_u64().unwrap_or(0),
        );
        out.push(Item {
            label: format!("ring {}", s(&r["queue"])),
            kind: "ring",
            addr,
            size,
        });
    }
    for t in core["tables"].as_array().into_iter().flatten() {
        let (addr, size) = (
            t["address"].as_u64().unwrap_or(0),
            t["bytes"].as_u64().unwrap_or(0),
        );
        out.push(Item {
            label: format!("table {}", s(&t["table"])),
            kind: "table",
            addr,
            size,
        });
    }
    out.sort_by_key(|i| (i.kind == "state-buffer", i.addr));
    out
}

fn weight(size: u64) -> f64 {
    1.0 + (size.max(1) as f64 / 4096.0 + 1.0).log2()
}

fn short(label: &str) -> String {
    if label.chars().count() <= LABEL_MAX {
        return label.to_string();
    }
    let tail: String = label
        .chars()
        .rev()
        .take(LABEL_MAX - 1)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("…{tail}")
}

/// One SVG: HBM items on one axis, state-buffer items on another.
fn svg(core: &Value) -> String {
    let all = items(core);
    let mut body = String::new();
    let mut y = 24.0;
    for (title, sb) in [("HBM", false), ("state buffer", true)] {
        let group: Vec<&Item> = all
            .iter()
            .filter(|i| (i.kind == "state-buffer") == sb)
            .collect();
        if group.is_empty() {
            continue;
        }
        let lo = group.iter().map(|i| i.addr).min().unwrap_or(0);
        let hi = group
            .iter()
            .map(|i| i.addr.saturating_add(i.size.max(1)))
            .max()
            .unwrap_or(lo + 1);
        // Compressed axis: each item's left edge is the sum of the widths of
        // the items before it (overlapping items share their start).
        let mut starts = Vec::with_capacity(group.len());
        let (mut x, mut prev_start, mut prev_end) = (0.0f64, None::<u64>, 0u64);
        for i in &group {
            if prev_start == Some(i.addr) {
                starts.push(*starts.last().unwrap_or(&0.0));
                continue;
            }
            if prev_start.is_some() && i.addr > prev_end {
                x += GAP;
            }
            starts.push(x);
            x += weight(i.size) * 6.0;
            prev_start = Some(i.addr);
            prev_end = prev_end.max(i.addr.saturating_add(i.size));
        }
        let scale = ((WIDTH - LEFT - 10.0) / x.max(1.0)).min(4.0);
        body.push_str(&format!(
            "<text x=\"4\" y=\"{y}\" class=\"h\">{title}: {lo:#x} – {hi:#x} (address order, widths ∝ log2 size, gaps collapsed)</text>\n"
        ));
        y += 8.0;
        for (i, x0) in group.iter().zip(starts) {
            y += ROW;
            let w = (weight(i.size) * 6.0 * scale).max(2.0);
            body.push_str(&format!(
                "<g><title>{} — address {:#x}, {} bytes</title><text x=\"4\" y=\"{:.0}\">{}</text>\
                 <rect x=\"{:.1}\" y=\"{:.0}\" width=\"{w:.1}\" height=\"{:.0}\" fill=\"{}\"/></g>\n",
                esc(&i.label),
                i.addr,
                i.size,
                y,
                esc(&short(&i.label)),
                LEFT + x0 * scale,
                y - ROW + 6.0,
                ROW - 4.0,
                color(i.kind)
            ));
        }
        y += 20.0;
    }
    format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{:.0}\">\n{body}</svg>", y + 10.0)
}

/// The whole page.
pub fn render(out: &Value, cores: &[Value]) -> String {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let mut html = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>neffld memory map</title>\n<style>\
         body{font-family:sans-serif;margin:16px} svg text{font:11px monospace} svg text.h{font:bold 12px sans-serif}\
         .legend span{display:inline-block;padding:2px 8px;margin-right:6px;color:#fff;border-radius:3px}\
         </style></head><body>\n",
    );
    html.push_str(&format!(
        "<h1>{}</h1>\n<p>{} on a simulated {} device — model \"{}\", status {}</p>\n<p class=\"legend\">",
        esc(&s(&out["file"])),
        esc(&s(&out["arch"])),
        esc(&s(&out["device"])),
        esc(&s(&out["model"]["name"])),
        esc(&s(&out["status"]))
    ));
    for k in [
        "weight",
        "scratchpad",
        "image",
        "ring",
        "table",
        "variable",
        "state-buffer",
    ] {
        html.push_str(&format!(
            "<span style=\"background:{}\">{k}</span>",
            color(k)
        ));
    }
    html.push_str("</p>\n");
    for c in cores {
        html.push_str(&format!(
            "<h2>core nc{} — HBM {} — subgraph {} — {} bytes</h2>\n{}\n",
            c["pcore"],
            c["hbm"],
            esc(&s(&c["subgraph"])),
            c["hbm_bytes"],
            svg(c)
        ));
    }
    html.push_str("</body></html>\n");
    html
}
