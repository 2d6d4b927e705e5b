//! The exported functions called as a C client would call them. The runtime
//! state is process-wide, so every test takes `serial()` and starts from a
//! fresh `nrt_init`.

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::{Mutex, MutexGuard};

use neffld_nrt::*;

static SERIAL: Mutex<()> = Mutex::new(());

/// Serialises the tests and leaves a freshly initialised runtime.
fn fresh() -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    nrt_close();
    // SAFETY: NULL version strings are allowed.
    let s = unsafe { nrt_init(1, ptr::null(), ptr::null()) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    guard
}

const DEVICE: u32 = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_DEVICE as u32;
const HOST: u32 = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_HOST as u32;
const VIRTUAL: u32 = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_VIRTUAL as u32;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../testdata/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn load(bytes: &[u8], vnc: i32, vnc_count: i32) -> (NRT_STATUS, *mut nrt_model_t) {
    let mut model: *mut nrt_model_t = ptr::null_mut();
    // SAFETY: `bytes` is readable for its length; `model` is writable.
    let s = unsafe {
        nrt_load(
            bytes.as_ptr().cast(),
            bytes.len(),
            vnc,
            vnc_count,
            &mut model,
        )
    };
    (s, model)
}

fn alloc(placement: u32, vnc: i32, size: usize) -> (NRT_STATUS, *mut nrt_tensor_t) {
    let mut t: *mut nrt_tensor_t = ptr::null_mut();
    // SAFETY: the name is a NUL-terminated literal; `t` is writable.
    let s = unsafe { nrt_tensor_allocate(placement, vnc, size, c"t".as_ptr(), &mut t) };
    (s, t)
}

fn write(t: *mut nrt_tensor_t, offset: usize, data: &[u8]) -> NRT_STATUS {
    // SAFETY: `data` is readable for its length.
    unsafe { nrt_tensor_write(t, data.as_ptr().cast(), offset, data.len()) }
}

fn read(t: *const nrt_tensor_t, offset: usize, len: usize) -> (NRT_STATUS, Vec<u8>) {
    let mut out = vec![0u8; len];
    // SAFETY: `out` is writable for `len` bytes.
    let s = unsafe { nrt_tensor_read(t, out.as_mut_ptr().cast(), offset, len) };
    (s, out)
}

fn free(mut t: *mut nrt_tensor_t) {
    // SAFETY: `t` is a local, readable and writable.
    unsafe { nrt_tensor_free(&mut t) };
    assert!(t.is_null());
}

#[test]
fn load_guard_statuses() {
    if neffld_testkit::ran_alone(module_path!(), "load_guard_statuses") {
        return;
    }
    let _g = fresh();
    let neff = fixture("matmul_small.neff");
    let mut model: *mut nrt_model_t = ptr::null_mut();
    // SAFETY: each call passes NULL or valid buffers of the stated size.
    unsafe {
        assert_eq!(
            nrt_load(ptr::null(), 4096, -1, -1, &mut model),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrt_load(neff.as_ptr().cast(), neff.len(), -1, -1, ptr::null_mut()),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrt_load(neff.as_ptr().cast(), 0, -1, -1, &mut model),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrt_load(neff.as_ptr().cast(), 100, -1, -1, &mut model),
            NRT_STATUS::NRT_INVALID
        );
    }
    assert!(model.is_null());
    assert_eq!(load(&neff, -1, 2).0, NRT_STATUS::NRT_INVALID);
    assert_eq!(load(&neff, -1, 3).0, NRT_STATUS::NRT_INVALID);
    assert_eq!(load(&neff, -1, -2).0, NRT_STATUS::NRT_INVALID);
    assert_eq!(load(&neff, 10_000, -1).0, NRT_STATUS::NRT_INVALID);
    assert_eq!(load(&neff, -7, 1).0, NRT_STATUS::NRT_INVALID);
    let garbage = vec![0xA5u8; 4096];
    let (s, m) = load(&garbage, -1, -1);
    assert_ne!(s, NRT_STATUS::NRT_SUCCESS);
    assert!(m.is_null());
    nrt_close();
    assert_eq!(load(&neff, -1, -1).0, NRT_STATUS::NRT_CLOSED);
    // vnc_count still comes first after close.
    assert_eq!(load(&neff, -1, 2).0, NRT_STATUS::NRT_INVALID);
}

#[test]
fn unload_and_tensor_info_guards() {
    if neffld_testkit::ran_alone(module_path!(), "unload_and_tensor_info_guards") {
        return;
    }
    let _g = fresh();
    let mut info: *mut nrt_tensor_info_array_t = ptr::null_mut();
    let mut bogus_model = [0u64; 8];
    let bogus = bogus_model.as_mut_ptr().cast::<nrt_model_t>();
    // SAFETY: the bogus pointer is never dereferenced (it is not registered).
    unsafe {
        assert_eq!(nrt_unload(ptr::null_mut()), NRT_STATUS::NRT_INVALID);
        assert_eq!(nrt_unload(bogus), NRT_STATUS::NRT_INVALID_HANDLE);
        assert_eq!(
            nrt_get_model_tensor_info(ptr::null_mut(), &mut info),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrt_get_model_tensor_info(bogus, &mut info),
            NRT_STATUS::NRT_INVALID_HANDLE
        );
        assert!(info.is_null());
        assert_eq!(
            nrt_free_model_tensor_info(ptr::null_mut()),
            NRT_STATUS::NRT_INVALID
        );
        let fake = [0u64; 64];
        assert_eq!(
            nrt_free_model_tensor_info(fake.as_ptr() as *mut _),
            NRT_STATUS::NRT_INVALID
        );
        let mut n = 0u32;
        assert_eq!(
            nrt_get_model_nc_count(bogus, &mut n),
            NRT_STATUS::NRT_INVALID_HANDLE
        );
        let mut mi = nrt_model_info_t { vnc: 0 };
        let mut written = 0usize;
        assert_eq!(
            nrt_get_model_info(bogus, &mut mi, 4, &mut written),
            NRT_STATUS::NRT_INVALID_HANDLE
        );
    }
    assert_eq!(bogus_model, [0u64; 8]);
    nrt_close();
    // SAFETY: as above.
    unsafe {
        assert_eq!(nrt_unload(ptr::null_mut()), NRT_STATUS::NRT_CLOSED);
        assert_eq!(nrt_unload(bogus), NRT_STATUS::NRT_CLOSED);
    }
}

