//! End to end through the real EvalHub server (PyPI `eval-hub-server` 1.0.2,
//! tests/common/evalhub.rs): each scenario is submitted the way an EvalHub user
//! submits it, `POST /api/v1/evaluations/jobs` with `X-Tenant`/`X-User`, so the
//! batch/v1 Jobs are EvalHub's own; and each asserts what that user sees in
//! `GET /api/v1/evaluations/jobs/<id>` (state and message), next to what
//! eval-admission and the real Kueue (v0.19.2) did with the Job.
//!
//! The first test starts the shared environment (tests/common/control_plane/:
//! the API server, eval-admission with tests/kueue/eval-admission-config.yaml,
//! Kueue) and EvalHub in front of it; everything goes when the test binary exits.
//! Names are unique per test, so the tests share the cluster; run with
//! `--test-threads 1` (as `make e2e-kueue` runs kueue_e2e): one test restarts
//! eval-admission with another config.
//!
//! Every wait polls: EvalHub creates a benchmark's Job in a goroutine after it
//! answers the POST, and records a failed create on the job moments later.
//!
//! There is no kubelet: admission shows as the Workload's Admitted condition and
//! the Job's `spec.suspend` turning false. EvalHub learns a benchmark's progress
//! only from its pods' sidecar, so an admitted evaluation stays `pending` here.

mod common;
#[path = "common/evalhub.rs"]
mod evalhub;

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use common::control_plane::{Environment, condition_true, poll};
use common::kueue_objects::{
    self, cluster_queue, deactivate_workload, flavor, local_queue, unique, workload, workload_priority_class,
};
use common::{BIN, repo};
use evalhub::{EvalHub, Evaluation, JobView, KUBERNETES_USER, hardware_profile, kubernetes_jobs};
use serde_json::{Value, json};
use testkit::workload;
use testkit::{JobBuilder, wait_for};

const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
const PRIORITY_LABEL: &str = "kueue.x-k8s.io/priority-class";
/// How long Kueue gets to admit a workload that fits (a busy 2-core machine).
const ADMISSION_WAIT: Duration = Duration::from_secs(90);
/// How long EvalHub gets to create a Job or record its failure.
const EVALHUB_WAIT: Duration = Duration::from_secs(60);

/// The shared environment with real Kueue, and EvalHub against it.
fn setup() -> (&'static Environment, &'static EvalHub) {
    let cluster = Environment::shared(|| {
        Environment::start(&[], Path::new(BIN), &repo("tests/kueue/eval-admission-config.yaml"), true)
    });
    static EVALHUB: OnceLock<Result<EvalHub, String>> = OnceLock::new();
    let evalhub = EVALHUB
        .get_or_init(|| EvalHub::start(cluster).map_err(|error| format!("{error:#}")))
        .as_ref()
        .unwrap_or_else(|error| panic!("EvalHub did not start: {error}"));
    (cluster, evalhub)
}

// ---------------------------------------------------------------- objects

fn apply(cluster: &Environment, objects: &[Value]) {
    cluster.apply(objects, &[]).unwrap();
}

/// A tenant namespace as the EvalHub guide labels it, with the default-queue
/// annotation when given.
fn namespace(name: &str, default_queue: Option<&str>) -> Value {
    kueue_objects::namespace(name, default_queue, &[("evalhub.trustyai.opendatahub.io/tenant", "true")])
}

fn pod_priority_class(name: &str, value: i32) -> Value {
    json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value})
}

/// A plain Job (not an evaluation: eval-admission leaves it alone) in `queue`,
/// to hold `cpu` of the queue's quota.
fn blocker(namespace: &str, name: &str, queue: &str, cpu: &str) -> Value {
    let pod = workload::pod_spec("main", "registry.k8s.io/pause:3.10", Some(json!({"cpu": cpu})), None);
    JobBuilder::new(namespace, name).queue(queue).label("app", "blocker").pod(pod).build()
}

// ---------------------------------------------------------------- reading the cluster

