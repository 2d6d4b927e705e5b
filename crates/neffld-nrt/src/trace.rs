//! The system-trace domain (`nrt_sys_trace.h`): capture configuration,
//! one capture session, and fetching what it recorded as JSON.
//!
//! The events are the ones neffld performs: a model load (`model_load`) and
//! a model unload (`model_unload`, also for each model `nrt_close` unloads),
//! each with its logical core, the model's id and name, and a wall-clock
//! timestamp. A session keeps at most `max_events_per_nc` events per core
//! (the oldest are dropped, as a ring buffer does); fetching consumes what it
//! returns. The JSON document is `{"events": [...]}`, each event an object
//! with `event_type`, `nc_idx`, `timestamp_ns` (Unix epoch), `model_id` and
//! `model_name`.

use std::collections::{BTreeSet, VecDeque};
use std::ffi::{c_char, CStr};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use neffld::api::Model;
use serde_json::json;
use tracing::{error, info};

use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{
    c_free, c_string, free_names, guarded, guarded_value, hand_out_names, non_null,
};
use crate::handles::{Handle, Kind};
use crate::state;

/// The event types this library records, in the order it lists them.
pub(crate) const EVENT_TYPES: [&str; 2] = ["model_load", "model_unload"];

/// Events kept per core when the configuration does not say.
const DEFAULT_MAX_EVENTS_PER_NC: u64 = 1 << 16;

/// What a capture records (the object behind `nrt_sys_trace_config_t`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TraceConfig {
    max_events_per_nc: u64,
    /// Cores whose capture was disabled (every core is enabled by default).
    disabled_cores: BTreeSet<u32>,
    enabled_types: BTreeSet<&'static str>,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            max_events_per_nc: DEFAULT_MAX_EVENTS_PER_NC,
            disabled_cores: BTreeSet::new(),
            enabled_types: EVENT_TYPES.into_iter().collect(),
        }
    }
}

/// What a fetch returns (the object behind `nrt_sys_trace_fetch_options_t`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FetchOptions {
    max_events_per_nc: Option<u64>,
    nc_idx: Option<u64>,
}

/// Capture options. Opaque to C: made by `nrt_sys_trace_config_allocate`,
/// released by `nrt_sys_trace_config_free`.
pub struct nrt_sys_trace_config {
    _private: [u8; 0],
}

/// The name C callers use for [`nrt_sys_trace_config`].
pub type nrt_sys_trace_config_t = nrt_sys_trace_config;

impl Handle for nrt_sys_trace_config {
    type Rust = TraceConfig;
    const KIND: Kind = Kind::TraceConfig;
    const NAME: &'static str = "trace configuration";
}

/// Fetch options. Opaque to C: made by `nrt_sys_trace_fetch_options_allocate`,
/// released by `nrt_sys_trace_fetch_options_free`.
pub struct nrt_sys_trace_fetch_options {
    _private: [u8; 0],
}

/// The name C callers use for [`nrt_sys_trace_fetch_options`].
pub type nrt_sys_trace_fetch_options_t = nrt_sys_trace_fetch_options;

impl Handle for nrt_sys_trace_fetch_options {
    type Rust = FetchOptions;
    const KIND: Kind = Kind::TraceFetchOptions;
    const NAME: &'static str = "fetch options object";
}

/// One recorded event.
#[derive(Clone, Debug)]
struct Event {
    kind: &'static str,
    nc_idx: u32,
    timestamp_ns: u64,
    model_id: u32,
    model_name: String,
}

/// A running capture.
struct Session {
    config: TraceConfig,
    events: VecDeque<Event>,
}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);

fn session() -> MutexGuard<'static, Option<Session>> {
    SESSION.lock().unwrap_or_else(|p| p.into_inner())
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Records an event of `kind` for `model` if a session captures it.
fn record(kind: &'static str, model: &Model) {
    let mut guard = session();
    let Some(s) = guard.as_mut() else { return };
    // The client's numbering: what it passed to `nrt_load` and to
    // `nrt_sys_trace_config_set_capture_enabled_for_nc`.
    let nc_idx = model.vnc;
    if !s.config.enabled_types.contains(kind) || s.config.disabled_cores.contains(&nc_idx) {
        return;
    }
    let on_core = s.events.iter().filter(|e| e.nc_idx == nc_idx).count() as u64;
    if on_core >= s.config.max_events_per_nc {
        if let Some(i) = s.events.iter().position(|e| e.nc_idx == nc_idx) {
            s.events.remove(i);
        }
    }
    if s.config.max_events_per_nc > 0 {
        s.events.push_back(Event {
            kind,
            nc_idx,
            timestamp_ns: now_ns(),
            model_id: model.h_nn.0,
            model_name: model.name.clone(),
        });
    }
}

