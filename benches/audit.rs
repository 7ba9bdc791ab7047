//! The audit at scale, in process: 100,000 stored Jobs of which 10,000 are
//! EvalHub evaluations (queued and running, in a few queues of the example
//! cluster). Measures what the evaluations watch costs to list them all
//! (decode, select, prune: `cache::evaluations::select`) and the bytes the
//! 10,000 kept hold (a counting allocator: live bytes after minus before), then
//! the time of a round (`server::audit::judge_all`) on the view as it is and
//! after a ClusterQueue change that makes them all findings. The API server's
//! side of the watch (its list pages, the JSON over the wire) is not counted.
//! Writes $BENCH_OUT/audit.json; `BENCH_SMOKE=1` uses a tenth of the objects.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use eval_admission::cache::ClusterCache;
use eval_admission::cache::evaluations::{Evaluations, select};
use eval_admission::cluster::{objects, state_file};
use eval_admission::config::Config;
use eval_admission::server::audit::judge_all;
use eval_admission::workload::WorkloadKind;
use serde_json::{Value, json};
use testkit::JobBuilder;

/// Live heap bytes, to weigh what the audit keeps.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const NAMESPACE: &str = "team-a-namespace";

/// The `index`th stored Job: one in ten an EvalHub evaluation (queued in
/// eval-queue, or running there or in h100-queue), the rest other teams' batch Jobs.
fn stored_job(index: usize) -> Value {
    let mut job = if index.is_multiple_of(10) {
        let queue = if index.is_multiple_of(20) { "eval-queue" } else { "h100-queue" };
        let running = index.is_multiple_of(30);
        JobBuilder::evalhub(NAMESPACE).name(&format!("eval-{index}")).queue(queue).suspend(!running).build()
    } else {
        JobBuilder::evalhub("batch-jobs")
            .name(&format!("batch-{index}"))
            .labels(&[("app", "nightly-etl"), ("component", "worker")])
            .build()
    };
    job["metadata"]["uid"] = json!(format!("00000000-0000-4000-8000-{index:012}"));
    job["metadata"]["managedFields"] =
        json!([{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]);
    job["status"] = json!({"startTime": "2026-12-07T10:00:00Z", "active": 1, "ready": 1});
    job
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The process's CPU time so far (user + system), from /proc/self/stat.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks: u64 = fields.get(11..13).map_or(0, |f| f.iter().filter_map(|t| t.parse::<u64>().ok()).sum());
    Duration::from_millis(ticks * 10)
}

fn main() {
    let smoke = std::env::var_os("BENCH_SMOKE").is_some();
    let stored = if smoke { 10_000 } else { 100_000 };
    let config = Config::default();

    // The watch's list: each object decoded, selected and pruned, the rest dropped.
    let before = LIVE.load(Ordering::Relaxed);
    let (cpu, started) = (cpu_time(), Instant::now());
    let mut kept = Vec::new();
    for index in 0..stored {
        if let Some(evaluation) = select(&config, WorkloadKind::Job, &stored_job(index)) {
            kept.push(evaluation);
        }
    }
    let evaluations = Evaluations::of(kept);
    let list_time = started.elapsed();
    let list_cpu = cpu_time().saturating_sub(cpu);
    let held = LIVE.load(Ordering::Relaxed) - before;
    let count = evaluations.len();

    let state =
        state_file::parse(&std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/cluster.yaml")).unwrap())
            .unwrap();
    let cache = ClusterCache::from_state(state);
    let rounds = if smoke { 2 } else { 7 };
    let round = |cache: &ClusterCache| {
        let mut times = Vec::new();
        let mut found = std::collections::BTreeMap::<&str, usize>::new();
        for _ in 0..rounds {
            let started = Instant::now();
            let findings = judge_all(cache, &evaluations, &config);
            times.push(started.elapsed());
            found.clear();
            for finding in &findings {
                *found.entry(finding.reason).or_default() += 1;
            }
        }
        (median(times), found)
    };
    let (steady, steady_found) = round(&cache);
    // The change: team-a-cq and team-a-h100-cq stop selecting the namespace.
    cache.update(|state| {
        for name in ["team-a-cq", "team-a-h100-cq"] {
            let yaml = format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  namespaceSelector: {{matchLabels: {{nobody: x}}}}\n  resourceGroups:\n  - coveredResources: [cpu, memory, nvidia.com/gpu]\n    flavors:\n    - name: default-flavor\n      resources:\n      - {{name: cpu, nominalQuota: 64}}\n      - {{name: memory, nominalQuota: 256Gi}}\n      - {{name: nvidia.com/gpu, nominalQuota: 8}}\n"
            );
            let object: Value = serde_yaml::from_str(&yaml).unwrap();
            state.apply(objects::decode("kueue.x-k8s.io/v1beta2", "ClusterQueue", object).unwrap().unwrap());
        }
    });
    let (changed, changed_found) = round(&cache);

    let kib = held as f64 / 1024.0;
    println!(
        "audit: {stored} stored Jobs listed in {list_time:.2?} ({list_cpu:.2?} CPU), {count} evaluations kept in {kib:.0} KiB ({:.0} bytes each)",
        held as f64 / count as f64
    );
    println!(
        "audit: a round over {count}: {steady:.2?} (found {steady_found:?}); after the ClusterQueue change {changed:.2?} (found {changed_found:?})"
    );
    let report = json!({
        "stored": stored, "evaluations": count,
        "list_seconds": list_time.as_secs_f64(), "list_cpu_seconds": list_cpu.as_secs_f64(),
        "held_bytes": held, "round_seconds": steady.as_secs_f64(), "round_found": steady_found,
        "changed_round_seconds": changed.as_secs_f64(), "changed_found": changed_found, "rounds": rounds,
    });
    let out = std::env::var("BENCH_OUT").unwrap_or_else(|_| "bench-out".into());
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(format!("{out}/audit.json"), serde_json::to_string_pretty(&report).unwrap()).unwrap();
}
