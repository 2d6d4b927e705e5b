//! The profiling domain (`nrt_profile.h`).
//!
//! `nrt_profile_start` / `nrt_profile_stop` are real: the stop writes, to
//! the file it is given, an NTFF version 6 capture of the model as it is
//! staged on the simulated device — per core its subgraph, every
//! engine's instruction image with its device address, and the core's
//! memory rows — which `neffld::capture::read` reads back. Nothing executes,
//! so the capture holds no timing.
//!
//! The option objects of continuous profiling and of `nrt_inspect_*` are
//! real (they hold what is set on them); starting continuous profiling or an
//! inspect session is refused with `NRT_FAILURE` and one log line, as there
//! are no executions to profile.

#![allow(unused_variables)]

use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, CStr};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use neffld::api::{Model, Runtime};
use neffld::capture::{self, Capture};
use neffld::report::StagedView;
use tracing::{error, info, warn};

use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{free_names, guarded, guarded_value, hand_out_names, non_null, NrtResult};
use crate::handles::{Handle, Kind};
use crate::model::{self, nrt_model_t};
use crate::{state, status, unsupported};

/// The model being profiled and the file named when it was started.
static ACTIVE: Mutex<Option<(Model, String)>> = Mutex::new(None);

/// The activity types of an inspect configuration, in the order listed.
const ACTIVITY_TYPES: [&str; 4] = [
    "system_profile",
    "device_profile",
    "host_memory",
    "cpu_util",
];

/// Output directory when none is set.
const DEFAULT_OUTPUT_DIR: &str = "./output";

/// The object behind `nrt_profile_continuous_options_t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ContinuousOptions {
    output_dir: String,
}

/// The object behind `nrt_inspect_config_t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InspectConfig {
    session_id: c_int,
    output_dir: String,
    sys_trace_max_events_per_nc: Option<u64>,
    /// Executions of each model that model-mode device profiling skips
    /// (2.35); nothing executes here, so none is.
    device_profile_num_warmup: u32,
    disabled_cores: BTreeSet<u32>,
    disabled_event_types: BTreeSet<String>,
    enable_inspect: bool,
    enable_inspect_on_fail: bool,
    activities: BTreeSet<&'static str>,
}

impl Default for InspectConfig {
    fn default() -> Self {
        InspectConfig {
            session_id: 1,
            output_dir: DEFAULT_OUTPUT_DIR.to_string(),
            sys_trace_max_events_per_nc: None,
            device_profile_num_warmup: 0,
            disabled_cores: BTreeSet::new(),
            disabled_event_types: BTreeSet::new(),
            enable_inspect: false,
            enable_inspect_on_fail: false,
            activities: ACTIVITY_TYPES.into_iter().collect(),
        }
    }
}

/// Continuous-profiling options. Opaque to C.
pub struct nrt_profile_continuous_options {
    _private: [u8; 0],
}

/// The name C callers use for [`nrt_profile_continuous_options`].
pub type nrt_profile_continuous_options_t = nrt_profile_continuous_options;

impl Handle for nrt_profile_continuous_options {
    type Rust = ContinuousOptions;
    const KIND: Kind = Kind::ProfileOptions;
    const NAME: &'static str = "continuous profiling options object";
}

/// Inspect-session options. Opaque to C.
pub struct nrt_inspect_config {
    _private: [u8; 0],
}

/// The name C callers use for [`nrt_inspect_config`].
pub type nrt_inspect_config_t = nrt_inspect_config;

impl Handle for nrt_inspect_config {
    type Rust = InspectConfig;
    const KIND: Kind = Kind::InspectConfig;
    const NAME: &'static str = "inspect configuration";
}

/// A C string argument; NULL gives `NRT_INVALID`.
///
/// # Safety
/// `s` must be NULL or NUL-terminated.
unsafe fn text(api: &str, what: &str, s: *const c_char) -> Result<String, NRT_STATUS> {
    non_null(api, what, s)?;
    // SAFETY: non-NULL and NUL-terminated per this function's contract.
    Ok(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

/// The capture of a loaded model as staged: the library's staged view
/// (every address in the runtime's form), with the fields a real capture of
/// a live instance carries filled in.
fn capture_of(api: &str, rt: &Runtime, model: &Model) -> Result<Capture<'static>, NRT_STATUS> {
    let view = StagedView::of(rt, model).map_err(|e| status::load_error(api, &e))?;
    Ok(Capture {
        instance_type: Some(view.arch.instance().to_string()),
        capture_time: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs()),
        ..view.to_capture().into_owned()
    })
}

