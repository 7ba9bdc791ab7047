//! Objects shaped like the seeds' for the rule tests: the example cluster state,
//! an EvalHub Job and an AIPerf JobSet.

use serde_json::Value;
use testkit::{JobBuilder, JobSetBuilder};

use super::verdict::Subject;
use crate::cluster::{ClusterState, state_file};
use crate::workload::{Workload, WorkloadKind};

pub const SEED_STATE: &str = include_str!("../../examples/cluster.yaml");

pub fn seed_state() -> ClusterState {
    state_file::parse(SEED_STATE.as_bytes()).expect("examples/cluster.yaml parses")
}

pub fn state_with(documents: &[&str]) -> ClusterState {
    state_file::parse(documents.join("\n---\n").as_bytes()).expect("fixture state parses")
}

/// [`state_with`] for a cluster that Kueue `release` runs.
pub fn state_of_release(release: &str, documents: &[&str]) -> ClusterState {
    let kueue = crate::vocabulary::kueue::KueueInstall {
        version: crate::vocabulary::kueue::KueueVersion::parse(release).expect("a release"),
        ..Default::default()
    };
    state_file::parse_for(documents.join("\n---\n").as_bytes(), &kueue).expect("fixture state parses")
}

pub fn workload(yaml: &str) -> Workload {
    let value: Value = serde_yaml::from_str(yaml).expect("fixture YAML");
    serde_json::from_value(value).expect("fixture workload")
}

/// An EvalHub-shaped Job as JSON, with extra labels and an optional pod priority class.
pub fn evalhub_job_value(namespace: &str, labels: &[(&str, &str)], pod_priority_class: Option<&str>) -> Value {
    JobBuilder::evalhub(namespace).labels(labels).maybe(pod_priority_class, JobBuilder::pod_priority_class).build()
}

pub fn job_yaml(namespace: &str, labels: &[(&str, &str)], pod_priority_class: Option<&str>) -> String {
    serde_json::to_string(&evalhub_job_value(namespace, labels, pod_priority_class)).unwrap()
}

pub fn evalhub_job_with(namespace: &str, queue: Option<&str>, labels: &[(&str, &str)]) -> Workload {
    let mut all: Vec<(&str, &str)> = labels.to_vec();
    if let Some(queue) = queue {
        all.push(("kueue.x-k8s.io/queue-name", queue));
    }
    serde_json::from_value(evalhub_job_value(namespace, &all, None)).unwrap()
}

pub fn evalhub_job(namespace: &str, queue: Option<&str>) -> Workload {
    evalhub_job_with(namespace, queue, &[])
}

/// An AIPerf-shaped JobSet as JSON: replicated jobs with optional pod priority
/// classes; queued ones start suspended, as the mutating webhook leaves them.
pub fn aiperf_jobset_value(namespace: &str, queue: Option<&str>, replicated: &[(&str, Option<&str>)]) -> Value {
    let queued = JobSetBuilder::aiperf(namespace)
        .maybe(queue, JobSetBuilder::queue)
        .maybe(queue.map(|_| true), JobSetBuilder::suspend);
    replicated.iter().fold(queued, |jobset, (name, class)| jobset.replicated(name, *class)).build()
}

pub fn aiperf_jobset(namespace: &str, queue: Option<&str>, replicated: &[(&str, Option<&str>)]) -> Workload {
    serde_json::from_value(aiperf_jobset_value(namespace, queue, replicated)).unwrap()
}

pub fn job_subject(workload: &Workload) -> Subject<'_> {
    Subject { kind: WorkloadKind::Job, namespace: workload.metadata.namespace.as_deref().unwrap(), workload }
}

pub fn jobset_subject(workload: &Workload) -> Subject<'_> {
    Subject { kind: WorkloadKind::JobSet, namespace: workload.metadata.namespace.as_deref().unwrap(), workload }
}
