//! The device layer through its public API: both backends, behind `Device`.

use std::collections::BTreeMap;
use std::sync::Arc;

use neffld::device::{
    AllocReq, Allocation, CopyOp, Device, DeviceError, FaultOp, FaultPlan, Geometry, MemHandle,
    MemUsage, NullDevice, Owner, Place, SimDevice, Write, CARVEOUT, GRANULE, SMALL_POOL_BYTES,
};
use neffld::ids::{LCore, PCore, Pa};
use neffld::{Arch, NrtStatus};
use proptest::prelude::*;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn req(core: u32, size: u64, align: u64, usage: MemUsage) -> AllocReq<'static> {
    AllocReq {
        size,
        align,
        core: PCore(core),
        usage,
        owner: Owner::Runtime,
        place: Place::Kernel,
        hint: "test",
    }
}

fn backends(geometry: Geometry) -> Vec<Box<Device>> {
    vec![
        Box::new(SimDevice::new(geometry.clone())),
        Box::new(NullDevice::new(geometry)),
    ]
}

/// Asserts live allocations are disjoint, granule-aligned, outside every
/// carve-out and inside their channel.
fn assert_sane_layout(dev: &Device) {
    let g = dev.geometry();
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for a in dev.live_allocations() {
        let base = g.channel_base(a.channel).unwrap().0;
        assert_eq!(g.hbm_of(a.core).unwrap(), a.channel);
        assert_eq!(a.pa.0 % GRANULE, 0, "{a:?}");
        assert!(a.pa.0 >= base + CARVEOUT, "{a:?} is in the carve-out");
        assert!(
            a.pa.0 + a.charged <= base + g.hbm_bytes_per_channel(),
            "{a:?}"
        );
        assert_eq!(a.charged, a.size.max(1).div_ceil(GRANULE) * GRANULE);
        spans.push((a.pa.0, a.pa.0 + a.charged));
    }
    spans.sort();
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "overlap: {:?} and {:?}", w[0], w[1]);
    }
}

#[test]
fn geometry_reaches_the_device_trait() {
    for arch in Arch::ALL {
        let dev = SimDevice::new(Geometry::for_arch(arch));
        let g = dev.geometry();
        let expect = match arch {
            Arch::Sunda => (2, 2, 16 * GIB, 1),
            Arch::Cayman => (8, 4, 24 * GIB, 2),
            Arch::Mariana => (8, 4, 36 * GIB, 2),
            other => panic!("no expected geometry for {other:?}"),
        };
        let got = (
            g.cores(),
            g.hbm_channels(),
            g.hbm_bytes_per_channel(),
            g.default_lnc(),
        );
        assert_eq!(got, expect, "{arch:?}");
        let sb0 = dev.sb_base(PCore(0)).unwrap();
        let sb1 = dev.sb_base(PCore(1)).unwrap();
        assert_ne!(sb0, sb1);
        let off = if arch == Arch::Sunda {
            0x270_0000
        } else {
            0x8_0270_0000
        };
        assert_eq!(dev.event_addr(PCore(1), 5).unwrap(), Pa(sb1.0 + off + 20));
        let err = dev.sb_base(PCore(g.cores())).unwrap_err();
        assert_eq!(err.status(), NrtStatus::Invalid);
    }
}

#[test]
fn mixed_allocations_are_disjoint_aligned_and_rounded() {
    for dev in backends(Geometry::for_arch(Arch::Cayman)) {
        let sizes = [
            0,
            1,
            4095,
            4096,
            4097,
            100_000,
            512 * 1024,
            512 * 1024 + 1,
            3 * MIB,
        ];
        let aligns = [0, 4096, 8192, 32768, 1 << 22];
        for core in 0..8 {
            for (i, &size) in sizes.iter().enumerate() {
                let align = aligns[(i + core as usize) % aligns.len()];
                let a = dev.alloc(req(core, size, align, MemUsage::Weight)).unwrap();
                assert_ne!(a.pa.0, 0);
                if align > 0 {
                    assert_eq!(a.pa.0 % align, 0, "size {size} align {align}");
                }
                assert_eq!(a.size, size);
                assert_eq!(a.charged, size.max(1).div_ceil(4096) * 4096);
            }
        }
        assert_eq!(dev.live_count(), 8 * sizes.len());
        assert_sane_layout(dev.as_ref());
    }
}

