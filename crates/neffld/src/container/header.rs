//! The 1024-byte NEFF header (`neff_header_t`) and its validation gates.
//!
//! There is no magic number: a NEFF is identified by structure alone, so the
//! gates below are the only thing standing between arbitrary bytes and the
//! decoder. They run in the reference runtime's order (parse.md §2.2) because
//! the first failing gate decides the status a caller sees.

use super::sniff::FileKind;
use super::ContainerError;
use crate::arch::Chip;
use crate::Arch;

/// Size of the header; the payload always starts here, whatever `header_size` says.
pub const HEADER_LEN: usize = 0x400;

/// Feature bits the reference runtime refuses on NEFF major 2 (bits 27..62).
pub const FEATURE_TRAP_MASK: u64 = 0x7FFF_FFFF_F800_0000;
/// The supported set the runtime prints in the feature-trap message (bits 0..26).
#[cfg(test)]
pub const FEATURE_SUPPORTED: u64 = 0x7FF_FFFF;
/// `neff_feature_vnc`: the NEFF was compiled for a multi-core logical core.
pub const FEATURE_VNC: u64 = 0x400;

/// The compiler's names for feature bits (producer-side; the runtime
/// interprets none of them except `FEATURE_VNC`). For tooling output only.
pub const FEATURE_NAMES: [(u64, &str); 21] = [
    (0x2, "collective_has_offset"),
    (0x4, "custom_ops"),
    (0x8, "coalesced_ccops"),
    (0x10, "queue_set_instances"),
    (0x20, "has_functions"),
    (0x40, "dynamic_pwp"),
    (0x80, "indirect_memcpy_32b_sem_wait"),
    (0x100, "indirect_memcpy_bound_check"),
    (0x200, "DMA_desc_higher_dim"),
    (0x400, "vnc"),
    (0x800, "dve_perf_mode"),
    (0x1000, "DGE"),
    (0x2000, "POOL_RSQRT"),
    (0x4000, "remote_sem"),
    (0x8000, "DGE_cast"),
    (0x10000, "vector_DGE"),
    (0x20000, "embedding_stride32"),
    (0x100000, "SQI_no_rearm"),
    (0x200000, "hardware_DGE"),
    (0x400000, "partial_sb2sb_ccop"),
    (0x2000000, "large_tensor_support"),
];

/// Names of the set feature bits; unnamed bits appear as `bitN`.
pub fn feature_names(bits: u64) -> Vec<String> {
    (0..64)
        .filter(|i| bits & (1u64 << i) != 0)
        .map(|i| {
            let bit = 1u64 << i;
            FEATURE_NAMES
                .iter()
                .find(|(b, _)| *b == bit)
                .map(|(_, n)| (*n).to_string())
                .unwrap_or_else(|| format!("bit{i}"))
        })
        .collect()
}

/// Highest accepted `neff_version_major`.
pub const MAX_VERSION_MAJOR: u64 = 2;

mod off {
    pub const PKG_VERSION: usize = 0x000;
    pub const HEADER_SIZE: usize = 0x008;
    pub const DATA_SIZE: usize = 0x010;
    pub const VERSION_MAJOR: usize = 0x018;
    pub const VERSION_MINOR: usize = 0x020;
    pub const BUILD_VERSION: usize = 0x028;
    pub const UNUSED_0: usize = 0x0A8;
    pub const HASH: usize = 0x0AC;
    pub const UUID: usize = 0x0CC;
    pub const NAME: usize = 0x0DC;
    pub const REQUESTED_TPB_COUNT: usize = 0x1DC;
    pub const TPB_PER_NODE: usize = 0x1E0;
    pub const FEATURE_BITS: usize = 0x220;
    pub const VNC_SIZE: usize = 0x228;
    pub const PAD: usize = 0x22C;
}

