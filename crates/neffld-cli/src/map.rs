//! `neffld load --map FILE.html`: one self-contained page, one SVG per HBM.
//! Cores that share an HBM share its picture. Each picture has three linear
//! axes, each labelled with device addresses:
//!
//! - the whole HBM, so used / total is seen at a glance;
//! - the allocated span, one row per device allocation (scratchpad
//!   included), label and size written beside it, not only on hover;
//! - per allocation that holds variables, a zoom on those variables, so
//!   aliased ones (spill variables sharing scratchpad) are drawn overlapping.
//!
//! A row is never narrower than 2 px, so a 4 KiB allocation beside a 16 GiB
//! one stays visible; its exact extent is in its label.
//! The page is written on failure too, with what was placed before it.

use std::fmt::Write as _;

use neffld::report::MonitorCategory;

use crate::load_doc::{CoreDoc, LoadDoc, VariableDoc};
use crate::memory::{AllocationDoc, HbmDoc, RefusedDoc};
use crate::{collectives, memory, units};

const WIDTH: f64 = 1260.0;
/// Where bars start; labels sit to the left of it.
const LEFT: f64 = 560.0;
const RIGHT: f64 = 20.0;
const ROW: f64 = 16.0;
const TICKS: u32 = 6;
/// Longest label drawn (the hover text always has the whole name).
const LABEL_MAX: usize = 84;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The fill of each of neuron-top's categories, the one set of names both
/// maps (this load map and the plan's) colour memory by.
pub fn fill(c: MonitorCategory) -> &'static str {
    match c {
        MonitorCategory::Tensors => "#1c7ed6",
        MonitorCategory::Constants => "#2b8a3e",
        MonitorCategory::ModelCode => "#c92a2a",
        MonitorCategory::RuntimeMemory => "#e67700",
        MonitorCategory::ModelScratchpad => "#ae3ec9",
    }
}

fn short(label: &str) -> String {
    if label.chars().count() <= LABEL_MAX {
        return label.to_string();
    }
    let tail: String = label.chars().rev().take(LABEL_MAX - 1).collect();
    format!("…{}", tail.chars().rev().collect::<String>())
}

/// A linear map from `[lo, hi)` onto the bar area.
#[derive(Clone, Copy)]
struct Axis {
    lo: u64,
    hi: u64,
}

impl Axis {
    fn new(lo: u64, hi: u64) -> Axis {
        Axis {
            lo,
            hi: hi.max(lo + 1),
        }
    }

    fn x(self, addr: u64) -> f64 {
        let span = (self.hi - self.lo) as f64;
        LEFT + (WIDTH - LEFT - RIGHT) * (addr.saturating_sub(self.lo) as f64 / span).min(1.0)
    }

    /// A bar's left edge and width (at least 2 px).
    fn bar(self, addr: u64, size: u64) -> (f64, f64) {
        let x0 = self.x(addr);
        let x1 = self.x(addr.saturating_add(size));
        (x0.min(WIDTH - RIGHT - 2.0), (x1 - x0).max(2.0))
    }

    /// The axis line with `TICKS + 1` address labels; returns the new y.
    fn draw(self, svg: &mut String, y: f64, title: &str) -> f64 {
        let _ = writeln!(
            svg,
            "<text x=\"4\" y=\"{y:.0}\" class=\"h\">{}</text>",
            esc(title)
        );
        let y = y + 22.0;
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{y:.0}\" x2=\"{:.0}\" y2=\"{y:.0}\" class=\"axis\"/>",
            WIDTH - RIGHT
        );
        // Ticks on round addresses: a power-of-two step giving at most TICKS intervals.
        let step = ((self.hi - self.lo) / u64::from(TICKS))
            .max(1)
            .next_power_of_two();
        let first = self.lo.div_ceil(step) * step;
        let ticks: Vec<u64> = std::iter::successors(Some(first), |a| a.checked_add(step))
            .take_while(|&a| a <= self.hi)
            .collect();
        for &a in &ticks {
            let x = self.x(a);
            let anchor = if x < LEFT + 30.0 {
                "start"
            } else if x > WIDTH - RIGHT - 30.0 {
                "end"
            } else {
                "middle"
            };
            let _ = writeln!(
                svg,
                "<line x1=\"{x:.1}\" y1=\"{:.0}\" x2=\"{x:.1}\" y2=\"{:.0}\" class=\"axis\"/>\
                 <text x=\"{x:.1}\" y=\"{:.0}\" text-anchor=\"{anchor}\" class=\"tick\">{a:#x}</text>",
                y - 4.0,
                y + 4.0,
                y - 7.0
            );
        }
        y + 6.0
    }
}

