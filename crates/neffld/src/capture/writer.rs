//! Writing captures in the layout [`super::read`] reads: what `nrt_profile_stop`
//! needs, and what tests need to build captures of older versions or with
//! injected faults.
//!
//! Per version, as the real files differ: v4 and v5 carry images inline
//! (field 3), v6 in the data area (offset 7, size 8); v4 rows carry only ids,
//! v5 and later only names; only v6 repeats the whole uuid in field 4.5.

use super::wire::{put, put_bytes, put_u64, Value};
use super::{Capture, CaptureError, CaptureUuid, Version, MEMORY_ROWS, METADATA_OFFSET, VERSIONS};

/// The capture's bytes in NTFF version `c.version`.
pub fn write(c: &Capture<'_>) -> Result<Vec<u8>, CaptureError> {
    let v = c.version;
    if !VERSIONS.contains(&v) {
        return Err(CaptureError::UnsupportedVersion {
            version: v,
            what: None,
        });
    }
    let mut data = Vec::new();
    let mut sgs = Vec::new();
    for s in &c.subgraphs {
        let mut m = Vec::new();
        put_bytes(&mut m, 1, s.name.as_bytes());
        put_u64(&mut m, 2, s.device);
        put_u64(&mut m, 3, s.pcore);
        for i in &s.images {
            let mut im = Vec::new();
            put_u64(&mut im, 1, i.engine.index() as u64);
            put_u64(&mut im, 2, i.address);
            if v >= 6 {
                put_u64(&mut im, 7, data.len() as u64);
                put_u64(&mut im, 8, i.bytes.len() as u64);
                data.extend_from_slice(&i.bytes);
            } else {
                put_bytes(&mut im, 3, &i.bytes);
            }
            put_bytes(&mut m, 4, &im);
        }
        for r in &s.memory {
            let mut row = Vec::new();
            if v == 4 {
                let id =
                    r.id.or_else(|| {
                        MEMORY_ROWS
                            .iter()
                            .position(|(n, _)| *n == r.name)
                            .map(|i| i as u64)
                    })
                    .ok_or_else(|| CaptureError::Unwritable {
                        version: v,
                        why: format!("memory row '{}' has no id", r.name),
                    })?;
                put_u64(&mut row, 1, id);
            } else if let Some(id) = r.id {
                put_u64(&mut row, 1, id);
            }
            put_u64(&mut row, 2, r.bytes);
            if v >= 5 {
                put_bytes(&mut row, 3, r.name.as_bytes());
            }
            put_bytes(&mut m, 11, &row);
        }
        if let Some(d) = s.duration_ps {
            put_u64(&mut m, 14, d);
        }
        put_bytes(&mut sgs, 1, &m);
    }
    let mut model = Vec::new();
    put_bytes(&mut model, 4, &sgs);
    if let (6.., CaptureUuid::Full(u)) = (v, &c.uuid) {
        put_bytes(&mut model, 5, u);
    }

    let mut meta = Vec::new();
    put_bytes(&mut meta, 1, c.neff_name.as_bytes());
    let uuid: &[u8] = match &c.uuid {
        CaptureUuid::Full(u) => u,
        CaptureUuid::Prefix(p) => p,
    };
    put_bytes(&mut meta, 2, uuid);
    put_bytes(&mut meta, 4, &model);
    put_u64(&mut meta, 5, c.arch_code);
    if let Some(t) = c.capture_time {
        put_u64(&mut meta, 7, t);
    }
    for (n, ver) in [(8, &c.runtime), (11, &c.driver), (12, &c.collectives)] {
        if let Some(ver) = ver {
            put_bytes(&mut meta, n, &version(ver));
        }
    }
    if let Some(t) = &c.instance_type {
        put_bytes(&mut meta, 9, t.as_bytes());
    }
    if let Some(t) = &c.instance_id {
        put(&mut meta, 17, Value::Bytes(t.as_bytes()));
    }

    let len = u32::try_from(meta.len()).map_err(|_| CaptureError::Unwritable {
        version: v,
        why: format!("metadata of {} bytes does not fit a u32", meta.len()),
    })?;
    let mut out = vec![0u8; METADATA_OFFSET];
    out[0] = v;
    out[1..5].copy_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&meta);
    out.extend_from_slice(&data);
    Ok(out)
}

fn version(v: &Version) -> Vec<u8> {
    let mut m = Vec::new();
    put_u64(&mut m, 1, v.major);
    put_u64(&mut m, 2, v.minor);
    put_u64(&mut m, 3, v.patch);
    if let Some(h) = &v.git_hash {
        put_bytes(&mut m, 5, h.as_bytes());
    }
    m
}
