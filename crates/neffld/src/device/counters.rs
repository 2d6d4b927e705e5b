//! The driver's memory counters: what the Neuron driver shows under
//! `/sys/devices/virtual/neuron_device/neuron<N>/neuron_core<M>/stats/memory_usage/device_mem/`.
//!
//! The runtime tells the driver a category with every allocation (the
//! usage's [`MemCategory`], the runtime's own byte table); the driver
//! charges the allocation's size, rounded up to its 4 KiB page, to the
//! physical core's counter of that category (`mc_alloc_internal` in the
//! driver's `neuron_mempool.c`, its table `mem_alloc_type_to_sysfs_counter`;
//! the contiguous scratchpad shares the shared scratchpad's counter), and
//! to the core's `device_mem` counter of every category. A counter is three
//! figures (`neuron_sysfs_metrics.c`): `total` the bytes held now, `present`
//! the size of the last change (an allocation or a free), `peak` the most
//! `total` has been. Writing to a file zeroes it on a real host; here the
//! counters start at zero with the device.
//!
//! The ledger keeps them beside its rows, on the same charges, so they
//! cannot disagree with it; a batch of allocations is counted one by one,
//! in the order made (and given back in the reverse order, as an
//! allocation set frees), so a replayed load counts as a staged one.

use super::ledger::{MemCategory, MemLocation, MemUsage};
use crate::ids::PCore;

/// A category of the driver's per-core device-memory counters: the
/// directories of `device_mem/`, in the driver's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceMem {
    /// Instruction streams and microcode (`CODE_DEVICE`).
    ModelCode,
    /// Tensors (`TENSORS_DEVICE`).
    Tensors,
    /// Weights and other constants (`CONSTANTS_DEVICE`).
    Constants,
    /// The scratchpad the models of a core share, paged or contiguous
    /// (`SCRATCHPAD_DEVICE`, `CONTIGUOUS_SCRATCHPAD_DEVICE`).
    ModelSharedScratchpad,
    /// The runtime's other memory (`MISC_DEVICE`).
    RuntimeMemory,
    /// The driver's own (`NCDEV_DEVICE`): no usage of the runtime's.
    DriverMemory,
    /// Collectives buffers (`COLLECTIVES_DEVICE`).
    Collectives,
    /// A model's own scratchpad (`SCRATCHPAD_NONSHARED_DEVICE`).
    NonsharedScratchpad,
    /// Notification queues and profiling buffers (`NOTIFICATION_DEVICE`).
    Notifications,
    /// DMA descriptor rings (`DMA_RINGS_DEVICE`).
    DmaRings,
    /// What old runtimes allocated without a category (`UNKNOWN_DEVICE`).
    Uncategorized,
}

impl DeviceMem {
    /// How many categories the driver counts per core.
    pub const COUNT: usize = 11;

    /// Every category, in the driver's order.
    pub const ALL: [DeviceMem; DeviceMem::COUNT] = [
        DeviceMem::ModelCode,
        DeviceMem::Tensors,
        DeviceMem::Constants,
        DeviceMem::ModelSharedScratchpad,
        DeviceMem::RuntimeMemory,
        DeviceMem::DriverMemory,
        DeviceMem::Collectives,
        DeviceMem::NonsharedScratchpad,
        DeviceMem::Notifications,
        DeviceMem::DmaRings,
        DeviceMem::Uncategorized,
    ];

    /// The directory's name under `device_mem/`.
    pub fn name(self) -> &'static str {
        match self {
            DeviceMem::ModelCode => "model_code",
            DeviceMem::Tensors => "tensors",
            DeviceMem::Constants => "constants",
            DeviceMem::ModelSharedScratchpad => "model_shared_scratchpad",
            DeviceMem::RuntimeMemory => "runtime_memory",
            DeviceMem::DriverMemory => "driver_memory",
            DeviceMem::Collectives => "collectives",
            DeviceMem::NonsharedScratchpad => "nonshared_scratchpad",
            DeviceMem::Notifications => "notifications",
            DeviceMem::DmaRings => "dma_rings",
            DeviceMem::Uncategorized => "uncategorized",
        }
    }

    /// The driver's counter of a device-memory category (`None` for a
    /// host category, which the driver counts per device, not per core).
    pub fn of_category(c: MemCategory) -> Option<DeviceMem> {
        use MemCategory as C;
        Some(match c {
            C::UnknownDevice => DeviceMem::Uncategorized,
            C::CodeDevice => DeviceMem::ModelCode,
            C::TensorsDevice => DeviceMem::Tensors,
            C::ConstantsDevice => DeviceMem::Constants,
            C::ScratchpadDevice | C::ContiguousScratchpadDevice => {
                DeviceMem::ModelSharedScratchpad
            }
            C::MiscDevice => DeviceMem::RuntimeMemory,
            C::NcdevDevice => DeviceMem::DriverMemory,
            C::CollectivesDevice => DeviceMem::Collectives,
            C::ScratchpadNonsharedDevice => DeviceMem::NonsharedScratchpad,
            C::NotificationDevice => DeviceMem::Notifications,
            C::DmaRingsDevice => DeviceMem::DmaRings,
            C::UnknownHost
            | C::CodeHost
            | C::TensorsHost
            | C::ConstantsHost
            | C::MiscHost
            | C::NcdevHost
            | C::NotificationHost
            | C::DmaRingsHost => return None,
        })
    }

    /// The counter an allocation of `usage` in HBM lands in: the runtime's
    /// category for it, then the driver's counter of that category.
    pub fn of_usage(usage: MemUsage) -> DeviceMem {
        usage
            .category(MemLocation::Device)
            .and_then(DeviceMem::of_category)
            // Every usage has a device category (a test holds it); one
            // that had none would be one the driver cannot name.
            .unwrap_or(DeviceMem::Uncategorized)
    }

    /// Its position in [`DeviceMem::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One of the driver's memory counters, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemCounter {
    /// Held now.
    pub total: u64,
    /// The size of the last change, up or down.
    pub present: u64,
    /// The most `total` has been.
    pub peak: u64,
}