/// One labelled row: text on the left, a bar on an axis.
struct Row<'a> {
    label: &'a str,
    addr: u64,
    size: u64,
    fill: &'a str,
    /// `alloc` or `var`, for the page's checks.
    class: &'a str,
}

impl Row<'_> {
    fn draw(&self, svg: &mut String, y: f64, axis: Axis) {
        let (x, w) = axis.bar(self.addr, self.size);
        let _ = writeln!(
            svg,
            "<g class=\"{}\"><title>{} — {:#x}..{:#x}, {}</title>\
             <text x=\"4\" y=\"{:.0}\">{}</text>\
             <rect x=\"{x:.1}\" y=\"{:.0}\" width=\"{w:.1}\" height=\"{:.0}\" fill=\"{}\"/></g>",
            self.class,
            esc(self.label),
            self.addr,
            self.addr.saturating_add(self.size),
            units::bytes(self.size),
            y + ROW - 4.0,
            esc(&short(self.label)),
            y + 2.0,
            ROW - 3.0,
            self.fill
        );
    }
}

/// Variables of `cores` with a device address inside `[lo, lo + size)` on `pcore`.
fn variables_in(cores: &[CoreDoc], pcore: u32, lo: u64, size: u64) -> Vec<&VariableDoc> {
    cores
        .iter()
        .filter(|c| c.pcore == pcore)
        .flat_map(|c| &c.variables)
        .filter(|v| {
            matches!(v.placement, "hbm" | "scratchpad")
                && v.address
                    .is_some_and(|a| a >= lo && a < lo.saturating_add(size))
        })
        .collect()
}

/// Splits address-sorted allocations where a gap is wider than an eighth of
/// the whole allocated span, so each axis stays linear yet neighbours of a
/// few KiB are not crushed by a distant GiB-sized block.
fn clusters<'a>(sorted: &[&'a AllocationDoc]) -> Vec<Vec<&'a AllocationDoc>> {
    let lo = sorted.iter().map(|a| a.address).min().unwrap_or(0);
    let hi = sorted
        .iter()
        .map(|a| a.address.saturating_add(a.size))
        .max()
        .unwrap_or(0);
    let wide = (hi - lo) / 8;
    let mut out: Vec<Vec<&AllocationDoc>> = Vec::new();
    let mut end = 0u64;
    for &a in sorted {
        match out.last_mut() {
            Some(group) if a.address <= end.saturating_add(wide) => group.push(a),
            _ => out.push(vec![a]),
        }
        end = end.max(a.address.saturating_add(a.size));
    }
    out
}

