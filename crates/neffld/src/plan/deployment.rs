//! A deployment: what to load, allocate and unload, in order, on which
//! instance and with which settings — from the command line's short forms
//! (`FILE@CORES`, `NAME=SIZE@CORES`, `K=V`) or a deployment file (TOML).
//! Every form is checked here, once; a mistake names what and where.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;
use toml::Spanned;

use crate::config::vars::{self, Reader};
use crate::instance::Instance;
use crate::line::RuntimeLine;

/// A deployment the planner can run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deployment {
    /// `None`: one chip of the first NEFF's own architecture (unless the
    /// environment names an instance).
    pub instance: Option<&'static Instance>,
    /// Logical-core size (`None`: the environment's, else the architecture's).
    pub lnc: Option<u32>,
    /// Where `lnc` was given (the flag, or the file and line), for the
    /// mistake of a size the chip does not take.
    pub lnc_origin: Option<String>,
    /// The runtime line (`None`: the environment's, else the newest).
    pub runtime: Option<RuntimeLine>,
    /// Runtime variables, applied in order over the defaults.
    pub env: Vec<(String, String)>,
    /// Where a deployment file set a variable that nothing after it sets
    /// again (the variable, the file and line), for the mistake of a value
    /// the runtime refuses.
    pub env_origins: Vec<(String, String)>,
    /// Allocate each load's input and output tensors on its logical core
    /// as frameworks do.
    pub io_tensors: bool,
    /// What to do, in order.
    pub steps: Vec<Step>,
    /// What to solve for beside the deployment (`--solve`).
    pub solve: Option<Solve>,
    /// Where a deployment file asked `solve` (the file and line; `None`:
    /// the command line's `--solve`).
    pub solve_origin: Option<String>,
    /// Where each step was written, for the mistakes [`Deployment::validate`]
    /// names: the argument (`LOAD 'a.neff@0-40'`) or the file and line;
    /// parallel to `steps` (a step past its end is named by its index).
    pub origins: Vec<String>,
    /// The loads are the ranks of one collectives world of this many ranks
    /// (`--world N`, a deployment file's `world`): rank r is the r-th load
    /// step, loaded as `nrt_load_collectives(…, r, N)` loads it
    /// ([`super::world`]).
    pub world: Option<u32>,
    /// Instances of the named type the world spans, each with its own
    /// devices (`--hosts K`, `hosts`; `None`: as many as its ranks need);
    /// logical cores are numbered across them, host by host.
    pub hosts: Option<u32>,
    /// Where `world` or `hosts` was given, for their mistakes.
    pub world_origin: Option<String>,
}

/// One step: a single load, tensor, unload or free on one logical core
/// (the short forms expand to one step per listed core).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Load a NEFF on a visible logical core (`None`: the first free one).
    Load {
        /// The NEFF.
        file: PathBuf,
        /// The core (`None`: the first free one).
        vnc: Option<u32>,
    },
    /// Allocate a named device tensor for a logical core.
    Tensor {
        /// The tensor's name, what a later free names.
        name: String,
        /// Bytes.
        size: u64,
        /// The logical core.
        vnc: u32,
    },
    /// Unload the latest load of a NEFF still on a logical core.
    Unload {
        /// The NEFF, as its load named it.
        file: PathBuf,
        /// The logical core.
        vnc: u32,
    },
    /// Free the named tensor of a logical core.
    Free {
        /// The tensor's name.
        name: String,
        /// The logical core.
        vnc: u32,
    },
}