/// The one Job EvalHub created for job `id`, once it exists.
fn wait_kubernetes_job(cluster: &Environment, evalhub: &EvalHub, tenant: &str, id: &str) -> Value {
    let mut jobs = poll(
        &format!("EvalHub to create the Job of {id} in {tenant}"),
        EVALHUB_WAIT,
        Duration::from_millis(250),
        || evalhub.check_running(),
        || kubernetes_jobs(cluster, tenant, id).ok().filter(|jobs| !jobs.is_empty()),
    )
    .unwrap_or_else(|error| panic!("{error:#}; EvalHub shows {:?}", evalhub.job(tenant, id).map(|v| v.raw)));
    assert_eq!(jobs.len(), 1, "one benchmark, one Job: {jobs:?}");
    jobs.remove(0)
}

fn job_name(job: &Value) -> String {
    job["metadata"]["name"].as_str().unwrap().to_string()
}

fn suspended(cluster: &Environment, namespace: &str, job: &str) -> bool {
    cluster.get("job", namespace, job)["spec"]["suspend"] == true
}

/// Waits until Kueue has admitted the Job: Workload Admitted, `spec.suspend` false.
fn wait_admitted(cluster: &Environment, namespace: &str, job: &str) -> Value {
    wait_for(&format!("Kueue to admit and start Job {namespace}/{job}"), ADMISSION_WAIT, || {
        let workload = workload(cluster, namespace, "Job", job).ok().flatten()?;
        (condition_true(&workload, "Admitted") && !suspended(cluster, namespace, job)).then_some(workload)
    })
}

/// eval-admission's review of EvalHub's CREATE of `name` by `webhook` (mutate, validate).
fn wait_create_review(cluster: &Environment, name: &str, webhook: &str) -> Value {
    wait_for(&format!("eval-admission's {webhook} review of {name}"), Duration::from_secs(20), || {
        cluster.webhook.reviews(name).into_iter().find(|r| r["webhook"] == webhook && r["operation"] == "CREATE")
    })
}

/// Waits until EvalHub shows job `id` failed, and checks that it failed the way
/// an admission denial does: the benchmark failed, no Job left behind, and the
/// denial (from eval-admission's validating webhook) in both messages.
fn wait_denied(cluster: &Environment, evalhub: &EvalHub, tenant: &str, id: &str) -> JobView {
    let view = evalhub
        .wait_job(tenant, id, "failed", EVALHUB_WAIT, |view| {
            view.state != "pending" || view.benchmark_status == "failed"
        })
        .unwrap();
    println!("EvalHub shows: {}", serde_json::to_string_pretty(&view.raw["status"]).unwrap());
    assert_eq!(view.state, "failed", "{:#}", view.raw);
    assert_eq!(view.benchmark_status, "failed", "{:#}", view.raw);
    assert_eq!(view.raw["status"]["benchmarks"][0]["error_message"]["message_code"], "evaluation_job_failed");
    for message in [&view.message, &view.benchmark_error] {
        assert!(message.contains("admission webhook"), "{message}");
        assert!(message.contains("eval-admission"), "the denial is eval-admission's: {message}");
        assert!(message.contains("denied the request"), "{message}");
        assert!(message.contains(&format!("Job {tenant}/")), "names the Job: {message}");
    }
    assert!(kubernetes_jobs(cluster, tenant, id).unwrap().is_empty(), "a denied create leaves no Job");
    view
}

fn assert_contains(message: &str, fragments: &[&str]) {
    for fragment in fragments {
        assert!(message.contains(fragment), "missing {fragment:?} in: {message}");
    }
}

/// A tenant namespace with one ClusterQueue (cpu `cpu`, `preemption`) and the
/// LocalQueues `queues` pointing to it; returns (namespace, ClusterQueue).
fn tenant(
    cluster: &Environment,
    prefix: &str,
    s: &str,
    default_queue: Option<&str>,
    queues: &[&str],
    cpu: &str,
    preemption: Value,
) -> (String, String) {
    let (ns, cq, rf) = (format!("{prefix}-{s}"), format!("{prefix}-{s}"), format!("rf-{prefix}-{s}"));
    let mut objects = vec![flavor(&rf), cluster_queue(&cq, &rf, cpu, preemption), namespace(&ns, default_queue)];
    objects.extend(queues.iter().map(|queue| local_queue(&ns, queue, &cq)));
    apply(cluster, &objects);
    (ns, cq)
}