#[test]
fn small_requests_live_in_the_top_gib_of_the_channel() {
    let dev = SimDevice::new(Geometry::for_arch(Arch::Mariana));
    let g = dev.geometry().clone();
    let end = g.channel_base(3).unwrap().0 + g.hbm_bytes_per_channel();
    let small = dev.alloc(req(7, 512 * 1024, 0, MemUsage::DmaRing)).unwrap();
    let large = dev
        .alloc(req(6, 512 * 1024 + 4096, 0, MemUsage::Weight))
        .unwrap();
    assert!(small.pa.0 >= end - SMALL_POOL_BYTES && small.pa.0 < end);
    assert_eq!(small.pa.0, end - SMALL_POOL_BYTES);
    assert_eq!(large.pa.0, g.channel_base(3).unwrap().0 + CARVEOUT);
}

#[test]
fn freeing_everything_coalesces_back_to_whole_pools() {
    // 3 GiB usable: a 2 GiB main pool and the 1 GiB small pool.
    let g = Geometry::custom(Arch::Cayman, 2, 1, 3 * GIB + CARVEOUT).unwrap();
    let dev = SimDevice::new(g);
    let mut handles = Vec::new();
    let sizes = [5 * MIB, 4096, 700 * 1024, 64 * 1024, 13 * MIB];
    let mut i = 0;
    loop {
        let size = sizes[i % sizes.len()];
        match dev.alloc(req((i % 2) as u32, size, 0, MemUsage::Tensor)) {
            Ok(a) => handles.push(a.handle),
            Err(DeviceError::NoMem { .. }) if size == 4096 => break,
            Err(DeviceError::NoMem { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        i += 1;
    }
    assert!(dev.free_bytes(0) < 4096);
    assert_sane_layout(&dev);
    // Free every other block first, then the rest, so merges happen on both
    // sides of a freed block.
    let (odd, even): (Vec<_>, Vec<_>) = handles.iter().enumerate().partition(|(i, _)| i % 2 == 1);
    for (_, &h) in odd.into_iter().chain(even) {
        dev.free(h).unwrap();
    }
    assert_eq!(dev.live_count(), 0);
    assert_eq!(dev.free_bytes(0), 3 * GIB);
    let main = dev.alloc(req(0, 2 * GIB, 0, MemUsage::Tensor)).unwrap();
    let small = dev.alloc(req(1, GIB, 0, MemUsage::Tensor)).unwrap();
    assert_eq!(main.pa, Pa(CARVEOUT));
    assert_eq!(small.pa, Pa(CARVEOUT + 2 * GIB));
}

#[test]
fn out_of_memory_is_resource_and_changes_nothing() {
    for dev in backends(Geometry::for_arch(Arch::Sunda)) {
        let before = dev.ledger();
        let err = dev
            .alloc(req(1, 17 * GIB, 32768, MemUsage::Weight))
            .unwrap_err();
        assert!(matches!(
            err,
            DeviceError::NoMem { size, core: PCore(1), channel: 1, usage: MemUsage::Weight, .. }
                if size == 17 * GIB
        ));
        assert_eq!(err.status(), NrtStatus::Resource);
        assert_eq!(err.status().code(), 4);
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "Failed to allocate {} bytes (alignment: 32768, usage: WEIGHT) on NC 1: out of device memory",
                17 * GIB
            )),
            "{msg}"
        );
        assert_eq!(dev.ledger(), before);
        assert_eq!(dev.live_count(), 0);
        // The channel really is exhaustible, and then even a granule fails.
        let all = dev
            .alloc(req(0, 16 * GIB - CARVEOUT - GIB, 0, MemUsage::Weight))
            .unwrap();
        let top = dev.alloc(req(0, GIB, 0, MemUsage::Weight)).unwrap();
        let e = dev.alloc(req(0, 0, 0, MemUsage::Generic)).unwrap_err();
        assert_eq!(e.status(), NrtStatus::Resource);
        // The other channel is untouched.
        dev.alloc(req(1, 4096, 0, MemUsage::Generic)).unwrap();
        dev.free(all.handle).unwrap();
        dev.free(top.handle).unwrap();
    }
}

