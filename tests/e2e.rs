//! End to end through the real kube-apiserver, as users meet eval-admission:
//! `kubectl create`, `kubectl apply`, `kubectl --as=alice`.
//!
//! The first test to run starts the test environment (tests/common/control_plane/:
//! etcd and kube-apiserver built from their Go modules, the Kueue and JobSet
//! CRDs, this tree's eval-admission registered with the shipped webhook
//! configurations); it goes when the test binary exits. `cargo test --test e2e`
//! (or `make e2e`) is all it takes.

#[path = "e2e/chart.rs"]
mod chart;
mod common;

use std::path::Path;
use std::process::Command;
use std::sync::RwLock;
use std::time::Duration;

use common::control_plane::{ControlPlane, Environment, EvalAdmission};
use common::{BIN, repo};
use serde_json::{Value, json};
use testkit::{JobBuilder, JobSetBuilder, wait_for};

/// Tests that stop the server or remove Kueue take this for writing; the rest read.
static DISRUPTION: RwLock<()> = RwLock::new(());

/// The test control plane and eval-admission in front of it.
type Cluster = Environment;

/// The shared environment, started (and seeded) by whichever test comes first.
fn cluster() -> &'static Cluster {
    Environment::shared(|| {
        let cluster = Environment::start(&[], Path::new(BIN), &repo("manifests/base/config.yaml"), false)?;
        seed(&cluster);
        Ok(cluster)
    })
}

fn seed(cluster: &Cluster) {
    // The seeds' queues and priority classes: team-a-cq (no preemption),
    // team-a-shared-cq (LowerPriority), WorkloadPriorityClasses 1000/500/100.
    cluster.ok(&["apply", "-f", repo("examples/cluster.yaml").to_str().unwrap()], None);
    // The server's caches see them a moment later: wait until its verdict uses
    // the shared queue's policy and the seeded classes.
    let namespace = cluster.namespace("seeds", None, &[("shared-queue", "team-a-shared-cq")]);
    let probe = evalhub_job(
        &namespace,
        "probe",
        &[("kueue.x-k8s.io/queue-name", "shared-queue"), ("kueue.x-k8s.io/priority-class", "experimental")],
        &[],
    );
    eventually("the server to see the seeded queues and classes", || {
        let output = cluster.kubectl(&["create", "--dry-run=server", "-f", "-"], Some(&probe));
        String::from_utf8_lossy(&output.stderr).contains("Kueue could preempt it")
    });
}

impl Cluster {
    /// A namespace with optional default-queue annotation and LocalQueues (name -> ClusterQueue).
    fn namespace(&self, prefix: &str, default_queue: Option<&str>, queues: &[(&str, &str)]) -> String {
        let name = unique(prefix);
        // The label team-a-cq's namespaceSelector and team-a-fifo-cq's select.
        let mut yaml =
            format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:\n    team: team-a\n");
        if let Some(queue) = default_queue {
            yaml.push_str(&format!("  annotations:\n    kueue.x-k8s.io/default-queue-name: {queue}\n"));
        }
        for (queue, cluster_queue) in queues {
            yaml.push_str(&local_queue(&name, queue, cluster_queue));
        }
        self.ok(&["apply", "-f", "-"], Some(&yaml));
        name
    }
}

fn local_queue(namespace: &str, name: &str, cluster_queue: &str) -> String {
    format!(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  clusterQueue: {cluster_queue}\n"
    )
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", common::kueue_objects::unique())
}

/// The shipped EvalHub example moved to `namespace`, with extra labels and annotations.
fn evalhub_job(namespace: &str, name: &str, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> String {
    evaluation(namespace, name).labels(labels).annotations(annotations).json()
}

/// The shipped EvalHub example moved to `namespace`, to build on.
fn evaluation(namespace: &str, name: &str) -> JobBuilder {
    JobBuilder::evalhub_example().namespace(namespace).name(name)
}

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    wait_for(what, Duration::from_secs(20), || check().then_some(()));
}

