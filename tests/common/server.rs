//! eval-admission serve as a real process for the tests that talk to it
//! directly (testkit's launcher), HTTPS clients that trust the test CA, and
//! review bodies from the examples.

use std::path::Path;
use std::time::Duration;

use super::{BIN, repo};

#[allow(unused_imports)]
pub use testkit::{Served as Server, TestPki};

/// Starts `eval-admission serve` with the given certificate files, extra
/// arguments and environment, its log in `log_dir`, and waits until its admin
/// port listens (not /readyz: some tests start a server that never gets ready).
pub fn serve(cert: &Path, key: &Path, extra: &[&str], env: &[(&str, &str)], log_dir: &Path) -> Server {
    serve_limited(cert, key, extra, env, log_dir, None)
}

/// As [`serve`], with the process's open-descriptor limit (soft and hard) set to `descriptors`.
pub fn serve_limited(
    cert: &Path,
    key: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
    log_dir: &Path,
    descriptors: Option<u64>,
) -> Server {
    let port = testkit::free_port().unwrap();
    let admin_port = testkit::free_port().unwrap();
    let log = log_dir.join(format!("server-{port}.log"));
    let _ = std::fs::remove_file(&log);
    testkit::Serve::new(BIN, cert, key)
        .ports(port, admin_port)
        .args(["--cert-reload-interval", "200ms"])
        .args(extra)
        .envs(env)
        .log(log)
        .with(|launch| launch.descriptors(descriptors))
        .ready(testkit::Ready::Listening, Duration::from_secs(20), Duration::from_millis(20))
        .start()
        .unwrap_or_else(|error| panic!("the server did not start: {error:#}"))
}

/// An HTTPS client trusting the given CAs; `fresh` disables connection reuse.
pub fn client(ca_pems: &[&str], fresh: bool) -> reqwest::Client {
    let mut builder = reqwest::Client::builder().use_rustls_tls().timeout(Duration::from_secs(10));
    for pem in ca_pems {
        builder = builder.add_root_certificate(reqwest::Certificate::from_pem(pem.as_bytes()).unwrap());
    }
    if fresh {
        builder = builder.pool_max_idle_per_host(0);
    }
    builder.build().unwrap()
}

pub fn plain_client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap()
}

/// The AdmissionReview `review` would build for an example manifest, as JSON bytes.
pub fn review_body(example: &str) -> Vec<u8> {
    let bytes = std::fs::read(repo("examples").join(example)).unwrap();
    let review = eval_admission::cli::admission_review(&bytes).unwrap();
    serde_json::to_vec(&review).unwrap()
}