#[test]
fn kernel_validation_is_invalid() {
    for dev in backends(Geometry::for_arch(Arch::Cayman)) {
        let bad = [
            req(8, 4096, 0, MemUsage::Weight),
            req(0, 4096, 3 << 12, MemUsage::Weight),
            req(0, i64::MAX as u64 + 1, 0, MemUsage::Weight),
            req(0, u64::MAX, 0, MemUsage::Weight),
        ];
        for r in bad {
            let e = dev.alloc(r).unwrap_err();
            assert_eq!(e.status(), NrtStatus::Invalid, "{r:?}: {e}");
        }
        assert_eq!(dev.live_count(), 0);
        assert_eq!(dev.ledger().total(), 0);
        // Size 0 is legal and takes one granule.
        let z = dev.alloc(req(0, 0, 0, MemUsage::Weight)).unwrap();
        assert_eq!((z.size, z.charged), (0, 4096));
        // Stale handles are unknown, never reused.
        dev.free(z.handle).unwrap();
        let e = dev.free(z.handle).unwrap_err();
        assert_eq!(e, DeviceError::UnknownHandle { handle: z.handle });
        assert_eq!(e.status(), NrtStatus::Failure);
        let again = dev.alloc(req(0, 0, 0, MemUsage::Weight)).unwrap();
        assert_ne!(again.handle, z.handle);
        assert!(dev.write(z.handle, 0, &[]).is_err());
    }
}

/// Scratchpad pages as §6.5 reserves them: 512 MiB, 4 MiB aligned, usage
/// SCRATCHPAD, from both cores of one cayman HBM until the channel is full.
#[test]
fn scratchpad_pages_fill_one_shared_channel() {
    let dev = NullDevice::new(Geometry::for_arch(Arch::Cayman));
    let page = 512 * MIB;
    let mut pages = Vec::new();
    let err = loop {
        let core = 2 + (pages.len() % 2) as u32;
        match dev.alloc(AllocReq {
            hint: "scratchpad",
            ..req(core, page, 4 * MIB, MemUsage::Scratchpad)
        }) {
            Ok(a) => {
                assert_eq!(a.pa.0 % (4 * MIB), 0);
                pages.push(a);
            }
            Err(e) => break e,
        }
    };
    // 23 GiB - 16 MiB of main pool holds 45 pages, the 1 GiB small pool 2.
    assert_eq!(pages.len(), 47);
    assert_eq!(err.status(), NrtStatus::Resource);
    assert!(
        err.to_string().contains("usage: SCRATCHPAD) on NC 3"),
        "{err}"
    );
    let l = dev.ledger();
    assert_eq!(l.used(PCore(2), MemUsage::Scratchpad), 24 * page);
    assert_eq!(l.used(PCore(3), MemUsage::Scratchpad), 23 * page);
    assert_eq!(l.channel_used(1), 47 * page);
    // The neighbouring HBM is untouched.
    dev.alloc(req(4, page, 4 * MIB, MemUsage::Scratchpad))
        .unwrap();
    assert_sane_layout(&dev);
}

#[test]
fn ledger_adds_up_per_core_and_usage_and_returns_to_zero() {
    let dev = SimDevice::new(Geometry::for_arch(Arch::Cayman));
    let plan = [
        (2, 10_000, MemUsage::Weight),
        (2, 4096, MemUsage::Weight),
        (3, 1, MemUsage::InstrPe),
        (3, 8192, MemUsage::DmaRing),
        (5, MIB, MemUsage::Scratchpad),
    ];
    let mut allocs = Vec::new();
    for (core, size, usage) in plan {
        allocs.push(dev.alloc(req(core, size, 0, usage)).unwrap());
    }
    let l = dev.ledger();
    assert_eq!(l.used(PCore(2), MemUsage::Weight), 12288 + 4096);
    assert_eq!(l.used(PCore(3), MemUsage::InstrPe), 4096);
    assert_eq!(l.used(PCore(3), MemUsage::DmaRing), 8192);
    assert_eq!(l.core_total(PCore(3)), 12288);
    assert_eq!(l.used(PCore(5), MemUsage::Scratchpad), MIB);
    assert_eq!(l.channel_used(1), 16384 + 12288);
    assert_eq!(l.channel_used(2), MIB);
    assert_eq!(l.total(), allocs.iter().map(|a| a.charged).sum::<u64>());
    let stats = dev.vnc_memory_stats(LCore(1), 2).unwrap();
    assert_eq!((stats.used, stats.limit), (16384 + 12288, 24 * GIB));
    let stats = dev.vnc_memory_stats(LCore(2), 1).unwrap();
    assert_eq!((stats.used, stats.limit), (16384, 24 * GIB));
    for a in &allocs {
        dev.free(a.handle).unwrap();
    }
    let l = dev.ledger();
    assert_eq!(l.total(), 0);
    for core in 0..8 {
        assert_eq!(l.core_total(PCore(core)), 0);
    }
}

