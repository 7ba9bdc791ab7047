//! The policy: pure functions from a workload and a [`ClusterView`] to a
//! [`Verdict`]. One file per predicate (queue, admissibility, exposure,
//! priority, suspend, update guards); this file is the one place that says in
//! what order they run, through the three entry points the webhooks call:
//! [`mutate_create`], [`validate_create`] and [`validate_update`]. Nothing here
//! does I/O, and `admission/` only decodes, calls one of them and encodes.
//!
//! [`ClusterView`]: crate::cluster::ClusterView

pub mod admissibility;
pub mod exposure;
pub mod ownership;
pub mod priority;
pub mod queue;
pub mod suspend;
pub mod update;

use std::fmt;

use crate::cluster::{Absent, ClusterView};
use crate::config::{Config, Selected, Setting};
use crate::vocabulary::kueue::QUEUE_NAME_LABEL;
use crate::vocabulary::reason::{Enforcement, Reason};
use crate::vocabulary::text::join;
use crate::workload::Workload;
use ownership::Ownership;

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
    fn submitter_settings(&self) -> Vec<Setting> {
        let by_queue = self.reason == Reason::InvalidDefaultQueue
            || self.ways_out.iter().any(|way| matches!(way, WayOut::Queue(_)));
        let by_priority = self
            .ways_out
            .iter()
            .any(|way| matches!(way, WayOut::WorkloadPriorityClass(_) | WayOut::PodPriorityClass { .. }));
        [(by_queue, Setting::Queue), (by_priority, Setting::Priority)]
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
    RequestAtMost(admissibility::RequestAtMost),
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
    fn checked(reason: Reason, checks: Result<Vec<String>, Denial>) -> Self {
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

/// Whether the policy applies to a workload at all; `Err` is the verdict
/// when not: skipped, or, for a new evaluation whose owner is not what its
/// reference says, refused. On UPDATE the old object's labels count too, so
/// dropping the selecting label does not slip past the guards, and an owner
/// counts only if the old object claimed it too.
fn in_scope<'c>(
    config: &'c Config,
    view: &impl ClusterView,
    subject: Subject<'_>,
    old: Option<&Workload>,
) -> Result<Selected<'c>, Verdict> {
    let workload = subject.workload;
    let ownership = ownership::ownership(config, view, subject, old);
    if ownership == Ownership::LeftToOwner {
        return Err(Verdict::Skip(Reason::OwnedByKueueWorkload));
    }
    let selected = config
        .evaluation_selector(subject.kind, workload)
        .or_else(|| old.and_then(|old| config.evaluation_selector(subject.kind, old)));
    let Some(selected) = selected else {
        return Err(Verdict::Skip(Reason::NotAnEvaluation));
    };
    if workload.is_being_deleted() {
        return Err(Verdict::Skip(Reason::BeingDeleted));
    }
    if let Ownership::Unverified { owner, uid } = ownership
        && old.is_none()
    {
        let denial = ownership::unverified_owner_denial(view, subject, owner, uid);
        return Err(enforce(config, selected, subject, Verdict::Deny(denial)));
    }
    Ok(selected)
}

/// The config's say on a verdict, the last step of every entry point: a
/// denial gets its submitters' own way to fix it and its rule's enforcement;
/// a workload that bypasses Kueue is warned about, denied or let be.
fn enforce(config: &Config, selected: Selected<'_>, subject: Subject<'_>, verdict: Verdict) -> Verdict {
    match verdict {
        Verdict::Deny(mut denial) => {
            denial.message.push_str(&selected.submitter_hint(&denial.submitter_settings()));
            denial.enforcement = config.enforcement(denial.reason);
            Verdict::Deny(denial)
        }
        Verdict::Allow { reason: Reason::BypassesKueue, shape, .. } => {
            match config.enforcement(Reason::BypassesKueue) {
                Enforcement::Warn => Verdict::Allow {
                    reason: Reason::BypassesKueue,
                    shape,
                    warnings: vec![queue::bypass_warning(subject) + &selected.submitter_hint(&[Setting::Queue])],
                },
                enforcement => Verdict::Deny(Denial {
                    enforcement,
                    ..Denial::new(
                        Reason::BypassesKueue,
                        queue::bypass_denial(subject) + &selected.submitter_hint(&[Setting::Queue]),
                    )
                }),
            }
        }
        verdict => verdict,
    }
}

