//! What neffld puts on the device against what the real runtime did: the hardware captures, the runtime lines' rules, and plans of whole deployments.

mod capture;
mod capture_compare;
mod capture_report;
mod fidelity;
mod lines;
mod plan;
mod plan_replay;
