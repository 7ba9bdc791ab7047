//! The policy: pure functions from a workload and a [`ClusterView`] to a decision.
//! One file per rule family; nothing here does I/O.
//!
//! [`ClusterView`]: crate::cluster::ClusterView

pub mod priority;
pub mod queue;
pub mod suspend;
pub mod update;

use std::fmt;

/// Why a review ended as it did: the `reason` metric label, the audit annotation,
/// and the log field. Stable strings: dashboards and alerts key on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    // Allowed, untouched.
    NotAWorkload,
    Subresource,
    OperationNotReviewed,
    NotAnEvaluation,
    OwnedByKueueWorkload,
    BeingDeleted,
    // Allowed, shaped or checked.
    Queued,
    AlreadyQueued,
    BypassesKueue,
    Checked,
    UpdateUnchanged,
    // Denied.
    InvalidDefaultQueue,
    KueueNotInstalled,
    MissingLocalQueue,
    MissingWorkloadPriorityClass,
    MissingPriorityClass,
    Preemptible,
    QueueLabelRemoved,
    QueueChangedWhileRunning,
    UnsuspendNotAllowed,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotAWorkload => "not-a-workload",
            Self::Subresource => "subresource",
            Self::OperationNotReviewed => "operation-not-reviewed",
            Self::NotAnEvaluation => "not-an-evaluation",
            Self::OwnedByKueueWorkload => "owned-by-kueue-workload",
            Self::BeingDeleted => "being-deleted",
            Self::Queued => "queued",
            Self::AlreadyQueued => "already-queued",
            Self::BypassesKueue => "bypasses-kueue",
            Self::Checked => "checked",
            Self::UpdateUnchanged => "update-unchanged",
            Self::InvalidDefaultQueue => "invalid-default-queue",
            Self::KueueNotInstalled => "kueue-not-installed",
            Self::MissingLocalQueue => "missing-local-queue",
            Self::MissingWorkloadPriorityClass => "missing-workload-priority-class",
            Self::MissingPriorityClass => "missing-priority-class",
            Self::Preemptible => "preemptible",
            Self::QueueLabelRemoved => "queue-label-removed",
            Self::QueueChangedWhileRunning => "queue-changed-while-running",
            Self::UnsuspendNotAllowed => "unsuspend-not-allowed",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: the reason and a message that names the object, the cause and the
/// way out (EvalHub and AIPerf show it to their users verbatim).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub reason: Reason,
    pub message: String,
    /// Set when the denial rests on an object being absent from the view: the
    /// server looks it up live before it denies, since a watch cache may lag an
    /// object created a moment ago (a LocalQueue or class applied with the Job).
    pub absent: Option<Absent>,
}

impl Denial {
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Self { reason, message: message.into(), absent: None }
    }

    pub fn because_absent(self, absent: Absent) -> Self {
        Self { absent: Some(absent), ..self }
    }
}

/// An object a denial found missing; LocalQueues live in the workload's namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Absent {
    LocalQueue(String),
    WorkloadPriorityClass(String),
    PriorityClass(String),
}

/// Who the rules are talking about in messages: `Job team-a/eval-1`.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub kind: crate::workload::WorkloadKind,
    pub namespace: &'a str,
    pub workload: &'a crate::workload::Workload,
}

impl fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.workload.display_name(self.namespace))
    }
}

/// Joins names for a message: `a, b, c`.
pub(crate) fn join<I: IntoIterator<Item = S>, S: AsRef<str>>(items: I) -> String {
    let mut joined = String::new();
    for item in items {
        if !joined.is_empty() {
            joined.push_str(", ");
        }
        joined.push_str(item.as_ref());
    }
    joined
}

#[cfg(test)]
pub(crate) mod fixtures;
