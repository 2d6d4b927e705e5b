//! The memory report: every view of device memory, as a projection of the
//! one ledger ([`crate::device::Ledger`]: bytes by physical core, owner and
//! usage type).
//!
//! - the profiler's 22 rows per core ([`CoreMemory`]), which captures record;
//! - the runtime's usage table ([`Column`], [`MemoryReport`]), which it prints
//!   when an allocation fails and writes to `neuron_mem_table_*.log`, and its
//!   per-NEFF breakdown at load;
//! - `nrt_get_vnc_memory_stats` ([`MemoryStats`]);
//! - what the CLI, Python and the maps show.
//!
//! Bytes are as requested (what the runtime's own reports count, e.g. 14,592
//! bytes of Tensor Instructions); what the allocator holds in 4 KiB granules
//! is [`HbmMemory::held`]. The mapping of the 22 usage types onto the usage
//! table's columns is [`Column::of`] (docs/reference/memory.md).

use std::fmt::Write as _;

use crate::api::{LoadError, Model, Runtime};
use crate::device::{
    AllocReq, ChargeRows, Device, DeviceError, Geometry, Ledger, MemUsage, Owner, CARVEOUT,
};
use crate::ids::{HModel, LCore, PCore};
use crate::line::{Captured, RuntimeLine};

pub use crate::device::Rows;

/// The requested bytes of each row.
fn requested(rows: &ChargeRows) -> Rows {
    let mut out = [0; MemUsage::COUNT];
    for (o, c) in out.iter_mut().zip(rows) {
        *o = c.requested;
    }
    out
}

/// The memory of one physical core in the profiler's 22 rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreMemory {
    /// The physical core.
    pub pcore: PCore,
    /// Held by the runtime itself: what it took when it started, and the
    /// shared scratchpad pages of the core's models.
    pub runtime: Rows,
    /// Held by the models loaded on the core and the client's tensors.
    pub model: Rows,
    /// Of `model`, what each loaded NEFF holds, by `H_MODEL`.
    pub models: Vec<(HModel, Rows)>,
}

impl CoreMemory {
    testkit_pub! {
        /// The core's memory on `dev` now.
        fn of(dev: &Device, pcore: PCore) -> CoreMemory {
            dev.with_ledger(|ledger| CoreMemory::from_ledger(ledger, pcore))
        }
    }

    testkit_pub! {
        /// The core's memory in `ledger`.
        fn from_ledger(ledger: &Ledger, pcore: PCore) -> CoreMemory {
            let mut runtime = [0; MemUsage::COUNT];
            let mut model = [0; MemUsage::COUNT];
            let mut models = Vec::new();
            for owner in ledger.owners(pcore) {
                let rows = requested(&ledger.rows_of(pcore, owner));
                let sum = if owner == Owner::Runtime {
                    &mut runtime
                } else {
                    &mut model
                };
                for (s, r) in sum.iter_mut().zip(rows) {
                    *s += r;
                }
                if let Owner::Model(h) = owner {
                    models.push((h, rows));
                }
            }
            CoreMemory {
                pcore,
                runtime,
                model,
                models,
            }
        }
    }

    /// Bytes of one row (runtime and model parts together).
    pub fn row(&self, usage: MemUsage) -> u64 {
        self.runtime[usage.index()] + self.model[usage.index()]
    }

    /// Every row in the profiler's order: (usage, runtime part, model part).
    pub fn rows(&self) -> impl Iterator<Item = (MemUsage, u64, u64)> + '_ {
        MemUsage::ALL
            .iter()
            .map(|&u| (u, self.runtime[u.index()], self.model[u.index()]))
    }

    /// Every row summed: the profiler's `Total`.
    pub fn total(&self) -> u64 {
        MemUsage::ALL.iter().map(|&u| self.row(u)).sum()
    }

    /// Every row, the runtime's and the models' parts together.
    fn all_rows(&self) -> Rows {
        let mut all = self.runtime;
        for (a, m) in all.iter_mut().zip(self.model) {
            *a += m;
        }
        all
    }

    /// The core in neuron-monitor's and neuron-top's categories.
    pub fn categories(&self) -> crate::report::categories::MonitorUsage {
        crate::report::categories::MonitorUsage::of(&self.all_rows())
    }

    /// The core in the usage table's columns.
    pub fn usage(&self) -> Usage {
        Usage::of(&self.all_rows())
    }
}

/// A row of the runtime's own list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKey {
    /// The row of one usage.
    Usage(MemUsage),
    /// The single `DMA Rings` row of the oldest runtimes (2.23), in place of
    /// the four DMA Rings rows.
    DmaRings,
}

/// One row as the runtime lists it: what it holds for itself and what the
/// models did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReportRow {
    /// Which row.
    pub key: RowKey,
    /// Bytes the runtime holds for itself in it.
    pub runtime: u64,
    /// Bytes the models hold in it.
    pub model: u64,
}

impl ReportRow {
    /// Both parts: the row's total.
    pub fn bytes(&self) -> u64 {
        self.runtime + self.model
    }
}

