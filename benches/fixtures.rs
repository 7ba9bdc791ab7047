//! Realistic review bodies for the benchmarks, shaped like what the API server
//! sends: an EvalHub Job as `kubectl create` leaves it (managedFields included),
//! 8.5 KB as a review, with 4.9 KB and 9.7 KB variants; an AIPerf JobSet with a
//! controller and workers, about 42 KB; and a Job UPDATE carrying both objects.

#![allow(dead_code)]

use eval_admission::admission::ReviewBuilder;
use eval_admission::workload::WorkloadKind::{Job, JobSet};
use serde_json::{Value, json};

fn env(count: usize, prefix: &str) -> Vec<Value> {
    (0..count)
        .map(|i| json!({"name": format!("{prefix}_SETTING_{i:02}"), "value": format!("value-for-{prefix}-setting-{i:02}-with-some-length")}))
        .collect()
}

fn container(name: &str, image: &str, env_count: usize) -> Value {
    json!({
        "name": name, "image": image, "imagePullPolicy": "IfNotPresent",
        "args": ["--model-url", "http://llm-service.team-a.svc.cluster.local:8080/v1", "--model-name", "granite-3.1-8b", "--benchmark", "mmlu"],
        "env": env(env_count, name),
        "resources": {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "16Gi"}},
        "volumeMounts": [{"name": "job-spec", "mountPath": "/meta"}, {"name": "cache", "mountPath": "/cache"}],
        "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
    })
}

/// `kubectl create` records every field it set; the API server sends them along.
fn managed_fields(object: &Value) -> Value {
    fn fields(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                out.insert(".".into(), json!({}));
                for (key, value) in map {
                    out.insert(format!("f:{key}"), fields(value));
                }
                Value::Object(out)
            }
            _ => json!({}),
        }
    }
    json!([{"manager": "kubectl-create", "operation": "Update", "apiVersion": object["apiVersion"],
        "time": "2026-12-02T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields(&object["spec"])}])
}

pub fn evalhub_job(namespace: &str) -> Value {
    evalhub_job_with_env(namespace, 40, 12)
}

/// The EvalHub Job with `adapter_env` and `sidecar_env` variables in its two
/// containers: the knob that sets the body's size.
pub fn evalhub_job_with_env(namespace: &str, adapter_env: usize, sidecar_env: usize) -> Value {
    let labels = json!({"app": "evalhub", "component": "evaluation-job", "job_id": "3f2a9c1e-0b7d-4d5e-9a51-6c2f1e8b7a10",
        "provider_id": "lm_evaluation_harness", "benchmark_id": "mmlu", "benchmark_index": "0",
        "evalhub_instance_name": "evalhub", "evalhub_instance_namespace": namespace});
    let mut job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "evalhub-3f2a9c1e0b7d4d5e9a516c2f1e8b7a10-9d41e7c2b05a4f3e8c6d", "namespace": namespace,
            "uid": "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b", "creationTimestamp": "2026-12-02T10:00:00Z", "labels": labels.clone()},
        "spec": {"backoffLimit": 0, "completionMode": "NonIndexed", "completions": 1, "parallelism": 1,
            "manualSelector": false, "podReplacementPolicy": "TerminatingOrFailed", "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": labels},
                "spec": {"restartPolicy": "Never", "serviceAccountName": "evalhub-jobs", "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler", "terminationGracePeriodSeconds": 30, "securityContext": {},
                    "containers": [container("adapter", "quay.io/evalhub/lm-evaluation-harness-adapter:v0.4.1", adapter_env),
                                   container("sidecar", "quay.io/evalhub/results-sidecar:v0.4.1", sidecar_env)],
                    "volumes": [{"name": "job-spec", "configMap": {"name": "evalhub-3f2a9c1e-spec", "defaultMode": 420}},
                                {"name": "cache", "emptyDir": {}}]}}},
        "status": {},
    });
    job["metadata"]["managedFields"] = managed_fields(&job);
    job
}