/// The picture of one HBM.
fn hbm_svg(
    hbm: &HbmDoc,
    allocations: &[&AllocationDoc],
    cores: &[CoreDoc],
    refused: Option<&RefusedDoc>,
) -> String {
    // The axis starts after the firmware carve-out, at the runtime's
    // address of the first allocatable byte.
    let base = hbm.base;
    let total = hbm.allocatable;
    let used = hbm.used;
    let mut svg = String::new();
    let mut y = 18.0;
    // 1. The whole HBM.
    let whole = Axis::new(base, base + total);
    y = whole.draw(
        &mut svg,
        y,
        &format!(
            "whole HBM {}: {} used",
            hbm.hbm,
            units::used_of(used, total)
        ),
    );
    for a in allocations {
        let (x, w) = whole.bar(a.address, a.size);
        let _ = writeln!(
            svg,
            "<rect x=\"{x:.1}\" y=\"{:.0}\" width=\"{w:.1}\" height=\"14\" fill=\"{}\"><title>{}</title></rect>",
            y + 2.0,
            fill(a.shown),
            esc(&a.name)
        );
    }
    y += 30.0;
    if allocations.is_empty() {
        let _ = writeln!(svg, "<text x=\"4\" y=\"{y:.0}\">nothing placed</text>");
        y += 20.0;
    } else {
        // 2. Every allocation, on one linear axis per cluster of neighbours.
        for group in clusters(allocations) {
            let lo = group.iter().map(|a| a.address).min().unwrap_or(base);
            let hi = group
                .iter()
                .map(|a| a.address.saturating_add(a.size))
                .max()
                .unwrap_or(lo + 1);
            let span = Axis::new(lo, hi);
            y = span.draw(
                &mut svg,
                y,
                &format!("allocations {lo:#x} – {hi:#x} ({})", units::human(hi - lo)),
            );
            for a in &group {
                let label = format!(
                    "nc{} {} {} · {} @ {:#x}",
                    a.pcore,
                    a.category,
                    a.name,
                    units::human(a.size),
                    a.address
                );
                Row {
                    label: &label,
                    addr: a.address,
                    size: a.size,
                    fill: fill(a.shown),
                    class: "alloc",
                }
                .draw(&mut svg, y, span);
                y += ROW;
            }
            y += 18.0;
        }
        // 3. Variables inside each allocation, on a zoom of their extent.
        for a in allocations {
            let vars = variables_in(cores, a.pcore, a.address, a.size);
            let at = |v: &VariableDoc| v.address.unwrap_or(0);
            let size = |v: &VariableDoc| v.size.unwrap_or(0);
            let nested: Vec<&VariableDoc> = vars
                .into_iter()
                .filter(|v| !(at(v) == a.address && size(v) == a.size))
                .collect();
            if nested.is_empty() {
                continue;
            }
            let vlo = nested.iter().map(|v| at(v)).min().unwrap_or(0);
            let vhi = nested
                .iter()
                .map(|v| at(v).saturating_add(size(v)))
                .max()
                .unwrap_or(vlo + 1);
            let zoom = Axis::new(vlo, vhi);
            y = zoom.draw(
                &mut svg,
                y,
                &format!(
                    "variables in nc{} {} (zoom {vlo:#x} – {vhi:#x}; overlapping bars share bytes)",
                    a.pcore, a.name
                ),
            );
            for v in nested {
                let label = format!(
                    "var {} ({}) · {} @ {:#x}",
                    v.name,
                    v.kind,
                    units::human(size(v)),
                    at(v)
                );
                Row {
                    label: &label,
                    addr: at(v),
                    size: size(v),
                    fill: "#868e96",
                    class: "var",
                }
                .draw(&mut svg, y, zoom);
                y += ROW;
            }
            y += 18.0;
        }
    }
    if let Some(r) = refused.filter(|r| r.hbm == Some(hbm.hbm)) {
        let _ = writeln!(
            svg,
            "<text x=\"4\" y=\"{y:.0}\" class=\"refused\">did not fit: nc{} {} {} needs {}, {} free</text>",
            r.pcore,
            esc(r.category),
            esc(&r.name),
            units::human(r.size),
            units::human(hbm.free)
        );
        y += 20.0;
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{:.0}\">\n{svg}</svg>",
        y + 6.0
    )
}

