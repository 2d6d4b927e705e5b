//! Tensors: bytes on the simulated device (DEVICE placement) or in host
//! memory (HOST and VIRTUAL placements, and caller-attached buffers).
//!
//! A `nrt_tensor_t` is a `Box` the caller owns until `nrt_tensor_free`. Its
//! storage is reference-counted: slices share it, and device memory (or an
//! owned host buffer) is released when the last tensor using it is freed.
//! Device storage keeps its own reference to the device, so a tensor stays
//! usable for `nrt_tensor_free` after `nrt_close`; the other tensor calls
//! check the runtime state like every runtime call.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use neffld::device::{AllocReq, Device, MemHandle, MemUsage};
use neffld::ids::{PCore, Pa};
use tracing::{debug, error, warn};

use crate::abi::nrt::{
    nrt_tensor_batch_t, nrt_tensor_device_allocation_info_t, nrt_tensor_placement_t, nrt_tensor_t,
    NrtPlacementArg,
};
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{non_null, NrtResult};
use crate::handles::{self, Kind};
use crate::{state, status};

/// Bytes moved per step of a copy or fill (bounds the temporary buffer).
const CHUNK: u64 = 1 << 20;

/// An allocation on the device, freed when dropped.
pub(crate) struct DeviceBuf {
    device: Arc<dyn Device>,
    handle: MemHandle,
    pa: Pa,
    core: PCore,
    hbm: u32,
}

impl Drop for DeviceBuf {
    fn drop(&mut self) {
        if let Err(e) = self.device.free(self.handle) {
            warn!("freeing tensor memory {}: {e}", self.handle);
        }
    }
}

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
            let slice = std::ptr::slice_from_raw_parts_mut(self.ptr, self.len);
            // SAFETY: owned buffers come from `Box::<[u8]>::into_raw` of `len` bytes in `host_alloc`.
            drop(unsafe { Box::from_raw(slice) });
        }
    }
}

fn host_alloc(len: usize) -> HostBuf {
    let ptr = Box::into_raw(vec![0u8; len].into_boxed_slice()).cast::<u8>();
    HostBuf {
        ptr,
        len,
        owned: true,
    }
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
        self.check(api, offset, out.len() as u64)?;
        let at = self.offset + offset;
        match &*self.storage {
            Storage::Device(d) => d
                .device
                .read(d.handle, at, out)
                .map_err(|e| status::device_error(api, &e)),
            Storage::Host(h) => {
                // SAFETY: `at + out.len() <= h.len` (checked against the view,
                // which lies inside the buffer); `out` is a distinct Rust buffer.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        h.ptr.add(at as usize),
                        out.as_mut_ptr(),
                        out.len(),
                    )
                };
                Ok(())
            }
        }
    }

    fn write(&self, api: &str, offset: u64, data: &[u8]) -> NrtResult {
        self.check(api, offset, data.len() as u64)?;
        let at = self.offset + offset;
        match &*self.storage {
            Storage::Device(d) => d
                .device
                .write(d.handle, at, data)
                .map_err(|e| status::device_error(api, &e)),
            Storage::Host(h) => {
                // SAFETY: as in `read`, with the roles swapped.
                unsafe {
                    std::ptr::copy_nonoverlapping(data.as_ptr(), h.ptr.add(at as usize), data.len())
                };
                Ok(())
            }
        }
    }
}

/// Creates a handle for `tensor` and stores it in `*out`.
///
/// # Safety
/// `out` must be non-NULL and writable.
unsafe fn hand_out(tensor: Tensor, out: *mut *mut nrt_tensor_t) {
    let ptr = Box::into_raw(Box::new(nrt_tensor_t { tensor }));
    handles::register(Kind::Tensor, ptr);
    // SAFETY: per this function's contract.
    unsafe { *out = ptr };
}

/// The current view of a live tensor, or the status to return.
fn view(api: &str, ptr: *const nrt_tensor_t) -> Result<View, NRT_STATUS> {
    non_null(api, "tensor", ptr)?;
    // SAFETY: tensor pointers are registered only by `hand_out`, from `Box::<nrt_tensor_t>::into_raw`.
    let found = unsafe {
        handles::with_live(Kind::Tensor, ptr, |t: &mut nrt_tensor_t| {
            t.tensor.view.clone()
        })
    };
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
        let visible = rt.visible_vnc_count();
        let idx = usize::try_from(vnc)
            .ok()
            .filter(|&v| v < visible as usize)
            .ok_or_else(|| {
                error!("{API}: Invalid vnc {vnc}, visible vncs: {visible}");
                NRT_STATUS::NRT_INVALID
            })?;
        let config = rt.config();
        let lcore = config
            .visible_cores
            .as_ref()
            .map_or(idx as u32, |list| list[idx]);
        let core = PCore(lcore * config.lnc_size());
        let device = Arc::clone(rt.device());
        let hbm = device
            .geometry()
            .hbm_of(core)
            .map_err(|e| status::device_error(API, &e))?;
        let req = AllocReq {
            size: size as u64,
            align: 0,
            core,
            usage: MemUsage::Tensor,
            hint: &name,
        };
        let a = device
            .alloc(req)
            .map_err(|e| status::device_error(API, &e))?;
        Storage::Device(DeviceBuf {
            device,
            handle: a.handle,
            pa: a.pa,
            core,
            hbm,
        })
    } else if placement == nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_HOST as u32
        || placement == nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_VIRTUAL as u32
    {
        Storage::Host(host_alloc(size))
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
    unsafe {
        hand_out(
            Tensor {
                name,
                view: Some(view),
            },
            out,
        )
    };
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
    unsafe { hand_out(Tensor { name, view: None }, out) };
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
    state::runtime()?;
    non_null(API, "the tensor out-pointer", out)?;
    let parent = view(API, source)?;
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
    // SAFETY: `out` is non-NULL (checked) and writable per this function's contract.
    unsafe {
        hand_out(
            Tensor {
                name,
                view: Some(view),
            },
            out,
        )
    };
    Ok(())
}