#[test]
fn an_evalhub_job_and_an_aiperf_jobset_are_queued_and_suspended() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let namespace = cluster.namespace("team-a", Some("eval-queue"), &[("eval-queue", "team-a-cq")]);
    cluster.ok(&["create", "-f", "-"], Some(&evalhub_job(&namespace, "evalhub-3f2a", &[], &[])));
    let job = cluster.get("job", &namespace, "evalhub-3f2a");
    assert_eq!(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "eval-queue");
    assert_eq!(job["spec"]["suspend"], true);
    assert_eq!(job["metadata"]["labels"]["benchmark_id"], "mmlu", "everything else kept");

    let benchmarks =
        cluster.namespace("my-benchmarks", Some("aiperf-queue"), &[("aiperf-queue", "aiperf-cluster-queue")]);
    let jobset = JobSetBuilder::aiperf_example().namespace(&benchmarks).without_owner();
    cluster.ok(&["create", "-f", "-"], Some(&jobset.json()));
    let stored = cluster.get("jobset", &benchmarks, "aiperf-latency-sweep-7f2a");
    assert_eq!(stored["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "aiperf-queue");
    assert_eq!(stored["spec"]["suspend"], true);

    // An AIPerfSweep's controller JobSet has no labels: the webhooks' CEL
    // (rendered from the `aiperf-sweep` selector) must still send it to us.
    // The ownerReference's uid need not resolve: the API server does not check it.
    let sweep_uid = "5b0c1d2e-0000-4000-8000-000000000001";
    let jobset = jobset.name("aiperf-sweep-1").clear_labels().owner(
        "aiperf.nvidia.com/v1alpha1",
        "AIPerfSweep",
        "sweep-1",
        sweep_uid,
    );
    cluster.ok(&["create", "-f", "-"], Some(&jobset.json()));
    let sweep = cluster.get("jobset", &benchmarks, "aiperf-sweep-1");
    assert_eq!(sweep["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "aiperf-queue");
    assert_eq!(sweep["spec"]["suspend"], true);
}

#[test]
fn a_missing_local_queue_is_refused_and_soft_findings_are_warnings() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let namespace = cluster.namespace("team-a", None, &[("eval-queue", "team-a-cq"), ("orphan-queue", "retired-cq")]);
    let stderr = cluster.refused(
        &["create", "-f", "-"],
        Some(&evalhub_job(&namespace, "typo", &[("kueue.x-k8s.io/queue-name", "eval-queu")], &[])),
    );
    assert!(
        stderr.contains(&format!(
            "admission webhook \"validate.eval-admission.io\" denied the request: Job {namespace}/typo names LocalQueue \
             'eval-queu' (label kueue.x-k8s.io/queue-name), which does not exist in namespace '{namespace}', so Kueue \
             would keep it suspended forever. LocalQueues in '{namespace}' that would admit it: eval-queue."
        )),
        "{stderr}"
    );
    assert!(
        cluster.kubectl(&["get", "job", "typo", "-n", &namespace], None).status.code() != Some(0),
        "nothing stored"
    );

    let stderr = cluster.refused(
        &["create", "-f", "-"],
        Some(&evalhub_job(&namespace, "orphaned", &[("kueue.x-k8s.io/queue-name", "orphan-queue")], &[])),
    );
    assert!(stderr.contains("ClusterQueue 'retired-cq', which does not exist"), "{stderr}");
    assert!(stderr.contains("a LocalQueue that would admit it (eval-queue)"), "the way out: {stderr}");
    let output = cluster.kubectl(
        &["create", "-f", "-"],
        Some(&evalhub_job(&namespace, "ready", &[("kueue.x-k8s.io/queue-name", "eval-queue")], &[])),
    );
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("Warning: Kueue's waitForPodsReady is on"), "kubectl prints the warning: {stderr}");

    let plain = cluster.namespace("plain", None, &[]);
    let output = cluster.kubectl(&["create", "-f", "-"], Some(&evalhub_job(&plain, "bypass", &[], &[])));
    assert!(output.status.success());
    assert!(String::from_utf8(output.stderr).unwrap().contains("bypasses Kueue"));
}

#[test]
fn one_apply_of_a_namespace_its_local_queue_its_classes_and_a_job_succeeds() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let namespace = unique("together");
    // Value 1: below every seeded class, so no other test's exposure changes.
    let classes = format!(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n  name: {namespace}\nvalue: 1\n\
         ---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {namespace}\nvalue: 1\n"
    );
    let job = evaluation(&namespace, "right-away")
        .queue("fresh-queue")
        .priority_class(&namespace)
        .pod_priority_class(&namespace)
        .build();
    let file = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n  labels:\n    team: team-a\n{}{classes}---\n{}",
        local_queue(&namespace, "fresh-queue", "team-a-cq"),
        serde_yaml::to_string(&job).unwrap()
    );
    cluster.ok(&["apply", "-f", "-"], Some(&file));
    assert_eq!(cluster.get("job", &namespace, "right-away")["spec"]["suspend"], true);

    // A ClusterQueue applied with its ResourceFlavor and a Job: the flavor may
    // not be in the watch cache yet, so "inactive: names a missing flavor" is
    // confirmed live before it is said. No cohort: nothing else's exposure moves.
    let flavored = format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: {namespace}\n\
         ---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: {namespace}\nspec:\n  \
         namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {namespace}}}}}\n  resourceGroups:\n  \
         - coveredResources: [cpu, memory]\n    flavors: [{{name: {namespace}, resources: [{{name: cpu, nominalQuota: 8}}, \
         {{name: memory, nominalQuota: 64Gi}}]}}]\n{}---\n{}",
        local_queue(&namespace, "flavored-queue", &namespace),
        evalhub_job(
            &namespace,
            "with-its-flavor",
            &[("kueue.x-k8s.io/queue-name", "flavored-queue"), ("kueue.x-k8s.io/priority-class", &namespace)],
            &[]
        )
    );
    cluster.ok(&["apply", "-f", "-"], Some(&flavored));
    assert_eq!(cluster.get("job", &namespace, "with-its-flavor")["spec"]["suspend"], true);
}

#[test]
fn local_queues_created_and_deleted_while_running_are_seen() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let namespace = cluster.namespace("late", None, &[]);
    cluster.ok(&["apply", "-f", "-"], Some(&local_queue(&namespace, "late-queue", "team-a-cq")));
    let job = |name: &str| evalhub_job(&namespace, name, &[("kueue.x-k8s.io/queue-name", "late-queue")], &[]);
    cluster.ok(&["create", "-f", "-"], Some(&job("first")));
    cluster.ok(&["delete", "localqueue", "late-queue", "-n", &namespace], None);
    let stderr = cluster.refused(&["create", "-f", "-"], Some(&job("second")));
    assert!(stderr.contains("names LocalQueue 'late-queue'") && stderr.contains("has no LocalQueues"), "{stderr}");
}

