//! The output contract every command shares: one JSON document per run
//! (`schema_version`, `command`, `status`, `status_code`, `error`), one error
//! object shape, and the human forms of failures (coloured on a terminal).

use std::process::ExitCode;

use neffld::text::escape;
use neffld::NrtStatus;
use serde::Serialize;

use crate::style::Style;

/// Bumped when a key changes meaning or disappears (adding keys does not).
pub const SCHEMA_VERSION: u64 = 1;

/// Why a command did not succeed: which stage, the status, and the message.
#[derive(Clone, Debug)]
pub struct Failure {
    pub stage: &'static str,
    pub status: NrtStatus,
    pub message: String,
}

impl Failure {
    /// The file could not be read or written: not a verdict on the NEFF.
    pub fn io(message: String) -> Failure {
        Failure {
            stage: "io",
            status: NrtStatus::Failure,
            message,
        }
    }

    /// The command line asked for something impossible.
    pub fn usage(message: String) -> Failure {
        Failure {
            stage: "usage",
            status: NrtStatus::Invalid,
            message,
        }
    }

    /// A variable's value the runtime refuses (exit 2), named for its
    /// variable: stage `config`, whichever command read it.
    pub fn config(e: &neffld::config::ConfigError) -> Failure {
        Failure {
            stage: "config",
            status: e.status(),
            message: e.to_string(),
        }
    }

    /// Usage, configuration (a variable's value) and I/O problems exit 2;
    /// a NEFF that failed a gate exits 1.
    pub fn exit_code(&self) -> ExitCode {
        if matches!(self.stage, "io" | "usage" | "config") {
            ExitCode::from(2)
        } else {
            failed()
        }
    }

    /// The one error object of the contract.
    pub fn object(&self) -> ErrorObject {
        ErrorObject {
            stage: self.stage,
            status_code: self.status.code(),
            status: self.status.as_str(),
            message: self.message.clone(),
        }
    }

    /// The failure as one line for a person (the message escaped: it may
    /// quote names from the NEFF).
    pub fn human(&self) -> String {
        let message = escape(&self.message);
        match self.stage {
            "io" | "usage" => message.into_owned(),
            stage => format!("{stage} failed: {message} [{}]", self.status),
        }
    }
}

/// The one error object of the contract.
#[derive(Clone, Debug, Serialize)]
pub struct ErrorObject {
    pub stage: &'static str,
    pub status_code: u32,
    pub status: &'static str,
    pub message: String,
}

/// `status`, `status_code` and `error` of one document (or one file's entry).
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub status: &'static str,
    pub status_code: u32,
    pub error: Option<ErrorObject>,
}

impl Outcome {
    /// Success, or the failure's status and error object.
    pub fn of(outcome: Option<&Failure>) -> Outcome {
        let status = outcome.map_or(NrtStatus::Success, |f| f.status);
        Outcome {
            status: status.as_str(),
            status_code: status.code(),
            error: outcome.map(Failure::object),
        }
    }
}

/// The contract's common keys of a command's document.
#[derive(Clone, Debug, Serialize)]
pub struct Stamp {
    pub schema_version: u64,
    pub command: &'static str,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl Stamp {
    /// The keys of `command`'s document, whose outcome is `outcome`.
    pub fn new(command: &'static str, outcome: Option<&Failure>) -> Stamp {
        Stamp {
            schema_version: SCHEMA_VERSION,
            command,
            outcome: Outcome::of(outcome),
        }
    }
}

/// A command's document: its own keys and the contract's.
#[derive(Serialize)]
pub struct Stamped<T> {
    #[serde(flatten)]
    pub body: T,
    #[serde(flatten)]
    pub stamp: Stamp,
}

/// The whole document of a command that failed before it had anything else to say.
pub fn failure_document(command: &'static str, f: &Failure) -> Stamp {
    Stamp::new(command, Some(f))
}

/// Prints a failure the way the command's output mode asks: the JSON
/// document on stdout, or a coloured line on stderr.
pub fn report_failure(command: &'static str, f: &Failure, as_json: bool, style: Style) {
    // A document that cannot be written (the failure may be that very
    // write) is told on stderr instead.
    if !(as_json && print_json(&failure_document(command, f)).is_ok()) {
        eprintln!("neffld {command}: {}", style.fail(&f.human()));
    }
}

/// Writes the HTML map a report asked for, beside the path and renamed
/// onto it (never through a link planted there: [`neffld::tree::replace_file`]).
/// A map that cannot be written
/// costs the map, not the report: the failure is returned for the caller to
/// tell after the report (and to set the exit status), and a JSON document
/// lists it among its warnings ([`unwritten_warning`]).
pub fn write_html(path: &std::path::Path, html: &str) -> Option<Failure> {
    let e = neffld::tree::replace_file(path, html.as_bytes()).err()?;
    Some(Failure::io(format!(
        "cannot write the map {}: {e}",
        path.display()
    )))
}

/// Adds an unwritten map's failure to a JSON document's warnings (created
/// when the document had none).
pub fn unwritten_warning(warnings: &mut Option<Vec<String>>, f: &Failure, json: bool) {
    if json {
        warnings
            .get_or_insert_with(Vec::new)
            .push(f.message.clone());
    }
}

/// The exit status of a command that printed its report: an unwritten map
/// ([`write_html`]) is told after the report and exits as an I/O failure,
/// else the report's own outcome decides.
pub fn exit_after_report(
    command: &'static str,
    unwritten: Option<Failure>,
    ok: bool,
    json: bool,
    style: Style,
) -> ExitCode {
    match unwritten {
        Some(f) => {
            if !json {
                report_failure(command, &f, false, style);
            }
            f.exit_code()
        }
        None if ok => ExitCode::SUCCESS,
        None => failed(),
    }
}

/// Exit status for a command whose NEFF failed (usage and I/O errors exit 2).
pub fn failed() -> ExitCode {
    ExitCode::from(1)
}

/// A string of a report as a person sees it: names from a NEFF, a capture
/// or the file system may hold control characters, so every human rendering
/// reads a report's strings through this ([`neffld::text::escape`]); JSON
/// keeps them exact.
pub fn shown(s: &str) -> String {
    escape(s).into_owned()
}

/// A path as a person sees it (see [`shown`]).
pub fn shown_path(p: &std::path::Path) -> String {
    escape(&p.to_string_lossy()).into_owned()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes a report to stdout. A closed pipe (`neffld inspect … | head`) is
/// not an error; any other failure to write (a full disk, an I/O error) is
/// the command's, since a report cut short must not pass for a whole one.
pub fn emit(text: &str) -> Result<(), Failure> {
    write_out(&[text.as_bytes()])
}

/// Prints a document, its keys in order at every level (the order the
/// contract has always printed them in, whatever the fields' order); fails
/// as [`emit`] does.
pub fn print_json(doc: &impl Serialize) -> Result<(), Failure> {
    let text = crate::sorted_json::to_vec(doc).expect("reports serialise");
    write_out(&[&text, b"\n"])
}

fn write_out(parts: &[&[u8]]) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let written = parts
        .iter()
        .try_for_each(|p| out.write_all(p))
        .and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure::io(format!(
            "cannot write the report to standard output: {e}"
        ))),
        _ => Ok(()),
    }
}

/// A document as `--json` prints it.
pub fn json_text(doc: &impl Serialize) -> String {
    crate::sorted_json::to_string(doc).expect("reports serialise")
}
