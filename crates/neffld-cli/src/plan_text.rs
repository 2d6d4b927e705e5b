//! The human report of `neffld plan`: the library's plan, section by
//! section, as a reader takes it in (what was planned and whether it fits,
//! the runtime's refusal, the steps, the memory where the plan stopped, the
//! headroom, the advice). Runs of alike entries are one line each; the
//! JSON document keeps every entry.

use std::fmt::Write as _;

use neffld::plan::deployment::core_list;
use neffld::plan::{self, Headroom, Plan, Solve, SolveAnswer, Step, StepFailure};
use neffld::report::{HbmMemory, MemoryReport};
use neffld::text::count;

use crate::style::Style;
use crate::units;

pub fn human(p: &Plan, style: Style) -> String {
    let mut t = String::new();
    summary(&mut t, p, style);
    refusal(&mut t, p);
    crate::plan_world::world(&mut t, p, style);
    steps(&mut t, p);
    memory(&mut t, p);
    crate::plan_world::collectives_memory(&mut t, p);
    crate::plan_top::device_used(&mut t, p);
    headroom(&mut t, p);
    advice(&mut t, p, style);
    t
}

/// What was planned, whether it fits, the solve answer and the HBMs in use.
fn summary(t: &mut String, p: &Plan, style: Style) {
    let i = p.instance_facts();
    let _ = writeln!(
        t,
        "plan      {}: {} chip{} of {} cores and {} HBMs of {}; LNC {} ({} logical cores{}); runtime {}; {}",
        p.instance.map_or(format!("one {} chip", p.arch.instance()), |i| i.name.to_string()),
        p.chips,
        if p.chips == 1 { "" } else { "s" },
        i.cores_per_chip,
        i.hbms_per_chip,
        units::human(i.hbm_size),
        p.lnc,
        i.logical_cores,
        i.visible.as_ref().map_or(String::new(), |v| format!(
            ", {} visible with {}={}",
            v.cores.len(),
            v.var,
            v.value
        )),
        p.line,
        if p.contiguous_scratchpad {
            format!(
                "contiguous scratchpad in {} steps{}",
                units::human(p.scratchpad_page),
                p.unused_page_size.map_or(String::new(), |b| format!(
                    " (NEURON_SCRATCHPAD_PAGE_SIZE={} has no effect on it)",
                    b >> 20
                ))
            )
        } else {
            format!("scratchpad pages {}", units::human(p.scratchpad_page))
        },
    );
    for note in &p.notes {
        let _ = writeln!(t, "note      {note}");
    }
    match p.failed_step() {
        None if p.planned == 0 => {
            let _ = writeln!(
                t,
                "fits      nothing to fit: no step, the question is asked of the empty instance"
            );
        }
        None => {
            let _ = writeln!(
                t,
                "{}",
                style.ok(&format!(
                    "fits      yes: all {}",
                    count(p.planned as u64, "step")
                ))
            );
        }
        Some((n, s, f)) => {
            // A refusal with the bytes free that it asked is headed by why
            // (one contiguous block, the largest is ...), the message after.
            let reason = p
                .refusal
                .as_ref()
                .filter(|r| r.step == n)
                .and_then(|r| r.reason());
            let _ = writeln!(
                t,
                "{}",
                style.fail(&format!(
                    "fits      no: step {} of {} ({} {}) {}",
                    n + 1,
                    p.planned,
                    step_text(&s.step),
                    // A load for the next free core that found none has no core.
                    s.vnc
                        .map_or("on the next free core".into(), |v| format!("on core {v}")),
                    match &reason {
                        Some(why) => format!("refused [{}]: {why}", f.status),
                        None => refused(f),
                    },
                ))
            );
            if reason.is_some() {
                let _ = writeln!(t, "          {}", f.message);
            }
        }
    }
    if let Some(line) = solve_text(p) {
        let _ = writeln!(t, "{line}");
    }
    let mut busy: Vec<(u32, &HbmMemory)> = p
        .devices
        .iter()
        .flat_map(|m| shown(m).map(move |h| (m.device, h)))
        .collect();
    let line = |(nd, h): &(u32, &HbmMemory)| {
        format!(
            "ND {nd} HBM {} {} used, {} free",
            h.hbm,
            units::human(h.usage().total()),
            units::human(h.free())
        )
    };
    if busy.len() > 4 {
        // Many HBMs: the fullest and the emptiest of those in use.
        busy.sort_by_key(|(_, h)| std::cmp::Reverse(h.held));
        let _ = writeln!(
            t,
            "memory    {} HBMs in use; fullest {}; least used {}",
            busy.len(),
            line(&busy[0]),
            line(&busy[busy.len() - 1])
        );
    } else if !busy.is_empty() {
        let all: Vec<String> = busy.iter().map(line).collect();
        let _ = writeln!(t, "memory    {}", all.join("; "));
    }
}

