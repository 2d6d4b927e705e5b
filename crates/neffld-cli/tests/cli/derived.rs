//! What users read that lists the library's tables follows them: the
//! runtime lines of the JSON schema and of the Python stub, the variables
//! of docs/cli.md, and the lines the command's help names. A new line or
//! variable is one row of its table; `NEFFLD_BLESS=1 cargo test -p
//! neffld-cli --test cli derived` rewrites the documents from the tables,
//! and without it a stale document fails here, naming that command.

use std::path::{Path, PathBuf};

use neffld::config::vars;
use neffld::RuntimeLine;

use crate::common::neffld;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `text` with the part between `start` and `end` (the first `end` after
/// `start`, both kept) replaced by `inner`.
fn splice(text: &str, start: &str, end: &str, inner: &str) -> String {
    let a = text.find(start).unwrap_or_else(|| panic!("no {start:?}")) + start.len();
    let b = a + text[a..].find(end).unwrap_or_else(|| panic!("no {end:?}"));
    format!("{}{inner}{}", &text[..a], &text[b..])
}

/// Holds `path` to what `make` turns its text into, or rewrites it under
/// `NEFFLD_BLESS=1`.
fn follows(path: &Path, make: impl Fn(&str) -> String) {
    let text = std::fs::read_to_string(path).unwrap();
    let want = make(&text);
    if text == want {
        return;
    }
    if std::env::var_os("NEFFLD_BLESS").is_some() {
        std::fs::write(path, want).unwrap();
        return;
    }
    panic!(
        "{} does not follow the library's tables; NEFFLD_BLESS=1 cargo test -p neffld-cli --test cli derived rewrites it",
        path.display()
    );
}

fn quoted_lines() -> String {
    RuntimeLine::ALL
        .iter()
        .map(|l| format!("\"{l}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn the_schema_lists_the_runtime_lines_of_the_table() {
    follows(&root().join("docs/cli-schema.json"), |text| {
        let def = text.find("\"runtime_line\": {").expect("runtime_line");
        let (head, tail) = text.split_at(def);
        format!(
            "{head}{}",
            splice(tail, "\"enum\": [", "]", &quoted_lines())
        )
    });
}

#[test]
fn the_python_stub_lists_the_runtime_lines_of_the_table() {
    let stub = root().join("crates/neffld-py/python/neffld/__init__.pyi");
    follows(&stub, |text| {
        splice(text, "_RuntimeLine = Literal[", "]", &quoted_lines())
    });
}

#[test]
fn the_variables_of_the_guide_are_the_tables() {
    follows(&root().join("docs/cli.md"), |text| {
        splice(
            text,
            "<!-- variables: generated from crates/neffld/src/config/vars.rs -->\n",
            "<!-- end of variables -->",
            &format!("\n{}\n", vars::markdown()),
        )
    });
}

/// The help of `load` and `plan` names every line and the newest as the
/// default, from the table.
#[test]
fn the_help_names_every_line() {
    for cmd in ["load", "plan"] {
        let out = neffld(&[cmd, "--help"]);
        let help = String::from_utf8(out.stdout).unwrap().replace('\n', " ");
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(help.contains(&RuntimeLine::list("or")), "{cmd}: {help}");
        assert!(
            help.contains(&format!(
                "else {}, the runtime users run",
                RuntimeLine::NEWEST
            )),
            "{cmd}: {help}"
        );
    }
}
