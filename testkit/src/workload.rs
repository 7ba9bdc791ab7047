//! Jobs and JobSets as JSON, built the way Kueue's `pkg/util/testingjobs`
//! builds them: a preset for the shape (EvalHub's Job, AIPerf's JobSet, a bare
//! one, or a manifest from examples/), then one call per thing a test varies.
//!
//! ```
//! use testkit::JobBuilder;
//! let job = JobBuilder::evalhub("team-a").queue("eval-queue").gpus(4).build();
//! assert_eq!(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "eval-queue");
//! ```

use serde_json::{Map, Value, json};

pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
pub const PRIORITY_CLASS_LABEL: &str = "kueue.x-k8s.io/priority-class";
pub const GPU: &str = "nvidia.com/gpu";

/// What the setters of metadata share between Jobs and JobSets.
fn set_map(object: &mut Value, path: &[&str], key: &str, value: Value) {
    let mut at = object;
    for part in path {
        if !at[*part].is_object() {
            at[*part] = json!({});
        }
        at = &mut at[*part];
    }
    at[key] = value;
}

fn remove_key(object: &mut Value, path: &[&str], key: &str) {
    let at = path.iter().try_fold(&mut *object, |at, part| at.get_mut(*part));
    if let Some(Value::Object(map)) = at {
        map.remove(key);
    }
}

/// A controller ownerReference.
pub fn owner_reference(api_version: &str, kind: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": true})
}

/// EvalHub's labels on its Jobs: `job_id` and, with an instance namespace,
/// the `evalhub_instance_*` pair.
pub fn evalhub_labels(job_id: &str, instance_namespace: Option<&str>) -> Value {
    let mut labels = json!({
        "app": "evalhub", "component": "evaluation-job",
        "job_id": job_id, "provider_id": "lm_evaluation_harness",
        "benchmark_id": "mmlu", "benchmark_index": "0",
    });
    if let Some(namespace) = instance_namespace {
        labels["evalhub_instance_name"] = json!("evalhub");
        labels["evalhub_instance_namespace"] = json!(namespace);
    }
    labels
}

/// `count` environment variables `PREFIX_SETTING_NN` of some length.
pub fn env(count: usize, prefix: &str) -> Vec<Value> {
    (0..count)
        .map(|i| json!({"name": format!("{prefix}_SETTING_{i:02}"), "value": format!("value-for-{prefix}-setting-{i:02}-with-some-length")}))
        .collect()
}

