//! A mapped NEFF shortened by another process during the load: touching a
//! page past the file's new end raises `SIGBUS`, whose default action kills
//! the process without a word. While a [`Guard`] lives, a `SIGBUS` at an
//! address inside the mapping ends the command as the I/O failure it is
//! (exit status 2, the file named, as a JSON document when asked); a
//! `SIGBUS` anywhere else keeps the default action.
//!
//! Why `unsafe`: installing a handler and leaving from it are calls into the
//! C library. The handler does only async-signal-safe work: atomic loads,
//! `write`, `_exit`, `signal`. Its message is rendered before it is armed.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};

static START: AtomicUsize = AtomicUsize::new(0);
static END: AtomicUsize = AtomicUsize::new(0);
static MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);
static MESSAGE_FD: AtomicI32 = AtomicI32::new(2);

/// Exit status of a command that failed to read its input (as `Failure::io`).
const IO_EXIT: i32 = 2;

/// Restores the previous `SIGBUS` action on drop.
pub struct Guard {
    previous: Option<libc::sigaction>,
}

/// Arms the handler for faults inside `mapped`: `message` is written whole
/// to file descriptor `fd` (1 or 2) before the process exits.
pub fn guard(mapped: &[u8], message: String, fd: i32) -> Guard {
    let start = mapped.as_ptr() as usize;
    guard_range(start, start + mapped.len(), message, fd)
}

/// As [`guard`], for faults at addresses in `start..end`: a command whose
/// mappings the library holds (`plan`'s NEFFs) guards the whole address
/// space, since nothing else it maps can be shortened.
pub fn guard_range(start: usize, end: usize, message: String, fd: i32) -> Guard {
    // Leaked on purpose: a handler running on another thread may still read
    // it after the guard is gone; one message per load, a few hundred bytes.
    let message: &'static mut [u8] = Box::leak(message.into_bytes().into_boxed_slice());
    MESSAGE_LEN.store(message.len(), Ordering::Release);
    MESSAGE.store(message.as_mut_ptr(), Ordering::Release);
    MESSAGE_FD.store(fd, Ordering::Release);
    START.store(start, Ordering::Release);
    END.store(end, Ordering::Release);
    // SAFETY: a zeroed `sigaction` is a valid value (no handler, empty
    // flags); the fields set below make it an SA_SIGINFO handler with an
    // empty mask. `sigaction` reads `action` and writes `previous`, both
    // live locals.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as extern "C" fn(_, _, _) as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        let installed = libc::sigaction(libc::SIGBUS, &action, &mut previous) == 0;
        Guard {
            previous: installed.then_some(previous),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(previous) = &self.previous {
            // SAFETY: `previous` is the action `sigaction` returned when the
            // guard was armed; the old-action pointer may be null.
            unsafe { libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut()) };
        }
        START.store(0, Ordering::Release);
        END.store(0, Ordering::Release);
    }
}

extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel hands an SA_SIGINFO handler a valid siginfo.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    // A page of a mapped file past its end: "nonexistent physical address".
    // Any other cause of SIGBUS keeps the default action, even inside the
    // guarded range (`plan` guards the whole address space).
    if code == libc::BUS_ADRERR
        && addr >= START.load(Ordering::Acquire)
        && addr < END.load(Ordering::Acquire)
    {
        let message = MESSAGE.load(Ordering::Acquire);
        let len = MESSAGE_LEN.load(Ordering::Acquire);
        // SAFETY: `message` points at `len` leaked bytes that are never
        // freed; `write` and `_exit` are async-signal-safe.
        unsafe {
            libc::write(MESSAGE_FD.load(Ordering::Acquire), message.cast(), len);
            libc::_exit(IO_EXIT);
        }
    }
    // Not the mapping: back to the default action; the faulting access runs
    // again on return and ends the process as it would have.
    // SAFETY: `signal` is async-signal-safe.
    unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use neffld::neff::MappedFile;
    use std::io::Write;
    use std::process::Command;

    const CHILD: &str = "NEFFLD_TEST_SIGBUS_CHILD";

    /// Run in a child process (below): maps a file, shortens it, touches a
    /// page past the new end. Without the guard this is a kill by SIGBUS.
    #[test]
    fn child_touches_a_shortened_mapping() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let mut f = neffld_testkit::scratch_file("sigbus");
        f.write_all(&vec![7u8; 16 << 12]).unwrap();
        let map = MappedFile::map(&f).unwrap();
        let _guard = guard(map.bytes(), "the file shrank\n".into(), 2);
        assert_eq!(map.bytes()[0], 7);
        f.set_len(4096).unwrap();
        let byte = std::hint::black_box(map.bytes()[12 << 12]);
        println!("read {byte} past the end");
    }

    #[test]
    fn a_shortened_mapping_is_an_io_failure_not_a_kill() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "sigbus::tests::child_touches_a_shortened_mapping",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(IO_EXIT), "{stderr}");
        assert!(stderr.contains("the file shrank"), "{stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("past the end"));
    }
}
