//! Device geometry: how many cores, how much HBM and where, and the
//! state-buffer apertures (docs/reference/stage.md §5.1, §6.1, §13.3).
//!
//! Everything that depends on the architecture is answered here so the rest
//! of the loader never matches on `Arch` to find an address or a size.

use super::DeviceError;
use crate::arch::Arch;
use crate::ids::{LCore, PCore, Pa};

/// Allocation granule of the kernel allocator (its `PAGE_SIZE`).
pub const GRANULE: u64 = 4096;

/// Firmware carve-out reserved at the start of every HBM channel at probe
/// time; usable HBM starts at `channel_base + CARVEOUT`, which is also why no
/// allocation ever has PA 0.
pub const CARVEOUT: u64 = 16 << 20;

/// Distance between two channel bases on every real device (a 64 GiB window
/// per HBM stack). Custom geometries with larger channels use a multiple.
pub const CHANNEL_STRIDE: u64 = 0x10_0000_0000;

pub use crate::arch::SB_WINDOW;

/// State-buffer partitions per core.
#[cfg(test)]
pub const SB_PARTITIONS: u32 = 128;

/// AXI address distance between two state-buffer partitions.
#[cfg(test)]
pub const SB_PARTITION_STRIDE: u64 = 1 << 18;

/// Where the simulated state-buffer apertures start.
///
/// The device-side value is not documented (§13.3, confidence L); what matters is that
/// it never collides with HBM. `1 << 48` (256 TiB) lies above every HBM window
/// a geometry may declare ([`Geometry::custom`] rejects layouts that would
/// reach it), and the apertures themselves end below `1 << 49`.
pub const SB_APERTURE_BASE: u64 = 1 << 48;

/// Distance between the apertures of two cores. 64 GiB leaves room for the
/// event registers, which sit up to `0x8_0270_0000 + 4 * u32::MAX` above the
/// state-buffer base on cayman and mariana.
pub const SB_APERTURE_STRIDE: u64 = 0x10_0000_0000;

/// Largest core count [`Geometry::custom`] accepts.
pub const MAX_CORES: u32 = 256;

/// Largest channel count [`Geometry::custom`] accepts.
pub const MAX_CHANNELS: u32 = 64;

/// The shape of one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    arch: Arch,
    cores: u32,
    hbm_channels: u32,
    hbm_bytes_per_channel: u64,
    channel_stride: u64,
    /// A made-up device ([`Geometry::custom`]): libnrt has no rule for its
    /// logical cores.
    made_up: bool,
}

impl Geometry {
    /// The geometry of a real device of this architecture (§13.3 table).
    pub fn for_arch(arch: Arch) -> Geometry {
        let (cores, hbm_channels, hbm_bytes_per_channel) = match arch {
            Arch::Sunda => (2, 2, 16 << 30),
            Arch::Cayman => (8, 4, 24 << 30),
            Arch::Mariana => (8, 4, 36 << 30),
        };
        Geometry {
            arch,
            cores,
            hbm_channels,
            hbm_bytes_per_channel,
            channel_stride: CHANNEL_STRIDE,
            made_up: false,
        }
    }

