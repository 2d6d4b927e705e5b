//! A client's buffer inside the host tensor it reads or writes
//! (`nrt_tensor_get_va` + 1), and copies between attached buffers that
//! overlap: the bytes end as `memmove` leaves them (the model here is
//! `slice::copy_within`, std's own overlapping copy). They were copied with
//! `copy_nonoverlapping` (ASAN: memcpy-param-overlap; a debug build's
//! precondition check aborts), and a copy of more than one chunk between
//! overlapping buffers ran its chunks forwards over bytes not yet read.

use std::ptr;

use neffld_nrt::*;

const HOST: u32 = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_HOST as u32;

fn init() {
    // SAFETY: NULL version strings are allowed.
    let s = unsafe { nrt_init(1, ptr::null(), ptr::null()) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
}

/// A host tensor's bytes, through its address.
fn bytes(va: *mut u8, len: usize) -> Vec<u8> {
    // SAFETY: `va` is a live host tensor's address with `len` bytes, read
    // while no call writes them.
    unsafe { std::slice::from_raw_parts(va, len) }.to_vec()
}

#[test]
fn a_host_tensor_reads_and_writes_its_own_bytes() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "a_host_tensor_reads_and_writes_its_own_bytes",
    ) {
        return;
    }
    init();
    const LEN: usize = 8192;
    const N: usize = 4096;
    let mut t: *mut nrt_tensor_t = ptr::null_mut();
    // SAFETY: the name is a NUL-terminated literal; `t` is writable.
    let s = unsafe { nrt_tensor_allocate(HOST, 0, LEN, c"h".as_ptr(), &mut t) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    let va = nrt_tensor_get_va(t).cast::<u8>();
    assert!(!va.is_null());
    let mut model: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
    // SAFETY: `va` has LEN writable bytes.
    unsafe { ptr::copy_nonoverlapping(model.as_ptr(), va, LEN) };
    let (mut ret, mut seq) = (NRT_STATUS::NRT_FAILURE, 0u64);

    // SAFETY (every call below): `va + k` has at least N + k bytes left in
    // the tensor, readable and writable; `ret` and `seq` are live locals.
    let s = unsafe { nrt_tensor_read(t, va.add(1).cast(), 0, N) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    model.copy_within(0..N, 1);
    assert!(bytes(va, LEN) == model, "nrt_tensor_read into va + 1");

    let s = unsafe { nrt_tensor_write(t, va.add(3).cast(), 0, N) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    model.copy_within(3..3 + N, 0);
    assert!(bytes(va, LEN) == model, "nrt_tensor_write from va + 3");

    let s = unsafe { nrta_tensor_read(va.add(1).cast(), t, 0, N as u64, 0, 0, &mut ret, &mut seq) };
    assert_eq!((s, ret), (NRT_STATUS::NRT_SUCCESS, NRT_STATUS::NRT_SUCCESS));
    model.copy_within(0..N, 1);
    assert!(bytes(va, LEN) == model, "nrta_tensor_read into va + 1");

    let s =
        unsafe { nrta_tensor_write(t, va.add(5).cast(), 100, N as u64, 0, 0, &mut ret, &mut seq) };
    assert_eq!((s, ret), (NRT_STATUS::NRT_SUCCESS, NRT_STATUS::NRT_SUCCESS));
    model.copy_within(5..5 + N, 100);
    assert!(bytes(va, LEN) == model, "nrta_tensor_write from va + 5");

    for (dir, at, offset) in [("read", 2usize, 0u64), ("write", 0, 7)] {
        let op = nrt_tensor_batch_op_t {
            offset,
            size: N as u64,
            // SAFETY: inside the tensor, as above.
            buffer: unsafe { va.add(at) }.cast(),
        };
        let batch = nrt_tensor_batch_t {
            tensor: t,
            ops: &op,
            num_ops: 1,
        };
        let s = if dir == "read" {
            model.copy_within(offset as usize..offset as usize + N, at);
            unsafe { nrt_tensor_read_batch(&batch, 1, false) }
        } else {
            model.copy_within(at..at + N, offset as usize);
            unsafe { nrt_tensor_write_batch(&batch, 1, false) }
        };
        assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
        assert!(bytes(va, LEN) == model, "batch {dir} at va + {at}");
    }
    // SAFETY: `t` is a live local.
    unsafe { nrt_tensor_free(&mut t) };
    nrt_close();
}

/// Two tensors attached to overlapping parts of one buffer, copied both
/// ways over three 1 MiB chunks.
#[test]
fn copies_between_overlapping_attached_buffers() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "copies_between_overlapping_attached_buffers",
    ) {
        return;
    }
    init();
    const MIB: usize = 1 << 20;
    const SHIFT: usize = MIB + 5;
    const WINDOW: usize = 4 * MIB;
    let mut buffer: Vec<u8> = (0..WINDOW + SHIFT).map(|i| (i % 253) as u8).collect();
    let mut model = buffer.clone();
    let base = buffer.as_mut_ptr();
    let attached = |at: usize| {
        let mut t: *mut nrt_tensor_t = ptr::null_mut();
        // SAFETY: the name is a NUL-terminated literal; `t` is writable;
        // `base + at` has WINDOW bytes of `buffer`, which outlives the tensor.
        unsafe {
            assert_eq!(
                nrt_tensor_allocate_empty(c"a".as_ptr(), &mut t),
                NRT_STATUS::NRT_SUCCESS
            );
            assert_eq!(
                nrt_tensor_attach_buffer(t, base.add(at).cast(), WINDOW),
                NRT_STATUS::NRT_SUCCESS
            );
        }
        t
    };
    let (mut low, mut high) = (attached(0), attached(SHIFT));
    let size = 3 * MIB;
    assert_eq!(
        nrt_tensor_copy(low, 0, high, 0, size),
        NRT_STATUS::NRT_SUCCESS
    );
    model.copy_within(0..size, SHIFT);
    assert!(bytes(base, buffer.len()) == model, "copied upwards");
    assert_eq!(
        nrt_tensor_copy(high, 10, low, 0, size),
        NRT_STATUS::NRT_SUCCESS
    );
    model.copy_within(SHIFT + 10..SHIFT + 10 + size, 0);
    assert!(bytes(base, buffer.len()) == model, "copied downwards");
    // SAFETY: live locals.
    unsafe {
        nrt_tensor_free(&mut low);
        nrt_tensor_free(&mut high);
    }
    nrt_close();
}
