//! End to end with the real Kueue controller manager (sigs.k8s.io/kueue v0.19.2,
//! built from its Go module by hack/build-kueue.sh) in front of the test API
//! server, next to eval-admission: what Kueue actually does with what
//! eval-admission lets through, and whether eval-admission's preemption model
//! (src/rules/priority.rs) matches Kueue's real preemption.
//!
//! The first test starts the test environment (tests/common/control_plane/):
//! a fresh control plane, eval-admission configured by
//! tests/kueue/eval-admission-config.yaml (Kueue's identity here is the client
//! certificate user `kueue-e2e-controller`), and Kueue with its own webhook
//! configurations registered; it all goes when the test binary exits. Run with
//! `--test-threads 1` (`make e2e-kueue` does): the tests change cluster-wide
//! things (webhook order, eval-admission's config). The tables of (c) and (e)
//! land in `$KUEUE_E2E_OUT` (default: the environment's folder). There is no kubelet and no
//! kube-controller-manager: admission shows as the Workload's QuotaReserved /
//! Admitted conditions and the Job's `spec.suspend` turning false; preemption as
//! the Workload's Evicted / Preempted conditions and `spec.suspend` back to true.
//!
//! (e) checks the in-process judge of tests/fidelity against this real
//! controller, on one set-up of each kind of disagreement the generator found.

mod common;
#[path = "fidelity/oracle.rs"]
mod oracle;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::control_plane::{Environment, KUEUE_USER, condition_true};
use common::kueue_objects::{
    self, deactivate_workload, flavor, local_queue, namespace, unique, workload_priority_class as priority_class,
};
use common::{BIN, repo};
use serde_json::{Value, json};
use testkit::{JobBuilder, wait_for};

const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
const PRIORITY_LABEL: &str = "kueue.x-k8s.io/priority-class";
const CHECKPOINTING: (&str, &str) = ("eval-admission.io/checkpointing", "true");
/// How long Kueue gets to preempt (or to show it will not).
const PREEMPTION_WAIT: Duration = Duration::from_secs(20);
/// How long Kueue gets to admit a workload that fits.
const ADMISSION_WAIT: Duration = Duration::from_secs(60);

/// The control plane with eval-admission and Kueue in front of it.
type Cluster = Environment;

/// The shared environment, started by whichever test comes first.
fn cluster() -> &'static Cluster {
    Environment::shared(|| {
        Environment::start(&[], Path::new(BIN), &repo("tests/kueue/eval-admission-config.yaml"), true)
    })
}

/// Where the tables of (c) and (e) go.
fn out_dir(cluster: &Cluster) -> PathBuf {
    let dir = std::env::var_os("KUEUE_E2E_OUT").map(PathBuf::from).unwrap_or_else(|| cluster.dir.clone());
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Cluster {
    fn apply(&self, objects: &[Value]) {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
        self.ok(&["apply", "-f", "-"], Some(&list.to_string()));
    }

    /// `kubectl create` as the admin; the object as the API server stored it at creation.
    fn create(&self, object: &Value) -> Value {
        serde_json::from_str(&self.ok(&["create", "-o", "json", "-f", "-"], Some(&object.to_string()))).unwrap()
    }

    fn suspended(&self, kind: &str, namespace: &str, name: &str) -> bool {
        self.get(kind, namespace, name)["spec"]["suspend"] == true
    }

    /// The Workload Kueue made for a Job or JobSet (found by ownerReference).
    fn workload(&self, namespace: &str, owner_kind: &str, owner: &str) -> Option<Value> {
        kueue_objects::workload(self, namespace, owner_kind, owner).unwrap()
    }

    fn job_workload(&self, namespace: &str, job: &str) -> Option<Value> {
        self.workload(namespace, "Job", job)
    }

    /// Everything eval-admission reads, as `review --cluster` takes it.
    fn state_file(&self, into: &Path) {
        std::fs::write(into, self.state("yaml").unwrap()).unwrap();
    }

    /// Restarts eval-admission with a policy config and re-registers it.
    fn webhook_up(&self, config: &Path) {
        self.webhook.up(Some(config)).unwrap();
    }
}

/// A condition's (status, reason) on a Kueue object.
fn condition(object: &Value, kind: &str) -> Option<(String, String)> {
    object["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind).map(|c| {
        (c["status"].as_str().unwrap_or_default().to_string(), c["reason"].as_str().unwrap_or_default().to_string())
    })
}

// ---------------------------------------------------------------- objects

/// A ClusterQueue open to every namespace, with `quota` (resource, nominal,
/// borrowingLimit) in one flavor.
fn cluster_queue(
    name: &str,
    flavor: &str,
    quota: &[(&str, &str, Option<&str>)],
    cohort: Option<&str>,
    preemption: Value,
) -> Value {
    let resources: Vec<Value> = quota
        .iter()
        .map(|(resource, nominal, limit)| {
            let mut r = json!({"name": resource, "nominalQuota": nominal});
            if let Some(limit) = limit {
                r["borrowingLimit"] = (*limit).into();
            }
            r
        })
        .collect();
    let covered: Vec<&str> = quota.iter().map(|(resource, _, _)| *resource).collect();
    let mut queue = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {
            // null would admit no namespace at all.
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": covered, "flavors": [{"name": flavor, "resources": resources}]}],
        },
    });
    if let Some(cohort) = cohort {
        queue["spec"]["cohortName"] = cohort.into();
    }
    if !preemption.is_null() {
        queue["spec"]["preemption"] = preemption;
    }
    queue
}

fn cohort(name: &str, parent: Option<&str>) -> Value {
    let mut cohort =
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name}, "spec": {}});
    if let Some(parent) = parent {
        cohort["spec"]["parentName"] = parent.into();
    }
    cohort
}

