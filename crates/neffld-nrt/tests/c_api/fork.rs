//! A process forked from one that initialised the runtime is in the
//! runtime's CHILD state (stage.md §2.1): its calls log "Incompatible
//! runtime state: CHILD" and return `NRT_FAILURE`. The parent's runtime is
//! untouched. A child's `nrt_unload` of the parent's model returned 0, and
//! a child's `nrt_load` while a parent thread was loading hung for good.

use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use neffld_nrt::*;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../../testdata/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Loads `bytes`, then unloads the model: its two statuses.
fn load_unload(bytes: &[u8]) -> (NRT_STATUS, NRT_STATUS) {
    let mut m: *mut nrt_model_t = ptr::null_mut();
    // SAFETY: `bytes` is readable for its length; `m` is writable.
    let loaded = unsafe { nrt_load(bytes.as_ptr().cast(), bytes.len(), -1, -1, &mut m) };
    if loaded != NRT_STATUS::NRT_SUCCESS {
        return (loaded, NRT_STATUS::NRT_SUCCESS);
    }
    // SAFETY: `m` is the model just loaded.
    (loaded, unsafe { nrt_unload(m) })
}

#[test]
fn a_forked_child_cannot_use_its_parents_runtime() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "a_forked_child_cannot_use_its_parents_runtime",
    ) {
        return;
    }
    let bytes = Arc::new(fixture("matmul_small.neff"));
    // SAFETY: NULL version strings are allowed.
    assert_eq!(
        unsafe { nrt_init(1, ptr::null(), ptr::null()) },
        NRT_STATUS::NRT_SUCCESS
    );
    let mut parents: *mut nrt_model_t = ptr::null_mut();
    // SAFETY: as in `load_unload`.
    let s = unsafe { nrt_load(bytes.as_ptr().cast(), bytes.len(), -1, -1, &mut parents) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    // A parent thread keeps loading while the children fork.
    let stop = Arc::new(AtomicBool::new(false));
    let loader = {
        let (bytes, stop) = (bytes.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = load_unload(&bytes);
            }
        })
    };
    for round in 0..20 {
        // SAFETY: the child only calls the library and `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: an alarm ends a child that hangs (SIGALRM kills it).
            unsafe { libc::alarm(10) };
            let (loaded, _) = load_unload(&bytes);
            // SAFETY: `parents` is the parent's model handle, copied.
            let unloaded = unsafe { nrt_unload(parents) };
            let code = i32::from(loaded == NRT_STATUS::NRT_FAILURE)
                + 2 * i32::from(unloaded == NRT_STATUS::NRT_FAILURE);
            // SAFETY: ends the child without running the parent's exit
            // handlers or destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: `pid` is this process's child; `status` is writable.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 3,
            "round {round}: child status {status:#x} (exit 3: both calls NRT_FAILURE; \
             killed by SIGALRM: it hung)"
        );
    }
    stop.store(true, Ordering::Relaxed);
    loader.join().unwrap();
    // The parent's model and runtime are untouched.
    // SAFETY: `parents` is still loaded in this process.
    assert_eq!(unsafe { nrt_unload(parents) }, NRT_STATUS::NRT_SUCCESS);
    nrt_close();
}
