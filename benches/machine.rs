//! What a benchmark report says about the machine it ran on, shared by the
//! benches that write one (`apiserver.rs`, `peers.rs`).

use serde_json::{Value, json};

/// The 1, 5 and 15 minute load averages: other work on the machine shows here.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// CPUs, CPU model, memory, kernel and the load average at the start.
pub fn machine() -> Value {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find_map(|line| line.strip_prefix("model name")?.split_once(':').map(|(_, v)| v.trim().to_string()));
    let mem_kib: Option<f64> = read("/proc/meminfo")
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:")?.split_whitespace().next()?.parse().ok());
    json!({
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu_model": cpu_model,
        "memory_gib": mem_kib.map(|kib| (kib / 1024.0 / 1024.0 * 1000.0).round() / 1000.0),
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "loadavg_at_start": loadavg(),
    })
}