#[test]
fn live_allocations_name_what_is_left() {
    let dev = SimDevice::new(Geometry::for_arch(Arch::Sunda));
    let a = dev
        .alloc(AllocReq {
            hint: "weights/w0",
            ..req(1, 100, 0, MemUsage::Weight)
        })
        .unwrap();
    let b = dev
        .alloc(AllocReq {
            hint: "scratchpad",
            ..req(0, 100, 0, MemUsage::Scratchpad)
        })
        .unwrap();
    dev.free(a.handle).unwrap();
    let live = dev.live_allocations();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].handle, b.handle);
    assert_eq!(live[0].hint, "scratchpad");
    assert_eq!(live[0].core, PCore(0));
    assert_eq!(live[0].usage, MemUsage::Scratchpad);
    assert_eq!(
        (live[0].pa, live[0].size, live[0].charged),
        (b.pa, 100, 4096)
    );
}

#[test]
fn sparse_storage_keeps_a_4gib_buffer_cheap() {
    let dev = SimDevice::new(Geometry::for_arch(Arch::Sunda));
    let big = dev.alloc(req(0, 4 * GIB, 0, MemUsage::Io)).unwrap();
    assert_eq!(dev.stored_pages(), 0);
    dev.write(big.handle, 3 * GIB + 17, &[0xAB]).unwrap();
    assert_eq!(dev.stored_pages(), 1);
    // A write straddling a page boundary touches exactly two pages.
    let pattern: Vec<u8> = (1..=200u8).collect();
    dev.write(big.handle, 8192 - 100, &pattern).unwrap();
    dev.write(big.handle, 4 * GIB - 3, b"end").unwrap();
    assert_eq!(dev.stored_pages(), 4);

    let mut one = [0u8; 1];
    dev.read(big.handle, 3 * GIB + 17, &mut one).unwrap();
    assert_eq!(one, [0xAB]);
    let mut back = vec![0u8; 200];
    dev.read(big.handle, 8192 - 100, &mut back).unwrap();
    assert_eq!(back, pattern);
    let mut tail = [0u8; 3];
    dev.read_pa(Pa(big.pa.0 + 4 * GIB - 3), &mut tail).unwrap();
    assert_eq!(&tail, b"end");
    // Never-written bytes read as zero.
    let mut zeros = vec![0xFFu8; 10_000];
    dev.read(big.handle, GIB, &mut zeros).unwrap();
    assert!(zeros.iter().all(|&b| b == 0));

    // Out of bounds, both directions.
    let e = dev.write(big.handle, 4 * GIB - 2, b"end").unwrap_err();
    assert!(matches!(
        e,
        DeviceError::OutOfBounds {
            op: CopyOp::Write,
            ..
        }
    ));
    assert_eq!(e.status(), NrtStatus::Failure);
    let e = dev.read(big.handle, u64::MAX, &mut one).unwrap_err();
    assert!(matches!(
        e,
        DeviceError::OutOfBounds {
            op: CopyOp::Read,
            ..
        }
    ));

    // Overwrite in place keeps the page count.
    dev.write(big.handle, 3 * GIB + 16, &[1, 2, 3]).unwrap();
    assert_eq!(dev.stored_pages(), 4);
    dev.read(big.handle, 3 * GIB + 17, &mut one).unwrap();
    assert_eq!(one, [2]);

    dev.free(big.handle).unwrap();
    assert_eq!(dev.stored_pages(), 0);
    assert!(dev.read(big.handle, 0, &mut one).is_err());
}

