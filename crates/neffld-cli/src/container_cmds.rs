//! `inspect`, `verify`, `extract` and `pack`: the container-level commands.

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use neffld::neff::{feature_names, Archive, Encoding, NeffHeader, NeffWriter, Producer};
use neffld::report::examine::{Contents, Integrity, IoTensor};
use neffld::report::{Examination, ExamineOptions};
use neffld::settings::{Asked, Settings};
use neffld::text::{escape, escape_bytes};
use neffld::tree;
use neffld::{Arch, NrtStatus};
use serde_json::{json, Value};

use crate::input;
use crate::load_cmd::load_failure;
use crate::report::{emit, failed, hex, print_json, set_status, shown, shown_path, stamp, Failure};
use crate::style::Style;
use crate::units;

/// A command's exit status, or the failure that ended it early.
type CmdResult = Result<ExitCode, Failure>;

fn write_err(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::io(format!("cannot write {}: {e}", path.display()))
}

fn header_json(h: &NeffHeader) -> Value {
    let nodes_used = h
        .tpb_per_node
        .iter()
        .rposition(|&n| n != 0)
        .map_or(0, |i| i + 1);
    json!({
        "pkg_version": h.pkg_version,
        "header_size": h.header_size,
        "data_size": h.data_size,
        "neff_version": format!("{}.{}", h.version_major, h.version_minor),
        "build_version": h.build_version_str(),
        "unused_0": h.unused_0,
        "hash": hex(&h.hash),
        "uuid": hex(&h.uuid),
        "name": h.name_str(),
        "requested_tpb_count": h.requested_tpb_count,
        "tpb_per_node": &h.tpb_per_node[..nodes_used],
        "feature_bits": format!("{:#x}", h.feature_bits),
        "features": feature_names(h.feature_bits),
        "vnc_size": h.vnc_size,
    })
}

fn archive_json(a: &Archive) -> Value {
    let (encoding, gzip_members, trailing) = match a.encoding() {
        Some(Encoding::Gzip {
            members, trailing, ..
        }) => ("gzip", members, trailing),
        _ => ("raw-tar", 0, 0),
    };
    let members: Vec<Value> = a
        .members()
        .iter()
        .map(|m| {
            let mut v = json!({"name": m.name, "size": m.range.len(), "offset": m.range.start});
            if let Some(raw) = &m.raw_name {
                // A name that is not UTF-8: its exact bytes beside the text.
                v["name_bytes"] = json!(hex(raw));
            }
            v
        })
        .collect();
    json!({
        "encoding": encoding,
        "gzip_members": gzip_members,
        "trailing_bytes": trailing,
        "inflated_bytes": a.decoded_len(),
        "member_count": a.len(),
        "members": members,
    })
}

fn integrity_json(i: &Integrity) -> Value {
    json!({
        "checked": i.required,
        "algorithm": i.algorithm.name().to_lowercase(),
        "digest": i.digest,
        "result": i.result.name(),
    })
}

/// The parse side (S2+S3): target, IO tensors in `neff.json` order (dtype
/// spelled as the NEFF spells it), and per subgraph its engines (records,
/// opcode census), variables by type, queues and DMA blocks.
fn contents_json(c: &Contents, out: &mut Value) {
    let tensors = |ts: &[IoTensor]| -> Vec<Value> {
        ts.iter()
            .map(|t| json!({"name": t.name, "dtype": t.dtype_name, "dtype_code": t.dtype.code(), "shape": t.shape, "size": t.size}))
            .collect()
    };
    let subgraphs: Vec<Value> = c
        .subgraphs
        .iter()
        .map(|k| {
            let engines: Vec<Value> = k
                .engines
                .iter()
                .map(|e| {
                    let census: serde_json::Map<String, Value> = e
                        .opcodes
                        .iter()
                        .map(|(op, n)| (format!("{op:#04x}"), json!(n)))
                        .collect();
                    json!({"engine": e.engine, "records": e.records, "opcodes": census})
                })
                .collect();
            let queues: Vec<Value> = k
                .queues
                .iter()
                .map(|q| {
                    json!({"queue": q.queue, "owner": q.owner, "type": q.kind,
                           "blocks": q.blocks, "descriptors": q.descriptors})
                })
                .collect();
            json!({"name": k.name, "idle": k.idle, "engines": engines, "variables": k.variables,
                   "queues": queues, "scratchpad_bytes": k.scratchpad_bytes})
        })
        .collect();
    out["target"] = json!(c.target);
    out["arch"] = json!(c.arch.instance());
    out["inputs"] = json!(tensors(&c.inputs));
    out["outputs"] = json!(tensors(&c.outputs));
    out["subgraphs"] = json!(subgraphs);
}

