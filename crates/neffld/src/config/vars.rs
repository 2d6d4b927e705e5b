//! Every environment variable neffld reads, each defined once: its name,
//! which part of the configuration it sets ([`Seam`]: a
//! [`RuntimeConfig`]'s `topology`, `libnrt` or `loader`), who reads it
//! ([`Reader`]), the runtime line it appeared in, its default and doc, and
//! its parser. [`RuntimeConfig::with_env`] applies the table, the planner
//! refuses a variable that is not in it, docs/cli.md's table is generated
//! from it (a test holds the two together), and the C library reads its
//! own variables by their definitions here.

use super::{parse_bool, parse_core_list, parse_num, ConfigError, CoreList, RuntimeConfig};
use crate::instance::Instance;
use crate::line::RuntimeLine;
use crate::Arch;

/// The part of the configuration a variable belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Seam {
    /// What a load runs on: the instance, its chip, the logical cores.
    Topology,
    /// What libnrt itself reads (and the line whose libnrt it is).
    Libnrt,
    /// neffld's own tuning of its loader, parse cache and planner.
    Loader,
}

impl Seam {
    /// Every seam, in the order docs/cli.md lists them.
    pub const ALL: [Seam; 3] = [Seam::Topology, Seam::Libnrt, Seam::Loader];

    /// The title of its table in docs/cli.md.
    pub fn title(self) -> &'static str {
        match self {
            Seam::Topology => "The topology",
            Seam::Libnrt => "What the runtime reads",
            Seam::Loader => "neffld's own tuning",
        }
    }
}

/// Who reads a variable, and so where it has an effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reader {
    /// Every runtime a configuration starts ([`RuntimeConfig::with_env`]):
    /// `load`, `verify`, `plan` (and its `--env`), Python, the C library.
    Runtime,
    /// A plan alone, before its deployment is read (a deployment file
    /// cannot set it: it bounds the file itself).
    Plan,
    /// Reading a NEFF from a stream (standard input, a pipe, a device).
    Stream,
    /// The C library alone (`libnrt.so.1`), beside its configuration.
    CLibrary,
}

/// How a variable's value is applied over a configuration.
type Apply = fn(&mut RuntimeConfig, &'static str, String) -> Result<(), ConfigError>;

/// One environment variable.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct Variable {
    /// `NEURON_RT_VISIBLE_CORES`, …
    pub name: &'static str,
    /// The part of the configuration it sets.
    pub seam: Seam,
    /// Who reads it.
    pub reader: Reader,
    /// The runtime line that introduced it: a load under an older line
    /// ignores it, as that runtime does. `None`: every line.
    pub since: Option<RuntimeLine>,
    /// Its default, in words.
    pub default: &'static str,
    /// What it sets (Markdown, one paragraph; `{lines}` and `{newest}`
    /// stand for the runtime lines of the table and the newest).
    pub doc: &'static str,
    apply: Apply,
}

impl std::fmt::Debug for Variable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Variable")
            .field("name", &self.name)
            .finish()
    }
}

impl Variable {
    /// Applies `value`, as given, over `config`; a refusal names the
    /// variable and the value.
    pub fn apply(&self, config: &mut RuntimeConfig, value: String) -> Result<(), ConfigError> {
        (self.apply)(config, self.name, value)
    }

    /// Whether a runtime under `line` reads it.
    pub fn read_under(&self, line: RuntimeLine) -> bool {
        self.since.is_none_or(|since| line >= since)
    }

    /// Its doc with the lines of the table in place.
    pub fn doc_text(&self) -> String {
        self.doc
            .replace("{lines}", &RuntimeLine::list("or"))
            .replace("{newest}", &RuntimeLine::NEWEST.to_string())
    }

    /// Its default with the lines of the table in place.
    pub fn default_text(&self) -> String {
        self.default
            .replace("{newest}", &RuntimeLine::NEWEST.to_string())
    }
}

/// The variable named `name`, if neffld reads one of that name.
pub fn named(name: &str) -> Option<&'static Variable> {
    VARIABLES.iter().find(|v| v.name == name)
}