/// The server watches LimitRanges and RuntimeClasses (RBAC list and watch):
/// a default limit below a request, created while it runs, is what Kueue
/// would refuse; a RuntimeClass's overhead counts against quota; both seen
/// going away too.
#[test]
fn limit_ranges_and_runtime_classes_created_while_running_are_seen() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let namespace = cluster.namespace("limits", None, &[("eval-queue", "team-a-cq")]);
    let job = |name: &str, runtime_class: Option<&str>| {
        let mut job = evaluation(&namespace, name)
            .queue("eval-queue")
            .single_container()
            .requests(&[("cpu", "4"), ("memory", "1Gi")])
            .build();
        if let Some(class) = runtime_class {
            job["spec"]["template"]["spec"]["runtimeClassName"] = class.into();
        }
        job.to_string()
    };
    let limits = format!(
        "apiVersion: v1\nkind: LimitRange\nmetadata: {{name: small, namespace: {namespace}}}\n\
         spec: {{limits: [{{type: Container, default: {{cpu: \"2\"}}}}]}}\n"
    );
    cluster.ok(&["apply", "-f", "-"], Some(&limits));
    eventually("the server to hold requests to the LimitRange's default limit", || {
        let output = cluster.kubectl(&["create", "--dry-run=server", "-f", "-"], Some(&job("over", None)));
        String::from_utf8_lossy(&output.stderr).contains("asks for cpu 4 (limit 2), above its limit")
    });
    cluster.ok(&["delete", "limitrange", "small", "-n", &namespace], None);
    eventually("the server to forget the LimitRange", || {
        cluster.kubectl(&["create", "--dry-run=server", "-f", "-"], Some(&job("over", None))).status.success()
    });
    // team-a-cq has 32 cpu: 4 plus 30 of overhead do not fit.
    let class = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: e2e-heavy}\nhandler: heavy\n\
                 overhead: {podFixed: {cpu: \"30\"}}\n";
    cluster.ok(&["apply", "-f", "-"], Some(class));
    eventually("the server to count the RuntimeClass's overhead", || {
        let output =
            cluster.kubectl(&["create", "--dry-run=server", "-f", "-"], Some(&job("heavy", Some("e2e-heavy"))));
        String::from_utf8_lossy(&output.stderr).contains("needs 34 cpu")
    });
    cluster.ok(&["delete", "runtimeclass", "e2e-heavy"], None);
    eventually("the server to forget the RuntimeClass", || {
        cluster
            .kubectl(&["create", "--dry-run=server", "-f", "-"], Some(&job("heavy", Some("e2e-heavy"))))
            .status
            .success()
    });
}

#[test]
fn preemptible_evaluations_are_refused_unless_they_checkpoint_or_the_queue_does_not_preempt() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let namespace =
        cluster.namespace("preempt", None, &[("shared-queue", "team-a-shared-cq"), ("eval-queue", "team-a-cq")]);
    let low = [("kueue.x-k8s.io/queue-name", "shared-queue"), ("kueue.x-k8s.io/priority-class", "experimental")];
    let stderr = cluster.refused(&["create", "-f", "-"], Some(&evalhub_job(&namespace, "low", &low, &[])));
    assert!(
        stderr.contains("ClusterQueue 'team-a-shared-cq' has preemption.withinClusterQueue LowerPriority"),
        "{stderr}"
    );
    assert!(
        stderr.contains("submit to a LocalQueue whose ClusterQueue would admit it and cannot preempt it (eval-queue)"),
        "{stderr}"
    );

    let checkpointing = [("eval-admission.io/checkpointing", "true")];
    cluster.ok(&["create", "-f", "-"], Some(&evalhub_job(&namespace, "low-checkpointing", &low, &checkpointing)));
    let safe = [("kueue.x-k8s.io/queue-name", "eval-queue"), ("kueue.x-k8s.io/priority-class", "experimental")];
    cluster.ok(&["create", "-f", "-"], Some(&evalhub_job(&namespace, "low-safe", &safe, &[])));
}

