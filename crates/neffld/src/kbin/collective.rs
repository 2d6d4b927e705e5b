//! The collectives pseudo band (spec/collectives.md §1–2): the records a
//! tensor-parallel NEFF's streams carry for the collectives engine, decoded
//! and checked once by the KBIN build, and sealed as typed [`Collective`]s
//! beside the lowering each record gets.
//!
//! | opcode | record | lowered to |
//! |---|---|---|
//! | `0xC8` | PSEUDO_TRIGGER_COLLECTIVE (PTC) | one trigger |
//! | `0xCB` | PSEUDO_SENDRECV (PSR) | one trigger |
//! | `0xD9` + `0xDA` | PSEUDO_TRIGGER_COLLECTIVE2 (PTC2) and its extension (PTC2E) | one trigger (the extension deleted) |
//! | `0xDB` | PSEUDO_CUR_PROCESSING_RANK_ID | one 4-byte load of the rank id |
//! | `0xDC` | PSEUDO_GID_LOAD | one move or store of the global id |
//!
//! The runtime does not expand a collective into compute: it hands the
//! operation to its collectives engine, which plans the transfer, and puts
//! one record in the stream where the pseudo was, the doorbell that starts
//! it. What is checked here follows the runtime's translators in their
//! order (libnrt 2.31's `instr_col_translate_*`, as the public
//! reverse-engineering notes describe them); what those notes leave open
//! — the layouts of the send/receive, rank-id and global-id records past
//! their first fields, where the doorbell is — is a choice written in
//! docs/decisions.md ("Collectives").

use super::isa::{Addr8, ADDR8_STATIC_VAR};
use super::reloc::Operand;
use super::vars::VarTable;
use super::KbinError;
use crate::ids::VarId;
use crate::manifest::def::{ReplicaGroups, VarOf};
use crate::manifest::engine::EngineType;

pub const OP_PTC: u8 = 0xC8;
pub const OP_PSR: u8 = 0xCB;
pub const OP_PTC2: u8 = 0xD9;
pub const OP_PTC2E: u8 = 0xDA;
pub const OP_RANK_ID: u8 = 0xDB;
pub const OP_GID_LOAD: u8 = 0xDC;

/// True for the opcodes of the band.
pub fn is_collective_band(op: u8) -> bool {
    matches!(
        op,
        OP_PTC | OP_PSR | OP_PTC2 | OP_PTC2E | OP_RANK_ID | OP_GID_LOAD
    )
}

/// The events' update mode that increments a semaphore when the operation
/// completes (the sample's `$S[22]++@complete` is `0x13`): the only mode a
/// PTC may carry, since the collective's completion is known only through
/// it.
pub const UPDATE_INC_ON_COMPLETE: u8 = 0x13;

/// The 8-byte events of a record (`+0x04`): wait mode, wait semaphore,
/// update mode, update semaphore, and the semaphore value.
pub type Events = [u8; 8];

fn events(r: &[u8]) -> Events {
    r[4..12].try_into().expect("a 64-byte record")
}

fn u16_at(r: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([r[at], r[at + 1]])
}

fn u32_at(r: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(r[at..at + 4].try_into().expect("a 64-byte record"))
}

fn u64_at(r: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(r[at..at + 8].try_into().expect("a 64-byte record"))
}

/// What a collective does: the collective type byte of PTC and PTC2 (the
/// compiler's numbering, `ALL_REDUCE = 1` in the sample), or the direction
/// of a PSR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CollectiveOp {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    AllToAllV,
    Permute,
    PermuteReduce,
    PermuteImplicit,
    PermuteReduceImplicit,
    Send,
    Receive,
}

impl CollectiveOp {
    /// The collective type byte's meaning (`None`: no collective type).
    pub fn from_ctype(b: u8) -> Option<CollectiveOp> {
        Some(match b {
            1 => CollectiveOp::AllReduce,
            2 => CollectiveOp::ReduceScatter,
            3 => CollectiveOp::AllGather,
            4 => CollectiveOp::AllToAll,
            5 => CollectiveOp::Permute,
            6 => CollectiveOp::PermuteReduce,
            7 => CollectiveOp::PermuteImplicit,
            8 => CollectiveOp::PermuteReduceImplicit,
            9 => CollectiveOp::AllToAllV,
            _ => return None,
        })
    }

