//! End to end through the real AIPerf operator (PyPI `aiperf` 0.13.0, see
//! tests/common/aiperf.rs): AIPerfJobs submitted the way an AIPerf user submits
//! them, JobSets made by the operator itself, eval-admission and the real Kueue
//! v0.19.2 controller in front of the test API server; asserting what the AIPerf
//! user sees: the AIPerfJob's `status.phase`, `status.error`, conditions and events.
//!
//! The environment (tests/common/control_plane/) is shared by the tests of this
//! binary; each test makes its own namespaces and starts its own operator
//! watching only them (so one can carry the chart's default-queue setting).
//! There is no kubelet and no JobSet controller: admission shows as the JobSet's
//! `spec.suspend` turning false and its Workload's Admitted condition. Run with
//! `--test-threads 1` (`make e2e-clients` does).
//!
//! What the operator does with a denial (aiperf/operator/handlers/create.py):
//! its preflight dry-runs the JobSet server-side; a refusal fails the preflight
//! and the handler raises kopf.PermanentError, so the job is `Failed` once, with
//! eval-admission's message in `status.error` and a `PreflightFailed` event, and
//! the JobSet is never created nor retried. Message assertions check the parts
//! that matter here (names, kinds, the AIPerf users' hint); the exact words are
//! pinned by the unit tests and the README test.

#[path = "common/aiperf.rs"]
mod aiperf;
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use aiperf::{Job, Operator, Settings};
use common::control_plane::{Environment, condition_true, poll};
use common::kueue_objects::{
    self as kueue_objects, cluster_queue, local_queue, namespace, unique, workload, workload_priority_class,
};
use common::{BIN, repo};
use serde_json::{Value, json};

const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
const PRIORITY_LABEL: &str = "kueue.x-k8s.io/priority-class";
/// How long a step of the operator or of Kueue gets (a busy 2-core machine).
const WAIT: Duration = Duration::from_secs(120);
/// Longer than the operator's create-retry delay as configured here (5 s): a
/// retry would show within it.
const NO_RETRY_WATCH: Duration = Duration::from_secs(15);

/// The flavor and ClusterQueues every test shares.
const FLAVOR: &str = "aiperf-flavor";
/// No preemption (the guides' best practice for evaluations); room for many jobs.
const CQ: &str = "aiperf-cq";
/// Room for one AIPerf job (3.8 CPU, 7.75 GiB requested), not two.
const SMALL_CQ: &str = "aiperf-small-cq";
/// Preemption within the ClusterQueue by priority.
const PREEMPT_CQ: &str = "aiperf-preempt-cq";

fn environment() -> &'static Environment {
    Environment::shared(|| {
        let env = Environment::start(&[], Path::new(BIN), &repo("tests/kueue/eval-admission-config.yaml"), true)?;
        let queue = |name: &str, cpu: &str, memory: &str, preemption: Value| {
            let mut queue = json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": FLAVOR, "resources": [
                        {"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory}]}]}],
                },
            });
            if !preemption.is_null() {
                queue["spec"]["preemption"] = preemption;
            }
            queue
        };
        env.apply(
            &[
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}),
                queue(CQ, "64", "256Gi", Value::Null),
                queue(SMALL_CQ, "6", "12Gi", Value::Null),
                queue(PREEMPT_CQ, "64", "256Gi", json!({"withinClusterQueue": "LowerPriority"})),
                workload_priority_class("aiperf-high", 1000),
                workload_priority_class("aiperf-low", 100),
            ],
            &[],
        )?;
        aiperf::install(&env)?;
        Ok(env)
    })
}

fn wait_for<T>(what: &str, operator: &Operator, check: impl FnMut() -> Option<T>) -> T {
    poll(what, WAIT, Duration::from_millis(250), || operator.check_running(), check)
        .unwrap_or_else(|error| panic!("{error:#}\noperator log: {}", operator.log.display()))
}