#[test]
fn an_ordinary_user_cannot_take_a_queued_evaluation_out_of_kueue_but_kueue_can_start_it() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let namespace =
        cluster.namespace("bypass", None, &[("eval-queue", "team-a-cq"), ("shared-queue", "team-a-shared-cq")]);
    // alice may do anything with Jobs in this namespace, and nothing else.
    cluster.ok(&["create", "role", "jobs", "-n", &namespace, "--verb=*", "--resource=jobs"], None);
    cluster.ok(&["create", "rolebinding", "alice-jobs", "-n", &namespace, "--role=jobs", "--user=alice"], None);
    let labels = [("kueue.x-k8s.io/queue-name", "eval-queue"), ("kueue.x-k8s.io/priority-class", "production")];
    cluster.ok(&["create", "-f", "-", "--as=alice"], Some(&evalhub_job(&namespace, "queued", &labels, &[])));
    assert_eq!(cluster.get("job", &namespace, "queued")["spec"]["suspend"], true);

    let as_alice = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["-n", &namespace, "--as=alice"]);
        cluster.refused(&all, None)
    };
    let stderr = as_alice(&["patch", "job", "queued", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#]);
    assert!(stderr.contains("only Kueue") && stderr.contains("alice tried"), "{stderr}");
    let stderr = as_alice(&["label", "job", "queued", "kueue.x-k8s.io/queue-name-"]);
    assert!(stderr.contains("would let this evaluation run outside Kueue"), "{stderr}");
    let stderr = as_alice(&["label", "job", "queued", "kueue.x-k8s.io/queue-name=shared-queue", "--overwrite"]);
    assert!(stderr.contains("Kueue could preempt it"), "{stderr}");
    let stderr = as_alice(&["label", "job", "queued", "kueue.x-k8s.io/priority-class=urgent", "--overwrite"]);
    assert!(stderr.contains("WorkloadPriorityClass 'urgent'"), "{stderr}");
    assert_eq!(cluster.get("job", &namespace, "queued")["spec"]["suspend"], true, "still suspended");

    // Kueue's controller identity starts it.
    let kueue = "system:serviceaccount:kueue-system:kueue-controller-manager";
    cluster.ok(&["create", "role", "kueue-jobs", "-n", &namespace, "--verb=get,update,patch", "--resource=jobs"], None);
    cluster.ok(
        &["create", "rolebinding", "kueue-jobs", "-n", &namespace, "--role=kueue-jobs", &format!("--user={kueue}")],
        None,
    );
    cluster.ok(
        &[
            "patch",
            "job",
            "queued",
            "-n",
            &namespace,
            "--type=merge",
            "-p",
            r#"{"spec":{"suspend":false}}"#,
            &format!("--as={kueue}"),
        ],
        None,
    );
    assert_eq!(cluster.get("job", &namespace, "queued")["spec"]["suspend"], false);
}

#[test]
fn server_side_dry_run_behaves_like_a_create_and_stores_nothing() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let namespace = cluster.namespace("dry", Some("eval-queue"), &[("eval-queue", "team-a-cq")]);
    let printed = cluster
        .ok(&["create", "--dry-run=server", "-o", "json", "-f", "-"], Some(&evalhub_job(&namespace, "dry", &[], &[])));
    let printed: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(printed["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "eval-queue");
    assert_eq!(printed["spec"]["suspend"], true);
    assert!(!cluster.kubectl(&["get", "job", "dry", "-n", &namespace], None).status.success(), "nothing stored");
    let typo = evalhub_job(&namespace, "dry-typo", &[("kueue.x-k8s.io/queue-name", "nope")], &[]);
    assert!(
        cluster.refused(&["create", "--dry-run=server", "-f", "-"], Some(&typo)).contains("names LocalQueue 'nope'")
    );
}

#[test]
fn with_the_server_stopped_evaluations_fail_closed_and_other_jobs_are_untouched() {
    let cluster = cluster();
    let _exclusive = DISRUPTION.write().unwrap_or_else(|p| p.into_inner());
    let namespace = cluster.namespace("outage", Some("eval-queue"), &[("eval-queue", "team-a-cq")]);
    cluster.webhook.down();
    let stderr = cluster.refused(&["create", "-f", "-"], Some(&evalhub_job(&namespace, "during-outage", &[], &[])));
    cluster.webhook.up(None).unwrap();
    assert!(stderr.contains("failed calling webhook \"mutate.eval-admission.io\""), "failurePolicy Fail: {stderr}");

    // A Job that is not an evaluation never reaches the webhook (matchConditions), up or down.
    cluster.webhook.down();
    let other = evaluation(&namespace, "web-batch").clear_labels().label("app", "web");
    let output = cluster.kubectl(&["create", "-f", "-"], Some(&other.json()));
    cluster.webhook.up(None).unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(cluster.get("job", &namespace, "web-batch")["spec"].get("suspend").is_none_or(|s| s == false));

    cluster.ok(&["create", "-f", "-"], Some(&evalhub_job(&namespace, "after-outage", &[], &[])));
}

/// Issue 34: an API server given a client certificate for webhooks (an
/// AdmissionConfiguration's `kubeConfigFile`) still gets its evaluations
/// mutated by a server that demands one (`--client-ca-file`, `--client-name`),
/// while a caller without a certificate gets no answer. Its own control plane:
/// kube-apiserver reads that file only at start.
#[test]
fn the_api_server_proves_who_it_is_and_a_caller_without_a_certificate_gets_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let callers = testkit::Ca::new().unwrap();
    let caller = "kube-apiserver-webhook-client";
    let admission = admission_config_presenting(dir.path(), &callers, caller);
    let plane = ControlPlane::start(&[&format!("--admission-control-config-file={}", admission.display())]).unwrap();
    let client_ca = dir.path().join("client-ca.crt");
    std::fs::write(&client_ca, &callers.pem).unwrap();
    let flags = ["--client-ca-file", client_ca.to_str().unwrap(), "--client-name", caller];
    let config = repo("manifests/base/config.yaml");
    let webhook =
        EvalAdmission::start_with_flags(&plane, Path::new(BIN), &config, &repo("manifests/base/webhooks"), &flags)
            .unwrap();
    let cluster = Environment { kueue: None, webhook, plane };
    seed(&cluster);

    let namespace = cluster.namespace("authenticated", Some("eval-queue"), &[("eval-queue", "team-a-cq")]);
    cluster.ok(&["create", "-f", "-"], Some(&evalhub_job(&namespace, "evalhub-authenticated", &[], &[])));
    let job = cluster.get("job", &namespace, "evalhub-authenticated");
    assert_eq!(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "eval-queue");
    assert_eq!(job["spec"]["suspend"], true);

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let anonymous = runtime.block_on(async {
        common::client(&[&cluster.ca.pem], true)
            .post(format!("https://127.0.0.1:{}/mutate", cluster.webhook.port))
            .header("content-type", "application/json")
            .body(common::review_body("evalhub-job.yaml"))
            .send()
            .await
    });
    assert!(anonymous.is_err(), "a caller without a certificate was answered: {anonymous:?}");
}

/// An AdmissionConfiguration (Kubernetes docs, Dynamic Admission Control,
/// "Authenticate apiservers") whose webhook plugins present a certificate for
/// `caller` from `ca` to every webhook: its kubeconfig's user `*`.
fn admission_config_presenting(dir: &Path, ca: &testkit::Ca, caller: &str) -> std::path::PathBuf {
    let (cert, key) = ca.issue_files(dir, caller, testkit::Usage::Client { user: caller, group: "webhooks" }).unwrap();
    let kubeconfig = dir.join("webhook-callers.kubeconfig");
    let users = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "users": [{"name": "*", "user": {"client-certificate": cert, "client-key": key}}],
    });
    std::fs::write(&kubeconfig, users.to_string()).unwrap();
    let plugin = |name: &str| {
        json!({"name": name, "configuration": {
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "WebhookAdmissionConfiguration",
            "kubeConfigFile": kubeconfig,
        }})
    };
    let admission = dir.join("admission.json");
    let config = json!({
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": [plugin("ValidatingAdmissionWebhook"), plugin("MutatingAdmissionWebhook")],
    });
    std::fs::write(&admission, config.to_string()).unwrap();
    admission
}

#[test]
fn kueue_removed_and_reinstalled_while_running_is_noticed() {
    let cluster = cluster();
    let _exclusive = DISRUPTION.write().unwrap_or_else(|p| p.into_inner());
    let namespace = cluster.namespace("crd", None, &[("eval-queue", "team-a-cq")]);
    let job = |name: &str| evalhub_job(&namespace, name, &[("kueue.x-k8s.io/queue-name", "eval-queue")], &[]);
    let watchers_before = running_watchers(cluster).expect("the metric is exported");
    let crd = cluster.ok(&["get", "crd", "localqueues.kueue.x-k8s.io", "-o", "json"], None);
    cluster.ok(&["delete", "crd", "localqueues.kueue.x-k8s.io"], None);
    eventually("the server to see Kueue gone", || {
        let output = cluster.kubectl(&["create", "--dry-run=server", "-f", "-"], Some(&job("probe")));
        String::from_utf8_lossy(&output.stderr)
            .contains("Kueue is not installed, but LocalQueue 'eval-queue' was explicitly requested")
    });
    let mut crd: Value = serde_json::from_str(&crd).unwrap();
    for field in ["resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"] {
        crd["metadata"].as_object_mut().unwrap().remove(field);
    }
    crd.as_object_mut().unwrap().remove("status");
    cluster.ok(&["create", "-f", "-"], Some(&crd.to_string()));
    cluster.wait_established(&["crd/localqueues.kueue.x-k8s.io"]).unwrap();
    // The CRD's deletion took the LocalQueues with it: restore them.
    cluster.ok(&["apply", "-f", repo("examples/cluster.yaml").to_str().unwrap()], None);
    cluster.ok(&["apply", "-f", "-"], Some(&local_queue(&namespace, "eval-queue", "team-a-cq")));
    eventually("the server to see Kueue back", || {
        cluster.kubectl(&["create", "--dry-run=server", "-f", "-"], Some(&job("probe"))).status.success()
    });
    cluster.ok(&["create", "-f", "-"], Some(&job("after-reinstall")));
    // Each Kueue kind has one watcher again, and the removed ones are gone with their parent.
    eventually("the watchers to be as many as before", || running_watchers(cluster) == Some(watchers_before));
    assert!(watchers_before >= 10, "namespaces, classes, config, CRD, owners, JobSet owners, Kueue and its 6 kinds");
}

