//! The `review` command on the shipped examples: each rule shows itself, and bad
//! input exits 2 with a one-line reason and no panic.

use std::process::{Command, Output};

use base64::Engine;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_eval-admission");

fn examples(file: &str) -> String {
    testkit::repo("examples").join(file).display().to_string()
}

fn review_with(cluster: &str, request: &str) -> Output {
    Command::new(BIN)
        .args(["review", "--cluster", &examples(cluster), "--config", &examples("config.yaml"), request])
        .output()
        .expect("runs the binary")
}

/// Runs `review` on an example and returns (exit code, printed JSON).
fn review(request: &str) -> (i32, Value) {
    let cluster = if request.contains("kueue-not-installed") { "cluster-without-kueue.yaml" } else { "cluster.yaml" };
    let output = review_with(cluster, &examples(request));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let printed = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{request}: not JSON ({e}): {stdout}"));
    (output.status.code().unwrap(), printed)
}

fn patch_of(printed: &Value) -> Value {
    let encoded = printed["mutating"]["response"]["patch"].as_str().expect("a patch");
    serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(encoded).unwrap()).unwrap()
}

/// The denial of whichever webhook refused (the API server stops at the mutating one's).
fn denial(printed: &Value) -> (String, String) {
    let webhook = if printed["validating"].is_null() { "mutating" } else { "validating" };
    let response = &printed[webhook]["response"];
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 403);
    (
        response["auditAnnotations"]["reason"].as_str().unwrap().into(),
        response["status"]["message"].as_str().unwrap().into(),
    )
}