/// A model was loaded (called by `model::load`).
pub(crate) fn model_loaded(model: &Model) {
    record("model_load", model);
}

/// A model was unloaded (called by `nrt_unload` and `nrt_close`).
pub(crate) fn model_unloaded(model: &Model) {
    record("model_unload", model);
}

/// The events a fetch takes out of the session, as the JSON document.
fn take_events(options: &FetchOptions) -> Result<String, NRT_STATUS> {
    let mut guard = session();
    let Some(s) = guard.as_mut() else {
        error!("nrt_sys_trace_fetch_events: no system trace is running (call nrt_sys_trace_start)");
        return Err(NRT_STATUS::NRT_INVALID);
    };
    let limit = options.max_events_per_nc.unwrap_or(u64::MAX);
    let mut taken_per_core = std::collections::BTreeMap::<u32, u64>::new();
    let mut taken = Vec::new();
    let mut kept = VecDeque::new();
    for e in s.events.drain(..) {
        let wanted = options.nc_idx.is_none_or(|nc| u64::from(e.nc_idx) == nc);
        let n = taken_per_core.entry(e.nc_idx).or_default();
        if wanted && *n < limit {
            *n += 1;
            taken.push(e);
        } else {
            kept.push_back(e);
        }
    }
    s.events = kept;
    let events: Vec<_> = taken
        .iter()
        .map(|e| {
            json!({
                "event_type": e.kind,
                "nc_idx": e.nc_idx,
                "timestamp_ns": e.timestamp_ns,
                "model_id": e.model_id,
                "model_name": e.model_name,
            })
        })
        .collect();
    Ok(json!({ "events": events }).to_string())
}

// ---- C entry points (nrt_sys_trace.h) ----

/// Creates a capture configuration with the defaults (every core, every
/// event type, 65536 events per core); `*options` receives it.
///
/// # Safety
/// `options` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_sys_trace_config_allocate(
    options: *mut *mut nrt_sys_trace_config_t,
) -> NRT_STATUS {
    guarded("nrt_sys_trace_config_allocate", || {
        non_null("nrt_sys_trace_config_allocate", "options", options)?;
        let ptr = nrt_sys_trace_config::hand_out(TraceConfig::default());
        // SAFETY: non-NULL (checked) and writable per this function's contract.
        unsafe { *options = ptr };
        Ok(())
    })
}

/// Resets a configuration to the defaults; a bad handle is logged and ignored.
#[no_mangle]
pub extern "C" fn nrt_sys_trace_config_set_defaults(options: *mut nrt_sys_trace_config_t) {
    guarded_value("nrt_sys_trace_config_set_defaults", (), || {
        let _ = nrt_sys_trace_config::with_arg(
            "nrt_sys_trace_config_set_defaults",
            "options",
            options,
            |c| *c = TraceConfig::default(),
        );
    })
}

/// Releases a configuration; NULL or a bad handle is logged and ignored.
#[no_mangle]
pub extern "C" fn nrt_sys_trace_config_free(options: *mut nrt_sys_trace_config_t) {
    guarded_value("nrt_sys_trace_config_free", (), || {
        if nrt_sys_trace_config::take(options).is_none() {
            error!("nrt_sys_trace_config_free: {options:p} is not a live trace configuration");
        }
    })
}

/// Sets how many events a session keeps per core.
#[no_mangle]
pub extern "C" fn nrt_sys_trace_config_set_max_events_per_nc(
    options: *mut nrt_sys_trace_config_t,
    max_events_per_nc: u64,
) {
    guarded_value("nrt_sys_trace_config_set_max_events_per_nc", (), || {
        let _ = nrt_sys_trace_config::with_arg(
            "nrt_sys_trace_config_set_max_events_per_nc",
            "options",
            options,
            |c| c.max_events_per_nc = max_events_per_nc,
        );
    })
}

/// Enables or disables capture on logical core `nc_idx`.
#[no_mangle]
pub extern "C" fn nrt_sys_trace_config_set_capture_enabled_for_nc(
    options: *mut nrt_sys_trace_config_t,
    nc_idx: u32,
    enabled: bool,
) {
    guarded_value(
        "nrt_sys_trace_config_set_capture_enabled_for_nc",
        (),
        || {
            let _ = nrt_sys_trace_config::with_arg(
                "nrt_sys_trace_config_set_capture_enabled_for_nc",
                "options",
                options,
                |c| {
                    if enabled {
                        c.disabled_cores.remove(&nc_idx);
                    } else {
                        c.disabled_cores.insert(nc_idx);
                    }
                },
            );
        },
    )
}