/// The shipped EvalHub Job (examples/evalhub-job.yaml, no queue label, no
/// suspend) in `namespace`, asking for `cpu` only: its adapter container keeps
/// a cpu request, the results sidecar goes, so the quotas here stay small.
fn evaluation(namespace: &str, name: &str, cpu: &str, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Value {
    JobBuilder::evalhub_example()
        .namespace(namespace)
        .name(name)
        .labels(labels)
        .annotations(annotations)
        .single_container()
        .requests(&[("cpu", cpu)])
        .build()
}

fn without_annotations(object: &Value) -> Value {
    let mut object = object.clone();
    object["metadata"].as_object_mut().unwrap().remove("annotations");
    object
}

/// Waits until Kueue has admitted the Job: Workload Admitted, `spec.suspend` false.
fn wait_admitted(cluster: &Cluster, namespace: &str, job: &str) -> Value {
    wait_for(&format!("Kueue to admit and start Job {namespace}/{job}"), ADMISSION_WAIT, || {
        let workload = cluster.job_workload(namespace, job)?;
        (condition_true(&workload, "Admitted") && !cluster.suspended("job", namespace, job)).then_some(workload)
    })
}

// ---------------------------------------------------------------- (a) queueing and admission

#[test]
fn kueue_admits_what_eval_admission_queued_and_holds_what_does_not_fit() {
    let cluster = cluster();
    let s = unique();
    let (rf, cq, ns) = (format!("rf-{s}"), format!("admit-{s}"), format!("admit-{s}"));
    cluster.apply(&[
        flavor(&rf),
        cluster_queue(&cq, &rf, &[("cpu", "1", None)], None, Value::Null),
        namespace(&ns, Some("eval-queue"), &[]),
        local_queue(&ns, "eval-queue", &cq),
    ]);

    // As EvalHub creates it: only the namespace annotation names a queue.
    let created = cluster.create(&evaluation(&ns, "first", "1", &[], &[]));
    assert_eq!(created["metadata"]["labels"][QUEUE_LABEL], "eval-queue", "eval-admission labelled it");
    assert_eq!(created["spec"]["suspend"], true, "stored suspended, before Kueue admitted anything");
    let workload = wait_admitted(cluster, &ns, "first");
    assert_eq!(workload["spec"]["queueName"], "eval-queue", "Kueue queued it where our label says");
    assert!(condition_true(&workload, "QuotaReserved"));
    assert_eq!(workload["status"]["admission"]["clusterQueue"], cq.as_str());

    // Beyond the quota: Kueue makes its Workload and keeps it pending, suspended.
    let second = cluster.create(&evaluation(&ns, "second", "1", &[], &[]));
    assert_eq!(second["spec"]["suspend"], true);
    wait_pending(cluster, &ns, "second");
    std::thread::sleep(Duration::from_secs(3));
    let pending = cluster.job_workload(&ns, "second").unwrap();
    assert_eq!(pending["spec"]["queueName"], "eval-queue");
    assert!(!condition_true(&pending, "QuotaReserved"), "over quota: {pending}");
    assert!(cluster.suspended("job", &ns, "second"), "Kueue keeps the second Job suspended");
    assert!(!cluster.suspended("job", &ns, "first"), "the first keeps running");

    // An AIPerf JobSet the same way: its operator reads no namespace annotation,
    // so it arrives without a label (the example, minus its AIPerfJob owner).
    let (big, benchmarks) = (format!("big-{s}"), format!("benchmarks-{s}"));
    cluster.apply(&[
        cluster_queue(&big, &rf, &[("cpu", "100", None), ("memory", "100Gi", None)], None, Value::Null),
        namespace(&benchmarks, Some("aiperf-queue"), &[]),
        local_queue(&benchmarks, "aiperf-queue", &big),
    ]);
    let mut jobset: Value =
        serde_yaml::from_str(&std::fs::read_to_string(repo("examples/aiperf-jobset.yaml")).unwrap()).unwrap();
    jobset["metadata"]["namespace"] = benchmarks.clone().into();
    jobset["metadata"].as_object_mut().unwrap().remove("ownerReferences");
    assert!(jobset["metadata"]["labels"].get(QUEUE_LABEL).is_none() && jobset["spec"].get("suspend").is_none());
    let created = cluster.create(&jobset);
    assert_eq!(created["metadata"]["labels"][QUEUE_LABEL], "aiperf-queue");
    assert_eq!(created["spec"]["suspend"], true, "eval-admission suspends a queued JobSet");
    let name = created["metadata"]["name"].as_str().unwrap().to_string();
    let workload = wait_for("Kueue to admit and start the JobSet", ADMISSION_WAIT, || {
        let workload = cluster.workload(&benchmarks, "JobSet", &name)?;
        (condition_true(&workload, "Admitted") && !cluster.suspended("jobset", &benchmarks, &name)).then_some(workload)
    });
    assert_eq!(workload["spec"]["queueName"], "aiperf-queue");
}

// ---------------------------------------------------------------- (b) webhook order

/// Puts eval-admission's mutating configuration back under its shipped name.
struct RestoreOrder<'a>(&'a Cluster);

impl Drop for RestoreOrder<'_> {
    fn drop(&mut self) {
        let _ = self.0.kubectl(&["delete", "mutatingwebhookconfiguration", "zz-eval-admission-mutating"], None);
        self.0.webhook.register().unwrap();
    }
}

