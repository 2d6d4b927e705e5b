//! `neffld load`: the whole pipeline on a simulated device, a report of
//! where everything landed, then unload.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use neffld::api::{LoadError, Runtime, TensorUsage};
use neffld::config::{ConfigError, DeviceKind};
use neffld::ids::HModel;
use neffld::report::{MemoryReport, Recorder, StagedView};
use neffld::settings::{Asked, Settings};
use neffld::{Arch, NrtStatus, RuntimeLine};
use serde_json::{json, Value};

use crate::report::{emit, exit_after_report, print_json, shown, stamp, write_map, Failure};
use crate::style::Style;
use crate::{input, map, memory, units};

/// Show a progress bar for files at least this large.
const PROGRESS_MIN: u64 = 64 << 20;

/// Simulated device kinds.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum DeviceArg {
    /// Keeps every written byte (sparsely).
    Sim,
    /// Keeps no bytes: allocations, bounds and counts only.
    Null,
}

impl DeviceArg {
    /// The library's device of this name.
    pub fn kind(self) -> DeviceKind {
        match self {
            DeviceArg::Sim => DeviceKind::Sim,
            DeviceArg::Null => DeviceKind::Null,
        }
    }
}

fn parse_arch(s: &str) -> Result<Arch, String> {
    s.parse()
}

pub(crate) fn parse_runtime(s: &str) -> Result<RuntimeLine, String> {
    s.parse()
}

/// Options of `neffld load`.
#[derive(clap::Args)]
pub struct LoadArgs {
    /// The NEFF file (`-`: standard input).
    pub file: PathBuf,
    /// Device architecture: trn1, trn2 or trn3 (default: the NEFF's own target).
    #[arg(long, value_parser = parse_arch)]
    pub arch: Option<Arch>,
    /// Runtime line to reproduce: 2.23, 2.25, 2.27, 2.30, 2.31, 2.32, 2.33 or
    /// 2.34, or a version of one such as 2.27.23 (default: NEFFLD_RUNTIME,
    /// else 2.34, the runtime users run; lines after 2.30 take what their
    /// documentation does not say from the newest captured line of the chip).
    #[arg(long, value_parser = parse_runtime, value_name = "LINE")]
    pub runtime: Option<RuntimeLine>,
    /// Logical core to load on (-1: the first free one).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "N")]
    pub start_core: i32,
    /// Simulated device.
    #[arg(long, value_enum, default_value_t = DeviceArg::Sim)]
    pub device: DeviceArg,
    /// Logical-core size: physical cores per logical core (default: the architecture's; trn1 takes only 1).
    #[arg(long, value_name = "N")]
    pub lnc: Option<u32>,
    /// Validate the staged model (every address points into an allocation).
    #[arg(long)]
    pub check: bool,
    /// Verify the payload hash (NEURON_RT_VALIDATE_HASH).
    #[arg(long)]
    pub validate_hash: bool,
    /// Accept a NEFF built for another architecture (NEURON_RT_ALLOW_LEGACY_NEFF).
    #[arg(long)]
    pub allow_legacy_neff: bool,
    /// Ceiling on the inflated payload in bytes (default: 64x the payload, 256 MiB to 32 GiB).
    #[arg(long, value_name = "BYTES")]
    pub max_inflated: Option<u64>,
    /// Machine-readable output (stable schema, see docs/cli.md).
    #[arg(long)]
    pub json: bool,
    /// Write the device image under this directory: device.json and one
    /// <subgraph>_<engine>.bin per instruction image.
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
    /// Write an HTML memory map to this file (one linear address axis per HBM; written on failure too).
    #[arg(long, value_name = "FILE.html")]
    pub map: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Leave the timing table out of the human output (stable for diffs).
    #[arg(long)]
    pub no_timings: bool,
}