/// The served Kueue API (these CRDs are v0.19.2's: LocalQueue as v1beta2) fits
/// the shipped config's release, and Kueue's Deployment, once there, confirms
/// or contradicts it by its image tag; a config naming v0.14.8 is told, on
/// /readyz, in the metrics and in the log, that the cluster runs another Kueue.
#[test]
fn a_config_naming_another_kueue_release_is_told_so() {
    let cluster = cluster();
    let gauge = |admin_port, name: &str| {
        let metrics = common::control_plane::http_get(admin_port, "/metrics")?;
        metrics.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.trim().parse::<i64>().ok())
    };
    let contradicted = |admin_port| gauge(admin_port, "eval_admission_kueue_release_contradicted");
    let confirmed = |admin_port| gauge(admin_port, "eval_admission_kueue_release_confirmed");
    let readyz = |admin_port| common::control_plane::http_get(admin_port, "/readyz").unwrap_or_default();
    let shared = cluster.webhook.admin_port;
    let no_deployment = "ok\nnote: Kueue's release cannot be read from Deployment kueue-system/kueue-controller-manager \
                         (it does not exist): judging by the config's kueue.version, v0.19.2\n";
    eventually("the shared server to check the release", || {
        contradicted(shared) == Some(0) && readyz(shared) == no_deployment
    });
    assert_eq!(confirmed(shared), Some(0));

    // Kueue's Deployment appears (stored only: nothing runs it here), a patch release off.
    let kueue_deployment = |image: &str| {
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata: {{name: kueue-system}}\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: kueue-controller-manager, namespace: kueue-system}}\n\
             spec:\n  selector: {{matchLabels: {{control-plane: controller-manager}}}}\n  template:\n    metadata: \
             {{labels: {{control-plane: controller-manager}}}}\n    spec:\n      containers:\n      - {{name: manager, \
             image: '{image}'}}\n"
        )
    };
    cluster.ok(&["apply", "-f", "-"], Some(&kueue_deployment("registry.k8s.io/kueue/kueue:v0.18.5")));
    let off_by_a_patch = "ok\nwarning: the config's kueue.version is v0.19.2, but Deployment \
                          kueue-system/kueue-controller-manager runs Kueue v0.18.5 (its image \
                          registry.k8s.io/kueue/kueue:v0.18.5)\n";
    eventually("the Deployment to contradict the release", || {
        contradicted(shared) == Some(1) && readyz(shared) == off_by_a_patch
    });
    cluster.ok(&["apply", "-f", "-"], Some(&kueue_deployment("registry.k8s.io/kueue/kueue:v0.19.2")));
    eventually("the Deployment to confirm the release", || {
        contradicted(shared) == Some(0) && confirmed(shared) == Some(1) && readyz(shared) == "ok\n"
    });

    let dir = cluster.plane.dir.join(unique("older-kueue"));
    std::fs::create_dir_all(&dir).unwrap();
    let shipped = std::fs::read_to_string(repo("manifests/base/config.yaml")).unwrap();
    let older = shipped.replacen("version: v0.19.2", "version: v0.14.8", 1);
    assert_ne!(older, shipped, "the shipped config names its Kueue release");
    std::fs::write(dir.join("config.yaml"), older).unwrap();
    let older_server = testkit::Serve::new(BIN, &cluster.webhook.cert, &cluster.webhook.key)
        .arg("--config")
        .arg(dir.join("config.yaml"))
        .env("KUBECONFIG", &cluster.plane.kubeconfig)
        .log(dir.join("server.log"))
        .ready(testkit::Ready::Readyz, Duration::from_secs(60), Duration::from_millis(100))
        .start()
        .unwrap();
    let admin_port = older_server.admin_addr().port();
    let by_deployment = "\nwarning: the config's kueue.version is v0.14.8, but Deployment \
                         kueue-system/kueue-controller-manager runs Kueue v0.19.2 (its image \
                         registry.k8s.io/kueue/kueue:v0.19.2)\n";
    eventually("the release to be found contradicted by the API and the Deployment", || {
        contradicted(admin_port) == Some(1) && readyz(admin_port).contains(by_deployment)
    });
    let readyz = readyz(admin_port);
    assert!(
        readyz.starts_with(
            "ok\nwarning: the config's kueue.version is v0.14.8, but the API server serves LocalQueue as \
                            kueue.x-k8s.io/v1beta2 and Cohort as v1beta2, as Kueue v0.15.0 or later does"
        ),
        "{readyz}"
    );
    let log = std::fs::read_to_string(dir.join("server.log")).unwrap();
    assert!(log.contains("the cluster runs another Kueue release than configured"), "{log}");
}

fn running_watchers(cluster: &Cluster) -> Option<i64> {
    let metrics = common::control_plane::http_get(cluster.webhook.admin_port, "/metrics")?;
    metrics.lines().find_map(|line| line.strip_prefix("eval_admission_watchers_running ")?.trim().parse().ok())
}