    /// The name reports use (`all-reduce`, `send`, …).
    pub fn name(self) -> &'static str {
        match self {
            CollectiveOp::AllReduce => "all-reduce",
            CollectiveOp::ReduceScatter => "reduce-scatter",
            CollectiveOp::AllGather => "all-gather",
            CollectiveOp::AllToAll => "all-to-all",
            CollectiveOp::AllToAllV => "all-to-all-v",
            CollectiveOp::Permute => "permute",
            CollectiveOp::PermuteReduce => "permute-reduce",
            CollectiveOp::PermuteImplicit => "permute-implicit",
            CollectiveOp::PermuteReduceImplicit => "permute-reduce-implicit",
            CollectiveOp::Send => "send",
            CollectiveOp::Receive => "receive",
        }
    }

    /// The runtime requires one of the four reduce operations of these.
    fn requires_reduce(self) -> bool {
        matches!(self, CollectiveOp::AllReduce | CollectiveOp::ReduceScatter)
    }

    /// The operations whose ALU byte is a reduction (reported as such).
    fn reduces(self) -> bool {
        matches!(
            self,
            CollectiveOp::AllReduce
                | CollectiveOp::ReduceScatter
                | CollectiveOp::PermuteReduce
                | CollectiveOp::PermuteReduceImplicit
        )
    }

    /// The input spans the ranks (`ptc_input_total_num_elements`: the
    /// runtime's reduce-scatter and all-to-all).
    fn input_spans_ranks(self) -> bool {
        matches!(self, CollectiveOp::ReduceScatter | CollectiveOp::AllToAll)
    }

    /// The output spans the ranks (all-gather and all-to-all).
    fn output_spans_ranks(self) -> bool {
        matches!(self, CollectiveOp::AllGather | CollectiveOp::AllToAll)
    }
}

/// The reduce operations a collective may carry (the ALU op byte; the
/// runtime's mask `0x350`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Add,
    Mult,
    Max,
    Min,
}

impl ReduceOp {
    pub fn from_alu(b: u8) -> Option<ReduceOp> {
        Some(match b {
            0x04 => ReduceOp::Add,
            0x06 => ReduceOp::Mult,
            0x08 => ReduceOp::Max,
            0x09 => ReduceOp::Min,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Add => "add",
            ReduceOp::Mult => "mult",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
}

/// An element type of the ISA's numbering (`FP32 = 0x0A`, `BF16 = 0x06`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CcDtype(u8);

impl CcDtype {
    /// The type a dtype byte names (`None`: invalid or unknown).
    pub fn new(b: u8) -> Option<CcDtype> {
        (1..=15).contains(&b).then_some(CcDtype(b))
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn code(self) -> u8 {
        self.0
    }

    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "uint64",
            2 => "int8",
            3 => "uint8",
            4 => "int16",
            5 => "uint16",
            6 => "bfloat16",
            7 => "float16",
            8 => "int32",
            9 => "uint32",
            10 => "float32",
            11 => "float32r",
            12 => "int64",
            13 => "fp8_e3",
            14 => "fp8_e4",
            _ => "fp8_e5",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self.0 {
            1 | 12 => 8,
            8..=11 => 4,
            4..=7 => 2,
            _ => 1,
        }
    }
}

/// How a PTC2 sits in a chain of collectives (its extension's byte 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Chaining {
    None,
    Initial,
    Body,
    Final,
}

impl Chaining {
    fn from_byte(b: u8) -> Option<Chaining> {
        Some(match b {
            0 => Chaining::None,
            1 => Chaining::Initial,
            2 => Chaining::Body,
            3 => Chaining::Final,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Chaining::None => "none",
            Chaining::Initial => "initial",
            Chaining::Body => "body",
            Chaining::Final => "final",
        }
    }
}

/// Which record carries a collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// `0xC8`.
    Ptc,
    /// `0xD9` with its `0xDA`.
    Ptc2,
    /// `0xCB`.
    SendRecv,
}

impl Form {
    pub fn name(self) -> &'static str {
        match self {
            Form::Ptc => "ptc",
            Form::Ptc2 => "ptc2",
            Form::SendRecv => "psr",
        }
    }
}

/// One collective of a stream, as the KBIN build checked it: what it does,
/// on what, with whom. Built only here; everything downstream (lowering,
/// reports, the planner's comparison of ranks) reads it and decides
/// nothing about the record again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collective {
    engine: EngineType,
    record: u32,
    form: Form,
    op: CollectiveOp,
    reduce: Option<ReduceOp>,
    dtype: Option<CcDtype>,
    elements_in: u64,
    elements_out: u64,
    group: Option<u16>,
    group_size: u32,
    peer: Option<u64>,
    input: Option<VarId>,
    output: Option<VarId>,
    chaining: Chaining,
    stream: u16,
    channel: Option<u16>,
    priority: Option<u8>,
}

impl Collective {
    /// The engine whose stream holds it.
    pub fn engine(&self) -> EngineType {
        self.engine
    }

    /// Its record's index in the NEFF stream (the first of a PTC2's two).
    pub fn record(&self) -> u32 {
        self.record
    }

    pub fn form(&self) -> Form {
        self.form
    }

    pub fn op(&self) -> CollectiveOp {
        self.op
    }

    /// The reduction, for the operations that reduce.
    pub fn reduce(&self) -> Option<ReduceOp> {
        self.reduce
    }

    /// The element type (`None` for a send or receive, which moves bytes).
    pub fn dtype(&self) -> Option<CcDtype> {
        self.dtype
    }

    /// Elements this rank contributes, scaled by the group's ranks where
    /// the input spans them (reduce-scatter, all-to-all).
    pub fn elements_in(&self) -> u64 {
        self.elements_in
    }

