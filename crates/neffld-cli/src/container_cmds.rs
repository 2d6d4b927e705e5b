//! `inspect`, `verify`, `extract` and `pack`: the container-level commands.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::ExitCode;

use neffld::neff::{feature_names, Archive, Encoding, NeffHeader, NeffWriter, Producer};
use neffld::report::examine::{Contents, DigestResult, Integrity, IoTensor};
use neffld::report::{Collective, Examination, ExamineOptions};
use neffld::settings::{Asked, Settings};
use neffld::text::{escape, escape_bytes};
use neffld::tree;
use neffld::{Arch, NrtStatus};
use serde::Serialize;

use crate::load_cmd::load_failure;
use crate::report::{
    emit, failed, hex, print_json, shown, shown_path, Failure, Outcome, Stamp, Stamped,
};
use crate::style::Style;
use crate::units;
use crate::{collectives, input};

/// A command's exit status, or the failure that ended it early.
type CmdResult = Result<ExitCode, Failure>;

fn write_err(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::io(format!("cannot write {}: {e}", path.display()))
}

/// The header as `inspect` reports it.
#[derive(Serialize)]
struct HeaderDoc {
    pkg_version: u64,
    header_size: u64,
    data_size: u64,
    neff_version: String,
    build_version: String,
    unused_0: u32,
    hash: String,
    uuid: String,
    name: String,
    requested_tpb_count: u32,
    tpb_per_node: Vec<u8>,
    feature_bits: String,
    features: Vec<String>,
    vnc_size: u32,
}

impl HeaderDoc {
    fn of(h: &NeffHeader) -> HeaderDoc {
        let nodes_used = h
            .tpb_per_node
            .iter()
            .rposition(|&n| n != 0)
            .map_or(0, |i| i + 1);
        HeaderDoc {
            pkg_version: h.pkg_version,
            header_size: h.header_size,
            data_size: h.data_size,
            neff_version: format!("{}.{}", h.version_major, h.version_minor),
            build_version: h.build_version_str(),
            unused_0: h.unused_0,
            hash: hex(&h.hash),
            uuid: hex(&h.uuid),
            name: h.name_str(),
            requested_tpb_count: h.requested_tpb_count,
            tpb_per_node: h.tpb_per_node[..nodes_used].to_vec(),
            feature_bits: format!("{:#x}", h.feature_bits),
            features: feature_names(h.feature_bits),
            vnc_size: h.vnc_size,
        }
    }
}

/// Hex of a member name's exact bytes (a name that is not UTF-8).
fn hex_bytes<S: serde::Serializer>(raw: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
    match raw {
        Some(raw) => s.serialize_str(&hex(raw)),
        None => s.serialize_none(),
    }
}

/// One archive member.
#[derive(Clone, Serialize)]
struct MemberDoc {
    name: String,
    size: usize,
    offset: usize,
    /// A name that is not UTF-8: its exact bytes beside the text.
    #[serde(
        rename = "name_bytes",
        serialize_with = "hex_bytes",
        skip_serializing_if = "Option::is_none"
    )]
    raw_name: Option<Vec<u8>>,
}

/// The archive as `inspect` reports it.
#[derive(Serialize)]
struct ArchiveDoc {
    encoding: &'static str,
    gzip_members: u32,
    trailing_bytes: u64,
    inflated_bytes: usize,
    member_count: usize,
    members: Vec<MemberDoc>,
}

impl ArchiveDoc {
    fn of(a: &Archive) -> ArchiveDoc {
        let (encoding, gzip_members, trailing_bytes) = match a.encoding() {
            Some(Encoding::Gzip {
                members, trailing, ..
            }) => ("gzip", members, trailing),
            _ => ("raw-tar", 0, 0),
        };
        ArchiveDoc {
            encoding,
            gzip_members,
            trailing_bytes,
            inflated_bytes: a.decoded_len(),
            member_count: a.len(),
            members: a
                .members()
                .iter()
                .map(|m| MemberDoc {
                    name: m.name.clone(),
                    size: m.range.len(),
                    offset: m.range.start,
                    raw_name: m.raw_name.as_deref().map(<[u8]>::to_vec),
                })
                .collect(),
        }
    }
}

