//! Part A: end-to-end latency of Job creates, phase by phase (none,
//! eval-admission, eval-admission over HTTP/2, mutating-admission-policy,
//! kyverno), alternated round by round.

use super::*;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Phase {
    None,
    Webhook,
    /// eval-admission again, offering HTTP/2 by ALPN (`--http2`): does the
    /// API server's webhook client cost less over it?
    WebhookH2,
    Policy,
    Kyverno,
}

impl Phase {
    pub(crate) const ALL: [Phase; 5] = [Phase::None, Phase::Webhook, Phase::WebhookH2, Phase::Policy, Phase::Kyverno];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::None => "none",
            Phase::Webhook => "eval-admission",
            Phase::WebhookH2 => "eval-admission-http2",
            Phase::Policy => "mutating-admission-policy",
            Phase::Kyverno => "kyverno",
        }
    }

    fn short(self) -> &'static str {
        match self {
            Phase::None => "none",
            Phase::Webhook => "webhook",
            Phase::WebhookH2 => "webhook-h2",
            Phase::Policy => "map",
            Phase::Kyverno => "kyverno",
        }
    }

    fn mutates(self) -> bool {
        self != Phase::None
    }

    /// eval-admission's webhooks are registered.
    fn ours(self) -> bool {
        matches!(self, Phase::Webhook | Phase::WebhookH2)
    }
}

pub(crate) struct Policy {
    policy: MutatingAdmissionPolicy,
    binding: MutatingAdmissionPolicyBinding,
}

impl Policy {
    fn load() -> Result<Self> {
        let text = std::fs::read_to_string(testkit::repo("").join(MAP_FIXTURE))?;
        let (mut policy, mut binding) = (None, None);
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value = serde_yaml::Value::deserialize(document)?;
            let api_version = value["apiVersion"].as_str().unwrap_or_default();
            ensure!(api_version == format!("{MAP_GROUP}/{MAP_VERSION}"), "{MAP_FIXTURE}: apiVersion {api_version}");
            match value["kind"].as_str() {
                Some("MutatingAdmissionPolicy") => policy = Some(serde_yaml::from_value(value)?),
                Some("MutatingAdmissionPolicyBinding") => binding = Some(serde_yaml::from_value(value)?),
                other => bail!("{MAP_FIXTURE}: unexpected kind {other:?}"),
            }
        }
        Ok(Self {
            policy: policy.ok_or_else(|| anyhow!("{MAP_FIXTURE}: no MutatingAdmissionPolicy"))?,
            binding: binding.ok_or_else(|| anyhow!("{MAP_FIXTURE}: no MutatingAdmissionPolicyBinding"))?,
        })
    }

    async fn install(&self, client: &kube::Client) -> Result<()> {
        let pp = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..PostParams::default() };
        Api::<MutatingAdmissionPolicy>::all(client.clone()).create(&pp, &self.policy).await?;
        Api::<MutatingAdmissionPolicyBinding>::all(client.clone()).create(&pp, &self.binding).await?;
        Ok(())
    }

    async fn remove(&self, client: &kube::Client) -> Result<()> {
        let name =
            |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| meta.name.clone().unwrap_or_default();
        ignore_not_found(
            Api::<MutatingAdmissionPolicyBinding>::all(client.clone())
                .delete(&name(&self.binding.metadata), &DeleteParams::default())
                .await
                .map(drop),
        )?;
        ignore_not_found(
            Api::<MutatingAdmissionPolicy>::all(client.clone())
                .delete(&name(&self.policy.metadata), &DeleteParams::default())
                .await
                .map(drop),
        )
    }
}

pub(crate) fn ignore_not_found(result: kube::Result<()>) -> Result<()> {
    match result {
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        other => Ok(other?),
    }
}