/// `nrt_profile_start`.
///
/// # Safety
/// `filename` must be NULL or NUL-terminated.
unsafe fn start(model: *const nrt_model_t, filename: *const c_char) -> NrtResult {
    const API: &str = "nrt_profile_start";
    let rt = state::runtime()?;
    let m = model::lookup(API, &rt, model)?;
    // SAFETY: forwarded from this function's contract.
    let file = unsafe { text(API, "filename", filename) }?;
    let mut active = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, f)) = active.as_ref() {
        error!("{API}: profiling for {f:?} is already started (call nrt_profile_stop first)");
        return Err(NRT_STATUS::NRT_FAILURE);
    }
    info!("{API}: profiling {} for {file:?}", m.name);
    *active = Some((m, file));
    Ok(())
}

/// `nrt_profile_stop`: writes the capture to `filename`, the file
/// `nrt_profile.h` says the stop saves the profile to. The runtime's
/// developer guide asks for the start's path here too; another one is
/// written all the same, with a warning naming both. Profiling ends whether
/// or not the file could be written.
///
/// # Safety
/// `filename` must be NULL or NUL-terminated.
unsafe fn stop(filename: *const c_char) -> NrtResult {
    const API: &str = "nrt_profile_stop";
    let rt = state::runtime()?;
    // SAFETY: forwarded from this function's contract.
    let file = unsafe { text(API, "filename", filename) }?;
    let Some((m, started)) = ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        error!("{API}: no profile is started (call nrt_profile_start first)");
        return Err(NRT_STATUS::NRT_INVALID);
    };
    if started != file {
        warn!("{API}: profile was started for {started:?}; writing it to {file:?}, as asked");
    }
    if m.runtime != rt.generation() {
        error!("{API}: the profiled model belonged to a runtime that has closed since");
        return Err(NRT_STATUS::NRT_INVALID_HANDLE);
    }
    let c = capture_of(API, &rt, &m)?;
    let bytes = capture::writer::write(&c).map_err(|e| {
        error!("{API}: {e}");
        NRT_STATUS::NRT_FAILURE
    })?;
    std::fs::write(&file, &bytes).map_err(|e| {
        error!("{API}: writing {file:?}: {e}");
        NRT_STATUS::NRT_FAILURE
    })?;
    info!("{API}: wrote {} bytes of capture to {file:?}", bytes.len());
    Ok(())
}

// ---- C entry points (nrt_profile.h) ----

/// Starts profiling `model`; `filename` is the file the capture is for
/// (`nrt_profile_stop` writes to the name it is given). One profile at a
/// time (`NRT_FAILURE` for a second).
///
/// # Safety
/// `filename` must be NULL or NUL-terminated; `model` may be any pointer.
#[no_mangle]
pub unsafe extern "C" fn nrt_profile_start(
    model: *mut nrt_model_t,
    filename: *const c_char,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_profile_start", || unsafe { start(model, filename) })
}

/// Writes the capture of the profiled model (NTFF v6) to `filename`
/// (replacing a file of that name) and ends profiling. `NRT_INVALID` when
/// no profile was started; `NRT_FAILURE` when the file cannot be written
/// (profiling has ended all the same). A name other than the start's is
/// written too, with a warning.
///
/// # Safety
/// `filename` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nrt_profile_stop(filename: *const c_char) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_profile_stop", || unsafe { stop(filename) })
}

/// Creates continuous-profiling options (output directory `./output`).
///
/// # Safety
/// `options` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_profile_continuous_options_allocate(
    options: *mut *mut nrt_profile_continuous_options_t,
) -> NRT_STATUS {
    guarded("nrt_profile_continuous_options_allocate", || {
        non_null(
            "nrt_profile_continuous_options_allocate",
            "options",
            options,
        )?;
        let ptr = nrt_profile_continuous_options::hand_out(ContinuousOptions {
            output_dir: DEFAULT_OUTPUT_DIR.to_string(),
        });
        // SAFETY: non-NULL (checked) and writable per this function's contract.
        unsafe { *options = ptr };
        Ok(())
    })
}

