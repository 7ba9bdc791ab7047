//! The server over real HTTPS on loopback: both endpoints answer exactly what
//! `review` prints, bad input gets 400, certificates rotate under load,
//! shutdown loses no in-flight review, readiness follows sync and shutdown,
//! HTTP/2 is served only when `--http2` asks for it, with `--client-ca-file`
//! only a caller with a certificate from that CA and an allowed name is answered,
//! a config with fields this version does not know starts it with a warning each.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::Value;

fn state_server(dir: &std::path::Path, pki: &TestPki, extra: &[&str]) -> Server {
    let (cert, key) = pki.write(&dir.join("certs"));
    let cluster = repo("examples/cluster.yaml");
    let mut args = vec!["--cluster", cluster.to_str().unwrap()];
    args.extend_from_slice(extra);
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    serve(&cert, &key, &args, &[], dir)
}

async fn post(client: &reqwest::Client, url: &str, body: Vec<u8>) -> (u16, String) {
    let response = client.post(url).header("content-type", "application/json").body(body).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn both_endpoints_answer_what_review_prints_for_every_example() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("endpoints");
    let server = state_server(dir.path(), &pki, &[]);
    let client = client(&[&pki.ca_pem], false);
    let examples = [
        "evalhub-job.yaml",
        "aiperf-jobset.yaml",
        "aiperf-jobset-cohort.yaml",
        "job-missing-queue.yaml",
        "job-missing-priority-class.yaml",
        "job-missing-pod-priority-class.yaml",
        "job-preemptible.yaml",
        "job-checkpointing.yaml",
        "job-held-queue.yaml",
        "job-orphan-queue.yaml",
        "job-not-selected.yaml",
        "job-inactive-queue.yaml",
        "job-uncovered-resource.yaml",
        "job-exceeds-quota.yaml",
        "job-pods-refused.yaml",
        "job-bypass.yaml",
        "review-unsuspend.yaml",
    ];
    for example in examples {
        let printed = std::process::Command::new(BIN)
            .args(["review", "--cluster", repo("examples/cluster.yaml").to_str().unwrap()])
            .arg(repo("examples").join(example))
            .output()
            .unwrap();
        let printed: Value = serde_json::from_slice(&printed.stdout).unwrap();

        let body = review_body(example);
        let (status, mutating) = post(&client, &server.url("/mutate?timeout=10s"), body.clone()).await;
        assert_eq!(status, 200, "{example}: {mutating}");
        let mutating: Value = serde_json::from_str(&mutating).unwrap();
        assert_eq!(mutating, printed["mutating"], "{example}: /mutate answers what review prints");

        // The API server sends the validating webhook the object as mutated.
        let mut review: Value = serde_json::from_slice(&body).unwrap();
        review["request"]["object"] = printed["object"].clone();
        let (status, validating) = post(&client, &server.url("/validate"), serde_json::to_vec(&review).unwrap()).await;
        assert_eq!(status, 200, "{example}: {validating}");
        let validating: Value = serde_json::from_str(&validating).unwrap();
        assert_eq!(validating, printed["validating"], "{example}: /validate answers what review prints");
        let uid = review["request"]["uid"].as_str().unwrap();
        assert_eq!(validating["response"]["uid"], uid, "{example}: uid echoed");
    }
    let metrics = plain_client().get(server.admin_url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(
        metrics.contains(r#"eval_admission_reviews_total{webhook="validate",kind="Job",operation="CREATE",decision="denied",reason="preemptible",enforcement="Deny"} 1"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"eval_admission_cache_objects{kind="LocalQueue"} 10"#), "{metrics}");
    assert!(metrics.contains("eval_admission_tls_certificate_expiry_timestamp_seconds "), "{metrics}");
    let logs = server.logs();
    let line = logs.lines().find(|line| line.contains("\"reason\":\"preemptible\"")).expect("a log line per review");
    let line: Value = serde_json::from_str(line).unwrap();
    for field in ["uid", "kind", "namespace", "name", "operation", "user", "decision", "reason", "latency_us"] {
        assert!(line.get(field).is_some(), "log line has {field}: {line}");
    }
}

#[tokio::test]
async fn bad_input_gets_400_and_unknown_kinds_are_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("bad-input");
    let server = state_server(dir.path(), &pki, &[]);
    let client = client(&[&pki.ca_pem], false);
    for (body, expected) in [
        (b"{not json".to_vec(), "not an AdmissionReview"),
        (br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(), "no request"),
        (vec![0u8, 159, 146, 150], "not an AdmissionReview"),
    ] {
        let (status, text) = post(&client, &server.url("/validate"), body).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains(expected), "{text}");
    }
    // Over --max-body-bytes: 413 from the Content-Length alone, before the body
    // is read, so the client may see the connection close before it has sent it
    // all; tests/hostile_clients.rs reads that answer off a raw connection.

    let pod = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"pod-1",
        "kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"team-a-namespace","operation":"CREATE",
        "object":{"metadata":{"name":"p"},"spec":{"containers":[]}}}}"#;
    let (status, text) = post(&client, &server.url("/mutate"), pod.to_vec()).await;
    assert_eq!(status, 200);
    let response: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(response["response"]["allowed"], true);
    assert_eq!(response["response"]["uid"], "pod-1");
    assert!(response["response"].get("patch").is_none());
    // Plain HTTP on the TLS port gets no answer, and the server keeps serving.
    let plain = plain_client().post(format!("http://{}/mutate", server.addr())).body("{}").send().await;
    assert!(plain.is_err() || plain.unwrap().status().as_u16() >= 400);
    assert_eq!(post(&client, &server.url("/mutate"), pod.to_vec()).await.0, 200);
}