/// The refusal as the runtime logs it, and why it has more free than asked.
fn refusal(t: &mut String, p: &Plan) {
    if let Some(r) = &p.refusal {
        let _ = writeln!(t, "\nthe refusal, as the runtime logs it");
        if r.log.is_empty() {
            let _ = writeln!(
                t,
                "(no usage report: NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG=0 silences it)"
            );
        }
        for (f, m) in &r.log {
            let _ = writeln!(t, "ERROR  TDRV:{f:<40}{m}");
        }
        if !r.log.is_empty() && !p.line.neff_usage_table() {
            let _ = writeln!(
                t,
                "(runtime {} printed no usage table with a row per NEFF: that came with runtime 2.26.42; its \"Overall HBM usage\" list is not documented in full, and the table under \"memory where the plan stopped\" is neffld's)",
                p.line
            );
        }
        if let Some(why) = r.explain() {
            let _ = writeln!(t, "why       {why}");
        }
    }
}

/// The steps: consecutive steps of one file or tensor with one result (the
/// ranks of one NEFF) are one line, their cores listed together.
fn steps(t: &mut String, p: &Plan) {
    // A question asked of the empty instance has no step to list.
    if p.steps.is_empty() {
        return;
    }
    let rows = runs(p.steps.iter().map(|s| {
        let result = match &s.outcome {
            Ok(()) => "ok".to_string(),
            Err(f) if f.own_limit.is_some() => "neffld's own limit".to_string(),
            Err(f) if f.damaged => format!("damaged [{}]", f.status),
            Err(f) => format!("refused [{}]", f.status),
        };
        (step_text(&s.step), result)
    }));
    // Columns: number, step, logical cores, devices, physical cores,
    // result; each at least as wide as its heading and its longest entry.
    let rows: Vec<[String; 6]> = rows
        .into_iter()
        .map(|(first, n, (text, result))| {
            let run = &p.steps[first..first + n];
            // One step's physical cores as they are; a run's, short.
            let pcores = if run.iter().all(|s| s.pcores == run[0].pcores) {
                let cores: Vec<String> = run[0].pcores.iter().map(|c| format!("nc{c}")).collect();
                cores.join(",")
            } else {
                let all = short_list(run.iter().flat_map(|s| s.pcores.iter().copied()).collect());
                format!("nc{}", all.replace(',', ",nc").replace('-', "-nc"))
            };
            let number = match n {
                1 => (first + 1).to_string(),
                _ => format!("{}-{}", first + 1, first + n),
            };
            [
                number,
                text,
                short_list(run.iter().filter_map(|s| s.vnc).collect()),
                short_list(run.iter().filter_map(|s| s.device).collect()),
                pcores,
                result,
            ]
        })
        .collect();
    let heading = ["#", "step", "core", "ND", "cores", "result"].map(String::from);
    let _ = writeln!(t, "\nsteps");
    columns(
        t,
        std::iter::once(heading).chain(rows),
        [
            (5, true, "  "),
            (48, false, "  "),
            (5, true, " "),
            (4, true, " "),
            (12, false, "  "),
            (0, false, " "),
        ],
    );
    if p.steps.len() < p.planned {
        let _ = writeln!(
            t,
            "  ({} not run)",
            count((p.planned - p.steps.len()) as u64, "further step")
        );
    }
}