    /// A made-up device for tests: any core count in `1..=256`, any channel
    /// count in `1..=64` that divides the core count (so every channel serves
    /// the same number of cores), and any channel size that is a multiple of
    /// 4 KiB and leaves at least one granule after the carve-out.
    ///
    /// Channels larger than 64 GiB get a base stride rounded up to a multiple
    /// of 64 GiB, so channel bases stay aligned the way real ones are.
    pub fn custom(
        arch: Arch,
        cores: u32,
        hbm_channels: u32,
        hbm_bytes_per_channel: u64,
    ) -> Result<Geometry, DeviceError> {
        let invalid = |reason: String| Err(DeviceError::Invalid { reason });
        if cores == 0 || cores > MAX_CORES {
            return invalid(format!("core count {cores} is outside 1..={MAX_CORES}"));
        }
        if hbm_channels == 0 || hbm_channels > MAX_CHANNELS {
            return invalid(format!(
                "HBM channel count {hbm_channels} is outside 1..={MAX_CHANNELS}"
            ));
        }
        if !cores.is_multiple_of(hbm_channels) {
            return invalid(format!(
                "{cores} cores cannot be shared evenly by {hbm_channels} HBM channels"
            ));
        }
        if !hbm_bytes_per_channel.is_multiple_of(GRANULE) {
            return invalid(format!(
                "HBM channel size {hbm_bytes_per_channel:#x} is not a multiple of {GRANULE}"
            ));
        }
        if hbm_bytes_per_channel < CARVEOUT + GRANULE {
            return invalid(format!(
                "HBM channel size {hbm_bytes_per_channel:#x} leaves nothing after the \
                 {CARVEOUT:#x}-byte firmware carve-out"
            ));
        }
        let channel_stride = hbm_bytes_per_channel
            .div_ceil(CHANNEL_STRIDE)
            .checked_mul(CHANNEL_STRIDE);
        let hbm_end = channel_stride.and_then(|s| s.checked_mul(u64::from(hbm_channels)));
        match (channel_stride, hbm_end) {
            (Some(channel_stride), Some(end)) if end <= SB_APERTURE_BASE => Ok(Geometry {
                arch,
                cores,
                hbm_channels,
                hbm_bytes_per_channel,
                channel_stride,
                made_up: true,
            }),
            _ => invalid(format!(
                "{hbm_channels} HBM channels of {hbm_bytes_per_channel:#x} bytes would reach the \
                 state-buffer apertures at {SB_APERTURE_BASE:#x}"
            )),
        }
    }

    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// Physical cores on the device.
    pub fn cores(&self) -> u32 {
        self.cores
    }

    pub fn hbm_channels(&self) -> u32 {
        self.hbm_channels
    }

    /// Bytes of HBM per channel, carve-out included.
    pub fn hbm_bytes_per_channel(&self) -> u64 {
        self.hbm_bytes_per_channel
    }

    /// Bytes of HBM per channel an allocator may hand out.
    pub fn usable_bytes_per_channel(&self) -> u64 {
        self.hbm_bytes_per_channel - CARVEOUT
    }

    /// Physical cores that share one HBM channel.
    pub fn cores_per_hbm(&self) -> u32 {
        self.cores / self.hbm_channels
    }

    /// The HBM channel a physical core allocates from.
    pub fn hbm_of(&self, core: PCore) -> Result<u32, DeviceError> {
        self.check_core(core)?;
        Ok(core.0 / self.cores_per_hbm())
    }

    /// The first byte of a channel's window (the carve-out starts here).
    pub fn channel_base(&self, channel: u32) -> Result<Pa, DeviceError> {
        if channel >= self.hbm_channels {
            return Err(DeviceError::Invalid {
                reason: format!(
                    "HBM channel {channel} out of range (device has {})",
                    self.hbm_channels
                ),
            });
        }
        Ok(Pa(u64::from(channel) * self.channel_stride))
    }

    /// Logical-core size when nothing is configured: sunda is forced to 1,
    /// the others default to 2 unless the core count is odd.
    pub fn default_lnc(&self) -> u32 {
        if self.arch == Arch::Sunda || !self.cores.is_multiple_of(2) {
            1
        } else {
            2
        }
    }

    /// Whether logical cores of `lnc` physical cores can be made here: the
    /// one LNC rule. A real device takes the sizes libnrt takes on its
    /// architecture ([`Arch::lnc_sizes`]); a made-up one, for tests of many
    /// cores, any power of two that divides its cores.
    pub fn takes_lnc(&self, lnc: u32) -> bool {
        let sized = if self.made_up {
            lnc.is_power_of_two()
        } else {
            self.arch.lnc_sizes().contains(&lnc)
        };
        sized && self.cores.is_multiple_of(lnc)
    }

