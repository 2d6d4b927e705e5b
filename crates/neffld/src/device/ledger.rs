//! Memory usages, kernel categories and the usage ledger (spec/stage.md §13.1,
//! §13.2).
//!
//! The runtime charges every allocation to `(core, usage)` and per HBM channel;
//! that is what its OOM report prints and what `nrt_get_vnc_memory_stats`
//! sums. The kernel only ever sees the *category* derived from the usage.

use std::fmt;

use super::geometry::Geometry;
use super::DeviceError;
use crate::ids::{LCore, PCore};

/// `dma_mem_usage_type_t`: why a piece of device memory exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemUsage {
    Generic = 0,
    InstrPe = 1,
    InstrAct = 2,
    InstrPool = 3,
    Io = 4,
    DramSpill = 5,
    Weight = 6,
    Notification = 7,
    ActTable = 8,
    InstrDve = 9,
    InstrSp = 10,
    Scratchpad = 11,
    Tensor = 12,
    UcodeLib = 13,
    PoolStdio = 14,
    Cc = 15,
    ScratchpadNotShared = 16,
    XtCc = 17,
    DmaRing = 18,
    DmaRingSpill = 19,
    DmaRingIo = 20,
    DmaRingCollectives = 21,
}

/// `mem_alloc_category_t`: what the kernel is told an allocation is for.
/// The value 20 (`MAX`) means "invalid for this location" and has no variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemCategory {
    UnknownHost = 0,
    CodeHost = 1,
    TensorsHost = 2,
    ConstantsHost = 3,
    MiscHost = 4,
    NcdevHost = 5,
    NotificationHost = 6,
    UnknownDevice = 7,
    CodeDevice = 8,
    TensorsDevice = 9,
    ConstantsDevice = 10,
    ScratchpadDevice = 11,
    MiscDevice = 12,
    NcdevDevice = 13,
    CollectivesDevice = 14,
    ScratchpadNonsharedDevice = 15,
    NotificationDevice = 16,
    DmaRingsHost = 17,
    DmaRingsDevice = 18,
    ContiguousScratchpadDevice = 19,
}

/// Where an allocation lives (`dma_mem_location_t` without INVALID).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemLocation {
    Host,
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

    /// The value passed to the kernel in the allocation ioctl.
    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: u8) -> Option<MemCategory> {
        MemCategory::ALL.get(usize::from(code)).copied()
    }
}

/// Bytes charged per physical core and usage, and per HBM channel.
///
/// Charged size is the 4 KiB-rounded size, as the runtime records
/// `allocated_size` (what its OOM report and the channel limits count).
/// The requested size is kept beside it: that is what the runtime's
/// per-core memory report (the profiler's `nc_mem_usage` rows) shows —
/// e.g. 14,592 bytes of Tensor Instructions, not a 4 KiB multiple.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ledger {
    per_core: Vec<[u64; MemUsage::COUNT]>,
    requested: Vec<[u64; MemUsage::COUNT]>,
    channel_used: Vec<u64>,
    channel_limit: Vec<u64>,
}

impl Ledger {
    /// An empty ledger for this geometry. A channel's limit is its usable
    /// size (what remains after the firmware carve-out).
    pub fn new(geometry: &Geometry) -> Ledger {
        let channels = geometry.hbm_channels() as usize;
        Ledger {
            per_core: vec![[0; MemUsage::COUNT]; geometry.cores() as usize],
            requested: vec![[0; MemUsage::COUNT]; geometry.cores() as usize],
            channel_used: vec![0; channels],
            channel_limit: vec![geometry.usable_bytes_per_channel(); channels],
        }
    }

    /// Records `bytes` charged to `(core, usage)` on `channel` for an
    /// allocation of `requested` bytes. The caller has validated core and
    /// channel; an out-of-range index is ignored rather than trusted.
    pub(crate) fn charge(
        &mut self,
        core: PCore,
        channel: u32,
        usage: MemUsage,
        bytes: u64,
        requested: u64,
    ) {
        if let Some(row) = self.per_core.get_mut(core.0 as usize) {
            row[usage.index()] += bytes;
        }
        if let Some(row) = self.requested.get_mut(core.0 as usize) {
            row[usage.index()] += requested;
        }
        if let Some(used) = self.channel_used.get_mut(channel as usize) {
            *used += bytes;
        }
    }

    /// Reverses a [`Ledger::charge`] with the same arguments.
    pub(crate) fn discharge(
        &mut self,
        core: PCore,
        channel: u32,
        usage: MemUsage,
        bytes: u64,
        requested: u64,
    ) {
        if let Some(row) = self.per_core.get_mut(core.0 as usize) {
            let cell = &mut row[usage.index()];
            debug_assert!(*cell >= bytes, "ledger underflow");
            *cell = cell.saturating_sub(bytes);
        }
        if let Some(row) = self.requested.get_mut(core.0 as usize) {
            let cell = &mut row[usage.index()];
            *cell = cell.saturating_sub(requested);
        }
        if let Some(used) = self.channel_used.get_mut(channel as usize) {
            debug_assert!(*used >= bytes, "channel ledger underflow");
            *used = used.saturating_sub(bytes);
        }
    }

    /// Bytes charged to one `(core, usage)` cell; 0 for an unknown core.
    pub fn used(&self, core: PCore, usage: MemUsage) -> u64 {
        self.per_core
            .get(core.0 as usize)
            .map_or(0, |row| row[usage.index()])
    }

    /// Bytes requested by live allocations of one `(core, usage)` cell (the
    /// runtime's memory report counts these); 0 for an unknown core.
    pub fn requested(&self, core: PCore, usage: MemUsage) -> u64 {
        self.requested
            .get(core.0 as usize)
            .map_or(0, |row| row[usage.index()])
    }

    /// All usages of one core (the ledger's `MAX` column).
    pub fn core_total(&self, core: PCore) -> u64 {
        self.per_core
            .get(core.0 as usize)
            .map_or(0, |row| row.iter().sum())
    }

    /// Bytes of one core charged under a kernel device category.
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
        l.charge(PCore(2), 1, MemUsage::Weight, 8192, 8000);
        l.charge(PCore(3), 1, MemUsage::InstrPe, 4096, 64);
        l.charge(PCore(3), 1, MemUsage::Io, 4096, 8);
        assert_eq!(l.used(PCore(2), MemUsage::Weight), 8192);
        assert_eq!(l.requested(PCore(2), MemUsage::Weight), 8000);
        assert_eq!(l.requested(PCore(3), MemUsage::Io), 8);
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
        l.discharge(PCore(2), 1, MemUsage::Weight, 8192, 8000);
        l.discharge(PCore(3), 1, MemUsage::InstrPe, 4096, 64);
        l.discharge(PCore(3), 1, MemUsage::Io, 4096, 8);
        assert_eq!(l.total(), 0);
        assert_eq!(l, Ledger::new(&g));
    }
}
