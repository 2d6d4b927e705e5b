//! The one table from the ledger's usage types to the categories of the
//! monitoring views (docs/decisions.md, "Monitoring categories"):
//!
//! usage type → the runtime's kernel category ([`MemUsage::category`], its
//! own byte table) → the driver's counter ([`DeviceMem`], sysfs
//! `device_mem/<name>`) → neuron-monitor's per-core key and neuron-top's
//! name ([`MonitorCategory`]).
//!
//! neuron-monitor and neuron-top show five device categories; the driver
//! counts eleven. The four that are the same memory under the same name
//! (code, constants, tensors, the shared scratchpad) keep it; everything
//! else the runtime holds is neuron-monitor's `runtime_memory`, which its
//! guide defines as the device memory the runtime uses outside the other
//! categories. So a core's five add up to its eleven, and neuron-monitor's
//! device total is the sum of its cores, as in every captured report.

use crate::device::{DeviceMem, MemUsage, Rows};

/// A device-memory category of neuron-monitor's report
/// (`neuroncore_memory_usage`) and of neuron-top's Device Used Memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MonitorCategory {
    /// `tensors`, neuron-top's Tensors.
    Tensors,
    /// `constants`, Constants.
    Constants,
    /// `model_code`, Model Code.
    ModelCode,
    /// `runtime_memory`, Runtime Memory.
    RuntimeMemory,
    /// `model_shared_scratchpad`, Model Scratchpad.
    ModelScratchpad,
}

impl MonitorCategory {
    /// How many there are.
    pub const COUNT: usize = 5;

    /// In neuron-top's order.
    pub const ALL: [MonitorCategory; MonitorCategory::COUNT] = [
        MonitorCategory::Tensors,
        MonitorCategory::Constants,
        MonitorCategory::ModelCode,
        MonitorCategory::RuntimeMemory,
        MonitorCategory::ModelScratchpad,
    ];

    /// The category a driver counter is shown under.
    pub fn of(counter: DeviceMem) -> MonitorCategory {
        match counter {
            DeviceMem::ModelCode => MonitorCategory::ModelCode,
            DeviceMem::Tensors => MonitorCategory::Tensors,
            DeviceMem::Constants => MonitorCategory::Constants,
            DeviceMem::ModelSharedScratchpad => MonitorCategory::ModelScratchpad,
            DeviceMem::RuntimeMemory
            | DeviceMem::DriverMemory
            | DeviceMem::Collectives
            | DeviceMem::NonsharedScratchpad
            | DeviceMem::Notifications
            | DeviceMem::DmaRings
            | DeviceMem::Uncategorized => MonitorCategory::RuntimeMemory,
        }
    }

    /// The category an allocation of `usage` is shown under.
    pub fn of_usage(usage: MemUsage) -> MonitorCategory {
        MonitorCategory::of(DeviceMem::of_usage(usage))
    }

    /// neuron-monitor's key.
    pub fn key(self) -> &'static str {
        match self {
            MonitorCategory::Tensors => "tensors",
            MonitorCategory::Constants => "constants",
            MonitorCategory::ModelCode => "model_code",
            MonitorCategory::RuntimeMemory => "runtime_memory",
            MonitorCategory::ModelScratchpad => "model_shared_scratchpad",
        }
    }

    /// neuron-top's name.
    pub fn name(self) -> &'static str {
        match self {
            MonitorCategory::Tensors => "Tensors",
            MonitorCategory::Constants => "Constants",
            MonitorCategory::ModelCode => "Model Code",
            MonitorCategory::RuntimeMemory => "Runtime Memory",
            MonitorCategory::ModelScratchpad => "Model Scratchpad",
        }
    }

    /// Its position in [`MonitorCategory::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Bytes by [`MonitorCategory`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MonitorUsage(pub [u64; MonitorCategory::COUNT]);

impl MonitorUsage {
    /// The categories of a ledger's rows.
    pub fn of(rows: &Rows) -> MonitorUsage {
        let mut u = MonitorUsage::default();
        for usage in MemUsage::ALL {
            u.0[MonitorCategory::of_usage(usage).index()] += rows[usage.index()];
        }
        u
    }

    /// Bytes of one category.
    pub fn get(&self, c: MonitorCategory) -> u64 {
        self.0[c.index()]
    }

    /// Every category.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds `other`'s bytes.
    pub fn add(&mut self, other: &MonitorUsage) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemLocation;

    /// Every usage lands in one category and no byte is lost on the way.
    #[test]
    fn the_five_categories_hold_every_usage_once() {
        let mut rows = [0u64; MemUsage::COUNT];
        for (i, r) in rows.iter_mut().enumerate() {
            *r = 1 << i;
        }
        let u = MonitorUsage::of(&rows);
        assert_eq!(u.total(), rows.iter().sum::<u64>());
        let bit = |x: MemUsage| 1u64 << x.index();
        assert_eq!(
            u.get(MonitorCategory::Constants),
            bit(MemUsage::Weight),
            "weights only"
        );
        assert_eq!(u.get(MonitorCategory::Tensors), bit(MemUsage::Tensor));
        assert_eq!(
            u.get(MonitorCategory::ModelScratchpad),
            bit(MemUsage::Scratchpad)
        );
        // The runtime's table: IO is code, the pool engine's stream is not.
        assert_eq!(
            MonitorCategory::of_usage(MemUsage::Io),
            MonitorCategory::ModelCode
        );
        assert_eq!(
            MonitorCategory::of_usage(MemUsage::InstrPool),
            MonitorCategory::RuntimeMemory
        );
        assert_eq!(
            MonitorCategory::of_usage(MemUsage::DmaRingIo),
            MonitorCategory::RuntimeMemory
        );
    }

    /// docs/decisions.md's table is this table: one row per usage type,
    /// with its kernel category, driver counter, neuron-monitor key and
    /// neuron-top name as the code maps them.
    #[test]
    fn the_documented_table_is_the_code() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/decisions.md"),
        )
        .expect("docs/decisions.md");
        let rows: Vec<Vec<String>> = doc
            .lines()
            .filter(|l| l.starts_with("| `") && l.matches('|').count() == 6)
            .map(|l| {
                l.trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().trim_matches('`').to_string())
                    .collect()
            })
            .filter(|c: &Vec<String>| MemUsage::ALL.iter().any(|u| u.name() == c[0]))
            .collect();
        assert_eq!(rows.len(), MemUsage::COUNT, "one row per usage type");
        for u in MemUsage::ALL {
            let row = rows.iter().find(|r| r[0] == u.name()).expect("its row");
            let category = u.category(MemLocation::Device).expect("a device category");
            let counter = DeviceMem::of_usage(u);
            let shown = MonitorCategory::of(counter);
            assert_eq!(
                row[1..],
                [
                    category.name().to_string(),
                    counter.name().to_string(),
                    shown.key().to_string(),
                    shown.name().to_string()
                ],
                "{u}"
            );
        }
    }
}
