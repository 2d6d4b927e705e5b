//! One file-system policy for the two commands that walk a directory tree:
//! `neffld pack` reads one ([`read_tree`]), `neffld extract` writes one
//! ([`Dest`]).
//!
//! - Only regular files and directories are members. A FIFO (which would
//!   block a read forever), a socket or a device is refused by name.
//! - A symbolic link is never followed unless asked: `pack` refuses one
//!   (its target may be anything on the machine, `/etc/passwd` say) unless
//!   `--follow-symlinks`, and then still refuses a target that is not a
//!   regular file or directory, or a directory it is already inside.
//!   `extract` never writes through one: a link where it needs a directory
//!   or a file is refused by name, and nothing beneath the destination is
//!   created or changed through it.
//! - Names are bytes: a file name that is not UTF-8 is packed and extracted
//!   exactly.
//! - A member's path is bounded: at most [`MAX_PATH`] bytes and
//!   [`MAX_DEPTH`] components (the kernel's own `PATH_MAX`; a path of
//!   100,000 directories took `extract` 45 s for one member). A longer one
//!   is skipped with a warning.
//! - A file named by something the NEFF says (`load --dump`'s
//!   `<subgraph>_<engine>.bin`) is one plain name ([`plain_name`]) created
//!   in the destination itself: a graph name is only a label to the
//!   runtime, which accepts any (so `verify` and `load` do), but as a file
//!   name `../../x` or `/etc/x` would leave the destination.
//!
//! Paths are resolved one component at a time beneath an open directory
//! (`openat` with `O_NOFOLLOW`, `mkdirat`, `unlinkat`), not by the kernel
//! walking a whole path, so a link swapped in between a check and a use is
//! met by the use itself. A file `extract` writes is always created new
//! (`O_EXCL`): an earlier file of the same name is unlinked first, so not
//! even a hard link to a file elsewhere is written into.
//!
//! Why `unsafe`: std has no `*at` calls; they are one `libc` call each,
//! below, with a `// SAFETY:` line.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// A name for a message (which the command escapes when it shows it).
fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// What a directory entry is, from the entry itself (a link is a link).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Link,
    Fifo,
    Socket,
    Device,
}