impl Deployment {
    /// Where step `i` was written.
    fn origin(&self, i: usize) -> String {
        self.origins
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("step {}", i + 1))
    }

    /// The checks a deployment passes before anything is planned, each a
    /// mistake in what was written, named where it was written: every
    /// listed core exists among the `visible` logical cores of the
    /// instance (`instance` describes it), every unload names a NEFF an
    /// earlier step loads on that core, every free a tensor an earlier step
    /// allocates there, and the deployment has a step or a question (a
    /// question alone is asked of the empty instance).
    pub fn validate(&self, visible: u32, instance: &str) -> Result<(), DeploymentError> {
        use std::collections::HashMap;
        self.has_work()?;
        self.validate_world()?;
        let beyond = |v: u32| {
            format!(
                "logical core {v} is not on this instance: {instance} has {} (0 to {})",
                crate::text::count(u64::from(visible), "logical core"),
                visible.saturating_sub(1)
            )
        };
        // Each distinct path resolved once (10,000 loads of one file made
        // 10,000 `getcwd` and `readlink` calls).
        let mut files: HashMap<PathBuf, PathBuf> = HashMap::new();
        let mut file_of = |p: &PathBuf| -> PathBuf {
            if let Some(f) = files.get(p) {
                return f.clone();
            }
            let f = same_file(p);
            files.insert(p.clone(), f.clone());
            f
        };
        let mut loaded: HashMap<(PathBuf, u32), u32> = HashMap::new();
        let mut anywhere: Vec<PathBuf> = Vec::new();
        let mut held: HashMap<(&str, u32), u32> = HashMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            let vnc = match step {
                Step::Load { vnc, .. } => *vnc,
                Step::Tensor { vnc, .. } | Step::Unload { vnc, .. } | Step::Free { vnc, .. } => {
                    Some(*vnc)
                }
            };
            if let Some(v) = vnc.filter(|&v| v >= visible) {
                return Err(bad(self.origin(i), beyond(v)));
            }
            match step {
                Step::Load { file, vnc: None } => anywhere.push(file_of(file)),
                Step::Load { file, vnc: Some(v) } => {
                    *loaded.entry((file_of(file), *v)).or_default() += 1
                }
                Step::Unload { file, vnc } => {
                    let file_key = file_of(file);
                    let n = loaded.entry((file_key.clone(), *vnc)).or_default();
                    if *n == 0 {
                        if !anywhere.contains(&file_key) {
                            return Err(bad(
                                self.origin(i),
                                format!(
                                    "nothing loads {} on core {vnc} before this unload",
                                    file.display()
                                ),
                            ));
                        }
                    } else {
                        *n -= 1;
                    }
                }
                Step::Tensor { name, vnc, .. } => *held.entry((name, *vnc)).or_default() += 1,
                Step::Free { name, vnc } => {
                    let n = held.entry((name, *vnc)).or_default();
                    if *n == 0 {
                        return Err(bad(
                            self.origin(i),
                            format!("no tensor {name} is allocated on core {vnc} before this free"),
                        ));
                    }
                    *n -= 1;
                }
            }
        }
        let solve_cores = match &self.solve {
            Some(Solve::Tensor { cores, .. }) => Some(cores),
            Some(Solve::Ranks { cores, .. }) => cores.as_ref(),
            None => None,
        };
        if let Some(cores) = solve_cores {
            let place = self.solve_origin.clone().unwrap_or_else(|| {
                let q = self.solve.as_ref().map(|q| q.to_string());
                format!("--solve '{}'", q.unwrap_or_default())
            });
            if cores.is_empty() {
                return Err(bad(place, "lists no logical core"));
            }
            if let Some(&v) = cores.iter().find(|&&v| v >= visible) {
                return Err(bad(place, beyond(v)));
            }
        }
        Ok(())
    }

    /// A world's own mistakes: a size and hosts within their ceilings, hosts
    /// only with a world, no more load steps than ranks, and no question
    /// of further loads (they would be ranks beyond the world).
    fn validate_world(&self) -> Result<(), DeploymentError> {
        use super::world::{MAX_HOSTS, MAX_WORLD};
        let place = || {
            self.world_origin
                .clone()
                .unwrap_or_else(|| "--world".into())
        };
        let Some(n) = self.world else {
            if self.hosts.is_some() {
                return Err(bad(
                    self.world_origin
                        .clone()
                        .unwrap_or_else(|| "--hosts".into()),
                    "hosts are the instances a world spans: name the world too (--world N)",
                ));
            }
            return Ok(());
        };
        if n == 0 || n > MAX_WORLD {
            return Err(bad(
                place(),
                format!("a world of {n} ranks: a world has 1 to {MAX_WORLD}"),
            ));
        }
        if let Some(k) = self.hosts.filter(|&k| k == 0 || k > MAX_HOSTS) {
            return Err(bad(
                place(),
                format!("{k} hosts: a world spans 1 to {MAX_HOSTS}"),
            ));
        }
        let loads: Vec<usize> = (0..self.steps.len())
            .filter(|&i| matches!(self.steps[i], Step::Load { .. }))
            .collect();
        if let Some(&i) = loads.get(n as usize) {
            return Err(bad(
                self.origin(i),
                format!(
                    "this load would be rank {n} of a world of {n} ranks (0 to {}): every load step of a world is a rank, in order",
                    n - 1
                ),
            ));
        }
        if let Some(Solve::Ranks { .. }) = &self.solve {
            return Err(bad(
                self.solve_origin.clone().unwrap_or_else(|| "--solve".into()),
                "further loads of a world would be ranks beyond it: ask a world's questions with --world and its loads",
            ));
        }
        Ok(())
    }

    /// A step or a question (`--solve`, asked of the empty instance when
    /// there is no step), else the mistake of asking nothing.
    pub fn has_work(&self) -> Result<(), DeploymentError> {
        if self.steps.is_empty() && self.solve.is_none() {
            return Err(bad(
                "the deployment",
                "has no step: name a LOAD, a --tensor, a --solve or a deployment file's [[step]]",
            ));
        }
        Ok(())
    }

    /// The `neffld plan` command line that plans this deployment, as given
    /// (re-runnable from the same folder): the instance, LNC, runtime line
    /// and variables as flags, then the steps in order, runs of one kind on
    /// consecutive cores written as one argument (`FILE@0-63`,
    /// `--tensor=kv=4096@0,2`). `arch` names the chip for a deployment
    /// that names no instance (one chip of it), so the line plans on the
    /// same chip whatever its first NEFF is.
    ///
    /// Every word reads back as written: a flag's value is joined to it
    /// (`--tensor=-t=4096@0`, never read as a flag of its own), and a load
    /// whose path begins with `-` is written `./-…`, the same file, never
    /// an option (`--` would end the options, and a load may come before a
    /// `--tensor`). What a word cannot say is refused where it is written
    /// ([`sayable_name`], [`sayable_load`]). Paths are the OS's bytes.
    pub fn argv(&self, arch: Option<crate::Arch>) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec!["neffld".into(), "plan".into()];
        match (self.instance, arch) {
            (Some(i), _) => out.extend(["--instance".into(), i.name.into()]),
            (None, Some(a))
                if !self
                    .env
                    .iter()
                    .any(|(k, _)| k == "NEFFLD_INSTANCE" || k == "NEFFLD_ARCH") =>
            {
                out.extend([
                    "--env".into(),
                    format!("NEFFLD_ARCH={}", a.instance()).into(),
                ]);
            }
            _ => {}
        }
        if let Some(l) = self.lnc {
            out.extend(["--lnc".into(), l.to_string().into()]);
        }
        if let Some(r) = self.runtime {
            out.extend(["--runtime".into(), r.to_string().into()]);
        }
        if let Some(n) = self.world {
            out.extend(["--world".into(), n.to_string().into()]);
        }
        if let Some(k) = self.hosts {
            out.extend(["--hosts".into(), k.to_string().into()]);
        }
        // A variable set twice (the file's, then advice's change) once,
        // with the value that wins: the last.
        for (i, (k, v)) in self.env.iter().enumerate() {
            if !self.env[i + 1..].iter().any(|(later, _)| later == k) {
                // `KEY=VALUE` begins with a variable's name, never `-`.
                out.extend(["--env".into(), format!("{k}={v}").into()]);
            }
        }
        if !self.io_tensors {
            out.push("--no-io-tensors".into());
        }
        let vnc = |s: &Step| match s {
            Step::Load { vnc, .. } => *vnc,
            Step::Tensor { vnc, .. } | Step::Unload { vnc, .. } | Step::Free { vnc, .. } => {
                Some(*vnc)
            }
        };
        // Steps of one kind, file or tensor (and size) on consecutive
        // places are one word; a load on the next free core is its own.
        let alike = |a: &Step, b: &Step| match (a, b) {
            (
                Step::Load {
                    file: f,
                    vnc: Some(_),
                },
                Step::Load {
                    file: g,
                    vnc: Some(_),
                },
            )
            | (Step::Unload { file: f, .. }, Step::Unload { file: g, .. }) => f == g,
            (
                Step::Tensor {
                    name: n, size: x, ..
                },
                Step::Tensor {
                    name: m, size: y, ..
                },
            ) => n == m && x == y,
            (Step::Free { name: n, .. }, Step::Free { name: m, .. }) => n == m,
            _ => false,
        };
        let mut i = 0;
        while i < self.steps.len() {
            let first = &self.steps[i];
            let n = 1 + self.steps[i + 1..]
                .iter()
                .take_while(|s| alike(first, s))
                .count();
            let cores: Vec<u32> = self.steps[i..i + n].iter().filter_map(vnc).collect();
            let at = |mut w: OsString| {
                if vnc(first).is_some() {
                    w.push(format!("@{}", core_list(&cores)));
                }
                w
            };
            out.push(match first {
                Step::Load { file, .. } => {
                    let mut w = OsString::new();
                    if file.as_os_str().as_bytes().starts_with(b"-") {
                        w.push("./");
                    }
                    w.push(file);
                    at(w)
                }
                Step::Tensor { name, size, .. } => at(format!("--tensor={name}={size}").into()),
                Step::Unload { file, .. } => {
                    let mut w = OsString::from("--unload=");
                    w.push(file);
                    at(w)
                }
                Step::Free { name, .. } => at(format!("--free={name}").into()),
            });
            i += n;
        }
        out
    }
}

