//! `neffld compare FILE CAPTURE.ntff`: loads FILE as the capture's runtime
//! did (architecture, runtime line, logical core) and shows, per core and
//! engine, where neffld and the real runtime agree, and which of neffld's
//! slots are filler or approximate. The comparison itself is the library's
//! (`neffld::report::compare`); this module only renders it.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use neffld::capture::{self as ntff};
use neffld::report::compare::{self, AddressMatch, CompareError, Comparison, ImageSide};
use neffld::text::escape;
use neffld::NrtStatus;
use serde::Serialize;

use crate::report::{emit, failed, print_json, Failure, Stamp, Stamped};

/// One engine's image, ours beside the capture's.
#[derive(Serialize)]
struct ImageEntry<'a> {
    engine: &'static str,
    ours: Option<&'a ImageSide>,
    capture: Option<&'a ImageSide>,
    records: u32,
    same_fate: u32,
    rewritten_words: u32,
    rewritten_words_equal: u32,
    words: u32,
    words_equal: u32,
    filler_slots: u32,
    approximate_records: u32,
    address: &'static str,
    agrees: bool,
}

/// One memory row, ours beside the capture's.
#[derive(Serialize)]
struct RowEntry<'a> {
    usage_type: &'a str,
    ours: Option<u64>,
    capture: Option<u64>,
    equal: bool,
    counted: bool,
}

/// One subgraph's core.
#[derive(Serialize)]
struct CoreEntry<'a> {
    subgraph: &'a str,
    pcore_ours: Option<u32>,
    pcore_capture: Option<u64>,
    agrees: bool,
    images: Vec<ImageEntry<'a>>,
    memory: Vec<RowEntry<'a>>,
}

/// The figures that agree, of those compared.
#[derive(Serialize)]
struct SummaryEntry {
    images: u32,
    records_equal: u32,
    sizes_equal: u32,
    bytes_equal: u32,
    addresses_equal: u32,
    addresses_raced: u32,
    memory_rows: u32,
    memory_rows_equal: u32,
}

/// The document of `neffld compare` (docs/cli.md).
#[derive(Serialize)]
struct CompareDoc<'a> {
    file: String,
    capture: String,
    runtime_line: String,
    agrees: bool,
    summary: SummaryEntry,
    cores: Vec<CoreEntry<'a>>,
}

fn document<'a>(file: &Path, capture: &Path, c: &'a Comparison) -> CompareDoc<'a> {
    let cores = c
        .cores
        .iter()
        .map(|k| CoreEntry {
            subgraph: &k.subgraph,
            pcore_ours: k.pcore_ours,
            pcore_capture: k.pcore_capture,
            agrees: k.agrees(),
            images: k
                .images
                .iter()
                .map(|i| ImageEntry {
                    engine: i.engine.key(),
                    ours: i.ours.as_ref(),
                    capture: i.capture.as_ref(),
                    records: i.records,
                    same_fate: i.same_fate,
                    rewritten_words: i.rewritten_words,
                    rewritten_words_equal: i.rewritten_words_equal,
                    words: i.words,
                    words_equal: i.words_equal,
                    filler_slots: i.filler_slots,
                    approximate_records: i.approximate_records,
                    address: i.address.name(),
                    agrees: i.agrees(),
                })
                .collect(),
            memory: k
                .memory
                .iter()
                .map(|r| RowEntry {
                    usage_type: &r.usage_type,
                    ours: r.ours,
                    capture: r.capture,
                    equal: r.equal(),
                    counted: r.counted,
                })
                .collect(),
        })
        .collect();
    let t = c.tally();
    CompareDoc {
        file: file.display().to_string(),
        capture: capture.display().to_string(),
        runtime_line: c.line.to_string(),
        agrees: c.agrees(),
        summary: SummaryEntry {
            images: t.images,
            records_equal: t.records_equal,
            sizes_equal: t.sizes_equal,
            bytes_equal: t.bytes_equal,
            addresses_equal: t.addresses_equal,
            addresses_raced: t.addresses_raced,
            memory_rows: t.rows,
            memory_rows_equal: t.rows_equal,
        },
        cores,
    }
}

/// How the two addresses of an image compare, as the report words it.
fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn pair(o: Option<u64>, c: Option<u64>) -> String {
    let mark = if o == c { "" } else { " *" };
    format!("{}/{}{mark}", opt(o), opt(c))
}

