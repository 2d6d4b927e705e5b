//! The process-wide runtime state behind `nrt_init` / `nrt_close`.
//!
//! ```text
//! START ──nrt_init──▶ INIT ──nrt_close──▶ CLOSED ──nrt_init──▶ INIT …
//! ```
//!
//! - START (never initialised): every call that needs the runtime returns
//!   `NRT_UNINITIALIZED` (13) and logs "NRT uninitialized".
//! - CLOSED: those calls return `NRT_CLOSED` (14) and log "NRT already
//!   closed", until the next `nrt_init`.
//! - Re-initialisation after `nrt_close` is allowed and builds a fresh
//!   runtime on a fresh simulated device (the reference runtime also allows
//!   it; it reports START rather than CLOSED in between, this library keeps
//!   CLOSED so the caller learns why a call failed).
//! - `nrt_init` while INIT returns `NRT_FAILURE` and changes nothing.
//! - CHILD: a process forked from one that has called `nrt_init` (a
//!   `pthread_atfork` handler marks it) cannot use the runtime: every call
//!   that needs it logs "Incompatible runtime state: CHILD" and returns
//!   `NRT_FAILURE`, and it never leaves that state (stage.md §2.1). The
//!   parent's runtime is the parent's: its threads do not exist in the
//!   child, and a load there waited for a parse one of them held.
//!
//! Calls that only read configuration (the core counts, the instance info)
//! work in every state, as the public header allows them before `nrt_init`.

use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};

use neffld::api::Runtime;
use neffld::config::RuntimeConfig;
use neffld::settings::{Asked, Settings};
use tracing::{error, info};

use crate::abi::nrt::NrtFrameworkArg;
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::NrtResult;

/// The three states; INIT holds the runtime every call shares.
enum Phase {
    Start,
    Init(Arc<Runtime>),
    Closed,
}

static PHASE: Mutex<Phase> = Mutex::new(Phase::Start);

/// Set in a forked child (CHILD): checked before `PHASE`, whose lock a
/// parent thread may have held at the fork.
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn forked() {
    // An atomic store: all a child may safely do before it execs.
    FORKED.store(true, Ordering::SeqCst);
}

/// Marks every child forked from now on (once per process).
fn watch_forks() {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        // SAFETY: `forked` is a plain function that lives as long as the
        // process; no prepare or parent handler is registered.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(forked)) };
        if rc != 0 {
            error!("pthread_atfork failed ({rc}): a forked child is not told apart");
        }
    });
}

/// CHILD's refusal, when this process is a forked child.
pub(crate) fn child() -> Result<(), NRT_STATUS> {
    if FORKED.load(Ordering::SeqCst) {
        error!("Incompatible runtime state: CHILD");
        return Err(NRT_STATUS::NRT_FAILURE);
    }
    Ok(())
}

fn phase() -> MutexGuard<'static, Phase> {
    PHASE.lock().unwrap_or_else(|p| p.into_inner())
}

/// The initialised runtime, or the status of the state guard.
pub(crate) fn runtime() -> Result<Arc<Runtime>, NRT_STATUS> {
    child()?;
    match &*phase() {
        Phase::Init(rt) => Ok(Arc::clone(rt)),
        Phase::Start => {
            error!("NRT uninitialized");
            Err(NRT_STATUS::NRT_UNINITIALIZED)
        }
        Phase::Closed => {
            error!("NRT already closed");
            Err(NRT_STATUS::NRT_CLOSED)
        }
    }
}

/// Whether `rt` is still the initialised runtime (no close came since it
/// was obtained from [`runtime`]).
pub(crate) fn is_current(rt: &Arc<Runtime>) -> bool {
    matches!(&*phase(), Phase::Init(cur) if Arc::ptr_eq(cur, rt))
}

/// The settings of the process environment ([`Settings`]): a runtime
/// starts before any NEFF, so its architecture is the one `NEFFLD_ARCH` or
/// `NEFFLD_INSTANCE` names, else trn2, and a NEFF of another one meets the
/// arch gate, as under libnrt.
fn from_env() -> Result<RuntimeConfig, neffld::config::ConfigError> {
    Settings::from_env(&Asked::default()).map(|s| s.for_neff(None))
}

/// The initialised runtime's configuration, else the one the environment
/// gives (for the calls allowed before `nrt_init`).
pub(crate) fn config() -> Result<RuntimeConfig, NRT_STATUS> {
    if let Phase::Init(rt) = &*phase() {
        return Ok(rt.config().clone());
    }
    from_env().map_err(|e| {
        error!("{e}");
        crate::status::from_core(e.status())
    })
}

/// Refuses `api`, a C entry point a line of the library's table adds
/// ([`neffld::RuntimeLine::has_call`]), under a configured line before it:
/// `NRT_FAILURE` (the public status set has no "unsupported"), with one
/// line naming the line that added it. The configured line is the
/// initialised runtime's, else the environment's.
pub(crate) fn line_has(api: &'static str) -> NrtResult {
    let line = config()?.line();
    if line.has_call(api) {
        return Ok(());
    }
    crate::log::ensure();
    match neffld::RuntimeLine::adding(api) {
        Some(added) => error!("{api} is not in runtime {line}: libnrt {added} added it"),
        None => error!("{api} is not in runtime {line}"),
    }
    Err(NRT_STATUS::NRT_FAILURE)
}

/// `nrt_init`.
///
/// # Safety
/// `fw_version` and `fal_version` must each be NULL or NUL-terminated.
pub(crate) unsafe fn init(
    framework: NrtFrameworkArg,
    fw_version: *const c_char,
    fal_version: *const c_char,
) -> NrtResult {
    child()?;
    watch_forks();
    let mut phase = phase();
    if let Phase::Init(_) = *phase {
        error!("nrt_init: the runtime is already initialised; call nrt_close first");
        return Err(NRT_STATUS::NRT_FAILURE);
    }
    // SAFETY: forwarded from this function's contract.
    let (fw, fal) = unsafe { (lossy(fw_version), lossy(fal_version)) };
    let config = from_env().map_err(|e| {
        error!("nrt_init: {e}");
        crate::status::from_core(e.status())
    })?;
    let rt = Runtime::new(config).map_err(|e| crate::status::load_error("nrt_init", &e))?;
    crate::memory_log::watch(&rt);
    info!(
        "nrt_init: framework {framework}, framework version {fw:?}, FAL version {fal:?}; {} on {} logical cores ({} visible)",
        rt.config().topology.arch,
        rt.total_vnc_count(),
        rt.visible_vnc_count()
    );
    *phase = Phase::Init(Arc::new(rt));
    Ok(())
}

/// `nrt_close`: unloads every model and moves to CLOSED (the handles are
/// freed by `model::release_all`). A no-op in START and CLOSED.
pub(crate) fn close() {
    let rt = {
        let mut phase = phase();
        match std::mem::replace(&mut *phase, Phase::Closed) {
            Phase::Init(rt) => rt,
            other => {
                *phase = other;
                return;
            }
        }
    };
    rt.close();
    info!("nrt_close: runtime closed");
}

/// A C string for logging (`None` for NULL).
///
/// # Safety
/// `s` must be NULL or NUL-terminated.
pub(crate) unsafe fn lossy(s: *const c_char) -> Option<String> {
    if s.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated per this function's contract.
    Some(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}