#[test]
fn an_owner_reference_switches_the_guards_off_only_when_the_owner_is_real() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let namespace = cluster.namespace("owners", Some("eval-queue"), &[("eval-queue", "team-a-cq")]);
    cluster.ok(&["create", "role", "jobs", "-n", &namespace, "--verb=*", "--resource=jobs"], None);
    cluster.ok(&["create", "rolebinding", "alice-jobs", "-n", &namespace, "--role=jobs", "--user=alice"], None);
    let owned_by = |name: &str, owner: &str, uid: &str| {
        evaluation(&namespace, name).owner("jobset.x-k8s.io/v1alpha2", "JobSet", owner, uid).json()
    };
    // A new evaluation claiming a JobSet that is not there is refused, with the way out.
    let stderr = cluster.refused(
        &["create", "-f", "-", "--as=alice"],
        Some(&owned_by("forged", "ghost", "5b0c1d2e-0000-4000-8000-00000000dead")),
    );
    assert!(stderr.contains("names JobSet 'ghost'") && stderr.contains("no such JobSet exists"), "{stderr}");
    assert!(stderr.contains("remove the ownerReference"), "{stderr}");

    // A real JobSet's Job, created the moment after it (the watch may not have it yet: one live GET does).
    let jobset = JobSetBuilder::aiperf_example()
        .namespace(&namespace)
        .name("real-owner")
        .clear_labels()
        .label("app", "not-an-evaluation")
        .without_owner();
    cluster.ok(&["create", "-f", "-"], Some(&jobset.json()));
    let uid = cluster.get("jobset", &namespace, "real-owner")["metadata"]["uid"].as_str().unwrap().to_string();
    cluster.ok(&["create", "-f", "-"], Some(&owned_by("child", "real-owner", &uid)));
    let child = cluster.get("job", &namespace, "child");
    assert!(child["metadata"]["labels"].get("kueue.x-k8s.io/queue-name").is_none(), "left to its JobSet: {child}");
    // The same reference with another uid is not that JobSet.
    let stderr = cluster.refused(&["create", "-f", "-"], Some(&owned_by("stale", "real-owner", "not-its-uid")));
    assert!(stderr.contains("names JobSet 'real-owner' (uid not-its-uid)"), "{stderr}");

    // alice's queued evaluation: adding that real JobSet as its owner unlocks no guard.
    cluster.ok(&["create", "-f", "-", "--as=alice"], Some(&evalhub_job(&namespace, "queued", &[], &[])));
    assert_eq!(cluster.get("job", &namespace, "queued")["spec"]["suspend"], true);
    let owner = json!({"metadata": {"ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "name": "real-owner", "uid": uid, "controller": true}]}});
    let mut unsuspend = owner.clone();
    unsuspend["spec"] = json!({"suspend": false});
    let patch = unsuspend.to_string();
    let stderr = cluster
        .refused(&["patch", "job", "queued", "-n", &namespace, "--as=alice", "--type=merge", "-p", &patch], None);
    assert!(stderr.contains("only Kueue"), "{stderr}");
    let mut unqueue = owner;
    unqueue["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": null});
    let patch = unqueue.to_string();
    let stderr = cluster
        .refused(&["patch", "job", "queued", "-n", &namespace, "--as=alice", "--type=merge", "-p", &patch], None);
    assert!(stderr.contains("would let this evaluation run outside Kueue"), "{stderr}");
    let queued = cluster.get("job", &namespace, "queued");
    assert_eq!((queued["spec"]["suspend"].clone(), queued["metadata"].get("ownerReferences")), (json!(true), None));
}

/// Puts the loopback registration back when a test replaced it.
struct Reregister<'a>(&'a Cluster);

impl Drop for Reregister<'_> {
    fn drop(&mut self) {
        self.0.webhook.register().unwrap();
    }
}

#[test]
fn every_overlay_applies_to_the_real_api_server_and_the_install_works_as_written() {
    let cluster = cluster();
    let _exclusive = DISRUPTION.write().unwrap_or_else(|p| p.into_inner());
    let crds = Command::new(repo("hack/deploy-crds.sh")).output().unwrap();
    assert!(crds.status.success(), "{}", String::from_utf8_lossy(&crds.stderr));
    let crds = String::from_utf8(crds.stdout).unwrap().trim().to_string();
    cluster.ok(&["apply", "--server-side", "-f", &crds], None);
    cluster.wait_established(&["-f", &crds]).unwrap();
    common::control_plane::static_certificates();

    // Server-side dry runs of namespaced objects need their namespace to exist.
    for namespace in ["eval-admission-system", "evals"] {
        let _ = cluster.kubectl(&["create", "namespace", namespace], None);
    }
    // Every install, and the example in another namespace: the real API
    // server's schemas (and the CRDs') validate each object.
    for overlay in [
        "manifests",
        "manifests/cert-manager",
        "manifests/static-certs",
        "manifests/openshift",
        "manifests/monitoring",
        "examples/another-namespace",
    ] {
        let printed = cluster.ok(&["apply", "-k", repo(overlay).to_str().unwrap(), "--dry-run=server"], None);
        assert!(printed.contains("(server dry run)"), "{overlay}: {printed}");
    }
    let rendered = cluster.ok(&["kustomize", repo("examples/another-namespace").to_str().unwrap()], None);
    assert!(!rendered.contains("eval-admission-system"), "another namespace leaves none of the default's behind");
    let cert_manager = cluster.ok(&["kustomize", repo("manifests/cert-manager").to_str().unwrap()], None);
    assert!(cert_manager.contains("cert-manager.io/inject-ca-from: eval-admission-system/eval-admission"));

    // The README's install command, for real; then the tests' own registration comes back.
    let _restore = Reregister(cluster);
    cluster.ok(&["apply", "-k", repo("manifests").to_str().unwrap()], None);
    let mutating: Value = serde_json::from_str(
        &cluster.ok(&["get", "mutatingwebhookconfiguration", "eval-admission-mutating", "-o", "json"], None),
    )
    .unwrap();
    assert_eq!(mutating["webhooks"][0]["clientConfig"]["service"]["name"], "eval-admission");
    let deployment = cluster.get("deployment", "eval-admission-system", "eval-admission");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].as_array().unwrap();
    assert!(args.contains(&json!("--tls-secret=eval-admission-tls")), "self-managed by default: {args:?}");
    for (resource, name) in
        [("poddisruptionbudget", "eval-admission"), ("networkpolicy", "eval-admission"), ("service", "eval-admission")]
    {
        cluster.ok(&["get", resource, name, "-n", "eval-admission-system"], None);
    }
    // The ServiceAccount may read exactly what the caches watch, and write nothing.
    let sa = "--as=system:serviceaccount:eval-admission-system:eval-admission";
    for (verb, resource, expected) in [
        ("watch", "localqueues.kueue.x-k8s.io", "yes"),
        ("list", "namespaces", "yes"),
        ("watch", "priorityclasses.scheduling.k8s.io", "yes"),
        ("watch", "limitranges", "yes"),
        ("watch", "runtimeclasses.node.k8s.io", "yes"),
        ("create", "jobs.batch", "no"),
        ("get", "secrets", "no"),
        ("update", "localqueues.kueue.x-k8s.io", "no"),
        ("patch", "mutatingwebhookconfigurations", "no"),
    ] {
        let output = cluster.kubectl(&["auth", "can-i", verb, resource, "-A", sa], None);
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), expected, "{verb} {resource}");
    }
    // The self-managed certificates: their Secret and the two configurations, by name.
    for (verb, resource, namespace, expected) in [
        ("update", "secrets/eval-admission-tls", "eval-admission-system", "yes"),
        ("update", "secrets/other", "eval-admission-system", "no"),
        ("get", "secrets/eval-admission-tls", "default", "no"),
        ("patch", "mutatingwebhookconfigurations/eval-admission-mutating", "default", "yes"),
        ("patch", "validatingwebhookconfigurations/eval-admission-validating", "default", "yes"),
        ("patch", "validatingwebhookconfigurations/kueue-validating-webhook-configuration", "default", "no"),
    ] {
        let output = cluster.kubectl(&["auth", "can-i", verb, resource, "-n", namespace, sa], None);
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), expected, "{verb} {resource} in {namespace}");
    }
}

