//! Tensors: bytes on the simulated device (DEVICE placement) or in host
//! memory (HOST placement, VIRTUAL up to runtime line 2.31, and
//! caller-attached buffers).
//!
//! A `nrt_tensor_t` is a `Box` the caller owns until `nrt_tensor_free`. Its
//! storage is reference-counted: slices share it, and device memory (or an
//! owned host buffer) is released when the last tensor using it is freed.
//! Host storage belongs to the tensor alone, so a host tensor stays usable
//! after `nrt_close` until it is freed, as `nrt.h` promises; a device tensor
//! answers `NRT_CLOSED` then (its device is gone), though `nrt_tensor_free`
//! still releases it, and goes on answering it after a new `nrt_init`:
//! the new runtime's devices are not its. Host bytes are allocated fallibly: a size the host
//! cannot provide gives `NRT_RESOURCE`, never an abort.

use std::alloc::{self, Layout};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use neffld::api::DeviceTensor;
use neffld::dtype::NrtDtype;
use neffld::tensor_ops::Operand;
use tracing::{debug, error, warn};

use crate::abi::nrt::{
    nrt_dtype_t, nrt_tensor_batch_op_t, nrt_tensor_device_allocation_info_t,
    nrt_tensor_placement_t, NrtDtypeArg, NrtPlacementArg,
};
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, guarded_value, non_null, NrtResult};
use crate::handles::{Handle, Kind};
use crate::{state, status, unsupported};

/// A tensor: host memory or device memory of the simulated device, or no
/// storage yet. Opaque to C: created by the `nrt_tensor_allocate*` calls,
/// owned by the caller, released by `nrt_tensor_free`.
pub struct nrt_tensor {
    _private: [u8; 0],
}

/// The name C callers use for [`nrt_tensor`].
pub type nrt_tensor_t = nrt_tensor;

impl Handle for nrt_tensor {
    type Rust = Tensor;
    const KIND: Kind = Kind::Tensor;
    const NAME: &'static str = "tensor";
}

/// The operations of a batch that target one tensor. All pointers are
/// borrowed from the caller for the duration of the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_tensor_batch {
    pub tensor: *const nrt_tensor_t,
    pub ops: *const nrt_tensor_batch_op_t,
    pub num_ops: u32,
}

/// The SDK's typedef of [`nrt_tensor_batch`]; C code names the type either
/// way (`nrt_tensor_batch_t`, `struct nrt_tensor_batch`).
pub type nrt_tensor_batch_t = nrt_tensor_batch;

/// Bytes moved per step of a copy or fill (bounds the temporary buffer).
const CHUNK: u64 = 1 << 20;

/// An allocation on the device (freed when dropped), with its core.
pub(crate) type DeviceBuf = DeviceTensor;

/// Host bytes: allocated by this library (`owned`) or attached by the caller.
pub(crate) struct HostBuf {
    ptr: *mut u8,
    len: usize,
    owned: bool,
}

// SAFETY: the buffer is plain bytes with no thread affinity; concurrent
// access to the same bytes from several threads is the caller's to order, as
// with any memory it passes to a C API.
unsafe impl Send for HostBuf {}
// SAFETY: as above; this library only copies bytes in and out.
unsafe impl Sync for HostBuf {}

impl Drop for HostBuf {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: owned buffers come from `alloc_zeroed` with this very
            // layout in `host_alloc` (which refused sizes without one).
            unsafe { alloc::dealloc(self.ptr, Layout::array::<u8>(self.len).expect("checked")) };
        }
    }
}

/// `len` zeroed host bytes (`len` > 0), or `NRT_RESOURCE` when the host
/// cannot provide them. `alloc_zeroed` rather than a `Vec` because a failed
/// `Vec` allocation aborts the process, and zeroed pages are mapped lazily.
fn host_alloc(api: &str, len: usize) -> Result<HostBuf, NRT_STATUS> {
    let ptr = Layout::array::<u8>(len)
        .ok()
        // SAFETY: the layout has a non-zero size (callers refuse size 0).
        .map(|layout| unsafe { alloc::alloc_zeroed(layout) })
        .filter(|p| !p.is_null())
        .ok_or_else(|| {
            error!("{api}: cannot allocate {len} bytes of host memory");
            NRT_STATUS::NRT_RESOURCE
        })?;
    Ok(HostBuf {
        ptr,
        len,
        owned: true,
    })
}

/// Where a tensor's bytes are.
pub(crate) enum Storage {
    Device(DeviceBuf),
    Host(HostBuf),
}

/// A window of a storage: what a tensor (or a slice of one) reads and writes.
#[derive(Clone)]
pub(crate) struct View {
    storage: Arc<Storage>,
    offset: u64,
    size: u64,
}

