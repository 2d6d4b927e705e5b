//! A NEFF read from a stream (standard input, a pipe, a device file): the
//! header says how long the NEFF is, so that much is read and no more.
//!
//! A stream has no length to check the header against, and may never end
//! (`/dev/zero`, `yes |`): reading it to its end before looking at it took
//! 8 GB and 38 s before the host ran out of memory. So the 1024-byte header
//! comes first; then exactly `data_size` payload bytes follow, read into
//! memory reserved fallibly as they arrive (a declared size is not trusted
//! to reserve up front), unless it declares more than the ceiling: then a
//! header that fails its own gates (version, feature trap, packager) is
//! returned alone for them to refuse, and any other is refused as too
//! large. What
//! the stream holds beyond that is left unread. The bytes returned then go
//! through the same gates as a file's: a stream that ends early fails the
//! data-size gate as a short file does.

use std::io::{self, Read};

use super::header::{NeffHeader, HEADER_LEN};
use super::ContainerError;
use crate::fallible;

/// Default ceiling on the payload of a NEFF read from a stream, in bytes
/// (`NEFFLD_MAX_NEFF_SIZE` sets another): the top of the inflate ceiling's
/// range. A header declaring more is refused before its payload is read
/// (one declaring 2^40 bytes, followed by `/dev/zero`, grew without end).
pub const MAX_STREAM_NEFF: u64 = 32 << 30;

/// Payload bytes reserved at a time while reading: the buffer grows as data
/// arrives, never by what the header merely declares.
const GROW: usize = 64 << 20;

/// Reads `want` more bytes from `r` into `out` (fewer if the stream ends
/// first), reserving room fallibly a step at a time as they come.
fn read_up_to(r: &mut dyn Read, out: &mut Vec<u8>, want: u64) -> io::Result<()> {
    let end = (out.len() as u64).saturating_add(want);
    while (out.len() as u64) < end {
        let left = usize::try_from(end - out.len() as u64).unwrap_or(usize::MAX);
        let step = left.min(out.len().max(GROW));
        fallible::reserve(out, step, "a NEFF read from a stream")
            .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?;
        // The room is reserved, so this read never grows the buffer.
        let got = r.take(step as u64).read_to_end(out)?;
        if got < step {
            break; // the stream ended
        }
    }
    Ok(())
}

/// One NEFF from `r`: its header, then the `data_size` bytes the header
/// declares. A stream that ends early yields what it held. A header that
/// declares more than `max` bytes is returned alone when its own fields
/// fail their gates (they then say why), else it is an `InvalidInput`
/// error naming both sizes and the variable that raises the ceiling; either
/// way nothing more is read. Fails otherwise only on a read error or when the
/// host cannot hold the bytes (`ErrorKind::OutOfMemory`).
/// (`crate::neff::read_neff` takes the ceiling from the environment.)
pub fn read_neff_within(r: &mut dyn Read, max: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    read_up_to(r, &mut out, HEADER_LEN as u64)?;
    let Ok(header) = <&[u8; HEADER_LEN]>::try_from(out.as_slice()) else {
        return Ok(out); // shorter than a header: the first gate says so
    };
    let h = NeffHeader::decode(header);
    if h.data_size > max {
        // The gates that need no length: a header that passes them is a
        // NEFF too large for the ceiling; one that fails them is not a NEFF
        // (`/dev/urandom`, `yes |`), and its gates say why.
        let a_neff = matches!(
            h.validate(u64::MAX),
            Ok(()) | Err(ContainerError::DataSize { .. })
        );
        if !a_neff {
            return Ok(out);
        }
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the header declares a payload of {} bytes, more than the {max} bytes a NEFF \
                 read from a stream may hold: neffld's own ceiling, not the runtime's \
                 (NEFFLD_MAX_NEFF_SIZE raises it)",
                h.data_size
            ),
        ));
    }
    // Within the ceiling, the payload is read even when the header fails a
    // gate, so the gates see what they see of a file: a version the runtime
    // does not take is refused as that, not as a file of only a header.
    read_up_to(r, &mut out, h.data_size)?;
    Ok(out)
}
