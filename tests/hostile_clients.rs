//! The server against clients that mean it harm or are broken, on loopback:
//! stalled bodies, a full descriptor table, half-sent requests on the admin
//! port, durations that overflow, bodies judged by their length alone. Each
//! holds the Deployment's limits (128 MiB of memory) while reviews from a
//! well-behaved client go on being answered.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// The Deployment's memory limit (manifests/base/deployment.yaml).
const DEPLOYMENT_MEMORY_LIMIT_BYTES: u64 = 128 * 1024 * 1024;

fn state_server(dir: &std::path::Path, pki: &TestPki, descriptors: Option<u64>) -> Server {
    let (cert, key) = pki.write(&dir.join("certs"));
    let cluster = repo("examples/cluster.yaml");
    serve_limited(&cert, &key, &["--cluster", cluster.to_str().unwrap()], &[], dir, descriptors)
}

fn connector(ca_pem: &str) -> TlsConnector {
    connector_offering(ca_pem, &[])
}

/// A TLS client offering `protocols` by ALPN.
fn connector_offering(ca_pem: &str, protocols: &[&[u8]]) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = protocols.iter().map(|protocol| protocol.to_vec()).collect();
    TlsConnector::from(Arc::new(config))
}

async fn tls(connector: &TlsConnector, server: &Server) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(server.addr()).await?;
    connector.connect("localhost".try_into().unwrap(), tcp).await
}

/// A field of /proc/PID/status in bytes (`VmHWM`: peak RSS; `VmRSS`: now).
fn memory(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|dir| dir.count()).unwrap_or(0)
}

