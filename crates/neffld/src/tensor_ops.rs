//! Element-wise work on device tensors without a NEFF: what libnrt 2.35's
//! `nrt_tensor_cast` (convert elements from one device dtype to another)
//! and `nrt_tensor_compute` (ADD, MIN or MAX across one or more source
//! tensors into a destination) do, computed on the simulated device's
//! bytes (Neuron SDK 2.33.0 release notes, Neuron Runtime; nrtpy's
//! `tensor_cast` and `tensor_compute`).
//!
//! What is documented: trn2 and later only; every tensor on one logical
//! core, with a device dtype attached; operations start at element 0. What
//! is neffld's where the runtime's rules are not public (docs/decisions.md,
//! "The C library"): the dtypes taken ([`NrtDtype::convertible`]), the
//! conversion rules (`dtype::convert`: round to nearest even, IEEE
//! overflow, saturating integers), and compute's arithmetic — float32 when
//! a source is a float, as the engines compute element-wise ops, exact
//! integers when every source is an integer; a left fold over the sources
//! in order; MIN and MAX propagate NaN and keep the earlier source on a
//! tie; the result converted to the destination's dtype as a cast would.
//! Host tensors are refused (they are on no logical core), and so is a
//! destination overlapping a source other than in place.
//!
//! A call is checked whole before a byte moves ([`Runtime::check_tensor_cast`],
//! [`Runtime::check_tensor_compute`]), so an async front end refuses at
//! call time what would fail, and runs the checked [`TensorJob`] in its
//! queue's turn.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::api::{DeviceTensor, LoadError, Runtime};
use crate::dtype::convert::{self, Kind, Value};
use crate::dtype::NrtDtype;
use crate::error::PipelineError;
use crate::{Arch, NrtStatus, RuntimeLine};

/// Which tensor operation: how messages name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TensorCall {
    /// `nrt_tensor_cast` / `nrta_tensor_cast`.
    Cast,
    /// `nrt_tensor_compute` / `nrta_tensor_compute`.
    Compute,
}

impl TensorCall {
    /// The C entry point of its synchronous form, as the line table lists
    /// it.
    pub fn c_name(self) -> &'static str {
        match self {
            TensorCall::Cast => "nrt_tensor_cast",
            TensorCall::Compute => "nrt_tensor_compute",
        }
    }

    /// The line that added the call (its row's `c_calls`).
    pub fn line(self) -> RuntimeLine {
        RuntimeLine::adding(self.c_name()).unwrap_or(RuntimeLine::NEWEST)
    }
}

impl fmt::Display for TensorCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TensorCall::Cast => "tensor_cast",
            TensorCall::Compute => "tensor_compute",
        })
    }
}

/// The element-wise reduction of `tensor_compute`, with the codes of
/// `nrt.h`'s `nrt_op_type_t` (the collectives' operators; `NRT_OP_FMA` is
/// not one compute takes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ComputeOp {
    /// Sum (`NRT_OP_ADD`, 0).
    Add,
    /// Largest (`NRT_OP_MAX`, 2).
    Max,
    /// Smallest (`NRT_OP_MIN`, 3).
    Min,
}

impl ComputeOp {
    /// Every operation, in code order.
    pub const ALL: [ComputeOp; 3] = [ComputeOp::Add, ComputeOp::Max, ComputeOp::Min];

    /// The `nrt_op_type_t` code.
    pub fn code(self) -> u32 {
        match self {
            ComputeOp::Add => 0,
            ComputeOp::Max => 2,
            ComputeOp::Min => 3,
        }
    }

    /// The operation a C caller's code names, or [`TensorOpError::Op`].
    pub fn from_code(code: u32) -> Result<ComputeOp, TensorOpError> {
        ComputeOp::ALL
            .into_iter()
            .find(|o| o.code() == code)
            .ok_or(TensorOpError::Op(code.to_string()))
    }

    /// `ADD`, `MAX`, `MIN`.
    pub fn name(self) -> &'static str {
        match self {
            ComputeOp::Add => "ADD",
            ComputeOp::Max => "MAX",
            ComputeOp::Min => "MIN",
        }
    }

    fn f32(self, a: f32, b: f32) -> f32 {
        match self {
            ComputeOp::Add => a + b,
            _ if a.is_nan() => a,
            _ if b.is_nan() => b,
            ComputeOp::Max if b > a => b,
            ComputeOp::Min if b < a => b,
            _ => a,
        }
    }

    fn int(self, a: i64, b: i64) -> i64 {
        match self {
            ComputeOp::Add => a.saturating_add(b),
            ComputeOp::Max => a.max(b),
            ComputeOp::Min => a.min(b),
        }
    }
}

impl fmt::Display for ComputeOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `add`, `max` or `min`, in any case.
impl FromStr for ComputeOp {
    type Err = TensorOpError;

    fn from_str(s: &str) -> Result<ComputeOp, TensorOpError> {
        ComputeOp::ALL
            .into_iter()
            .find(|o| o.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| TensorOpError::Op(format!("{s:?}")))
    }
}

/// Which argument of a call a tensor is, as messages name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// The source of a cast.
    Src,
    /// Source `i` of a compute.
    Srcs(usize),
    /// The destination.
    Dst,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Src => f.write_str("src"),
            Role::Srcs(i) => write!(f, "srcs[{i}]"),
            Role::Dst => f.write_str("dst"),
        }
    }
}