/// Every field of the header, decoded with explicit little-endian offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeffHeader {
    /// 1 = raw tar + SHA-256, 2 = gzip tar + MD5.
    pub pkg_version: u64,
    /// Only range-checked; the payload is read at 0x400 regardless.
    pub header_size: u64,
    /// Bytes of the payload window at 0x400 (compressed stream plus padding).
    pub data_size: u64,
    /// The format's major version: 0 to 2 are read.
    pub version_major: u64,
    /// Printed, never gated.
    pub version_minor: u64,
    /// Free ASCII label, never parsed.
    pub build_version: [u8; 128],
    /// Written as 1 by every producer seen; not read by the loader.
    pub unused_0: u32,
    /// pkg 1: SHA-256; pkg 2: MD5 in bytes 0..16 (plain or word-swapped).
    pub hash: [u8; 32],
    /// Key of the parse cache.
    pub uuid: [u8; 16],
    /// NUL-terminated model name (may be unterminated).
    pub name: [u8; 256],
    /// Cores the compiler asked for (`nc_count`), printed.
    pub requested_tpb_count: u32,
    /// Per-node core counts the compiler wrote, printed.
    pub tpb_per_node: [u8; 64],
    /// Feature bits: a bit newer than the runtime line knows refuses the NEFF.
    pub feature_bits: u64,
    /// LNC size the NEFF was compiled for (`--lnc`).
    pub vnc_size: u32,
    /// Reserved bytes 0x22C..0x400, kept so a header round-trips byte for byte.
    pub pad: [u8; HEADER_LEN - off::PAD],
}

impl Default for NeffHeader {
    fn default() -> Self {
        NeffHeader {
            pkg_version: 2,
            header_size: HEADER_LEN as u64,
            data_size: 0,
            version_major: 2,
            version_minor: 0,
            build_version: [0; 128],
            unused_0: 1,
            hash: [0; 32],
            uuid: [0; 16],
            name: [0; 256],
            requested_tpb_count: 1,
            tpb_per_node: {
                let mut t = [0; 64];
                t[0] = 1;
                t
            },
            feature_bits: 0,
            vnc_size: 1,
            pad: [0; HEADER_LEN - off::PAD],
        }
    }
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(w)
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[o..o + 4]);
    u32::from_le_bytes(w)
}

fn array_at<const N: usize>(b: &[u8], o: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[o..o + N]);
    a
}

impl NeffHeader {
    /// Decodes the header after the preflight gates 1b/1c (parse.md §2.2):
    /// the buffer must hold more than the header, and `header_size` must be
    /// smaller than the buffer. (Gate 1a, the null pointer, belongs to the C ABI.)
    pub fn parse(bytes: &[u8]) -> Result<NeffHeader, ContainerError> {
        if bytes.len() < HEADER_LEN {
            return Err(ContainerError::TooShort {
                size: bytes.len() as u64,
                kind: FileKind::of(bytes),
            });
        }
        let h = NeffHeader::decode(bytes[..HEADER_LEN].try_into().expect("length checked"));
        if h.header_size >= bytes.len() as u64 {
            return Err(ContainerError::HeaderSize {
                header_size: h.header_size,
                file_size: bytes.len() as u64,
                kind: FileKind::of(bytes),
            });
        }
        Ok(h)
    }

    /// What the header's bytes look like, when they are plainly not a
    /// NEFF's (a tar archive, text): its encoding is the bytes it was
    /// decoded from.
    fn kind(&self) -> FileKind {
        FileKind::of(&self.encode())
    }

    /// Decodes the fields without any check.
    pub fn decode(b: &[u8; HEADER_LEN]) -> NeffHeader {
        NeffHeader {
            pkg_version: u64_at(b, off::PKG_VERSION),
            header_size: u64_at(b, off::HEADER_SIZE),
            data_size: u64_at(b, off::DATA_SIZE),
            version_major: u64_at(b, off::VERSION_MAJOR),
            version_minor: u64_at(b, off::VERSION_MINOR),
            build_version: array_at(b, off::BUILD_VERSION),
            unused_0: u32_at(b, off::UNUSED_0),
            hash: array_at(b, off::HASH),
            uuid: array_at(b, off::UUID),
            name: array_at(b, off::NAME),
            requested_tpb_count: u32_at(b, off::REQUESTED_TPB_COUNT),
            tpb_per_node: array_at(b, off::TPB_PER_NODE),
            feature_bits: u64_at(b, off::FEATURE_BITS),
            vnc_size: u32_at(b, off::VNC_SIZE),
            pad: array_at(b, off::PAD),
        }
    }