// ---------------------------------------------------------------- (a) the namespace's default queue

/// The seed's set-up: the tenant namespace annotated
/// `kueue.x-k8s.io/default-queue-name: eval-queue`, the user submits with no
/// queue. EvalHub creates the Job with no queue label and no `spec.suspend`;
/// eval-admission labels it and stores it suspended; Kueue queues it (held behind
/// a blocker first, so the suspended Job is seen), then admits and starts it.
#[test]
fn a_default_queue_evaluation_is_queued_suspended_and_admitted() {
    let (cluster, evalhub) = setup();
    let s = unique();
    let (ns, cq) = tenant(cluster, "evalhub-default", &s, Some("eval-queue"), &["eval-queue"], "1", Value::Null);
    cluster.run(&["create", "-f", "-"], Some(&blocker(&ns, "blocker", "eval-queue", "1").to_string())).unwrap();
    let blocking = wait_admitted(cluster, &ns, "blocker");

    let id = evalhub.submit(&Evaluation::new(&ns, "standard-eval")).unwrap();
    let job = wait_kubernetes_job(cluster, evalhub, &ns, &id);
    let name = job_name(&job);
    let labels = &job["metadata"]["labels"];
    assert_eq!(labels["app"], "evalhub");
    assert_eq!(labels["component"], "evaluation-job");
    assert_eq!(labels["job_id"], id.as_str());
    assert_eq!(labels[QUEUE_LABEL], "eval-queue", "eval-admission labelled it from the namespace annotation");
    assert!(job["metadata"].get("ownerReferences").is_none(), "EvalHub sets no owner: {job}");
    let mutate = wait_create_review(cluster, &name, "mutate");
    assert_eq!(mutate["user"], KUBERNETES_USER, "EvalHub's own identity created it: {mutate}");
    assert_eq!((&mutate["decision"], &mutate["reason"]), (&json!("patched"), &json!("queued")), "{mutate}");

    // Kueue holds it behind the blocker: queued, suspended, pending.
    let pending = wait_for("Kueue to consider and hold the evaluation", ADMISSION_WAIT, || {
        let workload = workload(cluster, &ns, "Job", &name).ok().flatten()?;
        workload["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "QuotaReserved" && c["status"] == "False")
            .then_some(workload)
    });
    assert_eq!(pending["spec"]["queueName"], "eval-queue");
    assert!(suspended(cluster, &ns, &name), "stored suspended, and Kueue keeps it so");
    let view = evalhub.job(&ns, &id).unwrap();
    println!("EvalHub shows while queued: {}", serde_json::to_string_pretty(&view.raw["status"]).unwrap());
    assert_eq!((view.state.as_str(), view.message_code.as_str()), ("pending", "evaluation_job_created"));

    // The blocker leaves; Kueue admits and starts the evaluation.
    let blocker_workload = blocking["metadata"]["name"].as_str().unwrap();
    deactivate_workload(cluster, &ns, blocker_workload).unwrap();
    let admitted = wait_admitted(cluster, &ns, &name);
    assert_eq!(admitted["status"]["admission"]["clusterQueue"], cq.as_str());
    let view = evalhub.job(&ns, &id).unwrap();
    assert_eq!(view.state, "pending", "EvalHub still says pending (no pods here to report progress): {:#}", view.raw);
}

// ---------------------------------------------------------------- (b) an explicit queue

/// `queue: {kind: kueue, name: priority-queue}` in the request, in a namespace
/// whose default queue is another: EvalHub labels the Job itself, eval-admission
/// keeps that label and suspends it, Kueue admits it through that queue.
#[test]
fn an_explicit_queue_is_kept_and_admitted() {
    let (cluster, evalhub) = setup();
    let s = unique();
    let (ns, _) = tenant(cluster, "evalhub-explicit", &s, Some("eval-queue"), &["eval-queue"], "2", Value::Null);
    let (rf, explicit_cq) = (format!("rf-evalhub-explicit2-{s}"), format!("evalhub-explicit2-{s}"));
    apply(
        cluster,
        &[
            flavor(&rf),
            cluster_queue(&explicit_cq, &rf, "2", Value::Null),
            local_queue(&ns, "priority-queue", &explicit_cq),
        ],
    );

    let id = evalhub.submit(&Evaluation::new(&ns, "explicit-queue").queue("priority-queue")).unwrap();
    let job = wait_kubernetes_job(cluster, evalhub, &ns, &id);
    let name = job_name(&job);
    assert_eq!(job["metadata"]["labels"][QUEUE_LABEL], "priority-queue", "{job}");
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"][QUEUE_LABEL], "priority-queue",
        "EvalHub puts the queue label on the pod template too: {job}"
    );
    let mutate = wait_create_review(cluster, &name, "mutate");
    assert_eq!(mutate["decision"], "patched", "eval-admission suspended it: {mutate}");
    let admitted = wait_admitted(cluster, &ns, &name);
    assert_eq!(admitted["spec"]["queueName"], "priority-queue");
    assert_eq!(admitted["status"]["admission"]["clusterQueue"], explicit_cq.as_str());
    let view = evalhub.job(&ns, &id).unwrap();
    println!("EvalHub shows: {}", serde_json::to_string_pretty(&view.raw["status"]).unwrap());
    assert_eq!((view.state.as_str(), view.message_code.as_str()), ("pending", "evaluation_job_created"));
}

