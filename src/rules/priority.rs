//! A workload's priority as Kueue computes it, and whether Kueue could preempt it
//! (KUEUE-FACTS.md, "Priority of a workload" and "When can a workload be preempted").

use std::collections::HashSet;
use std::fmt;

use super::{Absent, Denial, Reason, Subject, join};
use crate::cluster::{ClusterView, ReclaimWithinCohort, WithinClusterQueue};
use crate::workload::{CHECKPOINTING_ANNOTATION, PRIORITY_CLASS_LABEL};

/// Where a workload's priority comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrioritySource {
    WorkloadPriorityClass(String),
    PriorityClass { name: String, location: String },
    GlobalDefault(String),
    Unset,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Priority {
    pub value: i32,
    pub source: PrioritySource,
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            PrioritySource::WorkloadPriorityClass(name) => {
                write!(f, "{} (WorkloadPriorityClass '{name}')", self.value)
            }
            PrioritySource::PriorityClass { name, .. } => {
                write!(f, "{} (PriorityClass '{name}')", self.value)
            }
            PrioritySource::GlobalDefault(name) => {
                write!(f, "{} (global default PriorityClass '{name}')", self.value)
            }
            PrioritySource::Unset => write!(f, "{} (no priority class)", self.value),
        }
    }
}

/// A priority class that outranks a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityClassRef {
    pub kind: ClassKind,
    pub name: String,
    pub value: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassKind {
    WorkloadPriorityClass,
    PriorityClass,
}

impl fmt::Display for PriorityClassRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ClassKind::WorkloadPriorityClass => "WorkloadPriorityClass",
            ClassKind::PriorityClass => "PriorityClass",
        };
        write!(f, "{kind} '{}' ({})", self.name, self.value)
    }
}

impl PriorityClassRef {
    /// How a user puts this class on a workload.
    fn how_to_use(&self) -> String {
        match self.kind {
            ClassKind::WorkloadPriorityClass => {
                format!("label {PRIORITY_CLASS_LABEL}: {}", self.name)
            }
            ClassKind::PriorityClass => {
                format!("priorityClassName: {} in the pod template", self.name)
            }
        }
    }
}

/// The workload's priority, or a denial when it names a class that does not exist
/// (Kueue would then never create its Workload).
pub fn workload_priority(view: &impl ClusterView, subject: Subject<'_>) -> Result<Priority, Denial> {
    let pod_classes = subject.workload.pod_priority_classes();
    // Every pod template is checked, not only the one Kueue reads: pods naming a
    // missing PriorityClass are refused by the API server once the workload runs.
    if let Some(missing) = pod_classes.iter().find(|pod| view.priority_class(pod.class_name).is_none()) {
        let existing: Vec<String> = view
            .priority_classes()
            .filter(|(name, _)| !is_system_class(name))
            .map(|(name, class)| format!("{name} ({})", class.value))
            .collect();
        return Err(Denial::new(
            Reason::MissingPriorityClass,
            format!(
                "{subject} names PriorityClass '{}' in {} (priorityClassName), which does not exist, so Kueue would \
                 never create its Workload and it would stay suspended forever. {}",
                missing.class_name,
                missing.location,
                if existing.is_empty() {
                    "There are no PriorityClasses: remove priorityClassName.".to_string()
                } else {
                    format!("PriorityClasses: {}. Use one of them, or remove priorityClassName.", join(&existing))
                }
            ),
        )
        .because_absent(Absent::PriorityClass(missing.class_name.to_string())));
    }
    if let Some(class) = subject.workload.priority_class_label() {
        return match view.workload_priority_class(class) {
            Some(value) => Ok(Priority { value, source: PrioritySource::WorkloadPriorityClass(class.to_string()) }),
            None => Err(missing_workload_priority_class(view, subject, class)),
        };
    }
    if let Some(first) = pod_classes.first() {
        let value = view.priority_class(first.class_name).map_or(0, |class| class.value);
        return Ok(Priority {
            value,
            source: PrioritySource::PriorityClass {
                name: first.class_name.to_string(),
                location: first.location.clone(),
            },
        });
    }
    // Kueue takes the lowest of several global defaults.
    let global_default = view
        .priority_classes()
        .filter(|(_, class)| class.global_default)
        .min_by_key(|(name, class)| (class.value, *name));
    Ok(match global_default {
        Some((name, class)) => Priority { value: class.value, source: PrioritySource::GlobalDefault(name.to_string()) },
        None => Priority { value: 0, source: PrioritySource::Unset },
    })
}