/// Why a tensor's name (a deployment file's `tensor` or `free`) cannot be
/// written on the command line as itself, if it cannot: `NAME=SIZE@CORES`
/// ends the name at its first `=`, and the command line trims a name. A
/// plan's advice must be able to name every step it plans.
pub(crate) fn sayable_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("a tensor has a name (this one is empty)".into());
    }
    if name.contains('=') {
        return Err(format!(
            "the tensor name {name:?} holds '=', which ends a name in NAME=SIZE@CORES"
        ));
    }
    if name.trim() != name {
        return Err(format!(
            "the tensor name {name:?} begins or ends with white space, which NAME=SIZE@CORES drops"
        ));
    }
    Ok(())
}

/// Why the load of `file` on the next free core (a deployment file's
/// `load` without `cores`) cannot be written on the command line as
/// itself, if it cannot: a LOAD reads what follows its last `@` as a core
/// list when it has no `.` or `/` (`w@1` is the file `w` on core 1), and
/// a lone `*.toml` is a deployment file.
pub(crate) fn sayable_load(file: &Path) -> Result<(), String> {
    let shown = file.display();
    let bytes = file.as_os_str().as_bytes();
    if bytes.is_empty() {
        return Err("no file named".into());
    }
    if let Some((_, cores)) = split_last_at(file.as_os_str()) {
        if !cores.as_bytes().iter().any(|c| b"./".contains(c)) {
            return Err(format!(
                "a LOAD of {shown} reads as a core list after its last '@' on the command line, so no plan could name it on the next free core: give cores = ..., or rename the file"
            ));
        }
    }
    if bytes.ends_with(b".toml") {
        return Err(format!(
            "a LOAD of {shown} alone reads as a deployment file on the command line: give cores = ..., or rename the file"
        ));
    }
    Ok(())
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Load { file, vnc: Some(v) } => write!(f, "load {} on core {v}", file.display()),
            Step::Load { file, vnc: None } => {
                write!(f, "load {} on the next free core", file.display())
            }
            Step::Tensor { name, size, vnc } => {
                write!(f, "tensor {name} of {size} bytes on core {vnc}")
            }
            Step::Unload { file, vnc } => write!(f, "unload {} from core {vnc}", file.display()),
            Step::Free { name, vnc } => write!(f, "free tensor {name} of core {vnc}"),
        }
    }
}

/// A deployment that cannot be planned as written: what is wrong, and where
/// (the argument, or the file and line).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{place}: {what}")]
pub struct DeploymentError {
    /// Where: the argument, or the file and line.
    pub place: String,
    /// What is wrong there.
    pub what: String,
}

fn bad(place: impl fmt::Display, what: impl Into<String>) -> DeploymentError {
    DeploymentError {
        place: place.to_string(),
        what: what.into(),
    }
}

/// Longest core list one argument may expand to.
const MAX_LISTED: usize = 1 << 16;

/// `3`, `0-31`, `0,2,4`, `0-3,8`: the cores in the order written (a core
/// listed twice gets two steps).
pub fn parse_cores(s: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let num = |t: &str| {
            let t = t.trim();
            let n = t
                .parse::<u32>()
                .map_err(|_| format!("'{t}' is not a logical core number"))?;
            // `nrt_load` takes the core as an `int32_t`.
            if n > i32::MAX as u32 {
                return Err(format!(
                    "logical core {n} is beyond the largest nrt_load takes ({})",
                    i32::MAX
                ));
            }
            Ok(n)
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("the range {part} runs backwards"));
                }
                if (b - a) as usize >= MAX_LISTED - out.len() {
                    return Err(format!("more than {MAX_LISTED} cores listed"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
        if out.len() > MAX_LISTED {
            return Err(format!("more than {MAX_LISTED} cores listed"));
        }
    }
    Ok(out)
}

/// The file a path names, as an unload matches the load it undoes: `a.neff`,
/// `./a.neff`, its absolute path and a symlink to it are one file (resolved
/// when it exists, else the path as written).
pub(crate) fn same_file(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `4096`, `512MiB`, `2GiB`, `1.5GiB` (K, M, G, T with or without `iB`/`B`
/// are binary units, as the runtime prints them) → bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "'{s}' is not a size: it starts with no number (e.g. 4096, 512MiB, 2GiB; a size is never negative)"
        ));
    }
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(format!(
                "'{s}' has an unknown unit (expected B, KiB, MiB, GiB or TiB)"
            ))
        }
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    let whole: u64 = whole
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 4096, 512MiB, 2GiB)"))?;
    let scale = 1u128 << shift;
    let mut bytes = u128::from(whole) * scale;
    if !frac.is_empty() {
        let digits: u32 = frac.len().try_into().unwrap_or(u32::MAX);
        let f: u128 = frac
            .parse()
            .ok()
            .filter(|_| digits <= 18)
            .ok_or_else(|| format!("'{s}' is not a size"))?;
        let den = 10u128.pow(digits);
        if !(f * scale).is_multiple_of(den) {
            return Err(format!("'{s}' is not a whole number of bytes"));
        }
        bytes += f * scale / den;
    }
    u64::try_from(bytes).map_err(|_| format!("'{s}' is too large"))
}