/// The payload digest against the header's.
#[derive(Serialize)]
struct IntegrityDoc {
    checked: bool,
    algorithm: String,
    digest: String,
    result: &'static str,
}

impl IntegrityDoc {
    fn of(i: &Integrity) -> IntegrityDoc {
        IntegrityDoc {
            checked: i.required,
            algorithm: i.algorithm.name().to_lowercase(),
            digest: i.digest.clone(),
            result: i.result.name(),
        }
    }
}

/// One IO tensor, its dtype spelled as the NEFF spells it.
#[derive(Serialize)]
struct TensorDoc {
    name: String,
    dtype: String,
    dtype_code: u32,
    shape: Vec<u32>,
    size: u64,
}

/// One engine's program.
#[derive(Serialize)]
struct EngineDoc {
    engine: &'static str,
    records: u64,
    /// Records by opcode, `0xNN`.
    opcodes: BTreeMap<String, u64>,
}

/// One DMA queue.
#[derive(Serialize)]
struct QueueDoc {
    queue: String,
    owner: &'static str,
    #[serde(rename = "type")]
    kind: String,
    blocks: usize,
    descriptors: usize,
}

/// One subgraph.
#[derive(Serialize)]
struct SubgraphDoc {
    name: String,
    idle: bool,
    engines: Vec<EngineDoc>,
    variables: BTreeMap<&'static str, u64>,
    queues: Vec<QueueDoc>,
    scratchpad_bytes: u64,
    collectives: Vec<Collective>,
}

/// The parse side (S2+S3): target, IO tensors in `neff.json` order (dtype
/// spelled as the NEFF spells it), and per subgraph its engines (records,
/// opcode census), variables by type, queues and DMA blocks.
#[derive(Serialize)]
struct ContentsDoc {
    target: String,
    arch: &'static str,
    inputs: Vec<TensorDoc>,
    outputs: Vec<TensorDoc>,
    subgraphs: Vec<SubgraphDoc>,
}

impl ContentsDoc {
    fn of(c: &Contents) -> ContentsDoc {
        let tensors = |ts: &[IoTensor]| -> Vec<TensorDoc> {
            ts.iter()
                .map(|t| TensorDoc {
                    name: t.name.clone(),
                    dtype: t.dtype_name.clone(),
                    dtype_code: t.dtype.code(),
                    shape: t.shape.clone(),
                    size: t.size,
                })
                .collect()
        };
        let subgraphs = c
            .subgraphs
            .iter()
            .map(|k| SubgraphDoc {
                name: k.name.clone(),
                idle: k.idle,
                engines: k
                    .engines
                    .iter()
                    .map(|e| EngineDoc {
                        engine: e.engine,
                        records: e.records,
                        opcodes: e
                            .opcodes
                            .iter()
                            .map(|(op, n)| (format!("{op:#04x}"), *n))
                            .collect(),
                    })
                    .collect(),
                variables: k.variables.clone(),
                queues: k
                    .queues
                    .iter()
                    .map(|q| QueueDoc {
                        queue: q.queue.clone(),
                        owner: q.owner,
                        kind: q.kind.clone(),
                        blocks: q.blocks,
                        descriptors: q.descriptors,
                    })
                    .collect(),
                scratchpad_bytes: k.scratchpad_bytes,
                collectives: k.collectives.clone(),
            })
            .collect();
        ContentsDoc {
            target: c.target.clone(),
            arch: c.arch.instance(),
            inputs: tensors(&c.inputs),
            outputs: tensors(&c.outputs),
            subgraphs,
        }
    }
}

/// The report of one file (docs/cli.md, `inspect --json`), from what the
/// gates found.
#[derive(Serialize)]
struct FileReport {
    file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    header: Option<HeaderDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    integrity: Option<IntegrityDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    archive: Option<ArchiveDoc>,
    /// The archive's members again, at the top level.
    #[serde(skip_serializing_if = "Option::is_none")]
    members: Option<Vec<MemberDoc>>,
    #[serde(flatten)]
    contents: Option<ContentsDoc>,
    warnings: Vec<String>,
    #[serde(flatten)]
    outcome: Outcome,
}

