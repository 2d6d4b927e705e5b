//! The `neffld` command: inspect, verify, extract, pack, load, plan and
//! compare NEFF files. The whole command is this library's [`main`], so
//! the binary here and the Python package's `neffld` command (which links
//! it into its extension) are one program.

mod collectives;
mod compare_cmd;
mod container_cmds;
mod dump;
mod input;
mod load_cmd;
mod load_doc;
mod map;
mod memory;
mod plan_cmd;
mod plan_map;
mod plan_outputs;
mod plan_text;
mod plan_top;
mod plan_world;
mod report;
mod sigbus;
mod sorted_json;
mod style;
mod units;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::report::report_failure;
pub use crate::report::Failure;
use crate::style::{ColorChoice, Style};

const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("NEFFLD_COMMIT"),
    ")"
);

/// The exit-status table of the whole command (each subcommand has its own).
macro_rules! exit_codes {
    () => {
        "Exit status:\n  0  success (every NEFF passed)\n  1  a NEFF failed a gate; the report names the stage, the message and the NRT status\n  2  usage error, or a file could not be read or written\n\nFILE may be `-` to read the NEFF from standard input.\n`--json` output follows the schema in docs/cli.md (schema_version 1)."
    };
}

#[derive(Parser)]
#[command(
    name = "neffld",
    version = VERSION,
    about = "Inspect, verify, pack and load Neuron NEFF files without hardware",
    after_help = concat!("Example:\n  neffld load examples/demo.neff --map map.html\n\n", exit_codes!())
)]
struct Cli {
    /// When to colour FAIL lines and warnings (auto: on a terminal, unless NO_COLOR is set).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    color: ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the header, integrity, archive members, target, IO tensors and subgraphs of a NEFF.
    #[command(after_help = concat!("Example:\n  neffld inspect model.neff --json | jq .integrity\n\n", "Exit status:\n  0  the NEFF passed every parse-side gate\n  1  it failed one (the hash is compared but not required)\n  2  usage error, or the file could not be read"))]
    Inspect {
        /// The NEFF file (`-`: standard input).
        file: PathBuf,
        /// Machine-readable output (stable schema, see docs/cli.md).
        #[arg(long)]
        json: bool,
        /// Ceiling on the inflated payload in bytes (default: 64x the payload, 256 MiB to 32 GiB).
        #[arg(long, value_name = "BYTES")]
        max_inflated: Option<u64>,
    },
    /// Check each file: its payload digest, then every gate a default load runs (on NEFFLD_ARCH or NEFFLD_INSTANCE's architecture, else the NEFF's own); one line per file and a summary.
    #[command(after_help = concat!("Example:\n  neffld verify *.neff\n\n", "A file whose payload digest does not match its header is corrupt and fails,\nunless --ignore-hash (a load checks the digest only with NEURON_RT_VALIDATE_HASH).\n\n", "Exit status:\n  0  every file is sound\n  1  at least one file failed a gate (it has a FAIL line; the others are still checked)\n  2  usage error, or a file could not be read (it has a FAIL line too)"))]
    Verify {
        /// The NEFF files (`-`: standard input, once).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Pass a file whose payload digest does not match (reported, not a failure).
        #[arg(long)]
        ignore_hash: bool,
        /// Machine-readable output: one document with an entry per file (docs/cli.md).
        #[arg(long)]
        json: bool,
        /// Ceiling on the inflated payload in bytes (default: 64x the payload, 256 MiB to 32 GiB).
        #[arg(long, value_name = "BYTES")]
        max_inflated: Option<u64>,
    },
    /// Load a NEFF on a simulated device (S0–S5), report where everything landed and how much memory, unload.
    #[command(after_help = concat!("Example:\n  neffld load examples/demo.neff --check --map map.html\n\n", "Exit status:\n  0  the NEFF loaded (and unloaded)\n  1  the load failed; the report names the stage and the NRT status (the memory report and map are still written)\n  2  usage error, or the file could not be read"))]
    Load(load_cmd::LoadArgs),
    /// Plan a deployment on a whole simulated instance: NEFFs on logical cores
    /// (ranks of one NEFF, several per core), their IO tensors, named tensors,
    /// unloads; whether it fits, the first refusal as the runtime reports it,
    /// the usage tables, headroom per core and advice, each judged by planning again.
    #[command(after_help = concat!("Example:
  neffld plan --instance trn2.3xlarge --lnc 1 dense.neff@0,0 --tensor kv=4GiB@1
  neffld plan deployment.toml --json
  neffld plan --instance trn2.48xlarge --world 32 tp.neff@0-31

", "Exit status:
  0  every step fits
  1  a step was refused (the report names it, with the runtime's own refusal lines), or the ranks of a --world disagree
  2  usage error (a bad LOAD, size, core list, variable or deployment file: the message names it and where), or a file could not be read"))]
    Plan(plan_cmd::PlanArgs),
    /// Load a NEFF as a profiler capture's runtime did and show, per core and
    /// engine, where neffld and the real runtime agree; exit 0 only if all do.
    #[command(after_help = concat!("Example:\n  neffld compare model.neff model.ntff --json\n\n", "Exit status:\n  0  every counted figure agrees\n  1  something differs, the capture is damaged or the NEFF does not load\n  2  usage error, or a file could not be read"))]
    Compare {
        /// The NEFF the capture was taken of.
        file: PathBuf,
        /// The capture (NTFF version 4, 5 or 6).
        capture: PathBuf,
        /// Machine-readable output (docs/cli.md).
        #[arg(long)]
        json: bool,
    },
    /// Write every archive member of a NEFF under DIR.
    #[command(after_help = concat!("Example:\n  neffld extract model.neff -o tree/ && neffld pack tree/ -o rebuilt.neff\n\n", "Members are created beneath DIR only, never through a symbolic link; a member that cannot be placed\n(its path leaves DIR or runs through another member's file) is skipped with a warning.\n\n", "Exit status:\n  0  every member written (or skipped with a warning)\n  1  the container failed a gate\n  2  usage error, or a file could not be read or written (the others are still written)"))]
    Extract {
        /// The NEFF file (`-`: standard input).
        file: PathBuf,
        /// Output directory (created if missing).
        #[arg(short = 'o', long = "output")]
        dir: PathBuf,
        /// Ceiling on the inflated payload in bytes (default: 64x the payload, 256 MiB to 32 GiB).
        #[arg(long, value_name = "BYTES")]
        max_inflated: Option<u64>,
        /// Machine-readable output (docs/cli.md).
        #[arg(long)]
        json: bool,
    },
    /// Build a NEFF from the files under DIR, in a compiler family's byte format.
    #[command(after_help = concat!("Example:\n  neffld pack tree/ -o model.neff --header-from original.neff\n\n", "Without --producer, the family follows the tree's own target (kelf json `target`): trn1 trees get 2.18, others 2.21.\nHeader fields that the tree's target cannot take (vnc_size) are refused.\nOnly regular files and directories are packed: a FIFO, socket or device is refused, and so is a\nsymbolic link unless --follow-symlinks.\n\n", "Exit status:\n  0  written\n  1  the header and the tree disagree\n  2  usage error, or a file could not be read or written"))]
    Pack {
        /// Directory holding the members (neff.json, kelf-*.json, sg*/...).
        dir: PathBuf,
        /// Output NEFF file.
        #[arg(short = 'o', long = "output")]
        out: PathBuf,
        /// Which compiler family's container format to write (default: from the tree's target).
        #[arg(long, value_enum)]
        producer: Option<ProducerArg>,
        /// Copy the header fields (name, uuid, version, feature bits, LNC) from this NEFF.
        #[arg(long, value_name = "NEFF")]
        header_from: Option<PathBuf>,
        /// Model name stored in the header.
        #[arg(long)]
        name: Option<String>,
        /// Header uuid as 32 hex digits (dashes allowed).
        #[arg(long)]
        uuid: Option<String>,
        /// Set a header field: name, uuid, version (MAJOR.MINOR), feature_bits,
        /// vnc_size, build_version, requested_tpb_count (repeatable).
        #[arg(long = "header", value_name = "KEY=VALUE")]
        header: Vec<String>,
        /// Pack what symbolic links in the tree point to (refused otherwise).
        #[arg(long)]
        follow_symlinks: bool,
        /// Machine-readable output (docs/cli.md).
        #[arg(long)]
        json: bool,
    },
}

/// Container families the writer reproduces.
#[derive(Clone, Copy, ValueEnum)]
enum ProducerArg {
    /// 2.21 and later (trn2): sorted ustar, neff.json last, word-swapped MD5.
    #[value(name = "2.21")]
    V2_21,
    /// 2.18 (trn1): sorted ustar, word-swapped MD5.
    #[value(name = "2.18")]
    V2_18,
    /// 2.0.99229 (trn1): a PAX header before every member, plain MD5.
    #[value(name = "2.0.99229", alias = "2.0")]
    V2_0_99229,
    /// pkg_version 1: raw tar and SHA-256.
    #[value(name = "pkg1")]
    Pkg1,
}

impl ProducerArg {
    fn producer(self) -> neffld::neff::Producer {
        use neffld::neff::Producer;
        match self {
            ProducerArg::V2_21 => Producer::V2_21,
            ProducerArg::V2_18 => Producer::V2_18,
            ProducerArg::V2_0_99229 => Producer::V2_0_99229,
            ProducerArg::Pkg1 => Producer::Pkg1,
        }
    }
}

/// A command line clap refuses: with `--json` anywhere on it, the refusal is
/// a JSON document too, so a script always has one to read.
fn usage_error(e: clap::Error, args: &[OsString]) -> ExitCode {
    use clap::error::ErrorKind;
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // `--json=true` asks for JSON too (clap refuses the value: the flag
    // takes none), and gets it.
    let wants_json = args
        .iter()
        .any(|a| a == "--json" || a.starts_with("--json="));
    if wants_json && !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let known = [
            "inspect", "verify", "load", "plan", "compare", "extract", "pack",
        ];
        let command = args
            .iter()
            .find_map(|a| known.iter().copied().find(|k| k == a))
            .unwrap_or("neffld");
        let msg = e
            .kind()
            .as_str()
            .unwrap_or("invalid command line")
            .to_string();
        // clap's message up to its usage section, on one line: "the
        // following required arguments were not provided: <FILE>".
        let detail = e.render().to_string();
        let said: Vec<&str> = detail
            .lines()
            .map(str::trim)
            .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
            .collect();
        let said = said.join(" ");
        let first = if said.is_empty() { msg } else { said };
        report_failure(
            command,
            &Failure::usage(first.trim_start_matches("error: ").to_string()),
            true,
            Style::new(ColorChoice::Never, false),
        );
        return ExitCode::from(2);
    }
    // Help, the version, or clap's own message on stderr, and its status.
    let _ = e.print();
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

pub use plan_cmd::{
    command_deployment as plan_command, failure_of as plan_failure, output as plan_output,
};
pub use plan_outputs::PlanFiles;

/// The exit status an [`ExitCode`] of [`main`] stands for.
pub fn exit_status(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|&c| ExitCode::from(c) == code)
        .unwrap_or(1)
}