/// The runtime's usage table of every HBM in use: HBMs whose tables differ
/// only in their labels (the HBMs of ranks of one NEFF) are the first one's
/// table and one line.
fn memory(t: &mut String, p: &Plan) {
    let hbms = runs_by(
        p.devices.iter().flat_map(|m| shown(m).map(move |h| (m, h))),
        |(_, a), (_, b)| a.reads_as(b),
    );
    if !hbms.is_empty() {
        let _ = writeln!(
            t,
            "\nmemory where the plan stopped (the runtime's usage table; MB and GB are MiB and GiB)"
        );
        let all: Vec<(u32, u32)> = p
            .devices
            .iter()
            .flat_map(|m| shown(m).map(move |h| (m.device, h.hbm)))
            .collect();
        for (first, n, (m, h)) in hbms {
            t.push_str(&m.usage_table_grouped(h));
            let name = |(nd, hbm): (u32, u32)| format!("ND {nd} HBM {hbm}");
            if n == 2 {
                let _ = writeln!(t, "{}: as {}", name(all[first + 1]), name(all[first]));
            } else if n > 2 {
                let _ = writeln!(
                    t,
                    "the next {} HBMs in use, {} to {}: each as {}",
                    n - 1,
                    name(all[first + 1]),
                    name(all[first + n - 1]),
                    name(all[first])
                );
            }
        }
        let _ = writeln!(t, "NEFF id to name mapping:");
        // Consecutive ids of one file are one line: a run's ids less their
        // positions are one number.
        let names = runs(
            p.neffs
                .iter()
                .enumerate()
                .map(|(i, n)| (i64::from(n.id.0) - i as i64, &n.name, &n.file)),
        );
        for (first, count, (_, name, file)) in names {
            let id = p.neffs[first].id.0;
            let ids = match count {
                1 => id.to_string(),
                _ => format!("{id}-{}", id + count as u32 - 1),
            };
            let _ = writeln!(t, "{ids}: \"{name}\" ({})", file.display());
        }
    }
}

/// What more fits on each core, found by allocating.
fn headroom(t: &mut String, p: &Plan) {
    if p.headroom.is_empty() {
        return;
    }
    let _ = writeln!(
        t,
        "\nheadroom (found by allocating, where the plan stopped)"
    );
    let files: Vec<String> = p.headroom[0]
        .copies
        .iter()
        .map(|(f, _)| {
            f.file_name().map_or(f.display().to_string(), |n| {
                n.to_string_lossy().into_owned()
            })
        })
        .collect();
    // Columns: logical cores, devices, HBMs, HBM free, largest tensor,
    // the rest; each at least as wide as its heading and its longest entry.
    let heading: [String; 6] = [
        "core".into(),
        "ND".into(),
        "HBM".into(),
        "HBM free".into(),
        "largest tensor".into(),
        // A plan of tensors alone has no NEFF to count copies of.
        if files.is_empty() {
            String::new()
        } else {
            format!("more copies of: {}", files.join(", "))
        },
    ];
    let rows = std::iter::once(heading).chain(headroom_rows(&p.headroom));
    columns(
        t,
        rows,
        [
            (5, true, "  "),
            (4, true, " "),
            (4, true, " "),
            (12, true, " "),
            (15, true, " "),
            (0, false, "   "),
        ],
    );
    headroom_notes(t, &p.headroom);
}

