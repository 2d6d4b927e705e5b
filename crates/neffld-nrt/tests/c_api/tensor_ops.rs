//! The tensor operations of libnrt 2.35 through the exported C functions:
//! device dtypes set and read back, casts and computes on slices, the
//! async forms' queue and eventfd, and the statuses outside an initialised
//! runtime. Each test is alone in its process (the runtime is
//! process-wide) under the default runtime line (the newest, which has
//! the calls) and chip.

use std::ptr;

use neffld_nrt::*;

const DEVICE: u32 = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_DEVICE as u32;
const ADD: u32 = nrt_op_type_t::NRT_OP_ADD as u32;
const MIN: u32 = nrt_op_type_t::NRT_OP_MIN as u32;
const TENSOR_OP: u32 = nrta_xu_t::NRTA_XU_TENSOR_OP as u32;
const OK: NRT_STATUS = NRT_STATUS::NRT_SUCCESS;

fn init() {
    // SAFETY: NULL version strings are allowed.
    assert_eq!(unsafe { nrt_init(1, ptr::null(), ptr::null()) }, OK);
}

/// A device tensor on logical core 0 holding `bytes`, of `dtype`.
fn tensor(bytes: &[u8], dtype: nrt_dtype_t) -> *mut nrt_tensor_t {
    let mut t: *mut nrt_tensor_t = ptr::null_mut();
    // SAFETY: `t` is writable; a NULL name is allowed; `bytes` is readable.
    unsafe {
        assert_eq!(
            nrt_tensor_allocate(DEVICE, 0, bytes.len(), ptr::null(), &mut t),
            OK
        );
        assert_eq!(
            nrt_tensor_write(t, bytes.as_ptr().cast(), 0, bytes.len()),
            OK
        );
    }
    assert_eq!(nrt_tensor_set_dtype(t, dtype as u32), OK);
    t
}

fn read(t: *mut nrt_tensor_t, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    // SAFETY: `out` has `n` writable bytes.
    assert_eq!(
        unsafe { nrt_tensor_read(t, out.as_mut_ptr().cast(), 0, n) },
        OK
    );
    out
}

fn f32s(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn free(ts: &mut [*mut nrt_tensor_t]) {
    for t in ts {
        // SAFETY: a live tensor handle.
        unsafe { nrt_tensor_free(t) };
    }
}

#[test]
fn dtypes_casts_and_computes_through_the_c_api() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "dtypes_casts_and_computes_through_the_c_api",
    ) {
        return;
    }
    init();
    use nrt_dtype::*;
    // Every code is set and read back; NRT_DTYPE_INVALID detaches.
    let t = tensor(&[0; 64], NRT_DTYPE_FLOAT32);
    for code in 0..=15u32 {
        assert_eq!(nrt_tensor_set_dtype(t, code), OK);
        let mut got = NRT_DTYPE_FLOAT32;
        // SAFETY: `got` is writable.
        assert_eq!(unsafe { nrt_tensor_get_dtype(t, &mut got) }, OK);
        assert_eq!(got as u32, code);
    }
    assert_eq!(nrt_tensor_set_dtype(t, 16), NRT_STATUS::NRT_INVALID);
    assert_eq!(
        nrt_tensor_set_dtype(ptr::null_mut(), 10),
        NRT_STATUS::NRT_INVALID
    );
    // SAFETY: NULL arguments are refused.
    assert_eq!(
        unsafe { nrt_tensor_get_dtype(t, ptr::null_mut()) },
        NRT_STATUS::NRT_INVALID
    );

    // MIN of three sources, one a slice from its third element (which
    // keeps the float32 dtype of its tensor), into a float16 destination.
    let a = tensor(&f32s(&[9.0, 9.0, 1.0, -2.0, 3.5, 0.1]), NRT_DTYPE_FLOAT32);
    let mut slice: *mut nrt_tensor_t = ptr::null_mut();
    // SAFETY: `slice` is writable; a NULL name is allowed.
    assert_eq!(
        unsafe { nrt_tensor_allocate_slice(a, 8, 16, ptr::null(), &mut slice) },
        OK
    );
    let b = tensor(&f32s(&[0.5, 7.0, 2.0, 0.2]), NRT_DTYPE_FLOAT32);
    let c = tensor(&[4u8, 250, 1, 1], NRT_DTYPE_UINT8);
    let d = tensor(&[0xee; 10], NRT_DTYPE_FLOAT16);
    let srcs = [slice, b, c];
    // SAFETY: `srcs` holds three live tensors.
    assert_eq!(
        unsafe { nrt_tensor_compute(MIN, srcs.as_ptr(), 3, d, 4) },
        OK
    );
    // min(1, 0.5, 4) = 0.5, min(-2, 7, 250) = -2, min(3.5, 2, 1) = 1,
    // min(0.1, 0.2, 1) = 0.1 (float16 0x2e66), then the two bytes left.
    assert_eq!(
        read(d, 10),
        [0x00, 0x38, 0x00, 0xc0, 0x00, 0x3c, 0x66, 0x2e, 0xee, 0xee]
    );

    // float32 to FP8 e4m3: 1.0, the largest (240), past it by half a step
    // or more (infinity), a tie (1.0625 between 1.0 and 1.125: even 1.0).
    let x = tensor(&f32s(&[1.0, 240.0, 248.0, 1.0625]), NRT_DTYPE_FLOAT32);
    let e4 = tensor(&[0; 4], NRT_DTYPE_FP8_E4);
    assert_eq!(nrt_tensor_cast(x, e4, 4), OK);
    assert_eq!(read(e4, 4), [0x38, 0x77, 0x78, 0x38]);
    // int32 into uint8 saturates.
    let i = tensor(
        &[-5i32, 300, 7]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
        NRT_DTYPE_INT32,
    );
    let u = tensor(&[0; 3], NRT_DTYPE_UINT8);
    assert_eq!(nrt_tensor_cast(i, u, 3), OK);
    assert_eq!(read(u, 3), [0, 255, 7]);
    // A host tensor is refused.
    let mut h: *mut nrt_tensor_t = ptr::null_mut();
    let host = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_HOST as u32;
    // SAFETY: `h` is writable.
    assert_eq!(
        unsafe { nrt_tensor_allocate(host, 0, 16, ptr::null(), &mut h) },
        OK
    );
    assert_eq!(nrt_tensor_set_dtype(h, NRT_DTYPE_FLOAT32 as u32), OK);
    assert_eq!(nrt_tensor_cast(h, x, 4), NRT_STATUS::NRT_INVALID);
    free(&mut [t, a, slice, b, c, d, x, e4, i, u, h]);
    nrt_close();
}

