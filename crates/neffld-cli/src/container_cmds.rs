//! `inspect`, `verify`, `extract` and `pack`: the container-level commands.

use std::fs;
use std::path::{Component, Path};
use std::process::ExitCode;

use neffld::container::archive::{default_inflate_limit, Archive, Encoding};
use neffld::container::header::feature_names;
use neffld::container::writer::{NeffWriter, Producer};
use neffld::container::{integrity, payload_window, NeffHeader};
use neffld::NrtStatus;
use serde_json::{json, Value};

use crate::report::{emit, failed, hex, print_json, Failure};

type CmdResult = Result<ExitCode, String>;

fn read(file: &Path) -> Result<Vec<u8>, String> {
    fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))
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
        "uuid": h.uuid_string(),
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
        .map(|m| json!({"name": m.name, "size": m.range.len(), "offset": m.range.start}))
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

/// Runs the container gates one by one so a report shows everything up to
/// the first failure. With `verify` the hash must match; without it the
/// hash is still computed and reported, as information.
pub fn inspect(file: &Path, as_json: bool, max_inflated: Option<u64>, verify: bool) -> CmdResult {
    let bytes = read(file)?;
    let mut out = json!({"file": file.display().to_string(), "size": bytes.len()});
    let mut warnings: Vec<String> = Vec::new();
    let outcome = (|| -> Result<(), Failure> {
        let container = |e: neffld::container::ContainerError| Failure {
            stage: "container",
            status: e.status(),
            message: e.to_string(),
        };
        let h = NeffHeader::parse(&bytes).map_err(container)?;
        out["header"] = header_json(&h);
        h.validate(bytes.len() as u64).map_err(container)?;
        let window = payload_window(&bytes, &h).unwrap_or_default();
        let alg = integrity::HashAlgorithm::for_pkg_version(h.pkg_version);
        let checked = integrity::verify(h.pkg_version, &h.hash, window);
        out["integrity"] = json!({
            "checked": verify,
            "algorithm": alg.name(),
            "digest": hex(&integrity::digest(alg, window)[..alg.digest_len()]),
            "matches": checked.as_ref().ok().map(|v| v.form.name()),
        });
        match checked {
            Err(e) if verify => return Err(container(e)),
            Err(e) => warnings.push(format!(
                "hash not checked by default, and it does not match: {e}"
            )),
            Ok(_) => {}
        }
        let limit = max_inflated.unwrap_or_else(|| default_inflate_limit(window.len() as u64));
        let archive = Archive::decode(window, limit).map_err(container)?;
        warnings.extend(archive.warnings().iter().cloned());
        out["archive"] = archive_json(&archive);
        Ok(())
    })();
    out["warnings"] = json!(warnings);
    let status = outcome
        .as_ref()
        .err()
        .map_or(NrtStatus::Success, |f| f.status);
    out["status_code"] = json!(status.code());
    out["status"] = json!(status.as_str());
    out["error"] = outcome.as_ref().err().map_or(Value::Null, Failure::json);
    if as_json {
        print_json(&out);
    } else {
        print_human(&out, &warnings);
        if let Err(f) = &outcome {
            eprintln!("{}", f.human());
        }
    }
    Ok(if outcome.is_ok() {
        ExitCode::SUCCESS
    } else {
        failed()
    })
}

fn print_human(out: &Value, warnings: &[String]) {
    use std::fmt::Write as _;
    let str_of = |v: &Value| v.as_str().unwrap_or("").to_string();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "file        {} ({} bytes)",
        str_of(&out["file"]),
        out["size"]
    );
    let h = &out["header"];
    if !h.is_null() {
        let _ = writeln!(t, "name        {}", str_of(&h["name"]));
        let _ = writeln!(t, "uuid        {}", str_of(&h["uuid"]));
        let _ = writeln!(
            t,
            "format      NEFF {}, pkg_version {}, payload {} bytes",
            str_of(&h["neff_version"]),
            h["pkg_version"],
            h["data_size"]
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
        let m = i["matches"]
            .as_str()
            .map_or("does NOT match".to_string(), |f| format!("matches ({f})"));
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
            "archive     {}, {} members, {} bytes inflated",
            str_of(&a["encoding"]),
            a["member_count"],
            a["inflated_bytes"]
        );
        for m in a["members"].as_array().into_iter().flatten() {
            let _ = writeln!(
                t,
                "  {:>10}  {}",
                m["size"].as_u64().unwrap_or(0),
                str_of(&m["name"])
            );
        }
    }
    for w in warnings {
        let _ = writeln!(t, "warning     {w}");
    }
    emit(&t);
}

/// A member name that stays inside the output directory.
fn safe_relative(name: &str) -> bool {
    let p = Path::new(name);
    !name.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

pub fn extract(file: &Path, dir: &Path, max_inflated: Option<u64>) -> CmdResult {
    let bytes = read(file)?;
    let opts = neffld::container::OpenOptions {
        verify_hash: false,
        inflate_limit: max_inflated,
    };
    let neff = match neffld::container::open(&bytes, &opts) {
        Ok(n) => n,
        Err(e) => {
            let f = Failure {
                stage: "container",
                status: e.status(),
                message: e.to_string(),
            };
            eprintln!("{}", f.human());
            return Ok(failed());
        }
    };
    let mut written = 0usize;
    for (name, body) in neff.archive.iter() {
        if !safe_relative(name) {
            eprintln!(
                "skipping member {name:?}: its path would leave {}",
                dir.display()
            );
            continue;
        }
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        fs::write(&path, body).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written += 1;
    }
    emit(&format!(
        "extracted {written} members to {}\n",
        dir.display()
    ));
    Ok(ExitCode::SUCCESS)
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        if path.is_dir() {
            collect_files(root, &path, out)?;
        } else {
            let rel = path.strip_prefix(root).map_err(|e| e.to_string())?;
            let name = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.push((
                name,
                fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?,
            ));
        }
    }
    Ok(())
}

fn parse_uuid(s: &str) -> Result<[u8; 16], String> {
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

pub fn pack(
    dir: &Path,
    out: &Path,
    producer: Producer,
    header_from: Option<&Path>,
    name: Option<&str>,
    uuid: Option<&str>,
) -> CmdResult {
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files)?;
    if files.is_empty() {
        return Err(format!("{} holds no files", dir.display()));
    }
    let mut writer = NeffWriter::new(producer);
    if let Some(src) = header_from {
        let bytes = read(src)?;
        let h = NeffHeader::parse(&bytes).map_err(|e| format!("{}: {e}", src.display()))?;
        let pkg = writer.header.pkg_version;
        writer.header = NeffHeader {
            pkg_version: pkg,
            ..h
        };
    }
    if let Some(n) = name {
        writer.header.set_name(n);
    }
    if let Some(u) = uuid {
        writer.header.uuid = parse_uuid(u)?;
    }
    let members: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let neff = writer.write(&members);
    fs::write(out, &neff).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    emit(&format!(
        "wrote {} ({} bytes, {} members)\n",
        out.display(),
        neff.len(),
        members.len()
    ));
    Ok(ExitCode::SUCCESS)
}