#[test]
fn copies_are_bounded_by_the_requested_size_not_the_granule() {
    for dev in backends(Geometry::for_arch(Arch::Sunda)) {
        let a = dev.alloc(req(0, 100, 0, MemUsage::Weight)).unwrap();
        assert_eq!(a.charged, 4096);
        dev.write(a.handle, 99, &[1]).unwrap();
        let e = dev.write(a.handle, 100, &[1]).unwrap_err();
        assert_eq!(
            e,
            DeviceError::OutOfBounds {
                op: CopyOp::Write,
                handle: a.handle,
                offset: 100,
                len: 1,
                size: 100
            }
        );
        let e = dev.read(a.handle, 50, &mut [0u8; 51]).unwrap_err();
        assert!(
            matches!(
                e,
                DeviceError::OutOfBounds {
                    op: CopyOp::Read,
                    ..
                }
            ),
            "{e}"
        );
        dev.write(a.handle, 100, &[]).unwrap();
    }
}

#[test]
fn zero_bytes_overwrite_stored_bytes() {
    let dev = SimDevice::new(Geometry::for_arch(Arch::Sunda));
    let a = dev.alloc(req(0, 3 * 4096, 0, MemUsage::Weight)).unwrap();
    dev.write(a.handle, 4000, &[0xEE; 200]).unwrap();
    assert_eq!(dev.stored_pages(), 2);
    dev.write(a.handle, 4050, &[0; 100]).unwrap();
    let mut back = [0u8; 200];
    dev.read(a.handle, 4000, &mut back).unwrap();
    assert!(back[..50].iter().all(|&b| b == 0xEE));
    assert!(back[50..150].iter().all(|&b| b == 0));
    assert!(back[150..].iter().all(|&b| b == 0xEE));
}

#[test]
fn null_device_checksums_writes_and_refuses_reads() {
    let dev = NullDevice::with_checksum(Geometry::for_arch(Arch::Cayman));
    let a = dev.alloc(req(0, 4 * GIB, 0, MemUsage::Weight)).unwrap();
    let b = dev.alloc(req(1, 4096, 0, MemUsage::Weight)).unwrap();
    assert_eq!(dev.checksum().unwrap(), 0);
    dev.write(a.handle, 0, b"hello").unwrap();
    let c1 = dev.checksum().unwrap();
    assert_ne!(c1, 0);
    dev.write(b.handle, 10, b"world").unwrap();
    let c2 = dev.checksum().unwrap();
    assert_ne!(c2, c1);
    assert_eq!(dev.bytes_written(), 10);
    assert_eq!(dev.writes(), 2);

    // Same writes in the other order give the same checksum; other bytes or
    // another address give a different one.
    let other = NullDevice::with_checksum(Geometry::for_arch(Arch::Cayman));
    let a2 = other.alloc(req(0, 4 * GIB, 0, MemUsage::Weight)).unwrap();
    let b2 = other.alloc(req(1, 4096, 0, MemUsage::Weight)).unwrap();
    assert_eq!((a2.pa, b2.pa), (a.pa, b.pa));
    other.write(b2.handle, 10, b"world").unwrap();
    other.write(a2.handle, 0, b"hello").unwrap();
    assert_eq!(other.checksum().unwrap(), c2);
    let third = NullDevice::with_checksum(Geometry::for_arch(Arch::Cayman));
    let a3 = third.alloc(req(0, 4 * GIB, 0, MemUsage::Weight)).unwrap();
    third.write(a3.handle, 1, b"hello").unwrap();
    assert_ne!(third.checksum().unwrap(), c1);
    third.write(a3.handle, 0, b"hellp").unwrap();
    assert_ne!(third.checksum().unwrap(), c1);

    // A device made without a checksum keeps none, and counts all the same.
    let plain = NullDevice::new(Geometry::for_arch(Arch::Cayman));
    let p = plain.alloc(req(0, 4096, 0, MemUsage::Weight)).unwrap();
    plain.write(p.handle, 0, b"hello").unwrap();
    assert_eq!((plain.checksum(), plain.bytes_written()), (None, 5));

    let mut buf = [0u8; 5];
    let e = dev.read(a.handle, 0, &mut buf).unwrap_err();
    assert_eq!(e, DeviceError::NoStorage { handle: a.handle });
    assert_eq!(e.status(), NrtStatus::Failure);
    let e = dev.write(b.handle, 4090, b"toolong").unwrap_err();
    assert!(matches!(e, DeviceError::OutOfBounds { .. }));
    assert_eq!(
        dev.checksum().unwrap(),
        c2,
        "a refused write changes nothing"
    );
}

