//! Reading an NTFF file (docs/reference/capture.md): the version byte, the metadata
//! length at 0x01, the metadata message at 0x80, the data area after it.
//!
//! Only the fields listed in the spec are read; any other field, of any wire
//! type, is skipped. Nesting is fixed by the layout (top → model → subgraph →
//! image / row), so no input can make the reader recurse deeper.

use std::borrow::Cow;

use super::wire::{self, Field};
use super::{
    row_name, Capture, CaptureError, CaptureUuid, Image, MemRow, Subgraph, Version,
    METADATA_OFFSET, VERSIONS,
};
use crate::manifest::engine::EngineType;

/// Reads a capture, borrowing image bytes from `bytes`.
///
/// ```
/// let path = concat!(
///     env!("CARGO_MANIFEST_DIR"),
///     "/../../testdata/captures/kfusion__baseline_attention__baseline.ntff"
/// );
/// let bytes = std::fs::read(path)?;
/// let capture = neffld::capture::read(&bytes)?;
/// assert_eq!(capture.arch(), Some(neffld::Arch::Cayman)); // a trn2 capture
/// for sg in &capture.subgraphs {
///     // Each subgraph ran on one physical core; its engines' images are
///     // at the device addresses the runtime chose.
///     assert!(!sg.images.is_empty(), "{} on core {}", sg.name, sg.pcore);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read(bytes: &[u8]) -> Result<Capture<'_>, CaptureError> {
    if bytes.len() < METADATA_OFFSET {
        return Err(CaptureError::TooShort { len: bytes.len() });
    }
    let version = bytes[0];
    if !VERSIONS.contains(&version) {
        return Err(CaptureError::UnsupportedVersion {
            version,
            what: super::what_it_is(bytes),
        });
    }
    let len = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
    let end = METADATA_OFFSET
        .checked_add(len as usize)
        .filter(|&e| e <= bytes.len())
        .ok_or(CaptureError::MetadataOverrun {
            len: len.into(),
            file_len: bytes.len(),
        })?;
    let meta = &bytes[METADATA_OFFSET..end];
    let data = &bytes[end..];
    Reader { data }.top(version, meta)
}

struct Reader<'a> {
    data: &'a [u8],
}

/// Walks the fields of a message payload, naming `path` in errors.
fn walk<'a, 'p>(
    payload: &'a [u8],
    at: usize,
    path: &'p str,
) -> impl Iterator<Item = Result<Field<'a>, CaptureError>> + use<'a, 'p> {
    wire::fields(payload, at).map(move |r| {
        r.map_err(|source| CaptureError::Wire {
            path: path.to_string(),
            source,
        })
    })
}

fn want_varint(f: &Field<'_>, path: &str) -> Result<u64, CaptureError> {
    f.varint().ok_or_else(|| CaptureError::FieldType {
        path: format!("{path}.{}", f.number),
        at: f.at,
        expected: "a varint",
    })
}

fn want_bytes<'a>(f: &Field<'a>, path: &str) -> Result<(&'a [u8], usize), CaptureError> {
    f.bytes().ok_or_else(|| CaptureError::FieldType {
        path: format!("{path}.{}", f.number),
        at: f.at,
        expected: "a length-delimited field",
    })
}

fn want_string(f: &Field<'_>, path: &str) -> Result<String, CaptureError> {
    let (b, _) = want_bytes(f, path)?;
    // Names are written as C strings by the runtime; keep what precedes a
    // zero and tolerate non-UTF-8 bytes rather than refusing the capture.
    let b = b.split(|&c| c == 0).next().unwrap_or(b);
    Ok(String::from_utf8_lossy(b).into_owned())
}

