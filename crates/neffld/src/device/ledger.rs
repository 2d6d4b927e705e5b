//! Memory usages, kernel categories and the usage ledger (docs/reference/stage.md §13.1,
//! §13.2).
//!
//! The runtime charges every allocation to `(core, usage)` and per HBM channel;
//! that is what its OOM report prints and what `nrt_get_vnc_memory_stats`
//! sums. The kernel only ever sees the *category* derived from the usage.

use std::collections::BTreeMap;
use std::fmt;

use super::counters::{CoreCounters, Counters};
use super::geometry::Geometry;
use super::DeviceError;
use crate::ids::{HModel, LCore, PCore};

/// `dma_mem_usage_type_t`: why a piece of device memory exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum MemUsage {
    /// Anything the runtime does not classify.
    Generic = 0,
    /// The PE (tensor) engine's instruction stream.
    InstrPe = 1,
    /// The activation engine's instruction stream.
    InstrAct = 2,
    /// The pool engine's instruction stream.
    InstrPool = 3,
    /// A model's input and output tensors.
    Io = 4,
    /// Spilled state-buffer data kept in HBM.
    DramSpill = 5,
    /// A NEFF's constants (weights).
    Weight = 6,
    /// Notification (semaphore and event) queues.
    Notification = 7,
    /// The activation engine's function tables.
    ActTable = 8,
    /// The vector engine's instruction stream.
    InstrDve = 9,
    /// The SP engine's instruction stream.
    InstrSp = 10,
    /// The shared scratchpad of a logical core's models.
    Scratchpad = 11,
    /// A client's tensors (`nrt_tensor_allocate`).
    Tensor = 12,
    /// Microcode libraries.
    UcodeLib = 13,
    /// The pool engine's standard I/O buffer.
    PoolStdio = 14,
    /// Collective-communication buffers.
    Cc = 15,
    /// A model's own, unshared scratchpad.
    ScratchpadNotShared = 16,
    /// Cross-device collective buffers.
    XtCc = 17,
    /// DMA descriptor rings.
    DmaRing = 18,
    /// DMA descriptor rings of spill traffic.
    DmaRingSpill = 19,
    /// DMA descriptor rings of input and output.
    DmaRingIo = 20,
    /// DMA descriptor rings of collectives.
    DmaRingCollectives = 21,
}

/// `mem_alloc_category_t`: what the kernel is told an allocation is for.
/// The value 20 (`MAX`) means "invalid for this location" and has no variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemCategory {
    /// Host memory of no known category.
    UnknownHost = 0,
    /// Instruction streams in host memory.
    CodeHost = 1,
    /// Tensors in host memory.
    TensorsHost = 2,
    /// Constants in host memory.
    ConstantsHost = 3,
    /// Other host memory.
    MiscHost = 4,
    /// Core-device bookkeeping in host memory.
    NcdevHost = 5,
    /// Notification queues in host memory.
    NotificationHost = 6,
    /// Device memory of no known category.
    UnknownDevice = 7,
    /// Instruction streams in HBM.
    CodeDevice = 8,
    /// Tensors in HBM.
    TensorsDevice = 9,
    /// Constants (weights) in HBM.
    ConstantsDevice = 10,
    /// The shared scratchpad in HBM.
    ScratchpadDevice = 11,
    /// Other HBM.
    MiscDevice = 12,
    /// Core-device bookkeeping in HBM.
    NcdevDevice = 13,
    /// Collectives buffers in HBM.
    CollectivesDevice = 14,
    /// Unshared scratchpads in HBM.
    ScratchpadNonsharedDevice = 15,
    /// Notification queues in HBM.
    NotificationDevice = 16,
    /// DMA rings in host memory.
    DmaRingsHost = 17,
    /// DMA rings in HBM.
    DmaRingsDevice = 18,
    /// The contiguous scratchpad (2.33 on) in HBM.
    ContiguousScratchpadDevice = 19,
}

/// Where an allocation lives (`dma_mem_location_t` without INVALID).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemLocation {
    /// Host memory the device reaches over DMA.
    Host,
    /// The device's HBM.
    Device,
}