#[test]
fn fault_plan_fails_exactly_the_kth_allocation() {
    for dev in backends(Geometry::for_arch(Arch::Cayman)) {
        // Calls before arming do not count.
        dev.alloc(req(0, 4096, 0, MemUsage::Weight)).unwrap();
        dev.set_fault_plan(FaultPlan::alloc(3));
        assert_eq!(dev.fault_plan(), FaultPlan::alloc(3));
        let mut outcomes = Vec::new();
        for i in 0..5 {
            outcomes.push(dev.alloc(req(i, 4096, 0, MemUsage::Weight)));
        }
        for (i, o) in outcomes.iter().enumerate() {
            if i == 2 {
                let e = o.as_ref().unwrap_err();
                assert_eq!(
                    e,
                    &DeviceError::InjectedFault {
                        op: FaultOp::Alloc,
                        nth: 3
                    }
                );
                assert_eq!(e.status(), NrtStatus::Resource);
            } else {
                assert!(o.is_ok(), "call {} failed: {o:?}", i + 1);
            }
        }
        assert_eq!(
            dev.live_count(),
            5,
            "the injected failure allocated nothing"
        );
        assert_eq!(dev.ledger().total(), 5 * 4096);
        assert_eq!(dev.ledger().used(PCore(2), MemUsage::Weight), 0);
    }
}

/// A batch behaves as its writes one by one: a fault plan counts each, the
/// batch stops at the first failure and names it, and the writes before it
/// are stored.
#[test]
fn a_batch_of_writes_is_its_writes_in_order() {
    for dev in backends(Geometry::for_arch(Arch::Sunda)) {
        let a = dev.alloc(req(0, 4096, 0, MemUsage::InstrPe)).unwrap();
        let b = dev.alloc(req(0, 16, 0, MemUsage::InstrPe)).unwrap();
        let batch = |off: u64| {
            [
                Write {
                    handle: a.handle,
                    offset: 0,
                    data: b"one",
                    shared: None,
                },
                Write {
                    handle: b.handle,
                    offset: off,
                    data: b"two",
                    shared: None,
                },
                Write {
                    handle: a.handle,
                    offset: 6,
                    data: b"six",
                    shared: None,
                },
            ]
        };
        dev.set_fault_plan(FaultPlan::write(2));
        let (i, e) = dev.write_all(&batch(0)).unwrap_err();
        assert_eq!(i, 1);
        assert_eq!(
            e,
            DeviceError::InjectedFault {
                op: FaultOp::Write,
                nth: 2
            }
        );
        dev.set_fault_plan(FaultPlan::default());
        let (i, e) = dev.write_all(&batch(14)).unwrap_err();
        assert_eq!(i, 1);
        assert!(
            matches!(
                e,
                DeviceError::OutOfBounds {
                    op: CopyOp::Write,
                    offset: 14,
                    ..
                }
            ),
            "{e}"
        );
        dev.write_all(&batch(13)).unwrap();
        dev.write_all(&[]).unwrap();
    }
    // What a failed batch left behind, on the device that keeps bytes.
    let sim = SimDevice::new(Geometry::for_arch(Arch::Sunda));
    let a = sim.alloc(req(0, 4096, 0, MemUsage::InstrPe)).unwrap();
    sim.set_fault_plan(FaultPlan::write(2));
    let batch = [
        Write {
            handle: a.handle,
            offset: 0,
            data: b"one",
            shared: None,
        },
        Write {
            handle: a.handle,
            offset: 3,
            data: b"two",
            shared: None,
        },
        Write {
            handle: a.handle,
            offset: 6,
            data: b"six",
            shared: None,
        },
    ];
    assert_eq!(sim.write_all(&batch).unwrap_err().0, 1);
    let mut back = [0u8; 9];
    sim.read(a.handle, 0, &mut back).unwrap();
    assert_eq!(
        &back, b"one\0\0\0\0\0\0",
        "the writes before the failure, and only those"
    );
}

