//! The costliest review per KiB a caller can send. For each list a caller
//! sizes (containers, init containers with sidecars, resources, tolerations,
//! node affinity values, node selector, labels, owner references, replicated
//! jobs, and environment variables, which nothing reads, as the floor), the
//! review is grown toward a target size, up to the list's cap
//! (`src/workload/size.rs`), and timed in process (`review_offline` on the
//! example cluster): on `/mutate`, on `/validate`, and on `/validate` with
//! 100,000 cpus asked, a denial, which checks every way out. Then the
//! attack the caps answer: 2,000 and 4,000 sidecars with as many init
//! containers. Writes $BENCH_OUT/costliest.json; `BENCH_SMOKE=1` grows to 64
//! KiB instead of 640.

use std::time::{Duration, Instant};

use eval_admission::admission::{self, ReviewBuilder, Webhook};
use eval_admission::cluster::state_file;
use eval_admission::config::Config;
use eval_admission::workload::size::{
    MOST_CONTAINERS, MOST_PLACEMENT_ENTRIES, MOST_REPLICATED_JOBS, MOST_RESOURCES, MOST_TOLERATIONS,
};
use serde_json::{Map, Value, json};
use testkit::workload::sidecar_flood;
use testkit::{JobBuilder, JobSetBuilder};

const NAMESPACE: &str = "team-a-namespace";

/// One way to make a review large: the workload with `count` of something.
struct Shape {
    name: &'static str,
    most: usize,
    build: fn(usize, &str) -> Value,
}

fn job(pod: impl FnOnce(&mut Value), cpu: &str) -> Value {
    let mut job = JobBuilder::evalhub(NAMESPACE).queue("eval-queue").requests(&[("cpu", cpu)]).build();
    pod(&mut job["spec"]["template"]["spec"]);
    job
}

fn named<T>(count: usize, item: impl Fn(usize) -> T) -> Vec<T> {
    (0..count).map(item).collect()
}

const SHAPES: &[Shape] = &[
    Shape {
        name: "environment variables (unread)",
        most: usize::MAX,
        build: |n, cpu| job(|pod| pod["containers"][0]["env"] = json!(testkit::workload::env(n, "FILL")), cpu),
    },
    Shape {
        name: "containers",
        most: MOST_CONTAINERS,
        build: |n, cpu| {
            job(
                |pod| {
                    let first = pod["containers"][0].clone();
                    pod["containers"] = json!(named(n, |i| {
                        let mut container = first.clone();
                        container["name"] = json!(format!("c{i}"));
                        container["resources"]["limits"] = json!({"cpu": "64", "memory": "1Gi"});
                        container
                    }));
                },
                cpu,
            )
        },
    },
    Shape {
        name: "sidecars and init containers, a resource each",
        most: MOST_CONTAINERS - 1,
        build: |n, cpu| {
            job(
                |pod| {
                    let flood = sidecar_flood(n / 2, n - n / 2);
                    pod["initContainers"] = flood["initContainers"].clone();
                },
                cpu,
            )
        },
    },
    Shape {
        name: "resources in every list of every container",
        most: MOST_RESOURCES,
        build: |n, cpu| {
            job(
                |pod| {
                    // `n` names in each list, cpu among them.
                    let list: Map<String, Value> =
                        named(n - 1, |i| (format!("example.com/r{i}"), json!("1"))).into_iter().collect();
                    let mut first = pod["containers"][0].clone();
                    first["resources"] = json!({"requests": list, "limits": list});
                    first["resources"]["requests"]["cpu"] = json!(cpu);
                    pod["containers"] = json!(vec![first.clone(); MOST_CONTAINERS / 2]);
                    pod["initContainers"] = json!(vec![first; MOST_CONTAINERS / 2]);
                },
                cpu,
            )
        },
    },
    Shape {
        name: "tolerations",
        most: MOST_TOLERATIONS,
        build: |n, cpu| {
            job(
                |pod| {
                    pod["tolerations"] = json!(named(n, |i| json!({"key": format!("example.com/t{i}"),
                        "operator": "Equal", "value": "v", "effect": "NoSchedule"})))
                },
                cpu,
            )
        },
    },
    Shape {
        name: "node affinity values",
        most: MOST_PLACEMENT_ENTRIES - 2,
        build: |n, cpu| {
            job(
                |pod| {
                    let values = named(n, |i| format!("value-{i}"));
                    pod["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "example.com/pool", "operator": "NotIn", "values": values}]}]}}});
                },
                cpu,
            )
        },
    },
    Shape {
        name: "node selector entries",
        most: MOST_PLACEMENT_ENTRIES,
        build: |n, cpu| {
            job(
                |pod| {
                    let selector: Map<String, Value> =
                        named(n, |i| (format!("example.com/l{i}"), json!("v"))).into_iter().collect();
                    pod["nodeSelector"] = json!(selector);
                },
                cpu,
            )
        },
    },
    Shape {
        name: "labels",
        most: usize::MAX,
        build: |n, cpu| {
            let mut job = job(|_| {}, cpu);
            for i in 0..n {
                job["metadata"]["labels"][format!("example.com/l{i}")] = json!("v");
            }
            job
        },
    },
    Shape {
        name: "owner references",
        most: usize::MAX,
        build: |n, cpu| {
            let mut job = job(|_| {}, cpu);
            job["metadata"]["ownerReferences"] = json!(named(n, |i| json!({"apiVersion": "v1", "kind": "ConfigMap",
                "name": format!("owner-{i}"), "uid": format!("uid-{i}")})));
            job
        },
    },
    Shape {
        name: "replicated jobs (JobSet)",
        most: MOST_REPLICATED_JOBS,
        build: |n, cpu| {
            let mut jobset = JobSetBuilder::aiperf_created(NAMESPACE).without_owner().queue("eval-queue").build();
            let mut first = jobset["spec"]["replicatedJobs"][1].clone();
            // One container without its environment: the smallest replicated job, so the most fit.
            let pod = &mut first["template"]["spec"]["template"]["spec"];
            pod["containers"] = json!([{"name": "worker", "image": "nvcr.io/nvidia/aiperf:0.4.0"}]);
            jobset["spec"]["replicatedJobs"] = json!(named(n, |i| {
                let mut replicated = first.clone();
                replicated["name"] = json!(format!("r{i}"));
                replicated["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] =
                    json!({"requests": {"cpu": cpu}});
                replicated
            }));
            jobset
        },
    },
];

/// What a shape is timed on: the cpu asked, then the webhooks and how the cases are named.
const ADMITTED: (&str, &[(&str, Webhook)]) = ("1", &[("mutate", Webhook::Mutate), ("validate", Webhook::Validate)]);
const DENIED: (&str, &[(&str, Webhook)]) = ("100000", &[("validate, denied", Webhook::Validate)]);

fn body(object: &Value) -> Vec<u8> {
    ReviewBuilder::create(ReviewBuilder::kind_of(object), object).uid("costliest").user("attacker").to_bytes()
}

/// The median time of one review, over batches that each take about `batch`.
fn time(
    webhook: Webhook,
    body: &[u8],
    config: &Config,
    state: &eval_admission::cluster::ClusterState,
    batch: Duration,
) -> (Duration, String) {
    let once =
        || admission::review_offline(webhook, body, config, state).map(|o| o.decision.reason.as_str().to_owned());
    let reason = once().unwrap_or_else(|error| format!("error: {error}"));
    let started = Instant::now();
    once().ok();
    let per_batch = (batch.as_secs_f64() / started.elapsed().as_secs_f64().max(1e-7)).clamp(1.0, 100_000.0) as u32;
    let mut medians: Vec<Duration> = (0..5)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..per_batch {
                std::hint::black_box(once().ok());
            }
            started.elapsed() / per_batch
        })
        .collect();
    medians.sort();
    (medians[2], reason)
}

