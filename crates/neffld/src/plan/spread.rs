//! A deployment with part of one logical core's steps moved to another:
//! what spreading a crowded core onto an empty one changes, as a pure
//! function of the deployment (advice plans the result again and judges
//! it, [`super::advice`]).

use std::collections::HashMap;

use super::deployment::{same_file, Deployment, Step};

/// What a step holds or releases on its core: a tensor by name, a load by
/// its file.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Held {
    Tensor(String),
    Load(std::path::PathBuf),
}

/// `d` with the steps of logical core `from`, from step `at` on, moved to
/// core `to`: every load and tensor, and every unload or free of what a
/// moved step allocated. An unload or free of what was on `from` before
/// `at` stays there, with what it releases (the runtime frees a core's
/// latest tensor of a name and unloads its latest load of a file, so each
/// is matched to that one).
pub(crate) fn moved(d: &Deployment, at: usize, from: u32, to: u32) -> Deployment {
    // What core `from` holds, latest last, and whether it was moved.
    let mut held: HashMap<Held, Vec<bool>> = HashMap::new();
    let mut steps = Vec::with_capacity(d.steps.len());
    for (i, step) in d.steps.iter().enumerate() {
        let mut s = step.clone();
        let on_from = match &s {
            Step::Load { vnc, .. } => *vnc == Some(from),
            Step::Tensor { vnc, .. } | Step::Unload { vnc, .. } | Step::Free { vnc, .. } => {
                *vnc == from
            }
        };
        if on_from {
            let later = i >= at;
            match &mut s {
                Step::Load { file, vnc } => {
                    held.entry(Held::Load(same_file(file)))
                        .or_default()
                        .push(later);
                    if later {
                        *vnc = Some(to);
                    }
                }
                Step::Tensor { name, vnc, .. } => {
                    held.entry(Held::Tensor(name.clone()))
                        .or_default()
                        .push(later);
                    if later {
                        *vnc = to;
                    }
                }
                Step::Unload { file, vnc } => {
                    let was = held.get_mut(&Held::Load(same_file(file)));
                    if was.and_then(Vec::pop).unwrap_or(false) {
                        *vnc = to;
                    }
                }
                Step::Free { name, vnc } => {
                    let was = held.get_mut(&Held::Tensor(name.clone()));
                    if was.and_then(Vec::pop).unwrap_or(false) {
                        *vnc = to;
                    }
                }
            }
        }
        steps.push(s);
    }
    Deployment { steps, ..d.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(f: &str, v: u32) -> Step {
        Step::Load {
            file: f.into(),
            vnc: Some(v),
        }
    }

    fn tensor(n: &str, v: u32) -> Step {
        Step::Tensor {
            name: n.into(),
            size: 4096,
            vnc: v,
        }
    }

    fn free(n: &str, v: u32) -> Step {
        Step::Free {
            name: n.into(),
            vnc: v,
        }
    }

    /// From the step on, the core's allocations move; a free follows the
    /// tensor it releases (the latest of its name), wherever that went.
    #[test]
    fn a_core_moves_from_a_step_on_and_frees_follow_their_tensors() {
        let d = Deployment {
            steps: vec![
                load("a", 0),
                tensor("kv", 0),
                load("b", 1),
                load("a", 0),
                tensor("kv", 0),
                free("kv", 0),
                free("kv", 0),
                Step::Unload {
                    file: "a".into(),
                    vnc: 0,
                },
                Step::Unload {
                    file: "a".into(),
                    vnc: 0,
                },
            ],
            ..Deployment::default()
        };
        let m = moved(&d, 3, 0, 5);
        assert_eq!(
            m.steps,
            [
                load("a", 0),
                tensor("kv", 0),
                load("b", 1),
                load("a", 5),
                tensor("kv", 5),
                free("kv", 5),
                free("kv", 0),
                Step::Unload {
                    file: "a".into(),
                    vnc: 5
                },
                Step::Unload {
                    file: "a".into(),
                    vnc: 0
                },
            ]
        );
        // Each free and unload still finds what it releases.
        assert!(m.validate(8, "test").is_ok());
    }
}