    /// Elements this rank receives, scaled where the output spans the
    /// ranks (all-gather, all-to-all).
    pub fn elements_out(&self) -> u64 {
        self.elements_out
    }

    fn element_size(&self) -> u64 {
        self.dtype.map_or(1, CcDtype::size)
    }

    pub fn bytes_in(&self) -> u64 {
        self.elements_in.saturating_mul(self.element_size())
    }

    pub fn bytes_out(&self) -> u64 {
        self.elements_out.saturating_mul(self.element_size())
    }

    /// The replica-group id: an index into the subgraph's
    /// [`ReplicaGroups`] (`None` for a send or receive).
    pub fn group(&self) -> Option<u16> {
        self.group
    }

    /// Ranks in each group of its replica group (1 for a trivial one).
    pub fn group_size(&self) -> u32 {
        self.group_size
    }

    /// The rank a send goes to or a receive comes from.
    pub fn peer(&self) -> Option<u64> {
        self.peer
    }

    /// The variable read (`None` when the record names none).
    pub fn input(&self) -> Option<VarId> {
        self.input
    }

    /// The variable written.
    pub fn output(&self) -> Option<VarId> {
        self.output
    }

    pub fn chaining(&self) -> Chaining {
        self.chaining
    }

    /// The collectives stream (PTC2's extension; 0 otherwise).
    pub fn stream(&self) -> u16 {
        self.stream
    }

    /// The channel a PTC2 names.
    #[cfg(any(test, feature = "testkit"))]
    pub fn channel(&self) -> Option<u16> {
        self.channel
    }

    /// A PTC2's DMA priority class (chips after trn1).
    #[cfg(any(test, feature = "testkit"))]
    pub fn priority(&self) -> Option<u8> {
        self.priority
    }
}

/// Where a global-id load puts the id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidDest {
    /// A move of the id as an immediate into this register.
    Register(u8),
    /// A 32-bit store into this variable.
    Memory(Operand),
}

/// The ADDR8 marker of a register destination (the ISA's ADDR_REG marker).
pub const MARKER_REGISTER: u8 = 0x80;

/// What lowering does to one record of the band (beside
/// [`super::Lowering::Delete`] for a PTC2's extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcLowering {
    /// The doorbell that starts a collective: `events` are what the
    /// trigger record carries (the record's own, a chain's final taking
    /// the chain's first wait, none inside a chain).
    Trigger { events: Events, stream: u16 },
    /// A 4-byte load of this rank's id in `group` into `dst_reg`.
    RankId {
        events: Events,
        group: u16,
        stream: u16,
        dst_reg: u16,
    },
    /// The global id into a register or memory.
    GlobalId { events: Events, dest: GidDest },
}

/// What one record of the band decoded to.
pub(super) enum Decoded {
    /// A collective and its trigger; `pair` when it consumed the next
    /// record (a PTC2's extension).
    Collective {
        collective: Collective,
        lowering: CcLowering,
        pair: bool,
    },
    /// A rank-id or global-id load.
    Load(CcLowering),
}

/// The subgraph-wide facts the band is checked against, and what a stream
/// carries from one record to the next (an open chain).
pub(super) struct Scan<'a> {
    pub vars: &'a VarTable,
    pub groups: &'a ReplicaGroups,
    pub cc_streams: u64,
    /// Chips after trn1 read a PTC2's DMA priority.
    pub priority_class: bool,
    pub engine: EngineType,
    pub stream: &'a str,
    /// The first record's events of an open chain.
    chain_first: Option<Events>,
}