/// The report of one file and its verdict.
fn examination_report(file: &Path, x: &Examination) -> (FileReport, Result<(), Failure>) {
    let archive = x.archive.as_ref().map(ArchiveDoc::of);
    let outcome = x.problem().map_or(Ok(()), |e| Err(load_failure(e)));
    let report = FileReport {
        file: input::display(file),
        size: Some(x.size),
        header: x.header.as_ref().map(HeaderDoc::of),
        integrity: x.integrity.as_ref().map(IntegrityDoc::of),
        members: archive.as_ref().map(|a| a.members.clone()),
        archive,
        contents: x.contents.as_ref().map(ContentsDoc::of),
        warnings: x.warnings.clone(),
        outcome: Outcome::of(outcome.as_ref().err()),
    };
    (report, outcome)
}

/// `inspect`'s examination: everything up to the first failure, the
/// digest computed but not required.
fn examine(
    file: &Path,
    max_inflated: Option<u64>,
    as_json: bool,
) -> (FileReport, Result<(), Failure>) {
    let limits = match env_limits(max_inflated) {
        Ok(l) => l,
        Err(e) => return unread(file, e),
    };
    match input::source(file) {
        Ok(source) => {
            let _shortened = source.guard_shortening("inspect", file, as_json);
            let opts = ExamineOptions {
                inflate_limit: limits.inflate_limit,
                max_members: limits.max_members,
                contents: true,
                ..ExamineOptions::default()
            };
            examination_report(file, &Examination::of(source.bytes(), &opts))
        }
        Err(e) => unread(file, e),
    }
}

/// The container ceilings: `--max-inflated`, else `NEFFLD_MAX_INFLATED`,
/// and `NEFFLD_MAX_MEMBERS` ([`Settings`]): one limit for every command,
/// as a load reads them.
fn env_limits(max_inflated: Option<u64>) -> Result<neffld::neff::OpenOptions, Failure> {
    let asked = Asked {
        max_inflated,
        ..Asked::default()
    };
    Settings::from_env(&asked)
        .map(|s| s.open_options())
        .map_err(|e| load_failure(&e.into()))
}

/// The report of a file that could not be read.
fn unread(file: &Path, e: Failure) -> (FileReport, Result<(), Failure>) {
    let report = FileReport {
        file: input::display(file),
        size: None,
        header: None,
        integrity: None,
        archive: None,
        members: None,
        contents: None,
        warnings: Vec::new(),
        outcome: Outcome::of(Some(&e)),
    };
    (report, Err(e))
}

/// `neffld inspect`: everything about one NEFF.
pub fn inspect(file: &Path, as_json: bool, max_inflated: Option<u64>, err: Style) -> CmdResult {
    let (report, outcome) = examine(file, max_inflated, as_json);
    match &outcome {
        Err(f) if f.stage == "io" && !as_json => return Err(f.clone()),
        _ => {}
    }
    if as_json {
        print_json(&Stamped {
            body: report,
            stamp: Stamp::new("inspect", outcome.as_ref().err()),
        })?;
    } else {
        print_human(&report)?;
        if let Err(f) = &outcome {
            eprintln!("{}", err.fail(&f.human()));
        }
    }
    Ok(match &outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.exit_code(),
    })
}

/// The counts of a `verify` run.
#[derive(Serialize)]
struct VerifySummary {
    files: usize,
    ok: usize,
    failed: usize,
    unreadable: usize,
}

/// The document of `verify --json`: one report per file.
#[derive(Serialize)]
struct VerifyDoc {
    files: Vec<FileReport>,
    summary: VerifySummary,
}

