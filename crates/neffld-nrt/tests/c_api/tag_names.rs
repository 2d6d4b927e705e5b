//! The shipped headers carry the SDK's struct and enum tags: code written
//! against the SDK's headers says `struct nrt_instance_info ii;` or
//! `enum nrt_dtype dt;` as often as `nrt_instance_info_t ii;`, and both must
//! compile. `tests/c/tag_names.c` and `tests/cpp/tag_names.cpp` name every
//! tagged type of the SDK's headers that ours declare (all but `nec.h`'s
//! internal structures, docs/decisions.md) by its tag, assert at compile
//! time that the tag and the typedef are one type of the SDK's size, and
//! pass tag-spelled values to the functions; they are compiled (not linked)
//! against `include/` with the system C and C++ compilers. Both compile
//! against the SDK's own headers too.

use std::path::{Path, PathBuf};
use std::process::Command;

fn compile(compiler: &str, std: &str, source: &str) {
    compile_with(compiler, &[std], source);
}

fn compile_with(compiler: &str, flags: &[&str], source: &str) {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let name = Path::new(source).file_name().unwrap().to_string_lossy();
    let object = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.o"));
    let out = Command::new(compiler)
        .args(flags)
        .args(["-Wall", "-Wextra", "-Werror", "-c", "-I"])
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join(source))
        .arg("-o")
        .arg(&object)
        .output()
        .unwrap_or_else(|e| panic!("a compiler ({compiler}) is needed to check the headers: {e}"));
    assert!(
        out.status.success(),
        "{source} does not compile against include/:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn c_client_compiles_with_the_sdk_tag_names() {
    compile("cc", "-std=c11", "tests/c/tag_names.c");
}

#[test]
fn cpp_client_compiles_with_the_sdk_tag_names() {
    compile("c++", "-std=c++17", "tests/cpp/tag_names.cpp");
}

/// The headers declare nothing a client may name itself: a client's own
/// `write()` compiles beside every header (nrt_async.h declared libc's).
#[test]
fn c_client_keeps_its_own_names_beside_the_headers() {
    compile("cc", "-std=c11", "tests/c/own_names.c");
}

/// ISO C builds with `-pedantic -Werror` take the headers: a trailing array
/// is the SDK's flexible array member (`tensor_array[]`), not `[0]`.
#[test]
fn c_client_compiles_pedantic() {
    compile_with("cc", &["-std=c99", "-pedantic"], "tests/c/own_names.c");
}
