//! What the placements of one further planned load cost: the requests one
//! load of a NEFF makes (recorded as staging makes them, on a trn2.3xlarge
//! at LNC 2, logical core 0), placed again and again by the allocator's
//! first fit, as every further load of a plan places them. Placing them is
//! the runtime's own work for every load, so no plan of many loads can
//! cost less a load than this (docs/performance.md, "What a further load
//! costs").
//!
//! Only the allocator is timed: examples are built with the `testkit`
//! feature, whose books keep an address index the shipped build does not.
//! Then, untimed, it says how nearly the loads' placements repeat: whether a
//! run of identical loads could be planned as one load shifted.
//!
//! ```text
//! plan_floor FILE [LOADS]    LOADS: 10000 by default
//! ```

use std::collections::HashMap;
use std::time::Instant;

use neffld::api::Runtime;
use neffld::config::DeviceKind;
use neffld::device::alloc::HbmAllocator;
use neffld::device::{tape, StartTaken};
use neffld::instance::Instance;
use neffld::settings::{Asked, Settings};

fn fail(what: &str) -> ! {
    eprintln!("plan_floor: {what}");
    eprintln!("usage: plan_floor FILE [LOADS]");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = args.first() else {
        fail("no FILE")
    };
    let loads: u32 = match args.get(1) {
        None => 10_000,
        Some(n) => n
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| fail("LOADS is not a positive number")),
    };
    let bytes = std::fs::read(file).unwrap_or_else(|e| fail(&format!("{file}: {e}")));

    // A runtime on null devices that stages every load (one that replays
    // keeps its own recording, which an outer one does not see).
    let asked = Asked {
        instance: Some(Instance::named("trn2.3xlarge").unwrap_or_else(|e| fail(&e))),
        device: Some(DeviceKind::Null),
        ..Asked::default()
    };
    let settings = Settings::resolve(&asked, |k| std::env::var(k).ok())
        .unwrap_or_else(|e| fail(&e.to_string()));
    let mut config = settings.config().clone();
    config.loader.retain_images = false;
    config.loader.replay = Some(false);
    let rt = Runtime::new(config).unwrap_or_else(|e| fail(&e.to_string()));
    let (loaded, taped) = tape::recording(|| rt.load(&bytes, Some(0)));
    loaded.unwrap_or_else(|e| fail(&e.to_string()));
    let geometry = rt
        .placement_of_vnc(0)
        .map(|(_, d, _)| d.geometry().clone())
        .unwrap_or_else(|e| fail(&e.to_string()));
    let reqs: Vec<(u32, &_)> = taped
        .iter()
        .map(|t| {
            let channel = geometry.hbm_of(t.req.core);
            (channel.unwrap_or_else(|e| fail(&e.to_string())), &t.req)
        })
        .collect();

    let mut alloc = HbmAllocator::started(&geometry, StartTaken::default());
    let started = Instant::now();
    for _ in 0..loads {
        for &(channel, r) in &reqs {
            if alloc.alloc(channel, r.size, r.align, r.place).is_err() {
                fail("the device is full before the last load");
            }
        }
    }
    let us = started.elapsed().as_secs_f64() * 1e6 / f64::from(loads);
    println!(
        "{file}: {} requests a load; placing them {loads} times: {us:.2} us a load",
        reqs.len()
    );

    // Untimed: where each load's requests land. A run of identical loads
    // could be planned as one record only if each load landed where the
    // one before it did, shifted; this says how far from that first fit is.
    let mut alloc = HbmAllocator::started(&geometry, StartTaken::default());
    let placed: Vec<Vec<u64>> = (0..loads)
        .map(|_| {
            reqs.iter()
                .map(
                    |&(channel, r)| match alloc.alloc(channel, r.size, r.align, r.place) {
                        Ok(b) => b.pa,
                        Err(_) => fail("the device is full before the last load"),
                    },
                )
                .collect()
        })
        .collect();
    println!("{}", period(&placed));
}

/// The shortest period after which most loads land where the load that
/// many before them landed, each request moved by a shift of its own
/// (counted on the middle half of the loads, past the start and short of a
/// full device): how many loads do, and how many distinct shifts that
/// takes. One shift and every load would be a load shifted; more are
/// fronts moving at their own speeds.
fn period(placed: &[Vec<u64>]) -> String {
    let (from, to) = (placed.len() / 4, placed.len() * 3 / 4);
    let longest = ((to - from) / 2).min(256);
    for p in 1..=longest {
        let mut seen: HashMap<Vec<i128>, usize> = HashMap::new();
        for k in from..to - p {
            let shifts = placed[k + p]
                .iter()
                .zip(&placed[k])
                .map(|(&a, &b)| i128::from(a) - i128::from(b))
                .collect();
            *seen.entry(shifts).or_default() += 1;
        }
        let Some((shifts, &repeats)) = seen.iter().max_by_key(|(_, &n)| n) else {
            continue;
        };
        let pairs = to - p - from;
        if repeats * 10 >= pairs * 9 {
            let mut distinct = shifts.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let mib: Vec<String> = distinct
                .iter()
                .map(|&d| format!("{:.2} MiB", d as f64 / 1048576.0))
                .collect();
            return format!(
                "every {p} loads: {repeats} of {pairs} loads land as the load {p} before, moved by {} shift(s) ({}); the other {} do not",
                distinct.len(),
                mib.join(", "),
                pairs - repeats
            );
        }
    }
    format!("no period up to {longest} loads repeats nine placements in ten")
}
