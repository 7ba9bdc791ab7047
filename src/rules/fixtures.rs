//! Objects shaped like the seeds' for the rule tests: the example cluster state,
//! an EvalHub Job and an AIPerf JobSet.

use serde_json::{Value, json};

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

pub fn workload(yaml: &str) -> Workload {
    let value: Value = serde_yaml::from_str(yaml).expect("fixture YAML");
    serde_json::from_value(value).expect("fixture workload")
}

/// An EvalHub-shaped Job as JSON, with extra labels and an optional pod priority class.
pub fn evalhub_job_value(namespace: &str, labels: &[(&str, &str)], pod_priority_class: Option<&str>) -> Value {
    let mut all_labels = json!({
        "app": "evalhub", "component": "evaluation-job",
        "job_id": "3f2a9c1e-0b7d-4d5e-9a51-6c2f1e8b7a10", "provider_id": "lm_evaluation_harness",
        "benchmark_id": "mmlu", "benchmark_index": "0",
        "evalhub_instance_name": "evalhub", "evalhub_instance_namespace": namespace,
    });
    for (key, value) in labels {
        all_labels[*key] = json!(value);
    }
    let mut pod_spec = json!({
        "restartPolicy": "Never",
        "containers": [{"name": "adapter", "image": "quay.io/evalhub/adapter:latest",
            "resources": {"requests": {"cpu": "2", "memory": "8Gi"}}}],
    });
    if let Some(class) = pod_priority_class {
        pod_spec["priorityClassName"] = json!(class);
    }
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "evalhub-3f2a", "namespace": namespace, "labels": all_labels},
        "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": {"app": "evalhub"}}, "spec": pod_spec}},
    })
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

/// An AIPerf-shaped JobSet as JSON: replicated jobs with optional pod priority classes.
pub fn aiperf_jobset_value(namespace: &str, queue: Option<&str>, replicated: &[(&str, Option<&str>)]) -> Value {
    let mut labels = json!({"app": "aiperf", "aiperf.nvidia.com/job-id": "latency-sweep-7f2a"});
    if let Some(queue) = queue {
        labels["kueue.x-k8s.io/queue-name"] = json!(queue);
    }
    let replicated_jobs: Vec<Value> = replicated
        .iter()
        .map(|(name, class)| {
            let mut pod_spec = json!({"restartPolicy": "Never",
                "containers": [{"name": name, "image": "nvcr.io/nvidia/aiperf:latest"}]});
            if let Some(class) = class {
                pod_spec["priorityClassName"] = json!(class);
            }
            json!({"name": name, "replicas": 1, "template": {"spec": {"template": {"spec": pod_spec}}}})
        })
        .collect();
    let mut spec = json!({"replicatedJobs": replicated_jobs});
    if queue.is_some() {
        spec["suspend"] = json!(true);
    }
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "aiperf-latency-sweep-7f2a", "namespace": namespace, "labels": labels,
            "ownerReferences": [{"apiVersion": "aiperf.nvidia.com/v1alpha1", "kind": "AIPerfJob",
                "name": "latency-sweep-7f2a", "uid": "0d7f", "controller": true}]},
        "spec": spec,
    })
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
