//! Part B: start-up and memory of eval-admission serve at scale, from the real
//! API server.

use super::*;

pub(crate) fn proc_status_kib(pid: u32, field: &str) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| anyhow!("no {field} in /proc/{pid}/status"))
}

/// Clears [`CHILD_PID`] when part B's server goes.
pub(crate) struct Forget;

impl Drop for Forget {
    fn drop(&mut self) {
        CHILD_PID.store(0, Ordering::SeqCst);
    }
}

pub(crate) async fn start_once(settings: &Settings, cluster: &Cluster, run: usize) -> Result<Value> {
    let log_path = settings.out.join(format!("apiserver-scale-start-{run}.log"));
    let _ = std::fs::remove_file(&log_path);
    let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build()?;
    let launch = testkit::Serve::new(BIN, &cluster.webhook.cert, &cluster.webhook.key)
        .arg("--config")
        .arg(testkit::repo("").join("manifests/base/config.yaml"))
        .args(["--shutdown-delay", "0s"])
        .env("KUBECONFIG", &cluster.plane.kubeconfig)
        .env("RUST_LOG", "info")
        .log(&log_path)
        .ready(testkit::Ready::Readyz, Duration::from_secs(300), Duration::from_millis(5));
    let mut server = tokio::task::block_in_place(|| launch.start())?;
    let (pid, admin_port) = (server.pid(), server.admin_port);
    CHILD_PID.store(pid, Ordering::SeqCst);
    let _forget = Forget;
    let ready = server.ready_after;
    let rss_kib = proc_status_kib(pid, "VmRSS")?;
    let metrics = http.get(format!("http://127.0.0.1:{admin_port}/metrics")).send().await?.text().await?;
    let mut cache_objects = BTreeMap::new();
    for line in metrics.lines().filter(|line| line.starts_with("eval_admission_cache_objects{")) {
        let kind = line.split('"').nth(1).unwrap_or_default().to_string();
        let count: f64 = line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
        cache_objects.insert(kind, count);
    }
    for kind in ["Namespace", "LocalQueue"] {
        let held = cache_objects.get(kind).copied().unwrap_or(0.0);
        ensure!(
            held >= settings.namespaces as f64,
            "ready with {held} {kind}s in its view, expected at least {}",
            settings.namespaces
        );
    }
    tokio::time::sleep(settings.settle).await;
    let rss_settled_kib = proc_status_kib(pid, "VmRSS")?;
    let peak_kib = proc_status_kib(pid, "VmHWM")?;
    // SIGTERM, as a rollout would; it exits at once with --shutdown-delay 0s.
    tokio::task::block_in_place(|| server.stop());
    drop(server);
    let mib = |kib: f64| round3(kib / 1024.0);
    eprintln!(
        "start {run}: ready in {:.3} s, VmRSS {:.1} MiB at ready, {:.1} MiB after {:?}, peak {:.1} MiB",
        ready.as_secs_f64(),
        rss_kib / 1024.0,
        rss_settled_kib / 1024.0,
        settings.settle,
        peak_kib / 1024.0
    );
    Ok(json!({
        "run": run, "ready_seconds": round3(ready.as_secs_f64()), "rss_mib": mib(rss_kib),
        "rss_mib_after_settle": mib(rss_settled_kib), "settle_seconds": settings.settle.as_secs_f64(),
        "peak_rss_mib": mib(peak_kib), "cache_objects": cache_objects,
    }))
}

pub(crate) async fn scale(settings: &Settings, cluster: &Cluster, client: &kube::Client) -> Result<Value> {
    // Only the measured server runs now: the environment's server would spend CPU
    // on every watch event of the creates below.
    cluster.webhook.unregister()?;
    cluster.webhook.down();
    let mut counts = create_platform(client).await?;
    eprintln!("creating {n} namespaces and {n} LocalQueues", n = settings.namespaces);
    let started = Instant::now();
    futures::stream::iter(0..settings.namespaces)
        .map(|i| async move {
            let team = format!("team-{}", i % 10);
            create_namespace(client, &format!("tenant-{i:05}"), &team, &format!("{team}-cq")).await
        })
        .buffer_unordered(settings.create_concurrency)
        .try_collect::<Vec<()>>()
        .await?;
    let create_seconds = started.elapsed().as_secs_f64();
    eprintln!("created in {create_seconds:.1} s ({:.0} objects/s)", 2.0 * settings.namespaces as f64 / create_seconds);
    let mut runs = Vec::new();
    for run in 1..=settings.starts {
        runs.push(start_once(settings, cluster, run).await?);
    }
    let column = |key: &str| -> Vec<f64> { runs.iter().filter_map(|r| r[key].as_f64()).collect() };
    counts.insert("namespaces", settings.namespaces);
    counts.insert("local_queues", settings.namespaces);
    let mut result = json!({
        "description": "eval-admission serve (no --cluster, KUBECONFIG) against kube-apiserver holding the objects below; \
            ready = spawn to first /readyz 200 (polled every 5 ms), rss = VmRSS from /proc/PID/status right then; \
            cache_objects as the server counts them (including the latency part's namespaces and the built-in ones)",
        "ready_seconds_median": round3(median(&column("ready_seconds"))),
        "rss_mib_median": round3(median(&column("rss_mib"))),
        "rss_mib_after_settle_median": round3(median(&column("rss_mib_after_settle"))),
        "peak_rss_mib_median": round3(median(&column("peak_rss_mib"))),
        "create_seconds": round3(create_seconds),
        "create_concurrency": settings.create_concurrency,
        "runs": runs,
    });
    for (key, count) in counts {
        result[key] = json!(count);
    }
    Ok(result)
}
