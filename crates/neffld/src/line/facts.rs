//! One row of facts per runtime line: what a line is (version, library,
//! SDK, date), which captured line it carries over on each chip, its
//! documented switches, what its runtime takes at start beyond the rows it
//! carries over, the C calls it adds, and the documented facts behind all
//! of these with their sources.
//!
//! Each row is built from the one before ([`LineFacts::next`], then a
//! struct update of what the release notes change), as one set of tunables
//! is derived from another: a new line is one variant of [`RuntimeLine`]
//! and one row in [`FACTS`], and every list of lines a user sees (`ALL`,
//! parsing, display, the command's help and accepted values, the Python
//! stub, the JSON schema, docs/cli.md) comes from the table or is checked
//! against it by a test.

use std::fmt;
use std::str::FromStr;

use super::Captured;
use crate::device::MemUsage;
use crate::Arch;

/// A release line of the runtime: what a user asks for (`--runtime`,
/// `NEFFLD_RUNTIME`) and what reports name.
///
/// Lines up to 2.30 were captured on hardware, and each has its own rules.
/// The later ones have no capture: what their release notes and
/// documentation say changed is a row of [`FACTS`], and everything else a
/// load depends on — image bodies, ucode, ring sizes, what the runtime
/// holds when it starts — carries over from the newest captured line of the
/// chip ([`RuntimeLine::captured_line`]). New lines are added as the
/// runtime moves on, so a `match` on this enum needs a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RuntimeLine {
    /// Runtime 2.23, the oldest captured line.
    V2_23,
    /// Runtime 2.25, captured.
    V2_25,
    /// Runtime 2.27, captured.
    V2_27,
    /// Runtime 2.30, the newest captured line.
    V2_30,
    /// Runtime 2.31 (from its documentation; the rest from 2.30).
    V2_31,
    /// Runtime 2.32 (from its documentation; the rest from 2.30).
    V2_32,
    /// Runtime 2.33, which brought the contiguous scratchpad.
    V2_33,
    /// Runtime 2.34.
    V2_34,
    /// Runtime 2.35 (Neuron SDK 2.33), which reserves device memory for
    /// DMA profiling and adds the tensor operations.
    V2_35,
}

/// Implicit async execution (`NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS`)
/// on a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImplicitAsync {
    /// Taken without a word.
    Supported,
    /// Taken, with a warning when the runtime starts.
    Deprecated,
    /// No longer supported: the variable has no effect, and the runtime
    /// says so when it starts.
    Removed,
}

/// The documented switches of a line: what it does differently from the
/// lines before it, each a plain value a load consults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Switches {
    /// The shared scratchpad is one contiguous region of 64 MiB pages by
    /// default where the chip and logical-core size allow it, and a load
    /// whose region cannot grow fails
    /// ([`crate::config::RuntimeConfig::scratchpad_mode`]).
    pub contiguous_scratchpad: bool,
    /// `nrt_tensor_allocate` takes `NRT_TENSOR_PLACEMENT_VIRTUAL`.
    pub virtual_placement: bool,
    /// A refused allocation's report holds the usage table with a row per
    /// NEFF.
    pub neff_usage_table: bool,
    /// `NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG` exists.
    pub oom_log_switch: bool,
    /// What implicit async execution is on the line.
    pub implicit_async: ImplicitAsync,
    /// Replica groups (communicators) one NEFF may use: a collectives load
    /// refuses a subgraph that declares more replica-group sets, as the
    /// runtime's replica-group parse numbers them below the cap (the
    /// refusal's status is not public: docs/decisions.md, "Collectives").
    pub replica_group_cap: u32,
    /// The ranks of a replica group compare a signature of their
    /// collectives (operation, size, peer, in order) when they bootstrap
    /// at load; before, the runtime compared how many collectives each
    /// rank had, and nothing else (`plan --world` names the difference as
    /// the line's runtime would log it).
    pub cc_signature_check: bool,
}

