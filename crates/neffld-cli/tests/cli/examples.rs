//! `examples/world32`: a 32-rank deployment on trn2.48xlarge. Its NEFF is
//! the project's writer's, byte for byte, and the plan its README shows is
//! what `neffld plan` prints for it (`NEFFLD_BLESS=1 cargo test -p
//! neffld-cli --test cli examples` rewrites both).

use std::path::{Path, PathBuf};
use std::process::Command;

use neffld_testkit::collectives::World;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bless() -> bool {
    std::env::var_os("NEFFLD_BLESS").is_some()
}

/// The README's indented block after the line `after`, unindented.
fn block_after(readme: &str, after: &str) -> (usize, usize, String) {
    let start = readme.find(after).expect("the README names the command") + after.len();
    let rest = &readme[start..];
    // The block begins after the blank line and ends at the first line
    // that is neither indented nor blank.
    let begin = start + rest.find("\n\n").expect("a blank line") + 2;
    let mut end = begin;
    for line in readme[begin..].split_inclusive('\n') {
        if !(line.starts_with("    ") || line.trim().is_empty()) {
            break;
        }
        end += line.len();
    }
    let text: String = readme[begin..end]
        .trim_end()
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l).trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    (begin, end, text)
}

#[test]
fn the_32_rank_example_is_the_writers_neff() {
    let path = root().join("examples/world32/tp32.neff");
    let written = World::new(32).shared();
    if bless() {
        std::fs::write(&path, &written).unwrap();
    }
    assert!(
        std::fs::read(&path).unwrap() == written,
        "examples/world32/tp32.neff is not World::new(32).shared(); NEFFLD_BLESS=1 rewrites it"
    );
}

#[test]
fn the_32_rank_examples_plan_is_the_one_its_readme_shows() {
    let readme_path = root().join("examples/README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let (_, _, command) = block_after(&readme, "Plan it from the repository's root:");
    assert_eq!(command, "neffld plan examples/world32/deploy.toml");
    let mut c = Command::new(env!("CARGO_BIN_EXE_neffld"));
    c.current_dir(root())
        .args(command.split_whitespace().skip(1))
        .env("NO_COLOR", "1");
    for v in neffld::config::VARIABLES {
        c.env_remove(v.name);
    }
    let out = c.output().expect("run neffld");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    let printed = printed.trim_end();
    let (begin, end, shown) = block_after(&readme, "It prints:");
    if bless() {
        let block: String = printed
            .lines()
            .map(|l| {
                if l.is_empty() {
                    "\n".to_string()
                } else {
                    format!("    {l}\n")
                }
            })
            .collect();
        let updated = format!("{}{block}\n{}", &readme[..begin], &readme[end..]);
        std::fs::write(&readme_path, updated).unwrap();
        return;
    }
    assert_eq!(
        shown, printed,
        "examples/README.md shows another plan than neffld prints; NEFFLD_BLESS=1 rewrites it"
    );
}
