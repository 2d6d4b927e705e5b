//! Reading a NEFF: the container, manifests and KBIN records on the real fixtures and the writer's NEFFs, every gate's refusal, mutations, hostile inputs and the fuzzers' findings.

mod check;
mod collectives;
#[path = "../common/mod.rs"]
mod common;
mod container_fixtures;
mod container_mapped;
mod container_mutation;
mod container_stream;
mod container_writer;
mod fuzz_regressions;
mod hostile;
mod kbin_fixtures;
mod limits;
mod manifest_fixtures;
mod manifest_npy;
mod mutation_sweep;
mod rejects;
mod synthetic;
