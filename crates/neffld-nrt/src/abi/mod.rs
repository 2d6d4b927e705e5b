//! The C declarations: one file per public header, holding its data types,
//! enums and constants. This is the leaf of the crate: it imports nothing
//! but its own files, and every domain module (which holds the header's
//! functions and opaque handle types) imports it, never the reverse.
//! `scripts/gen-headers.sh` feeds each file to cbindgen together with the
//! domain modules of the same header.
//!
//! A struct or enum the SDK's header declares with a tag
//! (`typedef struct nrt_instance_info {...} nrt_instance_info_t;`) is named
//! by its tag here, and its typedef is an alias (`pub type
//! nrt_instance_info_t = nrt_instance_info;`), so that C and C++ clients may
//! spell it either way; one the SDK declares without a tag keeps its
//! typedef's name (`nrt_tensor_placement_t`, `NRT_STATUS`).

pub mod ndebug_stream;
pub mod nec;
pub mod nrt;
pub mod nrt_async;
pub mod nrt_experimental;
pub mod nrt_status;
pub mod nrt_version;
