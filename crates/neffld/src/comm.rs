//! What `nrt_load_collectives` checks around the load it shares with
//! `nrt_load` (docs/reference/stage.md §2.8), in the runtime's order:
//!
//! 1. the root communicator, `NEURON_RT_ROOT_COMM_ID`, is set and reads as
//!    `host:port` ([`root_comm`]);
//! 2. the instance family takes a world of that many ranks ([`topology`]);
//! 3. the rank is inside the world, and the world agrees with the one the
//!    core's global communicator was set up with, which is fixed once set
//!    ([`Communicators::join`], the runtime's `enc_validate_global_comm`);
//! 4. in the load itself, every rank the NEFF's replica groups and
//!    send/receive records name is inside the world, and the caller's rank
//!    is in a group of each replica-group set ([`check_groups`], the
//!    runtime's `enc_parse_replica_groups`).
//!
//! Each refusal carries the runtime's status and, where the public record
//! gives it, its words (docs/decisions.md, "Collectives"). What the
//! runtime checks across ranks at its bootstrap — the collectives of the
//! ranks of one group agree — needs every rank, so a planner does it
//! (`plan/world.rs`).

use std::collections::HashMap;
use std::sync::Mutex;

use thiserror::Error;

use crate::config::RuntimeConfig;
use crate::kbin::Kbin;
use crate::{Arch, NrtStatus};

/// The place a load takes in a collectives world: `nrt_load_collectives`'s
/// global device id (`rank`) and device count (`world`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Join {
    /// The global device id: this load's rank in the world.
    pub rank: u32,
    /// The device count: ranks in the world.
    pub world: u32,
}

impl Join {
    /// The rank is inside the world.
    pub fn check(self) -> Result<Join, CollectivesError> {
        if self.rank >= self.world {
            return Err(CollectivesError::RankOutsideWorld {
                rank: self.rank,
                world: self.world,
            });
        }
        Ok(self)
    }
}

