//! Shared test harness, one module per concern: [`server`] (the server binary
//! as a real process, HTTPS clients that trust the test CA), [`control_plane`]
//! (the environment the end-to-end tests start), [`kueue_objects`] (the Kueue
//! objects the suites build alike) and [`node`] (a real node). The EvalHub and
//! AIPerf clients (evalhub.rs, aiperf.rs) are included by their suites alone.

#![allow(dead_code)]

pub mod control_plane;
pub mod kueue_objects;
pub mod node;
pub mod server;

pub use control_plane::repo;
#[allow(unused_imports)]
pub use server::*;

pub const BIN: &str = env!("CARGO_BIN_EXE_eval-admission");