/// The report of one file, from what the gates found, and its verdict.
fn examination_json(file: &Path, x: &Examination) -> (Value, Result<(), Failure>) {
    let mut out = json!({"file": input::display(file), "size": x.size});
    if let Some(h) = &x.header {
        out["header"] = header_json(h);
    }
    if let Some(i) = &x.integrity {
        out["integrity"] = integrity_json(i);
    }
    if let Some(a) = &x.archive {
        out["archive"] = archive_json(a);
        out["members"] = out["archive"]["members"].clone();
    }
    if let Some(c) = &x.contents {
        contents_json(c, &mut out);
    }
    out["warnings"] = json!(x.warnings);
    let outcome = x.problem().map_or(Ok(()), |e| Err(load_failure(e)));
    set_status(&mut out, outcome.as_ref().err());
    (out, outcome)
}

/// `inspect`'s examination: everything up to the first failure, the
/// digest computed but not required.
fn examine(file: &Path, max_inflated: Option<u64>, as_json: bool) -> (Value, Result<(), Failure>) {
    let limits = match env_limits() {
        Ok(l) => l,
        Err(e) => return unread(file, e),
    };
    match input::source(file) {
        Ok(source) => {
            let _shortened = source.guard_shortening("inspect", file, as_json);
            let opts = ExamineOptions {
                inflate_limit: max_inflated.or(limits.inflate_limit),
                max_members: limits.max_members,
                contents: true,
                ..ExamineOptions::default()
            };
            examination_json(file, &Examination::of(source.bytes(), &opts))
        }
        Err(e) => unread(file, e),
    }
}

/// The container ceilings of the process environment (`NEFFLD_MAX_INFLATED`,
/// `NEFFLD_MAX_MEMBERS`): one limit for every command, as a load reads them.
fn env_limits() -> Result<neffld::neff::OpenOptions, Failure> {
    neffld::config::RuntimeConfig::from_env()
        .map(|c| c.open_options())
        .map_err(|e| load_failure(&e.into()))
}

/// The report of a file that could not be read.
fn unread(file: &Path, e: Failure) -> (Value, Result<(), Failure>) {
    let mut out = json!({"file": input::display(file), "warnings": []});
    set_status(&mut out, Some(&e));
    (out, Err(e))
}

/// `neffld inspect`: everything about one NEFF.
pub fn inspect(file: &Path, as_json: bool, max_inflated: Option<u64>, err: Style) -> CmdResult {
    let (mut out, outcome) = examine(file, max_inflated, as_json);
    match &outcome {
        Err(f) if f.stage == "io" && !as_json => return Err(f.clone()),
        _ => {}
    }
    if as_json {
        stamp(&mut out, "inspect", outcome.as_ref().err());
        print_json(&out);
    } else {
        print_human(&out);
        if let Err(f) = &outcome {
            eprintln!("{}", err.fail(&f.human()));
        }
    }
    Ok(match &outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.exit_code(),
    })
}

