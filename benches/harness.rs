//! Shared by the server benchmarks: certificates, starting the release binary
//! pinned to a core, CPU time and RSS from /proc, percentiles, results on disk.

#![allow(dead_code)]

#[path = "../tests/common/control_plane.rs"]
pub mod control_plane;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use control_plane::repo;
use control_plane::{Ca, Usage};

pub const BIN: &str = env!("CARGO_BIN_EXE_eval-admission");

/// `BENCH_SMOKE=1`: seconds, not minutes; the test suite runs it to keep it working.
pub fn smoke() -> bool {
    std::env::var("BENCH_SMOKE").is_ok_and(|v| v == "1")
}

pub fn out_dir() -> PathBuf {
    let dir = std::env::var_os("BENCH_OUT").map(PathBuf::from).unwrap_or_else(|| repo("bench-out"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn write_json(name: &str, value: &serde_json::Value) {
    let path = out_dir().join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    println!("wrote {}", path.display());
}

/// A CA and a serving certificate for localhost in `dir`; returns the CA PEM.
pub fn certificates(dir: &Path) -> (PathBuf, PathBuf, String) {
    let ca = Ca::new().unwrap();
    let (cert, key) = ca.issue_files(dir, "tls", Usage::Server(&["localhost"])).unwrap();
    (cert, key, ca.pem)
}

pub fn free_port() -> u16 {
    control_plane::free_port().unwrap()
}

/// Pins this process (and the threads it starts later) to `cpu`.
pub fn pin_self(cpu: usize) {
    let status = Command::new("taskset").args(["-cp", &cpu.to_string(), &std::process::id().to_string()]).output();
    if !status.is_ok_and(|o| o.status.success()) {
        eprintln!("warning: could not pin the load generator to CPU {cpu}");
    }
}

pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `eval-admission serve` pinned to `cpu`, killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub admin: u16,
    pub started: Instant,
}

impl Server {
    pub fn start(cpu: Option<usize>, cert: &Path, key: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_binary(BIN, cpu, cert, key, args, env)
    }

    /// The same, from another build of eval-admission (an A/B of a change).
    pub fn start_binary(
        binary: &str,
        cpu: Option<usize>,
        cert: &Path,
        key: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let (port, admin) = (free_port(), free_port());
        let mut command = match cpu {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.args(["-c", &cpu.to_string(), binary]);
                c
            }
            None => Command::new(binary),
        };
        command
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--admin-listen", &format!("127.0.0.1:{admin}")])
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .args(["--log-format", "json", "--shutdown-delay", "0s"])
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in env {
            command.env(k, v);
        }
        let started = Instant::now();
        let child = command.spawn().expect("starts eval-admission");
        Self { child, port, admin, started }
    }

    /// Waits for /readyz 200; returns the time from spawn.
    pub fn wait_ready(&self, timeout: Duration) -> Duration {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if http_get(self.admin, "/readyz").is_some_and(|(status, _)| status == 200) {
                return self.started.elapsed();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("eval-admission not ready within {timeout:?}");
    }

    /// User + system CPU time of the server process so far.
    pub fn cpu_time(&self) -> Duration {
        cpu_time(self.child.id())
    }

    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// utime + stime of a process (taskset execs, so the pid is the server's).
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of stat; 12 and 13 after the name and state.
    let total = ticks(11) + ticks(12);
    let hz = clock_ticks_per_second();
    Duration::from_nanos(total * 1_000_000_000 / hz)
}

fn clock_ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// A tiny blocking HTTP/1.0 GET for the admin port.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, response))
}

/// The q-th quantile (0..=1) of sorted samples.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    quantile(values, 0.5)
}