/// The object behind a `nrt_tensor_t`.
pub(crate) struct Tensor {
    name: String,
    /// `None` for a tensor made by `nrt_tensor_allocate_empty` and not attached yet.
    view: Option<View>,
    /// The device dtype the tensor operations read its elements as
    /// (`nrt_tensor_set_dtype`); `Unknown` when none is attached.
    dtype: NrtDtype,
}

impl Tensor {
    fn new(name: String, view: Option<View>) -> Tensor {
        Tensor {
            name,
            view,
            dtype: NrtDtype::Unknown,
        }
    }
}

/// A live tensor as the tensor operations take it: its view (which keeps
/// its storage alive for the call), device dtype and name.
pub(crate) struct Typed {
    view: View,
    dtype: NrtDtype,
    name: String,
}

impl Typed {
    /// The library's operand: the device window, or a host tensor (which
    /// the library refuses, saying so).
    pub(crate) fn operand(&self) -> Operand<'_> {
        match &*self.view.storage {
            Storage::Device(d) => {
                Operand::device(d, self.view.offset, self.view.size, self.dtype, &self.name)
            }
            Storage::Host(_) => Operand::host(self.dtype, &self.name),
        }
    }
}

/// The tensor `ptr` (the argument `what` of `api`) for a tensor operation:
/// NULL, a pointer that is not a live tensor and a tensor without storage
/// give `NRT_INVALID`, a device tensor of a closed runtime `NRT_CLOSED`.
pub(crate) fn typed(api: &str, what: &str, ptr: *const nrt_tensor_t) -> Result<Typed, NRT_STATUS> {
    non_null(api, what, ptr)?;
    let view = usable(api, ptr)?;
    let (dtype, name) = nrt_tensor::with(ptr, |t| (t.dtype, t.name.clone())).ok_or_else(|| {
        error!("{api}: {what} {ptr:p} is not a live tensor");
        NRT_STATUS::NRT_INVALID
    })?;
    Ok(Typed { view, dtype, name })
}

/// Whether a batch reads from or writes to its tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

impl View {
    fn check(&self, api: &str, offset: u64, len: u64) -> NrtResult {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => {
                error!(
                    "{api}: {len} bytes at offset {offset} are outside the tensor ({} bytes)",
                    self.size
                );
                Err(NRT_STATUS::NRT_INVALID)
            }
        }
    }

    fn read(&self, api: &str, offset: u64, out: &mut [u8]) -> NrtResult {
        // SAFETY: `out` is a Rust buffer of its length, apart from the
        // view's bytes while borrowed mutably.
        unsafe { self.read_to(api, offset, out.as_mut_ptr(), out.len()) }
    }

    fn write(&self, api: &str, offset: u64, data: &[u8]) -> NrtResult {
        // SAFETY: `data` is a Rust buffer of its length.
        unsafe { self.write_from(api, offset, data.as_ptr(), data.len()) }
    }

    /// Copies `len` bytes of the view at `offset` to `out`, which may lie
    /// in the view's own host bytes (a client reading a host tensor into
    /// its own memory, `nrt_tensor_get_va` + 1): host bytes move as
    /// `memmove` moves them, and no Rust reference is made to them.
    ///
    /// # Safety
    /// `out` must be writable for `len` bytes.
    unsafe fn read_to(&self, api: &str, offset: u64, out: *mut u8, len: usize) -> NrtResult {
        self.check(api, offset, len as u64)?;
        let at = self.offset + offset;
        match &*self.storage {
            Storage::Device(d) => {
                // SAFETY: writable for `len` bytes per this function's
                // contract, and apart from the device's bytes, which are not
                // mapped into the client's reach (`nrt_tensor_get_va` gives
                // NULL for a device tensor).
                let out = unsafe { std::slice::from_raw_parts_mut(out, len) };
                d.read(at, out).map_err(|e| status::device_error(api, &e))
            }
            Storage::Host(h) => {
                // SAFETY: `at + len <= h.len` (checked against the view,
                // which lies inside the buffer); `out` is writable for
                // `len` bytes; `ptr::copy` allows the two to overlap.
                unsafe { std::ptr::copy(h.ptr.add(at as usize), out, len) };
                Ok(())
            }
        }
    }

    /// Copies `len` bytes from `data` into the view at `offset`, as
    /// [`View::read_to`] reads: `data` may lie in the view's own bytes.
    ///
    /// # Safety
    /// `data` must be readable for `len` bytes.
    unsafe fn write_from(&self, api: &str, offset: u64, data: *const u8, len: usize) -> NrtResult {
        self.check(api, offset, len as u64)?;
        let at = self.offset + offset;
        match &*self.storage {
            Storage::Device(d) => {
                // SAFETY: as in `read_to`, with the roles swapped.
                let data = unsafe { std::slice::from_raw_parts(data, len) };
                d.write(at, data).map_err(|e| status::device_error(api, &e))
            }
            Storage::Host(h) => {
                // SAFETY: as in `read_to`, with the roles swapped.
                unsafe { std::ptr::copy(data, h.ptr.add(at as usize), len) };
                Ok(())
            }
        }
    }

    /// Where byte `offset` of the view is, as a copy orders its chunks by:
    /// the storage's address space (0 for host memory, which every host
    /// tensor shares: two attached buffers may overlap) and the address in
    /// it.
    fn position(&self, offset: u64) -> (usize, u64) {
        let at = self.offset + offset;
        match &*self.storage {
            Storage::Host(h) => (0, h.ptr as u64 + at),
            Storage::Device(_) => (Arc::as_ptr(&self.storage) as usize, at),
        }
    }
}

