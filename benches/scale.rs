//! Memory and start-up at scale from a state file: 10,000 Namespaces and 10,000
//! LocalQueues, with a realistic set of ClusterQueues (in a two-level cohort
//! tree), Cohorts, WorkloadPriorityClasses and PriorityClasses. Measures the time
//! from spawn to /readyz 200 and the RSS once ready, then after a burst of
//! reviews. Writes $BENCH_OUT/scale.json. (The same from a real API server is in
//! benches/apiserver/.)

mod fixtures;
mod harness;

use std::fmt::Write;
use std::time::Duration;

use serde_json::json;

fn state_file(namespaces: usize) -> String {
    let mut yaml = String::with_capacity(namespaces * 400);
    for root in 0..4 {
        writeln!(yaml, "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: root-{root}}}")
            .unwrap();
        for child in 0..4 {
            writeln!(yaml, "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: cohort-{root}-{child}}}\nspec: {{parentName: root-{root}}}").unwrap();
        }
    }
    for queue in 0..64 {
        let (cohort, preemption) =
            (format!("cohort-{}-{}", queue % 4, (queue / 4) % 4), ["Never", "LowerPriority", "Any"][queue % 3]);
        writeln!(
            yaml,
            "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: cq-{queue}}}\nspec:\n  cohortName: {cohort}\n  \
             preemption: {{withinClusterQueue: {}, reclaimWithinCohort: {preemption}}}\n  resourceGroups:\n  - coveredResources: [cpu, memory, nvidia.com/gpu]\n    \
             flavors:\n    - name: default-flavor\n      resources:\n      - {{name: cpu, nominalQuota: 64}}\n      - {{name: memory, nominalQuota: 256Gi}}\n      \
             - {{name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 4}}",
            if queue % 2 == 0 { "Never" } else { "LowerPriority" }
        )
        .unwrap();
    }
    for (name, value) in [("production", 1000), ("routine", 500), ("experimental", 100), ("batch", 50)] {
        writeln!(yaml, "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {{name: {name}}}\nvalue: {value}").unwrap();
    }
    for (name, value) in [("system-cluster-critical", 2_000_000_000), ("gpu-batch", 200), ("interactive", 300)] {
        writeln!(
            yaml,
            "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {name}}}\nvalue: {value}"
        )
        .unwrap();
    }
    for ns in 0..namespaces {
        writeln!(
            yaml,
            "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-{ns}\n  labels: {{team: team-{ns}, kubernetes.io/metadata.name: team-{ns}}}\n  \
             annotations: {{kueue.x-k8s.io/default-queue-name: eval-queue}}\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n\
             metadata: {{name: eval-queue, namespace: team-{ns}}}\nspec: {{clusterQueue: cq-{}}}",
            ns % 64
        )
        .unwrap();
    }
    yaml
}

fn main() {
    let smoke = harness::smoke();
    let namespaces = if smoke { 500 } else { 10_000 };
    let runs = if smoke { 1 } else { 5 };
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, ca) = harness::certificates(dir.path());
    let state = dir.path().join("state.yaml");
    std::fs::write(&state, state_file(namespaces)).unwrap();
    let state_bytes = std::fs::metadata(&state).unwrap().len();

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
        .build()
        .unwrap();
    // A review in the last namespace, so the lookups run against the full maps.
    let mut review: serde_json::Value = serde_json::from_slice(&fixtures::job_create()).unwrap();
    let last = format!("team-{}", namespaces - 1);
    review["request"]["namespace"] = json!(last);
    review["request"]["object"]["metadata"]["namespace"] = json!(last);
    let body = serde_json::to_vec(&review).unwrap();

    let (mut ready, mut rss_ready, mut rss_after) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let args = ["--cluster", state.to_str().unwrap()];
        let server = harness::serve(harness::BIN, None, &cert, &key, &args, &[], Duration::from_secs(60));
        ready.push(server.ready_after.as_secs_f64());
        rss_ready.push(harness::rss_bytes(&server) as f64 / (1024.0 * 1024.0));
        let url = format!("https://localhost:{}/mutate", server.port);
        runtime.block_on(async {
            for _ in 0..if smoke { 50 } else { 2000 } {
                let response = client.post(&url).body(body.clone()).send().await.unwrap();
                assert_eq!(response.status(), 200);
                let answer: serde_json::Value = response.json().await.unwrap();
                assert_eq!(answer["response"]["auditAnnotations"]["reason"], "queued", "the default queue was found");
            }
        });
        rss_after.push(harness::rss_bytes(&server) as f64 / (1024.0 * 1024.0));
    }
    let report = json!({
        "smoke": smoke,
        "namespaces": namespaces,
        "local_queues": namespaces,
        "cluster_queues": 64,
        "cohorts": 20,
        "state_file_bytes": state_bytes,
        "runs": runs,
        "ready_seconds_median": harness::median(&mut ready.clone()),
        "rss_mib_at_ready_median": harness::median(&mut rss_ready.clone()),
        "rss_mib_after_reviews_median": harness::median(&mut rss_after.clone()),
        "ready_seconds_each": ready,
        "rss_mib_at_ready_each": rss_ready,
        "rss_mib_after_reviews_each": rss_after,
    });
    println!(
        "{namespaces} namespaces + {namespaces} LocalQueues from a {:.1} MB file: ready in {:.3} s, RSS {:.1} MiB at ready, {:.1} MiB after reviews (medians of {runs})",
        state_bytes as f64 / 1e6,
        report["ready_seconds_median"].as_f64().unwrap(),
        report["rss_mib_at_ready_median"].as_f64().unwrap(),
        report["rss_mib_after_reviews_median"].as_f64().unwrap()
    );
    harness::write_json("scale.json", &report);
}
