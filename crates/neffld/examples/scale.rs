//! Wall time per stage and peak RSS of one load, one process per measurement
//! (peak RSS is the process's `VmHWM`, so each measurement needs its own
//! process). Used by `scripts/perf.sh`; see docs/performance.md.
//!
//! ```text
//! scale gen FILE TOTAL_MIB SUBGRAPHS      write a NEFF with TOTAL_MIB of weights
//! scale gen-random FILE TOTAL_MIB SUBGRAPHS   the same with incompressible weights
//! scale load FILE null|sim SUBGRAPHS      a load as `neffld load` reads the file, + unload, per-stage times, VmHWM
//! scale stage-rss FILE                    RSS added by staging a NEFF on SimDevice (LNC 2)
//! ```

use std::sync::Arc;
use std::time::Instant;

use neffld::api::Runtime;
use neffld::config::{Loader, RuntimeConfig, Topology};
use neffld::container::{self, MappedFile, OpenOptions};
use neffld::device::{Device, Geometry, NullDevice, SimDevice};
use neffld::ids::{HModel, PCore};
use neffld::parse::{self, ParseOptions};
use neffld::stage::{self, Cores, ScratchpadMode, StageOptions};
use neffld::Arch;
use neffld_testkit::{lnc_writer, Synth};

/// A field of /proc/self/status, in bytes.
fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |k| k << 10)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

fn usage() -> ! {
    eprintln!(
        "usage: scale gen|gen-random FILE TOTAL_MIB SUBGRAPHS | load FILE null|sim SUBGRAPHS | stage-rss FILE"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some(mode @ ("gen" | "gen-random")) if args.len() == 4 => {
            let total: u64 = args[2].parse().unwrap_or_else(|_| usage());
            let sg: u32 = args[3].parse().unwrap_or_else(|_| usage());
            let per = (total << 20) / u64::from(sg) / 4 * 4;
            let mut synth = Synth::cayman_weights(sg as usize, per);
            if mode == "gen-random" {
                // Incompressible weights: the file is as large as the payload.
                let noise = neffld_testkit::noise(per as usize);
                let npy = neffld_testkit::npy_v1("<f4", &[per / 4], &noise);
                for g in 0..sg {
                    synth.set(&format!("sg{g:02}/value_sg0000_w_CRSM.npy"), npy.clone());
                }
            }
            let bytes = lnc_writer(sg).write(&synth.member_list());
            std::fs::write(&args[1], &bytes).expect("write");
            println!(
                "wrote {} ({} bytes, {sg} subgraphs of {per} weight bytes)",
                args[1],
                bytes.len()
            );
        }
        Some("load") if args.len() == 4 => load(
            &args[1],
            &args[2],
            args[3].parse().unwrap_or_else(|_| usage()),
        ),
        Some("stage-rss") if args.len() == 2 => stage_rss(&args[1]),
        _ => usage(),
    }
}

