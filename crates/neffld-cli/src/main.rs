//! The `neffld` command: inspect, verify, extract, pack (and, as the
//! pipeline grows, load) NEFF files.

mod container_cmds;
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
    Load {
        file: PathBuf,
        /// Device architecture (default: the NEFF's own target).
        #[arg(long, value_parser = parse_arch)]
        arch: Option<neffld::Arch>,
        /// Logical core to load on (-1: the first free one).
        #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
        start_core: i32,
        /// Simulated device: `sim` keeps every byte, `null` only a checksum.
        #[arg(long, value_enum, default_value_t = DeviceArg::Sim)]
        device: DeviceArg,
        /// Logical-core size (default: the architecture's).
        #[arg(long)]
        lnc: Option<u32>,
        /// Validate the staged model (every address points into an allocation).
        #[arg(long)]
        check: bool,
        /// Verify the payload hash (NEURON_RT_VALIDATE_HASH).
        #[arg(long)]
        validate_hash: bool,
        /// Accept a NEFF built for another architecture (NEURON_RT_ALLOW_LEGACY_NEFF).
        #[arg(long)]
        allow_legacy_neff: bool,
        #[arg(long)]
        max_inflated: Option<u64>,
        /// Machine-readable output (stable schema, see docs/cli.md).
        #[arg(long)]
        json: bool,
        /// Write an HTML memory map (one SVG per core) to this file.
        #[arg(long)]
        map: Option<PathBuf>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        /// Leave the timing table out of the human output (stable for diffs).
        #[arg(long)]
        no_timings: bool,
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

fn parse_arch(s: &str) -> Result<neffld::Arch, String> {
    s.parse()
}

#[derive(Clone, Copy, ValueEnum)]
enum DeviceArg {
    Sim,
    Null,
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
        Command::Load {
            file,
            arch,
            start_core,
            device,
            lnc,
            check,
            validate_hash,
            allow_legacy_neff,
            max_inflated,
            json,
            map,
            quiet,
            no_timings,
        } => load_cmd::load(load_cmd::LoadArgs {
            file,
            arch,
            start_core,
            device: match device {
                DeviceArg::Sim => neffld::config::DeviceKind::Sim,
                DeviceArg::Null => neffld::config::DeviceKind::Null,
            },
            lnc,
            check,
            validate_hash,
            allow_legacy_neff,
            max_inflated,
            json,
            map,
            quiet,
            no_timings,
        }),
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