#[test]
fn fault_plan_fails_exactly_the_kth_write() {
    let sim = SimDevice::new(Geometry::for_arch(Arch::Sunda));
    let a = sim.alloc(req(0, 4096, 0, MemUsage::InstrPe)).unwrap();
    sim.set_fault_plan(FaultPlan::write(2));
    sim.write(a.handle, 0, b"one").unwrap();
    let e = sim.write(a.handle, 3, b"two").unwrap_err();
    assert_eq!(
        e,
        DeviceError::InjectedFault {
            op: FaultOp::Write,
            nth: 2
        }
    );
    assert_eq!(e.status(), NrtStatus::Failure);
    sim.write(a.handle, 6, b"six").unwrap();
    let mut b = [0u8; 9];
    sim.read(a.handle, 0, &mut b).unwrap();
    assert_eq!(&b, b"one\0\0\0six", "the failed write stored nothing");
    // Allocations are not affected by a write plan.
    sim.alloc(req(1, 1, 0, MemUsage::InstrPe)).unwrap();

    let null = NullDevice::with_checksum(Geometry::for_arch(Arch::Sunda));
    let a = null.alloc(req(0, 4096, 0, MemUsage::InstrPe)).unwrap();
    null.set_fault_plan(FaultPlan::write(1));
    assert!(null.write(a.handle, 0, b"x").is_err());
    assert_eq!(null.checksum(), Some(0));
    null.write(a.handle, 0, b"x").unwrap();
    assert_ne!(null.checksum(), Some(0));
}

#[test]
fn every_allocation_of_a_sequence_can_be_failed_in_turn() {
    // What a rollback test does: run the same sequence failing call k, for
    // every k, and check the device is clean afterwards.
    fn sequence(dev: &Device) -> Result<(), DeviceError> {
        let mut held: Vec<Allocation> = Vec::new();
        let result = (|| {
            for (core, size) in [(0, 100), (1, 5000), (2, 1 << 20), (3, 0)] {
                let a = dev.alloc(req(core, size, 0, MemUsage::Weight))?;
                held.push(a);
                dev.write(a.handle, 0, &[7; 1][..size.min(1) as usize])?;
            }
            Ok(())
        })();
        for a in held {
            dev.free(a.handle)?;
        }
        result
    }
    for k in 1..=5 {
        let dev = SimDevice::new(Geometry::for_arch(Arch::Cayman));
        dev.set_fault_plan(FaultPlan::alloc(k));
        let r = sequence(&dev);
        assert_eq!(r.is_err(), k <= 4, "k = {k}");
        assert_eq!(dev.live_count(), 0);
        assert_eq!(dev.ledger().total(), 0);
    }
}

#[test]
fn custom_geometry_with_256_cores() {
    let g = Geometry::custom(Arch::Cayman, 256, 64, 64 * MIB).unwrap();
    assert_eq!(g.cores_per_hbm(), 4);
    let dev = SimDevice::new(g);
    let mut sb = Vec::new();
    for core in 0..256 {
        let a = dev.alloc(req(core, 4096, 0, MemUsage::Generic)).unwrap();
        let channel = core / 4;
        let base = dev.geometry().channel_base(channel).unwrap().0;
        assert!(a.pa.0 >= base + CARVEOUT && a.pa.0 < base + 64 * MIB);
        dev.write(a.handle, 0, &(core + 1).to_le_bytes()).unwrap();
        sb.push(dev.sb_base(PCore(core)).unwrap());
    }
    assert_sane_layout(&dev);
    sb.dedup();
    assert_eq!(sb.len(), 256);
    assert!(dev.alloc(req(256, 4096, 0, MemUsage::Generic)).is_err());
    assert_eq!(dev.stored_pages(), 256);
    let stats = dev.vnc_memory_stats(LCore(63), 4).unwrap();
    assert_eq!((stats.used, stats.limit), (4 * 4096, 64 * MIB));
    // 48 MiB usable per channel: no small pool, and the 49th MiB fails.
    dev.alloc(req(0, 48 * MIB - 4 * 4096, 0, MemUsage::Generic))
        .unwrap();
    let e = dev.alloc(req(1, 4096, 0, MemUsage::Generic)).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Resource);
}