/// The runtime's usage → host category byte table (the trailing `MAX` column
/// is the ledger total and is not a usage).
const HOST_CATEGORY: [u8; MemUsage::COUNT] = [
    0x04, 0x01, 0x01, 0x04, 0x01, 0x04, 0x03, 0x06, 0x04, 0x01, 0x01, 0x14, 0x02, 0x01, 0x04, 0x14,
    0x14, 0x04, 0x11, 0x11, 0x11, 0x11,
];

/// The runtime's usage → device category byte table.
const DEVICE_CATEGORY: [u8; MemUsage::COUNT] = [
    0x0c, 0x08, 0x08, 0x0c, 0x08, 0x0c, 0x0a, 0x10, 0x0c, 0x08, 0x08, 0x0b, 0x09, 0x08, 0x0c, 0x0e,
    0x0f, 0x0c, 0x12, 0x12, 0x12, 0x12,
];

impl MemUsage {
    /// Number of usages (the ledger's columns, not counting the total).
    pub const COUNT: usize = 22;

    /// Every usage in value order.
    pub const ALL: [MemUsage; MemUsage::COUNT] = [
        MemUsage::Generic,
        MemUsage::InstrPe,
        MemUsage::InstrAct,
        MemUsage::InstrPool,
        MemUsage::Io,
        MemUsage::DramSpill,
        MemUsage::Weight,
        MemUsage::Notification,
        MemUsage::ActTable,
        MemUsage::InstrDve,
        MemUsage::InstrSp,
        MemUsage::Scratchpad,
        MemUsage::Tensor,
        MemUsage::UcodeLib,
        MemUsage::PoolStdio,
        MemUsage::Cc,
        MemUsage::ScratchpadNotShared,
        MemUsage::XtCc,
        MemUsage::DmaRing,
        MemUsage::DmaRingSpill,
        MemUsage::DmaRingIo,
        MemUsage::DmaRingCollectives,
    ];

    /// Its position in [`MemUsage::ALL`], for tables indexed by usage.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name the runtime prints (`WEIGHT`, `SCRATCHPAD_NOT_SHARED`, ...).
    pub fn name(self) -> &'static str {
        match self {
            MemUsage::Generic => "GENERIC",
            MemUsage::InstrPe => "INSTR_PE",
            MemUsage::InstrAct => "INSTR_ACT",
            MemUsage::InstrPool => "INSTR_POOL",
            MemUsage::Io => "IO",
            MemUsage::DramSpill => "DRAM_SPILL",
            MemUsage::Weight => "WEIGHT",
            MemUsage::Notification => "NOTIFICATION",
            MemUsage::ActTable => "ACT_TABLE",
            MemUsage::InstrDve => "INSTR_DVE",
            MemUsage::InstrSp => "INSTR_SP",
            MemUsage::Scratchpad => "SCRATCHPAD",
            MemUsage::Tensor => "TENSOR",
            MemUsage::UcodeLib => "UCODE_LIB",
            MemUsage::PoolStdio => "POOL_STDIO",
            MemUsage::Cc => "CC",
            MemUsage::ScratchpadNotShared => "SCRATCHPAD_NOT_SHARED",
            MemUsage::XtCc => "XT_CC",
            MemUsage::DmaRing => "DMA_RING",
            MemUsage::DmaRingSpill => "DMA_RING_SPILL",
            MemUsage::DmaRingIo => "DMA_RING_IO",
            MemUsage::DmaRingCollectives => "DMA_RING_COLLECTIVES",
        }
    }

    /// The kernel category for this usage at `loc`, or `None` where the
    /// runtime's table says 20 ("Invalid mem_usage_type %d for host/device").
    pub fn category(self, loc: MemLocation) -> Option<MemCategory> {
        let table = match loc {
            MemLocation::Host => &HOST_CATEGORY,
            MemLocation::Device => &DEVICE_CATEGORY,
        };
        MemCategory::from_code(table[self.index()])
    }
}

impl fmt::Display for MemUsage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl MemCategory {
    /// Number of valid categories; the code 20 means "invalid".
    pub const COUNT: usize = 20;

