//! Exposed: once admitted, some workload another user could submit would make
//! Kueue evict this one. An evaluation cannot checkpoint, so an exposed one is
//! refused unless it says it checkpoints.
//!
//! Followed in Kueue v0.19.2 (pkg/scheduler/preemption/classical):
//! `classifyPreemptionVariant` (the preemptor's own ClusterQueue policy decides;
//! only a candidate using a flavor-resource the preemptor needs, `WorkloadUsesResources`),
//! `collectCandidatesForHierarchicalReclaim` / `collectCandidatesInSubtree` (only a
//! queue over its nominal quota is reclaimed from), `IsBorrowingWithinCohortForbidden`
//! with `isAboveBorrowingThreshold`, `fitsResourceQuota` (a preemptor
//! simulates preemption only up to its nominal quota unless it may reclaim in the
//! hierarchy or preempt while borrowing), and `preemptioncommon.SatisfiesPreemptionPolicy`.
//!
//! The preemptor is any workload a user could submit: any size at least what
//! its namespace's LimitRanges force, pinned to a flavor through its node
//! labels, with any priority a user can name (`system-` PriorityClasses
//! included: Kueue ranks a Workload before its pods exist), and with other
//! users' workloads filling the queues around it.

use std::fmt;

use super::passes;
use super::priority::{self, ClassKind, PriorityClassRef};
use super::verdict::{Denial, Explain, Subject, WayOut};
use crate::cluster::priorities;
use crate::cluster::quota::{Usage, fits_below_root, nominal};
use crate::cluster::reclaim::WhileBorrowing;
use crate::cluster::{ClusterQueue, ClusterView, ReclaimWithinCohort, WithinClusterQueue};
use crate::vocabulary::kueue::PRIORITY_CLASS_LABEL;
use crate::vocabulary::own_names::CHECKPOINTING_ANNOTATION;
use crate::vocabulary::reason::Reason;
use crate::vocabulary::text::join;

/// Where a Job's one pod template is, as [`crate::workload::Workload::pod_priority_classes`] names it.
const JOB_POD_TEMPLATE: &str = "spec.template";

/// Why Kueue could preempt a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exposure {
    /// The ClusterQueue preempts within itself.
    WithinClusterQueue { policy: WithinClusterQueue, by: Option<PriorityClassRef>, flavor: String, resource: String },
    /// The workload can borrow, and another ClusterQueue of its cohort tree
    /// reclaims. `by` is the class that outranks it when that is what lets
    /// the reclaimer in (`LowerPriority`, or `Any` reached only while the
    /// reclaimer borrows, up to its borrowWithinCohort threshold); `None` when
    /// any priority is reclaimed from.
    Reclaim {
        reclaimer: String,
        policy: ReclaimWithinCohort,
        by: Option<PriorityClassRef>,
        flavor: String,
        resource: String,
    },
}

impl Exposure {
    /// Whether a higher priority (rather than the policy alone) is what exposes it.
    pub fn depends_on_priority(&self) -> bool {
        match self {
            Self::WithinClusterQueue { policy, .. } => *policy == WithinClusterQueue::LowerPriority,
            Self::Reclaim { by, .. } => by.is_some(),
        }
    }

    pub fn explain(&self, cluster_queue: &str, priority: &priority::Priority) -> String {
        let by = |by: &Option<PriorityClassRef>| {
            by.as_ref().map_or_else(|| "a higher class".to_string(), ToString::to_string)
        };
        match self {
            Self::WithinClusterQueue {
                policy: WithinClusterQueue::LowerOrNewerEqualPriority,
                flavor,
                resource,
                ..
            } => format!(
                "ClusterQueue '{cluster_queue}' has preemption.withinClusterQueue LowerOrNewerEqualPriority, so an \
                 older workload of equal priority {} needing {resource} in flavor {flavor} can preempt it",
                priority.value
            ),
            Self::WithinClusterQueue { policy, by: outranking, flavor, resource } => format!(
                "ClusterQueue '{cluster_queue}' has preemption.withinClusterQueue {}, its priority is {priority}, and a \
                 workload at {} needing {resource} in flavor {flavor} outranks it",
                policy.as_str(),
                by(outranking)
            ),
            Self::Reclaim { reclaimer, policy: ReclaimWithinCohort::Any, by: None, flavor, resource } => format!(
                "ClusterQueue '{cluster_queue}' can borrow {resource} in flavor {flavor} from its cohort, where \
                 ClusterQueue '{reclaimer}' has preemption.reclaimWithinCohort Any, so it can reclaim that quota from a \
                 workload of any priority"
            ),
            Self::Reclaim { reclaimer, policy: ReclaimWithinCohort::Any, by: Some(outranking), flavor, resource } => {
                format!(
                    "ClusterQueue '{cluster_queue}' can borrow {resource} in flavor {flavor} from its cohort, where \
                     ClusterQueue '{reclaimer}' has preemption.reclaimWithinCohort Any and reclaims only while it \
                     borrows itself, which borrowWithinCohort allows against lower priorities: its priority is \
                     {priority}, and {outranking} outranks it"
                )
            }
            Self::Reclaim { reclaimer, policy, by: outranking, flavor, resource } => format!(
                "ClusterQueue '{cluster_queue}' can borrow {resource} in flavor {flavor} from its cohort, where \
                 ClusterQueue '{reclaimer}' has preemption.reclaimWithinCohort {}, its priority is {priority}, and {} \
                 outranks it",
                policy.as_str(),
                by(outranking)
            ),
        }
    }
}

impl fmt::Display for Exposure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// The lowest priority a user can name above `priority`, if any: the likeliest preemptor.
fn outranking(view: &impl ClusterView, priority: i32) -> Option<PriorityClassRef> {
    priorities::lowest_above(&view.nameable_priorities(), priority).cloned()
}