/// Memory a line's runtime allocates for itself on each physical core when
/// it starts, beyond the start-up rows of the captured line it carries
/// over ([`crate::memory::start_plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct StartDelta {
    /// The runtime's usage type it is charged to (so the usage table's
    /// column and the profiler's row follow).
    #[serde(serialize_with = "usage_name")]
    pub usage: MemUsage,
    /// Bytes on each core of `per` the runtime starts.
    pub bytes: u64,
    /// Whether `bytes` is taken per physical or per logical core.
    pub per: Per,
    /// The variable whose value `0` turns it off, if one does.
    pub off_by: Option<&'static str>,
    /// What it is for, in a few words ("host-device DMA profiling"), for
    /// reports and plans.
    pub what: &'static str,
}

impl StartDelta {
    /// In a few words: "64 MiB per NeuronCore reserved at start for
    /// host-device DMA profiling (Profiler Buffers)".
    pub fn summary(&self) -> String {
        format!(
            "{} per {} reserved at start for {}",
            mib(self.bytes),
            self.per.noun(),
            self.what
        )
    }
}

/// `bytes` in whole MiB where it is a whole number of them.
pub(crate) fn mib(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        crate::text::count(bytes, "byte")
    }
}

/// What a start-up delta is counted per.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Per {
    /// Every physical core the runtime starts.
    PhysicalCore,
    /// Every logical core (the NeuronCore a program sees), charged on its
    /// first physical core; at LNC 1 the same as [`Per::PhysicalCore`].
    LogicalCore,
}

impl Per {
    /// What users call one: "NeuronCore" (the logical core a program
    /// sees) or "physical core".
    pub fn noun(self) -> &'static str {
        match self {
            Per::PhysicalCore => "physical core",
            Per::LogicalCore => "NeuronCore",
        }
    }
}

fn usage_name<S: serde::Serializer>(u: &MemUsage, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(u.name())
}

/// A fact of a line's documentation and where it is stated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Note {
    /// The fact, in neffld's words.
    pub fact: &'static str,
    /// Where it is stated (the SDK's release notes or documentation page).
    pub source: &'static str,
    /// Whether a load under the line reproduces it; where not, the fact
    /// says why.
    pub reproduced: bool,
}

const fn note(fact: &'static str, source: &'static str) -> Note {
    Note {
        fact,
        source,
        reproduced: true,
    }
}

const fn unreproduced(fact: &'static str, source: &'static str) -> Note {
    Note {
        fact,
        source,
        reproduced: false,
    }
}

/// One row: everything neffld knows of a runtime line.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct LineFacts {
    /// The line.
    pub line: RuntimeLine,
    /// `(major, minor)`.
    pub version: (u8, u8),
    /// The library's whole version: the shipped package for a documented
    /// line, the one the captures were taken with for a captured line.
    pub library: &'static str,
    /// The Neuron SDK release that shipped it, when known.
    pub sdk: Option<&'static str>,
    /// That release's date (`YYYY-MM-DD`), when known.
    pub date: Option<&'static str>,
    /// Which captured line a load follows on trn1 and inf2, trn2, trn3
    /// (in [`Arch::ALL`] order) for what the line does not document.
    carries: [Captured; 3],
    /// The documented switches.
    pub switches: Switches,
    /// What the runtime takes at start beyond the carried rows, every
    /// line's since the captured one (a row inherits its predecessor's).
    pub start: &'static [StartDelta],
    /// The C entry points this line adds to libnrt.
    pub c_calls: &'static [&'static str],
    /// This line's documented facts, with their sources (what it changed;
    /// what it keeps is its predecessors').
    pub notes: &'static [Note],
}