/// The headroom table's rows: an HBM's first core's row, then a row for
/// each core that shares it; consecutive HBMs with the same figures and as
/// many cores each (ranks of one NEFF) one row, the figures each HBM's.
fn headroom_rows(headroom: &[Headroom]) -> Vec<[String; 6]> {
    let mut rows = Vec::new();
    // An HBM's rows: its first core's, then those of the cores that
    // share it (its figures are theirs together, shown once).
    let sharer = |h: &Headroom| h.shared_with.iter().copied().filter(|&o| o < h.vnc).min();
    let mut hbm_rows: Vec<&[Headroom]> = Vec::new();
    let mut at = 0;
    while at < headroom.len() {
        let end = at
            + 1
            + headroom[at + 1..]
                .iter()
                .take_while(|h| sharer(h) == Some(headroom[at].vnc))
                .count();
        hbm_rows.push(&headroom[at..end]);
        at = end;
    }
    let copies = |h: &Headroom| {
        let c: Vec<String> = h
            .copies
            .iter()
            .map(|(_, c)| match c.refused {
                Some(_) => "-".to_string(),
                None => format!("{}{}", if c.at_least { "≥" } else { "" }, c.count),
            })
            .collect();
        c.join(", ")
    };
    let hbm = |h: &Headroom| {
        if h.shared_with.is_empty() {
            h.hbm.to_string()
        } else {
            format!("{}*", h.hbm)
        }
    };
    let figures = |rows: &&[Headroom]| {
        let h = &rows[0];
        let c: Vec<_> = h.copies.iter().map(|(_, c)| c.clone()).collect();
        (
            rows.len(),
            sharer(h).is_none(),
            h.hbm_free,
            h.largest_tensor,
            c,
        )
    };
    for (first, n, group) in runs_by(hbm_rows.iter(), |a, b| figures(a) == figures(b)) {
        let h = &group[0];
        if n > 1 {
            let run: Vec<&Headroom> = hbm_rows[first..first + n]
                .iter()
                .flat_map(|r| r.iter())
                .collect();
            let each = match group.len() {
                1 => format!("each of {n} cores"),
                k => format!("each of {n} HBMs, {k} cores on each"),
            };
            rows.push([
                short_list(run.iter().map(|h| h.vnc).collect()),
                short_list(run.iter().map(|h| h.device).collect()),
                short_list(run.iter().map(|h| h.hbm).collect())
                    + if group.len() > 1 { "*" } else { "" },
                units::human(h.hbm_free),
                units::human(h.largest_tensor),
                format!("{}   ({each})", copies(h)),
            ]);
            continue;
        }
        for h in group.iter() {
            let (free, largest, rest) = match sharer(h) {
                // An HBM shared by several cores of the list is one HBM:
                // its figures once, on its first core; copies too, unless
                // this core's differ (a NEFF whose shared scratchpad pages
                // this core already holds costs less here).
                Some(first) if copies(h) == copies(&group[0]) => (
                    String::new(),
                    String::new(),
                    format!("(the HBM of core {first}: its figures are shared, not more)"),
                ),
                Some(first) => (
                    String::new(),
                    String::new(),
                    format!(
                        "{}   (on this core; the HBM of core {first}: free and largest shared)",
                        copies(h)
                    ),
                ),
                None => (
                    units::human(h.hbm_free),
                    units::human(h.largest_tensor),
                    copies(h),
                ),
            };
            rows.push([
                h.vnc.to_string(),
                h.device.to_string(),
                hbm(h),
                free,
                largest,
                rest,
            ]);
        }
    }
    rows
}

/// Why "largest" is under "free", once per distinct explanation; why a
/// NEFF shown `-` cannot load, with the cores; and what a shared HBM's
/// mark means.
fn headroom_notes(t: &mut String, headroom: &[Headroom]) {
    let mut said: Vec<String> = Vec::new();
    for h in headroom
        .iter()
        .filter(|h| h.shared_with.iter().all(|&o| o > h.vnc))
    {
        if let Some(why) = h.explain() {
            if !said.contains(&why) {
                let _ = writeln!(t, "  core {}: largest tensor under HBM free: {why}", h.vnc);
                said.push(why);
            }
            if said.len() >= 4 {
                break;
            }
        }
    }
    let mut refused: Vec<(&std::path::Path, String, Vec<u32>)> = Vec::new();
    for h in headroom {
        for (file, c) in &h.copies {
            let Some(f) = &c.refused else { continue };
            let why = self::refused(f);
            match refused
                .iter_mut()
                .find(|(p, w, _)| *p == file.as_path() && *w == why)
            {
                Some((_, _, cores)) => cores.push(h.vnc),
                None => refused.push((file, why, vec![h.vnc])),
            }
        }
    }
    for (file, why, cores) in refused {
        let _ = writeln!(
            t,
            "  {} cannot load on {} {}: {why}",
            file.display(),
            if cores.len() == 1 { "core" } else { "cores" },
            core_list(&cores)
        );
    }
    if headroom.iter().any(|h| !h.shared_with.is_empty()) {
        let _ = writeln!(
            t,
            "  * an HBM shared by several cores of the plan: its free bytes, largest tensor and copies are for all of them together, counted once (a core whose copies differ shows its own: loads on either core, not on both)"
        );
    }
}

