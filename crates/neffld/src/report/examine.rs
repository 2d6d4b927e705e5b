//! What the gates find in one NEFF: what `inspect` and `verify` show, in
//! the CLI and in Python alike.
//!
//! The gates themselves are the load's ([`container::open`], the parse, and
//! for a verdict [`crate::verify`]): an examination never re-checks a fact
//! on its own. It opens the container once with the digest compared beside
//! the inflate, so a mismatch is a finding rather than the end of the run,
//! and only when the open refuses the file does it look again, gate by
//! gate, to show how far the file got.

use std::collections::BTreeMap;

use crate::api::{Ahead, LoadError, Parsed};
use crate::container::integrity::{self, DigestForm, HashAlgorithm, Verified};
use crate::container::{self, payload_window, Archive, ContainerError, Neff, NeffHeader};
use crate::kbin::collective::CollectiveInfo;
pub use crate::manifest::IoTensor;
use crate::parse::{self, ParseOptions, ParsedModel};
use crate::settings::{Asked, Settings};
use crate::verify::{verify_ahead, VerifyReport};
use crate::Arch;

/// How far to look.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExamineOptions {
    /// The payload digest must match: a mismatch is then a problem (the
    /// first one), else a warning.
    pub require_hash: bool,
    /// Ceiling on the decoded payload (`None`: the load's default).
    pub inflate_limit: Option<u64>,
    /// Ceiling on the archive's entries (`None`: the load's default).
    pub max_members: Option<u64>,
    /// Parse the manifests for [`Examination::contents`].
    pub contents: bool,
}

/// A gate the NEFF passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Gate {
    /// S1: header, digest (as asked), inflate and archive.
    Container,
    /// S2 and S3: the manifests and the KBIN build.
    Parse,
    /// S4 and S5 on a device without storage.
    Stage,
    /// The staged model checked against its sealed records.
    Validate,
}

impl Gate {
    /// The gate's name in reports (`container`, `parse`, …).
    pub fn name(self) -> &'static str {
        match self {
            Gate::Container => "container",
            Gate::Parse => "parse",
            Gate::Stage => "stage",
            Gate::Validate => "validate",
        }
    }
}

/// What the digest comparison found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestResult {
    /// The digest matched, in the form given.
    Matched(DigestForm),
    /// An empty payload has nothing to compare.
    Skipped,
    /// The digest does not match.
    Mismatch,
}

impl DigestResult {
    /// "plain", "word-swapped", "skipped" or "mismatch".
    pub fn name(self) -> &'static str {
        match self {
            DigestResult::Matched(f) => f.name(),
            DigestResult::Skipped => "skipped",
            DigestResult::Mismatch => "mismatch",
        }
    }
}

/// The payload digest against the header's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Integrity {
    /// Whether a mismatch fails the file.
    pub required: bool,
    /// The digest the header's packager version names.
    pub algorithm: HashAlgorithm,
    /// The payload's digest in hex, in the form it matched.
    pub digest: String,
    /// What the comparison found.
    pub result: DigestResult,
}

impl Integrity {
    /// From one comparison already made (by the open, or for the report).
    fn of(
        h: &NeffHeader,
        window: &[u8],
        compared: &Result<Verified, ContainerError>,
        required: bool,
    ) -> Integrity {
        let algorithm = HashAlgorithm::for_pkg_version(h.pkg_version);
        let n = algorithm.digest_len();
        let (digest, result) = match compared {
            Ok(v) if v.form == DigestForm::WordSwapped => (
                hex(&integrity::word_swap(&h.hash, n)[..n]),
                DigestResult::Matched(v.form),
            ),
            Ok(v) => (hex(&h.hash[..n]), DigestResult::Matched(v.form)),
            Err(ContainerError::HashMismatch { computed, .. }) => {
                (computed.clone(), DigestResult::Mismatch)
            }
            Err(_) => (
                hex(&integrity::digest(algorithm, window)[..n]),
                DigestResult::Skipped,
            ),
        };
        Integrity {
            required,
            algorithm,
            digest,
            result,
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One engine's program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineContents {
    /// The engine's key ("pe", "act", ...).
    pub engine: &'static str,
    /// Instruction records of its stream.
    pub records: u64,
    /// Records by opcode.
    pub opcodes: BTreeMap<u8, u64>,
}

/// One DMA queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueContents {
    /// The queue's name in the NEFF.
    pub queue: String,
    /// The engine that owns it.
    pub owner: &'static str,
    /// "static", "dynamic", ... as the KBIN names the queue's kind.
    pub kind: String,
    /// DMA blocks the queue carries.
    pub blocks: usize,
    /// Descriptors of those blocks.
    pub descriptors: usize,
}

/// One subgraph's KBIN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubgraphContents {
    /// The subgraph's name (`sg00`, …).
    pub name: String,
    /// No engine has a record to run.
    pub idle: bool,
    /// Each engine's program.
    pub engines: Vec<EngineContents>,
    /// Variables by type name ("virtual", "file", ...).
    pub variables: BTreeMap<&'static str, u64>,
    /// Its DMA queues.
    pub queues: Vec<QueueContents>,
    /// The larger of the local and shared scratchpad sizes.
    pub scratchpad_bytes: u64,
    /// Its collectives, in engine then record order.
    pub collectives: Vec<CollectiveInfo>,
}

