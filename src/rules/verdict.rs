//! What the rules say about a workload: the verdict, a denial with its ways
//! out, the shape the mutating webhook gives, and who the messages are about.

use std::collections::BTreeMap;
use std::fmt;

use crate::cluster::Absent;
use crate::config::Setting;
use crate::vocabulary::kueue::QUEUE_NAME_LABEL;
use crate::vocabulary::quantity;
use crate::vocabulary::reason::{Enforcement, Reason};
use crate::vocabulary::text::join;
use crate::workload::{PodSetRequests, Workload};

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
    /// The changes the message offers, as data: each was checked through these
    /// rules, and the differential test (tests/fidelity) applies each one and
    /// asks Kueue's scheduler whether it really works.
    pub ways_out: Vec<WayOut>,
    /// What the config says to do about it: only `Deny` refuses; `Warn` lets
    /// the workload through with the message as a warning, `Off` silently.
    pub enforcement: Enforcement,
}

impl Denial {
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Self { reason, message: message.into(), absent: None, ways_out: Vec::new(), enforcement: Enforcement::Deny }
    }

    pub fn because_absent(self, absent: Absent) -> Self {
        Self { absent: Some(absent), ..self }
    }

    pub fn offering(self, ways_out: Vec<WayOut>) -> Self {
        Self { ways_out, ..self }
    }

    /// The settings a submitter would change to take one of the ways out
    /// (queue first, as the messages offer them); a bad default queue is
    /// always theirs to get around with a queue of their own.
    pub(super) fn submitter_settings(&self) -> Vec<Setting> {
        let by_queue = self.reason == Reason::InvalidDefaultQueue
            || self.ways_out.iter().any(|way| matches!(way, WayOut::Queue(_)));
        let by_priority = self
            .ways_out
            .iter()
            .any(|way| matches!(way, WayOut::WorkloadPriorityClass(_) | WayOut::PodPriorityClass { .. }));
        let by_placement = self.reason == Reason::NoMatchingFlavor;
        [(by_queue, Setting::Queue), (by_priority, Setting::Priority), (by_placement, Setting::Placement)]
            .into_iter()
            .filter_map(|(offered, setting)| offered.then_some(setting))
            .collect()
    }
}

/// A change to the workload a denial offers as a way out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WayOut {
    /// Set label `kueue.x-k8s.io/queue-name` to this LocalQueue.
    Queue(String),
    /// Set label `kueue.x-k8s.io/priority-class` to this class, or remove it.
    WorkloadPriorityClass(Option<String>),
    /// Set `priorityClassName` in the pod template at `location` (as
    /// [`Workload::pod_priority_classes`] names it), or clear it.
    PodPriorityClass { location: String, class: Option<String> },
    /// Cut a pod set's requests.
    RequestAtMost(RequestAtMost),
    /// Annotate it `eval-admission.io/checkpointing: "true"` (only true if it does checkpoint).
    Checkpointing,
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

/// What the policy decided about one review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The policy does not apply: allowed untouched.
    Skip(Reason),
    /// Allowed. `shape` is what the workload must carry (only the mutating
    /// webhook shapes); `warnings` go back to whoever submitted it.
    Allow { reason: Reason, shape: Shape, warnings: Vec<String> },
    /// Refused, with a message the submitter can act on.
    Deny(Denial),
}

impl Verdict {
    pub(super) fn checked(reason: Reason, checks: Result<Vec<String>, Denial>) -> Self {
        match checks {
            Ok(warnings) => Self::Allow { reason, shape: Shape::default(), warnings },
            Err(denial) => Self::Deny(denial),
        }
    }
}

/// What the mutating webhook makes a workload carry. `admission/` writes only
/// what differs, so the patch is minimal and a second review changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// The queue-name label to set (a label the workload already has is its own).
    pub queue_label: Option<String>,
    /// `spec.suspend: true`.
    pub suspended: bool,
    /// Pod templates whose `priorityClassName` to remove (the config's
    /// `dropRepeatedPodPriorityClass`).
    pub cleared_pod_priority_classes: Vec<crate::workload::PodTemplateAt>,
}

impl Shape {
    /// Whether `workload` already carries everything this shape sets.
    pub fn is_met_by(&self, workload: &Workload) -> bool {
        self.queue_label.as_deref().is_none_or(|queue| workload.label(QUEUE_NAME_LABEL) == Some(queue))
            && (!self.suspended || workload.is_suspended())
            && self.cleared_pod_priority_classes.iter().all(|at| !workload.has_pod_priority_class_at(*at))
    }
}

/// Whether a check works out the ways out of a denial. A way out is checked
/// `Quiet`: as the workload would be after the change, through every check,
/// without searching for ways out of its own (so one search never starts another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Explain {
    WaysOut,
    Quiet,
}

/// A pod set's requests cut to what its ClusterQueue could ever give it, in the
/// resources of the group that did not fit. Offered only where the bound is
/// exact (one pod set, one flavor in the group) and only after the workload
/// with this request was checked to pass (`rules::check_queued`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestAtMost {
    pub pod_set: String,
    /// The most of each resource in total for the pod set, milli-units.
    pub total: BTreeMap<String, i64>,
}

impl RequestAtMost {
    /// `pod_sets` with this pod set's totals cut to the bound.
    pub fn applied(&self, pod_sets: &[PodSetRequests]) -> Vec<PodSetRequests> {
        let mut cut = pod_sets.to_vec();
        for pod_set in cut.iter_mut().filter(|p| p.name == self.pod_set) {
            for (resource, most) in &self.total {
                if let Some(amount) = pod_set.total.get_mut(resource.as_str()) {
                    *amount = (*amount).min(*most);
                }
            }
        }
        cut
    }

    pub(super) fn describe(&self) -> String {
        let most: Vec<String> =
            self.total.iter().map(|(r, most)| format!("{} {r}", quantity::format_milli(r, *most))).collect();
        format!("request at most {} in total for pod set '{}'", join(&most), self.pod_set)
    }
}

/// Why Kueue would never admit a workload through a LocalQueue: the cause,
/// without the way out (the caller knows which queues work instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inadmissible {
    pub reason: Reason,
    pub cause: String,
    /// A smaller request Kueue would fit here: the one change to the workload
    /// itself an inadmissible one may be offered (once checked, see [`RequestAtMost`]).
    pub fix: Option<Box<RequestAtMost>>,
    /// The missing object the cause rests on, confirmed live before denying.
    pub absent: Option<Absent>,
    /// What to change in the workload when no one change can be checked and
    /// offered as a [`WayOut`] (a resource above its limit: lower the request
    /// or raise the limit), said as the first way to fix it.
    pub advice: Option<String>,
}

impl Inadmissible {
    pub(super) fn new(reason: Reason, cause: String) -> Self {
        Self { reason, cause, fix: None, absent: None, advice: None }
    }
}