/// Waits until Kueue has admitted the job's JobSet: Workload Admitted, `spec.suspend` false.
fn wait_admitted(env: &Environment, operator: &Operator, job: &Job) -> Value {
    wait_for(&format!("Kueue to admit JobSet {}/{}", job.namespace, job.jobset()), operator, || {
        let workload = workload(env, &job.namespace, "JobSet", &job.jobset()).ok().flatten()?;
        let jobset = operator.jobset(job)?;
        (condition_true(&workload, "Admitted") && jobset["spec"]["suspend"] == false).then_some(workload)
    })
}

/// The warnings the API server returns for creating this JobSet again (a
/// server-side dry run of a copy): what eval-admission told the operator's
/// client when it created the original.
fn admission_warnings(env: &Environment, jobset: &Value) -> Vec<String> {
    let mut copy = jobset.clone();
    let metadata = copy["metadata"].as_object_mut().unwrap();
    for field in ["uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "ownerReferences"] {
        metadata.remove(field);
    }
    copy["metadata"]["name"] = format!("{}-probe", jobset["metadata"]["name"].as_str().unwrap()).into();
    copy.as_object_mut().unwrap().remove("status");
    let output = env.kubectl(&["create", "--dry-run=server", "-o", "name", "-f", "-"], Some(&copy.to_string()));
    assert!(output.status.success(), "dry run of {copy}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter_map(|line| line.strip_prefix("Warning: "))
        .map(str::to_string)
        .collect()
}

/// Everything an AIPerf user can read about the job: its status, its events
/// (`kubectl describe`), and the operator's log (for the admin).
fn everything_visible(operator: &Operator, job: &Job) -> String {
    let view = operator.view(job).map(|view| view.raw["status"].to_string()).unwrap_or_default();
    let events: Vec<String> =
        operator.events(job).iter().map(|event| event["message"].as_str().unwrap_or_default().to_string()).collect();
    format!("{view}\n{}\n{}", events.join("\n"), operator.log_text())
}

/// Asserts the denial as the AIPerf user sees it, and that nothing retries it.
/// Returns `status.error`.
fn assert_denied(env: &Environment, operator: &Operator, job: &Job, fragments: &[&str]) -> String {
    let started = Instant::now();
    let view = operator.wait_phase(job, &["Failed", "Pending", "Queued"], WAIT).unwrap();
    assert_eq!(view.phase, "Failed", "the operator should have failed it: {}", view.raw["status"]);
    eprintln!("{}/{}: Failed after {:?}", job.namespace, job.name, started.elapsed());
    let error = view.error.clone().expect("status.error");
    eprintln!("status: {}", serde_json::to_string_pretty(&view.raw["status"]).unwrap());
    assert!(error.starts_with("Pre-flight failed: "), "{error}");
    assert!(error.contains("Dry Run: Server dry-run rejected JobSet"), "{error}");
    assert!(error.contains("denied the request"), "{error}");
    assert!(error.contains(&format!("{}/{}", job.namespace, job.jobset())), "names the JobSet: {error}");
    for fragment in fragments {
        assert!(error.contains(fragment), "status.error lacks {fragment:?}: {error}");
    }
    let preflight = view.condition("PreflightPassed").expect("PreflightPassed condition");
    assert_eq!(preflight["status"], "False");
    assert_eq!(preflight["reason"], "PreflightFailed");
    assert!(view.condition("Failed").is_some_and(|c| c["status"] == "True"), "{}", view.raw["status"]);

    let events = wait_for("the PreflightFailed event", operator, || {
        let events = operator.events_with_reason(job, "PreflightFailed");
        (!events.is_empty()).then_some(events)
    });
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "Warning");
    let message = events[0]["message"].as_str().unwrap();
    eprintln!("event PreflightFailed: {message}");
    assert!(message.starts_with("Pre-flight checks failed: "), "{message}");
    for fragment in fragments {
        assert!(message.contains(fragment), "the event lacks {fragment:?}: {message}");
    }
    assert!(operator.jobset(job).is_none(), "no JobSet after a failed preflight");

    // No retry: the dry run is not repeated, the JobSet never created, the
    // event not repeated, the phase stays Failed.
    let dry_runs = |env: &Environment| env.webhook.reviews(&job.jobset()).len();
    let before = dry_runs(env);
    assert!(before >= 1, "eval-admission saw the dry run");
    assert!(env.webhook.reviews(&job.jobset()).iter().all(|review| review["dry_run"] == true));
    std::thread::sleep(NO_RETRY_WATCH);
    operator.check_running().unwrap();
    assert_eq!(dry_runs(env), before, "the operator retried: {:?}", env.webhook.reviews(&job.jobset()));
    assert!(operator.jobset(job).is_none());
    let after = operator.view(job).unwrap();
    assert_eq!(after.phase, "Failed");
    let events = operator.events_with_reason(job, "PreflightFailed");
    assert_eq!(events.len(), 1);
    assert!(events[0]["count"].as_i64().unwrap_or(1) <= 1, "{events:?}");
    assert!(
        operator
            .log_text()
            .contains(&format!("[{}/{}] Handler 'on_create' failed permanently", job.namespace, job.name))
    );
    error
}

