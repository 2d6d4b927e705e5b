//! The load benchmark: every row of docs/performance.md, measured in one run.
//!
//! Cases run round-robin (each round runs every case once, in a rotating
//! order) so drift of a shared machine hits them all alike; the table shows
//! medians and the interquartile spread. Run with `cargo bench -p neffld`;
//! `NEFFLD_BENCH_ROUNDS` (default 21) and `NEFFLD_BENCH_ONLY` (a substring
//! of the case names) narrow it down.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use neffld::api::Runtime;
use neffld::config::{DeviceKind, Loader, RuntimeConfig, Topology};
use neffld::container::{self, OpenOptions, HEADER_LEN};
use neffld::device::{Device, Geometry, NullDevice, Observer, SimDevice, Storage, Write};
use neffld::ids::{HModel, PCore};
use neffld::parse::{self, ParseOptions};
use neffld::stage::{self, Cores, ScratchpadMode, StageOptions, DEFAULT_FANOUT_MIN_BYTES};
use neffld::Arch;
use neffld_testkit::{lnc_writer, Synth};

/// A device whose writes are timed by an observer.
///
/// Each call (a write, or a build's batch of writes) is timed on its own,
/// so each also pays for reading the clock once inside its window (about
/// 20 ns here, as much as the device's own work on a small write);
/// [`WriteClock::take`] subtracts that, measured by [`clock_cost`] in the
/// same run, so the figure is the copying and not the stopwatch.
struct Timed {
    dev: Arc<Device>,
    clock: Arc<WriteClock>,
}

impl Timed {
    fn new<S: Storage + 'static>(dev: Device<S>) -> Timed {
        let dev: Arc<Device> = Arc::new(dev);
        let clock = Arc::new(WriteClock::default());
        dev.observe(clock.clone());
        Timed { dev, clock }
    }
}

#[derive(Default)]
struct WriteClock {
    write_ns: AtomicU64,
    windows: AtomicU64,
    /// When set, a copy of every write's bytes, in order.
    recording: std::sync::Mutex<Option<Vec<Vec<u8>>>>,
}

impl WriteClock {
    /// Runs `f` and returns the bytes of every write it made, in order.
    fn record(&self, f: impl FnOnce()) -> Vec<Vec<u8>> {
        *self.recording.lock().unwrap() = Some(Vec::new());
        f();
        self.recording.lock().unwrap().take().unwrap_or_default()
    }

    /// Write time since the last call, less the clock's cost inside each
    /// timed window.
    fn take(&self) -> Duration {
        let clock = self.windows.swap(0, Ordering::Relaxed) * clock_cost();
        Duration::from_nanos(
            self.write_ns
                .swap(0, Ordering::Relaxed)
                .saturating_sub(clock),
        )
    }
}