/// Creates a handle for `tensor` and stores it in `*out`.
///
/// # Safety
/// `out` must be non-NULL and writable.
unsafe fn hand_out(tensor: Tensor, out: *mut *mut nrt_tensor_t) {
    let ptr = nrt_tensor::hand_out(tensor);
    // SAFETY: per this function's contract.
    unsafe { *out = ptr };
}

/// The view of a live tensor a call may use: host storage always (it
/// outlives the runtime), device storage only while the runtime is
/// initialised. The runtime's state is checked first unless the tensor is a
/// host tensor, so a bad pointer after `nrt_close` still reads `NRT_CLOSED`.
fn usable(api: &str, ptr: *const nrt_tensor_t) -> Result<View, NRT_STATUS> {
    let found = view(api, ptr);
    match found.as_ref().map(|v| &*v.storage) {
        Ok(Storage::Host(_)) => {}
        Ok(Storage::Device(d)) => live(api, d)?,
        Err(_) => {
            state::runtime()?;
        }
    }
    found
}

/// A device tensor's runtime is the initialised one: `NRT_CLOSED` for a
/// tensor of a runtime closed since, even after a new `nrt_init` (it read
/// and wrote a device that was gone, at the address of a live tensor).
fn live(api: &str, d: &DeviceBuf) -> NrtResult {
    let rt = state::runtime()?;
    if !d.is_on(&rt) {
        error!("{api}: the tensor's runtime was closed (nrt_close); allocate it again");
        return Err(NRT_STATUS::NRT_CLOSED);
    }
    Ok(())
}

/// The current view of a live tensor, or the status to return.
fn view(api: &str, ptr: *const nrt_tensor_t) -> Result<View, NRT_STATUS> {
    non_null(api, "tensor", ptr)?;
    let found = nrt_tensor::with(ptr, |t| t.view.clone());
    match found {
        None => {
            error!("{api}: {ptr:p} is not a live tensor");
            Err(NRT_STATUS::NRT_INVALID)
        }
        Some(None) => {
            error!("{api}: the tensor has no storage (attach a buffer first)");
            Err(NRT_STATUS::NRT_INVALID)
        }
        Some(Some(v)) => Ok(v),
    }
}

/// # Safety
/// `name` must be NULL or NUL-terminated.
unsafe fn name_of(name: *const c_char, default: &str) -> String {
    // SAFETY: forwarded from this function's contract.
    unsafe { state::lossy(name) }.unwrap_or_else(|| default.to_string())
}

/// `nrt_tensor_allocate`.
///
/// # Safety
/// `name` must be NULL or NUL-terminated; `out` must be NULL or writable.
pub(crate) unsafe fn allocate(
    placement: NrtPlacementArg,
    vnc: c_int,
    size: usize,
    name: *const c_char,
    out: *mut *mut nrt_tensor_t,
) -> NrtResult {
    const API: &str = "nrt_tensor_allocate";
    let rt = state::runtime()?;
    non_null(API, "the tensor out-pointer", out)?;
    if size == 0 {
        error!("{API}: size 0");
        return Err(NRT_STATUS::NRT_INVALID);
    }
    // SAFETY: forwarded from this function's contract.
    let name = unsafe { name_of(name, "tensor") };
    let storage = if placement == nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_DEVICE as u32 {
        // A negative core (-1 too: a tensor has no "any") is refused as a
        // core past the visible ones is.
        let vnc = u32::try_from(vnc).map_err(|_| status::bad_vnc(API, vnc, &rt))?;
        let t = rt
            .allocate_tensor(vnc, size as u64, &name)
            .map_err(|e| status::load_error(API, &e))?;
        Storage::Device(t)
    } else if placement == nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_HOST as u32 {
        Storage::Host(host_alloc(API, size)?)
    } else if placement == nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_VIRTUAL as u32 {
        let line = rt.config().line();
        if !line.virtual_placement() {
            error!("{API}: NRT_TENSOR_PLACEMENT_VIRTUAL is not supported by runtime {line} (removed in 2.32); use NRT_TENSOR_PLACEMENT_HOST or _DEVICE");
            return Err(NRT_STATUS::NRT_INVALID);
        }
        Storage::Host(host_alloc(API, size)?)
    } else {
        error!("{API}: unknown tensor placement {placement}");
        return Err(NRT_STATUS::NRT_INVALID);
    };
    let view = View {
        storage: Arc::new(storage),
        offset: 0,
        size: size as u64,
    };
    // SAFETY: `out` is non-NULL (checked) and writable per this function's contract.
    unsafe { hand_out(Tensor::new(name, Some(view)), out) };
    Ok(())
}