/// The mutating webhook on CREATE: give an evaluation its queue (its label,
/// else the namespace's default) and start it suspended, or warn that it
/// bypasses Kueue.
pub fn mutate_create(config: &Config, view: &impl ClusterView, subject: Subject<'_>) -> Verdict {
    let selected = match in_scope(config, view, subject, None) {
        Ok(selected) => selected,
        Err(verdict) => return verdict,
    };
    let (queue_name, source) = match queue::resolve(view, subject) {
        Ok(Some(resolved)) => resolved,
        Ok(None) => {
            let bypass =
                Verdict::Allow { reason: Reason::BypassesKueue, shape: Shape::default(), warnings: Vec::new() };
            return enforce(config, selected, subject, bypass);
        }
        Err(denial) => return enforce(config, selected, subject, Verdict::Deny(denial)),
    };
    let suspended = suspend::must_start_suspended(Some(&queue_name));
    let queue_label = (source != queue::QueueSource::Label).then_some(queue_name);
    let (cleared_pod_priority_classes, warnings) = if config.drop_repeated_pod_priority_class {
        priority::repeated_pod_priority_classes(view, subject)
    } else {
        (Vec::new(), Vec::new())
    };
    let shape = Shape { queue_label, suspended, cleared_pod_priority_classes };
    let reason = if shape.is_met_by(subject.workload) { Reason::AlreadyQueued } else { Reason::Queued };
    Verdict::Allow { reason, shape, warnings }
}

/// The validating webhook on CREATE: refuse an evaluation Kueue would never
/// admit or could preempt ([`check_queued`]).
pub fn validate_create(config: &Config, view: &impl ClusterView, subject: Subject<'_>) -> Verdict {
    let selected = match in_scope(config, view, subject, None) {
        Ok(selected) => selected,
        Err(verdict) => return verdict,
    };
    enforce(config, selected, subject, Verdict::checked(Reason::Checked, check_queued(view, subject)))
}

/// The validating webhook on UPDATE: the guards on the queue label and
/// suspend, then a changed queue or priority checked like a new one.
pub fn validate_update(
    config: &Config,
    view: &impl ClusterView,
    subject: Subject<'_>,
    old: &Workload,
    username: &str,
) -> Verdict {
    let selected = match in_scope(config, view, subject, Some(old)) {
        Ok(selected) => selected,
        Err(verdict) => return verdict,
    };
    let verdict = match update::check_update(config, view, subject, old, username) {
        Ok((warnings, true)) => Verdict::checked(Reason::Checked, Ok(warnings)),
        Ok((warnings, false)) => Verdict::checked(Reason::UpdateUnchanged, Ok(warnings)),
        Err(denial) => Verdict::Deny(denial),
    };
    enforce(config, selected, subject, verdict)
}

/// Whether a check works out the ways out of a denial. A way out is checked
/// `Quiet`: as the workload would be after the change, through every check,
/// without searching for ways out of its own (so one search never starts another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Explain {
    WaysOut,
    Quiet,
}

/// The checks for a queued workload, in the order a person would fix them:
/// the queue, the priority class Kueue reads, whether Kueue would ever admit
/// it, the pods' classes, then preemption. Warnings are returned when allowed.
pub fn check_queued(view: &impl ClusterView, subject: Subject<'_>) -> Result<Vec<String>, Denial> {
    checks(view, subject, Explain::WaysOut)
}

/// Whether a workload, changed as a way out would change it, passes every
/// check a new one does: the only changes a denial offers.
pub(crate) fn passes(view: &impl ClusterView, changed: Subject<'_>) -> bool {
    checks(view, changed, Explain::Quiet).is_ok()
}