/// Polls a server-side dry-run create until it shows the phase's effect, so no
/// measured create meets a half-switched API server.
pub(crate) async fn wait_for_effect(api: &Api<Job>, job: &Job, mutated: bool) -> Result<()> {
    let dry_run = PostParams { dry_run: true, ..PostParams::default() };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let last = api.create(&dry_run, job).await;
        match &last {
            Ok(created) if mutated && queued(created) => return Ok(()),
            Ok(created) if !mutated && untouched(created) => return Ok(()),
            _ => {}
        }
        if Instant::now() > deadline {
            bail!(
                "timed out waiting for dry-run creates to be {}: last {:?}",
                if mutated { "queued" } else { "untouched" },
                last.map(|j| j.metadata.labels)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Switches admission for Jobs to `phase`, then waits until it is in effect.
/// Kyverno, when it runs, keeps running in every phase; outside its own its
/// ClusterPolicy is deleted and none of its webhooks matches Jobs (checked).
pub(crate) async fn switch(
    cluster: &Cluster,
    client: &kube::Client,
    policy: &Policy,
    kyverno: Option<&kyverno::Kyverno>,
    phase: Phase,
    probe: &Api<Job>,
    job: &Job,
) -> Result<()> {
    if phase != Phase::Kyverno
        && let Some(kyverno) = kyverno
    {
        kyverno.remove(client).await?;
    }
    match phase {
        Phase::None => {
            cluster.webhook.unregister()?;
            policy.remove(client).await?;
        }
        Phase::Webhook | Phase::WebhookH2 => {
            // From the other eval-admission phase too: nothing in the path
            // until the server, restarted for its protocol, registers again.
            cluster.webhook.unregister()?;
            policy.remove(client).await?;
            // Wait for the policy to be gone before our webhook's effect can be seen.
            wait_for_effect(probe, job, false).await?;
            // A restart for the protocol registers the server itself.
            if !cluster.webhook.set_http2(phase == Phase::WebhookH2)? {
                cluster.webhook.register()?;
            }
        }
        Phase::Policy => {
            cluster.webhook.unregister()?;
            wait_for_effect(probe, job, false).await?;
            policy.install(client).await?;
        }
        Phase::Kyverno => {
            let kyverno = kyverno.context("the kyverno phase without Kyverno")?;
            cluster.webhook.unregister()?;
            policy.remove(client).await?;
            wait_for_effect(probe, job, false).await?;
            kyverno.install(client).await?;
            wait_for_effect(probe, job, true).await?;
            return refuses_missing_queue(probe, job).await;
        }
    }
    wait_for_effect(probe, job, phase.mutates()).await
}

/// The policy's validate rule at work: a dry-run create of the Job naming a
/// LocalQueue that does not exist is refused, with the queues that do.
pub(crate) async fn refuses_missing_queue(api: &Api<Job>, job: &Job) -> Result<()> {
    let mut job = job.clone();
    job.metadata.labels.get_or_insert_default().insert(QUEUE_LABEL.into(), "no-such-queue".into());
    let dry_run = PostParams { dry_run: true, ..PostParams::default() };
    match api.create(&dry_run, &job).await {
        Err(kube::Error::Api(status))
            if format!("{status:?}").contains("no-such-queue") && format!("{status:?}").contains(QUEUE) =>
        {
            Ok(())
        }
        other => bail!("a Job naming LocalQueue no-such-queue was not refused as expected: {other:?}"),
    }
}

/// eval-admission's counters, summed over their other labels.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Counters {
    /// Connections the server has served over HTTP/2 since it started.
    h2_connections: f64,
    mutate: f64,
    validate: f64,
    confirm_lookups: f64,
}

impl std::ops::Sub for Counters {
    type Output = Counters;
    fn sub(self, before: Counters) -> Counters {
        Counters {
            h2_connections: self.h2_connections - before.h2_connections,
            mutate: self.mutate - before.mutate,
            validate: self.validate - before.validate,
            confirm_lookups: self.confirm_lookups - before.confirm_lookups,
        }
    }
}

pub(crate) async fn webhook_counters(http: &reqwest::Client, admin_port: u16) -> Result<Counters> {
    let text =
        http.get(format!("http://127.0.0.1:{admin_port}/metrics")).send().await?.error_for_status()?.text().await?;
    let sum = |prefix: &str, label: &str| -> f64 {
        text.lines()
            .filter(|line| line.starts_with(prefix) && line.contains(label))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    Ok(Counters {
        h2_connections: sum("eval_admission_connections_served_total{", "protocol=\"h2\""),
        mutate: sum("eval_admission_reviews_total{", "webhook=\"mutate\""),
        validate: sum("eval_admission_reviews_total{", "webhook=\"validate\""),
        confirm_lookups: sum("eval_admission_confirm_lookups_total", ""),
    })
}

/// CPU time (user + system) of the control plane, the webhook server and
/// Kyverno when it runs, from /proc/PID/stat.
pub(crate) fn cpu_seconds(cluster: &Cluster, kyverno: Option<&kyverno::Kyverno>) -> BTreeMap<&'static str, f64> {
    let mut out = BTreeMap::new();
    let mut pids = cluster.plane.pids();
    pids.extend(cluster.webhook.pid().map(|pid| ("eval-admission", pid)));
    pids.extend(kyverno.map(|k| ("kyverno", k.pid)));
    for (name, pid) in pids {
        if let Some(seconds) = process_cpu_seconds(pid) {
            out.insert(name, seconds);
        }
    }
    out
}

/// CPU time (user + system) of one process, from /proc/PID/stat.
pub(crate) fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command: state is field 3, utime 14, stime 15.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // USER_HZ is 100 on every Linux this runs on.
    Some((ticks(14) + ticks(15)) / 100.0)
}

pub(crate) struct Sample {
    latencies_ms: Vec<f64>,
    wall: Duration,
}

/// `count` real creates, `concurrency` in flight (closed loop: each worker sends
/// its next create when the last one returns); every created Job is checked.
pub(crate) async fn creates(
    api: &Api<Job>,
    job: &Job,
    count: usize,
    concurrency: usize,
    mutated: bool,
) -> Result<Sample> {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency.min(count) {
        let (api, job, next) = (api.clone(), job.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let pp = PostParams::default();
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < count {
                let start = Instant::now();
                let created = api.create(&pp, &job).await.context("creating a Job")?;
                latencies.push(start.elapsed().as_secs_f64() * 1000.0);
                let ok = if mutated { queued(&created) } else { untouched(&created) };
                ensure!(
                    ok,
                    "Job {} was {} (labels {:?}, suspend {:?})",
                    created.metadata.name.unwrap_or_default(),
                    if mutated { "not queued and suspended" } else { "mutated" },
                    created.metadata.labels,
                    created.spec.and_then(|s| s.suspend)
                );
            }
            Ok::<_, anyhow::Error>(latencies)
        }));
    }
    let mut latencies_ms = Vec::with_capacity(count);
    for worker in workers {
        latencies_ms.extend(worker.await??);
    }
    Ok(Sample { latencies_ms, wall: started.elapsed() })
}

