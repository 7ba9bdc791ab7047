//! (e) The judge of tests/fidelity against the real Kueue, on one set-up of each
//! kind of disagreement the generator found.

use super::*;

/// One kind of disagreement the generator found (docs/kueue-model.md), set up on
/// the real cluster.
struct JudgeRow {
    setup: &'static str,
    /// What the real Kueue did: admitted (and whether a probe-like preemptor
    /// then preempted it).
    kueue_admitted: bool,
    kueue_preempted: Option<bool>,
    kueue_detail: String,
    judge: oracle::KueueVerdict,
    eval_admission: String,
}

impl Cluster {
    /// Everything the judge reads.
    fn judge_objects(&self) -> Vec<Value> {
        let list: Value = serde_json::from_str(&self.state("json").unwrap()).unwrap();
        list["items"].as_array().unwrap().clone()
    }
}

/// Two ResourceFlavors under one node-label key, as the judge pins them.
fn pool_flavor(name: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name},
        "spec": {"nodeLabels": {"node-pool": name}}})
}

fn judge_row(
    cluster: &Cluster,
    judge: &mut oracle::Oracle,
    setup: &'static str,
    objects: Vec<Value>,
    ns: &str,
    low: Value,
    preemptor: Option<Value>,
) -> JudgeRow {
    cluster.apply(&objects);
    let verdict = Command::new(BIN)
        .arg("review")
        .arg("--cluster")
        .arg({
            let path = cluster.dir.join(format!("judge-{ns}.yaml"));
            cluster.state_file(&path);
            path
        })
        .arg("--config")
        .arg(repo("tests/kueue/eval-admission-config.yaml"))
        .arg({
            let path = cluster.dir.join(format!("judge-{ns}-job.json"));
            std::fs::write(&path, without_annotations(&low).to_string()).unwrap();
            path
        })
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&verdict.stdout).unwrap();
    let deciding = if printed["validating"].is_null() { &printed["mutating"] } else { &printed["validating"] };
    let eval_admission = deciding["response"]["auditAnnotations"]["reason"].as_str().unwrap_or_default().to_string();

    // Kueue alone decides on the real cluster: created as a plain Job (not
    // selected as an evaluation), since eval-admission would refuse some of these.
    let plain = |job: &Value| {
        let mut job = job.clone();
        for key in ["app", "component"] {
            job["metadata"]["labels"].as_object_mut().unwrap().remove(key);
        }
        job
    };
    let low = plain(&low);
    cluster.create(&low);
    let name = low["metadata"]["name"].as_str().unwrap();
    // Admitted, or considered and held.
    let admitted = wait_for(&format!("Kueue to decide on {ns}/{name}"), ADMISSION_WAIT, || {
        let workload = cluster.job_workload(ns, name)?;
        if condition_true(&workload, "Admitted") {
            return Some(true);
        }
        condition(&workload, "QuotaReserved").filter(|(status, _)| status == "False").map(|_| false)
    });
    let job = cluster.get("job", ns, name);
    let judged = judge.judge(setup, &cluster.judge_objects(), &job);
    let (kueue_preempted, kueue_detail) = match (admitted, preemptor) {
        (false, _) => {
            // Held: the message Kueue gives, and still held a while later.
            std::thread::sleep(PREEMPTION_WAIT / 4);
            let workload = cluster.job_workload(ns, name).unwrap();
            assert!(!condition_true(&workload, "QuotaReserved"), "{setup}: admitted after all");
            let message = workload["status"]["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "QuotaReserved"))
                .and_then(|c| c["message"].as_str())
                .unwrap_or_default()
                .to_string();
            (None, message)
        }
        (true, Some(preemptor)) => {
            cluster.create(&plain(&preemptor));
            let (preempted, detail) = watch(cluster, ns, setup);
            (Some(preempted), detail)
        }
        (true, None) => (None, "admitted".to_string()),
    };
    JudgeRow { setup, kueue_admitted: admitted, kueue_preempted, kueue_detail, judge: judged, eval_admission }
}