    /// Every category in value order.
    pub const ALL: [MemCategory; MemCategory::COUNT] = [
        MemCategory::UnknownHost,
        MemCategory::CodeHost,
        MemCategory::TensorsHost,
        MemCategory::ConstantsHost,
        MemCategory::MiscHost,
        MemCategory::NcdevHost,
        MemCategory::NotificationHost,
        MemCategory::UnknownDevice,
        MemCategory::CodeDevice,
        MemCategory::TensorsDevice,
        MemCategory::ConstantsDevice,
        MemCategory::ScratchpadDevice,
        MemCategory::MiscDevice,
        MemCategory::NcdevDevice,
        MemCategory::CollectivesDevice,
        MemCategory::ScratchpadNonsharedDevice,
        MemCategory::NotificationDevice,
        MemCategory::DmaRingsHost,
        MemCategory::DmaRingsDevice,
        MemCategory::ContiguousScratchpadDevice,
    ];

    /// The driver's name (`NEURON_MEMALLOC_TYPE_<name>`).
    pub fn name(self) -> &'static str {
        use MemCategory as C;
        match self {
            C::UnknownHost => "UNKNOWN_HOST",
            C::CodeHost => "CODE_HOST",
            C::TensorsHost => "TENSORS_HOST",
            C::ConstantsHost => "CONSTANTS_HOST",
            C::MiscHost => "MISC_HOST",
            C::NcdevHost => "NCDEV_HOST",
            C::NotificationHost => "NOTIFICATION_HOST",
            C::UnknownDevice => "UNKNOWN_DEVICE",
            C::CodeDevice => "CODE_DEVICE",
            C::TensorsDevice => "TENSORS_DEVICE",
            C::ConstantsDevice => "CONSTANTS_DEVICE",
            C::ScratchpadDevice => "SCRATCHPAD_DEVICE",
            C::MiscDevice => "MISC_DEVICE",
            C::NcdevDevice => "NCDEV_DEVICE",
            C::CollectivesDevice => "COLLECTIVES_DEVICE",
            C::ScratchpadNonsharedDevice => "SCRATCHPAD_NONSHARED_DEVICE",
            C::NotificationDevice => "NOTIFICATION_DEVICE",
            C::DmaRingsHost => "DMA_RINGS_HOST",
            C::DmaRingsDevice => "DMA_RINGS_DEVICE",
            C::ContiguousScratchpadDevice => "CONTIGUOUS_SCRATCHPAD_DEVICE",
        }
    }

    /// The value passed to the kernel in the allocation ioctl.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The category the kernel was told, from its code (`None`: not one).
    pub fn from_code(code: u8) -> Option<MemCategory> {
        MemCategory::ALL.get(usize::from(code)).copied()
    }
}

/// Who an allocation is charged to: the runtime's OOM report lists each
/// loaded NEFF apart from what the runtime and the client hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    /// The runtime itself: what it takes when it starts, and the shared
    /// scratchpad pages every model on a core uses.
    Runtime,
    /// One load: every core of it shares its `H_MODEL`.
    Model(HModel),
    /// A client's device tensor (`nrt_tensor_allocate`).
    Client,
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Runtime => f.write_str("runtime"),
            Owner::Model(h) => write!(f, "model {}", h.0),
            Owner::Client => f.write_str("client tensors"),
        }
    }
}

/// Bytes of one ledger cell: as requested (what the runtime's own reports
/// and the profiler's rows show, e.g. 14,592 bytes of Tensor Instructions)
/// and as charged by the allocator (4 KiB granules: what the channel
/// limits, and so an out-of-memory refusal, count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge {
    pub requested: u64,
    pub charged: u64,
}

impl Charge {
    fn is_zero(self) -> bool {
        self == Charge::default()
    }
}

/// One row per [`MemUsage`].
pub type ChargeRows = [Charge; MemUsage::COUNT];

/// Bytes per [`MemUsage`], in the profiler's order.
pub type Rows = [u64; MemUsage::COUNT];