fn progress(total: u64, quiet: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if quiet || total < PROGRESS_MIN || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg:10} [{bar:40}] {bytes}/{total_bytes}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// Everything the report shows about each core: the library's staged view.
fn core_json(view: &StagedView) -> Vec<Value> {
    view.cores
        .iter()
        .map(|c| {
            let vars: Vec<Value> = c
                .variables
                .iter()
                .map(|v| {
                    json!({"var_id": v.var_id, "name": v.name, "type": v.kind, "placement": v.placement, "address": v.address, "size": v.size})
                })
                .collect();
            let images: Vec<Value> = c
                .images
                .iter()
                .map(|i| {
                    json!({
                        "engine": i.engine.key(),
                        "address": i.address,
                        "bytes": i.bytes.len(),
                        "neff_records": i.neff_records(),
                        "device_slots": i.bytes.len() / 64,
                        "patches": {"insert": i.patches.insert, "modify": i.patches.modify, "delete": i.patches.delete},
                        "absolute_operands": i.absolute_operands,
                        "io_templates": i.io_templates,
                        "exact": i.exact(),
                        "filler_slots": i.filler_slots(),
                        "approximate_records": i.approximate.len(),
                    })
                })
                .collect();
            let rings: Vec<Value> = c
                .rings
                .iter()
                .map(|r| {
                    json!({"queue": r.queue, "address": r.address, "bytes": r.bytes, "blocks": r.blocks,
                           "descriptor_pairs": r.descriptor_pairs, "capacity": r.capacity, "io_templates": r.io_templates})
                })
                .collect();
            let tables: Vec<Value> =
                c.tables.iter().map(|t| json!({"table": t.what, "address": t.address, "bytes": t.bytes})).collect();
            let memory_rows: Vec<Value> = c
                .memory
                .iter()
                .map(|r| json!({"usage_type": r.usage_type, "bytes": r.bytes, "runtime": r.runtime, "model": r.model}))
                .collect();
            let instructions: u64 = c.images.iter().map(|i| i.bytes.len() as u64 / 64).sum();
            let descriptors: u64 = c.rings.iter().map(|r| 2 * r.descriptor_pairs).sum();
            let templates: u64 = c.images.iter().map(|i| u64::from(i.io_templates)).sum::<u64>()
                + c.rings.iter().map(|r| r.io_templates).sum::<u64>();
            json!({
                "pcore": c.pcore,
                "hbm": c.hbm,
                "subgraph": c.subgraph,
                "scratchpad_pages": c.scratchpad_pages,
                "instructions": instructions,
                "descriptors": descriptors,
                "templates": templates,
                "variables": vars,
                "images": images,
                "rings": rings,
                "tables": tables,
                "memory_rows": memory_rows,
            })
        })
        .collect()
}

