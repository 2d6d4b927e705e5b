//! `neffld plan --map FILE.html`: the whole instance on one self-contained
//! page — chip by chip, each HBM once: one bar on the HBM's scale holding
//! every core that uses it one after the other (so a neighbour's use is
//! seen where it takes room), each core's span marked with its physical and
//! logical core, split into what the runtime holds, each NEFF (header name
//! and file) and each tensor, by neuron-top's category (the names the load
//! map colours by too); then the NEFFs with their ranks grouped (ranks
//! whose allocations are the same listed once for all of them), the
//! headroom and the advice — drawn from the library's report of the plan
//! ([`PlanReport`]). Every part is labelled in text as well as drawn: a
//! segment narrower than 2 px would vanish, so the figures are listed
//! beside the bars.

use std::collections::HashSet;
use std::fmt::Write as _;

use neffld::plan::report::{CoreEntry, HbmEntry, HeadroomEntry, TensorEntry};
use neffld::plan::PlanReport;
use neffld::report::{MonitorCategory, MonitorUsage};

use crate::map::fill;
use crate::units;

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const BAR: f64 = 18.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One part of a core's bar: who holds it (a label and a class: runtime,
/// neff or tensor) and its bytes by neuron-top's category.
type Part = (String, &'static str, Vec<(MonitorCategory, u64)>);

/// A part's bytes in words: the total and each category.
fn figures(cats: &[(MonitorCategory, u64)]) -> (u64, String) {
    let total = cats.iter().map(|c| c.1).sum();
    let detail: Vec<String> = cats
        .iter()
        .map(|(c, b)| format!("{} {}", c.name(), units::human(*b)))
        .collect();
    (total, detail.join(", "))
}

/// The parts of physical core `pcore` of device `device`.
fn core_parts(core: &CoreEntry, device: u32, r: &PlanReport) -> Vec<Part> {
    let tensors: Vec<&TensorEntry> = r
        .tensors
        .iter()
        .filter(|t| t.device == device && t.pcore == core.pcore)
        .collect();
    parts(core, &tensors, r)
}

/// Ranks with identical allocations: logical cores whose physical cores
/// hold the same parts (the NEFFs' ids aside), at least one NEFF among
/// them; listed once for all of them instead of once per core.
struct Ranks {
    /// The logical cores, in order.
    cores: Vec<u32>,
    /// Their physical cores (`ND`, `nc`).
    members: Vec<(u32, u32)>,
    /// Per physical core of one rank, in order: its parts, the NEFFs
    /// labelled without their ids.
    parts: Vec<Vec<Part>>,
}

/// A physical core (`ND`, `nc`) of a logical core, with its parts.
type CoreParts = ((u32, u32), Vec<Part>);

/// Groups of two ranks or more with identical allocations.
fn rank_groups(r: &PlanReport) -> Vec<Ranks> {
    use std::collections::BTreeMap;
    // Each logical core's physical cores, with their parts.
    let mut by_core: BTreeMap<u32, Vec<CoreParts>> = BTreeMap::new();
    for dev in &r.memory.devices {
        for hbm in &dev.hbms {
            for core in &hbm.cores {
                if let Some(v) = r.logical_core(dev.device, core.pcore) {
                    let shared: Vec<Part> = core_parts(core, dev.device, r)
                        .into_iter()
                        .map(|(label, class, cols)| {
                            let label = match class {
                                // `NEFF 12 "name" (file)` → `NEFF "name" (file)`.
                                "neff" => {
                                    match label.split_once(' ').and_then(|(_, t)| t.split_once(' '))
                                    {
                                        Some((_, rest)) => format!("NEFF {rest}"),
                                        None => label,
                                    }
                                }
                                _ => label,
                            };
                            (label, class, cols)
                        })
                        .collect();
                    by_core
                        .entry(v)
                        .or_default()
                        .push(((dev.device, core.pcore), shared));
                }
            }
        }
    }
    let mut groups: Vec<Ranks> = Vec::new();
    for (v, mut pcores) in by_core {
        pcores.sort_by_key(|(at, _)| *at);
        let has_neff = pcores
            .iter()
            .any(|(_, parts)| parts.iter().any(|p| p.1 == "neff"));
        if !has_neff {
            continue;
        }
        let (members, parts): (Vec<(u32, u32)>, Vec<Vec<Part>>) = pcores.into_iter().unzip();
        match groups.iter_mut().find(|g| g.parts == parts) {
            Some(g) => {
                g.cores.push(v);
                g.members.extend(members);
            }
            None => groups.push(Ranks {
                cores: vec![v],
                members,
                parts,
            }),
        }
    }
    groups.retain(|g| g.cores.len() > 1);
    groups
}

/// The ranks with identical allocations, each group once.
fn ranks_html(groups: &[Ranks]) -> String {
    if groups.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>Ranks with identical allocations</h2>\n<ul class=\"ranks\">\n");
    for g in groups {
        let mut neffs: Vec<&str> = Vec::new();
        for p in g.parts.iter().flatten().filter(|p| p.1 == "neff") {
            if !neffs.contains(&p.0.as_str()) {
                neffs.push(&p.0);
            }
        }
        let each: Vec<String> = g
            .parts
            .iter()
            .enumerate()
            .map(|(k, parts)| {
                let listed: Vec<String> = parts
                    .iter()
                    .filter_map(|(label, _, cols)| {
                        let (total, detail) = figures(cols);
                        (total > 0).then(|| format!("{label} · {} ({detail})", units::human(total)))
                    })
                    .collect();
                if g.parts.len() == 1 {
                    listed.join("; ")
                } else {
                    format!(
                        "physical core {} of {}: {}",
                        k + 1,
                        g.parts.len(),
                        listed.join("; ")
                    )
                }
            })
            .collect();
        let members: Vec<String> = g.members.iter().map(|(d, p)| format!("{d}:{p}")).collect();
        let _ = writeln!(
            out,
            "<li class=\"ranks\" data-pcores=\"{}\">{} ×{} ranks on logical cores {}, each: {}</li>",
            members.join(" "),
            esc(&neffs.join(" + ")),
            g.cores.len(),
            neffld::plan::deployment::core_list(&g.cores),
            esc(&each.join(" | "))
        );
    }
    out.push_str("</ul>\n");
    out
}