/// `neffld verify`: the verdict of [`neffld::verify`] — every gate a load
/// of the file runs, under the settings a load resolves ([`Settings`]: the
/// architecture `NEFFLD_ARCH` or `NEFFLD_INSTANCE` names, else the file's
/// own) — with the payload digest required unless `ignore_hash` (a file
/// that does not match its own digest is corrupt, even though a load checks
/// the digest only with `NEURON_RT_VALIDATE_HASH`); with the `inspect`
/// report of each file; one line per file — an unreadable file is a FAIL
/// line too, and the rest are still checked — then a summary line (or one
/// JSON document).
pub fn verify(
    files: &[std::path::PathBuf],
    as_json: bool,
    max_inflated: Option<u64>,
    ignore_hash: bool,
    style: Style,
) -> CmdResult {
    let asked = Asked {
        max_inflated,
        validate_hash: Some(!ignore_hash),
        ..Asked::default()
    };
    let settings = Settings::from_env(&asked).map_err(|e| load_failure(&e.into()))?;
    let mut all = Vec::with_capacity(files.len());
    let mut first_failure: Option<Failure> = None;
    let (mut failed_gate, mut unreadable) = (0usize, 0usize);
    let mut text = String::new();
    for f in files {
        let (report, outcome) = match input::source(f) {
            Ok(source) => {
                let _shortened = source.guard_shortening("verify", f, as_json);
                let x = Examination::verify_file(source.neff(), &settings, as_json);
                let subgraphs = x.verdict.as_ref().map_or(0, |v| v.subgraphs);
                let (report, outcome) = examination_report(f, &x);
                (report, outcome.map(|()| subgraphs))
            }
            Err(e) => {
                let (report, outcome) = unread(f, e);
                (report, outcome.map(|()| 0))
            }
        };
        let name = shown(&report.file);
        match &outcome {
            Ok(subgraphs) => {
                let (algorithm, result) = report
                    .integrity
                    .as_ref()
                    .map_or(("", ""), |i| (i.algorithm.as_str(), i.result));
                text.push_str(&format!(
                    "{}    {name}  ({algorithm} {result}{}, {}, {})\n",
                    style.ok("ok"),
                    if result == DigestResult::Mismatch.name() {
                        " (ignored)"
                    } else {
                        ""
                    },
                    units::count(
                        report.archive.as_ref().map_or(0, |a| a.member_count as u64),
                        "member"
                    ),
                    units::count(*subgraphs as u64, "subgraph"),
                ))
            }
            Err(e) => {
                if e.stage == "io" {
                    unreadable += 1;
                } else {
                    failed_gate += 1;
                }
                first_failure.get_or_insert_with(|| e.clone());
                text.push_str(&style.fail(&format!("FAIL  {name}: {}", e.human())));
                text.push('\n');
            }
        }
        all.push(report);
    }
    let ok = files.len() - failed_gate - unreadable;
    let summary = format!(
        "{}: {ok} ok, {failed_gate} failed, {unreadable} unreadable",
        units::count(files.len() as u64, "file")
    );
    if as_json {
        print_json(&Stamped {
            body: VerifyDoc {
                files: all,
                summary: VerifySummary {
                    files: files.len(),
                    ok,
                    failed: failed_gate,
                    unreadable,
                },
            },
            stamp: Stamp::new("verify", first_failure.as_ref()),
        })?;
    } else {
        text.push_str(&if ok == files.len() {
            style.ok(&summary)
        } else {
            style.fail(&summary)
        });
        text.push('\n');
        emit(&text)?;
    }
    Ok(if unreadable > 0 {
        ExitCode::from(2)
    } else if failed_gate > 0 {
        failed()
    } else {
        ExitCode::SUCCESS
    })
}