/// `arg` split at its last `@`: the bytes before it and after it, as the
/// OS gave them (a path need not be UTF-8).
fn split_last_at(arg: &OsStr) -> Option<(&OsStr, &OsStr)> {
    let b = arg.as_bytes();
    let i = b.iter().rposition(|&c| c == b'@')?;
    Some((OsStr::from_bytes(&b[..i]), OsStr::from_bytes(&b[i + 1..])))
}

/// `FILE` or `FILE@CORES`: one load step per listed core. The `@` splits
/// only when what follows it is a core list, so a file name may contain one.
/// FILE is any path the OS takes (UTF-8 or not).
pub fn parse_load(arg: impl AsRef<OsStr>) -> Result<Vec<Step>, DeploymentError> {
    let arg = arg.as_ref();
    let place = || format!("LOAD '{}'", arg.display());
    if arg.is_empty() {
        return Err(bad(place(), "no file named"));
    }
    if arg == "-" || arg.as_bytes().starts_with(b"-@") {
        return Err(bad(
            place(),
            "standard input (`-`) cannot be planned: a plan reads each NEFF from a file \
             (name the file, `./-` for one called `-`)",
        ));
    }
    // After the last `@`, what has no `.` or `/` is meant as a core list
    // (`a.neff@x`, `a.neff@`: a mistake in it), what has one is part of
    // the file name (`m@v2.neff`).
    let (file, cores) = match split_last_at(arg) {
        Some((file, cores))
            if !file.is_empty() && !cores.as_bytes().iter().any(|c| b"./".contains(c)) =>
        {
            let cores = cores.to_string_lossy();
            if cores.trim().is_empty() {
                return Err(bad(place(), "no cores after @ (e.g. a.neff@0-3)"));
            }
            let cores = parse_cores(&cores).map_err(|e| bad(place(), e))?;
            (file, Some(cores))
        }
        _ => (arg, None),
    };
    let file = PathBuf::from(file);
    Ok(match cores {
        None => vec![Step::Load { file, vnc: None }],
        Some(cores) => cores
            .into_iter()
            .map(|vnc| Step::Load {
                file: file.clone(),
                vnc: Some(vnc),
            })
            .collect(),
    })
}

/// `NAME=SIZE@CORES`: one tensor of SIZE bytes per listed core.
pub fn parse_tensor(arg: &str) -> Result<Vec<Step>, DeploymentError> {
    let place = || format!("--tensor '{arg}'");
    let (name, rest) = arg
        .split_once('=')
        .filter(|(n, _)| !n.trim().is_empty())
        .ok_or_else(|| bad(place(), "expected NAME=SIZE@CORES, e.g. kv=2GiB@0-31"))?;
    let (size, cores) = rest.rsplit_once('@').ok_or_else(|| {
        bad(
            place(),
            "no @CORES: name the logical cores, e.g. kv=2GiB@0-31",
        )
    })?;
    let size = parse_size(size).map_err(|e| bad(place(), e))?;
    if size == 0 {
        return Err(bad(
            place(),
            "a tensor of 0 bytes (nrt_tensor_allocate refuses size 0)",
        ));
    }
    let cores = parse_cores(cores).map_err(|e| bad(place(), e))?;
    Ok(cores
        .into_iter()
        .map(|vnc| Step::Tensor {
            name: name.trim().to_string(),
            size,
            vnc,
        })
        .collect())
}

/// `FILE@CORES` of an unload (FILE any path the OS takes).
pub fn parse_unload(arg: impl AsRef<OsStr>) -> Result<Vec<Step>, DeploymentError> {
    let arg = arg.as_ref();
    let place = || format!("--unload '{}'", arg.display());
    let (file, cores) = split_last_at(arg).ok_or_else(|| bad(place(), "expected FILE@CORES"))?;
    let cores = parse_cores(&cores.to_string_lossy()).map_err(|e| bad(place(), e))?;
    Ok(cores
        .into_iter()
        .map(|vnc| Step::Unload {
            file: PathBuf::from(file),
            vnc,
        })
        .collect())
}

/// `NAME@CORES` (the largest tensor NAME that fits on every listed core at
/// once) or `FILE.neff[@CORES]` (how many copies of FILE fit on the
/// listed cores, or on every core of the instance; FILE any path the OS
/// takes).
pub fn parse_solve(arg: impl AsRef<OsStr>) -> Result<Solve, DeploymentError> {
    let arg = arg.as_ref();
    let place = || format!("--solve '{}'", arg.display());
    let split =
        split_last_at(arg).filter(|(_, c)| c.as_bytes().first().is_some_and(u8::is_ascii_digit));
    let (what, cores) = match split {
        Some((what, cores)) => (what, Some(cores)),
        None => (arg, None),
    };
    let cores = cores
        .map(|c| parse_cores(&c.to_string_lossy()).map_err(|e| bad(place(), e)))
        .transpose()?;
    if what.as_bytes().trim_ascii().is_empty() {
        return Err(bad(place(), "expected NAME@CORES or FILE.neff[@CORES]"));
    }
    if what.as_bytes().ends_with(b".neff") {
        return Ok(Solve::Ranks {
            file: PathBuf::from(what),
            cores,
        });
    }
    let cores = cores.ok_or_else(|| {
        bad(
            place(),
            "no @CORES: name the logical cores the tensor goes on, e.g. kv@0-63 (a NEFF to count ranks of ends in .neff)",
        )
    })?;
    let name = what
        .to_str()
        .ok_or_else(|| bad(place(), "a tensor's name is text: this one is not UTF-8"))?;
    Ok(Solve::Tensor {
        name: name.trim().to_string(),
        cores,
    })
}

/// `NAME@CORES` of a free: the tensor NAME of each listed core.
pub fn parse_free(arg: &str) -> Result<Vec<Step>, DeploymentError> {
    let place = || format!("--free '{arg}'");
    let (name, cores) = arg
        .rsplit_once('@')
        .filter(|(n, _)| !n.trim().is_empty())
        .ok_or_else(|| bad(place(), "expected NAME@CORES, e.g. kv@0-31"))?;
    let cores = parse_cores(cores).map_err(|e| bad(place(), e))?;
    Ok(cores
        .into_iter()
        .map(|vnc| Step::Free {
            name: name.trim().to_string(),
            vnc,
        })
        .collect())
}

