//! The patch list and the device-IP ↔ NEFF-IP map (stage.md §8.1).
//!
//! Lowering turns a NEFF engine stream into a device image whose records no
//! longer line up one-to-one with the NEFF (labels vanish, synthesized code
//! appears). Profilers and debuggers see device addresses and must map them
//! back to NEFF instruction indices; the patch list is what makes that
//! possible. It is bookkeeping only — never an address relocation.
//!
//! Each patch records where it happened in the NEFF stream (`neff_index`),
//! how many NEFF records it consumed and how many device slots it produced,
//! so the mapping is exact across untouched runs between patches. Indices
//! are 0-based record numbers (a record is 64 bytes).

use thiserror::Error;

/// Record size of every engine stream.
pub const RECORD: u64 = 64;

/// The reference runtime's patch kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchKind {
    /// Device slots with no NEFF record (synthesized code, or the extra
    /// slots of a pseudo that expanded into more than one).
    Insert = 0,
    /// One NEFF record rewritten into device slots.
    Modify = 1,
    /// NEFF records absent from the device image.
    Delete = 2,
}

/// Sections of an engine image, in image order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    Preamble = 0,
    Postamble = 1,
    Main = 2,
    #[cfg(any(test, feature = "testkit"))]
    Function = 3,
}

/// One entry of a section's patch list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Patch {
    pub section: Section,
    /// NEFF record index (within the section's NEFF stream) where it applies.
    pub neff_index: u32,
    /// NEFF records consumed (0 for an insert).
    pub neff_count: u32,
    /// Device slots produced (0 for a delete).
    pub device_count: u32,
}

impl Patch {
    pub fn kind(&self) -> PatchKind {
        if self.neff_count == 0 {
            PatchKind::Insert
        } else if self.device_count == 0 {
            PatchKind::Delete
        } else {
            PatchKind::Modify
        }
    }
}

/// Where each section of an engine image sits, in device slots from the
/// image start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageLayout {
    /// Device address of slot 0.
    pub base: u64,
    /// In image order.
    pub sections: Vec<SectionSpan>,
}

/// One section of an image: slots `first .. first + slots`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionSpan {
    pub section: Section,
    pub first: u32,
    pub slots: u32,
}

impl SectionSpan {
    pub const fn new(section: Section, first: u32, slots: u32) -> SectionSpan {
        SectionSpan {
            section,
            first,
            slots,
        }
    }
}

impl ImageLayout {
    /// Where `section` lies, when the image has it.
    pub fn span(&self, section: Section) -> Option<SectionSpan> {
        self.sections.iter().copied().find(|s| s.section == section)
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum IpMapError {
    #[error("device_ip {0:#x} is out of bounds of main and function buffer")]
    OutOfBounds(u64),
    #[error("Failed to find section {0} in the patch list")]
    NoSection(u32),
}

/// A section's patches in stream order, with the mapping both ways.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchList {
    pub patches: Vec<Patch>,
}

impl PatchList {
    pub fn push(&mut self, p: Patch) {
        if p.neff_count == 0 && p.device_count == 0 {
            return;
        }
        self.patches.push(p);
    }

    /// Patches of one section.
    pub fn of(&self, section: Section) -> impl Iterator<Item = &Patch> {
        self.patches.iter().filter(move |p| p.section == section)
    }

    /// NEFF record index of device slot `slot` of `section` (slot counted
    /// from the section start); `None` for a synthesized slot.
    #[cfg(any(test, feature = "testkit"))]
    pub fn device_to_neff(&self, section: Section, slot: u64) -> Option<u64> {
        let (mut dev, mut neff) = (0u64, 0u64);
        for p in self.of(section) {
            let gap = u64::from(p.neff_index).saturating_sub(neff);
            if slot < dev + gap {
                return Some(neff + (slot - dev));
            }
            dev += gap;
            neff = u64::from(p.neff_index);
            let produced = u64::from(p.device_count);
            if slot < dev + produced {
                return match p.kind() {
                    PatchKind::Insert => None,
                    _ => Some(neff),
                };
            }
            dev += produced;
            neff += u64::from(p.neff_count);
        }
        Some(neff + (slot - dev))
    }

    /// Device slot of NEFF record `index` of `section`; `None` when the record
    /// was deleted.
    #[cfg(any(test, feature = "testkit"))]
    pub fn neff_to_device(&self, section: Section, index: u64) -> Option<u64> {
        let (mut dev, mut neff) = (0u64, 0u64);
        for p in self.of(section) {
            let at = u64::from(p.neff_index);
            if index < at {
                return Some(dev + (index - neff));
            }
            dev += at.saturating_sub(neff);
            neff = at;
            let consumed = u64::from(p.neff_count);
            if index < neff + consumed {
                return (p.device_count > 0).then_some(dev);
            }
            dev += u64::from(p.device_count);
            neff += consumed;
        }
        Some(dev + (index - neff))
    }