fn print_human(out: &FileReport) -> Result<(), Failure> {
    use std::fmt::Write as _;
    let str_of = shown;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "file        {}: {}",
        str_of(&out.file),
        units::bytes(out.size.unwrap_or(0))
    );
    if let Some(h) = &out.header {
        let _ = writeln!(t, "name        {}", str_of(&h.name));
        let _ = writeln!(t, "uuid        {}", h.uuid);
        let _ = writeln!(
            t,
            "format      NEFF {}, pkg_version {}, payload {}",
            h.neff_version,
            h.pkg_version,
            units::bytes(h.data_size)
        );
        let _ = writeln!(
            t,
            "features    {} [{}]",
            h.feature_bits,
            h.features.join(", ")
        );
        let _ = writeln!(t, "lnc         vnc_size {}", h.vnc_size);
    }
    if let Some(i) = &out.integrity {
        let m = match i.result {
            "mismatch" => "does NOT match".to_string(),
            "skipped" => "not compared (empty payload)".to_string(),
            form => format!("matches ({form})"),
        };
        let how = if i.checked {
            "verified"
        } else {
            "computed, not required"
        };
        let _ = writeln!(t, "integrity   {} {how}: {m}", i.algorithm);
    }
    if let Some(a) = &out.archive {
        let _ = writeln!(
            t,
            "archive     {}, {}, {} inflated",
            a.encoding,
            units::count(a.member_count as u64, "member"),
            units::bytes(a.inflated_bytes as u64)
        );
        for m in &a.members {
            let name = match &m.raw_name {
                Some(raw) => escape_bytes(raw).into_owned(),
                None => str_of(&m.name),
            };
            let _ = writeln!(t, "  {:>10}  {name}", m.size);
        }
    }
    if let Some(c) = &out.contents {
        let _ = writeln!(t, "target      {} ({})", c.arch, escape(&c.target));
        for (dir, tensors) in [("input", &c.inputs), ("output", &c.outputs)] {
            for x in tensors {
                let shape: Vec<String> = x.shape.iter().map(u32::to_string).collect();
                let _ = writeln!(
                    t,
                    "  {dir:<6}  {:<24} {:<9} {:<18} {}",
                    str_of(&x.name),
                    str_of(&x.dtype),
                    format!("[{}]", shape.join(",")),
                    units::count(x.size, "byte")
                );
            }
        }
        for sg in &c.subgraphs {
            let engines: Vec<String> = sg
                .engines
                .iter()
                .map(|e| format!("{} {}", e.engine, e.records))
                .collect();
            let vars: Vec<String> = sg
                .variables
                .iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect();
            let idle = if sg.idle { " (idle)" } else { "" };
            let _ = writeln!(
                t,
                "subgraph    {}{idle}: records {}; vars {}",
                str_of(&sg.name),
                engines.join(", "),
                vars.join(", ")
            );
            for q in &sg.queues {
                let _ = writeln!(
                    t,
                    "  queue {:<20} {:<8} owner {:<5} {}, {}",
                    str_of(&q.queue),
                    str_of(&q.kind),
                    q.owner,
                    units::count(q.blocks as u64, "block"),
                    units::count(q.descriptors as u64, "descriptor")
                );
            }
            for c in &sg.collectives {
                let _ = writeln!(t, "  collective {}", collectives::line(c));
            }
        }
    }
    for w in &out.warnings {
        let _ = writeln!(t, "warning     {}", str_of(w));
    }
    emit(&t)
}

/// A member name for a warning: whole up to 256 bytes, else its first 120
/// bytes and its length (a name of 200,000 bytes, repeated in a warning
/// per member, made `extract --json` print hundreds of megabytes).
fn abbreviated(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= 256 {
        return name.into();
    }
    let mut end = 120;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &name[..end], name.len()).into()
}

/// The document of `extract --json`.
#[derive(Serialize)]
struct ExtractDoc<'a> {
    file: String,
    output: String,
    /// The members written.
    members: &'a [String],
    warnings: &'a [String],
}