    /// Encodes the header; `decode(encode(h)) == h` for every header.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[off::PKG_VERSION..][..8].copy_from_slice(&self.pkg_version.to_le_bytes());
        b[off::HEADER_SIZE..][..8].copy_from_slice(&self.header_size.to_le_bytes());
        b[off::DATA_SIZE..][..8].copy_from_slice(&self.data_size.to_le_bytes());
        b[off::VERSION_MAJOR..][..8].copy_from_slice(&self.version_major.to_le_bytes());
        b[off::VERSION_MINOR..][..8].copy_from_slice(&self.version_minor.to_le_bytes());
        b[off::BUILD_VERSION..][..128].copy_from_slice(&self.build_version);
        b[off::UNUSED_0..][..4].copy_from_slice(&self.unused_0.to_le_bytes());
        b[off::HASH..][..32].copy_from_slice(&self.hash);
        b[off::UUID..][..16].copy_from_slice(&self.uuid);
        b[off::NAME..][..256].copy_from_slice(&self.name);
        b[off::REQUESTED_TPB_COUNT..][..4].copy_from_slice(&self.requested_tpb_count.to_le_bytes());
        b[off::TPB_PER_NODE..][..64].copy_from_slice(&self.tpb_per_node);
        b[off::FEATURE_BITS..][..8].copy_from_slice(&self.feature_bits.to_le_bytes());
        b[off::VNC_SIZE..][..4].copy_from_slice(&self.vnc_size.to_le_bytes());
        b[off::PAD..].copy_from_slice(&self.pad);
        b
    }

    /// The gates inside the parse (2a–2d), in the reference order: version,
    /// feature trap, data-size fit, packager. `file_size` is the whole buffer.
    pub fn validate(&self, file_size: u64) -> Result<(), ContainerError> {
        if self.version_major > MAX_VERSION_MAJOR {
            return Err(ContainerError::UnsupportedVersion {
                kind: self.kind(),
                major: self.version_major,
                minor: self.version_minor,
            });
        }
        if self.version_major == 2 && self.feature_bits & FEATURE_TRAP_MASK != 0 {
            return Err(ContainerError::UnsupportedFeatures {
                minor: self.version_minor,
                offending: self.feature_bits & FEATURE_TRAP_MASK,
            });
        }
        // `file_size - 1024` cannot underflow: parse() guaranteed file_size >= 1024.
        if file_size.saturating_sub(HEADER_LEN as u64) < self.data_size {
            return Err(ContainerError::DataSize {
                data_size: self.data_size,
                available: file_size.saturating_sub(HEADER_LEN as u64),
            });
        }
        if self.pkg_version != 1 && self.pkg_version != 2 {
            return Err(ContainerError::UnsupportedPackager {
                kind: self.kind(),
                pkg_version: self.pkg_version,
            });
        }
        Ok(())
    }

    /// The model name: bytes up to the first NUL, lossily decoded.
    pub fn name_str(&self) -> String {
        let end = self
            .name
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(self.name.len());
        String::from_utf8_lossy(&self.name[..end]).into_owned()
    }

    /// Sets the name field (truncated to 255 bytes so it stays terminated).
    /// Sets the model name when it fits the field (255 bytes and a NUL);
    /// the reason when it does not, instead of cutting it.
    pub fn try_set_name(&mut self, name: &str) -> Result<(), String> {
        if name.len() > 255 {
            return Err(format!(
                "a name of {} bytes: the header holds at most 255",
                name.len()
            ));
        }
        self.set_name(name);
        Ok(())
    }

    /// Sets the build label when it fits the field (127 bytes and a NUL);
    /// the reason when it does not.
    pub fn try_set_build_version(&mut self, label: &str) -> Result<(), String> {
        if label.len() > 127 {
            return Err(format!(
                "a build_version of {} bytes: the header holds at most 127",
                label.len()
            ));
        }
        self.build_version = [0; 128];
        self.build_version[..label.len()].copy_from_slice(label.as_bytes());
        Ok(())
    }

    /// Sets the model name, cut to 255 bytes so a NUL always ends it.
    pub fn set_name(&mut self, name: &str) {
        self.name = [0; 256];
        let n = name.len().min(255);
        self.name[..n].copy_from_slice(&name.as_bytes()[..n]);
    }

    /// The build label up to the first NUL.
    pub fn build_version_str(&self) -> String {
        let end = self
            .build_version
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(128);
        String::from_utf8_lossy(&self.build_version[..end]).into_owned()
    }

    /// The uuid in the canonical 8-4-4-4-12 form (bytes in stored order).
    pub fn uuid_string(&self) -> String {
        let h: String = self.uuid.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }

    /// True when the NEFF declares a logical-core size (`neff_feature_vnc`);
    /// only then is `vnc_size` compared with the runtime's LNC size.
    pub fn declares_lnc(&self) -> bool {
        self.feature_bits & FEATURE_VNC != 0
    }

    /// The logical-core size the NEFF was compiled for, when it declares
    /// one: the size a runtime must be configured with to load it.
    pub fn declared_lnc(&self) -> Option<u32> {
        self.declares_lnc().then_some(self.vnc_size)
    }

    /// Whether `arch`'s cores can take the logical-core size the header
    /// declares (a header that declares none fits every architecture): a
    /// header that does not fit its own target is refused by every load.
    pub fn lnc_fits(&self, arch: Arch) -> bool {
        self.declared_lnc()
            .is_none_or(|lnc| arch.lnc_sizes().contains(&lnc))
    }

    /// The LNC gate of parse.md §2.2 1d, for the loader to call with the
    /// runtime's configured logical-core size on `chip`. The reference's
    /// message advises re-running with the NEFF's size; that advice is given
    /// only when the chip takes that size, else the error says what is
    /// wrong with the file (a size no chip takes, or one of another chip,
    /// to recompile for this one).
    pub fn check_lnc(&self, runtime_lnc: u32, chip: Chip) -> Result<(), ContainerError> {
        if !self.declares_lnc() || self.vnc_size == runtime_lnc {
            return Ok(());
        }
        let arch = chip.arch;
        if arch.lnc_sizes().contains(&self.vnc_size) {
            return Err(ContainerError::LncMismatch {
                name: self.name_str(),
                runtime_lnc,
                neff_lnc: self.vnc_size,
            });
        }
        let built_for: Vec<&str> = Arch::ALL
            .into_iter()
            .filter(|a| a.lnc_sizes().contains(&self.vnc_size))
            .map(Arch::instance)
            .collect();
        Err(ContainerError::LncForeign {
            name: self.name_str(),
            neff_lnc: self.vnc_size,
            chip,
            why: if built_for.is_empty() {
                "no chip takes that size: the header is damaged".to_string()
            } else {
                format!(
                    "the NEFF was compiled for {}: {}",
                    built_for.join(" or "),
                    chip.recompile()
                )
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NrtStatus;

    fn file_with(h: &NeffHeader, payload: usize) -> Vec<u8> {
        let mut v = h.encode().to_vec();
        v.resize(HEADER_LEN + payload, 0);
        v
    }

    #[test]
    fn encode_decode_round_trip() {
        let mut h = NeffHeader {
            data_size: 77,
            feature_bits: 0x209C00,
            vnc_size: 2,
            ..Default::default()
        };
        h.set_name("file.neff");
        h.hash[3] = 9;
        h.uuid[15] = 0xAB;
        h.pad[10] = 1;
        assert_eq!(NeffHeader::decode(&h.encode()), h);
        assert_eq!(h.name_str(), "file.neff");
    }

    #[test]
    fn preflight_gates() {
        let h = NeffHeader::default();
        let e = NeffHeader::parse(&[0u8; 1023]).unwrap_err();
        assert_eq!(e.status(), NrtStatus::Invalid);
        assert!(
            e.to_string()
                .contains("received 0x3ff: the file is 1023 bytes"),
            "{e}"
        );
        // Numbers for people: a 100-byte file is 0x64 (hex always marked) and 100 bytes.
        let e = NeffHeader::parse(&[0u8; 100]).unwrap_err().to_string();
        assert!(
            e.starts_with("Invalid number of NEFF bytes received 0x64: the file is 100 bytes"),
            "{e}"
        );
        // A file that is not a NEFF is named for what it is, after the runtime's own words.
        let mut gz = vec![0x1f, 0x8b, 8, 0];
        gz.resize(0xf400, 0x41);
        let e = NeffHeader::parse(&gz).unwrap_err().to_string();
        assert!(
            e.starts_with("Invalid NEFF file size hdr sz: 0x4141414141414141, file sz: 0xf400:"),
            "{e}"
        );
        assert!(
            e.contains("the file's 62464 bytes; this is a gzip stream"),
            "{e}"
        );
        let e = NeffHeader::parse(b"").unwrap_err().to_string();
        assert!(e.ends_with("; the file is empty"), "{e}");
        let e = NeffHeader::parse(b"hello\n").unwrap_err().to_string();
        assert!(e.ends_with("this is a text file, not a NEFF"), "{e}");
        // header_size >= size
        let bad = NeffHeader {
            header_size: 2048,
            ..h.clone()
        };
        let e = NeffHeader::parse(&file_with(&bad, 0)).unwrap_err();
        assert!(matches!(
            e,
            ContainerError::HeaderSize {
                header_size: 2048,
                file_size: 1024,
                ..
            }
        ));
        assert_eq!(e.status(), NrtStatus::Invalid);
    }

    #[test]
    fn gates_run_in_order() {
        // Every gate failing at once: the version gate wins.
        let h = NeffHeader {
            version_major: 3,
            feature_bits: 1 << 40,
            data_size: 1 << 30,
            pkg_version: 7,
            ..Default::default()
        };
        let e = h.validate(2048).unwrap_err();
        assert!(matches!(
            e,
            ContainerError::UnsupportedVersion { major: 3, .. }
        ));
        assert_eq!(e.status(), NrtStatus::UnsupportedNeffVersion);
        let h = NeffHeader {
            version_major: 2,
            ..h
        };
        let e = h.validate(2048).unwrap_err();
        assert!(
            matches!(e, ContainerError::UnsupportedFeatures { offending, .. } if offending == 1 << 40)
        );
        assert!(e.to_string().contains("0x7ffffff"), "{e}");
        assert_eq!(e.status(), NrtStatus::UnsupportedNeffVersion);
        let h = NeffHeader {
            feature_bits: 0x209C00,
            ..h
        };
        let e = h.validate(2048).unwrap_err();
        assert!(matches!(e, ContainerError::DataSize { .. }));
        assert_eq!(e.status(), NrtStatus::Invalid);
        let h = NeffHeader {
            data_size: 1024,
            ..h
        };
        let e = h.validate(2048).unwrap_err();
        assert!(matches!(
            e,
            ContainerError::UnsupportedPackager { pkg_version: 7, .. }
        ));
        assert_eq!(e.status(), NrtStatus::UnsupportedNeffVersion);
        let h = NeffHeader {
            pkg_version: 1,
            ..h
        };
        h.validate(2048).unwrap();
    }

    #[test]
    fn feature_trap_only_on_major_2_and_ignores_bit_63() {
        let h = NeffHeader {
            version_major: 1,
            feature_bits: u64::MAX,
            ..Default::default()
        };
        h.validate(1024).unwrap();
        let h = NeffHeader {
            version_major: 2,
            feature_bits: 1 << 63 | FEATURE_SUPPORTED,
            ..Default::default()
        };
        h.validate(1024).unwrap();
        let h = NeffHeader {
            feature_bits: 1 << 27,
            ..h
        };
        assert!(h.validate(1024).is_err());
    }

    #[test]
    fn lnc_gate_only_with_the_vnc_bit() {
        let h = NeffHeader {
            feature_bits: FEATURE_VNC,
            vnc_size: 2,
            ..Default::default()
        };
        h.check_lnc(2, Chip::of(Arch::Cayman)).unwrap();
        let e = h.check_lnc(1, Chip::of(Arch::Cayman)).unwrap_err();
        assert_eq!(e.status(), NrtStatus::Invalid);
        assert!(e.to_string().contains("--lnc=2"), "{e}");
        let h = NeffHeader {
            feature_bits: 0,
            vnc_size: 2,
            ..h
        };
        h.check_lnc(1, Chip::of(Arch::Sunda)).unwrap();
    }

    /// The reference's advice (recompile, or re-run with the NEFF's size)
    /// only when the NEFF's size is one the chip takes; otherwise the
    /// message says what is wrong with the file.
    #[test]
    fn lnc_advice_names_only_settings_the_chip_takes() {
        let mut h = NeffHeader {
            feature_bits: FEATURE_VNC,
            vnc_size: 1,
            ..Default::default()
        };
        h.set_name("m.neff");
        let e = h.check_lnc(2, Chip::of(Arch::Cayman)).unwrap_err().to_string();
        assert!(
            e.contains("re-run with `NEURON_LOGICAL_NC_CONFIG=1`"),
            "{e}"
        );
        for bad in [0, 3, u32::MAX] {
            h.vnc_size = bad;
            let e = h.check_lnc(2, Chip::of(Arch::Cayman)).unwrap_err();
            assert_eq!(e.status(), NrtStatus::Invalid);
            let e = e.to_string();
            assert!(!e.contains("NEURON_LOGICAL_NC_CONFIG="), "{e}");
            assert!(!e.contains(&format!("--lnc={bad}")), "{e}");
            assert!(e.contains(&format!("vnc_size {bad}")), "{e}");
            assert!(
                e.contains("which trn2 cannot take (it takes logical-core size 1 or 2)"),
                "{e}"
            );
        }
        // trn1 takes only 1: a NEFF built for 2 is for another chip.
        h.vnc_size = 2;
        let e = h.check_lnc(1, Chip::of(Arch::Sunda)).unwrap_err().to_string();
        assert!(!e.contains("NEURON_LOGICAL_NC_CONFIG=2"), "{e}");
        assert!(e.contains("compiled for trn2 or trn3"), "{e}");
        // Recompiled for the chip, not with another LNC: a trn2 NEFF at
        // `--lnc=1` is still a trn2 NEFF.
        assert!(
            e.contains("recompile it for trn1 with `neuronx-cc --target=trn1`"),
            "{e}"
        );
        assert!(!e.contains("--lnc"), "{e}");
        assert!(e.contains("which trn1 cannot take (it takes logical-core size 1)"), "{e}");
        // On an instance, its chip and its family's target.
        let inf2 = crate::instance::Instance::named("inf2.xlarge").unwrap().chip();
        let e = h.check_lnc(1, inf2).unwrap_err().to_string();
        assert!(
            e.contains("which the Inferentia2 of inf2.xlarge cannot take")
                && e.contains("recompile it for the Inferentia2 of inf2.xlarge with `neuronx-cc --target=inf2`"),
            "{e}"
        );
    }

    /// A tar archive whose first member has a short name fails the packager
    /// gate, not the first two: the message still says what it is (it did
    /// only when the name was long enough to fail `header_size`).
    #[test]
    fn a_tar_archive_is_named_at_whichever_header_gate_it_fails() {
        let mut tar = vec![0u8; 4096];
        tar[..4].copy_from_slice(b"./a\0");
        tar[257..263].copy_from_slice(b"ustar\0");
        let h = NeffHeader::parse(&tar).unwrap();
        let e = h.validate(tar.len() as u64).unwrap_err();
        assert!(matches!(e, ContainerError::UnsupportedPackager { .. }), "{e}");
        assert!(e.to_string().contains("this is a tar archive, not a NEFF"), "{e}");
        // A NEFF's own header names nothing.
        let neff = NeffHeader {
            pkg_version: 9,
            data_size: 1024,
            ..crate::container::writer::Producer::V2_18.default_header()
        };
        let e = neff.validate(1 << 20).unwrap_err();
        assert!(matches!(e, ContainerError::UnsupportedPackager { .. }), "{e}");
        assert!(!e.to_string().contains("this is"), "{e}");
    }
}
