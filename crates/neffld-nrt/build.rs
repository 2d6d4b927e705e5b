//! Gives the shared library the soname of the library it stands in for, so
//! a client linked against `libnrt.so` records `libnrt.so.1` (not a build
//! path) and finds it wherever the loader looks.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnrt.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
