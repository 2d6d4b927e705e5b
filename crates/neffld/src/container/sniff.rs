//! What a buffer that fails the header gates most likely is, so an error can
//! say "this is a gzip stream" rather than leave a reader decoding hex.
//! Only the first bytes are looked at; the guess never changes a status.

use std::fmt;

/// The kind of file a non-NEFF buffer looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// No bytes at all.
    Empty,
    /// A gzip stream (a NEFF's payload without its header?).
    Gzip,
    /// A tar archive (an extracted NEFF repacked without a header?).
    Tar,
    /// A zip archive.
    Zip,
    /// An ELF object (a compiled kernel, not a NEFF).
    Elf,
    /// JSON (a manifest on its own).
    Json,
    /// Plain text.
    Text,
    /// Nothing recognisable (or a damaged NEFF).
    Unknown,
}

impl FileKind {
    /// Looks at the magic numbers of the common formats a NEFF is confused with.
    pub fn of(bytes: &[u8]) -> FileKind {
        let head = &bytes[..bytes.len().min(512)];
        if bytes.is_empty() {
            FileKind::Empty
        } else if head.starts_with(&[0x1f, 0x8b]) {
            FileKind::Gzip
        } else if head.starts_with(b"PK\x03\x04") {
            FileKind::Zip
        } else if head.starts_with(b"\x7fELF") {
            FileKind::Elf
        } else if head.len() >= 263 && &head[257..262] == b"ustar" {
            FileKind::Tar
        } else if looks_like_text(head) {
            match head.iter().find(|c| !c.is_ascii_whitespace()) {
                Some(b'{') | Some(b'[') => FileKind::Json,
                _ => FileKind::Text,
            }
        } else {
            FileKind::Unknown
        }
    }
}

/// No control characters but whitespace, and valid UTF-8 (a multi-byte
/// character cut by the window's end is allowed).
fn looks_like_text(head: &[u8]) -> bool {
    let printable = head
        .iter()
        .all(|&c| matches!(c, b'\n' | b'\r' | b'\t') || c >= 0x20 && c != 0x7f);
    printable
        && match std::str::from_utf8(head) {
            Ok(_) => true,
            Err(e) => e.error_len().is_none(),
        }
}

impl FileKind {
    /// What the bytes are, as a noun phrase ("a gzip stream"); `None` when
    /// they are nothing recognisable or nothing at all.
    pub fn noun(self) -> Option<&'static str> {
        match self {
            FileKind::Gzip => Some("a gzip stream"),
            FileKind::Tar => Some("a tar archive"),
            FileKind::Zip => Some("a zip archive"),
            FileKind::Elf => Some("an ELF binary"),
            FileKind::Json => Some("JSON text"),
            FileKind::Text => Some("a text file"),
            FileKind::Empty | FileKind::Unknown => None,
        }
    }
}

/// Renders as a clause to append to a header-gate message (empty for `Unknown`).
impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hint = match self {
            FileKind::Empty => return f.write_str("; the file is empty"),
            FileKind::Gzip => " (a NEFF starts with a 1024-byte header)",
            FileKind::Tar => " (`neffld pack DIR -o OUT` builds one)",
            _ => "",
        };
        match self.noun() {
            Some(noun) => write!(f, "; this is {noun}, not a NEFF{hint}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_usual_suspects() {
        assert_eq!(FileKind::of(b""), FileKind::Empty);
        assert_eq!(FileKind::of(&[0x1f, 0x8b, 8, 0]), FileKind::Gzip);
        assert_eq!(FileKind::of(b"hello\nworld\n"), FileKind::Text);
        assert_eq!(FileKind::of(b"  {\"a\": 1}"), FileKind::Json);
        let mut tar = vec![0u8; 1024];
        tar[257..263].copy_from_slice(b"ustar\0");
        assert_eq!(FileKind::of(&tar), FileKind::Tar);
        assert_eq!(FileKind::of(&[2, 0, 0, 0, 0, 0, 0, 0]), FileKind::Unknown);
        // A multi-byte character cut at the window's end is still text.
        let mut t = vec![b'a'; 511];
        t.extend_from_slice("é".as_bytes());
        assert_eq!(FileKind::of(&t), FileKind::Text);
    }
}