/// What the manifests declare, read with the NEFF's own target and
/// logical-core size so that a sound NEFF always passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contents {
    /// The compiler's target name.
    pub target: String,
    /// The chip the target names.
    pub arch: Arch,
    /// Inputs and outputs in declaration order.
    pub inputs: Vec<IoTensor>,
    /// Outputs in declaration order.
    pub outputs: Vec<IoTensor>,
    /// Each subgraph's KBIN.
    pub subgraphs: Vec<SubgraphContents>,
    /// The parse's own warnings.
    pub warnings: Vec<String>,
}

impl Contents {
    fn of(parsed: &ParsedModel) -> Contents {
        let io = parsed.io();
        let ordered = |order: &[String], map: &BTreeMap<String, IoTensor>| -> Vec<IoTensor> {
            order.iter().filter_map(|n| map.get(n)).cloned().collect()
        };
        let subgraphs = parsed
            .kbins
            .iter()
            .map(|k| {
                let mut variables = BTreeMap::new();
                for v in k.vars().iter() {
                    *variables.entry(v.of.kind().type_name()).or_insert(0) += 1;
                }
                SubgraphContents {
                    name: k.name().to_string(),
                    idle: k.is_idle(),
                    engines: k
                        .engines()
                        .iter()
                        .map(|e| EngineContents {
                            engine: e.ty().key(),
                            records: e.ninstr(),
                            opcodes: e.census().clone(),
                        })
                        .collect(),
                    variables,
                    queues: k
                        .dma_rings()
                        .iter()
                        .map(|r| QueueContents {
                            queue: r.queue().name.clone(),
                            owner: r.queue().owner.key(),
                            kind: format!("{:?}", r.queue().kind).to_lowercase(),
                            blocks: r.blocks().len(),
                            descriptors: r.blocks().iter().map(|b| b.descs.len()).sum(),
                        })
                        .collect(),
                    scratchpad_bytes: k.scratchpad().local.max(k.scratchpad().shared),
                    collectives: CollectiveInfo::of(std::slice::from_ref(k)),
                }
            })
            .collect();
        Contents {
            target: parsed.manifest.kelf.target_name.clone(),
            arch: parsed.manifest.kelf.target,
            inputs: ordered(&io.input_order, &io.inputs),
            outputs: ordered(&io.output_order, &io.outputs),
            subgraphs,
            warnings: parsed.warnings().to_vec(),
        }
    }
}

/// The options the manifests are read with when no device is involved:
/// the settings of no flag and no environment ([`Settings::for_neff`]),
/// so the NEFF's own target and its declared logical-core size when that
/// target takes it (as a default load on it would).
pub(crate) fn own_parse_options(neff: &Neff) -> ParseOptions {
    let own = Asked {
        follow_neff_lnc: true,
        ..Asked::default()
    };
    let settings =
        Settings::resolve(&own, |_| None).expect("no variable is set, so none is refused");
    let config = settings.for_neff(Some(neff));
    ParseOptions::new(config.topology.arch, config.lnc_size())
}

/// What the gates found in one NEFF, in gate order.
#[derive(Debug)]
pub struct Examination {
    /// Bytes of the file.
    pub size: u64,
    /// Once the 1024 bytes parse.
    pub header: Option<NeffHeader>,
    /// Once the header passes its gates.
    pub integrity: Option<Integrity>,
    /// Once the payload inflates and its tar reads.
    pub archive: Option<Archive>,
    /// The target the manifest chain names, once the archive reads (even
    /// when the rest of the manifests do not).
    pub declared_arch: Option<Arch>,
    /// Once the manifests parse, when asked for.
    pub contents: Option<Contents>,
    /// The verdict of a default load, when one ran ([`Examination::verify`]).
    pub verdict: Option<VerifyReport>,
    /// The gates passed.
    pub gates: Vec<Gate>,
    /// Everything that failed, in gate order; the first is the verdict.
    pub problems: Vec<LoadError>,
    /// Non-fatal findings of every gate that ran.
    pub warnings: Vec<String>,
}