fn checks(view: &impl ClusterView, subject: Subject<'_>, explain: Explain) -> Result<Vec<String>, Denial> {
    let queue_name = subject.workload.queue_name();
    // Each ways-out list is worked out only for a denial: it runs every check per LocalQueue.
    let working = |except: &str| match explain {
        Explain::WaysOut => working_queues(view, subject, except),
        Explain::Quiet => Vec::new(),
    };
    let priority = priority::workload_priority(view, subject, explain);
    // The API server has validated the quantities by now; an unreadable one leaves quota unchecked.
    let pod_sets = subject.workload.pod_sets(subject.kind).unwrap_or_default();
    if let Some(name) = queue_name {
        // The validating webhook sees the mutated object: name the annotation when it is where the label came from.
        let from_namespace = view.namespace(subject.namespace).and_then(|ns| ns.default_queue.as_deref()) == Some(name);
        let source = if from_namespace { queue::QueueSource::NamespaceAnnotation } else { queue::QueueSource::Label };
        queue::check_local_queue(view, subject, name, source, || working(name))?;
    }
    let priority = priority?;
    if queue_name.is_some()
        && let Err(unmanaged) = admissibility::check_managed(view, subject)
    {
        return Err(admissibility::denial(subject, unmanaged, &[]));
    }
    let usage = match queue_name {
        Some(name) => match admissibility::check(view, subject, name, &pod_sets) {
            Ok(usage) => Some((name, usage)),
            Err(mut inadmissible) => {
                if let Some(fix) = &inadmissible.fix
                    && (explain == Explain::Quiet
                        || !smaller_request_passes(view, subject, name, &priority, &fix.applied(&pod_sets)))
                {
                    inadmissible.fix = None;
                }
                return Err(admissibility::denial(subject, inadmissible, &working(name)));
            }
        },
        None => None,
    };
    priority::check_pod_priority_classes(view, subject, explain)?;
    if let Some((name, usage)) = usage
        && !subject.workload.is_checkpointing()
    {
        exposure::check_preemption(view, subject, name, &priority, &usage, explain, || working(name))?;
    }
    let Some(queue_name) = queue_name else { return Ok(Vec::new()) };
    Ok(evictions_warnings(view, subject, queue_name))
}

/// Whether the workload with smaller requests (`pod_sets`) would pass: admitted
/// through `local_queue`, its pods' classes existing, and, unless it
/// checkpoints, not preempted there. An exceeds-quota denial offers the smaller
/// request only then. (Requests live in containers, so this checks the cut
/// totals directly rather than a changed workload.)
fn smaller_request_passes(
    view: &impl ClusterView,
    subject: Subject<'_>,
    local_queue: &str,
    priority: &priority::Priority,
    pod_sets: &[crate::workload::PodSetRequests],
) -> bool {
    let Ok(usage) = admissibility::check(view, subject, local_queue, pod_sets) else { return false };
    if priority::check_pod_priority_classes(view, subject, Explain::Quiet).is_err() {
        return false;
    }
    let cluster_queue = view.local_queue(subject.namespace, local_queue).map(|q| q.cluster_queue.as_str());
    subject.workload.is_checkpointing()
        || cluster_queue.is_some_and(|cq| exposure::exposure(view, cq, priority.value, &usage).is_none())
}

/// Evictions no admission webhook can prevent, said when they would restart a
/// non-checkpointing evaluation from zero: Kueue's waitForPodsReady evicts and
/// requeues an admitted workload whose pods are not all ready in time, and an
/// admission check may ask for a retry (the Workload is evicted and requeued).
fn evictions_warnings(view: &impl ClusterView, subject: Subject<'_>, local_queue: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    if subject.workload.is_checkpointing() {
        return warnings;
    }
    if let Some(ready) = view.kueue_config().effective_wait_for_pods_ready() {
        warnings.push(format!(
            "Kueue's waitForPodsReady is on (timeout {}): if this evaluation's pods are not all ready in time, Kueue \
             evicts and requeues it, and it restarts from zero.",
            crate::vocabulary::go_duration::go_duration(ready.timeout)
        ));
    }
    let checks = view
        .local_queue(subject.namespace, local_queue)
        .and_then(|q| view.cluster_queue(&q.cluster_queue))
        .map(|cq| cq.admission_checks.clone())
        .unwrap_or_default();
    if !checks.is_empty() {
        warnings.push(format!(
            "its ClusterQueue has AdmissionCheck(s) {}: a check that asks for a retry makes Kueue evict and requeue \
             it, and it restarts from zero.",
            join(&checks)
        ));
    }
    warnings
}

/// The namespace's LocalQueues, other than `except`, with which the workload
/// would pass every check (Kueue would admit it and, unless it checkpoints,
/// could not preempt it): the only queues a denial may offer as a way out.
pub fn working_queues<'v>(view: &'v impl ClusterView, subject: Subject<'_>, except: &str) -> Vec<&'v str> {
    view.local_queues(subject.namespace)
        .filter(|(name, _)| *name != except)
        .filter(|(name, _)| {
            let changed = subject.workload.with_label(QUEUE_NAME_LABEL, Some(name));
            passes(view, Subject { workload: &changed, ..subject })
        })
        .map(|(name, _)| name)
        .collect()
}

#[cfg(test)]
pub(crate) mod fixtures;
