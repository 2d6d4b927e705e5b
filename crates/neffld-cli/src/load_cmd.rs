//! `neffld load`: the whole pipeline on a simulated device, a report of
//! where everything landed, then unload.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use neffld::api::{LoadError, Runtime};
use neffld::config::DeviceKind;
use neffld::ids::HModel;
use neffld::report::{Collective, IoTensors, MemoryReport, Recorder, StagedView};
use neffld::settings::{Asked, Settings};
use neffld::{Arch, NrtStatus, RuntimeLine};

use crate::load_doc::{
    collective_docs, core_docs, CollectiveDoc, CoreDoc, IoDoc, IoHbmDoc, LoadDoc, ModelDoc,
    TensorDoc, TimingsDoc,
};
use crate::report::{
    emit, exit_after_report, hex, print_json, shown, unwritten_warning, write_html, Failure, Stamp,
};
use crate::style::Style;
use crate::{collectives, input, map, memory, units};

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

/// `--runtime`'s help: the lines of the library's table, and the default.
pub(crate) fn runtime_help() -> String {
    format!(
        "Runtime line to reproduce: {}, or a version of one such as 2.27.23 (default: NEFFLD_RUNTIME, else {}, the runtime users run; lines after 2.30 take what their documentation does not say from the newest captured line of the chip)",
        RuntimeLine::list("or"),
        RuntimeLine::NEWEST
    )
}