/// The in-process judge is fast; the real controller is the final word. For
/// each kind of disagreement the generator found, the real Kueue must do what
/// the judge says of the same objects, and eval-admission's verdict (of the
/// workload without its checkpointing annotation) must match the real Kueue.
#[test]
fn the_real_kueue_confirms_the_judge() {
    let cluster = cluster();
    let mut judge = oracle::Oracle::start(&oracle::build(None));
    let s = unique();
    let (low_class, high_class) = (format!("judge-low-{s}"), format!("judge-high-{s}"));
    cluster.apply(&[priority_class(&low_class, 100), priority_class(&high_class, 1000)]);
    let job = |ns: &str, name: &str, cpu: &str, queue: &str, labels: &[(&str, &str)]| {
        let mut all = vec![(QUEUE_LABEL, queue)];
        all.extend_from_slice(labels);
        evaluation(ns, name, cpu, &all, &[CHECKPOINTING])
    };
    let mut rows = Vec::new();

    // (J1) a ClusterQueue whose namespaceSelector does not select the namespace.
    let (ns, rf, cq) = (format!("judge1-{s}"), format!("judge-rf1-{s}"), format!("judge-sel-{s}"));
    let mut selective = cluster_queue(&cq, &rf, &[("cpu", "2", None)], None, Value::Null);
    selective["spec"]["namespaceSelector"] = json!({"matchLabels": {"team": "nobody"}});
    rows.push(judge_row(
        cluster,
        &mut judge,
        "(J1) the ClusterQueue's namespaceSelector does not select the namespace",
        vec![flavor(&rf), namespace(&ns, None, &[]), selective, local_queue(&ns, "q", &cq)],
        &ns,
        job(&ns, "low", "1", "q", &[(PRIORITY_LABEL, &low_class)]),
        None,
    ));

    // (J2) a preemptor naming system-cluster-critical (every cluster has it).
    let (ns, rf, cq) = (format!("judge2-{s}"), format!("judge-rf2-{s}"), format!("judge-sys-{s}"));
    let mut preemptor = job(&ns, "preemptor", "1", "q", &[]);
    preemptor["spec"]["template"]["spec"]["priorityClassName"] = "system-cluster-critical".into();
    rows.push(judge_row(
        cluster,
        &mut judge,
        "(J2) withinClusterQueue LowerPriority; the preemptor names PriorityClass system-cluster-critical",
        vec![
            flavor(&rf),
            namespace(&ns, None, &[]),
            cluster_queue(&cq, &rf, &[("cpu", "1", None)], None, json!({"withinClusterQueue": "LowerPriority"})),
            local_queue(&ns, "q", &cq),
        ],
        &ns,
        job(&ns, "low", "1", "q", &[(PRIORITY_LABEL, &high_class)]),
        Some(preemptor),
    ));

    // (J3) a reclaimer that covers only another flavor than the one the low workload borrows.
    let (ns, a, b) = (format!("judge3-{s}"), format!("judge-a-{s}"), format!("judge-b-{s}"));
    let (borrower, lender, reclaimer, root) = (
        format!("judge-borrower-{s}"),
        format!("judge-lender-{s}"),
        format!("judge-reclaimer-{s}"),
        format!("judge-root3-{s}"),
    );
    rows.push(judge_row(
        cluster,
        &mut judge,
        "(J3) cohort: low borrows flavor a; the reclaimer (Any) covers only flavor b",
        vec![
            pool_flavor(&a),
            pool_flavor(&b),
            namespace(&ns, None, &[]),
            cluster_queue(&borrower, &a, &[("cpu", "0", None)], Some(&root), Value::Null),
            cluster_queue(&lender, &a, &[("cpu", "1", None)], Some(&root), Value::Null),
            cluster_queue(&reclaimer, &b, &[("cpu", "1", None)], Some(&root), json!({"reclaimWithinCohort": "Any"})),
            local_queue(&ns, "q", &borrower),
            local_queue(&ns, "reclaim", &reclaimer),
        ],
        &ns,
        job(&ns, "low", "1", "q", &[(PRIORITY_LABEL, &low_class)]),
        Some(job(&ns, "preemptor", "2", "reclaim", &[(PRIORITY_LABEL, &high_class)])),
    ));

    // (J4) a cohort where no one lends: the low workload's queue never goes over nominal.
    let (ns, rf) = (format!("judge4-{s}"), format!("judge-rf4-{s}"));
    let (own, reclaimer, root) = (format!("judge-own-{s}"), format!("judge-nolend-{s}"), format!("judge-root4-{s}"));
    let mut no_lending =
        cluster_queue(&reclaimer, &rf, &[("cpu", "1", None)], Some(&root), json!({"reclaimWithinCohort": "Any"}));
    no_lending["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = 0.into();
    rows.push(judge_row(
        cluster,
        &mut judge,
        "(J4) cohort: low's queue (cpu 1, may borrow) beside a reclaimer (Any) with lendingLimit 0",
        vec![
            flavor(&rf),
            namespace(&ns, None, &[]),
            cluster_queue(&own, &rf, &[("cpu", "1", None)], Some(&root), Value::Null),
            no_lending,
            local_queue(&ns, "q", &own),
            local_queue(&ns, "reclaim", &reclaimer),
        ],
        &ns,
        job(&ns, "low", "1", "q", &[(PRIORITY_LABEL, &low_class)]),
        Some(job(&ns, "preemptor", "2", "reclaim", &[(PRIORITY_LABEL, &high_class)])),
    ));

    // (J5) a GPU pool's taint that the pod template does not tolerate.
    let (ns, rf, cq) = (format!("judge5-{s}"), format!("judge-rf5-{s}"), format!("judge-taint-{s}"));
    let tainted = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": rf},
        "spec": {"nodeLabels": {"nvidia.com/gpu.product": "H100"},
            "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}});
    rows.push(judge_row(
        cluster,
        &mut judge,
        "(J5) the only flavor has taint nvidia.com/gpu=present:NoSchedule; the pod template has no toleration",
        vec![
            tainted,
            namespace(&ns, None, &[]),
            cluster_queue(&cq, &rf, &[("cpu", "2", None)], None, Value::Null),
            local_queue(&ns, "q", &cq),
        ],
        &ns,
        job(&ns, "low", "1", "q", &[(PRIORITY_LABEL, &low_class)]),
        None,
    ));

    // (J6) a nodeSelector no flavor of the ClusterQueue has.
    let (ns, rf, cq) = (format!("judge6-{s}"), format!("judge-rf6-{s}"), format!("judge-select-{s}"));
    let labelled = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": rf},
        "spec": {"nodeLabels": {"nvidia.com/gpu.product": "H100"}}});
    let mut l40s = job(&ns, "low", "1", "q", &[(PRIORITY_LABEL, &low_class)]);
    l40s["spec"]["template"]["spec"]["nodeSelector"] = json!({"nvidia.com/gpu.product": "L40S"});
    rows.push(judge_row(
        cluster,
        &mut judge,
        "(J6) the pod template's nodeSelector asks for nvidia.com/gpu.product=L40S; the only flavor is H100",
        vec![
            labelled,
            namespace(&ns, None, &[]),
            cluster_queue(&cq, &rf, &[("cpu", "2", None)], None, Value::Null),
            local_queue(&ns, "q", &cq),
        ],
        &ns,
        l40s,
        None,
    ));

    let mut table = String::from(
        "| set-up | the real Kueue | the judge | judge agrees? | eval-admission's verdict | eval-admission agrees? |\n\
         |---|---|---|---|---|---|\n",
    );
    for row in &rows {
        let kueue = match (row.kueue_admitted, row.kueue_preempted) {
            (false, _) => format!("never admitted: {}", row.kueue_detail),
            (true, Some(true)) => format!("admitted, then {}", row.kueue_detail),
            (true, Some(false)) => format!("admitted, not preempted ({})", row.kueue_detail),
            (true, None) => "admitted".to_string(),
        };
        let judged = match (row.judge.admissible, row.judge.exposed) {
            (false, _) => format!("never admitted: {}", row.judge.reason.as_deref().unwrap_or("")),
            (true, Some(true)) => format!(
                "exposed: {} ({})",
                row.judge.eviction_reason.as_deref().unwrap_or(""),
                row.judge.preemptor.as_deref().unwrap_or("")
            ),
            (true, _) => "admitted, never preempted".to_string(),
        };
        let agree = row.kueue_admitted == row.judge.admissible
            && row.kueue_preempted.is_none_or(|preempted| Some(preempted) == row.judge.exposed);
        writeln!(
            table,
            "| {} | {kueue} | {judged} | {} | {} | {} |",
            row.setup,
            yes_no(agree),
            row.eval_admission,
            yes_no(eval_admission_agrees(row))
        )
        .unwrap();
    }
    println!("{table}");
    std::fs::write(out_dir(cluster).join("judge-vs-kueue.md"), &table).unwrap();
    for row in &rows {
        assert_eq!(
            row.kueue_admitted, row.judge.admissible,
            "{}: the judge is wrong about admission\n{table}",
            row.setup
        );
        if let Some(preempted) = row.kueue_preempted {
            assert_eq!(
                Some(preempted),
                row.judge.exposed,
                "{}: the judge is wrong about preemption\n{table}",
                row.setup
            );
        }
        assert!(eval_admission_agrees(row), "{}: eval-admission disagrees with Kueue\n{table}", row.setup);
    }
}

/// eval-admission says what the real Kueue did: never admitted is a denial
/// claiming so, preempted is `preemptible`, admitted and kept is allowed.
fn eval_admission_agrees(row: &JudgeRow) -> bool {
    let reason = eval_admission::vocabulary::reason::Reason::from_label(&row.eval_admission);
    match (row.kueue_admitted, row.kueue_preempted) {
        (false, _) => reason.is_some_and(eval_admission::vocabulary::reason::Reason::claims_never_admitted),
        (true, Some(true)) => row.eval_admission == "preemptible",
        (true, _) => row.eval_admission == "checked",
    }
}