impl LineFacts {
    /// The row of `line`, following this one: the same switches, carried
    /// lines and start-up memory, with nothing of its own yet (no release,
    /// C calls or notes).
    const fn next(self, line: RuntimeLine, version: (u8, u8), library: &'static str) -> LineFacts {
        LineFacts {
            line,
            version,
            library,
            sdk: None,
            date: None,
            c_calls: &[],
            notes: &[],
            ..self
        }
    }

    /// The captured line whose rules a load under this line follows on
    /// `arch`.
    pub fn carried_from(&self, arch: Arch) -> RuntimeLine {
        self.captured(arch).line()
    }

    pub(crate) fn captured(&self, arch: Arch) -> Captured {
        match arch {
            Arch::Sunda => self.carries[0],
            Arch::Cayman => self.carries[1],
            Arch::Mariana => self.carries[2],
        }
    }

    /// Whether the line was captured on hardware (on some chip).
    pub fn captured_on_hardware(&self) -> bool {
        self.carries.iter().any(|c| c.line() == self.line)
    }
}

const SDK_NOTES: &str = "Neuron SDK release notes, Neuron Runtime component";
const DEVMEM: &str = "Neuron Runtime documentation, \"Device memory\" (neuron-runtime/explore/device-memory)";

const V2_23: LineFacts = LineFacts {
    line: RuntimeLine::V2_23,
    version: (2, 23),
    library: "2.23.27",
    sdk: None,
    date: None,
    carries: [Captured::V2_23; 3],
    switches: Switches {
        contiguous_scratchpad: false,
        virtual_placement: true,
        neff_usage_table: false,
        oom_log_switch: false,
        implicit_async: ImplicitAsync::Supported,
        replica_group_cap: 12,
        cc_signature_check: false,
    },
    start: &[],
    c_calls: &[],
    notes: &[note(
        "6 captures of real NEFFs on trn1 core 0",
        "docs/reference/runtime-lines.md",
    )],
};

const V2_25: LineFacts = LineFacts {
    carries: [Captured::V2_25; 3],
    notes: &[note(
        "2 captures of one NEFF on trn1 core 0 (its preamble body is not known)",
        "docs/reference/runtime-lines.md",
    )],
    ..V2_23.next(RuntimeLine::V2_25, (2, 25), "2.25.57")
};

const V2_27: LineFacts = LineFacts {
    carries: [Captured::V2_27; 3],
    switches: Switches {
        neff_usage_table: true,
        ..V2_25.switches
    },
    notes: &[
        note(
            "44 captures of real NEFFs on trn2 cores 4 and 5",
            "docs/reference/runtime-lines.md",
        ),
        note(
            "a refused allocation's report holds the usage table with a row per NEFF (from 2.26.42)",
            "Neuron SDK 2.24 release notes, Neuron Runtime: a NEFF-level memory breakdown table in out-of-memory errors",
        ),
    ],
    ..V2_25.next(RuntimeLine::V2_27, (2, 27), "2.27.23")
};

const V2_30: LineFacts = LineFacts {
    sdk: Some("2.28.0"),
    date: Some("2026-02-26"),
    carries: [Captured::V2_30; 3],
    notes: &[note(
        "10 captures of real NEFFs on trn2, every word of every image",
        "testdata/captures",
    )],
    ..V2_27.next(RuntimeLine::V2_30, (2, 30), "2.30.51.0")
};