/// Options of `neffld load`.
#[derive(clap::Args)]
pub struct LoadArgs {
    /// The NEFF file (`-`: standard input).
    pub file: PathBuf,
    /// Device architecture: trn1, trn2 or trn3 (default: NEFFLD_ARCH or NEFFLD_INSTANCE's, else the NEFF's own target).
    #[arg(long, value_parser = parse_arch)]
    pub arch: Option<Arch>,
    // The help names every line of the library's table.
    #[arg(long, value_parser = parse_runtime, value_name = "LINE", help = runtime_help())]
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

fn human(out: &LoadDoc, memory_table: &str, no_timings: bool, style: Style) -> String {
    use std::fmt::Write as _;
    let s = shown;
    let mut t = String::new();
    let _ = writeln!(t, "file      {}", s(&out.file));
    let _ = writeln!(
        t,
        "device    {} {} ({}), runtime {}",
        out.device,
        out.arch,
        units::count(u64::from(out.device_cores), "core"),
        s(&out.runtime)
    );
    let p = &out.runtime_provenance;
    if !p.carried_over.is_empty() {
        let documented = p.documented.join("; ");
        let _ = writeln!(
            t,
            "          {} has no capture {}: {}{}'s captures (of {}) carry over ({})",
            p.line,
            if p.captured_by == p.line {
                format!("on {}", out.arch)
            } else {
                "of its own".to_string()
            },
            if documented.is_empty() {
                String::new()
            } else {
                format!("as documented, {documented}; ")
            },
            p.captured_by,
            p.captured_on,
            p.carried_over.join("; ")
        );
    }
    for note in &out.notes {
        let _ = writeln!(t, "          {note}");
    }
    let o = &out.stamp.outcome;
    let _ = writeln!(t, "status    {} ({})", o.status, o.status_code);
    if let Some(e) = &o.error {
        let _ = writeln!(
            t,
            "{}",
            style.fail(&format!("error     [{}] {}", e.stage, s(&e.message)))
        );
    }
    if out.checked && o.status_code == 0 {
        let _ = writeln!(
            t,
            "{}",
            style.ok("check     passed: every address written to the device points into an allocation of its core")
        );
    }
    if let (Some(m), Some(h_nn)) = (&out.model, out.h_nn) {
        let pcores: Vec<String> = m.pcores.iter().map(|p| format!("nc{p}")).collect();
        let _ = writeln!(t, "model     nn{h_nn} \"{}\" uuid {}", s(&m.name), m.uuid);
        // The runtime's number first; the device's when they differ.
        let device = if m.instance_vnc == m.vnc {
            String::new()
        } else {
            format!(
                " (the device's logical core {}: the runtime numbers the visible cores from 0)",
                m.instance_vnc
            )
        };
        let _ = writeln!(
            t,
            "placed    logical core {} -> physical {}{device}",
            m.vnc,
            pcores.join(", ")
        );
    }
    if !out.memory.hbm.is_empty() {
        let _ = writeln!(t, "memory    {}", memory::answer(&out.memory));
    }
    if let Some(io) = out.io_tensors.as_ref().filter(|io| io.count > 0) {
        let _ = writeln!(t, "io        {}", io_sentence(io));
    }
    if let Some(tm) = out.timings_us.as_ref().filter(|_| !no_timings) {
        let _ = writeln!(t, "\ntimings");
        for (label, micros) in [
            ("S0 guard", tm.guard),
            ("S1 container", tm.container),
            ("S2+S3 parse", tm.parse),
            ("S4 stage", tm.stage),
            ("  S5 relocate (in S4)", tm.relocate),
            ("unload", tm.unload),
            ("total", tm.total),
        ] {
            let _ = writeln!(t, "  {label:<22} {:>10.3} ms", micros as f64 / 1000.0);
        }
    }
    for c in out.cores() {
        let _ = writeln!(
            t,
            "\ncore nc{} (HBM {}, subgraph {}): {}, {}, {}",
            c.pcore,
            c.hbm,
            s(&c.subgraph),
            units::count(c.instructions, "instruction slot"),
            units::count(c.descriptors, "DMA descriptor"),
            units::count(c.templates, "IO template")
        );
        let _ = writeln!(
            t,
            "  {:>4}  {:<36} {:<13} {:>18} {:>20}  placement",
            "id", "variable", "type", "address", "size"
        );
        for v in &c.variables {
            let addr = v.address.map_or("-".to_string(), |a| format!("{a:#x}"));
            let size = v
                .size
                .map_or("-".to_string(), |b| format!("{b} ({})", units::human(b)));
            let _ = writeln!(
                t,
                "  {:>4}  {:<36} {:<13} {:>18} {:>20}  {}",
                v.var_id,
                s(&v.name),
                s(v.kind),
                addr,
                size,
                match v.placement {
                    "io" => "io (bound at execute)".to_string(),
                    other => s(other),
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
        for e in &c.images {
            let p = &e.patches;
            let _ = writeln!(
                t,
                "  {:<6} {:>18} {:>9} {:>8} {:>8} {:>7} {:>6} {:>6} {:>6} {:>10}",
                e.engine,
                format!("{:#x}", e.address),
                e.bytes,
                e.neff_records,
                e.device_slots,
                p.insert,
                p.modify,
                p.delete,
                e.absolute_operands,
                e.io_templates
            );
        }
        for r in &c.rings {
            let _ = writeln!(
                t,
                "  ring {:<20} {:>18} {}, {} (capacity {}), {}",
                s(&r.queue),
                format!("{:#x}", r.address),
                units::count(u64::from(r.blocks), "block"),
                units::count(r.descriptor_pairs, "descriptor pair"),
                r.capacity,
                units::count(r.io_templates, "IO template")
            );
        }
        for tb in &c.tables {
            let _ = writeln!(
                t,
                "  table {:<26} {:>18} {}",
                s(&tb.table),
                format!("{:#x}", tb.address),
                units::count(tb.bytes, "byte")
            );
        }
    }
    t.push_str(memory_table);
    if let Some(note) = &out.collectives_memory {
        let _ = writeln!(t, "note      {note}");
    }
    if let Some(cs) = out.collectives.as_ref().filter(|a| !a.is_empty()) {
        let _ = writeln!(t, "\ncollectives");
        for c in cs {
            let at = c
                .record_address
                .map_or_else(|| "-".to_string(), |a| format!("{a:#x}"));
            let _ = writeln!(
                t,
                "  {} {at:>16}  {}",
                s(&c.collective.subgraph),
                collectives::line(&c.collective)
            );
        }
    }
    if let Some(ts) = out.tensors.as_ref().filter(|a| !a.is_empty()) {
        let _ = writeln!(t, "\ntensors");
        for x in ts {
            let shape: Vec<String> = x.shape.iter().map(u32::to_string).collect();
            let _ = writeln!(
                t,
                "  {:<6} {:<24} {:>10}  {:<9} (nrt {})  shape [{}]",
                x.usage,
                s(&x.name),
                units::human(x.size),
                x.dtype,
                x.dtype_code,
                shape.join(",")
            );
        }
    }
    for w in out.warnings.iter().flatten() {
        let _ = writeln!(t, "{}", style.warn(&format!("warning   {}", s(w))));
    }
    t
}

/// What the load does not hold, and the memory with it, in words.
fn io_sentence(io: &IoDoc) -> String {
    let what = format!(
        "not held by a load: {} ({}), bound at execute",
        units::count(io.count as u64, "input and output tensor"),
        units::human(io.bytes)
    );
    match &io.error {
        Some(e) => format!("{what}, do not fit beside it: {}", shown(&e.message)),
        None => {
            let per_hbm: Vec<String> = io
                .hbm
                .iter()
                .map(|h| {
                    format!(
                        "HBM {} {} used, {} free",
                        h.hbm,
                        units::human(h.used),
                        units::human(h.free)
                    )
                })
                .collect();
            format!(
                "{what}; with them {} (as `neffld plan` counts them)",
                per_hbm.join("; ")
            )
        }
    }
}

/// The load's input and output tensors measured as a plan charges them,
/// on the HBMs the load's report shows.
fn io_doc(io: IoTensors, shown_hbms: &[(u32, u32)]) -> IoDoc {
    let (hbm, error) = match io.with_them {
        Ok(report) => {
            let hbm = report
                .hbms
                .iter()
                .filter(|h| shown_hbms.contains(&(report.device, h.hbm)))
                .map(|h| IoHbmDoc {
                    device: report.device,
                    hbm: h.hbm,
                    used: h.usage().total(),
                    free: h.free(),
                })
                .collect();
            (hbm, None)
        }
        Err(e) => (Vec::new(), Some(load_failure(&e).object())),
    };
    IoDoc {
        count: io.count,
        bytes: io.bytes,
        fits: error.is_none(),
        hbm,
        error,
    }
}

/// `--start-core`: -1 leaves the core to the runtime, a core below it is
/// none.
fn start_core(n: i32, rt: &Runtime) -> Result<Option<u32>, Failure> {
    match n {
        -1 => Ok(None),
        n => u32::try_from(n)
            .map(Some)
            .map_err(|_| bad_start_core(n.into(), rt.visible_vnc_count())),
    }
}

fn bad_start_core(n: i64, visible: u32) -> Failure {
    Failure::usage(format!(
        "--start-core {n}: the device has {} (0 to {}), or -1 for the first free one",
        units::count(visible, "visible logical core"),
        visible.saturating_sub(1)
    ))
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
    h_nn: u32,
    model: ModelDoc,
    timings: TimingsDoc,
    tensors: Vec<TensorDoc>,
    /// Its input and output tensors, which the load does not hold.
    io: IoTensors,
    warnings: Vec<String>,
    cores: Vec<CoreDoc>,
    /// Each collective with the device address of its record.
    collectives: Vec<CollectiveDoc>,
    /// What the memory report does not count for them.
    collectives_memory: Option<String>,
    /// The device's memory with the model loaded, and the model's id there.
    memory: MemoryReport,
    h_model: HModel,
    unloaded: Result<(), LoadError>,
}

fn describe_model(
    rt: &Runtime,
    model: &neffld::api::Model,
    s1: Duration,
    t_total: Instant,
    dump: Option<&Path>,
) -> Result<Loaded, Failure> {
    let memory = MemoryReport::of_model(rt, model).map_err(|e| load_failure(&e))?;
    let view = StagedView::of(rt, model).map_err(|e| load_failure(&e))?;
    let cores = core_docs(&view);
    let pcores: Vec<u32> = view.cores.iter().map(|c| c.pcore).collect();
    let summary = rt.summary(model).map_err(|e| load_failure(&e))?;
    let (mut timings, h_model) = (summary.timings, summary.h_model);
    // What the runtime warns of when it starts (a deprecated variable)
    // comes first, as its log line would.
    let mut warnings = rt.config().start_warnings();
    warnings.extend(summary.warnings);
    let collectives = collective_docs(&summary.collectives, &view);
    let collectives_memory = Collective::uncounted_note(&summary.collectives);
    timings.container = s1;
    let tensors = rt
        .tensor_info(model)
        .map_err(|e| load_failure(&e))?
        .iter()
        .map(|t| TensorDoc {
            usage: t.usage.name(),
            size: t.size,
            dtype: t.dtype.name(),
            dtype_code: t.dtype.code(),
            name: t.name.clone(),
            shape: t.shape.clone(),
        })
        .collect();
    let io = IoTensors::measure(rt, model).map_err(|e| load_failure(&e))?;
    let tu = Instant::now();
    let unloaded = rt.unload(model);
    let unload_time = tu.elapsed();
    if let Some(dir) = dump {
        crate::dump::write(dir, &view).map_err(Failure::io)?;
    }
    Ok(Loaded {
        h_nn: model.h_nn.0,
        model: ModelDoc {
            name: model.name.clone(),
            uuid: hex(&model.uuid),
            vnc: model.vnc,
            instance_vnc: model.lcore.0,
            pcores,
        },
        timings: TimingsDoc {
            guard: us(timings.guard),
            container: us(timings.container),
            parse: us(timings.parse),
            cache_wait: us(timings.cache_wait),
            stage: us(timings.stage),
            relocate: us(timings.relocate),
            unload: us(unload_time),
            total: us(t_total.elapsed()),
        },
        tensors,
        io,
        warnings,
        cores,
        collectives,
        collectives_memory,
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
    let settings = Settings::from_env(&asked).map_err(|e| Failure::config(&e))?;

    // S1 here, so the NEFF's own target can choose the device without a second inflate.
    let t1 = Instant::now();
    let opened = source.open(&settings.open_options());
    let s1 = t1.elapsed();
    let mut config = settings.for_neff(opened.as_ref().ok());
    if let Err(e) = settings.check_lnc(&config) {
        return Err(Failure::usage(format!("--lnc {e}")));
    }
    // One load per process: the cache need not fingerprint the whole file.
    config.loader.one_load_at_a_time = true;
    let (arch, line, checked, device) = (
        config.topology.arch,
        config.line(),
        config.loader.check,
        config.loader.device,
    );
    let notes = config.start_notes(config.started_vnc_count());
    let geometry = neffld::instance::Geometry::for_arch(arch);
    let (rt, recorder) = Recorder::runtime(config).map_err(|e| load_failure(&e))?;

    let bar = progress(bytes.len() as u64, a.quiet);
    bar.set_message("loading");
    bar.set_position(bytes.len() as u64 / 2);
    let loaded = match opened {
        Ok(neff) => rt.load_opened(bytes, neff, start_core(a.start_core, &rt)?),
        Err(e) => Err(LoadError::Container(e)),
    };
    bar.finish_and_clear();
    // The core the runtime refused is the one the command line named.
    if let Err(LoadError::BadVnc { vnc, visible }) = &loaded {
        return Err(bad_start_core(i64::from(*vnc), *visible));
    }
    let (outcome, described) = match loaded {
        Err(e) => (Err(load_failure(&e)), None),
        Ok(model) => {
            recorder.freeze();
            let d = describe_model(&rt, &model, s1, t_total, a.dump.as_deref())?;
            let unloaded = d.unloaded.as_ref().map_err(|e| Failure {
                stage: "unload",
                status: e.status(),
                message: e.to_string(),
            });
            (unloaded.copied(), Some(d))
        }
    };
    let (placed, refused) = recorder.snapshot();
    // The memory as the loaded model held it, or as the refusal found it.
    let (report, named) = match (&described, &refused) {
        (Some(d), _) => (d.memory.clone(), Some((d.h_model, d.model.name.clone()))),
        (None, Some(r)) => (r.memory.clone(), None),
        (None, None) => (
            MemoryReport::of_device(&rt, 0).map_err(|e| load_failure(&e))?,
            None,
        ),
    };
    let name_of = |h: HModel| {
        named
            .as_ref()
            .filter(|(id, _)| *id == h)
            .map(|(_, n)| n.clone())
    };
    let memory = memory::report(&report, &name_of, &placed, refused.as_ref());
    let outcome = outcome.map_err(|mut f| {
        if f.status == NrtStatus::Resource {
            if let Some(why) = memory::refusal_sentence(&memory) {
                f.message = format!("{}: {why}", f.message);
            }
        }
        f
    });
    let mut doc = LoadDoc {
        file: input::display(&a.file),
        size: bytes.len(),
        device: device.name(),
        arch: arch.instance(),
        runtime: line.to_string(),
        runtime_provenance: line.provenance(arch),
        notes,
        checked,
        device_cores: geometry.cores(),
        h_nn: None,
        model: None,
        timings_us: None,
        tensors: None,
        io_tensors: None,
        warnings: None,
        cores: None,
        collectives: None,
        collectives_memory: None,
        memory,
        stamp: Stamp::new("load", outcome.as_ref().err()),
    };
    if let Some(d) = described {
        let hbms: Vec<(u32, u32)> = doc.memory.hbm.iter().map(|h| (h.device, h.hbm)).collect();
        doc.io_tensors = Some(io_doc(d.io, &hbms));
        doc.h_nn = Some(d.h_nn);
        doc.model = Some(d.model);
        doc.timings_us = Some(d.timings);
        doc.tensors = Some(d.tensors);
        doc.warnings = Some(d.warnings);
        doc.cores = Some(d.cores);
        doc.collectives = Some(d.collectives);
        doc.collectives_memory = d.collectives_memory;
    }
    let unwritten = a.map.as_ref().and_then(|path| {
        let f = write_html(path, &map::render(&doc))?;
        unwritten_warning(&mut doc.warnings, &f, a.json);
        Some(f)
    });
    if a.json {
        print_json(&doc)?;
    } else {
        let table = memory::human(&report, &doc.memory, refused.as_ref());
        emit(&human(&doc, &table, a.no_timings, style))?;
    }
    Ok(exit_after_report(
        "load",
        unwritten,
        outcome.is_ok(),
        a.json,
        style,
    ))
}