fn human(out: &Value, memory_table: &str, no_timings: bool, style: Style) -> String {
    use std::fmt::Write as _;
    let s = shown;
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let mut t = String::new();
    let _ = writeln!(t, "file      {}", s(&out["file"]));
    let _ = writeln!(
        t,
        "device    {} {} ({}), runtime {}",
        s(&out["device"]),
        s(&out["arch"]),
        units::count(n(&out["device_cores"]), "core"),
        s(&out["runtime"])
    );
    let p = &out["runtime_provenance"];
    let listed = |v: &Value| {
        v.as_array()
            .map(|a| a.iter().map(shown).collect::<Vec<_>>().join("; "))
            .unwrap_or_default()
    };
    if p["carried_over"].as_array().is_some_and(|a| !a.is_empty()) {
        let documented = listed(&p["documented"]);
        let _ = writeln!(
            t,
            "          {} has no capture of its own: {}{}'s captures carry over ({})",
            s(&p["line"]),
            if documented.is_empty() {
                String::new()
            } else {
                format!("as documented, {documented}; ")
            },
            s(&p["captured_by"]),
            listed(&p["carried_over"])
        );
    }
    let _ = writeln!(
        t,
        "status    {} ({})",
        s(&out["status"]),
        out["status_code"]
    );
    if !out["error"].is_null() {
        let e = &out["error"];
        let _ = writeln!(
            t,
            "{}",
            style.fail(&format!(
                "error     [{}] {}",
                s(&e["stage"]),
                s(&e["message"])
            ))
        );
    }
    if out["checked"] == true && out["status_code"] == 0 {
        let _ = writeln!(
            t,
            "{}",
            style.ok("check     passed: every address written to the device points into an allocation of its core")
        );
    }
    let m = &out["model"];
    if !m.is_null() {
        let pcores: Vec<String> = m["pcores"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| format!("nc{p}"))
            .collect();
        let _ = writeln!(
            t,
            "model     nn{} \"{}\" uuid {}",
            out["h_nn"],
            s(&m["name"]),
            s(&m["uuid"])
        );
        let _ = writeln!(
            t,
            "placed    logical core {} -> physical {}",
            m["vnc"],
            pcores.join(", ")
        );
    }
    if !out["memory"]["hbm"].as_array().is_none_or(Vec::is_empty) {
        let _ = writeln!(t, "memory    {}", memory::answer(&out["memory"]));
    }
    if !no_timings && !out["timings_us"].is_null() {
        let tm = &out["timings_us"];
        let _ = writeln!(t, "\ntimings");
        for (label, key) in [
            ("S0 guard", "guard"),
            ("S1 container", "container"),
            ("S2+S3 parse", "parse"),
            ("S4 stage", "stage"),
            ("  S5 relocate (in S4)", "relocate"),
            ("unload", "unload"),
            ("total", "total"),
        ] {
            let _ = writeln!(t, "  {label:<22} {:>10.3} ms", n(&tm[key]) as f64 / 1000.0);
        }
    }
    for c in out["cores"].as_array().into_iter().flatten() {
        let _ = writeln!(
            t,
            "\ncore nc{} (HBM {}, subgraph {}): {}, {}, {}",
            c["pcore"],
            c["hbm"],
            s(&c["subgraph"]),
            units::count(n(&c["instructions"]), "instruction slot"),
            units::count(n(&c["descriptors"]), "DMA descriptor"),
            units::count(n(&c["templates"]), "IO template")
        );
        let _ = writeln!(
            t,
            "  {:>4}  {:<36} {:<13} {:>18} {:>20}  placement",
            "id", "variable", "type", "address", "size"
        );
        for v in c["variables"].as_array().into_iter().flatten() {
            let addr = v["address"]
                .as_u64()
                .map_or("-".to_string(), |a| format!("{a:#x}"));
            let size = v["size"]
                .as_u64()
                .map_or("-".to_string(), |b| format!("{b} ({})", units::human(b)));
            let _ = writeln!(
                t,
                "  {:>4}  {:<36} {:<13} {:>18} {:>20}  {}",
                n(&v["var_id"]),
                s(&v["name"]),
                s(&v["type"]),
                addr,
                size,
                match v["placement"].as_str() {
                    Some("io") => "io (bound at execute)".to_string(),
                    _ => s(&v["placement"]),
                }
            );
        }
        let _ = writeln!(
            t,
            "  {:<6} {:>18} {:>9} {:>8} {:>8} {:>7} {:>6} {:>6} {:>6} {:>10}",
            "engine",
            "address",
            "bytes",
            "records",
            "slots",
            "insert",
            "modify",
            "delete",
            "abs",
            "templates"
        );
        for e in c["images"].as_array().into_iter().flatten() {
            let p = &e["patches"];
            let _ = writeln!(
                t,
                "  {:<6} {:>18} {:>9} {:>8} {:>8} {:>7} {:>6} {:>6} {:>6} {:>10}",
                s(&e["engine"]),
                format!("{:#x}", n(&e["address"])),
                n(&e["bytes"]),
                n(&e["neff_records"]),
                n(&e["device_slots"]),
                n(&p["insert"]),
                n(&p["modify"]),
                n(&p["delete"]),
                n(&e["absolute_operands"]),
                n(&e["io_templates"])
            );
        }
        for r in c["rings"].as_array().into_iter().flatten() {
            let _ = writeln!(
                t,
                "  ring {:<20} {:>18} {}, {} (capacity {}), {}",
                s(&r["queue"]),
                format!("{:#x}", n(&r["address"])),
                units::count(n(&r["blocks"]), "block"),
                units::count(n(&r["descriptor_pairs"]), "descriptor pair"),
                n(&r["capacity"]),
                units::count(n(&r["io_templates"]), "IO template")
            );
        }
        for tb in c["tables"].as_array().into_iter().flatten() {
            let _ = writeln!(
                t,
                "  table {:<26} {:>18} {}",
                s(&tb["table"]),
                format!("{:#x}", n(&tb["address"])),
                units::count(n(&tb["bytes"]), "byte")
            );
        }
    }
    t.push_str(memory_table);
    if let Some(ts) = out["tensors"].as_array().filter(|a| !a.is_empty()) {
        let _ = writeln!(t, "\ntensors");
        for x in ts {
            let _ = writeln!(
                t,
                "  {:<6} {:<24} {:>10}  {:<9} (nrt {:>2})  shape {}",
                s(&x["usage"]),
                s(&x["name"]),
                units::human(n(&x["size"])),
                s(&x["dtype"]),
                x["dtype_code"],
                x["shape"]
            );
        }
    }
    for w in out["warnings"].as_array().into_iter().flatten() {
        let _ = writeln!(t, "{}", style.warn(&format!("warning   {}", s(w))));
    }
    t
}