impl Kind {
    fn of(meta: &std::fs::Metadata) -> Kind {
        let t = meta.file_type();
        if t.is_symlink() {
            Kind::Link
        } else if t.is_dir() {
            Kind::Dir
        } else if t.is_fifo() {
            Kind::Fifo
        } else if t.is_socket() {
            Kind::Socket
        } else if t.is_char_device() || t.is_block_device() {
            Kind::Device
        } else {
            Kind::File
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::File => "a regular file",
            Kind::Dir => "a directory",
            Kind::Link => "a symbolic link",
            Kind::Fifo => "a FIFO",
            Kind::Socket => "a socket",
            Kind::Device => "a device",
        }
    }
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`.
fn openat(dir: &File, name: &[u8], flags: i32, mode: libc::c_uint) -> io::Result<File> {
    let name = c_name(name)?;
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated string,
    // both alive for the call.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened by this call and belongs to nothing else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

fn c_name(name: &[u8]) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))
}

/// What `name` in `dir` is, without following it.
fn kind_at(dir: &File, name: &[u8]) -> io::Result<Kind> {
    let probe = openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
    Ok(Kind::of(&probe.metadata()?))
}

/// `path/name` for messages.
fn joined(path: &[u8], name: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        name.to_vec()
    } else {
        [path, b"/", name].concat()
    }
}

/// Why a tree could not be read: the entry (its path below the root) and
/// what was wrong with it.
#[derive(Debug)]
pub struct TreeError {
    /// The entry's path below the root, as bytes (a name need not be UTF-8).
    pub path: Vec<u8>,
    /// What was wrong with it.
    pub what: String,
    /// The entry is of a kind the policy refuses (as opposed to an I/O
    /// failure reading it).
    pub refused: bool,
}

impl std::fmt::Display for TreeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", String::from_utf8_lossy(&self.path), self.what)
    }
}

/// One member read from a tree: its name (path below the root, `/`
/// separated, exact bytes) and its bytes.
pub type TreeFile = (Vec<u8>, Vec<u8>);

/// Every regular file under `root`, by name, directories in byte order.
pub fn read_tree(root: &Path, follow_symlinks: bool) -> Result<Vec<TreeFile>, TreeError> {
    read_tree_except(root, follow_symlinks, None).map(|(files, _)| files)
}

/// [`read_tree`], leaving out the file `except` names (when it exists: the
/// output of `pack D -o D/self.neff`, which would otherwise be packed into
/// the next one). Also returns the names left out.
pub fn read_tree_except(
    root: &Path,
    follow_symlinks: bool,
    except: Option<&Path>,
) -> Result<(Vec<TreeFile>, Vec<Vec<u8>>), TreeError> {
    let skip = except
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| (m.dev(), m.ino()));
    let at_root = |e: io::Error| TreeError {
        path: Vec::new(),
        what: e.to_string(),
        refused: false,
    };
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(root)
        .map_err(at_root)?;
    let mut out = Vec::new();
    let meta = dir.metadata().map_err(at_root)?;
    let mut left_out = Vec::new();
    let mut walk = Walk {
        follow_symlinks,
        inside: vec![(meta.dev(), meta.ino())],
        out: &mut out,
        skip,
        left_out: &mut left_out,
    };
    walk.dir(&dir, &[])?;
    Ok((out, left_out))
}

struct Walk<'o> {
    follow_symlinks: bool,
    /// `(device, inode)` of the directories being walked, root first: a
    /// followed link back to one of them is refused.
    inside: Vec<(u64, u64)>,
    out: &'o mut Vec<TreeFile>,
    /// `(device, inode)` of a file to leave out.
    skip: Option<(u64, u64)>,
    left_out: &'o mut Vec<Vec<u8>>,
}

impl Walk<'_> {
    fn dir(&mut self, dir: &File, path: &[u8]) -> Result<(), TreeError> {
        let io_err = |name: &[u8]| {
            let path = joined(path, name);
            move |e: io::Error| TreeError {
                path,
                what: e.to_string(),
                refused: false,
            }
        };
        // The entries of the open directory itself (its descriptor's
        // path), whatever its own path now leads to.
        let listing = format!("/proc/self/fd/{}", dir.as_raw_fd());
        let mut names: Vec<Vec<u8>> = std::fs::read_dir(listing)
            .map_err(io_err(b""))?
            .map(|e| e.map(|e| e.file_name().as_bytes().to_vec()))
            .collect::<Result<_, _>>()
            .map_err(io_err(b""))?;
        names.sort();
        for name in names {
            let here = joined(path, &name);
            let refuse = |what: String| TreeError {
                path: here.clone(),
                what,
                refused: true,
            };
            let mut kind = kind_at(dir, &name).map_err(io_err(&name))?;
            let mut flags = libc::O_NOFOLLOW;
            if kind == Kind::Link {
                if !self.follow_symlinks {
                    return Err(refuse(
                        "is a symbolic link; pack takes the tree's own files \
                         (--follow-symlinks packs what links point to)"
                            .into(),
                    ));
                }
                let target = openat(dir, &name, libc::O_PATH, 0).map_err(io_err(&name))?;
                kind = Kind::of(&target.metadata().map_err(io_err(&name))?);
                flags = 0;
            }
            match kind {
                Kind::Dir => {
                    let sub = openat(dir, &name, libc::O_RDONLY | libc::O_DIRECTORY | flags, 0)
                        .map_err(io_err(&name))?;
                    let meta = sub.metadata().map_err(io_err(&name))?;
                    let id = (meta.dev(), meta.ino());
                    if self.inside.contains(&id) {
                        return Err(refuse(
                            "leads back to a directory it is inside; following it would never end"
                                .into(),
                        ));
                    }
                    self.inside.push(id);
                    self.dir(&sub, &here)?;
                    self.inside.pop();
                }
                Kind::File => {
                    // O_NONBLOCK: should the entry have become a FIFO since
                    // it was looked at, the open returns instead of waiting
                    // for a writer, and the check below refuses it.
                    let mut f = openat(dir, &name, libc::O_RDONLY | libc::O_NONBLOCK | flags, 0)
                        .map_err(io_err(&name))?;
                    let meta = f.metadata().map_err(io_err(&name))?;
                    if self.skip == Some((meta.dev(), meta.ino())) {
                        self.left_out.push(here);
                        continue;
                    }
                    let now = Kind::of(&meta);
                    if now != Kind::File {
                        return Err(refuse(format!(
                            "is {}; pack takes regular files and directories only",
                            now.name()
                        )));
                    }
                    let mut bytes = crate::fallible::with_capacity(
                        usize::try_from(meta.len()).unwrap_or(usize::MAX),
                        "a file of the tree",
                    )
                    .map_err(|e| io_err(&name)(io::Error::new(io::ErrorKind::OutOfMemory, e)))?;
                    f.read_to_end(&mut bytes).map_err(io_err(&name))?;
                    self.out.push((here, bytes));
                }
                other => {
                    return Err(refuse(format!(
                        "is {}; pack takes regular files and directories only",
                        other.name()
                    )))
                }
            }
        }
        Ok(())
    }
}

/// Writes `bytes` as the file `path` without ever writing through what is
/// there: into a new file beside it (created exclusively, never through a
/// link), then renamed over `path`. A symbolic link or hard link planted at
/// `path` (in `/tmp`, say) is replaced, not followed: its target is left
/// alone. The C library's memory table of a refused allocation is written
/// this way.
pub fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    let written = f
        .write_all(bytes)
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Longest member path `extract` creates, in bytes (Linux's `PATH_MAX`).
pub(crate) const MAX_PATH: usize = 4096;

/// Most components of a member path `extract` creates.
pub(crate) const MAX_DEPTH: usize = 256;

/// Longest file name (one component) a Linux file system takes.
pub(crate) const MAX_NAME: usize = 255;

/// Whether `name` is one plain file name that stays in the directory it is
/// created in: not empty, not `.` or `..`, no `/` or NUL, at most
/// [`MAX_NAME`] bytes. The reason when it is not.
pub fn plain_name(name: &[u8]) -> Result<(), String> {
    let why = if name.is_empty() {
        "it is empty"
    } else if name == b"." || name == b".." {
        "it names a directory, not a file"
    } else if name.contains(&b'/') {
        "it holds a '/', which would place it elsewhere than the destination"
    } else if name.contains(&0) {
        "it holds a NUL byte"
    } else if name.len() > MAX_NAME {
        "it is longer than 255 bytes"
    } else {
        return Ok(());
    };
    Err(format!("{:?} is not a plain file name: {why}", text(name)))
}

/// Why one member could not be written.
#[derive(Debug)]
pub enum Refusal {
    /// The archive's own doing: a name that leaves the destination, or one
    /// that runs through (or onto) a file of another member. Skipped.
    Name(String),
    /// The destination's: a symbolic link in the way, or an I/O failure.
    Dest(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Name(why) | Refusal::Dest(why) => f.write_str(why),
        }
    }
}

/// A destination directory that members are created beneath.
pub struct Dest {
    root: File,
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

impl Dest {
    /// Creates `path` (and its parents) when missing and opens it. The
    /// destination itself is the user's to name, links and all; what is
    /// beneath it is this module's.
    pub fn create(path: &Path) -> io::Result<Dest> {
        if let Ok(meta) = std::fs::metadata(path) {
            if !meta.is_dir() {
                let kind = Kind::of(&meta);
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("it is {}, not a directory", kind.name()),
                ));
            }
        }
        std::fs::create_dir_all(path)?;
        let root = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(path)?;
        Ok(Dest { root })
    }

    /// Writes one member: `name` is split at `/` into directories beneath
    /// the destination and a file, each created if missing and never
    /// reached through a symbolic link.
    pub fn write(&self, name: &[u8], body: &[u8]) -> Result<(), Refusal> {
        // The length first, before the name is split at all.
        if name.len() > MAX_PATH {
            return Err(Refusal::Name(format!(
                "its path is {} bytes, more than the {MAX_PATH} (PATH_MAX) extract creates",
                name.len()
            )));
        }
        let parts: Vec<&[u8]> = name
            .split(|&b| b == b'/')
            .filter(|p| !p.is_empty())
            .collect();
        if name.starts_with(b"/")
            || parts.is_empty()
            || parts.iter().any(|p| *p == b"." || *p == b"..")
        {
            return Err(Refusal::Name("its path would leave the destination".into()));
        }
        if parts.len() > MAX_DEPTH {
            return Err(Refusal::Name(format!(
                "its path has {} components, more than the {MAX_DEPTH} extract creates",
                parts.len()
            )));
        }
        let (leaf, dirs) = parts.split_last().expect("not empty");
        let mut at: Option<File> = None;
        let mut path = Vec::new();
        for part in dirs {
            let dir = at.as_ref().unwrap_or(&self.root);
            path = joined(&path, part);
            let sub = self.subdir(dir, part, &path)?;
            at = Some(sub);
        }
        let dir = at.as_ref().unwrap_or(&self.root);
        let path = joined(&path, leaf);
        let mut file = self.new_file(dir, leaf, &path)?;
        file.write_all(body)
            .map_err(|e| Refusal::Dest(format!("{}: {e}", text(&path))))
    }

    /// Writes one file directly in the destination: `name` must be a
    /// [`plain_name`]. Never through a symbolic link, never into an
    /// existing file (one of that name is replaced).
    pub fn write_plain(&self, name: &[u8], body: &[u8]) -> Result<(), Refusal> {
        plain_name(name).map_err(Refusal::Name)?;
        let mut file = self.new_file(&self.root, name, name)?;
        file.write_all(body)
            .map_err(|e| Refusal::Dest(format!("{}: {e}", text(name))))
    }

    /// The directory `name` in `dir`, made if missing.
    fn subdir(&self, dir: &File, name: &[u8], path: &[u8]) -> Result<File, Refusal> {
        let shown = text(path);
        let c = c_name(name).map_err(|e| Refusal::Name(e.to_string()))?;
        // SAFETY: `dir` is an open descriptor and `c` a NUL-terminated
        // string, both alive for the call.
        if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o777) } != 0 {
            let e = io::Error::last_os_error();
            if errno(&e) != libc::EEXIST {
                return Err(Refusal::Dest(format!("cannot create {shown}: {e}")));
            }
        }
        match openat(
            dir,
            name,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            0,
        ) {
            Ok(sub) => Ok(sub),
            Err(e) => Err(match kind_at(dir, name) {
                Ok(Kind::Link) => Refusal::Dest(format!(
                    "{shown} is a symbolic link, which neffld never writes through"
                )),
                Ok(kind) if kind != Kind::Dir => {
                    Refusal::Name(format!("{shown} is {}, not a directory", kind.name()))
                }
                _ => Refusal::Dest(format!("cannot open {shown}: {e}")),
            }),
        }
    }

    /// A new file `name` in `dir`; an earlier regular file of that name is
    /// unlinked first (never written into: it may be a hard link).
    fn new_file(&self, dir: &File, name: &[u8], path: &[u8]) -> Result<File, Refusal> {
        let shown = text(path);
        let create = || {
            openat(
                dir,
                name,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
                0o666,
            )
        };
        match create() {
            Ok(f) => return Ok(f),
            Err(e) if errno(&e) != libc::EEXIST => {
                return Err(Refusal::Dest(format!("cannot create {shown}: {e}")))
            }
            Err(_) => {}
        }
        match kind_at(dir, name) {
            Ok(Kind::File) => {}
            Ok(Kind::Link) => {
                return Err(Refusal::Dest(format!(
                    "{shown} is a symbolic link, which neffld never writes through"
                )))
            }
            Ok(kind) => return Err(Refusal::Name(format!("{shown} is {}", kind.name()))),
            Err(e) => return Err(Refusal::Dest(format!("cannot create {shown}: {e}"))),
        }
        let c = c_name(name).map_err(|e| Refusal::Name(e.to_string()))?;
        // SAFETY: `dir` is an open descriptor and `c` a NUL-terminated
        // string, both alive for the call.
        if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            let e = io::Error::last_os_error();
            return Err(Refusal::Dest(format!("cannot replace {shown}: {e}")));
        }
        create().map_err(|e| Refusal::Dest(format!("cannot create {shown}: {e}")))
    }
}

/// Writes a whole tree of `files` (paths below `dir`, `/` separated, and
/// their bytes) as the directory `dir`, never half: into a new directory
/// beside it (created here, so nothing in it is a link), then renamed into
/// place; on any failure the new directory is removed and `dir` is left as
/// it was. `dir` may be missing or an empty directory; a directory whose
/// every entry `ours` recognises (an earlier tree of the same kind) is
/// replaced whole; anything else — other files, a symbolic link, a file —
/// is refused, since replacing it would delete what is not the command's.
/// The error is a sentence naming what was wrong.
pub fn replace_tree(
    dir: &Path,
    files: &[(String, Vec<u8>)],
    ours: impl Fn(&[u8]) -> bool,
) -> Result<(), String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let shown = dir.display();
    let replaces = match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(format!("cannot look at {shown}: {e}")),
        Ok(m) => {
            let kind = Kind::of(&m);
            if kind != Kind::Dir {
                let why = if kind == Kind::Link {
                    ", which neffld never writes through"
                } else {
                    ", not a directory"
                };
                return Err(format!("{shown} is {}{why}", kind.name()));
            }
            let mut other = None;
            let mut any = false;
            for e in std::fs::read_dir(dir).map_err(|e| format!("cannot list {shown}: {e}"))? {
                let e = e.map_err(|e| format!("cannot list {shown}: {e}"))?;
                let name = e.file_name();
                let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                any = true;
                if !(is_dir && ours(name.as_bytes())) {
                    other = Some(name);
                    break;
                }
            }
            if let Some(name) = other {
                return Err(format!(
                    "{shown} holds {:?}, which is not part of such a tree; neffld replaces only a missing or empty directory or one it wrote",
                    name.to_string_lossy()
                ));
            }
            any
        }
    };
    let name = dir
        .file_name()
        .ok_or_else(|| format!("{shown} names no directory"))?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let aside = |what: &str| {
        parent.join(format!(
            ".{}.{}.{}.{what}",
            name.to_string_lossy(),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
    };
    let new = aside("tmp");
    std::fs::create_dir(&new).map_err(|e| format!("cannot create {}: {e}", new.display()))?;
    let written = (|| {
        let dest = Dest::create(&new).map_err(|e| format!("cannot open {}: {e}", new.display()))?;
        for (path, body) in files {
            dest.write(path.as_bytes(), body).map_err(|e| match e {
                Refusal::Dest(why) => why,
                Refusal::Name(why) => format!("{path}: {why}"),
            })?;
        }
        if !replaces {
            return std::fs::rename(&new, dir)
                .map_err(|e| format!("cannot rename into place: {e}"));
        }
        // The earlier tree goes aside, the new one in, the old one away.
        let old = aside("old");
        std::fs::rename(dir, &old)
            .map_err(|e| format!("cannot move the earlier tree aside: {e}"))?;
        if let Err(e) = std::fs::rename(&new, dir) {
            let _ = std::fs::rename(&old, dir);
            return Err(format!("cannot rename into place: {e}"));
        }
        let _ = std::fs::remove_dir_all(&old);
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&new);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("neffld-tree-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn neuron(name: &[u8]) -> bool {
        name.starts_with(b"neuron")
    }

    /// A tree is written whole or not at all: a member that cannot be
    /// written leaves neither the destination nor anything beside it; an
    /// earlier tree is replaced; a link or a directory of other files is
    /// refused and left as it was.
    #[test]
    fn a_tree_is_replaced_whole_or_not_at_all() {
        let root = scratch("replace");
        let dir = root.join("s");
        let files = |n: &str| vec![(format!("neuron0/{n}"), b"1\n".to_vec())];
        replace_tree(&dir, &files("a"), neuron).unwrap();
        assert_eq!(std::fs::read(dir.join("neuron0/a")).unwrap(), b"1\n");
        replace_tree(&dir, &files("b"), neuron).unwrap();
        assert!(dir.join("neuron0/b").exists() && !dir.join("neuron0/a").exists());
        // The second member cannot be written (it would run through the
        // first, a file): nothing is left of the attempt.
        let bad = vec![
            ("neuron0/x".to_string(), b"1\n".to_vec()),
            ("neuron0/x/y".to_string(), b"1\n".to_vec()),
        ];
        let e = replace_tree(&dir, &bad, neuron).unwrap_err();
        assert!(e.contains("neuron0/x"), "{e}");
        assert!(dir.join("neuron0/b").exists(), "the earlier tree stays");
        let fresh = root.join("fresh");
        replace_tree(&fresh, &bad, neuron).unwrap_err();
        assert!(!fresh.exists());
        let names: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["s"], "nothing beside it");
        // Other files, a link, a file: refused, untouched.
        let other = root.join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("mine"), "x").unwrap();
        let e = replace_tree(&other, &files("a"), neuron).unwrap_err();
        assert!(e.contains("\"mine\""), "{e}");
        let link = root.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let e = replace_tree(&link, &files("a"), neuron).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(dir.join("neuron0/b").exists());
        let file = root.join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(replace_tree(&file, &files("a"), neuron)
            .unwrap_err()
            .contains("not a directory"));
        // An empty directory is taken.
        let empty = root.join("empty");
        std::fs::create_dir(&empty).unwrap();
        replace_tree(&empty, &files("a"), neuron).unwrap();
        assert!(empty.join("neuron0/a").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