pub fn missing_workload_priority_class(view: &impl ClusterView, subject: Subject<'_>, class: &str) -> Denial {
    let existing: Vec<String> =
        view.workload_priority_classes().map(|(name, value)| format!("{name} ({value})")).collect();
    Denial::new(
        Reason::MissingWorkloadPriorityClass,
        format!(
            "{subject} names WorkloadPriorityClass '{class}' (label {PRIORITY_CLASS_LABEL}), which does not exist, \
             so Kueue would never create its Workload and it would stay suspended forever. {}",
            if existing.is_empty() {
                format!("There are no WorkloadPriorityClasses: remove the label {PRIORITY_CLASS_LABEL}.")
            } else {
                format!("WorkloadPriorityClasses: {}. Use one of them, or remove the label.", join(&existing))
            }
        ),
    )
    .because_absent(Absent::WorkloadPriorityClass(class.to_string()))
}

/// PriorityClasses Kubernetes confines to kube-system; they never reach a ClusterQueue.
fn is_system_class(name: &str) -> bool {
    name.starts_with("system-")
}

/// The highest priority any workload could have: the top WorkloadPriorityClass or
/// PriorityClass, `system-` ones excluded. Ties prefer the WorkloadPriorityClass.
pub fn highest_priority(view: &impl ClusterView) -> Option<PriorityClassRef> {
    let workload_classes = view.workload_priority_classes().map(|(name, value)| PriorityClassRef {
        kind: ClassKind::WorkloadPriorityClass,
        name: name.to_string(),
        value,
    });
    let pod_classes = view.priority_classes().filter(|(name, _)| !is_system_class(name)).map(|(name, class)| {
        PriorityClassRef { kind: ClassKind::PriorityClass, name: name.to_string(), value: class.value }
    });
    workload_classes.chain(pod_classes).reduce(|best, candidate| {
        let better = candidate.value > best.value
            || (candidate.value == best.value
                && candidate.kind == ClassKind::WorkloadPriorityClass
                && best.kind == ClassKind::PriorityClass);
        if better { candidate } else { best }
    })
}

/// Every class at the highest priority, WorkloadPriorityClasses first: the ways to
/// get a priority nothing outranks.
fn top_classes(view: &impl ClusterView) -> Vec<PriorityClassRef> {
    let Some(top) = highest_priority(view) else { return Vec::new() };
    let workload_classes =
        view.workload_priority_classes().filter(|(_, value)| *value == top.value).map(|(name, value)| {
            PriorityClassRef { kind: ClassKind::WorkloadPriorityClass, name: name.to_string(), value }
        });
    let pod_classes = view
        .priority_classes()
        .filter(|(name, class)| !is_system_class(name) && class.value == top.value)
        .map(|(name, class)| PriorityClassRef {
            kind: ClassKind::PriorityClass,
            name: name.to_string(),
            value: class.value,
        });
    workload_classes.chain(pod_classes).collect()
}

/// Why a workload of some priority can be preempted in a ClusterQueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exposure {
    /// Rule (a): the ClusterQueue preempts within itself.
    WithinClusterQueue { policy: WithinClusterQueue, outranking: Option<PriorityClassRef> },
    /// Rule (b): the queue borrows in a cohort tree where another queue reclaims.
    Cohort { root: String, reclaimer: String, policy: ReclaimWithinCohort, outranking: Option<PriorityClassRef> },
}