/// The API server calls mutating configurations in name order:
/// eval-admission-mutating before kueue-mutating-webhook-configuration, so
/// Kueue's own defaulting sees the queue label we add from the namespace
/// annotation.
///
/// Suspension cannot show it (we suspend the Job ourselves), nor can the
/// Workload (Kueue's Job controller reads the stored Job, label and all,
/// whichever webhook ran first). What can: Kueue's Job defaulting
/// (jobframework.ApplyDefaultForManagedBy, called from JobWebhook.Default)
/// sets `spec.managedBy: kueue.x-k8s.io/multikueue` on a Job whose
/// queue-name label leads to a ClusterQueue with a MultiKueue admission check,
/// and it reads that label from the object it is handed. Nothing else sets
/// that field. So a Job that reaches the API server without a label but is
/// stored with `managedBy` was labelled before Kueue's webhook ran; and with
/// our configuration renamed to sort after Kueue's, the same Job is stored
/// labelled but without `managedBy`.
#[test]
fn kueues_defaulting_sees_our_label_because_our_configuration_sorts_first() {
    let cluster = cluster();
    let names = cluster.ok(&["get", "mutatingwebhookconfigurations", "-o", "name"], None);
    let names: Vec<&str> = names
        .lines()
        .map(|line| line.trim_start_matches("mutatingwebhookconfiguration.admissionregistration.k8s.io/"))
        .collect();
    let ours = names.iter().position(|n| *n == "eval-admission-mutating").expect("ours registered");
    let kueues = names.iter().position(|n| *n == "kueue-mutating-webhook-configuration").expect("Kueue's registered");
    assert!(ours < kueues, "name order: {names:?}");

    // MultiKueue is only the vehicle that makes Kueue's defaulting visible
    // (managedBy); its AdmissionCheck has no worker cluster here, so it is not
    // Active and eval-admission's validation rightly refuses these Jobs as never
    // admitted. This test is about the mutating order: validation is
    // unregistered for it and put back after.
    cluster.ok(&["delete", "validatingwebhookconfiguration", "eval-admission-validating"], None);
    let _revalidate = RestoreOrder(cluster);
    let s = unique();
    let (rf, cq, ns, check) = (format!("rf-{s}"), format!("mk-{s}"), format!("order-{s}"), format!("mk-{s}"));
    cluster.apply(&[
        flavor(&rf),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": check},
               "spec": {"controllerName": "kueue.x-k8s.io/multikueue"}}),
        {
            let mut queue = cluster_queue(&cq, &rf, &[("cpu", "1", None)], None, Value::Null);
            queue["spec"]["admissionChecksStrategy"] = json!({"admissionChecks": [{"name": check}]});
            queue
        },
        namespace(&ns, Some("mk-queue"), &[]),
        local_queue(&ns, "mk-queue", &cq),
    ]);
    // Kueue's webhook answers from its cache: wait until it knows the queue.
    let multikueue = Some("kueue.x-k8s.io/multikueue");
    let probe = |name: &str| {
        let printed: Value = serde_json::from_str(&cluster.ok(
            &["create", "--dry-run=server", "-o", "json", "-f", "-"],
            Some(&evaluation(&ns, name, "1", &[], &[]).to_string()),
        ))
        .unwrap();
        printed
    };
    wait_for("Kueue's cache to know LocalQueue mk-queue", ADMISSION_WAIT, || {
        (probe("probe")["spec"]["managedBy"].as_str() == multikueue).then_some(())
    });

    let stored = cluster.create(&evaluation(&ns, "in-order", "1", &[], &[]));
    assert_eq!(stored["metadata"]["labels"][QUEUE_LABEL], "mk-queue");
    assert_eq!(stored["spec"]["suspend"], true);
    assert_eq!(stored["spec"]["managedBy"].as_str(), multikueue, "Kueue's defaulting saw our label: {stored}");
    let workload = wait_for("Kueue's Workload", ADMISSION_WAIT, || cluster.job_workload(&ns, "in-order"));
    assert_eq!(workload["spec"]["queueName"], "mk-queue");

    // Not an evaluation: eval-admission leaves it alone, so Kueue sees no label and does nothing.
    let mut other = evaluation(&ns, "not-ours", "1", &[], &[]);
    other["metadata"]["labels"] = json!({"app": "web"});
    let stored = cluster.create(&other);
    assert!(stored["spec"].get("managedBy").is_none() && stored["spec"]["suspend"] != true, "{stored}");

    // Our configuration renamed to sort after Kueue's: the label arrives too late for Kueue's defaulting.
    let mut renamed: Value = serde_json::from_str(
        &cluster.ok(&["get", "mutatingwebhookconfiguration", "eval-admission-mutating", "-o", "json"], None),
    )
    .unwrap();
    let metadata = renamed["metadata"].as_object_mut().unwrap();
    metadata.retain(|key, _| key == "labels");
    metadata.insert("name".into(), "zz-eval-admission-mutating".into());
    let _restore = RestoreOrder(cluster);
    cluster.create(&renamed);
    cluster.ok(&["delete", "mutatingwebhookconfiguration", "eval-admission-mutating"], None);
    wait_for("the API server to call our configuration by its new name", ADMISSION_WAIT, || {
        let printed = probe("probe");
        let names = cluster.ok(&["get", "mutatingwebhookconfigurations", "-o", "name"], None);
        (printed["metadata"]["labels"][QUEUE_LABEL] == "mk-queue" && !names.contains("/eval-admission-mutating\n"))
            .then_some(())
    });
    let stored = cluster.create(&evaluation(&ns, "out-of-order", "1", &[], &[]));
    assert_eq!(stored["metadata"]["labels"][QUEUE_LABEL], "mk-queue", "still labelled, by us");
    assert_eq!(stored["spec"]["suspend"], true, "and suspended, by us");
    assert!(stored["spec"].get("managedBy").is_none(), "Kueue's defaulting ran before the label existed: {stored}");
}

// ---------------------------------------------------------------- (c) the preemption model

