//! The `neffld` binary: the command is the library's ([`neffld_cli::main`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    neffld_cli::main(std::env::args_os())
}