/// The names of the variables `reader` reads, in table order.
pub fn names(reader: Reader) -> impl Iterator<Item = &'static str> {
    VARIABLES
        .iter()
        .filter(move |v| v.reader == reader)
        .map(|v| v.name)
}

const fn var(
    name: &'static str,
    seam: Seam,
    default: &'static str,
    doc: &'static str,
    apply: Apply,
) -> Variable {
    Variable {
        name,
        seam,
        reader: Reader::Runtime,
        since: None,
        default,
        doc,
        apply,
    }
}

fn err(var: &'static str, value: String, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        var,
        value,
        reason: reason.into(),
    }
}

/// A variable whose value the C library reads itself (its log).
fn read_by_the_c_library(
    _: &mut RuntimeConfig,
    _: &'static str,
    _: String,
) -> Result<(), ConfigError> {
    Ok(())
}

/// `NEFFLD_MAX_STEPS`.
pub const NEFFLD_MAX_STEPS: Variable = Variable {
    reader: Reader::Plan,
    ..var(
        "NEFFLD_MAX_STEPS",
        Seam::Loader,
        "262144",
        "ceiling on the steps one `plan` expands to: its deployment file's and its command line's loads, tensors and unloads together (each core listed and each `repeat` a step), counted before anything is expanded; the environment or `plan --env` set it, a deployment file cannot",
        |c, var, v| {
            c.loader.max_steps = parse_num(var, &v)?;
            Ok(())
        },
    )
};

/// `NEFFLD_MAX_NEFF_SIZE`.
pub const NEFFLD_MAX_NEFF_SIZE: Variable = Variable {
    reader: Reader::Stream,
    ..var(
        "NEFFLD_MAX_NEFF_SIZE",
        Seam::Loader,
        "34359738368 (32 GiB)",
        "ceiling on the payload of a NEFF read from a stream (standard input, a pipe, a device), in bytes, checked against the header before the payload is read",
        |c, var, v| {
            c.loader.max_neff_size = parse_num(var, &v)?;
            Ok(())
        },
    )
};

/// `NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG`.
pub const NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG: Variable = Variable {
    since: Some(RuntimeLine::V2_33),
    ..var(
        "NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG",
        Seam::Libnrt,
        "`1`",
        "`0` skips the usage report of a device allocation refused for want of room (its log lines and the `/tmp/neuron_mem_table_*` file; the allocation still fails; `plan` then shows no log lines for its refusal, and keeps its own usage table); any other value than `0` or `1` is refused naming the variable (stage `config`, exit status 2); the older lines ignore it",
        |c, var, v| {
            c.libnrt.oom_log = Some(match v.trim() {
                "1" => true,
                "0" => false,
                _ => {
                    return Err(err(
                        var,
                        v,
                        "expected 0 (no report) or 1 (the report, the default)",
                    ))
                }
            });
            Ok(())
        },
    )
};

/// A variable that turns a line's start-up delta off
/// ([`crate::line::StartDelta::off_by`]) with `0`.
fn start_delta_switch(
    c: &mut RuntimeConfig,
    var: &'static str,
    v: String,
) -> Result<(), ConfigError> {
    let on = parse_bool(var, &v)?;
    c.libnrt.start_off.retain(|&n| n != var);
    if !on {
        c.libnrt.start_off.push(var);
    }
    Ok(())
}

/// `NEFFLD_DMA_PROFILING`: neffld's, since libnrt 2.35 documents no switch
/// for its reservation (docs/decisions.md, "Runtime lines").
pub const NEFFLD_DMA_PROFILING: Variable = Variable {
    since: Some(RuntimeLine::V2_35),
    ..var(
        "NEFFLD_DMA_PROFILING",
        Seam::Libnrt,
        "`1`",
        "neffld's, not the runtime's (2.35 documents none): `0` starts the runtime without the 64 MiB per NeuronCore that 2.35 reserves for host-device DMA profiling, as a runtime that does not make the reservation would (one on a driver before 2.31, which the feature needs); `plan` notes it either way",
        start_delta_switch,
    )
};

