//! The C declarations: one file per public header, holding its data types,
//! enums and constants. This is the leaf of the crate: it imports nothing
//! but its own files, and every domain module (which holds the header's
//! functions and opaque handle types) imports it, never the reverse.
//! `scripts/gen-headers.sh` feeds each file to cbindgen together with the
//! domain modules of the same header.

pub mod ndebug_stream;
pub mod nec;
pub mod nrt;
pub mod nrt_async;
pub mod nrt_experimental;
pub mod nrt_status;
pub mod nrt_version;