pub fn aiperf_jobset(namespace: &str) -> Value {
    let replicated = |name: &str, replicas: u32, containers: Vec<Value>| {
        json!({"name": name, "replicas": replicas, "template": {"spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
            "template": {"metadata": {"labels": {"app": "aiperf", "aiperf.nvidia.com/role": name}},
                "spec": {"restartPolicy": "Never", "containers": containers,
                    "volumes": [{"name": "job-spec", "configMap": {"name": "aiperf-config"}}, {"name": "cache", "emptyDir": {}}]}}}}})
    };
    let image = "nvcr.io/nvidia/aiperf:0.4.0";
    let mut jobset = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "aiperf-latency-sweep-7f2a", "namespace": namespace, "uid": "0d7f3b2a-5c1e-4e8f-9a6b-2c4d8e1f7a3b",
            "labels": {"app": "aiperf", "aiperf.nvidia.com/job-id": "latency-sweep-7f2a"},
            "ownerReferences": [{"apiVersion": "aiperf.nvidia.com/v1alpha1", "kind": "AIPerfJob", "name": "latency-sweep-7f2a",
                "uid": "0d7f3b2a-5c1e-4e8f-9a6b-2c4d8e1f7a3b", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"network": {"enableDNSHostnames": true}, "successPolicy": {"operator": "All", "targetReplicatedJobs": ["controller"]},
            "replicatedJobs": [
                replicated("controller", 1, vec![container("control-plane", image, 90), container("records-manager", image, 70),
                    container("results-sidecar", image, 60), container("telemetry", image, 60)]),
                replicated("workers", 4, vec![container("worker", image, 110)]),
            ]},
    });
    jobset["metadata"]["managedFields"] = managed_fields(&jobset);
    jobset
}

/// The builder the tests use, with a uid and user as the API server would send them.
fn review(builder: ReviewBuilder, user: &str) -> Vec<u8> {
    builder.uid("b6f7a0c2-5d1e-4f3a-9c8b-2e4d6f8a0b1c").user(user).to_bytes()
}

/// An EvalHub Job CREATE in team-a-namespace (gets the namespace default queue).
pub fn job_create() -> Vec<u8> {
    review(
        ReviewBuilder::create(Job, &evalhub_job("team-a-namespace")),
        "system:serviceaccount:team-a-namespace:evalhub",
    )
}

/// A smaller EvalHub Job CREATE, about 4 KB (8 and 2 environment variables).
pub fn job_create_4k() -> Vec<u8> {
    review(
        ReviewBuilder::create(Job, &evalhub_job_with_env("team-a-namespace", 8, 2)),
        "system:serviceaccount:team-a-namespace:evalhub",
    )
}

/// A larger EvalHub Job CREATE, about 10 KB (52 and 14 environment variables).
pub fn job_create_10k() -> Vec<u8> {
    review(
        ReviewBuilder::create(Job, &evalhub_job_with_env("team-a-namespace", 52, 14)),
        "system:serviceaccount:team-a-namespace:evalhub",
    )
}

/// The same Job after mutation, as the validating webhook receives it.
pub fn job_create_mutated() -> Vec<u8> {
    let mut job = evalhub_job("team-a-namespace");
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("eval-queue");
    job["spec"]["suspend"] = json!(true);
    review(ReviewBuilder::create(Job, &job), "system:serviceaccount:team-a-namespace:evalhub")
}

/// Kueue unsuspending the queued Job: an UPDATE with both objects.
pub fn job_update() -> Vec<u8> {
    let mut old = evalhub_job("team-a-namespace");
    old["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("eval-queue");
    old["spec"]["suspend"] = json!(true);
    let mut new = old.clone();
    new["spec"]["suspend"] = json!(false);
    review(ReviewBuilder::update(Job, &old, &new), "system:serviceaccount:kueue-system:kueue-controller-manager")
}

/// An AIPerf JobSet CREATE in my-benchmarks (no queue label: gets the namespace default).
pub fn jobset_create() -> Vec<u8> {
    review(
        ReviewBuilder::create(JobSet, &aiperf_jobset("my-benchmarks")),
        "system:serviceaccount:aiperf-system:aiperf-operator",
    )
}
