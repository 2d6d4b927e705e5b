//! A world of ranks (`neffld plan --world N`): the deployment's load steps
//! are the N ranks of one collectives world — rank r is the r-th load step,
//! loaded as `nrt_load_collectives(…, r, N)` would load it — on one
//! instance or several of one type (hosts), each with its own devices and
//! runtime memory, logical cores numbered across them host by host.
//!
//! Before any load, the plan compares what the ranks' NEFFs do, which the
//! runtime finds only at load on every host, when the ranks bootstrap
//! their communicators ([`compare`]):
//!
//! - each NEFF's declared world size (`#rank_world_size`) against N;
//! - per replica group (its ranks as def.json lists them), each rank's
//!   ordered collectives (operation, reduce op, element type, sizes)
//!   against the group's first rank's — one comparison per rank and group,
//!   so the work grows with ranks × collectives, not with pairs of ranks;
//! - each send against its peer's receive, in order;
//! - every rank a rank waits for loads: a rank whose peer never loads, or
//!   never forms their group, waits in its load for ever (a deadlock).
//!
//! A disagreement refuses the load step of the rank that differs (or
//! waits), after that rank's own load went through — the load's own
//! refusals come first, as the bootstrap follows the load in the runtime —
//! with the words the line's runtime logs where they are known
//! ([`Disagreement`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::api::Collective;
use crate::line::RuntimeLine;
use crate::manifest::def::ReplicaGroups;
use crate::parse::ParsedModel;
use crate::NrtStatus;

use super::deployment::core_list;
use super::StepFailure;

/// Ranks a world may have: as many loads as one argument lists.
pub const MAX_WORLD: u32 = 1 << 16;

/// Instances a world may span.
pub const MAX_HOSTS: u32 = 256;

/// The world a deployment asks for, settled against the instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Shape {
    /// Ranks.
    pub size: u32,
    /// Instances (hosts) it spans.
    pub hosts: u32,
    /// Logical cores of one host: host `h` holds cores `h × cores_per_host`
    /// onwards.
    pub cores_per_host: u32,
    /// Chips (devices) of one host: host `h` holds devices `h ×
    /// chips_per_host` onwards.
    pub chips_per_host: u32,
    /// The environment names no root communicator: the plan loads as
    /// though the framework had set one ([`ASSUMED_ROOT_COMM`]).
    pub root_comm_assumed: bool,
}

/// Why the ranks of a world do not agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DisagreementKind {
    /// A NEFF declares another world size than the world's.
    WorldSize,
    /// Two ranks of a replica group, or a send and its receive, do not do
    /// the same collectives in the same order.
    Mismatch,
    /// A rank waits for a peer that never loads, or never forms their
    /// group: its load never returns.
    Deadlock,
}

/// Two ranks of a world that do not agree, and what the runtime makes of
/// it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Disagreement {
    /// What kind of disagreement.
    pub kind: DisagreementKind,
    /// The replica group's ranks, as def.json lists them (`None`: a send
    /// and its receive, or the world as a whole).
    pub group: Option<Vec<u32>>,
    /// The collective's place in the group's ordered list (or in the
    /// pair's sends), from 0.
    pub index: Option<usize>,
    /// The rank compared against (the group's first, the sender, the rank
    /// waited for) and the rank whose load step is refused for it.
    pub ranks: (u32, u32),
    /// What differs, in words.
    pub what: String,
    /// What the line's runtime logs for it, where the words are known.
    pub runtime_log: Vec<String>,
    /// Whether the line's runtime finds it at load (a runtime that
    /// compares only how many collectives each rank has loads ranks whose
    /// collectives differ in kind or size).
    pub runtime_finds: bool,
    /// The load step refused for it.
    pub step: usize,
}

impl WorldPlan {
    /// Every rank's collectives agree with its peers', and every peer
    /// loads.
    pub fn agrees(&self) -> bool {
        self.disagreements.is_empty()
    }
}

impl Disagreement {
    /// The refusal of its step, as the plan reports it.
    pub fn failure(&self) -> StepFailure {
        let status = match self.kind {
            DisagreementKind::WorldSize => NrtStatus::Invalid,
            DisagreementKind::Mismatch => NrtStatus::Failure,
            DisagreementKind::Deadlock => NrtStatus::Timeout,
        };
        let mut message = self.what.clone();
        if !self.runtime_log.is_empty() {
            message.push_str(&format!(
                "; the runtime logs: {}",
                self.runtime_log.join(" / ")
            ));
        }
        StepFailure {
            stage: "collectives",
            status,
            message,
            own_limit: None,
            damaged: false,
        }
    }
}

