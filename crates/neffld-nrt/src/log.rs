//! Logging to stderr through `tracing`, set up on the first exported call.
//!
//! The level comes from `NEFFLD_LOG`, else `NEURON_RT_LOG_LEVEL` (names such
//! as `ERROR`, `WARN`/`WARNING`, `INFO`, `DEBUG`, `TRACE`, `OFF`); the
//! default is `ERROR`, as in the reference runtime. When the host process has
//! already installed a global subscriber, that one is kept.
//!
//! Log lines quote names from NEFFs (the model's, its members'), which may
//! hold newlines and terminal escapes: each line is written through
//! [`EscapedLines`], so one event is one line of plain text.

use std::io::Write;
use std::sync::Once;

use neffld::text::escape_bytes;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;

static INSTALL: Once = Once::new();

/// Installs the stderr subscriber, at most once per process.
pub(crate) fn ensure() {
    INSTALL.call_once(|| {
        let level = ["NEFFLD_LOG", "NEURON_RT_LOG_LEVEL"]
            .iter()
            .find_map(|var| std::env::var(var).ok())
            .map(|v| parse_level(&v))
            .unwrap_or(LevelFilter::ERROR);
        let _ = subscriber(level, || EscapedLines(std::io::stderr())).try_init();
    });
}

/// The subscriber [`ensure`] installs, writing through `make`.
fn subscriber<W>(
    level: LevelFilter,
    make: W,
) -> tracing_subscriber::fmt::SubscriberBuilder<
    tracing_subscriber::fmt::format::DefaultFields,
    tracing_subscriber::fmt::format::Format,
    LevelFilter,
    W,
>
where
    W: for<'w> MakeWriter<'w> + 'static,
{
    // The writer escapes; the formatter's own escaping of a few
    // characters would show them escaped twice.
    tracing_subscriber::fmt()
        .with_ansi_sanitization(false)
        .with_writer(make)
        .with_max_level(level)
        .with_target(false)
}

/// A log writer that shows each event as one line of plain text
/// ([`neffld::text::escape_bytes`]): the formatter hands over one whole
/// event per write, ending in its newline, which is kept.
struct EscapedLines<W>(W);

impl<W: Write> Write for EscapedLines<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let (line, end) = match b.strip_suffix(b"\n") {
            Some(line) => (line, "\n"),
            None => (b, ""),
        };
        self.0
            .write_all(format!("{}{end}", escape_bytes(line)).as_bytes())?;
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// A level name, case-insensitive; anything unknown means `ERROR`.
fn parse_level(value: &str) -> LevelFilter {
    match value.trim().to_ascii_lowercase().as_str() {
        "off" | "none" => LevelFilter::OFF,
        "trace" => LevelFilter::TRACE,
        "debug" => LevelFilter::DEBUG,
        "info" => LevelFilter::INFO,
        "warn" | "warning" => LevelFilter::WARN,
        _ => LevelFilter::ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A log line quoting a NEFF's name stays one line, without the name's
    /// control characters.
    #[test]
    fn names_in_log_lines_are_escaped() {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = buf.clone();
        let subscriber = subscriber(LevelFilter::INFO, move || {
            EscapedLines(Writer(sink.clone()))
        })
        .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!("nrt_load: loaded \"{}\"", "evil\nstatus ok\x1b[32m");
            tracing::warn!("{}", "a\u{9b}31m\tb");
        });
        let out = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
        assert_eq!(out.lines().count(), 2, "{out}");
        assert!(
            out.contains("loaded \"evil\\nstatus ok\\x1b[32m\""),
            "{out}"
        );
        assert!(out.contains("a\\u{9b}31m\\tb"), "{out}");
        assert!(!out.contains('\x1b'));
    }

    struct Writer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Writer {
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
}