// ---------------------------------------------------------------- (a) the namespace default queue

/// AIPerf never reads the namespace annotation (its JobSet has no queue label
/// and is not suspended); eval-admission adds both from the annotation, and
/// Kueue admits the JobSet.
#[test]
fn namespace_default_queue_is_applied_and_kueue_admits() {
    let env = environment();
    let ns = format!("aiperf-a-{}", unique());
    env.apply(&[namespace(&ns, Some("aiperf-queue"), &[]), local_queue(&ns, "aiperf-queue", CQ)], &[]).unwrap();
    let operator = Operator::start(env, &ns, &[&ns], &Settings::default()).unwrap();
    let job = Job::new(&ns, "latency");
    let started = Instant::now();
    operator.submit(&job).unwrap();

    let jobset = wait_for("the operator to create the JobSet", &operator, || operator.jobset(&job));
    let labels = &jobset["metadata"]["labels"];
    assert_eq!(labels["app"], "aiperf");
    assert_eq!(labels["aiperf.nvidia.com/job-id"], job.name.as_str());
    assert_eq!(labels[QUEUE_LABEL], "aiperf-queue", "eval-admission took the queue from the annotation");
    assert!(labels.get(PRIORITY_LABEL).is_none());
    let owner = &jobset["metadata"]["ownerReferences"][0];
    assert_eq!((owner["kind"].as_str(), owner["controller"].as_bool()), (Some("AIPerfJob"), Some(true)));
    // The real create (not the preflight's dry run): eval-admission patched the label and suspend in.
    let create = env
        .webhook
        .reviews(&job.jobset())
        .into_iter()
        .find(|review| review["webhook"] == "mutate" && review["dry_run"] == false)
        .expect("eval-admission reviewed the create");
    assert_eq!(create["decision"], "patched", "{create}");

    let workload = wait_admitted(env, &operator, &job);
    assert_eq!(workload["spec"]["queueName"], "aiperf-queue");
    assert_eq!(workload["status"]["admission"]["clusterQueue"], CQ);
    eprintln!("{}: admitted {:?} after submission", job.name, started.elapsed());

    let view = operator.view(&job).unwrap();
    eprintln!("AIPerfJob status after admission: {}", serde_json::to_string_pretty(&view.raw["status"]).unwrap());
    assert!(["Pending", "Queued"].contains(&view.phase.as_str()), "phase {}", view.phase);
    assert!(view.error.is_none());
    assert_eq!(view.raw["status"]["jobSetName"], job.jobset().as_str());
    assert!(view.condition("PreflightPassed").is_some_and(|c| c["status"] == "True"));
    // AIPerf's own preflight counts the annotation as a queue: no Kueue warning of its own.
    let warnings: Vec<Value> = operator.events_with_reason(&job, "PreflightWarning");
    assert!(
        !warnings.iter().any(|event| event["message"].as_str().unwrap_or_default().contains("[Kueue Queue]")),
        "{warnings:?}"
    );
    wait_for("the ResourcesCreated event", &operator, || {
        (operator.events_with_reason(&job, "ResourcesCreated").len() == 1).then_some(())
    });
}