/// The one ledger of device memory: every live allocation charged to its
/// physical core, its owner and its usage, and to its HBM channel. Every
/// memory view (the profiler's rows, the runtime's OOM table,
/// `nrt_get_vnc_memory_stats`, the CLI, Python, the maps) is a projection
/// of it.
#[derive(Clone, Debug)]
pub struct Ledger {
    /// Each `(core, owner)`'s place in `rows`: a map node then moves small
    /// numbers, not 352-byte rows, when a load's owner is entered among
    /// thousands, and ten thousand owners' rows are one allocation, not ten
    /// thousand.
    cells: BTreeMap<(PCore, Owner), u32>,
    rows: Vec<ChargeRows>,
    /// Places in `rows` no cell holds (zeros), reused first.
    spare: Vec<u32>,
    channel_used: Vec<u64>,
    channel_limit: Vec<u64>,
    /// The driver's counters of every core, charged with the rows.
    counters: Counters,
}

/// Equal ledgers charge the same cells alike, wherever their rows sit
/// (the counters' peaks are history, not what is held).
impl PartialEq for Ledger {
    fn eq(&self, other: &Ledger) -> bool {
        self.channel_used == other.channel_used
            && self.channel_limit == other.channel_limit
            && self.cells.len() == other.cells.len()
            && self
                .cells
                .iter()
                .zip(&other.cells)
                .all(|((a, &i), (b, &j))| a == b && self.rows[i as usize] == other.rows[j as usize])
    }
}

impl Eq for Ledger {}

impl Ledger {
    /// An empty ledger for this geometry. A channel's limit is its usable
    /// size (what remains after the firmware carve-out).
    #[cfg(test)]
    pub fn new(geometry: &Geometry) -> Ledger {
        let channels = geometry.hbm_channels() as usize;
        Ledger::with_limits(vec![geometry.usable_bytes_per_channel(); channels])
    }

    /// An empty ledger whose channels can hold `limits` bytes each (what
    /// the backend can hand out).
    pub fn with_limits(limits: Vec<u64>) -> Ledger {
        Ledger {
            cells: BTreeMap::new(),
            rows: Vec::new(),
            spare: Vec::new(),
            channel_used: vec![0; limits.len()],
            channel_limit: limits,
            counters: Counters::default(),
        }
    }

    /// The rows of `(core, owner)`, made (zeros) if it has none.
    fn rows_mut(&mut self, core: PCore, owner: Owner) -> &mut ChargeRows {
        let (rows, spare) = (&mut self.rows, &mut self.spare);
        let at = *self.cells.entry((core, owner)).or_insert_with(|| {
            spare.pop().unwrap_or_else(|| {
                rows.push([Charge::default(); MemUsage::COUNT]);
                (rows.len() - 1) as u32
            })
        });
        &mut self.rows[at as usize]
    }

    /// Records `charged` bytes (of `requested`) for `(core, owner, usage)`
    /// on `channel`. The caller has validated core and channel; an
    /// out-of-range channel is ignored rather than trusted.
    pub(crate) fn charge(
        &mut self,
        core: PCore,
        owner: Owner,
        channel: u32,
        usage: MemUsage,
        charged: u64,
        requested: u64,
    ) {
        let cell = &mut self.rows_mut(core, owner)[usage.index()];
        cell.charged += charged;
        cell.requested += requested;
        if let Some(used) = self.channel_used.get_mut(channel as usize) {
            *used += charged;
        }
        self.counters.add(core, usage, charged);
    }

    /// [`Ledger::charge`] of every usage of `rows` at once (a batch's
    /// allocations, one owner and core, on `channel`).
    pub(crate) fn charge_rows(&mut self, core: PCore, owner: Owner, channel: u32, rows: &ChargeRows) {
        if rows.iter().all(|c| c.is_zero()) {
            return;
        }
        for (cell, add) in self.rows_mut(core, owner).iter_mut().zip(rows) {
            cell.charged += add.charged;
            cell.requested += add.requested;
        }
        if let Some(used) = self.channel_used.get_mut(channel as usize) {
            *used += rows.iter().map(|c| c.charged).sum::<u64>();
        }
    }

