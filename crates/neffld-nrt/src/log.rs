//! Logging to stderr through `tracing`, set up on the first exported call.
//!
//! The level comes from `NEFFLD_LOG`, else `NEURON_RT_LOG_LEVEL` (names such
//! as `ERROR`, `WARN`/`WARNING`, `INFO`, `DEBUG`, `TRACE`, `OFF`); the
//! default is `ERROR`, as in the reference runtime. When the host process has
//! already installed a global subscriber, that one is kept.

use std::sync::Once;

use tracing::level_filters::LevelFilter;

static INSTALL: Once = Once::new();

/// Installs the stderr subscriber, at most once per process.
pub(crate) fn ensure() {
    INSTALL.call_once(|| {
        let level = ["NEFFLD_LOG", "NEURON_RT_LOG_LEVEL"]
            .iter()
            .find_map(|var| std::env::var(var).ok())
            .map(|v| parse_level(&v))
            .unwrap_or(LevelFilter::ERROR);
        let _ = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_max_level(level)
            .with_target(false)
            .try_init();
    });
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

    #[test]
    fn level_names() {
        assert_eq!(parse_level("INFO"), LevelFilter::INFO);
        assert_eq!(parse_level("warning"), LevelFilter::WARN);
        assert_eq!(parse_level(" debug "), LevelFilter::DEBUG);
        assert_eq!(parse_level("off"), LevelFilter::OFF);
        assert_eq!(parse_level("loud"), LevelFilter::ERROR);
    }
}