/// Kyverno's CPU per review without the API server in between: the bench
/// sends Kyverno's Job webhooks the AdmissionReviews the API server would
/// send for the bench's Job (its policy installed), closed loop, and reads
/// Kyverno's CPU from /proc. Each review still makes Kyverno's apiCall
/// through the API server (a Namespace GET for /mutate, a LocalQueue list for
/// /validate): that is part of what Kyverno costs.
pub(crate) async fn kyverno_reviews_direct(
    settings: &Settings,
    client: &kube::Client,
    kyverno: &kyverno::Kyverno,
    namespace: &str,
) -> Result<Value> {
    let (mutate_url, validate_url) = kyverno.job_webhook_urls(client).await?;
    let dry_run = PostParams { dry_run: true, ..PostParams::default() };
    // The object the API server sends the mutating webhooks: defaulted, with
    // managedFields, before the name, uid and creation time are set. Made by a
    // dry-run create in Kyverno's own namespace, which the policy excludes.
    let plain = Api::<Job>::namespaced(client.clone(), "kyverno").create(&dry_run, &evalhub_job("kyverno")?).await?;
    ensure!(untouched(&plain), "the dry-run Job in namespace kyverno was mutated");
    let mut object = serde_json::to_value(&plain)?;
    let metadata = object["metadata"].as_object_mut().context("metadata")?;
    for key in ["name", "uid", "creationTimestamp", "resourceVersion"] {
        metadata.remove(key);
    }
    metadata.insert("namespace".into(), json!(namespace));
    // The object the validating webhooks get: mutated, named.
    let mutated = Api::<Job>::namespaced(client.clone(), namespace).create(&dry_run, &evalhub_job(namespace)?).await?;
    ensure!(queued(&mutated), "the dry-run Job in {namespace} was not queued by Kyverno");
    let review = |object: Value| -> String {
        let gvk = json!({"group": "batch", "version": "v1", "kind": "Job"});
        let gvr = json!({"group": "batch", "version": "v1", "resource": "jobs"});
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "__UID__", "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
                "name": name, "namespace": namespace, "operation": "CREATE",
                "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
                "object": object, "oldObject": null, "dryRun": false,
                "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
            },
        })
        .to_string()
    };
    fn mutated_ok(answer: &Value) -> Result<()> {
        use base64::Engine;
        ensure!(answer["response"]["allowed"] == true, "Kyverno refused the Job: {answer}");
        let patch = answer["response"]["patch"].as_str().context("Kyverno sent no patch")?;
        let patch = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(patch)?)?;
        ensure!(patch.contains("queue-name") && patch.contains("suspend"), "Kyverno's patch: {patch}");
        Ok(())
    }
    fn allowed(answer: &Value) -> Result<()> {
        ensure!(answer["response"]["allowed"] == true, "Kyverno refused the Job: {answer}");
        Ok(())
    }
    let count = (2 * settings.creates).max(100);
    let mutate = kyverno.review_cpu(&mutate_url, &review(object), count, settings.concurrency, mutated_ok).await?;
    let validate = kyverno
        .review_cpu(&validate_url, &review(serde_json::to_value(&mutated)?), count, settings.concurrency, allowed)
        .await?;
    eprintln!(
        "kyverno direct: /mutate {} µs CPU per review, /validate {} µs ({count} reviews each, {} in flight)",
        mutate["cpu_us_per_review"], validate["cpu_us_per_review"], settings.concurrency
    );
    Ok(json!({
        "description": "AdmissionReviews for the bench's Job posted by the bench to Kyverno's Job webhooks over HTTPS \
            (HTTP/1.1 keep-alive, closed loop), its policy installed; cpu_us_per_review = Kyverno's user+system CPU \
            (from /proc) per review, each review including the policy's apiCall through kube-apiserver",
        "mutate": mutate,
        "validate": validate,
    }))
}