const V2_31: LineFacts = LineFacts {
    sdk: Some("2.29.0"),
    date: Some("2026-04-09"),
    // No capture: the newest captured line of each chip whose image layout
    // is known — 2.30 on trn2 (and trn3, never captured), 2.23 on trn1
    // (2.25's preamble is not known).
    carries: [Captured::V2_23, Captured::V2_30, Captured::V2_30],
    switches: Switches {
        cc_signature_check: true,
        ..V2_30.switches
    },
    c_calls: &["nrt_cc_create_stream", "nrt_get_attached_efa_bdf"],
    notes: &[
        note(
            "the ranks of a replica group compare a signature of their collectives (operation, size, peer, in order) when they bootstrap at load, and a mismatch fails the load; older runtimes compared how many collectives each rank had",
            "public reverse-engineering notes on libnrt 2.31 (enc_calculate_signature, get_nccl_comm)",
        ),
        note("async API 3.0 (nrta_*), with a logical-core index on async tensor calls", SDK_NOTES),
        unreproduced(
            "the 512 queue-set-instance cap of a NEFF is removed; no line applies it here, since which NEFF structure counts is not public",
            SDK_NOTES,
        ),
        unreproduced(
            "the trn2 kernel-code carveout grows from 16 KB to 32 KB; dynamically loaded kernel code is not modelled",
            SDK_NOTES,
        ),
    ],
    ..V2_30.next(RuntimeLine::V2_31, (2, 31), "2.31.24.0")
};

const V2_32: LineFacts = LineFacts {
    sdk: Some("2.30.0"),
    date: Some("2026-05-21"),
    switches: Switches {
        virtual_placement: false,
        implicit_async: ImplicitAsync::Deprecated,
        ..V2_31.switches
    },
    c_calls: &[
        "nrta_event_register_xu_completion",
        "nrta_event_register_seq_id_completion",
    ],
    notes: &[
        note("NRT_TENSOR_PLACEMENT_VIRTUAL is removed: nrt_tensor_allocate refuses it", SDK_NOTES),
        note(
            "implicit async execution is deprecated: a warning when NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS is set",
            SDK_NOTES,
        ),
        unreproduced(
            "a NEFF's revision ID is checked against the device; the field, the rule and the message are not public",
            SDK_NOTES,
        ),
        unreproduced(
            "mesh-collective proxy buffers are shared per stream, and reads get a DMA queue of their own; their sizes are not public",
            SDK_NOTES,
        ),
    ],
    ..V2_31.next(RuntimeLine::V2_32, (2, 32), "2.32.31.0")
};

const V2_33: LineFacts = LineFacts {
    sdk: Some("2.31.0"),
    date: Some("2026-07-07"),
    switches: Switches {
        contiguous_scratchpad: true,
        oom_log_switch: true,
        implicit_async: ImplicitAsync::Removed,
        ..V2_32.switches
    },
    c_calls: &["nrt_debug_log_oom_report", "nrt_dump_device_allocation_info"],
    notes: &[
        note(
            "the shared scratchpad is one contiguous region grown in 64 MB steps by default (trn1, inf2; trn2 and trn3 at LNC 2); a region that cannot grow fails the load",
            DEVMEM,
        ),
        note(
            "NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG=0 silences the report of a refused device allocation",
            SDK_NOTES,
        ),
        note(
            "implicit async execution is no longer supported (the SDK 2.31 announcement; the runtime notes say 2.34)",
            "Neuron SDK 2.31 announcement of the end of implicit async mode",
        ),
        unreproduced(
            "nrt_get_model_tensor_info sizes _x4 packed tensors in full; how a NEFF marks such a tensor is not public",
            SDK_NOTES,
        ),
    ],
    ..V2_32.next(RuntimeLine::V2_33, (2, 33), "2.33.10.0")
};

const V2_34: LineFacts = LineFacts {
    sdk: Some("2.32.0"),
    date: Some("2026-08-17"),
    switches: Switches {
        replica_group_cap: 16,
        ..V2_33.switches
    },
    c_calls: &["nrt_inspect_export"],
    notes: &[
        note(
            "a NEFF may use 16 replica groups (12 before, when NEFFs with 13 to 16 failed): a collectives load refuses a subgraph declaring more replica-group sets",
            SDK_NOTES,
        ),
        unreproduced(
            "nrta_execute_schedule keeps a buffer pool; its size is not public",
            SDK_NOTES,
        ),
    ],
    ..V2_33.next(RuntimeLine::V2_34, (2, 34), "2.34.10.0")
};

