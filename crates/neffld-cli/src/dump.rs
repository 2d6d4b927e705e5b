//! `neffld load --dump DIR`: the device image as files, for simulator
//! authors and for comparison with captures. `DIR/device.json` describes
//! every core; each instruction image is `DIR/<subgraph>_<engine>.bin`, its
//! final bytes. Each image says which of its slots are filler rather than
//! the runtime's bytes and which records hold values no rule covers
//! (docs/cli.md).

use std::path::Path;

use neffld::report::StagedView;
use serde_json::{json, Value};

/// The file an image is written to, relative to the dump directory.
pub fn image_file(subgraph: &str, engine: &str) -> String {
    format!("{subgraph}_{engine}.bin")
}

/// `device.json` (schema in docs/cli.md).
pub fn device_json(view: &StagedView) -> Value {
    let cores: Vec<Value> = view
        .cores
        .iter()
        .map(|c| {
            let images: Vec<Value> = c
                .images
                .iter()
                .map(|i| {
                    json!({
                        "engine": i.engine.key(),
                        "address": i.address,
                        "file": image_file(&c.subgraph, i.engine.key()),
                        "bytes": i.bytes.len(),
                        "preamble_slots": i.preamble_slots,
                        "main_slots": i.main_slots,
                        "postamble_slots": i.postamble_slots,
                        "exact": i.exact(),
                        "filler_slots": i.filler.iter().map(|r| [r.start, r.end]).collect::<Vec<_>>(),
                        "approximate_records": i.approximate,
                    })
                })
                .collect();
            let memory: Vec<Value> = c
                .memory
                .iter()
                .map(|r| json!({"usage_type": r.usage_type, "bytes": r.bytes}))
                .collect();
            let variables: Vec<Value> = c
                .variables
                .iter()
                .map(|v| json!({"name": v.name, "kind": v.kind, "address": v.address, "size": v.size}))
                .collect();
            json!({
                "pcore": c.pcore,
                "subgraph": c.subgraph,
                "images": images,
                "memory": memory,
                "variables": variables,
            })
        })
        .collect();
    json!({
        "arch": view.arch.instance(),
        "device": view.device,
        "runtime": concat!("neffld ", env!("CARGO_PKG_VERSION")),
        "runtime_line": view.line.to_string(),
        "cores": cores,
    })
}

/// Writes `device.json` and every image under `dir` (created if needed).
pub fn write(dir: &Path, view: &StagedView) -> Result<(), String> {
    let err = |p: &Path, e: std::io::Error| format!("cannot write {}: {e}", p.display());
    std::fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
    for c in &view.cores {
        for i in &c.images {
            let p = dir.join(image_file(&c.subgraph, i.engine.key()));
            std::fs::write(&p, &i.bytes).map_err(|e| err(&p, e))?;
        }
    }
    let p = dir.join("device.json");
    let text =
        serde_json::to_string_pretty(&device_json(view)).expect("JSON values always serialise");
    std::fs::write(&p, text + "\n").map_err(|e| err(&p, e))
}
