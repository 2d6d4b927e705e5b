//! Tensor operations without a NEFF (libnrt 2.35): `nrt_tensor_cast` and
//! `nrt_tensor_compute`, the C form of the library's `neffld::tensor_ops`,
//! which checks the arguments, converts and computes. This module turns C
//! arguments into the library's operands and its refusals into statuses;
//! the async forms (`nrta_tensor_cast`, `nrta_tensor_compute`) queue the
//! same checked operation ([`crate::nrta`]).

use std::sync::Arc;

use neffld::api::Runtime;
use neffld::tensor_ops::{ComputeOp, TensorJob};
use tracing::error;

use crate::abi::nrt::NrtOpArg;
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, NrtResult};
use crate::tensor::{self, nrt_tensor_t, Typed};
use crate::{state, status};

/// Checks a cast of `count` elements from `src` into `dst` and hands the
/// checked operation to `then`.
pub(crate) fn cast(
    api: &str,
    src: *const nrt_tensor_t,
    dst: *const nrt_tensor_t,
    count: u64,
    then: impl FnOnce(&Arc<Runtime>, &TensorJob<'_>) -> NrtResult,
) -> NrtResult {
    let rt = state::runtime()?;
    let s = tensor::typed(api, "src", src)?;
    let d = tensor::typed(api, "dst", dst)?;
    let job = rt
        .check_tensor_cast(s.operand(), d.operand(), count)
        .map_err(|e| status::tensor_op_error(api, &e))?;
    then(&rt, &job)
}

/// Checks a compute of `op` across the `num_srcs` tensors of `srcs` into
/// `dst` and hands the checked operation to `then`.
///
/// # Safety
/// `srcs` must be NULL or point to `num_srcs` readable pointers.
pub(crate) unsafe fn compute(
    api: &str,
    op: NrtOpArg,
    (srcs, num_srcs): (*const *mut nrt_tensor_t, u32),
    dst: *const nrt_tensor_t,
    count: u64,
    then: impl FnOnce(&Arc<Runtime>, &TensorJob<'_>) -> NrtResult,
) -> NrtResult {
    let rt = state::runtime()?;
    let op = ComputeOp::from_code(op).map_err(|e| status::tensor_op_error(api, &e))?;
    let sources: Vec<Typed> = if num_srcs == 0 {
        Vec::new()
    } else {
        if srcs.is_null() {
            error!("{api}: srcs is NULL with num_srcs {num_srcs}");
            return Err(NRT_STATUS::NRT_INVALID);
        }
        // SAFETY: non-NULL with `num_srcs` readable pointers per this
        // function's contract.
        let ptrs = unsafe { std::slice::from_raw_parts(srcs, num_srcs as usize) };
        ptrs.iter()
            .enumerate()
            .map(|(i, &p)| tensor::typed(api, &format!("srcs[{i}]"), p))
            .collect::<Result<_, _>>()?
    };
    let d = tensor::typed(api, "dst", dst)?;
    let operands: Vec<_> = sources.iter().map(Typed::operand).collect();
    let job = rt
        .check_tensor_compute(op, &operands, d.operand(), count)
        .map_err(|e| status::tensor_op_error(api, &e))?;
    then(&rt, &job)
}

/// Runs a checked operation.
pub(crate) fn run(api: &str, rt: &Runtime, job: &TensorJob<'_>) -> NrtResult {
    job.run(rt).map_err(|e| status::tensor_op_error(api, &e))
}

// ---- C entry points (nrt.h) ----

/// Converts `num_elements` elements of `src`, from element 0, from its
/// device dtype into `dst`'s (`nrt_tensor_set_dtype`), on the device; the
/// bytes of `dst` past them are left as they were. Both tensors must be
/// device tensors of one logical core with a device dtype, and hold
/// `num_elements` elements of their dtype.
///
/// Dtypes taken: FLOAT32, BFLOAT16, FLOAT16, FP8_E4 (e4m3, IEEE layout),
/// FP8_E5 (e5m2), INT8, UINT8, INT16, UINT16, INT32, UINT32, in any pair.
/// Floats round to nearest, ties to even (the hardware's documented
/// default rounding); too large a value becomes infinity, NaN stays NaN;
/// a float becomes an integer rounded to nearest even and saturated (NaN:
/// 0); an integer saturates into a narrower one.
///
/// `NRT_FAILURE` on trn1/inf2 and under a runtime line before 2.35;
/// `NRT_INVALID` for NULL, a host tensor, a tensor without a dtype, a
/// dtype not taken (the pair is named), too few elements, tensors on two
/// logical cores, or a destination overlapping the source other than in
/// place; `NRT_UNINITIALIZED` / `NRT_CLOSED` outside an initialised
/// runtime.
///
/// libnrt 2.35. Inferred: the prototype (nrtpy's `tensor_cast(src, dst,
/// num_elements)` in C form), the dtypes taken, the rules for overflow,
/// NaN and integers, and the statuses.
#[no_mangle]
pub extern "C" fn nrt_tensor_cast(
    src: *const nrt_tensor_t,
    dst: *mut nrt_tensor_t,
    num_elements: usize,
) -> NRT_STATUS {
    const API: &str = "nrt_tensor_cast";
    guarded(API, || {
        cast(API, src, dst, num_elements as u64, |rt, job| {
            run(API, rt, job)
        })
    })
}

/// Applies `op` — `NRT_OP_ADD`, `NRT_OP_MAX` or `NRT_OP_MIN` — element by
/// element across the `num_srcs` tensors of `srcs`, from element 0, and
/// writes `num_elements` results into `dst` on the device. Every tensor
/// must be a device tensor of one logical core with a device dtype taken
/// by `nrt_tensor_cast`, holding `num_elements` elements of it; the
/// sources may differ in dtype, and `dst` may be a source (in place).
///
/// Arithmetic: in float32 when any source is a float (each source's
/// elements exactly, an integer rounded to nearest even), else in exact
/// integers; a left fold over `srcs` in order; MAX and MIN propagate NaN
/// and keep the earlier source on a tie; the result is converted to
/// `dst`'s dtype as `nrt_tensor_cast` converts.
///
/// `NRT_FAILURE` on trn1/inf2 and under a runtime line before 2.35;
/// `NRT_INVALID` for an op other than the three (`NRT_OP_FMA` included),
/// no source (`num_srcs` 0), NULL, and every refusal of
/// `nrt_tensor_cast`.
///
/// libnrt 2.35. Inferred: the prototype (nrtpy's `tensor_compute(op, srcs,
/// dst, num_elements)` in C form, the array with its count, the op as the
/// header's `nrt_op_type_t`), the arithmetic, and the statuses.
///
/// # Safety
/// `srcs` must be NULL or point to `num_srcs` readable pointers.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_compute(
    op: NrtOpArg,
    srcs: *const *mut nrt_tensor_t,
    num_srcs: u32,
    dst: *mut nrt_tensor_t,
    num_elements: usize,
) -> NRT_STATUS {
    const API: &str = "nrt_tensor_compute";
    // SAFETY: forwarded from this function's contract.
    guarded(API, || unsafe {
        compute(
            API,
            op,
            (srcs, num_srcs),
            dst,
            num_elements as u64,
            |rt, job| run(API, rt, job),
        )
    })
}
