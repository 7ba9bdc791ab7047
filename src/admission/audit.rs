//! The audit's decode, call and encode: a Job or JobSet as the API server
//! stores it in, [`rules::audit_existing`] called on it, what was found out.
//! The CLI and the server's audit share it, as they share [`super::review`],
//! and like a review it looks a missing object up before reporting its absence.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{BadReview, Lookups, MOST_LOOKUPS};
use crate::config::Config;
use crate::rules::{self, Finding, Subject};
use crate::workload::{Stage, Workload, WorkloadKind};

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
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
    let Some(kind) = WorkloadKind::from_group_kind(group, kind) else { return Ok(None) };
    let workload =
        <Workload as Deserialize>::deserialize(object).map_err(|e| BadReview(format!("stored {kind}: {e}")))?;
    let namespace = workload.metadata.namespace.clone().unwrap_or_default();
    let stage = Stage::of(kind, object);
    let subject = Subject { kind, namespace: &namespace, workload: &workload };
    let judge = || rules::audit_existing(config, &*lookups.view(), subject, stage);
    let mut finding = judge();
    for _ in 0..MOST_LOOKUPS {
        let Some(Finding { absent: Some(absent), .. }) = &finding else { break };
        if !lookups.confirm_absent(&namespace, absent).await? {
            break;
        }
        finding = judge();
    }
    Ok(finding.map(|finding| Reported {
        kind: kind.as_str(),
        stage: stage.as_str(),
        reason: finding.reason.as_str(),
        enforcement: finding.enforcement.as_str(),
        message: super::fit_message(finding.message),
        name: workload.metadata.name.clone().unwrap_or_default(),
        namespace,
    }))
}