/// `nrt_tensor_allocate_empty`.
///
/// # Safety
/// As for [`allocate`].
pub(crate) unsafe fn allocate_empty(name: *const c_char, out: *mut *mut nrt_tensor_t) -> NrtResult {
    state::runtime()?;
    non_null("nrt_tensor_allocate_empty", "the tensor out-pointer", out)?;
    // SAFETY: forwarded from this function's contract.
    let name = unsafe { name_of(name, "tensor") };
    // SAFETY: `out` is non-NULL (checked) and writable per this function's contract.
    unsafe { hand_out(Tensor::new(name, None), out) };
    Ok(())
}

/// `nrt_tensor_allocate_slice`.
///
/// # Safety
/// As for [`allocate`].
pub(crate) unsafe fn allocate_slice(
    source: *const nrt_tensor_t,
    offset: u64,
    size: u64,
    name: *const c_char,
    out: *mut *mut nrt_tensor_t,
) -> NrtResult {
    const API: &str = "nrt_tensor_allocate_slice";
    non_null(API, "the tensor out-pointer", out)?;
    let parent = usable(API, source)?;
    if size == 0 {
        error!("{API}: size 0");
        return Err(NRT_STATUS::NRT_INVALID);
    }
    parent.check(API, offset, size)?;
    // SAFETY: forwarded from this function's contract.
    let name = unsafe { name_of(name, "slice") };
    let view = View {
        storage: parent.storage,
        offset: parent.offset + offset,
        size,
    };
    // A slice of a typed tensor has its elements: it keeps the dtype.
    let dtype = nrt_tensor::with(source, |t| t.dtype).unwrap_or(NrtDtype::Unknown);
    let slice = Tensor {
        dtype,
        ..Tensor::new(name, Some(view))
    };
    // SAFETY: `out` is non-NULL (checked) and writable per this function's contract.
    unsafe { hand_out(slice, out) };
    Ok(())
}

/// `nrt_tensor_attach_buffer`.
pub(crate) fn attach_buffer(ptr: *mut nrt_tensor_t, buffer: *mut c_void, size: usize) -> NrtResult {
    const API: &str = "nrt_tensor_attach_buffer";
    non_null(API, "tensor", ptr)?;
    non_null(API, "buffer", buffer)?;
    if size == 0 {
        error!("{API}: size 0");
        return Err(NRT_STATUS::NRT_INVALID);
    }
    let storage = Arc::new(Storage::Host(HostBuf {
        ptr: buffer.cast::<u8>(),
        len: size,
        owned: false,
    }));
    let view = View {
        storage,
        offset: 0,
        size: size as u64,
    };
    let old = nrt_tensor::with(ptr, |t| t.view.replace(view));
    match old {
        // The previous storage (if any) is released here, outside the registry lock.
        Some(previous) => {
            drop(previous);
            Ok(())
        }
        None => {
            error!("{API}: {ptr:p} is not a live tensor");
            Err(NRT_STATUS::NRT_INVALID)
        }
    }
}

/// `nrt_tensor_free`.
///
/// # Safety
/// `slot` must be NULL or point to a readable and writable pointer.
pub(crate) unsafe fn free(slot: *mut *mut nrt_tensor_t) {
    if slot.is_null() {
        return;
    }
    // SAFETY: non-NULL and readable per this function's contract.
    let ptr = unsafe { *slot };
    if ptr.is_null() {
        return;
    }
    if let Some(t) = nrt_tensor::take(ptr) {
        debug!("nrt_tensor_free: {}", t.name);
    } else {
        warn!("nrt_tensor_free: {ptr:p} is not a live tensor; ignored");
    }
    // SAFETY: writable per this function's contract.
    unsafe { *slot = std::ptr::null_mut() };
}

/// `nrt_tensor_read`.
///
/// # Safety
/// `buf` must be NULL or point to `size` writable bytes.
pub(crate) unsafe fn read(
    ptr: *const nrt_tensor_t,
    buf: *mut c_void,
    offset: u64,
    size: usize,
) -> NrtResult {
    const API: &str = "nrt_tensor_read";
    let v = usable(API, ptr)?;
    non_null(API, "buf", buf)?;
    // SAFETY: non-NULL with `size` writable bytes per this function's contract.
    unsafe { v.read_to(API, offset, buf.cast::<u8>(), size) }
}

