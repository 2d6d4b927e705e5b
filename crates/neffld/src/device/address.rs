//! Addresses as the real runtime writes them (runtime 2.30 on trn2, the ten
//! shared captures): what a capture, `neffld load --dump` and `neffld
//! compare` show for a simulated placement.
//!
//! The simulated device numbers HBM across channels (channel base + offset)
//! and puts the state buffers at `1 << 48` ([`super::geometry`]); the
//! runtime's addresses are local to the core's HBM channel and carry a tag
//! in bit 47. What the runtime allocates for itself in each small pool when
//! it starts is taken from the simulated pools too
//! ([`RUNTIME_SMALL_POOL_BYTES`], [`super::SimDevice::as_started`]), so that
//! a model's small allocations land, aligned, where the runtime's did.
//! Every figure is the runtime's, kept in this one place with its capture
//! evidence.

use super::geometry::{Geometry, SB_APERTURE_BASE, SB_APERTURE_STRIDE};
use crate::ids::PCore;
use crate::Arch;

/// The tag of every device address (bit 47): all image addresses of the ten
/// captures are `0x8005c0…`, every address word their instructions carry
/// (HBM, state buffer, registers) has it.
pub const DEVICE_ADDR_TAG: u64 = 1 << 47;

/// Bytes at the bottom of each channel's small pool that the runtime takes
/// for itself when it starts, before any model (a [`crate::api::Runtime`]
/// starts its device with them taken): a model's first small
/// allocation (sg00's first weight, which the rewritten sp DMA records name)
/// sits at `0x5c03b0000`, 3,866,624 bytes above the pool's start
/// (`0x5c0000000`), in all ten captures. What the captures show of it: one
/// 4 KiB page per core that every engine's preamble polls (`0x5c035e000` on
/// the channel's first core, `0x5c035f000` on its second), a page the first
/// core's engines share (`0x5c0365000`), and the table-load rings of both
/// cores (`0x5c0375000`–`0x5c037f000`), which a fresh runtime has placed
/// before any weight although they are counted with the model
/// (docs/decisions.md, "Hardware fidelity").
pub const RUNTIME_SMALL_POOL_BYTES: u64 = 0x3b_0000;

/// Where the state buffer of the channel's first core sits in the device
/// map: the state-buffer operands of sg00 (physical core 4, the first core
/// of HBM channel 2) are `0x8020_0000_0000 + offset`.
pub const SB_DEVICE_BASE: u64 = 0x20_0000_0000;

/// Distance between the windows of two cores of one channel: the preambles
/// write the register blocks `0x8028_02…` on core 4 and `0x8038_02…` on
/// core 5, and pe's partner-core event register sits at `0x8028_0270_1804`
/// / `0x8038_0270_1804` — [`Geometry::event_offset`] above a state buffer
/// base at `0x20_0000_0000` and `0x30_0000_0000`.
pub const SB_DEVICE_STRIDE: u64 = 0x10_0000_0000;

/// The tag `geometry`'s addresses carry: bit 47 on trn2 and trn3; none on
/// trn1, whose captured addresses (2.23 and 2.25: images at `0x1048000` and
/// `0x3c0058000`, rings at `0x1018000`) are plain channel offsets.
pub fn tag(geometry: &Geometry) -> u64 {
    match geometry.arch() {
        Arch::Sunda => 0,
        Arch::Cayman | Arch::Mariana => DEVICE_ADDR_TAG,
    }
}

impl Geometry {
    /// The address the runtime writes for simulated address `pa` (tagged
    /// and channel-local, [`device_address`]): the one form every address a
    /// person or a capture sees takes. Kept here, beside the address rules,
    /// so the geometry does not import them.
    pub fn runtime_address(&self, pa: u64) -> u64 {
        device_address(self, pa)
    }
}

/// The address the runtime would write for simulated address `pa` on
/// `geometry`: HBM channel-local, a state-buffer window per core of the
/// channel, tagged ([`tag`]). An address outside both is only tagged.
pub fn device_address(geometry: &Geometry, pa: u64) -> u64 {
    let tag = tag(geometry);
    let channel_bytes = geometry.hbm_bytes_per_channel();
    for c in 0..geometry.hbm_channels() {
        let Ok(base) = geometry.channel_base(c) else {
            continue;
        };
        if pa >= base.0 && pa - base.0 < channel_bytes {
            return tag | (pa - base.0);
        }
    }
    if pa >= SB_APERTURE_BASE {
        let rel = pa - SB_APERTURE_BASE;
        let core = rel / SB_APERTURE_STRIDE;
        if core < u64::from(geometry.cores()) {
            let local_core = core % u64::from(geometry.cores_per_hbm().max(1));
            return tag
                | (SB_DEVICE_BASE + local_core * SB_DEVICE_STRIDE + rel % SB_APERTURE_STRIDE);
        }
    }
    tag | pa
}

