//! `neffld compare FILE CAPTURE.ntff`: loads FILE as the capture's runtime
//! did (architecture, logical core) and shows, per core and engine, where
//! neffld and the real runtime agree. The comparison itself is the
//! library's (`neffld::capture::compare`); this module only renders it.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use neffld::capture::compare::{self, Comparison, ImageSide};
use neffld::capture::{self as ntff};
use serde_json::{json, Value};

use crate::report::{emit, failed, print_json};

fn side_json(s: &Option<ImageSide>) -> Value {
    match s {
        None => Value::Null,
        Some(s) => json!({
            "address": s.address,
            "bytes": s.bytes,
            "preamble_slots": s.preamble_slots,
            "main_slots": s.main_slots,
            "postamble_slots": s.postamble_slots,
            "kept": s.kept,
            "rewritten": s.rewritten,
            "deleted": s.deleted,
        }),
    }
}

fn to_json(file: &Path, capture: &Path, c: &Comparison) -> Value {
    let cores: Vec<Value> = c
        .cores
        .iter()
        .map(|k| {
            let images: Vec<Value> = k
                .images
                .iter()
                .map(|i| {
                    json!({
                        "engine": i.engine.key(),
                        "ours": side_json(&i.ours),
                        "capture": side_json(&i.capture),
                        "records": i.records,
                        "same_fate": i.same_fate,
                        "rewritten_words": i.rewritten_words,
                        "rewritten_words_equal": i.rewritten_words_equal,
                        "agrees": i.agrees(),
                    })
                })
                .collect();
            let memory: Vec<Value> = k
                .memory
                .iter()
                .map(|r| {
                    json!({"usage_type": r.usage_type, "ours": r.ours, "capture": r.capture,
                           "equal": r.equal(), "counted": r.counted})
                })
                .collect();
            json!({
                "subgraph": k.subgraph,
                "pcore_ours": k.pcore_ours,
                "pcore_capture": k.pcore_capture,
                "agrees": k.agrees(),
                "images": images,
                "memory": memory,
            })
        })
        .collect();
    json!({
        "file": file.display().to_string(),
        "capture": capture.display().to_string(),
        "agrees": c.agrees(),
        "cores": cores,
    })
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn pair(o: Option<u64>, c: Option<u64>) -> String {
    let mark = if o == c { "" } else { " *" };
    format!("{}/{}{mark}", opt(o), opt(c))
}

fn human(c: &Comparison) -> String {
    let mut s = String::new();
    for k in &c.cores {
        let _ = writeln!(
            s,
            "{}: physical core {} (capture {}){}",
            k.subgraph,
            opt(k.pcore_ours),
            opt(k.pcore_capture),
            if k.agrees() { "  agrees" } else { "" }
        );
        let _ = writeln!(
            s,
            "  {:<6} {:>15} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>11}  address ours / capture",
            "engine",
            "bytes",
            "preamble",
            "main",
            "postamble",
            "kept",
            "rewritten",
            "deleted",
            "rw words ="
        );
        for i in &k.images {
            let f =
                |g: fn(&ImageSide) -> u64| pair(i.ours.as_ref().map(g), i.capture.as_ref().map(g));
            let addr = |s: &Option<ImageSide>| {
                s.as_ref()
                    .map_or("-".into(), |s| format!("{:#x}", s.address))
            };
            let _ = writeln!(
                s,
                "  {:<6} {:>15} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>11}  {} / {}{}",
                i.engine.key(),
                f(|x| x.bytes),
                f(|x| x.preamble_slots.into()),
                f(|x| x.main_slots.into()),
                f(|x| x.postamble_slots.into()),
                f(|x| x.kept.into()),
                f(|x| x.rewritten.into()),
                f(|x| x.deleted.into()),
                format!("{}/{}", i.rewritten_words_equal, i.rewritten_words),
                addr(&i.ours),
                addr(&i.capture),
                if i.agrees() { "" } else { "  differs" }
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
                r.usage_type,
                opt(r.ours),
                opt(r.capture)
            );
        }
    }
    let _ = writeln!(
        s,
        "{}",
        if c.agrees() {
            "neffld agrees with the capture"
        } else {
            "neffld differs from the capture (* marks ours/capture pairs that differ)"
        }
    );
    s
}

pub fn compare(file: &Path, capture: &Path, as_json: bool) -> Result<ExitCode, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let neff = read(file)?;
    let bytes = read(capture)?;
    let c =
        ntff::read(&bytes).map_err(|e| format!("{}: {e} [{}]", capture.display(), e.status()))?;
    let (cmp, _) = compare::load_and_compare(&neff, &c)
        .map_err(|e| format!("{}: {e} [{}]", file.display(), e.status()))?;
    if as_json {
        print_json(&to_json(file, capture, &cmp));
    } else {
        emit(&human(&cmp));
    }
    Ok(if cmp.agrees() {
        ExitCode::SUCCESS
    } else {
        failed()
    })
}
