//! How the cross-rank check of `plan --world` grows: the comparison alone
//! (every rank's NEFF parsed before), for worlds of several sizes and
//! collectives per rank, one NEFF for every rank and one NEFF per rank.
//!
//! Each case is timed over `NEFFLD_BENCH_ROUNDS` (default 31) round-robin
//! rounds after two warm-ups; the table shows medians, the interquartile
//! spread and the time per rank × collective, whose constancy across
//! sizes is the linear growth. Run with `cargo bench -p neffld --bench
//! world`.

use std::time::{Duration, Instant};

use neffld::container;
use neffld::parse::{self, ParseOptions, ParsedModel};
use neffld::plan::world::compare_parsed;
use neffld::{Arch, RuntimeLine};
use neffld_testkit::collectives::{Step, World};

/// The collectives of one rank's NEFF: `k` repetitions of an all-reduce,
/// an all-gather, a reduce-scatter and a PTC2 all-reduce (4 per
/// repetition), and with one NEFF per rank a send and a receive around the
/// ring (6 per repetition).
fn world(ranks: u32, k: usize) -> World {
    let mix = [
        Step::AllReduce(256),
        Step::AllGather(64),
        Step::ReduceScatter(64),
        Step::Ptc2AllReduce { rows: 8, cols: 64 },
        Step::SendRecvRing(512),
    ];
    let steps: Vec<Step> = mix.iter().copied().cycle().take(mix.len() * k).collect();
    World::new(ranks).with_steps(&steps)
}

fn parse(bytes: &[u8]) -> ParsedModel {
    let neff = container::open(bytes, &Default::default()).expect("open");
    parse::parse(&neff, &ParseOptions::new(Arch::Cayman, 1)).expect("parse")
}

struct Case {
    name: String,
    ranks: u32,
    /// Collectives each rank's NEFF holds.
    collectives: usize,
    models: Vec<ParsedModel>,
    /// Which model each rank loads.
    of_rank: Vec<usize>,
    samples: Vec<Duration>,
}

impl Case {
    fn new(ranks: u32, k: usize, per_rank: bool) -> Case {
        let w = world(ranks, k);
        let (models, of_rank): (Vec<ParsedModel>, Vec<usize>) = if per_rank {
            (
                w.ranks().iter().map(|b| parse(b)).collect(),
                (0..ranks as usize).collect(),
            )
        } else {
            (vec![parse(&w.shared())], vec![0; ranks as usize])
        };
        let collectives = models[0].collectives().len();
        let form = if per_rank {
            "a NEFF per rank"
        } else {
            "one NEFF"
        };
        Case {
            name: format!("{ranks} ranks × {collectives} collectives, {form}"),
            ranks,
            collectives,
            models,
            of_rank,
            samples: Vec::new(),
        }
    }

    fn run(&mut self) -> Duration {
        let refs: Vec<&ParsedModel> = self.of_rank.iter().map(|&i| &self.models[i]).collect();
        let t = Instant::now();
        let found = compare_parsed(&refs, self.ranks, RuntimeLine::NEWEST);
        let d = t.elapsed();
        assert!(found.is_empty(), "{}: {:?}", self.name, found[0].what);
        d
    }
}

fn quartiles(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    (q(0.25), q(0.5), q(0.75))
}

fn main() {
    let rounds: usize = std::env::var("NEFFLD_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(31);
    let mut cases = Vec::new();
    for per_rank in [false, true] {
        for (ranks, k) in [(64, 1), (256, 1), (64, 4), (256, 4)] {
            cases.push(Case::new(ranks, k, per_rank));
        }
    }
    let warmup = 2;
    for round in 0..rounds + warmup {
        let n = cases.len();
        for i in 0..n {
            let c = &mut cases[(i + round) % n];
            let d = c.run();
            if round >= warmup {
                c.samples.push(d);
            }
        }
    }
    println!(
        "plan --world's cross-rank check: {rounds} round-robin rounds after {warmup} warm-ups\n"
    );
    println!("| case | median µs | IQR µs | ns per rank × collective |");
    println!("|---|---:|---:|---:|");
    for c in &cases {
        let (q1, m, q3) = quartiles(c.samples.clone());
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let per = m.as_secs_f64() * 1e9 / (f64::from(c.ranks) * c.collectives as f64);
        println!(
            "| {} | {:.1} | {:.1}–{:.1} | {per:.1} |",
            c.name,
            us(m),
            us(q1),
            us(q3)
        );
    }
}