/// Each advice item with the command line that applies it; or that
/// nothing considered makes the plan fit.
fn advice(t: &mut String, p: &Plan, style: Style) {
    if !p.advice.is_empty() {
        let _ = writeln!(t, "\nadvice (each judged by planning the deployment again)");
        for a in &p.advice {
            let _ = writeln!(t, "  - {}: {}", a.change, a.reason);
            let _ = writeln!(
                t,
                "    fits: {}; run: {}",
                if a.fits { "yes" } else { "no" },
                shell_words(&a.argv)
            );
        }
    }
    if let Some(n) = &p.no_fix {
        let _ = writeln!(t, "\n{}", style.fail(&format!("no fix    {n}")));
    }
    if let Some((_, s, _)) = p.failed_step().filter(|(_, _, f)| f.damaged) {
        let file = match &s.step {
            Step::Load { file, .. } => file.display().to_string(),
            _ => "the NEFF".into(),
        };
        let _ = writeln!(
            t,
            "\n{}",
            style.fail(&format!(
                "damaged   {file} is damaged, not short of memory: no setting or placement loads it (`neffld verify` names what is wrong; a fresh copy or compile replaces it)"
            ))
        );
    }
}

/// Writes `rows` (the heading first) as a table: each column as wide as
/// its longest entry and at least its given width, aligned right or left,
/// after its separator; the last column as it is, nothing after it.
fn columns(
    t: &mut String,
    rows: impl IntoIterator<Item = [String; 6]>,
    layout: [(usize, bool, &str); 6],
) {
    let rows: Vec<[String; 6]> = rows.into_iter().collect();
    let width = |k: usize| {
        rows.iter()
            .map(|r| r[k].chars().count())
            .fold(layout[k].0, usize::max)
    };
    let widths: Vec<usize> = (0..5).map(width).collect();
    for r in &rows {
        for (k, cell) in r.iter().enumerate() {
            let (_, right, gap) = layout[k];
            t.push_str(gap);
            let _ = match (widths.get(k), right) {
                (None, _) => write!(t, "{cell}"),
                (Some(&w), true) => write!(t, "{cell:>w$}"),
                (Some(&w), false) => write!(t, "{cell:<w$}"),
            };
        }
        let end = t.trim_end_matches(' ').len();
        t.truncate(end);
        t.push('\n');
    }
}

/// The solve line of the human report.
fn solve_text(p: &Plan) -> Option<String> {
    let s = p.solve.as_ref()?;
    Some(match (&s.solve, &s.answer) {
        (Solve::Tensor { name, cores }, Ok(SolveAnswer::Bytes(b))) => format!(
            "solve     {name}: at most {b} bytes ({}) on each of {} at once (one 4 KiB granule more is refused)",
            units::human(*b),
            count(cores.len() as u64, "logical core")
        ),
        (
            Solve::Ranks { file, .. },
            Ok(SolveAnswer::Ranks {
                count: n,
                per_core,
                stopped,
                ceiling,
            }),
        ) => {
            let cores: Vec<u32> = per_core.iter().map(|&(c, _)| c).collect();
            let mut line = format!(
                "solve     {}: {}{n} cop{} fit on {}",
                file.display(),
                if ceiling.is_some() { "at least " } else { "" },
                if *n == 1 { "y" } else { "ies" },
                cores_named(&cores),
            );
            if cores.len() > 1 {
                let _ = write!(line, " ({})", copies_by_core(per_core));
            }
            if let Some(c) = ceiling {
                let _ = write!(line, "; counting stopped at neffld's own ceiling {c}");
            } else if let Some(f) = stopped {
                let _ = write!(line, "; one more {}", refused(f));
            }
            line
        }
        (q, Err(e)) => format!("solve     {q}: no answer: {e}"),
        (q, Ok(_)) => format!("solve     {q}: no answer"),
    })
}

/// `core 3` or `cores 0-3,8`.
fn cores_named(cores: &[u32]) -> String {
    match cores {
        [one] => format!("core {one}"),
        _ => format!("cores {}", plan::deployment::core_list(cores)),
    }
}