// ---------------------------------------------------------------- (c) a missing LocalQueue

/// A typo in `queue.name`: eval-admission denies the Job, EvalHub marks the
/// benchmark and the job failed with the denial, which names the missing
/// LocalQueue and the one that exists.
#[test]
fn a_missing_local_queue_fails_the_evaluation_with_the_denial() {
    let (cluster, evalhub) = setup();
    let s = unique();
    let (ns, _) = tenant(cluster, "evalhub-missing", &s, Some("eval-queue"), &["eval-queue"], "2", Value::Null);

    let id = evalhub.submit(&Evaluation::new(&ns, "typo").queue("eval-queu")).unwrap();
    let view = wait_denied(cluster, evalhub, &ns, &id);
    for message in [&view.message, &view.benchmark_error] {
        assert_contains(message, &["LocalQueue", "'eval-queu'", &format!("'{ns}'"), "eval-queue"]);
    }
    assert!(view.message.starts_with("Evaluation job is failed."), "{}", view.message);
    assert!(view.benchmark_error.starts_with(&format!("job {id} benchmark mmlu: ")), "{}", view.benchmark_error);
}

// ---------------------------------------------------------------- (d) a preemptible priority

/// A HardwareProfile with a low Kueue priority ('experimental', 100) and a
/// LocalQueue whose ClusterQueue preempts LowerPriority: Kueue could preempt the
/// evaluation, which cannot checkpoint, so eval-admission denies it and EvalHub
/// shows why. (The PriorityClass of the same name exists too: EvalHub also puts
/// the name in the pods' priorityClassName, see (f).)
#[test]
fn a_preemptible_priority_fails_the_evaluation_with_the_denial() {
    let (cluster, evalhub) = setup();
    let s = unique();
    let (ns, cq) = tenant(
        cluster,
        "evalhub-preempt",
        &s,
        None,
        &["shared-queue"],
        "2",
        json!({"withinClusterQueue": "LowerPriority"}),
    );
    let (class, profile) = (format!("experimental-{s}"), format!("experimental-{s}"));
    apply(
        cluster,
        &[
            workload_priority_class(&class, 100),
            pod_priority_class(&class, 100),
            hardware_profile(&profile, Some("shared-queue"), Some(&class)),
        ],
    );

    let id = evalhub.submit(&Evaluation::new(&ns, "experiment").hardware_profile(&profile)).unwrap();
    let view = wait_denied(cluster, evalhub, &ns, &id);
    for message in [&view.message, &view.benchmark_error] {
        assert_contains(message, &["preempt", &format!("ClusterQueue '{cq}'"), "WorkloadPriorityClass", &class]);
    }
}