/// `nrt_tensor_write`.
///
/// # Safety
/// `buf` must be NULL or point to `size` readable bytes.
pub(crate) unsafe fn write(
    ptr: *mut nrt_tensor_t,
    buf: *const c_void,
    offset: u64,
    size: usize,
) -> NrtResult {
    const API: &str = "nrt_tensor_write";
    let v = usable(API, ptr)?;
    non_null(API, "buf", buf)?;
    // SAFETY: non-NULL with `size` readable bytes per this function's contract.
    unsafe { v.write_from(API, offset, buf.cast::<u8>(), size) }
}

/// `nrt_tensor_read_batch` / `nrt_tensor_write_batch`.
///
/// # Safety
/// `batches` must be NULL or point to `count` batches whose op arrays and
/// buffers are valid for their stated sizes.
pub(crate) unsafe fn batch(
    batches: *const nrt_tensor_batch_t,
    count: u64,
    dir: Direction,
) -> NrtResult {
    let api = match dir {
        Direction::Read => "nrt_tensor_read_batch",
        Direction::Write => "nrt_tensor_write_batch",
    };
    if count == 0 {
        state::runtime()?;
        return Ok(());
    }
    non_null(api, "batches", batches)?;
    for i in 0..count as usize {
        // SAFETY: `batches` holds `count` readable batches per this function's contract.
        let b = unsafe { *batches.add(i) };
        let v = usable(api, b.tensor)?;
        if b.num_ops > 0 {
            non_null(api, "ops", b.ops)?;
        }
        for j in 0..b.num_ops as usize {
            // SAFETY: `ops` holds `num_ops` readable ops per this function's contract.
            let op = unsafe { *b.ops.add(j) };
            let len = usize::try_from(op.size).map_err(|_| NRT_STATUS::NRT_INVALID)?;
            if len == 0 {
                continue;
            }
            non_null(api, "op buffer", op.buffer)?;
            let buf = op.buffer.cast::<u8>();
            match dir {
                // SAFETY: the op's buffer has `size` writable bytes per this function's contract.
                Direction::Read => unsafe { v.read_to(api, op.offset, buf, len) }?,
                // SAFETY: the op's buffer has `size` readable bytes per this function's contract.
                Direction::Write => unsafe { v.write_from(api, op.offset, buf, len) }?,
            }
        }
    }
    Ok(())
}

/// `nrt_tensor_copy`: chunked through a bounded buffer; when the
/// destination lies after the source in the same memory (one device
/// allocation, or host memory: two attached buffers may overlap), the
/// chunks go backwards so overlapping bytes are read before they are
/// overwritten.
pub(crate) fn copy(
    src: *const nrt_tensor_t,
    src_offset: u64,
    dst: *mut nrt_tensor_t,
    dst_offset: u64,
    size: u64,
) -> NrtResult {
    const API: &str = "nrt_tensor_copy";
    let s = usable(API, src)?;
    let d = usable(API, dst)?;
    s.check(API, src_offset, size)?;
    d.check(API, dst_offset, size)?;
    if let (Storage::Device(a), Storage::Device(b)) = (&*s.storage, &*d.storage) {
        if a.core() != b.core() {
            error!(
                "{API}: device tensors on different NeuronCores ({} and {})",
                a.core(),
                b.core()
            );
            return Err(NRT_STATUS::NRT_INVALID);
        }
    }
    let (from, to) = (s.position(src_offset), d.position(dst_offset));
    let backwards = from.0 == to.0 && to.1 > from.1;
    let mut buf = vec![0u8; size.min(CHUNK) as usize];
    let chunks = size.div_ceil(CHUNK);
    for k in 0..chunks {
        let k = if backwards { chunks - 1 - k } else { k };
        let at = k * CHUNK;
        let len = (size - at).min(CHUNK) as usize;
        s.read(API, src_offset + at, &mut buf[..len])?;
        d.write(API, dst_offset + at, &buf[..len])?;
    }
    Ok(())
}

/// `nrt_tensor_memset`.
pub(crate) fn memset(ptr: *mut nrt_tensor_t, offset: u64, value: u8, size: u64) -> NrtResult {
    const API: &str = "nrt_tensor_memset";
    let v = usable(API, ptr)?;
    v.check(API, offset, size)?;
    let buf = vec![value; size.min(CHUNK) as usize];
    let mut at = 0;
    while at < size {
        let len = (size - at).min(CHUNK) as usize;
        v.write(API, offset + at, &buf[..len])?;
        at += len as u64;
    }
    Ok(())
}

/// `nrt_tensor_get_size`: 0 when there is nothing to measure.
pub(crate) fn size(ptr: *const nrt_tensor_t) -> usize {
    if ptr.is_null() {
        return 0;
    }
    let found = nrt_tensor::with(ptr, |t| t.view.as_ref().map(|v| v.size));
    found.flatten().map_or(0, |s| s as usize)
}

