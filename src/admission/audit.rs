//! The audit's decode, call and encode: a Job or JobSet as the API server
//! stores it in, [`rules::audit_existing`] called on it, what was found out.
//! The CLI and the server's audit share it, as they share [`super::review`],
//! and like a review it looks a missing object up before reporting its absence.

use serde::Serialize;
use serde_json::Value;

use super::{BadReview, Lookups, MOST_LOOKUPS};
use crate::config::Config;
use crate::rules::{self, Finding, Subject};
use crate::workload::{Stored, WorkloadKind};

/// One stored workload the audit reported: who, where in its life, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reported {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub stage: &'static str,
    pub reason: &'static str,
    pub enforcement: &'static str,
    pub message: String,
    /// The workload's uid (empty when it has none, as in a file).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

impl Reported {
    /// The workload's `apiVersion` (`batch/v1`, `jobset.x-k8s.io/v1alpha2`),
    /// for references to it.
    pub fn api_version(&self) -> String {
        let kind = if self.kind == WorkloadKind::JobSet.as_str() { WorkloadKind::JobSet } else { WorkloadKind::Job };
        let (group, version) = kind.group_version();
        format!("{group}/{version}")
    }
}

/// Puts findings in the order reports show them: by namespace, name, kind.
pub fn sort(findings: &mut [Reported]) {
    findings.sort_by(|a, b| (&a.namespace, &a.name, a.kind).cmp(&(&b.namespace, &b.name, b.kind)));
}

/// What the audit finds about one stored workload: `None` when nothing, or
/// when it is not a kind this server reviews. A finding that rests on a
/// missing object is confirmed through `lookups` first; a found object has
/// joined the view and the workload is judged again.
pub async fn audit<L: Lookups + Sync>(
    config: &Config,
    lookups: &L,
    object: &Value,
) -> Result<Option<Reported>, L::Error> {
    match Stored::decode(object) {
        None => Ok(None),
        Some(stored) => audit_stored(config, lookups, &stored.map_err(BadReview)?).await,
    }
}

/// [`audit`] of a workload already decoded (the server's watch keeps them so).
pub async fn audit_stored<L: Lookups + Sync>(
    config: &Config,
    lookups: &L,
    stored: &Stored,
) -> Result<Option<Reported>, L::Error> {
    let namespace = stored.namespace();
    let subject = Subject { kind: stored.kind, namespace, workload: &stored.workload };
    let judge = || rules::audit_existing(config, &*lookups.view(), subject, stored.stage);
    let mut finding = judge();
    for _ in 0..MOST_LOOKUPS {
        let Some(Finding { absent: Some(absent), .. }) = &finding else { break };
        if !lookups.confirm_absent(namespace, absent).await? {
            break;
        }
        finding = judge();
    }
    Ok(finding.map(|finding| Reported {
        kind: stored.kind.as_str(),
        stage: stored.stage.as_str(),
        reason: finding.reason.as_str(),
        enforcement: finding.enforcement.as_str(),
        message: super::fit_message(finding.message),
        namespace: namespace.to_string(),
        name: stored.name().to_string(),
        uid: stored.uid.clone(),
    }))
}
