//! What a user gives a plan beside its steps — the command line's flags,
//! Python's keywords — laid over the deployment by one precedence, so that
//! the two front ends cannot drift apart (the settings of each load are
//! then [`crate::settings`]'s).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::config::vars::{self, Reader};
use crate::instance::Instance;
use crate::line::RuntimeLine;

use super::deployment::{Deployment, Solve};

/// The options of a plan that are not steps. `None` (and an empty `env`)
/// leaves the deployment file's choice.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// The instance to plan on.
    pub instance: Option<&'static Instance>,
    /// The logical-core size, with the name of the option that gave it
    /// (`--lnc`, `lnc`) for the mistake of a size the chip does not take.
    pub lnc: Option<(u32, String)>,
    /// The runtime line to reproduce.
    pub runtime: Option<RuntimeLine>,
    /// Runtime variables, over the file's and the process's.
    pub env: Vec<(String, String)>,
    /// neffld's own ceiling on an inflated payload (`NEFFLD_MAX_INFLATED`).
    pub max_inflated: Option<u64>,
    /// The question to answer beside the deployment.
    pub solve: Option<Solve>,
    /// `false`: do not allocate the loads' IO tensors, whatever the file says.
    pub io_tensors: bool,
    /// The loads are the ranks of a world of this many ranks.
    pub world: Option<u32>,
    /// Instances the world spans.
    pub hosts: Option<u32>,
}

/// The deployment file among a plan's loads: one `*.toml`, given alone.
/// `Err` names the mistake of a file given beside other loads.
pub fn deployment_file<S: AsRef<OsStr>>(loads: &[S]) -> Result<Option<&Path>, &'static str> {
    let toml = |l: &S| l.as_ref().as_bytes().ends_with(b".toml");
    match loads {
        [one] if toml(one) => Ok(Some(Path::new(one.as_ref()))),
        many if many.iter().any(toml) => {
            Err("a deployment file is given alone: put its loads in it")
        }
        _ => Ok(None),
    }
}

impl Deployment {
    /// This deployment under `o`. The runtime variables apply in this
    /// order, a later one winning: the process's (`process` reads one),
    /// the deployment file's, the inflate ceiling, `o.env`. The instance,
    /// logical-core size, line and question replace the file's when given.
    pub fn overridden(mut self, o: Overrides, process: impl Fn(&str) -> Option<String>) -> Self {
        let mut env: Vec<(String, String)> = vars::names(Reader::Runtime)
            .filter_map(|k| process(k).map(|v| (k.to_string(), v)))
            .collect();
        env.append(&mut self.env);
        let mut over: Vec<(String, String)> = Vec::new();
        if let Some(b) = o.max_inflated {
            over.push(("NEFFLD_MAX_INFLATED".into(), b.to_string()));
        }
        over.extend(o.env);
        // A file's variable set again over it is no longer the file's.
        self.env_origins
            .retain(|(k, _)| !over.iter().any(|(set, _)| set == k));
        env.extend(over);
        self.env = env;
        self.instance = o.instance.or(self.instance);
        if let Some((lnc, origin)) = o.lnc {
            self.lnc = Some(lnc);
            self.lnc_origin = Some(origin);
        }
        self.runtime = o.runtime.or(self.runtime);
        if o.solve.is_some() {
            self.solve = o.solve;
            self.solve_origin = None;
        }
        self.io_tensors &= o.io_tensors;
        if o.world.is_some() || o.hosts.is_some() {
            self.world = o.world.or(self.world);
            self.hosts = o.hosts.or(self.hosts);
            self.world_origin = None;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_given_alone() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            deployment_file(&l(&["d.toml"])),
            Ok(Some(Path::new("d.toml")))
        );
        assert_eq!(deployment_file(&l(&["a.neff", "b.neff@0"])), Ok(None));
        assert!(deployment_file(&l(&["d.toml", "a.neff"])).is_err());
    }

    #[test]
    fn the_user_wins_over_the_file_and_the_file_over_the_process() {
        let file = Deployment {
            env: vec![("NEURON_SCRATCHPAD_PAGE_SIZE".into(), "1024".into())],
            lnc: Some(2),
            lnc_origin: Some("d.toml line 2".into()),
            io_tensors: true,
            ..Deployment::default()
        };
        let process = |k: &str| (k == "NEURON_SCRATCHPAD_PAGE_SIZE").then(|| "512".to_string());
        let d = file.clone().overridden(
            Overrides {
                env: vec![("NEURON_SCRATCHPAD_PAGE_SIZE".into(), "2048".into())],
                max_inflated: Some(7),
                io_tensors: true,
                ..Overrides::default()
            },
            process,
        );
        let page: Vec<&str> = d
            .env
            .iter()
            .filter(|(k, _)| k == "NEURON_SCRATCHPAD_PAGE_SIZE")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(page, ["512", "1024", "2048"]);
        assert!(d.env.contains(&("NEFFLD_MAX_INFLATED".into(), "7".into())));
        assert_eq!(
            (d.lnc, d.lnc_origin.as_deref()),
            (Some(2), Some("d.toml line 2"))
        );
        assert!(d.io_tensors);
        let d = file.overridden(
            Overrides {
                lnc: Some((1, "--lnc".into())),
                io_tensors: false,
                ..Overrides::default()
            },
            |_| None,
        );
        assert_eq!((d.lnc, d.lnc_origin.as_deref()), (Some(1), Some("--lnc")));
        assert!(!d.io_tensors);
    }
}