impl<'a> Scan<'a> {
    pub fn new(
        vars: &'a VarTable,
        groups: &'a ReplicaGroups,
        cc_streams: u64,
        priority_class: bool,
        engine: EngineType,
        stream: &'a str,
    ) -> Scan<'a> {
        Scan {
            vars,
            groups,
            cc_streams,
            priority_class,
            engine,
            stream,
            chain_first: None,
        }
    }

    /// Decodes and checks record `i` of `records` (a band opcode), the
    /// record after it too for a PTC2.
    pub fn decode(&mut self, records: &[u8], i: usize) -> Result<Decoded, KbinError> {
        let r = &records[i * 64..i * 64 + 64];
        let at = Site {
            stream: self.stream,
            instr: i as u64,
            opcode: r[0],
        };
        match r[0] {
            OP_PTC => self.ptc(r, &at),
            OP_PSR => self.psr(r, &at),
            OP_PTC2 => {
                let ext = records.get((i + 1) * 64..(i + 2) * 64);
                self.ptc2(r, ext, &at)
            }
            OP_PTC2E => Err(at.refuse(
                "an extension record (0xda) that follows no PSEUDO_TRIGGER_COLLECTIVE2".into(),
            )),
            OP_RANK_ID => self.rank_id(r, &at),
            _ => self.gid_load(r, &at),
        }
    }

    /// `instr_col_translate_ptc`: the cc context, one stream, increment on
    /// completion, a known type, a reduce op where one is needed, then the
    /// element counts and the tensors.
    fn ptc(&self, r: &[u8], at: &Site) -> Result<Decoded, KbinError> {
        let group = u16_at(r, 14);
        let group_size = self.group(group, at)?;
        if self.cc_streams > 1 {
            return Err(at.refuse(format!(
                "PTC instructions only support single streams (the subgraph declares {})",
                self.cc_streams
            )));
        }
        let ev = events(r);
        if ev[2] != UPDATE_INC_ON_COMPLETE {
            return Err(at.refuse(format!(
                "a collective must increment its semaphore on completion (update mode {:#04x}), found update mode {:#04x}",
                UPDATE_INC_ON_COMPLETE, ev[2]
            )));
        }
        let op = collective_type(r[32], at)?;
        let reduce = reduce_op(op, r[12], at)?;
        let dtype = dtype(r[13], at)?;
        let n = u64_at(r, 24);
        let (elements_in, elements_out) = scale(op, n, group_size, at)?;
        let input = VarId(u32_at(r, 16));
        let output = VarId(u32_at(r, 20));
        let size = dtype.size();
        self.span(input, u64_at(r, 48), elements_in, size, "input", at)?;
        self.span(output, u64_at(r, 56), elements_out, size, "output", at)?;
        Ok(Decoded::Collective {
            collective: Collective {
                engine: self.engine,
                record: at.instr as u32,
                form: Form::Ptc,
                op,
                reduce,
                dtype: Some(dtype),
                elements_in,
                elements_out,
                group: Some(group),
                group_size,
                peer: None,
                input: Some(input),
                output: Some(output),
                chaining: Chaining::None,
                stream: 0,
                channel: None,
                priority: None,
            },
            lowering: CcLowering::Trigger {
                events: ev,
                stream: 0,
            },
            pair: false,
        })
    }

    /// `instr_col_translate_psr`: one send or one receive of `size` bytes
    /// at `offset` of a tensor.
    fn psr(&self, r: &[u8], at: &Site) -> Result<Decoded, KbinError> {
        let tensor = VarId(u32_at(r, 12));
        let peer = u64_at(r, 16);
        let op = match r[24] {
            1 => CollectiveOp::Send,
            0 => CollectiveOp::Receive,
            b => {
                return Err(at.refuse(format!(
                    "a send/receive's direction byte must be 1 (send) or 0 (receive), found {b}"
                )))
            }
        };
        let offset = u64_at(r, 48);
        let bytes = u64_at(r, 56);
        let role = if op == CollectiveOp::Send {
            "input"
        } else {
            "output"
        };
        self.span_bytes(tensor, offset, Some(bytes), role, at)?;
        let (input, output) = match op {
            CollectiveOp::Send => (Some(tensor), None),
            _ => (None, Some(tensor)),
        };
        Ok(Decoded::Collective {
            collective: Collective {
                engine: self.engine,
                record: at.instr as u32,
                form: Form::SendRecv,
                op,
                reduce: None,
                dtype: None,
                elements_in: if input.is_some() { bytes } else { 0 },
                elements_out: if output.is_some() { bytes } else { 0 },
                group: None,
                group_size: 2,
                peer: Some(peer),
                input,
                output,
                chaining: Chaining::None,
                stream: 0,
                channel: None,
                priority: None,
            },
            lowering: CcLowering::Trigger {
                events: events(r),
                stream: 0,
            },
            pair: false,
        })
    }

    /// `instr_col_translate_ptc2_full`: the mandatory extension, then its
    /// operands (start markers, partition offsets, in their variables),
    /// the type and reduce op, the group, the chain.
    fn ptc2(&mut self, r: &[u8], ext: Option<&[u8]>, at: &Site) -> Result<Decoded, KbinError> {
        let ext = match ext {
            Some(e) if e[0] == OP_PTC2E => e,
            Some(e) => {
                return Err(at.refuse(format!(
                    "PSEUDO_TRIGGER_COLLECTIVE2 must be followed by its extension record (0xda); the next record is opcode {:#04x}",
                    e[0]
                )))
            }
            None => {
                return Err(at.refuse(
                    "PSEUDO_TRIGGER_COLLECTIVE2 must be followed by its extension record (0xda); the stream ends".into(),
                ))
            }
        };
        let src0 = Tile::decode(&r[16..40]);
        let src1 = Tile::decode(&r[40..64]);
        let dst = Tile::decode(&ext[8..32]);
        let dtype = dtype(r[13], at)?;
        let op = collective_type(r[14], at)?;
        let reduce = reduce_op(op, r[12], at)?;
        if r[15] > 1 {
            return Err(at.refuse(format!(
                "collective dimension {} (0 partition, 1 free)",
                r[15]
            )));
        }
        let input = self.tile(&src0, dtype, "source", at)?;
        let output = self.tile(&dst, dtype, "destination", at)?;
        if src1.addr != [0; 8] {
            self.tile(&src1, dtype, "second source", at)?;
        }
        let group = u16_at(ext, 2);
        let group_size = self.group(group, at)?;
        let chaining = Chaining::from_byte(ext[1])
            .ok_or_else(|| at.refuse(format!("chaining {} (0 to 3)", ext[1])))?;
        let ev = events(r);
        let trigger_events = match chaining {
            Chaining::None => ev,
            Chaining::Initial => {
                self.chain_first = Some(ev);
                [0; 8]
            }
            Chaining::Body | Chaining::Final => {
                let Some(first) = self.chain_first else {
                    return Err(at.refuse(format!(
                        "a {} collective of a chain with no initial one before it",
                        chaining.name()
                    )));
                };
                if chaining == Chaining::Final {
                    self.chain_first = None;
                    // The final trigger waits as the chain's first record
                    // did: its wait mode and semaphore value.
                    let mut e = ev;
                    e[0] = first[0];
                    e[4..8].copy_from_slice(&first[4..8]);
                    e
                } else {
                    [0; 8]
                }
            }
        };
        let stream = u16_at(ext, 6);
        Ok(Decoded::Collective {
            collective: Collective {
                engine: self.engine,
                record: at.instr as u32,
                form: Form::Ptc2,
                op,
                reduce,
                dtype: Some(dtype),
                elements_in: src0.elements(),
                elements_out: dst.elements(),
                group: Some(group),
                group_size,
                peer: None,
                input: Some(input),
                output: Some(output),
                chaining,
                stream,
                channel: Some(u16_at(ext, 4)),
                priority: self.priority_class.then_some(ext[41] & 7),
            },
            lowering: CcLowering::Trigger {
                events: trigger_events,
                stream,
            },
            pair: true,
        })
    }

    /// `instr_col_translate_pcprid`: the rank id of a group, loaded as one
    /// 4-byte word (the only size the runtime loads).
    fn rank_id(&self, r: &[u8], at: &Site) -> Result<Decoded, KbinError> {
        let group = u16_at(r, 12);
        self.group(group, at)?;
        if !matches!(r[22], 0 | 4) {
            return Err(at.refuse(format!(
                "the rank id is loaded as 4 bytes only, the record asks for {}",
                r[22]
            )));
        }
        Ok(Decoded::Load(CcLowering::RankId {
            events: events(r),
            group,
            stream: u16_at(r, 20),
            dst_reg: u16_at(r, 18),
        }))
    }

    /// `instr_col_translate_pseudo_gid_load`: by the destination's marker,
    /// a register or a variable.
    fn gid_load(&self, r: &[u8], at: &Site) -> Result<Decoded, KbinError> {
        let a = Addr8::decode(&r[16..24]).expect("a 64-byte record");
        let dest = match a.mode {
            MARKER_REGISTER => GidDest::Register(r[16]),
            ADDR8_STATIC_VAR => {
                let var = VarId(u32::from(a.id));
                self.span_bytes(var, u64::from(a.offset), Some(4), "destination", at)?;
                GidDest::Memory(Operand::new(var, u64::from(a.offset)))
            }
            m => {
                return Err(at.refuse(format!(
                    "the global id's destination marker {m:#04x} is neither a register ({MARKER_REGISTER:#04x}) nor a variable ({ADDR8_STATIC_VAR:#04x})"
                )))
            }
        };
        Ok(Decoded::Load(CcLowering::GlobalId {
            events: events(r),
            dest,
        }))
    }

    /// Ranks per group of replica group `id`, which must exist: the
    /// groups of one set are of one size, and no rank is in two of them.
    /// A set of no groups (the runtime's own sample's `[[]]`) is one group
    /// of the whole world, whose size the NEFF does not give: 1 here, its
    /// counts not scaled.
    fn group(&self, id: u16, at: &Site) -> Result<u32, KbinError> {
        if self.groups.is_empty() {
            return Err(at.refuse(format!(
                "Failed to build cc context: the subgraph declares no replica groups, and the record names group {id}"
            )));
        }
        let set = self.groups.get(usize::from(id)).ok_or_else(|| {
            at.refuse(format!(
                "replica group {id} is beyond the subgraph's {} replica groups",
                self.groups.len()
            ))
        })?;
        let size = set.first().map_or(1, Vec::len);
        if let Some(other) = set.iter().find(|g| g.len() != size) {
            return Err(at.refuse(format!(
                "replica group {id} mixes groups of {size} and {} ranks",
                other.len()
            )));
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(rank) = set.iter().flatten().find(|&&r| !seen.insert(r)) {
            return Err(at.refuse(format!(
                "replica group {id} names rank {rank} twice"
            )));
        }
        Ok(size.max(1) as u32)
    }

    /// `elements` of `size` bytes from element `offset` of `var` lie inside it.
    fn span(
        &self,
        var: VarId,
        offset: u64,
        elements: u64,
        size: u64,
        role: &str,
        at: &Site,
    ) -> Result<(), KbinError> {
        let bytes = elements.checked_mul(size);
        let start = offset.checked_mul(size);
        match start {
            Some(start) => self.span_bytes(var, start, bytes, role, at),
            None => Err(at.refuse(format!(
                "the {role} offset of {offset} elements overflows 64 bits"
            ))),
        }
    }

    /// `bytes` from byte `start` of `var` lie inside it (`None`: a size
    /// that overflowed). A `remote` variable not sized in def.json aliases
    /// another subgraph's and is not bounded here.
    fn span_bytes(
        &self,
        var: VarId,
        start: u64,
        bytes: Option<u64>,
        role: &str,
        at: &Site,
    ) -> Result<(), KbinError> {
        let v = self.vars.get(var).ok_or_else(|| {
            at.refuse(format!(
                "the {role} tensor id {} names no variable (the subgraph has {})",
                var.0,
                self.vars.len()
            ))
        })?;
        if matches!(v.of, VarOf::Remote { size: None, .. }) {
            return Ok(());
        }
        let Some(extent) = v.extent() else {
            return Err(at.refuse(format!(
                "the {role} tensor {} is a {} variable, which is not on the device",
                v.name,
                v.of.kind().type_name()
            )));
        };
        let end = bytes.and_then(|b| start.checked_add(b));
        match end {
            Some(end) if end <= extent => Ok(()),
            _ => Err(at.refuse(format!(
                "the {role} reaches {} bytes into {} ({extent} bytes)",
                end.map_or_else(|| "beyond 2^64".to_string(), |e| e.to_string()),
                v.name
            ))),
        }
    }

    /// A PTC2 operand: the variable-id start marker, a partition offset of
    /// 25 bits, a tile of at least one element inside its variable.
    fn tile(&self, t: &Tile, dtype: CcDtype, role: &str, at: &Site) -> Result<VarId, KbinError> {
        let a = Addr8::decode(&t.addr).expect("8 bytes");
        if a.mode & 0xFC != ADDR8_STATIC_VAR {
            return Err(at.refuse(format!(
                "the {role} operand must start with the variable-id marker ({ADDR8_STATIC_VAR:#04x}), found {:#04x}",
                a.mode
            )));
        }
        if a.offset >> 25 != 0 {
            return Err(at.refuse(format!(
                "the {role} operand's partition offset {:#x} has bits 25 to 31 set",
                a.offset
            )));
        }
        let var = VarId(u32::from(a.id));
        let Some(reach) = t.reach() else {
            return Err(at.refuse(format!(
                "the {role} tile has no elements ({} × {})",
                t.num[0], t.num[1]
            )));
        };
        let bytes = reach.checked_mul(dtype.size());
        self.span_bytes(var, u64::from(a.offset), bytes, role, at)?;
        Ok(var)
    }
}