// ---------------------------------------------------------------- (b) an explicit queue

/// `spec.scheduling.queueName` (`--queue-name`): AIPerf labels and suspends the
/// JobSet itself; while Kueue holds it the job shows `Queued`; when the quota
/// frees, Kueue admits it.
#[test]
fn explicit_queue_shows_queued_until_kueue_admits() {
    let env = environment();
    let ns = format!("aiperf-b-{}", unique());
    env.apply(&[namespace(&ns, None, &[]), local_queue(&ns, "small-queue", SMALL_CQ)], &[]).unwrap();
    let operator = Operator::start(env, &ns, &[&ns], &Settings::default()).unwrap();

    let holder = Job::new(&ns, "holder").queue("small-queue");
    operator.submit(&holder).unwrap();
    wait_admitted(env, &operator, &holder);

    let waiter = Job::new(&ns, "waiter").queue("small-queue");
    let started = Instant::now();
    operator.submit(&waiter).unwrap();
    let jobset = wait_for("the waiter's JobSet", &operator, || operator.jobset(&waiter));
    assert_eq!(jobset["metadata"]["labels"][QUEUE_LABEL], "small-queue");
    assert_eq!(jobset["spec"]["suspend"], true);
    let create = env
        .webhook
        .reviews(&waiter.jobset())
        .into_iter()
        .find(|review| review["webhook"] == "mutate" && review["dry_run"] == false)
        .expect("eval-admission reviewed the create");
    assert_eq!(create["decision"], "allowed", "AIPerf already set the label and suspend: {create}");
    let queued = operator.wait_phase(&waiter, &["Queued"], WAIT).unwrap();
    eprintln!("{}: Queued after {:?}", waiter.name, started.elapsed());
    assert!(queued.error.is_none());
    let pending = workload(env, &ns, "JobSet", &waiter.jobset()).ok().flatten().expect("a Workload");
    assert!(!condition_true(&pending, "QuotaReserved"), "{pending}");
    assert_eq!(operator.jobset(&waiter).unwrap()["spec"]["suspend"], true, "still suspended");

    // The holder goes (its operator deletes its JobSet); Kueue admits the waiter.
    env.run(&["delete", "aiperfjobs.aiperf.nvidia.com", &holder.name, "-n", &ns, "--wait=true"], None).unwrap();
    env.run(&["delete", "jobsets.jobset.x-k8s.io", &holder.jobset(), "-n", &ns, "--ignore-not-found"], None).unwrap();
    let workload = wait_admitted(env, &operator, &waiter);
    assert_eq!(workload["status"]["admission"]["clusterQueue"], SMALL_CQ);
    let view = operator.view(&waiter).unwrap();
    eprintln!("{}: admitted after {:?}; phase {}", waiter.name, started.elapsed(), view.phase);
    // Nothing moves it on before its pods are ready (there is no kubelet here).
    assert!(["Queued", "Pending"].contains(&view.phase.as_str()), "phase {}", view.phase);
}

// ---------------------------------------------------------------- (c) the chart's default queue