/// `neffld extract`: every member beneath `dir`, by the one file-system
/// policy ([`tree::Dest`]): a member that cannot be placed is skipped with
/// a warning, one the destination refuses (a symbolic link in the way, an
/// I/O failure) is reported, and every other member is still written.
pub fn extract(
    file: &Path,
    dir: &Path,
    max_inflated: Option<u64>,
    as_json: bool,
    err: Style,
) -> CmdResult {
    let limits = env_limits(max_inflated)?;
    let source = input::source(file)?;
    let _shortened = source.guard_shortening("extract", file, as_json);
    let bytes = source.bytes();
    // The ceilings only: extract is no load, and checks no digest.
    let opts = neffld::neff::OpenOptions {
        inflate_limit: limits.inflate_limit,
        max_members: limits.max_members,
        ..Default::default()
    };
    let neff = neffld::neff::open(bytes, &opts).map_err(|e| Failure {
        stage: "container",
        status: e.status(),
        message: e.to_string(),
    })?;
    let dest = tree::Dest::create(dir)
        .map_err(|e| Failure::io(format!("cannot create {}: {e}", dir.display())))?;
    let mut written = Vec::new();
    let mut warnings = Vec::new();
    let mut refused = Vec::new();
    for m in neff.archive().members() {
        // Regular files and directories only (the policy): a link, device
        // or FIFO entry is named and skipped, not written as an empty file.
        if let Some(kind) = m.kind.special_name() {
            warnings.push(format!(
                "skipping member {}: it is {kind}; extract writes regular files and directories only",
                abbreviated(&m.name)
            ));
            continue;
        }
        match dest.write(m.name_bytes(), neff.archive().body(m)) {
            Ok(()) => written.push(m.name.clone()),
            Err(tree::Refusal::Name(why)) => {
                warnings.push(format!("skipping member {}: {why}", abbreviated(&m.name)))
            }
            Err(tree::Refusal::Dest(why)) => refused.push(format!(
                "member {} not written under {}: {why}",
                m.name,
                dir.display()
            )),
        }
    }
    // One message for a destination that refuses everything (a read-only
    // directory refused 72 members in one 9 KB message): how many, and
    // the first in full.
    let failure = refused.first().map(|first| {
        Failure::io(match refused.len() {
            1 => first.clone(),
            n => format!("{n} members not written; the first: {first}"),
        })
    });
    if as_json {
        print_json(&Stamped {
            body: ExtractDoc {
                file: input::display(file),
                output: dir.display().to_string(),
                members: &written,
                warnings: &warnings,
            },
            stamp: Stamp::new("extract", failure.as_ref()),
        })?;
    } else {
        for w in &warnings {
            eprintln!("{}", err.warn(&escape(w)));
        }
        const SHOWN: usize = 5;
        for r in refused.iter().take(SHOWN) {
            eprintln!("{}", err.fail(&escape(r)));
        }
        if refused.len() > SHOWN {
            let more = units::count((refused.len() - SHOWN) as u64, "more member");
            eprintln!("{}", err.fail(&format!("... and {more} not written")));
        }
        emit(&format!(
            "extracted {} to {}\n",
            units::count(written.len() as u64, "member"),
            shown_path(dir)
        ))?;
    }
    Ok(match failure {
        Some(f) => f.exit_code(),
        None => ExitCode::SUCCESS,
    })
}

fn parse_uuid(s: &str) -> Result<[u8; 16], Failure> {
    parse_uuid_text(s).map_err(Failure::usage)
}

fn parse_uuid_text(s: &str) -> Result<[u8; 16], String> {
    let hexdigits: String = s.chars().filter(|c| *c != '-').collect();
    if hexdigits.len() != 32 {
        return Err(format!("uuid {s:?} must have 32 hex digits"));
    }
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hexdigits[2 * i..2 * i + 2], 16)
            .map_err(|_| format!("uuid {s:?} is not hex"))?;
    }
    Ok(out)
}

/// `--header KEY=VALUE`: one header field, by name.
fn set_header_field(h: &mut NeffHeader, field: &str) -> Result<(), Failure> {
    set_header_text(h, field).map_err(Failure::usage)
}

