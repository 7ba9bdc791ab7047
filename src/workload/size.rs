//! The most of each list a review reads, so every review's work is bounded by
//! construction: the rules walk containers, resources, tolerations, node
//! affinity and replicated jobs, several times for a denial that checks its
//! ways out, and the API server bounds them only by its 3 MiB request limit.
//! Real evaluations are far below every cap (an EvalHub Job has 2 containers;
//! an AIPerf JobSet 2 replicated jobs; Kueue's Workload holds at most 18 pod
//! sets), so a workload over one is refused unreviewed, with the cap named.
//! At the caps, the costliest review measured (every container at the
//! containers cap asking for the resources cap, denied) takes about 12 ms
//! (BENCHMARKS.md, section 3c).

use std::fmt;

use serde_json::Value;

use super::{PodSpec, ResourceList, Tolerant, TolerantList, Workload, WorkloadKind};

/// Replicated jobs in a JobSet.
pub const MOST_REPLICATED_JOBS: usize = 64;
/// Containers and init containers of one pod template, together.
pub const MOST_CONTAINERS: usize = 128;
/// Resource names in one list (a container's requests or limits, the pod's, its overhead).
pub const MOST_RESOURCES: usize = 32;
/// Tolerations of one pod template.
pub const MOST_TOLERATIONS: usize = 256;
/// Node selector entries, required node affinity terms, their expressions and
/// the expressions' values in one pod template, together.
pub const MOST_PLACEMENT_ENTRIES: usize = 1024;

/// A list longer than its cap: where, what, how many, and the cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Oversize {
    pub at: String,
    pub what: &'static str,
    pub count: usize,
    pub most: usize,
}

impl fmt::Display for Oversize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { at, what, count, most } = self;
        write!(f, "{at} has {count} {what}, more than the {most} eval-admission reviews")
    }
}

impl Workload {
    /// The first list over its cap, if any; counting only, no list is decoded further.
    pub fn oversize(&self, kind: WorkloadKind) -> Option<Oversize> {
        let spec = self.spec.as_ref()?;
        match kind {
            WorkloadKind::Job => {
                let pod = spec.template.as_ref()?.spec.as_ref()?;
                pod_template_oversize(pod, "spec.template.spec")
            }
            WorkloadKind::JobSet => {
                let replicated = spec.replicated_jobs.as_deref().unwrap_or_default();
                if replicated.len() > MOST_REPLICATED_JOBS {
                    return Some(Oversize {
                        at: "spec".into(),
                        what: "replicated jobs",
                        count: replicated.len(),
                        most: MOST_REPLICATED_JOBS,
                    });
                }
                replicated.iter().enumerate().find_map(|(index, job)| {
                    let pod = job.template.as_ref()?.spec.as_ref()?.template.as_ref()?.spec.as_ref()?;
                    pod_template_oversize(pod, &format!("spec.replicatedJobs[{index}].template.spec.template.spec"))
                })
            }
        }
    }
}

fn pod_template_oversize(pod: &PodSpec, at: &str) -> Option<Oversize> {
    let over = |count: usize, what: &'static str, most: usize| {
        (count > most).then(|| Oversize { at: at.to_owned(), what, count, most })
    };
    let containers = [&pod.containers, &pod.init_containers].map(|list| match list {
        Some(TolerantList::Items(items)) => items.as_slice(),
        _ => &[],
    });
    let placement = pod.node_selector.as_ref().map_or(0, entries) + required_affinity_entries(pod.affinity.as_ref());
    over(containers[0].len() + containers[1].len(), "containers and init containers", MOST_CONTAINERS)
        .or_else(|| over(pod.tolerations.as_ref().map_or(0, entries), "tolerations", MOST_TOLERATIONS))
        .or_else(|| over(placement, "node selector and node affinity entries", MOST_PLACEMENT_ENTRIES))
        .or_else(|| {
            let lists = containers.into_iter().flatten().filter_map(|container| match &container {
                Tolerant::Value(container) => match &container.resources {
                    Some(Tolerant::Value(resources)) => Some([&resources.requests, &resources.limits]),
                    _ => None,
                },
                Tolerant::Malformed(_) => None,
            });
            let pod_level = match &pod.resources {
                Some(Tolerant::Value(resources)) => [&resources.requests, &resources.limits],
                _ => [&None, &None],
            };
            lists
                .flatten()
                .chain(pod_level)
                .chain([&pod.overhead])
                .map(resource_names)
                .max()
                .and_then(|most| over(most, "resources in one list", MOST_RESOURCES))
        })
}

fn resource_names(list: &Option<ResourceList>) -> usize {
    match list {
        Some(Tolerant::Value(entries)) => entries.len(),
        _ => 0,
    }
}

/// Entries of a JSON array or object; 0 for anything else.
fn entries(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.len(),
        Value::Object(fields) => fields.len(),
        _ => 0,
    }
}