    /// [`Geometry::takes_lnc`] in words.
    pub fn lnc_sizes_text(&self) -> String {
        if self.made_up {
            format!("a power of two dividing its {} cores", self.cores)
        } else {
            self.arch.lnc_sizes_text()
        }
    }

    /// Physical cores of logical core `lcore` at LNC size `lnc`
    /// (`[L*s .. L*s+s-1]`, §5.1), after checking the size is usable here.
    pub fn pcores_of(&self, lcore: LCore, lnc: u32) -> Result<std::ops::Range<u32>, DeviceError> {
        if !self.takes_lnc(lnc) {
            return Err(DeviceError::Invalid {
                reason: format!(
                    "LNC size {lnc}: this device takes logical-core size {}",
                    self.lnc_sizes_text()
                ),
            });
        }
        let visible = self.cores / lnc;
        if lcore.0 >= visible {
            return Err(DeviceError::Invalid {
                reason: format!("Invalid vnc {}, visible vncs: {visible}", lcore.0),
            });
        }
        Ok(lcore.0 * lnc..lcore.0 * lnc + lnc)
    }

    /// Bytes of state buffer each partition really has (the rest of the
    /// 256 KiB partition stride is unbacked).
    pub fn sb_active_bytes_per_partition(&self) -> u64 {
        match self.arch {
            Arch::Sunda => 192 << 10,
            Arch::Cayman => 0x38000,
            Arch::Mariana => 256 << 10,
        }
    }

    /// The state-buffer AXI base of a core (the address of an `SB` variable).
    pub fn sb_base(&self, core: PCore) -> Result<Pa, DeviceError> {
        self.check_core(core)?;
        Ok(Pa(SB_APERTURE_BASE + u64::from(core.0) * SB_APERTURE_STRIDE))
    }

    /// Offset of event register 0 from the state-buffer base.
    pub fn event_offset(&self) -> u64 {
        match self.arch {
            Arch::Sunda => 0x270_0000,
            Arch::Cayman | Arch::Mariana => 0x8_0270_0000,
        }
    }

    /// The address of event register `id` of a core.
    pub fn event_addr(&self, core: PCore, id: u32) -> Result<Pa, DeviceError> {
        let base = self.sb_base(core)?;
        Ok(Pa(base.0 + self.event_offset() + 4 * u64::from(id)))
    }