/// Whether a workload of `priority` holding `usage` in ClusterQueue `cq_name`
/// could be preempted. `None` when the ClusterQueue does not exist.
pub fn exposure(view: &impl ClusterView, cq_name: &str, priority: i32, usage: &Usage) -> Option<Exposure> {
    let queue = view.cluster_queue(cq_name)?;
    let held: Vec<(&str, &str, i64)> = usage
        .iter()
        .filter(|(_, amount)| **amount > 0)
        .map(|((f, r), amount)| (f.as_str(), r.as_str(), *amount))
        .collect();
    if let Some(found) = within_cluster_queue(view, cq_name, queue, priority, &held) {
        return Some(found);
    }
    reclaim(view, cq_name, queue, priority, &held)
}

/// A preemptor in the same ClusterQueue. It needs preemption only where the
/// queue's own quota is (`fitsResourceQuota`: up to nominal), unless it may
/// preempt while borrowing (`canPreemptWhileBorrowing`) or its request fits a
/// cohort below the root of the tree (`mayReclaimInHierarchy`; saved case s1-64432).
fn within_cluster_queue(
    view: &impl ClusterView,
    cq_name: &str,
    queue: &ClusterQueue,
    priority: i32,
    held: &[(&str, &str, i64)],
) -> Option<Exposure> {
    let by = match queue.within_cluster_queue {
        WithinClusterQueue::Never => return None,
        WithinClusterQueue::LowerPriority => Some(outranking(view, priority)?),
        // An equal priority submitted earlier is always nameable: the workload's own.
        WithinClusterQueue::LowerOrNewerEqualPriority => None,
    };
    let while_borrowing = queue.cohort.is_some() && preempts_while_borrowing(view, queue);
    let (flavor, resource, _) = held.iter().find(|(flavor, resource, amount)| {
        nominal(view, cq_name, flavor, resource) > 0
            || while_borrowing
            || fits_below_root(view, cq_name, flavor, resource, *amount)
    })?;
    Some(Exposure::WithinClusterQueue {
        policy: queue.within_cluster_queue,
        by,
        flavor: flavor.to_string(),
        resource: resource.to_string(),
    })
}

/// `FlavorAssigner.canPreemptWhileBorrowing`: borrowWithinCohort allows it, or
/// fair sharing is on and the queue reclaims at all.
fn preempts_while_borrowing(view: &impl ClusterView, queue: &ClusterQueue) -> bool {
    queue.borrow_within_cohort.lower_priority
        || (view.kueue_config().fair_sharing_enabled() && queue.reclaim_within_cohort != ReclaimWithinCohort::Never)
}

/// Another ClusterQueue of the cohort tree reclaiming what this one borrows
/// ([`crate::cluster::reclaim::reclaimers`], derived per queue, flavor and
/// resource): the first, in the order held and by name, whose policy and
/// preempting while borrowing (borrowWithinCohort, below its threshold) let it
/// reclaim from this priority.
///
/// With fair sharing on, Kueue runs `fairPreemptions` instead: any queue of the
/// tree that borrows the flavor-resource is a candidate, whatever borrowWithinCohort
/// says, and the strategies compare dominant resource shares. A reclaimer with
/// an empty queue asking for a sliver has a share below any borrowing queue's
/// (`LessThanInitialShare`), and one within its nominal quota preempts
/// outright (`FairSharingPreemptWithinNominal`, on by default), so every
/// reclaimer that can get the flavor-resource at all counts. Fair-sharing
/// weights are not read: assuming every share comparison passes errs careful.
fn reclaim(
    view: &impl ClusterView,
    cq_name: &str,
    queue: &ClusterQueue,
    priority: i32,
    held: &[(&str, &str, i64)],
) -> Option<Exposure> {
    queue.cohort.as_ref()?;
    let above = outranking(view, priority);
    for (flavor, resource, _) in held {
        for reclaimer in view.reclaimers(cq_name, flavor, resource).iter() {
            let while_borrowing = reclaimer.while_borrowing.applies(priority, above.is_some());
            let by = match reclaimer.policy {
                ReclaimWithinCohort::Never => continue,
                // Any priority, unless it reaches the workload only while borrowing
                // up to a threshold: then a priority above that is safe.
                ReclaimWithinCohort::Any
                    if reclaimer.reclaims_otherwise || reclaimer.while_borrowing == WhileBorrowing::Always =>
                {
                    None
                }
                ReclaimWithinCohort::Any => above.clone(),
                ReclaimWithinCohort::LowerPriority => match &above {
                    Some(class) => Some(class.clone()),
                    None => continue,
                },
            };
            if reclaimer.reclaims(while_borrowing) {
                return Some(Exposure::Reclaim {
                    reclaimer: reclaimer.name.clone(),
                    policy: reclaimer.policy,
                    by,
                    flavor: flavor.to_string(),
                    resource: resource.to_string(),
                });
            }
        }
    }
    None
}

