//! The two kinds of workload this webhook shapes, and their API coordinates.

use std::fmt;

/// The two workload kinds this webhook shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    Job,
    JobSet,
}

impl WorkloadKind {
    /// Recognises the kinds by group and kind; versions other than the ones the
    /// webhook is registered for never reach it.
    pub fn from_group_kind(group: &str, kind: &str) -> Option<Self> {
        match (group, kind) {
            ("batch", "Job") => Some(Self::Job),
            ("jobset.x-k8s.io", "JobSet") => Some(Self::JobSet),
            _ => None,
        }
    }

    /// The name Kueue's Configuration gives this integration (integrations.frameworks).
    pub fn kueue_framework(self) -> &'static str {
        match self {
            Self::Job => "batch/job",
            Self::JobSet => "jobset.x-k8s.io/jobset",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Job => "Job",
            Self::JobSet => "JobSet",
        }
    }

    pub fn group_version(self) -> (&'static str, &'static str) {
        match self {
            Self::Job => ("batch", "v1"),
            Self::JobSet => ("jobset.x-k8s.io", "v1alpha2"),
        }
    }

    pub fn resource(self) -> &'static str {
        match self {
            Self::Job => "jobs",
            Self::JobSet => "jobsets",
        }
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