/// One rank of a world as the plan ran it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RankPlan {
    /// The rank.
    pub rank: u32,
    /// Its load step.
    pub step: usize,
    /// Its NEFF.
    pub file: PathBuf,
    /// The logical core it loaded on (numbered across the hosts), when
    /// known.
    pub core: Option<u32>,
    /// The host of that core.
    pub host: Option<u32>,
    /// Its load went through.
    pub loaded: bool,
    /// Its NEFF's collectives.
    pub collectives: usize,
    /// The replica groups they use.
    pub groups: usize,
}

/// What planning a world found: its shape, each rank and whether the ranks
/// agree (serialised as `plan --json`'s `world`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WorldPlan {
    /// Ranks, hosts, and the cores and chips of one host.
    #[serde(flatten)]
    pub shape: Shape,
    /// The root communicator the ranks load with
    /// (`NEURON_RT_ROOT_COMM_ID`, or [`ASSUMED_ROOT_COMM`] when
    /// `shape.root_comm_assumed`).
    pub root_comm: String,
    /// The line's runtime compares a signature of each group's collectives
    /// (else how many there are).
    pub signature_check: bool,
    /// Replica groups one NEFF may declare on the line.
    pub replica_group_cap: u32,
    /// Every rank, in rank order (those with a load step).
    pub ranks: Vec<RankPlan>,
    /// Every disagreement found, in step order.
    pub disagreements: Vec<Disagreement>,
}

impl WorldPlan {
    /// What one run found of its world: each rank where it ran.
    pub(crate) fn of(
        run: WorldRun,
        steps: &[super::StepReport],
        config: &crate::config::RuntimeConfig,
    ) -> WorldPlan {
        let line = config.line();
        let shape = run.shape;
        let ranks = run
            .ranks
            .into_iter()
            .enumerate()
            .map(|(rank, r)| {
                let ran = steps.get(r.step);
                let core = ran.and_then(|s| s.vnc);
                RankPlan {
                    rank: rank as u32,
                    step: r.step,
                    file: r.file,
                    core,
                    host: core.map(|c| c / shape.cores_per_host.max(1)),
                    loaded: ran.is_some_and(|s| s.outcome.is_ok()),
                    collectives: r.collectives,
                    groups: r.groups,
                }
            })
            .collect();
        WorldPlan {
            shape,
            root_comm: config.libnrt.root_comm_id.clone().unwrap_or_default(),
            signature_check: line.facts().switches.cc_signature_check,
            replica_group_cap: line.facts().switches.replica_group_cap,
            ranks,
            disagreements: run.disagreements,
        }
    }
}

/// What one NEFF's collectives are, for comparing ranks: read once per
/// distinct NEFF from its parse.
pub(crate) struct NeffCc {
    /// Each subgraph's name and replica-group sets.
    sets: Vec<(String, ReplicaGroups)>,
    /// Each subgraph's `#rank_world_size`, where it names one.
    world_size: Option<(String, u64)>,
    /// Its collectives, subgraph by subgraph in record order.
    collectives: Arc<[Collective]>,
}

impl NeffCc {
    pub(crate) fn of(model: &ParsedModel) -> NeffCc {
        NeffCc {
            sets: model
                .kbins
                .iter()
                .map(|k| (k.name().to_string(), k.replica_groups().clone()))
                .collect(),
            world_size: model.manifest.subgraphs.iter().find_map(|s| {
                let n = s.def.rank_world_size.filter(|&n| n > 0)?;
                Some((s.graph.name.clone(), n))
            }),
            collectives: model.collectives(),
        }
    }

    /// Its collectives, as reports list them.
    pub(crate) fn collectives(&self) -> &Arc<[Collective]> {
        &self.collectives
    }
}

/// One rank's load: its step and its NEFF's collectives (`None`: its NEFF
/// did not parse, and its load step says why).
pub(crate) struct RankLoad<'a> {
    pub step: usize,
    pub file: &'a PathBuf,
    pub cc: Option<&'a NeffCc>,
}

/// What one collective is, as ranks compare it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sig<'a> {
    operation: &'a str,
    reduce: Option<&'a str>,
    dtype: Option<&'a str>,
    elements_in: u64,
    elements_out: u64,
    bytes_in: u64,
    bytes_out: u64,
}