/// A tensor as a tensor operation receives it: its bytes, its device dtype
/// ([`NrtDtype::Unknown`] when none is attached) and its name.
#[derive(Clone, Copy, Debug)]
pub struct Operand<'a> {
    place: Place<'a>,
    dtype: NrtDtype,
    name: &'a str,
}

#[derive(Clone, Copy, Debug)]
enum Place<'a> {
    /// `size` bytes at `offset` of a device tensor (a tensor or a slice of one).
    Device {
        tensor: &'a DeviceTensor,
        offset: u64,
        size: u64,
    },
    /// Host memory, which the operations refuse.
    Host,
}

impl<'a> Operand<'a> {
    /// The `size` bytes at `offset` of a device tensor.
    pub fn device(
        tensor: &'a DeviceTensor,
        offset: u64,
        size: u64,
        dtype: NrtDtype,
        name: &'a str,
    ) -> Operand<'a> {
        Operand {
            place: Place::Device {
                tensor,
                offset,
                size,
            },
            dtype,
            name,
        }
    }

    /// A tensor in host memory.
    pub fn host(dtype: NrtDtype, name: &'a str) -> Operand<'a> {
        Operand {
            place: Place::Host,
            dtype,
            name,
        }
    }
}

/// Why a tensor operation was refused (nothing written) or failed on the
/// device (the steps before the failing one written).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TensorOpError {
    /// The runtime refused the call (closed).
    #[error(transparent)]
    Runtime(#[from] LoadError),
    /// trn1 and inf2 (NeuronCore v2) have no tensor operations.
    #[error("{call} runs on trn2 and later; this runtime is on {arch}")]
    Chip {
        /// The call.
        call: TensorCall,
        /// The runtime's chip.
        arch: Arch,
    },
    /// The runtime line has no such call.
    #[error("{call} is not in runtime {line}: libnrt {} added it", .call.line())]
    Line {
        /// The call.
        call: TensorCall,
        /// The runtime's line.
        line: RuntimeLine,
    },
    /// An operation compute does not take (the code, or the text, given).
    #[error("{0} is not an operation tensor_compute takes: ADD (0), MAX (2) or MIN (3)")]
    Op(String),
    /// A compute over no source.
    #[error("tensor_compute needs one or more source tensors; srcs is empty")]
    NoSources,
    /// A tensor in host memory.
    #[error("{role} '{name}' is in host memory: {call} works on device tensors, all on one logical core")]
    Host {
        /// The call.
        call: TensorCall,
        /// Which argument.
        role: Role,
        /// The tensor's name.
        name: String,
    },
    /// A device tensor of a runtime closed since (`NRT_CLOSED`).
    #[error("{role} '{name}' belongs to a runtime closed since; allocate it again")]
    Foreign {
        /// Which argument.
        role: Role,
        /// The tensor's name.
        name: String,
    },
    /// A tensor without a device dtype.
    #[error("{role} '{name}' has no device dtype attached")]
    NoDtype {
        /// Which argument.
        role: Role,
        /// The tensor's name.
        name: String,
    },
    /// A cast between dtypes of which one is not taken.
    #[error("casting {} to {} is not supported: tensor_cast takes {}", .from.name(), .to.name(), NrtDtype::convertible_names())]
    Cast {
        /// The source's dtype.
        from: NrtDtype,
        /// The destination's dtype.
        to: NrtDtype,
    },
    /// A compute operand of a dtype not taken.
    #[error("{role} '{name}' is {}, which tensor_compute does not take: it takes {}", .dtype.name(), NrtDtype::convertible_names())]
    Dtype {
        /// Which argument.
        role: Role,
        /// The tensor's name.
        name: String,
        /// Its dtype.
        dtype: NrtDtype,
    },
    /// A tensor smaller than the elements asked for.
    #[error("{role} '{name}' holds {bytes} bytes, fewer than {count} elements of {} ({})", .dtype.name(), .needed.map_or("more than 2^64 bytes".to_string(), |n| format!("{n} bytes")))]
    TooSmall {
        /// Which argument.
        role: Role,
        /// The tensor's name.
        name: String,
        /// Its bytes.
        bytes: u64,
        /// Elements asked for.
        count: u64,
        /// Its dtype.
        dtype: NrtDtype,
        /// The bytes those elements need, when they can be counted.
        needed: Option<u64>,
    },
    /// Tensors on two logical cores.
    #[error("{role} '{name}' is on logical core {vnc} and {first_role} '{first_name}' on {first_vnc}: the tensors of one call must be on one logical core")]
    Cores {
        /// The first argument's role.
        first_role: Role,
        /// Its name.
        first_name: String,
        /// Its logical core.
        first_vnc: u32,
        /// The argument on another core.
        role: Role,
        /// Its name.
        name: String,
        /// Its logical core.
        vnc: u32,
    },
    /// A destination overlapping a source other than in place.
    #[error("dst '{name}' overlaps {role} '{src}' at other bytes: a destination may share a source's bytes only in place (the same first byte and element size)")]
    Overlap {
        /// The destination's name.
        name: String,
        /// The source it overlaps.
        role: Role,
        /// That source's name.
        src: String,
    },
    /// The device refused a read or a write.
    #[error(transparent)]
    Device(#[from] PipelineError),
}

impl TensorOpError {
    /// The `NRT_STATUS` a C caller sees: `NRT_FAILURE` for a call this
    /// runtime does not have (the chip, the line), `NRT_CLOSED` for a
    /// tensor of a closed runtime, `NRT_INVALID` for every bad argument.
    pub fn status(&self) -> NrtStatus {
        match self {
            TensorOpError::Runtime(e) => e.status(),
            TensorOpError::Device(e) => e.status(),
            TensorOpError::Chip { .. } | TensorOpError::Line { .. } => NrtStatus::Failure,
            TensorOpError::Foreign { .. } => NrtStatus::Closed,
            TensorOpError::Op(_)
            | TensorOpError::NoSources
            | TensorOpError::Host { .. }
            | TensorOpError::NoDtype { .. }
            | TensorOpError::Cast { .. }
            | TensorOpError::Dtype { .. }
            | TensorOpError::TooSmall { .. }
            | TensorOpError::Cores { .. }
            | TensorOpError::Overlap { .. } => NrtStatus::Invalid,
        }
    }
}

/// One tensor of a checked operation: where its elements start, how they
/// are encoded, and how messages name it.
#[derive(Clone, Copy, Debug)]
struct Span<'a> {
    tensor: &'a DeviceTensor,
    offset: u64,
    kind: Kind,
    role: Role,
    name: &'a str,
}