/// A container as a real evaluation has one: arguments, `env_count`
/// variables, requests and limits, mounts, a restricted security context.
pub fn full_container(name: &str, image: &str, env_count: usize) -> Value {
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

/// The managedFields `kubectl create` records for every field of `spec` (the
/// API server sends them along in reviews).
pub fn managed_fields(object: &Value) -> Value {
    fn fields(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut out = Map::new();
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

/// A pod spec: `restartPolicy: Never`, one container, optionally requests
/// and a priority class.
pub fn pod_spec(container: &str, image: &str, requests: Option<Value>, priority_class: Option<&str>) -> Value {
    let mut container = json!({"name": container, "image": image});
    if let Some(requests) = requests {
        container["resources"] = json!({"requests": requests});
    }
    let mut spec = json!({"restartPolicy": "Never", "containers": [container]});
    if let Some(class) = priority_class {
        spec["priorityClassName"] = json!(class);
    }
    spec
}

/// A pod spec an attacker sends to make a review costly: `sidecars` init
/// containers with `restartPolicy: Always` then `init` plain ones, each asking
/// for a resource of its own name, and one container.
pub fn sidecar_flood(sidecars: usize, init: usize) -> Value {
    let init_container = |i: usize, sidecar: bool| {
        let mut container = json!({"name": format!("i{i}"), "image": "x",
            "resources": {"requests": {format!("example.com/r{i}"): "1"}}});
        if sidecar {
            container["restartPolicy"] = json!("Always");
        }
        container
    };
    let init_containers: Vec<Value> = (0..sidecars)
        .map(|i| init_container(i, true))
        .chain((sidecars..sidecars + init).map(|i| init_container(i, false)))
        .collect();
    json!({"restartPolicy": "Never", "initContainers": init_containers, "containers": [{"name": "main", "image": "x"}]})
}

/// The setters every workload builder has (metadata, Kueue's labels,
/// `spec.suspend`, owners), written once for both.
macro_rules! object_builder {
    ($builder:ident) => {
        impl $builder {
            pub fn from_value(object: Value) -> Self {
                Self { object }
            }

            /// From a manifest (e.g. one of examples/), JSON or YAML.
            pub fn manifest(path: &std::path::Path) -> Self {
                let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
                Self::from_value(
                    serde_yaml::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display())),
                )
            }

            /// `set` applied when `value` is Some: `.maybe(queue, Self::queue)`.
            pub fn maybe<T>(self, value: Option<T>, set: impl FnOnce(Self, T) -> Self) -> Self {
                match value {
                    Some(value) => set(self, value),
                    None => self,
                }
            }

            pub fn name(mut self, name: &str) -> Self {
                self.object["metadata"]["name"] = json!(name);
                self
            }

            /// `metadata.generateName` instead of a name.
            pub fn generate_name(mut self, prefix: &str) -> Self {
                remove_key(&mut self.object, &["metadata"], "name");
                self.object["metadata"]["generateName"] = json!(prefix);
                self
            }

            pub fn namespace(mut self, namespace: &str) -> Self {
                self.object["metadata"]["namespace"] = json!(namespace);
                self
            }

            pub fn uid(mut self, uid: &str) -> Self {
                self.object["metadata"]["uid"] = json!(uid);
                self
            }

            pub fn label(mut self, key: &str, value: &str) -> Self {
                set_map(&mut self.object, &["metadata", "labels"], key, json!(value));
                self
            }

            pub fn labels(self, labels: &[(&str, &str)]) -> Self {
                labels.iter().fold(self, |builder, (key, value)| builder.label(key, value))
            }

            /// No labels at all (`labels: {}`).
            pub fn clear_labels(self) -> Self {
                self.label_object(json!({}))
            }

            /// The labels as a JSON object (e.g. [`evalhub_labels`]), replacing any.
            pub fn label_object(mut self, labels: Value) -> Self {
                self.object["metadata"]["labels"] = labels;
                self
            }

            pub fn without_label(mut self, key: &str) -> Self {
                remove_key(&mut self.object, &["metadata", "labels"], key);
                self
            }

            pub fn annotation(mut self, key: &str, value: &str) -> Self {
                set_map(&mut self.object, &["metadata", "annotations"], key, json!(value));
                self
            }

            pub fn annotations(self, annotations: &[(&str, &str)]) -> Self {
                annotations.iter().fold(self, |builder, (key, value)| builder.annotation(key, value))
            }

            pub fn without_annotations(mut self) -> Self {
                remove_key(&mut self.object, &["metadata"], "annotations");
                self
            }

            /// The LocalQueue label.
            pub fn queue(self, queue: &str) -> Self {
                self.label(QUEUE_LABEL, queue)
            }

            /// Kueue's WorkloadPriorityClass label.
            pub fn priority_class(self, class: &str) -> Self {
                self.label(PRIORITY_CLASS_LABEL, class)
            }

            pub fn suspend(mut self, suspend: bool) -> Self {
                self.object["spec"]["suspend"] = json!(suspend);
                self
            }

            /// A controller ownerReference (replacing any).
            pub fn owner(mut self, api_version: &str, kind: &str, name: &str, uid: &str) -> Self {
                self.object["metadata"]["ownerReferences"] = json!([owner_reference(api_version, kind, name, uid)]);
                self
            }

            pub fn without_owner(mut self) -> Self {
                remove_key(&mut self.object, &["metadata"], "ownerReferences");
                self
            }

            /// The managedFields `kubectl create` would record (call last).
            pub fn managed_fields(mut self) -> Self {
                self.object["metadata"]["managedFields"] = managed_fields(&self.object);
                self
            }

            pub fn build(self) -> Value {
                self.object
            }

            /// As JSON text (what `kubectl create -f -` reads).
            pub fn json(&self) -> String {
                self.object.to_string()
            }
        }
    };
}

/// Builds a `batch/v1` Job.
#[derive(Clone, Debug)]
pub struct JobBuilder {
    object: Value,
}

object_builder!(JobBuilder);

impl JobBuilder {
    /// A bare Job: one container `main` (busybox), `restartPolicy: Never`.
    pub fn new(namespace: &str, name: &str) -> Self {
        Self::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"spec": pod_spec("main", "busybox", None, None)}},
        }))
    }

    /// An EvalHub Job as the rule tests know it: EvalHub's labels, `backoffLimit: 0`,
    /// one `adapter` container asking for 2 CPUs and 8Gi.
    pub fn evalhub(namespace: &str) -> Self {
        let requests = json!({"cpu": "2", "memory": "8Gi"});
        Self::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "evalhub-3f2a", "namespace": namespace,
                "labels": evalhub_labels("3f2a9c1e-0b7d-4d5e-9a51-6c2f1e8b7a10", Some(namespace))},
            "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": {"app": "evalhub"}},
                "spec": pod_spec("adapter", "quay.io/evalhub/adapter:latest", Some(requests), None)}},
        }))
    }

    /// An EvalHub Job as `kubectl create` leaves it and the API server sends
    /// it (uid, creationTimestamp, every default, managedFields), with
    /// `adapter_env` and `sidecar_env` variables in its two containers: the
    /// knob that sets its size (40 and 12: an 8.5 KB review).
    pub fn evalhub_created(namespace: &str, adapter_env: usize, sidecar_env: usize) -> Self {
        let labels = evalhub_labels("3f2a9c1e-0b7d-4d5e-9a51-6c2f1e8b7a10", Some(namespace));
        Self::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "evalhub-3f2a9c1e0b7d4d5e9a516c2f1e8b7a10-9d41e7c2b05a4f3e8c6d", "namespace": namespace,
                "uid": "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b", "creationTimestamp": "2026-12-02T10:00:00Z", "labels": labels.clone()},
            "spec": {"backoffLimit": 0, "completionMode": "NonIndexed", "completions": 1, "parallelism": 1,
                "manualSelector": false, "podReplacementPolicy": "TerminatingOrFailed", "ttlSecondsAfterFinished": 3600,
                "template": {"metadata": {"labels": labels},
                    "spec": {"restartPolicy": "Never", "serviceAccountName": "evalhub-jobs", "dnsPolicy": "ClusterFirst",
                        "schedulerName": "default-scheduler", "terminationGracePeriodSeconds": 30, "securityContext": {},
                        "containers": [full_container("adapter", "quay.io/evalhub/lm-evaluation-harness-adapter:v0.4.1", adapter_env),
                                       full_container("sidecar", "quay.io/evalhub/results-sidecar:v0.4.1", sidecar_env)],
                        "volumes": [{"name": "job-spec", "configMap": {"name": "evalhub-3f2a9c1e-spec", "defaultMode": 420}},
                                    {"name": "cache", "emptyDir": {}}]}}},
            "status": {},
        }))
        .managed_fields()
    }

    /// The shipped EvalHub example (examples/evalhub-job.yaml): no queue label, no suspend.
    pub fn evalhub_example() -> Self {
        Self::manifest(&crate::repo("examples/evalhub-job.yaml"))
    }

    /// The pod template's `priorityClassName`.
    pub fn pod_priority_class(mut self, class: &str) -> Self {
        self.object["spec"]["template"]["spec"]["priorityClassName"] = json!(class);
        self
    }

    /// The pod template's labels: the Job's own (as EvalHub sets them).
    pub fn pod_labels_from_job(mut self) -> Self {
        self.object["spec"]["template"]["metadata"] = json!({"labels": self.object["metadata"]["labels"].clone()});
        self
    }

    /// The pod template's spec, replaced (see [`pod_spec`]).
    pub fn pod(mut self, spec: Value) -> Self {
        self.object["spec"]["template"]["spec"] = spec;
        self
    }

    /// The first container's requests, replaced.
    pub fn requests(mut self, requests: &[(&str, &str)]) -> Self {
        let requests: Map<String, Value> = requests.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        self.first_container()["resources"] = json!({"requests": requests});
        self
    }

    /// `nvidia.com/gpu` GPUs requested by the first container.
    pub fn gpus(mut self, gpus: u32) -> Self {
        set_map(self.first_container(), &["resources", "requests"], GPU, json!(gpus.to_string()));
        self
    }

    /// Only the first container kept (e.g. the adapter, without EvalHub's sidecar).
    pub fn single_container(mut self) -> Self {
        if let Some(containers) = self.object["spec"]["template"]["spec"]["containers"].as_array_mut() {
            containers.truncate(1);
        }
        self
    }

    /// `spec.parallelism` and `spec.completions`.
    pub fn parallelism(mut self, pods: u64) -> Self {
        self.object["spec"]["parallelism"] = json!(pods);
        self.object["spec"]["completions"] = json!(pods);
        self
    }

    pub fn backoff_limit(mut self, limit: u64) -> Self {
        self.object["spec"]["backoffLimit"] = json!(limit);
        self
    }

    fn first_container(&mut self) -> &mut Value {
        &mut self.object["spec"]["template"]["spec"]["containers"][0]
    }
}