impl CoreMemory {
    /// The rows as the runtime of `line` lists them: every usage in the
    /// profiler's order; on the oldest lines ([`Captured::legacy_rows`])
    /// the four DMA Rings rows are one, and Generic shows only the
    /// runtime's part (2.23 reports 0 although its NEFFs' DVE tables are
    /// staged: it does not count them).
    pub(crate) fn report(&self, line: Captured) -> Vec<ReportRow> {
        let row = |u: MemUsage| ReportRow {
            key: RowKey::Usage(u),
            runtime: self.runtime[u.index()],
            model: self.model[u.index()],
        };
        if !line.legacy_rows() {
            return MemUsage::ALL.iter().map(|&u| row(u)).collect();
        }
        let mut rows: Vec<ReportRow> = MemUsage::ALL
            .iter()
            .filter(|&&u| u.index() < MemUsage::DmaRing.index())
            .map(|&u| ReportRow {
                model: if u == MemUsage::Generic {
                    0
                } else {
                    self.model[u.index()]
                },
                ..row(u)
            })
            .collect();
        let dma = &MemUsage::ALL[MemUsage::DmaRing.index()..];
        rows.push(ReportRow {
            key: RowKey::DmaRings,
            runtime: dma.iter().map(|u| self.runtime[u.index()]).sum(),
            model: dma.iter().map(|u| self.model[u.index()]).sum(),
        });
        rows
    }
}

/// What `nrt_get_vnc_memory_stats` reports for a logical core, with the
/// per-core rows it sums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryStats {
    /// Sum of every row of every physical core of the logical core.
    pub used: u64,
    /// HBM visible to the logical core.
    pub limit: u64,
    /// Each physical core of the logical core.
    pub cores: Vec<CoreMemory>,
}

impl MemoryStats {
    /// `nrt_get_vnc_memory_stats` for visible logical core `vnc` of `rt`.
    pub fn of_vnc(rt: &Runtime, vnc: u32) -> Result<MemoryStats, LoadError> {
        let (_, device, lcore) = rt.vnc_location(vnc)?;
        MemoryStats::of(device, lcore, rt.config().lnc_size()).map_err(LoadError::pipeline)
    }

    testkit_pub! {
        /// The report of logical core `lcore` (of `lnc` physical cores).
        fn of(dev: &Device, lcore: LCore, lnc: u32) -> Result<MemoryStats, DeviceError> {
            let limit = dev.vnc_memory_stats(lcore, lnc)?.limit;
            let pcores = dev.geometry().pcores_of(lcore, lnc)?;
            let cores: Vec<CoreMemory> = dev.with_ledger(|ledger| {
                pcores
                    .map(|c| CoreMemory::from_ledger(ledger, PCore(c)))
                    .collect()
            });
            Ok(MemoryStats {
                used: cores.iter().map(CoreMemory::total).sum(),
                limit,
                cores,
            })
        }
    }
}

/// A column of the runtime's usage table: the 22 usage types aggregated as
/// the runtime reports them to a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Column {
    /// Instruction streams and the runtime's code for them.
    ModelCode,
    /// Weights and other constants.
    ModelConstants,
    /// Input, output and client tensors.
    Tensors,
    /// The scratchpad the logical core's models share.
    SharedScratchpad,
    /// Scratchpads of one model alone.
    Scratchpad,
    /// What the runtime holds for itself.
    Runtime,
    /// DMA rings of inputs and outputs.
    DmaRingsIo,
    /// DMA rings of spill traffic.
    DmaRingsSpill,
    /// DMA rings of collectives.
    DmaRingsCollectives,
    /// The runtime's own DMA rings.
    DmaRingsRuntime,
    /// Collectives buffers.
    Collectives,
    /// Cross-device collectives buffers.
    XtCc,
    /// The profiler's buffers.
    ProfilerBuffers,
}

impl Column {
    /// How many columns the table has.
    pub const COUNT: usize = 13;

    /// The columns in the table's order.
    pub const ALL: [Column; Column::COUNT] = [
        Column::ModelCode,
        Column::ModelConstants,
        Column::Tensors,
        Column::SharedScratchpad,
        Column::Scratchpad,
        Column::Runtime,
        Column::DmaRingsIo,
        Column::DmaRingsSpill,
        Column::DmaRingsCollectives,
        Column::DmaRingsRuntime,
        Column::Collectives,
        Column::XtCc,
        Column::ProfilerBuffers,
    ];

    /// The column a usage type is reported under. The runtime documents
    /// the columns and that model code includes the microcode; which usage
    /// types make up Runtime is our reading of its figures
    /// (docs/reference/memory.md).
    pub fn of(usage: MemUsage) -> Column {
        use MemUsage as U;
        match usage {
            U::InstrPe | U::InstrAct | U::InstrPool | U::InstrDve | U::InstrSp | U::UcodeLib => {
                Column::ModelCode
            }
            U::Weight => Column::ModelConstants,
            U::Tensor => Column::Tensors,
            U::Scratchpad => Column::SharedScratchpad,
            U::ScratchpadNotShared => Column::Scratchpad,
            U::Generic | U::Io | U::DramSpill | U::ActTable | U::PoolStdio => Column::Runtime,
            U::DmaRingIo => Column::DmaRingsIo,
            U::DmaRingSpill => Column::DmaRingsSpill,
            U::DmaRingCollectives => Column::DmaRingsCollectives,
            U::DmaRing => Column::DmaRingsRuntime,
            U::Cc => Column::Collectives,
            U::XtCc => Column::XtCc,
            U::Notification => Column::ProfilerBuffers,
        }
    }

