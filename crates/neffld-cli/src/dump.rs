//! `neffld load --dump DIR`: the device image as files, for simulator
//! authors and for comparison with captures. `DIR/device.json` describes
//! every core; each instruction image is `DIR/<subgraph>_<engine>.bin`, its
//! final bytes. Each image says which of its slots are filler rather than
//! the runtime's bytes and which records hold values no rule covers
//! (docs/cli.md).

use std::path::Path;

use neffld::report::StagedView;
use neffld::text::escape;
use neffld::tree;
use serde::Serialize;

/// The file an image is written to, relative to the dump directory.
pub fn image_file(subgraph: &str, engine: &str) -> String {
    format!("{subgraph}_{engine}.bin")
}

/// One image of `device.json`.
#[derive(Serialize)]
struct ImageEntry {
    engine: &'static str,
    address: u64,
    file: String,
    bytes: usize,
    preamble_slots: u32,
    main_slots: u32,
    postamble_slots: u32,
    exact: bool,
    filler_slots: Vec<[u32; 2]>,
    approximate_records: Vec<u32>,
}

/// One memory row of `device.json`.
#[derive(Serialize)]
struct RowEntry {
    usage_type: String,
    bytes: u64,
}

/// One variable of `device.json`.
#[derive(Serialize)]
struct VariableEntry {
    name: String,
    kind: &'static str,
    address: Option<u64>,
    size: Option<u64>,
}

/// One core of `device.json`.
#[derive(Serialize)]
struct CoreEntry {
    pcore: u32,
    subgraph: String,
    images: Vec<ImageEntry>,
    memory: Vec<RowEntry>,
    variables: Vec<VariableEntry>,
}

/// `device.json` (schema in docs/cli.md).
#[derive(Serialize)]
struct DeviceDoc {
    arch: &'static str,
    device: u32,
    runtime: &'static str,
    runtime_line: String,
    cores: Vec<CoreEntry>,
}

/// `device.json` (schema in docs/cli.md).
fn device_doc(view: &StagedView) -> DeviceDoc {
    let cores = view
        .cores
        .iter()
        .map(|c| CoreEntry {
            pcore: c.pcore,
            subgraph: c.subgraph.clone(),
            images: c
                .images
                .iter()
                .map(|i| ImageEntry {
                    engine: i.engine.key(),
                    address: i.address,
                    file: image_file(&c.subgraph, i.engine.key()),
                    bytes: i.bytes.len(),
                    preamble_slots: i.preamble_slots,
                    main_slots: i.main_slots,
                    postamble_slots: i.postamble_slots,
                    exact: i.exact(),
                    filler_slots: i.filler.iter().map(|r| [r.start, r.end]).collect(),
                    approximate_records: i.approximate.clone(),
                })
                .collect(),
            memory: c
                .memory
                .iter()
                .map(|r| RowEntry {
                    usage_type: r.usage_type.clone(),
                    bytes: r.bytes,
                })
                .collect(),
            variables: c
                .variables
                .iter()
                .map(|v| VariableEntry {
                    name: v.name.clone(),
                    kind: v.kind,
                    address: v.address,
                    size: v.size,
                })
                .collect(),
        })
        .collect();
    DeviceDoc {
        arch: view.arch.instance(),
        device: view.device,
        runtime: neffld::RUNTIME_NAME,
        runtime_line: view.line.to_string(),
        cores,
    }
}

/// Writes `device.json` and every image in `dir` (created if needed), by
/// the file-system policy of `extract` ([`tree::Dest`]): each file one
/// plain name in `dir` itself, never written through a symbolic link. A
/// subgraph name that is no plain file name (`../../x`, `/etc/x`: the
/// runtime takes any graph name as a label, so the load passes) refuses
/// the whole dump before anything is written.
pub fn write(dir: &Path, view: &StagedView) -> Result<(), String> {
    let files: Vec<(String, &[u8])> = view
        .cores
        .iter()
        .flat_map(|c| {
            c.images
                .iter()
                .map(|i| (image_file(&c.subgraph, i.engine.key()), i.bytes.as_slice()))
        })
        .collect();
    for (name, _) in &files {
        tree::plain_name(name.as_bytes()).map_err(|why| {
            format!(
                "cannot dump into {}: the image file of a subgraph would be {}; nothing was written",
                dir.display(),
                escape(&why)
            )
        })?;
    }
    let dest = tree::Dest::create(dir)
        .map_err(|e| format!("cannot write the dump into {}: {e}", dir.display()))?;
    let err = |e: tree::Refusal| {
        format!(
            "cannot write the dump into {}: {}",
            dir.display(),
            escape(&e.to_string())
        )
    };
    for (name, bytes) in &files {
        dest.write_plain(name.as_bytes(), bytes).map_err(err)?;
    }
    let text = crate::report::json_text(&device_doc(view));
    dest.write_plain(b"device.json", (text + "\n").as_bytes())
        .map_err(err)
}