#[tokio::test]
async fn certificates_rotate_by_symlink_swap_under_load_without_a_failed_request() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    let (first, second) = (TestPki::new("first"), TestPki::new("second"));
    // Lay the files out as the kubelet does for a Secret volume.
    first.write(&secret.join("..2026_12_02_first"));
    std::os::unix::fs::symlink("..2026_12_02_first", secret.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/tls.crt", secret.join("tls.crt")).unwrap();
    std::os::unix::fs::symlink("..data/tls.key", secret.join("tls.key")).unwrap();
    let cluster = repo("examples/cluster.yaml");
    let server = serve(
        &secret.join("tls.crt"),
        &secret.join("tls.key"),
        &["--cluster", cluster.to_str().unwrap()],
        &[],
        dir.path(),
    );

    let both = client(&[&first.ca_pem, &second.ca_pem], true);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (sent, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let body = review_body("evalhub-job.yaml");
    let mut load = Vec::new();
    for _ in 0..4 {
        let (client, url, body) = (both.clone(), server.url("/mutate"), body.clone());
        let (stop, sent, failed) = (stop.clone(), sent.clone(), failed.clone());
        load.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                sent.fetch_add(1, Ordering::Relaxed);
                match client.post(&url).body(body.clone()).send().await {
                    Ok(response) if response.status() == 200 => {}
                    other => {
                        eprintln!("failed during rotation: {other:?}");
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // A CA that only trusts the second certificate fails before the swap...
    let only_second = client(&[&second.ca_pem], true);
    assert!(only_second.post(server.url("/mutate")).body(body.clone()).send().await.is_err());

    second.write(&secret.join("..2026_12_02_second"));
    std::os::unix::fs::symlink("..2026_12_02_second", secret.join("..data_tmp")).unwrap();
    std::fs::rename(secret.join("..data_tmp"), secret.join("..data")).unwrap();

    // ...and succeeds once the server has reloaded.
    let mut reloaded = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if let Ok(response) = only_second.post(server.url("/mutate")).body(body.clone()).send().await {
            reloaded = response.status() == 200;
            if reloaded {
                break;
            }
        }
    }
    assert!(reloaded, "the new certificate is served: {}", server.logs());

    // A mismatched pair (second's certificate, first's key) keeps the last good one.
    std::fs::create_dir_all(secret.join("..2026_12_02_broken")).unwrap();
    std::fs::write(secret.join("..2026_12_02_broken/tls.crt"), &second.cert_pem).unwrap();
    std::fs::write(secret.join("..2026_12_02_broken/tls.key"), &first.key_pem).unwrap();
    std::os::unix::fs::symlink("..2026_12_02_broken", secret.join("..data_tmp")).unwrap();
    std::fs::rename(secret.join("..data_tmp"), secret.join("..data")).unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;

    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await.unwrap();
    }
    assert!(sent.load(Ordering::Relaxed) > 20, "the load ran");
    assert_eq!(failed.load(Ordering::Relaxed), 0, "no request failed during rotation");
    assert_eq!(only_second.post(server.url("/mutate")).body(body).send().await.unwrap().status(), 200);
    let metrics = plain_client().get(server.admin_url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("eval_admission_tls_certificate_reloads_total 1"), "{metrics}");
    assert!(metrics.contains("eval_admission_tls_certificate_reload_failures_total 1"), "{metrics}");
}

#[tokio::test]
async fn sigterm_drains_without_losing_an_in_flight_review() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("shutdown");
    let mut server = state_server(dir.path(), &pki, &["--shutdown-delay", "1s"]);
    let client = client(&[&pki.ca_pem], false);
    let body = review_body("evalhub-job.yaml");
    assert_eq!(plain_client().get(server.admin_url("/readyz")).send().await.unwrap().status(), 200);

    // A review whose body arrives slowly, straddling the listener's close
    // (with its Content-Length, as the API server sends every body).
    let (mut sender, slow_body) = futures_channel();
    let slow = {
        let (client, url, length) = (client.clone(), server.url("/mutate"), body.len());
        tokio::spawn(async move {
            let request = client.post(url).header("content-length", length);
            request.body(reqwest::Body::wrap_stream(slow_body)).send().await
        })
    };
    let half = body.len() / 2;
    sender.send(body[..half].to_vec()).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    server.signal("TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ready = plain_client().get(server.admin_url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503, "not ready once shutdown starts");
    // Still serving during the delay.
    assert_eq!(post(&client, &server.url("/mutate"), body.clone()).await.0, 200);

    // Past the delay the listener closes; the slow review is still in flight.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(std::net::TcpStream::connect(server.addr()).is_err(), "listener closed");
    sender.send(body[half..].to_vec()).await;
    drop(sender);
    let response = slow.await.unwrap().expect("the in-flight review is answered");
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["response"]["allowed"], true);

    let status = tokio::task::spawn_blocking(move || server.wait().unwrap()).await.unwrap();
    assert!(status.success(), "exit 0 after a graceful shutdown: {status:?}");
}

#[tokio::test]
async fn not_ready_and_500_until_the_cluster_view_syncs() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("unsynced");
    let (cert, key) = pki.write(&dir.path().join("certs"));
    // A kubeconfig pointing at a closed port: the watches never sync.
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:{}', insecure-skip-tls-verify: true}}\n\
             users:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n",
            testkit::free_port().unwrap()
        ),
    )
    .unwrap();
    let server = serve(&cert, &key, &[], &[("KUBECONFIG", kubeconfig.to_str().unwrap())], dir.path());
    let ready = plain_client().get(server.admin_url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    assert!(ready.text().await.unwrap().contains("not synced"));
    assert_eq!(plain_client().get(server.admin_url("/livez")).send().await.unwrap().status(), 200);
    let (status, text) =
        post(&client(&[&pki.ca_pem], false), &server.url("/mutate"), review_body("evalhub-job.yaml")).await;
    assert_eq!(status, 500, "the API server applies failurePolicy: {text}");
    let metrics = plain_client().get(server.admin_url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("eval_admission_cache_synced 0"), "{metrics}");
}

