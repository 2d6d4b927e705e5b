//! The C declarations, one file per public header. cbindgen reads each file
//! on its own to produce `include/nrt/<file>.h`, so nothing else belongs here.
//! The C names are kept as they are, hence the lint exception; the shims of
//! unsupported calls keep the public parameter names without using them.

#[allow(non_camel_case_types, unused_variables)]
pub mod nrt;
#[allow(non_camel_case_types, unused_variables)]
pub mod nrt_experimental;
#[allow(non_camel_case_types)]
pub mod nrt_status;