// ---------------------------------------------------------------- (e) a missing priority class

/// A HardwareProfile naming a priority that exists nowhere: the Job's
/// WorkloadPriorityClass label names a missing class, Kueue would never create
/// its Workload, eval-admission denies it.
#[test]
fn a_missing_priority_class_fails_the_evaluation_with_the_denial() {
    let (cluster, evalhub) = setup();
    let s = unique();
    let (ns, _) = tenant(cluster, "evalhub-nopriority", &s, None, &["eval-queue"], "2", Value::Null);
    let (class, profile) = (format!("urgent-{s}"), format!("urgent-{s}"));
    apply(cluster, &[hardware_profile(&profile, Some("eval-queue"), Some(&class))]);

    let id = evalhub.submit(&Evaluation::new(&ns, "urgent").hardware_profile(&profile)).unwrap();
    let view = wait_denied(cluster, evalhub, &ns, &id);
    for message in [&view.message, &view.benchmark_error] {
        assert_contains(message, &[&format!("WorkloadPriorityClass '{class}'"), PRIORITY_LABEL]);
    }
}

// ---------------------------------------------------------------- (f) a HardwareProfile's Kueue priority

/// Issue 13, defect 1. A HardwareProfile with `kueue.priorityClass: routine` makes
/// EvalHub set BOTH label `kueue.x-k8s.io/priority-class: routine` and the pods'
/// `priorityClassName: routine`. In a cluster with WorkloadPriorityClasses only
/// (as the EvalHub guide sets up), the label wins: Kueue would create and admit
/// the Workload and hold its quota, and then the API server would refuse the
/// pods. The denial must say so and offer the platform team's way out: create
/// PriorityClass 'routine'. With that PriorityClass, EvalHub's next submission
/// goes through and Kueue admits it at the WorkloadPriorityClass's priority.
///
/// The denial names the true cause and the platform team's fix
/// (src/rules/priority.rs, `repeated_label`); the last assertions check it.
/// Before that rule, eval-admission said
/// "...names PriorityClass 'routine' in spec.template (priorityClassName), which
/// does not exist, so its pods would be refused by the API server while Kueue
/// holds quota for it. To fix: remove it.", a fix no EvalHub user can apply.
#[test]
fn a_hardware_profile_priority_names_the_missing_priority_class_and_the_way_out() {
    let (cluster, evalhub) = setup();
    let s = unique();
    let (ns, cq) = tenant(cluster, "evalhub-profile", &s, None, &["eval-queue"], "2", Value::Null);
    let (class, profile) = (format!("routine-{s}"), format!("routine-{s}"));
    apply(
        cluster,
        &[workload_priority_class(&class, 500), hardware_profile(&profile, Some("eval-queue"), Some(&class))],
    );

    let evaluation = Evaluation::new(&ns, "routine").hardware_profile(&profile);
    let id = evalhub.submit(&evaluation).unwrap();
    let denied = wait_denied(cluster, evalhub, &ns, &id);
    let denial = denied.benchmark_error.clone();

    // The way out, taken: the PriorityClass of that name. EvalHub's Job now
    // shows what the profile sets, and Kueue admits it at the label's priority.
    apply(cluster, &[pod_priority_class(&class, 500)]);
    let admitted_id = wait_for("eval-admission to see the new PriorityClass", EVALHUB_WAIT, || {
        let id = evalhub.submit(&evaluation).unwrap();
        let view = evalhub
            .wait_job(&ns, &id, "created or failed", EVALHUB_WAIT, |view| {
                view.state != "pending" || !kubernetes_jobs(cluster, &ns, &id).unwrap_or_default().is_empty()
            })
            .unwrap();
        (view.state == "pending").then_some(id)
    });
    let job = wait_kubernetes_job(cluster, evalhub, &ns, &admitted_id);
    let name = job_name(&job);
    assert_eq!(job["metadata"]["labels"][PRIORITY_LABEL], class.as_str(), "the label: {job}");
    assert_eq!(job["metadata"]["labels"][QUEUE_LABEL], "eval-queue", "the profile's queue: {job}");
    assert_eq!(job["spec"]["template"]["metadata"]["labels"][PRIORITY_LABEL], class.as_str(), "{job}");
    assert_eq!(job["spec"]["template"]["spec"]["priorityClassName"], class.as_str(), "and the pods' class: {job}");
    let admitted = wait_admitted(cluster, &ns, &name);
    assert_eq!(admitted["spec"]["priorityClassRef"]["kind"], "WorkloadPriorityClass", "the label wins: {admitted}");
    assert_eq!(admitted["spec"]["priority"], 500);
    assert_eq!(admitted["status"]["admission"]["clusterQueue"], cq.as_str());

    // What the user saw before the PriorityClass existed.
    for message in [&denied.message, &denial] {
        assert_contains(message, &[&format!("PriorityClass '{class}'"), "priorityClassName"]);
        // The true cause,
        // not "never create its Workload" ...
        assert!(!message.contains("never create its Workload"), "the label wins, Kueue creates it: {message}");
        // ... and the platform team's way out.
        assert!(
            message.contains(&format!("create PriorityClass '{class}'"))
                || message.contains(&format!("create the PriorityClass '{class}'")),
            "offers creating PriorityClass '{class}': {message}"
        );
    }
}

