//! Shared test harness: certificates, the server binary as a real process, an
//! HTTPS client that trusts the test CA; and the control plane the end-to-end
//! tests start ([`control_plane`]).

#![allow(dead_code)]

pub mod control_plane;
pub mod kueue_objects;
pub mod node;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use control_plane::repo;
use control_plane::{Ca, Usage};

pub const BIN: &str = env!("CARGO_BIN_EXE_eval-admission");

/// A CA and a serving certificate for localhost / 127.0.0.1.
pub struct TestPki {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestPki {
    pub fn new(common_name: &str) -> Self {
        let ca = Ca::new().unwrap();
        let (cert_pem, key_pem) = ca.issue(common_name, Usage::Server(&["localhost", "127.0.0.1"])).unwrap();
        Self { ca_pem: ca.pem, cert_pem, key_pem }
    }

    pub fn write(&self, dir: &Path) -> (PathBuf, PathBuf) {
        std::fs::create_dir_all(dir).unwrap();
        let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        std::fs::write(&cert, &self.cert_pem).unwrap();
        std::fs::write(&key, &self.key_pem).unwrap();
        (cert, key)
    }
}

pub fn free_port() -> u16 {
    control_plane::free_port().unwrap()
}

/// The server binary, killed on drop.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub admin: SocketAddr,
    pub log: PathBuf,
}

impl Server {
    /// Starts `eval-admission serve` with the given certificate files and extra
    /// arguments, and waits until /livez answers.
    pub fn start(cert: &Path, key: &Path, extra: &[&str], env: &[(&str, &str)], log_dir: &Path) -> Self {
        Self::start_limited(cert, key, extra, env, log_dir, None)
    }

    /// As [`start`](Self::start), with the process's open-descriptor limit
    /// (soft and hard) set to `descriptors`.
    pub fn start_limited(
        cert: &Path,
        key: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
        log_dir: &Path,
        descriptors: Option<u64>,
    ) -> Self {
        let (port, admin_port) = (free_port(), free_port());
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let admin: SocketAddr = format!("127.0.0.1:{admin_port}").parse().unwrap();
        let log = log_dir.join(format!("server-{port}.log"));
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--listen", &addr.to_string(), "--admin-listen", &admin.to_string()])
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .args(["--log-format", "json", "--cert-reload-interval", "200ms"])
            .args(extra)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::from(std::fs::File::options().append(true).open(&log).unwrap()));
        for (key, value) in env {
            command.env(key, value);
        }
        if let Some(descriptors) = descriptors {
            use std::os::unix::process::CommandExt;
            let limit = libc::rlimit { rlim_cur: descriptors, rlim_max: descriptors };
            // SAFETY: setrlimit is async-signal-safe and touches only this struct.
            unsafe {
                command.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let child = command.spawn().expect("starts the server");
        let server = Self { child, addr, admin, log };
        server.wait_for_admin();
        server
    }

    fn wait_for_admin(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(self.admin).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("server did not start: {}", std::fs::read_to_string(&self.log).unwrap_or_default());
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }

    pub fn admin_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.admin)
    }

    pub fn signal(&self, signal: &str) {
        Command::new("kill").args([&format!("-{signal}"), &self.child.id().to_string()]).status().unwrap();
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