impl Exposure {
    /// Whether a higher priority class (rather than the policy alone) is what exposes it.
    fn depends_on_priority(&self) -> bool {
        match self {
            Self::WithinClusterQueue { policy, .. } => *policy == WithinClusterQueue::LowerPriority,
            Self::Cohort { policy, .. } => *policy == ReclaimWithinCohort::LowerPriority,
        }
    }

    fn explain(&self, cluster_queue: &str, priority: &Priority) -> String {
        match self {
            Self::WithinClusterQueue { policy: WithinClusterQueue::LowerOrNewerEqualPriority, .. } => format!(
                "ClusterQueue '{cluster_queue}' has preemption.withinClusterQueue LowerOrNewerEqualPriority, so an \
                 older workload of equal priority {} can preempt it",
                priority.value
            ),
            Self::WithinClusterQueue { policy, outranking } => format!(
                "ClusterQueue '{cluster_queue}' has preemption.withinClusterQueue {}, its priority is {priority}, and {} \
                 outranks it",
                policy.as_str(),
                outranking.as_ref().map_or_else(|| "a higher class".to_string(), ToString::to_string)
            ),
            Self::Cohort { root, reclaimer, policy: ReclaimWithinCohort::Any, .. } => format!(
                "ClusterQueue '{cluster_queue}' can borrow in cohort tree '{root}', where ClusterQueue '{reclaimer}' has \
                 preemption.reclaimWithinCohort Any, so it can reclaim its quota from a workload of any priority"
            ),
            Self::Cohort { root, reclaimer, policy, outranking } => format!(
                "ClusterQueue '{cluster_queue}' can borrow in cohort tree '{root}', where ClusterQueue '{reclaimer}' has \
                 preemption.reclaimWithinCohort {}, its priority is {priority}, and {} outranks it",
                policy.as_str(),
                outranking.as_ref().map_or_else(|| "a higher class".to_string(), ToString::to_string)
            ),
        }
    }
}

/// Whether a workload of `priority` queued in `cluster_queue` could be preempted.
/// `None` when the ClusterQueue does not exist (that is warned about elsewhere).
pub fn exposure(view: &impl ClusterView, cluster_queue: &str, priority: i32) -> Option<Exposure> {
    let queue = view.cluster_queue(cluster_queue)?;
    let outranking = highest_priority(view).filter(|top| top.value > priority);
    match queue.within_cluster_queue {
        WithinClusterQueue::LowerOrNewerEqualPriority => {
            return Some(Exposure::WithinClusterQueue { policy: queue.within_cluster_queue, outranking });
        }
        WithinClusterQueue::LowerPriority if outranking.is_some() => {
            return Some(Exposure::WithinClusterQueue { policy: queue.within_cluster_queue, outranking });
        }
        _ => {}
    }
    let cohort = queue.cohort.as_deref()?;
    if !queue.can_borrow {
        return None;
    }
    let root = cohort_root(view, cohort);
    view.cluster_queues()
        .filter(|(name, _)| *name != cluster_queue)
        .filter(|(_, other)| other.cohort.as_deref().is_some_and(|c| cohort_root(view, c) == root))
        .find_map(|(name, other)| {
            let reclaims = match other.reclaim_within_cohort {
                ReclaimWithinCohort::Any => true,
                ReclaimWithinCohort::LowerPriority => outranking.is_some(),
                ReclaimWithinCohort::Never => false,
            };
            reclaims.then(|| Exposure::Cohort {
                root: root.clone(),
                reclaimer: name.to_string(),
                policy: other.reclaim_within_cohort,
                outranking: outranking.clone(),
            })
        })
}