/// `KEY=VALUE` of a runtime variable the runtime reads.
pub fn parse_env(arg: &str) -> Result<(String, String), DeploymentError> {
    let (k, v) = arg
        .split_once('=')
        .ok_or_else(|| bad(format!("--env '{arg}'"), "expected KEY=VALUE"))?;
    // The ceiling on a plan's steps bounds what is expanded before the
    // runtime's variables are read, so only the command line sets it.
    if vars::named(k.trim()).map(|v| v.reader) != Some(Reader::Plan) {
        check_variable(k.trim(), &format!("--env '{arg}'"))?;
    }
    Ok((k.trim().to_string(), v.to_string()))
}

fn check_variable(k: &str, place: &str) -> Result<(), DeploymentError> {
    match vars::named(k).map(|v| v.reader) {
        Some(Reader::Runtime) => Ok(()),
        Some(Reader::Plan) => Err(bad(
            place,
            format!("{k} bounds the deployment file itself as it is read: set it in the environment or with --env"),
        )),
        _ => Err(bad(
            place,
            format!(
                "{k} is not a variable the runtime reads here (known: {}; and, on the command line, {})",
                vars::names(Reader::Runtime).collect::<Vec<_>>().join(", "),
                vars::names(Reader::Plan).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDeployment {
    instance: Option<Spanned<String>>,
    lnc: Option<Spanned<u32>>,
    runtime: Option<Spanned<String>>,
    io_tensors: Option<bool>,
    world: Option<Spanned<u32>>,
    hosts: Option<Spanned<u32>>,
    #[serde(default)]
    env: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    step: Vec<Spanned<RawStep>>,
    solve: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    load: Option<String>,
    tensor: Option<String>,
    unload: Option<String>,
    free: Option<String>,
    cores: Option<Spanned<toml::Value>>,
    size: Option<Spanned<toml::Value>>,
    repeat: Option<u32>,
}

/// Largest deployment file read, in bytes: a deployment is a few lines
/// per step, and a file of this size already names more steps than
/// [`MAX_STEPS`].
pub(crate) const MAX_DEPLOYMENT_BYTES: u64 = 16 << 20;

/// The text of the deployment file at `path`: a regular file (a link to
/// one is followed) of at most [`MAX_DEPLOYMENT_BYTES`], UTF-8. A device,
/// FIFO or socket is refused before a byte is read, without waiting on it
/// ([`crate::neff::open_regular`]: `/dev/zero` never ends, a FIFO with no
/// writer never opens); a larger file is refused after that many bytes.
pub fn read_deployment(path: &Path) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    let f = crate::neff::open_regular(path)?;
    let mut text = String::new();
    f.take(MAX_DEPLOYMENT_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| match e.kind() {
            ErrorKind::InvalidData => Error::new(ErrorKind::InvalidData, "it is not UTF-8 text"),
            _ => e,
        })?;
    if text.len() as u64 > MAX_DEPLOYMENT_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("a deployment file is at most {MAX_DEPLOYMENT_BYTES} bytes"),
        ));
    }
    Ok(text)
}

/// Longest `repeat` of one step.
const MAX_REPEAT: u32 = 1 << 16;

/// Default ceiling on the steps a whole deployment expands to
/// ([`crate::config::MAX_STEPS`]; `NEFFLD_MAX_STEPS` sets another,
/// [`crate::config::max_steps`]). Forty 2 KB lines of `cores = "0-65535"`
/// and `repeat = 16` used to expand to 40 million steps (27 s and 3 GB)
/// before anything looked at them.
pub use crate::config::MAX_STEPS;

/// The step ceiling of a plan whose variables are `env`: the last
/// `NEFFLD_MAX_STEPS` among them over the process environment's, else
/// [`MAX_STEPS`].
pub fn step_ceiling(env: &[(String, String)]) -> Result<usize, crate::config::ConfigError> {
    crate::config::max_steps(|k| {
        env.iter()
            .rev()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(k).ok())
    })
}

/// The steps a deployment may still expand to: each step is counted
/// before it is expanded.
#[derive(Clone, Copy, Debug)]
pub struct StepBudget {
    max: usize,
    used: usize,
}

impl StepBudget {
    /// A budget of `max` steps, none used.
    pub fn new(max: usize) -> StepBudget {
        StepBudget { max, used: 0 }
    }

    /// Takes `n` more steps for what `place` names, or says the ceiling.
    pub fn take(&mut self, n: usize, place: impl fmt::Display) -> Result<(), DeploymentError> {
        if n > self.max - self.used {
            return Err(bad(
                place,
                format!(
                    "the deployment would expand to more than {} steps (this adds {n} to {}); \
                     neffld's own ceiling, NEFFLD_MAX_STEPS raises it",
                    self.max, self.used
                ),
            ));
        }
        self.used += n;
        Ok(())
    }
}

/// The 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A deployment file (docs/cli.md, "Deployment files"). `origin` names it in
/// errors; relative NEFF paths are taken from `base` (its folder).
pub fn parse_toml(text: &str, origin: &str, base: &Path) -> Result<Deployment, DeploymentError> {
    parse_toml_within(text, origin, base, &mut StepBudget::new(MAX_STEPS))
}