/// The seed's WARNING: the chart (`kueue.createQueues=true`) creates its
/// LocalQueue in the release namespace and sets the operator's default queue to
/// it; a benchmark in another namespace names a LocalQueue that does not exist
/// there. eval-admission refuses it; AIPerf's own preflight only warns.
#[test]
fn chart_default_queue_missing_in_the_job_namespace_is_denied() {
    let env = environment();
    let id = unique();
    let (release, ns) = (format!("aiperf-system-{id}"), format!("aiperf-c-{id}"));
    env.apply(
        &[namespace(&release, None, &[]), local_queue(&release, "aiperf-queue", CQ), namespace(&ns, None, &[])],
        &[],
    )
    .unwrap();
    let settings = Settings { default_queue: Some("aiperf-queue".into()), ..Settings::default() };
    let operator = Operator::start(env, &format!("chart-{id}"), &[&ns], &settings).unwrap();
    let job = Job::new(&ns, "chart-default");
    operator.submit(&job).unwrap();

    let error = assert_denied(env, &operator, &job, &["LocalQueue", "aiperf-queue", &ns]);
    // Only the dry run failed: AIPerf's own Kueue check reads spec.scheduling.queueName alone.
    assert!(!error.contains("Kueue Queue:"), "{error}");
    let warnings = operator.events_with_reason(&job, "PreflightWarning");
    eprintln!("AIPerf's own warnings: {:?}", warnings.iter().map(|e| &e["message"]).collect::<Vec<_>>());
}

// ---------------------------------------------------------------- (d) a preemptible priority

#[test]
fn preemptible_priority_is_denied() {
    let env = environment();
    let ns = format!("aiperf-d-{}", unique());
    env.apply(
        &[
            namespace(&ns, None, &[]),
            local_queue(&ns, "shared-queue", PREEMPT_CQ),
            local_queue(&ns, "aiperf-queue", CQ),
        ],
        &[],
    )
    .unwrap();
    let operator = Operator::start(env, &ns, &[&ns], &Settings::default()).unwrap();
    let job = Job::new(&ns, "cheap").queue("shared-queue").priority_class("aiperf-low");
    operator.submit(&job).unwrap();
    assert_denied(env, &operator, &job, &["preempt", PREEMPT_CQ, "aiperf-low"]);
}

// ---------------------------------------------------------------- (e) a missing priority class

#[test]
fn missing_priority_class_is_denied() {
    let env = environment();
    let ns = format!("aiperf-e-{}", unique());
    env.apply(&[namespace(&ns, None, &[]), local_queue(&ns, "aiperf-queue", CQ)], &[]).unwrap();
    let operator = Operator::start(env, &ns, &[&ns], &Settings::default()).unwrap();
    let job = Job::new(&ns, "urgent").queue("aiperf-queue").priority_class("aiperf-critical");
    operator.submit(&job).unwrap();
    assert_denied(env, &operator, &job, &["WorkloadPriorityClass", "aiperf-critical"]);
}

// ---------------------------------------------------------------- (f) admission warnings