    /// Reverses a [`Ledger::charge_rows`] with the same arguments.
    pub(crate) fn discharge_rows(
        &mut self,
        core: PCore,
        owner: Owner,
        channel: u32,
        rows: &ChargeRows,
    ) {
        for (i, c) in rows.iter().enumerate() {
            if !c.is_zero() {
                self.uncharge(core, owner, channel, MemUsage::ALL[i], c.charged, c.requested);
            }
        }
    }

    /// Reverses a [`Ledger::charge`] with the same arguments.
    pub(crate) fn discharge(
        &mut self,
        core: PCore,
        owner: Owner,
        channel: u32,
        usage: MemUsage,
        charged: u64,
        requested: u64,
    ) {
        self.uncharge(core, owner, channel, usage, charged, requested);
        self.counters.sub(core, usage, charged);
    }

    /// One allocation as the driver counts it, made (`true`) or given
    /// back, where [`Ledger::charge_rows`] and [`Ledger::discharge_rows`]
    /// charge a batch's rows at once: the driver sees a batch's
    /// allocations one by one.
    pub(crate) fn count(&mut self, core: PCore, usage: MemUsage, charged: u64, made: bool) {
        if made {
            self.counters.add(core, usage, charged);
        } else {
            self.counters.sub(core, usage, charged);
        }
    }

    /// [`Ledger::discharge`] of the rows and channels alone.
    fn uncharge(
        &mut self,
        core: PCore,
        owner: Owner,
        channel: u32,
        usage: MemUsage,
        charged: u64,
        requested: u64,
    ) {
        if let Some(&at) = self.cells.get(&(core, owner)) {
            let rows = &mut self.rows[at as usize];
            let cell = &mut rows[usage.index()];
            debug_assert!(cell.charged >= charged, "ledger underflow");
            cell.charged = cell.charged.saturating_sub(charged);
            cell.requested = cell.requested.saturating_sub(requested);
            if rows.iter().all(|c| c.is_zero()) {
                self.cells.remove(&(core, owner));
                self.spare.push(at);
            }
        }
        if let Some(used) = self.channel_used.get_mut(channel as usize) {
            debug_assert!(*used >= charged, "channel ledger underflow");
            *used = used.saturating_sub(charged);
        }
    }

    /// The driver's counters of `core` ([`CoreCounters`]).
    pub fn counters(&self, core: PCore) -> CoreCounters {
        self.counters.of(core)
    }

    /// Allocations the driver made and freed again before the ledger
    /// charged them (a batch refused part-way gives back what it placed):
    /// they pass through the counters, which keep their peak, and leave
    /// the rows alone.
    pub(crate) fn pass_through(&mut self, allocations: &[(PCore, MemUsage, u64)]) {
        for &(core, usage, charged) in allocations {
            self.count(core, usage, charged, true);
        }
        for &(core, usage, charged) in allocations.iter().rev() {
            self.count(core, usage, charged, false);
        }
    }

    /// One `(core, usage)` cell over every owner.
    #[cfg(any(test, feature = "testkit"))]
    pub fn cell(&self, core: PCore, usage: MemUsage) -> Charge {
        self.owners(core).fold(Charge::default(), |acc, owner| {
            let c = self.rows_of(core, owner)[usage.index()];
            Charge {
                requested: acc.requested + c.requested,
                charged: acc.charged + c.charged,
            }
        })
    }

    /// Bytes charged to one `(core, usage)` cell; 0 for an unknown core.
    #[cfg(any(test, feature = "testkit"))]
    pub fn used(&self, core: PCore, usage: MemUsage) -> u64 {
        self.cell(core, usage).charged
    }

    /// Bytes requested by live allocations of one `(core, usage)` cell (the
    /// runtime's memory report counts these); 0 for an unknown core.
    #[cfg(test)]
    pub fn requested(&self, core: PCore, usage: MemUsage) -> u64 {
        self.cell(core, usage).requested
    }