#[derive(Clone, Copy)]
enum Layout {
    /// One ClusterQueue with `nominal` cpu; every workload in it.
    Single { nominal: &'static str, within: Option<&'static str> },
    /// The low workload's ClusterQueue (`borrower`) and the preemptor's
    /// (`reclaimer`: cpu 1, preemption.reclaimWithinCohort `reclaim`) in one
    /// cohort. `tree`: the borrower sits in a child Cohort whose parentName is
    /// the root cohort the reclaimer is in.
    Cohort { borrower_nominal: &'static str, borrowing_limit: Option<&'static str>, reclaim: &'static str, tree: bool },
}

/// What happens before the preemptor gets its chance.
#[derive(Clone, Copy)]
enum Story {
    /// The low workload (priority 100) fills its quota, borrowing if
    /// `borrowing`; then the preemptor (priority 1000) is submitted.
    Plain { borrowing: bool },
    /// A blocker (priority 100, cpu 1) runs; the preemptor (priority 100, cpu 2)
    /// is submitted and waits; the low workload (priority 100, cpu 1) is
    /// submitted later and admitted; then the blocker is deactivated: the
    /// preemptor is the older of two equal-priority workloads.
    OlderEqualPriority,
    /// The low workload is admitted within its ClusterQueue's nominal quota;
    /// then a priority-500 workload in the same queue borrows; then the
    /// preemptor (priority 1000) is submitted to the reclaiming queue.
    BorrowedLater,
}

struct Case {
    setup: &'static str,
    layout: Layout,
    story: Story,
    low_cpu: &'static str,
    preemptor_cpu: &'static str,
}

/// (1)-(6) are the issue's table; (7)-(9) probe the model's finer claims.
const CASES: &[Case] = &[
    Case {
        setup: "(1) ClusterQueue without preemption, cpu 1",
        layout: Layout::Single { nominal: "1", within: None },
        story: Story::Plain { borrowing: false },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(2) withinClusterQueue LowerPriority, cpu 1",
        layout: Layout::Single { nominal: "1", within: Some("LowerPriority") },
        story: Story::Plain { borrowing: false },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(3) withinClusterQueue LowerOrNewerEqualPriority, cpu 1",
        layout: Layout::Single { nominal: "1", within: Some("LowerOrNewerEqualPriority") },
        story: Story::Plain { borrowing: false },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(4) cohort: low's CQ (cpu 0, no borrowingLimit) borrows 1 from a CQ (cpu 1) with reclaimWithinCohort Any",
        layout: Layout::Cohort { borrower_nominal: "0", borrowing_limit: None, reclaim: "Any", tree: false },
        story: Story::Plain { borrowing: true },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(5) cohort: low's CQ (cpu 1, borrowingLimit 0) beside a CQ (cpu 1) with reclaimWithinCohort Any; the preemptor needs cpu 2",
        layout: Layout::Cohort { borrower_nominal: "1", borrowing_limit: Some("0"), reclaim: "Any", tree: false },
        story: Story::Plain { borrowing: false },
        low_cpu: "1",
        preemptor_cpu: "2",
    },
    Case {
        setup: "(6) cohort tree: low's CQ (cpu 0) in a child Cohort (parentName root) borrows 1 from a CQ (cpu 1, reclaimWithinCohort Any) directly under the root",
        layout: Layout::Cohort { borrower_nominal: "0", borrowing_limit: None, reclaim: "Any", tree: true },
        story: Story::Plain { borrowing: true },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(7) withinClusterQueue LowerOrNewerEqualPriority, cpu 2: an older workload of EQUAL priority (100) waiting for cpu 2 when a blocker leaves",
        layout: Layout::Single { nominal: "2", within: Some("LowerOrNewerEqualPriority") },
        story: Story::OlderEqualPriority,
        low_cpu: "1",
        preemptor_cpu: "2",
    },
    Case {
        setup: "(8) as (4), with reclaimWithinCohort LowerPriority",
        layout: Layout::Cohort { borrower_nominal: "0", borrowing_limit: None, reclaim: "LowerPriority", tree: false },
        story: Story::Plain { borrowing: true },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(9) cohort: low admitted WITHIN its CQ's nominal cpu 1 (no borrowingLimit); later a priority-500 workload in the same CQ borrows; the preemptor goes to the CQ with reclaimWithinCohort Any",
        layout: Layout::Cohort { borrower_nominal: "1", borrowing_limit: None, reclaim: "Any", tree: false },
        story: Story::BorrowedLater,
        low_cpu: "1",
        preemptor_cpu: "1",
    },
];

struct Outcome {
    setup: &'static str,
    kueue_preempted: bool,
    /// What showed it: the Preempted condition's reason, or what happened instead.
    kueue_detail: String,
    verdict_preemptible: bool,
    verdict_detail: String,
}

struct Classes {
    low: String,
    mid: String,
    high: String,
}

/// Builds a case's objects; returns them with the ClusterQueues of the low
/// workload and of the preemptor.
fn case_objects(case: &Case, s: &str, rf: &str) -> (Vec<Value>, String, String) {
    match case.layout {
        Layout::Single { nominal, within } => {
            let cq = format!("single-{s}");
            let preemption = within.map_or(Value::Null, |policy| json!({"withinClusterQueue": policy}));
            (vec![cluster_queue(&cq, rf, &[("cpu", nominal, None)], None, preemption)], cq.clone(), cq)
        }
        Layout::Cohort { borrower_nominal, borrowing_limit, reclaim, tree } => {
            let (borrower, reclaimer) = (format!("borrower-{s}"), format!("reclaimer-{s}"));
            let (root, child) = (format!("root-{s}"), format!("team-{s}"));
            let mut objects = Vec::new();
            let borrower_cohort = if tree {
                objects.push(cohort(&root, None));
                objects.push(cohort(&child, Some(&root)));
                child
            } else {
                root.clone()
            };
            objects.push(cluster_queue(
                &borrower,
                rf,
                &[("cpu", borrower_nominal, borrowing_limit)],
                Some(&borrower_cohort),
                Value::Null,
            ));
            objects.push(cluster_queue(
                &reclaimer,
                rf,
                &[("cpu", "1", None)],
                Some(&root),
                json!({"reclaimWithinCohort": reclaim}),
            ));
            (objects, borrower, reclaimer)
        }
    }
}

/// The cpu a ClusterQueue has reserved beyond its nominal quota (status.flavorsReservation).
fn borrowed_cpu(cluster_queue: &Value) -> Option<String> {
    cluster_queue["status"]["flavorsReservation"].as_array()?.iter().find_map(|flavor| {
        flavor["resources"]
            .as_array()?
            .iter()
            .find(|r| r["name"] == "cpu")
            .and_then(|r| r["borrowed"].as_str())
            .map(String::from)
    })
}

fn wait_borrowing(cluster: &Cluster, cluster_queue: &str, cpu: &str) {
    wait_for(&format!("ClusterQueue {cluster_queue} to borrow cpu {cpu}"), ADMISSION_WAIT, || {
        let queue = cluster.get("clusterqueue.kueue.x-k8s.io", "", cluster_queue);
        (borrowed_cpu(&queue).as_deref() == Some(cpu)).then_some(())
    });
}

fn wait_pending(cluster: &Cluster, namespace: &str, job: &str) {
    wait_for(&format!("Kueue to consider and hold {namespace}/{job}"), ADMISSION_WAIT, || {
        let workload = cluster.job_workload(namespace, job)?;
        condition(&workload, "QuotaReserved").filter(|(status, _)| status == "False").map(|_| ())
    });
}

/// eval-admission's verdict on `job` as a user would submit it (without the
/// checkpointing annotation), against the cluster as it is: the offline
/// `review` on a dump of the objects it reads, and the running server by a
/// server-side dry run; they must agree. Returns (preemptible, why).
fn verdict(cluster: &Cluster, job: &Value, setup: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let (state, manifest) = (dir.path().join("cluster.yaml"), dir.path().join("job.json"));
    cluster.state_file(&state);
    let submitted = without_annotations(job);
    std::fs::write(&manifest, submitted.to_string()).unwrap();
    let output = Command::new(BIN)
        .arg("review")
        .arg("--cluster")
        .arg(&state)
        .arg("--config")
        .arg(repo("tests/kueue/eval-admission-config.yaml"))
        .arg(&manifest)
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("review printed no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    let response = &printed["validating"]["response"];
    let preemptible = response["allowed"] == false;
    let detail = if preemptible {
        assert_eq!(response["auditAnnotations"]["reason"], "preemptible", "{setup}: {response}");
        assert_eq!(output.status.code(), Some(1));
        let message = response["status"]["message"].as_str().unwrap_or_default();
        message.split(": via ").nth(1).and_then(|rest| rest.split(". To fix").next()).unwrap_or(message).to_string()
    } else {
        assert_eq!(output.status.code(), Some(0), "{setup}: {printed}");
        "allowed".to_string()
    };
    // The same Job under another name: the real one exists.
    let mut dry_run = submitted;
    dry_run["metadata"]["name"] = format!("{}-dry-run", job["metadata"]["name"].as_str().unwrap()).into();
    let live = cluster.kubectl(&["create", "--dry-run=server", "-f", "-"], Some(&dry_run.to_string()));
    let live_stderr = String::from_utf8_lossy(&live.stderr);
    assert_eq!(!live.status.success(), preemptible, "{setup}: the server and review disagree: {live_stderr}");
    if preemptible {
        assert!(live_stderr.contains("Kueue could preempt it"), "{live_stderr}");
    }
    (preemptible, detail)
}

/// Watches the low workload after the preemptor got its chance: preempted
/// (Preempted or Evicted condition, or its Job suspended again), or not within
/// PREEMPTION_WAIT while the preemptor has been considered and is still pending
/// (or got in some other way, which is reported).
fn watch(cluster: &Cluster, ns: &str, setup: &str) -> (bool, String) {
    let start = Instant::now();
    let mut considered = false;
    let preempted = || -> Option<String> {
        // The Job before the Workload: Kueue marks the Workload evicted before it
        // suspends the Job, so a suspended Job is seen with its Workload's reason.
        let suspended = cluster.suspended("job", ns, "low");
        let low = cluster.job_workload(ns, "low").expect("low's Workload");
        let preempted = condition(&low, "Preempted").filter(|(status, _)| status == "True");
        let evicted = condition(&low, "Evicted").filter(|(status, _)| status == "True");
        match (preempted, evicted) {
            (Some((_, reason)), _) => Some(format!("Preempted ({reason})")),
            (None, Some((_, reason))) => Some(format!("Evicted ({reason})")),
            (None, None) => suspended.then(|| "Job suspended again".to_string()),
        }
    };
    loop {
        if let Some(detail) = preempted() {
            return (true, detail);
        }
        if let Some(preemptor) = cluster.job_workload(ns, "preemptor") {
            if condition_true(&preemptor, "QuotaReserved") {
                // Re-check: low may have been preempted since.
                return match preempted() {
                    Some(detail) => (true, detail),
                    None => (false, "no: the preemptor was admitted without it".to_string()),
                };
            }
            considered |= condition(&preemptor, "QuotaReserved").is_some_and(|(status, _)| status == "False");
        }
        if start.elapsed() >= PREEMPTION_WAIT && considered {
            return (false, format!("no: the preemptor still pending after {}s", start.elapsed().as_secs()));
        }
        assert!(start.elapsed() < PREEMPTION_WAIT * 3, "{setup}: Kueue never considered the preemptor");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn run_case(cluster: &Cluster, case: &Case, index: usize, classes: &Classes) -> Outcome {
    let s = format!("{}{index}", unique());
    let rf = format!("rf-{s}");
    let (mut objects, low_cq, preemptor_cq) = case_objects(case, &s, &rf);
    let ns = format!("model{index}-{s}");
    objects.insert(0, flavor(&rf));
    objects.push(namespace(&ns, None, &[]));
    objects.push(local_queue(&ns, "low-queue", &low_cq));
    objects.push(local_queue(&ns, "preemptor-queue", &preemptor_cq));
    cluster.apply(&objects);

    // Every workload checkpoints, so eval-admission lets it in whatever its verdict.
    let job = |name: &str, cpu: &str, queue: &str, class: &str| {
        evaluation(&ns, name, cpu, &[(QUEUE_LABEL, queue), (PRIORITY_LABEL, class)], &[CHECKPOINTING])
    };
    let low = job("low", case.low_cpu, "low-queue", &classes.low);
    match case.story {
        Story::Plain { borrowing } => {
            cluster.create(&low);
            wait_admitted(cluster, &ns, "low");
            if borrowing {
                wait_borrowing(cluster, &low_cq, case.low_cpu);
            }
        }
        Story::OlderEqualPriority => {
            cluster.create(&job("blocker", "1", "low-queue", &classes.low));
            wait_admitted(cluster, &ns, "blocker");
            cluster.create(&job("preemptor", case.preemptor_cpu, "low-queue", &classes.low));
            wait_pending(cluster, &ns, "preemptor");
            // Creation timestamps have one-second resolution: make "older" unambiguous.
            std::thread::sleep(Duration::from_millis(1500));
            cluster.create(&low);
            wait_admitted(cluster, &ns, "low");
        }
        Story::BorrowedLater => {
            cluster.create(&low);
            wait_admitted(cluster, &ns, "low");
            cluster.create(&job("mid", "1", "low-queue", &classes.mid));
            wait_admitted(cluster, &ns, "mid");
            wait_borrowing(cluster, &low_cq, "1");
        }
    }

    let (verdict_preemptible, verdict_detail) = verdict(cluster, &low, case.setup);

    // The preemptor's chance.
    match case.story {
        Story::Plain { .. } | Story::BorrowedLater => {
            cluster.create(&job("preemptor", case.preemptor_cpu, "preemptor-queue", &classes.high));
        }
        Story::OlderEqualPriority => {
            let blocker = cluster.job_workload(&ns, "blocker").unwrap();
            let name = blocker["metadata"]["name"].as_str().unwrap();
            deactivate_workload(cluster, &ns, name).unwrap();
        }
    }
    let (kueue_preempted, kueue_detail) = watch(cluster, &ns, case.setup);
    if kueue_preempted {
        // The room went to the preemptor.
        wait_admitted(cluster, &ns, "preemptor");
        assert!(cluster.suspended("job", &ns, "low"), "{}: the preempted Job is suspended again", case.setup);
    } else {
        assert!(!cluster.suspended("job", &ns, "low"), "{}: low still running", case.setup);
    }
    Outcome { setup: case.setup, kueue_preempted, kueue_detail, verdict_preemptible, verdict_detail }
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

/// For each ClusterQueue / cohort set-up: does Kueue really preempt a
/// low-priority workload when a preemptor needs its room, and does
/// eval-admission call that workload preemptible? They must agree on every row.
#[test]
fn kueue_preempts_exactly_what_eval_admission_calls_preemptible() {
    let cluster = cluster();
    let s = unique();
    let classes = Classes { low: format!("low-{s}"), mid: format!("mid-{s}"), high: format!("high-{s}") };
    cluster.apply(&[
        priority_class(&classes.low, 100),
        priority_class(&classes.mid, 500),
        priority_class(&classes.high, 1000),
    ]);

    let outcomes: Vec<Outcome> =
        CASES.iter().enumerate().map(|(index, case)| run_case(cluster, case, index + 1, &classes)).collect();

    let mut table = String::from(
        "| set-up | Kueue preempted the low workload? | eval-admission verdict on it | agree? |\n|---|---|---|---|\n",
    );
    for outcome in &outcomes {
        let verdict = if outcome.verdict_preemptible {
            format!("preemptible: {}", outcome.verdict_detail)
        } else {
            "not preemptible (allowed)".to_string()
        };
        let kueue = if outcome.kueue_preempted {
            format!("yes: {}", outcome.kueue_detail)
        } else {
            outcome.kueue_detail.clone()
        };
        writeln!(
            table,
            "| {} | {} | {} | {} |",
            outcome.setup,
            kueue,
            verdict,
            yes_no(outcome.kueue_preempted == outcome.verdict_preemptible)
        )
        .unwrap();
    }
    println!("{table}");
    std::fs::write(out_dir(cluster).join("kueue-model.md"), &table).unwrap();
    for outcome in &outcomes {
        assert_eq!(
            outcome.verdict_preemptible,
            outcome.kueue_preempted,
            "MODEL DISAGREES WITH KUEUE on {}: Kueue preempted: {} ({}); eval-admission says preemptible: {} ({})\n{table}",
            outcome.setup,
            outcome.kueue_preempted,
            outcome.kueue_detail,
            outcome.verdict_preemptible,
            outcome.verdict_detail
        );
    }
}

// ---------------------------------------------------------------- (d) the unsuspend guard

/// Brings eval-admission back with the Kueue test config.
struct RestoreConfig<'a>(&'a Cluster);

impl Drop for RestoreConfig<'_> {
    fn drop(&mut self) {
        self.0.webhook_up(&repo("tests/kueue/eval-admission-config.yaml"));
    }
}

/// Kueue's unsuspend reaches eval-admission's validation (the shipped
/// matchConditions skip only the standard install's service account, not
/// `kueue-e2e-controller`) and passes because the config names Kueue's
/// identity; alice's does not. With the shipped default config (another
/// identity), Kueue's own unsuspend is refused and the admitted Job stays
/// suspended: kueueControllerUsernames must name the identity Kueue really runs as.
#[test]
fn only_kueue_may_unsuspend_a_queued_evaluation() {
    let cluster = cluster();
    let s = unique();
    let rf = format!("rf-{s}");
    let (open, spare) = (format!("open-{s}"), format!("spare-{s}"));
    let ns = format!("guard-{s}");
    cluster.apply(&[
        flavor(&rf),
        cluster_queue(&open, &rf, &[("cpu", "1", None)], None, Value::Null),
        cluster_queue(&spare, &rf, &[("cpu", "1", None)], None, Value::Null),
        namespace(&ns, None, &[]),
        local_queue(&ns, "open", &open),
        local_queue(&ns, "spare", &spare),
    ]);
    cluster.ok(&["create", "role", "jobs", "-n", &ns, "--verb=*", "--resource=jobs"], None);
    cluster.ok(&["create", "rolebinding", "alice-jobs", "-n", &ns, "--role=jobs", "--user=alice"], None);

    // Kueue admits and starts it: its UPDATE went through eval-admission and was allowed.
    cluster.create(&evaluation(&ns, "started", "1", &[(QUEUE_LABEL, "open")], &[]));
    wait_admitted(cluster, &ns, "started");
    let reviews = wait_for("eval-admission's log of Kueue's unsuspend", Duration::from_secs(10), || {
        let reviews: Vec<Value> = cluster
            .webhook
            .reviews("started")
            .into_iter()
            .filter(|r| r["webhook"] == "validate" && r["operation"] == "UPDATE" && r["user"] == KUEUE_USER)
            .collect();
        (!reviews.is_empty()).then_some(reviews)
    });
    assert!(reviews.iter().all(|r| r["decision"] == "allowed"), "{reviews:?}");

    // alice may edit Jobs, but not start a queued evaluation herself: this one
    // waits behind "started", which holds all of open's quota.
    let held = evaluation(&ns, "held", "1", &[(QUEUE_LABEL, "open")], &[]);
    cluster.ok(&["create", "-f", "-", "--as=alice"], Some(&held.to_string()));
    let stderr = cluster.refused(
        &["patch", "job", "held", "-n", &ns, "--as=alice", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#],
        None,
    );
    assert!(
        stderr.contains(&format!("only Kueue ({KUEUE_USER}) may set spec.suspend to false, and alice tried")),
        "{stderr}"
    );
    assert!(cluster.suspended("job", &ns, "held"));

    // The shipped default names the standard install's service account: Kueue
    // here (another identity) reserves quota but cannot start the Job.
    let _restore = RestoreConfig(cluster);
    cluster.webhook_up(&repo("manifests/base/config.yaml"));
    cluster.create(&evaluation(&ns, "stuck", "1", &[(QUEUE_LABEL, "spare")], &[]));
    let denied = wait_for("Kueue's refused unsuspend", ADMISSION_WAIT, || {
        cluster
            .webhook
            .reviews("stuck")
            .into_iter()
            .find(|r| r["operation"] == "UPDATE" && r["user"] == KUEUE_USER && r["decision"] == "denied")
    });
    assert_eq!(denied["reason"], "unsuspend-not-allowed", "{denied}");
    let workload = cluster.job_workload(&ns, "stuck").unwrap();
    assert!(condition_true(&workload, "QuotaReserved"), "Kueue reserved the quota: {workload}");
    assert!(cluster.suspended("job", &ns, "stuck"), "but could not start the Job");

    // With Kueue's identity configured again, Kueue starts it (an edit nudges its retry).
    drop(_restore);
    cluster.ok(&["annotate", "job", "stuck", "-n", &ns, "nudge=1"], None);
    wait_admitted(cluster, &ns, "stuck");
}

// ---------------------------------------------------------------- (e) the judge against the real Kueue

/// One kind of disagreement the generator found (docs/kueue-model.md), set up on
/// the real cluster.
struct JudgeRow {
    setup: &'static str,
    /// What the real Kueue did: admitted (and whether a probe-like preemptor
    /// then preempted it).
    kueue_admitted: bool,
    kueue_preempted: Option<bool>,
    kueue_detail: String,
    judge: oracle::KueueVerdict,
    eval_admission: String,
}

impl Cluster {
    /// Everything the judge reads.
    fn judge_objects(&self) -> Vec<Value> {
        let list: Value = serde_json::from_str(&self.state("json").unwrap()).unwrap();
        list["items"].as_array().unwrap().clone()
    }
}

/// Two ResourceFlavors under one node-label key, as the judge pins them.
fn pool_flavor(name: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name},
        "spec": {"nodeLabels": {"node-pool": name}}})
}

fn judge_row(
    cluster: &Cluster,
    judge: &mut oracle::Oracle,
    setup: &'static str,
    objects: Vec<Value>,
    ns: &str,
    low: Value,
    preemptor: Option<Value>,
) -> JudgeRow {
    cluster.apply(&objects);
    let verdict = Command::new(BIN)
        .arg("review")
        .arg("--cluster")
        .arg({
            let path = cluster.dir.join(format!("judge-{ns}.yaml"));
            cluster.state_file(&path);
            path
        })
        .arg("--config")
        .arg(repo("tests/kueue/eval-admission-config.yaml"))
        .arg({
            let path = cluster.dir.join(format!("judge-{ns}-job.json"));
            std::fs::write(&path, without_annotations(&low).to_string()).unwrap();
            path
        })
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&verdict.stdout).unwrap();
    let deciding = if printed["validating"].is_null() { &printed["mutating"] } else { &printed["validating"] };
    let eval_admission = deciding["response"]["auditAnnotations"]["reason"].as_str().unwrap_or_default().to_string();