    /// The column's name as the runtime writes it in running text ("usage:
    /// tensors", "* model code: ...").
    pub fn name(self) -> &'static str {
        match self {
            Column::ModelCode => "model code",
            Column::ModelConstants => "model constants",
            Column::Tensors => "tensors",
            Column::SharedScratchpad => "shared scratchpad",
            Column::Scratchpad => "scratchpad",
            Column::Runtime => "runtime",
            Column::DmaRingsIo => "dma rings io",
            Column::DmaRingsSpill => "dma rings spill",
            Column::DmaRingsCollectives => "dma rings collectives",
            Column::DmaRingsRuntime => "dma rings runtime",
            Column::Collectives => "collectives",
            Column::XtCc => "xt cc",
            Column::ProfilerBuffers => "profiler buffers",
        }
    }

    /// The two header lines of the column in the usage table.
    fn header(self) -> (&'static str, &'static str) {
        match self {
            Column::ModelCode => ("Model", "Code"),
            Column::ModelConstants => ("Model", "Constants"),
            Column::Tensors => ("", "Tensors"),
            Column::SharedScratchpad => ("Shared", "Scratchpad"),
            Column::Scratchpad => ("", "Scratchpad"),
            Column::Runtime => ("", "Runtime"),
            Column::DmaRingsIo => ("DMA Rings", "IO"),
            Column::DmaRingsSpill => ("DMA Rings", "Spill"),
            Column::DmaRingsCollectives => ("DMA Rings", "Collectives"),
            Column::DmaRingsRuntime => ("DMA Rings", "Runtime"),
            Column::Collectives => ("", "Collectives"),
            Column::XtCc => ("", "XT CC"),
            Column::ProfilerBuffers => ("Profiler", "Buffers"),
        }
    }

    /// Cell width in the usage table.
    fn width(self) -> usize {
        match self {
            Column::DmaRingsCollectives | Column::Collectives => 11,
            _ => 10,
        }
    }

    /// Whether a NEFF's row has a figure here; the runtime prints `n/a`
    /// for what belongs to the core rather than to one NEFF.
    pub fn per_neff(self) -> bool {
        !matches!(
            self,
            Column::Tensors | Column::SharedScratchpad | Column::XtCc | Column::ProfilerBuffers
        )
    }
}

/// Bytes by usage-table column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage(pub [u64; Column::COUNT]);

impl Usage {
    /// The columns of 22 rows.
    pub fn of(rows: &Rows) -> Usage {
        let mut u = Usage::default();
        for usage in MemUsage::ALL {
            u.0[Column::of(usage) as usize] += rows[usage.index()];
        }
        u
    }

    /// Bytes in column `c`.
    pub fn get(&self, c: Column) -> u64 {
        self.0[c as usize]
    }

    /// The TOTAL column.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    fn add(&mut self, other: &Usage) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    /// What the runtime counts as one NEFF's total: its columns that are
    /// per NEFF.
    pub fn neff_total(&self) -> u64 {
        Column::ALL
            .iter()
            .filter(|c| c.per_neff())
            .map(|&c| self.get(c))
            .sum()
    }
}

/// The runtime's human-readable size: three decimals and the binary unit it
/// names B, KB, MB or GB (`96.065MB`, `0.000B`), rounded down as every size
/// neffld prints ([`crate::text::binary_floor`]).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let (value, unit) = crate::text::binary_floor(bytes, 3, UNITS.len() - 1);
    format!("{value}{}", UNITS[unit])
}

/// Memory of one HBM of a device and the cores that allocate from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HbmMemory {
    /// The HBM's index on the device.
    pub hbm: u32,
    /// The HBM's size.
    pub size: u64,
    /// The first address an allocation may take, after the firmware
    /// carve-out, in the runtime's form.
    pub base: u64,
    /// Bytes after the carve-out.
    pub allocatable: u64,
    /// What the allocator can hand out on it: its size less the firmware
    /// carve-out and what the runtime holds back before it starts.
    pub capacity: u64,
    /// What the allocator holds on it now, in 4 KiB granules: what an
    /// allocation is refused against.
    pub held: u64,
    /// The cores that allocate from it.
    pub cores: Vec<CoreMemory>,
}

impl HbmMemory {
    /// Whether `other` holds what this HBM holds but for which HBM, cores
    /// and NEFFs it is: the same sizes, its cores in the same order with
    /// the same figures, each with its NEFFs' figures in the same order
    /// (an HBM of the next ranks of one NEFF). Their usage tables differ
    /// only in their labels.
    pub fn reads_as(&self, other: &HbmMemory) -> bool {
        let sizes = |h: &HbmMemory| (h.size, h.allocatable, h.capacity, h.held, h.cores.len());
        let alike = |a: &CoreMemory, b: &CoreMemory| {
            (a.runtime, a.model, a.models.len()) == (b.runtime, b.model, b.models.len())
                && a.models
                    .iter()
                    .zip(&b.models)
                    .all(|((_, x), (_, y))| x == y)
        };
        sizes(self) == sizes(other)
            && self
                .cores
                .iter()
                .zip(&other.cores)
                .all(|(a, b)| alike(a, b))
    }

    /// Requested bytes of every core of the HBM.
    pub fn usage(&self) -> Usage {
        let mut u = Usage::default();
        for c in &self.cores {
            u.add(&c.usage());
        }
        u
    }

    /// Bytes still free for allocation.
    pub fn free(&self) -> u64 {
        self.capacity.saturating_sub(self.held)
    }
}

/// The memory of one device (`ND n`), HBM by HBM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryReport {
    /// The device index the runtime prints (`ND 0`).
    pub device: u32,
    /// Its HBMs, in index order.
    pub hbms: Vec<HbmMemory>,
}