const SDK_2_33: &str = "Neuron SDK 2.33.0 release notes, Neuron Runtime 2.35 (docs/reference/documented-lines.md §2)";

/// 2.35's reservation for host-device DMA profiling: 64 MB per NeuronCore
/// by default (driver 2.31 or later). The per-logical-core reading, the
/// Profiler Buffers category and the switch are neffld's
/// (docs/decisions.md, "Runtime lines").
const DMA_PROFILING: StartDelta = StartDelta {
    usage: MemUsage::Notification,
    bytes: 64 << 20,
    per: Per::LogicalCore,
    off_by: Some("NEFFLD_DMA_PROFILING"),
    what: "host-device DMA profiling (Profiler Buffers)",
};

const V2_35: LineFacts = LineFacts {
    sdk: Some("2.33.0"),
    date: Some("2026-10-19"),
    start: &[DMA_PROFILING],
    c_calls: &[
        "nrt_tensor_cast",
        "nrta_tensor_cast",
        "nrt_tensor_compute",
        "nrta_tensor_compute",
        "nrt_inspect_config_set_device_profile_num_warmup",
    ],
    notes: &[
        note(
            "host-to-device and device-to-host DMA profiling reserves 64 MB of device memory per NeuronCore by default (driver 2.31 or later); which category, per logical or physical core, and any switch are not stated",
            SDK_2_33,
        ),
        note(
            "nrt_tensor_cast and nrt_tensor_compute (sync and nrta_ async): dtype conversion and element-wise ADD, MIN or MAX on the device, no NEFF; compute on trn2 and trn3 only",
            SDK_2_33,
        ),
        note(
            "nrt_inspect_config_set_device_profile_num_warmup: model-mode device profiling skips each model's first executions",
            SDK_2_33,
        ),
        unreproduced(
            "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP, the same as a variable; nothing executes here, so it is not read",
            "Neuron Explorer documentation, environment variables (SDK 2.33.0)",
        ),
        unreproduced(
            "on trn3 GpSimd computes activation functions in high-precision FP32; execution only",
            SDK_2_33,
        ),
        unreproduced(
            "2.35.33 (SDK 2.33.1) fixes a race between HWDGE and other transpose DMA and checks DmaGatherTranspose indices in groups of 16; execution only",
            "Neuron SDK 2.33.1 release notes",
        ),
    ],
    ..V2_34.next(RuntimeLine::V2_35, (2, 35), "2.35.30.0")
};

/// Every line's facts, oldest first; a line's row is
/// `FACTS[line as usize]`.
pub const FACTS: &[LineFacts] = &[
    V2_23, V2_25, V2_27, V2_30, V2_31, V2_32, V2_33, V2_34, V2_35,
];

/// The table's order is the enum's, and versions rise: checked when the
/// crate builds.
const _: () = {
    let mut i = 0;
    while i < FACTS.len() {
        assert!(FACTS[i].line as usize == i, "FACTS out of RuntimeLine order");
        if i > 0 {
            let (a, b) = (FACTS[i - 1].version, FACTS[i].version);
            assert!(a.0 < b.0 || (a.0 == b.0 && a.1 < b.1), "versions must rise");
        }
        i += 1;
    }
};

const fn all() -> [RuntimeLine; FACTS.len()] {
    let mut out = [RuntimeLine::V2_23; FACTS.len()];
    let mut i = 0;
    while i < FACTS.len() {
        out[i] = FACTS[i].line;
        i += 1;
    }
    out
}

impl RuntimeLine {
    /// Every line, oldest first ([`FACTS`]'s order).
    pub const ALL: [RuntimeLine; FACTS.len()] = all();

    /// The newest line: the one users run, and so the line a load runs
    /// under unless told otherwise, on every chip. Older lines are asked
    /// for by name, and stay exact where captures prove them.
    pub const NEWEST: RuntimeLine = FACTS[FACTS.len() - 1].line;