/// The file name (without its folder) of a path.
fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The parts of one core's bar.
fn parts(core: &CoreEntry, tensors: &[&TensorEntry], r: &PlanReport) -> Vec<Part> {
    let cols = |u: &MonitorUsage| -> Vec<(MonitorCategory, u64)> {
        MonitorCategory::ALL
            .iter()
            .map(|&c| (c, u.get(c)))
            .filter(|&(_, b)| b > 0)
            .collect()
    };
    let mut out = vec![("runtime".to_string(), "runtime", cols(&core.runtime))];
    for x in &core.neffs {
        let file = r
            .neffs
            .iter()
            .find(|n| n.id == x.id)
            .map_or(String::new(), |n| format!(" ({})", base(&n.file)));
        let label = format!(
            "NEFF {} \"{}\"{file}",
            x.id,
            x.name.as_deref().unwrap_or("")
        );
        out.push((label, "neff", cols(&x.categories)));
    }
    for t in tensors {
        out.push((
            format!("tensor {}", t.name),
            "tensor",
            vec![(MonitorCategory::Tensors, t.size)],
        ));
    }
    out
}

/// One HBM's picture, and the list of what each core on it holds (a core
/// of a group of identical ranks is listed with its group, `grouped`).
fn hbm_svg(device: u32, hbm: &HbmEntry, r: &PlanReport, grouped: &HashSet<(u32, u32)>) -> String {
    let size = hbm.size.max(1);
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
        hbm.hbm,
        WIDTH - LEFT - RIGHT
    );
    let mut x = LEFT;
    let mut marks = String::new();
    for core in &hbm.cores {
        let pcore = core.pcore;
        let vnc = r.logical_core(device, pcore);
        let who = match vnc {
            Some(v) => format!("nc{pcore} (core {v})"),
            None => format!("nc{pcore}"),
        };
        let start = x;
        let listed = !grouped.contains(&(device, pcore));
        for (label, class, cols) in core_parts(core, device, r) {
            let (total, detail) = figures(&cols);
            let _ = write!(svg, "<g class=\"{class}\"><title>{}</title>", esc(&label));
            for (c, bytes) in &cols {
                let w = (*bytes as f64 * scale).max(2.0);
                let _ = write!(
                    svg,
                    "<rect x=\"{x:.1}\" y=\"{y:.0}\" width=\"{w:.1}\" height=\"{BAR}\" fill=\"{}\"><title>{} {} · {} · {}</title></rect>",
                    fill(*c),
                    esc(&who),
                    esc(&label),
                    c.name(),
                    units::bytes(*bytes)
                );
                x = (x + w).min(WIDTH - RIGHT);
            }
            let _ = writeln!(svg, "</g>");
            if total > 0 && listed {
                let _ = writeln!(
                    list,
                    "<li class=\"{class}\">nc{pcore} · {} · {} ({}){}</li>",
                    esc(&label),
                    units::human(total),
                    esc(&detail),
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
fn neffs_html(r: &PlanReport) -> String {
    let mut groups: Vec<(&str, &str, Vec<u32>)> = Vec::new();
    for n in &r.neffs {
        match groups.iter_mut().find(|g| g.0 == n.file && g.1 == n.name) {
            Some(g) => g.2.push(n.core),
            None => groups.push((&n.file, &n.name, vec![n.core])),
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
            esc(base(file)),
            esc(name),
            cores.len(),
            if cores.len() == 1 { "" } else { "s" },
            neffld::plan::deployment::core_list(&cores)
        );
    }
    out.push_str("</ul>\n");
    out
}

/// Headroom, cores with the same figures grouped; solve; advice.
fn answers_html(r: &PlanReport) -> String {
    let mut out = String::new();
    if !r.headroom.is_empty() {
        out.push_str("<h2>Headroom</h2>\n<ul class=\"headroom\">\n");
        // Cores with the same figures are one line, whatever their chip or
        // HBM: the line names the cores and the HBMs they are on.
        let copies_of = |h: &HeadroomEntry| -> Vec<String> {
            h.copies
                .iter()
                .map(|c| match &c.refused {
                    Some(e) => format!("{} cannot load here [{}]", base(&c.file), e.status),
                    None => format!(
                        "{}{} more of {}",
                        if c.at_least { "≥" } else { "" },
                        c.count,
                        base(&c.file)
                    ),
                })
                .collect()
        };
        // A line: its figures, its cores, their (device, HBM) pairs.
        type Line = (String, Vec<u32>, Vec<(u32, u32)>);
        let mut groups: Vec<Line> = Vec::new();
        for h in &r.headroom {
            // A core on an HBM an earlier core of the plan shares is that
            // core's line, unless its copies differ (its own pages there).
            let first = h
                .shared_with
                .iter()
                .filter(|&&o| o < h.core)
                .min()
                .and_then(|&o| r.headroom.iter().find(|x| x.core == o));
            if first.is_some_and(|f| copies_of(f) == copies_of(h)) {
                continue;
            }
            let copies = copies_of(h);
            let text = format!(
                "{}{} free, largest tensor {}{}",
                match (h.shared_with.is_empty(), first.is_some()) {
                    (true, _) => String::new(),
                    (false, false) => "each HBM shared by cores of the plan, counted once: ".into(),
                    (false, true) => "on this core, the HBM shared with an earlier one: ".into(),
                },
                units::human(h.hbm_free),
                units::human(h.largest_tensor),
                if copies.is_empty() {
                    String::new()
                } else {
                    format!("; {}", copies.join(", "))
                }
            );
            let mut cores = vec![h.core];
            if first.is_none() {
                cores.extend(&h.shared_with);
            }
            match groups.iter_mut().find(|g| g.0 == text) {
                Some(g) => {
                    g.1.extend(cores);
                    g.2.push((h.device, h.hbm));
                }
                None => groups.push((text, cores, vec![(h.device, h.hbm)])),
            }
        }
        for (text, mut cores, mut hbms) in groups {
            cores.sort_unstable();
            cores.dedup();
            hbms.sort_unstable();
            hbms.dedup();
            let on = match hbms[..] {
                [(nd, hbm)] => format!("ND {nd} HBM {hbm}"),
                _ => {
                    let mut nds: Vec<u32> = hbms.iter().map(|x| x.0).collect();
                    let mut ids: Vec<u32> = hbms.iter().map(|x| x.1).collect();
                    nds.dedup();
                    ids.sort_unstable();
                    ids.dedup();
                    format!(
                        "{} HBMs (ND {}, HBM {})",
                        hbms.len(),
                        neffld::plan::deployment::core_list(&nds),
                        neffld::plan::deployment::core_list(&ids)
                    )
                }
            };
            let _ = writeln!(
                out,
                "<li>logical core{} {} on {on}: {}</li>",
                if cores.len() == 1 { "" } else { "s" },
                neffld::plan::deployment::core_list(&cores),
                esc(&text)
            );
        }
        out.push_str("</ul>\n");
    }
    if let Some(solve) = &r.solve {
        let answer = if let Some(b) = solve.bytes {
            format!("at most {b} bytes ({}) on each core", units::human(b))
        } else if let Some(n) = solve.ranks {
            let per_core = solve.per_core.as_deref().unwrap_or_default();
            let mut said = format!(
                "{}{n} cop{} fit ({})",
                if solve.ceiling.is_some() {
                    "at least "
                } else {
                    ""
                },
                if n == 1 { "y" } else { "ies" },
                per_core
                    .iter()
                    .map(|c| format!("{} on core {}", c.copies, c.core))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if let Some(c) = &solve.ceiling {
                let _ = write!(said, "; counting stopped at neffld's own ceiling {c}");
            } else if let Some(e) = &solve.stopped {
                let _ = write!(said, "; one more refused [{}]: {}", e.status, e.message);
            }
            said
        } else {
            format!("no answer: {}", solve.unanswered.as_deref().unwrap_or(""))
        };
        let _ = writeln!(
            out,
            "<h2>Solve</h2>\n<p>{}: {}</p>",
            esc(&solve.query),
            esc(&answer)
        );
    }
    if !r.advice.is_empty() || r.no_fix.is_some() {
        out.push_str("<h2>Advice</h2>\n<ul class=\"advice\">\n");
        for a in &r.advice {
            let _ = writeln!(
                out,
                "<li>{} — {} (fits: {})<br><code>{}</code></li>",
                esc(&a.change),
                esc(&a.reason),
                if a.fits { "yes" } else { "no" },
                esc(&crate::plan_text::shell_words(&a.argv))
            );
        }
        if let Some(n) = &r.no_fix {
            let _ = writeln!(out, "<li class=\"fail\">{}</li>", esc(n));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// The whole page from the library's report of the plan.
pub fn render(r: &PlanReport) -> String {
    let inst = &r.instance;
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
        esc(inst.name.unwrap_or(inst.arch)),
        inst.chips,
        if inst.chips == 1 { "" } else { "s" },
        inst.cores_per_chip,
        inst.hbms_per_chip,
        inst.lnc,
        esc(&r.runtime.to_string()),
        if r.fits {
            "every step fits".to_string()
        } else {
            "a step was refused".to_string()
        }
    );
    if let Some(e) = r.failed_step().and_then(|s| s.error.as_ref()) {
        let _ = writeln!(html, "<p class=\"fail\">{}</p>", esc(&e.message));
    }
    html.push_str("<p class=\"legend\">");
    for c in MonitorCategory::ALL {
        let _ = write!(
            html,
            "<span style=\"background:{}\">{}</span>",
            fill(c),
            c.name()
        );
    }
    html.push_str("</p>\n");
    html.push_str(&neffs_html(r));
    html.push_str(&crate::plan_world::world_html(r));
    let groups = rank_groups(r);
    html.push_str(&ranks_html(&groups));
    let grouped: HashSet<(u32, u32)> = groups.iter().flat_map(|g| g.members.clone()).collect();
    for dev in &r.memory.devices {
        let nd = dev.device;
        // A world over several hosts numbers their devices one after the
        // other: each is named with its host.
        let host = r
            .world
            .as_ref()
            .filter(|w| w.shape.hosts > 1)
            .map_or(String::new(), |w| {
                format!(", host {}", nd / w.shape.chips_per_host.max(1))
            });
        let _ = writeln!(
            html,
            "<section class=\"chip\"><h2>ND {nd}{}{host}</h2>",
            inst.chip.map_or(String::new(), |c| format!(" ({c})"))
        );
        for hbm in &dev.hbms {
            let cores: Vec<String> = hbm
                .cores
                .iter()
                .map(|c| {
                    let p = c.pcore;
                    match r.logical_core(nd, p) {
                        Some(v) => format!("nc{p} (logical core {v})"),
                        None => format!("nc{p}"),
                    }
                })
                .collect();
            let _ = writeln!(
                html,
                "<h3>ND {nd} HBM {} — cores {} — {} used, {} free</h3>",
                hbm.hbm,
                cores.join(", "),
                esc(&units::used_of(hbm.used, hbm.size)),
                units::human(hbm.free)
            );
            if let Some(f) = r
                .refusal
                .as_ref()
                .filter(|f| f.device == nd && f.hbm == Some(hbm.hbm))
            {
                let _ = writeln!(
                    html,
                    "<p class=\"fail\">did not fit: nc{} {} {} needs {}, {} free</p>",
                    f.pcore,
                    esc(f.usage),
                    esc(&f.what),
                    units::human(f.size),
                    units::human(hbm.free)
                );
            }
            html.push_str(&hbm_svg(nd, hbm, r, &grouped));
        }
        html.push_str("</section>\n");
    }
    html.push_str(&answers_html(r));
    html.push_str("</body></html>\n");
    html
}