/// Releases continuous-profiling options; a bad handle gives `NRT_INVALID`.
#[no_mangle]
pub extern "C" fn nrt_profile_continuous_options_free(
    options: *mut nrt_profile_continuous_options_t,
) -> NRT_STATUS {
    guarded("nrt_profile_continuous_options_free", || {
        if nrt_profile_continuous_options::take(options).is_none() {
            error!("nrt_profile_continuous_options_free: {options:p} is not a live options object");
            return Err(NRT_STATUS::NRT_INVALID);
        }
        Ok(())
    })
}

/// Sets the output directory of continuous profiling.
///
/// # Safety
/// `output_dir` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nrt_profile_continuous_options_set_output_dir(
    options: *mut nrt_profile_continuous_options_t,
    output_dir: *const c_char,
) -> NRT_STATUS {
    const API: &str = "nrt_profile_continuous_options_set_output_dir";
    guarded(API, || {
        // SAFETY: forwarded from this function's contract.
        let dir = unsafe { text(API, "output_dir", output_dir) }?;
        nrt_profile_continuous_options::with_arg(API, "options", options, |o| o.output_dir = dir)
    })
}

/// Refused (`NRT_FAILURE`): continuous profiling profiles executions.
#[no_mangle]
pub extern "C" fn nrt_profile_continuous_start(
    options: *mut nrt_profile_continuous_options_t,
) -> NRT_STATUS {
    unsupported::call("nrt_profile_continuous_start")
}

/// Refused (`NRT_FAILURE`): continuous profiling profiles executions.
#[no_mangle]
pub extern "C" fn nrt_profile_continuous_save(
    vnc: u32,
    options: *mut nrt_profile_continuous_options_t,
) -> NRT_STATUS {
    unsupported::call("nrt_profile_continuous_save")
}

/// Refused (`NRT_FAILURE`): continuous profiling is never started.
#[no_mangle]
pub extern "C" fn nrt_profile_continuous_stop() -> NRT_STATUS {
    unsupported::call("nrt_profile_continuous_stop")
}

/// Refused (`NRT_FAILURE`): an inspect session profiles executions.
#[no_mangle]
pub extern "C" fn nrt_inspect_begin() -> NRT_STATUS {
    unsupported::call("nrt_inspect_begin")
}

/// Refused (`NRT_FAILURE`): an inspect session is never started.
#[no_mangle]
pub extern "C" fn nrt_inspect_stop() -> NRT_STATUS {
    unsupported::call("nrt_inspect_stop")
}

/// Creates an inspect configuration with the defaults (session 1,
/// `./output`, every activity, every core and event type, inspect off).
///
/// # Safety
/// `options` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_inspect_config_allocate(
    options: *mut *mut nrt_inspect_config_t,
) -> NRT_STATUS {
    guarded("nrt_inspect_config_allocate", || {
        non_null("nrt_inspect_config_allocate", "options", options)?;
        let ptr = nrt_inspect_config::hand_out(InspectConfig::default());
        // SAFETY: non-NULL (checked) and writable per this function's contract.
        unsafe { *options = ptr };
        Ok(())
    })
}

/// Resets an inspect configuration to the defaults.
#[no_mangle]
pub extern "C" fn nrt_inspect_config_set_defaults(
    options: *mut nrt_inspect_config_t,
) -> NRT_STATUS {
    guarded("nrt_inspect_config_set_defaults", || {
        nrt_inspect_config::with_arg("nrt_inspect_config_set_defaults", "options", options, |c| {
            *c = InspectConfig::default()
        })
    })
}

/// Releases an inspect configuration; a bad handle gives `NRT_INVALID`.
#[no_mangle]
pub extern "C" fn nrt_inspect_config_free(options: *mut nrt_inspect_config_t) -> NRT_STATUS {
    guarded("nrt_inspect_config_free", || {
        if nrt_inspect_config::take(options).is_none() {
            error!("nrt_inspect_config_free: {options:p} is not a live inspect configuration");
            return Err(NRT_STATUS::NRT_INVALID);
        }
        Ok(())
    })
}

