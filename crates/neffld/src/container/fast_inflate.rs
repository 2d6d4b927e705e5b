//! A thin, safe wrapper over libdeflate's one-shot gzip decoder.
//!
//! Why `unsafe` here: libdeflate decodes real NEFF payloads about 1.6× faster
//! than zlib-rs (matmul_large: 4.7 ms against 7.4 ms, best of 30, same
//! machine), and only its `_ex` entry point reports where a gzip member ends,
//! which the loader needs to tell zero padding from a second member. The
//! safe bindings do not expose `_ex`, so the call is made here, once, with
//! its contract spelled out.

use libdeflate_sys::{
    libdeflate_alloc_decompressor, libdeflate_decompressor, libdeflate_free_decompressor,
    libdeflate_gzip_decompress_ex, libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE,
    libdeflate_result_LIBDEFLATE_SUCCESS,
};

/// What one decode attempt found.
pub enum Outcome {
    /// The member decoded into the buffer; `consumed` input bytes (header,
    /// body, trailer) belong to it.
    Done { consumed: usize },
    /// The buffer's capacity was too small.
    NoRoom,
    /// Not a valid gzip member (or truncated).
    Bad,
}

/// An owned libdeflate decompressor.
pub struct Decompressor(*mut libdeflate_decompressor);

impl Decompressor {
    /// `None` when libdeflate cannot allocate its state.
    pub fn new() -> Option<Decompressor> {
        // SAFETY: the allocator has no preconditions; it returns null on failure.
        let p = unsafe { libdeflate_alloc_decompressor() };
        (!p.is_null()).then_some(Decompressor(p))
    }

    /// Decodes the gzip member at the start of `input` into `out`'s spare
    /// capacity (`out` must be empty); on success `out` holds the decoded bytes.
    pub fn gzip_member(&mut self, input: &[u8], out: &mut Vec<u8>) -> Outcome {
        debug_assert!(out.is_empty());
        let cap = out.capacity();
        // SAFETY: the pointer and `cap` describe `out`'s allocated, writable
        // storage, which `out` holds for the whole call.
        let (outcome, produced) = unsafe { self.decode(input, out.as_mut_ptr(), cap) };
        // SAFETY: on success libdeflate initialised exactly `produced` bytes
        // from the start of the buffer, and `decode` checked `produced` ≤ cap.
        unsafe { out.set_len(produced) };
        outcome
    }

    /// Decodes the gzip member at the start of `input` into `out`; on
    /// success the decoded bytes are `out[..produced]` (the rest of `out` is
    /// as it was).
    pub fn gzip_member_into(&mut self, input: &[u8], out: &mut [u8]) -> (Outcome, usize) {
        // SAFETY: `out` is a live, writable slice of `out.len()` bytes.
        unsafe { self.decode(input, out.as_mut_ptr(), out.len()) }
    }

    /// The one call into libdeflate, and the number of bytes it produced (0
    /// unless it succeeded).
    ///
    /// # Safety
    /// `out` must point at `cap` writable bytes that stay valid and are not
    /// used otherwise during the call.
    unsafe fn decode(&mut self, input: &[u8], out: *mut u8, cap: usize) -> (Outcome, usize) {
        let (mut consumed, mut produced) = (0usize, 0usize);
        // SAFETY: `self.0` is a live decompressor used by this thread only
        // (`&mut self`). `input` is a live slice of `input.len()` readable
        // bytes; `out` and `cap` describe writable storage (the caller's
        // contract), where libdeflate writes at most `cap` bytes and reads
        // back only bytes it wrote. The two out-params are valid `usize`
        // locations.
        let r = unsafe {
            libdeflate_gzip_decompress_ex(
                self.0,
                input.as_ptr().cast(),
                input.len(),
                out.cast(),
                cap,
                &mut consumed,
                &mut produced,
            )
        };
        if r == libdeflate_result_LIBDEFLATE_SUCCESS && produced <= cap && consumed <= input.len() {
            (Outcome::Done { consumed }, produced)
        } else if r == libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE {
            (Outcome::NoRoom, 0)
        } else {
            (Outcome::Bad, 0)
        }
    }
}

impl Drop for Decompressor {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `libdeflate_alloc_decompressor` and is freed once, here.
        unsafe { libdeflate_free_decompressor(self.0) }
    }
}