/// Enables or disables one event type; a type not listed by
/// `nrt_sys_trace_get_event_types` gives `NRT_INVALID`.
///
/// # Safety
/// `event_type` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nrt_sys_trace_config_set_capture_enabled_for_event_type(
    options: *mut nrt_sys_trace_config_t,
    event_type: *const c_char,
    enabled: bool,
) -> NRT_STATUS {
    const API: &str = "nrt_sys_trace_config_set_capture_enabled_for_event_type";
    guarded(API, || {
        non_null(API, "event_type", event_type)?;
        // SAFETY: non-NULL and NUL-terminated per this function's contract.
        let name = unsafe { CStr::from_ptr(event_type) }.to_string_lossy();
        let Some(&known) = EVENT_TYPES.iter().find(|t| **t == name) else {
            error!("{API}: unknown event type {name:?} (known: {EVENT_TYPES:?})");
            return Err(NRT_STATUS::NRT_INVALID);
        };
        nrt_sys_trace_config::with_arg(API, "options", options, |c| {
            if enabled {
                c.enabled_types.insert(known);
            } else {
                c.enabled_types.remove(known);
            }
        })
    })
}

/// Lists every event type; the caller frees the array and each string with
/// `free` or with `nrt_sys_trace_free_event_types`.
///
/// # Safety
/// `event_types` and `count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_sys_trace_get_event_types(
    event_types: *mut *mut *const c_char,
    count: *mut usize,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_sys_trace_get_event_types", || unsafe {
        hand_out_names(
            "nrt_sys_trace_get_event_types",
            &EVENT_TYPES,
            event_types,
            count,
        )
    })
}

/// Frees an array from `nrt_sys_trace_get_event_types` or
/// `nrt_sys_trace_config_get_enabled_event_types`.
///
/// # Safety
/// `event_types` must be NULL or such an array of `count` strings.
#[no_mangle]
pub unsafe extern "C" fn nrt_sys_trace_free_event_types(
    event_types: *mut *const c_char,
    count: usize,
) {
    // SAFETY: forwarded from this function's contract.
    guarded_value("nrt_sys_trace_free_event_types", (), || unsafe {
        free_names(event_types, count)
    })
}

/// Lists the event types a configuration enables (freed as for
/// `nrt_sys_trace_get_event_types`).
///
/// # Safety
/// `event_types` and `count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_sys_trace_config_get_enabled_event_types(
    options: *mut nrt_sys_trace_config_t,
    event_types: *mut *mut *const c_char,
    count: *mut usize,
) -> NRT_STATUS {
    const API: &str = "nrt_sys_trace_config_get_enabled_event_types";
    guarded(API, || {
        let enabled =
            nrt_sys_trace_config::with_arg(API, "options", options, |c| c.enabled_types.clone())?;
        let names: Vec<&str> = EVENT_TYPES
            .into_iter()
            .filter(|t| enabled.contains(t))
            .collect();
        // SAFETY: forwarded from this function's contract.
        unsafe { hand_out_names(API, &names, event_types, count) }
    })
}

/// Starts a capture with `options` (NULL: the defaults). Needs an
/// initialised runtime; a second start while one runs gives `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_sys_trace_start(options: *mut nrt_sys_trace_config_t) -> NRT_STATUS {
    const API: &str = "nrt_sys_trace_start";
    guarded(API, || {
        state::runtime()?;
        let config = if options.is_null() {
            TraceConfig::default()
        } else {
            nrt_sys_trace_config::with_arg(API, "options", options, |c| c.clone())?
        };
        let mut guard = session();
        if guard.is_some() {
            error!("{API}: a system trace is already running (call nrt_sys_trace_stop first)");
            return Err(NRT_STATUS::NRT_FAILURE);
        }
        info!("{API}: capturing {:?}", config.enabled_types);
        *guard = Some(Session {
            config,
            events: VecDeque::new(),
        });
        Ok(())
    })
}

/// Ends the capture and discards what was not fetched; `NRT_INVALID` when
/// none is running.
#[no_mangle]
pub extern "C" fn nrt_sys_trace_stop() -> NRT_STATUS {
    guarded("nrt_sys_trace_stop", || {
        if session().take().is_none() {
            error!("nrt_sys_trace_stop: no system trace is running");
            return Err(NRT_STATUS::NRT_INVALID);
        }
        Ok(())
    })
}

