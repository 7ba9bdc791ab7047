//! The control plane with eval-admission, and Kueue when asked.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::Result;

use super::{ControlPlane, EvalAdmission, Kueue};

/// The control plane with eval-admission, and Kueue when asked, in front of
/// it: what the end-to-end tests, the API-server benchmark and `make cluster`
/// run. Field order is drop order.
pub struct Environment {
    pub kueue: Option<Kueue>,
    pub webhook: EvalAdmission,
    pub plane: ControlPlane,
}

impl std::ops::Deref for Environment {
    type Target = ControlPlane;
    fn deref(&self) -> &ControlPlane {
        &self.plane
    }
}

impl Environment {
    /// `server` (an eval-admission binary) with the policy `config`.
    pub fn start(apiserver_flags: &[&str], server: &Path, config: &Path, with_kueue: bool) -> Result<Self> {
        let plane = ControlPlane::start(apiserver_flags)?;
        eprintln!("test environment in {} (logs in logs/)", plane.dir.display());
        let webhook = EvalAdmission::start(&plane, server, config)?;
        let kueue = if with_kueue { Some(Kueue::start(&plane)?) } else { None };
        Ok(Self { kueue, webhook, plane })
    }

    /// The one environment of a test binary, started by whichever test asks
    /// first; a failed start fails every test with its cause. A `static`
    /// holds it, so no destructor runs: its processes go with the test
    /// binary by their parent-death signal.
    pub fn shared(start: impl FnOnce() -> Result<Self>) -> &'static Self {
        static SHARED: OnceLock<Result<Environment, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| start().map_err(|error| format!("{error:#}")))
            .as_ref()
            .unwrap_or_else(|error| panic!("the test environment did not start: {error}"))
    }
}
