//! The shipped image and manifests on a real node (tests/common/node.rs):
//! installed as docs/install.md says (`kubectl apply -k manifests/`, the
//! self-managed certificates, with no cert-manager running), two replicas
//! behind the Service the API server reaches, beside the real Kueue and
//! JobSet controllers. The last tests uninstall it and install again with
//! each other certificate source (cert-manager, which they start; the Helm
//! chart; a static pair).
//!
//! Runs only through `make e2e-node` (hack/in-node-netns.sh), one test at a
//! time, in name order: the forced rotation, the rollout, the replica loss
//! and the reinstalls each change the one Deployment.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use common::control_plane::{ControlPlane, Kueue, build, built, condition_true, repo, tail};
use common::kueue_objects::{cluster_queue, flavor, local_queue, namespace, unique, workload};
use common::node::{
    CertManager, JobSetController, NODE_APISERVER_FLAGS, NODE_NETWORK, Node, ServingPod, http_body, poll_retrying,
    serving_pods,
};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use testkit::workload::pod_spec;
use testkit::{JobBuilder, JobSetBuilder};

/// The release identity the shipped policy config lets unsuspend
/// (manifests/base/config.yaml `kueue`: its namespace's kueue-controller-manager).
const KUEUE_SERVICE_ACCOUNT: &str = "system:serviceaccount:kueue-system:kueue-controller-manager";
const INSTALL_NAMESPACE: &str = "eval-admission-system";
/// The shipped Deployment's pods and their one container.
const SELECTOR: &str = "app.kubernetes.io/name=eval-admission";
const CONTAINER: &str = "eval-admission";
/// The shipped Deployment's replicas.
const REPLICAS: usize = 2;

/// A `static` holds it, so no destructor runs: its processes go with the
/// test binary by their parent-death signal, and hack/in-node-netns.sh
/// removes what outlives them.
struct NodeEnvironment {
    /// Held for their lifetime: Kueue admits, JobSet makes a JobSet's Jobs.
    _kueue: Kueue,
    _jobset: JobSetController,
    node: Node,
    plane: ControlPlane,
    /// The manifests as installed (a copy, with the generated certificates).
    manifests: PathBuf,
}

fn environment() -> &'static NodeEnvironment {
    static SHARED: OnceLock<Result<NodeEnvironment, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| start().map_err(|error| format!("{error:#}")))
        .as_ref()
        .unwrap_or_else(|error| panic!("the node environment did not start: {error}"))
}

fn start() -> Result<NodeEnvironment> {
    let plane = ControlPlane::start_on(&NODE_NETWORK, &NODE_APISERVER_FLAGS)?;
    eprintln!("node environment in {} (logs in logs/)", plane.dir.display());
    // The image is made from the release binary when `make e2e-node` names it
    // (what the Dockerfile ships), else from the binary under test.
    let server = std::env::var_os("NODE_IMAGE_BINARY").map_or_else(|| common::BIN.into(), PathBuf::from);
    let node = Node::start(&plane, &server)?;
    let kueue = Kueue::start_as(&plane, KUEUE_SERVICE_ACCOUNT)?;
    let jobset = JobSetController::start(&plane)?;
    let manifests = install(&plane, &node)?;
    Ok(NodeEnvironment { _kueue: kueue, _jobset: jobset, node, plane, manifests })
}

/// The install guide's default, on a copy of the manifests (the static
/// pair's test writes into it): `kubectl apply -k manifests/`; the image the
/// install names is the one built from the binary under test.
fn install(plane: &ControlPlane, node: &Node) -> Result<PathBuf> {
    let dir = plane.dir.join("install");
    std::fs::create_dir_all(&dir)?;
    let copy = std::process::Command::new("cp").arg("-r").arg(repo("manifests")).arg(&dir).status()?;
    ensure!(copy.success(), "copying manifests/");
    let manifests = dir.join("manifests");
    let _ = std::fs::remove_dir_all(manifests.join("static-certs/generated"));
    node.tag_image(&node.images.eval_admission, &shipped_image()?)?;
    plane.run(&["apply", "-k", manifests.to_str().context("path")?], None)?;
    wait_available(plane, 2, Duration::from_secs(180))?;
    Ok(manifests)
}

