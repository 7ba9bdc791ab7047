//! eval-admission: an admission webhook in front of Kueue for evaluation and
//! benchmark workloads. See docs/rules.md for the rules and README.md for how to run it.

pub mod admission;
pub mod cache;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod error;
pub mod manifests;
pub mod rules;
pub mod server;
pub mod telemetry;
pub mod vocabulary;
pub mod workload;