fn main() {
    let smoke = std::env::var_os("BENCH_SMOKE").is_some();
    let target_bytes = if smoke { 64 << 10 } else { 640 << 10 };
    let batch = Duration::from_millis(if smoke { 5 } else { 60 });
    let state = state_file::parse(&std::fs::read(testkit::repo("examples/cluster.yaml")).unwrap()).unwrap();
    let config = Config::default();
    let mut rows = Vec::new();
    let mut record = |shape: &str, count: usize, object: &Value, cases: &[(&str, Webhook)]| {
        let bytes = body(object);
        for (case, webhook) in cases {
            let (took, reason) = time(*webhook, &bytes, &config, &state, batch);
            let kib = bytes.len() as f64 / 1024.0;
            let us = took.as_secs_f64() * 1e6;
            eprintln!("{shape:48} {count:>6} {kib:>8.1} KiB {case:22} {us:>10.1} us {:>7.2} us/KiB {reason}", us / kib);
            rows.push(json!({"shape": shape, "count": count, "kib": kib, "case": case, "us": us,
                "us_per_kib": us / kib, "reason": reason}));
        }
    };
    for shape in SHAPES {
        for (cpu, cases) in [ADMITTED, DENIED] {
            // Grow by doubling, up to the largest within the target size and the cap.
            let mut count = 1;
            while count < shape.most && body(&(shape.build)((count * 2).min(shape.most), cpu)).len() <= target_bytes {
                count = (count * 2).min(shape.most);
            }
            record(shape.name, count, &(shape.build)(count, cpu), cases);
        }
    }
    for (sidecars, init) in [(2000, 2000), (4000, 4000)] {
        let attack = job(|pod| *pod = sidecar_flood(sidecars, init), "1");
        record(
            &format!("attack: {sidecars} sidecars and {init} init containers"),
            sidecars + init,
            &attack,
            ADMITTED.1,
        );
    }
    let costliest = rows
        .iter()
        .filter(|row| row["reason"] != "too-large-to-review")
        .max_by(|a, b| a["us_per_kib"].as_f64().partial_cmp(&b["us_per_kib"].as_f64()).unwrap())
        .cloned();
    let slowest = rows.iter().max_by(|a, b| a["us"].as_f64().partial_cmp(&b["us"].as_f64()).unwrap()).cloned();
    let out =
        json!({"target_kib": target_bytes / 1024, "rows": rows, "costliest_per_kib": costliest, "slowest": slowest});
    let dir = std::env::var("BENCH_OUT").unwrap_or_else(|_| "bench-out".into());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(format!("{dir}/costliest.json"), serde_json::to_vec_pretty(&out).unwrap()).unwrap();
    eprintln!("wrote {dir}/costliest.json");
}