impl Span<'_> {
    /// Reads `count` elements from element `at` into `buf`.
    fn read(&self, at: u64, count: usize, buf: &mut Vec<u8>) -> Result<(), TensorOpError> {
        let size = self.kind.size();
        buf.resize(count * size, 0);
        Ok(self.tensor.read(self.offset + at * size as u64, buf)?)
    }
}

/// A tensor operation whose arguments were checked: running it moves the
/// bytes.
#[derive(Debug)]
pub struct TensorJob<'a> {
    /// `None`: a cast of the one source.
    op: Option<ComputeOp>,
    srcs: Vec<Span<'a>>,
    dst: Span<'a>,
    count: u64,
    vnc: u32,
}

/// Elements converted per step: bounds the host buffers.
const STEP: u64 = 1 << 16;

impl TensorJob<'_> {
    /// The logical core every tensor of the operation is on.
    pub fn vnc(&self) -> u32 {
        self.vnc
    }

    /// Runs the operation on `rt` (the runtime that checked it): converts
    /// or reduces `count` elements from element 0 into the destination, a
    /// bounded step at a time.
    pub fn run(&self, rt: &Runtime) -> Result<(), TensorOpError> {
        let _open = rt.enter()?;
        let (mut input, mut output) = (Vec::new(), Vec::new());
        let mut acc = Acc::for_sources(&self.srcs);
        let mut at = 0;
        while at < self.count {
            let n = (self.count - at).min(STEP) as usize;
            output.resize(n * self.dst.kind.size(), 0);
            match self.op {
                None => {
                    let src = &self.srcs[0];
                    src.read(at, n, &mut input)?;
                    convert::convert(src.kind, &input, self.dst.kind, &mut output);
                }
                Some(op) => {
                    for (i, src) in self.srcs.iter().enumerate() {
                        src.read(at, n, &mut input)?;
                        acc.fold((i > 0).then_some(op), src.kind, &input);
                    }
                    acc.write(self.dst.kind, &mut output);
                }
            }
            let size = self.dst.kind.size() as u64;
            self.dst
                .tensor
                .write(self.dst.offset + at * size, &output)?;
            at += n as u64;
        }
        Ok(())
    }
}

/// Compute's running result for one step's elements: float32 when a
/// source is a float, else exact integers.
enum Acc {
    Float(Vec<f32>),
    Int(Vec<i64>),
}

impl Acc {
    fn for_sources(srcs: &[Span<'_>]) -> Acc {
        if srcs.iter().any(|s| matches!(s.kind, Kind::Float(_))) {
            Acc::Float(Vec::new())
        } else {
            Acc::Int(Vec::new())
        }
    }

    /// Folds one source's elements in: `op` with what is there, or (`None`,
    /// the first source) in place of it.
    fn fold(&mut self, op: Option<ComputeOp>, kind: Kind, bytes: &[u8]) {
        let elements = bytes.chunks_exact(kind.size()).map(|e| kind.read(e));
        match self {
            Acc::Float(acc) => {
                // Every float format here is a subset of float32, so only
                // an integer source rounds (once, from its exact value).
                let xs = elements.map(|v| match v {
                    Value::Float(x) => x as f32,
                    Value::Int(i) => i as f32,
                });
                fold_into(acc, xs, op.map(|o| move |a, b| o.f32(a, b)));
            }
            Acc::Int(acc) => {
                let xs = elements.map(|v| match v {
                    Value::Int(i) => i,
                    // Not reached: an integer accumulator has integer sources.
                    Value::Float(x) => x as i64,
                });
                fold_into(acc, xs, op.map(|o| move |a, b| o.int(a, b)));
            }
        }
    }

    /// The step's results, in the destination's dtype.
    fn write(&self, kind: Kind, out: &mut [u8]) {
        let size = kind.size();
        match self {
            Acc::Float(acc) => {
                for (x, o) in acc.iter().zip(out.chunks_exact_mut(size)) {
                    kind.write(Value::Float(f64::from(*x)), o);
                }
            }
            Acc::Int(acc) => {
                for (x, o) in acc.iter().zip(out.chunks_exact_mut(size)) {
                    kind.write(Value::Int(*x), o);
                }
            }
        }
    }
}

/// `acc[i] = op(acc[i], x[i])`, or `acc = x` without an `op`.
fn fold_into<T: Copy>(
    acc: &mut Vec<T>,
    xs: impl Iterator<Item = T>,
    op: Option<impl Fn(T, T) -> T>,
) {
    match op {
        None => {
            acc.clear();
            acc.extend(xs);
        }
        Some(op) => {
            for (a, x) in acc.iter_mut().zip(xs) {
                *a = op(*a, x);
            }
        }
    }
}

impl Runtime {
    /// `nrt_tensor_cast`: converts `count` elements of `src`, from element
    /// 0, from its device dtype into `dst`'s.
    pub fn tensor_cast(
        &self,
        src: Operand<'_>,
        dst: Operand<'_>,
        count: u64,
    ) -> Result<(), TensorOpError> {
        self.check_tensor_cast(src, dst, count)?.run(self)
    }