fn human(c: &Comparison) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "runtime line {}", c.line);
    for k in &c.cores {
        let _ = writeln!(
            s,
            "{}: physical core {} (capture {}){}",
            escape(&k.subgraph),
            opt(k.pcore_ours),
            opt(k.pcore_capture),
            if k.agrees() { "  agrees" } else { "" }
        );
        let _ = writeln!(
            s,
            "  {:<6} {:>15} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>11} {:>13}  address ours / capture",
            "engine",
            "bytes",
            "preamble",
            "main",
            "postamble",
            "kept",
            "rewritten",
            "deleted",
            "rw words =",
            "all words ="
        );
        for i in &k.images {
            let f =
                |g: fn(&ImageSide) -> u64| pair(i.ours.as_ref().map(g), i.capture.as_ref().map(g));
            let addr = |s: &Option<ImageSide>| {
                s.as_ref()
                    .map_or("-".into(), |s| format!("{:#x}", s.address))
            };
            let mut notes = String::new();
            if i.filler_slots > 0 {
                let _ = write!(notes, "  {} filler slots", i.filler_slots);
            }
            if i.approximate_records > 0 {
                let _ = write!(notes, "  approximate ({} records)", i.approximate_records);
            }
            let verdict = match (i.agrees(), i.address) {
                (false, _) => "  differs",
                (true, AddressMatch::Raced) => "  raced",
                (true, _) => "",
            };
            let mark = if i.address == AddressMatch::Differs {
                " *"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "  {:<6} {:>15} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>11} {:>13}  {} / {}{mark}{notes}{verdict}",
                i.engine.key(),
                f(|x| x.bytes),
                f(|x| x.preamble_slots.into()),
                f(|x| x.main_slots.into()),
                f(|x| x.postamble_slots.into()),
                f(|x| x.kept.into()),
                f(|x| x.rewritten.into()),
                f(|x| x.deleted.into()),
                format!("{}/{}", i.rewritten_words_equal, i.rewritten_words),
                format!("{}/{}", i.words_equal, i.words),
                addr(&i.ours),
                addr(&i.capture),
            );
        }
        let _ = writeln!(
            s,
            "  {:<24} {:>14} {:>14}  equal",
            "memory", "neffld", "capture"
        );
        for r in &k.memory {
            let eq = match (r.equal(), r.counted) {
                (true, _) => "yes",
                (false, true) => "NO",
                (false, false) => "no (not the model's)",
            };
            let _ = writeln!(
                s,
                "  {:<24} {:>14} {:>14}  {eq}",
                escape(&r.usage_type),
                opt(r.ours),
                opt(r.capture)
            );
        }
    }
    let t = c.tally();
    let _ = writeln!(
        s,
        "images: records {}/{}, sizes {}/{}, bytes {}/{}, addresses {}/{} ({} raced); memory rows {}/{}",
        t.records_equal,
        t.images,
        t.sizes_equal,
        t.images,
        t.bytes_equal,
        t.images,
        t.addresses_equal,
        t.images,
        t.addresses_raced,
        t.rows_equal,
        t.rows
    );
    let raced = t.addresses_raced > 0;
    let _ = writeln!(
        s,
        "{}",
        if c.agrees() {
            "neffld agrees with the capture"
        } else {
            "neffld differs from the capture (* marks ours/capture pairs that differ; \
             a row with one ends in 'differs')"
        }
    );
    if raced {
        let _ = writeln!(
            s,
            "raced: the two cores' images of that engine sit at each other's addresses, \
             the order the runtime's race between its two build threads gave them \
             (docs/decisions.md); not a disagreement"
        );
    }
    s
}

pub fn compare(file: &Path, capture: &Path, as_json: bool) -> Result<ExitCode, Failure> {
    let neff = crate::input::source(file)?;
    let _shortened = neff.guard_shortening("compare", file, as_json);
    let neff = neff.bytes();
    let bytes = crate::input::read_regular(capture)?;
    let c = ntff::read(&bytes).map_err(|e| Failure {
        stage: "capture",
        status: e.status(),
        message: format!("{}: {e}", capture.display()),
    })?;
    let (cmp, _) = compare::load_and_compare(neff, &c).map_err(|e| match e {
        // Two files that do not belong together: the command line's mistake.
        CompareError::OtherNeff { .. } => {
            Failure::usage(format!("{} and {}: {e}", file.display(), capture.display()))
        }
        e => Failure {
            stage: "load",
            status: e.status(),
            message: format!("{}: {e}", file.display()),
        },
    })?;
    // A disagreement is the command's verdict, not a damaged input: the
    // document keeps the whole comparison and carries the error object.
    let verdict = (!cmp.agrees()).then(|| Failure {
        stage: "compare",
        status: NrtStatus::Failure,
        message: "neffld differs from the capture".into(),
    });
    if as_json {
        print_json(&Stamped {
            body: document(file, capture, &cmp),
            stamp: Stamp::new("compare", verdict.as_ref()),
        })?;
    } else {
        emit(&human(&cmp))?;
    }
    Ok(if verdict.is_some() {
        failed()
    } else {
        ExitCode::SUCCESS
    })
}