/// `NEFFLD_LOG`.
pub const NEFFLD_LOG: Variable = Variable {
    reader: Reader::CLibrary,
    ..var(
        "NEFFLD_LOG",
        Seam::Loader,
        "unset",
        "the C library's log level for every component, over `NEURON_RT_LOG_LEVEL` and `NEURON_RT_LOG_LEVEL_NRT` (`quiet`, `error`, `warn`, `info`, `debug`, `trace`)",
        read_by_the_c_library,
    )
};

/// `NEURON_RT_LOG_LEVEL`.
pub const NEURON_RT_LOG_LEVEL: Variable = Variable {
    reader: Reader::CLibrary,
    ..var(
        "NEURON_RT_LOG_LEVEL",
        Seam::Libnrt,
        "`ERROR`",
        "the C library's log level (`QUIET` silences the console; `ERROR`, `WARN`, `INFO`, `DEBUG`, `TRACE`; an unknown name is `ERROR`)",
        read_by_the_c_library,
    )
};

/// `NEURON_RT_LOG_LEVEL_NRT`.
pub const NEURON_RT_LOG_LEVEL_NRT: Variable = Variable {
    reader: Reader::CLibrary,
    ..var(
        "NEURON_RT_LOG_LEVEL_NRT",
        Seam::Libnrt,
        "`NEURON_RT_LOG_LEVEL`'s",
        "the C library's log level for every line but the device-memory report's (`TDRV`)",
        read_by_the_c_library,
    )
};

/// `NEURON_RT_LOG_LEVEL_TDRV`.
pub const NEURON_RT_LOG_LEVEL_TDRV: Variable = Variable {
    reader: Reader::CLibrary,
    ..var(
        "NEURON_RT_LOG_LEVEL_TDRV",
        Seam::Libnrt,
        "`NEURON_RT_LOG_LEVEL`'s",
        "the log level of the device-memory report (`TDRV`; `INFO` adds each load's usage lines)",
        read_by_the_c_library,
    )
};

/// `NEFFLD_MEM_TABLE_DIR`.
pub const NEFFLD_MEM_TABLE_DIR: Variable = Variable {
    reader: Reader::CLibrary,
    ..var(
        "NEFFLD_MEM_TABLE_DIR",
        Seam::Loader,
        "`/tmp`",
        "where the C library writes the usage table of a refused allocation (`neuron_mem_table_device_<d>_hbm_<h>.log`, as the runtime does in `/tmp`)",
        read_by_the_c_library,
    )
};

/// The profiler buffer of kind `K` in [`super::PROFILE_BUFFERS`].
fn profile_buffer<const K: usize>(
    c: &mut RuntimeConfig,
    var: &'static str,
    v: String,
) -> Result<(), ConfigError> {
    let kind = super::PROFILE_BUFFERS[K].0;
    let mib: u64 = parse_num(var, &v)?;
    // `mib << 20` would wrap past 2^44 MiB (17592186044416 MiB became 0
    // bytes).
    let bytes = mib.checked_mul(1 << 20).ok_or_else(|| {
        err(
            var,
            v.clone(),
            format!(
                "{mib} MiB is more bytes than a 64-bit size holds (at most {} MiB)",
                u64::MAX >> 20
            ),
        )
    })?;
    c.libnrt.profile_buffers.retain(|&(k, _)| k != kind);
    c.libnrt.profile_buffers.push((kind, bytes));
    Ok(())
}

const PROFILE_BUFFER_DOC: &str = "a profiler buffer of this many MiB, which `plan` allocates (Profiler Buffers) on each physical core a load first uses; nothing else allocates it";

const fn profile_buffer_var(name: &'static str, apply: Apply) -> Variable {
    var(
        name,
        Seam::Libnrt,
        "the runtime's",
        PROFILE_BUFFER_DOC,
        apply,
    )
}