    fn check_core(&self, core: PCore) -> Result<(), DeviceError> {
        if core.0 >= self.cores {
            return Err(DeviceError::Invalid {
                reason: format!(
                    "NeuronCore {} out of range (device has {})",
                    core.0, self.cores
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_values_per_arch() {
        let s = Geometry::for_arch(Arch::Sunda);
        assert_eq!((s.cores(), s.hbm_channels(), s.cores_per_hbm()), (2, 2, 1));
        assert_eq!(s.hbm_bytes_per_channel(), 0x4_0000_0000);
        assert_eq!(s.channel_base(0).unwrap(), Pa(0));
        assert_eq!(s.channel_base(1).unwrap(), Pa(0x10_0000_0000));
        assert_eq!(s.hbm_of(PCore(1)).unwrap(), 1);
        assert_eq!(s.default_lnc(), 1);
        assert_eq!(s.sb_active_bytes_per_partition(), 192 * 1024);

        let c = Geometry::for_arch(Arch::Cayman);
        assert_eq!((c.cores(), c.hbm_channels(), c.cores_per_hbm()), (8, 4, 2));
        assert_eq!(c.hbm_bytes_per_channel(), 0x6_0000_0000);
        assert_eq!(c.channel_base(3).unwrap(), Pa(0x30_0000_0000));
        assert_eq!(c.hbm_of(PCore(5)).unwrap(), 2);
        assert_eq!(c.default_lnc(), 2);
        assert_eq!(c.sb_active_bytes_per_partition(), 0x38000);

        let m = Geometry::for_arch(Arch::Mariana);
        assert_eq!((m.cores(), m.hbm_channels(), m.cores_per_hbm()), (8, 4, 2));
        assert_eq!(m.hbm_bytes_per_channel(), 0x9_0000_0000);
        assert_eq!(m.hbm_of(PCore(7)).unwrap(), 3);
        assert_eq!(m.default_lnc(), 2);
        assert_eq!(m.sb_active_bytes_per_partition(), 256 * 1024);

        assert_eq!(u64::from(SB_PARTITIONS) * SB_PARTITION_STRIDE, SB_WINDOW);
    }

    #[test]
    fn event_registers_follow_the_arch_offset() {
        let s = Geometry::for_arch(Arch::Sunda);
        let base = s.sb_base(PCore(1)).unwrap().0;
        assert_eq!(
            s.event_addr(PCore(1), 3).unwrap(),
            Pa(base + 0x270_0000 + 12)
        );
        let c = Geometry::for_arch(Arch::Cayman);
        let base = c.sb_base(PCore(7)).unwrap().0;
        assert_eq!(c.event_addr(PCore(7), 0).unwrap(), Pa(base + 0x8_0270_0000));
        assert!(c.event_addr(PCore(8), 0).is_err());
        assert!(c.sb_base(PCore(8)).is_err());
    }

    #[test]
    fn apertures_never_touch_hbm_or_each_other() {
        for arch in Arch::ALL {
            let g = Geometry::for_arch(arch);
            let hbm_end =
                g.channel_base(g.hbm_channels() - 1).unwrap().0 + g.hbm_bytes_per_channel();
            for core in 0..g.cores() {
                let sb = g.sb_base(PCore(core)).unwrap().0;
                assert!(sb >= hbm_end, "{arch:?} core {core}");
                let last_event = g.event_addr(PCore(core), u32::MAX).unwrap().0 + 4;
                assert!(last_event <= sb + SB_APERTURE_STRIDE);
            }
        }
    }

    #[test]
    fn custom_geometry_validates_instead_of_panicking() {
        assert!(Geometry::custom(Arch::Cayman, 0, 1, 1 << 30).is_err());
        assert!(Geometry::custom(Arch::Cayman, 257, 1, 1 << 30).is_err());
        assert!(Geometry::custom(Arch::Cayman, 8, 0, 1 << 30).is_err());
        assert!(Geometry::custom(Arch::Cayman, 8, 3, 1 << 30).is_err());
        assert!(Geometry::custom(Arch::Cayman, 8, 4, (1 << 30) + 1).is_err());
        assert!(Geometry::custom(Arch::Cayman, 8, 4, CARVEOUT).is_err());
        assert!(Geometry::custom(Arch::Cayman, 64, 64, u64::MAX - 4095).is_err());
        let g = Geometry::custom(Arch::Mariana, 256, 64, 1 << 30).unwrap();
        assert_eq!(g.cores_per_hbm(), 4);
        assert_eq!(g.hbm_of(PCore(255)).unwrap(), 63);
        let big = Geometry::custom(Arch::Cayman, 2, 2, 100 << 30).unwrap();
        assert_eq!(big.channel_base(1).unwrap(), Pa(2 * CHANNEL_STRIDE));
    }

    #[test]
    fn logical_cores_map_to_consecutive_physical_cores() {
        let c = Geometry::for_arch(Arch::Cayman);
        assert_eq!(c.pcores_of(LCore(3), 2).unwrap(), 6..8);
        assert_eq!(c.pcores_of(LCore(7), 1).unwrap(), 7..8);
        assert!(c.pcores_of(LCore(4), 2).is_err());
        assert!(c.pcores_of(LCore(0), 3).is_err());
        assert!(c.pcores_of(LCore(0), 0).is_err());
    }
}