/// Builds a `jobset.x-k8s.io/v1alpha2` JobSet.
#[derive(Clone, Debug)]
pub struct JobSetBuilder {
    object: Value,
}

object_builder!(JobSetBuilder);

impl JobSetBuilder {
    /// A bare JobSet with no replicated jobs yet.
    pub fn new(namespace: &str, name: &str) -> Self {
        Self::from_value(json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicatedJobs": []},
        }))
    }

    /// An AIPerf JobSet as the rule tests know it: AIPerf's labels and its
    /// AIPerfJob as controller owner; replicated jobs added with [`Self::replicated`].
    pub fn aiperf(namespace: &str) -> Self {
        Self::new(namespace, "aiperf-latency-sweep-7f2a")
            .labels(&[("app", "aiperf"), ("aiperf.nvidia.com/job-id", "latency-sweep-7f2a")])
            .owner("aiperf.nvidia.com/v1alpha1", "AIPerfJob", "latency-sweep-7f2a", "0d7f")
    }

    /// An AIPerf JobSet as the API server sends it: a controller with four
    /// containers and four workers, large environments, managedFields (about 42 KB).
    pub fn aiperf_created(namespace: &str) -> Self {
        let replicated = |name: &str, replicas: u32, containers: Vec<Value>| {
            json!({"name": name, "replicas": replicas, "template": {"spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                "template": {"metadata": {"labels": {"app": "aiperf", "aiperf.nvidia.com/role": name}},
                    "spec": {"restartPolicy": "Never", "containers": containers,
                        "volumes": [{"name": "job-spec", "configMap": {"name": "aiperf-config"}}, {"name": "cache", "emptyDir": {}}]}}}}})
        };
        let image = "nvcr.io/nvidia/aiperf:0.4.0";
        Self::from_value(json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "aiperf-latency-sweep-7f2a", "namespace": namespace, "uid": "0d7f3b2a-5c1e-4e8f-9a6b-2c4d8e1f7a3b",
                "labels": {"app": "aiperf", "aiperf.nvidia.com/job-id": "latency-sweep-7f2a"},
                "ownerReferences": [{"apiVersion": "aiperf.nvidia.com/v1alpha1", "kind": "AIPerfJob", "name": "latency-sweep-7f2a",
                    "uid": "0d7f3b2a-5c1e-4e8f-9a6b-2c4d8e1f7a3b", "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"network": {"enableDNSHostnames": true}, "successPolicy": {"operator": "All", "targetReplicatedJobs": ["controller"]},
                "replicatedJobs": [
                    replicated("controller", 1, vec![full_container("control-plane", image, 90), full_container("records-manager", image, 70),
                        full_container("results-sidecar", image, 60), full_container("telemetry", image, 60)]),
                    replicated("workers", 4, vec![full_container("worker", image, 110)]),
                ]},
        }))
        .managed_fields()
    }

    /// The shipped AIPerf example (examples/aiperf-jobset.yaml).
    pub fn aiperf_example() -> Self {
        Self::manifest(&crate::repo("examples/aiperf-jobset.yaml"))
    }

    /// A replicated job of `replicas` Jobs with `job_spec` (`{"template": {"spec": POD}}` at least).
    pub fn replicated_job(mut self, name: &str, replicas: u64, job_spec: Value) -> Self {
        let job = json!({"name": name, "replicas": replicas, "template": {"spec": job_spec}});
        self.object["spec"]["replicatedJobs"].as_array_mut().expect("replicatedJobs").push(job);
        self
    }

    /// AIPerf's replicated job `name`: one Job of one container (named after
    /// it, AIPerf's image), with the pod priority class when given.
    pub fn replicated(self, name: &str, pod_priority_class: Option<&str>) -> Self {
        let pod = pod_spec(name, "nvcr.io/nvidia/aiperf:latest", None, pod_priority_class);
        self.replicated_job(name, 1, json!({"template": {"spec": pod}}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evalhub_is_the_rule_tests_shape() {
        let job = JobBuilder::evalhub("team-a").queue("q").pod_priority_class("high").gpus(4).build();
        assert_eq!(job["metadata"]["labels"][QUEUE_LABEL], "q");
        assert_eq!(job["metadata"]["labels"]["evalhub_instance_namespace"], "team-a");
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["priorityClassName"], "high");
        assert_eq!(pod["containers"][0]["resources"]["requests"], json!({"cpu": "2", "memory": "8Gi", GPU: "4"}));
    }

    #[test]
    fn generate_name_replaces_the_name() {
        let job = JobBuilder::new("ns", "x").generate_name("bench-").build();
        assert_eq!((job["metadata"].get("name"), &job["metadata"]["generateName"]), (None, &json!("bench-")));
    }

    #[test]
    fn aiperf_jobset_has_its_owner_and_replicated_jobs() {
        let jobset = JobSetBuilder::aiperf("ns").queue("q").suspend(true).replicated("workers", Some("low")).build();
        assert_eq!(jobset["metadata"]["ownerReferences"][0]["kind"], "AIPerfJob");
        assert_eq!(jobset["spec"]["suspend"], true);
        let pod = &jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
        assert_eq!((&pod["containers"][0]["name"], &pod["priorityClassName"]), (&json!("workers"), &json!("low")));
    }

    /// What src/rules/fixtures.rs builds by hand today (its evalhub_job_value
    /// and aiperf_jobset_value, copied): the presets give the same objects,
    /// so those fixtures can become these builders.
    #[test]
    fn presets_match_the_rule_fixtures() {
        let namespace = "team-a";
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "evalhub-3f2a", "namespace": namespace, "labels": {
                "app": "evalhub", "component": "evaluation-job",
                "job_id": "3f2a9c1e-0b7d-4d5e-9a51-6c2f1e8b7a10", "provider_id": "lm_evaluation_harness",
                "benchmark_id": "mmlu", "benchmark_index": "0",
                "evalhub_instance_name": "evalhub", "evalhub_instance_namespace": namespace,
                QUEUE_LABEL: "q"}},
            "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": {"app": "evalhub"}}, "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "adapter", "image": "quay.io/evalhub/adapter:latest",
                    "resources": {"requests": {"cpu": "2", "memory": "8Gi"}}}],
                "priorityClassName": "high"}}},
        });
        assert_eq!(JobBuilder::evalhub(namespace).queue("q").pod_priority_class("high").build(), job);

        let pod = |name: &str, class: Option<&str>| {
            let mut spec = json!({"restartPolicy": "Never", "containers": [{"name": name, "image": "nvcr.io/nvidia/aiperf:latest"}]});
            if let Some(class) = class {
                spec["priorityClassName"] = json!(class);
            }
            json!({"name": name, "replicas": 1, "template": {"spec": {"template": {"spec": spec}}}})
        };
        let jobset = json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "aiperf-latency-sweep-7f2a", "namespace": namespace,
                "labels": {"app": "aiperf", "aiperf.nvidia.com/job-id": "latency-sweep-7f2a", QUEUE_LABEL: "q"},
                "ownerReferences": [{"apiVersion": "aiperf.nvidia.com/v1alpha1", "kind": "AIPerfJob",
                    "name": "latency-sweep-7f2a", "uid": "0d7f", "controller": true}]},
            "spec": {"replicatedJobs": [pod("controller", None), pod("workers", Some("low"))], "suspend": true},
        });
        let built = JobSetBuilder::aiperf(namespace)
            .queue("q")
            .suspend(true)
            .replicated("controller", None)
            .replicated("workers", Some("low"))
            .build();
        assert_eq!(built, jobset);
    }
}