fn set_header_text(h: &mut NeffHeader, field: &str) -> Result<(), String> {
    let (key, value) = field
        .split_once('=')
        .ok_or_else(|| format!("--header {field:?}: expected KEY=VALUE"))?;
    let num = |v: &str| -> Result<u64, String> {
        let v = v.trim();
        let parsed = match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => v.parse(),
        };
        parsed.map_err(|_| format!("--header {key}: {v:?} is not a number"))
    };
    match key {
        "name" => h
            .try_set_name(value)
            .map_err(|e| format!("--header name: {e}"))?,
        "uuid" => h.uuid = parse_uuid_text(value)?,
        "version" => {
            let (major, minor) = value.split_once('.').ok_or_else(|| "--header version: expected MAJOR.MINOR".to_string())?;
            h.version_major = num(major)?;
            h.version_minor = num(minor)?;
        }
        "feature_bits" => h.feature_bits = num(value)?,
        "vnc_size" => h.vnc_size = u32::try_from(num(value)?).map_err(|_| "--header vnc_size: too large".to_string())?,
        "requested_tpb_count" => {
            h.requested_tpb_count = u32::try_from(num(value)?).map_err(|_| "--header requested_tpb_count: too large".to_string())?
        }
        "build_version" => h
            .try_set_build_version(value)
            .map_err(|e| format!("--header build_version: {e}"))?,
        _ => {
            return Err(format!(
                "--header: unknown field {key:?} (name, uuid, version, feature_bits, vnc_size, build_version, requested_tpb_count)"
            ))
        }
    }
    Ok(())
}

/// What `neffld pack` writes besides the members.
pub struct PackOptions<'a> {
    /// `None`: the family of the tree's own target.
    pub producer: Option<Producer>,
    pub header_from: Option<&'a Path>,
    pub name: Option<&'a str>,
    pub uuid: Option<&'a str>,
    pub fields: &'a [String],
    /// Pack what symbolic links point to instead of refusing them.
    pub follow_symlinks: bool,
    pub json: bool,
}

/// What a load would make of the tree: its own target, read through its
/// manifest chain as a load reads it, and the first fault a default load on
/// that target meets in its manifests (`None` when it parses).
/// The probe reads the target whatever the container's ceilings: a ceiling
/// may refuse the file a load reads, never change the format `pack` writes.
fn probe_tree(members: &[(&[u8], &[u8])]) -> (Option<Arch>, Option<String>) {
    let probe = NeffWriter::new(Producer::Pkg1).write(members);
    let opts = ExamineOptions {
        contents: true,
        max_members: Some(u64::MAX),
        inflate_limit: Some(u64::MAX),
        ..ExamineOptions::default()
    };
    let x = Examination::of(&probe, &opts);
    (x.declared_arch, x.problem().map(|e| e.to_string()))
}

/// The first fault a load of the packed NEFF meets on its target, at the
/// logical-core size its header declares, on a device that keeps no bytes
/// and with none of the process's variables (`None`: it loads).
fn packed_fault(neff: &[u8], arch: Arch) -> Option<String> {
    let asked = Asked {
        arch: Some(arch),
        device: Some(neffld::config::DeviceKind::Null),
        follow_neff_lnc: true,
        ..Asked::default()
    };
    let settings = Settings::resolve(&asked, |_| None).ok()?;
    let x = Examination::verify(neff, &settings, false);
    x.problem().map(|e| e.to_string())
}

/// A header whose declared logical-core size the tree's target cannot take
/// is refused: `verify` would pass it and every load would reject it.
fn check_header_fits(h: &NeffHeader, arch: Arch) -> Result<(), Failure> {
    if !h.lnc_fits(arch) {
        return Err(Failure {
            stage: "pack",
            status: NrtStatus::Invalid,
            message: format!(
                "the header declares vnc_size {} but the tree targets {arch}, whose cores take \
                 logical-core size {}; set --header vnc_size=N or --producer to match",
                h.vnc_size,
                arch.lnc_sizes_text()
            ),
        });
    }
    Ok(())
}

/// The document of `pack --json`.
#[derive(Serialize)]
struct PackDoc<'a> {
    output: String,
    size: usize,
    members: usize,
    /// The tree's own target, when it could be read.
    target: Option<&'static str>,
    warnings: &'a [String],
}

