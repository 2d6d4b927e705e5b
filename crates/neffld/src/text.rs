//! Text from a NEFF, a capture or a file system, made safe to show a person.
//!
//! Names in a NEFF (the header's model name, tar member names, variable and
//! queue names in its JSON) are chosen by whoever wrote the file. Printed as
//! they are, a newline in one forges a line of the report and an escape
//! sequence repaints the terminal. Every human-facing output (the command's
//! text reports and messages, the C library's log lines, the Python
//! package's error messages) shows such text through [`escape`]; JSON keeps
//! the exact characters, since its own escaping is unambiguous.

use std::borrow::Cow;
use std::fmt::Write as _;

/// True for a character that must not reach a terminal as itself: C0 and
/// C1 controls, DEL, the line and paragraph separators, and the directional
/// formatting characters (which reorder what follows them on screen).
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && needs_escape(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// `s` as one line of plain text: a backslash, a control character or a
/// directional mark becomes a backslash escape (`\n`, `\x1b`, `\u{202e}`,
/// `\\`); everything else is kept. The result has no line break, so a name
/// never starts a line of its own, and two different names never look the
/// same.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c == '\\' || needs_escape(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    push_escaped(&mut out, s);
    Cow::Owned(out)
}

/// Bytes that should be text (a tar member name, a file name) shown as
/// [`escape`] shows text, each byte that is not part of valid UTF-8 as
/// `\xNN`: the exact bytes can be read back from what is shown.
pub fn escape_bytes(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => escape(s),
        Err(_) => {
            let mut out = String::with_capacity(b.len() + 8);
            for chunk in b.utf8_chunks() {
                push_escaped(&mut out, chunk.valid());
                for x in chunk.invalid() {
                    let _ = write!(out, "\\x{x:02x}");
                }
            }
            Cow::Owned(out)
        }
    }
}

/// `n` things for a person: `1 byte`, `2 bytes` (`noun` is the singular;
/// the plural adds an s).
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `bytes` in the largest binary unit (1024 B, 1024², …, at most unit
/// `max_unit`) it holds at least one of, rounded down to `decimals` places,
/// and that unit's index (0: bytes). Every size neffld prints goes through
/// this one rule, so no figure promises room that is not there (a tensor
/// of the size shown fits) and two commands never show one state
/// differently (`load` said 15.9 GiB free where `plan` said 15.8).
pub fn binary_floor(bytes: u64, decimals: u32, max_unit: usize) -> (String, usize) {
    let mut unit = 0;
    while unit < max_unit.min(6) && bytes >> (10 * (unit + 1)) > 0 {
        unit += 1;
    }
    let den = 10u128.pow(decimals.min(18));
    let fixed = (u128::from(bytes) * den) >> (10 * unit);
    let (whole, frac) = (fixed / den, fixed % den);
    let shown = match decimals {
        0 => whole.to_string(),
        d => format!("{whole}.{frac:0width$}", width = d.min(18) as usize),
    };
    (shown, unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_down() {
        // 2,102,796,288 B is 1.958 GiB: 1.9, not 2.0.
        assert_eq!(binary_floor(2_102_796_288, 1, 6), ("1.9".into(), 3));
        assert_eq!(binary_floor(2_102_796_288, 3, 6), ("1.958".into(), 3));
        assert_eq!(binary_floor(2 << 30, 1, 6), ("2.0".into(), 3));
        assert_eq!(binary_floor((1 << 20) - 1, 1, 6), ("1023.9".into(), 1));
        assert_eq!(binary_floor(1023, 3, 6), ("1023.000".into(), 0));
        assert_eq!(binary_floor(0, 3, 6), ("0.000".into(), 0));
        assert_eq!(binary_floor(u64::MAX, 3, 4), ("16777215.999".into(), 4));
        assert_eq!(binary_floor(u64::MAX, 1, 6), ("15.9".into(), 6));
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for s in ["sg00/def.json", "fused.neff", "vždy ✓", ""] {
            assert!(matches!(escape(s), Cow::Borrowed(x) if x == s));
        }
    }

    #[test]
    fn controls_and_marks_become_escapes_on_one_line() {
        let forged = "evil\nstatus    NRT_SUCCESS (0)\x1b[32m";
        assert_eq!(escape(forged), "evil\\nstatus    NRT_SUCCESS (0)\\x1b[32m");
        assert_eq!(escape("a\tb\rc\0d\x7f"), "a\\tb\\rc\\x00d\\x7f");
        assert_eq!(escape("\u{9b}31m"), "\\u{9b}31m", "C1 CSI");
        assert_eq!(escape("abc\u{202e}txt.exe"), "abc\\u{202e}txt.exe");
        assert_eq!(escape("line\u{2028}sep"), "line\\u{2028}sep");
        // The backslash itself is escaped, so an escape in the input cannot
        // pass for one made here.
        assert_eq!(escape("a\\nb"), "a\\\\nb");
        assert_ne!(escape("a\\nb"), escape("a\nb"));
        for s in [forged, "x\u{85}y", "\u{2029}"] {
            assert!(!escape(s).chars().any(needs_escape), "{s:?}");
        }
    }

    #[test]
    fn one_is_singular() {
        assert_eq!(count(1u32, "subgraph"), "1 subgraph");
        assert_eq!(count(0u8, "byte"), "0 bytes");
        assert_eq!(count(22u64, "member"), "22 members");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_exactly() {
        assert_eq!(
            escape_bytes(b"sg00/\xff\xferaw.bin"),
            "sg00/\\xff\\xferaw.bin"
        );
        assert_eq!(escape_bytes(b"ok\n\xc3"), "ok\\n\\xc3");
        assert_eq!(escape_bytes("ü".as_bytes()), "ü");
    }
}