/// [`parse_toml`], its steps taken from `budget` before each is expanded.
pub fn parse_toml_within(
    text: &str,
    origin: &str,
    base: &Path,
    budget: &mut StepBudget,
) -> Result<Deployment, DeploymentError> {
    let raw: RawDeployment = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(String::new(), |s| {
            format!(" line {}", line_of(text, s.start))
        });
        bad(format!("{origin}{at}"), e.message().to_string())
    })?;
    let at = |offset: usize| format!("{origin} line {}", line_of(text, offset));
    let mut d = Deployment {
        io_tensors: raw.io_tensors.unwrap_or(true),
        lnc: raw.lnc.as_ref().map(|l| *l.get_ref()),
        lnc_origin: raw.lnc.as_ref().map(|l| at(l.span().start)),
        world: raw.world.as_ref().map(|w| *w.get_ref()),
        hosts: raw.hosts.as_ref().map(|h| *h.get_ref()),
        world_origin: raw
            .world
            .as_ref()
            .or(raw.hosts.as_ref())
            .map(|w| at(w.span().start)),
        ..Deployment::default()
    };
    if let Some(i) = &raw.instance {
        d.instance = Some(Instance::named(i.get_ref()).map_err(|e| bad(at(i.span().start), e))?);
    }
    if let Some(r) = &raw.runtime {
        d.runtime = Some(
            r.get_ref()
                .parse()
                .map_err(|e: String| bad(at(r.span().start), e))?,
        );
    }
    for (k, v) in &raw.env {
        let place = at(v.span().start);
        check_variable(k, &place)?;
        let value = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => u8::from(*b).to_string(),
            other => {
                return Err(bad(
                    place,
                    format!("{k} = {other}: a value is a string, an integer or a boolean"),
                ))
            }
        };
        d.env.push((k.clone(), value));
        d.env_origins.push((k.clone(), place));
    }
    if let Some(q) = &raw.solve {
        let mut solve = parse_solve(q.get_ref()).map_err(|e| bad(at(q.span().start), e.what))?;
        if let Solve::Ranks { file, .. } = &mut solve {
            *file = base.join(&*file);
        }
        d.solve = Some(solve);
        d.solve_origin = Some(at(q.span().start));
    }
    for (n, step) in raw.step.iter().enumerate() {
        let place = format!("{} (step {})", at(step.span().start), n + 1);
        let expanded = toml_step(step.get_ref(), &place, base, text, origin, budget)?;
        d.origins.extend(std::iter::repeat_n(place, expanded.len()));
        d.steps.extend(expanded);
    }
    Ok(d)
}

fn toml_step(
    s: &RawStep,
    place: &str,
    base: &Path,
    text: &str,
    origin: &str,
    budget: &mut StepBudget,
) -> Result<Vec<Step>, DeploymentError> {
    let kinds = [&s.load, &s.tensor, &s.unload, &s.free];
    if kinds.iter().filter(|k| k.is_some()).count() != 1 {
        return Err(bad(
            place,
            "a step is exactly one of load = FILE, tensor = NAME, unload = FILE, free = NAME",
        ));
    }
    let value_place =
        |v: &Spanned<toml::Value>| format!("{origin} line {}", line_of(text, v.span().start));
    let cores: Option<Vec<u32>> = match &s.cores {
        None => None,
        Some(v) => Some(match v.get_ref() {
            toml::Value::Integer(i) => vec![u32::try_from(*i)
                .map_err(|_| bad(value_place(v), format!("{i} is not a logical core")))?],
            toml::Value::String(t) => parse_cores(t).map_err(|e| bad(value_place(v), e))?,
            toml::Value::Array(a) => a
                .iter()
                .map(|x| {
                    x.as_integer()
                        .and_then(|i| u32::try_from(i).ok())
                        .ok_or_else(|| bad(value_place(v), format!("{x} is not a logical core")))
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(bad(
                    value_place(v),
                    format!("cores = {other}: expected 3, \"0-31\" or [0, 2, 4]"),
                ))
            }
        }),
    };
    if let (Some(v), Some(cs)) = (&s.cores, &cores) {
        if cs.is_empty() {
            return Err(bad(
                value_place(v),
                "cores = []: lists no logical core (name at least one, or leave cores out for the next free core)",
            ));
        }
    }
    let repeat = s.repeat.unwrap_or(1);
    if repeat == 0 || repeat > MAX_REPEAT {
        return Err(bad(
            place,
            format!("repeat = {repeat} is outside 1..={MAX_REPEAT}"),
        ));
    }
    // Counted before anything is expanded: the cores listed (at most
    // 65536), each `repeat` times.
    let listed = cores.as_ref().map_or(1, Vec::len);
    budget.take(listed.saturating_mul(repeat as usize), place)?;
    let need_cores = |what: &str| {
        cores
            .clone()
            .ok_or_else(|| bad(place, format!("{what} needs cores = ...")))
    };
    if s.size.is_some() && s.tensor.is_none() {
        return Err(bad(place, "size = ... belongs to a tensor step"));
    }
    // What the command line cannot say is refused here, where it is
    // written: a plan's advice names every step as a command line.
    let unsayable = |what: String| bad(place, what);
    for name in [&s.tensor, &s.free].into_iter().flatten() {
        sayable_name(name).map_err(unsayable)?;
    }
    let mut one: Vec<Step> = if let Some(f) = &s.load {
        let file = base.join(f);
        match &cores {
            None => {
                sayable_load(&file).map_err(|why| unsayable(format!("load = {f:?}: {why}")))?;
                vec![Step::Load { file, vnc: None }]
            }
            Some(cs) => cs
                .iter()
                .map(|&vnc| Step::Load {
                    file: file.clone(),
                    vnc: Some(vnc),
                })
                .collect(),
        }
    } else if let Some(name) = &s.tensor {
        let size = s
            .size
            .as_ref()
            .ok_or_else(|| bad(place, "a tensor step needs size = ..."))?;
        let bytes = match size.get_ref() {
            toml::Value::Integer(i) => {
                u64::try_from(*i).map_err(|_| format!("{i} bytes is not a size"))
            }
            toml::Value::String(t) => parse_size(t),
            other => Err(format!(
                "{other} is neither bytes nor a size such as \"2GiB\""
            )),
        }
        .and_then(|b| {
            if b == 0 {
                Err("a tensor of 0 bytes (nrt_tensor_allocate refuses size 0)".to_string())
            } else {
                Ok(b)
            }
        })
        .map_err(|why| {
            bad(
                value_place(size),
                format!("size = {}: {why}", size.get_ref()),
            )
        })?;
        need_cores("a tensor step")?
            .into_iter()
            .map(|vnc| Step::Tensor {
                name: name.clone(),
                size: bytes,
                vnc,
            })
            .collect()
    } else if let Some(f) = &s.unload {
        need_cores("an unload step")?
            .into_iter()
            .map(|vnc| Step::Unload {
                file: base.join(f),
                vnc,
            })
            .collect()
    } else {
        let name = s.free.clone().unwrap_or_default();
        need_cores("a free step")?
            .into_iter()
            .map(|vnc| Step::Free {
                name: name.clone(),
                vnc,
            })
            .collect()
    };
    if repeat > 1 {
        let once = std::mem::take(&mut one);
        for _ in 0..repeat {
            one.extend(once.iter().cloned());
        }
    }
    Ok(one)
}

/// What to solve for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Solve {
    /// The largest tensor `name` that fits on every listed core at once.
    Tensor {
        /// The tensor's name.
        name: String,
        /// The visible logical cores it must fit on.
        cores: Vec<u32>,
    },
    /// How many copies of `file` fit on the listed cores, each counted
    /// once (`None`: every visible logical core of the instance).
    Ranks {
        /// The NEFF.
        file: PathBuf,
        /// The visible logical cores, as listed (`None`: every one).
        cores: Option<Vec<u32>>,
    },
}