/// The audit's gauges of a replica: `eval_admission_<name>`, when it answers.
fn replica_gauge(served: &testkit::Served, name: &str) -> Option<f64> {
    let metrics = common::control_plane::http_get(served.admin_port, "/metrics")?;
    metrics.lines().find_map(|line| line.strip_prefix(&format!("eval_admission_{name} "))?.trim().parse().ok())
}

/// Two audit replicas on one Lease: only the holder writes, and when it is
/// killed the other takes over within 20 s and writes no second Event for
/// what the first already reported.
#[test]
fn two_audit_replicas_write_through_the_lease_holder_alone_and_hand_over_when_it_dies() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let s = common::kueue_objects::unique();
    let dir = cluster.plane.dir.join(format!("audit-replicas-{s}"));
    std::fs::create_dir_all(&dir).unwrap();
    // Only these replicas call the test's Job an evaluation: the shared server ignores it.
    let config = dir.join("config.yaml");
    let selector =
        format!("selection: {{selectors: [{{name: handover, kinds: [Job], matchLabels: {{handover: '{s}'}}}}]}}\n");
    std::fs::write(&config, selector).unwrap();
    let (cert, key) = cluster.plane.ca.issue_files(&dir, "tls", testkit::Usage::Server(&["127.0.0.1"])).unwrap();
    let lease = format!("handover-{s}");
    let replica = |name: &str| {
        testkit::Serve::new(BIN, &cert, &key)
            .arg("--config")
            .arg(&config)
            .args(["--audit-lease", &lease, "--audit-identity", name, "--audit-debounce", "500ms"])
            .args(["--audit-lease-duration", "15s", "--shutdown-delay", "0s"])
            .env("KUBECONFIG", &cluster.kubeconfig)
            .log(dir.join(format!("{name}.log")))
            .ready(testkit::Ready::Readyz, Duration::from_secs(60), Duration::from_millis(100))
            .start()
            .unwrap()
    };
    let first = replica("first");
    wait_for("the first replica to hold the lease", Duration::from_secs(20), || {
        (replica_gauge(&first, "audit_leader") == Some(1.0)).then_some(())
    });
    let second = replica("second");

    let namespace = cluster.namespace("handover", None, &[]);
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "unqueued", "namespace": namespace, "labels": {"handover": s}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    });
    cluster.ok(&["create", "-f", "-"], Some(&job.to_string()));
    let events = || common::kueue_objects::audit_events(cluster, &namespace, "unqueued");
    let written = wait_for("the holder's Event", Duration::from_secs(20), || events().into_iter().next());
    assert_eq!(
        (written["reportingInstance"].as_str(), written["reason"].as_str()),
        (Some("first"), Some("BypassesKueue"))
    );
    assert_eq!(replica_gauge(&second, "audit_leader"), Some(0.0));
    assert_eq!(replica_gauge(&second, "audit_enabled"), Some(1.0), "its absent leader would be alerted on");
    assert_eq!(replica_gauge(&second, "audit_rounds_total"), Some(0.0), "the other replica judges nothing");

    let killed = std::time::Instant::now();
    drop(first);
    wait_for("the second replica to take the lease", Duration::from_secs(20), || {
        (replica_gauge(&second, "audit_leader") == Some(1.0)).then_some(())
    });
    let handover = killed.elapsed();
    wait_for("the new holder's first round", Duration::from_secs(20), || {
        replica_gauge(&second, "audit_rounds_total").filter(|rounds| *rounds >= 1.0)
    });
    let after = events();
    assert_eq!(after.len(), 1, "no second Event: {after:?}");
    assert_eq!(after[0]["reportingInstance"], "first");
    assert!(after[0]["series"].is_null(), "not written again: {}", after[0]);
    eprintln!("audit lease handed over {:.1} s after the holder was killed", handover.as_secs_f64());
}