#[test]
fn init_close_reinit() {
    if neffld_testkit::ran_alone(module_path!(), "init_close_reinit") {
        return;
    }
    let _g = fresh();
    // SAFETY: NUL-terminated literals.
    let again = unsafe { nrt_init(3, c"2.1".as_ptr(), c"1.0".as_ptr()) };
    assert_eq!(again, NRT_STATUS::NRT_FAILURE);
    nrt_close();
    nrt_close();
    assert_eq!(alloc(HOST, -1, 8).0, NRT_STATUS::NRT_CLOSED);
    // SAFETY: NULL version strings are allowed.
    assert_eq!(
        unsafe { nrt_init(1, ptr::null(), ptr::null()) },
        NRT_STATUS::NRT_SUCCESS
    );
    let (s, t) = alloc(HOST, -1, 8);
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    free(t);
}

#[test]
fn status_strings() {
    if neffld_testkit::ran_alone(module_path!(), "status_strings") {
        return;
    }
    let name = |code: u32| {
        // SAFETY: the function returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(nrt_get_status_as_str(code)) }
            .to_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(name(0), "NRT_SUCCESS");
    assert_eq!(name(2), "NRT_INVALID");
    assert_eq!(name(9), "NRT_LOAD_NOT_ENOUGH_NC");
    assert_eq!(name(13), "NRT_UNINITIALIZED");
    assert_eq!(name(14), "NRT_CLOSED");
    assert_eq!(name(1206), "NRT_NETWORK_PROXY_FAILURE");
    assert_eq!(name(8), "UNKNOWN");
    assert_eq!(name(12), "UNKNOWN");
    assert_eq!(name(u32::MAX), "UNKNOWN");
}

#[test]
fn tensor_round_trip_on_every_placement() {
    if neffld_testkit::ran_alone(module_path!(), "tensor_round_trip_on_every_placement") {
        return;
    }
    let _g = fresh();
    // The default line (the newest) has no VIRTUAL placement (removed in 2.32):
    // virtual_placement.rs runs it on the lines that have it.
    let (s, t) = alloc(VIRTUAL, -1, 4096);
    assert_eq!((s, t.is_null()), (NRT_STATUS::NRT_INVALID, true));
    for placement in [DEVICE, HOST] {
        let vnc = if placement == DEVICE { 0 } else { -1 };
        let (s, t) = alloc(placement, vnc, 4096);
        assert_eq!(s, NRT_STATUS::NRT_SUCCESS, "placement {placement}");
        assert_eq!(nrt_tensor_get_size(t), 4096);
        assert_eq!(
            read(t, 0, 16).1,
            vec![0u8; 16],
            "fresh tensors read as zero"
        );
        let data: Vec<u8> = (0..=255u8).collect();
        assert_eq!(write(t, 100, &data), NRT_STATUS::NRT_SUCCESS);
        let (s, back) = read(t, 100, 256);
        assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
        assert_eq!(back, data);
        // Out of bounds, both ways.
        assert_eq!(write(t, 4000, &data), NRT_STATUS::NRT_INVALID);
        assert_eq!(read(t, 4096, 1).0, NRT_STATUS::NRT_INVALID);
        assert_eq!(read(t, usize::MAX, 2).0, NRT_STATUS::NRT_INVALID);
        // memset and copy into a second tensor.
        assert_eq!(nrt_tensor_memset(t, 0, 0x7F, 10), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(read(t, 0, 11).1, [vec![0x7F; 10], vec![0]].concat());
        let (_, u) = alloc(placement, vnc, 512);
        assert_eq!(nrt_tensor_copy(t, 100, u, 8, 256), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(read(u, 8, 256).1, data);
        // A slice shares the bytes.
        let mut slice: *mut nrt_tensor_t = ptr::null_mut();
        // SAFETY: `slice` is writable; NULL name is allowed.
        let s = unsafe { nrt_tensor_allocate_slice(t, 100, 256, ptr::null(), &mut slice) };
        assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
        assert_eq!(nrt_tensor_get_size(slice), 256);
        assert_eq!(read(slice, 0, 256).1, data);
        let mut info = nrt_tensor_device_allocation_info_t {
            physical_address: 0,
            size: 0,
            hbm_index: -1,
        };
        // SAFETY: `info` is writable.
        let s = unsafe { nrt_tensor_get_device_allocation_info(t, &mut info) };
        if placement == DEVICE {
            assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
            assert_ne!(info.physical_address, 0);
            assert_eq!(info.size, 4096);
            assert!(nrt_tensor_get_va(t).is_null());
        } else {
            assert_eq!(s, NRT_STATUS::NRT_INVALID);
            let va = nrt_tensor_get_va(t).cast::<u8>();
            assert!(!va.is_null());
            // SAFETY: a host tensor's address has 4096 readable bytes while it lives.
            assert_eq!(unsafe { *va.add(100 + 255) }, 255);
        }
        free(t);
        // The slice keeps the storage alive.
        assert_eq!(read(slice, 0, 256).1, data);
        free(slice);
        free(u);
        // A second free through a stale copy is refused, not repeated.
        let mut stale = t;
        // SAFETY: `stale` is a local; the pointer is not registered any more.
        unsafe { nrt_tensor_free(&mut stale) };
        assert!(stale.is_null());
        assert_eq!(read(t, 0, 1).0, NRT_STATUS::NRT_INVALID);
    }
}

#[test]
fn tensor_argument_guards() {
    if neffld_testkit::ran_alone(module_path!(), "tensor_argument_guards") {
        return;
    }
    let _g = fresh();
    assert_eq!(alloc(HOST, -1, 0).0, NRT_STATUS::NRT_INVALID);
    assert_eq!(alloc(DEVICE, -1, 64).0, NRT_STATUS::NRT_INVALID);
    assert_eq!(alloc(DEVICE, 10_000, 64).0, NRT_STATUS::NRT_INVALID);
    assert_eq!(alloc(7, 0, 64).0, NRT_STATUS::NRT_INVALID);
    // Far more than the simulated HBM holds.
    assert_eq!(alloc(DEVICE, 0, 1 << 50).0, NRT_STATUS::NRT_RESOURCE);
    // SAFETY: NULL out-pointer and NULL tensors are refused before any access.
    unsafe {
        assert_eq!(
            nrt_tensor_allocate(HOST, -1, 8, ptr::null(), ptr::null_mut()),
            NRT_STATUS::NRT_INVALID
        );
        nrt_tensor_free(ptr::null_mut());
    }
    assert_eq!(read(ptr::null(), 0, 1).0, NRT_STATUS::NRT_INVALID);
    assert_eq!(nrt_tensor_get_size(ptr::null()), 0);
    assert!(nrt_tensor_get_va(ptr::null()).is_null());
    // Device tensors on different cores cannot be copied between.
    let mut visible = 0u32;
    // SAFETY: `visible` is writable.
    unsafe { nrt_get_visible_vnc_count(&mut visible) };
    if visible > 1 {
        let (_, a) = alloc(DEVICE, 0, 64);
        let (_, b) = alloc(DEVICE, 1, 64);
        assert_eq!(nrt_tensor_copy(a, 0, b, 0, 64), NRT_STATUS::NRT_INVALID);
        free(a);
        free(b);
    }
}

#[test]
fn empty_tensor_attach_and_batches() {
    if neffld_testkit::ran_alone(module_path!(), "empty_tensor_attach_and_batches") {
        return;
    }
    let _g = fresh();
    let mut t: *mut nrt_tensor_t = ptr::null_mut();
    // SAFETY: `t` is writable.
    assert_eq!(
        unsafe { nrt_tensor_allocate_empty(c"e".as_ptr(), &mut t) },
        NRT_STATUS::NRT_SUCCESS
    );
    assert_eq!(nrt_tensor_get_size(t), 0);
    assert_eq!(read(t, 0, 1).0, NRT_STATUS::NRT_INVALID);
    let mut buffer = vec![0u8; 64];
    // SAFETY: `buffer` outlives the tensor (freed below first).
    let s = unsafe { nrt_tensor_attach_buffer(t, buffer.as_mut_ptr().cast(), buffer.len()) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    let mut a = *b"abcd";
    let mut b = [0u8; 4];
    let ops_w = [nrt_tensor_batch_op_t {
        offset: 8,
        size: 4,
        buffer: a.as_mut_ptr().cast::<c_void>(),
    }];
    let ops_r = [nrt_tensor_batch_op_t {
        offset: 8,
        size: 4,
        buffer: b.as_mut_ptr().cast::<c_void>(),
    }];
    let bw = [nrt_tensor_batch_t {
        tensor: t,
        ops: ops_w.as_ptr(),
        num_ops: 1,
    }];
    let br = [nrt_tensor_batch_t {
        tensor: t,
        ops: ops_r.as_ptr(),
        num_ops: 1,
    }];
    // SAFETY: the batches and their buffers are live locals of the stated sizes.
    unsafe {
        assert_eq!(
            nrt_tensor_write_batch(bw.as_ptr(), 1, false),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(
            nrt_tensor_read_batch(br.as_ptr(), 1, true),
            NRT_STATUS::NRT_SUCCESS
        );
    }
    assert_eq!(&b, b"abcd");
    free(t);
    assert_eq!(
        &buffer[8..12],
        b"abcd",
        "the attached buffer is the caller's and stays"
    );
}

#[test]
fn tensor_sets() {
    if neffld_testkit::ran_alone(module_path!(), "tensor_sets") {
        return;
    }
    let _g = fresh();
    let mut set: *mut nrt_tensor_set_t = ptr::null_mut();
    let (_, t) = alloc(HOST, -1, 8);
    let mut got: *mut nrt_tensor_t = ptr::null_mut();
    // SAFETY: all out-pointers are writable locals; names are literals.
    unsafe {
        assert_eq!(nrt_allocate_tensor_set(&mut set), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(
            nrt_add_tensor_to_tensor_set(set, c"x".as_ptr(), t),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(
            nrt_get_tensor_from_tensor_set(set, c"x".as_ptr(), &mut got),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(got, t);
        assert_eq!(
            nrt_get_tensor_from_tensor_set(set, c"y".as_ptr(), &mut got),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrt_add_tensor_to_tensor_set(set, ptr::null(), t),
            NRT_STATUS::NRT_INVALID
        );
        nrt_destroy_tensor_set(&mut set);
        assert!(set.is_null());
        nrt_destroy_tensor_set(&mut set);
    }
    free(t);
}

#[test]
fn unsupported_calls_fail_cleanly() {
    if neffld_testkit::ran_alone(module_path!(), "unsupported_calls_fail_cleanly") {
        return;
    }
    let _g = fresh();
    let fail = NRT_STATUS::NRT_FAILURE;
    // Execution needs a model before it is refused (see `execute_binding`).
    assert_eq!(
        nrt_execute(ptr::null_mut(), ptr::null(), ptr::null_mut()),
        NRT_STATUS::NRT_INVALID
    );
    assert_eq!(
        nrt_execute_repeat(ptr::null_mut(), ptr::null(), ptr::null_mut(), 3),
        NRT_STATUS::NRT_INVALID
    );
    assert_eq!(nrt_build_global_comm(0, 0, 1), fail);
    assert_eq!(nrt_cc_global_comm_init(0, 0, 1), fail);
    assert_eq!(nrt_trace_start(true), fail);
    assert_eq!(nrt_trace_stop(ptr::null()), fail);
    assert_eq!(nrt_barrier(0, 0, 1), fail);
    assert_eq!(
        nrt_all_gather(0, 0, 1, 4, ptr::null_mut(), ptr::null_mut()),
        fail
    );
    assert_eq!(nrt_async_drain_queued_execs(0), fail);
    assert_eq!(
        nrt_register_async_exec_callback(None, ptr::null_mut()),
        fail
    );
    assert_eq!(nrt_memcpy_to_device(ptr::null_mut(), ptr::null(), 0), fail);
    assert_eq!(nrt_set_pool_eng_ucode(ptr::null()), fail);
    // A NULL output tensor is NRT_INVALID, as the header says; any other
    // is unsupported (nothing executes). Neither pointer is read.
    let invalid = NRT_STATUS::NRT_INVALID;
    assert_eq!(
        nrt_tensor_check_output_completion(ptr::null(), 0, 1),
        invalid
    );
    assert_eq!(nrt_tensor_reset_output_completion(ptr::null_mut()), invalid);
    let some = ptr::NonNull::<nrt_tensor_t>::dangling().as_ptr();
    assert_eq!(nrt_tensor_check_output_completion(some, 0, 1), fail);
    assert_eq!(nrt_tensor_reset_output_completion(some), fail);
    assert_eq!(nrt_get_dmabuf_fd(0, 0, ptr::null_mut()), fail);
    assert_eq!(nrt_host_device_id_get(0, ptr::null_mut()), fail);
    assert_eq!(
        nrt_host_device_id_rid_map_get(ptr::null_mut(), ptr::null_mut()),
        fail
    );
    assert_eq!(
        nrt_get_hbm_mmap_va(0, 0, ptr::null_mut(), ptr::null_mut()),
        fail
    );
    assert_eq!(
        nrt_get_attached_efa_bdf(ptr::null(), ptr::null_mut(), ptr::null_mut()),
        fail
    );
    let mut err = 0;
    let mut msg = [1 as std::ffi::c_char; 8];
    // SAFETY: `err` and `msg` are writable locals of the stated sizes.
    let net = unsafe { nrt_get_libnccl_net(&mut err, msg.as_mut_ptr(), msg.len()) };
    assert!(net.is_null());
    assert_eq!(err, 1);
    assert_eq!(msg[7], 0);
}

#[test]
fn counts_info_and_memory_stats() {
    if neffld_testkit::ran_alone(module_path!(), "counts_info_and_memory_stats") {
        return;
    }
    let _g = fresh();
    let (mut total, mut visible, mut old) = (0u32, 0u32, 0u32);
    let mut stats = nrt_vnc_memory_stats_t {
        bytes_used: 0,
        bytes_limit: 0,
    };
    let mut written = 0usize;
    let mut inst = nrt_instance_info_t {
        family: 0,
        size: 0,
        arch_name: [0; 16],
        device_revision: [0; 8],
    };
    // SAFETY: all out-pointers are writable locals of the stated sizes.
    unsafe {
        assert_eq!(nrt_get_total_vnc_count(&mut total), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(nrt_get_total_nc_count(&mut old), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(total, old);
        assert_eq!(
            nrt_get_visible_vnc_count(&mut visible),
            NRT_STATUS::NRT_SUCCESS
        );
        assert!(visible >= 1 && visible <= total);
        assert_eq!(
            nrt_get_total_vnc_count(ptr::null_mut()),
            NRT_STATUS::NRT_INVALID
        );
        let size = std::mem::size_of::<nrt_vnc_memory_stats_t>();
        assert_eq!(
            nrt_get_vnc_memory_stats(0, &mut stats, size, &mut written),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(written, size);
        assert!(stats.bytes_limit > 0);
        assert_eq!(
            nrt_get_vnc_memory_stats(10_000, &mut stats, size, &mut written),
            NRT_STATUS::NRT_INVALID
        );
        let len = std::mem::size_of::<nrt_instance_info_t>();
        assert_eq!(
            nrt_get_instance_info(&mut inst, len),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_ne!(inst.family, NRT_INSTANCE_UNKNOWN);
    }
    let (_, t) = alloc(DEVICE, 0, 1 << 20);
    let before = stats.bytes_used;
    // SAFETY: as above.
    unsafe {
        nrt_get_vnc_memory_stats(
            0,
            &mut stats,
            std::mem::size_of_val(&stats),
            ptr::null_mut(),
        )
    };
    assert!(
        stats.bytes_used >= before + (1 << 20),
        "a device tensor is charged to its core"
    );
    free(t);
}

/// Loads the fixture, reads its tensor information, unloads, and checks
/// that a second unload of the same handle is refused.
#[test]
fn matmul_small_tensor_info() {
    if neffld_testkit::ran_alone(module_path!(), "matmul_small_tensor_info") {
        return;
    }
    let _g = fresh();
    let neff = fixture("matmul_small.neff");
    let (s, model) = load(&neff, -1, -1);
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    assert!(!model.is_null());
    let mut info: *mut nrt_tensor_info_array_t = ptr::null_mut();
    // SAFETY: `model` is live; `info` is writable; the array is read within its count.
    unsafe {
        assert_eq!(
            nrt_get_model_tensor_info(model, &mut info),
            NRT_STATUS::NRT_SUCCESS
        );
        let count = (*info).tensor_count as usize;
        let entries = std::slice::from_raw_parts((*info).tensor_array.as_ptr(), count);
        let got: Vec<(String, Vec<u32>)> = entries
            .iter()
            .map(|e| {
                let name = CStr::from_ptr(e.name.as_ptr())
                    .to_str()
                    .unwrap()
                    .to_string();
                (
                    name,
                    std::slice::from_raw_parts(e.shape, e.ndim as usize).to_vec(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("x".to_string(), vec![128, 256]),
                ("y".to_string(), vec![256, 128]),
                ("output0".to_string(), vec![128, 128]),
            ]
        );
        assert_eq!(entries[0].usage, nrt_tensor_usage_t::NRT_TENSOR_USAGE_INPUT);
        assert_eq!(
            entries[2].usage,
            nrt_tensor_usage_t::NRT_TENSOR_USAGE_OUTPUT
        );
        assert_eq!(nrt_free_model_tensor_info(info), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(nrt_free_model_tensor_info(info), NRT_STATUS::NRT_INVALID);
        let mut mi = nrt_model_info_t { vnc: 99 };
        let mut written = 0usize;
        assert_eq!(
            nrt_get_model_info(model, &mut mi, 4, &mut written),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!((mi.vnc, written), (0, 4));
        assert_eq!(nrt_unload(model), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(nrt_unload(model), NRT_STATUS::NRT_INVALID_HANDLE);
    }
}

/// `nrt_close` unloads and frees models still loaded; their handles are
/// refused afterwards.
#[test]
fn close_frees_loaded_models() {
    if neffld_testkit::ran_alone(module_path!(), "close_frees_loaded_models") {
        return;
    }
    let _g = fresh();
    let neff = fixture("matmul_small.neff");
    let (s, model) = load(&neff, -1, 1);
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    nrt_close();
    // SAFETY: a freed handle is refused by the state guard before any access.
    assert_eq!(unsafe { nrt_unload(model) }, NRT_STATUS::NRT_CLOSED);
}

/// A new tensor set holding `tensors` under their names.
fn set_of(tensors: &[(&std::ffi::CStr, *mut nrt_tensor_t)]) -> *mut nrt_tensor_set_t {
    let mut set: *mut nrt_tensor_set_t = ptr::null_mut();
    // SAFETY: `set` is writable; the names are NUL-terminated.
    unsafe {
        assert_eq!(nrt_allocate_tensor_set(&mut set), NRT_STATUS::NRT_SUCCESS);
        for (name, t) in tensors {
            assert_eq!(
                nrt_add_tensor_to_tensor_set(set, name.as_ptr(), *t),
                NRT_STATUS::NRT_SUCCESS
            );
        }
    }
    set
}

fn destroy(mut set: *mut nrt_tensor_set_t) {
    // SAFETY: `set` is a local, readable and writable.
    unsafe { nrt_destroy_tensor_set(&mut set) };
}

/// The sizes come from the NEFF's own tensor table (matmul_small: x and y
/// are 128x256 fp16 inputs, output0 a 128x128 fp16 output).
#[test]
fn execute_binding() {
    if neffld_testkit::ran_alone(module_path!(), "execute_binding") {
        return;
    }
    let _g = fresh();
    let (s, m) = load(&fixture("matmul_small.neff"), -1, -1);
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    let x = alloc(DEVICE, 0, 128 * 256 * 2).1;
    let y = alloc(DEVICE, 0, 128 * 256 * 2).1;
    let small = alloc(DEVICE, 0, 100).1;
    let out = alloc(DEVICE, 0, 128 * 128 * 2).1;
    let outputs = set_of(&[(c"output0", out)]);
    let cases: Vec<(&str, *mut nrt_tensor_set_t, NRT_STATUS)> = vec![
        ("missing y", set_of(&[(c"x", x)]), NRT_STATUS::NRT_INVALID),
        (
            "misnamed y",
            set_of(&[(c"x", x), (c"why", y)]),
            NRT_STATUS::NRT_INVALID,
        ),
        (
            "extra z",
            set_of(&[(c"x", x), (c"y", y), (c"z", y)]),
            NRT_STATUS::NRT_INVALID,
        ),
        (
            "wrong size",
            set_of(&[(c"x", x), (c"y", small)]),
            NRT_STATUS::NRT_INVALID,
        ),
        (
            "correct",
            set_of(&[(c"x", x), (c"y", y)]),
            NRT_STATUS::NRT_FAILURE,
        ),
    ];
    for (what, inputs, expected) in &cases {
        assert_eq!(nrt_execute(m, *inputs, outputs), *expected, "{what}");
        destroy(*inputs);
    }
    // Outputs are checked the same way.
    let inputs = set_of(&[(c"x", x), (c"y", y)]);
    let no_out = set_of(&[]);
    assert_eq!(nrt_execute(m, inputs, no_out), NRT_STATUS::NRT_INVALID);
    assert_eq!(
        nrt_execute_repeat(m, inputs, outputs, 0),
        NRT_STATUS::NRT_INVALID
    );
    assert_eq!(
        nrt_execute_repeat(m, inputs, outputs, 2),
        NRT_STATUS::NRT_FAILURE
    );
    assert_eq!(
        nrta_execute_schedule(m, no_out, outputs, 0, ptr::null_mut(), ptr::null_mut()),
        NRT_STATUS::NRT_INVALID
    );
    assert_eq!(
        nrta_execute_schedule(m, inputs, outputs, 0, ptr::null_mut(), ptr::null_mut()),
        NRT_STATUS::NRT_FAILURE
    );
    for s in [inputs, no_out, outputs] {
        destroy(s);
    }
    for t in [x, y, small, out] {
        free(t);
    }
    // SAFETY: `m` is the live model loaded above.
    assert_eq!(unsafe { nrt_unload(m) }, NRT_STATUS::NRT_SUCCESS);
}

/// Issue 14: a caller's size the host cannot provide is NRT_RESOURCE, not an
/// abort (this test aborted the whole test binary before the fix).
#[test]
fn host_tensor_of_a_terabyte_is_a_resource_error() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "host_tensor_of_a_terabyte_is_a_resource_error",
    ) {
        return;
    }
    let _g = fresh();
    let (s, t) = alloc(HOST, -1, 1 << 40);
    assert_eq!(s, NRT_STATUS::NRT_RESOURCE);
    assert!(t.is_null());
    let (s, t) = alloc(HOST, -1, usize::MAX);
    assert_eq!(s, NRT_STATUS::NRT_RESOURCE);
    assert!(t.is_null());
}

/// Issue 14: host tensors stay usable after nrt_close until freed, as nrt.h
/// says (they answered NRT_CLOSED before the fix); device tensors do not.
#[test]
fn host_tensors_outlive_the_runtime() {
    if neffld_testkit::ran_alone(module_path!(), "host_tensors_outlive_the_runtime") {
        return;
    }
    let _g = fresh();
    let (_, h) = alloc(HOST, -1, 64);
    let (_, d) = alloc(DEVICE, 0, 64);
    let (_, h2) = alloc(HOST, -1, 64);
    assert_eq!(write(h, 0, &[7u8; 64]), NRT_STATUS::NRT_SUCCESS);
    nrt_close();
    assert_eq!(read(h, 0, 64), (NRT_STATUS::NRT_SUCCESS, vec![7u8; 64]));
    assert_eq!(write(h, 8, &[9u8; 8]), NRT_STATUS::NRT_SUCCESS);
    assert_eq!(nrt_tensor_copy(h, 0, h2, 0, 64), NRT_STATUS::NRT_SUCCESS);
    assert_eq!(read(h2, 8, 8), (NRT_STATUS::NRT_SUCCESS, vec![9u8; 8]));
    assert_eq!(nrt_tensor_memset(h2, 0, 1, 4), NRT_STATUS::NRT_SUCCESS);
    assert!(!nrt_tensor_get_va(h).is_null());
    assert_eq!(nrt_tensor_get_size(h), 64);
    assert_eq!(read(d, 0, 4).0, NRT_STATUS::NRT_CLOSED);
    assert_eq!(write(d, 0, &[1]), NRT_STATUS::NRT_CLOSED);
    assert_eq!(nrt_tensor_copy(h, 0, d, 0, 4), NRT_STATUS::NRT_CLOSED);
    for t in [h, d, h2] {
        free(t);
    }
}

/// Runs a fetch with `nc` (when given) and returns the parsed document.
fn fetch(nc: Option<u64>) -> (NRT_STATUS, serde_json::Value) {
    let mut opts: *mut nrt_sys_trace_fetch_options_t = ptr::null_mut();
    let mut buf: *mut std::ffi::c_char = ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: every out-pointer is a writable local; the buffer is freed once.
    unsafe {
        assert_eq!(
            nrt_sys_trace_fetch_options_allocate(&mut opts),
            NRT_STATUS::NRT_SUCCESS
        );
        if let Some(nc) = nc {
            nrt_sys_trace_fetch_options_set_nc_idx(opts, nc);
        }
        let s = nrt_sys_trace_fetch_events(&mut buf, &mut len, opts);
        nrt_sys_trace_fetch_options_free(opts);
        if s != NRT_STATUS::NRT_SUCCESS {
            return (s, serde_json::Value::Null);
        }
        let text = std::slice::from_raw_parts(buf.cast::<u8>(), len).to_vec();
        assert_eq!(*buf.add(len), 0, "the JSON is NUL-terminated");
        nrt_sys_trace_buffer_free(buf);
        (s, serde_json::from_slice(&text).expect("valid JSON"))
    }
}

#[test]
fn sys_trace_records_loads_and_unloads() {
    if neffld_testkit::ran_alone(module_path!(), "sys_trace_records_loads_and_unloads") {
        return;
    }
    let _g = fresh();
    let neff = fixture("matmul_small.neff");
    assert_eq!(fetch(None).0, NRT_STATUS::NRT_INVALID, "no session yet");
    let mut config: *mut nrt_sys_trace_config_t = ptr::null_mut();
    // SAFETY: `config` is a writable local; names are NUL-terminated.
    unsafe {
        assert_eq!(
            nrt_sys_trace_config_allocate(&mut config),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(
            nrt_sys_trace_config_set_capture_enabled_for_event_type(config, c"nope".as_ptr(), true),
            NRT_STATUS::NRT_INVALID
        );
        nrt_sys_trace_config_set_capture_enabled_for_nc(config, 1, false);
        let mut types: *mut *const std::ffi::c_char = ptr::null_mut();
        let mut n = 0usize;
        assert_eq!(
            nrt_sys_trace_config_get_enabled_event_types(config, &mut types, &mut n),
            NRT_STATUS::NRT_SUCCESS
        );
        let names: Vec<String> = (0..n)
            .map(|i| {
                std::ffi::CStr::from_ptr(*types.add(i))
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(names, ["model_load", "model_unload"]);
        nrt_sys_trace_free_event_types(types, n);
        assert_eq!(nrt_sys_trace_start(config), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(nrt_sys_trace_start(config), NRT_STATUS::NRT_FAILURE);
        nrt_sys_trace_config_free(config);
    }
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let (_, m0) = load(&neff, 0, -1);
    let (_, m1) = load(&neff, 1, -1);
    let (_, m2) = load(&neff, 2, -1);
    // SAFETY: m0 is live.
    assert_eq!(unsafe { nrt_unload(m0) }, NRT_STATUS::NRT_SUCCESS);
    let (s, doc) = fetch(Some(0));
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    let events = doc["events"].as_array().unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["model_load", "model_unload"]);
    let t0 = events[0]["timestamp_ns"].as_u64().unwrap();
    let t1 = events[1]["timestamp_ns"].as_u64().unwrap();
    assert!(before <= t0 && t0 <= t1);
    assert!(events.iter().all(|e| e["nc_idx"] == 0));
    assert_eq!(events[0]["model_name"], "file.neff");
    // Core 1 was disabled; core 2's load is still there, and fetching consumed core 0's.
    let (_, rest) = fetch(None);
    let rest = rest["events"].as_array().unwrap().clone();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["nc_idx"], 2);
    // nrt_close unloads what is left: those unloads are events too.
    let _ = m1;
    let _ = m2;
    nrt_close();
    let (_, closed) = fetch(None);
    assert_eq!(closed["events"].as_array().unwrap().len(), 1, "{closed}");
    assert_eq!(nrt_sys_trace_stop(), NRT_STATUS::NRT_SUCCESS);
    assert_eq!(nrt_sys_trace_stop(), NRT_STATUS::NRT_INVALID);
}

/// The capture nrt_profile_stop writes reads back with neffld's own reader
/// and holds what the runtime staged: for every core its images at their
/// device addresses (compared with `neffld load --json`'s own record
/// through the runtime API) and its memory rows.
#[test]
fn profile_writes_a_capture_of_the_loaded_model() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "profile_writes_a_capture_of_the_loaded_model",
    ) {
        return;
    }
    let _g = fresh();
    let neff = fixture("matmul_small.neff");
    let (_, m) = load(&neff, -1, -1);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("profile_matmul_small.ntff");
    let _ = std::fs::remove_file(&path);
    let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: `cpath` is NUL-terminated; `m` is live.
    unsafe {
        assert_eq!(nrt_profile_stop(cpath.as_ptr()), NRT_STATUS::NRT_INVALID);
        assert_eq!(
            nrt_profile_start(m, cpath.as_ptr()),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(
            nrt_profile_start(m, cpath.as_ptr()),
            NRT_STATUS::NRT_FAILURE
        );
        assert_eq!(nrt_profile_stop(cpath.as_ptr()), NRT_STATUS::NRT_SUCCESS);
    }
    let bytes = std::fs::read(&path).unwrap();
    let capture = neffld::capture::read(&bytes).expect("the capture reads back");
    assert_eq!(capture.version, 6);
    assert_eq!(capture.neff_name, "file.neff");
    let header = neffld::container::NeffHeader::parse(&neff).unwrap();
    assert!(capture.uuid.matches(&header.uuid), "the NEFF's own uuid");
    assert_eq!(capture.arch(), Some(neffld::Arch::Cayman));
    // One subgraph per physical core of the logical core (LNC 2 on trn2).
    let mut pcores: Vec<u64> = capture.subgraphs.iter().map(|s| s.pcore).collect();
    pcores.dedup();
    assert_eq!(pcores.len(), capture.subgraphs.len());
    for sg in &capture.subgraphs {
        assert!(!sg.images.is_empty());
        // Relocated instruction images: whole 64-byte records, each at its
        // own device address.
        let mut addrs: Vec<u64> = sg.images.iter().map(|i| i.address).collect();
        addrs.sort_unstable();
        addrs.dedup();
        assert_eq!(addrs.len(), sg.images.len());
        assert!(sg
            .images
            .iter()
            .all(|i| !i.bytes.is_empty() && i.bytes.len() % 64 == 0));
        assert!(sg.row("weight").is_some());
    }
    // The memory rows add up to what nrt_get_vnc_memory_stats reports for the core.
    let mut stats = nrt_vnc_memory_stats_t {
        bytes_used: 0,
        bytes_limit: 0,
    };
    // SAFETY: `stats` is a writable local of the stated size.
    let s = unsafe {
        nrt_get_vnc_memory_stats(
            0,
            &mut stats,
            std::mem::size_of::<nrt_vnc_memory_stats_t>(),
            ptr::null_mut(),
        )
    };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    let rows: u64 = capture
        .subgraphs
        .iter()
        .flat_map(|s| s.memory.iter())
        .map(|r| r.bytes)
        .sum();
    assert!(rows > 0);
    assert_eq!(rows, stats.bytes_used as u64);
    // SAFETY: `m` is live.
    assert_eq!(unsafe { nrt_unload(m) }, NRT_STATUS::NRT_SUCCESS);
}

#[test]
fn version_and_device_queries() {
    if neffld_testkit::ran_alone(module_path!(), "version_and_device_queries") {
        return;
    }
    let _g = fresh();
    let mut v = std::mem::MaybeUninit::<nrt_version_t>::zeroed();
    // SAFETY: `v` is writable for its whole size.
    let v = unsafe {
        assert_eq!(
            nrt_get_version(v.as_mut_ptr(), std::mem::size_of::<nrt_version_t>()),
            NRT_STATUS::NRT_SUCCESS
        );
        v.assume_init()
    };
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        format!("{}.{}.{}", v.rt_major, v.rt_minor, v.rt_patch),
        version
    );
    // SAFETY: rt_detail is NUL-terminated by construction.
    let detail = unsafe { std::ffi::CStr::from_ptr(v.rt_detail.as_ptr()) };
    assert!(detail.to_str().unwrap().starts_with("neffld "));
    let mut devices = [-5i32; 2];
    // SAFETY: `devices` holds two writable ints.
    assert_eq!(unsafe { nec_get_device_count(devices.as_mut_ptr(), 2) }, 1);
    assert_eq!(devices, [0, -5]);
    let mut lnc = 0u32;
    // SAFETY: `lnc` is writable.
    assert_eq!(
        unsafe { nec_get_virtual_core_size(&mut lnc) },
        NRT_STATUS::NRT_SUCCESS
    );
    assert!(lnc == 1 || lnc == 2);
    assert_eq!(nec_mla_idx_to_rid(0, 0), -1);
    let mut done = false;
    let mut ret = NRT_STATUS::NRT_SUCCESS;
    let mut seq = 0u64;
    // SAFETY: every out-pointer is a writable local.
    unsafe {
        // Nothing runs on the collectives unit; unit 3 does not exist.
        assert_eq!(
            nrta_is_completed(unit(0, COLLECTIVES, 0) | 1, &mut done),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrta_is_completed((3 << 50) | 1, &mut done),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrta_cc_schedule(ptr::null_mut(), 0, &mut ret, &mut seq),
            NRT_STATUS::NRT_FAILURE
        );
    }
    assert!(!done);
    assert_eq!(
        (ret, seq),
        (NRT_STATUS::NRT_SUCCESS, 0),
        "nothing was queued"
    );
    assert_eq!(
        nrta_execute_schedule(
            ptr::null_mut(),
            ptr::null(),
            ptr::null_mut(),
            0,
            ptr::null_mut(),
            ptr::null_mut()
        ),
        NRT_STATUS::NRT_INVALID
    );
    assert_eq!(nrt_async_sendrecv_init(0), NRT_STATUS::NRT_FAILURE);
    assert_eq!(
        nrt_debug_client_connect(0, ptr::null_mut()),
        NRT_STATUS::NRT_FAILURE
    );
    assert_eq!(nrt_inspect_begin(), NRT_STATUS::NRT_FAILURE);
}

/// The id of queue `queue` of unit `xu` on core `lnc` (its top 16 bits).
fn unit(lnc: u64, xu: nrta_xu_t, queue: u64) -> u64 {
    ((lnc << 4) | ((xu as u64) << 2) | queue) << 48
}

const TENSOR_OP: nrta_xu_t = nrta_xu_t::NRTA_XU_TENSOR_OP;
const COMPUTE: nrta_xu_t = nrta_xu_t::NRTA_XU_COMPUTE;
const COLLECTIVES: nrta_xu_t = nrta_xu_t::NRTA_XU_COLLECTIVES;

/// The last completed id of a queue.
fn last(lnc: u32, xu: u32, queue: i32) -> (NRT_STATUS, u64) {
    let mut seq = 0u64;
    // SAFETY: `seq` is writable.
    let s = unsafe { nrta_get_sequence(lnc, xu, queue, &mut seq) };
    (s, seq)
}

/// Async API 3.0: the tensor calls complete inside their call; each takes
/// the next sequence number of its (core, unit, queue), writes its status to
/// `*ret` and moves the data as the sync calls do.
#[test]
fn async_tensor_requests_complete_on_return() {
    if neffld_testkit::ran_alone(module_path!(), "async_tensor_requests_complete_on_return") {
        return;
    }
    let _g = fresh();
    let (_, a) = alloc(DEVICE, 0, 256);
    let (_, b) = alloc(HOST, -1, 256);
    let data: Vec<u8> = (0..=255).collect();
    let (mut w, mut c, mut r) = (0u64, 0u64, 0u64);
    let mut ret = NRT_STATUS::NRT_FAILURE;
    let mut back = vec![0u8; 256];
    let mut done = false;
    let op = TENSOR_OP as u32;
    // SAFETY: every buffer and out-pointer is a live local of the stated size.
    unsafe {
        let (s, before) = last(0, op, 1);
        assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
        assert_eq!(before & !NRTA_SEQ_NUM_MASK, unit(0, TENSOR_OP, 1));
        assert_eq!(
            nrta_tensor_write(a, data.as_ptr().cast(), 0, 256, 0, 1, &mut ret, &mut w),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(ret, NRT_STATUS::NRT_SUCCESS, "written on completion");
        assert_eq!(w, before + 1, "the next number of the queue");
        assert_ne!(w & NRTA_SEQ_NUM_MASK, 0);
        assert_eq!(nrta_is_completed(w, &mut done), NRT_STATUS::NRT_SUCCESS);
        assert!(done);
        assert_eq!(last(0, op, 1), (NRT_STATUS::NRT_SUCCESS, w));
        assert_eq!(nrt_tensor_get_lnc_index_of(a), 0);
        assert_eq!(nrt_tensor_get_lnc_index_of(b), -1);
        ret = NRT_STATUS::NRT_FAILURE;
        assert_eq!(
            nrta_tensor_copy(a, 16, b, 0, 64, 1, &mut ret, &mut c),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(
            (ret, c),
            (NRT_STATUS::NRT_SUCCESS, w + 1),
            "the source's core"
        );
        assert_eq!(
            nrta_tensor_read(back.as_mut_ptr().cast(), b, 0, 64, 0, 1, &mut ret, &mut r),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(r, c + 1);
        assert_eq!(&back[..64], &data[16..80]);
        assert_eq!(
            nrta_tensor_read(
                back.as_mut_ptr().cast(),
                a,
                0,
                256,
                0,
                1,
                ptr::null_mut(),
                ptr::null_mut()
            ),
            NRT_STATUS::NRT_SUCCESS,
            "ret and req_sequence may be NULL"
        );
        assert_eq!(back, data);
        // Faults found before a request is accepted: returned, nothing queued.
        let mut bad = 0u64;
        let before = last(0, op, 1).1;
        let cases: [(&str, NRT_STATUS); 4] = [
            (
                "a window outside the tensor",
                nrta_tensor_read(
                    back.as_mut_ptr().cast(),
                    b,
                    250,
                    64,
                    0,
                    1,
                    &mut ret,
                    &mut bad,
                ),
            ),
            (
                "a core that is not visible",
                nrta_tensor_read(
                    back.as_mut_ptr().cast(),
                    b,
                    0,
                    64,
                    999,
                    1,
                    &mut ret,
                    &mut bad,
                ),
            ),
            (
                "a queue the unit lacks",
                nrta_tensor_write(a, data.as_ptr().cast(), 0, 64, 0, 2, &mut ret, &mut bad),
            ),
            (
                "a NULL buffer",
                nrta_tensor_write(a, ptr::null(), 0, 64, 0, 1, &mut ret, &mut bad),
            ),
        ];
        for (what, s) in cases {
            assert_eq!(s, NRT_STATUS::NRT_INVALID, "{what}");
        }
        assert_eq!(bad, 0);
        assert_eq!(last(0, op, 1).1, before);
        // Ids never issued, and queues and units that do not exist.
        assert_eq!(
            nrta_is_completed(before + 1, &mut done),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrta_is_completed(before & !NRTA_SEQ_NUM_MASK, &mut done),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(last(0, 9, 0).0, NRT_STATUS::NRT_INVALID);
        assert_eq!(last(0, COMPUTE as u32, 1).0, NRT_STATUS::NRT_INVALID);
        assert_eq!(last(0, COLLECTIVES as u32, 2).0, NRT_STATUS::NRT_SUCCESS);
    }
    free(a);
    free(b);
}

/// The eventfd registrations: a queue's fd is signalled at each completion,
/// a sequence's when it completes (at once if it has), -1 unregisters, and
/// the client's descriptor is never closed.
#[test]
fn async_completions_signal_eventfds() {
    if neffld_testkit::ran_alone(module_path!(), "async_completions_signal_eventfds") {
        return;
    }
    let _g = fresh();
    let (_, a) = alloc(DEVICE, 0, 64);
    let data = [5u8; 64];
    let mut seq = 0u64;
    let mut ret = NRT_STATUS::NRT_FAILURE;
    let op = TENSOR_OP as u32;
    let fd = eventfd();
    // SAFETY: every buffer and out-pointer is a live local of the stated size.
    unsafe {
        assert_eq!(
            nrta_event_register_xu_completion(0, op, 0, fd),
            NRT_STATUS::NRT_SUCCESS
        );
        for _ in 0..3 {
            assert_eq!(
                nrta_tensor_write(a, data.as_ptr().cast(), 0, 64, 0, 0, &mut ret, &mut seq),
                NRT_STATUS::NRT_SUCCESS
            );
        }
        assert_eq!(drain(fd), 3, "one signal per completion");
        assert_eq!(
            nrta_event_register_xu_completion(0, op, 0, -1),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(
            nrta_tensor_write(a, data.as_ptr().cast(), 0, 64, 0, 0, &mut ret, &mut seq),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(drain(fd), 0, "unregistered");
        assert_eq!(
            nrta_event_register_seq_id_completion(seq, fd),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(drain(fd), 1, "already completed: signalled at registration");
        assert_eq!(
            nrta_event_register_seq_id_completion(seq + 1, fd),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrta_event_register_seq_id_completion(seq, -2),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrta_event_register_xu_completion(0, 7, 0, fd),
            NRT_STATUS::NRT_INVALID
        );
        assert_eq!(
            nrta_event_register_xu_completion(999, op, 0, fd),
            NRT_STATUS::NRT_INVALID
        );
    }
    assert_eq!(drain(fd), 0);
    close(fd);
    free(a);
}

/// `nrt_tensor_get_lnc_index` of a tensor (-99 when it fails).
fn nrt_tensor_get_lnc_index_of(t: *const nrt_tensor_t) -> i32 {
    let mut lnc = -99;
    // SAFETY: `lnc` is writable.
    let s = unsafe { nrt_tensor_get_lnc_index(t, &mut lnc) };
    if s == NRT_STATUS::NRT_SUCCESS {
        lnc
    } else {
        -99
    }
}

extern "C" {
    #[link_name = "eventfd"]
    fn sys_eventfd(initval: u32, flags: i32) -> i32;
    #[link_name = "read"]
    fn sys_read(fd: i32, buf: *mut std::ffi::c_void, count: usize) -> isize;
    #[link_name = "close"]
    fn sys_close(fd: i32) -> i32;
}

/// A non-blocking eventfd.
fn eventfd() -> i32 {
    const EFD_NONBLOCK: i32 = 0o4000;
    // SAFETY: plain syscall wrapper.
    let fd = unsafe { sys_eventfd(0, EFD_NONBLOCK) };
    assert!(fd >= 0);
    fd
}

/// The eventfd's counter, reset to 0 (0 when nothing was signalled).
fn drain(fd: i32) -> u64 {
    let mut n = 0u64;
    // SAFETY: `n` is 8 writable bytes.
    let got = unsafe { sys_read(fd, (&mut n as *mut u64).cast(), 8) };
    if got == 8 {
        n
    } else {
        0
    }
}

fn close(fd: i32) {
    // SAFETY: plain syscall wrapper on a descriptor this test owns.
    assert_eq!(unsafe { sys_close(fd) }, 0);
}