/// The logical-core size, under either of its names.
fn lnc(c: &mut RuntimeConfig, var: &'static str, v: String) -> Result<(), ConfigError> {
    c.topology.lnc = Some(parse_num(var, &v)?);
    Ok(())
}

/// The contiguous scratchpad, under either of its names.
fn contiguous(c: &mut RuntimeConfig, var: &'static str, v: String) -> Result<(), ConfigError> {
    c.libnrt.contiguous_scratchpad = Some(parse_bool(var, &v)?);
    Ok(())
}

/// Every variable, in the order [`RuntimeConfig::with_env`] applies them
/// (a later one of two names for one setting wins; the line is known
/// before any variable that depends on it).
pub const VARIABLES: &[Variable] = &[
    // The topology.
    var(
        "NEFFLD_INSTANCE",
        Seam::Topology,
        "none",
        "an instance type (`trn2.48xlarge`, …; `neffld plan --help` lists them): its architecture and its chips, one device `ND n` each, logical cores numbered across them; `plan --instance`",
        |c, var, v| {
            let instance = Instance::named(&v).map_err(|reason| err(var, v.clone(), reason))?;
            *c = std::mem::take(c).on_instance(instance);
            Ok(())
        },
    ),
    var(
        "NEFFLD_ARCH",
        Seam::Topology,
        "the NEFF's own target",
        "the instance architecture NEFFs are checked against, by `load`, `verify` and `plan` alike (`trn1`, `trn2`, `trn3`; must agree with `NEFFLD_INSTANCE`; see \"Settings\")",
        |c, var, v| {
            let arch: Arch = v.parse().map_err(|reason: String| err(var, v.clone(), reason))?;
            if let Some(i) = c.topology.instance.filter(|i| i.arch != arch) {
                return Err(err(
                    var,
                    v,
                    format!("the instance {i} has {} chips", i.arch.instance()),
                ));
            }
            c.topology.arch = arch;
            Ok(())
        },
    ),
    var(
        "NEURON_RT_VIRTUAL_CORE_SIZE",
        Seam::Topology,
        "the architecture's (trn1 1, trn2 and trn3 2)",
        "the logical-core size under its older name (`NEURON_LOGICAL_NC_CONFIG` wins when both are set)",
        lnc,
    ),
    var(
        "NEURON_LOGICAL_NC_CONFIG",
        Seam::Topology,
        "the architecture's (trn1 1, trn2 and trn3 2)",
        "the logical-core size: physical cores per logical core, 1 or 2 on trn2 and trn3 (trn1 and inf2 take only 1; any other size is refused naming both); `--lnc`",
        lnc,
    ),
    var(
        "NEURON_RT_NUM_CORES",
        Seam::Topology,
        "`0` (every core)",
        "the process uses the first N logical cores (at most 4096; `0` is every core); more than the instance has is refused saying how many were asked",
        |c, var, v| {
            let n: u32 = parse_num(var, &v)?;
            if n > 4096 {
                return Err(err(var, v, "at most 4096 cores"));
            }
            // 0 is the variable's default: every core (the runtime's
            // configurable parameters, "0, which is interpreted as 'all'").
            if n > 0 {
                c.topology.visible_cores = Some(CoreList {
                    var,
                    cores: (0..n).collect(),
                    value: v,
                });
            }
            Ok(())
        },
    ),
    var(
        "NEURON_RT_VISIBLE_CORES",
        Seam::Topology,
        "every core",
        "the logical cores the process may use (`0-3,6`; wins over `NEURON_RT_NUM_CORES`): the runtime starts their physical cores only; a core the instance lacks is refused quoting the value",
        |c, var, v| {
            c.topology.visible_cores = Some(CoreList {
                var,
                cores: parse_core_list(var, &v)?,
                value: v,
            });
            Ok(())
        },
    ),
    // What the runtime reads.
    var(
        "NEFFLD_RUNTIME",
        Seam::Libnrt,
        "`{newest}`, on every chip",
        "the runtime line loads reproduce ({lines}, or a version of one such as `2.27.23`; `--runtime`): a variable a line does not have is ignored under it",
        |c, var, v| {
            c.libnrt.line = Some(v.parse().map_err(|reason| err(var, v.clone(), reason))?);
            Ok(())
        },
    ),
    var(
        "NEURON_RT_VALIDATE_HASH",
        Seam::Libnrt,
        "off",
        "check the payload digest at load (`--validate-hash`; `verify` checks it unless `--ignore-hash`)",
        |c, var, v| {
            c.libnrt.validate_hash = parse_bool(var, &v)?;
            Ok(())
        },
    ),
    var(
        "NEURON_RT_ALLOW_LEGACY_NEFF",
        Seam::Libnrt,
        "off",
        "accept a NEFF built for another architecture (the arch gate) and a trn2 NEFF without its state-buffer reservation (`--allow-legacy-neff`)",
        |c, var, v| {
            c.libnrt.allow_legacy_neff = parse_bool(var, &v)?;
            Ok(())
        },
    ),
    var(
        "NEURON_RT_EXEC_TIMEOUT",
        Seam::Libnrt,
        "30",
        "seconds an execution may take, recorded with each model (nothing executes here)",
        |c, var, v| {
            c.libnrt.exec_timeout_s = parse_num(var, &v)?;
            Ok(())
        },
    ),
    var(
        "NEURON_SCRATCHPAD_PAGE_SIZE",
        Seam::Libnrt,
        "512",
        "the shared scratchpad's page in MiB, 1 to 4095 as the runtime checks it (its documentation advises multiples of 512); no effect while the scratchpad is one contiguous region",
        |c, var, v| {
            let mib: u64 = parse_num(var, &v)?;
            // The runtime's own check when it starts: more than 0 bytes and
            // below 4 GiB. Sizes that are not multiples of 512 MiB, which
            // the documentation advises, are accepted as it accepts them.
            if mib == 0 || mib >= 4096 {
                return Err(err(
                    var,
                    v,
                    format!(
                        "Invalid scratchpad page size {mib} MiB: it must be more than 0 and less than {} bytes (1 to 4095 MiB)",
                        1u64 << 32
                    ),
                ));
            }
            c.libnrt.scratchpad_page = mib << 20;
            Ok(())
        },
    ),
    var(
        "NEURON_RT_DBG_EXPERIMENTAL_CONTIGUOUS_SCRATCHPAD",
        Seam::Libnrt,
        "the line's",
        "`NEURON_RT_CONTIGUOUS_SCRATCHPAD` under its older name (which loses when both are set)",
        contiguous,
    ),
    var(
        "NEURON_RT_CONTIGUOUS_SCRATCHPAD",
        Seam::Libnrt,
        "the line's: on from 2.33 (trn1, inf2; trn2 and trn3 at LNC 2)",
        "`0` keeps the scratchpad in pages of `NEURON_SCRATCHPAD_PAGE_SIZE` anywhere in the HBM; `1` asks for the one contiguous region of 64 MiB pages on any line (not at LNC 1 on trn2 and trn3); any other value is refused naming the accepted ones (stage `config`, exit status 2)",
        contiguous,
    ),
    var(
        "NEURON_RT_ROOT_COMM_ID",
        Seam::Libnrt,
        "none",
        "`host:port` of the root communicator, which a collectives load (`nrt_load_collectives`, nrtpy's `cc_enabled`) requires: unset, or not `host:port`, it is refused with `NRT_INVALID`; `plan --world` takes it as given, or plans as though the framework had set one",
        |c, _, v| {
            c.libnrt.root_comm_id = Some(v).filter(|v| !v.trim().is_empty());
            Ok(())
        },
    ),
    profile_buffer_var("NEURON_RT_PROFILE_BUF_EVENT_MB", profile_buffer::<0>),
    profile_buffer_var("NEURON_RT_PROFILE_BUF_DMA_MB", profile_buffer::<1>),
    profile_buffer_var("NEURON_RT_PROFILE_BUF_THROTTLE_MB", profile_buffer::<2>),
    profile_buffer_var(
        "NEURON_RT_PROFILE_BUF_CC_CORE_INSTRUCTION_MB",
        profile_buffer::<3>,
    ),
    profile_buffer_var("NEURON_RT_PROFILE_BUF_CC_CORE_EVENT_MB", profile_buffer::<4>),
    var(
        "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS",
        Seam::Libnrt,
        "unset",
        "implicit async execution: from 2.32 a warning when a runtime starts (deprecated on 2.32, without effect from 2.33), first among `load`'s warnings",
        |c, _, v| {
            c.libnrt.implicit_async = Some(v);
            Ok(())
        },
    ),
    NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG,
    NEFFLD_DMA_PROFILING,
    NEURON_RT_LOG_LEVEL,
    NEURON_RT_LOG_LEVEL_NRT,
    NEURON_RT_LOG_LEVEL_TDRV,
    // neffld's own tuning.
    var(
        "NEFFLD_DEVICE",
        Seam::Loader,
        "`sim`",
        "the simulated device (the command's is `--device`, Python's `device=`, so only the C library reads this): `sim` keeps the bytes, `null` keeps none",
        |c, var, v| {
            c.loader.device = v
                .trim()
                .parse()
                .map_err(|_| err(var, v.clone(), "expected sim or null"))?;
            Ok(())
        },
    ),
    var(
        "NEFFLD_MAX_INFLATED",
        Seam::Loader,
        "64 × the payload, within 256 MiB–32 GiB",
        "ceiling on the inflated payload, in bytes (`--max-inflated`)",
        |c, var, v| {
            c.loader.max_inflated = Some(parse_num(var, &v)?);
            Ok(())
        },
    ),
    var(
        "NEFFLD_MAX_MEMBERS",
        Seam::Loader,
        "131072",
        "ceiling on the tar entries of a NEFF, for every command (`inspect`, `verify`, `extract`, `load`, `plan`; `pack` warns when it writes more)",
        |c, var, v| {
            c.loader.max_members = Some(parse_num(var, &v)?);
            Ok(())
        },
    ),
    NEFFLD_MAX_NEFF_SIZE,
    NEFFLD_MAX_STEPS,
    var(
        "NEFFLD_MAX_HEADROOM",
        Seam::Loader,
        "16777216",
        "ceiling on the allocations the copies a `plan`'s headroom counts make, every NEFF on every distinct core together (each counts within an equal part of what is left, then says \"at least\"); load, verify and the C library do not use it",
        |c, var, v| {
            c.loader.max_headroom = parse_num(var, &v)?;
            Ok(())
        },
    ),
    var(
        "NEFFLD_CHECK",
        Seam::Loader,
        "off",
        "run the staged-model check after every load (`--check`)",
        |c, var, v| {
            c.loader.check = parse_bool(var, &v)?;
            Ok(())
        },
    ),
    var(
        "NEFFLD_CACHE_SLOTS",
        Seam::Loader,
        "1",
        "parse-cache slots (1 is the reference runtime's; 0 is taken as 1)",
        |c, var, v| {
            c.loader.cache_slots = parse_num::<usize>(var, &v)?.max(1);
            Ok(())
        },
    ),
    var(
        "NEFFLD_CACHE_RETAIN",
        Seam::Loader,
        "0",
        "parses kept after their loads end (0 keeps none, as the reference)",
        |c, var, v| {
            c.loader.cache_retain = parse_num(var, &v)?;
            Ok(())
        },
    ),
    var(
        "NEFFLD_CACHE_RETAIN_BYTES",
        Seam::Loader,
        "1 GiB",
        "ceiling on the bytes of the kept parses",
        |c, var, v| {
            c.loader.cache_retain_bytes = parse_num(var, &v)?;
            Ok(())
        },
    ),
    var(
        "NEFFLD_FANOUT_MIN_BYTES",
        Seam::Loader,
        "16 MiB",
        "a multi-core load builds its cores on threads only above this many bytes (a plan builds them one after another)",
        |c, var, v| {
            c.loader.fanout_min_bytes = parse_num(var, &v)?;
            Ok(())
        },
    ),
    var(
        "NEFFLD_REPLAY",
        Seam::Loader,
        "on in `plan`, off elsewhere",
        "a further load of a NEFF already staged on the same physical cores makes that staging's device requests again instead of staging anew (only on devices that keep no bytes, without `--check`; `plan --env NEFFLD_REPLAY=0` stages every load, with the same report)",
        |c, var, v| {
            c.loader.replay = Some(parse_bool(var, &v)?);
            Ok(())
        },
    ),
    NEFFLD_LOG,
    NEFFLD_MEM_TABLE_DIR,
];