pub(crate) async fn create_latency(settings: &Settings, cluster: &Cluster, client: &kube::Client) -> Result<Value> {
    let policy = Policy::load()?;
    let admin_port = cluster.webhook.admin_port;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
    create_base(client).await?;
    let measured = settings.phases();
    // Kyverno, when its phase runs: started here, stopped (dropped) when this
    // part ends however it ends, and by its parent-death signal if the bench
    // is killed.
    let kyverno = if settings.kyverno { Some(kyverno::Kyverno::start(&cluster.plane, client).await?) } else { None };
    // One namespace per phase and round, all made before the first measurement
    // so the webhook's watch cache holds them all along.
    let mut namespaces = BTreeMap::new();
    for round in 1..=settings.rounds {
        for &phase in &measured {
            let name = format!("lat-r{round:02}-{}", phase.short());
            create_namespace(client, &name, "bench", "bench-cq").await?;
            namespaces.insert((round, phase.name()), name);
        }
    }

    let mut runs = Vec::new();
    let mut per_phase: BTreeMap<&str, Vec<[f64; 7]>> = BTreeMap::new();
    let mut pooled: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for round in 1..=settings.rounds {
        for &phase in &measured {
            let namespace = &namespaces[&(round, phase.name())];
            let api: Api<Job> = Api::namespaced(client.clone(), namespace);
            let job = evalhub_job(namespace)?;
            switch(cluster, client, &policy, kyverno.as_ref(), phase, &api, &job).await?;
            creates(&api, &job, settings.warmup, settings.concurrency, phase.mutates()).await.context("warm-up")?;
            let counters_before = webhook_counters(&http, admin_port).await?;
            let kyverno_before = match &kyverno {
                Some(k) => k.job_reviews(&http, namespace).await?,
                None => 0.0,
            };
            let cpu_before = cpu_seconds(cluster, kyverno.as_ref());
            let loadavg_1m = loadavg().split_whitespace().next().and_then(|v| v.parse::<f64>().ok());
            let sample = creates(&api, &job, settings.creates, settings.concurrency, phase.mutates()).await?;
            let cpu_after = cpu_seconds(cluster, kyverno.as_ref());
            let counters_after = webhook_counters(&http, admin_port).await?;
            let reviews = counters_after - counters_before;
            // The API server took HTTP/2 when offered, and only then.
            if phase.ours() {
                let h2 = counters_after.h2_connections;
                ensure!(
                    (phase == Phase::WebhookH2) == (h2 > 0.0),
                    "phase {}: {h2} HTTP/2 connections served since the server started",
                    phase.name()
                );
            }
            let kyverno_reviews = match &kyverno {
                Some(k) => Some(k.job_reviews(&http, namespace).await? - kyverno_before),
                None => None,
            };
            let cpu_ms_per_create: BTreeMap<&str, f64> = cpu_after
                .iter()
                .map(|(name, after)| {
                    let used = after - cpu_before.get(name).copied().unwrap_or(*after);
                    (*name, round3(used * 1000.0 / settings.creates as f64))
                })
                .collect();
            // One mutating review per create. Validating ones can be more: when
            // two concurrent creates draw the same generateName suffix, the API
            // server retries the loser with a new name, re-running validating
            // (not mutating) admission.
            let creates = settings.creates as f64;
            let expected = if phase.ours() { creates } else { 0.0 };
            let validate_ok = if phase.ours() {
                reviews.validate >= creates && reviews.validate <= creates * 1.05
            } else {
                reviews.validate == 0.0
            };
            ensure!(
                reviews.mutate == expected && validate_ok && reviews.confirm_lookups == 0.0,
                "phase {}: eval-admission answered {reviews:?} for {} creates, expected {expected} of each and no confirm lookups",
                phase.name(),
                settings.creates
            );
            // Kyverno: a mutating and a validating review per create in its
            // phase (validating ones again on a generateName retry), none otherwise.
            if let Some(kyverno_reviews) = kyverno_reviews {
                let ok = if phase == Phase::Kyverno {
                    kyverno_reviews >= 2.0 * creates && kyverno_reviews <= 2.1 * creates
                } else {
                    kyverno_reviews == 0.0
                };
                ensure!(
                    ok,
                    "phase {}: Kyverno answered {kyverno_reviews} reviews of Jobs for {} creates, expected {}",
                    phase.name(),
                    settings.creates,
                    if phase == Phase::Kyverno { "two per create" } else { "none" }
                );
            }

            let mut sorted = sample.latencies_ms.clone();
            sorted.sort_by(f64::total_cmp);
            let (p50, p90, p99) = (percentile(&sorted, 0.50), percentile(&sorted, 0.90), percentile(&sorted, 0.99));
            let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
            let throughput = sorted.len() as f64 / sample.wall.as_secs_f64();
            eprintln!(
                "round {round}/{} {:<26} p50 {p50:7.2} ms  p90 {p90:7.2} ms  p99 {p99:7.2} ms  {throughput:6.0} creates/s",
                settings.rounds,
                phase.name()
            );
            let apiserver_cpu = cpu_ms_per_create.get("kube-apiserver").copied().unwrap_or(f64::NAN);
            let kyverno_cpu = cpu_ms_per_create.get("kyverno").copied().unwrap_or(f64::NAN);
            per_phase.entry(phase.name()).or_default().push([
                p50,
                p90,
                p99,
                mean,
                throughput,
                apiserver_cpu,
                kyverno_cpu,
            ]);
            pooled.entry(phase.name()).or_default().extend(&sorted);
            runs.push(json!({
                "round": round, "phase": phase.name(), "namespace": namespace, "creates": sorted.len(),
                "p50_ms": round3(p50), "p90_ms": round3(p90), "p99_ms": round3(p99), "mean_ms": round3(mean),
                "max_ms": round3(*sorted.last().unwrap()), "creates_per_second": round3(throughput),
                "loadavg_1m_before": loadavg_1m,
                "webhook_reviews": {"mutate": reviews.mutate, "validate": reviews.validate},
                "kyverno_reviews": kyverno_reviews,
                "cpu_ms_per_create": cpu_ms_per_create,
                "verified": if phase.mutates() { "every created Job had the queue label and spec.suspend true" }
                            else { "no created Job had the queue label or spec.suspend true" },
            }));
            // Delete this phase's Jobs (Background: no orphan finalizer, which
            // nothing would remove here) so the next phase meets the same store.
            api.delete_collection(&DeleteParams::background(), &ListParams::default()).await?;
            let left = api.list(&ListParams::default().limit(1)).await?;
            ensure!(left.items.is_empty(), "Jobs in {namespace} were not deleted");
        }
    }
    // Kyverno's policy is still installed: its last phase of the last round
    // was the kyverno phase.
    let kyverno_direct = match &kyverno {
        Some(kyverno) => {
            let namespace = &namespaces[&(settings.rounds, Phase::Kyverno.name())];
            Some(kyverno_reviews_direct(settings, client, kyverno, namespace).await?)
        }
        None => None,
    };
    switch(
        cluster,
        client,
        &policy,
        kyverno.as_ref(),
        Phase::None,
        &Api::namespaced(client.clone(), &namespaces[&(1, "none")]),
        &evalhub_job(&namespaces[&(1, "none")])?,
    )
    .await?;

    let mut phases = serde_json::Map::new();
    let column = |phase: &str, i: usize| -> Vec<f64> { per_phase[phase].iter().map(|t| t[i]).collect() };
    let (base_p50, base_p99) = (median(&column("none", 0)), median(&column("none", 2)));
    for &phase in &measured {
        let name = phase.name();
        let (p50, p99) = (median(&column(name, 0)), median(&column(name, 2)));
        let all = pooled.get_mut(name).expect("measured");
        all.sort_by(f64::total_cmp);
        let mut entry = json!({
            "pooled_p50_ms": round3(percentile(all, 0.50)), "pooled_p99_ms": round3(percentile(all, 0.99)),
            "p50_ms": round3(p50), "p90_ms": round3(median(&column(name, 1))), "p99_ms": round3(p99),
            "mean_ms": round3(median(&column(name, 3))), "creates_per_second": round3(median(&column(name, 4))),
            "apiserver_cpu_ms_per_create": round3(median(&column(name, 5))),
        });
        if kyverno.is_some() {
            entry["kyverno_cpu_ms_per_create"] = json!(round3(median(&column(name, 6))));
        }
        if phase != Phase::None {
            let paired = |i: usize| -> f64 {
                median(&column(name, i).iter().zip(column("none", i)).map(|(a, b)| a - b).collect::<Vec<_>>())
            };
            entry["added_p50_ms"] = json!(round3(p50 - base_p50));
            entry["added_p99_ms"] = json!(round3(p99 - base_p99));
            entry["added_p50_ms_paired"] = json!(round3(paired(0)));
            entry["added_p99_ms_paired"] = json!(round3(paired(2)));
        }
        phases.insert(name.into(), entry);
    }
    let kyverno_setup = kyverno.as_ref().map(|k| {
        json!({
            "version": k.version(),
            "webhook_server": format!("https://127.0.0.1:{}", k.port),
            "policy": kyverno::POLICY_FIXTURE,
            "flags": "--serverIP 127.0.0.1:PORT, --clientRateLimitQPS/Burst 10000, --admissionReports=false, --omitEvents=PolicyApplied,PolicySkipped, logging verbosity 2 (the Helm chart's)",
        })
    });
    Ok(json!({
        "kyverno": kyverno_setup,
        "kyverno_direct": kyverno_direct,
        "description": "End-to-end Job create latency through kube-apiserver from a kube-rs client on loopback; \
            per phase the median over rounds of each round's percentile; added_* = phase median minus the none median, \
            added_*_paired = median over rounds of (phase - none) in the same round; \
            pooled_* = percentile of all rounds' creates together; \
            cpu_ms_per_create = CPU time (user+system) each process used during the measured creates, per create",
        "job": "examples/evalhub-job.yaml with generateName, in a namespace annotated kueue.x-k8s.io/default-queue-name: eval-queue with LocalQueue eval-queue",
        "concurrency": settings.concurrency,
        "creates_per_phase": settings.creates,
        "warmup_creates_per_phase": settings.warmup,
        "rounds": settings.rounds,
        "order": measured.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "phase_setup": {
            "none": "no webhook configuration or admission policy for Jobs",
            "eval-admission": "manifests/base/webhooks (mutating + validating, failurePolicy Fail) at https://127.0.0.1, release server watching the cluster",
            "mutating-admission-policy": format!("{MAP_FIXTURE} ({MAP_GROUP}/{MAP_VERSION}): queue label from the namespace annotation and spec.suspend true, no validation"),
            "kyverno": if let Some(kyverno) = &kyverno {
                json!(format!("Kyverno {} admission controller out of cluster (benches/kyverno.rs), {}: queue label from the namespace annotation by an apiCall, spec.suspend true, LocalQueue existence by an apiCall; it runs in every phase, its webhooks match Jobs only in its own", kyverno.version(), kyverno::POLICY_FIXTURE))
            } else {
                json!("not run (APISERVER_BENCH_KYVERNO=0, or a BENCH_SMOKE run without APISERVER_BENCH_KYVERNO=1)")
            },
        },
        "isolation": "one namespace per phase and round, its Jobs deleted (propagationPolicy Background) before the next phase",
        "phases": phases,
        "runs": runs,
    }))
}