/// A variable's value the runtime refuses: a usage problem (exit 2), named
/// for its variable.
pub(crate) fn config_failure(e: &ConfigError) -> Failure {
    Failure {
        stage: "config",
        status: e.status(),
        message: e.to_string(),
    }
}

pub(crate) fn load_failure(e: &LoadError) -> Failure {
    Failure {
        stage: e.stage(),
        status: e.status(),
        message: e.to_string(),
    }
}

/// What a loaded model shows before it is unloaded.
struct Loaded {
    cores: Vec<Value>,
    /// The device's memory with the model loaded, and the model's id there.
    memory: MemoryReport,
    h_model: HModel,
    unloaded: Result<(), LoadError>,
}

fn describe_model(
    rt: &Runtime,
    model: &neffld::api::Model,
    out: &mut Value,
    s1: Duration,
    t_total: Instant,
    dump: Option<&Path>,
) -> Result<Loaded, Failure> {
    let memory = MemoryReport::of_model(rt, model).map_err(|e| load_failure(&e))?;
    let view = StagedView::of(rt, model).map_err(|e| load_failure(&e))?;
    let cores = core_json(&view);
    let pcores: Vec<u32> = view.cores.iter().map(|c| c.pcore).collect();
    let summary = rt.summary(model).map_err(|e| load_failure(&e))?;
    let (mut timings, warnings, h_model) = (summary.timings, summary.warnings, summary.h_model);
    timings.container = s1;
    let tensors: Vec<Value> = rt
        .tensor_info(model)
        .map_err(|e| load_failure(&e))?
        .iter()
        .map(|t| json!({"name": t.name, "usage": if t.usage == TensorUsage::Input { "input" } else { "output" }, "size": t.size, "dtype": t.dtype.name(), "dtype_code": t.dtype.code(), "shape": t.shape}))
        .collect();
    let tu = Instant::now();
    let unloaded = rt.unload(model);
    let unload_time = tu.elapsed();
    if let Some(dir) = dump {
        crate::dump::write(dir, &view).map_err(Failure::io)?;
    }
    out["h_nn"] = json!(model.h_nn.0);
    out["model"] = json!({
        "name": model.name,
        "uuid": model.uuid.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "vnc": model.vnc.0,
        "pcores": pcores,
    });
    out["timings_us"] = json!({
        "guard": us(timings.guard),
        "container": us(timings.container),
        "parse": us(timings.parse),
        "cache_wait": us(timings.cache_wait),
        "stage": us(timings.stage),
        "relocate": us(timings.relocate),
        "unload": us(unload_time),
        "total": us(t_total.elapsed()),
    });
    out["tensors"] = json!(tensors);
    out["warnings"] = json!(warnings);
    out["cores"] = json!(cores);
    Ok(Loaded {
        cores,
        memory,
        h_model,
        unloaded,
    })
}

