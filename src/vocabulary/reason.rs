//! Why a review ended as it did, and what the config may do about it: the
//! words the metrics, audit annotations, logs and config share.

use std::fmt;

use serde::Deserialize;

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
    InvalidQueueName,
    InvalidDefaultQueue,
    KueueNotInstalled,
    MissingLocalQueue,
    MissingWorkloadPriorityClass,
    MissingPriorityClass,
    LocalQueueStopped,
    ClusterQueueMissing,
    ClusterQueueInactive,
    NamespaceNotSelected,
    ResourceUncovered,
    NoMatchingFlavor,
    WorkloadRefused,
    RequestsExceedLimits,
    OutsideLimitRange,
    ExceedsQuota,
    NamespaceNotManaged,
    IntegrationDisabled,
    PodsWouldBeRefused,
    Preemptible,
    QueueLabelRemoved,
    QueueChangedWhileRunning,
    UnsuspendNotAllowed,
    UnverifiedOwner,
    // Refused unreviewed.
    TooLargeToReview,
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
            Self::InvalidQueueName => "invalid-queue-name",
            Self::InvalidDefaultQueue => "invalid-default-queue",
            Self::KueueNotInstalled => "kueue-not-installed",
            Self::MissingLocalQueue => "missing-local-queue",
            Self::MissingWorkloadPriorityClass => "missing-workload-priority-class",
            Self::MissingPriorityClass => "missing-priority-class",
            Self::LocalQueueStopped => "local-queue-stopped",
            Self::ClusterQueueMissing => "cluster-queue-missing",
            Self::ClusterQueueInactive => "cluster-queue-inactive",
            Self::NamespaceNotSelected => "namespace-not-selected",
            Self::ResourceUncovered => "resource-uncovered",
            Self::NoMatchingFlavor => "no-matching-flavor",
            Self::WorkloadRefused => "workload-refused",
            Self::RequestsExceedLimits => "requests-exceed-limits",
            Self::OutsideLimitRange => "outside-limit-range",
            Self::ExceedsQuota => "exceeds-quota",
            Self::NamespaceNotManaged => "namespace-not-managed",
            Self::IntegrationDisabled => "integration-disabled",
            Self::PodsWouldBeRefused => "pods-would-be-refused",
            Self::Preemptible => "preemptible",
            Self::QueueLabelRemoved => "queue-label-removed",
            Self::QueueChangedWhileRunning => "queue-changed-while-running",
            Self::UnsuspendNotAllowed => "unsuspend-not-allowed",
            Self::UnverifiedOwner => "unverified-owner",
            Self::TooLargeToReview => "too-large-to-review",
        }
    }
}

impl Reason {
    /// Every reason, in declaration order.
    pub const ALL: [Reason; 36] = [
        Self::NotAWorkload,
        Self::Subresource,
        Self::OperationNotReviewed,
        Self::NotAnEvaluation,
        Self::OwnedByKueueWorkload,
        Self::BeingDeleted,
        Self::Queued,
        Self::AlreadyQueued,
        Self::BypassesKueue,
        Self::Checked,
        Self::UpdateUnchanged,
        Self::InvalidQueueName,
        Self::InvalidDefaultQueue,
        Self::KueueNotInstalled,
        Self::MissingLocalQueue,
        Self::MissingWorkloadPriorityClass,
        Self::MissingPriorityClass,
        Self::LocalQueueStopped,
        Self::ClusterQueueMissing,
        Self::ClusterQueueInactive,
        Self::NamespaceNotSelected,
        Self::ResourceUncovered,
        Self::NoMatchingFlavor,
        Self::WorkloadRefused,
        Self::RequestsExceedLimits,
        Self::OutsideLimitRange,
        Self::ExceedsQuota,
        Self::NamespaceNotManaged,
        Self::IntegrationDisabled,
        Self::PodsWouldBeRefused,
        Self::Preemptible,
        Self::QueueLabelRemoved,
        Self::QueueChangedWhileRunning,
        Self::UnsuspendNotAllowed,
        Self::UnverifiedOwner,
        Self::TooLargeToReview,
    ];

    /// The reason whose label is `label`.
    pub fn from_label(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == label)
    }

    /// Denials that claim Kueue would never admit the workload (the judge checks them).
    pub fn claims_never_admitted(self) -> bool {
        matches!(
            self,
            Self::InvalidQueueName
                | Self::InvalidDefaultQueue
                | Self::KueueNotInstalled
                | Self::MissingLocalQueue
                | Self::MissingWorkloadPriorityClass
                | Self::MissingPriorityClass
                | Self::LocalQueueStopped
                | Self::ClusterQueueMissing
                | Self::ClusterQueueInactive
                | Self::NamespaceNotSelected
                | Self::ResourceUncovered
                | Self::NoMatchingFlavor
                | Self::WorkloadRefused
                | Self::RequestsExceedLimits
                | Self::OutsideLimitRange
                | Self::ExceedsQuota
                | Self::NamespaceNotManaged
                | Self::IntegrationDisabled
        )
    }
}

impl Reason {
    /// The enforcement of the rule behind this reason when the config names
    /// none; `None` for reasons that are outcomes, not rules (config keys must
    /// be rules). Every denial defaults to `Deny`; running outside Kueue, to `Warn`.
    pub fn default_enforcement(self) -> Option<Enforcement> {
        match self {
            Self::BypassesKueue => Some(Enforcement::Warn),
            reason if reason.is_denial() => Some(Enforcement::Deny),
            _ => None,
        }
    }

    /// The status a refusal with this reason carries (`code`, `reason` of the
    /// metav1.Status the API server relays): 400 Bad Request for a workload
    /// refused unreviewed, 403 Forbidden for a broken rule.
    pub fn refusal_status(self) -> (u16, &'static str) {
        match self {
            Self::TooLargeToReview => (400, "BadRequest"),
            _ => (403, "Forbidden"),
        }
    }

    /// The reasons a rule refuses with.
    pub fn is_denial(self) -> bool {
        self.claims_never_admitted()
            || matches!(
                self,
                Self::PodsWouldBeRefused
                    | Self::Preemptible
                    | Self::QueueLabelRemoved
                    | Self::QueueChangedWhileRunning
                    | Self::UnsuspendNotAllowed
                    | Self::UnverifiedOwner
            )
    }
}

/// What a rule does when a workload breaks it, per rule in the config
/// (`enforcement`), the way policy engines roll a rule out: `Warn` first to see
/// what it would refuse, then `Deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum Enforcement {
    /// Refuse the workload with the message.
    Deny,
    /// Let it through, with the message as a warning.
    Warn,
    /// Let it through silently (still counted and annotated).
    Off,
}

impl Enforcement {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "Deny",
            Self::Warn => "Warn",
            Self::Off => "Off",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A broken rule is 403; a workload refused unreviewed, the request itself wrong, 400.
    #[test]
    fn a_refusal_carries_the_status_of_its_kind() {
        assert_eq!(Reason::TooLargeToReview.refusal_status(), (400, "BadRequest"));
        for reason in Reason::ALL.into_iter().filter(|reason| reason.is_denial()) {
            assert_eq!(reason.refusal_status(), (403, "Forbidden"), "{}", reason.as_str());
        }
        assert!(!Reason::TooLargeToReview.is_denial(), "no enforcement applies to it: not a rule's");
        assert_eq!(Reason::TooLargeToReview.default_enforcement(), None, "nor can the config name it");
    }
}
