//! The `neffld` command: inspect, verify, extract, pack (and, as the
//! pipeline grows, load) NEFF files.

mod compare_cmd;
mod container_cmds;
mod dump;
mod load_cmd;
mod map;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "neffld",
    version,
    about = "Inspect, verify, pack and load Neuron NEFF files without hardware"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the header, integrity and archive members of a NEFF.
    Inspect {
        file: PathBuf,
        /// Machine-readable output (stable schema, see docs/cli.md).
        #[arg(long)]
        json: bool,
        /// Ceiling on the inflated payload in bytes (default: 64x the payload, 256 MiB to 32 GiB).
        #[arg(long)]
        max_inflated: Option<u64>,
    },
    /// Run every gate (hash required, manifests, KBIN) on each file; one line per file; exit 0 only if all are sound.
    Verify {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        max_inflated: Option<u64>,
    },
    /// Load a NEFF on a simulated device (S0–S5), report where everything landed, unload.
    Load(load_cmd::LoadArgs),
    /// Load a NEFF as a profiler capture's runtime did and show, per core and
    /// engine, where neffld and the real runtime agree; exit 0 only if all do.
    Compare {
        file: PathBuf,
        /// The capture (NTFF version 4, 5 or 6).
        capture: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Write every archive member of a NEFF under DIR.
    Extract {
        file: PathBuf,
        /// Output directory.
        #[arg(short = 'o', long = "output")]
        dir: PathBuf,
        #[arg(long)]
        max_inflated: Option<u64>,
    },
    /// Build a NEFF from the files under DIR, in a compiler family's byte format.
    Pack {
        dir: PathBuf,
        /// Output NEFF file.
        #[arg(short = 'o', long = "output")]
        out: PathBuf,
        /// Which compiler family's container format to write.
        #[arg(long, value_enum, default_value_t = ProducerArg::V2_21)]
        producer: ProducerArg,
        /// Copy the header fields (name, uuid, version, feature bits, LNC) from this NEFF.
        #[arg(long)]
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect {
            file,
            json,
            max_inflated,
        } => container_cmds::inspect(&file, json, max_inflated),
        Command::Verify {
            files,
            json,
            max_inflated,
        } => container_cmds::verify(&files, json, max_inflated),
        Command::Load(args) => load_cmd::load(args),
        Command::Compare {
            file,
            capture,
            json,
        } => compare_cmd::compare(&file, &capture, json),
        Command::Extract {
            file,
            dir,
            max_inflated,
        } => container_cmds::extract(&file, &dir, max_inflated),
        Command::Pack {
            dir,
            out,
            producer,
            header_from,
            name,
            uuid,
            header,
        } => {
            let producer = match producer {
                ProducerArg::V2_21 => neffld::container::writer::Producer::V2_21,
                ProducerArg::V2_18 => neffld::container::writer::Producer::V2_18,
                ProducerArg::V2_0_99229 => neffld::container::writer::Producer::V2_0_99229,
                ProducerArg::Pkg1 => neffld::container::writer::Producer::Pkg1,
            };
            container_cmds::pack(
                &dir,
                &out,
                producer,
                header_from.as_deref(),
                name.as_deref(),
                uuid.as_deref(),
                &header,
            )
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("neffld: {e}");
            ExitCode::from(2)
        }
    }
}