/// Deletes the earlier tests' queue namespaces, whose admitted Jobs each
/// hold a CPU of the node's two: new replicas must be scheduled.
fn free_the_node(plane: &ControlPlane) -> Result<()> {
    let (key, value) = QUEUE_NAMESPACE_LABEL;
    let selector = format!("{key}={value}");
    // Not waited for: a namespace of 1,000 Jobs takes long to go; its running pods go first.
    plane.run(&["delete", "namespace", "-l", &selector, "--wait=false"], None)?;
    poll_retrying(
        "the queue namespaces' running pods to be gone",
        Duration::from_secs(180),
        Duration::from_secs(1),
        || Ok(()),
        || {
            let running =
                ["get", "pods", "-A", "-l", "app=evalhub", "--field-selector=status.phase=Running", "-o", "name"];
            let pods = plane.run(&running, None)?;
            ensure!(pods.trim().is_empty(), "still running: {pods}");
            Ok(())
        },
    )
}

/// The uninstall of docs/install.md, whichever source installed it: the
/// cluster-scoped objects by their label, then the namespace, waited for.
fn uninstall(plane: &ControlPlane) -> Result<()> {
    let cluster_scoped =
        "mutatingwebhookconfigurations,validatingwebhookconfigurations,clusterroles,clusterrolebindings";
    plane.run(&["delete", cluster_scoped, "-l", "app.kubernetes.io/part-of=eval-admission", "--wait"], None)?;
    plane.run(&["delete", "namespace", INSTALL_NAMESPACE, "--ignore-not-found", "--wait", "--timeout=180s"], None)?;
    Ok(())
}

/// Installs `kustomization` (a folder of the installed copy) on a clean
/// cluster and waits for both replicas behind the Service.
fn reinstall(env: &NodeEnvironment, kustomization: &str) -> Result<()> {
    let folder = env.manifests.join(kustomization);
    reinstall_with(env, || env.plane.run(&["apply", "-k", folder.to_str().context("path")?], None).map(drop))
}

/// Uninstalls, frees the node, runs `install` and waits for both replicas
/// behind the Service.
fn reinstall_with(env: &NodeEnvironment, install: impl FnOnce() -> Result<()>) -> Result<()> {
    uninstall(&env.plane)?;
    free_the_node(&env.plane)?;
    install()?;
    wait_available(&env.plane, 2, Duration::from_secs(300))
}

/// The image the base kustomization names (`images:`), which a platform team
/// pushes and the node pulls.
fn shipped_image() -> Result<String> {
    let kustomization: Value =
        serde_yaml::from_str(&std::fs::read_to_string(repo("manifests/base/kustomization.yaml"))?)?;
    let image = &kustomization["images"][0];
    Ok(format!(
        "{}:{}",
        image["newName"].as_str().context("images[0].newName")?,
        image["newTag"].as_str().context("images[0].newTag")?
    ))
}

/// Polls until the Deployment has `replicas` updated, available replicas and
/// no others, and the Service has that many ready endpoints.
fn wait_available(plane: &ControlPlane, replicas: i64, timeout: Duration) -> Result<()> {
    poll_retrying(
        "eval-admission's Deployment to be available behind its Service",
        timeout,
        Duration::from_millis(500),
        || Ok(()),
        || {
            let deployment = get(plane, "deployment", INSTALL_NAMESPACE, "eval-admission")?;
            let (status, generation) = (&deployment["status"], &deployment["metadata"]["generation"]);
            let settled = status["observedGeneration"] == *generation
                && status["replicas"].as_i64() == Some(replicas)
                && status["updatedReplicas"].as_i64() == Some(replicas)
                && status["availableReplicas"].as_i64() == Some(replicas);
            ensure!(settled, "the Deployment (generation {generation}) is at {status}");
            let endpoints = ready_endpoints(plane)?;
            ensure!(endpoints == replicas as usize, "{endpoints} of {replicas} endpoints ready");
            Ok(())
        },
    )
}

