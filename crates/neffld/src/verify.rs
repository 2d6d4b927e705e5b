//! `verify`: the verdict a load of a NEFF would give, without a device to
//! keep.
//!
//! A verdict that is computed by a second set of checks drifts from the
//! load's (a header whose `vnc_size` the runtime cannot serve passed an
//! earlier `verify` and failed every load). So `verify` has no checks of its
//! own: it opens the container as a load does, resolves the settings as a
//! load does ([`Settings`]), and runs [`Runtime::load_opened`] on a throwaway runtime
//! whose device keeps no bytes ([`DeviceKind::Null`]) — the S0 header and
//! LNC gates, the parse, and the staging with the same memory geometry —
//! then unloads. What a load can reject, `verify` rejects, with the same
//! error and status.

use crate::api::{Ahead, LoadError, Runtime};
use crate::config::{DeviceKind, Loader, RuntimeConfig};
use crate::container;
use crate::settings::Settings;
use crate::Arch;

/// What a NEFF that passed `verify` would load as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyReport {
    /// The architecture the load ran for: the one named by a flag or the
    /// environment, else the NEFF's own target.
    pub arch: Arch,
    /// The logical-core size the load ran with.
    pub lnc: u32,
    /// Subgraphs, one per physical core of the logical core.
    pub subgraphs: usize,
    /// Parse and staging warnings.
    pub warnings: Vec<String>,
}

/// Runs every gate of a load of `bytes` under `settings`: the architecture
/// a flag or the environment named, else the NEFF's own
/// ([`Settings::for_neff`]); the device is replaced by one without storage.
/// What `neffld verify` and Python's `verify` answer: would this NEFF load,
/// and how, without keeping a byte of it on a device.
///
/// ```
/// use neffld::settings::{Asked, Settings};
///
/// let bytes = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.neff"));
/// let settings = Settings::resolve(&Asked::default(), |_| None)?;
/// let report = neffld::verify(bytes, &settings)?;
/// assert_eq!((report.arch, report.subgraphs), (neffld::Arch::Sunda, 1));
///
/// // A NEFF cut short is refused with the status `nrt_load` would return.
/// let err = neffld::verify(&bytes[..100], &settings).unwrap_err();
/// assert_eq!(err.status(), neffld::NrtStatus::Invalid);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify(bytes: &[u8], settings: &Settings) -> Result<VerifyReport, LoadError> {
    let neff = container::open(bytes, &settings.open_options())?;
    let config = settings.for_neff(Some(&neff));
    verify_ahead(bytes, Ahead::Opened(neff), config)
}

/// [`verify`] of `bytes` already opened or parsed, under `config` already
/// resolved for them ([`Settings::for_neff`]), so a caller that also
/// reports on the container or the manifests opens and parses it once.
pub(crate) fn verify_ahead(
    bytes: &[u8],
    ahead: Ahead,
    config: RuntimeConfig,
) -> Result<VerifyReport, LoadError> {
    let config = RuntimeConfig {
        loader: Loader {
            device: DeviceKind::Null,
            // The runtime is this call's own and makes one load: no later load
            // can reuse its parse, so the file is not fingerprinted for one.
            one_load_at_a_time: true,
            ..config.loader
        },
        ..config
    };
    let lnc = config.lnc_size();
    let arch = config.topology.arch;
    let rt = Runtime::new(config)?;
    let model = rt.load_ahead(bytes, ahead, None)?;
    let report = rt.with_model(&model, |m| VerifyReport {
        arch,
        lnc,
        subgraphs: m.cores.len(),
        warnings: m.warnings.clone(),
    })?;
    rt.unload(&model)?;
    Ok(report)
}