    /// Maps a device address to `(section, NEFF index)`, as the profiler's
    /// `device_ip → neff_ip` does. Only MAIN and FUNCTION code maps.
    ///
    /// As in the reference, the bounds come first: an address outside every
    /// MAIN and FUNCTION range is `OutOfBounds`, whatever the layout holds.
    /// A FUNCTION address also needs the MAIN mapping, so one in a layout
    /// without MAIN is `NoSection(MAIN)`.
    #[cfg(any(test, feature = "testkit"))]
    pub fn device_ip_to_neff(
        &self,
        layout: &ImageLayout,
        device_ip: u64,
    ) -> Result<(Section, Option<u64>), IpMapError> {
        let rel = device_ip
            .checked_sub(layout.base)
            .ok_or(IpMapError::OutOfBounds(device_ip))?;
        let slot = rel / RECORD;
        for &SectionSpan {
            section,
            first,
            slots,
        } in &layout.sections
        {
            if !matches!(section, Section::Main | Section::Function) {
                continue;
            }
            let (first, len) = (u64::from(first), u64::from(slots));
            if slot >= first && slot < first + len {
                if section == Section::Function && layout.span(Section::Main).is_none() {
                    return Err(IpMapError::NoSection(Section::Main as u32));
                }
                return Ok((section, self.device_to_neff(section, slot - first)));
            }
        }
        Err(IpMapError::OutOfBounds(device_ip))
    }

    /// The device address of NEFF record `index` of `section`. A record that
    /// would lie past the end of the address space is `OutOfBounds(u64::MAX)`.
    #[cfg(any(test, feature = "testkit"))]
    pub fn neff_to_device_ip(
        &self,
        layout: &ImageLayout,
        section: Section,
        index: u64,
    ) -> Result<Option<u64>, IpMapError> {
        let first = layout
            .span(section)
            .ok_or(IpMapError::NoSection(section as u32))?
            .first;
        self.neff_to_device(section, index)
            .map(|slot| {
                u64::from(first)
                    .checked_add(slot)
                    .and_then(|s| s.checked_mul(RECORD))
                    .and_then(|off| layout.base.checked_add(off))
                    .ok_or(IpMapError::OutOfBounds(u64::MAX))
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn main_patch(neff_index: u32, neff_count: u32, device_count: u32) -> Patch {
        Patch {
            section: Section::Main,
            neff_index,
            neff_count,
            device_count,
        }
    }

    /// NEFF main: 10 records. Record 1 is a label (deleted), record 4 expands
    /// into 3 slots, and 2 synthetic slots are inserted before record 7.
    fn sample() -> PatchList {
        let mut p = PatchList::default();
        p.push(main_patch(1, 1, 0));
        p.push(main_patch(4, 1, 3));
        p.push(main_patch(7, 0, 2));
        p
    }

    #[test]
    fn device_to_neff_across_every_patch_kind() {
        let p = sample();
        // Device slots: 0→0, (1 deleted), 1→2, 2→3, 3..6→4 (expanded), 6→5, 7→6, 8,9 synthetic, 10→7, 11→8, 12→9
        let expect = [
            Some(0),
            Some(2),
            Some(3),
            Some(4),
            Some(4),
            Some(4),
            Some(5),
            Some(6),
            None,
            None,
            Some(7),
            Some(8),
            Some(9),
        ];
        for (slot, want) in expect.iter().enumerate() {
            assert_eq!(
                p.device_to_neff(Section::Main, slot as u64),
                *want,
                "slot {slot}"
            );
        }
    }

    #[test]
    fn neff_to_device_is_the_inverse() {
        let p = sample();
        assert_eq!(p.neff_to_device(Section::Main, 1), None, "deleted");
        for neff in [0u64, 2, 3, 4, 5, 6, 7, 8, 9] {
            let dev = p.neff_to_device(Section::Main, neff).unwrap();
            assert_eq!(
                p.device_to_neff(Section::Main, dev),
                Some(neff),
                "neff {neff} → slot {dev}"
            );
        }
        assert_eq!(p.neff_to_device(Section::Main, 9), Some(12));
    }

    #[test]
    fn device_ips_map_through_the_layout() {
        let p = sample();
        let layout = ImageLayout {
            base: 0x1000_0000,
            sections: vec![
                SectionSpan::new(Section::Preamble, 0, 4),
                SectionSpan::new(Section::Main, 4, 13),
                SectionSpan::new(Section::Postamble, 17, 3),
            ],
        };
        assert_eq!(
            p.device_ip_to_neff(&layout, 0x1000_0000 + 5 * 64),
            Ok((Section::Main, Some(2)))
        );
        assert_eq!(
            p.device_ip_to_neff(&layout, 0x1000_0000),
            Err(IpMapError::OutOfBounds(0x1000_0000))
        );
        assert_eq!(
            p.device_ip_to_neff(&layout, 0x0fff_0000),
            Err(IpMapError::OutOfBounds(0x0fff_0000))
        );
        assert_eq!(
            p.neff_to_device_ip(&layout, Section::Main, 2),
            Ok(Some(0x1000_0000 + 5 * 64))
        );
        assert_eq!(
            p.neff_to_device_ip(&layout, Section::Function, 0),
            Err(IpMapError::NoSection(Section::Function as u32))
        );
        assert_eq!(
            IpMapError::OutOfBounds(0x40).to_string(),
            "device_ip 0x40 is out of bounds of main and function buffer"
        );
    }

    #[test]
    fn kinds() {
        assert_eq!(main_patch(0, 0, 2).kind(), PatchKind::Insert);
        assert_eq!(main_patch(0, 1, 0).kind(), PatchKind::Delete);
        assert_eq!(main_patch(0, 1, 3).kind(), PatchKind::Modify);
        let mut p = PatchList::default();
        p.push(main_patch(3, 1, 1));
        assert_eq!(p.patches.len(), 1);
        p.push(main_patch(3, 0, 0));
        assert_eq!(p.patches.len(), 1, "empty patches are not recorded");
    }
}
