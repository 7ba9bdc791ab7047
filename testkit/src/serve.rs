//! `eval-admission serve` as a child process: the one launcher of every test
//! and bench. The caller passes the binary's path (this crate does not depend
//! on eval-admission), a certificate and key, and any further flags.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::poll::{http_ok, listening};
use crate::process::{Launch, Process};

/// When [`Serve::start`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ready {
    /// Once `/readyz` on the admin port answers 200 (its caches synced).
    Readyz,
    /// Once the admin port accepts connections (a server that is never
    /// ready, such as one whose API server is missing, can be tested).
    Listening,
}

/// What to start: `BIN serve --tls-cert CERT --tls-key KEY` (or `--tls-secret`), the caller's
/// flags, then `--log-format json` (or [`Serve::log_format`]), `--listen
/// 127.0.0.1:PORT --admin-listen 127.0.0.1:ADMIN`; KUBECONFIG removed from its
/// environment unless set here.
pub struct Serve {
    launch: Launch,
    log_format: &'static str,
    ports: Option<(u16, u16)>,
    ready: Ready,
    timeout: Duration,
    every: Duration,
}

impl Serve {
    pub fn new(bin: impl AsRef<Path>, cert: impl AsRef<Path>, key: impl AsRef<Path>) -> Self {
        let tls =
            [OsStr::new("--tls-cert"), cert.as_ref().as_os_str(), OsStr::new("--tls-key"), key.as_ref().as_os_str()];
        Self::with_tls(bin, tls)
    }

    /// `BIN serve --tls-secret SECRET`: self-managed certificates, kept in
    /// that Secret of the namespace the caller's flags name.
    pub fn self_managed(bin: impl AsRef<Path>, secret: &str) -> Self {
        Self::with_tls(bin, ["--tls-secret", secret])
    }

    fn with_tls<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(bin: impl AsRef<Path>, tls: I) -> Self {
        let launch = Launch::new(bin.as_ref()).arg("serve").args(tls).env_remove("KUBECONFIG");
        Self {
            launch,
            log_format: "json",
            ports: None,
            ready: Ready::Readyz,
            timeout: Duration::from_secs(60),
            every: Duration::from_millis(20),
        }
    }

    /// Changes what is launched (more flags, environment, a log, a CPU, a
    /// descriptor limit: see [`Launch`]).
    pub fn with(self, change: impl FnOnce(Launch) -> Launch) -> Self {
        Self { launch: change(self.launch), ..self }
    }

    pub fn arg(self, arg: impl AsRef<OsStr>) -> Self {
        self.with(|launch| launch.arg(arg))
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(self, args: I) -> Self {
        self.with(|launch| launch.args(args))
    }

    pub fn env(self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.with(|launch| launch.env(key, value))
    }

    pub fn envs<'a>(self, env: impl IntoIterator<Item = &'a (&'a str, &'a str)>) -> Self {
        env.into_iter().fold(self, |serve, (key, value)| serve.env(key, value))
    }

    /// Its output appended to this file; without one it goes nowhere.
    pub fn log(self, path: impl Into<PathBuf>) -> Self {
        self.with(|launch| launch.log(path))
    }

    /// `--log-format` (`json` unless set: the flag may be given once).
    pub fn log_format(mut self, format: &'static str) -> Self {
        self.log_format = format;
        self
    }

    /// The serving and admin ports (otherwise two free ones).
    pub fn ports(mut self, port: u16, admin_port: u16) -> Self {
        self.ports = Some((port, admin_port));
        self
    }

    /// What [`Serve::start`] waits for (default: `/readyz` 200), polled every
    /// `every` until `timeout`.
    pub fn ready(mut self, ready: Ready, timeout: Duration, every: Duration) -> Self {
        (self.ready, self.timeout, self.every) = (ready, timeout, every);
        self
    }

    /// Spawns the server and waits until it is ready; fails with its log's
    /// tail if it exits first or is not ready by the deadline.
    pub fn start(self) -> Result<Served> {
        let (port, admin_port) = match self.ports {
            Some(ports) => ports,
            None => (crate::free_port()?, crate::free_port()?),
        };
        let launch = self.launch.args([
            "--log-format",
            self.log_format,
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--admin-listen",
            &format!("127.0.0.1:{admin_port}"),
        ]);
        let started = Instant::now();
        let process = launch.start_as("eval-admission").context("starting eval-admission serve")?;
        let mut served = Served { process, port, admin_port, started, ready_after: Duration::ZERO };
        let what = match self.ready {
            Ready::Readyz => format!("eval-admission /readyz on 127.0.0.1:{admin_port}"),
            Ready::Listening => format!("eval-admission listening on 127.0.0.1:{admin_port}"),
        };
        let ready = self.ready;
        served.process.wait_until(&what, self.timeout, self.every, || {
            match ready {
                Ready::Readyz => http_ok(admin_port, "/readyz"),
                Ready::Listening => listening(admin_port),
            }
            .then_some(())
        })?;
        served.ready_after = started.elapsed();
        Ok(served)
    }
}

/// A started server, killed (SIGKILL) on drop; [`Served::stop`] for a
/// graceful end.
pub struct Served {
    process: Process,
    pub port: u16,
    pub admin_port: u16,
    /// When it was spawned.
    pub started: Instant,
    /// From spawn to ready as [`Serve::ready`] asked.
    pub ready_after: Duration,
}

impl Served {
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// 127.0.0.1:PORT (the serving port).
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// 127.0.0.1:ADMIN.
    pub fn admin_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.admin_port))
    }

    /// `https://localhost:PORT/PATH` (the test certificates name localhost).
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    pub fn admin_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.admin_port)
    }

    /// Sends a signal by name (`TERM`, `HUP`, ...).
    pub fn signal(&self, signal: &str) {
        let _ = Command::new("kill").args([&format!("-{signal}"), &self.pid().to_string()]).status();
    }

    pub fn log(&self) -> &Path {
        &self.process.log
    }

    /// Its output so far ("" without a log).
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.process.log).unwrap_or_default()
    }

    /// Fails with the log's tail when it has exited.
    pub fn check_running(&mut self) -> Result<()> {
        self.process.check_running()
    }

    /// Waits for it to exit.
    pub fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.process.wait()
    }

    /// SIGTERM, then SIGKILL after a grace period.
    pub fn stop(&mut self) {
        self.process.stop();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.process.kill();
    }
}