async fn metric(server: &Server, prefix: &str) -> f64 {
    let text = plain_client().get(server.admin_url("/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines().filter_map(|line| line.strip_prefix(prefix)?.trim().parse::<f64>().ok()).sum()
}

/// A well-behaved review, answered with its uid.
async fn review_answered(client: &reqwest::Client, server: &Server, body: &[u8]) -> bool {
    let sent = client.post(server.url("/mutate?timeout=10s")).body(body.to_vec()).send().await;
    let Ok(response) = sent else { return false };
    if response.status() != 200 {
        return false;
    }
    let answer: Value = response.json().await.unwrap_or_default();
    answer["response"]["uid"].is_string()
}

/// Reads until the server closes the connection (or `within` passes); returns
/// what it answered, if anything, and whether it closed in time.
async fn until_closed(stream: &mut (impl AsyncReadExt + Unpin), within: Duration) -> (String, bool) {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&seen).into_owned(), true),
            Ok(Ok(n)) => seen.extend_from_slice(&buffer[..n]),
            Err(_) => return (String::from_utf8_lossy(&seen).into_owned(), false),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stalled_bodies_hold_memory_under_the_deployment_limit_and_reviews_are_answered() {
    const ATTACKERS: usize = 64;
    const DECLARED: usize = 8 * 1024 * 1024;
    const SENT: usize = DECLARED - 512 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("stalled");
    let server = state_server(dir.path(), &pki, None);
    let pid = server.pid();
    let connector = connector(&pki.ca_pem);
    let client = client(&[&pki.ca_pem], true);
    let body = review_body("evalhub-job.yaml");
    assert!(review_answered(&client, &server, &body).await);

    // Each attacker sends all but half a MiB of an 8 MiB body, then stalls.
    let mut attackers = Vec::new();
    for _ in 0..ATTACKERS {
        let connector = connector.clone();
        let mut stream = tls(&connector, &server).await.unwrap();
        attackers.push(tokio::spawn(async move {
            let head = format!(
                "POST /mutate?timeout=10s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                 Content-Length: {DECLARED}\r\n\r\n"
            );
            let chunk = vec![b' '; 64 * 1024];
            let mut sent = stream.write_all(head.as_bytes()).await.map(|()| 0);
            while let Ok(so_far) = sent {
                if so_far >= SENT {
                    break;
                }
                sent = stream.write_all(&chunk).await.map(|()| so_far + chunk.len());
            }
            let _ = stream.flush().await;
            until_closed(&mut stream, Duration::from_secs(25)).await
        }));
    }
    // While they stall, reviews from a well-behaved client are answered.
    let started = Instant::now();
    let mut answered = 0;
    for _ in 0..20 {
        answered += usize::from(review_answered(&client, &server, &body).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let peak = memory(pid, "VmHWM:");
    let busy = metric(&server, "eval_admission_review_errors_total{webhook=\"mutate\",error=\"busy\"}").await;
    eprintln!(
        "stalled bodies: {ATTACKERS} x {SENT} bytes sent; peak RSS {:.1} MiB; {answered}/20 reviews answered in {:?}; \
         {busy} refused with 429",
        peak as f64 / 1048576.0,
        started.elapsed()
    );
    assert_eq!(answered, 20, "every well-behaved review answered during the attack");
    assert!(peak < DEPLOYMENT_MEMORY_LIMIT_BYTES, "peak RSS {peak} under the Deployment's limit");
    assert!(busy >= 1.0, "the large-body pool refused the attackers it could not hold");

    // The review deadline covers the body: every stalled connection is answered
    // (429 at once, or 408 at the deadline) and closed, none held open.
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    for attacker in attackers {
        let (answer, closed) = attacker.await.unwrap();
        assert!(closed, "closed by the server: {answer:?}");
        let status = answer.get(9..12).unwrap_or("none").to_string();
        *statuses.entry(status).or_default() += 1;
    }
    eprintln!("stalled bodies answered: {statuses:?}");
    assert!(statuses.get("408").is_some_and(|n| *n >= 1), "the ones it held timed out: {statuses:?}");
    assert!(review_answered(&client, &server, &body).await);
}

/// A flood of connections that send a head and stall, more than the cap:
/// each new one takes the place of the oldest that has completed no request,
/// so the API server's keep-alive connection goes on and its fresh
/// connections (a second API server, or one after a keep-alive closed) are
/// served too, while the descriptor table never fills. Before eviction, fresh
/// connections were closed at once until the attackers' deadlines passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_descriptor_flood_gives_way_to_fresh_connections_and_reviews_go_on() {
    const DESCRIPTORS: u64 = 256;
    const ATTACKERS: usize = 300;
    const FRESH: usize = 15;
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("descriptors");
    let server = state_server(dir.path(), &pki, Some(DESCRIPTORS));
    let pid = server.pid();
    let connector = connector(&pki.ca_pem);
    // The API server's keep-alive connection, opened before the attack.
    let keep_alive = client(&[&pki.ca_pem], false);
    let body = review_body("evalhub-job.yaml");
    assert!(review_answered(&keep_alive, &server, &body).await);

    // Each attacker sends headers and `{`, then stalls.
    let mut held = Vec::new();
    for _ in 0..ATTACKERS {
        if let Ok(mut stream) = tls(&connector, &server).await {
            let head = "POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4096\r\n\r\n{";
            if stream.write_all(head.as_bytes()).await.is_ok() && stream.flush().await.is_ok() {
                held.push(stream);
            }
        }
    }
    // The cap is full of stalled attackers now; reviews on the keep-alive
    // connection and on fresh ones, a new connection each, are answered.
    let fresh = client(&[&pki.ca_pem], true);
    let mut kept_answered = 0;
    let mut fresh_answered = 0;
    for _ in 0..FRESH {
        kept_answered += usize::from(review_answered(&keep_alive, &server, &body).await);
        fresh_answered += usize::from(review_answered(&fresh, &server, &body).await);
    }
    let descriptors = open_descriptors(pid);
    let evicted = metric(&server, "eval_admission_connections_evicted_total{listener=\"webhook\"}").await;
    let refused = metric(&server, "eval_admission_connections_refused_total{listener=\"webhook\"}").await;
    eprintln!(
        "descriptor flood: {ATTACKERS} stalled connections under a {DESCRIPTORS}-descriptor limit: {evicted} evicted, \
         {refused} refused, {descriptors} descriptors open; {kept_answered}/{FRESH} keep-alive and \
         {fresh_answered}/{FRESH} fresh-connection reviews answered"
    );
    assert_eq!(kept_answered, FRESH, "reviews on the keep-alive connection go on");
    assert_eq!(fresh_answered, FRESH, "fresh connections are served during the flood");
    assert!(evicted >= (ATTACKERS - DESCRIPTORS as usize) as f64, "the attackers over the cap evicted older ones");
    assert!(descriptors < DESCRIPTORS as usize, "{descriptors} descriptors open");
    assert!(!server.logs().contains("accept failed"), "the descriptor table never filled");

    // Every stalled connection is closed: evicted, or at the review deadline.
    let mut all_closed = true;
    for mut stream in held {
        all_closed &= until_closed(&mut stream, Duration::from_secs(20)).await.1;
    }
    assert!(all_closed, "every stalled request was closed");
}

/// An HTTP/2 connection to the server, its driver running in the background.
async fn h2_connection(connector: &TlsConnector, server: &Server) -> h2::client::SendRequest<axum::body::Bytes> {
    let stream = tls(connector, server).await.unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]), "the server offers h2 with --http2");
    let (send, connection) = h2::client::handshake(stream).await.unwrap();
    tokio::spawn(connection);
    send
}