/// Why `nrt_load_collectives` refused a load before staging it.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum CollectivesError {
    /// No `NEURON_RT_ROOT_COMM_ID`.
    #[error("NEURON_RT_ROOT_COMM_ID is not set: a collectives load needs the root communicator's host:port")]
    NoRootComm,
    /// A `NEURON_RT_ROOT_COMM_ID` that is not `host:port`.
    #[error("NEURON_RT_ROOT_COMM_ID={value:?} is not host:port ({why})")]
    BadRootComm {
        /// The value.
        value: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The instance family does not take a world of this size (the
    /// runtime's own message on trn1).
    #[error("Unsupported topology. Supported number of Neuron Cores is 1, 2, 8, 16 or a multiple of 32.  For other configurations, such as multiples of 2, consider using inf2 instances (a world of {world} ranks on {family})")]
    Topology {
        /// The instance family (`trn1`, `trn1n`).
        family: &'static str,
        /// The world asked for.
        world: u32,
    },
    /// A global device id outside the device count.
    #[error("device id {rank} is not below the device count {world}")]
    RankOutsideWorld {
        /// The global device id.
        rank: u32,
        /// The device count.
        world: u32,
    },
    /// A world larger than the one the core's global communicator was set
    /// up with (`enc_validate_global_comm`).
    #[error("World size of neff {world} is greater than world size of global communicator {comm} (logical core {vnc})")]
    WorldTooLarge {
        /// The device count asked for.
        world: u32,
        /// The communicator's.
        comm: u32,
        /// The logical core whose communicator it is.
        vnc: u32,
    },
    /// Another rank or world than the core's global communicator's, which
    /// is fixed once set.
    #[error("NRT has already been setup with a collectives world size of {} (global device id {}) on logical core {vnc}; this load asks for rank {} of {}", .comm.world, .comm.rank, .asked.rank, .asked.world)]
    AlreadySetUp {
        /// The communicator's rank and world.
        comm: Join,
        /// What the load asked for.
        asked: Join,
        /// The logical core.
        vnc: u32,
    },
    /// The caller's rank is in no group of a replica-group set.
    #[error("replica groups ({set}/{sets}) does not have myself {rank} (subgraph {subgraph}: the set's groups are {groups})")]
    NotMyself {
        /// The subgraph whose def.json declares the set.
        subgraph: String,
        /// The set's index.
        set: usize,
        /// The subgraph's sets.
        sets: usize,
        /// The caller's rank.
        rank: u32,
        /// The set's groups, as def.json lists them.
        groups: String,
    },
    /// A subgraph with more replica-group sets than the line's runtime
    /// takes: the runtime's replica-group parse numbers them below its
    /// cap (12, 16 from 2.34).
    #[error("subgraph {subgraph} declares {sets} replica groups; runtime {line} takes at most {cap} per NEFF{later}")]
    TooManyGroups {
        /// The subgraph.
        subgraph: String,
        /// Its replica-group sets.
        sets: usize,
        /// The line's cap.
        cap: u32,
        /// The line.
        line: crate::RuntimeLine,
        /// What a later line takes, when one takes more.
        later: String,
    },
    /// A rank the NEFF names (in a replica group, or as a send's or
    /// receive's peer) outside the world.
    #[error("{what} of subgraph {subgraph} names rank {named}, beyond the world of {world} ranks (0 to {last})", last = .world.saturating_sub(1))]
    RankBeyondWorld {
        /// The subgraph.
        subgraph: String,
        /// What names it (`replica group set 0`, `the send record 7 of pe`).
        what: String,
        /// The rank named.
        named: u64,
        /// The world.
        world: u32,
    },
}

impl CollectivesError {
    /// The `NRT_STATUS` of the refusal: `NRT_INVALID` for the call's
    /// arguments and its communicator, as the runtime's checks before the
    /// load return; `NRT_RESOURCE` for what the load itself finds in the
    /// NEFF's replica groups, the status the runtime's failure chain from
    /// its replica-group parse ends with (a public issue thread's log,
    /// docs/decisions.md).
    pub fn status(&self) -> NrtStatus {
        match self {
            CollectivesError::NotMyself { .. }
            | CollectivesError::RankBeyondWorld { .. }
            | CollectivesError::TooManyGroups { .. } => NrtStatus::Resource,
            _ => NrtStatus::Invalid,
        }
    }
}

/// The root communicator's address: set, and `host:port` with a host and a
/// port from 1 to 65535 (an IPv6 host in brackets).
pub fn root_comm(config: &RuntimeConfig) -> Result<&str, CollectivesError> {
    let value = config
        .libnrt
        .root_comm_id
        .as_deref()
        .ok_or(CollectivesError::NoRootComm)?;
    let bad = |why| CollectivesError::BadRootComm {
        value: value.to_string(),
        why,
    };
    let (host, port) = value.rsplit_once(':').ok_or_else(|| bad("no ':port'"))?;
    if host.is_empty() || host == "[]" {
        return Err(bad("no host before the ':'"));
    }
    if host.contains(char::is_whitespace) {
        return Err(bad("white space in the host"));
    }
    // An IPv6 address has colons of its own, and is written in brackets.
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(bad("an IPv6 host is written in brackets, [::1]:port"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 && port.bytes().all(|b| b.is_ascii_digit()) => Ok(value),
        _ => Err(bad("the port is not a number from 1 to 65535")),
    }
}

/// The instance family whose topology rule is public, for `config`: trn1
/// (and trn1n) take worlds of 1, 2, 8 or 16 ranks or a multiple of 32 (the
/// runtime's own refusal, quoted in a public issue thread). A runtime on
/// no named instance is on a chip of its architecture's family (`trn1` for
/// the chip trn1 and inf2 share). trn2's and trn3's rules are not public:
/// nothing is refused there.
pub fn topology(config: &RuntimeConfig, world: u32) -> Result<(), CollectivesError> {
    let family = match config.topology.instance {
        Some(i) => i.family,
        None => config.topology.arch.instance(),
    };
    let trn1 = config.topology.arch == Arch::Sunda && family.starts_with("trn1");
    if trn1 && !(matches!(world, 1 | 2 | 8 | 16) || world.is_multiple_of(32)) {
        return Err(CollectivesError::Topology { family, world });
    }
    Ok(())
}

/// Every logical core's global communicator, as the collectives loads on
/// it set it up: the runtime keeps one per core and context, set by the
/// first collectives load there and kept until the runtime closes.
#[derive(Debug, Default)]
pub(crate) struct Communicators {
    by_vnc: Mutex<HashMap<u32, Join>>,
}

impl Communicators {
    /// `join` on logical core `vnc`: the first load there sets the core's
    /// communicator up; a later one must ask for the same rank and world
    /// (a larger world is the runtime's own refusal).
    pub fn join(&self, vnc: u32, join: Join) -> Result<(), CollectivesError> {
        let mut by_vnc = self.by_vnc.lock().unwrap_or_else(|p| p.into_inner());
        let comm = *by_vnc.entry(vnc).or_insert(join);
        if join.world > comm.world {
            return Err(CollectivesError::WorldTooLarge {
                world: join.world,
                comm: comm.world,
                vnc,
            });
        }
        if join != comm {
            return Err(CollectivesError::AlreadySetUp {
                comm,
                asked: join,
                vnc,
            });
        }
        Ok(())
    }
}

/// What the load finds in the NEFF's replica groups for `join` under
/// `line`: no subgraph declares more replica-group sets than the line's
/// cap, every rank a group or a send/receive names is inside the world,
/// and `join`'s rank is in a group of each non-empty replica-group set of
/// every subgraph (an empty set, the runtime's own sample's `[[]]`, is one
/// group of every rank).
pub(crate) fn check_groups(
    kbins: &[Kbin],
    join: Join,
    line: crate::RuntimeLine,
) -> Result<(), CollectivesError> {
    let cap = line.facts().switches.replica_group_cap;
    for k in kbins {
        let sets = k.replica_groups();
        if sets.len() > cap as usize {
            return Err(CollectivesError::TooManyGroups {
                subgraph: k.name().to_string(),
                sets: sets.len(),
                cap,
                line,
                later: crate::line::facts::FACTS
                    .iter()
                    .find(|f| f.switches.replica_group_cap > cap)
                    .map_or(String::new(), |f| {
                        format!(" ({} from {})", f.switches.replica_group_cap, f.line)
                    }),
            });
        }
        for (s, set) in sets.iter().enumerate() {
            let beyond = set.iter().flatten().find(|&&r| r >= join.world);
            if let Some(&named) = beyond {
                return Err(CollectivesError::RankBeyondWorld {
                    subgraph: k.name().to_string(),
                    what: format!("replica group set {s}"),
                    named: u64::from(named),
                    world: join.world,
                });
            }
            if !set.is_empty() && !set.iter().flatten().any(|&r| r == join.rank) {
                return Err(CollectivesError::NotMyself {
                    subgraph: k.name().to_string(),
                    set: s,
                    sets: sets.len(),
                    rank: join.rank,
                    groups: format!("{set:?}"),
                });
            }
        }
        for c in k.collectives() {
            if let Some(peer) = c.peer().filter(|&p| p >= u64::from(join.world)) {
                return Err(CollectivesError::RankBeyondWorld {
                    subgraph: k.name().to_string(),
                    what: format!(
                        "the {} record {} of {}",
                        c.op().name(),
                        c.record(),
                        c.engine().key()
                    ),
                    named: peer,
                    world: join.world,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(root: Option<&str>) -> RuntimeConfig {
        RuntimeConfig {
            libnrt: crate::config::Libnrt {
                root_comm_id: root.map(str::to_string),
                ..Default::default()
            },
            ..RuntimeConfig::default()
        }
    }

    #[test]
    fn the_root_communicator_is_host_and_port() {
        for good in [
            "10.0.0.1:62182",
            "localhost:1",
            "[::1]:65535",
            "node-3.ec2:44444",
        ] {
            assert_eq!(root_comm(&config(Some(good))), Ok(good));
        }
        assert_eq!(root_comm(&config(None)), Err(CollectivesError::NoRootComm));
        for bad in [
            "10.0.0.1",
            ":62182",
            "host:",
            "host:0",
            "host:65536",
            "host:+1",
            "::1:62182",
            "a b:1",
        ] {
            let e = root_comm(&config(Some(bad))).unwrap_err();
            assert!(
                matches!(e, CollectivesError::BadRootComm { .. }),
                "{bad}: {e}"
            );
            assert!(e.to_string().contains(bad), "{e}");
            assert_eq!(e.status(), NrtStatus::Invalid);
        }
    }

    #[test]
    fn trn1_takes_1_2_8_16_or_multiples_of_32_ranks() {
        let on = |name: &str| {
            RuntimeConfig::default().on_instance(crate::instance::Instance::named(name).unwrap())
        };
        let trn1 = on("trn1.32xlarge");
        for ok in [1, 2, 8, 16, 32, 64, 96] {
            assert_eq!(topology(&trn1, ok), Ok(()), "{ok}");
        }
        for refused in [3, 4, 24, 33, 48] {
            let e = topology(&trn1, refused).unwrap_err();
            assert!(e.to_string().starts_with("Unsupported topology."), "{e}");
            assert_eq!(e.status(), NrtStatus::Invalid);
        }
        assert!(topology(&on("trn1n.32xlarge"), 24).is_err());
        // inf2 (the same chip) and trn2: no public rule, nothing refused.
        assert_eq!(topology(&on("inf2.48xlarge"), 24), Ok(()));
        assert_eq!(topology(&on("trn2.48xlarge"), 24), Ok(()));
        // No instance: the chip's family.
        let chip = |arch| RuntimeConfig {
            topology: crate::config::Topology {
                arch,
                ..Default::default()
            },
            ..RuntimeConfig::default()
        };
        assert!(topology(&chip(Arch::Sunda), 24).is_err());
        assert_eq!(topology(&chip(Arch::Cayman), 24), Ok(()));
    }

    #[test]
    fn a_cores_communicator_is_fixed_once_set() {
        let c = Communicators::default();
        let j = |rank, world| Join { rank, world };
        assert_eq!(
            j(2, 2).check(),
            Err(CollectivesError::RankOutsideWorld { rank: 2, world: 2 })
        );
        c.join(0, j(0, 2)).unwrap();
        c.join(0, j(0, 2)).unwrap();
        c.join(1, j(1, 2)).unwrap();
        let e = c.join(0, j(0, 4)).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "World size of neff 4 is greater than world size of global communicator 2"
            ),
            "{e}"
        );
        let e = c.join(0, j(1, 2)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("NRT has already been setup with a collectives world size of 2"),
            "{e}"
        );
        assert!(matches!(
            c.join(1, j(0, 1)),
            Err(CollectivesError::AlreadySetUp { .. })
        ));
    }
}
