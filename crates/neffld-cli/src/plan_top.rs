//! neuron-top's view of a plan's memory in the human report: each logical
//! core's Device Used Memory in neuron-top's categories (Tensors,
//! Constants, Model Code, Runtime Memory, Model Scratchpad), the names a
//! person who watches a fleet knows, from the library's one table
//! (`neffld::report::categories`) — what `--monitor` and `--sysfs` write.

use std::fmt::Write as _;

use neffld::plan::Plan;
use neffld::report::{MonitorCategory, MonitorUsage};

use crate::plan_text::runs;
use crate::units;

/// The section: one row per run of consecutive logical cores with the
/// same figures (`0-63` for 64 alike ranks).
pub fn device_used(t: &mut String, p: &Plan) {
    let cores = p.monitor_cores();
    if cores.iter().all(|(_, u)| u.total() == 0) {
        return;
    }
    // Consecutive ids with one figure: a run's ids less their positions
    // are one number.
    let rows = runs(
        cores
            .iter()
            .enumerate()
            .map(|(i, (id, u))| (i64::from(*id) - i as i64, *u)),
    );
    let label = |first: usize, n: usize| {
        let a = cores[first].0;
        match n {
            1 => a.to_string(),
            _ => format!("{a}-{}", cores[first + n - 1].0),
        }
    };
    let mut table: Vec<Vec<String>> = vec![std::iter::once("core".to_string())
        .chain(std::iter::once("Total".to_string()))
        .chain(MonitorCategory::ALL.iter().map(|c| c.name().to_string()))
        .collect()];
    for (first, n, (_, u)) in rows {
        table.push(row(label(first, n), &u));
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|i| table.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let _ = writeln!(
        t,
        "\ndevice memory as neuron-top shows it (Device Used Memory per logical core; --monitor and --sysfs write it)"
    );
    for r in table {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        let _ = writeln!(t, "  {}", cells.join("  "));
    }
}

fn row(label: String, u: &MonitorUsage) -> Vec<String> {
    std::iter::once(label)
        .chain(std::iter::once(units::human(u.total())))
        .chain(MonitorCategory::ALL.iter().map(|&c| units::human(u.get(c))))
        .collect()
}