/// `nrt_tensor_get_va`: the host address of a host tensor, else NULL.
pub(crate) fn va(ptr: *const nrt_tensor_t) -> *mut c_void {
    let Ok(v) = view("nrt_tensor_get_va", ptr) else {
        return std::ptr::null_mut();
    };
    match &*v.storage {
        // SAFETY: the view lies inside the buffer, so the offset stays in bounds.
        Storage::Host(h) => unsafe { h.ptr.add(v.offset as usize) }.cast::<c_void>(),
        Storage::Device(_) => {
            warn!("nrt_tensor_get_va: device tensors are not mapped into the process by the simulated device");
            std::ptr::null_mut()
        }
    }
}

/// The logical core a tensor's bytes are on: the `vnc` of a device tensor,
/// `None` for a host tensor and for one without storage. NULL or a pointer
/// that is not a live tensor gives `NRT_INVALID`; a device tensor after
/// `nrt_close`, `NRT_CLOSED`.
pub(crate) fn lnc_of(api: &str, ptr: *const nrt_tensor_t) -> Result<Option<u32>, NRT_STATUS> {
    non_null(api, "tensor", ptr)?;
    let Some(view) = nrt_tensor::with(ptr, |t| t.view.clone()) else {
        error!("{api}: {ptr:p} is not a live tensor");
        return Err(NRT_STATUS::NRT_INVALID);
    };
    match view.as_ref().map(|v| &*v.storage) {
        Some(Storage::Device(d)) => {
            live(api, d)?;
            Ok(Some(d.vnc()))
        }
        _ => Ok(None),
    }
}

/// Checks, without moving bytes, what a read or write of `size` bytes at
/// `offset` of the tensor needs: a usable tensor and a window inside it.
pub(crate) fn check_window(
    api: &str,
    ptr: *const nrt_tensor_t,
    offset: u64,
    size: u64,
) -> NrtResult {
    usable(api, ptr)?.check(api, offset, size)
}

/// `nrt_tensor_get_device_allocation_info`.
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) unsafe fn device_allocation_info(
    ptr: *const nrt_tensor_t,
    out: *mut nrt_tensor_device_allocation_info_t,
) -> NrtResult {
    const API: &str = "nrt_tensor_get_device_allocation_info";
    state::runtime()?;
    let v = view(API, ptr)?;
    non_null(API, "alloc_info", out)?;
    let Storage::Device(d) = &*v.storage else {
        error!("{API}: the tensor is in host memory");
        return Err(NRT_STATUS::NRT_INVALID);
    };
    live(API, d)?;
    let info = nrt_tensor_device_allocation_info_t {
        physical_address: d.physical_address() + v.offset,
        size: v.size as usize,
        hbm_index: d.hbm() as c_int,
    };
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { *out = info };
    Ok(())
}

// ---- C entry points (nrt.h) ----

/// Allocates a zero-filled tensor of `size` bytes: on the device HBM of
/// logical core `vnc` for the DEVICE placement, in host memory for HOST and,
/// up to runtime line 2.31, VIRTUAL (`vnc` is then ignored). `*tensor`
/// receives a handle the caller owns until `nrt_tensor_free`. Size 0, a bad
/// placement or a bad `vnc` give `NRT_INVALID`; device memory exhaustion
/// gives `NRT_RESOURCE`. VIRTUAL is refused with `NRT_INVALID` from runtime
/// line 2.32 (`NEFFLD_RUNTIME`; the newest line by default), which removed it.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `tensor` must be NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_allocate(
    tensor_placement: NrtPlacementArg,
    vnc: c_int,
    size: usize,
    name: *const c_char,
    tensor: *mut *mut nrt_tensor_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_allocate", || unsafe {
        allocate(tensor_placement, vnc, size, name, tensor)
    })
}

/// Frees a tensor (and its storage once no slice refers to it) and sets
/// `*tensor` to NULL. NULL, or a pointer that is not a live tensor, is ignored.
///
/// # Safety
/// `tensor` must be NULL or point to a readable and writable pointer.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_free(tensor: *mut *mut nrt_tensor_t) {
    // SAFETY: forwarded from this function's contract.
    guarded_value("nrt_tensor_free", (), || unsafe { free(tensor) })
}

/// Copies `size` bytes at `offset` of the tensor into `buf`.
///
/// # Safety
/// `buf` must be NULL or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_read(
    tensor: *const nrt_tensor_t,
    buf: *mut c_void,
    offset: usize,
    size: usize,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_read", || unsafe {
        read(tensor, buf, offset as u64, size)
    })
}

/// Copies `size` bytes of `buf` into the tensor at `offset`.
///
/// # Safety
/// `buf` must be NULL or point to `size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_write(
    tensor: *mut nrt_tensor_t,
    buf: *const c_void,
    offset: usize,
    size: usize,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_write", || unsafe {
        write(tensor, buf, offset as u64, size)
    })
}

