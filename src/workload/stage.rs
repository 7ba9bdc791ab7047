//! Where a stored workload is in its life, from its `spec.suspend` and its
//! status: what the audit may say about it depends on it (a queued one can
//! wait forever; a running one can be preempted; a finished one is past both).

use serde_json::Value;

use super::WorkloadKind;

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