#[test]
fn evalhub_job_is_labelled_suspended_and_allowed() {
    let (code, printed) = review("evalhub-job.yaml");
    assert_eq!(code, 0);
    assert_eq!(printed["mutating"]["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(printed["mutating"]["response"]["patchType"], "JSONPatch");
    assert_eq!(
        patch_of(&printed),
        serde_json::json!([{"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "eval-queue"},
                           {"op": "add", "path": "/spec/suspend", "value": true}])
    );
    assert_eq!(printed["object"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "eval-queue");
    assert_eq!(printed["object"]["spec"]["suspend"], true);
    assert_eq!(printed["validating"]["response"]["allowed"], true);
    assert!(printed["validating"]["response"].get("patch").is_none(), "only the mutating response carries a patch");
}

#[test]
fn aiperf_jobset_gets_the_annotation_default_that_aiperf_ignores() {
    let (code, printed) = review("aiperf-jobset.yaml");
    assert_eq!(code, 0);
    assert_eq!(printed["object"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "aiperf-queue");
    assert_eq!(printed["object"]["spec"]["suspend"], true);
    // The rest of the object is untouched.
    assert_eq!(printed["object"]["spec"]["replicatedJobs"][1]["replicas"], 4);
}

#[test]
fn each_denial_has_its_reason_and_an_actionable_message() {
    let cases = [
        (
            "job-missing-queue.yaml",
            "missing-local-queue",
            "LocalQueues in 'team-a-namespace' that would admit it: eval-queue.",
        ),
        ("job-held-queue.yaml", "local-queue-stopped", "LocalQueue 'held-queue' has stopPolicy Hold"),
        ("job-orphan-queue.yaml", "cluster-queue-missing", "ClusterQueue 'retired-cq', which does not exist"),
        ("job-not-selected.yaml", "namespace-not-selected", "whose namespaceSelector 'team=team-b' does not select"),
        (
            "job-inactive-queue.yaml",
            "cluster-queue-inactive",
            "ClusterQueue 'paused-cq', which is inactive: it has stopPolicy Hold",
        ),
        ("job-uncovered-resource.yaml", "resource-uncovered", "requests nvidia.com/gpu, which no resource group"),
        ("job-exceeds-quota.yaml", "exceeds-quota", "could get at most 32"),
        ("job-pods-refused.yaml", "pods-would-be-refused", "its pods would be refused by the API server"),
        (
            "job-kueue-not-installed.yaml",
            "kueue-not-installed",
            "Kueue is not installed, but LocalQueue 'eval-queue' was explicitly requested",
        ),
        ("job-missing-priority-class.yaml", "missing-workload-priority-class", "WorkloadPriorityClass 'urgent'"),
        (
            "job-missing-pod-priority-class.yaml",
            "missing-priority-class",
            "PriorityClass 'gpu-urgent' in spec.template",
        ),
        (
            "job-preemptible.yaml",
            "preemptible",
            "ClusterQueue 'team-a-shared-cq' has preemption.withinClusterQueue LowerPriority",
        ),
        (
            "aiperf-jobset-cohort.yaml",
            "preemptible",
            "ClusterQueue 'research-cq' has preemption.reclaimWithinCohort Any",
        ),
        ("review-unsuspend.yaml", "unsuspend-not-allowed", "alice tried"),
    ];
    for (file, reason, phrase) in cases {
        let (code, printed) = review(file);
        assert_eq!(code, 1, "{file} exits 1 when denied");
        let (got_reason, message) = denial(&printed);
        assert_eq!(got_reason, reason, "{file}");
        assert!(message.contains(phrase), "{file}: {message}");
        assert!(
            message.contains("To fix:")
                || message.contains("Remove the label")
                || message.contains("Use one of")
                || message.contains("Kueue starts it"),
            "{file} says the way out: {message}"
        );
    }
}

#[test]
fn soft_findings_are_warnings() {
    for (file, warning_on, phrase) in [
        ("job-bypass.yaml", "mutating", "bypasses Kueue"),
        ("evalhub-job.yaml", "validating", "waitForPodsReady is on (timeout 30m0s)"),
    ] {
        let (code, printed) = review(file);
        assert_eq!(code, 0, "{file}");
        let warnings =
            printed[warning_on]["response"]["warnings"].as_array().unwrap_or_else(|| panic!("{file}: {printed}"));
        assert!(warnings.iter().any(|w| w.as_str().unwrap().contains(phrase)), "{file}: {warnings:?}");
        // The API server keeps a request's warnings whole up to 4096 runes in all.
        let total: usize = warnings.iter().map(|w| w.as_str().unwrap().chars().count()).sum();
        assert!(total <= 1024, "{file}: {total} runes of warnings leave too little room for the other webhooks'");
    }
}

#[test]
fn checkpointing_evaluations_are_allowed_where_others_are_not() {
    let (code, printed) = review("job-checkpointing.yaml");
    assert_eq!(code, 0);
    assert_eq!(printed["validating"]["response"]["allowed"], true);
}

#[test]
fn the_uid_of_an_admission_review_is_echoed() {
    let (_, printed) = review("review-unsuspend.yaml");
    assert_eq!(printed["mutating"]["response"]["uid"], "7d0c1f0e-2a4b-4c6d-8e9f-0a1b2c3d4e5f");
    assert_eq!(printed["validating"]["response"]["uid"], "7d0c1f0e-2a4b-4c6d-8e9f-0a1b2c3d4e5f");
}

#[test]
fn unusable_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    };
    let job = std::fs::read_to_string(examples("evalhub-job.yaml")).unwrap();
    let cases = [
        ("truncated", write("truncated.yaml", &job.as_bytes()[..job.len() / 2 + 7])),
        ("garbage", write("garbage.bin", &[0xff, 0xd8, 0x00, 0x13, 0x37, 0x00, 0xfe])),
        (
            "wrong kind",
            write("deploy.yaml", b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, namespace: a}\n"),
        ),
        (
            "no namespace",
            write("nons.yaml", job.replace("  namespace: team-a-namespace\n  labels", "  labels").as_bytes()),
        ),
        ("empty", write("empty.yaml", b"")),
        ("missing file", dir.path().join("nope.yaml").display().to_string()),
        (
            "review without request",
            write("r.json", br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#),
        ),
    ];
    for (what, path) in cases {
        let output = review_with("cluster.yaml", &path);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{what}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{what}: one line: {stderr}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(output.stdout.is_empty(), "{what}: nothing on stdout");
    }
    // A bad cluster file is unusable input too.
    let bad_cluster = write("cluster.yaml", b"apiVersion: v1\nkind: Namespace\nmetadata: {name: [");
    let output =
        Command::new(BIN).args(["review", "--cluster", &bad_cluster, &examples("evalhub-job.yaml")]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not valid YAML"));
}

/// `review ... | head -1`: the reader goes away before the JSON is written.
/// The command must not panic, and its exit status still gives the decision.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let output = Command::new(BIN)
        .args(["review", "--cluster", &examples("cluster.yaml"), &examples("job-missing-queue.yaml")])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("runs the binary");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(1), "denied, whoever reads the output: {stderr}");
}

/// docs/rules.md quotes the denial of each example its tables name, under a
/// heading starting with the reason; each must be what `review` says for that
/// example, word for word.
#[test]
fn the_rules_doc_quotes_each_denial_exactly() {
    let rules = std::fs::read_to_string(testkit::repo("docs/rules.md")).unwrap();
    let quotes = |reason: &str| -> Vec<&str> {
        let heading = format!("**`{reason}`**");
        let lines: Vec<&str> = rules.lines().collect();
        lines
            .windows(3)
            .filter(|w| w[0].starts_with(&heading) && w[0].ends_with(':') && w[1].is_empty())
            .filter_map(|w| w[2].strip_prefix("> "))
            .collect()
    };
    let mut compared = 0;
    for row in rules.lines().filter(|line| line.starts_with("| `") && line.contains("`examples/job")) {
        let reason = row.split('`').nth(1).unwrap();
        let example = row.rsplit("`examples/").next().unwrap().split('`').next().unwrap();
        let (said_reason, message) = denial(&review(example).1);
        assert_eq!(said_reason, reason, "{example}");
        let quoted = quotes(reason);
        assert!(
            quoted.contains(&message.as_str()),
            "docs/rules.md quotes for `{reason}` lack {example}'s:\n{message}\n{quoted:#?}"
        );
        compared += 1;
    }
    assert!(compared >= 14, "only {compared} examples in the rules tables: docs/rules.md's layout changed");
}

fn audit(args: &[&str]) -> Output {
    Command::new(BIN).arg("audit").args(args).output().expect("runs the binary")
}

/// The shipped stored workloads: each comment's reason, and nothing for the
/// rest; exit status 1 when anything is found, 0 when nothing is.
#[test]
fn the_audit_reports_the_stored_evaluations_as_their_comments_say() {
    let (cluster, stored) = (examples("cluster.yaml"), examples("stored-workloads.yaml"));
    let output = audit(&["--cluster", &cluster, "--cluster", &stored, "-o", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["workloads"], 6);
    let found: Vec<(&str, &str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["stage"].as_str().unwrap(), f["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        found,
        [
            ("eval-outside-kueue", "running", "bypasses-kueue"),
            ("eval-running-preemptible", "running", "preemptible"),
            ("eval-waiting-for-a-deleted-queue", "queued", "missing-local-queue"),
        ]
    );
    // Each comment in the file says what is reported, by its reason in parentheses.
    let text = std::fs::read_to_string(&stored).unwrap();
    let commented: Vec<&str> =
        text.lines().filter_map(|line| line.strip_prefix("# ")?.rsplit_once(" (")?.1.strip_suffix(").")).collect();
    let mut reasons: Vec<&str> = found.iter().map(|(_, _, reason)| *reason).collect();
    reasons.sort_unstable();
    let mut commented = commented;
    commented.sort_unstable();
    assert_eq!(reasons, commented);

    let table = String::from_utf8(audit(&["--cluster", &cluster, "--cluster", &stored]).stdout).unwrap();
    assert!(table.starts_with("6 workloads audited, 3 found\nNAMESPACE "), "{table}");
    assert!(
        table.contains("    Job team-a-namespace/eval-waiting-for-a-deleted-queue names LocalQueue 'retired-queue'")
    );

    let clean = audit(&["--cluster", &cluster]);
    assert_eq!(clean.status.code(), Some(0));
    assert_eq!(String::from_utf8(clean.stdout).unwrap(), "0 workloads audited, 0 found\n");
}

/// `review KIND/NAME`: why one stored workload waits, from a file as from the cluster.
#[test]
fn review_of_a_stored_workload_says_why_it_waits() {
    let (cluster, stored) = (examples("cluster.yaml"), examples("stored-workloads.yaml"));
    let review = |name: &str, namespace: &str| {
        Command::new(BIN)
            .args(["review", "--cluster", &cluster, "--cluster", &stored, "-n", namespace, name])
            .output()
            .unwrap()
    };
    let waiting = review("job/eval-waiting-for-a-deleted-queue", "team-a-namespace");
    assert_eq!(waiting.status.code(), Some(1));
    let printed = String::from_utf8(waiting.stdout).unwrap();
    let row: Vec<&str> = printed.lines().nth(2).unwrap().split_whitespace().collect();
    assert_eq!(
        row,
        ["team-a-namespace", "Job", "eval-waiting-for-a-deleted-queue", "queued", "missing-local-queue", "Deny"]
    );
    assert!(printed.contains("so Kueue would keep it suspended forever"), "{printed}");
    let fine = review("jobs.batch/eval-queued", "team-a-namespace");
    assert_eq!(
        (fine.status.code(), String::from_utf8(fine.stdout).unwrap().as_str()),
        (Some(0), "1 workload audited, 0 found\n")
    );
    let absent = review("job/eval-queued", "plain");
    assert_eq!(absent.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(absent.stderr).unwrap(),
        "eval-admission: request: no Job plain/eval-queued in the cluster state files\n"
    );
}

/// A config written for a newer version (examples/config.yaml with a field
/// this one does not know, nested and at the top): `review` and `audit` read it
/// as they read the example, with one warning per field on stderr; `--strict`
/// refuses it with exit 2, naming each; `manifests` refuses it without being
/// asked; `config check` says which. docs/configuration.md, "Compatibility".
#[test]
fn a_config_field_this_version_does_not_know_is_warned_of_and_refused_by_strict() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(examples("config.yaml")).unwrap();
    let newer = example.replace("  - name: aiperf\n", "  - name: aiperf\n    checkpointing: {every: 10m}\n");
    assert_ne!(newer, example, "examples/config.yaml has the aiperf selector in block style");
    let newer_path = dir.path().join("newer.yaml");
    std::fs::write(&newer_path, format!("{newer}futureSection: {{enabled: true}}\n")).unwrap();
    let newer_path = newer_path.display().to_string();
    let run = |args: &[&str]| -> (Option<i32>, String, String) {
        let output = Command::new(BIN).args(args).output().expect("runs the binary");
        (output.status.code(), String::from_utf8(output.stdout).unwrap(), String::from_utf8(output.stderr).unwrap())
    };
    let (cluster, request) = (examples("cluster.yaml"), examples("evalhub-job.yaml"));
    let warned = |stderr: &str| {
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 2, "one warning per field: {stderr}");
        for (line, field) in lines.iter().zip(["selection.selectors[1].checkpointing", "futureSection"]) {
            assert!(
                line.starts_with(&format!(
                    "eval-admission: warning: config file {newer_path}: unknown field {field}: "
                )) && line.contains("does not know it and ignores it"),
                "{stderr}"
            );
        }
    };
    let refused = |stderr: &str| {
        assert_eq!(
            stderr.trim_end().lines().collect::<Vec<_>>(),
            [format!(
                "eval-admission: config file {newer_path}: unknown fields selection.selectors[1].checkpointing, \
                 futureSection: eval-admission {} does not know them (misspelt, or written for a newer version)",
                env!("CARGO_PKG_VERSION")
            )]
        );
    };

    let (code, stdout, stderr) = run(&["review", "--cluster", &cluster, "--config", &newer_path, &request]);
    assert_eq!(code, Some(0), "{stderr}");
    let as_example = review_with("cluster.yaml", &request);
    assert_eq!(stdout.as_bytes(), as_example.stdout, "the same review as under the example config");
    assert!(as_example.stderr.is_empty());
    warned(&stderr);
    let (code, stdout, stderr) = run(&["review", "--strict", "--cluster", &cluster, "--config", &newer_path, &request]);
    assert_eq!((code, stdout.as_str()), (Some(2), ""), "{stderr}");
    refused(&stderr);

    let (code, stdout, stderr) = run(&["audit", "--cluster", &cluster, "--config", &newer_path]);
    assert_eq!((code, stdout.as_str()), (Some(0), "0 workloads audited, 0 found\n"), "{stderr}");
    warned(&stderr);
    let (code, _, stderr) = run(&["audit", "--strict", "--cluster", &cluster, "--config", &newer_path]);
    assert_eq!(code, Some(2));
    refused(&stderr);

    let (code, stdout, stderr) = run(&["manifests", "--config", &newer_path]);
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
    refused(&stderr);
    let (code, stdout, stderr) = run(&["manifests", "--config", &examples("config.yaml")]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("kind: MutatingWebhookConfiguration"), "{stdout}");

    let (code, stdout, stderr) = run(&["config", "check", "--config", &newer_path]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout,
        format!(
            "{newer_path}: eval-admission {} reads it, ignoring 2 fields it does not know\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    warned(&stderr);
    let (code, stdout, stderr) = run(&["config", "check", "--strict", "--config", &newer_path]);
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
    refused(&stderr);
    let (code, stdout, stderr) = run(&["config", "check", "--strict", "--config", &examples("config.yaml")]);
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
    assert!(
        stdout.ends_with(&format!("config.yaml: eval-admission {} knows every field\n", env!("CARGO_PKG_VERSION")))
    );

    // A known field's bad value is refused with or without --strict.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, example.replace("allWorkloads: false", "allWorkloads: sometimes")).unwrap();
    for args in [&["config", "check", "--config"][..], &["review", "--cluster", &cluster, "--config"][..]] {
        let mut args = args.to_vec();
        args.push(bad.to_str().unwrap());
        if args[0] == "review" {
            args.push(&request);
        }
        let (code, _, stderr) = run(&args);
        assert_eq!(code, Some(2), "{args:?}");
        assert!(stderr.contains("selection.allWorkloads: invalid type: string \"sometimes\""), "{stderr}");
    }
}
