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
//! (f) runs Kueue v0.16.6 as the Red Hat build of Kueue installs it, in an
//! environment of its own.

#[path = "../common/mod.rs"]
mod common;
#[path = "../fidelity/oracle.rs"]
mod oracle;

// One module per claim. With `--test-threads 1` tests run in name order,
// which these names keep as it was: (a), (c), (b), (f), (d), (e); (g) the audit runs second.
mod admission;
mod audit;
mod preemption;
mod queue_defaulting;
mod red_hat;
mod unsuspend_guard;
mod verdicts;

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

fn wait_pending(cluster: &Cluster, namespace: &str, job: &str) {
    wait_for(&format!("Kueue to consider and hold {namespace}/{job}"), ADMISSION_WAIT, || {
        let workload = cluster.job_workload(namespace, job)?;
        condition(&workload, "QuotaReserved").filter(|(status, _)| status == "False").map(|_| ())
    });
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

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}