/// The required node affinity's terms, their expressions and those's values:
/// what flavor matching walks (`Placement`).
fn required_affinity_entries(affinity: Option<&Value>) -> usize {
    let terms = affinity
        .and_then(|affinity| {
            affinity.pointer("/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        })
        .and_then(Value::as_array);
    terms.map_or(0, |terms| {
        terms
            .iter()
            .map(|term| {
                let expressions = ["matchExpressions", "matchFields"]
                    .into_iter()
                    .filter_map(|field| term.get(field)?.as_array())
                    .flatten();
                1 + expressions.map(|expression| 1 + expression.get("values").map_or(0, entries)).sum::<usize>()
            })
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(pod: Value) -> Workload {
        serde_json::from_value::<Workload>(json!({"spec": {"template": {"spec": pod}}})).unwrap()
    }

    fn containers(count: usize, resources: usize) -> Vec<Value> {
        let requests: serde_json::Map<String, Value> =
            (0..resources).map(|i| (format!("example.com/r{i}"), json!("1"))).collect();
        vec![json!({"resources": {"requests": requests}}); count]
    }

    #[test]
    fn each_cap_is_reached_not_passed() {
        let at_the_caps = job(json!({
            "containers": containers(MOST_CONTAINERS / 2, MOST_RESOURCES),
            "initContainers": containers(MOST_CONTAINERS / 2, 1),
            "tolerations": vec![json!({"operator": "Exists"}); MOST_TOLERATIONS],
            "nodeSelector": {"a": "b"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "k", "operator": "In", "values": vec!["v"; MOST_PLACEMENT_ENTRIES - 4]}]}
            ]}}}
        }));
        assert_eq!(at_the_caps.oversize(WorkloadKind::Job), None);
        let over = |pod: Value| job(pod).oversize(WorkloadKind::Job).map(|o| (o.what, o.count));
        assert_eq!(
            over(json!({"containers": containers(MOST_CONTAINERS, 0), "initContainers": containers(1, 0)})),
            Some(("containers and init containers", MOST_CONTAINERS + 1))
        );
        assert_eq!(
            over(json!({"initContainers": containers(1, MOST_RESOURCES + 1)})),
            Some(("resources in one list", MOST_RESOURCES + 1))
        );
        let pod_level: serde_json::Map<String, Value> =
            (0..=MOST_RESOURCES).map(|i| (format!("r{i}"), json!("1"))).collect();
        assert_eq!(over(json!({"overhead": pod_level})), Some(("resources in one list", MOST_RESOURCES + 1)));
        assert_eq!(
            over(json!({"tolerations": vec![json!({}); MOST_TOLERATIONS + 1]})),
            Some(("tolerations", MOST_TOLERATIONS + 1))
        );
        // A term, its expression and the expression's values, each counted.
        let affinity = |values: usize| {
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "k", "operator": "In", "values": vec!["v"; values]}]}
            ]}}}})
        };
        assert_eq!(over(affinity(MOST_PLACEMENT_ENTRIES - 2)), None);
        assert_eq!(
            over(affinity(MOST_PLACEMENT_ENTRIES - 1)),
            Some(("node selector and node affinity entries", MOST_PLACEMENT_ENTRIES + 1))
        );
        let pod_requests: serde_json::Map<String, Value> =
            (0..=MOST_RESOURCES).map(|i| (format!("r{i}"), json!("1"))).collect();
        assert_eq!(
            over(json!({"resources": {"requests": pod_requests}})),
            Some(("resources in one list", MOST_RESOURCES + 1)),
            "the pod's own resources"
        );
        let selector: serde_json::Map<String, Value> =
            (0..=MOST_PLACEMENT_ENTRIES).map(|i| (format!("k{i}"), json!("v"))).collect();
        assert_eq!(
            over(json!({"nodeSelector": selector})),
            Some(("node selector and node affinity entries", MOST_PLACEMENT_ENTRIES + 1))
        );
    }

    #[test]
    fn a_jobset_is_capped_in_replicated_jobs_and_in_each_template() {
        let replicated = |count: usize, pod: Value| {
            let jobs: Vec<Value> = (0..count)
                .map(|i| json!({"name": format!("r{i}"), "template": {"spec": {"template": {"spec": pod}}}}))
                .collect();
            serde_json::from_value::<Workload>(json!({"spec": {"replicatedJobs": jobs}}))
                .unwrap()
                .oversize(WorkloadKind::JobSet)
        };
        assert_eq!(replicated(MOST_REPLICATED_JOBS, json!({})), None);
        let too_many = replicated(MOST_REPLICATED_JOBS + 1, json!({})).unwrap();
        assert_eq!(too_many.to_string(), "spec has 65 replicated jobs, more than the 64 eval-admission reviews");
        let crowded = replicated(2, json!({"containers": containers(MOST_CONTAINERS + 1, 0)})).unwrap();
        assert_eq!(crowded.at, "spec.replicatedJobs[0].template.spec.template.spec");
    }
}