/// A body stream fed from the test.
struct BodySender(tokio::sync::mpsc::Sender<Result<Vec<u8>, std::io::Error>>);

impl BodySender {
    async fn send(&mut self, chunk: Vec<u8>) {
        self.0.send(Ok(chunk)).await.unwrap();
    }
}

fn futures_channel() -> (BodySender, impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>>) {
    let (sender, mut receiver) = tokio::sync::mpsc::channel(4);
    let stream = futures::stream::poll_fn(move |cx| receiver.poll_recv(cx));
    (BodySender(sender), stream)
}

#[tokio::test]
async fn a_second_signal_exits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("second-signal");
    let mut server = state_server(dir.path(), &pki, &["--shutdown-delay", "60s"]);
    server.signal("TERM");
    // Poll: on a busy machine the first signal may take a while to be handled.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let status = plain_client().get(server.admin_url("/readyz")).send().await.unwrap().status();
        if status == 503 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still {status} long after SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = std::time::Instant::now();
    server.signal("TERM");
    let status = tokio::task::spawn_blocking(move || server.wait().unwrap()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "did not wait out the 60 s delay");
    assert_eq!(status.code(), Some(130));
}

/// `--http2` offers HTTP/2 by ALPN beside HTTP/1.1: a client that prefers it
/// gets it, with the same answer; without the flag the server speaks HTTP/1.1
/// only. Each connection is counted by the protocol ALPN chose.
#[tokio::test]
async fn http2_is_offered_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("http2");
    let body = review_body("evalhub-job.yaml");
    let cases: [(&[&str], reqwest::Version, &str); 2] =
        [(&[], reqwest::Version::HTTP_11, "http/1.1"), (&["--http2"], reqwest::Version::HTTP_2, "h2")];
    for (flags, version, protocol) in cases {
        let server = state_server(&dir.path().join(protocol.replace('/', "-")), &pki, flags);
        // reqwest offers h2 and http/1.1 by ALPN, h2 first.
        let client = client(&[&pki.ca_pem], false);
        let response = client
            .post(server.url("/mutate"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!((response.status().as_u16(), response.version()), (200, version), "{flags:?}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["response"]["allowed"], true, "{answer}");
        assert_eq!(answer["response"]["patchType"], "JSONPatch", "{answer}");
        let metrics = reqwest::get(server.admin_url("/metrics")).await.unwrap().text().await.unwrap();
        let served =
            format!("eval_admission_connections_served_total{{listener=\"webhook\",protocol=\"{protocol}\"}} 1");
        assert!(metrics.lines().any(|line| line == served), "{served} in:\n{metrics}");
        // The plain admin listener (which served this scrape) never offers h2.
        let admin_h2 = "eval_admission_connections_served_total{listener=\"admin\",protocol=\"h2\"}";
        assert!(!metrics.contains(admin_h2), "{admin_h2} in:\n{metrics}");
    }
}

/// `--client-ca-file` with `--client-name`: only a certificate from that CA
/// naming an allowed caller gets an answer; every other caller's handshake
/// fails (rustls's alert), so no request of theirs is ever read.
#[tokio::test]
async fn with_a_client_ca_only_an_allowed_certificate_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("client-auth");
    let callers = testkit::Ca::new().unwrap();
    let client_ca = dir.path().join("client-ca.crt");
    std::fs::write(&client_ca, &callers.pem).unwrap();
    let flags = ["--client-ca-file", client_ca.to_str().unwrap(), "--client-name", "other-name,kube-apiserver"];
    let server = state_server(dir.path(), &pki, &flags);
    let body = review_body("evalhub-job.yaml");
    let certificate = |ca: &testkit::Ca, name: &str| {
        let (cert, key) = ca.issue(name, testkit::Usage::Client { user: name, group: "webhooks" }).unwrap();
        Some(reqwest::Identity::from_pem(format!("{cert}{key}").as_bytes()).unwrap())
    };
    let post_as = |identity: Option<reqwest::Identity>| {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(Duration::from_secs(10))
            .add_root_certificate(reqwest::Certificate::from_pem(pki.ca_pem.as_bytes()).unwrap());
        if let Some(identity) = identity {
            builder = builder.identity(identity);
        }
        let client = builder.build().unwrap();
        client.post(server.url("/mutate")).header("content-type", "application/json").body(body.clone()).send()
    };

    let response = post_as(certificate(&callers, "kube-apiserver")).await.unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["response"]["allowed"], true, "{answer}");

    let stranger_ca = testkit::Ca::new().unwrap();
    for (who, identity) in [
        ("no certificate", None),
        ("another CA's certificate", certificate(&stranger_ca, "kube-apiserver")),
        ("a name not allowed", certificate(&callers, "someone-else")),
    ] {
        let refused = post_as(identity).await;
        assert!(refused.is_err(), "{who}: answered {refused:?}");
    }
    let metrics = plain_client().get(server.admin_url("/metrics")).send().await.unwrap().text().await.unwrap();
    for reason in ["untrusted", "name"] {
        let line = format!("eval_admission_client_certificates_refused_total{{reason=\"{reason}\"}} 1");
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
}

/// A config written for a newer version (a field this one does not know)
/// does not stop the server: it becomes ready, serves, and logs one warning
/// per field, with its path. A rollback after a config change must not leave
/// the webhooks (`failurePolicy: Fail`) without a server.
#[tokio::test]
async fn a_config_from_a_newer_version_starts_the_server_with_a_warning_per_unknown_field() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("newer-config");
    let example = std::fs::read_to_string(repo("examples/config.yaml")).unwrap();
    let newer = example.replace("  - name: aiperf\n", "  - name: aiperf\n    checkpointing: {every: 10m}\n");
    assert_ne!(newer, example, "examples/config.yaml has the aiperf selector in block style");
    let config = dir.path().join("newer.yaml");
    std::fs::write(&config, format!("{newer}futureSection: {{enabled: true}}\n")).unwrap();
    let server = state_server(dir.path(), &pki, &["--config", config.to_str().unwrap()]);
    assert_eq!(plain_client().get(server.admin_url("/readyz")).send().await.unwrap().status(), 200);
    let (status, text) =
        post(&client(&[&pki.ca_pem], false), &server.url("/mutate"), review_body("evalhub-job.yaml")).await;
    assert_eq!(status, 200, "{text}");
    let warnings = |logs: &str| -> Vec<String> {
        logs.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|line| {
                line["level"] == "WARN" && line["message"].as_str().is_some_and(|m| m.contains("unknown field"))
            })
            .map(|line| line["field"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let logged = testkit::wait_for("the unknown fields' warnings in the log", Duration::from_secs(5), || {
        let logged = warnings(&server.logs());
        (logged.len() >= 2).then_some(logged)
    });
    assert_eq!(logged, ["selection.selectors[1].checkpointing", "futureSection"], "{}", server.logs());
}
