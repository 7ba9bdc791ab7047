//! Where a stored workload is in its life, from its `spec.suspend` and its
//! status: what the audit may say about it depends on it (a queued one can
//! wait forever; a running one can be preempted; a finished one is past both).

use serde::Deserialize;
use serde_json::Value;

use super::{Workload, WorkloadKind};

/// A workload as the API server stores it, pruned: what the audit judges.
#[derive(Debug, Clone)]
pub struct Stored {
    pub kind: WorkloadKind,
    pub uid: String,
    pub workload: Workload,
    pub stage: Stage,
}

impl Stored {
    /// Decodes a stored object; `None` when it is not a Job or JobSet.
    pub fn decode(object: &Value) -> Option<Result<Self, String>> {
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let kind =
            WorkloadKind::from_group_kind(group, object.get("kind").and_then(Value::as_str).unwrap_or_default())?;
        Some(Self::decode_as(kind, object))
    }

    /// Decodes a stored object of `kind` (a watch's, which knows its kind).
    pub fn decode_as(kind: WorkloadKind, object: &Value) -> Result<Self, String> {
        let workload = <Workload as Deserialize>::deserialize(object).map_err(|e| format!("stored {kind}: {e}"))?;
        let uid = object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
        Ok(Self { kind, uid, stage: Stage::of(kind, object), workload })
    }

    pub fn namespace(&self) -> &str {
        self.workload.metadata.namespace.as_deref().unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        self.workload.metadata.name.as_deref().unwrap_or_default()
    }
}

/// A stored Job's or JobSet's stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Suspended: waiting for Kueue to admit it (or for no one, if it has no queue).
    Queued,
    /// Not suspended and not finished: running, or starting.
    Running,
    /// Completed or failed: nothing can happen to it any more.
    Finished,
}

impl Stage {
    /// The stage of a stored object (as the API server returns it). A Job is
    /// finished when its `Complete` or `Failed` condition is true, a JobSet
    /// when its `Completed` or `Failed` is (their controllers' terminal conditions).
    pub fn of(kind: WorkloadKind, object: &Value) -> Self {
        let terminal: &[&str] = match kind {
            WorkloadKind::Job => &["Complete", "Failed"],
            WorkloadKind::JobSet => &["Completed", "Failed"],
        };
        let finished =
            object.pointer("/status/conditions").and_then(Value::as_array).into_iter().flatten().any(|condition| {
                condition.get("status").and_then(Value::as_str) == Some("True")
                    && condition.get("type").and_then(Value::as_str).is_some_and(|kind| terminal.contains(&kind))
            });
        if finished {
            Self::Finished
        } else if object.pointer("/spec/suspend") == Some(&Value::Bool(true)) {
            Self::Queued
        } else {
            Self::Running
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Finished => "finished",
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_stored_job_or_jobset_is_decoded_and_anything_else_is_not_a_workload() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "e", "namespace": "n", "uid": "u"}, "spec": {"suspend": true}});
        let stored = Stored::decode(&job).unwrap().unwrap();
        assert_eq!((stored.kind, stored.uid.as_str(), stored.stage.as_str()), (WorkloadKind::Job, "u", "queued"));
        assert_eq!((stored.namespace(), stored.name()), ("n", "e"));
        let jobset = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "s"}});
        assert_eq!(Stored::decode(&jobset).unwrap().unwrap().kind, WorkloadKind::JobSet);
        assert!(Stored::decode(&json!({"apiVersion": "apps/v1", "kind": "Deployment"})).is_none());
        let broken = json!({"apiVersion": "batch/v1", "kind": "Job", "spec": []});
        assert!(Stored::decode(&broken).unwrap().unwrap_err().starts_with("stored Job: "));
        assert_eq!(
            [Stage::Queued, Stage::Running, Stage::Finished].map(Stage::as_str),
            ["queued", "running", "finished"]
        );
    }

    #[test]
    fn suspended_is_queued_unsuspended_is_running_and_a_terminal_condition_ends_both() {
        let job = |suspend: bool, conditions: Value| json!({"spec": {"suspend": suspend}, "status": {"conditions": conditions}});
        assert_eq!(Stage::of(WorkloadKind::Job, &job(true, json!([]))), Stage::Queued);
        assert_eq!(Stage::of(WorkloadKind::Job, &job(false, json!([]))), Stage::Running);
        assert_eq!(Stage::of(WorkloadKind::Job, &json!({"spec": {}})), Stage::Running);
        let complete = json!([{"type": "Complete", "status": "True"}]);
        assert_eq!(Stage::of(WorkloadKind::Job, &job(false, complete.clone())), Stage::Finished);
        // A JobSet's terminal condition is `Completed`; a Job's `Complete` does not end one.
        assert_eq!(Stage::of(WorkloadKind::JobSet, &job(false, complete)), Stage::Running);
        let completed = json!([{"type": "Completed", "status": "True"}]);
        assert_eq!(Stage::of(WorkloadKind::JobSet, &job(false, completed)), Stage::Finished);
        let failed = json!([{"type": "Failed", "status": "True"}]);
        assert_eq!(Stage::of(WorkloadKind::JobSet, &job(true, failed.clone())), Stage::Finished);
        let not_yet = json!([{"type": "Failed", "status": "False"}, {"type": "Suspended", "status": "True"}]);
        assert_eq!(Stage::of(WorkloadKind::Job, &job(true, not_yet)), Stage::Queued);
    }
}