#[test]
fn thousands_of_allocations_stay_cheap_and_consistent() {
    let dev = NullDevice::new(Geometry::for_arch(Arch::Cayman));
    let mut live: Vec<MemHandle> = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..20_000 {
        let r = next();
        if r % 3 == 0 && !live.is_empty() {
            let idx = (r as usize / 3) % live.len();
            dev.free(live.swap_remove(idx)).unwrap();
        } else {
            let size = (r >> 8) % (2 * MIB);
            let align = [0, 4096, 32768, 1 << 16][(r >> 40) as usize % 4];
            let core = (r >> 50) as u32 % 8;
            live.push(
                dev.alloc(req(core, size, align, MemUsage::Tensor))
                    .unwrap()
                    .handle,
            );
        }
    }
    assert_eq!(dev.live_count(), live.len());
    assert_sane_layout(&dev);
    for h in live {
        dev.free(h).unwrap();
    }
    assert_eq!(dev.ledger().total(), 0);
}

#[test]
fn one_device_shared_across_threads() {
    let dev: Arc<Device> = Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman)));
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let dev = Arc::clone(&dev);
            std::thread::spawn(move || {
                for i in 0..200u32 {
                    let core = (t * 2 + i) % 8;
                    let a = dev.alloc(req(core, 4096 * u64::from(i % 5 + 1), 0, MemUsage::Weight));
                    let a = a.unwrap();
                    dev.write(a.handle, 0, &i.to_le_bytes()).unwrap();
                    if i % 2 == 0 {
                        dev.free(a.handle).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(dev.live_count(), 400);
    assert_sane_layout(dev.as_ref());
}

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        core: u32,
        size: u64,
        align_shift: u32,
        usage: usize,
    },
    Free {
        pick: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u32..4, 0u64..3 * MIB, 0u32..24, 0usize..MemUsage::COUNT).prop_map(
            |(core, size, align_shift, usage)| Op::Alloc { core, size, align_shift, usage }
        ),
        2 => any::<usize>().prop_map(|pick| Op::Free { pick }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random alloc/free sequences on a small device (so OOM happens): live
    /// blocks never overlap, honour alignment, and the ledger equals the sum
    /// of live charged sizes per core, usage and channel.
    #[test]
    fn random_alloc_free_keeps_the_books_straight(ops in prop::collection::vec(op(), 1..200)) {
        // Two channels of 40 MiB: 24 MiB usable each, a single pool.
        let dev = SimDevice::new(Geometry::custom(Arch::Cayman, 4, 2, 40 * MIB).unwrap());
        let mut live: Vec<(Allocation, u32, MemUsage, u64)> = Vec::new();
        for op in ops {
            match op {
                Op::Alloc { core, size, align_shift, usage } => {
                    let align = if align_shift < 12 { 0 } else { 1u64 << align_shift };
                    let usage = MemUsage::ALL[usage];
                    match dev.alloc(req(core, size, align, usage)) {
                        Ok(a) => {
                            if align > 0 {
                                prop_assert_eq!(a.pa.0 % align, 0);
                            }
                            live.push((a, core, usage, align));
                        }
                        Err(e) => prop_assert_eq!(e.status(), NrtStatus::Resource, "{}", e),
                    }
                }
                Op::Free { pick } => {
                    if !live.is_empty() {
                        let (a, ..) = live.swap_remove(pick % live.len());
                        dev.free(a.handle).unwrap();
                    }
                }
            }
            assert_sane_layout(&dev);
            let ledger = dev.ledger();
            let mut expect: BTreeMap<(u32, MemUsage), u64> = BTreeMap::new();
            let mut per_channel = [0u64; 2];
            for (a, core, usage, _) in &live {
                *expect.entry((*core, *usage)).or_default() += a.charged;
                per_channel[(*core / 2) as usize] += a.charged;
            }
            for core in 0..4 {
                for usage in MemUsage::ALL {
                    let want = expect.get(&(core, usage)).copied().unwrap_or(0);
                    prop_assert_eq!(ledger.used(PCore(core), usage), want);
                }
            }
            for ch in 0..2 {
                prop_assert_eq!(ledger.channel_used(ch), per_channel[ch as usize]);
                prop_assert_eq!(dev.free_bytes(ch) + per_channel[ch as usize], 24 * MIB);
            }
            prop_assert_eq!(dev.live_count(), live.len());
        }
    }
}