// ---------------------------------------------------------------- warnings

/// No queue anywhere (no label, no annotation, no LocalQueue `default`):
/// eval-admission allows the Job with its bypass warning. The Job runs outside
/// Kueue, unsuspended; the EvalHub user sees only "pending": the warning reaches
/// EvalHub's server log (client-go) and nothing the user can read.
#[test]
fn the_bypass_warning_reaches_only_evalhubs_server_log() {
    let (cluster, evalhub) = setup();
    let s = unique();
    let ns = format!("evalhub-noqueue-{s}");
    apply(cluster, &[namespace(&ns, None)]);

    let id = evalhub.submit(&Evaluation::new(&ns, "no-queue")).unwrap();
    let job = wait_kubernetes_job(cluster, evalhub, &ns, &id);
    let name = job_name(&job);
    assert!(job["metadata"]["labels"].get(QUEUE_LABEL).is_none(), "{job}");
    assert_ne!(job["spec"]["suspend"], true, "it runs outside Kueue: {job}");
    let mutate = wait_create_review(cluster, &name, "mutate");
    assert_eq!(mutate["warnings"], 1, "eval-admission warned: {mutate}");

    let warning = format!("namespace '{ns}' has no default queue");
    let logged = wait_for("the warning in EvalHub's log", Duration::from_secs(20), || {
        evalhub.log_text().lines().find(|line| line.contains(&warning)).map(String::from)
    });
    println!("EvalHub's server log: {logged}");
    assert!(logged.contains("Warning:"), "{logged}");
    let view = evalhub.job(&ns, &id).unwrap();
    println!("EvalHub shows: {}", serde_json::to_string_pretty(&view.raw["status"]).unwrap());
    assert_eq!((view.state.as_str(), view.message_code.as_str()), ("pending", "evaluation_job_created"));
    let shown = view.raw.to_string();
    assert!(!shown.contains("bypasses") && !shown.contains(&warning), "the user sees no warning: {shown}");
}

/// Puts back the environment's eval-admission config (tests/kueue/eval-admission-config.yaml).
struct RestoreConfig<'a>(&'a Environment);

impl Drop for RestoreConfig<'_> {
    fn drop(&mut self) {
        if let Err(error) = self.0.webhook.up(Some(&repo("tests/kueue/eval-admission-config.yaml"))) {
            eprintln!("could not restore eval-admission's config: {error:#}");
        }
    }
}