/// Each count of copies with the cores that took it: `10 on cores 0-2, 9
/// on core 3`.
fn copies_by_core(per_core: &[(u32, u32)]) -> String {
    let mut counts: Vec<u32> = per_core.iter().map(|&(_, n)| n).collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    counts.dedup();
    counts
        .iter()
        .map(|&n| {
            let cores: Vec<u32> = per_core
                .iter()
                .filter(|&&(_, k)| k == n)
                .map(|&(c, _)| c)
                .collect();
            format!("{n} on {}", cores_named(&cores))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a step that did not go through was stopped, and the message.
fn refused(f: &StepFailure) -> String {
    if f.own_limit.is_some() {
        format!("stopped by neffld's own limit: {}", f.message)
    } else if f.damaged {
        format!("refused [{}]: the NEFF is damaged: {}", f.status, f.message)
    } else {
        format!("refused [{}]: {}", f.status, f.message)
    }
}

fn step_text(s: &Step) -> String {
    match s {
        Step::Load { file, .. } => format!("load {}", file.display()),
        Step::Tensor { name, size, .. } => format!("tensor {name} ({})", units::human(*size)),
        Step::Unload { file, .. } => format!("unload {}", file.display()),
        Step::Free { name, .. } => format!("free {name}"),
    }
}

/// An HBM is shown when something of a model or a client is on it.
fn shown(m: &MemoryReport) -> impl Iterator<Item = &HbmMemory> {
    m.hbms
        .iter()
        .filter(|h| h.cores.iter().any(|c| c.model.iter().any(|&b| b > 0)))
}

/// Consecutive equal items once each: the index of a run's first, how
/// many it holds, and the item.
pub(crate) fn runs<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<(usize, usize, T)> {
    runs_by(items, |a, b| a == b)
}

/// [`runs`] of the items `alike` takes for one another (each compared with
/// its run's first).
fn runs_by<T>(
    items: impl IntoIterator<Item = T>,
    alike: impl Fn(&T, &T) -> bool,
) -> Vec<(usize, usize, T)> {
    let mut out: Vec<(usize, usize, T)> = Vec::new();
    for (i, x) in items.into_iter().enumerate() {
        match out.last_mut() {
            Some((_, n, first)) if alike(first, &x) => *n += 1,
            _ => out.push((i, 1, x)),
        }
    }
    out
}

/// Numbers as a short sorted list (`0-63`, `0-1,3`), `-` for none.
fn short_list(mut v: Vec<u32>) -> String {
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        "-".to_string()
    } else {
        core_list(&v)
    }
}

/// A command line as a POSIX shell reads it back, word for word: words of
/// plain characters as they are, others in single quotes; a word holding
/// a control character or bytes that are not UTF-8 in `$'…'` with those
/// bytes as `\xHH` (POSIX.1-2024, bash, zsh, ksh), so the line stays one
/// line and names the exact bytes.
pub(crate) fn shell_words<W: AsRef<std::ffi::OsStr>>(argv: &[W]) -> String {
    argv.iter()
        .map(|w| shell_word(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_word(w: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = w.as_bytes();
    match w.to_str() {
        // `=` first is zsh's command expansion.
        Some(s)
            if !s.is_empty()
                && !s.starts_with('=')
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./@=,:+-%".contains(c)) =>
        {
            s.to_string()
        }
        Some(s) if !s.chars().any(char::is_control) => format!("'{}'", s.replace('\'', "'\\''")),
        _ => {
            let mut out = String::from("$'");
            for chunk in bytes.utf8_chunks() {
                for c in chunk.valid().chars() {
                    match c {
                        '\\' | '\'' => {
                            out.push('\\');
                            out.push(c);
                        }
                        c if c.is_control() => {
                            let mut b = [0; 4];
                            for byte in c.encode_utf8(&mut b).bytes() {
                                let _ = write!(out, "\\x{byte:02x}");
                            }
                        }
                        c => out.push(c),
                    }
                }
                for byte in chunk.invalid() {
                    let _ = write!(out, "\\x{byte:02x}");
                }
            }
            out.push('\'');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    /// Each word, read back by a shell, is the exact bytes it was: plain,
    /// quoted, with a quote, a line break, a byte that is not UTF-8, an
    /// `=` first (zsh's expansion), a `$`, nothing at all.
    #[test]
    fn a_shell_reads_every_word_back_as_it_was() {
        let words: Vec<&OsStr> = [
            &b"plain.neff@0-3"[..],
            b"a b.neff",
            b"it's",
            b"\xff.neff",
            b"line\nbreak\t\x1b[1m",
            b"=eq",
            b"$HOME",
            b"",
            "\u{85}\u{e9}".as_bytes(),
        ]
        .into_iter()
        .map(OsStr::from_bytes)
        .collect();
        let line = shell_words(&words);
        assert!(!line.contains('\n'), "{line}");
        let out = std::process::Command::new("bash")
            .args(["-c", &format!("printf '%s\\0' {line}")])
            .output()
            .unwrap();
        let back: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
        let was: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        assert_eq!(back[..back.len() - 1], was[..], "{line}");
    }
}
