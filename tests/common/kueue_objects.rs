//! The Kueue objects and lookups the end-to-end suites (kueue_e2e, evalhub_e2e,
//! aiperf_e2e) all build the same way, kept in one place so the suites cannot
//! drift apart in what they ask of Kueue.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Result;
use serde_json::{Value, json};

use super::control_plane::Kubectl;

/// Names are unique: the tests of a binary share one environment, and
/// namespaces never finish deleting without a controller manager. The clock
/// keeps names apart across runs, the counter across tests that ask in the
/// same tick (two did, on a busy machine).
pub fn unique() -> String {
    static TAKEN: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    format!("{:x}{:x}", nanos % 0xff_ffff_ffff, TAKEN.fetch_add(1, Ordering::Relaxed))
}

pub fn flavor(name: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}})
}

/// Kueue's own priority class (not the scheduler's PriorityClass): what the
/// priority label names.
pub fn workload_priority_class(name: &str, value: i32) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value})
}

/// A namespace, with Kueue's default-queue annotation when given (what the
/// queue-defaulting cases turn on) and `labels` (e.g. EvalHub's tenant label).
pub fn namespace(name: &str, default_queue: Option<&str>, labels: &[(&str, &str)]) -> Value {
    let mut namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    if !labels.is_empty() {
        namespace["metadata"]["labels"] = labels.iter().map(|(key, value)| (key.to_string(), json!(value))).collect();
    }
    if let Some(queue) = default_queue {
        namespace["metadata"]["annotations"] = json!({"kueue.x-k8s.io/default-queue-name": queue});
    }
    namespace
}

/// A ClusterQueue open to every namespace, covering what an EvalHub Job asks
/// for (cpu and memory: its adapter container and its results sidecar).
pub fn cluster_queue(name: &str, flavor: &str, cpu: &str, preemption: Value) -> Value {
    let mut queue = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": flavor, "resources": [
                {"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": "8Gi"},
            ]}]}],
        },
    });
    if !preemption.is_null() {
        queue["spec"]["preemption"] = preemption;
    }
    queue
}

pub fn local_queue(namespace: &str, name: &str, cluster_queue: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cluster_queue},
    })
}

/// The Workload Kueue made for a Job or JobSet, found by ownerReference (Kueue
/// names Workloads itself). Err when kubectl or its output fails, so a caller
/// decides: keep polling (`.ok().flatten()`) or stop (`.unwrap()`).
pub fn workload(kubectl: &Kubectl, namespace: &str, owner_kind: &str, owner: &str) -> Result<Option<Value>> {
    let list: Value =
        serde_json::from_str(&kubectl.run(&["get", "workloads.kueue.x-k8s.io", "-n", namespace, "-o", "json"], None)?)?;
    Ok(list["items"].as_array().and_then(|items| items.iter().find(|w| owned_by(w, owner_kind, owner)).cloned()))
}

/// Deactivates a Workload (`spec.active: false`): Kueue evicts it and frees its quota.
pub fn deactivate_workload(kubectl: &Kubectl, namespace: &str, workload: &str) -> Result<String> {
    kubectl.run(
        &[
            "patch",
            "workload.kueue.x-k8s.io",
            workload,
            "-n",
            namespace,
            "--type=merge",
            "-p",
            r#"{"spec":{"active":false}}"#,
        ],
        None,
    )
}

pub fn owned_by(object: &Value, kind: &str, name: &str) -> bool {
    object["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|owners| owners.iter().any(|owner| owner["kind"] == kind && owner["name"] == name))
}

/// The audit's Warning Events (reportingController `eval-admission.io/audit`)
/// on the workload `name` in `namespace`; none when kubectl fails (callers poll).
pub fn audit_events(kubectl: &Kubectl, namespace: &str, name: &str) -> Vec<Value> {
    let Ok(listed) = kubectl.run(&["get", "events.events.k8s.io", "-n", namespace, "-o", "json"], None) else {
        return Vec::new();
    };
    let listed: Value = serde_json::from_str(&listed).unwrap_or_default();
    let events = listed["items"].as_array().into_iter().flatten();
    events
        .filter(|event| event["regarding"]["name"] == name && event["reportingController"] == "eval-admission.io/audit")
        .cloned()
        .collect()
}