impl Examination {
    fn new(bytes: &[u8]) -> Examination {
        Examination {
            size: bytes.len() as u64,
            header: None,
            integrity: None,
            archive: None,
            declared_arch: None,
            contents: None,
            verdict: None,
            gates: Vec::new(),
            problems: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The first problem: why the NEFF fails, if it does.
    pub fn problem(&self) -> Option<&LoadError> {
        self.problems.first()
    }

    /// No problem found: the NEFF passes every gate run.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    /// The gates up to the archive, and the manifests when `opts.contents`;
    /// no device.
    /// What `neffld inspect` shows: the header, the archive and, with
    /// `contents`, the manifests' tensors and subgraphs.
    ///
    /// ```
    /// use neffld::report::{Examination, ExamineOptions};
    ///
    /// let bytes = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.neff"));
    /// let opts = ExamineOptions { contents: true, ..ExamineOptions::default() };
    /// let x = Examination::of(bytes, &opts);
    /// assert!(x.passed(), "{:?}", x.problem());
    /// assert_eq!(x.declared_arch, Some(neffld::Arch::Sunda));
    /// let contents = x.contents.expect("parsed");
    /// assert_eq!(contents.subgraphs.len(), 1);
    /// ```
    pub fn of(bytes: &[u8], opts: &ExamineOptions) -> Examination {
        let mut x = Examination::new(bytes);
        if let Some(neff) = x.open(bytes, opts) {
            if opts.contents {
                match x.parse(&neff) {
                    Ok(()) => x.gates.push(Gate::Parse),
                    Err(e) => x.problems.push(e),
                }
            }
        }
        x
    }

    /// `verify`: the examination of [`Examination::of`] (the manifests only
    /// when `contents`), then the verdict of a load of the NEFF under
    /// `settings` ([`crate::verify`]: the architecture a flag or the
    /// environment named, else the NEFF's own), with the digest required as
    /// the settings' `validate_hash` says. The container is
    /// opened once and that one open serves the report and the load; so
    /// does the parse when the load's options are the NEFF's own (its
    /// architecture and logical-core size, as the report reads it), else
    /// the report's parse runs beside the load, on a second core.
    pub fn verify(bytes: &[u8], settings: &Settings, contents: bool) -> Examination {
        Examination::verify_source(
            bytes,
            |opts| container::open(bytes, opts),
            settings,
            contents,
        )
    }

    /// [`Examination::verify`] of a file read as a load reads it (a mapped
    /// file's pages are released as they are inflated).
    pub fn verify_file(
        source: &crate::neff::Source,
        settings: &Settings,
        contents: bool,
    ) -> Examination {
        Examination::verify_source(source.bytes(), |opts| source.open(opts), settings, contents)
    }

    fn verify_source(
        bytes: &[u8],
        open: impl FnOnce(&container::OpenOptions) -> Result<Neff, ContainerError>,
        settings: &Settings,
        contents: bool,
    ) -> Examination {
        let config = settings.config();
        let opts = ExamineOptions {
            require_hash: config.libnrt.validate_hash,
            inflate_limit: config.loader.max_inflated,
            max_members: config.loader.max_members,
            contents,
        };
        let mut x = Examination::new(bytes);
        let Some(neff) = x.open_with(bytes, &opts, open) else {
            return x;
        };
        // The load's own open would refuse a mismatch the config requires;
        // that finding is made already, and the load goes on to say what
        // else it would find.
        let mut config = settings.for_neff(Some(&neff));
        config.libnrt.validate_hash = false;
        let own = own_parse_options(&neff);
        let outcome = if contents && own == config.parse_options() {
            match parse::parse(&neff, &own) {
                Ok(model) => {
                    x.report(&model);
                    verify_ahead(
                        bytes,
                        Ahead::Parsed(Box::new(Parsed { neff, model }), own),
                        config.clone(),
                    )
                }
                // The load parses it again and says why it fails.
                Err(_) => verify_ahead(bytes, Ahead::Opened(neff), config.clone()),
            }
        } else if contents {
            let copy = neff.clone();
            std::thread::scope(|sc| {
                // A report part the manifests cannot give is left out: the
                // verdict is the load's.
                let side = sc.spawn(|| x.parse(&copy).ok());
                let outcome = verify_ahead(bytes, Ahead::Opened(neff), config.clone());
                side.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                outcome
            })
        } else {
            verify_ahead(bytes, Ahead::Opened(neff), config.clone())
        };
        let passed: &[Gate] = match &outcome {
            Ok(_) if config.loader.check => &[Gate::Parse, Gate::Stage, Gate::Validate],
            Ok(_) => &[Gate::Parse, Gate::Stage],
            Err(LoadError::Pipeline(e)) if matches!(e.stage(), "stage" | "device") => {
                &[Gate::Parse]
            }
            Err(LoadError::Validation(_)) => &[Gate::Parse, Gate::Stage],
            Err(_) => &[],
        };
        // The load's own container gates (the logical-core size against
        // the chip's) refuse what the examination's reading passed.
        if matches!(outcome, Err(LoadError::Container(_))) {
            x.gates.retain(|&g| g != Gate::Container);
        }
        x.gates.extend(passed);
        match outcome {
            Ok(report) => {
                x.warn(&report.warnings);
                x.verdict = Some(report);
            }
            Err(e) => x.problems.push(e),
        }
        x
    }

    /// Adds the warnings not already recorded (the load repeats the
    /// archive's and the parse's).
    fn warn(&mut self, warnings: &[String]) {
        for w in warnings {
            if !self.warnings.contains(w) {
                self.warnings.push(w.clone());
            }
        }
    }

    fn open(&mut self, bytes: &[u8], opts: &ExamineOptions) -> Option<Neff> {
        self.open_with(bytes, opts, |o| container::open(bytes, o))
    }

    /// S1 with the digest compared beside the inflate; when the open
    /// refuses the file, the gates one by one to fill in what passed.
    fn open_with(
        &mut self,
        bytes: &[u8],
        opts: &ExamineOptions,
        open: impl FnOnce(&container::OpenOptions) -> Result<Neff, ContainerError>,
    ) -> Option<Neff> {
        let open_opts = container::OpenOptions {
            verify_hash: false,
            compare_hash: true,
            inflate_limit: opts.inflate_limit,
            max_members: opts.max_members,
        };
        match open(&open_opts) {
            Ok(neff) => {
                let h = neff.header().clone();
                let window = payload_window(bytes, &h).unwrap_or_default();
                let compared = neff.digest().expect("the digest was compared");
                self.digest(&h, window, &compared, opts.require_hash);
                self.header = Some(h);
                self.warn(neff.archive().warnings());
                self.archive = Some(neff.archive().clone());
                self.declared_arch = parse::declared_arch(&neff);
                // A required digest that does not match is the container
                // gate's refusal, though the archive was read.
                if !(opts.require_hash && compared.is_err()) {
                    self.gates.push(Gate::Container);
                }
                Some(neff)
            }
            Err(refused) => {
                self.gates_one_by_one(bytes, opts, refused);
                None
            }
        }
    }

    /// Records the digest comparison: a problem when it is required and
    /// fails, a warning when it is not.
    fn digest(
        &mut self,
        h: &NeffHeader,
        window: &[u8],
        compared: &Result<Verified, ContainerError>,
        required: bool,
    ) {
        self.integrity = Some(Integrity::of(h, window, compared, required));
        if let Err(e) = compared {
            if required {
                self.problems.push(e.clone().into());
            } else {
                self.warnings.push(format!(
                    "the payload digest is not required here, and it does not match: {e}"
                ));
            }
        }
    }

    /// How far a file the open refused got: the header, its gates, the
    /// digest; `refused` is the open's own error, and the last problem.
    /// Past the header's gates only the archive can have refused it (the
    /// open compares the digest without requiring it), so the payload is not
    /// inflated a second time to find what the open already found.
    fn gates_one_by_one(&mut self, bytes: &[u8], opts: &ExamineOptions, refused: ContainerError) {
        let h = match NeffHeader::parse(bytes) {
            Ok(h) => h,
            Err(_) => return self.problems.push(refused.into()),
        };
        let valid = h.validate(bytes.len() as u64).is_ok();
        self.header = Some(h.clone());
        if valid {
            let window = payload_window(bytes, &h).unwrap_or_default();
            let compared = integrity::verify(h.pkg_version, &h.hash, window);
            self.digest(&h, window, &compared, opts.require_hash);
        }
        self.problems.push(refused.into());
    }

    /// S2 and S3 with the NEFF's own options, for [`Examination::contents`].
    fn parse(&mut self, neff: &Neff) -> Result<(), LoadError> {
        let parsed = parse::parse(neff, &own_parse_options(neff)).map_err(LoadError::pipeline)?;
        self.report(&parsed);
        Ok(())
    }

    /// The report's part of the manifests, and their warnings.
    fn report(&mut self, parsed: &ParsedModel) {
        let contents = Contents::of(parsed);
        self.warn(&contents.warnings);
        self.contents = Some(contents);
    }
}