/// A PTC2 operand: an ADDR8 start and a 2-D pattern of signed steps and
/// counts, in elements.
struct Tile {
    addr: [u8; 8],
    step: [i32; 2],
    num: [u32; 2],
}

impl Tile {
    fn decode(b: &[u8]) -> Tile {
        let i32_at = |at: usize| i32::from_le_bytes(b[at..at + 4].try_into().expect("24 bytes"));
        Tile {
            addr: b[0..8].try_into().expect("24 bytes"),
            step: [i32_at(8), i32_at(12)],
            num: [u32_at(b, 16), u32_at(b, 20)],
        }
    }

    fn elements(&self) -> u64 {
        u64::from(self.num[0]) * u64::from(self.num[1])
    }

    /// Elements from the start to the furthest one the pattern touches
    /// (`None` for an empty tile). Steps are taken by their size: a
    /// negative step reaches as far before the start, which the partition
    /// layout allows, and is bounded the same way.
    fn reach(&self) -> Option<u64> {
        if self.num.contains(&0) {
            return None;
        }
        let span = |d: usize| u64::from(self.num[d] - 1) * u64::from(self.step[d].unsigned_abs());
        Some(1 + span(0) + span(1))
    }
}

/// Where a record sits, for its refusals.
struct Site<'a> {
    stream: &'a str,
    instr: u64,
    opcode: u8,
}

