//! `.npy` weight members (parse.md §6.3, our-decision reader).
//!
//! The payload is staged verbatim, so only the header's length matters for
//! correctness. The dict is parsed for diagnostics only: a disagreement is
//! a warning, never a reject, because the runtime never types weights by it.

use super::ManifestError;

pub const NPY_MAGIC: u16 = 0x4E93;

/// A parsed `.npy` member; `payload` borrows the member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Npy<'a> {
    pub version: (u8, u8),
    /// Offset of the payload inside the member.
    pub data_offset: usize,
    pub payload: &'a [u8],
    pub descr: Option<String>,
    pub fortran_order: Option<bool>,
    pub shape: Option<Vec<u64>>,
    pub warnings: Vec<String>,
}

pub fn parse<'a>(member: &str, bytes: &'a [u8]) -> Result<Npy<'a>, ManifestError> {
    let bad = |found: u32, detail: &str| ManifestError::NpyBadHeader {
        member: member.to_string(),
        found,
        detail: detail.to_string(),
    };
    let magic = match bytes {
        [a, b, ..] => u16::from_le_bytes([*a, *b]),
        [a] => u16::from(*a),
        [] => 0,
    };
    if bytes.len() < 10 {
        return Err(bad(
            u32::from(magic),
            &format!(" (member is {} bytes, a header needs 10)", bytes.len()),
        ));
    }
    if magic != NPY_MAGIC {
        return Err(bad(u32::from(magic), ""));
    }
    let major = bytes.get(6).copied().unwrap_or(0);
    let minor = bytes.get(7).copied().unwrap_or(0);
    let mut warnings = Vec::new();
    let le16 = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let (hlen, fixed) = match major {
        2 | 3 => {
            let Some(h) = bytes
                .get(8..12)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            else {
                return Err(bad(u32::from(magic), " (v2/v3 header length truncated)"));
            };
            (h as usize, 12usize)
        }
        _ => {
            if major != 1 {
                warnings.push(format!(
                    "{member}: npy version {major}.{minor} is unknown; reading it as 1.0"
                ));
            }
            (usize::from(le16(8).unwrap_or(0)), 10usize)
        }
    };
    let data_offset = fixed
        .checked_add(hlen)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| {
            bad(
                u32::from(magic),
                &format!(
                    " (header of {hlen} bytes runs past the {}-byte member)",
                    bytes.len()
                ),
            )
        })?;
    let header = String::from_utf8_lossy(bytes.get(fixed..data_offset).unwrap_or_default());
    let descr = dict_str(&header, "descr");
    let fortran_order = dict_raw(&header, "fortran_order").map(|v| v.starts_with("True"));
    let shape = dict_raw(&header, "shape").and_then(parse_tuple);
    let payload = bytes.get(data_offset..).unwrap_or_default();

    if fortran_order == Some(true) {
        warnings.push(format!(
            "{member}: fortran_order is True; bytes are staged as they are"
        ));
    }
    match descr.as_deref() {
        None => warnings.push(format!("{member}: npy header has no readable descr")),
        Some(d) => {
            if d.starts_with('>') {
                warnings.push(format!(
                    "{member}: big-endian descr {d}; bytes are staged as they are"
                ));
            }
            match (descr_width(d), shape.as_ref()) {
                (Some(w), Some(s)) => {
                    let expect = s.iter().try_fold(w, |acc, &x| acc.checked_mul(x));
                    if expect != Some(payload.len() as u64) {
                        warnings.push(format!(
                            "{member}: descr {d} × shape {s:?} does not match the {}-byte payload",
                            payload.len()
                        ));
                    }
                }
                (None, _) => warnings.push(format!("{member}: unknown descr {d}")),
                _ => {}
            }
        }
    }
    Ok(Npy {
        version: (major, minor),
        data_offset,
        payload,
        descr,
        fortran_order,
        shape,
        warnings,
    })
}

/// Element width of a numpy `descr` such as `<f2`, `|i1`, `<V2`.
pub fn descr_width(d: &str) -> Option<u64> {
    let body = d.trim_start_matches(['<', '>', '|', '=']);
    let mut chars = body.chars();
    let kind = chars.next()?;
    if !matches!(kind, 'f' | 'i' | 'u' | 'V' | 'b' | 'c' | 'S') {
        return None;
    }
    chars.as_str().parse().ok()
}

/// The text after `'key':` up to the next top-level comma or closing brace.
fn dict_raw<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let pat = format!("'{key}'");
    let at = header.find(&pat)? + pat.len();
    let rest = header
        .get(at..)?
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    Some(rest)
}

fn dict_str(header: &str, key: &str) -> Option<String> {
    let rest = dict_raw(header, key)?;
    let q = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = rest.get(1..)?;
    body.find(q).map(|end| body[..end].to_string())
}

fn parse_tuple(rest: &str) -> Option<Vec<u64>> {
    let inner = rest.strip_prefix('(')?;
    let end = inner.find(')')?;
    inner[..end]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse().ok())
        .collect()
}