/// A stream's request head: a review of `length` bytes to come.
fn h2_review_head(server: &Server, length: usize) -> axum::http::Request<()> {
    axum::http::Request::post(server.url("/mutate?timeout=10s"))
        .header("content-type", "application/json")
        .header("content-length", length)
        .body(())
        .unwrap()
}

/// HTTP/2 carries several bodies per connection: 200 connections with 8
/// streams each stalling a 64 KiB body, then 64 bodies sent a byte per DATA
/// frame. Before, the first held 143 MiB (the small-body allowance counted one
/// body per connection) and the second 185 MiB (each frame kept with its
/// receive buffer). Now each connection holds one small body outside the
/// pool and bodies are copied into one buffer as they arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn http2_bodies_stay_under_the_deployment_limit() {
    const CONNECTIONS: usize = 200;
    const STREAMS: usize = 8;
    const BODY: usize = 64 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("h2");
    let (cert, key) = pki.write(&dir.path().join("certs"));
    let cluster = repo("examples/cluster.yaml");
    let server =
        serve_limited(&cert, &key, &["--cluster", cluster.to_str().unwrap(), "--http2"], &[], dir.path(), None);
    let pid = server.pid();
    let connector = connector_offering(&pki.ca_pem, &[b"h2"]);
    let client = client(&[&pki.ca_pem], false);
    let body = review_body("evalhub-job.yaml");
    assert!(review_answered(&client, &server, &body).await);

    // 200 x 8 streams, each sending all but a byte of its 64 KiB body, then stalling.
    let mut stalled = Vec::new();
    for _ in 0..CONNECTIONS {
        let mut send = h2_connection(&connector, &server).await;
        for _ in 0..STREAMS {
            send = send.ready().await.unwrap();
            let Ok((answer, mut stream)) = send.send_request(h2_review_head(&server, BODY), false) else { break };
            stream.send_data(axum::body::Bytes::from(vec![b' '; BODY - 1]), false).ok();
            stalled.push((answer, stream));
        }
    }
    let mut answered = 0;
    for _ in 0..10 {
        answered += usize::from(review_answered(&client, &server, &body).await);
    }
    let peak_stalled = memory(pid, "VmHWM:");

    // 64 bodies, a byte per DATA frame, on 8 connections.
    let mut trickles = Vec::new();
    for _ in 0..8 {
        let mut send = h2_connection(&connector, &server).await;
        for _ in 0..8 {
            send = send.ready().await.unwrap();
            let Ok((answer, mut stream)) = send.send_request(h2_review_head(&server, BODY), false) else { break };
            trickles.push(tokio::spawn(async move {
                for _ in 0..BODY - 1 {
                    stream.reserve_capacity(1);
                    let granted = std::future::poll_fn(|cx| stream.poll_capacity(cx)).await;
                    if !matches!(granted, Some(Ok(n)) if n >= 1)
                        || stream.send_data(axum::body::Bytes::from_static(b" "), false).is_err()
                    {
                        break;
                    }
                }
                (answer, stream)
            }));
        }
    }
    let mut trickled = Vec::new();
    for trickle in trickles {
        trickled.push(trickle.await.unwrap());
    }
    for _ in 0..10 {
        answered += usize::from(review_answered(&client, &server, &body).await);
    }
    let peak = memory(pid, "VmHWM:");
    let busy = metric(&server, "eval_admission_review_errors_total{webhook=\"mutate\",error=\"busy\"}").await;
    eprintln!(
        "HTTP/2: {} streams stalling {BODY}-byte bodies on {CONNECTIONS} connections: peak RSS {:.1} MiB; then {} \
         bodies a byte per frame: peak RSS {:.1} MiB; {busy} refused with 429; {answered}/20 reviews answered",
        stalled.len(),
        peak_stalled as f64 / 1048576.0,
        trickled.len(),
        peak as f64 / 1048576.0
    );
    assert_eq!(answered, 20, "every well-behaved review answered during the attacks");
    assert!(peak < DEPLOYMENT_MEMORY_LIMIT_BYTES, "peak RSS {peak} under the Deployment's limit");
    assert!(busy >= 1.0, "streams past each connection's one small body counted against the pool");
    drop((stalled, trickled));
}