pub fn load(a: &LoadArgs, style: Style) -> Result<ExitCode, Failure> {
    let t_total = Instant::now();
    let source = input::source(&a.file)?;
    let bytes = source.bytes();
    let _shortened = source.guard_shortening("load", &a.file, a.json);
    let asked = Asked {
        arch: a.arch,
        lnc: a.lnc,
        runtime: a.runtime,
        device: Some(a.device.kind()),
        validate_hash: a.validate_hash.then_some(true),
        check: a.check.then_some(true),
        allow_legacy_neff: a.allow_legacy_neff.then_some(true),
        max_inflated: a.max_inflated,
        ..Asked::default()
    };
    let settings = Settings::from_env(&asked).map_err(|e| config_failure(&e))?;
    let mut out = json!({"file": input::display(&a.file), "size": bytes.len(), "device": a.device.kind().name()});

    // S1 here, so the NEFF's own target can choose the device without a second inflate.
    let t1 = Instant::now();
    let opened = source.open(&settings.open_options());
    let s1 = t1.elapsed();
    let mut config = settings.for_neff(opened.as_ref().ok());
    if let Err(e) = settings.check_lnc(&config) {
        return Err(Failure::usage(format!("--lnc {e}")));
    }
    // One load per process: the cache need not fingerprint the whole file.
    config.one_load_at_a_time = true;
    out["arch"] = json!(config.arch.instance());
    out["runtime"] = json!(config.line().to_string());
    out["runtime_provenance"] = json!(config.line().provenance(config.arch));
    out["checked"] = json!(config.check);
    let geometry = neffld::instance::Geometry::for_arch(config.arch);
    let (rt, recorder) = Recorder::runtime(config).map_err(|e| load_failure(&e))?;
    out["device_cores"] = json!(geometry.cores());

    let bar = progress(bytes.len() as u64, a.quiet);
    bar.set_message("loading");
    bar.set_position(bytes.len() as u64 / 2);
    let loaded = match opened {
        Ok(neff) => rt.load_opened(bytes, neff, a.start_core, 1),
        Err(e) => Err(LoadError::Container(e)),
    };
    bar.finish_and_clear();
    // The core the runtime refused is the one the command line named.
    if let Err(LoadError::BadVnc { vnc, visible }) = &loaded {
        return Err(Failure::usage(format!(
            "--start-core {vnc}: the device has {} (0 to {}), or -1 for the first free one",
            units::count(*visible, "visible logical core"),
            visible.saturating_sub(1)
        )));
    }
    let mut cores = Vec::new();
    let name = out["model"]["name"].clone();
    let mut loaded_memory = None;
    let outcome = match loaded {
        Err(e) => Err(load_failure(&e)),
        Ok(model) => {
            recorder.freeze();
            let d = describe_model(&rt, &model, &mut out, s1, t_total, a.dump.as_deref())?;
            cores = d.cores;
            loaded_memory = Some((d.memory, d.h_model, model.name.clone()));
            d.unloaded.map_err(|e| Failure {
                stage: "unload",
                status: e.status(),
                message: e.to_string(),
            })
        }
    };
    let (placed, refused) = recorder.snapshot();
    // The memory as the loaded model held it, or as the refusal found it.
    let (report, named) = match (loaded_memory, &refused) {
        (Some((report, h, n)), _) => (report, Some((h, n))),
        (None, Some(r)) => (r.memory.clone(), None),
        (None, None) => (
            MemoryReport::of_device(&rt, 0).map_err(|e| load_failure(&e))?,
            None,
        ),
    };
    let _ = name;
    let name_of = |h: HModel| {
        named
            .as_ref()
            .filter(|(id, _)| *id == h)
            .map(|(_, n)| n.clone())
    };
    out["memory"] = memory::report(&report, &name_of, &placed, refused.as_ref());
    let outcome = outcome.map_err(|mut f| {
        if f.status == NrtStatus::Resource {
            if let Some(why) = memory::refusal_sentence(&out["memory"]) {
                f.message = format!("{}: {why}", f.message);
            }
        }
        f
    });
    stamp(&mut out, "load", outcome.as_ref().err());
    let unwritten = a
        .map
        .as_ref()
        .and_then(|path| write_map(path, &map::render(&out, &cores), &mut out, a.json));
    if a.json {
        print_json(&out);
    } else {
        let table = memory::human(&report, &out["memory"], refused.as_ref());
        emit(&human(&out, &table, a.no_timings, style));
    }
    Ok(exit_after_report(
        "load",
        unwritten,
        outcome.is_ok(),
        a.json,
        style,
    ))
}