/// Refuses a non-checkpointing evaluation that Kueue could preempt in the
/// ClusterQueue behind `local_queue`. `working` gives the namespace's queues that
/// would admit it and not preempt it: the only queues offered instead.
pub fn check_preemption<'v>(
    view: &'v impl ClusterView,
    subject: Subject<'_>,
    local_queue: &str,
    priority: &priority::Priority,
    usage: &Usage,
    explain: Explain,
    working: impl FnOnce() -> Vec<&'v str>,
) -> Result<(), Denial> {
    if subject.workload.is_checkpointing() {
        return Ok(());
    }
    let Some(cluster_queue) = view.local_queue(subject.namespace, local_queue).map(|q| q.cluster_queue.as_str()) else {
        return Ok(());
    };
    let Some(found) = exposure(view, cluster_queue, priority.value, usage) else {
        return Ok(());
    };
    if explain == Explain::Quiet {
        return Err(Denial::new(Reason::Preemptible, String::new()));
    }
    let mut messages = Vec::new();
    let mut ways_out = Vec::new();
    let classes =
        if found.depends_on_priority() { safe_classes(view, subject, cluster_queue, usage) } else { Vec::new() };
    if !classes.is_empty() {
        let choices: Vec<String> = classes.iter().map(|c| format!("{} ({})", c.how_to_use(), c.value)).collect();
        messages.push(format!("use a priority nothing outranks ({})", choices.join(" or ")));
        ways_out.extend(classes.into_iter().map(|class| match class.kind {
            ClassKind::WorkloadPriorityClass => WayOut::WorkloadPriorityClass(Some(class.name)),
            ClassKind::PriorityClass => {
                WayOut::PodPriorityClass { location: JOB_POD_TEMPLATE.to_string(), class: Some(class.name) }
            }
        }));
    }
    let working = working();
    if !working.is_empty() {
        messages.push(format!(
            "submit to a LocalQueue whose ClusterQueue would admit it and cannot preempt it ({})",
            join(&working)
        ));
        ways_out.extend(working.iter().map(|queue| WayOut::Queue(queue.to_string())));
    }
    messages.push(format!("if it does checkpoint, annotate it {CHECKPOINTING_ANNOTATION}: \"true\""));
    ways_out.push(WayOut::Checkpointing);
    Err(Denial::new(
        Reason::Preemptible,
        format!(
            "{subject} is an evaluation that cannot checkpoint, but Kueue could preempt it and it would restart from \
             zero: via LocalQueue '{local_queue}', {}. To fix: {}.",
            found.explain(cluster_queue, priority),
            messages.join("; or ")
        ),
    )
    .offering(ways_out))
}

/// The most classes a denial offers, and the most it checks to find them: a
/// list of hundreds helps nobody, and each check runs every rule.
const MOST_CLASSES_OFFERED: usize = 3;
const MOST_CLASSES_CHECKED: usize = 16;

/// The classes with which the workload would pass every check (so Kueue could
/// not preempt it in this queue), as the change that makes Kueue read them: with the
/// priority-class label set, only another WorkloadPriorityClass (the label wins);
/// a PriorityClass only for a Job without the label. System classes are not offered.
///
/// Only classes at or above the queue's threshold are checked: exposure only
/// shrinks as the priority rises (fewer classes outrank it, fewer
/// borrowWithinCohort thresholds are above it), so the lowest safe priority is
/// found by halving the nameable ones, and every class below it is exposed.
fn safe_classes(
    view: &impl ClusterView,
    subject: Subject<'_>,
    cluster_queue: &str,
    usage: &Usage,
) -> Vec<PriorityClassRef> {
    let labelled = subject.workload.priority_class_label().is_some();
    let is_job = subject.kind == crate::workload::WorkloadKind::Job;
    let nameable = view.nameable_priorities();
    let safe = nameable.partition_point(|class| exposure(view, cluster_queue, class.value, usage).is_none());
    nameable[..safe]
        .iter()
        .filter(|class| !class.name.starts_with("system-"))
        .filter(|class| class.kind == ClassKind::WorkloadPriorityClass || (!labelled && is_job))
        .take(MOST_CLASSES_CHECKED)
        .filter(|class| passes_with(view, subject, class))
        .take(MOST_CLASSES_OFFERED)
        .cloned()
        .collect()
}