/// The costliest review: 4,000 sidecars and 4,000 init containers,
/// each asking for a resource of its own (12.2 s of CPU before the request
/// arithmetic was made linear). It is refused at once, with 400 and the cap
/// named; a well-behaved review sent beside it is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sidecar_flood_is_refused_with_the_cap_named() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("sidecars");
    let server = state_server(dir.path(), &pki, None);
    let client = client(&[&pki.ca_pem], false);
    let job = testkit::JobBuilder::evalhub("team-a-namespace")
        .queue("eval-queue")
        .pod(testkit::workload::sidecar_flood(4000, 4000))
        .build();
    let flood = eval_admission::admission::ReviewBuilder::create(eval_admission::workload::WorkloadKind::Job, &job)
        .uid("flood")
        .to_bytes();
    assert!(flood.len() > 600 * 1024, "{} bytes", flood.len());
    let well_behaved = review_body("evalhub-job.yaml");
    let (answer, beside) = tokio::join!(
        async { client.post(server.url("/validate?timeout=10s")).body(flood).send().await.unwrap() },
        review_answered(&client, &server, &well_behaved)
    );
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.unwrap();
    let status = &answer["response"]["status"];
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!((status["code"].as_u64(), status["reason"].as_str()), (Some(400), Some("BadRequest")));
    let message = status["message"].as_str().unwrap();
    let most = eval_admission::workload::size::MOST_CONTAINERS;
    assert!(message.contains(&format!("has 8001 containers and init containers, more than the {most}")), "{message}");
    assert!(beside, "a review beside it answered");
}

