//! A runtime over several devices (the chips of one instance): logical cores
//! are numbered across the devices, each load lands on the device of its
//! logical core, and memory is counted per device.

use std::sync::Arc;

use neffld::api::Runtime;
use neffld::config::{CoreList, Loader, RuntimeConfig, Topology};
use neffld::device::{Device, Geometry, SimDevice};
use neffld::ids::PCore;
use neffld::report::MemoryReport;
use neffld::Arch;
use neffld_testkit::{beyond_start, fixture};

fn instance(chips: usize, visible: Option<Vec<u32>>) -> (Runtime, Vec<Arc<Device>>) {
    let devices: Vec<Arc<Device>> = (0..chips)
        .map(|_| Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman))) as Arc<Device>)
        .collect();
    let cfg = RuntimeConfig {
        topology: Topology {
            arch: Arch::Cayman,
            chips: chips as u32,
            visible_cores: visible.map(|cores| CoreList {
                var: "NEURON_RT_VISIBLE_CORES",
                value: format!("{cores:?}"),
                cores,
            }),
            ..Default::default()
        },
        loader: Loader {
            check: true,
            ..Default::default()
        },
        ..Default::default()
    };
    (
        Runtime::with_devices(cfg, devices.clone()).unwrap(),
        devices,
    )
}

/// Two trn2 devices at LNC 2: logical cores 0–3 are ND 0's, 4–7 ND 1's;
/// logical core 5 is ND 1's second pair of physical cores, and only ND 1
/// holds the model.
#[test]
fn logical_cores_are_numbered_across_the_devices() {
    let (rt, devices) = instance(2, None);
    assert_eq!(rt.total_vnc_count(), 8);
    assert_eq!(rt.visible_vnc_count(), 8);
    let m = rt.load(&fixture("matmul_small.neff"), Some(5)).unwrap();
    let (nd, dev) = rt.device_of(&m).unwrap();
    assert_eq!(nd, 1);
    assert!(Arc::ptr_eq(dev, &devices[1]));
    let pcores: Vec<PCore> = rt
        .with_model(&m, |lm| {
            assert_eq!(lm.device, 1);
            lm.cores.iter().map(|c| c.pcore()).collect()
        })
        .unwrap();
    assert_eq!(pcores, [PCore(2), PCore(3)]);
    assert!(
        beyond_start(&devices[0]).is_empty(),
        "ND 0 holds nothing of it"
    );
    assert!(beyond_start(&devices[1])
        .iter()
        .all(|a| [PCore(2), PCore(3)].contains(&a.core)));
    // Memory is per device: ND 1's report has the NEFF, ND 0's none.
    let r1 = MemoryReport::of(1, &devices[1]);
    assert_eq!(r1.models().len(), 1);
    assert!(MemoryReport::of(0, &devices[0]).models().is_empty());
    let stats = neffld::report::MemoryStats::of_vnc(&rt, 5).unwrap();
    let (p2, p3) = (&stats.cores[0], &stats.cores[1]);
    assert_eq!((p2.pcore, p3.pcore), (PCore(2), PCore(3)));
    assert!(p2.model.iter().sum::<u64>() > 0 && p3.model.iter().sum::<u64>() > 0);
    assert_eq!(
        neffld::report::MemoryStats::of_vnc(&rt, 1).unwrap().cores[0]
            .model
            .iter()
            .sum::<u64>(),
        0,
        "ND 0's cores 2 and 3 are logical core 1's, and empty"
    );
    rt.unload(&m).unwrap();
    assert!(beyond_start(&devices[1]).is_empty());
}

/// `NEURON_RT_VISIBLE_CORES` names logical cores of the whole instance.
#[test]
fn visible_cores_reach_the_second_device() {
    let (rt, devices) = instance(2, Some(vec![4, 6]));
    assert_eq!(rt.visible_vnc_count(), 2);
    let a = rt.load(&fixture("matmul_small.neff"), None).unwrap();
    let b = rt.load(&fixture("matmul_small.neff"), None).unwrap();
    // The runtime numbers them 0 and 1; they are the instance's 4 and 6.
    assert_eq!((a.vnc, b.vnc), (0, 1));
    assert_eq!((a.lcore.0, b.lcore.0), (4, 6));
    assert_eq!(rt.device_of(&b).unwrap().0, 1);
    let (nd, dev, core) = rt.placement_of_vnc(1).unwrap();
    assert_eq!((nd, core), (1, PCore(4)));
    assert!(Arc::ptr_eq(dev, &devices[1]));
    assert!(rt.placement_of_vnc(2).is_err());
    rt.unload(&a).unwrap();
    rt.unload(&b).unwrap();
}

/// Devices of one instance share one geometry; none is refused.
#[test]
fn an_instance_is_one_geometry_and_at_least_one_device() {
    let mixed: Vec<Arc<Device>> = vec![
        Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman))),
        Arc::new(SimDevice::new(Geometry::for_arch(Arch::Mariana))),
    ];
    let e = Runtime::with_devices(RuntimeConfig::default(), mixed)
        .err()
        .unwrap();
    assert!(e.to_string().contains("one geometry"), "{e}");
    assert!(Runtime::with_devices(RuntimeConfig::default(), Vec::new()).is_err());
}