/// docs/cli.md's tables of variables, one per [`Seam`], as the table
/// above defines them.
pub fn markdown() -> String {
    let mut out = String::new();
    for seam in Seam::ALL {
        out.push_str(&format!(
            "**{}**\n\n| variable | default | since | read by | what it sets |\n|---|---|---|---|---|\n",
            seam.title()
        ));
        for v in VARIABLES.iter().filter(|v| v.seam == seam) {
            let reader = match v.reader {
                Reader::Runtime => "every runtime",
                Reader::Plan => "`plan`",
                Reader::Stream => "a stream's read",
                Reader::CLibrary => "the C library",
            };
            let since = v.since.map_or("every line".to_string(), |l| l.to_string());
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                v.name,
                v.default_text(),
                since,
                reader,
                v.doc_text()
            ));
        }
        out.push('\n');
    }
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One definition a name, each with a doc; a variable that only a line
    /// after the oldest has is read after `NEFFLD_RUNTIME`, which decides
    /// whether it is read.
    #[test]
    fn every_variable_is_defined_once_and_documented() {
        let mut names: Vec<&str> = VARIABLES.iter().map(|v| v.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a variable defined twice");
        let runtime = VARIABLES
            .iter()
            .position(|v| v.name == "NEFFLD_RUNTIME")
            .unwrap();
        for (i, v) in VARIABLES.iter().enumerate() {
            assert!(!v.doc.is_empty() && !v.default.is_empty(), "{}", v.name);
            if v.since.is_some() {
                assert!(
                    i > runtime,
                    "{} is applied before the line is known",
                    v.name
                );
            }
        }
        assert_eq!(named("NEFFLD_MAX_STEPS").unwrap().reader, Reader::Plan);
        assert!(named("NEFFLD_NOPE").is_none());
        assert!(!NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG.read_under(RuntimeLine::V2_32));
        assert!(NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG.read_under(RuntimeLine::V2_33));
        // A start-up delta's switch is a variable of the table, read from
        // the line that brought the delta.
        for f in crate::line::facts::FACTS {
            for d in f.start {
                if let Some(name) = d.off_by {
                    let v = named(name).unwrap_or_else(|| panic!("{name} is no variable"));
                    assert!(v.read_under(f.line), "{name} under {}", f.line);
                }
            }
        }
        // Each variable sets its own seam's part of the configuration.
        for v in VARIABLES.iter().filter(|v| v.reader != Reader::CLibrary) {
            let base = RuntimeConfig::default();
            let changed = [
                "2",
                "1",
                "0",
                "trn1",
                "2.30",
                "null",
                "h:1",
                "trn2.48xlarge",
            ]
            .into_iter()
            .find_map(|value| {
                let mut c = base.clone();
                (v.apply(&mut c, value.into()).is_ok() && c != base).then_some(c)
            })
            .unwrap_or_else(|| panic!("{}: no sample value changes anything", v.name));
            let moved = [
                (Seam::Topology, changed.topology != base.topology),
                (Seam::Libnrt, changed.libnrt != base.libnrt),
                (Seam::Loader, changed.loader != base.loader),
            ];
            for (seam, differs) in moved {
                assert_eq!(differs, seam == v.seam, "{} ({seam:?})", v.name);
            }
        }
        let md = markdown();
        assert!(
            md.contains(&format!("`{}`, on every chip", RuntimeLine::NEWEST)),
            "{md}"
        );
        assert_eq!(md.matches("\n| `").count(), VARIABLES.len());
    }
}