/// Runs every read of every batch, in order; stops at the first failure.
/// `unsafe_mode` is accepted and ignored.
///
/// # Safety
/// `batches` must be NULL or point to `num_batches` readable batches whose
/// `ops` arrays and buffers are valid as described in `nrt_tensor_batch_op_t`.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_read_batch(
    batches: *const nrt_tensor_batch_t,
    num_batches: u64,
    unsafe_mode: bool,
) -> NRT_STATUS {
    let _ = unsafe_mode;
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_read_batch", || unsafe {
        batch(batches, num_batches, Direction::Read)
    })
}

/// Runs every write of every batch, in order; stops at the first failure.
/// `unsafe_mode` is accepted and ignored.
///
/// # Safety
/// As for `nrt_tensor_read_batch`.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_write_batch(
    batches: *const nrt_tensor_batch_t,
    num_batches: u64,
    unsafe_mode: bool,
) -> NRT_STATUS {
    let _ = unsafe_mode;
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_write_batch", || unsafe {
        batch(batches, num_batches, Direction::Write)
    })
}

/// Copies `size` bytes between two tensors (overlap allowed). Two device
/// tensors must be on the same NeuronCore, else `NRT_INVALID`.
#[no_mangle]
pub extern "C" fn nrt_tensor_copy(
    src: *const nrt_tensor_t,
    src_offset: usize,
    dst: *mut nrt_tensor_t,
    dst_offset: usize,
    size: usize,
) -> NRT_STATUS {
    guarded("nrt_tensor_copy", || {
        copy(src, src_offset as u64, dst, dst_offset as u64, size as u64)
    })
}

/// Bytes of the tensor; 0 for NULL, an unknown pointer or an empty tensor.
#[no_mangle]
pub extern "C" fn nrt_tensor_get_size(tensor: *const nrt_tensor_t) -> usize {
    guarded_value("nrt_tensor_get_size", 0, || size(tensor))
}

/// Sets `size` bytes at `offset` to the low byte of `value`.
#[no_mangle]
pub extern "C" fn nrt_tensor_memset(
    tensor: *mut nrt_tensor_t,
    offset: u64,
    value: c_int,
    size: usize,
) -> NRT_STATUS {
    guarded("nrt_tensor_memset", || {
        memset(tensor, offset, value as u8, size as u64)
    })
}

/// Creates a tensor with no storage (attach one with
/// `nrt_tensor_attach_buffer`); owned by the caller until `nrt_tensor_free`.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `tensor` must be NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_allocate_empty(
    name: *const c_char,
    tensor: *mut *mut nrt_tensor_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_allocate_empty", || unsafe {
        allocate_empty(name, tensor)
    })
}

/// Makes the caller's `buffer` the tensor's storage, releasing the storage
/// it had. The buffer stays owned by the caller and must outlive the tensor
/// and every slice of it; this library never frees it.
///
/// # Safety
/// `buffer` must be NULL or point to `size` readable and writable bytes that
/// stay valid for the tensor's lifetime.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_attach_buffer(
    tensor: *mut nrt_tensor_t,
    buffer: *mut c_void,
    size: usize,
) -> NRT_STATUS {
    guarded("nrt_tensor_attach_buffer", || {
        attach_buffer(tensor, buffer, size)
    })
}

/// Creates a tensor viewing `size` bytes at `offset` of `tensor_source`
/// (no copy; the storage lives until every tensor using it is freed). The
/// new handle is owned by the caller until `nrt_tensor_free`.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `tensor_slice` must be
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_allocate_slice(
    tensor_source: *const nrt_tensor_t,
    offset: usize,
    size: usize,
    name: *const c_char,
    tensor_slice: *mut *mut nrt_tensor_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_allocate_slice", || unsafe {
        allocate_slice(
            tensor_source,
            offset as u64,
            size as u64,
            name,
            tensor_slice,
        )
    })
}

/// Host address of a host tensor's first byte (valid while the tensor's
/// storage lives); NULL for device tensors (the simulated device has no host
/// mapping), empty tensors and unknown pointers.
#[no_mangle]
pub extern "C" fn nrt_tensor_get_va(tensor: *const nrt_tensor_t) -> *mut c_void {
    guarded_value("nrt_tensor_get_va", std::ptr::null_mut(), || va(tensor))
}

