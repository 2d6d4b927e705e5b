//! How a failed command reports itself: a human line on stderr, or a JSON
//! object on stdout carrying the NRT status the runtime would return.

use std::process::ExitCode;

use neffld::NrtStatus;
use serde_json::{json, Value};

/// A NEFF that failed a gate: which stage, the status, and the message.
pub struct Failure {
    pub stage: &'static str,
    pub status: NrtStatus,
    pub message: String,
}

impl Failure {
    pub fn json(&self) -> Value {
        json!({
            "stage": self.stage,
            "status_code": self.status.code(),
            "status": self.status.as_str(),
            "message": self.message,
        })
    }

    pub fn human(&self) -> String {
        format!("{} failed: {} [{}]", self.stage, self.message, self.status)
    }
}

/// Exit status for a command whose NEFF failed (usage and I/O errors exit 2).
pub fn failed() -> ExitCode {
    ExitCode::from(1)
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes to stdout; a closed pipe (`neffld inspect … | head`) is not an error.
pub fn emit(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

pub fn print_json(v: &Value) {
    emit(&format!(
        "{}\n",
        serde_json::to_string_pretty(v).expect("JSON values always serialise")
    ));
}
