//! What the eventfd registrations take, and what signalling does to a
//! descriptor the client changed since: only an eventfd is registered (a
//! pipe whose reader is gone raised SIGPIPE and killed the process, a full
//! pipe blocked the completion under the queue's lock, a file's data was
//! overwritten), and a completion never blocks, whatever the client did to
//! its descriptor after registering it. Each test runs in a process of its
//! own (`process::ran_alone`): SIGPIPE's default action ends the process.

use std::ffi::c_int;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::ptr;
use std::sync::mpsc;
use std::time::Duration;

use neffld_nrt::*;

const OP: u32 = nrta_xu_t::NRTA_XU_TENSOR_OP as u32;
const DEVICE: u32 = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_DEVICE as u32;

/// Initialises the runtime in a process that takes SIGPIPE as a C client's
/// does: Rust's runtime ignores it at start-up, which would hide a write to
/// a pipe with no reader.
fn init() {
    // SAFETY: restores the default action of one signal; no handler runs.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // SAFETY: NULL version strings are allowed.
    let s = unsafe { nrt_init(1, ptr::null(), ptr::null()) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
}

/// A 64-byte device tensor on logical core 0, as an address (raw pointers
/// are not `Send`).
fn tensor() -> usize {
    let mut t: *mut nrt_tensor_t = ptr::null_mut();
    // SAFETY: the name is a NUL-terminated literal; `t` is writable.
    let s = unsafe { nrt_tensor_allocate(DEVICE, 0, 64, c"t".as_ptr(), &mut t) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    t as usize
}

/// One completed write on tensor-op queue 0 of core 0: its id.
fn write_once(t: usize) -> u64 {
    let data = [7u8; 64];
    let (mut ret, mut seq) = (NRT_STATUS::NRT_FAILURE, 0u64);
    // SAFETY: `t` is a live tensor of 64 bytes; the buffer and out-pointers
    // are live locals of the stated sizes.
    let s = unsafe {
        nrta_tensor_write(
            t as *mut nrt_tensor_t,
            data.as_ptr().cast(),
            0,
            64,
            0,
            0,
            &mut ret,
            &mut seq,
        )
    };
    assert_eq!((s, ret), (NRT_STATUS::NRT_SUCCESS, NRT_STATUS::NRT_SUCCESS));
    seq
}

/// A pipe: (read end, write end).
fn pipe() -> (c_int, c_int) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    (fds[0], fds[1])
}

fn eventfd(initval: u32, flags: c_int) -> c_int {
    // SAFETY: plain syscall wrapper.
    let fd = unsafe { libc::eventfd(initval, flags) };
    assert!(fd >= 0);
    fd
}

fn close(fd: c_int) {
    // SAFETY: a descriptor this test owns.
    assert_eq!(unsafe { libc::close(fd) }, 0);
}

fn register_xu(fd: c_int) -> NRT_STATUS {
    nrta_event_register_xu_completion(0, OP, 0, fd)
}

/// A pipe whose reader is closed, a full pipe, a regular file, a socket and
/// a closed number are refused by both registrations (`NRT_INVALID`); the
/// file keeps its bytes and the process its life. An eventfd is taken.
#[test]
fn only_an_eventfd_is_registered() {
    if neffld_testkit::ran_alone(module_path!(), "only_an_eventfd_is_registered") {
        return;
    }
    init();
    let t = tensor();
    let seq = write_once(t);

    let (r, readerless) = pipe();
    close(r);
    let (full_r, full) = pipe();
    // SAFETY: plain syscall wrappers on descriptors this test owns.
    unsafe {
        let flags = libc::fcntl(full, libc::F_GETFL);
        libc::fcntl(full, libc::F_SETFL, flags | libc::O_NONBLOCK);
        while libc::write(full, [0u8; 4096].as_ptr().cast(), 4096) > 0 {}
        libc::fcntl(full, libc::F_SETFL, flags);
    }
    let path = std::env::temp_dir().join(format!("neffld-eventfds-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    file.write_all(b"the client's data").unwrap();
    let (sock, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
    let closed = eventfd(0, 0);
    close(closed);

    for (what, fd) in [
        ("a pipe whose reader is closed", readerless),
        ("a full pipe", full),
        ("a regular file", file.as_raw_fd()),
        ("a socket", sock.as_raw_fd()),
        ("a closed descriptor", closed),
    ] {
        assert_eq!(register_xu(fd), NRT_STATUS::NRT_INVALID, "{what}");
        assert_eq!(
            nrta_event_register_seq_id_completion(seq, fd),
            NRT_STATUS::NRT_INVALID,
            "{what}"
        );
    }
    // Nothing registered: completions go on, and nothing was written.
    write_once(t);
    let mut data = String::new();
    file.rewind().unwrap();
    file.read_to_string(&mut data).unwrap();
    assert_eq!(data, "the client's data");
    std::fs::remove_file(&path).unwrap();

    let efd = eventfd(0, libc::EFD_NONBLOCK);
    assert_eq!(register_xu(efd), NRT_STATUS::NRT_SUCCESS);
    assert_eq!(register_xu(-1), NRT_STATUS::NRT_SUCCESS);
    for fd in [readerless, full, full_r, efd] {
        close(fd);
    }
    nrt_close();
}

/// A registered eventfd whose number the client then reuses for a pipe
/// with no reader: completions neither write to the pipe (SIGPIPE) nor
/// fail; the queue goes on.
#[test]
fn a_number_reused_for_a_pipe_is_not_written() {
    if neffld_testkit::ran_alone(module_path!(), "a_number_reused_for_a_pipe_is_not_written") {
        return;
    }
    init();
    let t = tensor();
    let efd = eventfd(0, 0);
    assert_eq!(register_xu(efd), NRT_STATUS::NRT_SUCCESS);
    let (r, w) = pipe();
    // The eventfd's number now names the pipe's write end, reader closed.
    // SAFETY: descriptors this test owns.
    assert_eq!(unsafe { libc::dup2(w, efd) }, efd);
    close(r);
    close(w);
    let before = write_once(t);
    let after = write_once(t);
    assert_eq!(after, before + 1);
    close(efd);
    nrt_close();
}

/// A blocking eventfd whose counter is full (a write would wait for a
/// read that never comes): the completion skips it and returns; the
/// queue's other calls answer meanwhile. It blocked inside the queue's
/// lock, and `nrta_get_sequence` on another thread with it.
#[test]
fn a_full_eventfd_never_blocks_a_completion() {
    if neffld_testkit::ran_alone(module_path!(), "a_full_eventfd_never_blocks_a_completion") {
        return;
    }
    init();
    let t = tensor();
    let efd = eventfd(0, 0);
    let most: u64 = 0xffff_ffff_ffff_fffe;
    // SAFETY: 8 readable bytes to a descriptor this test owns.
    assert_eq!(
        unsafe { libc::write(efd, (&most as *const u64).cast(), 8) },
        8
    );
    assert_eq!(register_xu(efd), NRT_STATUS::NRT_SUCCESS);
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let seq = write_once(t);
        let mut last = 0u64;
        // SAFETY: `last` is writable.
        let s = unsafe { nrta_get_sequence(0, OP, 0, &mut last) };
        done.send((seq, s, last)).unwrap();
    });
    // A generous bound: the calls take microseconds once they return at all.
    let (seq, s, last) = finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the write and nrta_get_sequence returned");
    assert_eq!((s, last), (NRT_STATUS::NRT_SUCCESS, seq));
    let mut counter = 0u64;
    // SAFETY: 8 writable bytes from a descriptor this test owns.
    assert_eq!(
        unsafe { libc::read(efd, (&mut counter as *mut u64).cast(), 8) },
        8
    );
    assert_eq!(counter, most, "the full counter was left as it was");
    assert_eq!(register_xu(-1), NRT_STATUS::NRT_SUCCESS);
    close(efd);
    nrt_close();
}
