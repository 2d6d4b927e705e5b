//! The `neffld` command run as a user runs it: every subcommand, its exit codes, its JSON schema and hostile inputs.

mod capture_cli;
mod cli;
mod collectives_cli;
#[path = "../common/mod.rs"]
mod common;
mod derived;
mod examples;
mod hostile;
mod large_file;
mod monitor_cli;
mod plan_cli;
mod readme;
mod schema;
mod world_cli;