impl<'a> Sig<'a> {
    fn of(c: &'a Collective) -> Sig<'a> {
        Sig {
            operation: c.operation,
            reduce: c.reduce,
            dtype: c.dtype,
            elements_in: c.elements_in,
            elements_out: c.elements_out,
            bytes_in: c.bytes_in,
            bytes_out: c.bytes_out,
        }
    }

    /// A send or a receive as its pair compares it: the bytes moved.
    fn transfer(c: &'a Collective) -> Sig<'a> {
        let bytes = c.bytes_in.max(c.bytes_out);
        Sig {
            operation: "transfer",
            reduce: None,
            dtype: None,
            elements_in: bytes,
            elements_out: bytes,
            bytes_in: bytes,
            bytes_out: bytes,
        }
    }

    /// `all-reduce (add) of 32 float32 (128 bytes)`, `send of 64 bytes`.
    fn text(&self) -> String {
        let reduce = self.reduce.map_or(String::new(), |r| format!(" ({r})"));
        let size = match self.dtype {
            None => format!("{} bytes", self.bytes_in.max(self.bytes_out)),
            Some(d) if self.bytes_out != self.bytes_in => format!(
                "{} {d} ({} bytes in, {} out)",
                self.elements_in, self.bytes_in, self.bytes_out
            ),
            Some(d) => format!("{} {d} ({} bytes)", self.elements_in, self.bytes_in),
        };
        format!("{}{reduce} of {size}", self.operation)
    }

    /// What differs between two collectives, in words.
    fn differs(&self, other: &Sig) -> &'static str {
        if self.operation != other.operation {
            "the operation differs"
        } else if self.reduce != other.reduce {
            "the reduce operation differs"
        } else if self.dtype != other.dtype {
            "the element type differs"
        } else {
            "the size differs"
        }
    }
}

/// A collective of one rank, where it is.
#[derive(Clone, Copy)]
struct Entry<'a> {
    sig: Sig<'a>,
    at: &'a Collective,
}

impl Entry<'_> {
    fn text(&self) -> String {
        format!(
            "{} ({} {} record {})",
            Sig::of(self.at).text(),
            self.at.subgraph,
            self.at.engine,
            self.at.index
        )
    }
}