/// The API server keeps an idle connection to a webhook for 90 s and does not
/// retry a review it wrote into one this side was closing: the webhook port
/// keeps idle connections past the head deadline (10 s), while a head that
/// trickles in a byte a second is still closed at that deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_keep_alive_connections_outlive_the_head_deadline_and_trickled_heads_do_not() {
    const HEAD_DEADLINE: Duration = Duration::from_secs(10);
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("idle");
    let server = state_server(dir.path(), &pki, None);
    let served = "eval_admission_connections_served_total{listener=\"webhook\",protocol=\"http/1.1\"}";
    // reqwest, like Go's transport, keeps an idle connection for 90 s.
    let keep_alive = client(&[&pki.ca_pem], false);
    let body = review_body("evalhub-job.yaml");
    assert!(review_answered(&keep_alive, &server, &body).await);
    assert_eq!(metric(&server, served).await, 1.0);

    let trickler = {
        let mut stream = tls(&connector(&pki.ca_pem), &server).await.unwrap();
        tokio::spawn(async move {
            let started = Instant::now();
            for byte in b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nX-Slow: ".iter().cycle() {
                if stream.write_all(&[*byte]).await.is_err() || started.elapsed() > 6 * HEAD_DEADLINE {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            (until_closed(&mut stream, HEAD_DEADLINE).await.1, started.elapsed())
        })
    };
    // A new connection that never sends a request is closed at the head deadline, as before.
    let mut silent = tls(&connector(&pki.ca_pem), &server).await.unwrap();
    let silent = tokio::spawn(async move { until_closed(&mut silent, 3 * HEAD_DEADLINE).await.1 });
    tokio::time::sleep(HEAD_DEADLINE + Duration::from_secs(3)).await;
    assert!(review_answered(&keep_alive, &server, &body).await);
    assert_eq!(metric(&server, served).await, 3.0, "the idle connection was reused; only the two others are new");
    assert!(silent.await.unwrap(), "the silent new connection was closed");
    let (closed, after) = trickler.await.unwrap();
    eprintln!("a head trickled a byte a second was closed after {after:?}");
    assert!(closed && after < 6 * HEAD_DEADLINE, "the head deadline closed the trickled head");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_port_closes_half_sent_requests_and_stays_bounded() {
    const ATTACKERS: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("admin");
    let server = state_server(dir.path(), &pki, None);
    let mut streams = Vec::new();
    for _ in 0..ATTACKERS {
        let mut stream = TcpStream::connect(server.admin_addr()).await.unwrap();
        let _ = stream.write_all(b"GET /livez HTTP/1.1\r\nHost: loc").await;
        streams.push(stream);
    }
    let started = Instant::now();
    let mut closed = 0;
    for stream in &mut streams {
        closed += usize::from(until_closed(stream, Duration::from_secs(15)).await.1);
    }
    eprintln!("admin port: {closed}/{ATTACKERS} half-sent requests closed within {:?}", started.elapsed());
    assert_eq!(closed, ATTACKERS, "the header deadline closes every half-sent request");
    let livez = plain_client().get(server.admin_url("/livez")).send().await.unwrap();
    assert_eq!(livez.status(), 200);
}

#[tokio::test]
async fn bodies_are_judged_by_their_length_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("length");
    let server = state_server(dir.path(), &pki, None);
    let connector = connector(&pki.ca_pem);
    // Over the limit by its Content-Length alone: 413 with nothing of the body sent.
    let mut stream = tls(&connector, &server).await.unwrap();
    let head = "POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 9000000\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    let (answer, _) = until_closed(&mut stream, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // No Content-Length (chunked): the API server never sends that.
    let mut stream = tls(&connector, &server).await.unwrap();
    let head = "POST /mutate HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    let (answer, _) = until_closed(&mut stream, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 411"), "{answer}");
    // A timeout longer than any Duration is ignored, not a panic.
    let client = client(&[&pki.ca_pem], false);
    let response = client
        .post(server.url("/mutate?timeout=100000000000000000000s"))
        .body(review_body("evalhub-job.yaml"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // An array where an object belongs is a 400, not a patch the API server cannot apply.
    let mut review: Value = serde_json::from_slice(&review_body("evalhub-job.yaml")).unwrap();
    review["request"]["object"]["spec"] = serde_json::json!([]);
    let response = client.post(server.url("/mutate")).body(review.to_string()).send().await.unwrap();
    assert_eq!(response.status(), 400, "{}", response.text().await.unwrap());
    assert!(!server.logs().contains("panicked"), "{}", server.logs());
}

#[test]
fn durations_have_a_range_and_go_syntax() {
    let run = |flag: &str, value: &str| {
        std::process::Command::new(BIN)
            .args(["serve", "--tls-cert", "/nonexistent", "--tls-key", "/nonexistent", flag, value])
            .output()
            .unwrap()
    };
    let too_long = run("--shutdown-delay", "100000000000000000000s");
    let stderr = String::from_utf8_lossy(&too_long.stderr);
    assert_eq!(too_long.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("outside the range allowed, 0ns to 120s"), "{stderr}");
    let no_unit = run("--drain-timeout", "30");
    assert!(String::from_utf8_lossy(&no_unit.stderr).contains("missing unit"), "{no_unit:?}");
    // Go's `1m30s` is read as Go reads it; the run goes on to fail on the certificate.
    let go_syntax = run("--drain-timeout", "1m30s");
    let stderr = String::from_utf8_lossy(&go_syntax.stderr);
    assert!(stderr.contains("/nonexistent") && !stderr.contains("drain"), "{stderr}");
}

/// Issue 34: what a caller writes in a review cannot forge a log line, drive a
/// terminal, or grow a line past what the log writer takes, and a denial that
/// echoes a huge value goes out cut. The text log, where a raw newline used to
/// start a line of the caller's choosing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_values_cannot_forge_log_lines_nor_make_them_or_denials_huge() {
    /// A line as the text format writes it, `decision=allowed` and all.
    const FORGED: &str = "2026-01-01T00:00:00.000000Z  INFO review uid=forged webhook=validate kind=Job \
                          namespace=team-a-namespace name=forged operation=CREATE user=admin decision=allowed";
    const HUGE_USER_BYTES: usize = 1_153_433; // 1.1 MiB
    const HUGE_LABEL_BYTES: usize = 1024 * 1024;
    /// Far over a review line whose every caller value is cut (a few hundred bytes each).
    const MOST_REVIEW_LINE_BYTES: usize = 8 * 1024;
    /// The denial message's bound (`admission::MOST_MESSAGE_RUNES`).
    const MOST_MESSAGE_RUNES: usize = 2048;
    let injected = format!("\n{FORGED}\x1b[2J");

    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new("forged-logs");
    let (cert, key) = pki.write(&dir.path().join("certs"));
    let cluster = repo("examples/cluster.yaml");
    // As `serve` starts it, with the text log.
    let (port, admin_port) = (testkit::free_port().unwrap(), testkit::free_port().unwrap());
    let server = testkit::Serve::new(BIN, &cert, &key)
        .ports(port, admin_port)
        .args(["--cluster", cluster.to_str().unwrap()])
        .log_format("text")
        .log(dir.path().join("server.log"))
        .ready(testkit::Ready::Listening, Duration::from_secs(20), Duration::from_millis(20))
        .start()
        .unwrap_or_else(|error| panic!("the server did not start: {error:#}"));
    let client = client(&[&pki.ca_pem], false);
    let review_of =
        |job: testkit::JobBuilder| -> Value { eval_admission::cli::admission_review(job.json().as_bytes()).unwrap() };
    let job = || testkit::JobBuilder::evalhub("team-a-namespace").queue("eval-queue");
    let send = |review: Value| {
        let request = client.post(server.url("/validate?timeout=10s")).body(review.to_string()).send();
        async move {
            let response = request.await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };

    let mut by_user = review_of(job());
    by_user["request"]["userInfo"]["username"] = Value::from(format!("alice{injected}"));
    // Fields within a line: the text format separates them by spaces.
    let mut by_spaces = review_of(job());
    by_spaces["request"]["userInfo"]["username"] = Value::from("mallory reason=forged-field");
    let mut by_name = review_of(job().name(&format!("job{injected}")));
    by_name["request"]["name"] = by_name["request"]["object"]["metadata"]["name"].clone();
    let mut by_api_version = review_of(job());
    by_api_version["apiVersion"] = Value::from(format!("admission.k8s.io/v1{injected}"));
    let mut huge_user = review_of(job());
    huge_user["request"]["userInfo"]["username"] = Value::from("u".repeat(HUGE_USER_BYTES));
    let huge_label = review_of(job().queue(&"q".repeat(HUGE_LABEL_BYTES)));

    assert_eq!(send(by_user).await.0, 200);
    assert_eq!(send(by_spaces).await.0, 200);
    assert_eq!(send(by_name).await.0, 200);
    assert_eq!(send(by_api_version).await.0, 400, "an apiVersion not admission.k8s.io/v1 is refused, and logged");
    assert_eq!(send(huge_user).await.0, 200);
    let (status, denied) = send(huge_label).await;
    assert_eq!(status, 200);
    const REVIEWS: usize = 6;

    // The denial that echoes the 1 MiB label goes out cut, saying so.
    let denied: Value = serde_json::from_str(&denied).unwrap();
    assert_eq!(denied["response"]["allowed"], false, "{:?}", denied["response"]["auditAnnotations"]);
    let message = denied["response"]["status"]["message"].as_str().unwrap();
    eprintln!("the 1 MiB queue label's denial: {} characters: {message:.120} ... {}", message.chars().count(), {
        let tail: String = message.chars().rev().take(48).collect();
        tail.chars().rev().collect::<String>()
    });
    assert!(message.chars().count() <= MOST_MESSAGE_RUNES, "{} characters", message.chars().count());
    assert!(message.contains("(cut: ") && message.ends_with(" characters in all)"), "{message:.300}");

    // One line per review, however many newlines they carried. The log is
    // batched: poll until every review is in it.
    let review_lines = |logs: &str| logs.lines().filter(|line| line.contains(" review ")).count();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut logs = server.logs();
    while review_lines(&logs) < REVIEWS && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        logs = server.logs();
    }
    let lines: Vec<&str> = logs.lines().collect();
    for line in lines.iter().filter(|line| line.contains(" review ")) {
        eprintln!("review line, {} bytes: {line:.240}", line.len());
    }
    assert_eq!(review_lines(&logs), REVIEWS, "one line per review:\n{logs:.4000}");
    assert!(!lines.iter().any(|line| line.starts_with(FORGED)), "a forged line:\n{logs:.4000}");
    assert!(!logs.contains('\x1b'), "a terminal escape reached the log:\n{logs:.4000}");
    assert!(!logs.contains(" reason=forged-field"), "a forged field:\n{logs:.4000}");
    assert!(logs.contains("user=mallory\\u{20}reason=forged-field"), "its review, escaped:\n{logs:.4000}");
    assert_eq!(lines.iter().filter(|line| line.contains("review failed")).count(), 1, "the apiVersion one");

    // The 1.1 MiB username's review is logged, its value cut, its line short.
    let huge = lines.iter().find(|line| line.contains(" user=uuuu")).expect("the 1.1 MiB username's review is logged");
    assert!(huge.contains(&format!("…(cut, {HUGE_USER_BYTES} bytes)")), "{huge:.400}");
    assert!(huge.len() < MOST_REVIEW_LINE_BYTES, "{} bytes", huge.len());
    let dropped = metric(&server, "eval_admission_log_lines_dropped_total").await;
    assert_eq!(dropped, 0.0, "no log line dropped");
}