#[test]
fn an_async_compute_completes_in_its_queue_and_signals_its_eventfd() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "an_async_compute_completes_in_its_queue_and_signals_its_eventfd",
    ) {
        return;
    }
    init();
    let a = tensor(&f32s(&[1.0, 2.0]), nrt_dtype_t::NRT_DTYPE_FLOAT32);
    let b = tensor(&f32s(&[0.25, 0.5]), nrt_dtype_t::NRT_DTYPE_FLOAT32);
    // SAFETY: a plain syscall; the descriptor is this test's.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
    assert!(fd >= 0);
    assert_eq!(nrta_event_register_xu_completion(0, TENSOR_OP, 1, fd), OK);
    let (mut ret, mut seq) = (NRT_STATUS::NRT_FAILURE, 0);
    let srcs = [a, b];
    // SAFETY: `srcs` holds two live tensors; `ret` and `seq` are writable.
    let s = unsafe { nrta_tensor_compute(ADD, srcs.as_ptr(), 2, b, 2, 1, &mut ret, &mut seq) };
    assert_eq!((s, ret), (OK, OK));
    assert_eq!(read(b, 8), f32s(&[1.25, 2.5]), "in place into b");
    let mut last = 0;
    // SAFETY: `last` is writable.
    assert_eq!(unsafe { nrta_get_sequence(0, TENSOR_OP, 1, &mut last) }, OK);
    assert_eq!(last, seq, "the queue's last completed request");
    assert_eq!(drain(fd), 1, "the queue's eventfd was signalled once");
    // Refused at call time: nothing queued, no signal.
    let (mut ret2, mut seq2) = (NRT_STATUS::NRT_FAILURE, 0);
    // SAFETY: as above.
    let s = unsafe { nrta_tensor_compute(ADD, srcs.as_ptr(), 0, b, 2, 1, &mut ret2, &mut seq2) };
    assert_eq!(
        (s, ret2, seq2),
        (NRT_STATUS::NRT_INVALID, NRT_STATUS::NRT_FAILURE, 0)
    );
    assert_eq!(drain(fd), 0);
    assert_eq!(nrta_event_register_xu_completion(0, TENSOR_OP, 1, -1), OK);
    free(&mut [a, b]);
    nrt_close();
    // SAFETY: the descriptor is this test's own.
    unsafe { libc::close(fd) };
}

#[test]
fn outside_an_initialised_runtime_the_state_is_the_answer() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "outside_an_initialised_runtime_the_state_is_the_answer",
    ) {
        return;
    }
    assert_eq!(
        nrt_tensor_cast(ptr::null(), ptr::null_mut(), 1),
        NRT_STATUS::NRT_UNINITIALIZED
    );
    init();
    let a = tensor(&f32s(&[1.0]), nrt_dtype_t::NRT_DTYPE_FLOAT32);
    let b = tensor(&f32s(&[0.0]), nrt_dtype_t::NRT_DTYPE_FLOAT32);
    assert_eq!(nrt_tensor_cast(a, b, 1), OK);
    nrt_close();
    assert_eq!(nrt_tensor_cast(a, b, 1), NRT_STATUS::NRT_CLOSED);
    init();
    // Tensors of the runtime closed since: still closed.
    assert_eq!(nrt_tensor_cast(a, b, 1), NRT_STATUS::NRT_CLOSED);
    free(&mut [a, b]);
    nrt_close();
}

/// The eventfd's counter, reset (0 when nothing was signalled).
fn drain(fd: i32) -> u64 {
    let mut n = 0u64;
    // SAFETY: `n` is 8 writable bytes.
    let got = unsafe { libc::read(fd, (&mut n as *mut u64).cast(), 8) };
    if got == 8 {
        n
    } else {
        0
    }
}
