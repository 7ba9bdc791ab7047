//! The policy: pure functions from a workload and a [`ClusterView`] to a
//! [`Verdict`]. One file per predicate (queue, admissibility, exposure,
//! priority, ownership, suspend, update guards, evictions, the Workload API's
//! limits, resource limits, the review's own size), and what they all
//! return in `verdict`; this file is the one place that says in what order
//! they run, through the three entry points the webhooks call:
//! [`mutate_create`], [`validate_create`] and [`validate_update`]. Nothing here
//! does I/O: `admission/` decodes, calls one of them, has the caller confirm a
//! missing object, and encodes.
//!
//! [`ClusterView`]: crate::cluster::ClusterView

pub mod admissibility;
pub mod audit;
mod evictions;
pub mod exposure;
pub mod ownership;
pub mod priority;
pub mod queue;
mod resource_limits;
mod review_size;
pub mod suspend;
pub mod update;
pub mod verdict;
pub mod workload_api;

use crate::cluster::ClusterView;
use crate::config::{Config, Selected, Setting};
use crate::vocabulary::kueue::QUEUE_NAME_LABEL;
use crate::vocabulary::reason::{Enforcement, Reason};
use crate::workload::{Stage, Workload};
pub use audit::Finding;
use evictions::evictions_warnings;
use ownership::Ownership;
pub use verdict::{Denial, Explain, Shape, Subject, Verdict, WayOut};

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
    // Before any rule walks its lists; no enforcement: unreviewed is not allowed.
    review_size::check_size(subject, old).map_err(Verdict::Deny)?;
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

/// The audit of an evaluation already in the cluster at `stage`: the
/// validating webhook's verdict on it created now (one function, both callers),
/// kept where it still matters (see [`audit`]); one with no queue Kueue reads
/// bypassed Kueue.
pub fn audit_existing(config: &Config, view: &impl ClusterView, subject: Subject<'_>, stage: Stage) -> Option<Finding> {
    if subject.workload.queue_name_read_by(view.kueue_config().version).is_none() {
        let selected = in_scope(config, view, subject, None).ok()?;
        return audit::bypass(config.enforcement(Reason::BypassesKueue), view, subject, stage, selected);
    }
    audit::kept(stage, validate_create(config, view, subject))
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
    let queue_name = subject.workload.queue_name_read_by(view.kueue_config().version);
    // Each ways-out list is worked out only for a denial: it runs every check per LocalQueue.
    let working = |except: &str| match explain {
        Explain::WaysOut => working_queues(view, subject, except),
        Explain::Quiet => Vec::new(),
    };
    let priority = priority::workload_priority(view, subject, explain);
    // The API server has validated the quantities by now; an unreadable one leaves quota unchecked.
    let surroundings = crate::cluster::InNamespace { view, namespace: subject.namespace };
    let pod_sets = subject.workload.pod_sets_in(subject.kind, &surroundings).unwrap_or_default();
    if let Some(name) = queue_name {
        // The validating webhook sees the mutated object: name the annotation when it is where the label came from.
        let from_namespace = view.namespace(subject.namespace).and_then(|ns| ns.default_queue.as_deref()) == Some(name);
        let from_deprecated = view.kueue_config().version.reads_queue_annotation()
            && subject.workload.deprecated_queue_annotation() == Some(name);
        let source = match (from_namespace, from_deprecated) {
            (true, _) => queue::QueueSource::NamespaceAnnotation,
            (false, true) => queue::QueueSource::DeprecatedAnnotation,
            (false, false) => queue::QueueSource::Label,
        };
        queue::check_local_queue(view, subject, name, source, || working(name))?;
    }
    let priority = priority?;
    if queue_name.is_some()
        && let Err(unmanaged) = admissibility::check_managed(view, subject, || {
            // The way out only if no queue comes back: our annotation's, or Kueue's LocalQueue `default`.
            explain == Explain::WaysOut && {
                let unlabelled = subject.workload.with_label(QUEUE_NAME_LABEL, None);
                matches!(queue::resolve(view, Subject { workload: &unlabelled, ..subject }), Ok(None))
            }
        })
    {
        return Err(admissibility::denial(subject, unmanaged, &[]));
    }
    if queue_name.is_some() {
        workload_api::check_workload_api(subject, &pod_sets, view.kueue_config().version)?;
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
