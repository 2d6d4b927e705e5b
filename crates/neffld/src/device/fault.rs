//! Fault injection: make the k-th allocation or the k-th write fail, or the
//! first allocation on one physical core, so every rollback path of a load
//! can be driven from a test.
//!
//! Counting starts when a plan is armed ([`super::Device::set_fault_plan`]);
//! `k` is 1-based (`Some(1)` fails the very next call) and each trigger fires
//! once. Every call counts, whether or not it would have succeeded, so a test
//! can enumerate `k = 1..=n` over a load that makes `n` calls and hit each one.
//!
//! The per-core trigger (`fail_alloc_on_core`) is independent of the counters:
//! it fails the first allocation requested for that core after arming, and
//! only that one. It lets a test fail one subgraph of a multi-core load
//! whatever order the fan-out threads run in. A call failed by it still
//! counts toward `fail_alloc_at`; when both triggers pick the same call, the
//! counted one is reported.
//!
//! A plan with `panic` set fires its faults as panics instead of errors
//! (the message names the operation and its count), so a test can show that
//! a panic anywhere in a load unwinds through guards that put everything
//! back. The panic is raised before the call changes anything on the device.

use std::fmt;

use super::DeviceError;
use crate::ids::PCore;

/// Which operations to fail. The default plan fails nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// Fail the k-th `alloc` after arming (1-based).
    pub fail_alloc_at: Option<u64>,
    /// Fail the k-th `write` after arming (1-based).
    pub fail_write_at: Option<u64>,
    /// Fail the first `alloc` for this physical core after arming.
    pub fail_alloc_on_core: Option<PCore>,
    /// Panic instead of returning the injected error.
    pub panic: bool,
}

impl FaultPlan {
    /// A plan failing only the k-th allocation.
    #[cfg(any(test, feature = "testkit"))]
    pub fn alloc(k: u64) -> FaultPlan {
        FaultPlan {
            fail_alloc_at: Some(k),
            ..FaultPlan::default()
        }
    }

    /// A plan failing only the k-th write.
    #[cfg(any(test, feature = "testkit"))]
    pub fn write(k: u64) -> FaultPlan {
        FaultPlan {
            fail_write_at: Some(k),
            ..FaultPlan::default()
        }
    }

    /// The same plan, firing its faults as panics.
    #[cfg(any(test, feature = "testkit"))]
    pub fn panicking(self) -> FaultPlan {
        FaultPlan {
            panic: true,
            ..self
        }
    }

    /// A plan failing only the first allocation on `core`.
    #[cfg(any(test, feature = "testkit"))]
    pub fn alloc_on_core(core: PCore) -> FaultPlan {
        FaultPlan {
            fail_alloc_on_core: Some(core),
            ..FaultPlan::default()
        }
    }
}

/// The operation a fault was injected into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultOp {
    Alloc,
    Write,
}

impl fmt::Display for FaultOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultOp::Alloc => "allocation",
            FaultOp::Write => "write",
        })
    }
}

/// An armed plan and the calls seen since arming.
#[derive(Clone, Debug, Default)]
pub(crate) struct FaultState {
    plan: FaultPlan,
    allocs: u64,
    writes: u64,
    /// Whether the per-core trigger has fired since arming.
    core_fired: bool,
}

impl FaultState {
    /// Arms `plan` and restarts both counters.
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn arm(&mut self, plan: FaultPlan) {
        *self = FaultState {
            plan,
            allocs: 0,
            writes: 0,
            core_fired: false,
        };
    }

    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn plan(&self) -> FaultPlan {
        self.plan
    }

    /// Counts one allocation call for `core`; fails it if it is the planned
    /// one (by count, or the first on the planned core).
    pub(crate) fn on_alloc(&mut self, core: PCore) -> Result<(), DeviceError> {
        self.allocs += 1;
        let on_core = !self.core_fired && self.plan.fail_alloc_on_core == Some(core);
        if self.plan.fail_alloc_at == Some(self.allocs) || on_core {
            self.core_fired |= on_core;
            return self.fire(FaultOp::Alloc, self.allocs);
        }
        Ok(())
    }

    /// Counts one write call; fails it if it is the planned one.
    pub(crate) fn on_write(&mut self) -> Result<(), DeviceError> {
        self.writes += 1;
        if self.plan.fail_write_at == Some(self.writes) {
            return self.fire(FaultOp::Write, self.writes);
        }
        Ok(())
    }

    fn fire(&self, op: FaultOp, nth: u64) -> Result<(), DeviceError> {
        if self.plan.panic {
            panic!("injected panic: {op} #{nth} panicked as planned");
        }
        Err(DeviceError::InjectedFault { op, nth })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_exactly_once_at_k_and_rearming_restarts_the_count() {
        let mut s = FaultState::default();
        s.arm(FaultPlan::alloc(3));
        assert!(s.on_alloc(PCore(0)).is_ok());
        assert!(s.on_write().is_ok());
        assert!(s.on_alloc(PCore(0)).is_ok());
        let e = s.on_alloc(PCore(0)).unwrap_err();
        assert_eq!(
            e,
            DeviceError::InjectedFault {
                op: FaultOp::Alloc,
                nth: 3
            }
        );
        assert!(s.on_alloc(PCore(0)).is_ok());
        s.arm(FaultPlan::write(1));
        assert!(s.on_alloc(PCore(0)).is_ok());
        assert!(s.on_write().is_err());
        assert!(s.on_write().is_ok());
        s.arm(FaultPlan::default());
        for _ in 0..10 {
            assert!(s.on_alloc(PCore(0)).is_ok() && s.on_write().is_ok());
        }
    }

    #[test]
    fn the_core_trigger_fails_only_the_first_allocation_on_that_core() {
        let mut s = FaultState::default();
        s.arm(FaultPlan::alloc_on_core(PCore(5)));
        for c in [0, 1, 4, 6, 255] {
            assert!(s.on_alloc(PCore(c)).is_ok(), "core {c}");
        }
        assert_eq!(
            s.on_alloc(PCore(5)),
            Err(DeviceError::InjectedFault {
                op: FaultOp::Alloc,
                nth: 6
            })
        );
        assert!(s.on_alloc(PCore(5)).is_ok(), "fires once");
        // Re-arming resets it; a counted trigger still fires alongside.
        s.arm(FaultPlan {
            fail_alloc_at: Some(1),
            fail_alloc_on_core: Some(PCore(5)),
            ..FaultPlan::default()
        });
        assert_eq!(
            s.on_alloc(PCore(0)),
            Err(DeviceError::InjectedFault {
                op: FaultOp::Alloc,
                nth: 1
            })
        );
        assert!(s.on_alloc(PCore(5)).is_err());
        assert!(s.on_alloc(PCore(5)).is_ok());
    }

    #[test]
    fn a_panicking_plan_panics_at_k_and_counts_on() {
        let mut s = FaultState::default();
        s.arm(FaultPlan::write(2).panicking());
        assert!(s.on_write().is_ok());
        let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.on_write()))
            .expect_err("the second write panics");
        let msg = p.downcast_ref::<String>().unwrap();
        assert_eq!(msg, "injected panic: write #2 panicked as planned");
        assert!(s.on_write().is_ok(), "fires once");
        assert!(s.on_alloc(PCore(0)).is_ok());
    }
}
