//! Colour on a terminal: `--color auto|always|never`, and `NO_COLOR`
//! (any non-empty value) turning `auto` off, as no-color.org asks.

use std::io::IsTerminal;

/// When to colour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when the output is a terminal and NO_COLOR is unset.
    #[default]
    Auto,
    Always,
    Never,
}

/// Whether this stream gets ANSI colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Decides for stdout (`stderr = false`) or stderr.
    pub fn new(choice: ColorChoice, stderr: bool) -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let tty = if stderr {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        Style {
            color: match choice {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => tty && !no_color,
            },
        }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Bold red: a failure.
    pub fn fail(self, text: &str) -> String {
        self.paint("1;31", text)
    }

    /// Green: a pass.
    pub fn ok(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Yellow: a warning.
    pub fn warn(self, text: &str) -> String {
        self.paint("33", text)
    }
}
