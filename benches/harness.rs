//! Shared by the server benchmarks: certificates, starting the release binary
//! pinned to a core, CPU time and RSS from /proc, percentiles, results on disk.

#![allow(dead_code)]

#[path = "../tests/common/control_plane/mod.rs"]
pub mod control_plane;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use control_plane::repo;

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
    let pki = testkit::TestPki::new("eval-admission-bench");
    let (cert, key) = pki.write(dir);
    (cert, key, pki.ca_pem)
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
pub type Server = testkit::Served;

/// Starts `binary serve` (pinned to `cpu`): [`BIN`], or another build of
/// eval-admission for an A/B of a change. Waits until /readyz answers 200,
/// polled every 5 ms (`ready_after`: spawn to ready).
pub fn serve(
    binary: &str,
    cpu: Option<usize>,
    cert: &Path,
    key: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    ready: Duration,
) -> Server {
    testkit::Serve::new(binary, cert, key)
        .args(["--shutdown-delay", "0s"])
        .args(args)
        .envs(env)
        .with(|launch| launch.cpu(cpu))
        .ready(testkit::Ready::Readyz, ready, Duration::from_millis(5))
        .start()
        .unwrap_or_else(|error| panic!("eval-admission not ready: {error:#}"))
}

/// The server's resident set (VmRSS), in bytes.
pub fn rss_bytes(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
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