    /// The line's row of facts.
    pub fn facts(self) -> &'static LineFacts {
        &FACTS[self as usize]
    }

    /// `(major, minor)`.
    pub fn version(self) -> (u8, u8) {
        self.facts().version
    }

    /// The line a runtime version `major.minor.*` belongs to.
    pub fn of_version(major: u64, minor: u64) -> Option<RuntimeLine> {
        RuntimeLine::ALL
            .into_iter()
            .find(|l| (u64::from(l.version().0), u64::from(l.version().1)) == (major, minor))
    }

    /// The lines as users write them, oldest first: `2.23, 2.25, …`, the
    /// last joined by `last` (`"or"`, `"and"`), for help texts and
    /// messages.
    pub fn list(last: &str) -> String {
        let names: Vec<String> = RuntimeLine::ALL.iter().map(|l| l.to_string()).collect();
        match names.split_last() {
            Some((tail, head)) if !head.is_empty() => format!("{} {last} {tail}", head.join(", ")),
            _ => names.join(""),
        }
    }

    /// The captured line whose rules a load under this line follows on
    /// `arch`: the line itself when it was captured; after 2.30, the newest
    /// captured line of the chip whose image layout is known.
    pub fn captured_line(self, arch: Arch) -> RuntimeLine {
        self.facts().carried_from(arch)
    }

    testkit_pub! {
        /// [`RuntimeLine::captured_line`] as the stages take it.
        fn captured(self, arch: Arch) -> Captured {
            self.facts().captured(arch)
        }
    }

    /// Whether the runtime of this line keeps each core's shared scratchpad
    /// as one contiguous region of 64 MiB pages by default, where the chip
    /// and logical-core size allow it, and fails a load whose region cannot
    /// grow (from 2.33). Up to 2.32 the mode exists only when asked for,
    /// and as the older lines' experimental mode: a region that cannot grow
    /// is capped and the variables beyond it get private allocations
    /// (docs/reference/stage.md §6.5).
    pub fn contiguous_scratchpad(self) -> bool {
        self.facts().switches.contiguous_scratchpad
    }

    /// Whether `nrt_tensor_allocate` takes `NRT_TENSOR_PLACEMENT_VIRTUAL`
    /// (removed in 2.32).
    pub fn virtual_placement(self) -> bool {
        self.facts().switches.virtual_placement
    }

    /// Whether a refused allocation's report holds the usage table with a
    /// row per NEFF (from runtime 2.26.42, so 2.27 on). 2.23 and 2.25
    /// printed an "Overall HBM usage" list the device-memory documentation
    /// shows only in part.
    pub fn neff_usage_table(self) -> bool {
        self.facts().switches.neff_usage_table
    }

    /// Whether `NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG` exists (2.33).
    pub fn oom_log_switch(self) -> bool {
        self.facts().switches.oom_log_switch
    }

    /// What implicit async execution is on this line.
    pub fn implicit_async(self) -> ImplicitAsync {
        self.facts().switches.implicit_async
    }

    /// Whether libnrt of this line has the C entry point `call`: every call
    /// no line of [`FACTS`] adds (the older API), and those a line up to
    /// this one adds. The hook for the calls of a new line: the C library
    /// refuses such a call under an older line.
    pub fn has_call(self, call: &str) -> bool {
        RuntimeLine::adding(call).is_none_or(|l| l <= self)
    }

    /// The line that adds the C entry point `call`, if a line of [`FACTS`]
    /// does.
    pub fn adding(call: &str) -> Option<RuntimeLine> {
        FACTS
            .iter()
            .find(|f| f.c_calls.contains(&call))
            .map(|f| f.line)
    }

    /// What a load under this line on `arch` reproduces, and from where:
    /// for a line without captures of its own on the chip, which of its
    /// facts come from its documentation and which carry over from a
    /// captured line.
    pub fn provenance(self, arch: Arch) -> LineProvenance {
        let facts = self.facts();
        let captured = facts.captured(arch);
        // Its own captures, of this chip: a line captured on another chip
        // only (2.23 on trn2, 2.30 on trn1 or trn3) carries them over too.
        let own = captured.line() == self && captured.chip() == arch;
        let base = captured.line().facts();
        let (now, then) = (&facts.switches, &base.switches);
        let mut documented: Vec<String> = Vec::new();
        if now.contiguous_scratchpad && !then.contiguous_scratchpad {
            documented.push(
                "contiguous shared scratchpad by default (trn1, inf2; trn2 and trn3 at LNC 2), 64 MiB steps".into(),
            );
        }
        if !now.virtual_placement && then.virtual_placement {
            documented.push("NRT_TENSOR_PLACEMENT_VIRTUAL refused".into());
        }
        if now.neff_usage_table && !then.neff_usage_table {
            documented
                .push("a usage table with a row per NEFF in a refused allocation's report".into());
        }
        if now.oom_log_switch && !then.oom_log_switch {
            documented.push("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG read".into());
        }
        if now.implicit_async != then.implicit_async {
            documented.push(
                match now.implicit_async {
                    ImplicitAsync::Supported => "implicit async execution supported",
                    ImplicitAsync::Deprecated => "implicit async execution deprecated (a warning)",
                    ImplicitAsync::Removed => "implicit async execution removed (a warning)",
                }
                .into(),
            );
        }
        let new_start = facts.start.get(base.start.len()..).unwrap_or_default();
        documented.extend(new_start.iter().map(StartDelta::summary));
        // The notes of the lines between the captured one and this one.
        let notes = FACTS
            .iter()
            .filter(|f| f.line > base.line && f.line <= self)
            .flat_map(|f| f.notes.iter().map(move |n| LineNote { line: f.line, note: *n }))
            .collect();
        LineProvenance {
            line: self,
            captured_by: captured.line(),
            captured_on: captured.chip().instance(),
            carried_over: if own {
                Vec::new()
            } else {
                vec![
                    "instruction image layout, preambles and postambles",
                    "ring sizes",
                    "what the runtime allocates when it starts (ucode, rings, pools)",
                    "memory rows",
                ]
            },
            documented,
            notes,
        }
    }
}