impl MemoryReport {
    /// The report of device `ND nd` of `rt`, now.
    pub fn of_device(rt: &Runtime, nd: u32) -> Result<MemoryReport, LoadError> {
        let device = rt.devices().nth(nd as usize).ok_or_else(|| {
            LoadError::pipeline(DeviceError::Invalid {
                reason: format!("the instance has no device {nd}"),
            })
        })?;
        Ok(MemoryReport::of(nd, device))
    }

    /// The report of the device `model` is on, now.
    pub fn of_model(rt: &Runtime, model: &Model) -> Result<MemoryReport, LoadError> {
        let (nd, device) = rt.device_of(model)?;
        Ok(MemoryReport::of(nd, device))
    }

    testkit_pub! {
        /// The report of `dev`, device `ND nd` of its instance, now.
        fn of(nd: u32, dev: &Device) -> MemoryReport {
            dev.with_ledger(|ledger| MemoryReport::from_ledger(nd, dev.geometry(), ledger))
        }
    }

    testkit_pub! {
        /// The report of a device of geometry `g` with the memory in `ledger`
        /// (the device now, or as a refusal found it: an observer has both).
        fn from_ledger(nd: u32, g: &Geometry, ledger: &Ledger) -> MemoryReport {
            let hbms = (0..g.hbm_channels())
                .map(|h| HbmMemory {
                    hbm: h,
                    size: g.hbm_bytes_per_channel(),
                    base: g.runtime_address(g.channel_base(h).map_or(0, |p| p.0) + CARVEOUT),
                    allocatable: g.usable_bytes_per_channel(),
                    capacity: ledger.channel_limit(h),
                    held: ledger.channel_used(h),
                    cores: (0..g.cores())
                        .map(PCore)
                        .filter(|&c| g.hbm_of(c).ok() == Some(h))
                        .map(|c| CoreMemory::from_ledger(ledger, c))
                        .collect(),
                })
                .collect();
            MemoryReport { device: nd, hbms }
        }
    }

    /// The HBM a core allocates from.
    pub fn hbm_of(&self, pcore: PCore) -> Option<&HbmMemory> {
        self.hbms
            .iter()
            .find(|h| h.cores.iter().any(|c| c.pcore == pcore))
    }

    /// Every NEFF with memory on the device, by `H_MODEL`.
    pub fn models(&self) -> Vec<HModel> {
        let mut v: Vec<HModel> = self
            .hbms
            .iter()
            .flat_map(|h| &h.cores)
            .flat_map(|c| c.models.iter().map(|(m, _)| *m))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The runtime's usage table of one HBM, as it prints it after an
    /// allocation failure: two header lines, the HBM, each of its cores and,
    /// under each core, each NEFF with memory there. Columns a NEFF has no
    /// figure in read `n/a`.
    pub fn usage_table(&self, hbm: &HbmMemory) -> String {
        self.table(hbm, false)
    }

    /// [`MemoryReport::usage_table`] for a reader of many loads: a run of
    /// NEFFs of one core whose rows would read alike (ranks of one NEFF)
    /// is its first row and one line naming the others, not a row each.
    /// Not the runtime's text: its log lists every NEFF.
    pub fn usage_table_grouped(&self, hbm: &HbmMemory) -> String {
        self.table(hbm, true)
    }

    fn table(&self, hbm: &HbmMemory, group: bool) -> String {
        let mut t = String::new();
        let (mut top, mut bottom) = (" ".repeat(LABEL_WIDTH), " ".repeat(LABEL_WIDTH));
        top.push_str("|          ");
        bottom.push_str(&format!("|{}", center("TOTAL", 10)));
        for c in Column::ALL {
            let (a, b) = c.header();
            top.push_str(&format!("|{}", center(a, c.width())));
            bottom.push_str(&format!("|{}", center(b, c.width())));
        }
        let _ = writeln!(t, "{top}|");
        let _ = writeln!(t, "{bottom}|");
        let line = |t: &mut String, label: &str, u: &Usage, neff: bool| {
            let total = if neff { u.neff_total() } else { u.total() };
            let _ = write!(
                t,
                "{label:<LABEL_WIDTH$}|{}",
                center(&human_size(total), 10)
            );
            for c in Column::ALL {
                let cell = if neff && !c.per_neff() {
                    "n/a".to_string()
                } else {
                    human_size(u.get(c))
                };
                let _ = write!(t, "|{}", center(&cell, c.width()));
            }
            let _ = writeln!(t, "|");
        };
        line(
            &mut t,
            &format!("ND {} HBM {}", self.device, hbm.hbm),
            &hbm.usage(),
            false,
        );
        for core in &hbm.cores {
            line(
                &mut t,
                &format!("\\_NC {}", core.pcore.0),
                &core.usage(),
                false,
            );
            let mut models = core.models.iter().peekable();
            while let Some((h, rows)) = models.next() {
                let usage = Usage::of(rows);
                line(&mut t, &format!("  \\_NEFF {}", h.0), &usage, true);
                let mut alike: Vec<HModel> = Vec::new();
                while let Some((next, _)) = models.next_if(|(_, r)| group && Usage::of(r) == usage)
                {
                    alike.push(*next);
                }
                if let [one] = alike[..] {
                    line(&mut t, &format!("  \\_NEFF {}", one.0), &usage, true);
                } else if let (Some(first), Some(last)) = (alike.first(), alike.last()) {
                    let follow = alike
                        .windows(2)
                        .all(|w| w[0].0.checked_add(1) == Some(w[1].0));
                    let ids = if follow {
                        format!("{}-{}", first.0, last.0)
                    } else {
                        format!("{}, ... {} ({} NEFFs)", first.0, last.0, alike.len())
                    };
                    let _ = writeln!(t, "  \\_NEFF {ids}: each as NEFF {}", h.0);
                }
            }
        }
        t
    }
}

/// An allocation the device refused for want of room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Bytes asked for.
    pub size: u64,
    /// 0 for none.
    pub align: u64,
    /// What the allocation was for.
    pub usage: MemUsage,
    /// The physical core it was charged to.
    pub core: PCore,
}

