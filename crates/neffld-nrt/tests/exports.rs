//! Every function our headers declare is exported by the shared library,
//! including the load API a real client calls.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

fn declared() -> BTreeSet<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include/nrt");
    let mut names = BTreeSet::new();
    for h in ["nrt.h", "nrt_experimental.h", "nrt_status.h"] {
        let text = std::fs::read_to_string(dir.join(h)).unwrap();
        for line in text
            .lines()
            .filter(|l| !l.trim_start().starts_with('*') && !l.trim_start().starts_with("//"))
        {
            for (i, _) in line.match_indices("nrt_") {
                let rest = &line[i..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                if rest[end..].starts_with('(')
                    && (i == 0 || !line.as_bytes()[i - 1].is_ascii_alphanumeric())
                {
                    names.insert(rest[..end].to_string());
                }
            }
        }
    }
    names
}

#[test]
fn nm_lists_every_declared_function() {
    let exe = std::env::current_exe().unwrap();
    let lib = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("libneffld_nrt.so");
    if !lib.exists() {
        eprintln!("skipping: {} was not built", lib.display());
        return;
    }
    let out = match Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
    {
        Ok(o) => o,
        Err(_) => {
            eprintln!("skipping: nm is not installed");
            return;
        }
    };
    let exported: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let declared = declared();
    assert!(
        declared.len() >= 56,
        "the headers declare {} functions: {declared:?}",
        declared.len()
    );
    let missing: Vec<&String> = declared.iter().filter(|n| !exported.contains(*n)).collect();
    assert!(missing.is_empty(), "declared but not exported: {missing:?}");
    for f in [
        "nrt_init",
        "nrt_close",
        "nrt_load",
        "nrt_load_collectives",
        "nrt_unload",
        "nrt_get_model_tensor_info",
        "nrt_free_model_tensor_info",
        "nrt_get_status_as_str",
        "nrt_get_visible_nc_count",
        "nrt_get_total_nc_count",
        "nrt_execute",
        "nrt_tensor_allocate",
    ] {
        assert!(exported.contains(f), "{f} is not exported");
    }
}