impl Observer for WriteClock {
    fn written(&self, writes: &[Write<'_>], took: Duration) {
        self.write_ns
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        self.windows.fetch_add(1, Ordering::Relaxed);
        if let Some(rec) = self.recording.lock().unwrap().as_mut() {
            rec.extend(writes.iter().map(|w| w.data.to_vec()));
        }
    }
}

/// Nanoseconds an empty timed window measures: what reading the clock adds
/// to every window it times. The median of 51 batches of 10,000, taken once.
fn clock_cost() -> u64 {
    static COST: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *COST.get_or_init(|| {
        let mut batches: Vec<u64> = (0..51)
            .map(|_| {
                let total: u128 = (0..10_000)
                    .map(|_| Instant::now().elapsed().as_nanos())
                    .sum();
                (total / 10_000) as u64
            })
            .collect();
        batches.sort_unstable();
        batches[batches.len() / 2]
    })
}

type Sample = Vec<Duration>;

static NOTES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn note(s: String) {
    NOTES.lock().unwrap().push(s);
}

/// One case: a closure that runs once and reports one duration per row name.
struct Case {
    rows: Vec<String>,
    run: Box<dyn FnMut() -> Sample>,
    samples: Vec<Sample>,
}

fn case(rows: &[&str], run: impl FnMut() -> Sample + 'static) -> Case {
    Case {
        rows: rows.iter().map(|s| s.to_string()).collect(),
        run: Box::new(run),
        samples: Vec::new(),
    }
}

fn timed(mut f: impl FnMut()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

/// A fixture's path: under `NEFFLD_FIXTURES` when set, else the vendored fixtures.
fn fixture_path(name: &str) -> PathBuf {
    let dir = std::env::var("NEFFLD_FIXTURES").unwrap_or_else(|_| neffld_testkit::FIXTURES.into());
    Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(name)
}

fn fixture(name: &str) -> Vec<u8> {
    let p = fixture_path(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The decoder alone: the payload inflated into a Vec reserved at the exact
/// inflated size (the decoder's best case; the loader has to guess).
fn inflate_floor(window: &[u8], inflated: usize) -> usize {
    let mut out = Vec::with_capacity(inflated);
    flate2::read::GzDecoder::new(window)
        .read_to_end(&mut out)
        .expect("inflate");
    std::hint::black_box(&out);
    out.len()
}

fn popts(arch: Arch, lnc: u32) -> ParseOptions {
    ParseOptions {
        chip: neffld::arch::Chip::of(arch),
        allow_legacy_neff: false,
        runtime_lnc: lnc,
    }
}

fn config(device: DeviceKind, lnc: Option<u32>) -> RuntimeConfig {
    RuntimeConfig {
        topology: Topology {
            lnc,
            ..Default::default()
        },
        loader: Loader {
            device,
            max_inflated: Some(8 << 30),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A parsed NEFF staged directly (S4, with S5 inside), on a timed device.
struct Staging {
    neff: container::Neff,
    model: parse::ParsedModel,
    pcores: Vec<PCore>,
}

impl Staging {
    fn new(bytes: &[u8], lnc: u32) -> Staging {
        let opts = OpenOptions {
            inflate_limit: Some(8 << 30),
            ..OpenOptions::default()
        };
        let neff = container::open(bytes, &opts).expect("open");
        let model = parse::parse(&neff, &popts(Arch::Cayman, lnc)).expect("parse");
        let pcores = (0..lnc).map(PCore).collect();
        Staging {
            neff,
            model,
            pcores,
        }
    }

    /// Stages and unstages once; returns (stage time, relocation time,
    /// time inside device writes).
    fn run(
        &self,
        dev: &Timed,
        cores: &Arc<Cores>,
        fanout_min_bytes: u64,
    ) -> (Duration, Duration, Duration) {
        let sopts = StageOptions {
            arch: Arch::Cayman,
            line: neffld::line::Captured::V2_30,
            fanout_min_bytes,
            global_id: 0,
        };
        dev.clock.take();
        let t = Instant::now();
        let images = stage::stage(
            &dev.dev,
            cores,
            &self.model.kbins,
            self.neff.archive(),
            &self.pcores,
            HModel(1),
            sopts,
        )
        .expect("stage");
        let elapsed = t.elapsed();
        let write = dev.clock.take();
        let reloc = images.iter().map(|i| i.reloc_time).sum();
        drop(images); // unstages
        (elapsed, reloc, write)
    }
}

/// Copies `src` into a warm buffer of the same size: the floor of any
/// staging copy of the same bytes.
fn memcpy_floor(src: &[u8], dst: &mut [u8]) -> Duration {
    let t = Instant::now();
    dst.copy_from_slice(std::hint::black_box(src));
    std::hint::black_box(&dst);
    t.elapsed()
}

/// Copies each of `pieces` into a warm buffer of its size: the floor of
/// staging copies that arrive as that many separate writes, since each copy
/// starts a new stream that the caches and prefetchers meet cold.
fn piecewise_floor(pieces: &[Vec<u8>], dst: &mut [Vec<u8>]) -> Duration {
    let t = Instant::now();
    for (d, s) in dst.iter_mut().zip(pieces) {
        d.copy_from_slice(std::hint::black_box(s));
    }
    std::hint::black_box(&dst);
    t.elapsed()
}

fn python_baseline(script: &Path, file: &Path) -> Option<Duration> {
    let out = Command::new("python3")
        .arg(script)
        .arg(file)
        .arg("3")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let mut v: Vec<f64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    // The first iteration of a fresh interpreter is a warm-up.
    v.get(v.len() / 2).map(|&s| Duration::from_secs_f64(s))
}

fn load_unload(rt: &Runtime, bytes: &[u8], vnc: Option<u32>) -> Duration {
    timed(|| {
        let m = rt.load(bytes, vnc).expect("load");
        rt.unload(&m).expect("unload");
    })
}

fn fixture_cases(cases: &mut Vec<Case>, name: &str, short: &str) {
    let bytes = Arc::new(fixture(name));
    let header = container::NeffHeader::parse(&bytes).expect("header");
    let window: Arc<Vec<u8>> =
        Arc::new(bytes[HEADER_LEN..HEADER_LEN + header.data_size as usize].to_vec());

    {
        let bytes = bytes.clone();
        cases.push(case(&[&format!("{short} S1 container::open")], move || {
            vec![timed(|| {
                std::hint::black_box(container::open(&bytes, &OpenOptions::default()).unwrap());
            })]
        }));
    }
    {
        let neff = container::open(&bytes, &OpenOptions::default()).unwrap();
        cases.push(case(&[&format!("{short} S2+S3 parse")], move || {
            vec![timed(|| {
                std::hint::black_box(parse::parse(&neff, &popts(Arch::Cayman, 2)).unwrap());
            })]
        }));
    }
    {
        let st = Staging::new(&bytes, 2);
        let dev = Timed::new(SimDevice::new(Geometry::for_arch(Arch::Cayman)));
        let cores = Arc::new(Cores::new(8, ScratchpadMode::default()));
        let pieces = dev.clock.record(|| {
            st.run(&dev, &cores, DEFAULT_FANOUT_MIN_BYTES);
        });
        let copied: usize = pieces.iter().map(Vec::len).sum();
        note(format!(
            "{short}: staging writes {copied} bytes in {} writes; device-write times exclude \
             the clock's own {} ns per timed call",
            pieces.len(),
            clock_cost()
        ));
        let src = vec![7u8; copied];
        let mut dst = vec![0u8; copied];
        let mut piece_dst: Vec<Vec<u8>> = pieces.iter().map(|p| vec![0u8; p.len()]).collect();
        cases.push(case(
            &[
                &format!("{short} S4 stage (SimDevice, incl. S5)"),
                &format!("{short} S5 relocate (inside S4)"),
                &format!("{short} S4 device writes (SimDevice)"),
                &format!("{short} memcpy floor of the staged bytes"),
                &format!("{short} memcpy floor of the staged writes, piece by piece"),
            ],
            move || {
                let (s, r, w) = st.run(&dev, &cores, DEFAULT_FANOUT_MIN_BYTES);
                vec![
                    s,
                    r,
                    w,
                    memcpy_floor(&src, &mut dst),
                    piecewise_floor(&pieces, &mut piece_dst),
                ]
            },
        ));
    }
    {
        let window = window.clone();
        let inflated = container::open(&bytes, &OpenOptions::default())
            .unwrap()
            .archive()
            .decoded_len();
        let w2 = window.clone();
        cases.push(case(
            &[&format!("{short} zlib-rs GzDecoder alone")],
            move || {
                vec![timed(|| {
                    inflate_floor(&w2, inflated);
                })]
            },
        ));
        cases.push(case(
            &[&format!("{short} inflate floor (loader's decoder)")],
            move || {
                vec![timed(|| {
                    let out = container::gzip::inflate_payload(&window, 1 << 33).expect("inflate");
                    std::hint::black_box(&out);
                })]
            },
        ));
    }
    for (kind, label) in [
        (DeviceKind::Null, "NullDevice"),
        (DeviceKind::Sim, "SimDevice"),
    ] {
        let rt = Runtime::new(config(kind, None)).unwrap();
        let bytes = bytes.clone();
        cases.push(case(
            &[&format!("{short} load+unload ({label})")],
            move || vec![load_unload(&rt, &bytes, None)],
        ));
    }
    {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/py_baseline.py");
        let file = fixture_path(name);
        cases.push(case(&[&format!("{short} Python baseline")], move || {
            vec![python_baseline(&script, &file).unwrap_or_default()]
        }));
    }
    for (parallel, retain, label) in [
        (true, 0, "8 concurrent"),
        (false, 0, "8 sequential"),
        (false, 1, "8 sequential retained"),
    ] {
        let rt = Arc::new(
            Runtime::new({
                let mut c = config(DeviceKind::Sim, None);
                c.loader.cache_retain = retain;
                c
            })
            .unwrap(),
        );
        let bytes = bytes.clone();
        cases.push(case(
            &[&format!("{short} {label} loads (SimDevice)")],
            move || {
                vec![timed(|| {
                    if parallel {
                        std::thread::scope(|s| {
                            for i in 0..8 {
                                let (rt, bytes) = (&rt, &bytes);
                                s.spawn(move || {
                                    let m = rt.load(bytes, Some(i % 4)).expect("load");
                                    rt.unload(&m).expect("unload");
                                });
                            }
                        });
                    } else {
                        for i in 0..8 {
                            let m = rt.load(&bytes, Some(i % 4)).expect("load");
                            rt.unload(&m).expect("unload");
                        }
                    }
                })]
            },
        ));
    }
}

/// The fan-out case: 8 subgraphs of 8 MiB weights each, staged with one
/// thread per subgraph and with one thread, on both devices.
fn fanout_cases(cases: &mut Vec<Case>) {
    const SG: u32 = 8;
    const W: u64 = 8 << 20;
    let bytes = lnc_writer(SG).write(&Synth::cayman_weights(SG as usize, W).member_list());
    let st = Arc::new(Staging::new(&bytes, SG));
    let geometry = Geometry::custom(Arch::Cayman, SG, 4, 24 << 30).unwrap();
    let src = Arc::new(vec![7u8; (SG as u64 * W) as usize]);
    for (kind, label) in [("sim", "SimDevice"), ("null", "NullDevice")] {
        for parallel in [true, false] {
            let st = st.clone();
            let cores = Arc::new(Cores::new(SG, ScratchpadMode::default()));
            let (mode, fanout_min) = if parallel {
                ("fan-out", 0)
            } else {
                ("sequential", u64::MAX)
            };
            let rows = [
                format!("8sg×8MiB S4 {mode} ({label})"),
                format!("8sg×8MiB S4 {mode} device writes ({label})"),
            ];
            let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
            if kind == "sim" {
                let dev = Timed::new(SimDevice::new(geometry.clone()));
                cases.push(case(&rows, move || {
                    let (s, _, w) = st.run(&dev, &cores, fanout_min);
                    vec![s, w]
                }));
            } else {
                let dev = Timed::new(NullDevice::new(geometry.clone()));
                cases.push(case(&rows, move || {
                    let (s, _, w) = st.run(&dev, &cores, fanout_min);
                    vec![s, w]
                }));
            }
        }
    }
    let mut dst = vec![0u8; src.len()];
    cases.push(case(&["8sg×8MiB memcpy floor of the 64 MiB"], move || {
        vec![memcpy_floor(&src, &mut dst)]
    }));
}

fn quartiles(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    (q(0.25), q(0.5), q(0.75))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    // `cargo bench` passes `--bench`; anything else is ignored.
    let rounds: usize = std::env::var("NEFFLD_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(21);
    let only = std::env::var("NEFFLD_BENCH_ONLY").ok();
    let mut cases = Vec::new();
    fixture_cases(&mut cases, "matmul_small.neff", "small");
    fixture_cases(&mut cases, "matmul_large.neff", "large");
    fanout_cases(&mut cases);
    if let Some(only) = &only {
        cases.retain(|c| c.rows.iter().any(|r| r.contains(only.as_str())));
    }
    let warmup = 2;
    let started = Instant::now();
    for round in 0..rounds + warmup {
        let n = cases.len();
        for i in 0..n {
            let c = &mut cases[(i + round) % n];
            let s = (c.run)();
            if round >= warmup {
                c.samples.push(s);
            }
        }
    }
    let mut medians = std::collections::BTreeMap::new();
    println!(
        "neffld load benchmark: {rounds} round-robin rounds after {warmup} warm-ups, {:.1} s\n",
        started.elapsed().as_secs_f64()
    );
    println!("| row | median ms | IQR ms | IQR/median |");
    println!("|---|---:|---:|---:|");
    for c in &cases {
        for (k, row) in c.rows.iter().enumerate() {
            let (q1, m, q3) = quartiles(c.samples.iter().map(|s| s[k]).collect());
            medians.insert(row.clone(), m);
            println!(
                "| {row} | {:.3} | {:.3}–{:.3} | {:.0}% |",
                ms(m),
                ms(q1),
                ms(q3),
                if m.is_zero() {
                    0.0
                } else {
                    (ms(q3) - ms(q1)) / ms(m) * 100.0
                }
            );
        }
    }
    for n in NOTES.lock().unwrap().iter() {
        println!("\n{n}");
    }
    let get = |k: &str| medians.get(k).copied();
    // Rows of one case were measured in the same rounds: their ratio is the
    // median of the per-round ratios, which cancels what a round shares (the
    // caches the previous case left); other ratios divide medians.
    let paired = |a: &str, b: &str| {
        let c = cases.iter().find(|c| c.rows.iter().any(|r| r == a))?;
        let (ia, ib) = (
            c.rows.iter().position(|r| r == a)?,
            c.rows.iter().position(|r| r == b)?,
        );
        let mut r: Vec<f64> = c
            .samples
            .iter()
            .filter(|s| !s[ib].is_zero())
            .map(|s| s[ia].as_secs_f64() / s[ib].as_secs_f64())
            .collect();
        r.sort_by(f64::total_cmp);
        r.get(r.len() / 2).copied()
    };
    let ratio = |a: &str, b: &str| match (paired(a, b), get(a), get(b)) {
        (Some(r), _, _) => format!("{r:.2}"),
        (None, Some(a), Some(b)) if !b.is_zero() => {
            format!("{:.2}", a.as_secs_f64() / b.as_secs_f64())
        }
        _ => "—".into(),
    };
    println!("\n| ratio | small | large | goal |");
    println!("|---|---:|---:|---|");
    let both = |what: &str, a: &str, b: &str, goal: &str| {
        println!(
            "| {what} | {} | {} | {goal} |",
            ratio(&format!("small {a}"), &format!("small {b}")),
            ratio(&format!("large {a}"), &format!("large {b}")),
        );
    };
    both(
        "load (Null) ÷ inflate floor",
        "load+unload (NullDevice)",
        "inflate floor (loader's decoder)",
        "large ≤ 1.5",
    );
    both(
        "load (Sim) ÷ inflate floor",
        "load+unload (SimDevice)",
        "inflate floor (loader's decoder)",
        "large ≤ 1.5",
    );
    both(
        "Python ÷ load (Null)",
        "Python baseline",
        "load+unload (NullDevice)",
        "≥ 5",
    );
    both(
        "Python ÷ load (Sim)",
        "Python baseline",
        "load+unload (SimDevice)",
        "≥ 5",
    );
    both(
        "S1 ÷ inflate floor",
        "S1 container::open",
        "inflate floor (loader's decoder)",
        "—",
    );
    both(
        "S5 ÷ S1",
        "S5 relocate (inside S4)",
        "S1 container::open",
        "large ≤ 0.20",
    );
    both(
        "load (Null) ÷ S1",
        "load+unload (NullDevice)",
        "S1 container::open",
        "large ≤ 1.5",
    );
    both(
        "8 sequential ÷ 8 concurrent",
        "8 sequential loads (SimDevice)",
        "8 concurrent loads (SimDevice)",
        "> 1",
    );
    both(
        "8 sequential, parse retained ÷ 8 concurrent",
        "8 sequential retained loads (SimDevice)",
        "8 concurrent loads (SimDevice)",
        "≤ 1.3",
    );
    both(
        "memcpy floor ÷ device writes (copy efficiency)",
        "memcpy floor of the staged bytes",
        "S4 device writes (SimDevice)",
        "≥ 0.50",
    );
    both(
        "piecewise memcpy floor ÷ device writes",
        "memcpy floor of the staged writes, piece by piece",
        "S4 device writes (SimDevice)",
        "≥ 0.50",
    );
    let fan = |label: &str| {
        println!(
            "| 8sg×8MiB sequential ÷ fan-out ({label}) | — | {} | > 1 |",
            ratio(
                &format!("8sg×8MiB S4 sequential ({label})"),
                &format!("8sg×8MiB S4 fan-out ({label})")
            )
        );
    };
    fan("SimDevice");
    fan("NullDevice");
    println!(
        "| 8sg×8MiB memcpy floor ÷ sequential device writes (SimDevice) | — | {} | ≥ 0.50 |",
        ratio(
            "8sg×8MiB memcpy floor of the 64 MiB",
            "8sg×8MiB S4 sequential device writes (SimDevice)"
        )
    );
}
