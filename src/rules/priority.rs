//! A workload's priority as Kueue resolves it, and the classes a user can name.

use std::fmt;

use super::passes;
use super::verdict::{Denial, Explain, Subject, WayOut};
use crate::cluster::{Absent, ClusterView, PriorityClass, WithPriorityClass};
use crate::vocabulary::kueue::PRIORITY_CLASS_LABEL;
use crate::vocabulary::reason::Reason;
use crate::vocabulary::text::join;
use crate::workload::{PodTemplateAt, Workload};

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

pub use crate::cluster::priorities::{ClassKind, PriorityClassRef};

/// The workload's priority as Kueue resolves it (`jobframework.PrepareWorkloadPriority`):
/// the WorkloadPriorityClass label first, else the first pod set naming a
/// PriorityClass, else the lowest global default, else 0. A denial when the
/// class Kueue reads does not exist: it would then never create the Workload.
pub fn workload_priority(view: &impl ClusterView, subject: Subject<'_>, explain: Explain) -> Result<Priority, Denial> {
    let pod_classes = subject.workload.pod_priority_classes();
    let labelled = subject.workload.priority_class_label();
    if labelled.is_none()
        && let Some(first) = pod_classes.first()
        && view.priority_class(first.class_name).is_none()
    {
        return Err(missing_priority_class(
            view,
            subject,
            first.class_name,
            &first.location,
            Reason::MissingPriorityClass,
            explain,
        ));
    }
    if let Some(class) = subject.workload.priority_class_label() {
        return match view.workload_priority_class(class) {
            Some(value) => Ok(Priority { value, source: PrioritySource::WorkloadPriorityClass(class.to_string()) }),
            None => Err(missing_workload_priority_class(view, subject, class, explain)),
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

fn missing_workload_priority_class(
    view: &impl ClusterView,
    subject: Subject<'_>,
    class: &str,
    explain: Explain,
) -> Denial {
    let workload = subject.workload;
    let (usable, without) = classes_that_pass(view, subject, explain, view.workload_priority_classes(), |class| {
        workload.with_label(PRIORITY_CLASS_LABEL, class)
    });
    let offered = usable.iter().map(|(name, _)| Some(name.to_string())).chain(without.then_some(None));
    let ways_out: Vec<WayOut> = offered.map(WayOut::WorkloadPriorityClass).collect();
    let usable: Vec<String> = usable.iter().map(|(name, value)| format!("{name} ({value})")).collect();
    Denial::new(
        Reason::MissingWorkloadPriorityClass,
        format!(
            "{subject} names WorkloadPriorityClass '{class}' (label {PRIORITY_CLASS_LABEL}), which does not exist, \
             so Kueue would never create its Workload and it would stay suspended forever. {}",
            describe_ways_out(
                "WorkloadPriorityClasses",
                &usable,
                &format!("set label {PRIORITY_CLASS_LABEL} to"),
                without,
                "the label"
            )
        ),
    )
    .because_absent(Absent::WorkloadPriorityClass(class.to_string()))
    .offering(ways_out)
}

/// Of the `candidates` (name, value), those with which the workload, changed
/// by `set` to name one, passes every check; and whether it passes with the
/// class cleared (`set(None)`). Nothing is searched for while checking a way out.
fn classes_that_pass<'v>(
    view: &impl ClusterView,
    subject: Subject<'_>,
    explain: Explain,
    candidates: impl Iterator<Item = (&'v str, i32)>,
    set: impl Fn(Option<&str>) -> Workload,
) -> (Vec<(&'v str, i32)>, bool) {
    if explain == Explain::Quiet {
        return (Vec::new(), false);
    }
    let works = |changed: Workload| passes(view, Subject { workload: &changed, ..subject });
    let usable = candidates.filter(|(name, _)| works(set(Some(name)))).collect();
    (usable, works(set(None)))
}

/// The ways out of a missing class: the existing `classes` checked to let the
/// workload through (set with `set_to`), and removing the field when that does too.
fn describe_ways_out(kind: &str, classes: &[String], set_to: &str, remove_works: bool, field: &str) -> String {
    match (classes.is_empty(), remove_works) {
        (false, true) => format!(
            "{kind} that would let it through: {}. To fix: {set_to} one of them, or remove {field}.",
            join(classes)
        ),
        (false, false) => {
            format!("{kind} that would let it through: {}. To fix: {set_to} one of them.", join(classes))
        }
        (true, true) => format!("To fix: remove {field}."),
        (true, false) => format!("No existing {kind} would let it through, and neither would removing {field}."),
    }
}

/// Pods naming a PriorityClass that does not exist, other than the one Kueue
/// reads: Kueue creates and admits the Workload, and then the API server refuses
/// those pods while the workload holds its quota.
pub fn check_pod_priority_classes(
    view: &impl ClusterView,
    subject: Subject<'_>,
    explain: Explain,
) -> Result<(), Denial> {
    match subject.workload.pod_priority_classes().iter().find(|pod| view.priority_class(pod.class_name).is_none()) {
        Some(missing) if Some(missing.class_name) == subject.workload.priority_class_label() => {
            Err(repeated_label(view, subject, missing.class_name, &missing.location, explain))
        }
        Some(missing) => Err(missing_priority_class(
            view,
            subject,
            missing.class_name,
            &missing.location,
            Reason::PodsWouldBeRefused,
            explain,
        )),
        None => Ok(()),
    }
}

fn missing_priority_class(
    view: &impl ClusterView,
    subject: Subject<'_>,
    class: &str,
    location: &str,
    reason: Reason,
    explain: Explain,
) -> Denial {
    let workload = subject.workload;
    let candidates =
        view.priority_classes().filter(|(name, _)| !is_system_class(name)).map(|(name, c)| (name, c.value));
    let (usable, without) = classes_that_pass(view, subject, explain, candidates, |class| {
        workload.with_pod_priority_class(location, class)
    });
    let offered = usable.iter().map(|(name, _)| Some(name.to_string())).chain(without.then_some(None));
    let ways_out: Vec<WayOut> =
        offered.map(|class| WayOut::PodPriorityClass { location: location.to_string(), class }).collect();
    let usable: Vec<String> = usable.iter().map(|(name, value)| format!("{name} ({value})")).collect();
    let consequence = if reason == Reason::MissingPriorityClass {
        "so Kueue would never create its Workload and it would stay suspended forever"
    } else {
        "so its pods would be refused by the API server while Kueue holds quota for it"
    };
    Denial::new(
        reason,
        format!(
            "{subject} names PriorityClass '{class}' in {location} (priorityClassName), which does not exist, \
             {consequence}. {}",
            describe_ways_out(
                "PriorityClasses",
                &usable,
                &format!("set priorityClassName in {location} to"),
                without,
                "it"
            )
        ),
    )
    .because_absent(Absent::PriorityClass(class.to_string()))
    .offering(ways_out)
}

/// The pod templates whose `priorityClassName` only repeats the workload's
/// WorkloadPriorityClass label and names no PriorityClass (what EvalHub's
/// hardware profiles write), with a warning for each: what the config's
/// `dropRepeatedPodPriorityClass` removes. Kueue reads the label first
/// (`jobframework.PrepareWorkloadPriority`), so its priority does not change.
pub fn repeated_pod_priority_classes(
    view: &impl ClusterView,
    subject: Subject<'_>,
) -> (Vec<PodTemplateAt>, Vec<String>) {
    let Some(label) = subject.workload.priority_class_label() else { return (Vec::new(), Vec::new()) };
    subject
        .workload
        .pod_priority_classes()
        .into_iter()
        .filter(|pod| pod.class_name == label && view.priority_class(pod.class_name).is_none())
        .map(|pod| {
            let warning = format!(
                "priorityClassName '{label}' removed from {}: no PriorityClass of that name exists, so the API \
                 server would refuse the pods; the priority Kueue uses still comes from label {PRIORITY_CLASS_LABEL}.",
                pod.location
            );
            (pod.at, warning)
        })
        .unzip()
}

/// A pod `priorityClassName` naming no PriorityClass, the same name as the
/// workload's WorkloadPriorityClass label. Kueue takes the label, so it creates
/// and admits the Workload and holds its quota; then the API server refuses the
/// pods. The platform team's ways out (create the PriorityClass, or have
/// eval-admission drop the repeated name) are offered only when the workload
/// then passes every check.
fn repeated_label(
    view: &impl ClusterView,
    subject: Subject<'_>,
    class: &str,
    location: &str,
    explain: Explain,
) -> Denial {
    let value = view.workload_priority_class(class).unwrap_or(0);
    let (create_works, remove_works) = match explain {
        Explain::WaysOut => {
            let with_class =
                WithPriorityClass { view, name: class, class: PriorityClass { value, global_default: false } };
            let without = subject.workload.with_pod_priority_class(location, None);
            (passes(&with_class, subject), passes(view, Subject { workload: &without, ..subject }))
        }
        Explain::Quiet => (false, false),
    };
    let create = format!("create PriorityClass '{class}' (value {value}, as the WorkloadPriorityClass)");
    let drop = "set dropRepeatedPodPriorityClass in eval-admission's config";
    let remove = format!("remove priorityClassName from {location}");
    let fix = match (create_works, remove_works) {
        (true, true) => format!(" To fix: ask the platform team to {create}, or to {drop}; or {remove}."),
        (true, false) => format!(" To fix: ask the platform team to {create}."),
        (false, true) => format!(" To fix: ask the platform team to {drop}; or {remove}."),
        (false, false) => String::new(),
    };
    let ways_out = if remove_works {
        vec![WayOut::PodPriorityClass { location: location.to_string(), class: None }]
    } else {
        Vec::new()
    };
    Denial::new(
        Reason::PodsWouldBeRefused,
        format!(
            "{subject} sets priorityClassName '{class}' in {location}, the name of its WorkloadPriorityClass (label \
             {PRIORITY_CLASS_LABEL}), but no PriorityClass '{class}' exists: Kueue would admit it and hold its quota, \
             and then the API server would refuse its pods.{fix}"
        ),
    )
    .because_absent(Absent::PriorityClass(class.to_string()))
    .offering(ways_out)
}

/// The classes every cluster has for its own components; not offered as a way out.
fn is_system_class(name: &str) -> bool {
    name.starts_with("system-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::fixtures::*;

    fn priority_of(state: &crate::cluster::ClusterState, yaml: &str) -> Result<Priority, Denial> {
        let job = workload(yaml);
        workload_priority(state, job_subject(&job), Explain::WaysOut)
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

    /// EvalHub's hardware profiles write the WorkloadPriorityClass name into
    /// both the label and the pods' priorityClassName.
    fn repeating_job() -> Workload {
        workload(&job_yaml(
            "team-a-namespace",
            &[("kueue.x-k8s.io/priority-class", "production"), ("kueue.x-k8s.io/queue-name", "eval-queue")],
            Some("production"),
        ))
    }

    #[test]
    fn a_pod_class_repeating_the_label_is_denied_for_its_pods_with_the_platform_fix() {
        let state = seed_state();
        let job = repeating_job();
        assert_eq!(
            workload_priority(&state, job_subject(&job), Explain::WaysOut).unwrap().value,
            1000,
            "the label wins"
        );
        let denial = crate::rules::check_queued(&state, job_subject(&job)).unwrap_err();
        assert_eq!(denial.reason, Reason::PodsWouldBeRefused);
        assert_eq!(
            denial.message,
            "Job team-a-namespace/evalhub-3f2a sets priorityClassName 'production' in spec.template, the name of its \
             WorkloadPriorityClass (label kueue.x-k8s.io/priority-class), but no PriorityClass 'production' exists: \
             Kueue would admit it and hold its quota, and then the API server would refuse its pods. To fix: ask the \
             platform team to create PriorityClass 'production' (value 1000, as the WorkloadPriorityClass), or to set \
             dropRepeatedPodPriorityClass in eval-admission's config; or remove priorityClassName from spec.template."
        );
        assert_eq!(denial.ways_out, vec![WayOut::PodPriorityClass { location: "spec.template".into(), class: None }]);
        let with_class = state_with(&[
            crate::rules::fixtures::SEED_STATE,
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: production}\nvalue: 1000\n",
        ]);
        assert!(crate::rules::check_queued(&with_class, job_subject(&job)).is_ok(), "the offered fix works");
    }

    #[test]
    fn no_fix_is_offered_for_a_repeated_class_when_none_would_let_it_through() {
        // 'experimental' (100) in shared-queue is preemptible whatever its pods name.
        let job = workload(&job_yaml(
            "team-a-namespace",
            &[("kueue.x-k8s.io/priority-class", "experimental"), ("kueue.x-k8s.io/queue-name", "shared-queue")],
            Some("experimental"),
        ));
        let denial = crate::rules::check_queued(&seed_state(), job_subject(&job)).unwrap_err();
        assert_eq!(denial.reason, Reason::PodsWouldBeRefused);
        assert!(denial.message.ends_with("then the API server would refuse its pods."), "{}", denial.message);
        assert!(denial.ways_out.is_empty());
    }

    #[test]
    fn only_a_pod_class_that_repeats_the_label_and_names_nothing_is_dropped() {
        let state = seed_state();
        let job = repeating_job();
        let (cleared, warnings) = repeated_pod_priority_classes(&state, job_subject(&job));
        assert_eq!(cleared, vec![PodTemplateAt::Job]);
        assert!(warnings[0].starts_with("priorityClassName 'production' removed from spec.template"), "{warnings:?}");
        let other =
            workload(&job_yaml("team-a-namespace", &[("kueue.x-k8s.io/priority-class", "production")], Some("nope")));
        assert!(repeated_pod_priority_classes(&state, job_subject(&other)).0.is_empty(), "another name is the user's");
        let existing = workload(&job_yaml(
            "team-a-namespace",
            &[("kueue.x-k8s.io/priority-class", "gpu-batch")],
            Some("gpu-batch"),
        ));
        assert!(repeated_pod_priority_classes(&state, job_subject(&existing)).0.is_empty(), "an existing class stays");
    }

    #[test]
    fn a_jobset_takes_the_first_replicated_job_with_a_class() {
        let state = seed_state();
        let jobset = aiperf_jobset(
            "my-benchmarks",
            Some("aiperf-queue"),
            &[("controller", None), ("workers", Some("gpu-batch"))],
        );
        let priority = workload_priority(&state, jobset_subject(&jobset), Explain::WaysOut).unwrap();
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
        let denial = workload_priority(&state, jobset_subject(&jobset), Explain::WaysOut).unwrap_err();
        assert_eq!(denial.reason, Reason::MissingPriorityClass);
        assert!(denial.message.contains("PriorityClass 'missing-pc' in replicatedJobs[workers]"), "{}", denial.message);
        assert!(!denial.message.contains("system-"), "system classes are not offered: {}", denial.message);
        assert!(
            denial.message.contains("PriorityClasses that would let it through: gpu-batch (200)."),
            "{}",
            denial.message
        );
        assert!(
            denial.message.contains("which does not exist, so Kueue would never create its Workload and it would stay"),
            "{}",
            denial.message
        );
        // Another pod set naming a missing class: Kueue admits it, the API server refuses its pods.
        let jobset = aiperf_jobset(
            "my-benchmarks",
            Some("aiperf-queue"),
            &[("controller", Some("gpu-batch")), ("workers", Some("missing-pc"))],
        );
        let denial = check_pod_priority_classes(&state, jobset_subject(&jobset), Explain::WaysOut).unwrap_err();
        assert_eq!(denial.reason, Reason::PodsWouldBeRefused);
        assert!(
            denial.message.contains(
                "which does not exist, so its pods would be refused by the API server while Kueue holds quota for it."
            ),
            "{}",
            denial.message
        );
    }

    #[test]
    fn a_missing_class_offers_only_classes_that_let_the_workload_through() {
        let state = seed_state();
        let missing = |queue: &str| {
            let job = workload(&job_yaml(
                "team-a-namespace",
                &[("kueue.x-k8s.io/queue-name", queue), ("kueue.x-k8s.io/priority-class", "urgent")],
                None,
            ));
            workload_priority(&state, job_subject(&job), Explain::WaysOut).unwrap_err().message
        };
        // eval-queue cannot preempt: every class, and no label, would do.
        let safe = missing("eval-queue");
        assert!(
            safe.contains(
                "that would let it through: aiperf-high (1000), experimental (100), production (1000), routine (500). \
                 To fix: set label kueue.x-k8s.io/priority-class to one of them, or remove the label."
            ),
            "{safe}"
        );
        // shared-queue preempts LowerPriority and system-node-critical outranks every class: nothing works.
        let exposed = missing("shared-queue");
        assert!(
            exposed.ends_with(
                "No existing WorkloadPriorityClasses would let it through, and neither would removing the label."
            ),
            "{exposed}"
        );
        // Each class offered really passes; each left out really does not.
        for (class, _) in state.workload_priority_classes() {
            let job = workload(&job_yaml(
                "team-a-namespace",
                &[("kueue.x-k8s.io/queue-name", "shared-queue"), ("kueue.x-k8s.io/priority-class", class)],
                None,
            ));
            assert!(crate::rules::check_queued(&state, job_subject(&job)).is_err(), "{class}");
        }
    }
}