/// `neffld verify`: the verdict of [`neffld::verify`] — every gate a default
/// load of the file on its own architecture runs — with the payload digest
/// required unless `ignore_hash` (a file that does not match its own digest
/// is corrupt, even though a load checks the digest only with
/// `NEURON_RT_VALIDATE_HASH`); with the `inspect` report of each file; one
/// line per file — an unreadable file is a FAIL line too, and the rest are
/// still checked — then a summary line (or one JSON document).
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
        let (out, outcome) = match input::source(f) {
            Ok(source) => {
                let _shortened = source.guard_shortening("verify", f, as_json);
                let x = Examination::verify_file(source.neff(), &settings, as_json);
                let subgraphs = x.verdict.as_ref().map_or(0, |v| v.subgraphs);
                let (out, outcome) = examination_json(f, &x);
                (out, outcome.map(|()| subgraphs))
            }
            Err(e) => {
                let (out, outcome) = unread(f, e);
                (out, outcome.map(|()| 0))
            }
        };
        let name = shown(&out["file"]);
        match &outcome {
            Ok(subgraphs) => text.push_str(&format!(
                "{}    {name}  ({} {}{}, {}, {})\n",
                style.ok("ok"),
                out["integrity"]["algorithm"].as_str().unwrap_or(""),
                out["integrity"]["result"].as_str().unwrap_or(""),
                if out["integrity"]["result"] == "mismatch" {
                    " (ignored)"
                } else {
                    ""
                },
                units::count(
                    out["archive"]["member_count"].as_u64().unwrap_or(0),
                    "member"
                ),
                units::count(*subgraphs as u64, "subgraph"),
            )),
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
        all.push(out);
    }
    let ok = files.len() - failed_gate - unreadable;
    let summary = format!(
        "{}: {ok} ok, {failed_gate} failed, {unreadable} unreadable",
        units::count(files.len() as u64, "file")
    );
    if as_json {
        let mut doc = json!({
            "files": all,
            "summary": {"files": files.len(), "ok": ok, "failed": failed_gate, "unreadable": unreadable},
        });
        stamp(&mut doc, "verify", first_failure.as_ref());
        print_json(&doc);
    } else {
        text.push_str(&if ok == files.len() {
            style.ok(&summary)
        } else {
            style.fail(&summary)
        });
        text.push('\n');
        emit(&text);
    }
    Ok(if unreadable > 0 {
        ExitCode::from(2)
    } else if failed_gate > 0 {
        failed()
    } else {
        ExitCode::SUCCESS
    })
}