    /// `nrt_tensor_compute`: `op` across `srcs`, element by element from
    /// element 0, `count` elements into `dst`.
    pub fn tensor_compute(
        &self,
        op: ComputeOp,
        srcs: &[Operand<'_>],
        dst: Operand<'_>,
        count: u64,
    ) -> Result<(), TensorOpError> {
        self.check_tensor_compute(op, srcs, dst, count)?.run(self)
    }

    /// Checks a cast ([`Runtime::tensor_cast`]) without running it.
    pub fn check_tensor_cast<'a>(
        &self,
        src: Operand<'a>,
        dst: Operand<'a>,
        count: u64,
    ) -> Result<TensorJob<'a>, TensorOpError> {
        self.offers(TensorCall::Cast)?;
        self.cast_job(src, dst, count)
    }

    /// Checks a compute ([`Runtime::tensor_compute`]) without running it.
    pub fn check_tensor_compute<'a>(
        &self,
        op: ComputeOp,
        srcs: &[Operand<'a>],
        dst: Operand<'a>,
        count: u64,
    ) -> Result<TensorJob<'a>, TensorOpError> {
        self.offers(TensorCall::Compute)?;
        self.compute_job(op, srcs, dst, count)
    }

    /// A cast's arguments checked, once the runtime offers the call.
    fn cast_job<'a>(
        &self,
        src: Operand<'a>,
        dst: Operand<'a>,
        count: u64,
    ) -> Result<TensorJob<'a>, TensorOpError> {
        let call = TensorCall::Cast;
        let (s, d) = (
            self.placed(call, Role::Src, &src)?,
            self.placed(call, Role::Dst, &dst)?,
        );
        let (from, to) = (typed(Role::Src, &src)?, typed(Role::Dst, &dst)?);
        let (Some(from_kind), Some(to_kind)) = (convert::kind(from), convert::kind(to)) else {
            return Err(TensorOpError::Cast { from, to });
        };
        let srcs = vec![span(Role::Src, &src, s, from_kind, count)?];
        job(None, srcs, span(Role::Dst, &dst, d, to_kind, count)?, count)
    }

    /// A compute's arguments checked, once the runtime offers the call.
    fn compute_job<'a>(
        &self,
        op: ComputeOp,
        srcs: &[Operand<'a>],
        dst: Operand<'a>,
        count: u64,
    ) -> Result<TensorJob<'a>, TensorOpError> {
        let call = TensorCall::Compute;
        if srcs.is_empty() {
            return Err(TensorOpError::NoSources);
        }
        let roles = srcs
            .iter()
            .enumerate()
            .map(|(i, o)| (Role::Srcs(i), o))
            .chain([(Role::Dst, &dst)]);
        let mut spans = Vec::with_capacity(srcs.len() + 1);
        for (role, o) in roles {
            let place = self.placed(call, role, o)?;
            let dtype = typed(role, o)?;
            let kind = convert::kind(dtype).ok_or_else(|| TensorOpError::Dtype {
                role,
                name: o.name.to_string(),
                dtype,
            })?;
            spans.push(span(role, o, place, kind, count)?);
        }
        let dst = spans.pop().expect("the destination was pushed last");
        job(Some(op), spans, dst, count)
    }

    /// The call is one this runtime has: open, on trn2 or later, under a
    /// line that has it.
    fn offers(&self, call: TensorCall) -> Result<(), TensorOpError> {
        drop(self.enter()?);
        let arch = self.config().topology.arch;
        if arch == Arch::Sunda {
            return Err(TensorOpError::Chip { call, arch });
        }
        let line = self.config().line();
        if !line.has_call(call.c_name()) {
            return Err(TensorOpError::Line { call, line });
        }
        Ok(())
    }

    /// The device window of an operand of this runtime.
    fn placed<'a>(
        &self,
        call: TensorCall,
        role: Role,
        o: &Operand<'a>,
    ) -> Result<(&'a DeviceTensor, u64, u64), TensorOpError> {
        let name = o.name.to_string();
        match o.place {
            Place::Host => Err(TensorOpError::Host { call, role, name }),
            Place::Device { tensor, .. } if !tensor.is_on(self) => {
                Err(TensorOpError::Foreign { role, name })
            }
            Place::Device {
                tensor,
                offset,
                size,
            } => Ok((tensor, offset, size)),
        }
    }
}