impl<'a> Reader<'a> {
    fn top(&self, version: u8, meta: &'a [u8]) -> Result<Capture<'a>, CaptureError> {
        let mut c = Capture {
            version,
            neff_name: String::new(),
            uuid: CaptureUuid::Prefix(Vec::new()),
            arch_code: 0,
            runtime: None,
            driver: None,
            collectives: None,
            instance_type: None,
            instance_id: None,
            capture_time: None,
            subgraphs: Vec::new(),
        };
        let mut full_uuid = None;
        let path = "metadata";
        for f in walk(meta, METADATA_OFFSET, path) {
            let f = f?;
            match f.number {
                1 => c.neff_name = want_string(&f, path)?,
                2 => c.uuid = c_string_uuid(want_bytes(&f, path)?.0),
                4 => {
                    let (b, at) = want_bytes(&f, path)?;
                    full_uuid = self.model(b, at, &mut c.subgraphs)?.or(full_uuid);
                }
                5 => c.arch_code = want_varint(&f, path)?,
                7 => c.capture_time = Some(want_varint(&f, path)?),
                8 => c.runtime = Some(version_msg(&f, "metadata.8")?),
                9 => c.instance_type = Some(want_string(&f, path)?),
                11 => c.driver = Some(version_msg(&f, "metadata.11")?),
                12 => c.collectives = Some(version_msg(&f, "metadata.12")?),
                17 => c.instance_id = Some(want_string(&f, path)?),
                _ => {}
            }
        }
        if let Some(u) = full_uuid {
            c.uuid = CaptureUuid::Full(u);
        }
        Ok(c)
    }

    /// Field 4: the model. Its subgraphs sit one level down, in field 4
    /// (repeated 1 = subgraph); field 5 is the 16-byte uuid.
    fn model(
        &self,
        b: &'a [u8],
        at: usize,
        out: &mut Vec<Subgraph<'a>>,
    ) -> Result<Option<[u8; 16]>, CaptureError> {
        let mut uuid = None;
        let path = "metadata.4";
        for f in walk(b, at, path) {
            let f = f?;
            match f.number {
                4 => {
                    let (b, at) = want_bytes(&f, path)?;
                    for g in walk(b, at, "metadata.4.4") {
                        let g = g?;
                        if g.number == 1 {
                            let (b, at) = want_bytes(&g, "metadata.4.4")?;
                            let path = format!("metadata.4.4.1[{}]", out.len());
                            out.push(self.subgraph(b, at, &path)?);
                        }
                    }
                }
                5 => {
                    let (b, _) = want_bytes(&f, path)?;
                    uuid = <[u8; 16]>::try_from(b).ok().or(uuid);
                }
                _ => {}
            }
        }
        Ok(uuid)
    }

    fn subgraph(&self, b: &'a [u8], at: usize, path: &str) -> Result<Subgraph<'a>, CaptureError> {
        let mut s = Subgraph {
            name: String::new(),
            device: 0,
            pcore: 0,
            images: Vec::new(),
            memory: Vec::new(),
            duration_ps: None,
        };
        let mut rows: Vec<(Option<u64>, Option<String>, u64)> = Vec::new();
        for f in walk(b, at, path) {
            let f = f?;
            match f.number {
                1 => s.name = want_string(&f, path)?,
                2 => s.device = want_varint(&f, path)?,
                3 => s.pcore = want_varint(&f, path)?,
                4 => {
                    let (b, at) = want_bytes(&f, path)?;
                    let path = format!("{path}.4[{}]", s.images.len());
                    s.images.push(self.image(b, at, &path)?);
                }
                11 => {
                    let (b, at) = want_bytes(&f, path)?;
                    let path = format!("{path}.11[{}]", rows.len());
                    let (id, name, bytes) = mem_row(b, at, &path)?;
                    rows.push((id, name, bytes));
                }
                14 => s.duration_ps = Some(want_varint(&f, path)?),
                _ => {}
            }
        }
        let n = rows.len();
        for (id, name, bytes) in rows {
            // An absent id is proto3's zero. An id past the known list (a
            // runtime newer than this reader) keeps its number as its name.
            let name = name.unwrap_or_else(|| {
                let id = id.unwrap_or(0);
                row_name(id, n).map_or_else(|| format!("id {id}"), str::to_string)
            });
            s.memory.push(MemRow { id, name, bytes });
        }
        Ok(s)
    }

    fn image(&self, b: &'a [u8], at: usize, path: &str) -> Result<Image<'a>, CaptureError> {
        let mut engine = EngineType::Pe;
        let mut address = 0;
        let mut inline = None;
        let mut offset = 0u64;
        let mut size = None;
        for f in walk(b, at, path) {
            let f = f?;
            match f.number {
                1 => {
                    let v = want_varint(&f, path)?;
                    engine = usize::try_from(v)
                        .ok()
                        .and_then(|i| EngineType::ALL.get(i).copied())
                        .ok_or(CaptureError::BadEngine {
                            path: format!("{path}.1"),
                            at: f.at,
                            value: v,
                        })?;
                }
                2 => address = want_varint(&f, path)?,
                3 => inline = Some(want_bytes(&f, path)?.0),
                7 => offset = want_varint(&f, path)?,
                8 => size = Some(want_varint(&f, path)?),
                _ => {}
            }
        }
        let bytes = match (inline, size) {
            (Some(b), _) => b,
            (None, Some(size)) => offset
                .checked_add(size)
                .filter(|&end| end <= self.data.len() as u64)
                .map(|end| &self.data[offset as usize..end as usize])
                .ok_or(CaptureError::ImageOutOfBounds {
                    path: path.to_string(),
                    offset,
                    size,
                    data_len: self.data.len(),
                })?,
            (None, None) => {
                return Err(CaptureError::ImageMissing {
                    path: path.to_string(),
                })
            }
        };
        Ok(Image {
            engine,
            address,
            bytes: Cow::Borrowed(bytes),
        })
    }
}

fn mem_row(
    b: &[u8],
    at: usize,
    path: &str,
) -> Result<(Option<u64>, Option<String>, u64), CaptureError> {
    let (mut id, mut name, mut bytes) = (None, None, 0);
    for f in walk(b, at, path) {
        let f = f?;
        match f.number {
            1 => id = Some(want_varint(&f, path)?),
            2 => bytes = want_varint(&f, path)?,
            3 => name = Some(want_string(&f, path)?),
            _ => {}
        }
    }
    Ok((id, name, bytes))
}

fn version_msg(f: &Field<'_>, path: &str) -> Result<Version, CaptureError> {
    let (b, at) = want_bytes(f, path)?;
    let mut v = Version::default();
    for g in walk(b, at, path) {
        let g = g?;
        match g.number {
            1 => v.major = want_varint(&g, path)?,
            2 => v.minor = want_varint(&g, path)?,
            3 => v.patch = want_varint(&g, path)?,
            5 => v.git_hash = Some(want_string(&g, path)?),
            _ => {}
        }
    }
    Ok(v)
}

/// Field 2: a C string. Cut at the first zero; with none, the first 16
/// bytes are the uuid and the rest is whatever followed it in memory.
fn c_string_uuid(b: &[u8]) -> CaptureUuid {
    let cut = b.split(|&c| c == 0).next().unwrap_or(b);
    match <[u8; 16]>::try_from(cut.get(..16).unwrap_or(cut)) {
        Ok(u) => CaptureUuid::Full(u),
        Err(_) => CaptureUuid::Prefix(cut.to_vec()),
    }
}
