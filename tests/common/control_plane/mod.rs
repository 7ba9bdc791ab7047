//! The one test environment: etcd and kube-apiserver, and when asked the real
//! Kueue controller and eval-admission itself, as children of the test (or
//! benchmark, or `make cluster`) that needs them.
//!
//! - Binaries come from the builders in hack/ (build-tools.sh, build-kueue.sh),
//!   which build them from Go modules once and cache them by version; nothing
//!   else here is shell.
//! - PKI is minted with rcgen, ports are picked by binding port 0, and every
//!   wait polls a condition (a fresh CRD has no status yet, so `kubectl wait`
//!   would error out instead of waiting).
//! - Teardown: [`Drop`] stops what it started; and every process is started
//!   with a parent-death signal (see [`Launch::spawn`]), so a killed or
//!   finished test run leaves nothing running even when a `static` holds the environment and
//!   no destructor runs. Each environment lives in its own directory under
//!   `$TMPDIR/eval-admission-test-env/`, named after the test process; the
//!   next start removes the directories of processes that are gone and keeps
//!   the logs of the last run until then.
//!
//! One module per concern: [`plane`] (etcd, kube-apiserver, the CRDs),
//! [`kubectl`], [`eval_admission`] (the server registered in front of it),
//! [`kueue`] (the real controller), [`environment`] (all of them together),
//! [`builders`] (hack/'s builders, the environment's directory); processes,
//! polling, ports and PKI come from the testkit crate.
//!
//! Self-contained (std, anyhow, serde and testkit): the benchmarks and the
//! `cluster` example include this folder's mod.rs by `#[path]`.

#![allow(dead_code)]

mod builders;
mod environment;
mod eval_admission;
mod kubectl;
mod kueue;
mod plane;

use std::path::PathBuf;

// Each user of this module takes a different part of these.
#[allow(unused_imports)]
pub use builders::{build, build_with, built, clients_venv};
#[allow(unused_imports)]
pub use environment::Environment;
#[allow(unused_imports)]
pub use eval_admission::EvalAdmission;
#[allow(unused_imports)]
pub use kubectl::{Kubectl, condition_true};
#[allow(unused_imports)]
pub use kueue::{Kueue, KueueSetup, webhooks_by_url};
#[allow(unused_imports)]
pub use plane::ControlPlane;
#[allow(unused_imports)]
pub use testkit::pki::{Ca, Usage};
#[allow(unused_imports)]
pub use testkit::process::{Launch, Process, tail};
#[allow(unused_imports)]
pub use testkit::{free_port, http_get, http_ok, poll};

/// Kueue's identity in the test environment: a client certificate user, which
/// tests/kueue/eval-admission-config.yaml allows to unsuspend.
pub const KUEUE_USER: &str = "kueue-e2e-controller";

/// Where the API server listens and what it tells clients (the `kubernetes`
/// Service) about itself.
pub struct Network {
    pub bind: &'static str,
    pub advertise: &'static str,
    pub service_cidr: &'static str,
    /// The `kubernetes` Service's cluster IP: the first of `service_cidr`.
    pub service_ip: &'static str,
    /// `none` where nothing may dial the advertised address; `lease` on a node.
    pub endpoint_reconciler: &'static str,
}

impl Network {
    /// Without a node, service IPs are never dialled (no kube-proxy, no pods),
    /// but keep them in loopback so a misconfigured service-backed webhook
    /// cannot reach off the machine; and the `kubernetes` Service's Endpoints
    /// may not point at loopback.
    pub const LOOPBACK: Self = Self {
        bind: "127.0.0.1",
        advertise: "127.0.0.1",
        service_cidr: "127.100.0.0/24",
        service_ip: "127.100.0.1",
        endpoint_reconciler: "none",
    };
}

pub fn repo(path: &str) -> PathBuf {
    testkit::repo(path)
}

/// The pair the static-certs install reads (manifests/static-certs/generated),
/// made once per test process: tests that need it at the same time would
/// otherwise run the script side by side on one folder.
pub fn static_certificates() -> PathBuf {
    static MADE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    MADE.get_or_init(|| {
        let made = std::process::Command::new(repo("certs/make-serving-cert.sh")).output().unwrap();
        assert!(made.status.success(), "make-serving-cert.sh: {}", String::from_utf8_lossy(&made.stderr));
    });
    repo("manifests/static-certs/generated")
}
