//! A NEFF's collectives as `inspect` and `load` print them: one line each,
//! from the library's [`Collective`] records, and the ranks of a replica
//! group written short.

use neffld::report::Collective;

use crate::report::shown;
use crate::units;

/// Most groups a line lists before it says how many more there are.
const GROUPS_SHOWN: usize = 4;

/// Ranks of one group, runs of consecutive ranks written as ranges:
/// `0-7`, `0,2,4`, `0-3,8-11`.
fn run_list(ranks: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j].wrapping_add(1) {
            j += 1;
        }
        out.push(if j > i + 1 {
            format!("{}-{}", ranks[i], ranks[j])
        } else if j == i + 1 {
            format!("{},{}", ranks[i], ranks[j])
        } else {
            ranks[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// The groups of a replica group: `[0-3] [4-7]`, the first few and a
/// count when there are many; `every rank` for a set of none (one group
/// of the whole world).
pub fn groups(groups: &[Vec<u32>]) -> String {
    if groups.is_empty() {
        return "every rank".into();
    }
    let mut shown: Vec<String> = groups
        .iter()
        .take(GROUPS_SHOWN)
        .map(|g| format!("[{}]", run_list(g)))
        .collect();
    if groups.len() > GROUPS_SHOWN {
        shown.push(format!("… ({} groups)", groups.len()));
    }
    shown.join(" ")
}

/// What a collective does: its operation, reduction and element type
/// (`all-reduce add float32`).
pub fn what(c: &Collective) -> String {
    [Some(c.operation), c.reduce, c.dtype]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
}

/// With whom: its peer, or its replica group and that group's ranks.
pub fn with(c: &Collective) -> String {
    match (c.group, c.peer) {
        (_, Some(peer)) => format!("peer rank {peer}"),
        (Some(g), None) => format!("group {g}: {}", groups(&c.groups)),
        (None, None) => String::new(),
    }
}

/// One collective on one line: where it is, what it does, on how much,
/// with whom, from and to which variables (names escaped, as every name
/// from a file).
pub fn line(c: &Collective) -> String {
    let size = match c.dtype {
        Some(_) => format!(
            "{} in, {} out ({} out)",
            c.elements_in,
            c.elements_out,
            units::human(c.bytes_out)
        ),
        None => units::human(c.bytes_in.max(c.bytes_out)),
    };
    let var = |v: &Option<String>| v.as_deref().map_or("-".into(), shown);
    let chained = match c.chaining {
        "none" => String::new(),
        other => format!(", chain {other}"),
    };
    format!(
        "{} {}#{} {}: {size}; {}; {} -> {}{chained}",
        c.form,
        c.engine,
        c.index,
        what(c),
        with(c),
        var(&c.input),
        var(&c.output)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_written_as_runs() {
        assert_eq!(run_list(&[0, 1, 2, 3]), "0-3");
        assert_eq!(run_list(&[0, 2, 4]), "0,2,4");
        assert_eq!(run_list(&[0, 1, 4, 5, 6, 9]), "0,1,4-6,9");
        assert_eq!(run_list(&[]), "");
        assert_eq!(groups(&[]), "every rank");
        let many: Vec<Vec<u32>> = (0..32).map(|g| vec![2 * g, 2 * g + 1]).collect();
        assert_eq!(groups(&many), "[0,1] [2,3] [4,5] [6,7] … (32 groups)");
    }
}