/// Where a line's behaviour comes from ([`RuntimeLine::provenance`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LineProvenance {
    /// The line asked for.
    #[serde(serialize_with = "display")]
    pub line: RuntimeLine,
    /// The captured line whose rules the load follows for what `line` does
    /// not document: `line` itself when it was captured.
    #[serde(serialize_with = "display")]
    pub captured_by: RuntimeLine,
    /// The chip `captured_by` was captured on (`trn1`, `trn2`).
    pub captured_on: &'static str,
    /// What the load takes from its line's documentation, against
    /// `captured_by`.
    pub documented: Vec<String>,
    /// What the load takes from `captured_by` (empty when that is `line`,
    /// captured on the load's own chip).
    pub carried_over: Vec<&'static str>,
    /// The documented facts of every line after `captured_by` up to
    /// `line`, oldest first, with their sources and whether a load
    /// reproduces them.
    pub notes: Vec<LineNote>,
}

/// A documented fact of one line ([`LineProvenance::notes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LineNote {
    /// The line that documents it.
    #[serde(serialize_with = "display")]
    pub line: RuntimeLine,
    /// The fact and its source.
    #[serde(flatten)]
    pub note: Note,
}

fn display<S: serde::Serializer>(line: &RuntimeLine, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(line)
}

impl fmt::Display for RuntimeLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (major, minor) = self.version();
        write!(f, "{major}.{minor}")
    }
}

/// `2.27`, or a whole version of the line such as `2.27.23`.
impl FromStr for RuntimeLine {
    type Err = String;