/// The simulated address that device address `addr` names for core
/// `pcore` (the inverse of [`device_address`] on the core's own HBM channel
/// and the state buffers of that channel's cores); `None` for a word
/// without the tag or outside the map.
pub fn simulated_address(geometry: &Geometry, pcore: PCore, addr: u64) -> Option<u64> {
    let tag = tag(geometry);
    if addr & DEVICE_ADDR_TAG != tag {
        return None;
    }
    let local = addr & !DEVICE_ADDR_TAG;
    let channel = geometry.hbm_of(pcore).ok()?;
    if local >= SB_DEVICE_BASE {
        let rel = local - SB_DEVICE_BASE;
        let local_core = rel / SB_DEVICE_STRIDE;
        if local_core >= u64::from(geometry.cores_per_hbm()) {
            return None;
        }
        let core = u64::from(channel * geometry.cores_per_hbm()) + local_core;
        return Some(SB_APERTURE_BASE + core * SB_APERTURE_STRIDE + rel % SB_DEVICE_STRIDE);
    }
    if local >= geometry.hbm_bytes_per_channel() {
        return None;
    }
    geometry.channel_base(channel).ok().map(|b| b.0 + local)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::geometry::CARVEOUT;
    use crate::device::SMALL_POOL_BYTES;

    #[test]
    fn hbm_is_channel_local_and_tagged() {
        let g = Geometry::for_arch(Arch::Cayman);
        let base = g.channel_base(2).unwrap().0;
        // The shared scratchpad right after the carve-out: 0x8000_0100_0000
        // in every capture's rewritten DMA records.
        assert_eq!(device_address(&g, base + CARVEOUT), 0x8000_0100_0000);
        // A model's first small allocation, above the runtime's own.
        let small = base + g.hbm_bytes_per_channel() - SMALL_POOL_BYTES;
        assert_eq!(
            device_address(&g, small + RUNTIME_SMALL_POOL_BYTES),
            0x8005_c03b_0000
        );
    }

    #[test]
    fn trn1_addresses_are_plain_channel_offsets() {
        let g = Geometry::for_arch(Arch::Sunda);
        let base = g.channel_base(1).unwrap().0;
        // The 2.23 captures' first image: 0x48000 above the carve-out.
        let pa = base + CARVEOUT + 0x4_8000;
        assert_eq!(device_address(&g, pa), 0x104_8000);
        assert_eq!(simulated_address(&g, PCore(1), 0x104_8000), Some(pa));
        assert_eq!(
            simulated_address(&g, PCore(1), DEVICE_ADDR_TAG | 0x104_8000),
            None
        );
    }

    #[test]
    fn state_buffers_follow_the_core_within_its_channel() {
        let g = Geometry::for_arch(Arch::Cayman);
        let sb4 = g.sb_base(PCore(4)).unwrap().0;
        assert_eq!(device_address(&g, sb4 + 0x4000), 0x8020_0000_4000);
        let ev5 = g.event_addr(PCore(5), 0x601).unwrap().0;
        assert_eq!(device_address(&g, ev5), 0x8038_0270_1804);
    }

    #[test]
    fn the_simulated_address_comes_back() {
        let g = Geometry::for_arch(Arch::Cayman);
        let base = g.channel_base(2).unwrap().0;
        let small = base + g.hbm_bytes_per_channel() - SMALL_POOL_BYTES;
        let sb5 = g.sb_base(PCore(5)).unwrap().0;
        for pa in [
            base + CARVEOUT,
            base + CARVEOUT + 12_345,
            small,
            small + 0x8000,
            sb5 + 64,
        ] {
            let d = device_address(&g, pa);
            assert_eq!(simulated_address(&g, PCore(4), d), Some(pa), "{pa:#x}");
        }
        // Untagged, past the channel, another channel's core.
        assert_eq!(simulated_address(&g, PCore(4), base + CARVEOUT), None);
        assert_eq!(simulated_address(&g, PCore(4), 0x8010_0000_0000), None);
        assert_eq!(simulated_address(&g, PCore(4), 0x8040_0000_0000), None);
    }
}