impl MemCounter {
    fn add(&mut self, bytes: u64) {
        self.total += bytes;
        self.present = bytes;
        self.peak = self.peak.max(self.total);
    }

    fn sub(&mut self, bytes: u64) {
        debug_assert!(self.total >= bytes, "counter underflow");
        self.total = self.total.saturating_sub(bytes);
        self.present = bytes;
    }
}

/// The driver's memory counters of one physical core: `device_mem`
/// itself (every category) and each category's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreCounters {
    /// Every category together (`device_mem/{total,present,peak}`).
    pub device_mem: MemCounter,
    /// Each category's, in [`DeviceMem::ALL`]'s order.
    pub categories: [MemCounter; DeviceMem::COUNT],
}

impl CoreCounters {
    /// The counter of one category.
    pub fn get(&self, c: DeviceMem) -> MemCounter {
        self.categories[c.index()]
    }
}

/// Every core's counters of one device, indexed by physical core.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counters(Vec<CoreCounters>);

impl Counters {
    fn core_mut(&mut self, core: PCore) -> &mut CoreCounters {
        let i = core.0 as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, CoreCounters::default());
        }
        &mut self.0[i]
    }

    /// `charged` bytes of `usage` allocated on `core` (one change of the
    /// category and of `device_mem`).
    pub fn add(&mut self, core: PCore, usage: MemUsage, charged: u64) {
        if charged == 0 {
            return;
        }
        let c = self.core_mut(core);
        c.categories[DeviceMem::of_usage(usage).index()].add(charged);
        c.device_mem.add(charged);
    }

    /// `charged` bytes of `usage` freed on `core`.
    pub fn sub(&mut self, core: PCore, usage: MemUsage, charged: u64) {
        if charged == 0 {
            return;
        }
        let c = self.core_mut(core);
        c.categories[DeviceMem::of_usage(usage).index()].sub(charged);
        c.device_mem.sub(charged);
    }

    /// The counters of `core` (zeros for a core nothing was charged to).
    pub fn of(&self, core: PCore) -> CoreCounters {
        self.0.get(core.0 as usize).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The driver's table, read through the runtime's: every usage lands
    /// in one counter; the two surprising rows of the runtime's table
    /// (INSTR_POOL is MISC, IO is CODE) carry through; no usage of the
    /// runtime's is the driver's own or uncategorized.
    #[test]
    fn every_usage_lands_in_the_driver_counter_of_its_category() {
        use DeviceMem as D;
        let expect = [
            (MemUsage::Generic, D::RuntimeMemory),
            (MemUsage::InstrPe, D::ModelCode),
            (MemUsage::InstrPool, D::RuntimeMemory),
            (MemUsage::Io, D::ModelCode),
            (MemUsage::Weight, D::Constants),
            (MemUsage::Notification, D::Notifications),
            (MemUsage::Scratchpad, D::ModelSharedScratchpad),
            (MemUsage::Tensor, D::Tensors),
            (MemUsage::UcodeLib, D::ModelCode),
            (MemUsage::Cc, D::Collectives),
            (MemUsage::ScratchpadNotShared, D::NonsharedScratchpad),
            (MemUsage::XtCc, D::RuntimeMemory),
            (MemUsage::DmaRingIo, D::DmaRings),
        ];
        for (u, d) in expect {
            assert_eq!(D::of_usage(u), d, "{u}");
        }
        for u in MemUsage::ALL {
            assert!(u.category(MemLocation::Device).is_some(), "{u}");
            assert!(
                !matches!(D::of_usage(u), D::DriverMemory | D::Uncategorized),
                "{u}"
            );
        }
        assert_eq!(
            D::of_category(MemCategory::ContiguousScratchpadDevice),
            Some(D::ModelSharedScratchpad)
        );
        assert_eq!(D::of_category(MemCategory::DmaRingsHost), None);
        let names: Vec<&str> = D::ALL.iter().map(|d| d.name()).collect();
        assert_eq!(names.len(), 11);
        assert!(D::ALL.iter().enumerate().all(|(i, d)| d.index() == i));
    }

    /// `total` is what is held, `present` the last change, `peak` the most
    /// held; `device_mem` counts every category.
    #[test]
    fn counters_follow_the_driver() {
        let mut c = Counters::default();
        c.add(PCore(3), MemUsage::Weight, 8192);
        c.add(PCore(3), MemUsage::InstrPe, 4096);
        c.sub(PCore(3), MemUsage::Weight, 8192);
        c.add(PCore(3), MemUsage::Weight, 4096);
        let k = c.of(PCore(3));
        assert_eq!(
            k.get(DeviceMem::Constants),
            MemCounter {
                total: 4096,
                present: 4096,
                peak: 8192
            }
        );
        assert_eq!(
            k.device_mem,
            MemCounter {
                total: 8192,
                present: 4096,
                peak: 12288
            }
        );
        assert_eq!(c.of(PCore(0)), CoreCounters::default());
        assert_eq!(c.of(PCore(99)), CoreCounters::default());
    }
}