impl Refusal {
    /// The request a device refused, as the runtime's report names it.
    pub(crate) fn of(req: &AllocReq<'_>) -> Refusal {
        Refusal {
            size: req.size,
            align: req.align,
            usage: req.usage,
            core: req.core,
        }
    }
}

/// One line the runtime logs: the function it names (`log_dev_mem`, ...)
/// and the text, without a final newline (a text of several lines
/// continues on the lines after the log line's prefix).
pub type LogLine = (&'static str, String);

impl HbmMemory {
    /// The file the runtime writes this HBM's usage report to, in its temp
    /// directory, when an allocation on it is refused (the log may be cut
    /// short): `neuron_mem_table_device_<d>_hbm_<h>.log`.
    pub fn table_file(&self, device: u32) -> String {
        format!("neuron_mem_table_device_{device}_hbm_{}.log", self.hbm)
    }
}

impl MemoryReport {
    /// The runtime's report of one HBM's memory: a heading, the usage table
    /// ([`MemoryReport::usage_table`]) and the name of every NEFF it lists,
    /// by id (`H_MODEL`; `name` gives it). What it logs after a refusal and
    /// writes to [`HbmMemory::table_file`].
    pub fn usage_report(&self, hbm: &HbmMemory, name: impl Fn(HModel) -> Option<String>) -> String {
        let mut text = String::from(
            "Displaying Current Memory Utilization:\n\
             (NOTE: the lines are LONG, and NEFF id to name mapping is printed after)\n\n",
        );
        text.push_str(&self.usage_table(hbm));
        text.push_str("\nNEFF id to name mapping:");
        let mut ids: Vec<HModel> = hbm
            .cores
            .iter()
            .flat_map(|c| c.models.iter().map(|(h, _)| *h))
            .collect();
        ids.sort();
        ids.dedup();
        for id in ids {
            let name = name(id).unwrap_or_default();
            let _ = write!(text, "\n{}: \"{}\"", id.0, crate::text::escape(&name));
        }
        text
    }

    /// What the runtime logs when an allocation is refused: which cores
    /// share the HBM (when several do), the refused request, then, on the
    /// lines that print it ([`RuntimeLine::neff_usage_table`]), the HBM's
    /// [`MemoryReport::usage_report`]. `lnc` is the logical-core size;
    /// `name` names a NEFF by its id.
    pub fn refusal_log(
        &self,
        refusal: &Refusal,
        lnc: u32,
        line: RuntimeLine,
        name: impl Fn(HModel) -> Option<String>,
    ) -> Vec<LogLine> {
        let mut log = Vec::new();
        let Some(hbm) = self.hbm_of(refusal.core) else {
            return log;
        };
        if hbm.cores.len() > 1 {
            let cores: Vec<String> = hbm
                .cores
                .iter()
                .map(|c| format!("NC {}", c.pcore.0))
                .collect();
            log.push((
                "print_lnc_hbm_details",
                format!(
                    "LNC size is {lnc}. Neuron Cores using this HBM: {}",
                    cores.join(" and ")
                ),
            ));
        }
        let align = match refusal.align {
            0 => "none".to_string(),
            a => human_size(a),
        };
        log.push((
            "log_dev_mem",
            format!(
                "Failed to allocate {} (alignment: {align}, usage: {}) on ND{:2}:NC{:2}",
                human_size(refusal.size),
                Column::of(refusal.usage).name(),
                self.device,
                refusal.core.0
            ),
        ));
        if line.neff_usage_table() {
            log.push(("log_dev_mem_usage_table", self.usage_report(hbm, name)));
        }
        log
    }

    /// What the runtime logs at info level when a NEFF has been loaded on
    /// a core (`dml_log_dev_neff_mem`): the core's total and shared
    /// scratchpad, then the NEFF's own columns. The text starts on the line
    /// after the log line's prefix.
    pub fn neff_breakdown(&self, core: PCore, neff: HModel, name: &str) -> Option<LogLine> {
        let c = self
            .hbms
            .iter()
            .flat_map(|h| &h.cores)
            .find(|c| c.pcore == core)?;
        let rows = &c.models.iter().find(|(h, _)| *h == neff)?.1;
        let u = Usage::of(rows);
        let core_usage = c.usage();
        let mut t = format!(
            "\n[ND{:2}:NC{:2}] Current Usage Total: {}\n        shared scratchpad: {}\n\
             Per NEFF memory usage breakdown for [{}]:\n        Total: {}",
            self.device,
            core.0,
            human_size(core_usage.total()),
            human_size(core_usage.get(Column::SharedScratchpad)),
            crate::text::escape(name),
            human_size(u.neff_total())
        );
        for col in Column::ALL.iter().filter(|c| c.per_neff()) {
            let _ = write!(t, "\n        * {}: {}", col.name(), human_size(u.get(*col)));
        }
        Some(("dml_log_dev_neff_mem", t))
    }
}

/// Width of the usage table's first column (`ND 0 HBM 2`, `\_NC 4`).
const LABEL_WIDTH: usize = 14;

/// `text` centred in `width` columns, the odd space on the right.
fn center(text: &str, width: usize) -> String {
    let pad = width.saturating_sub(text.chars().count());
    let left = pad / 2;
    format!("{}{text}{}", " ".repeat(left), " ".repeat(pad - left))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{AllocReq, Geometry, Place, SimDevice};
    use crate::Arch;
    use std::sync::Arc;

    #[test]
    fn rows_add_runtime_and_requested_model_bytes() {
        let dev = Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman)));
        let runtime = crate::api::Runtime::with_device(Default::default(), dev.clone()).unwrap();
        dev.alloc(AllocReq {
            size: 12_416,
            align: 0,
            core: PCore(4),
            usage: MemUsage::InstrPe,
            owner: Owner::Model(HModel(1)),
            place: Place::Kernel,
            hint: "pe",
        })
        .unwrap();
        let s = MemoryStats::of(&*dev, LCore(2), 2).unwrap();
        assert_eq!(s.cores.len(), 2);
        let c4 = &s.cores[0];
        assert_eq!(c4.pcore, PCore(4));
        assert_eq!(
            c4.row(MemUsage::InstrPe),
            12_416,
            "requested, not 4 KiB pages"
        );
        assert_eq!(c4.row(MemUsage::UcodeLib), 1_744_584);
        assert_eq!(c4.model[MemUsage::UcodeLib.index()], 0, "the runtime's own");
        assert_eq!(c4.models[0].0, HModel(1));
        assert_eq!(c4.models[0].1[MemUsage::InstrPe.index()], 12_416);
        assert_eq!(s.cores[1].row(MemUsage::InstrPe), 0);
        assert_eq!(s.used, s.cores[0].total() + s.cores[1].total());
        // The default line (2.35) reserves its row's start-up deltas (64
        // MiB for DMA profiling) per logical core, on its first physical
        // core, beside 2.30's rows.
        let profiling: u64 = crate::RuntimeLine::NEWEST
            .facts()
            .start
            .iter()
            .map(|d| d.bytes)
            .sum();
        assert_eq!(profiling, 64 << 20);
        assert_eq!(c4.row(MemUsage::Notification), profiling);
        assert_eq!(s.cores[1].row(MemUsage::Notification), 0);
        assert_eq!(
            s.used,
            12_416 + 2 * (13_312 + 1_088 + 28_672 + 1_744_584) + profiling
        );
        drop(runtime);
    }

    #[test]
    fn the_oldest_line_lists_one_dma_rings_row_and_no_model_generic() {
        let dev = SimDevice::new(Geometry::for_arch(Arch::Sunda));
        for (usage, size) in [
            (MemUsage::DmaRingIo, 65_536),
            (MemUsage::DmaRingSpill, 4_096),
            (MemUsage::Generic, 25_600),
            (MemUsage::InstrPool, 1_792),
            (MemUsage::UcodeLib, 100_669_644),
        ] {
            let owner = match usage {
                MemUsage::UcodeLib => Owner::Runtime,
                _ => Owner::Model(HModel(1)),
            };
            dev.alloc(AllocReq {
                size,
                align: 0,
                core: PCore(0),
                usage,
                owner,
                place: crate::device::Place::Kernel,
                hint: "x",
            })
            .unwrap();
        }
        let c = CoreMemory::of(&dev, PCore(0));
        let rows = c.report(Captured::V2_23);
        // 18 usage rows and the single DMA Rings row: 19, as 2.23 lists them.
        assert_eq!(rows.len(), 19);
        assert_eq!(rows[18].key, RowKey::DmaRings);
        assert_eq!(rows[18].bytes(), 65_536 + 4_096);
        assert_eq!(rows[0].key, RowKey::Usage(MemUsage::Generic));
        assert_eq!(rows[0].bytes(), 0);
        assert_eq!(rows[MemUsage::InstrPool.index()].bytes(), 1_792);
        assert_eq!(rows[MemUsage::UcodeLib.index()].bytes(), 100_669_644);
        // The ledger still holds the DVE tables.
        assert_eq!(c.row(MemUsage::Generic), 25_600);
        assert_eq!(c.report(Captured::V2_30).len(), MemUsage::COUNT);
    }

    #[test]
    fn sizes_read_as_the_runtime_prints_them() {
        assert_eq!(human_size(0), "0.000B");
        assert_eq!(human_size(8), "8.000B");
        assert_eq!(human_size(4 << 30), "4.000GB");
        assert_eq!(human_size(32 << 10), "32.000KB");
        // trn1 microcode and two NEFFs' code of 28.562 and 31.875 KB.
        assert_eq!(human_size(100_669_644 + 61_888), "96.065MB");
        assert_eq!(human_size(1023), "1023.000B");
    }

    /// The usage table in the runtime's layout, on the figures of its own
    /// documented example (NC 5 with one NEFF, id 1003): the same column
    /// widths, centring, units, `n/a` cells and row labels, line for line.
    #[test]
    fn the_usage_table_is_laid_out_as_the_runtime_prints_it() {
        let mut runtime = [0u64; MemUsage::COUNT];
        runtime[MemUsage::UcodeLib.index()] = 100_669_644;
        runtime[MemUsage::Generic.index()] = 12_288;
        runtime[MemUsage::PoolStdio.index()] = 1_088;
        runtime[MemUsage::DmaRing.index()] = 28_672;
        let mut neff = [0u64; MemUsage::COUNT];
        neff[MemUsage::InstrPe.index()] = 32_640;
        neff[MemUsage::Weight.index()] = 24_576;
        neff[MemUsage::Generic.index()] = 26_624;
        neff[MemUsage::ActTable.index()] = 83_968;
        neff[MemUsage::DmaRingIo.index()] = 62_464;
        neff[MemUsage::DmaRingSpill.index()] = 16_384;
        neff[MemUsage::DmaRing.index()] = 4_096;
        let core = CoreMemory {
            pcore: PCore(5),
            runtime,
            model: neff,
            models: vec![(HModel(1003), neff)],
        };
        let report = MemoryReport {
            device: 0,
            hbms: vec![HbmMemory {
                hbm: 2,
                size: 24 << 30,
                base: 0,
                allocatable: 24 << 30,
                capacity: 24 << 30,
                held: 0,
                cores: vec![core],
            }],
        };
        let table = report.usage_table(&report.hbms[0]);
        let lines: Vec<&str> = table.lines().collect();
        let expected = [
            "              |          |  Model   |  Model   |          |  Shared  |          |          |DMA Rings |DMA Rings | DMA Rings |DMA Rings |           |          | Profiler |",
            "              |  TOTAL   |   Code   |Constants | Tensors  |Scratchpad|Scratchpad| Runtime  |    IO    |  Spill   |Collectives| Runtime  |Collectives|  XT CC   | Buffers  |",
            "ND 0 HBM 2    | 96.285MB | 96.037MB | 24.000KB |  0.000B  |  0.000B  |  0.000B  |121.062KB | 61.000KB | 16.000KB |  0.000B   | 32.000KB |  0.000B   |  0.000B  |  0.000B  |",
            "\\_NC 5        | 96.285MB | 96.037MB | 24.000KB |  0.000B  |  0.000B  |  0.000B  |121.062KB | 61.000KB | 16.000KB |  0.000B   | 32.000KB |  0.000B   |  0.000B  |  0.000B  |",
            "  \\_NEFF 1003 |244.875KB | 31.875KB | 24.000KB |   n/a    |   n/a    |  0.000B  |108.000KB | 61.000KB | 16.000KB |  0.000B   | 4.000KB  |  0.000B   |   n/a    |   n/a    |",
        ];
        assert_eq!(lines, expected, "\n{table}");
    }

    /// The refusal log and the per-NEFF breakdown read as the runtime's:
    /// the shared-HBM line, the request with its size, alignment, usage
    /// column and `ND d:NC c`, the table, the id → name mapping; and the
    /// breakdown's items in the runtime's order.
    #[test]
    fn refusal_and_breakdown_lines_read_as_the_runtime_writes_them() {
        let mut neff = [0u64; MemUsage::COUNT];
        neff[MemUsage::InstrPe.index()] = 31_296; // 30.562KB
        neff[MemUsage::Weight.index()] = 24_576;
        neff[MemUsage::Generic.index()] = 97_280; // 95.000KB with nothing else
        neff[MemUsage::DmaRingIo.index()] = 62_464;
        neff[MemUsage::DmaRingSpill.index()] = 16_384;
        neff[MemUsage::DmaRing.index()] = 4_096;
        neff[MemUsage::Tensor.index()] = 1 << 20; // a client tensor is not the NEFF's
        let mut runtime = [0u64; MemUsage::COUNT];
        runtime[MemUsage::UcodeLib.index()] = 100_669_644;
        let core = |pcore, models: Vec<(HModel, Rows)>| CoreMemory {
            pcore: PCore(pcore),
            runtime,
            model: models.iter().fold([0; MemUsage::COUNT], |mut a, (_, r)| {
                a.iter_mut().zip(r).for_each(|(a, r)| *a += r);
                a
            }),
            models,
        };
        let report = MemoryReport {
            device: 0,
            hbms: vec![HbmMemory {
                hbm: 2,
                size: 24 << 30,
                base: 0,
                allocatable: 24 << 30,
                capacity: 24 << 30,
                held: 0,
                cores: vec![core(4, vec![(HModel(7), neff)]), core(5, vec![])],
            }],
        };
        let refusal = Refusal {
            size: 4 << 30,
            align: 0,
            usage: MemUsage::Tensor,
            core: PCore(4),
        };
        let log = report.refusal_log(&refusal, 1, RuntimeLine::NEWEST, |h| {
            (h == HModel(7)).then(|| "meta".into())
        });
        assert_eq!(
            log[0],
            (
                "print_lnc_hbm_details",
                "LNC size is 1. Neuron Cores using this HBM: NC 4 and NC 5".into()
            )
        );
        assert_eq!(
            log[1],
            (
                "log_dev_mem",
                "Failed to allocate 4.000GB (alignment: none, usage: tensors) on ND 0:NC 4".into()
            )
        );
        let table = &log[2].1;
        assert!(table.starts_with("Displaying Current Memory Utilization:\n(NOTE: the lines are LONG, and NEFF id to name mapping is printed after)\n\n"), "{table}");
        assert!(
            table.ends_with("\n\nNEFF id to name mapping:\n7: \"meta\""),
            "{table}"
        );
        assert_eq!(
            report.hbms[0].table_file(report.device),
            "neuron_mem_table_device_0_hbm_2.log"
        );
        assert!(table.contains("\n  \\_NEFF 7    |"), "{table}");
        // A name is shown as text: its control characters escaped.
        let evil = report.refusal_log(&refusal, 1, RuntimeLine::NEWEST, |_| {
            Some("m\n1: \x1b[31m".into())
        });
        assert!(
            evil.last().unwrap().1.ends_with("7: \"m\\n1: \\x1b[31m\""),
            "{evil:?}"
        );
        let aligned = Refusal {
            align: 32 << 10,
            core: PCore(12),
            ..refusal
        };
        assert_eq!(
            report.refusal_log(&aligned, 1, RuntimeLine::NEWEST, |_| None),
            []
        );
        let (func, breakdown) = report.neff_breakdown(PCore(4), HModel(7), "meta").unwrap();
        assert_eq!(func, "dml_log_dev_neff_mem");
        let expected = "\n[ND 0:NC 4] Current Usage Total: 97.231MB\n\
                        \x20       shared scratchpad: 0.000B\n\
                        Per NEFF memory usage breakdown for [meta]:\n\
                        \x20       Total: 230.562KB\n\
                        \x20       * model code: 30.562KB\n\
                        \x20       * model constants: 24.000KB\n\
                        \x20       * scratchpad: 0.000B\n\
                        \x20       * runtime: 95.000KB\n\
                        \x20       * dma rings io: 61.000KB\n\
                        \x20       * dma rings spill: 16.000KB\n\
                        \x20       * dma rings collectives: 0.000B\n\
                        \x20       * dma rings runtime: 4.000KB\n\
                        \x20       * collectives: 0.000B";
        assert_eq!(breakdown, expected);
    }

    /// The grouped table keeps the first of a run of alike NEFF rows and
    /// names the others in one line (a range when their ids follow one
    /// another); a row that differs, or a lone alike one, is its own row;
    /// the runtime's table keeps every row. An HBM reads as another when
    /// only its labels differ.
    #[test]
    fn alike_neff_rows_and_hbms_are_grouped_only_for_a_reader() {
        let mut neff = [0u64; MemUsage::COUNT];
        neff[MemUsage::Weight.index()] = 24_576;
        let mut other = neff;
        other[MemUsage::Weight.index()] = 8_192;
        let ids = |ids: &[(u32, Rows)]| -> Vec<(HModel, Rows)> {
            ids.iter().map(|&(h, r)| (HModel(h), r)).collect()
        };
        let core = |pcore, models| CoreMemory {
            pcore: PCore(pcore),
            runtime: [0; MemUsage::COUNT],
            model: [0; MemUsage::COUNT],
            models,
        };
        let report = MemoryReport {
            device: 0,
            hbms: vec![HbmMemory {
                hbm: 0,
                size: 24 << 30,
                base: 0,
                allocatable: 24 << 30,
                capacity: 24 << 30,
                held: 0,
                cores: vec![
                    core(
                        0,
                        ids(&[(1, neff), (2, neff), (3, neff), (4, other), (5, other)]),
                    ),
                    core(1, ids(&[(6, neff), (8, neff), (9, neff), (11, neff)])),
                ],
            }],
        };
        let neffs = |table: &str| -> Vec<String> {
            table
                .lines()
                .filter(|l| l.contains("\\_NEFF"))
                .map(|l| l.split('|').next().unwrap().trim_end().to_string())
                .collect()
        };
        assert_eq!(
            neffs(&report.usage_table_grouped(&report.hbms[0])),
            [
                "  \\_NEFF 1",
                "  \\_NEFF 2-3: each as NEFF 1",
                "  \\_NEFF 4",
                "  \\_NEFF 5",
                "  \\_NEFF 6",
                "  \\_NEFF 8, ... 11 (3 NEFFs): each as NEFF 6",
            ]
        );
        assert_eq!(neffs(&report.usage_table(&report.hbms[0])).len(), 9);
        // Another HBM of other cores and NEFFs with the same figures reads
        // as this one; another figure anywhere, and it does not.
        let hbm = &report.hbms[0];
        let relabel = |h: &HbmMemory, shift: u32| HbmMemory {
            hbm: h.hbm + 1,
            cores: h
                .cores
                .iter()
                .map(|c| CoreMemory {
                    pcore: PCore(c.pcore.0 + shift),
                    models: ids(&c
                        .models
                        .iter()
                        .map(|(m, r)| (m.0 + shift, *r))
                        .collect::<Vec<_>>()),
                    ..c.clone()
                })
                .collect(),
            ..h.clone()
        };
        assert!(hbm.reads_as(&relabel(hbm, 2)));
        let held = HbmMemory {
            held: hbm.held + 4096,
            ..relabel(hbm, 2)
        };
        assert!(!hbm.reads_as(&held));
        let mut row = relabel(hbm, 2);
        row.cores[1].models[3].1 = other;
        assert!(!hbm.reads_as(&row));
        let mut fewer = relabel(hbm, 2);
        fewer.cores[1].models.pop();
        assert!(!hbm.reads_as(&fewer));
    }

    /// Every usage type lands in exactly one column, and the columns the
    /// runtime leaves out of a NEFF's row are the core's.
    #[test]
    fn every_usage_has_one_column() {
        let mut rows = [0u64; MemUsage::COUNT];
        for (i, r) in rows.iter_mut().enumerate() {
            *r = 1 << i;
        }
        let u = Usage::of(&rows);
        assert_eq!(u.total(), rows.iter().sum::<u64>());
        assert_eq!(
            u.get(Column::ModelCode),
            [1, 2, 3, 9, 10, 13].iter().map(|i| 1u64 << i).sum::<u64>()
        );
        assert_eq!(u.get(Column::Tensors), 1 << 12);
        assert_eq!(
            u.neff_total(),
            u.total() - (1 << 12) - (1 << 11) - (1 << 17) - (1 << 7)
        );
    }
}