/// Walks `parentName` links to the top of a cohort tree. A cohort with no Cohort
/// object is its own root (Kueue creates cohorts implicitly); cycles stop the walk.
pub fn cohort_root(view: &impl ClusterView, cohort: &str) -> String {
    let mut current = cohort;
    let mut seen = HashSet::new();
    while seen.insert(current) {
        match view.cohort(current).and_then(|c| c.parent.as_deref()) {
            Some(parent) => current = parent,
            None => break,
        }
    }
    current.to_string()
}

/// Refuses a non-checkpointing evaluation that Kueue could preempt in the
/// ClusterQueue behind `local_queue`.
pub fn check_preemption(
    view: &impl ClusterView,
    subject: Subject<'_>,
    local_queue: &str,
    priority: &Priority,
) -> Result<(), Denial> {
    if subject.workload.is_checkpointing() {
        return Ok(());
    }
    let Some(cluster_queue) = view.local_queue(subject.namespace, local_queue).map(|q| q.cluster_queue.as_str()) else {
        return Ok(());
    };
    let Some(found) = exposure(view, cluster_queue, priority.value) else {
        return Ok(());
    };

    let mut ways_out = Vec::new();
    if found.depends_on_priority() {
        let tops = top_classes(view);
        if tops.first().is_some_and(|top| exposure(view, cluster_queue, top.value).is_none()) {
            let choices: Vec<String> = tops.iter().map(PriorityClassRef::how_to_use).collect();
            ways_out.push(format!("use a priority nothing outranks, {} ({})", tops[0].value, choices.join(" or ")));
        }
    }
    let safe_queues: Vec<&str> = view
        .local_queues(subject.namespace)
        .filter(|(name, queue)| {
            *name != local_queue
                && queue.stop_policy == crate::cluster::StopPolicy::None
                && view.cluster_queue(&queue.cluster_queue).is_some()
                && exposure(view, &queue.cluster_queue, priority.value).is_none()
        })
        .map(|(name, _)| name)
        .collect();
    if safe_queues.is_empty() {
        ways_out
            .push("ask the cluster administrator for a ClusterQueue without preemption for evaluations".to_string());
    } else {
        ways_out.push(format!("submit to a LocalQueue whose ClusterQueue cannot preempt it ({})", join(&safe_queues)));
    }
    ways_out.push(format!("if it does checkpoint, annotate it {CHECKPOINTING_ANNOTATION}: \"true\""));

    Err(Denial::new(
        Reason::Preemptible,
        format!(
            "{subject} is an evaluation that cannot checkpoint, but Kueue could preempt it and it would restart from \
             zero: via LocalQueue '{local_queue}', {}. To fix: {}.",
            found.explain(cluster_queue, priority),
            join_alternatives(&ways_out)
        ),
    ))
}