/// Creates fetch options with the defaults (every core, every event).
///
/// # Safety
/// `options` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_sys_trace_fetch_options_allocate(
    options: *mut *mut nrt_sys_trace_fetch_options_t,
) -> NRT_STATUS {
    guarded("nrt_sys_trace_fetch_options_allocate", || {
        non_null("nrt_sys_trace_fetch_options_allocate", "options", options)?;
        let ptr = nrt_sys_trace_fetch_options::hand_out(FetchOptions::default());
        // SAFETY: non-NULL (checked) and writable per this function's contract.
        unsafe { *options = ptr };
        Ok(())
    })
}

/// Resets fetch options to the defaults; a bad handle is logged and ignored.
#[no_mangle]
pub extern "C" fn nrt_sys_trace_fetch_options_set_defaults(
    options: *mut nrt_sys_trace_fetch_options_t,
) {
    guarded_value("nrt_sys_trace_fetch_options_set_defaults", (), || {
        let _ = nrt_sys_trace_fetch_options::with_arg(
            "nrt_sys_trace_fetch_options_set_defaults",
            "options",
            options,
            |o| *o = FetchOptions::default(),
        );
    })
}

/// Releases fetch options; NULL or a bad handle is logged and ignored.
#[no_mangle]
pub extern "C" fn nrt_sys_trace_fetch_options_free(options: *mut nrt_sys_trace_fetch_options_t) {
    guarded_value("nrt_sys_trace_fetch_options_free", (), || {
        if nrt_sys_trace_fetch_options::take(options).is_none() {
            error!(
                "nrt_sys_trace_fetch_options_free: {options:p} is not a live fetch options object"
            );
        }
    })
}

/// Limits a fetch to `max_events_per_nc` events per core.
#[no_mangle]
pub extern "C" fn nrt_sys_trace_fetch_options_set_max_events_per_nc(
    options: *mut nrt_sys_trace_fetch_options_t,
    max_events_per_nc: u64,
) {
    guarded_value(
        "nrt_sys_trace_fetch_options_set_max_events_per_nc",
        (),
        || {
            let _ = nrt_sys_trace_fetch_options::with_arg(
                "nrt_sys_trace_fetch_options_set_max_events_per_nc",
                "options",
                options,
                |o| o.max_events_per_nc = Some(max_events_per_nc),
            );
        },
    )
}

/// Limits a fetch to logical core `nc_idx`.
#[no_mangle]
pub extern "C" fn nrt_sys_trace_fetch_options_set_nc_idx(
    options: *mut nrt_sys_trace_fetch_options_t,
    nc_idx: u64,
) {
    guarded_value("nrt_sys_trace_fetch_options_set_nc_idx", (), || {
        let _ = nrt_sys_trace_fetch_options::with_arg(
            "nrt_sys_trace_fetch_options_set_nc_idx",
            "options",
            options,
            |o| o.nc_idx = Some(nc_idx),
        );
    })
}

/// Takes the captured events the options select (NULL: all) out of the
/// session and returns them as a NUL-terminated JSON document in `*buffer`
/// (release it with `nrt_sys_trace_buffer_free`), its length in
/// `*written_size`. No running session gives `NRT_INVALID`.
///
/// # Safety
/// `buffer` and `written_size` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_sys_trace_fetch_events(
    buffer: *mut *mut c_char,
    written_size: *mut usize,
    options: *const nrt_sys_trace_fetch_options_t,
) -> NRT_STATUS {
    const API: &str = "nrt_sys_trace_fetch_events";
    guarded(API, || {
        non_null(API, "buffer", buffer)?;
        non_null(API, "written_size", written_size)?;
        let opts = if options.is_null() {
            FetchOptions::default()
        } else {
            nrt_sys_trace_fetch_options::with_arg(API, "options", options, |o| o.clone())?
        };
        let text = take_events(&opts)?;
        let out = c_string(text.as_bytes());
        if out.is_null() {
            error!(
                "{API}: out of host memory for {} bytes of events",
                text.len()
            );
            return Err(NRT_STATUS::NRT_RESOURCE);
        }
        // SAFETY: both non-NULL (checked) and writable per this function's contract.
        unsafe {
            *buffer = out;
            *written_size = text.len();
        }
        Ok(())
    })
}

/// Frees a buffer from `nrt_sys_trace_fetch_events` (NULL is ignored).
///
/// # Safety
/// `buffer` must be NULL or such a buffer, not freed yet.
#[no_mangle]
pub unsafe extern "C" fn nrt_sys_trace_buffer_free(buffer: *mut c_char) {
    // SAFETY: forwarded from this function's contract.
    guarded_value("nrt_sys_trace_buffer_free", (), || unsafe {
        c_free(buffer)
    })
}