/// The whole page from `load`'s report (its cores empty when the load
/// failed).
pub fn render(out: &LoadDoc) -> String {
    let memory = &out.memory;
    let mut html = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>neffld memory map</title>\n<style>\
         body{font-family:sans-serif;margin:16px} svg{display:block;margin-bottom:12px}\
         svg text{font:11px monospace} svg text.h{font:bold 12px sans-serif} svg text.tick{font:10px monospace;fill:#555}\
         svg text.refused{font:bold 12px sans-serif;fill:#c92a2a} .axis{stroke:#333;stroke-width:1}\
         .legend span{display:inline-block;padding:2px 8px;margin-right:6px;color:#fff;border-radius:3px}\
         .fail{color:#c92a2a} table.cc{border-collapse:collapse;font:12px monospace}\
         table.cc td,table.cc th{border:1px solid #ccc;padding:2px 6px;text-align:left}\
         </style></head><body>\n",
    );
    let outcome = &out.stamp.outcome;
    let _ = writeln!(
        html,
        "<h1>{}</h1>\n<p>a simulated {} device ({} backend) — model \"{}\" — status <b>{}</b></p>",
        esc(&out.file),
        esc(out.arch),
        esc(out.device),
        esc(out.model.as_ref().map_or("(not loaded)", |m| &m.name)),
        esc(outcome.status)
    );
    if let Some(e) = &outcome.error {
        let _ = writeln!(
            html,
            "<p class=\"fail\">{} failed: {} — the map shows what was placed before the failure.</p>",
            esc(e.stage),
            esc(&e.message)
        );
    }
    let allocations: Vec<&AllocationDoc> = memory.allocations.iter().collect();
    html.push_str("<p class=\"legend\">");
    for c in MonitorCategory::ALL
        .into_iter()
        .filter(|&c| allocations.iter().any(|a| a.shown == c))
    {
        let _ = write!(
            html,
            "<span style=\"background:{}\">{}</span>",
            fill(c),
            c.name()
        );
    }
    html.push_str("<span style=\"background:#868e96\">variable</span></p>\n");
    for h in &memory.hbm {
        let mut mine: Vec<&AllocationDoc> = allocations
            .iter()
            .copied()
            .filter(|a| a.hbm == h.hbm)
            .collect();
        mine.sort_by_key(|a| (a.address, a.pcore));
        let _ = writeln!(
            html,
            "<h2>HBM {} — cores {} — {}</h2>\n{}",
            h.hbm,
            memory::sharing(h),
            esc(&units::used_of(h.used, h.size)),
            hbm_svg(h, &mine, out.cores(), memory.refused.as_ref())
        );
    }
    collectives_table(&mut html, out);
    html.push_str("</body></html>\n");
    html
}

/// The NEFF's collectives, each with the device address of the record it
/// became, under the pictures.
fn collectives_table(html: &mut String, out: &LoadDoc) {
    let Some(list) = out.collectives.as_ref().filter(|l| !l.is_empty()) else {
        return;
    };
    let _ = writeln!(html, "<h2>collectives</h2>");
    if let Some(note) = &out.collectives_memory {
        let _ = writeln!(html, "<p>{}</p>", esc(note));
    }
    html.push_str(
        "<table class=\"cc\"><tr><th>subgraph</th><th>record</th><th>address</th><th>operation</th>\
         <th>elements in</th><th>elements out</th><th>bytes out</th><th>with</th><th>from → to</th></tr>\n",
    );
    for d in list {
        let c = &d.collective;
        let var = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{} {}#{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} → {}</td></tr>",
            esc(&c.subgraph),
            c.form,
            c.engine,
            c.index,
            d.record_address.map_or_else(|| "-".into(), |a| format!("{a:#x}")),
            esc(&collectives::what(c)),
            c.elements_in,
            c.elements_out,
            esc(&units::human(c.bytes_out)),
            esc(&collectives::with(c)),
            esc(&var(&c.input)),
            esc(&var(&c.output))
        );
    }
    html.push_str("</table>\n");
}