/// No queue anywhere: eval-admission lets the JobSet through with a warning
/// (it bypasses Kueue), and the operator's client drops it: it is in no status,
/// event or log line the AIPerf user or the operator's admin can read. The same
/// holds for the warnings on a queued job.
#[test]
fn admission_warnings_never_reach_the_aiperf_user() {
    let env = environment();
    let id = unique();
    let (bare, queued) = (format!("aiperf-f-{id}"), format!("aiperf-g-{id}"));
    env.apply(
        &[namespace(&bare, None, &[]), namespace(&queued, None, &[]), local_queue(&queued, "aiperf-queue", CQ)],
        &[],
    )
    .unwrap();
    let operator = Operator::start(env, &format!("warnings-{id}"), &[&bare, &queued], &Settings::default()).unwrap();

    for job in [Job::new(&bare, "unqueued"), Job::new(&queued, "queued").queue("aiperf-queue")] {
        operator.submit(&job).unwrap();
        let jobset = wait_for("the operator to create the JobSet", &operator, || operator.jobset(&job));
        let view = operator.wait_phase(&job, &["Pending", "Queued", "Failed"], WAIT).unwrap();
        assert_ne!(view.phase, "Failed", "{}", view.raw["status"]);
        let warned: u64 = env
            .webhook
            .reviews(&job.jobset())
            .iter()
            .filter(|review| review["dry_run"] == false)
            .map(|review| review["warnings"].as_u64().unwrap_or(0))
            .sum();
        let warnings = admission_warnings(env, &jobset);
        eprintln!("{}: eval-admission warned {warned} time(s): {warnings:?}", job.name);
        if job.queue.is_none() {
            assert!(jobset["metadata"]["labels"].get(QUEUE_LABEL).is_none(), "no queue anywhere");
            assert!(jobset["spec"]["suspend"].is_null() || jobset["spec"]["suspend"] == false);
            assert!(warned >= 1, "eval-admission warned on the create");
            assert!(!warnings.is_empty(), "and warns on the same JobSet again");
            // AIPerf's own preflight has a Kueue warning of its own (not eval-admission's).
            let own = operator.events_with_reason(&job, "PreflightWarning");
            eprintln!("AIPerf's own warnings: {:?}", own.iter().map(|e| &e["message"]).collect::<Vec<_>>());
        }
        // Give the operator's monitor a few ticks to write whatever it writes.
        std::thread::sleep(Duration::from_secs(5));
        let visible = everything_visible(&operator, &job);
        for warning in &warnings {
            let fragment: String = warning.chars().take(60).collect();
            assert!(!visible.contains(&fragment), "the warning {warning:?} reached the AIPerf user");
        }
    }
}

// ---------------------------------------------------------------- (g) the audit

/// A benchmark queued behind another, whose ClusterQueue then stops selecting
/// the namespace: the audit puts a Warning Event on its JobSet within 30 s.
/// What the AIPerf user sees, observed: the AIPerfJob stays `Queued`, with no error.
#[test]
fn an_audit_finding_on_a_queued_benchmark_is_an_event_on_its_jobset() {
    let env = environment();
    let id = unique();
    let (ns, cq) = (format!("aiperf-g-{id}"), format!("aiperf-audit-{id}"));
    let mut queue = cluster_queue(&cq, FLAVOR, "6", Value::Null);
    queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] = json!("12Gi");
    env.apply(&[queue, namespace(&ns, None, &[]), local_queue(&ns, "audited-queue", &cq)], &[]).unwrap();
    let operator = Operator::start(env, &ns, &[&ns], &Settings::default()).unwrap();
    let holder = Job::new(&ns, "holder").queue("audited-queue");
    operator.submit(&holder).unwrap();
    wait_admitted(env, &operator, &holder);
    let waiter = Job::new(&ns, "waiter").queue("audited-queue");
    operator.submit(&waiter).unwrap();
    operator.wait_phase(&waiter, &["Queued"], WAIT).unwrap();

    let narrowed = r#"{"spec":{"namespaceSelector":{"matchLabels":{"nobody":"here"}}}}"#;
    env.run(&["patch", "clusterqueue.kueue.x-k8s.io", &cq, "--type=merge", "-p", narrowed], None).unwrap();
    let event = wait_for("the audit's Event on the waiter's JobSet", &operator, || {
        kueue_objects::audit_events(env, &ns, &waiter.jobset()).into_iter().next()
    });
    assert_eq!(event["reason"], "NamespaceNotSelected");
    // No other LocalQueue in the namespace would admit it: no way out, so no submitters' hint.
    let note = event["note"].as_str().unwrap();
    let expected = format!(
        "JobSet {ns}/{} would stay suspended forever: LocalQueue 'audited-queue' feeds ClusterQueue '{cq}'",
        waiter.jobset()
    );
    assert!(note.starts_with(&expected), "{note}");
    let view = operator.view(&waiter).unwrap();
    eprintln!("AIPerf shows after the audit's finding: phase {}, error {:?}", view.phase, view.error);
    assert_eq!((view.phase.as_str(), view.error.as_deref()), ("Queued", None));
    assert!(!view.raw.to_string().contains("namespaceSelector"), "the finding is not in the AIPerfJob: {}", view.raw);
}