/// The sum of every series of `eval_admission_<prefix>` a replica exports
/// whose line contains each of `labels`, when it answers.
fn replica_sum(served: &testkit::Served, prefix: &str, labels: &[&str]) -> Option<f64> {
    let metrics = common::control_plane::http_get(served.admin_port, "/metrics")?;
    let series = format!("eval_admission_{prefix}");
    let matching = metrics.lines().filter(|line| line.starts_with(&series) && labels.iter().all(|l| line.contains(l)));
    Some(matching.filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok()).sum())
}

/// Self-managed certificates (`--tls-secret`) on two replicas, one behind
/// each webhook of a copy of the shipped configurations: from nothing they
/// make the Secret, publish its authority and serve, so the API server's
/// TLS check passes; a rotation forced by deleting the Secret loses no create
/// and is made by one replica.
#[test]
fn self_managed_certificates_serve_from_nothing_and_a_forced_rotation_loses_no_create() {
    let cluster = cluster();
    let _shared = DISRUPTION.read().unwrap_or_else(|p| p.into_inner());
    let namespace = cluster.namespace("certs", Some("eval-queue"), &[("eval-queue", "team-a-cq")]);
    cluster.ok(&["label", "namespace", &namespace, "certs-test=self-managed"], None);
    let dir = cluster.plane.dir.join(&namespace);
    std::fs::create_dir_all(&dir).unwrap();
    let ports = [(); 2].map(|()| (testkit::free_port().unwrap(), testkit::free_port().unwrap()));
    // The shipped configurations, renamed, each webhook at one replica, for this namespace alone.
    let names = ["mutating", "validating"].map(|kind| format!("{namespace}-{kind}"));
    let mut configurations = cluster.webhook.registration().unwrap();
    for (configuration, (name, (port, _))) in configurations.iter_mut().zip(names.iter().zip(ports)) {
        configuration["metadata"]["name"] = json!(name);
        for webhook in configuration["webhooks"].as_array_mut().unwrap() {
            let url = webhook["clientConfig"]["url"].as_str().unwrap().to_string();
            let path = &url[url.rfind('/').unwrap()..];
            webhook["clientConfig"] = json!({"url": format!("https://127.0.0.1:{port}{path}")});
            webhook["namespaceSelector"] = json!({"matchLabels": {"certs-test": "self-managed"}});
        }
    }
    let configurations = configurations.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    cluster.ok(&["apply", "-f", "-"], Some(&configurations));
    let _unregister = Cleanup(|| {
        let _ = cluster.kubectl(&["delete", "mutatingwebhookconfiguration", &names[0]], None);
        let _ = cluster.kubectl(&["delete", "validatingwebhookconfiguration", &names[1]], None);
    });
    let replicas = ports.map(|(port, admin)| {
        testkit::Serve::self_managed(BIN, "webhook-tls")
            .args(["--namespace", &namespace, "--tls-extra-name", "127.0.0.1", "--tls-check-interval", "500ms"])
            .args(["--webhook-configuration", &names.join(","), "--audit-interval", "0s", "--shutdown-delay", "0s"])
            .arg("--config")
            .arg(repo("manifests/base/config.yaml"))
            .ports(port, admin)
            .env("KUBECONFIG", &cluster.kubeconfig)
            .log(dir.join(format!("replica-{port}.log")))
            .ready(testkit::Ready::Readyz, Duration::from_secs(60), Duration::from_millis(100))
            .start()
            .unwrap()
    });
    let secret = || cluster.get("secret", &namespace, "webhook-tls");
    let bundle_of = |kind: &str, name: &str| {
        let configuration: Value = serde_json::from_str(&cluster.ok(&["get", kind, name, "-o", "json"], None)).unwrap();
        configuration["webhooks"][0]["clientConfig"]["caBundle"].as_str().unwrap_or_default().to_string()
    };
    let first_authority = secret()["data"]["ca.crt"].as_str().unwrap().to_string();
    assert_eq!(bundle_of("mutatingwebhookconfiguration", &names[0]), first_authority);
    assert_eq!(bundle_of("validatingwebhookconfiguration", &names[1]), first_authority);
    let create = |name: &str| cluster.kubectl(&["create", "-f", "-"], Some(&evalhub_job(&namespace, name, &[], &[])));
    let output = create("first");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(cluster.get("job", &namespace, "first")["spec"]["suspend"], true);
    let bootstraps = || replicas.iter().map(|r| replica_sum(r, "tls_certificate_writes", &["bootstrap", "written"]));
    assert_eq!(bootstraps().map(Option::unwrap).sum::<f64>(), 1.0, "one replica made the first pair");
    assert_eq!(replica_gauge(&replicas[0], "audit_enabled"), Some(0.0), "--audit-interval 0s: the audit alert is off");

    // Forced rotation: creates go on while the Secret is made again.
    cluster.ok(&["delete", "secret", "webhook-tls", "-n", &namespace], None);
    let rotated = |replica: &testkit::Served| replica_sum(replica, "tls_certificate_reloads", &[]) >= Some(2.0);
    let mut failures = Vec::new();
    let mut creates = 0;
    let started = std::time::Instant::now();
    while !replicas.iter().all(rotated) {
        assert!(started.elapsed() < Duration::from_secs(90), "both replicas serve the new pair within 90 s");
        let output = create(&format!("during-{creates}"));
        creates += 1;
        if !output.status.success() {
            failures.push(String::from_utf8_lossy(&output.stderr).to_string());
        }
    }
    // And a few more once both serve the new pair.
    for after in 0..5 {
        let output = create(&format!("after-{after}"));
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    assert!(
        failures.is_empty(),
        "{} of {creates} creates failed during the rotation; the first: {}",
        failures.len(),
        failures[0]
    );
    assert_eq!(bootstraps().map(Option::unwrap).sum::<f64>(), 2.0, "one replica made the new pair");
    let trusted = secret()["data"]["ca.crt"].as_str().unwrap().to_string();
    assert_ne!(trusted, first_authority);
    assert_eq!(bundle_of("mutatingwebhookconfiguration", &names[0]), trusted);
    eprintln!("{creates} creates during the forced rotation ({:.1} s), none failed", started.elapsed().as_secs_f64());
}

/// Runs its closure when dropped.
struct Cleanup<F: FnMut()>(F);

impl<F: FnMut()> Drop for Cleanup<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}
