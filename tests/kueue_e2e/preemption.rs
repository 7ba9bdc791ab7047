//! (c) The preemption model: Kueue preempts exactly what eval-admission calls
//! preemptible.

use super::*;

#[derive(Clone, Copy)]
enum Layout {
    /// One ClusterQueue with `nominal` cpu; every workload in it.
    Single { nominal: &'static str, within: Option<&'static str> },
    /// The low workload's ClusterQueue (`borrower`) and the preemptor's
    /// (`reclaimer`: cpu 1, preemption.reclaimWithinCohort `reclaim`) in one
    /// cohort. `tree`: the borrower sits in a child Cohort whose parentName is
    /// the root cohort the reclaimer is in.
    Cohort { borrower_nominal: &'static str, borrowing_limit: Option<&'static str>, reclaim: &'static str, tree: bool },
}

/// What happens before the preemptor gets its chance.
#[derive(Clone, Copy)]
enum Story {
    /// The low workload (priority 100) fills its quota, borrowing if
    /// `borrowing`; then the preemptor (priority 1000) is submitted.
    Plain { borrowing: bool },
    /// A blocker (priority 100, cpu 1) runs; the preemptor (priority 100, cpu 2)
    /// is submitted and waits; the low workload (priority 100, cpu 1) is
    /// submitted later and admitted; then the blocker is deactivated: the
    /// preemptor is the older of two equal-priority workloads.
    OlderEqualPriority,
    /// The low workload is admitted within its ClusterQueue's nominal quota;
    /// then a priority-500 workload in the same queue borrows; then the
    /// preemptor (priority 1000) is submitted to the reclaiming queue.
    BorrowedLater,
}

struct Case {
    setup: &'static str,
    layout: Layout,
    story: Story,
    low_cpu: &'static str,
    preemptor_cpu: &'static str,
}

/// (1)-(6) are the table; (7)-(9) probe the model's finer claims.
const CASES: &[Case] = &[
    Case {
        setup: "(1) ClusterQueue without preemption, cpu 1",
        layout: Layout::Single { nominal: "1", within: None },
        story: Story::Plain { borrowing: false },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(2) withinClusterQueue LowerPriority, cpu 1",
        layout: Layout::Single { nominal: "1", within: Some("LowerPriority") },
        story: Story::Plain { borrowing: false },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(3) withinClusterQueue LowerOrNewerEqualPriority, cpu 1",
        layout: Layout::Single { nominal: "1", within: Some("LowerOrNewerEqualPriority") },
        story: Story::Plain { borrowing: false },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(4) cohort: low's CQ (cpu 0, no borrowingLimit) borrows 1 from a CQ (cpu 1) with reclaimWithinCohort Any",
        layout: Layout::Cohort { borrower_nominal: "0", borrowing_limit: None, reclaim: "Any", tree: false },
        story: Story::Plain { borrowing: true },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(5) cohort: low's CQ (cpu 1, borrowingLimit 0) beside a CQ (cpu 1) with reclaimWithinCohort Any; the preemptor needs cpu 2",
        layout: Layout::Cohort { borrower_nominal: "1", borrowing_limit: Some("0"), reclaim: "Any", tree: false },
        story: Story::Plain { borrowing: false },
        low_cpu: "1",
        preemptor_cpu: "2",
    },
    Case {
        setup: "(6) cohort tree: low's CQ (cpu 0) in a child Cohort (parentName root) borrows 1 from a CQ (cpu 1, reclaimWithinCohort Any) directly under the root",
        layout: Layout::Cohort { borrower_nominal: "0", borrowing_limit: None, reclaim: "Any", tree: true },
        story: Story::Plain { borrowing: true },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(7) withinClusterQueue LowerOrNewerEqualPriority, cpu 2: an older workload of EQUAL priority (100) waiting for cpu 2 when a blocker leaves",
        layout: Layout::Single { nominal: "2", within: Some("LowerOrNewerEqualPriority") },
        story: Story::OlderEqualPriority,
        low_cpu: "1",
        preemptor_cpu: "2",
    },
    Case {
        setup: "(8) as (4), with reclaimWithinCohort LowerPriority",
        layout: Layout::Cohort { borrower_nominal: "0", borrowing_limit: None, reclaim: "LowerPriority", tree: false },
        story: Story::Plain { borrowing: true },
        low_cpu: "1",
        preemptor_cpu: "1",
    },
    Case {
        setup: "(9) cohort: low admitted WITHIN its CQ's nominal cpu 1 (no borrowingLimit); later a priority-500 workload in the same CQ borrows; the preemptor goes to the CQ with reclaimWithinCohort Any",
        layout: Layout::Cohort { borrower_nominal: "1", borrowing_limit: None, reclaim: "Any", tree: false },
        story: Story::BorrowedLater,
        low_cpu: "1",
        preemptor_cpu: "1",
    },
];

struct Outcome {
    setup: &'static str,
    kueue_preempted: bool,
    /// What showed it: the Preempted condition's reason, or what happened instead.
    kueue_detail: String,
    verdict_preemptible: bool,
    verdict_detail: String,
}

struct Classes {
    low: String,
    mid: String,
    high: String,
}

/// Builds a case's objects; returns them with the ClusterQueues of the low
/// workload and of the preemptor.
fn case_objects(case: &Case, s: &str, rf: &str) -> (Vec<Value>, String, String) {
    match case.layout {
        Layout::Single { nominal, within } => {
            let cq = format!("single-{s}");
            let preemption = within.map_or(Value::Null, |policy| json!({"withinClusterQueue": policy}));
            (vec![cluster_queue(&cq, rf, &[("cpu", nominal, None)], None, preemption)], cq.clone(), cq)
        }
        Layout::Cohort { borrower_nominal, borrowing_limit, reclaim, tree } => {
            let (borrower, reclaimer) = (format!("borrower-{s}"), format!("reclaimer-{s}"));
            let (root, child) = (format!("root-{s}"), format!("team-{s}"));
            let mut objects = Vec::new();
            let borrower_cohort = if tree {
                objects.push(cohort(&root, None));
                objects.push(cohort(&child, Some(&root)));
                child
            } else {
                root.clone()
            };
            objects.push(cluster_queue(
                &borrower,
                rf,
                &[("cpu", borrower_nominal, borrowing_limit)],
                Some(&borrower_cohort),
                Value::Null,
            ));
            objects.push(cluster_queue(
                &reclaimer,
                rf,
                &[("cpu", "1", None)],
                Some(&root),
                json!({"reclaimWithinCohort": reclaim}),
            ));
            (objects, borrower, reclaimer)
        }
    }
}

/// The cpu a ClusterQueue has reserved beyond its nominal quota (status.flavorsReservation).
fn borrowed_cpu(cluster_queue: &Value) -> Option<String> {
    cluster_queue["status"]["flavorsReservation"].as_array()?.iter().find_map(|flavor| {
        flavor["resources"]
            .as_array()?
            .iter()
            .find(|r| r["name"] == "cpu")
            .and_then(|r| r["borrowed"].as_str())
            .map(String::from)
    })
}

fn wait_borrowing(cluster: &Cluster, cluster_queue: &str, cpu: &str) {
    wait_for(&format!("ClusterQueue {cluster_queue} to borrow cpu {cpu}"), ADMISSION_WAIT, || {
        let queue = cluster.get("clusterqueue.kueue.x-k8s.io", "", cluster_queue);
        (borrowed_cpu(&queue).as_deref() == Some(cpu)).then_some(())
    });
}

/// eval-admission's verdict on `job` as a user would submit it (without the
/// checkpointing annotation), against the cluster as it is: the offline
/// `review` on a dump of the objects it reads, and the running server by a
/// server-side dry run; they must agree. Returns (preemptible, why).
fn verdict(cluster: &Cluster, job: &Value, setup: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let (state, manifest) = (dir.path().join("cluster.yaml"), dir.path().join("job.json"));
    cluster.state_file(&state);
    let submitted = without_annotations(job);
    std::fs::write(&manifest, submitted.to_string()).unwrap();
    let output = Command::new(BIN)
        .arg("review")
        .arg("--cluster")
        .arg(&state)
        .arg("--config")
        .arg(repo("tests/kueue/eval-admission-config.yaml"))
        .arg(&manifest)
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("review printed no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    let response = &printed["validating"]["response"];
    let preemptible = response["allowed"] == false;
    let detail = if preemptible {
        assert_eq!(response["auditAnnotations"]["reason"], "preemptible", "{setup}: {response}");
        assert_eq!(output.status.code(), Some(1));
        let message = response["status"]["message"].as_str().unwrap_or_default();
        message.split(": via ").nth(1).and_then(|rest| rest.split(". To fix").next()).unwrap_or(message).to_string()
    } else {
        assert_eq!(output.status.code(), Some(0), "{setup}: {printed}");
        "allowed".to_string()
    };
    // The same Job under another name: the real one exists.
    let mut dry_run = submitted;
    dry_run["metadata"]["name"] = format!("{}-dry-run", job["metadata"]["name"].as_str().unwrap()).into();
    let live = cluster.kubectl(&["create", "--dry-run=server", "-f", "-"], Some(&dry_run.to_string()));
    let live_stderr = String::from_utf8_lossy(&live.stderr);
    assert_eq!(!live.status.success(), preemptible, "{setup}: the server and review disagree: {live_stderr}");
    if preemptible {
        assert!(live_stderr.contains("Kueue could preempt it"), "{live_stderr}");
    }
    (preemptible, detail)
}

fn run_case(cluster: &Cluster, case: &Case, index: usize, classes: &Classes) -> Outcome {
    let s = format!("{}{index}", unique());
    let rf = format!("rf-{s}");
    let (mut objects, low_cq, preemptor_cq) = case_objects(case, &s, &rf);
    let ns = format!("model{index}-{s}");
    objects.insert(0, flavor(&rf));
    objects.push(namespace(&ns, None, &[]));
    objects.push(local_queue(&ns, "low-queue", &low_cq));
    objects.push(local_queue(&ns, "preemptor-queue", &preemptor_cq));
    cluster.apply(&objects);

    // Every workload checkpoints, so eval-admission lets it in whatever its verdict.
    let job = |name: &str, cpu: &str, queue: &str, class: &str| {
        evaluation(&ns, name, cpu, &[(QUEUE_LABEL, queue), (PRIORITY_LABEL, class)], &[CHECKPOINTING])
    };
    let low = job("low", case.low_cpu, "low-queue", &classes.low);
    match case.story {
        Story::Plain { borrowing } => {
            cluster.create(&low);
            wait_admitted(cluster, &ns, "low");
            if borrowing {
                wait_borrowing(cluster, &low_cq, case.low_cpu);
            }
        }
        Story::OlderEqualPriority => {
            cluster.create(&job("blocker", "1", "low-queue", &classes.low));
            wait_admitted(cluster, &ns, "blocker");
            cluster.create(&job("preemptor", case.preemptor_cpu, "low-queue", &classes.low));
            wait_pending(cluster, &ns, "preemptor");
            // Creation timestamps have one-second resolution: make "older" unambiguous.
            std::thread::sleep(Duration::from_millis(1500));
            cluster.create(&low);
            wait_admitted(cluster, &ns, "low");
        }
        Story::BorrowedLater => {
            cluster.create(&low);
            wait_admitted(cluster, &ns, "low");
            cluster.create(&job("mid", "1", "low-queue", &classes.mid));
            wait_admitted(cluster, &ns, "mid");
            wait_borrowing(cluster, &low_cq, "1");
        }
    }

    let (verdict_preemptible, verdict_detail) = verdict(cluster, &low, case.setup);

    // The preemptor's chance.
    match case.story {
        Story::Plain { .. } | Story::BorrowedLater => {
            cluster.create(&job("preemptor", case.preemptor_cpu, "preemptor-queue", &classes.high));
        }
        Story::OlderEqualPriority => {
            let blocker = cluster.job_workload(&ns, "blocker").unwrap();
            let name = blocker["metadata"]["name"].as_str().unwrap();
            deactivate_workload(cluster, &ns, name).unwrap();
        }
    }
    let (kueue_preempted, kueue_detail) = watch(cluster, &ns, case.setup);
    if kueue_preempted {
        // The room went to the preemptor.
        wait_admitted(cluster, &ns, "preemptor");
        assert!(cluster.suspended("job", &ns, "low"), "{}: the preempted Job is suspended again", case.setup);
    } else {
        assert!(!cluster.suspended("job", &ns, "low"), "{}: low still running", case.setup);
    }
    Outcome { setup: case.setup, kueue_preempted, kueue_detail, verdict_preemptible, verdict_detail }
}

/// For each ClusterQueue / cohort set-up: does Kueue really preempt a
/// low-priority workload when a preemptor needs its room, and does
/// eval-admission call that workload preemptible? They must agree on every row.
#[test]
fn kueue_preempts_exactly_what_eval_admission_calls_preemptible() {
    let cluster = cluster();
    let s = unique();
    let classes = Classes { low: format!("low-{s}"), mid: format!("mid-{s}"), high: format!("high-{s}") };
    cluster.apply(&[
        priority_class(&classes.low, 100),
        priority_class(&classes.mid, 500),
        priority_class(&classes.high, 1000),
    ]);

    let outcomes: Vec<Outcome> =
        CASES.iter().enumerate().map(|(index, case)| run_case(cluster, case, index + 1, &classes)).collect();

    let mut table = String::from(
        "| set-up | Kueue preempted the low workload? | eval-admission verdict on it | agree? |\n|---|---|---|---|\n",
    );
    for outcome in &outcomes {
        let verdict = if outcome.verdict_preemptible {
            format!("preemptible: {}", outcome.verdict_detail)
        } else {
            "not preemptible (allowed)".to_string()
        };
        let kueue = if outcome.kueue_preempted {
            format!("yes: {}", outcome.kueue_detail)
        } else {
            outcome.kueue_detail.clone()
        };
        writeln!(
            table,
            "| {} | {} | {} | {} |",
            outcome.setup,
            kueue,
            verdict,
            yes_no(outcome.kueue_preempted == outcome.verdict_preemptible)
        )
        .unwrap();
    }
    println!("{table}");
    std::fs::write(out_dir(cluster).join("kueue-model.md"), &table).unwrap();
    for outcome in &outcomes {
        assert_eq!(
            outcome.verdict_preemptible,
            outcome.kueue_preempted,
            "MODEL DISAGREES WITH KUEUE on {}: Kueue preempted: {} ({}); eval-admission says preemptible: {} ({})\n{table}",
            outcome.setup,
            outcome.kueue_preempted,
            outcome.kueue_detail,
            outcome.verdict_preemptible,
            outcome.verdict_detail
        );
    }
}
