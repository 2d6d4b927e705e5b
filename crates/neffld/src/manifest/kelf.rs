//! Tier 2: the kelf json (the member `attrs.kelf` names): version, target
//! architecture with the arch gate, and the graph list (parse.md §5.2).

use std::collections::HashSet;

use serde::Deserialize;

use super::json::{self, brief, RawValue};
use super::{ManifestError, ParseOptions};
use crate::container::Archive;
use crate::Arch;

/// `<major>.<minor>[-suffix]`; informational, not a compatibility gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KelfVersion {
    pub major: u16,
    pub minor: u16,
    pub suffix: String,
}

/// One entry of `graphs[]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphRef {
    pub name: String,
    /// `definition` as written (`sg00/def.json`).
    pub definition: String,
    /// The part before the last `/` (`sg00`); empty when there is none.
    pub sg_dir: String,
    /// The part after the last `/` (`def.json`).
    pub def_name: String,
}

impl GraphRef {
    /// The archive name of a member this subgraph references.
    pub fn member(&self, name: &str) -> String {
        if self.sg_dir.is_empty() {
            name.to_string()
        } else {
            format!("{}/{}", self.sg_dir, name)
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kelf {
    pub member: String,
    pub version: KelfVersion,
    /// The `target` string as written.
    pub target_name: String,
    /// The resolved architecture (`*` resolves to the instance's).
    pub target: Arch,
    pub graphs: Vec<GraphRef>,
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct RawKelf<'a> {
    #[serde(borrow)]
    version: Option<&'a RawValue>,
    #[serde(borrow)]
    target: Option<&'a RawValue>,
    #[serde(borrow)]
    graphs: Option<&'a RawValue>,
}

/// The keys of a `graphs[]` entry the graph list reads.
#[derive(Deserialize)]
struct RawGraph<'a> {
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    definition: Option<&'a RawValue>,
}

/// Resolves a `target` string (§5.2 table).
pub fn parse_target(s: &str, instance: Arch) -> Option<Arch> {
    match s {
        "sunda" | "v2" | "" => Some(Arch::Sunda),
        "cayman" | "v3" => Some(Arch::Cayman),
        "mariana" | "v4" => Some(Arch::Mariana),
        "*" => Some(instance),
        _ => None,
    }
}

/// Splits at the first `.`: major and minor parse like `strtol` (leading
/// digits; none → 0) into u16, an optional `-suffix` follows the minor.
pub fn parse_version(member: &str, s: &str) -> Result<KelfVersion, ManifestError> {
    let (major, rest) = s
        .split_once('.')
        .ok_or_else(|| ManifestError::InvalidVersion {
            member: member.to_string(),
            version: s.to_string(),
        })?;
    let (minor, suffix) = rest.split_once('-').unwrap_or((rest, ""));
    Ok(KelfVersion {
        major: leading_u16(major),
        minor: leading_u16(minor),
        suffix: suffix.to_string(),
    })
}

fn leading_u16(s: &str) -> u16 {
    let digits: String = s
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse::<u64>()
        .map(|v| u16::try_from(v).unwrap_or(u16::MAX))
        .unwrap_or(0)
}

pub fn parse(archive: &Archive, member: &str, opts: &ParseOptions) -> Result<Kelf, ManifestError> {
    let bytes = archive
        .get(member)
        .ok_or_else(|| ManifestError::InvalidKelf {
            member: member.to_string(),
            detail: "member is missing from the archive".into(),
        })?;
    parse_bytes(member, bytes, opts)
}

/// The architecture a kelf json is compiled for: its `target` alone (`*`
/// read as `instance`). Tools choose a device by it before a load, so it is
/// read even when the rest of the json (version, graph list) is wrong: the
/// load then names that fault on the NEFF's own device, instead of an
/// architecture mismatch on another.
pub fn declared_target(member: &str, bytes: &[u8], instance: Arch) -> Option<Arch> {
    let raw: RawKelf = json::parse(member, bytes).ok()?;
    parse_target(&json::as_string(raw.target?)?, instance)
}

pub fn parse_bytes(member: &str, bytes: &[u8], opts: &ParseOptions) -> Result<Kelf, ManifestError> {
    let invalid = |detail: String| ManifestError::InvalidKelf {
        member: member.to_string(),
        detail,
    };
    let raw: RawKelf = json::parse(member, bytes).map_err(|e| match e {
        ManifestError::Json { detail, .. } => invalid(detail),
        other => other,
    })?;
    let string_key = |key: &str, v: Option<&RawValue>| -> Result<String, ManifestError> {
        match v.map(json::string) {
            Some(Ok(s)) => Ok(s),
            Some(Err(found)) => Err(invalid(format!("{key} must be a string, found {found}"))),
            None => Err(invalid(format!("{key} is missing"))),
        }
    };
    let version_str = string_key("version", raw.version)?;
    let target_name = string_key("target", raw.target)?;
    let graphs_v = match raw.graphs.map(|g| json::elements(g).ok_or(g)) {
        Some(Ok(a)) => a,
        Some(Err(other)) => {
            return Err(invalid(format!(
                "graphs must be an array, found {}",
                brief(other)
            )))
        }
        None => return Err(invalid("graphs is missing".into())),
    };

    let version = parse_version(member, &version_str)?;
    tracing::debug!(
        "KELF version: {}.{}-{}",
        version.major,
        version.minor,
        version.suffix
    );
    let instance_arch = opts.chip.arch;
    let target = parse_target(&target_name, instance_arch).ok_or_else(|| {
        ManifestError::InvalidTarget {
            member: member.to_string(),
            target: target_name.clone(),
        }
    })?;
    tracing::debug!("Target found '{target_name}', id={}", target.id());

    let mut warnings = Vec::new();
    if target != instance_arch {
        if !opts.allow_legacy_neff {
            return Err(ManifestError::ArchMismatch {
                neff: target,
                chip: opts.chip,
            });
        }
        warnings.push(format!(
            "Loading a NEFF compiled for a different arch (NEFF arch: v{}, instance arch: v{}) because NEURON_RT_ALLOW_LEGACY_NEFF is set",
            target.id(),
            instance_arch.id()
        ));
    }

    let mut graphs = Vec::with_capacity(graphs_v.len());
    let mut seen = HashSet::new();
    for (i, &g) in graphs_v.iter().enumerate() {
        let entry: Option<RawGraph> = json::object(g).ok();
        let string = |v: Option<&RawValue>, key: &str| {
            v.and_then(json::as_string).ok_or_else(|| {
                invalid(format!(
                    "graphs[{i}] needs a string {key}, found {}",
                    brief(g)
                ))
            })
        };
        // Any string is a graph name, as the runtime takes it: a label in
        // reports and logs, never a path it opens (`definition` is the
        // member it reads). So `../../x` or `/etc/x` loads; what would use
        // it as a file name (`neffld load --dump`) checks it there
        // (`tree::plain_name`) and refuses it before writing anything.
        let name = string(entry.as_ref().and_then(|e| e.name), "name")?;
        let definition = string(entry.as_ref().and_then(|e| e.definition), "definition")?;
        if !seen.insert(name.clone()) {
            return Err(ManifestError::DuplicateGraph {
                member: member.to_string(),
                name,
            });
        }
        let (sg_dir, def_name) = match definition.rsplit_once('/') {
            Some((d, f)) => (d.to_string(), f.to_string()),
            None => (String::new(), definition.clone()),
        };
        graphs.push(GraphRef {
            name,
            definition,
            sg_dir,
            def_name,
        });
    }
    tracing::debug!("mlaop dir {member}, has {} graphs", graphs.len());
    Ok(Kelf {
        member: member.to_string(),
        version,
        target_name,
        target,
        graphs,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_as_the_table_says() {
        for (s, a) in [
            ("sunda", Arch::Sunda),
            ("v2", Arch::Sunda),
            ("", Arch::Sunda),
            ("cayman", Arch::Cayman),
            ("v3", Arch::Cayman),
            ("mariana", Arch::Mariana),
            ("v4", Arch::Mariana),
        ] {
            assert_eq!(parse_target(s, Arch::Mariana), Some(a), "{s}");
        }
        assert_eq!(parse_target("*", Arch::Cayman), Some(Arch::Cayman));
        assert_eq!(parse_target("trn2", Arch::Cayman), None);
        assert_eq!(parse_target("Cayman", Arch::Cayman), None);
    }

    #[test]
    fn versions_split_at_the_first_dot() {
        let v = parse_version("k", "0.5").unwrap();
        assert_eq!((v.major, v.minor, v.suffix.as_str()), (0, 5, ""));
        let v = parse_version("k", "1.2-rc.1").unwrap();
        assert_eq!((v.major, v.minor, v.suffix.as_str()), (1, 2, "rc.1"));
        let e = parse_version("kelf-0.json", "05").unwrap_err();
        assert!(e.to_string().starts_with("invalid string (.) in 05"));
    }
}