impl fmt::Display for Solve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Solve::Tensor { name, cores } => write!(f, "{name}@{}", core_list(cores)),
            Solve::Ranks { file, cores: None } => write!(f, "{}", file.display()),
            Solve::Ranks {
                file,
                cores: Some(c),
            } => write!(f, "{}@{}", file.display(), core_list(c)),
        }
    }
}

/// `0-63`, `0,2,4`, `0-3,8`: a core list as short as the cores allow.
pub fn core_list(cores: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cores.len() {
        let mut j = i;
        while j + 1 < cores.len() && cores[j + 1] == cores[j].wrapping_add(1) {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", cores[i], cores[j])
        } else {
            cores[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A variable set twice is written once, with the value that wins
    /// (advice's command lines repeated the file's page size before
    /// their own).
    #[test]
    fn a_variable_set_twice_is_one_flag() {
        let d = Deployment {
            env: vec![
                ("NEURON_SCRATCHPAD_PAGE_SIZE".into(), "1024".into()),
                ("NEURON_RT_NUM_CORES".into(), "2".into()),
                ("NEURON_SCRATCHPAD_PAGE_SIZE".into(), "512".into()),
            ],
            steps: vec![Step::Tensor {
                name: "kv".into(),
                size: 4096,
                vnc: 0,
            }],
            ..Deployment::default()
        };
        let argv = d.argv(None).join(OsStr::new(" "));
        assert_eq!(
            argv,
            "neffld plan --env NEURON_RT_NUM_CORES=2 --env NEURON_SCRATCHPAD_PAGE_SIZE=512 --no-io-tensors --tensor=kv=4096@0"
        );
    }

    #[test]
    fn core_lists_are_written_short() {
        assert_eq!(core_list(&[0, 1, 2, 3]), "0-3");
        assert_eq!(core_list(&[0, 2, 4]), "0,2,4");
        assert_eq!(core_list(&[0, 1, 2, 3, 8, 5, 6]), "0-3,8,5-6");
        assert_eq!(core_list(&[]), "");
    }

    #[test]
    fn core_lists_keep_their_order_and_repeats() {
        assert_eq!(parse_cores("3").unwrap(), [3]);
        assert_eq!(parse_cores("0-3").unwrap(), [0, 1, 2, 3]);
        assert_eq!(parse_cores("4,0,2,2").unwrap(), [4, 0, 2, 2]);
        assert_eq!(parse_cores("0-1,8").unwrap(), [0, 1, 8]);
        assert!(parse_cores("3-1").unwrap_err().contains("backwards"));
        assert!(parse_cores("x").unwrap_err().contains("'x'"));
        assert!(parse_cores("0-4294967295").is_err());
    }

    #[test]
    fn sizes_are_binary_and_whole() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("2GB").unwrap(), 2 << 30);
        assert_eq!(parse_size("512 MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert!(parse_size("1.3B").unwrap_err().contains("whole"));
        assert!(parse_size("2XB").unwrap_err().contains("unit"));
        assert!(parse_size("GiB").is_err());
        // A sign is no unit.
        let e = parse_size("-5").unwrap_err();
        assert!(e.contains("never negative") && !e.contains("unit"), "{e}");
        assert!(parse_size("99999999999TiB")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn loads_split_on_the_last_at_only_before_a_core_list() {
        assert_eq!(
            parse_load("a.neff@0-1").unwrap(),
            [
                Step::Load {
                    file: "a.neff".into(),
                    vnc: Some(0)
                },
                Step::Load {
                    file: "a.neff".into(),
                    vnc: Some(1)
                }
            ]
        );
        assert_eq!(
            parse_load("m@v2.neff").unwrap(),
            [Step::Load {
                file: "m@v2.neff".into(),
                vnc: None
            }]
        );
        let e = parse_load("a.neff@1-x").unwrap_err();
        assert_eq!(e.place, "LOAD 'a.neff@1-x'");
        let t = parse_tensor("kv=2GiB@0,2").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            t[1],
            Step::Tensor {
                name: "kv".into(),
                size: 2 << 30,
                vnc: 2
            }
        );
        assert!(parse_tensor("kv=2GiB").unwrap_err().what.contains("@CORES"));
        assert!(parse_tensor("kv=0@0").unwrap_err().what.contains("0 bytes"));
        assert!(parse_env("NEURON_FOO=1")
            .unwrap_err()
            .what
            .contains("NEURON_FOO"));
        assert_eq!(
            parse_env("NEURON_SCRATCHPAD_PAGE_SIZE=2048").unwrap(),
            ("NEURON_SCRATCHPAD_PAGE_SIZE".into(), "2048".into())
        );
    }

    /// What the command line can say is taken: a name that begins with
    /// `-` (`--tensor=-t=...`), a file with `@` in it given cores, a file
    /// on the next free core whose last `@` is followed by a `.`.
    #[test]
    fn names_the_command_line_can_say_are_taken() {
        let text = "[[step]]\ntensor = \"-t\"\nsize = 1\ncores = 0\n\
                    [[step]]\nload = \"w@1\"\ncores = 0\n\
                    [[step]]\nload = \"m@v2.neff\"\n";
        let d = parse_toml(text, "d.toml", Path::new("")).unwrap();
        assert_eq!(d.steps.len(), 3);
        assert_eq!(
            d.argv(None)[2..],
            ["--tensor=-t=1@0", "w@1@0", "m@v2.neff"].map(OsString::from)
        );
    }

    #[test]
    fn a_deployment_file_expands_its_steps_in_order() {
        let text = r#"
instance = "trn2.3xlarge"
lnc = 1
io_tensors = false

[env]
NEURON_SCRATCHPAD_PAGE_SIZE = 2048

[[step]]
load = "a.neff"
cores = "4"

[[step]]
tensor = "kv"
size = "4GiB"
cores = [4, 5]

[[step]]
load = "b.neff"
repeat = 2

[[step]]
unload = "a.neff"
cores = 4
"#;
        let d = parse_toml(text, "d.toml", Path::new("/m")).unwrap();
        assert_eq!(d.instance.unwrap().name, "trn2.3xlarge");
        assert_eq!((d.lnc, d.io_tensors), (Some(1), false));
        assert_eq!(
            d.env,
            [("NEURON_SCRATCHPAD_PAGE_SIZE".into(), "2048".into())]
        );
        assert_eq!(
            d.steps,
            [
                Step::Load {
                    file: "/m/a.neff".into(),
                    vnc: Some(4)
                },
                Step::Tensor {
                    name: "kv".into(),
                    size: 4 << 30,
                    vnc: 4
                },
                Step::Tensor {
                    name: "kv".into(),
                    size: 4 << 30,
                    vnc: 5
                },
                Step::Load {
                    file: "/m/b.neff".into(),
                    vnc: None
                },
                Step::Load {
                    file: "/m/b.neff".into(),
                    vnc: None
                },
                Step::Unload {
                    file: "/m/a.neff".into(),
                    vnc: 4
                },
            ]
        );
    }

    /// Each mistake names the file, the line and what is wrong.
    #[test]
    fn mistakes_in_a_deployment_file_name_the_line() {
        let cases: [(&str, &str, &str); 14] = [
            ("instance = \"trn9\"\n", "d.toml line 1", "unknown instance"),
            ("lnc = 1\nbogus = 2\n", "d.toml line 2", "bogus"),
            (
                "[[step]]\nload = \"a\"\ntensor = \"b\"\n",
                "d.toml line 1 (step 1)",
                "exactly one",
            ),
            (
                "\n[[step]]\ntensor = \"kv\"\ncores = 0\n",
                "d.toml line 2 (step 1)",
                "size",
            ),
            (
                "[[step]]\ntensor = \"kv\"\nsize = \"2XB\"\ncores = 0\n",
                "d.toml line 3",
                "size",
            ),
            (
                "[[step]]\nload = \"a\"\ncores = \"2-1\"\n",
                "d.toml line 3",
                "backwards",
            ),
            ("[env]\nNEURON_NOPE = 1\n", "d.toml line 2", "NEURON_NOPE"),
            (
                "[[step]]\nunload = \"a\"\n",
                "d.toml line 1 (step 1)",
                "cores",
            ),
            (
                "[[step]]\nload = \"a\"\ncores = \"0-60000\"\nrepeat = 60000\n",
                "d.toml line 1 (step 1)",
                "more than",
            ),
            // Issue 40 row 4: what no command line can say, refused where
            // it is written (an advice's command line planned another step).
            (
                "[[step]]\ntensor = \"\"\nsize = 1\ncores = 0\n",
                "d.toml line 1 (step 1)",
                "is empty",
            ),
            (
                "[[step]]\ntensor = \"a=b@c\"\nsize = 1\ncores = 0\n",
                "d.toml line 1 (step 1)",
                "holds '='",
            ),
            (
                "[[step]]\nfree = \" kv\"\ncores = 0\n",
                "d.toml line 1 (step 1)",
                "white space",
            ),
            (
                "[[step]]\nload = \"w@1\"\n",
                "d.toml line 1 (step 1)",
                "reads as a core list",
            ),
            (
                "[[step]]\nload = \"m.toml\"\n",
                "d.toml line 1 (step 1)",
                "deployment file",
            ),
        ];
        for (text, place, what) in cases {
            let e = parse_toml(text, "d.toml", Path::new(".")).unwrap_err();
            assert_eq!(e.place, place, "{text}: {e}");
            assert!(e.what.contains(what), "{text}: {e}");
        }
    }

    /// Issue 29 row 3: the whole file's steps are counted against one
    /// ceiling before any step is expanded (40 steps of 65536 cores × 16
    /// took 27 s and 3 GB).
    #[test]
    fn the_whole_deployment_is_counted_before_it_expands() {
        let step = "[[step]]\nload = \"a\"\ncores = \"0-65535\"\nrepeat = 4\n";
        // Refused at the second step, whose count passes the ceiling: the
        // 78 steps after it are never expanded.
        let e = parse_toml(&step.repeat(80), "d.toml", Path::new("/m")).unwrap_err();
        assert_eq!(e.place, "d.toml line 5 (step 2)", "{e}");
        assert!(e.what.contains("more than 262144 steps"), "{e}");
        assert!(e.what.contains("NEFFLD_MAX_STEPS"), "{e}");
        let mut budget = StepBudget::new(3);
        let d = parse_toml_within(
            "[[step]]\nload = \"a\"\ncores = \"0-2\"\n",
            "d.toml",
            Path::new("/m"),
            &mut budget,
        )
        .unwrap();
        assert_eq!(d.steps.len(), 3);
        assert!(
            budget.take(1, "LOAD 'b'").is_err(),
            "the command line counts too"
        );
    }

    #[test]
    fn cores_beyond_int32_and_standard_input_are_named() {
        let e = parse_load("demo.neff@4294967295").unwrap_err();
        assert!(e.what.contains("4294967295"), "{e}");
        assert!(parse_cores("2147483647").is_ok());
        assert!(parse_cores("2147483648").is_err());
        let e = parse_load("-").unwrap_err();
        assert!(e.what.contains("standard input"), "{e}");
    }

    #[test]
    fn a_deployment_file_that_is_no_regular_file_is_refused() {
        let e = read_deployment(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("regular file"), "{e}");
        // A FIFO with no writer is refused, not waited on.
        let fifo = std::env::temp_dir().join(format!("neffld-fifo-{}.toml", std::process::id()));
        let _ = std::fs::remove_file(&fifo);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a NUL-terminated path alive for the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_deployment(&fifo).unwrap_err();
        assert!(e.to_string().contains("regular file"), "{e}");
        let _ = std::fs::remove_file(&fifo);
    }
}