pub fn pack(dir: &Path, out: &Path, o: &PackOptions<'_>, err: Style) -> CmdResult {
    let (files, left_out) =
        tree::read_tree_except(dir, o.follow_symlinks, Some(out)).map_err(|e| {
            let message = format!("{}/{e}", dir.display());
            if e.refused {
                Failure::usage(message)
            } else {
                Failure::io(format!("cannot read {message}"))
            }
        })?;
    if files.is_empty() {
        return Err(Failure::usage(format!("{} holds no files", dir.display())));
    }
    let members: Vec<(&[u8], &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_slice(), b.as_slice()))
        .collect();
    let limits = env_limits(None)?;
    let (arch, fault) = probe_tree(&members);
    let tree_loads = fault.is_none();
    let mut warnings: Vec<String> = left_out
        .iter()
        .map(|n| {
            format!(
                "left out {}: it is the output file",
                String::from_utf8_lossy(n)
            )
        })
        .collect();
    if let Some(fault) = fault {
        warnings.push(format!("the tree does not load as it is: {fault}"));
    }
    let max_members = limits
        .max_members
        .unwrap_or(neffld::neff::DEFAULT_MAX_MEMBERS);
    if members.len() as u64 > max_members {
        warnings.push(format!(
            "the NEFF holds {} members, more than the {max_members} a load reads \
             (neffld's own ceiling, not the runtime's; NEFFLD_MAX_MEMBERS raises it)",
            members.len()
        ));
    }
    let producer = match (o.producer, arch) {
        (Some(p), _) => p,
        (None, Some(a)) => Producer::for_arch(a),
        (None, None) => {
            warnings.push(
                "the tree's target could not be read (neff.json → kelf json); writing the 2.21 family"
                    .to_string(),
            );
            Producer::V2_21
        }
    };
    let mut writer = NeffWriter::new(producer);
    if let Some(src) = o.header_from {
        let source = input::source(src)?;
        let _shortened = source.guard_shortening("pack", src, o.json);
        let h = NeffHeader::parse(source.bytes()).map_err(|e| Failure {
            stage: "container",
            status: e.status(),
            message: format!("{}: {e}", src.display()),
        })?;
        let pkg = writer.header.pkg_version;
        writer.header = NeffHeader {
            pkg_version: pkg,
            ..h
        };
    }
    if let Some(n) = o.name {
        writer
            .header
            .try_set_name(n)
            .map_err(|e| Failure::usage(format!("--name: {e}")))?;
    }
    match o.uuid {
        Some(u) => writer.header.uuid = parse_uuid(u)?,
        // The runtime keys its parse cache by the uuid: none of its own
        // (no --uuid, none from --header-from) is the members' own.
        None if writer.header.uuid == [0; 16] => {
            writer.header.uuid = NeffWriter::content_uuid(&members)
        }
        None => {}
    }
    for f in o.fields {
        set_header_field(&mut writer.header, f)?;
    }
    if let Some(a) = arch {
        check_header_fits(&writer.header, a)?;
    }
    let neff = writer.write(&members);
    // The header's own gates, as `verify` runs them: a header it would
    // refuse (`--header version=99999.99999`) is refused here.
    if let Err(e) = NeffHeader::parse(&neff).and_then(|h| h.validate(neff.len() as u64)) {
        return Err(Failure {
            stage: "pack",
            status: e.status(),
            message: format!("the header would not pass verify: {e}"),
        });
    }
    // A tree that parses may still not load under the header written over
    // it (`--header vnc_size=1` over two subgraphs a core): a load at the
    // NEFF's own logical-core size says so.
    if let Some(fault) = arch
        .filter(|_| tree_loads)
        .and_then(|a| packed_fault(&neff, a))
    {
        warnings.push(format!("the NEFF as packed does not load: {fault}"));
    }
    fs::write(out, &neff).map_err(write_err(out))?;
    if o.json {
        print_json(&Stamped {
            body: PackDoc {
                output: out.display().to_string(),
                size: neff.len(),
                members: members.len(),
                target: arch.map(Arch::target_name),
                warnings: &warnings,
            },
            stamp: Stamp::new("pack", None),
        })?;
    } else {
        for w in &warnings {
            eprintln!("{}", err.warn(&format!("warning: {}", escape(w))));
        }
        emit(&format!(
            "wrote {}: {}, {}\n",
            shown_path(out),
            units::count(members.len() as u64, "member"),
            units::bytes(neff.len() as u64)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