impl Site<'_> {
    fn refuse(&self, detail: String) -> KbinError {
        KbinError::Collective {
            opcode: self.opcode,
            instr: self.instr,
            stream: self.stream.to_string(),
            detail,
        }
    }
}

fn collective_type(b: u8, at: &Site) -> Result<CollectiveOp, KbinError> {
    CollectiveOp::from_ctype(b)
        .ok_or_else(|| at.refuse(format!("unknown collective type {b:#04x}")))
}

/// The ALU byte: one of the four reductions where the operation needs one
/// (the runtime's check), reported where the operation reduces.
fn reduce_op(op: CollectiveOp, alu: u8, at: &Site) -> Result<Option<ReduceOp>, KbinError> {
    let reduce = ReduceOp::from_alu(alu);
    if op.requires_reduce() && reduce.is_none() {
        return Err(at.refuse(format!(
            "{} needs a reduce operation of add, mult, max or min (0x04, 0x06, 0x08, 0x09), found ALU op {alu:#04x}",
            op.name()
        )));
    }
    Ok(reduce.filter(|_| op.reduces()))
}

fn dtype(b: u8, at: &Site) -> Result<CcDtype, KbinError> {
    CcDtype::new(b).ok_or_else(|| at.refuse(format!("unknown dtype {b:#04x}")))
}