/// The bytes of [`hex`]'s text.
fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn print_human(out: &Value) {
    use std::fmt::Write as _;
    let str_of = shown;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "file        {}: {}",
        str_of(&out["file"]),
        units::bytes(out["size"].as_u64().unwrap_or(0))
    );
    let h = &out["header"];
    if !h.is_null() {
        let _ = writeln!(t, "name        {}", str_of(&h["name"]));
        let _ = writeln!(t, "uuid        {}", str_of(&h["uuid"]));
        let _ = writeln!(
            t,
            "format      NEFF {}, pkg_version {}, payload {}",
            str_of(&h["neff_version"]),
            h["pkg_version"],
            units::bytes(h["data_size"].as_u64().unwrap_or(0))
        );
        let feats: Vec<&str> = h["features"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let _ = writeln!(
            t,
            "features    {} [{}]",
            str_of(&h["feature_bits"]),
            feats.join(", ")
        );
        let _ = writeln!(t, "lnc         vnc_size {}", h["vnc_size"]);
    }
    let i = &out["integrity"];
    if !i.is_null() {
        let m = match i["result"].as_str() {
            Some("mismatch") => "does NOT match".to_string(),
            Some("skipped") => "not compared (empty payload)".to_string(),
            Some(form) => format!("matches ({form})"),
            None => "unknown".to_string(),
        };
        let how = if i["checked"] == true {
            "verified"
        } else {
            "computed, not required"
        };
        let _ = writeln!(t, "integrity   {} {how}: {m}", str_of(&i["algorithm"]));
    }
    let a = &out["archive"];
    if !a.is_null() {
        let _ = writeln!(
            t,
            "archive     {}, {}, {} inflated",
            str_of(&a["encoding"]),
            units::count(a["member_count"].as_u64().unwrap_or(0), "member"),
            units::bytes(a["inflated_bytes"].as_u64().unwrap_or(0))
        );
        for m in a["members"].as_array().into_iter().flatten() {
            let name = match m["name_bytes"].as_str().and_then(unhex) {
                Some(raw) => escape_bytes(&raw).into_owned(),
                None => str_of(&m["name"]),
            };
            let _ = writeln!(t, "  {:>10}  {name}", m["size"].as_u64().unwrap_or(0));
        }
    }
    if let Some(target) = out["target"].as_str() {
        let _ = writeln!(
            t,
            "target      {} ({})",
            str_of(&out["arch"]),
            escape(target)
        );
        for (dir, key) in [("input", "inputs"), ("output", "outputs")] {
            for x in out[key].as_array().into_iter().flatten() {
                let _ = writeln!(
                    t,
                    "  {dir:<6}  {:<24} {:<9} {:<18} {}",
                    str_of(&x["name"]),
                    str_of(&x["dtype"]),
                    x["shape"].to_string(),
                    units::count(x["size"].as_u64().unwrap_or(0), "byte")
                );
            }
        }
        for sg in out["subgraphs"].as_array().into_iter().flatten() {
            let engines: Vec<String> = sg["engines"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| format!("{} {}", str_of(&e["engine"]), e["records"]))
                .collect();
            let vars: Vec<String> = sg["variables"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{v} {k}"))
                .collect();
            let idle = if sg["idle"] == true { " (idle)" } else { "" };
            let _ = writeln!(
                t,
                "subgraph    {}{idle}: records {}; vars {}",
                str_of(&sg["name"]),
                engines.join(", "),
                vars.join(", ")
            );
            for q in sg["queues"].as_array().into_iter().flatten() {
                let _ = writeln!(
                    t,
                    "  queue {:<20} {:<8} owner {:<5} {}, {}",
                    str_of(&q["queue"]),
                    str_of(&q["type"]),
                    str_of(&q["owner"]),
                    units::count(q["blocks"].as_u64().unwrap_or(0), "block"),
                    units::count(q["descriptors"].as_u64().unwrap_or(0), "descriptor")
                );
            }
        }
    }
    for w in out["warnings"].as_array().into_iter().flatten() {
        let _ = writeln!(t, "warning     {}", str_of(w));
    }
    emit(&t);
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
    let limits = env_limits()?;
    let source = input::source(file)?;
    let _shortened = source.guard_shortening("extract", file, as_json);
    let bytes = source.bytes();
    let opts = neffld::neff::OpenOptions {
        inflate_limit: max_inflated.or(limits.inflate_limit),
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
    let failure = (!refused.is_empty()).then(|| Failure::io(refused.join("; ")));
    if as_json {
        let mut doc = json!({"file": input::display(file), "output": dir.display().to_string(),
                             "members": written, "warnings": warnings});
        stamp(&mut doc, "extract", failure.as_ref());
        print_json(&doc);
    } else {
        for w in &warnings {
            eprintln!("{}", err.warn(&escape(w)));
        }
        for r in &refused {
            eprintln!("{}", err.fail(&escape(r)));
        }
        emit(&format!(
            "extracted {} to {}\n",
            units::count(written.len() as u64, "member"),
            shown_path(dir)
        ));
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

/// The family a compiler for `arch` writes: trn1 compilers stop at 2.18.
fn family_of(arch: Arch) -> Producer {
    match arch {
        Arch::Sunda => Producer::V2_18,
        Arch::Cayman | Arch::Mariana => Producer::V2_21,
    }
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

/// A header whose declared logical-core size the tree's target cannot take
/// is refused: `verify` would pass it and every load would reject it.
fn check_header_fits(h: &NeffHeader, arch: Arch) -> Result<(), Failure> {
    if h.declares_lnc() && !arch.lnc_sizes().contains(&h.vnc_size) {
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
    let limits = env_limits()?;
    let (arch, fault) = probe_tree(&members);
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
             (NEFFLD_MAX_MEMBERS raises the ceiling)",
            members.len()
        ));
    }
    let producer = match (o.producer, arch) {
        (Some(p), _) => p,
        (None, Some(a)) => family_of(a),
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
    if let Some(u) = o.uuid {
        writer.header.uuid = parse_uuid(u)?;
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
    fs::write(out, &neff).map_err(write_err(out))?;
    if o.json {
        let mut doc = json!({"output": out.display().to_string(), "size": neff.len(), "members": members.len(),
                             "target": arch.map(Arch::target_name), "warnings": warnings});
        stamp(&mut doc, "pack", None);
        print_json(&doc);
    } else {
        for w in &warnings {
            eprintln!("{}", err.warn(&format!("warning: {}", escape(w))));
        }
        emit(&format!(
            "wrote {}: {}, {}\n",
            shown_path(out),
            units::count(members.len() as u64, "member"),
            units::bytes(neff.len() as u64)
        ));
    }
    Ok(ExitCode::SUCCESS)
}
