//! Logging to stderr in the runtime's own line format, set up on the first
//! exported call:
//!
//! ```text
//! 2025-May-15 20:58:33.897479 224822:224822 ERROR  TDRV:log_dev_mem                             Failed to allocate …
//! ```
//!
//! the time (UTC, to the microsecond), the process and thread ids, the
//! level right-aligned in five columns, `MODULE:function` padded to 44
//! columns, and the text; a text of several lines goes on below the prefix.
//! The module `TDRV` holds the device-memory reports (the out-of-memory
//! report and the per-NEFF breakdown at load): they are logged with the
//! [`TDRV`] target and a `func` field naming the runtime function that
//! writes them. Everything else is `NRT:` and the Rust module that logs it.
//!
//! Texts quote names from NEFFs (the model's, its members'), which may
//! hold newlines and terminal escapes: a text is shown as one line of
//! plain text ([`neffld::text::escape`]); only a `TDRV` report, which the
//! library renders with its names escaped, spans several lines.
//!
//! Levels: `NEFFLD_LOG`, else `NEURON_RT_LOG_LEVEL`, for every module
//! (names such as `ERROR`, `WARN`/`WARNING`, `INFO`, `DEBUG`, `TRACE`,
//! `QUIET`/`OFF`; default `ERROR`, as in the reference runtime), then the
//! runtime's per-component variables: `NEURON_RT_LOG_LEVEL_TDRV` for `TDRV`
//! and `NEURON_RT_LOG_LEVEL_NRT` for every other line (all `NRT:`;
//! `NEFFLD_LOG` still wins there; nothing here logs as `NMGR`, so its
//! variable changes nothing). When the host process has already installed
//! a global subscriber, that one is kept.
//!
//! Log lines quote names from NEFFs (the model's, its members'), which may
//! hold newlines and terminal escapes: each line is written through
//! [`EscapedLines`], so one event is one line of plain text.

use std::fmt::{self, Write as _};
use std::sync::Once;
use std::time::{SystemTime, UNIX_EPOCH};

use neffld::config::vars::{
    Variable, NEFFLD_LOG, NEURON_RT_LOG_LEVEL, NEURON_RT_LOG_LEVEL_NRT, NEURON_RT_LOG_LEVEL_TDRV,
};
use neffld::text::escape;
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

/// The target of the runtime's device-memory reports (its `TDRV` module).
pub(crate) const TDRV: &str = "TDRV";

/// Width the runtime pads `MODULE:function` to.
const FUNCTION_WIDTH: usize = 44;

static INSTALL: Once = Once::new();

/// Installs the stderr subscriber, at most once per process.
pub(crate) fn ensure() {
    INSTALL.call_once(|| {
        let level = |vars: &[Variable]| {
            vars.iter()
                .find_map(|var| std::env::var(var.name).ok())
                .map(|v| parse_level(&v))
        };
        let base = level(&[NEFFLD_LOG, NEURON_RT_LOG_LEVEL]).unwrap_or(LevelFilter::ERROR);
        let tdrv = level(&[NEURON_RT_LOG_LEVEL_TDRV]).unwrap_or(base);
        let nrt = level(&[NEFFLD_LOG, NEURON_RT_LOG_LEVEL_NRT]).unwrap_or(base);
        let layer = tracing_subscriber::fmt::layer()
            .event_format(RuntimeFormat)
            .with_writer(std::io::stderr)
            .with_filter(Targets::new().with_default(nrt).with_target(TDRV, tdrv));
        let _ = tracing_subscriber::registry().with(layer).try_init();
    });
}

/// A level name, case-insensitive; anything unknown means `ERROR`.
fn parse_level(value: &str) -> LevelFilter {
    match value.trim().to_ascii_lowercase().as_str() {
        // QUIET is the documented one ("completely disables console
        // logging").
        "quiet" | "off" | "none" => LevelFilter::OFF,
        "trace" => LevelFilter::TRACE,
        "debug" => LevelFilter::DEBUG,
        "info" => LevelFilter::INFO,
        "warn" | "warning" => LevelFilter::WARN,
        _ => LevelFilter::ERROR,
    }
}

/// The runtime's log line (see the module documentation).
struct RuntimeFormat;

