//! Sizes for people: the exact byte count beside a binary-prefixed figure.

/// `1536` → `1.5 KiB`; below 1 KiB, `N B`. Rounded down, as every size
/// neffld prints ([`neffld::text::binary_floor`]): 2,102,796,288 bytes is
/// `1.9 GiB`, not `2.0 GiB`, so a tensor of the size printed fits.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let (value, unit) = neffld::text::binary_floor(bytes, 1, UNITS.len());
    format!("{value} {}", UNITS[unit - 1])
}

pub use neffld::text::count;

/// `1536` → `1536 bytes (1.5 KiB)`; `1` → `1 byte`.
pub fn bytes(n: u64) -> String {
    if n < 1024 {
        count(n, "byte")
    } else {
        format!("{n} bytes ({})", human(n))
    }
}

/// `used / total (pct)` with human units.
pub fn used_of(used: u64, total: u64) -> String {
    // Hundredths of a percent, rounded down as the sizes are.
    let pct = (u128::from(used) * 10_000)
        .checked_div(u128::from(total))
        .unwrap_or(0);
    format!(
        "{} / {} ({}.{:02} %)",
        human(used),
        human(total),
        pct / 100,
        pct % 100
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_prefixes() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(1023), "1023 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(24 << 30), "24.0 GiB");
        assert_eq!(bytes(4096), "4096 bytes (4.0 KiB)");
        assert_eq!((bytes(1), bytes(0)), ("1 byte".into(), "0 bytes".into()));
        assert_eq!(used_of(1 << 30, 4 << 30), "1.0 GiB / 4.0 GiB (25.00 %)");
        // Rounded down: 2,102,796,288 B is 1.958 GiB.
        assert_eq!(human(2_102_796_288), "1.9 GiB");
        assert_eq!(human(2 << 30), "2.0 GiB");
        assert_eq!(human((2 << 30) - 1), "1.9 GiB");
        assert_eq!(human(1024 * 1024 - 1), "1023.9 KiB");
        assert_eq!(human(1 << 20), "1.0 MiB");
    }
}
