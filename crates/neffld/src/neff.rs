//! The NEFF file as a whole, for tools that read one, write one or take one
//! apart (`pack`, `extract`, and every command that takes a path): the
//! container's deliberate surface. How the gates run stays inside the
//! pipeline; what they found is [`crate::report::examine`].
//!
//! Opening runs the container's gates (header, digest, the payload's
//! inflate and archive) and hands out its members, borrowed from one
//! inflated buffer:
//!
//! ```
//! use neffld::neff::{open, OpenOptions};
//!
//! let bytes = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.neff"));
//! let neff = open(bytes, &OpenOptions::default())?;
//! assert_eq!(neff.header().name_str(), "demo");
//! let kelf = neff.archive().get("kelf-0.json").expect("the manifest chain's root");
//! assert!(kelf.starts_with(b"{"));
//! for (name, body) in neff.archive().iter() {
//!     println!("{name}: {} bytes", body.len());
//! }
//! # Ok::<(), neffld::neff::ContainerError>(())
//! ```

use std::fs::File;
use std::io::Read;
use std::path::Path;

pub use crate::container::archive::DEFAULT_MAX_MEMBERS;
pub use crate::container::header::feature_names;
pub use crate::container::stream::MAX_STREAM_NEFF;
pub use crate::container::writer::{NeffWriter, Producer};
pub use crate::container::{
    open, open_mapped, Archive, ContainerError, DigestForm, Encoding, HashAlgorithm, MappedFile,
    Member, MemberKind, Neff, NeffHeader, OpenOptions, Verified, HEADER_LEN,
};
pub use crate::parse::declared_arch;

/// One NEFF from a stream, read only as far as its header says and refused
/// at once when the header declares more than `NEFFLD_MAX_NEFF_SIZE`
/// ([`MAX_STREAM_NEFF`] by default; [`crate::config::max_stream_neff`]).
pub fn read_neff(r: &mut dyn std::io::Read) -> std::io::Result<Vec<u8>> {
    let max = crate::config::max_stream_neff(|k| std::env::var(k).ok())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    crate::container::read_neff_within(r, max)
}

/// A NEFF's bytes as a load reads them from a path. A regular file is
/// mapped (its pages come from the page cache, and a large payload's pages
/// are released as the decoder passes them, so they are not resident next
/// to the inflated payload); standard input, another stream, and a file
/// that cannot be mapped are read — a stream only as far as its header says
/// ([`read_neff`]), so an endless one is refused at once.
pub enum Source {
    /// Read into memory: standard input, a stream, or a file that cannot be mapped.
    Read(Vec<u8>),
    /// A regular file, mapped.
    Mapped(MappedFile),
}

impl Source {
    /// The file at `path`; `None` reads standard input.
    pub fn read(path: Option<&Path>) -> std::io::Result<Source> {
        let Some(path) = path else {
            return read_neff(&mut std::io::stdin().lock()).map(Source::Read);
        };
        Source::of_file(File::open(path)?)
    }

    /// An opened file: mapped when it is a regular file, else read.
    pub fn of_file(f: File) -> std::io::Result<Source> {
        let meta = f.metadata()?;
        if meta.is_file() && meta.len() >= HEADER_LEN as u64 {
            if let Ok(m) = MappedFile::map(&f) {
                return Ok(Source::Mapped(m));
            }
        }
        read_open(f).map(Source::Read)
    }

    /// The NEFF's bytes, however they were got.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Source::Read(b) => b,
            Source::Mapped(m) => m.bytes(),
        }
    }

    /// The mapping, when the file is mapped (a tool may guard against the
    /// file being shortened underneath it).
    pub fn mapped(&self) -> Option<&MappedFile> {
        match self {
            Source::Mapped(m) => Some(m),
            Source::Read(_) => None,
        }
    }

    /// The S1 gates on these bytes, releasing a mapped file's pages as they
    /// are read.
    pub fn open(&self, opts: &OpenOptions) -> Result<Neff, ContainerError> {
        match self {
            Source::Read(b) => open(b, opts),
            Source::Mapped(m) => open_mapped(m, opts),
        }
    }
}

/// The regular file at `path` (a link to one is followed), opened for
/// reading; anything else is refused, naming what it is, before a byte is
/// read. The open itself never waits: a FIFO no process writes to would
/// hold a plain `open` forever (a plan's NEFF, a deployment file, a
/// capture), so it is opened without blocking and refused as a FIFO.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::io::{Error, ErrorKind};
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    // O_NONBLOCK changes nothing for a regular file's reads.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let t = f.metadata()?.file_type();
    if t.is_file() {
        return Ok(f);
    }
    let what = if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "a special file"
    };
    Err(Error::new(
        ErrorKind::InvalidInput,
        format!("not a regular file: this is {what}"),
    ))
}

/// The bytes of the NEFF at `path`, read (never mapped, so a file another
/// process shortens meanwhile is read short rather than faulting): a
/// regular file whole, anything else only as far as its header says.
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    read_open(File::open(path)?)
}

fn read_open(mut f: File) -> std::io::Result<Vec<u8>> {
    if !f.metadata()?.is_file() {
        return read_neff(&mut f);
    }
    // One read into a buffer of the file's size (std reserves it from the
    // metadata); a file that grew meanwhile is read to its end.
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    Ok(out)
}