/// `nrt_tensor_attach_buffer`.
pub(crate) fn attach_buffer(ptr: *mut nrt_tensor_t, buffer: *mut c_void, size: usize) -> NrtResult {
    const API: &str = "nrt_tensor_attach_buffer";
    state::runtime()?;
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
    // SAFETY: tensor pointers are registered only by `hand_out`, from `Box::<nrt_tensor_t>::into_raw`.
    let old = unsafe {
        handles::with_live(Kind::Tensor, ptr, |t: &mut nrt_tensor_t| {
            t.tensor.view.replace(view)
        })
    };
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
    if handles::unregister(Kind::Tensor, ptr) {
        // SAFETY: just removed from the registry, so this call is the only
        // owner; the pointer came from `Box::<nrt_tensor_t>::into_raw`.
        let t = unsafe { Box::from_raw(ptr) };
        debug!("nrt_tensor_free: {}", t.tensor.name);
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
    state::runtime()?;
    let v = view(API, ptr)?;
    non_null(API, "buf", buf)?;
    // SAFETY: non-NULL with `size` writable bytes per this function's contract.
    let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), size) };
    v.read(API, offset, out)
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
    state::runtime()?;
    let v = view(API, ptr)?;
    non_null(API, "buf", buf)?;
    // SAFETY: non-NULL with `size` readable bytes per this function's contract.
    let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), size) };
    v.write(API, offset, data)
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
    state::runtime()?;
    if count == 0 {
        return Ok(());
    }
    non_null(api, "batches", batches)?;
    for i in 0..count as usize {
        // SAFETY: `batches` holds `count` readable batches per this function's contract.
        let b = unsafe { *batches.add(i) };
        let v = view(api, b.tensor)?;
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
            match dir {
                Direction::Read => {
                    // SAFETY: the op's buffer has `size` writable bytes per this function's contract.
                    let out =
                        unsafe { std::slice::from_raw_parts_mut(op.buffer.cast::<u8>(), len) };
                    v.read(api, op.offset, out)?;
                }
                Direction::Write => {
                    // SAFETY: the op's buffer has `size` readable bytes per this function's contract.
                    let data = unsafe {
                        std::slice::from_raw_parts(op.buffer.cast::<u8>().cast_const(), len)
                    };
                    v.write(api, op.offset, data)?;
                }
            }
        }
    }
    Ok(())
}

/// `nrt_tensor_copy`: chunked through a bounded buffer; when both windows
/// share a storage and the destination lies after the source, the chunks go
/// backwards so overlapping bytes are read before they are overwritten.
pub(crate) fn copy(
    src: *const nrt_tensor_t,
    src_offset: u64,
    dst: *mut nrt_tensor_t,
    dst_offset: u64,
    size: u64,
) -> NrtResult {
    const API: &str = "nrt_tensor_copy";
    state::runtime()?;
    let s = view(API, src)?;
    let d = view(API, dst)?;
    s.check(API, src_offset, size)?;
    d.check(API, dst_offset, size)?;
    if let (Storage::Device(a), Storage::Device(b)) = (&*s.storage, &*d.storage) {
        if a.core != b.core {
            error!(
                "{API}: device tensors on different NeuronCores ({} and {})",
                a.core, b.core
            );
            return Err(NRT_STATUS::NRT_INVALID);
        }
    }
    let backwards =
        Arc::ptr_eq(&s.storage, &d.storage) && d.offset + dst_offset > s.offset + src_offset;
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
    state::runtime()?;
    let v = view(API, ptr)?;
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
    // SAFETY: tensor pointers are registered only by `hand_out`, from `Box::<nrt_tensor_t>::into_raw`.
    let found = unsafe {
        handles::with_live(Kind::Tensor, ptr, |t: &mut nrt_tensor_t| {
            t.tensor.view.as_ref().map(|v| v.size)
        })
    };
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
    let info = nrt_tensor_device_allocation_info_t {
        physical_address: d.pa.0 + v.offset,
        size: v.size as usize,
        hbm_index: d.hbm as c_int,
    };
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { *out = info };
    Ok(())
}
