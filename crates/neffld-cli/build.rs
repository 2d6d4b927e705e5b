//! Records the commit the binary was built from, for `neffld --version`.
//! Without git (a source tarball, a vendored copy) the version says so
//! instead of failing the build.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=NEFFLD_COMMIT");
    let commit = std::env::var("NEFFLD_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
            let dirty =
                git(&["status", "--porcelain", "--untracked-files=no"]).map_or("", |_| "-dirty");
            Some(format!("{hash}{dirty}"))
        })
        .unwrap_or_else(|| "unknown (built without git)".to_string());
    // Rebuild when HEAD moves (a commit, a checkout) or the index changes.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = PathBuf::from(dir);
        for f in ["HEAD", "index"] {
            println!("cargo:rerun-if-changed={}", dir.join(f).display());
        }
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
            println!(
                "cargo:rerun-if-changed={}",
                PathBuf::from(common).join("refs/heads").display()
            );
        }
    }
    println!("cargo:rustc-env=NEFFLD_COMMIT={commit}");
}