/// The logical core of a tensor in `*lnc_idx`: the `vnc` a device tensor
/// was allocated on, -1 for a host tensor (and for an empty one). NULL
/// arguments and pointers that are not live tensors give `NRT_INVALID`.
///
/// Not in any public AWS header: the signature is inferred from a client of
/// libnrt 2.31+ (nkipy's spike, which passes a `const nrt_tensor_t *` and an
/// `int *` and treats -1 as a host tensor).
///
/// # Safety
/// `lnc_idx` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_get_lnc_index(
    tensor: *const nrt_tensor_t,
    lnc_idx: *mut c_int,
) -> NRT_STATUS {
    const API: &str = "nrt_tensor_get_lnc_index";
    guarded(API, || {
        non_null(API, "lnc_idx", lnc_idx)?;
        let lnc = lnc_of(API, tensor)?;
        let value = lnc.map_or(Ok(-1), c_int::try_from).map_err(|_| {
            error!("{API}: logical core {lnc:?} does not fit an int");
            NRT_STATUS::NRT_FAILURE
        })?;
        // SAFETY: non-NULL (checked) and writable per this function's contract.
        unsafe { *lnc_idx = value };
        Ok(())
    })
}

/// Attaches a device dtype to the tensor: the element type
/// `nrt_tensor_cast` and `nrt_tensor_compute` read and write it as. Any
/// `nrt_dtype_t` is accepted (which of them those calls take is theirs to
/// check); `NRT_DTYPE_INVALID` (`NRT_DTYPE_UNKNOWN`) detaches it. A slice
/// made afterwards keeps the dtype; a tensor starts without one. NULL, a
/// pointer that is not a live tensor or a value outside `nrt_dtype_t`
/// give `NRT_INVALID`.
///
/// Inferred: libnrt 2.35 requires a device dtype on every tensor of those
/// calls, but how a tensor gets one is not public; this setter and
/// `nrt_tensor_get_dtype` are neffld's names, in the style of `nrt.h`.
#[no_mangle]
pub extern "C" fn nrt_tensor_set_dtype(
    tensor: *mut nrt_tensor_t,
    dtype: NrtDtypeArg,
) -> NRT_STATUS {
    const API: &str = "nrt_tensor_set_dtype";
    guarded(API, || {
        non_null(API, "tensor", tensor)?;
        let Some(d) = NrtDtype::from_code(dtype) else {
            error!(
                "{API}: {dtype} is not an nrt_dtype_t (NRT_DTYPE_UNKNOWN 0 to NRT_DTYPE_FP8_E5 15)"
            );
            return Err(NRT_STATUS::NRT_INVALID);
        };
        nrt_tensor::with(tensor, |t| t.dtype = d).ok_or_else(|| {
            error!("{API}: {tensor:p} is not a live tensor");
            NRT_STATUS::NRT_INVALID
        })
    })
}

/// The tensor's device dtype in `*dtype` (`NRT_DTYPE_INVALID` when none is
/// attached). NULL arguments and pointers that are not live tensors give
/// `NRT_INVALID`.
///
/// Inferred, as `nrt_tensor_set_dtype`.
///
/// # Safety
/// `dtype` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_get_dtype(
    tensor: *const nrt_tensor_t,
    dtype: *mut nrt_dtype_t,
) -> NRT_STATUS {
    const API: &str = "nrt_tensor_get_dtype";
    guarded(API, || {
        non_null(API, "tensor", tensor)?;
        non_null(API, "dtype", dtype)?;
        let d = nrt_tensor::with(tensor, |t| t.dtype).ok_or_else(|| {
            error!("{API}: {tensor:p} is not a live tensor");
            NRT_STATUS::NRT_INVALID
        })?;
        // SAFETY: non-NULL (checked) and writable per this function's contract.
        unsafe { *dtype = crate::model_info::c_dtype(d.code()) };
        Ok(())
    })
}

/// Device address, size and HBM channel of a device tensor; `NRT_INVALID`
/// for host tensors.
///
/// # Safety
/// `alloc_info` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_get_device_allocation_info(
    tensor: *const nrt_tensor_t,
    alloc_info: *mut nrt_tensor_device_allocation_info_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_get_device_allocation_info", || unsafe {
        device_allocation_info(tensor, alloc_info)
    })
}

/// Not supported (nothing executes, so no output completes): logs and
/// returns `NRT_FAILURE`.
#[no_mangle]
#[allow(unused_variables)]
pub extern "C" fn nrt_tensor_check_output_completion(
    output_tensor: *const nrt_tensor_t,
    timeout: i64,
    expected_completion_count: u64,
) -> NRT_STATUS {
    // The header: NRT_INVALID "if the output tensor is given as NULL",
    // before anything else.
    let api = "nrt_tensor_check_output_completion";
    match non_null(api, "output_tensor", output_tensor) {
        Ok(()) => unsupported::call(api),
        Err(s) => s,
    }
}

/// Not supported (nothing executes): logs and returns `NRT_FAILURE`.
#[no_mangle]
#[allow(unused_variables)]
pub extern "C" fn nrt_tensor_reset_output_completion(
    output_tensor: *mut nrt_tensor_t,
) -> NRT_STATUS {
    let api = "nrt_tensor_reset_output_completion";
    match non_null(api, "output_tensor", output_tensor) {
        Ok(()) => unsupported::call(api),
        Err(s) => s,
    }
}