/// Loads as `neffld load` does: a file whose payload is large enough to
/// stream is mapped and released behind the decoder, a smaller one is read.
fn load(path: &str, kind: &str, sg: u32) {
    let t = Instant::now();
    let file = std::fs::File::open(path).expect("open");
    let len = file.metadata().expect("metadata").len();
    let mapped = len >= container::HEADER_LEN as u64 + container::STREAM_MIN;
    let (map, read_bytes) = if mapped {
        (Some(MappedFile::map(&file).expect("map")), Vec::new())
    } else {
        (None, std::fs::read(path).expect("read"))
    };
    let bytes = map.as_ref().map_or(&read_bytes[..], |m| m.bytes());
    let read = t.elapsed();
    let geometry = Geometry::custom(Arch::Cayman, sg, sg, 8 << 30).expect("geometry");
    let device: Arc<Device> = match kind {
        "null" => Arc::new(NullDevice::new(geometry)),
        "sim" => Arc::new(SimDevice::new(geometry)),
        _ => usage(),
    };
    // One load per process, as in the CLI: the parse cache need not
    // fingerprint the whole file (which would read every released page back).
    let config = RuntimeConfig {
        topology: Topology {
            lnc: Some(sg),
            ..Default::default()
        },
        loader: Loader {
            max_inflated: Some(64 << 30),
            one_load_at_a_time: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let opts = OpenOptions {
        inflate_limit: Some(64 << 30),
        ..OpenOptions::default()
    };
    let rt = Runtime::with_device(config, device).expect("runtime");
    let t = Instant::now();
    let neff = match &map {
        Some(m) => container::open_mapped(m, &opts),
        None => container::open(bytes, &opts),
    }
    .expect("open");
    let s1 = t.elapsed();
    let inflated = neff.archive().decoded_len() as u64;
    let m = rt.load_opened(bytes, neff, None).expect("load");
    let total = t.elapsed();
    let timings = rt.with_model(&m, |lm| lm.timings).expect("model");
    let t = Instant::now();
    rt.unload(&m).expect("unload");
    let unload = t.elapsed();
    let hwm = status_kib("VmHWM");
    drop(rt);
    let budget = (1.1 * len.max(inflated) as f64) as u64 + (64 << 20);
    println!(
        "{kind}: read {:.1} ms | guard {:.1} | S1 {:.1} | S2+S3 {:.1} | cache {:.1} | S4 {:.1} (S5 {:.1}) | load {:.1} | unload {:.1} ms",
        read.as_secs_f64() * 1e3,
        timings.guard.as_secs_f64() * 1e3,
        s1.as_secs_f64() * 1e3,
        timings.parse.as_secs_f64() * 1e3,
        timings.cache_wait.as_secs_f64() * 1e3,
        timings.stage.as_secs_f64() * 1e3,
        timings.relocate.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
        unload.as_secs_f64() * 1e3,
    );
    println!(
        "{kind}: file {:.1} MiB ({}), inflated {:.1} MiB, peak RSS {:.1} MiB, budget 1.1×max(file, inflated)+64 MiB = {:.1} MiB, ratio {:.3}",
        mib(len),
        if mapped { "mapped" } else { "read" },
        mib(inflated),
        mib(hwm),
        mib(budget),
        hwm as f64 / budget as f64
    );
}

fn stage_rss(path: &str) {
    let bytes = std::fs::read(path).expect("read");
    let neff = container::open(&bytes, &OpenOptions::default()).expect("open");
    let popts = ParseOptions {
        chip: neffld::arch::Chip::of(Arch::Cayman),
        allow_legacy_neff: false,
        runtime_lnc: 2,
    };
    let model = parse::parse(&neff, &popts).expect("parse");
    let dev = Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman)));
    let shared: Arc<Device> = dev.clone();
    let cores = Arc::new(Cores::new(8, ScratchpadMode::default()));
    let rss_before = status_kib("VmRSS");
    // Reset the peak to the current RSS (Linux >= 4.0), so the peak below is
    // the one staging reached.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let t = Instant::now();
    let images = stage::stage(
        &shared,
        &cores,
        &model.kbins,
        neff.archive(),
        &[PCore(0), PCore(1)],
        HModel(1),
        StageOptions {
            arch: Arch::Cayman,
            line: neffld::line::Captured::V2_30,
            fanout_min_bytes: 0,
            global_id: 0,
        },
    )
    .expect("stage");
    let took = t.elapsed();
    let hwm = status_kib("VmHWM");
    let stored = dev.stored_pages() as u64 * 4096;
    let added = hwm.saturating_sub(rss_before);
    println!(
        "stage-rss: staged in {:.2} ms; RSS before {:.2} MiB, peak during staging {:.2} MiB (peak reset: {reset}); added {:.2} MiB, of which stored device pages (weights, images, rings, tables) {:.2} MiB; beyond them {:.2} MiB (goal <= 32)",
        took.as_secs_f64() * 1e3,
        mib(rss_before),
        mib(hwm),
        mib(added),
        mib(stored),
        mib(added.saturating_sub(stored))
    );
    drop(images); // unstages
}