    /// Every owner holding memory on `core`, runtime first, then models in
    /// `H_MODEL` order, then the client.
    pub fn owners(&self, core: PCore) -> impl Iterator<Item = Owner> + '_ {
        self.cells
            .range((core, Owner::Runtime)..=(core, Owner::Client))
            .map(|(&(_, owner), _)| owner)
    }

    /// What `owner` holds on `core`, per usage (zeros when nothing).
    pub fn rows_of(&self, core: PCore, owner: Owner) -> ChargeRows {
        self.cells
            .get(&(core, owner))
            .map_or([Charge::default(); MemUsage::COUNT], |&at| self.rows[at as usize])
    }

    /// All usages of one core, charged (the ledger's `MAX` column).
    pub fn core_total(&self, core: PCore) -> u64 {
        self.owners(core)
            .flat_map(|o| self.rows_of(core, o))
            .map(|c| c.charged)
            .sum()
    }

    /// Bytes of one core charged under a kernel device category.
    #[cfg(test)]
    pub fn core_category_total(&self, core: PCore, category: MemCategory) -> u64 {
        MemUsage::ALL
            .iter()
            .filter(|u| u.category(MemLocation::Device) == Some(category))
            .map(|&u| self.used(core, u))
            .sum()
    }

    /// Every core's total.
    pub fn total(&self) -> u64 {
        self.channel_used.iter().sum()
    }

    pub fn channel_used(&self, channel: u32) -> u64 {
        self.channel_used
            .get(channel as usize)
            .copied()
            .unwrap_or(0)
    }

    pub fn channel_limit(&self, channel: u32) -> u64 {
        self.channel_limit
            .get(channel as usize)
            .copied()
            .unwrap_or(0)
    }

    /// What `nrt_get_vnc_memory_stats` reports for a logical core: `used` is
    /// the sum over its physical cores, `limit` the HBM visible to it (every
    /// channel one of its physical cores allocates from, counted once, at its
    /// full size — LNC-1 neighbours on one channel therefore both see the
    /// whole channel, as on the real device).
    pub fn vnc_memory_stats(
        &self,
        geometry: &Geometry,
        lcore: LCore,
        lnc: u32,
    ) -> Result<VncMemoryStats, DeviceError> {
        let cores = geometry.pcores_of(lcore, lnc)?;
        let mut channels = Vec::new();
        let mut used = 0;
        for core in cores {
            used += self.core_total(PCore(core));
            let channel = geometry.hbm_of(PCore(core))?;
            if !channels.contains(&channel) {
                channels.push(channel);
            }
        }
        let limit = channels.len() as u64 * geometry.hbm_bytes_per_channel();
        Ok(VncMemoryStats { used, limit })
    }
}