/// Elements in and out of a PTC of `n` elements over groups of `ranks`.
fn scale(op: CollectiveOp, n: u64, ranks: u32, at: &Site) -> Result<(u64, u64), KbinError> {
    let by = |spans: bool| {
        if spans {
            n.checked_mul(u64::from(ranks))
        } else {
            Some(n)
        }
    };
    match (by(op.input_spans_ranks()), by(op.output_spans_ranks())) {
        (Some(i), Some(o)) => Ok((i, o)),
        _ => Err(at.refuse(format!(
            "{n} elements over {ranks} ranks overflows 64 bits"
        ))),
    }
}

/// Builders for tests and tooling: records of the band with the layouts
/// above.
#[cfg(any(test, feature = "testkit"))]
pub mod encode {
    use super::*;
    use crate::kbin::isa::{encode::record, RECORD_LEN};

    type Record = [u8; RECORD_LEN];

    /// The ADDR8 of byte `offset` of variable `var`.
    fn var_addr8(var: u16, offset: u32) -> [u8; 8] {
        Addr8 {
            offset,
            id: var,
            reserved: 0,
            mode: ADDR8_STATIC_VAR,
        }
        .encode()
    }

    /// Wait on semaphore `wait` (> 0), increment `update` on completion.
    pub fn events(wait: Option<u8>, update: Option<u8>) -> Events {
        let mut e = [0u8; 8];
        if let Some(w) = wait {
            e[0] = 0x04;
            e[1] = w;
        }
        if let Some(u) = update {
            e[2] = UPDATE_INC_ON_COMPLETE;
            e[3] = u;
        }
        e
    }

    /// A PTC as the runtime's sample writes one.
    #[allow(clippy::too_many_arguments)]
    pub fn ptc(
        events: Events,
        ctype: u8,
        alu: u8,
        dtype: u8,
        group: u16,
        input: u32,
        output: u32,
        elements: u64,
    ) -> Record {
        let mut r = record(OP_PTC);
        r[4..12].copy_from_slice(&events);
        r[12] = alu;
        r[13] = dtype;
        r[14..16].copy_from_slice(&group.to_le_bytes());
        r[16..20].copy_from_slice(&input.to_le_bytes());
        r[20..24].copy_from_slice(&output.to_le_bytes());
        r[24..32].copy_from_slice(&elements.to_le_bytes());
        r[32] = ctype;
        r
    }

    /// A send (`send`) or receive of `bytes` at byte `offset` of `tensor`.
    pub fn psr(events: Events, tensor: u32, peer: u64, send: bool, offset: u64, bytes: u64) -> Record {
        let mut r = record(OP_PSR);
        r[4..12].copy_from_slice(&events);
        r[12..16].copy_from_slice(&tensor.to_le_bytes());
        r[16..24].copy_from_slice(&peer.to_le_bytes());
        r[24] = u8::from(send);
        r[48..56].copy_from_slice(&offset.to_le_bytes());
        r[56..64].copy_from_slice(&bytes.to_le_bytes());
        r
    }

    /// A PTC2 operand: variable `var` from byte `offset`, `rows × cols`
    /// elements, rows `cols` elements apart.
    pub fn tile(var: u16, offset: u32, rows: u32, cols: u32) -> [u8; 24] {
        let mut t = [0u8; 24];
        t[0..8].copy_from_slice(&var_addr8(var, offset));
        t[8..12].copy_from_slice(&(cols as i32).to_le_bytes());
        t[12..16].copy_from_slice(&1i32.to_le_bytes());
        t[16..20].copy_from_slice(&rows.to_le_bytes());
        t[20..24].copy_from_slice(&cols.to_le_bytes());
        t
    }

    /// A PTC2 and its extension.
    #[allow(clippy::too_many_arguments)]
    pub fn ptc2(
        events: Events,
        ctype: u8,
        alu: u8,
        dtype: u8,
        src: [u8; 24],
        dst: [u8; 24],
        group: u16,
        chaining: u8,
        stream: u16,
    ) -> [Record; 2] {
        let mut r = record(OP_PTC2);
        r[4..12].copy_from_slice(&events);
        r[12] = alu;
        r[13] = dtype;
        r[14] = ctype;
        r[16..40].copy_from_slice(&src);
        let mut e = [0u8; RECORD_LEN];
        e[0] = OP_PTC2E;
        e[1] = chaining;
        e[2..4].copy_from_slice(&group.to_le_bytes());
        e[6..8].copy_from_slice(&stream.to_le_bytes());
        e[8..32].copy_from_slice(&dst);
        [r, e]
    }

    /// A rank-id load of `group` into register `dst_reg`.
    pub fn rank_id(group: u16, dst_reg: u16) -> Record {
        let mut r = record(OP_RANK_ID);
        r[12..14].copy_from_slice(&group.to_le_bytes());
        r[18..20].copy_from_slice(&dst_reg.to_le_bytes());
        r[22] = 4;
        r
    }