/// Sets the session id.
#[no_mangle]
pub extern "C" fn nrt_inspect_config_set_session_id(
    options: *mut nrt_inspect_config_t,
    session_id: c_int,
) -> NRT_STATUS {
    guarded("nrt_inspect_config_set_session_id", || {
        nrt_inspect_config::with_arg(
            "nrt_inspect_config_set_session_id",
            "options",
            options,
            |c| c.session_id = session_id,
        )
    })
}

/// Sets the output directory; NULL or empty gives `NRT_INVALID`.
///
/// # Safety
/// `output_dir` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nrt_inspect_config_set_output_dir(
    options: *mut nrt_inspect_config_t,
    output_dir: *const c_char,
) -> NRT_STATUS {
    const API: &str = "nrt_inspect_config_set_output_dir";
    guarded(API, || {
        // SAFETY: forwarded from this function's contract.
        let dir = unsafe { text(API, "output_dir", output_dir) }?;
        if dir.is_empty() {
            error!("{API}: the output directory is empty");
            return Err(NRT_STATUS::NRT_INVALID);
        }
        nrt_inspect_config::with_arg(API, "options", options, |c| c.output_dir = dir)
    })
}

/// Sets how many executions of each model model-mode device profiling
/// skips before it profiles one (libnrt 2.35; under an earlier line
/// `NRT_FAILURE`, the call not being in it). Inferred: the signature (the
/// release notes give the name and purpose; every other setter of these
/// options takes the options and one value), and the value's type.
#[no_mangle]
pub extern "C" fn nrt_inspect_config_set_device_profile_num_warmup(
    options: *mut nrt_inspect_config_t,
    num_warmup: u32,
) -> NRT_STATUS {
    const API: &str = "nrt_inspect_config_set_device_profile_num_warmup";
    guarded(API, || {
        crate::state::line_has(API)?;
        nrt_inspect_config::with_arg(API, "options", options, |c| {
            c.device_profile_num_warmup = num_warmup
        })
    })
}

/// Sets the system-trace event limit per core.
#[no_mangle]
pub extern "C" fn nrt_inspect_config_set_sys_trace_max_events_per_nc(
    options: *mut nrt_inspect_config_t,
    sys_trace_max_events_per_nc: u64,
) -> NRT_STATUS {
    const API: &str = "nrt_inspect_config_set_sys_trace_max_events_per_nc";
    guarded(API, || {
        nrt_inspect_config::with_arg(API, "options", options, |c| {
            c.sys_trace_max_events_per_nc = Some(sys_trace_max_events_per_nc)
        })
    })
}

/// Enables or disables system-trace capture on a core.
#[no_mangle]
pub extern "C" fn nrt_inspect_config_set_capture_enabled_for_nc(
    options: *mut nrt_inspect_config_t,
    nc_idx: u32,
    enabled: bool,
) -> NRT_STATUS {
    const API: &str = "nrt_inspect_config_set_capture_enabled_for_nc";
    guarded(API, || {
        nrt_inspect_config::with_arg(API, "options", options, |c| {
            if enabled {
                c.disabled_cores.remove(&nc_idx);
            } else {
                c.disabled_cores.insert(nc_idx);
            }
        })
    })
}

/// Enables or disables one system-trace event type; a type
/// `nrt_sys_trace_get_event_types` does not list gives `NRT_INVALID`.
///
/// # Safety
/// `event_type` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nrt_inspect_config_set_capture_enabled_for_event_type_string(
    options: *mut nrt_inspect_config_t,
    event_type: *const c_char,
    enabled: bool,
) -> NRT_STATUS {
    const API: &str = "nrt_inspect_config_set_capture_enabled_for_event_type_string";
    guarded(API, || {
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { text(API, "event_type", event_type) }?;
        if !crate::trace::EVENT_TYPES.contains(&name.as_str()) {
            error!("{API}: unknown event type {name:?}");
            return Err(NRT_STATUS::NRT_INVALID);
        }
        nrt_inspect_config::with_arg(API, "options", options, |c| {
            if enabled {
                c.disabled_event_types.remove(&name);
            } else {
                c.disabled_event_types.insert(name);
            }
        })
    })
}

/// Turns inspect profiling of every execution on or off.
#[no_mangle]
pub extern "C" fn nrt_inspect_config_set_enable_inspect(
    options: *mut nrt_inspect_config_t,
    enable_inspect: bool,
) -> NRT_STATUS {
    guarded("nrt_inspect_config_set_enable_inspect", || {
        nrt_inspect_config::with_arg(
            "nrt_inspect_config_set_enable_inspect",
            "options",
            options,
            |c| c.enable_inspect = enable_inspect,
        )
    })
}