/// Since warnings never reach EvalHub's users, a platform team that wants no
/// evaluation outside Kueue sets `enforcement: {bypasses-kueue: Deny}` (issue 13,
/// defect 2): the same submission then fails, and the EvalHub user reads why and
/// what to do. (Restarts eval-admission: hence `--test-threads 1`.)
#[test]
fn with_the_bypass_denied_a_queueless_evaluation_fails_with_the_denial() {
    let (cluster, evalhub) = setup();
    let mut config: Value =
        serde_yaml::from_str(&std::fs::read_to_string(repo("tests/kueue/eval-admission-config.yaml")).unwrap())
            .unwrap();
    config["enforcement"] = json!({"bypasses-kueue": "Deny"});
    let path = cluster.dir.join("eval-admission-deny-bypass.yaml");
    std::fs::write(&path, serde_yaml::to_string(&config).unwrap()).unwrap();
    let _restore = RestoreConfig(cluster);
    cluster.webhook.up(Some(&path)).unwrap();

    let s = unique();
    let ns = format!("evalhub-denybypass-{s}");
    apply(cluster, &[namespace(&ns, None)]);
    let id = evalhub.submit(&Evaluation::new(&ns, "no-queue")).unwrap();
    let view = wait_denied(cluster, evalhub, &ns, &id);
    for message in [&view.message, &view.benchmark_error] {
        assert_contains(message, &["bypass", QUEUE_LABEL, &format!("'{ns}'"), "queue.name"]);
    }
}

// ---------------------------------------------------------------- (i) the audit

/// An evaluation EvalHub created, queued behind a blocker, whose ClusterQueue
/// then stops selecting the namespace: the audit puts a Warning Event on the
/// Job within 30 s. What the EvalHub user sees, observed: EvalHub's job view
/// does not change (it reads the Job's pods, not its Events).
#[test]
fn an_audit_finding_on_a_queued_evaluation_is_an_event_on_its_job() {
    let (cluster, evalhub) = setup();
    let s = unique();
    let (ns, cq) = tenant(cluster, "evalhub-audit", &s, Some("eval-queue"), &["eval-queue"], "1", Value::Null);
    cluster.run(&["create", "-f", "-"], Some(&blocker(&ns, "blocker", "eval-queue", "1").to_string())).unwrap();
    wait_admitted(cluster, &ns, "blocker");
    let id = evalhub.submit(&Evaluation::new(&ns, "audited")).unwrap();
    let name = job_name(&wait_kubernetes_job(cluster, evalhub, &ns, &id));
    wait_for("Kueue to hold the evaluation", ADMISSION_WAIT, || {
        let workload = workload(cluster, &ns, "Job", &name).ok().flatten()?;
        let mut conditions = workload["status"]["conditions"].as_array()?.iter();
        conditions.any(|c| c["type"] == "QuotaReserved" && c["status"] == "False").then_some(())
    });
    let before = evalhub.job(&ns, &id).unwrap();

    let narrowed = r#"{"spec":{"namespaceSelector":{"matchLabels":{"nobody":"here"}}}}"#;
    cluster.run(&["patch", "clusterqueue.kueue.x-k8s.io", &cq, "--type=merge", "-p", narrowed], None).unwrap();
    let event = wait_for("the audit's Event on EvalHub's Job", Duration::from_secs(30), || {
        kueue_objects::audit_events(cluster, &ns, &name).into_iter().next()
    });
    assert_eq!(event["reason"], "NamespaceNotSelected");
    let note = event["note"].as_str().unwrap();
    // No other LocalQueue in the namespace would admit it: no way out, so no submitters' hint.
    let expected =
        format!("Job {ns}/{name} would stay suspended forever: LocalQueue 'eval-queue' feeds ClusterQueue '{cq}'");
    assert!(note.starts_with(&expected), "{note}");
    let after = evalhub.job(&ns, &id).unwrap();
    println!(
        "EvalHub shows after the audit's finding: {}",
        serde_json::to_string_pretty(&after.raw["status"]).unwrap()
    );
    assert_eq!((after.state.as_str(), after.message_code.as_str()), ("pending", "evaluation_job_created"));
    assert_eq!(after.raw["status"], before.raw["status"], "EvalHub's view is unchanged");
    assert!(!after.raw.to_string().contains("namespaceSelector"), "the finding is not in EvalHub's view");
}