/// The operand's device dtype, or [`TensorOpError::NoDtype`].
fn typed(role: Role, o: &Operand<'_>) -> Result<NrtDtype, TensorOpError> {
    match o.dtype {
        NrtDtype::Unknown => Err(TensorOpError::NoDtype {
            role,
            name: o.name.to_string(),
        }),
        d => Ok(d),
    }
}

/// The span of `count` elements of an operand, or
/// [`TensorOpError::TooSmall`] when its window is shorter.
fn span<'a>(
    role: Role,
    o: &Operand<'a>,
    (tensor, offset, size): (&'a DeviceTensor, u64, u64),
    kind: Kind,
    count: u64,
) -> Result<Span<'a>, TensorOpError> {
    let needed = count.checked_mul(kind.size() as u64);
    if needed.is_none_or(|n| n > size) {
        return Err(TensorOpError::TooSmall {
            role,
            name: o.name.to_string(),
            bytes: size,
            count,
            dtype: o.dtype,
            needed,
        });
    }
    Ok(Span {
        tensor,
        offset,
        kind,
        role,
        name: o.name,
    })
}

/// The checked operation: every tensor on the first source's logical core,
/// and the destination sharing no source's bytes but in place.
fn job<'a>(
    op: Option<ComputeOp>,
    srcs: Vec<Span<'a>>,
    dst: Span<'a>,
    count: u64,
) -> Result<TensorJob<'a>, TensorOpError> {
    let first = srcs[0];
    for t in srcs.iter().chain([&dst]) {
        if t.tensor.vnc() != first.tensor.vnc() {
            return Err(TensorOpError::Cores {
                first_role: first.role,
                first_name: first.name.to_string(),
                first_vnc: first.tensor.vnc(),
                role: t.role,
                name: t.name.to_string(),
                vnc: t.tensor.vnc(),
            });
        }
    }
    let bytes = |t: &Span<'_>| t.offset..t.offset + count * t.kind.size() as u64;
    let (d, d_size) = (bytes(&dst), dst.kind.size());
    for s in &srcs {
        let b = bytes(s);
        let shared = std::ptr::eq(s.tensor, dst.tensor) && b.start < d.end && d.start < b.end;
        if shared && (b.start != d.start || s.kind.size() != d_size) {
            return Err(TensorOpError::Overlap {
                name: dst.name.to_string(),
                role: s.role,
                src: s.name.to_string(),
            });
        }
    }
    Ok(TensorJob {
        op,
        vnc: first.tensor.vnc(),
        srcs,
        dst,
        count,
    })
}

#[cfg(test)]
mod tests {
    use half::bf16;

    use super::*;
    use crate::config::{Libnrt, RuntimeConfig, Topology};