/// Turns profile dumps on execution failure on or off.
#[no_mangle]
pub extern "C" fn nrt_inspect_config_set_enable_inspect_on_fail(
    options: *mut nrt_inspect_config_t,
    enable_inspect_on_fail: bool,
) -> NRT_STATUS {
    const API: &str = "nrt_inspect_config_set_enable_inspect_on_fail";
    guarded(API, || {
        nrt_inspect_config::with_arg(API, "options", options, |c| {
            c.enable_inspect_on_fail = enable_inspect_on_fail
        })
    })
}

/// Refused (`NRT_FAILURE`) after checking `options` (NULL or a live
/// configuration): an inspect session profiles executions.
#[no_mangle]
pub extern "C" fn nrt_inspect_begin_with_options(options: *mut nrt_inspect_config_t) -> NRT_STATUS {
    const API: &str = "nrt_inspect_begin_with_options";
    guarded(API, || {
        if !options.is_null() {
            nrt_inspect_config::with_arg(API, "options", options, |_| ())?;
        }
        Err(unsupported::call(API))
    })
}

/// Lists every activity type; free with `nrt_inspect_config_free_activity_types`.
///
/// # Safety
/// `activity_types` and `count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_inspect_config_get_all_activity_types(
    activity_types: *mut *mut *const c_char,
    count: *mut usize,
) -> NRT_STATUS {
    const API: &str = "nrt_inspect_config_get_all_activity_types";
    // SAFETY: forwarded from this function's contract.
    guarded(API, || unsafe {
        hand_out_names(API, &ACTIVITY_TYPES, activity_types, count)
    })
}

/// Lists the activity types a configuration enables.
///
/// # Safety
/// `activity_types` and `count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_inspect_config_get_enabled_activity_types(
    options: *mut nrt_inspect_config_t,
    activity_types: *mut *mut *const c_char,
    count: *mut usize,
) -> NRT_STATUS {
    const API: &str = "nrt_inspect_config_get_enabled_activity_types";
    guarded(API, || {
        let enabled =
            nrt_inspect_config::with_arg(API, "options", options, |c| c.activities.clone())?;
        let names: Vec<&str> = ACTIVITY_TYPES
            .into_iter()
            .filter(|a| enabled.contains(a))
            .collect();
        // SAFETY: forwarded from this function's contract.
        unsafe { hand_out_names(API, &names, activity_types, count) }
    })
}

/// Frees an array of activity types (NULL is ignored).
///
/// # Safety
/// `activity_types` must be NULL or an array from the two getters above
/// with `count` strings.
#[no_mangle]
pub unsafe extern "C" fn nrt_inspect_config_free_activity_types(
    activity_types: *mut *const c_char,
    count: usize,
) {
    // SAFETY: forwarded from this function's contract.
    guarded_value("nrt_inspect_config_free_activity_types", (), || unsafe {
        free_names(activity_types, count)
    })
}

/// Enables or disables an activity type by name (`"all"` for every one); an
/// unknown name gives `NRT_INVALID`.
///
/// # Safety
/// `activity_type` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nrt_inspect_config_set_activity(
    options: *mut nrt_inspect_config_t,
    activity_type: *const c_char,
    enabled: bool,
) -> NRT_STATUS {
    const API: &str = "nrt_inspect_config_set_activity";
    guarded(API, || {
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { text(API, "activity_type", activity_type) }?;
        let chosen: Vec<&'static str> = if name == "all" {
            ACTIVITY_TYPES.to_vec()
        } else {
            match ACTIVITY_TYPES.iter().find(|a| **a == name) {
                Some(a) => vec![*a],
                None => {
                    error!("{API}: unknown activity type {name:?} (known: {ACTIVITY_TYPES:?}, \"all\")");
                    return Err(NRT_STATUS::NRT_INVALID);
                }
            }
        };
        nrt_inspect_config::with_arg(API, "options", options, |c| {
            for a in chosen {
                if enabled {
                    c.activities.insert(a);
                } else {
                    c.activities.remove(a);
                }
            }
        })
    })
}