impl<S, N> FormatEvent<S, N> for RuntimeFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        let function = if meta.target() == TDRV {
            format!("{TDRV}:{}", fields.func)
        } else {
            let module = meta.target().rsplit("::").next().unwrap_or_default();
            format!("NRT:{module}")
        };
        // A TDRV report is the library's own rendering, names escaped
        // there; its lines are the runtime's.
        let text = if meta.target() == TDRV {
            fields.message.clone()
        } else {
            escape(&fields.message).into_owned()
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        writeln!(
            writer,
            "{} {}:{} {:>5}  {function:<FUNCTION_WIDTH$} {}",
            timestamp(now.as_secs(), now.subsec_micros()),
            std::process::id(),
            thread_id(),
            level_name(*meta.level()),
            text
        )
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::ERROR => "ERROR",
        Level::WARN => "WARN",
        Level::INFO => "INFO",
        Level::DEBUG => "DEBUG",
        Level::TRACE => "TRACE",
    }
}

/// The text of an event and the runtime function it names.
#[derive(Default)]
struct Fields {
    message: String,
    func: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "func" => self.func = value.to_string(),
            "message" => self.message = value.to_string(),
            _ => self.record_debug(field, &value),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => {
                let _ = write!(self.message, "{value:?}");
            }
            "func" => self.func = format!("{value:?}"),
            name => {
                let _ = write!(self.message, " {name}={value:?}");
            }
        }
    }
}

/// The kernel's id of the calling thread (the number `pid:tid` shows), read
/// once per thread from `/proc/thread-self`; the process id where that
/// link cannot be read.
fn thread_id() -> u32 {
    thread_local! {
        static TID: u32 = std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|p| p.file_name()?.to_str()?.parse().ok())
            .unwrap_or_else(std::process::id);
    }
    TID.with(|t| *t)
}

/// `2025-May-15 20:58:33.895937` for a time `secs` seconds and `micros`
/// microseconds after the Unix epoch, in UTC.
fn timestamp(secs: u64, micros: u32) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (proleptic Gregorian), counted
    // in 400-year eras from 0000-03-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year}-{}-{day:02} {:02}:{:02}:{:02}.{micros:06}",
        MONTHS[(month - 1) as usize],
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// QUIET, the documented way to silence the console, silences it.
    #[test]
    fn quiet_is_off() {
        assert_eq!(parse_level("QUIET"), LevelFilter::OFF);
        assert_eq!(parse_level("warning"), LevelFilter::WARN);
        assert_eq!(parse_level("bogus"), LevelFilter::ERROR);
    }

    /// A log line quoting a NEFF's name stays one line, without the name's
    /// control characters; a TDRV report keeps its own lines.
    #[test]
    fn names_in_log_lines_are_escaped() {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = buf.clone();
        let layer = tracing_subscriber::fmt::layer()
            .event_format(RuntimeFormat)
            .with_writer(move || Sink(sink.clone()));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!("nrt_load: loaded \"{}\"", "evil\nstatus ok\x1b[32m");
            tracing::error!(target: TDRV, func = "log_dev_mem_usage_table", "a\n\\_NC 4");
        });
        let out = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
        assert_eq!(out.lines().count(), 3, "{out}");
        assert!(
            out.contains("loaded \"evil\\nstatus ok\\x1b[32m\""),
            "{out}"
        );
        assert!(out.contains("\n\\_NC 4\n"), "{out}");
        assert!(!out.contains('\x1b'));
    }

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn level_names() {
        assert_eq!(parse_level("INFO"), LevelFilter::INFO);
        assert_eq!(parse_level("warning"), LevelFilter::WARN);
        assert_eq!(parse_level(" debug "), LevelFilter::DEBUG);
        assert_eq!(parse_level("off"), LevelFilter::OFF);
        assert_eq!(parse_level("loud"), LevelFilter::ERROR);
    }

    /// Times as the runtime prints them, checked against dates worked out
    /// by hand from their Unix times.
    #[test]
    fn timestamps_read_as_the_runtime_writes_them() {
        // The documentation's example line, read as UTC.
        assert_eq!(
            timestamp(1_747_342_713, 895_937),
            "2025-May-15 20:58:33.895937"
        );
        assert_eq!(timestamp(0, 0), "1970-Jan-01 00:00:00.000000");
        assert_eq!(timestamp(951_868_799, 7), "2000-Feb-29 23:59:59.000007");
        assert_eq!(timestamp(951_868_800, 0), "2000-Mar-01 00:00:00.000000");
    }
}