    /// A global-id load into register `reg`.
    pub fn gid_to_register(reg: u8) -> Record {
        let mut r = record(OP_GID_LOAD);
        r[16] = reg;
        r[23] = MARKER_REGISTER;
        r
    }

    /// A global-id store into variable `var` at byte `offset`.
    pub fn gid_to_memory(var: u16, offset: u32) -> Record {
        let mut r = record(OP_GID_LOAD);
        r[16..24].copy_from_slice(&var_addr8(var, offset));
        r
    }
}

/// One collective as reports show it: plain values, names resolved (the
/// report layer's [`crate::report::Collective`]). What `inspect`,
/// `load --json`, Python and the C library list, and what a planner
/// compares across ranks.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct CollectiveInfo {
    /// The subgraph whose stream holds it.
    pub subgraph: String,
    /// Its engine (`pe`, `act`, `pool`, `dve`, `sp`).
    pub engine: &'static str,
    /// Its record's index in that stream (the first of a PTC2's two).
    pub index: u32,
    /// The record: `ptc`, `ptc2` or `psr`.
    pub form: &'static str,
    /// `all-reduce`, `all-gather`, `reduce-scatter`, `send`, `receive`, …
    pub operation: &'static str,
    /// `add`, `mult`, `max` or `min`, for the operations that reduce.
    pub reduce: Option<&'static str>,
    /// The element type (`float32`, `bfloat16`, …); none for a send or
    /// receive, which moves bytes.
    pub dtype: Option<&'static str>,
    /// Elements this rank contributes (bytes for a send or receive).
    pub elements_in: u64,
    /// Elements this rank receives.
    pub elements_out: u64,
    /// Bytes read: `elements_in` × the element's size.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// The replica-group id (an index of def.json's `replica_groups`).
    pub group: Option<u16>,
    /// Ranks in each group of it (2 for a send or receive, the rank and its
    /// peer; 1 for a set of no groups, the whole world, whose size the
    /// NEFF does not give).
    pub group_size: u32,
    /// The ranks of each group of its replica group, as def.json lists
    /// them (empty: one group of every rank of the world, as in `[[]]`).
    pub groups: Vec<Vec<u32>>,
    /// The rank a send goes to or a receive comes from.
    pub peer: Option<u64>,
    /// The variable read, by name.
    pub input: Option<String>,
    /// The variable written.
    pub output: Option<String>,
    /// `none`, `initial`, `body` or `final` (a PTC2 in a chain).
    pub chaining: &'static str,
    /// The collectives stream.
    pub stream: u16,
}

impl CollectiveInfo {
    /// Every collective of `kbins`, subgraph by subgraph.
    pub(crate) fn of(kbins: &[super::Kbin]) -> Vec<CollectiveInfo> {
        let mut out = Vec::new();
        for k in kbins {
            let name = |v: Option<VarId>| {
                v.and_then(|id| k.vars().get(id))
                    .map(|v| v.name.clone())
            };
            for c in k.collectives() {
                out.push(CollectiveInfo {
                    subgraph: k.name().to_string(),
                    engine: c.engine().key(),
                    index: c.record(),
                    form: c.form().name(),
                    operation: c.op().name(),
                    reduce: c.reduce().map(ReduceOp::name),
                    dtype: c.dtype().map(CcDtype::name),
                    elements_in: c.elements_in(),
                    elements_out: c.elements_out(),
                    bytes_in: c.bytes_in(),
                    bytes_out: c.bytes_out(),
                    group: c.group(),
                    group_size: c.group_size(),
                    groups: c
                        .group()
                        .and_then(|g| k.replica_groups().get(usize::from(g)))
                        .cloned()
                        .unwrap_or_default(),
                    peer: c.peer(),
                    input: name(c.input()),
                    output: name(c.output()),
                    chaining: c.chaining().name(),
                    stream: c.stream(),
                });
            }
        }
        out
    }

    /// The distinct replica groups `list` uses (a subgraph's group id each).
    pub fn groups_used(list: &[CollectiveInfo]) -> usize {
        let set: std::collections::BTreeSet<(&str, u16)> = list
            .iter()
            .filter_map(|c| Some((c.subgraph.as_str(), c.group?)))
            .collect();
        set.len()
    }

    /// What a memory report says of the collectives it does not count (no
    /// public fact sizes what the runtime's collectives engine takes per
    /// operation, group or channel): `None` when there are none.
    pub fn uncounted_note(list: &[CollectiveInfo]) -> Option<String> {
        if list.is_empty() {
            return None;
        }
        let plural = |n: usize, one: &str, many: &str| {
            format!("{n} {}", if n == 1 { one } else { many })
        };
        Some(format!(
            "collectives memory not counted: {} in {}",
            plural(list.len(), "collective", "collectives"),
            plural(Self::groups_used(list), "replica group", "replica groups")
        ))
    }
}