    // Kueue alone decides on the real cluster: created as a plain Job (not
    // selected as an evaluation), since eval-admission would refuse some of these.
    let plain = |job: &Value| {
        let mut job = job.clone();
        for key in ["app", "component"] {
            job["metadata"]["labels"].as_object_mut().unwrap().remove(key);
        }
        job
    };
    let low = plain(&low);
    cluster.create(&low);
    let name = low["metadata"]["name"].as_str().unwrap();
    // Admitted, or considered and held.
    let admitted = wait_for(&format!("Kueue to decide on {ns}/{name}"), ADMISSION_WAIT, || {
        let workload = cluster.job_workload(ns, name)?;
        if condition_true(&workload, "Admitted") {
            return Some(true);
        }
        condition(&workload, "QuotaReserved").filter(|(status, _)| status == "False").map(|_| false)
    });
    let job = cluster.get("job", ns, name);
    let judged = judge.judge(setup, &cluster.judge_objects(), &job);
    let (kueue_preempted, kueue_detail) = match (admitted, preemptor) {
        (false, _) => {
            // Held: the message Kueue gives, and still held a while later.
            std::thread::sleep(PREEMPTION_WAIT / 4);
            let workload = cluster.job_workload(ns, name).unwrap();
            assert!(!condition_true(&workload, "QuotaReserved"), "{setup}: admitted after all");
            let message = workload["status"]["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "QuotaReserved"))
                .and_then(|c| c["message"].as_str())
                .unwrap_or_default()
                .to_string();
            (None, message)
        }
        (true, Some(preemptor)) => {
            cluster.create(&plain(&preemptor));
            let (preempted, detail) = watch(cluster, ns, setup);
            (Some(preempted), detail)
        }
        (true, None) => (None, "admitted".to_string()),
    };
    JudgeRow { setup, kueue_admitted: admitted, kueue_preempted, kueue_detail, judge: judged, eval_admission }
}

/// The in-process judge is fast; the real controller is the final word. For
/// each kind of disagreement the generator found, the real Kueue must do what
/// the judge says of the same objects, and eval-admission's verdict (of the
/// workload without its checkpointing annotation) must match the real Kueue.
#[test]
fn the_real_kueue_confirms_the_judge() {
    let cluster = cluster();
    let mut judge = oracle::Oracle::start(&oracle::build());
    let s = unique();
    let (low_class, high_class) = (format!("judge-low-{s}"), format!("judge-high-{s}"));
    cluster.apply(&[priority_class(&low_class, 100), priority_class(&high_class, 1000)]);
    let job = |ns: &str, name: &str, cpu: &str, queue: &str, labels: &[(&str, &str)]| {
        let mut all = vec![(QUEUE_LABEL, queue)];
        all.extend_from_slice(labels);
        evaluation(ns, name, cpu, &all, &[CHECKPOINTING])
    };
    let mut rows = Vec::new();

    // (J1) a ClusterQueue whose namespaceSelector does not select the namespace.
    let (ns, rf, cq) = (format!("judge1-{s}"), format!("judge-rf1-{s}"), format!("judge-sel-{s}"));
    let mut selective = cluster_queue(&cq, &rf, &[("cpu", "2", None)], None, Value::Null);
    selective["spec"]["namespaceSelector"] = json!({"matchLabels": {"team": "nobody"}});
    rows.push(judge_row(
        cluster,
        &mut judge,
        "(J1) the ClusterQueue's namespaceSelector does not select the namespace",
        vec![flavor(&rf), namespace(&ns, None, &[]), selective, local_queue(&ns, "q", &cq)],
        &ns,
        job(&ns, "low", "1", "q", &[(PRIORITY_LABEL, &low_class)]),
        None,
    ));

    // (J2) a preemptor naming system-cluster-critical (every cluster has it).
    let (ns, rf, cq) = (format!("judge2-{s}"), format!("judge-rf2-{s}"), format!("judge-sys-{s}"));
    let mut preemptor = job(&ns, "preemptor", "1", "q", &[]);
    preemptor["spec"]["template"]["spec"]["priorityClassName"] = "system-cluster-critical".into();
    rows.push(judge_row(
        cluster,
        &mut judge,
        "(J2) withinClusterQueue LowerPriority; the preemptor names PriorityClass system-cluster-critical",
        vec![
            flavor(&rf),
            namespace(&ns, None, &[]),
            cluster_queue(&cq, &rf, &[("cpu", "1", None)], None, json!({"withinClusterQueue": "LowerPriority"})),
            local_queue(&ns, "q", &cq),
        ],
        &ns,
        job(&ns, "low", "1", "q", &[(PRIORITY_LABEL, &high_class)]),
        Some(preemptor),
    ));

    // (J3) a reclaimer that covers only another flavor than the one the low workload borrows.
    let (ns, a, b) = (format!("judge3-{s}"), format!("judge-a-{s}"), format!("judge-b-{s}"));
    let (borrower, lender, reclaimer, root) = (
        format!("judge-borrower-{s}"),
        format!("judge-lender-{s}"),
        format!("judge-reclaimer-{s}"),
        format!("judge-root3-{s}"),
    );
    rows.push(judge_row(
        cluster,
        &mut judge,
        "(J3) cohort: low borrows flavor a; the reclaimer (Any) covers only flavor b",
        vec![
            pool_flavor(&a),
            pool_flavor(&b),
            namespace(&ns, None, &[]),
            cluster_queue(&borrower, &a, &[("cpu", "0", None)], Some(&root), Value::Null),
            cluster_queue(&lender, &a, &[("cpu", "1", None)], Some(&root), Value::Null),
            cluster_queue(&reclaimer, &b, &[("cpu", "1", None)], Some(&root), json!({"reclaimWithinCohort": "Any"})),
            local_queue(&ns, "q", &borrower),
            local_queue(&ns, "reclaim", &reclaimer),
        ],
        &ns,
        job(&ns, "low", "1", "q", &[(PRIORITY_LABEL, &low_class)]),
        Some(job(&ns, "preemptor", "2", "reclaim", &[(PRIORITY_LABEL, &high_class)])),
    ));

    // (J4) a cohort where no one lends: the low workload's queue never goes over nominal.
    let (ns, rf) = (format!("judge4-{s}"), format!("judge-rf4-{s}"));
    let (own, reclaimer, root) = (format!("judge-own-{s}"), format!("judge-nolend-{s}"), format!("judge-root4-{s}"));
    let mut no_lending =
        cluster_queue(&reclaimer, &rf, &[("cpu", "1", None)], Some(&root), json!({"reclaimWithinCohort": "Any"}));
    no_lending["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = 0.into();
    rows.push(judge_row(
        cluster,
        &mut judge,
        "(J4) cohort: low's queue (cpu 1, may borrow) beside a reclaimer (Any) with lendingLimit 0",
        vec![
            flavor(&rf),
            namespace(&ns, None, &[]),
            cluster_queue(&own, &rf, &[("cpu", "1", None)], Some(&root), Value::Null),
            no_lending,
            local_queue(&ns, "q", &own),
            local_queue(&ns, "reclaim", &reclaimer),
        ],
        &ns,
        job(&ns, "low", "1", "q", &[(PRIORITY_LABEL, &low_class)]),
        Some(job(&ns, "preemptor", "2", "reclaim", &[(PRIORITY_LABEL, &high_class)])),
    ));

    let mut table = String::from(
        "| set-up | the real Kueue | the judge | judge agrees? | eval-admission's verdict | eval-admission agrees? |\n\
         |---|---|---|---|---|---|\n",
    );
    for row in &rows {
        let kueue = match (row.kueue_admitted, row.kueue_preempted) {
            (false, _) => format!("never admitted: {}", row.kueue_detail),
            (true, Some(true)) => format!("admitted, then {}", row.kueue_detail),
            (true, Some(false)) => format!("admitted, not preempted ({})", row.kueue_detail),
            (true, None) => "admitted".to_string(),
        };
        let judged = match (row.judge.admissible, row.judge.exposed) {
            (false, _) => format!("never admitted: {}", row.judge.reason.as_deref().unwrap_or("")),
            (true, Some(true)) => format!(
                "exposed: {} ({})",
                row.judge.eviction_reason.as_deref().unwrap_or(""),
                row.judge.preemptor.as_deref().unwrap_or("")
            ),
            (true, _) => "admitted, never preempted".to_string(),
        };
        let agree = row.kueue_admitted == row.judge.admissible
            && row.kueue_preempted.is_none_or(|preempted| Some(preempted) == row.judge.exposed);
        writeln!(
            table,
            "| {} | {kueue} | {judged} | {} | {} | {} |",
            row.setup,
            yes_no(agree),
            row.eval_admission,
            yes_no(eval_admission_agrees(row))
        )
        .unwrap();
    }
    println!("{table}");
    std::fs::write(out_dir(cluster).join("judge-vs-kueue.md"), &table).unwrap();
    for row in &rows {
        assert_eq!(
            row.kueue_admitted, row.judge.admissible,
            "{}: the judge is wrong about admission\n{table}",
            row.setup
        );
        if let Some(preempted) = row.kueue_preempted {
            assert_eq!(
                Some(preempted),
                row.judge.exposed,
                "{}: the judge is wrong about preemption\n{table}",
                row.setup
            );
        }
        assert!(eval_admission_agrees(row), "{}: eval-admission disagrees with Kueue\n{table}", row.setup);
    }
}

/// eval-admission says what the real Kueue did: never admitted is a denial
/// claiming so, preempted is `preemptible`, admitted and kept is allowed.
fn eval_admission_agrees(row: &JudgeRow) -> bool {
    let reason = eval_admission::rules::Reason::from_label(&row.eval_admission);
    match (row.kueue_admitted, row.kueue_preempted) {
        (false, _) => reason.is_some_and(eval_admission::rules::Reason::claims_never_admitted),
        (true, Some(true)) => row.eval_admission == "preemptible",
        (true, _) => row.eval_admission == "checked",
    }
}