fn ready_endpoints(plane: &ControlPlane) -> Result<usize> {
    let slices: Value = serde_json::from_str(&plane.run(
        &[
            "get",
            "endpointslices",
            "-n",
            INSTALL_NAMESPACE,
            "-l",
            "kubernetes.io/service-name=eval-admission",
            "-o",
            "json",
        ],
        None,
    )?)?;
    Ok(slices["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|slice| slice["endpoints"].as_array().into_iter().flatten())
        .filter(|endpoint| endpoint["conditions"]["ready"] == true)
        .count())
}

/// eval-admission's pods that serve now (running, ready, not terminating).
fn eval_admission_pods(plane: &ControlPlane) -> Result<Vec<ServingPod>> {
    serving_pods(plane, INSTALL_NAMESPACE, SELECTOR)
}

fn get(plane: &ControlPlane, kind: &str, namespace: &str, name: &str) -> Result<Value> {
    Ok(serde_json::from_str(&plane.run(&["get", kind, name, "-n", namespace, "-o", "json"], None)?)?)
}

/// What marks the namespaces [`queue_namespace`] makes.
const QUEUE_NAMESPACE_LABEL: (&str, &str) = ("eval-admission-test", "queue");

/// A namespace whose default queue leads to a ClusterQueue with `cpu` of quota.
fn queue_namespace(plane: &ControlPlane, cpu: &str) -> Result<String> {
    let id = unique();
    let (rf, cq, ns) = (format!("node-rf-{id}"), format!("node-cq-{id}"), format!("node-ns-{id}"));
    plane.apply(
        &[
            flavor(&rf),
            cluster_queue(&cq, &rf, cpu, Value::Null),
            namespace(&ns, Some("evaluations"), &[QUEUE_NAMESPACE_LABEL]),
            local_queue(&ns, "evaluations", &cq),
        ],
        &[],
    )?;
    Ok(ns)
}

/// A pod for this node: one container `container` from the node's preloaded
/// `image` running `script`, asking for `cpu`, and a 1 s grace period so the
/// tests' deletes end quickly.
fn node_pod(container: &str, image: &str, cpu: &str, script: &str) -> Value {
    let mut pod = pod_spec(container, image, Some(json!({"cpu": cpu, "memory": "16Mi"})), None);
    pod["terminationGracePeriodSeconds"] = json!(1);
    pod["containers"][0]["imagePullPolicy"] = json!("Never");
    pod["containers"][0]["command"] = json!(["sh", "-c", script]);
    pod
}

/// An EvalHub-shaped Job in `ns` (its labels on the Job and the pod, one
/// container, no queue) running `script`.
fn evaluation(ns: &str, name: &str, image: &str, cpu: &str, script: &str) -> Value {
    JobBuilder::new(ns, name)
        .labels(&[("app", "evalhub"), ("component", "evaluation-job")])
        .pod_labels_from_job()
        .backoff_limit(0)
        .pod(node_pod("adapter", image, cpu, script))
        .build()
}

/// Creates `object` in `ns` after checking, by a server-side dry run (which
/// goes through the webhooks too), that it is queued on the namespace's
/// default queue and suspended at creation (Kueue may unsuspend the real one
/// before it can be read); returns it once its `condition` is true.
fn create_queued_and_run(
    env: &NodeEnvironment,
    ns: &str,
    object: &Value,
    resource: &str,
    condition: &str,
    timeout: Duration,
) -> Value {
    queued_by_the_webhook(env, ns, object);
    env.plane.run(&["create", "-n", ns, "-f", "-"], Some(&object.to_string())).unwrap();
    let name = object["metadata"]["name"].as_str().unwrap();
    poll_retrying(
        &format!("{resource} {name} to be {condition}"),
        timeout,
        Duration::from_millis(500),
        || Ok(()),
        || {
            let current = get(&env.plane, resource, ns, name)?;
            ensure!(condition_true(&current, condition), "not {condition} yet: {}", current["status"]);
            Ok(current)
        },
    )
    .unwrap_or_else(|error| panic!("{error:#}\n{}\nkubelet:\n{}", env.node.containers(), env.node.kubelet_log(30)))
}

/// Checks, by a server-side dry run (through the webhooks behind the
/// Service), that `object` would be queued on its namespace's default queue
/// and suspended.
fn queued_by_the_webhook(env: &NodeEnvironment, ns: &str, object: &Value) {
    let dry_run = ["create", "-n", ns, "--dry-run=server", "-o", "json", "-f", "-"];
    let shaped: Value = serde_json::from_str(&env.plane.run(&dry_run, Some(&object.to_string())).unwrap()).unwrap();
    assert_eq!(shaped["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "evaluations", "{shaped}");
    assert_eq!(shaped["spec"]["suspend"], true, "{shaped}");
}

/// An EvalHub-shaped Job: the queue label from the namespace and suspended at
/// creation, admitted by Kueue, and run to completion on the node, every step
/// through the in-cluster webhook behind its Service.
#[test]
fn an_evaluation_is_queued_admitted_and_runs_to_completion() {
    let env = environment();
    let ns = queue_namespace(&env.plane, "1").unwrap();
    let job = evaluation(&ns, "evaluation", &env.node.images.busybox, "100m", "echo evaluated");
    let done = create_queued_and_run(env, &ns, &job, "job", "Complete", Duration::from_secs(180));
    assert_eq!(done["status"]["succeeded"], 1, "{done}");
    assert_eq!(done["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "evaluations", "{done}");
    let workload = workload(&env.plane, &ns, "Job", "evaluation").unwrap().expect("Kueue's Workload");
    assert!(condition_true(&workload, "Admitted"), "{workload}");
}

/// An AIPerf-shaped JobSet (its label, a leader and two workers, no queue):
/// queued and suspended by the webhook, admitted by Kueue as one workload,
/// its child Jobs made by the real JobSet controller and left alone by the
/// webhook (Kueue admits them through their owner), every pod run to the end.
#[test]
fn a_jobset_is_queued_and_its_jobs_run_to_completion() {
    let env = environment();
    let ns = queue_namespace(&env.plane, "1").unwrap();
    let replicated = |name: &str| json!({"backoffLimit": 0, "template": {"spec": node_pod("aiperf", &env.node.images.busybox, "100m", &format!("echo {name} done"))}});
    let jobset = JobSetBuilder::new(&ns, "benchmark")
        .label("app", "aiperf")
        .replicated_job("leader", 1, replicated("leader"))
        .replicated_job("workers", 2, replicated("workers"))
        .build();
    let done = create_queued_and_run(env, &ns, &jobset, "jobset", "Completed", Duration::from_secs(240));
    let workload = workload(&env.plane, &ns, "JobSet", "benchmark").unwrap().expect("Kueue's Workload");
    assert!(condition_true(&workload, "Admitted"), "{workload}");
    let jobs: Value =
        serde_json::from_str(&env.plane.run(&["get", "jobs", "-n", &ns, "-o", "json"], None).unwrap()).unwrap();
    let children: Vec<&Value> = jobs["items"].as_array().unwrap().iter().collect();
    let names: Vec<&str> = children.iter().filter_map(|job| job["metadata"]["name"].as_str()).collect();
    assert_eq!(names, ["benchmark-leader-0", "benchmark-workers-0", "benchmark-workers-1"], "{done}");
    for job in children {
        assert!(common::kueue_objects::owned_by(job, "JobSet", "benchmark"), "{job}");
        assert!(condition_true(job, "Complete"), "{job}");
    }
}

/// One create the API server refused: when, and why.
#[derive(Debug)]
struct Failure {
    at: Instant,
    error: String,
}

/// Creates `total` Jobs (or more, until `during` has finished), `concurrency`
/// at a time, each sender pausing `pace` between its creates, while `during`
/// runs beside them; returns how many were sent and the ones that failed.
async fn creates_during(
    namespace: &str,
    image: &str,
    total: usize,
    concurrency: usize,
    pace: Duration,
    during: impl FnOnce() -> Result<()> + Send + 'static,
) -> Result<(usize, Vec<Failure>)> {
    let env = environment();
    let kubeconfig = kube::config::Kubeconfig::read_from(&env.plane.kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    let jobs: Api<Job> = Api::namespaced(kube::Client::try_from(config)?, namespace);
    let event = tokio::task::spawn_blocking(during);
    let next = AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let event_done = std::sync::atomic::AtomicBool::new(false);
    let worker = |_| {
        let (jobs, next, failures, event_done) = (&jobs, &next, &failures, &event_done);
        async move {
            loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                if index >= total && event_done.load(Ordering::SeqCst) {
                    break;
                }
                let job: Job =
                    serde_json::from_value(evaluation(namespace, &format!("load-{index}"), image, "1", "sleep 3600"))
                        .expect("a Job");
                if let Err(error) = jobs.create(&PostParams::default(), &job).await {
                    failures
                        .lock()
                        .unwrap()
                        .push(Failure { at: Instant::now(), error: format!("load-{index}: {error}") });
                }
                tokio::time::sleep(pace).await;
            }
        }
    };
    let workers = futures::future::join_all((0..concurrency).map(worker));
    let watch_event = async {
        let result = event.await;
        event_done.store(true, Ordering::SeqCst);
        result
    };
    let (_, event_result) = tokio::join!(workers, watch_event);
    event_result??;
    Ok((next.load(Ordering::SeqCst).saturating_sub(concurrency), failures.into_inner().unwrap()))
}

/// A rolling restart of the two replicas while Jobs are created: the API
/// server must always find a replica that answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_restart_loses_no_create() {
    let env = environment();
    let ns = queue_namespace(&env.plane, "1").unwrap();
    let (created, failures) = creates_during(&ns, &env.node.images.busybox, 1000, 8, Duration::ZERO, || {
        std::thread::sleep(Duration::from_secs(2));
        let plane = &environment().plane;
        plane.run(&["rollout", "restart", "deployment/eval-admission", "-n", INSTALL_NAMESPACE], None)?;
        plane.run(
            &["rollout", "status", "deployment/eval-admission", "-n", INSTALL_NAMESPACE, "--timeout=300s"],
            None,
        )?;
        wait_available(plane, 2, Duration::from_secs(120))
    })
    .await
    .unwrap();
    eprintln!("rollout restart: {created} creates, {} failed", failures.len());
    assert!(created >= 1000, "{created}");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// SIGKILL to one replica's container while Jobs are created: the kubelet
/// restarts it, and the API server keeps finding the other replica, except
/// for the calls it sends to the dead one before the EndpointSlice drops it.
/// Those cannot be saved from here: the API server's admission dispatchers
/// (k8s.io/apiserver v0.35.4 `pkg/admission/plugin/webhook/{mutating,validating}/dispatcher.go`)
/// call a webhook once, and a refused connection fails the create under
/// `failurePolicy: Fail`; the retrying `GenericWebhook.WithExponentialBackoff`
/// serves only the authentication and authorization webhooks. So this test
/// holds the loss to that: every failure is a connection to the killed
/// replica's address (refused, or a kept-alive one broken), after the kill
/// and before both replicas were ready again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_a_replica_loses_only_the_calls_already_routed_to_it() {
    let env = environment();
    wait_available(&env.plane, 2, Duration::from_secs(120)).unwrap();
    let ns = queue_namespace(&env.plane, "1").unwrap();
    // When the kill was sent, to which address, and when both replicas were ready again.
    let killed = std::sync::Arc::new(std::sync::Mutex::new(None::<(Instant, String, Option<Instant>)>));
    let record = killed.clone();
    let (created, failures) = creates_during(&ns, &env.node.images.busybox, 1000, 8, Duration::ZERO, move || {
        std::thread::sleep(Duration::from_secs(2));
        let env = environment();
        // A replica that serves, not one still going from an earlier rollout.
        let pod = eval_admission_pods(&env.plane)?.into_iter().next().context("no eval-admission pod serves")?;
        let (container, restarts) = pod.container(CONTAINER)?;
        *record.lock().unwrap() = Some((Instant::now(), pod.ip.clone(), None));
        env.node.kill_container(&container)?;
        // Back to two ready replicas: the kubelet restarted the container and
        // the pod serves again (not before: until the kubelet reports the
        // kill, the Deployment still counts the pod available).
        poll_retrying(
            "the kubelet to restart the killed container",
            Duration::from_secs(120),
            Duration::from_millis(250),
            || Ok(()),
            || {
                let pods = eval_admission_pods(&env.plane)?;
                let again = pods.iter().find(|again| again.name == pod.name);
                let again = again.with_context(|| format!("{} does not serve", pod.name))?;
                let (_, now) = again.container(CONTAINER)?;
                ensure!(now > restarts, "{now} restarts, {restarts} before the kill");
                Ok(())
            },
        )?;
        wait_available(&env.plane, 2, Duration::from_secs(120))?;
        record.lock().unwrap().as_mut().expect("recorded above").2 = Some(Instant::now());
        Ok(())
    })
    .await
    .unwrap();
    let (killed_at, killed_ip, recovered_at) = killed.lock().unwrap().clone().expect("a replica was killed");
    let recovered_at = recovered_at.expect("both replicas ready again");
    let last = failures.iter().map(|failure| failure.at.saturating_duration_since(killed_at)).max();
    eprintln!(
        "replica loss: {created} creates, {} failed, the last {last:?} after the kill; both ready again after {:?}",
        failures.len(),
        recovered_at - killed_at
    );
    assert!(created >= 1000, "{created}");
    for failure in &failures {
        eprintln!(
            "failed {:?} after the kill: {:.300}",
            failure.at.saturating_duration_since(killed_at),
            failure.error
        );
    }
    for failure in &failures {
        // A new connection is refused, or one the API server kept alive
        // breaks: named by the dead address, or, when the kernel closed the
        // killed process's socket just as the API server reused it, by Go's
        // `errServerClosedIdle` (net/http), or by a bare `EOF` read on it
        // before any response (a POST is not retried), neither of which names
        // an address (seen once in a cold run, 88 ms after the kill). The other
        // replica closes no connection so young (its idle deadline is 120 s,
        // and it evicts only at its connection cap). The kubelet's restart of
        // the container, at the same address and still listed ready, holds
        // reviews until its view syncs, so "not synced" is no longer a way to
        // lose a create.
        let to_the_dead = (failure.error.contains(&format!("{killed_ip}:8443"))
            && ["connection refused", "broken pipe", "connection reset by peer", "EOF"]
                .iter()
                .any(|cause| failure.error.contains(cause)))
            || failure.error.contains("http: server closed idle connection")
            || failure.error.contains("\": EOF");
        assert!(!failure.error.contains("not synced"), "a create lost to a replica not synced yet: {}", failure.error);
        let while_down = failure.at >= killed_at && failure.at <= recovered_at;
        let since = failure.at.saturating_duration_since(killed_at);
        assert!(to_the_dead && while_down, "{since:?} after the kill of {killed_ip}: {}", failure.error);
    }
    // What makes the address-less closed-idle error the dead replica's: no
    // live one closed a connection for a new one.
    let evicted =
        read_counter_sum(&env.plane, "eval_admission_connections_evicted_total{listener=\"webhook\"}").unwrap();
    assert_eq!(evicted, 0, "a replica evicted connections");
}

/// A counter of eval-admission's (`series`: its name and labels as exported),
/// summed over its serving pods (their admin port, on the pod network this
/// test runs beside); an error unless all [`REPLICAS`] serve and answer, so a
/// sum never leaves one out. A read, to be retried inside a poll.
fn counter_sum(plane: &ControlPlane, series: &str) -> Result<u64> {
    let pods = eval_admission_pods(plane)?;
    let names: Vec<&str> = pods.iter().map(|pod| pod.name.as_str()).collect();
    ensure!(pods.len() == REPLICAS, "{} of {REPLICAS} replicas serve: {names:?}", pods.len());
    let mut total = 0;
    for pod in &pods {
        let metrics = http_body(&pod.ip, 8080, "/metrics")?;
        total += metrics
            .lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .with_context(|| format!("no {series} in {}'s metrics", pod.name))?
            .trim()
            .parse::<u64>()?;
    }
    Ok(total)
}

/// [`counter_sum`], retried until both replicas answer.
fn read_counter_sum(plane: &ControlPlane, series: &str) -> Result<u64> {
    poll_retrying(
        &format!("the serving replicas' {series}"),
        Duration::from_secs(60),
        Duration::from_millis(500),
        || Ok(()),
        || counter_sum(plane, series),
    )
}

/// The serving-certificate reloads' counter.
const RELOADS: &str = "eval_admission_tls_certificate_reloads_total";

fn read_certificate_reloads(plane: &ControlPlane) -> Result<u64> {
    read_counter_sum(plane, RELOADS)
}

/// Polls until the serving replicas have loaded `reloads` pairs between them.
fn reloads_reach(plane: &ControlPlane, reloads: u64, what: &str, timeout: Duration) -> Result<()> {
    let reached = || {
        let now = counter_sum(plane, RELOADS)?;
        ensure!(now >= reloads, "{now} reloads of the {reloads} waited for");
        Ok(())
    };
    poll_retrying(what, timeout, Duration::from_secs(1), || Ok(()), reached)
}

/// Ok when every webhook of both configurations has `ca` (base64, as a
/// Secret's `ca.crt` holds it) as its caBundle.
fn webhooks_trust(plane: &ControlPlane, ca: &str) -> Result<()> {
    for (kind, name) in [
        ("mutatingwebhookconfiguration", "eval-admission-mutating"),
        ("validatingwebhookconfiguration", "eval-admission-validating"),
    ] {
        let configuration: Value = serde_json::from_str(&plane.run(&["get", kind, name, "-o", "json"], None)?)?;
        let hooks = configuration["webhooks"].as_array().with_context(|| format!("{name} has no webhooks"))?;
        ensure!(hooks.iter().all(|w| w["clientConfig"]["caBundle"] == ca), "{name}'s caBundle is not {ca:.40}…");
    }
    Ok(())
}

/// The default install's certificates, rotated by force (its Secret deleted)
/// while Jobs are created: a replica makes a new authority and pair, trusted
/// beside the old one before any replica serves the new pair, so no create
/// fails; both replicas then serve it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_rotation_of_the_self_managed_certificates_loses_no_create() {
    let env = environment();
    let plane = &env.plane;
    wait_available(plane, 2, Duration::from_secs(120)).unwrap();
    let ns = queue_namespace(plane, "1").unwrap();
    let authorities = || -> Result<String> {
        let secret = get(&environment().plane, "secret", INSTALL_NAMESPACE, "eval-admission-tls")?;
        Ok(secret["data"]["ca.crt"].as_str().context("no ca.crt")?.to_string())
    };
    let first = authorities().unwrap();
    let before = read_certificate_reloads(plane).unwrap();
    let pace = Duration::from_millis(50);
    let (created, failures) = creates_during(&ns, &env.node.images.busybox, 300, 4, pace, move || {
        std::thread::sleep(Duration::from_secs(2));
        let plane = &environment().plane;
        plane.run(&["delete", "secret", "eval-admission-tls", "-n", INSTALL_NAMESPACE], None)?;
        reloads_reach(plane, before + 2, "both replicas to serve the new pair", Duration::from_secs(120))
    })
    .await
    .unwrap();
    eprintln!("forced rotation: {created} creates, {} failed", failures.len());
    assert!(created >= 300, "{created}");
    assert!(failures.is_empty(), "{failures:#?}");
    let trusted = authorities().unwrap();
    assert_ne!(trusted, first, "a new authority");
    webhooks_trust(plane, &trusted).unwrap();
}

/// The cert-manager install, from nothing (cert-manager's controller and
/// cainjector started here), then renewals of the serving certificate every
/// 10 s while Jobs are created: the pods load each renewed pair from their
/// Secret volume, cainjector keeps caBundle on the same CA, and no create fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cert_manager_install_renews_its_certificate_without_losing_a_create() {
    let env = environment();
    let plane = &env.plane;
    let _cert_manager = CertManager::start(plane).unwrap();
    reinstall(env, "cert-manager").unwrap();
    // Issued, and caBundle the issuing CA in both configurations.
    let injected = || -> Result<()> {
        let certificate = get(plane, "certificate", INSTALL_NAMESPACE, "eval-admission")?;
        ensure!(condition_true(&certificate, "Ready"), "the Certificate is not Ready: {}", certificate["status"]);
        let secret = get(plane, "secret", INSTALL_NAMESPACE, "eval-admission-tls")?;
        webhooks_trust(plane, secret["data"]["ca.crt"].as_str().context("no ca.crt in the Secret")?)
    };
    // cert-manager retries its CA Issuer with a growing backoff until the CA's
    // Secret exists: on a busy machine that can take minutes.
    poll_retrying(
        "cert-manager's certificate and caBundle",
        Duration::from_secs(300),
        Duration::from_secs(1),
        || Ok(()),
        injected,
    )
    .unwrap_or_else(|error| {
        let state = plane
            .run(&["get", "certificates,issuers,certificaterequests", "-n", INSTALL_NAMESPACE, "-o", "wide"], None);
        panic!("{error:#}\n{state:?}\ncert-manager:\n{}", tail(&plane.logs().join("cert-manager-controller.log"), 20))
    });
    let ns = queue_namespace(plane, "1").unwrap();
    let before = read_certificate_reloads(plane).unwrap();
    let certificate = ["patch", "certificate", "eval-admission", "-n", INSTALL_NAMESPACE, "--type=merge", "-p"];
    let renew_every_10s = r#"{"spec":{"duration":"1h","renewBefore":"59m50s"}}"#;
    plane.run(&[&certificate[..], &[renew_every_10s]].concat(), None).unwrap();
    let pace = Duration::from_millis(200);
    let (created, failures) = creates_during(&ns, &env.node.images.busybox, 1000, 8, pace, move || {
        // Both replicas have loaded a renewed pair, and once more.
        let plane = &environment().plane;
        reloads_reach(plane, before + 4, "renewed certificates in both replicas", Duration::from_secs(240))
    })
    .await
    .unwrap();
    plane.run(&[&certificate[..], &[r#"{"spec":{"duration":"2160h","renewBefore":"720h"}}"#]].concat(), None).unwrap();
    let after = read_certificate_reloads(plane).unwrap();
    let reloads = after.checked_sub(before).unwrap_or_else(|| panic!("{after} reloads, fewer than {before} before"));
    eprintln!("certificate renewal: {created} creates, {} failed, {reloads} reloads", failures.len());
    assert!(created >= 1000, "{created}");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The Helm chart's install with its defaults (self-managed certificates),
/// from nothing: `helm install`, both replicas ready behind the Service, and
/// evaluations queued through it.
#[test]
fn the_helm_chart_install_serves_with_its_own_certificates() {
    let env = environment();
    let helm = built(&build("hack/build-helm.sh").unwrap(), "helm_bin").unwrap();
    let kubeconfig = env.plane.kubeconfig.to_str().unwrap();
    reinstall_with(env, || {
        let install = std::process::Command::new(&helm)
            .args(["install", "eval-admission", repo("charts/eval-admission").to_str().context("path")?])
            .args(["--namespace", INSTALL_NAMESPACE, "--create-namespace", "--kubeconfig", kubeconfig])
            .output()?;
        ensure!(install.status.success(), "helm install: {}", String::from_utf8_lossy(&install.stderr));
        Ok(())
    })
    .unwrap();
    let ns = queue_namespace(&env.plane, "1").unwrap();
    queued_by_the_webhook(env, &ns, &evaluation(&ns, "charted", &env.node.images.busybox, "100m", "true"));
}

/// The static pair's install (`certs/make-serving-cert.sh`, then
/// `kubectl apply -k manifests/static-certs`), from nothing: evaluations are
/// queued through it.
#[test]
fn the_static_certs_install_serves_its_pair() {
    let env = environment();
    let generated = env.manifests.join("static-certs/generated");
    let certs = std::process::Command::new(repo("certs/make-serving-cert.sh")).arg(&generated).output().unwrap();
    assert!(certs.status.success(), "make-serving-cert.sh: {}", String::from_utf8_lossy(&certs.stderr));
    reinstall(env, "static-certs").unwrap();
    let ns = queue_namespace(&env.plane, "1").unwrap();
    queued_by_the_webhook(env, &ns, &evaluation(&ns, "static", &env.node.images.busybox, "100m", "true"));
}