/// The whole command on `args` (the program name first), as the `neffld`
/// binary runs it.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    let matches = match Cli::command().try_get_matches_from(&args) {
        Ok(m) => m,
        Err(e) => return usage_error(e, &args),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => return usage_error(e, &args),
    };
    let out = Style::new(cli.color, false);
    let err = Style::new(cli.color, true);
    let (name, as_json, result) = match cli.command {
        Command::Inspect {
            file,
            json,
            max_inflated,
        } => (
            "inspect",
            json,
            container_cmds::inspect(&file, json, max_inflated, err),
        ),
        Command::Verify {
            files,
            ignore_hash,
            json,
            max_inflated,
        } => (
            "verify",
            json,
            container_cmds::verify(&files, json, max_inflated, ignore_hash, out),
        ),
        Command::Load(args) => ("load", args.json, load_cmd::load(&args, err)),
        Command::Plan(args) => (
            "plan",
            args.json,
            plan_cmd::run(&args, matches.subcommand_matches("plan"), out, err),
        ),
        Command::Compare {
            file,
            capture,
            json,
        } => ("compare", json, compare_cmd::compare(&file, &capture, json)),
        Command::Extract {
            file,
            dir,
            max_inflated,
            json,
        } => (
            "extract",
            json,
            container_cmds::extract(&file, &dir, max_inflated, json, err),
        ),
        Command::Pack {
            dir,
            out,
            producer,
            header_from,
            name,
            uuid,
            header,
            follow_symlinks,
            json,
        } => {
            let opts = container_cmds::PackOptions {
                producer: producer.map(ProducerArg::producer),
                header_from: header_from.as_deref(),
                name: name.as_deref(),
                uuid: uuid.as_deref(),
                fields: &header,
                follow_symlinks,
                json,
            };
            ("pack", json, container_cmds::pack(&dir, &out, &opts, err))
        }
    };
    match result {
        Ok(code) => code,
        Err(f) => {
            report_failure(name, &f, as_json, err);
            f.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument of every subcommand says what it is for, and every
    /// subcommand's help ends with an example and its exit codes.
    #[test]
    fn help_describes_every_argument() {
        let mut cli = Cli::command();
        cli.build();
        for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
            for arg in sub.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                assert!(
                    arg.get_help().is_some_and(|h| !h.to_string().is_empty()),
                    "{} {id} has no help text",
                    sub.get_name()
                );
            }
            let after = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                after.contains("Example:") && after.contains("Exit status:"),
                "{}",
                sub.get_name()
            );
        }
    }
}