/// One rank's collectives by group (a canonical group id) and its sends
/// and receives by peer.
#[derive(Default)]
struct RankLists<'a> {
    groups: Vec<(usize, Vec<Entry<'a>>)>,
    /// Canonical ids of every group the rank's NEFF forms (its group in
    /// each non-empty set), with or without collectives.
    forms: Vec<usize>,
    sends: Vec<(u64, Vec<Entry<'a>>)>,
    receives: Vec<(u64, Vec<Entry<'a>>)>,
}

impl<'a> RankLists<'a> {
    fn group(&self, id: usize) -> Option<&[Entry<'a>]> {
        self.groups
            .iter()
            .find(|(g, _)| *g == id)
            .map(|(_, l)| l.as_slice())
    }

    fn by_peer<'l>(list: &'l [(u64, Vec<Entry<'a>>)], peer: u64) -> Option<&'l [Entry<'a>]> {
        list.iter()
            .find(|(p, _)| *p == peer)
            .map(|(_, l)| l.as_slice())
    }
}

fn push<'a, K: PartialEq>(list: &mut Vec<(K, Vec<Entry<'a>>)>, key: K, e: Entry<'a>) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some((_, l)) => l.push(e),
        None => list.push((key, vec![e])),
    }
}

/// The distinct groups of a world's NEFFs, each given an id once. A set
/// one rank reads (a NEFF of its own) is scanned for that rank's group,
/// which alone is hashed; a set a second rank reads (a NEFF ranks share)
/// is indexed rank by rank once. So the work is the ranks' own groups,
/// never every group of every rank's NEFF. A set of no groups (the
/// runtime's own sample's `[[]]`) is one group of every rank of the world,
/// as an HLO's empty `replica_groups` is (docs/decisions.md, "Replica
/// groups").
#[derive(Default)]
struct Groups {
    /// Ranks in the world.
    world: u32,
    ids: HashMap<Vec<u32>, usize>,
    ranks: Vec<Vec<u32>>,
    /// The id of the group of every rank, once given.
    everyone: Option<usize>,
    /// Per (NEFF, subgraph, set): who asked, and what it knows.
    members: HashMap<(usize, usize, usize), Members>,
}

/// What [`Groups`] knows of one set.
enum Members {
    /// One rank asked: its group.
    One { rank: u32, group: Option<usize> },
    /// Several ranks asked: every rank's group.
    All(HashMap<u32, usize>),
}

impl Groups {
    /// The group of `rank` in set `set` of subgraph `sg` of NEFF `neff`.
    fn of(&mut self, neff: usize, cc: &NeffCc, sg: usize, set: usize, rank: u32) -> Option<usize> {
        let listed = cc.sets.get(sg).and_then(|(_, s)| s.get(set))?;
        if listed.is_empty() {
            return (rank < self.world).then(|| self.whole_world());
        }
        let key = (neff, sg, set);
        match self.members.get(&key) {
            Some(Members::All(all)) => all.get(&rank).copied(),
            Some(Members::One { rank: r, group }) if *r == rank => *group,
            Some(Members::One { .. }) => {
                let all = listed
                    .iter()
                    .flat_map(|g| {
                        let id = self.intern(g);
                        g.iter().map(move |&r| (r, id))
                    })
                    .collect::<HashMap<u32, usize>>();
                let group = all.get(&rank).copied();
                self.members.insert(key, Members::All(all));
                group
            }
            None => {
                let group = listed
                    .iter()
                    .find(|g| g.contains(&rank))
                    .map(|g| self.intern(g));
                self.members.insert(key, Members::One { rank, group });
                group
            }
        }
    }

    /// The id of group `ranks`, given once.
    fn intern(&mut self, ranks: &[u32]) -> usize {
        if let Some(&id) = self.ids.get(ranks) {
            return id;
        }
        let id = self.ranks.len();
        self.ids.insert(ranks.to_vec(), id);
        self.ranks.push(ranks.to_vec());
        id
    }

    /// The id of the group of every rank of the world.
    fn whole_world(&mut self) -> usize {
        if let Some(id) = self.everyone {
            return id;
        }
        let every: Vec<u32> = (0..self.world).collect();
        let id = self.intern(&every);
        self.everyone = Some(id);
        id
    }
}

/// The comparison alone, as a plan makes it once every rank's NEFF is
/// parsed: rank r of a world of `size` ranks loads `models[r]`, and a
/// NEFF's facts are read once however many ranks load it. For the
/// project's benches, which measure how it grows with ranks and
/// collectives.
#[cfg(feature = "testkit")]
pub fn compare_parsed(models: &[&ParsedModel], size: u32, line: RuntimeLine) -> Vec<Disagreement> {
    let mut facts: HashMap<*const ParsedModel, NeffCc> = HashMap::new();
    for &m in models {
        facts.entry(m as *const _).or_insert_with(|| NeffCc::of(m));
    }
    let file = PathBuf::from("rank.neff");
    let ranks: Vec<RankLoad<'_>> = models
        .iter()
        .enumerate()
        .map(|(step, &m)| RankLoad {
            step,
            file: &file,
            cc: facts.get(&(m as *const _)),
        })
        .collect();
    compare(&ranks, size, line)
}

/// `[0, 1]`, `[0-63]`: a group's ranks, as written when few, else short.
fn group_text(ranks: &[u32]) -> String {
    if ranks.len() <= 8 {
        return format!("{ranks:?}");
    }
    format!("[{}]", core_list(ranks).replace(',', ", "))
}

/// Compares the ranks of a world of `size` under `line`: `ranks[r]` is
/// rank r's load (ranks past its end are never loaded). Disagreements come
/// in the order their steps run, each step's most fundamental first (its
/// NEFF's world size, a peer it waits for, a collective that differs).
pub(crate) fn compare(ranks: &[RankLoad<'_>], size: u32, line: RuntimeLine) -> Vec<Disagreement> {
    let signature = line.facts().switches.cc_signature_check;
    let loaded = ranks.len() as u64;
    let mut found: Vec<Disagreement> = Vec::new();
    // Each NEFF by the address of its facts: ranks share a NEFF's.
    let mut neff_ids: HashMap<*const NeffCc, usize> = HashMap::new();
    let mut groups = Groups {
        world: size,
        ..Groups::default()
    };
    let mut lists: Vec<RankLists> = Vec::with_capacity(ranks.len());
    for (r, load) in ranks.iter().enumerate() {
        let r = r as u32;
        let mut mine = RankLists::default();
        let Some(cc) = load.cc else {
            lists.push(mine);
            continue;
        };
        let next = neff_ids.len();
        let neff = *neff_ids.entry(cc as *const NeffCc).or_insert(next);
        if let Some((sg, n)) = &cc.world_size {
            if *n != u64::from(size) {
                found.push(Disagreement {
                    kind: DisagreementKind::WorldSize,
                    group: None,
                    index: None,
                    ranks: (r, r),
                    what: format!(
                        "rank {r}'s NEFF {} was compiled for a world of {n} ranks (def.json #rank_world_size of {sg}); this world has {size}",
                        load.file.display()
                    ),
                    runtime_log: Vec::new(),
                    runtime_finds: false,
                    step: load.step,
                });
            }
        }
        for (sg, (_, sets)) in cc.sets.iter().enumerate() {
            for set in 0..sets.len() {
                if let Some(g) = groups.of(neff, cc, sg, set, r) {
                    if !mine.forms.contains(&g) {
                        mine.forms.push(g);
                    }
                }
            }
        }
        // Collectives list subgraphs in order: the subgraph of each found
        // by walking the names alongside.
        let mut sg = 0usize;
        for c in cc.collectives.iter() {
            while cc.sets.get(sg).is_some_and(|(name, _)| *name != c.subgraph) {
                sg += 1;
            }
            match (c.group, c.peer) {
                (Some(set), _) => {
                    if let Some(g) = groups.of(neff, cc, sg, usize::from(set), r) {
                        push(
                            &mut mine.groups,
                            g,
                            Entry {
                                sig: Sig::of(c),
                                at: c,
                            },
                        );
                    }
                }
                (None, Some(peer)) => {
                    let e = Entry {
                        sig: Sig::transfer(c),
                        at: c,
                    };
                    match c.operation {
                        "send" => push(&mut mine.sends, peer, e),
                        _ => push(&mut mine.receives, peer, e),
                    }
                }
                (None, None) => {}
            }
        }
        lists.push(mine);
    }
    // Ranks never loaded, and the groups that wait for them: each
    // group's first such rank found once.
    let missing = |p: u64| p >= loaded;
    let absent: Vec<Option<u32>> = groups
        .ranks
        .iter()
        .map(|g| g.iter().copied().find(|&p| missing(u64::from(p))))
        .collect();
    for (r, mine) in lists.iter().enumerate() {
        let r32 = r as u32;
        let step = ranks[r].step;
        let mut waits: Vec<Disagreement> = Vec::new();
        let mut differs: Vec<Disagreement> = Vec::new();
        for &g in &mine.forms {
            let members = &groups.ranks[g];
            let first = members[0];
            if let Some(p) = absent[g] {
                waits.push(deadlock(
                    r32,
                    p,
                    Some(members),
                    format!(
                        "deadlock: rank {r32}'s load waits for rank {p} of its replica group {}, which no step of the plan loads",
                        group_text(members)
                    ),
                    step,
                ));
                continue;
            }
            if first == r32 {
                continue;
            }
            let theirs = &lists[first as usize];
            if !theirs.forms.contains(&g) {
                waits.push(deadlock(
                    r32,
                    first,
                    Some(members),
                    format!(
                        "deadlock: rank {r32}'s load waits for rank {first} to join replica group {}, which rank {first}'s NEFF {} does not form",
                        group_text(members),
                        ranks[first as usize].file.display()
                    ),
                    step,
                ));
                continue;
            }
            let ours = mine.group(g).unwrap_or(&[]);
            let reference = theirs.group(g).unwrap_or(&[]);
            if let Some(d) = mismatch(
                (first, reference),
                (r32, ours),
                &format!("replica group {}", group_text(members)),
                Some(members),
                signature,
                line,
                step,
            ) {
                differs.push(d);
            }
        }
        // Each receive against its sender's sends to this rank.
        for (peer, receives) in &mine.receives {
            let p = *peer;
            if missing(p) {
                waits.push(deadlock(
                    r32,
                    p as u32,
                    None,
                    format!("deadlock: rank {r32}'s load waits for rank {p} to send to it, which no step of the plan loads"),
                    step,
                ));
                continue;
            }
            let sends = RankLists::by_peer(&lists[p as usize].sends, u64::from(r32)).unwrap_or(&[]);
            if let Some(d) = mismatch(
                (p as u32, sends),
                (r32, receives),
                &format!("the sends of rank {p} to rank {r32} and its receives from rank {p}"),
                None,
                signature,
                line,
                step,
            ) {
                differs.push(d);
            }
        }
        // A send whose peer never loads, or receives nothing from it.
        for (peer, sends) in &mine.sends {
            let p = *peer;
            if missing(p) {
                waits.push(deadlock(
                    r32,
                    p as u32,
                    None,
                    format!("deadlock: rank {r32}'s load waits for rank {p} to receive from it, which no step of the plan loads"),
                    step,
                ));
            } else if RankLists::by_peer(&lists[p as usize].receives, u64::from(r32)).is_none() {
                if let Some(d) = mismatch(
                    (r32, sends),
                    (p as u32, &[]),
                    &format!(
                        "the sends of rank {r32} to rank {p} and its receives from rank {r32}"
                    ),
                    None,
                    signature,
                    line,
                    ranks[p as usize].step,
                ) {
                    differs.push(d);
                }
            }
        }
        found.extend(waits);
        found.extend(differs);
    }
    // Ranks of the world no step loads, that no group waits for: the
    // world's own communicator waits for every rank.
    if loaded < u64::from(size) && !found.iter().any(|d| d.kind == DisagreementKind::Deadlock) {
        if let Some(first) = ranks.first() {
            let never: Vec<u32> = (loaded as u32..size).collect();
            found.push(deadlock(
                0,
                loaded as u32,
                None,
                format!(
                    "deadlock: ranks {} of the world of {size} are never loaded (the plan has {loaded} load steps), and every rank's load waits for the whole world to join its communicator",
                    core_list(&never)
                ),
                first.step,
            ));
        }
    }
    found.sort_by_key(|d| {
        let fundamental = match d.kind {
            DisagreementKind::WorldSize => 0,
            DisagreementKind::Deadlock => 1,
            DisagreementKind::Mismatch => 2,
        };
        (d.step, fundamental)
    });
    found
}

fn deadlock(
    waiting: u32,
    waited: u32,
    group: Option<&[u32]>,
    what: String,
    step: usize,
) -> Disagreement {
    Disagreement {
        kind: DisagreementKind::Deadlock,
        group: group.map(<[u32]>::to_vec),
        index: None,
        ranks: (waited, waiting),
        what: format!("{what}: nrt_load_collectives never returns"),
        runtime_log: Vec::new(),
        runtime_finds: false,
        step,
    }
}

/// Where two ranks' ordered collectives first differ, as a disagreement
/// refusing `step`: the reference rank's list against the other's.
#[allow(clippy::too_many_arguments)]
fn mismatch(
    (a, ours_a): (u32, &[Entry<'_>]),
    (b, ours_b): (u32, &[Entry<'_>]),
    what: &str,
    group: Option<&[u32]>,
    signature: bool,
    line: RuntimeLine,
    step: usize,
) -> Option<Disagreement> {
    let k = (0..ours_a.len().max(ours_b.len()))
        .find(|&i| ours_a.get(i).map(|e| e.sig) != ours_b.get(i).map(|e| e.sig))?;
    let side = |r: u32, e: Option<&Entry>| match e {
        Some(e) => format!("rank {r} has {}", e.text()),
        None => format!("rank {r} has none"),
    };
    let (ea, eb) = (ours_a.get(k), ours_b.get(k));
    let why = match (ea, eb) {
        (Some(x), Some(y)) => format!(": {}", x.sig.differs(&y.sig)),
        _ => format!(
            ": rank {a} has {} there and rank {b} has {}",
            crate::text::count(ours_a.len() as u64, "collective"),
            ours_b.len()
        ),
    };
    let counts_differ = ours_a.len() != ours_b.len();
    let (runtime_log, runtime_finds) = if signature {
        (
            vec![format!("failed signature check from peer: {b}. This is likely caused by a compilation error generating mismatched collectives between the peers")],
            true,
        )
    } else if counts_differ {
        (
            vec![
                format!(
                    "mismatching number of cc ops, expected {} received {}. Check if ranks {a} and {b} are using the same neff",
                    ours_a.len(),
                    ours_b.len()
                ),
                "failed to validate neff across the replica group".to_string(),
            ],
            true,
        )
    } else {
        (Vec::new(), false)
    };
    let mut text = format!(
        "{what}: collective {k} differs between ranks {a} and {b}: {}; {}{why}",
        side(a, ea),
        side(b, eb)
    );
    if !runtime_finds {
        text.push_str(&format!(
            " (runtime {line} compares only how many collectives each rank has: it loads these ranks, and their collectives run mismatched)"
        ));
    }
    Some(Disagreement {
        kind: DisagreementKind::Mismatch,
        group: group.map(<[u32]>::to_vec),
        index: Some(k),
        ranks: (a, b),
        what: text,
        runtime_log,
        runtime_finds,
        step,
    })
}

/// Where the world's root communicator is when the plan's environment
/// names none: a framework sets `NEURON_RT_ROOT_COMM_ID` for its ranks,
/// and nothing of a plan depends on its address.
pub const ASSUMED_ROOT_COMM: &str = "127.0.0.1:62182";

/// `config` made the runtime of `d`'s world: the devices of its hosts
/// (the instance's chips on each), and a root communicator where the
/// environment names none. `None` for a deployment that is no world.
pub(crate) fn settle(
    d: &super::Deployment,
    mut config: crate::config::RuntimeConfig,
) -> Result<(crate::config::RuntimeConfig, Option<Shape>), super::DeploymentError> {
    let Some(size) = d.world else {
        return Ok((config, None));
    };
    let place = || d.world_origin.clone().unwrap_or_else(|| "--world".into());
    let chips = config.topology.chips.max(1);
    let chip = crate::device::Geometry::for_arch(config.topology.arch);
    // A variable the runtime refuses is the plan's refusal, reported where
    // the plan starts its runtime: count every core here.
    let per_host = config
        .logical_cores(&chip, chips)
        .map_or(config.total_vnc_count(), |v| v.len() as u32)
        .max(1);
    let hosts = d.hosts.unwrap_or(size.div_ceil(per_host)).max(1);
    if hosts > 1 {
        if let Some(list) = &config.topology.visible_cores {
            return Err(super::DeploymentError {
                place: place(),
                what: format!(
                    "{}={} restricts one host's runtime, and this world spans {hosts} hosts: plan each host's cores whole",
                    list.var, list.value
                ),
            });
        }
    }
    config.topology.chips = chips * hosts;
    let root_comm_assumed = config.libnrt.root_comm_id.is_none();
    if root_comm_assumed {
        config.libnrt.root_comm_id = Some(ASSUMED_ROOT_COMM.to_string());
    }
    Ok((
        config,
        Some(Shape {
            size,
            hosts,
            cores_per_host: per_host,
            chips_per_host: chips,
            root_comm_assumed,
        }),
    ))
}

/// A world as one run of its deployment loads it: each load step's rank,
/// and the refusals the comparison of the ranks found.
pub(crate) struct WorldRun {
    pub shape: Shape,
    /// Each rank's load, in rank order.
    pub ranks: Vec<RankLoaded>,
    /// Every disagreement found, in step order.
    pub disagreements: Vec<Disagreement>,
    /// Step → its first disagreement.
    refusals: HashMap<usize, usize>,
}

/// One rank's load step, its NEFF and what its NEFF's collectives are.
pub(crate) struct RankLoaded {
    pub step: usize,
    pub file: PathBuf,
    pub collectives: usize,
    pub groups: usize,
}

impl WorldRun {
    pub fn new(shape: Shape, ranks: Vec<RankLoaded>, disagreements: Vec<Disagreement>) -> WorldRun {
        let mut refusals = HashMap::new();
        for (i, d) in disagreements.iter().enumerate() {
            refusals.entry(d.step).or_insert(i);
        }
        WorldRun {
            shape,
            ranks,
            disagreements,
            refusals,
        }
    }

    /// The rank step `step` loads, and the refusal of it the comparison
    /// found (its first disagreement).
    pub fn rank_of(&self, step: usize) -> Option<(crate::comm::Join, Option<StepFailure>)> {
        let rank = self.ranks.binary_search_by_key(&step, |r| r.step).ok()?;
        let join = crate::comm::Join {
            rank: rank as u32,
            world: self.shape.size,
        };
        let refused = self
            .refusals
            .get(&step)
            .map(|&i| self.disagreements[i].failure());
        Some((join, refused))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A collective of subgraph sg00 on PE at `index`: `operation` of `n`
    /// float32 in replica-group set `set`, or a send/receive of `n` bytes
    /// with `peer`.
    fn collective(
        index: u32,
        operation: &'static str,
        n: u64,
        set: Option<u16>,
        peer: Option<u64>,
    ) -> Collective {
        let float = set.map(|_| 4).unwrap_or(1);
        Collective {
            subgraph: "sg00".into(),
            engine: "pe",
            index,
            form: if set.is_some() { "ptc" } else { "psr" },
            operation,
            reduce: (operation == "all-reduce").then_some("add"),
            dtype: set.map(|_| "float32"),
            elements_in: if operation == "receive" { 0 } else { n },
            elements_out: if operation == "send" { 0 } else { n },
            bytes_in: if operation == "receive" { 0 } else { n * float },
            bytes_out: if operation == "send" { 0 } else { n * float },
            group: set,
            group_size: 2,
            groups: Vec::new(),
            peer,
            input: None,
            output: None,
            chaining: "none",
            stream: 0,
        }
    }

    fn neff(sets: ReplicaGroups, list: Vec<Collective>) -> NeffCc {
        NeffCc {
            sets: vec![("sg00".into(), sets)],
            world_size: None,
            collectives: list.into(),
        }
    }

    fn loads<'a>(files: &'a [PathBuf], ccs: &'a [&'a NeffCc]) -> Vec<RankLoad<'a>> {
        ccs.iter()
            .enumerate()
            .map(|(r, cc)| RankLoad {
                step: r,
                file: &files[r % files.len()],
                cc: Some(cc),
            })
            .collect()
    }

    /// Two groups of two: each rank is compared with its own group's
    /// first rank only, and the one that differs is named with the
    /// collective's place in its group's list.
    #[test]
    fn each_rank_is_compared_with_its_groups_first_rank() {
        let sets = vec![vec![vec![0, 1], vec![2, 3]]];
        let same = neff(
            sets.clone(),
            vec![
                collective(1, "all-reduce", 8, Some(0), None),
                collective(2, "all-gather", 8, Some(0), None),
            ],
        );
        let other = neff(
            sets,
            vec![
                collective(1, "all-reduce", 8, Some(0), None),
                collective(2, "all-gather", 16, Some(0), None),
            ],
        );
        let files = [PathBuf::from("a.neff")];
        let world = [&same, &same, &same, &other];
        let found = compare(&loads(&files, &world), 4, RuntimeLine::NEWEST);
        assert_eq!(found.len(), 1, "{found:?}");
        let d = &found[0];
        assert_eq!(
            (d.kind, d.ranks, d.index, d.step),
            (DisagreementKind::Mismatch, (2, 3), Some(1), 3)
        );
        assert_eq!(d.group.as_deref(), Some(&[2, 3][..]));
        assert!(d.what.contains("the size differs"), "{}", d.what);
        assert!(d.runtime_finds);
        // Under a line that counts collectives only, one of the same count
        // is not found by the runtime, and it says so.
        let found = compare(&loads(&files, &world), 4, RuntimeLine::V2_30);
        assert!(!found[0].runtime_finds && found[0].runtime_log.is_empty());
        // Ranks that agree: nothing.
        assert!(compare(&loads(&files, &[&same; 4]), 4, RuntimeLine::NEWEST).is_empty());
    }

    /// A send meets its receive by size, in order; a receive whose sender
    /// sends nothing is named against the sender.
    #[test]
    fn sends_are_matched_to_receives() {
        let sets: ReplicaGroups = vec![vec![]];
        let send = |n| neff(sets.clone(), vec![collective(1, "send", n, None, Some(1))]);
        let receive = |n| {
            neff(
                sets.clone(),
                vec![collective(1, "receive", n, None, Some(0))],
            )
        };
        let files = [PathBuf::from("a.neff")];
        let (s64, r64, r32) = (send(64), receive(64), receive(32));
        assert!(compare(&loads(&files, &[&s64, &r64]), 2, RuntimeLine::NEWEST).is_empty());
        let found = compare(&loads(&files, &[&s64, &r32]), 2, RuntimeLine::NEWEST);
        assert_eq!((found[0].ranks, found[0].step), ((0, 1), 1));
        let none = neff(sets.clone(), Vec::new());
        let found = compare(&loads(&files, &[&none, &r64]), 2, RuntimeLine::NEWEST);
        assert!(
            found[0].what.contains("rank 0 has none"),
            "{}",
            found[0].what
        );
        // A send to a rank no step loads waits for ever.
        let found = compare(&loads(&files, &[&s64]), 2, RuntimeLine::NEWEST);
        assert_eq!(found[0].kind, DisagreementKind::Deadlock);
    }

    /// A set of no groups (the runtime's sample's `[[]]`) is one group of
    /// every rank: two ranks whose counts differ there disagree, and a
    /// rank no step loads is waited for.
    #[test]
    fn a_set_of_no_groups_is_the_whole_world() {
        let one = neff(
            vec![vec![]],
            vec![collective(0, "all-reduce", 32, Some(0), None)],
        );
        let two = neff(
            vec![vec![]],
            vec![
                collective(0, "all-reduce", 32, Some(0), None),
                collective(1, "all-reduce", 32, Some(0), None),
            ],
        );
        let files = [PathBuf::from("a.neff")];
        assert!(compare(&loads(&files, &[&one, &one]), 2, RuntimeLine::NEWEST).is_empty());
        let found = compare(&loads(&files, &[&one, &two]), 2, RuntimeLine::NEWEST);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].kind, found[0].ranks, found[0].index),
            (DisagreementKind::Mismatch, (0, 1), Some(1))
        );
        assert_eq!(found[0].group, Some(vec![0, 1]));
        let found = compare(&loads(&files, &[&one, &one]), 3, RuntimeLine::NEWEST);
        assert_eq!(found[0].kind, DisagreementKind::Deadlock);
        assert!(
            found[0].what.contains("waits for rank 2"),
            "{}",
            found[0].what
        );
    }

    /// A group whose first rank's NEFF does not form it: its other ranks
    /// wait for it.
    #[test]
    fn a_group_its_first_rank_never_forms_is_a_deadlock() {
        let mine = neff(
            vec![vec![vec![0, 1]]],
            vec![collective(1, "all-reduce", 8, Some(0), None)],
        );
        let none = neff(Vec::new(), Vec::new());
        let files = [PathBuf::from("a.neff")];
        let found = compare(&loads(&files, &[&none, &mine]), 2, RuntimeLine::NEWEST);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].kind, found[0].ranks),
            (DisagreementKind::Deadlock, (0, 1))
        );
        assert!(found[0].what.contains("does not form"), "{}", found[0].what);
    }

    /// A world of 1024 ranks in one group, each rank a NEFF of its own
    /// (one differs): one disagreement, found by comparing each rank with
    /// rank 0, not each pair.
    #[test]
    fn a_large_world_is_compared_rank_by_rank() {
        let n = 1024u32;
        let group: Vec<u32> = (0..n).collect();
        let list = |size| vec![collective(1, "all-reduce", size, Some(0), None)];
        let neffs: Vec<NeffCc> = (0..n)
            .map(|r| {
                neff(
                    vec![vec![group.clone()]],
                    list(if r == 1000 { 16 } else { 8 }),
                )
            })
            .collect();
        let refs: Vec<&NeffCc> = neffs.iter().collect();
        let files = [PathBuf::from("a.neff")];
        let found = compare(&loads(&files, &refs), n, RuntimeLine::NEWEST);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].ranks, (0, 1000));
        assert_eq!(found[0].group.as_ref().map(Vec::len), Some(1024));
        assert!(
            found[0].what.contains("replica group [0-1023]"),
            "{}",
            found[0].what
        );
    }
}