/// `a; or b; or c`
fn join_alternatives(ways: &[String]) -> String {
    ways.join("; or ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::fixtures::*;

    fn priority_of(state: &crate::cluster::ClusterState, yaml: &str) -> Result<Priority, Denial> {
        let job = workload(yaml);
        workload_priority(state, job_subject(&job))
    }

    #[test]
    fn priority_comes_from_the_label_then_the_first_pod_template_then_the_global_default() {
        let state = seed_state();
        let labelled =
            priority_of(&state, &job_yaml("a", &[("kueue.x-k8s.io/priority-class", "routine")], Some("gpu-batch")))
                .unwrap();
        assert_eq!(labelled, Priority { value: 500, source: PrioritySource::WorkloadPriorityClass("routine".into()) });
        let pod = priority_of(&state, &job_yaml("a", &[], Some("gpu-batch"))).unwrap();
        assert_eq!(pod.value, 200);
        let none = priority_of(&state, &job_yaml("a", &[], None)).unwrap();
        assert_eq!(none, Priority { value: 0, source: PrioritySource::Unset });

        let with_defaults = state_with(&[
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: b-default}\nvalue: 30\nglobalDefault: true\n",
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a-default}\nvalue: 20\nglobalDefault: true\n",
        ]);
        let defaulted = priority_of(&with_defaults, &job_yaml("a", &[], None)).unwrap();
        assert_eq!(defaulted, Priority { value: 20, source: PrioritySource::GlobalDefault("a-default".into()) });
    }

    #[test]
    fn a_jobset_takes_the_first_replicated_job_with_a_class() {
        let state = seed_state();
        let jobset = aiperf_jobset(
            "my-benchmarks",
            Some("aiperf-queue"),
            &[("controller", None), ("workers", Some("gpu-batch"))],
        );
        let priority = workload_priority(&state, jobset_subject(&jobset)).unwrap();
        assert_eq!(priority.value, 200);
        assert_eq!(
            priority.source,
            PrioritySource::PriorityClass { name: "gpu-batch".into(), location: "replicatedJobs[workers]".into() }
        );
    }

    #[test]
    fn missing_classes_are_denied_with_the_existing_ones() {
        let state = seed_state();
        let denial =
            priority_of(&state, &job_yaml("a", &[("kueue.x-k8s.io/priority-class", "urgent")], None)).unwrap_err();
        assert_eq!(denial.reason, Reason::MissingWorkloadPriorityClass);
        assert!(denial.message.contains("WorkloadPriorityClass 'urgent'"), "{}", denial.message);
        assert!(
            denial.message.contains("aiperf-high (1000), experimental (100), production (1000), routine (500)"),
            "{}",
            denial.message
        );

        let jobset = aiperf_jobset("my-benchmarks", None, &[("controller", None), ("workers", Some("missing-pc"))]);
        let denial = workload_priority(&state, jobset_subject(&jobset)).unwrap_err();
        assert_eq!(denial.reason, Reason::MissingPriorityClass);
        assert!(denial.message.contains("PriorityClass 'missing-pc' in replicatedJobs[workers]"), "{}", denial.message);
        assert!(!denial.message.contains("system-"), "system classes are not offered: {}", denial.message);
    }

    #[test]
    fn system_classes_never_outrank() {
        let state = seed_state();
        let top = highest_priority(&state).unwrap();
        assert_eq!((top.kind, top.name.as_str(), top.value), (ClassKind::WorkloadPriorityClass, "aiperf-high", 1000));
    }

    #[test]
    fn rule_a_within_cluster_queue() {
        let state = seed_state();
        assert_eq!(exposure(&state, "team-a-cq", 0), None, "no preemption section");
        let lower = exposure(&state, "team-a-shared-cq", 100).unwrap();
        assert!(matches!(
            lower,
            Exposure::WithinClusterQueue { policy: WithinClusterQueue::LowerPriority, outranking: Some(_) }
        ));
        assert_eq!(exposure(&state, "team-a-shared-cq", 1000), None, "nothing outranks the top class");
        assert!(exposure(&state, "team-a-fifo-cq", 1000).is_some(), "equal priority, older workload preempts");
    }

    #[test]
    fn rule_b_cohort_trees() {
        let state = seed_state();
        // shared-gpu-cq borrows in cohort gpu-research, whose parent gpu-root holds research-cq (reclaim Any).
        let found = exposure(&state, "shared-gpu-cq", 1000).unwrap();
        assert_eq!(
            found,
            Exposure::Cohort {
                root: "gpu-root".into(),
                reclaimer: "research-cq".into(),
                policy: ReclaimWithinCohort::Any,
                outranking: None
            }
        );
        // capped-gpu-cq is in the same tree but has borrowingLimit 0 everywhere: it cannot borrow, so cannot be reclaimed.
        assert_eq!(exposure(&state, "capped-gpu-cq", 0), None);
        // aiperf-cluster-queue has no cohort and no preemption.
        assert_eq!(exposure(&state, "aiperf-cluster-queue", 0), None);
    }

    #[test]
    fn rule_b_lower_priority_reclaim_needs_a_higher_class() {
        let state = state_with(&[
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: borrower}\nspec: {cohort: pool, resourceGroups: [{flavors: [{resources: [{name: cpu, nominalQuota: 1}]}]}]}\n",
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: lender}\nspec: {cohortName: pool, preemption: {reclaimWithinCohort: LowerPriority}}\n",
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: high}\nvalue: 10\n",
        ]);
        assert!(matches!(
            exposure(&state, "borrower", 5),
            Some(Exposure::Cohort { policy: ReclaimWithinCohort::LowerPriority, .. })
        ));
        assert_eq!(exposure(&state, "borrower", 10), None);
        assert_eq!(exposure(&state, "lender", 0), None, "a queue is not reclaimed by its own policy");
    }

    #[test]
    fn cohort_cycles_end_the_walk() {
        let state = state_with(&[
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: a}\nspec: {parentName: b}\n",
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: b}\nspec: {parentName: a}\n",
        ]);
        let root = cohort_root(&state, "a");
        assert!(root == "a" || root == "b");
        assert_eq!(cohort_root(&state, "implicit"), "implicit");
    }

    #[test]
    fn the_preemption_denial_names_queue_policy_priority_and_ways_out() {
        let state = seed_state();
        let job = evalhub_job_with(
            "team-a-namespace",
            Some("shared-queue"),
            &[("kueue.x-k8s.io/priority-class", "experimental")],
        );
        let subject = job_subject(&job);
        let priority = workload_priority(&state, subject).unwrap();
        let denial = check_preemption(&state, subject, "shared-queue", &priority).unwrap_err();
        assert_eq!(denial.reason, Reason::Preemptible);
        assert_eq!(
            denial.message,
            "Job team-a-namespace/evalhub-3f2a is an evaluation that cannot checkpoint, but Kueue could preempt it and \
             it would restart from zero: via LocalQueue 'shared-queue', ClusterQueue 'team-a-shared-cq' has \
             preemption.withinClusterQueue LowerPriority, its priority is 100 (WorkloadPriorityClass 'experimental'), \
             and WorkloadPriorityClass 'aiperf-high' (1000) outranks it. To fix: use a priority nothing outranks, 1000 \
             (label kueue.x-k8s.io/priority-class: aiperf-high or label kueue.x-k8s.io/priority-class: production); or \
             submit to a LocalQueue whose ClusterQueue cannot preempt it (eval-queue); or if it does \
             checkpoint, annotate it eval-admission.io/checkpointing: \"true\"."
        );
    }

    #[test]
    fn checkpointing_evaluations_may_be_preempted() {
        let state = seed_state();
        let mut job = evalhub_job_with("team-a-namespace", Some("shared-queue"), &[]);
        job.metadata.annotations = Some(crate::workload::SelectedAnnotations { checkpointing: Some("true".into()) });
        let priority = workload_priority(&state, job_subject(&job)).unwrap();
        assert!(check_preemption(&state, job_subject(&job), "shared-queue", &priority).is_ok());
    }

    #[test]
    fn the_cohort_denial_offers_no_priority_fix() {
        let state = seed_state();
        let jobset =
            aiperf_jobset("my-benchmarks", Some("shared-gpu-queue"), &[("controller", None), ("workers", None)]);
        let subject = jobset_subject(&jobset);
        let priority = workload_priority(&state, subject).unwrap();
        let denial = check_preemption(&state, subject, "shared-gpu-queue", &priority).unwrap_err();
        assert!(
            denial.message.contains(
                "cohort tree 'gpu-root', where ClusterQueue 'research-cq' has preemption.reclaimWithinCohort Any"
            ),
            "{}",
            denial.message
        );
        assert!(!denial.message.contains("nothing outranks"), "{}", denial.message);
        assert!(denial.message.contains("(aiperf-queue)"), "{}", denial.message);
    }
}
