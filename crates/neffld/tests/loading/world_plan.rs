//! Worlds of 2, 8, 32 and 64 ranks planned on a trn2.48xlarge from the
//! testkit's NEFFs (all-reduce, all-gather, reduce-scatter, PTC2, and with
//! a NEFF per rank a send and a receive around the ring): one NEFF per
//! rank and one NEFF for all agree; a rank whose all-reduce is of another
//! size is named against its group's first rank.

use std::path::PathBuf;

use neffld::instance::Instance;
use neffld::plan::{self, Deployment, DisagreementKind, Step as PlanStep};
use neffld_testkit::collectives::{Step, World};
use neffld_testkit::ScratchDir;

fn plan_world(files: &[PathBuf], ranks: u32) -> neffld::plan::Plan {
    let d = Deployment {
        instance: Some(Instance::named("trn2.48xlarge").unwrap()),
        world: Some(ranks),
        steps: files
            .iter()
            .map(|f| PlanStep::Load {
                file: f.clone(),
                vnc: None,
            })
            .collect(),
        ..Deployment::default()
    };
    plan::plan(&d).unwrap_or_else(|e| panic!("{ranks} ranks: {e}"))
}

fn write(dir: &ScratchDir, name: &str, bytes: Vec<u8>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn worlds_of_2_to_64_ranks_plan_per_rank_and_shared() {
    for ranks in [2u32, 8, 32, 64] {
        let dir = ScratchDir::new("world-plan");
        let w = World::new(ranks);
        let per_rank: Vec<PathBuf> = (0..ranks)
            .map(|r| write(&dir, &format!("r{r}.neff"), w.rank(r)))
            .collect();
        let shared = write(&dir, "all.neff", w.shared());
        for (form, files, collectives) in [
            ("per rank", per_rank.clone(), 6),
            ("shared", vec![shared; ranks as usize], 4),
        ] {
            let p = plan_world(&files, ranks);
            let world = p.world.as_ref().unwrap();
            assert!(
                p.fits() && world.agrees(),
                "{ranks} ranks, {form}: {:?}",
                world.disagreements
            );
            assert_eq!(world.ranks.len(), ranks as usize);
            for r in &world.ranks {
                assert!(r.loaded, "{ranks} ranks, {form}: rank {}", r.rank);
                assert_eq!(r.collectives, collectives, "{ranks} ranks, {form}");
            }
        }
        // The last rank's all-reduce is half as large.
        let mut steps = w.steps.clone();
        steps[0] = Step::AllReduce(512);
        let other = World { steps, ..w.clone() };
        let mut files = per_rank;
        let last = ranks - 1;
        files[last as usize] = write(&dir, "other.neff", other.rank(last));
        let p = plan_world(&files, ranks);
        assert!(!p.fits(), "{ranks} ranks");
        let d = &p.world.as_ref().unwrap().disagreements;
        assert_eq!(d.len(), 1, "{ranks} ranks: {d:?}");
        assert_eq!(
            (d[0].kind, d[0].ranks, d[0].index, d[0].step),
            (
                DisagreementKind::Mismatch,
                (0, last),
                Some(0),
                last as usize
            )
        );
        assert_eq!(d[0].group, Some((0..ranks).collect()));
        assert!(d[0].what.contains("the size differs"), "{}", d[0].what);
    }
}