    fn runtime(arch: Arch) -> Runtime {
        Runtime::new(RuntimeConfig {
            topology: Topology {
                arch,
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap()
    }

    /// A device tensor on logical core `vnc` holding `bytes`.
    fn tensor(rt: &Runtime, vnc: u32, bytes: &[u8]) -> DeviceTensor {
        let t = rt.allocate_tensor(vnc, bytes.len() as u64, "t").unwrap();
        t.write(0, bytes).unwrap();
        t
    }

    fn whole<'a>(t: &'a DeviceTensor, size: usize, dtype: NrtDtype, name: &'a str) -> Operand<'a> {
        Operand::device(t, 0, size as u64, dtype, name)
    }

    fn f32_bytes(xs: &[f32]) -> Vec<u8> {
        xs.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn read_f32(t: &DeviceTensor, n: usize) -> Vec<f32> {
        let mut out = vec![0u8; 4 * n];
        t.read(0, &mut out).unwrap();
        out.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    /// Checks and runs a compute.
    fn compute(rt: &Runtime, op: ComputeOp, srcs: &[Operand<'_>], dst: Operand<'_>, n: u64) {
        rt.compute_job(op, srcs, dst, n).unwrap().run(rt).unwrap();
    }

    /// Floats in ±1000 from a deterministic stream (xorshift).
    fn floats(n: usize, mut s: u32) -> Vec<f32> {
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s as f32 / u32::MAX as f32 - 0.5) * 2000.0
            })
            .collect()
    }

    /// `op` over float32 tensors holding `srcs`, into a float32 tensor.
    fn compute_f32(rt: &Runtime, op: ComputeOp, srcs: &[Vec<f32>]) -> Vec<f32> {
        let n = srcs[0].len();
        let ts: Vec<DeviceTensor> = srcs.iter().map(|s| tensor(rt, 0, &f32_bytes(s))).collect();
        let out = tensor(rt, 0, &vec![0; 4 * n]);
        let ops: Vec<Operand<'_>> = ts
            .iter()
            .map(|t| whole(t, 4 * n, NrtDtype::Float32, "s"))
            .collect();
        let dst = whole(&out, 4 * n, NrtDtype::Float32, "out");
        compute(rt, op, &ops, dst, n as u64);
        read_f32(&out, n)
    }

    #[test]
    fn add_of_two_float32_tensors_is_their_float32_sum() {
        let rt = runtime(Arch::Cayman);
        // Past two steps, so the last step is a partial one.
        let n = 2 * STEP as usize + 3;
        let (a, b) = (floats(n, 1), floats(n, 2));
        let got = compute_f32(&rt, ComputeOp::Add, &[a.clone(), b.clone()]);
        for i in 0..n {
            assert_eq!(got[i].to_bits(), (a[i] + b[i]).to_bits(), "element {i}");
        }
    }

    #[test]
    fn min_and_max_propagate_nan_and_keep_the_earlier_source_on_a_tie() {
        let rt = runtime(Arch::Cayman);
        let a = vec![1.0, f32::NAN, 0.0, -0.0, 3.0, -7.0];
        let b = vec![2.0, 5.0, -0.0, 0.0, f32::NAN, -8.0];
        let min = compute_f32(&rt, ComputeOp::Min, &[a.clone(), b.clone()]);
        let max = compute_f32(&rt, ComputeOp::Max, &[a, b]);
        let bits = |v: &[f32]| {
            v.iter()
                .map(|x| if x.is_nan() { 1 } else { x.to_bits() })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            bits(&min),
            bits(&[1.0, f32::NAN, 0.0, -0.0, f32::NAN, -8.0])
        );
        assert_eq!(
            bits(&max),
            bits(&[2.0, f32::NAN, 0.0, -0.0, f32::NAN, -7.0])
        );
    }

    #[test]
    fn sources_fold_left_in_order_in_float32() {
        let rt = runtime(Arch::Cayman);
        // (1e8 + -1e8) + 1 = 1, whereas 1e8 + (-1e8 + 1) = 0 in float32.
        let got = compute_f32(&rt, ComputeOp::Add, &[vec![1e8], vec![-1e8], vec![1.0]]);
        assert_eq!(got, [1.0]);
        let got = compute_f32(&rt, ComputeOp::Add, &[vec![1e8], vec![1.0], vec![-1e8]]);
        assert_eq!(got, [0.0]);
        // One source: a copy.
        assert_eq!(
            compute_f32(&rt, ComputeOp::Max, &[vec![2.5, -1.0]]),
            [2.5, -1.0]
        );
    }

    #[test]
    fn a_bfloat16_source_adds_to_a_float32_one_in_float32() {
        let rt = runtime(Arch::Cayman);
        let xs = floats(1000, 3);
        let ys = floats(1000, 4);
        let b: Vec<u8> = xs
            .iter()
            .flat_map(|x| bf16::from_f32(*x).to_bits().to_le_bytes())
            .collect();
        let (tb, tf) = (tensor(&rt, 0, &b), tensor(&rt, 0, &f32_bytes(&ys)));
        let out = tensor(&rt, 0, &[0; 2000]);
        let srcs = [
            whole(&tb, 2000, NrtDtype::Bfloat16, "b"),
            whole(&tf, 4000, NrtDtype::Float32, "f"),
        ];
        let dst = whole(&out, 2000, NrtDtype::Bfloat16, "out");
        compute(&rt, ComputeOp::Add, &srcs, dst, 1000);
        let mut got = vec![0u8; 2000];
        out.read(0, &mut got).unwrap();
        for i in 0..1000 {
            let want = bf16::from_f32(bf16::from_f32(xs[i]).to_f32() + ys[i]).to_bits();
            assert_eq!(
                u16::from_le_bytes([got[2 * i], got[2 * i + 1]]),
                want,
                "element {i}"
            );
        }
    }

    #[test]
    fn integer_sources_add_exactly_then_convert_once() {
        let rt = runtime(Arch::Cayman);
        let i32s = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let a = tensor(&rt, 0, &i32s(&[i32::MAX, 16_777_217, -5]));
        let b = tensor(&rt, 0, &i32s(&[i32::MAX, 0, 3]));
        let srcs = [
            whole(&a, 12, NrtDtype::Int32, "a"),
            whole(&b, 12, NrtDtype::Int32, "b"),
        ];
        let out = tensor(&rt, 0, &[0; 12]);
        compute(
            &rt,
            ComputeOp::Add,
            &srcs,
            whole(&out, 12, NrtDtype::Int32, "o"),
            3,
        );
        let mut got = [0u8; 12];
        out.read(0, &mut got).unwrap();
        assert_eq!(
            got.to_vec(),
            i32s(&[i32::MAX, 16_777_217, -2]),
            "saturated, exact"
        );
        compute(
            &rt,
            ComputeOp::Add,
            &srcs,
            whole(&out, 12, NrtDtype::Float32, "o"),
            3,
        );
        // 2^32 - 2 rounds once to 2^32; 16777217 to the even 16777216.
        assert_eq!(read_f32(&out, 3), [4_294_967_296.0, 16_777_216.0, -2.0]);
        // uint8 + int8 into int16: 200 + -100.
        let (u, i) = (tensor(&rt, 0, &[200]), tensor(&rt, 0, &[(-100i8) as u8]));
        let out = tensor(&rt, 0, &[0; 2]);
        let srcs = [
            whole(&u, 1, NrtDtype::Uint8, "u"),
            whole(&i, 1, NrtDtype::Int8, "i"),
        ];
        compute(
            &rt,
            ComputeOp::Add,
            &srcs,
            whole(&out, 2, NrtDtype::Int16, "o"),
            1,
        );
        let mut got = [0u8; 2];
        out.read(0, &mut got).unwrap();
        assert_eq!(i16::from_le_bytes(got), 100);
    }

    #[test]
    fn cast_float32_to_bfloat16_rounds_to_nearest_even() {
        let rt = runtime(Arch::Cayman);
        let mut xs = floats(STEP as usize + 5, 9);
        // Ties: 1 + 2^-8 goes down to 1.0, 1 + 3 * 2^-8 up to 1 + 2^-6.
        xs.extend([
            1.0 + 2f32.powi(-8),
            1.0 + 3.0 * 2f32.powi(-8),
            f32::MAX,
            -f32::INFINITY,
        ]);
        let n = xs.len();
        let src = tensor(&rt, 0, &f32_bytes(&xs));
        let dst = tensor(&rt, 0, &vec![0; 2 * n]);
        let job = rt.cast_job(
            whole(&src, 4 * n, NrtDtype::Float32, "src"),
            whole(&dst, 2 * n, NrtDtype::Bfloat16, "dst"),
            n as u64,
        );
        job.unwrap().run(&rt).unwrap();
        let mut got = vec![0u8; 2 * n];
        dst.read(0, &mut got).unwrap();
        for (i, x) in xs.iter().enumerate() {
            let g = u16::from_le_bytes([got[2 * i], got[2 * i + 1]]);
            assert_eq!(g, bf16::from_f32(*x).to_bits(), "element {i}: {x}");
        }
        assert_eq!(&got[2 * n - 8..2 * n - 4], &[0x80, 0x3f, 0x82, 0x3f]);
    }

    #[test]
    fn an_operation_starts_at_its_window_and_leaves_the_bytes_past_count() {
        let rt = runtime(Arch::Cayman);
        let src = tensor(&rt, 0, &f32_bytes(&[9.0, 9.0, 1.5, 2.5, 3.5, 9.0]));
        let dst = tensor(&rt, 0, &[0xaa; 16]);
        // A slice of `src` from its third element; three elements of int16
        // into a destination window that starts at byte 4.
        let job = rt.cast_job(
            Operand::device(&src, 8, 16, NrtDtype::Float32, "slice"),
            Operand::device(&dst, 4, 12, NrtDtype::Int16, "dst"),
            3,
        );
        job.unwrap().run(&rt).unwrap();
        let mut got = [0u8; 16];
        dst.read(0, &mut got).unwrap();
        assert_eq!(
            got,
            [0xaa, 0xaa, 0xaa, 0xaa, 2, 0, 2, 0, 4, 0, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa]
        );
        // No element: nothing written.
        let job = rt.cast_job(
            whole(&src, 24, NrtDtype::Float32, "s"),
            whole(&dst, 16, NrtDtype::Int8, "d"),
            0,
        );
        job.unwrap().run(&rt).unwrap();
        let mut again = [0u8; 16];
        dst.read(0, &mut again).unwrap();
        assert_eq!(again, got);
    }

    #[test]
    fn a_destination_may_be_a_source_in_place_only() {
        let rt = runtime(Arch::Cayman);
        let t = tensor(&rt, 0, &f32_bytes(&[1.0, 2.0, 3.0, 4.0]));
        let other = tensor(&rt, 0, &f32_bytes(&[10.0, 20.0, 30.0, 40.0]));
        let a = whole(&t, 16, NrtDtype::Float32, "a");
        let b = whole(&other, 16, NrtDtype::Float32, "b");
        compute(&rt, ComputeOp::Add, &[a, b], a, 4);
        assert_eq!(read_f32(&t, 4), [11.0, 22.0, 33.0, 44.0]);
        // The same tensor one element on: refused, naming both.
        let shifted = Operand::device(&t, 4, 12, NrtDtype::Float32, "a+1");
        let e = rt
            .compute_job(ComputeOp::Add, &[a, b], shifted, 3)
            .unwrap_err();
        assert!(matches!(e, TensorOpError::Overlap { .. }), "{e}");
        assert_eq!(
            e.to_string().split(':').next().unwrap(),
            "dst 'a+1' overlaps srcs[0] 'a' at other bytes"
        );
        // In place but narrower elements: refused too.
        let e = rt
            .cast_job(a, Operand::device(&t, 0, 16, NrtDtype::Bfloat16, "a16"), 4)
            .unwrap_err();
        assert!(matches!(e, TensorOpError::Overlap { .. }), "{e}");
        // Disjoint windows of one tensor are fine.
        let lo = Operand::device(&t, 0, 8, NrtDtype::Float32, "lo");
        let hi = Operand::device(&t, 8, 8, NrtDtype::Float32, "hi");
        rt.cast_job(lo, hi, 2).unwrap().run(&rt).unwrap();
        assert_eq!(read_f32(&t, 4), [11.0, 22.0, 11.0, 22.0]);
    }

    fn refusal(e: TensorOpError, status: NrtStatus, text: &str) {
        assert_eq!(e.status(), status, "{e}");
        assert!(e.to_string().contains(text), "{e:?}: {e}");
    }

    #[test]
    fn every_bad_argument_is_refused_with_its_status_and_what_was_wrong() {
        let rt = runtime(Arch::Cayman);
        let a = tensor(&rt, 0, &[0; 16]);
        let on1 = tensor(&rt, 1, &[0; 16]);
        let f = |t, name| whole(t, 16, NrtDtype::Float32, name);
        let invalid = NrtStatus::Invalid;
        refusal(
            rt.cast_job(Operand::host(NrtDtype::Float32, "h"), f(&a, "a"), 4)
                .unwrap_err(),
            invalid,
            "src 'h' is in host memory: tensor_cast works on device tensors",
        );
        refusal(
            rt.cast_job(f(&a, "a"), whole(&a, 16, NrtDtype::Unknown, "raw"), 4)
                .unwrap_err(),
            invalid,
            "dst 'raw' has no device dtype attached",
        );
        refusal(
            rt.cast_job(whole(&a, 16, NrtDtype::Fp32r, "r"), f(&a, "a"), 4).unwrap_err(),
            invalid,
            "casting fp32r to float32 is not supported: tensor_cast takes int8, uint8, int16, uint16, bfloat16, float16, int32, uint32, float32, fp8_e4, fp8_e5",
        );
        refusal(
            rt.compute_job(
                ComputeOp::Add,
                &[f(&a, "a"), whole(&a, 16, NrtDtype::Int64, "wide")],
                f(&a, "a"),
                2,
            )
            .unwrap_err(),
            invalid,
            "srcs[1] 'wide' is int64, which tensor_compute does not take",
        );
        refusal(
            rt.cast_job(f(&a, "a"), whole(&a, 16, NrtDtype::Float32, "d"), 5)
                .unwrap_err(),
            invalid,
            "src 'a' holds 16 bytes, fewer than 5 elements of float32 (20 bytes)",
        );
        refusal(
            rt.cast_job(f(&a, "a"), f(&a, "d"), u64::MAX / 2)
                .unwrap_err(),
            invalid,
            "fewer than 9223372036854775807 elements of float32 (more than 2^64 bytes)",
        );
        refusal(
            rt.compute_job(ComputeOp::Max, &[f(&a, "a"), f(&on1, "b")], f(&a, "a"), 4).unwrap_err(),
            invalid,
            "srcs[1] 'b' is on logical core 1 and srcs[0] 'a' on 0: the tensors of one call must be on one logical core",
        );
        refusal(
            rt.compute_job(ComputeOp::Max, &[], f(&a, "a"), 4)
                .unwrap_err(),
            invalid,
            "tensor_compute needs one or more source tensors; srcs is empty",
        );
        // A tensor of another runtime.
        let other = runtime(Arch::Cayman);
        let foreign = tensor(&other, 0, &[0; 16]);
        refusal(
            rt.cast_job(f(&a, "a"), f(&foreign, "x"), 4).unwrap_err(),
            NrtStatus::Closed,
            "dst 'x' belongs to a runtime closed since",
        );
    }

    #[test]
    fn operations_are_codes_and_names() {
        for op in ComputeOp::ALL {
            assert_eq!(ComputeOp::from_code(op.code()).unwrap(), op);
            assert_eq!(op.name().to_lowercase().parse::<ComputeOp>().unwrap(), op);
        }
        assert_eq!(ComputeOp::Add.code(), 0);
        assert_eq!(ComputeOp::Max.code(), 2);
        assert_eq!(ComputeOp::Min.code(), 3);
        refusal(
            ComputeOp::from_code(1).unwrap_err(),
            NrtStatus::Invalid,
            "1 is not an operation tensor_compute takes: ADD (0), MAX (2) or MIN (3)",
        );
        refusal(
            ComputeOp::from_code(15).unwrap_err(),
            NrtStatus::Invalid,
            "15 is not",
        );
        refusal(
            "fma".parse::<ComputeOp>().unwrap_err(),
            NrtStatus::Invalid,
            "\"fma\" is not",
        );
    }

    #[test]
    fn a_runtime_without_the_call_refuses_it_first() {
        let trn1 = runtime(Arch::Sunda);
        let t = tensor(&trn1, 0, &[0; 4]);
        let o = whole(&t, 4, NrtDtype::Float32, "t");
        refusal(
            trn1.check_tensor_cast(o, o, 1).unwrap_err(),
            NrtStatus::Failure,
            "tensor_cast runs on trn2 and later; this runtime is on trn1",
        );
        refusal(
            trn1.check_tensor_compute(ComputeOp::Add, &[], o, 1)
                .unwrap_err(),
            NrtStatus::Failure,
            "tensor_compute runs on trn2 and later",
        );
        let old = Runtime::new(RuntimeConfig {
            libnrt: Libnrt {
                line: Some(RuntimeLine::V2_34),
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap();
        let t = tensor(&old, 0, &[0; 4]);
        let o = whole(&t, 4, NrtDtype::Float32, "t");
        refusal(
            old.check_tensor_cast(o, o, 1).unwrap_err(),
            NrtStatus::Failure,
            "tensor_cast is not in runtime 2.34: libnrt 2.35 added it",
        );
        for call in [TensorCall::Cast, TensorCall::Compute] {
            assert_eq!(RuntimeLine::adding(call.c_name()), Some(call.line()));
        }
        old.close();
        refusal(
            old.check_tensor_cast(o, o, 1).unwrap_err(),
            NrtStatus::Closed,
            "closed",
        );
    }
}