/// `nrt_vnc_memory_stats_t` as far as the loader can fill it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VncMemoryStats {
    pub used: u64,
    pub limit: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;

    #[test]
    fn category_tables_match_the_spec_bytes() {
        use MemCategory as C;
        use MemLocation::{Device, Host};
        assert_eq!(MemUsage::Weight.category(Device), Some(C::ConstantsDevice));
        assert_eq!(MemUsage::Weight.category(Host), Some(C::ConstantsHost));
        assert_eq!(MemUsage::InstrPool.category(Device), Some(C::MiscDevice));
        assert_eq!(MemUsage::Io.category(Device), Some(C::CodeDevice));
        assert_eq!(
            MemUsage::Scratchpad.category(Device),
            Some(C::ScratchpadDevice)
        );
        assert_eq!(
            MemUsage::ScratchpadNotShared.category(Device),
            Some(C::ScratchpadNonsharedDevice)
        );
        assert_eq!(MemUsage::Cc.category(Device), Some(C::CollectivesDevice));
        assert_eq!(
            MemUsage::Notification.category(Device),
            Some(C::NotificationDevice)
        );
        assert_eq!(
            MemUsage::DmaRingIo.category(Device),
            Some(C::DmaRingsDevice)
        );
        assert_eq!(MemUsage::DmaRingIo.category(Host), Some(C::DmaRingsHost));
        for invalid_on_host in [
            MemUsage::Scratchpad,
            MemUsage::Cc,
            MemUsage::ScratchpadNotShared,
        ] {
            assert_eq!(invalid_on_host.category(Host), None);
        }
        for u in MemUsage::ALL {
            assert!(u.category(Device).is_some(), "{u}");
            assert_eq!(MemUsage::ALL[u.index()], u);
        }
        assert_eq!(MemCategory::from_code(20), None);
        assert_eq!(
            MemCategory::from_code(19),
            Some(C::ContiguousScratchpadDevice)
        );
    }

    #[test]
    fn charges_add_up_per_core_category_channel_and_vnc() {
        let g = Geometry::for_arch(Arch::Cayman);
        let mut l = Ledger::new(&g);
        l.charge(PCore(2), Owner::Runtime, 1, MemUsage::Weight, 8192, 8000);
        l.charge(
            PCore(3),
            Owner::Model(HModel(1)),
            1,
            MemUsage::InstrPe,
            4096,
            64,
        );
        l.charge(PCore(3), Owner::Client, 1, MemUsage::Io, 4096, 8);
        assert_eq!(l.used(PCore(2), MemUsage::Weight), 8192);
        assert_eq!(l.requested(PCore(2), MemUsage::Weight), 8000);
        assert_eq!(l.requested(PCore(3), MemUsage::Io), 8);
        assert_eq!(
            l.owners(PCore(3)).collect::<Vec<_>>(),
            [Owner::Model(HModel(1)), Owner::Client],
            "each owner apart, the runtime first"
        );
        assert_eq!(
            l.rows_of(PCore(3), Owner::Client)[MemUsage::Io.index()],
            Charge {
                requested: 8,
                charged: 4096
            }
        );
        assert_eq!(l.core_total(PCore(3)), 8192);
        assert_eq!(
            l.core_category_total(PCore(3), MemCategory::CodeDevice),
            8192
        );
        assert_eq!(l.channel_used(1), 16384);
        assert_eq!(l.channel_limit(1), (24 << 30) - (16 << 20));
        let s = l.vnc_memory_stats(&g, LCore(1), 2).unwrap();
        assert_eq!(
            s,
            VncMemoryStats {
                used: 16384,
                limit: 24 << 30
            }
        );
        let s = l.vnc_memory_stats(&g, LCore(3), 1).unwrap();
        assert_eq!(
            s,
            VncMemoryStats {
                used: 8192,
                limit: 24 << 30
            }
        );
        assert!(l.vnc_memory_stats(&g, LCore(4), 2).is_err());
        l.discharge(PCore(2), Owner::Runtime, 1, MemUsage::Weight, 8192, 8000);
        l.discharge(
            PCore(3),
            Owner::Model(HModel(1)),
            1,
            MemUsage::InstrPe,
            4096,
            64,
        );
        l.discharge(PCore(3), Owner::Client, 1, MemUsage::Io, 4096, 8);
        assert_eq!(l.total(), 0);
        assert_eq!(
            l.owners(PCore(3)).count(),
            0,
            "an owner with nothing left is gone"
        );
        assert_eq!(l, Ledger::new(&g));
    }

    #[test]
    fn ledgers_are_equal_by_what_they_charge_not_where_their_rows_sit() {
        let g = Geometry::for_arch(crate::Arch::Cayman);
        let (mut a, mut b) = (Ledger::new(&g), Ledger::new(&g));
        let m = |h| Owner::Model(crate::ids::HModel(h));
        // `a` frees an owner's place and reuses it for another; `b` never
        // had the first owner.
        a.charge(PCore(0), m(1), 0, MemUsage::Weight, 4096, 100);
        a.charge(PCore(0), m(2), 0, MemUsage::Io, 8192, 8192);
        a.discharge(PCore(0), m(1), 0, MemUsage::Weight, 4096, 100);
        a.charge(PCore(1), m(3), 0, MemUsage::Weight, 4096, 4096);
        b.charge(PCore(1), m(3), 0, MemUsage::Weight, 4096, 4096);
        b.charge(PCore(0), m(2), 0, MemUsage::Io, 8192, 8192);
        assert_eq!(a, b);
        assert_eq!(a.rows.len(), 2, "the freed place was reused");
        assert_eq!(a.owners(PCore(0)).collect::<Vec<_>>(), [m(2)]);
        assert_eq!(a.rows_of(PCore(1), m(3))[MemUsage::Weight.index()].charged, 4096);
        b.charge(PCore(1), m(3), 0, MemUsage::Weight, 4096, 4096);
        assert_ne!(a, b);
    }
}