/// Whether the workload passes every check once given `class` the way Kueue reads it.
fn passes_with(view: &impl ClusterView, subject: Subject<'_>, class: &PriorityClassRef) -> bool {
    let changed = match class.kind {
        ClassKind::WorkloadPriorityClass => subject.workload.with_label(PRIORITY_CLASS_LABEL, Some(&class.name)),
        ClassKind::PriorityClass => subject.workload.with_pod_priority_class(JOB_POD_TEMPLATE, Some(&class.name)),
    };
    passes(view, Subject { workload: &changed, ..subject })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::fixtures::state_with;
    use crate::rules::fixtures::*;

    const FAIR_SHARING: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config, namespace: kueue-system}\n\
        data:\n  controller_manager_config.yaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta2\n    kind: Configuration\n\
        \x20   fairSharing:\n      preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]\n";

    /// A queue with no cpu of its own, borrowing from a lender; it preempts within
    /// itself and reclaims with `Any`, but may not borrow while preempting.
    fn borrower_and_lender(reclaim: &str) -> String {
        let queue = |name: &str, cpu: u32, preemption: &str| {
            format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  cohortName: c\n  \
                 namespaceSelector: {{}}\n  preemption: {preemption}\n  resourceGroups: [{{coveredResources: [cpu], flavors: \
                 [{{name: f, resources: [{{name: cpu, nominalQuota: {cpu}}}]}}]}}]\n---\n"
            )
        };
        queue(
            "borrower",
            0,
            &format!("{{withinClusterQueue: LowerOrNewerEqualPriority, reclaimWithinCohort: {reclaim}}}"),
        ) + &queue("lender", 4, "{}")
            + "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n"
    }

    fn held() -> Usage {
        Usage::from([(("f".to_string(), "cpu".to_string()), 1000)])
    }

    #[test]
    fn within_its_queue_a_request_that_fits_a_cohort_below_the_root_preempts_without_nominal_quota() {
        // Saved MISS s1-64432: q has no cpu of its own, borrows up to 2, and preempts
        // LowerPriority within itself. In a flat cohort its preemptor never
        // simulates preemption (nominal 0); under a cohort below the root it does.
        let documents = |cohort_spec: &str| {
            let queue = |name: &str, cpu: u32, extra: &str| {
                format!(
                    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  cohortName: inner\n  \
                     namespaceSelector: {{}}\n  preemption: {{withinClusterQueue: LowerPriority}}\n  resourceGroups: [{{coveredResources: [cpu], \
                     flavors: [{{name: f, resources: [{{name: cpu, nominalQuota: {cpu}{extra}}}]}}]}}]\n"
                )
            };
            vec![
                queue("q", 0, ", borrowingLimit: 2"),
                queue("lender", 4, ""),
                format!(
                    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: inner}}\nspec: {{{cohort_spec}}}\n"
                ),
                "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n"
                    .to_string(),
            ]
        };
        let exposure_in = |cohort_spec: &str| {
            let documents = documents(cohort_spec);
            let state = state_with(&documents.iter().map(String::as_str).collect::<Vec<_>>());
            exposure(&state, "q", 0, &held())
        };
        assert_eq!(exposure_in(""), None, "flat: the preemptor needs nominal quota it does not have");
        let nested = exposure_in("parentName: root");
        assert!(matches!(nested, Some(Exposure::WithinClusterQueue { .. })), "{nested:?}");
        let printed = nested.as_ref().unwrap().to_string();
        assert_eq!(printed, format!("{:?}", nested.unwrap()), "printed as its debug form");
        assert!(printed.starts_with("WithinClusterQueue { policy: LowerPriority"), "{printed}");
    }

    #[test]
    fn a_cohort_below_the_root_that_the_workload_fills_leaves_no_room_to_preempt_in() {
        // Saved cases s1-7010, s1-70941: inner's only quota is the 2 cpu its
        // child lends, and the evaluation borrows both, so a request beside it
        // never fits inner (FindHeightOfLowestSubtreeThatFits climbs to the root).
        let queue = |name: &str, cohort: &str, cpu: u32, extra: &str| {
            format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  cohortName: {cohort}\n  \
                 namespaceSelector: {{}}\n  preemption: {{withinClusterQueue: LowerPriority}}\n  resourceGroups: [{{coveredResources: [cpu], \
                 flavors: [{{name: f, resources: [{{name: cpu, nominalQuota: {cpu}{extra}}}]}}]}}]\n"
            )
        };
        let documents = [
            queue("q", "inner", 0, ", borrowingLimit: 2"),
            queue("lender", "inner", 2, ""),
            queue("far", "root", 8, ""),
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: inner}\nspec: {parentName: root}\n"
                .to_string(),
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n".to_string(),
        ];
        let state = state_with(&documents.iter().map(String::as_str).collect::<Vec<_>>());
        let holding = |milli: i64| Usage::from([(("f".to_string(), "cpu".to_string()), milli)]);
        assert!(exposure(&state, "q", 0, &holding(1999)).is_some(), "a sliver of inner is left");
        assert_eq!(exposure(&state, "q", 0, &holding(2000)), None, "inner is full with it");
        assert!(fits_below_root_for_test(&state, 1999));
        assert!(!fits_below_root_for_test(&state, 2000));
        // A lendingLimit keeps part of q's own quota local: what it has free
        // there is subtracted from what is missing, so inner has room again.
        let keeping = [
            queue("q", "inner", 1, ", lendingLimit: 0"),
            queue("lender", "inner", 2, ""),
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: inner}\nspec: {parentName: root}\n"
                .to_string(),
        ];
        let state = state_with(&keeping.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(fits_below_root_for_test(&state, 500), "q keeps 1, so a request of up to 2.5 fits inner");
        assert!(!fits_below_root_for_test(&state, 3000), "1 kept locally, 2 fill inner");
    }

    fn fits_below_root_for_test(state: &crate::cluster::ClusterState, held: i64) -> bool {
        crate::cluster::quota::fits_below_root(state, "q", "f", "cpu", held)
    }

    #[test]
    fn with_fair_sharing_a_queue_that_reclaims_preempts_while_borrowing() {
        // Classical: all it holds is borrowed, and borrowWithinCohort is unset, so
        // a same-queue preemptor never preempts (fitsResourceQuota).
        let classical = state_with(&[&borrower_and_lender("Any")]);
        assert_eq!(exposure(&classical, "borrower", 0, &held()), None);
        // Fair sharing: canPreemptWhileBorrowing (saved case s1-3995).
        let fair = state_with(&[&borrower_and_lender("Any"), FAIR_SHARING]);
        assert!(
            matches!(exposure(&fair, "borrower", 0, &held()), Some(Exposure::WithinClusterQueue { .. })),
            "{:?}",
            exposure(&fair, "borrower", 0, &held())
        );
        // Unless it never reclaims.
        let fair_never = state_with(&[&borrower_and_lender("Never"), FAIR_SHARING]);
        assert_eq!(exposure(&fair_never, "borrower", 0, &held()), None);
    }

    #[test]
    fn a_preemptible_evaluation_is_told_why_and_what_would_work() {
        let state = crate::rules::fixtures::seed_state();
        let message = |workload: &crate::workload::Workload| {
            let denial = crate::rules::check_queued(&state, job_subject(workload)).unwrap_err();
            assert_eq!(denial.reason, Reason::Preemptible, "{}", denial.message);
            denial.message
        };
        let unclassed = evalhub_job("team-a-namespace", Some("shared-queue"));
        assert_eq!(
            message(&unclassed),
            "Job team-a-namespace/evalhub-3f2a is an evaluation that cannot checkpoint, but Kueue could preempt it and \
             it would restart from zero: via LocalQueue 'shared-queue', ClusterQueue 'team-a-shared-cq' has \
             preemption.withinClusterQueue LowerPriority, its priority is 0 (no priority class), and a workload at \
             WorkloadPriorityClass 'experimental' (100) needing cpu in flavor default-flavor outranks it. To fix: submit \
             to a LocalQueue whose ClusterQueue would admit it and cannot preempt it (eval-queue); or if it does \
             checkpoint, annotate it eval-admission.io/checkpointing: \"true\"."
        );
        let routine =
            evalhub_job_with("team-a-namespace", Some("shared-queue"), &[("kueue.x-k8s.io/priority-class", "routine")]);
        assert!(
            message(&routine).contains(
                "its priority is 500 (WorkloadPriorityClass 'routine'), and a workload at WorkloadPriorityClass \
                 'production' (1000) needing cpu"
            ),
            "{}",
            message(&routine)
        );
        let borrowing = evalhub_job("my-benchmarks", Some("shared-gpu-queue"));
        assert_eq!(
            message(&borrowing),
            "Job my-benchmarks/evalhub-3f2a is an evaluation that cannot checkpoint, but Kueue could preempt it and it \
             would restart from zero: via LocalQueue 'shared-gpu-queue', ClusterQueue 'shared-gpu-cq' can borrow cpu in \
             flavor default-flavor from its cohort, where ClusterQueue 'research-cq' has preemption.reclaimWithinCohort \
             Any, so it can reclaim that quota from a workload of any priority. To fix: submit to a LocalQueue whose \
             ClusterQueue would admit it and cannot preempt it (aiperf-queue); or if it does checkpoint, annotate it \
             eval-admission.io/checkpointing: \"true\"."
        );
    }

    /// With whenCanBorrow TryNextFlavor, Kueue passes over a flavor the workload
    /// would borrow in for one where it fits its nominal quota; the flavor it
    /// holds is the one a preemptor is named for.
    #[test]
    fn a_flavor_that_needs_borrowing_is_passed_over_for_one_that_does_not() {
        let flavor_of = |f1_cpu: u32, f2_cpu: u32, try_next: bool| {
            let fungibility = if try_next { "TryNextFlavor" } else { "Borrow" };
            let multi = format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: multi}}\nspec:\n  cohortName: pool\n  \
                 namespaceSelector: {{}}\n  preemption: {{withinClusterQueue: LowerPriority}}\n  flavorFungibility: {{whenCanBorrow: \
                 {fungibility}}}\n  resourceGroups: [{{coveredResources: [cpu, memory], flavors: [{{name: f1, resources: [{{name: cpu, \
                 nominalQuota: {f1_cpu}}}, {{name: memory, nominalQuota: 64Gi}}]}}, {{name: f2, resources: [{{name: cpu, nominalQuota: \
                 {f2_cpu}}}, {{name: memory, nominalQuota: 64Gi}}]}}]}}]\n"
            );
            let lender = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: lender}\nspec:\n  cohortName: pool\n  \
                namespaceSelector: {}\n  resourceGroups: [{coveredResources: [cpu, memory], flavors: [{name: f1, resources: [{name: cpu, \
                nominalQuota: 4}, {name: memory, nominalQuota: 64Gi}]}, {name: f2, resources: [{name: cpu, nominalQuota: 4}, \
                {name: memory, nominalQuota: 64Gi}]}]}]\n";
            let documents = [
                crate::rules::fixtures::SEED_STATE,
                &multi,
                lender,
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f1}\n",
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f2}\n",
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: m, namespace: team-a-namespace}\nspec: {clusterQueue: multi}\n",
            ];
            let state = state_with(&documents);
            // 2 cpu and 8Gi memory.
            let job = evalhub_job("team-a-namespace", Some("m"));
            let denial = crate::rules::check_queued(&state, job_subject(&job)).unwrap_err();
            assert_eq!(denial.reason, Reason::Preemptible, "{}", denial.message);
            denial.message
        };
        let borrowing_in_f1 = flavor_of(1, 4, true);
        assert!(borrowing_in_f1.contains("needing cpu in flavor f2 outranks it"), "{borrowing_in_f1}");
        let fitting_f1 = flavor_of(2, 4, true);
        assert!(fitting_f1.contains("needing cpu in flavor f1 outranks it"), "exactly the nominal quota: {fitting_f1}");
        let borrowing_in_both = flavor_of(1, 1, true);
        assert!(borrowing_in_both.contains("needing cpu in flavor f1 outranks it"), "the first: {borrowing_in_both}");
        let borrow = flavor_of(1, 4, false);
        assert!(borrow.contains("needing cpu in flavor f1 outranks it"), "whenCanBorrow Borrow: {borrow}");
    }

    #[test]
    fn a_workload_that_holds_nothing_cannot_be_preempted() {
        let mut job = crate::rules::fixtures::evalhub_job_value(
            "team-a-namespace",
            &[("kueue.x-k8s.io/queue-name", "shared-queue")],
            None,
        );
        job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] =
            serde_json::json!({"cpu": "0", "memory": "0"});
        let job: crate::workload::Workload = serde_json::from_value(job).unwrap();
        assert!(crate::rules::check_queued(&crate::rules::fixtures::seed_state(), job_subject(&job)).is_ok());
    }

    #[test]
    fn a_reclaimer_that_can_take_no_workloads_reclaims_nothing() {
        // research-cq reclaims Any from shared-gpu-cq's borrowing; held, it admits nothing to reclaim for.
        let held = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: research-cq}\nspec:\n  \
            namespaceSelector: {}\n  cohortName: gpu-root\n  stopPolicy: Hold\n  preemption: {reclaimWithinCohort: Any}\n  \
            resourceGroups: [{coveredResources: [cpu, memory, nvidia.com/gpu], flavors: [{name: default-flavor, resources: \
            [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 256Gi}, {name: nvidia.com/gpu, nominalQuota: 8}]}]}]\n";
        let job = evalhub_job("my-benchmarks", Some("shared-gpu-queue"));
        let seed = crate::rules::fixtures::seed_state();
        assert_eq!(crate::rules::check_queued(&seed, job_subject(&job)).unwrap_err().reason, Reason::Preemptible);
        let state = state_with(&[crate::rules::fixtures::SEED_STATE, held]);
        assert!(crate::rules::check_queued(&state, job_subject(&job)).is_ok());
    }

    /// A reclaimer with `reclaimWithinCohort: Any` that always borrows (its
    /// namespace's LimitRange forces more memory than its quota) reaches a
    /// workload only as borrowWithinCohort allows: up to its threshold. So
    /// the denial says so and offers a priority above it, which passes.
    #[test]
    fn an_any_reclaimer_that_reaches_only_while_borrowing_spares_priorities_above_its_threshold() {
        let reclaimer = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: research-cq}\nspec:\n  \
            namespaceSelector: {matchLabels: {team: research}}\n  cohortName: gpu-root\n  \
            preemption: {reclaimWithinCohort: Any, borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}}\n  \
            resourceGroups: [{coveredResources: [cpu, memory, nvidia.com/gpu], flavors: [{name: default-flavor, \
            resources: [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 256Gi}, \
            {name: nvidia.com/gpu, nominalQuota: 8}]}]}]\n";
        let namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: r1, labels: {team: research}}\n";
        let forced = "apiVersion: v1\nkind: LimitRange\nmetadata: {name: limits, namespace: r1}\nspec:\n  \
            limits: [{type: Container, min: {memory: 300Gi}, defaultRequest: {memory: 300Gi}}]\n";
        let state = state_with(&[crate::rules::fixtures::SEED_STATE, reclaimer, namespace, forced]);
        let unlabelled = evalhub_job("my-benchmarks", Some("shared-gpu-queue"));
        let denial = crate::rules::check_queued(&state, job_subject(&unlabelled)).unwrap_err();
        assert_eq!(denial.reason, Reason::Preemptible, "{}", denial.message);
        assert!(
            denial.message.contains("reclaimWithinCohort Any and reclaims only while it borrows itself"),
            "{}",
            denial.message
        );
        assert!(!denial.message.contains("any priority"), "{}", denial.message);
        assert!(denial.message.contains("routine (500)"), "a priority above the threshold offered: {}", denial.message);
        let routine = evalhub_job_with(
            "my-benchmarks",
            Some("shared-gpu-queue"),
            &[(crate::vocabulary::kueue::PRIORITY_CLASS_LABEL, "routine")],
        );
        assert!(crate::rules::check_queued(&state, job_subject(&routine)).is_ok());
    }

    #[test]
    fn a_reclaimer_whose_namespaces_force_it_to_borrow_reclaims_only_if_it_may_preempt_while_borrowing() {
        // Saved case s1-50973: research-cq serves namespaces whose LimitRange gives
        // every container memory and holds it to a min above research-cq's own
        // memory quota, so each workload it admits borrows memory.
        let reclaimer = |borrow_within_cohort: &str, selector: &str| {
            format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: research-cq}}\nspec:\n  \
                 namespaceSelector: {selector}\n  cohortName: gpu-root\n  \
                 preemption: {{reclaimWithinCohort: Any{borrow_within_cohort}}}\n  \
                 resourceGroups: [{{coveredResources: [cpu, memory, nvidia.com/gpu], flavors: [{{name: default-flavor, \
                 resources: [{{name: cpu, nominalQuota: 64}}, {{name: memory, nominalQuota: 256Gi}}, \
                 {{name: nvidia.com/gpu, nominalQuota: 8}}]}}]}}]\n"
            )
        };
        let research = |name: &str| {
            format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}, labels: {{team: research}}}}\n")
        };
        let limits = |name: &str, defaulted: &str| {
            format!(
                "apiVersion: v1\nkind: LimitRange\nmetadata: {{name: limits, namespace: {name}}}\nspec:\n  \
                 limits: [{{type: Container, min: {{memory: 300Gi}}{defaulted}}}]\n"
            )
        };
        let defaulted = ", defaultRequest: {memory: 300Gi}";
        let only_research = "{matchLabels: {team: research}}";
        let verdict = |documents: &[&str]| {
            let mut all = vec![crate::rules::fixtures::SEED_STATE];
            all.extend_from_slice(documents);
            let job = evalhub_job("my-benchmarks", Some("shared-gpu-queue"));
            crate::rules::check_queued(&state_with(&all), job_subject(&job)).map(|_| ()).map_err(|denial| denial.reason)
        };
        let (r1, r2) = (research("r1"), research("r2"));
        let (forced_r1, forced_r2) = (limits("r1", defaulted), limits("r2", defaulted));
        let queue = reclaimer("", only_research);
        assert_eq!(verdict(&[&r1, &forced_r1, &queue]), Ok(()));
        assert_eq!(verdict(&[&r1, &forced_r1, &r2, &forced_r2, &queue]), Ok(()));
        // Leave to preempt while borrowing, a namespace that forces nothing, a
        // min with no default, or a queue with room for the floor: it reclaims.
        let while_borrowing = reclaimer(", borrowWithinCohort: {policy: LowerPriority}", only_research);
        assert_eq!(verdict(&[&r1, &forced_r1, &while_borrowing]), Err(Reason::Preemptible));
        assert_eq!(verdict(&[&r1, &forced_r1, &r2, &queue]), Err(Reason::Preemptible));
        assert_eq!(verdict(&[&r1, &limits("r1", ""), &queue]), Err(Reason::Preemptible));
        let roomy = queue.replace("memory, nominalQuota: 256Gi", "memory, nominalQuota: 300Gi");
        assert_eq!(verdict(&[&r1, &forced_r1, &roomy]), Err(Reason::Preemptible));
        // Memory in a group of its own: any of its flavors with room will do.
        let apart = |big: &str| {
            queue.replace(
                "coveredResources: [cpu, memory, nvidia.com/gpu], flavors: [{name: default-flavor, \
                 resources: [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 256Gi}, ",
                &format!(
                    "coveredResources: [memory], flavors: [{{name: mem-small, resources: [{{name: memory, nominalQuota: \
                     256Gi}}]}}, {{name: mem-big, resources: [{{name: memory, nominalQuota: {big}}}]}}]}}, \
                     {{coveredResources: [cpu, nvidia.com/gpu], flavors: [{{name: default-flavor, resources: [{{name: cpu, \
                     nominalQuota: 64}}, "
                ),
            )
        };
        let flavors = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: mem-small}\n---\n\
                       apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: mem-big}\n";
        assert_ne!(apart("300Gi"), queue, "the groups were split");
        assert_eq!(verdict(&[&r1, &forced_r1, flavors, &apart("280Gi")]), Ok(()));
        assert_eq!(verdict(&[&r1, &forced_r1, flavors, &apart("300Gi")]), Err(Reason::Preemptible));
    }

    #[test]
    fn a_reclaimer_that_reclaims_from_lower_priorities_only_leaves_a_top_priority_alone() {
        let lower = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: research-cq}\nspec:\n  \
            namespaceSelector: {}\n  cohortName: gpu-root\n  preemption: {reclaimWithinCohort: LowerPriority}\n  \
            resourceGroups: [{coveredResources: [cpu, memory, nvidia.com/gpu], flavors: [{name: default-flavor, resources: \
            [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 256Gi}, {name: nvidia.com/gpu, nominalQuota: 8}]}]}]\n";
        let top = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: top}\nvalue: 2000001000\n";
        let state = state_with(&[crate::rules::fixtures::SEED_STATE, lower, top]);
        let job = evalhub_job("my-benchmarks", Some("shared-gpu-queue"));
        let denial = crate::rules::check_queued(&state, job_subject(&job)).unwrap_err();
        assert_eq!(denial.reason, Reason::Preemptible, "{}", denial.message);
        assert!(
            denial.message.contains(
                "where ClusterQueue 'research-cq' has preemption.reclaimWithinCohort LowerPriority, its priority is 0 (no \
                 priority class), and WorkloadPriorityClass 'experimental' (100) outranks it. To fix: use a priority nothing \
                 outranks (label kueue.x-k8s.io/priority-class: top (2000001000)); or"
            ),
            "{}",
            denial.message
        );
    }

    #[test]
    fn a_priority_nothing_outranks_is_offered_as_the_change_kueue_reads() {
        // Classes above every system class: nothing can outrank them in shared-queue.
        let state = state_with(&[
            crate::rules::fixtures::SEED_STATE,
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: top}\nvalue: 2000001000\n",
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pc-top}\nvalue: 2000001000\n",
        ]);
        let denial = |workload: &crate::workload::Workload, subject: fn(&crate::workload::Workload) -> Subject<'_>| {
            let denial = crate::rules::check_queued(&state, subject(workload)).unwrap_err();
            assert_eq!(denial.reason, Reason::Preemptible, "{}", denial.message);
            denial
        };
        // A Job without the label: the label or its pods' class.
        let unlabelled = denial(&evalhub_job("team-a-namespace", Some("shared-queue")), job_subject);
        assert!(
            unlabelled.message.contains(
                "To fix: use a priority nothing outranks (priorityClassName: pc-top in the pod template (2000001000) or \
                 label kueue.x-k8s.io/priority-class: top (2000001000)); or submit to a LocalQueue"
            ),
            "{}",
            unlabelled.message
        );
        assert_eq!(
            unlabelled.ways_out[..2],
            [
                WayOut::PodPriorityClass { location: "spec.template".into(), class: Some("pc-top".into()) },
                WayOut::WorkloadPriorityClass(Some("top".into())),
            ]
        );
        // With the label, only another WorkloadPriorityClass (the label wins).
        let labelled =
            evalhub_job_with("team-a-namespace", Some("shared-queue"), &[("kueue.x-k8s.io/priority-class", "routine")]);
        let labelled = denial(&labelled, job_subject);
        assert!(
            labelled.message.contains("(label kueue.x-k8s.io/priority-class: top (2000001000)); or submit"),
            "{}",
            labelled.message
        );
        // A JobSet's pods are in its replicated jobs: only the label is offered.
        let mut jobset = aiperf_jobset_value("team-a-namespace", Some("shared-queue"), &[("workers", None)]);
        jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] =
            serde_json::json!({"requests": {"cpu": "1"}});
        let jobset: crate::workload::Workload = serde_json::from_value(jobset).unwrap();
        let jobset = denial(&jobset, jobset_subject);
        assert_eq!(
            jobset.ways_out.first(),
            Some(&WayOut::WorkloadPriorityClass(Some("top".into()))),
            "{}",
            jobset.message
        );
        assert!(!jobset.message.contains("pc-top"), "{}", jobset.message);
    }

    #[test]
    fn the_safe_classes_found_by_halving_are_those_every_class_checked_would_give() {
        // Every class checked with every rule, highest first, the first few kept.
        let checked_one_by_one = |view: &crate::cluster::ClusterState, subject: Subject<'_>| -> Vec<String> {
            let labelled = subject.workload.priority_class_label().is_some();
            view.nameable_priorities()
                .iter()
                .filter(|class| !class.name.starts_with("system-"))
                .filter(|class| class.kind == ClassKind::WorkloadPriorityClass || !labelled)
                .filter(|class| passes_with(view, subject, class))
                .take(MOST_CLASSES_OFFERED)
                .map(|class| class.name.clone())
                .collect()
        };
        let classes = |values: &[(&str, i32)]| -> String {
            values
                .iter()
                .map(|(name, value)| {
                    format!("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {{name: {name}}}\nvalue: {value}\n---\n\
                             apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: pc-{name}}}\nvalue: {value}\n")
                })
                .collect::<Vec<_>>()
                .join("---\n")
        };
        let mut offered = 0;
        for extra in [
            classes(&[]),
            classes(&[("top", 2_000_001_000)]),
            classes(&[
                ("top", 2_000_001_000),
                ("also-top", 2_000_001_000),
                ("third", 2_000_001_000),
                ("fourth", 2_000_001_000),
            ]),
            classes(&[("mid", 700), ("high", 5_000), ("top", 2_000_001_000)]),
        ] {
            let state = state_with(&[crate::rules::fixtures::SEED_STATE, &extra]);
            for (namespace, queue) in [("team-a-namespace", "shared-queue"), ("my-benchmarks", "shared-gpu-queue")] {
                for labels in [&[][..], &[("kueue.x-k8s.io/priority-class", "routine")][..]] {
                    let job = evalhub_job_with(namespace, Some(queue), labels);
                    let subject = job_subject(&job);
                    let Some(cluster_queue) = state.local_queue(namespace, queue).map(|q| q.cluster_queue.clone())
                    else {
                        continue;
                    };
                    let surroundings = crate::cluster::InNamespace { view: &state, namespace };
                    let pod_sets = job.pod_sets_in(subject.kind, &surroundings).unwrap_or_default();
                    let Ok(usage) = crate::rules::admissibility::check(&state, subject, queue, &pod_sets) else {
                        continue;
                    };
                    let found: Vec<String> =
                        safe_classes(&state, subject, &cluster_queue, &usage).into_iter().map(|c| c.name).collect();
                    assert_eq!(found, checked_one_by_one(&state, subject), "{namespace}/{queue} {labels:?}\n{extra}");
                    offered += found.len();
                }
            }
        }
        assert!(offered >= 8, "{offered} classes offered in all");
    }

    #[test]
    fn a_limit_range_applied_after_the_view_was_derived_changes_who_reclaims() {
        // As saved case s1-50973 above: research-cq's namespace forces 300Gi of
        // memory per pod, more than its 256Gi, so it always borrows.
        let reclaimer = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: research-cq}\nspec:\n  \
            namespaceSelector: {matchLabels: {team: research}}\n  cohortName: gpu-root\n  preemption: {reclaimWithinCohort: Any}\n  \
            resourceGroups: [{coveredResources: [cpu, memory, nvidia.com/gpu], flavors: [{name: default-flavor, resources: \
            [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 256Gi}, {name: nvidia.com/gpu, nominalQuota: 8}]}]}]\n";
        let namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: r1, labels: {team: research}}\n";
        let mut state = state_with(&[crate::rules::fixtures::SEED_STATE, reclaimer, namespace]);
        state.derive();
        let job = evalhub_job("my-benchmarks", Some("shared-gpu-queue"));
        let verdict = |state: &crate::cluster::ClusterState| {
            crate::rules::check_queued(state, job_subject(&job)).map(|_| ()).map_err(|denial| denial.reason)
        };
        assert_eq!(verdict(&state), Err(Reason::Preemptible));
        let limits = serde_json::json!({
            "metadata": {"name": "limits", "namespace": "r1"},
            "spec": {"limits": [{"type": "Container", "min": {"memory": "300Gi"}, "defaultRequest": {"memory": "300Gi"}}]},
        });
        state.apply(crate::cluster::objects::decode("v1", "LimitRange", limits).unwrap().unwrap());
        assert_eq!(verdict(&state), Ok(()), "the floor reaches the derived reclaimers");
        state.derive();
        state.remove("LimitRange", "r1", "limits");
        assert_eq!(verdict(&state), Err(Reason::Preemptible));
    }

    #[test]
    fn the_classes_checked_for_a_labelled_job_are_only_those_kueue_would_read() {
        // Sixteen PriorityClasses rank with 'top' and sort before it by name. The
        // label wins over a pod's class, so none of them would change the labelled
        // job's priority: they are not among the classes checked, and 'top' is.
        let mut documents = vec![
            crate::rules::fixtures::SEED_STATE.to_string(),
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: top}\nvalue: 2000001000\n"
                .to_string(),
        ];
        documents.extend((0..MOST_CLASSES_CHECKED).map(|n| {
            format!("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: pc-{n:02}}}\nvalue: 2000001000\n")
        }));
        let state = state_with(&documents.iter().map(String::as_str).collect::<Vec<_>>());
        let job =
            evalhub_job_with("team-a-namespace", Some("shared-queue"), &[("kueue.x-k8s.io/priority-class", "routine")]);
        let denial = crate::rules::check_queued(&state, job_subject(&job)).unwrap_err();
        assert_eq!(denial.reason, Reason::Preemptible, "{}", denial.message);
        assert!(
            denial.message.contains(
                "To fix: use a priority nothing outranks (label kueue.x-k8s.io/priority-class: top (2000001000)); or"
            ),
            "{}",
            denial.message
        );
        assert_eq!(denial.ways_out.first(), Some(&WayOut::WorkloadPriorityClass(Some("top".into()))));
    }
}
