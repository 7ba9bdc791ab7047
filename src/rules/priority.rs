//! A workload's priority as Kueue resolves it, and the classes a user can name.

use std::fmt;

use super::{Absent, Denial, Explain, Reason, Subject, WayOut, join, passes};
use crate::cluster::ClusterView;
use crate::workload::{PRIORITY_CLASS_LABEL, Workload};

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
    pub fn how_to_use(&self) -> String {
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