    fn from_str(s: &str) -> Result<RuntimeLine, String> {
        let bad = || {
            format!(
                "unknown runtime line '{s}' (expected one of {}, or a version of one such as 2.27.23)",
                RuntimeLine::ALL.map(|l| l.to_string()).join(", ")
            )
        };
        let parts: Vec<&str> = s.trim().split('.').collect();
        let numbers: Option<Vec<u64>> = parts
            .iter()
            .map(|p| {
                p.bytes()
                    .all(|b| b.is_ascii_digit())
                    .then(|| p.parse().ok())
                    .flatten()
            })
            .collect();
        let (major, minor) = match numbers.as_deref() {
            Some([major, minor, ..]) if parts.len() <= 4 => (*major, *minor),
            _ => return Err(bad()),
        };
        RuntimeLine::of_version(major, minor).ok_or_else(bad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row is its predecessor's but for what the release notes change:
    /// switches never go back, start-up deltas only grow, and a captured
    /// line carries itself.
    #[test]
    fn each_row_builds_on_the_one_before() {
        for w in FACTS.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            assert!(b.start.starts_with(a.start), "{}", b.line);
            assert!(b.switches.replica_group_cap >= a.switches.replica_group_cap);
            assert!(a.switches.contiguous_scratchpad <= b.switches.contiguous_scratchpad);
            assert!(a.switches.oom_log_switch <= b.switches.oom_log_switch);
            assert!(a.switches.cc_signature_check <= b.switches.cc_signature_check);
            assert!(a.switches.virtual_placement >= b.switches.virtual_placement);
        }
        for f in FACTS {
            assert_eq!(f.library.split('.').take(2).collect::<Vec<_>>().join("."), f.line.to_string());
            assert!(!f.notes.is_empty(), "{}: a row says where its facts come from", f.line);
            for c in f.c_calls {
                assert_eq!(RuntimeLine::adding(c), Some(f.line), "{c} added twice");
            }
        }
        assert!(RuntimeLine::V2_33.has_call("nrt_debug_log_oom_report"));
        assert!(!RuntimeLine::V2_32.has_call("nrt_debug_log_oom_report"));
        assert!(RuntimeLine::V2_23.has_call("nrt_load"));
        assert!(RuntimeLine::V2_35.has_call("nrt_tensor_cast"));
        assert!(!RuntimeLine::V2_34.has_call("nrt_tensor_cast"));
    }

    /// Line 2.35 as SDK 2.33.0's release notes give it (component table and
    /// runtime notes): libnrt 2.35.30.0 of 2026-10-19, 64 MB more per
    /// NeuronCore at start; SDK 2.33.1's 2.35.33 is the
    /// same line, and SDK 2.34's runtime, whose version is not known, is no
    /// line here.
    #[test]
    fn line_2_35_is_sdk_2_33s_runtime() {
        let f = RuntimeLine::V2_35.facts();
        assert_eq!((f.library, f.sdk, f.date), ("2.35.30.0", Some("2.33.0"), Some("2026-10-19")));
        let [d] = f.start else { panic!("{:?}", f.start) };
        assert_eq!((d.bytes, d.per, d.usage), (64 << 20, Per::LogicalCore, MemUsage::Notification));
        assert_eq!("2.35.33".parse(), Ok(RuntimeLine::V2_35));
        assert_eq!(RuntimeLine::V2_35.to_string(), "2.35");
        assert!("2.36".parse::<RuntimeLine>().is_err());
        assert!(RuntimeLine::V2_34.facts().start.is_empty());
    }

    #[test]
    fn the_list_of_lines_reads_as_a_sentence() {
        let l = RuntimeLine::list("or");
        assert!(l.starts_with("2.23, 2.25, 2.27, 2.30, 2.31"), "{l}");
        assert!(l.ends_with(&format!(" or {}", RuntimeLine::NEWEST)), "{l}");
        assert_eq!(l.matches(", ").count(), RuntimeLine::ALL.len() - 2);
    }
}
