//! What the fuzz targets share: the cluster state and the configs they review
//! against (built once), the invariants every answered review must keep, and
//! the seed writer that turns the repository's examples into starting corpora.
//!
//! A broken invariant panics, which libFuzzer reports as a crash and saves as
//! a reproducer.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use base64::Engine as _;
use eval_admission::admission::{self, Webhook};
use eval_admission::cli;
use eval_admission::cluster::ClusterState;
use eval_admission::cluster::state_file;
use eval_admission::config::{Config, Loaded};
use eval_admission::vocabulary::reason::Reason;
use serde_json::Value;

/// The state every review target decides against: the shipped example cluster.
pub const CLUSTER: &[u8] = include_bytes!("../../examples/cluster.yaml");
/// The shipped policy config.
pub const BASE_CONFIG: &str = include_str!("../../manifests/base/config.yaml");

/// The repository, for the seed writer (the fuzz binaries run from this checkout).
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

pub const WEBHOOKS: [Webhook; 2] = [Webhook::Mutate, Webhook::Validate];

pub fn state() -> &'static ClusterState {
    static STATE: OnceLock<ClusterState> = OnceLock::new();
    STATE.get_or_init(|| state_file::parse(CLUSTER).expect("examples/cluster.yaml parses"))
}

/// A config that reaches the most code: every Job and JobSet is an evaluation,
/// every rule that refuses only warns (so the workload is still shaped and
/// patched after a broken rule), and a repeated pod priority class is removed
/// by the patch instead of denied.
pub fn wide_config_text() -> String {
    let mut text = String::from("selection: {allWorkloads: true}\ndropRepeatedPodPriorityClass: true\nenforcement:\n");
    for reason in Reason::ALL.iter().filter(|r| r.default_enforcement().is_some()) {
        let _ = writeln!(text, "  {}: Warn", reason.as_str());
    }
    text
}

/// The configs a review is decided under: `Config::default()`, the shipped
/// manifests/base/config.yaml (only when it differs from the default) and the
/// wide config above.
pub fn configs() -> &'static [(&'static str, Config)] {
    static CONFIGS: OnceLock<Vec<(&'static str, Config)>> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let default = Config::default();
        let base =
            Config::parse(BASE_CONFIG).and_then(Loaded::refuse_unknown).expect("manifests/base/config.yaml parses");
        let wide = Config::parse(&wide_config_text()).and_then(Loaded::refuse_unknown).expect("the wide config parses");
        let mut configs = vec![("default", default.clone())];
        if base != default {
            configs.push(("base", base));
        }
        configs.push(("wide", wide));
        configs
    })
}

pub fn base_config() -> &'static Config {
    static BASE: OnceLock<Config> = OnceLock::new();
    BASE.get_or_init(|| {
        Config::parse(BASE_CONFIG).and_then(Loaded::refuse_unknown).expect("manifests/base/config.yaml parses")
    })
}

/// A few fixed AdmissionReview bodies (a Job CREATE, a JobSet CREATE, a Job
/// UPDATE) for the targets that fuzz the state or the config instead of the
/// request.
pub fn fixed_bodies() -> &'static [(Vec<u8>, Value)] {
    static BODIES: OnceLock<Vec<(Vec<u8>, Value)>> = OnceLock::new();
    BODIES.get_or_init(|| {
        let files: [&[u8]; 3] = [
            include_bytes!("../../examples/evalhub-job.yaml"),
            include_bytes!("../../examples/aiperf-jobset.yaml"),
            include_bytes!("../../examples/review-unsuspend.yaml"),
        ];
        files
            .iter()
            .map(|file| {
                let review = cli::admission_review(file).expect("a shipped example is a request file");
                (serde_json::to_vec(&review).expect("a Value serializes"), review)
            })
            .collect()
    })
}

/// Reviews `body` and checks what an answered review must keep:
///
/// - the response is a JSON AdmissionReview whose `response.uid` is the
///   request's uid and whose `allowed` is the decision;
/// - a denial carries a non-empty `status.message`;
/// - a patch is sent as `patchType: JSONPatch` with the base64 of exactly the
///   decision's patch, and an allowed patch applies to the request's `object`
///   (the API server refuses the request when it does not).
///
/// `request` is `body` parsed as a `serde_json::Value` (what the API server
/// sees), parsed once by the caller: serde_json skips the parts of the body
/// the typed decode ignores without checking number ranges, so a body
/// review() takes may still not parse as a Value (1e999 somewhere it does not
/// read); the checks that need the Value are then skipped.
///
/// Returns the patched object when the review was allowed with a non-empty
/// patch, for the caller's idempotence check. A body `review` refuses
/// (`BadReview`, answered 400) has nothing to check.
pub fn check_review(
    webhook: Webhook,
    body: &[u8],
    request: Option<&Value>,
    config: &Config,
    state: &ClusterState,
) -> Option<Value> {
    let outcome = admission::review_offline(webhook, body, config, state).ok()?;
    let decision = &outcome.decision;
    let response: Value = serde_json::from_slice(&outcome.body)
        .unwrap_or_else(|e| panic!("the response body is not JSON: {e}: {}", String::from_utf8_lossy(&outcome.body)));
    assert_eq!(response["apiVersion"], "admission.k8s.io/v1", "response apiVersion");
    assert_eq!(response["kind"], "AdmissionReview", "response kind");
    let answer = &response["response"];
    assert_eq!(answer["uid"].as_str(), Some(outcome.uid.as_str()), "response.uid is the decoded uid");
    assert_eq!(answer["allowed"].as_bool(), Some(decision.allowed), "response.allowed is the decision");
    if !decision.allowed {
        let message = answer.pointer("/status/message").and_then(Value::as_str).unwrap_or_default();
        assert!(!message.trim().is_empty(), "a denial without a message: {answer}");
    }
    match answer.get("patch") {
        None => assert!(decision.patch.0.is_empty(), "a non-empty patch that is not sent"),
        Some(sent) => {
            assert_eq!(answer["patchType"], "JSONPatch", "patchType");
            let json = base64::engine::general_purpose::STANDARD
                .decode(sent.as_str().expect("patch is a base64 string"))
                .expect("patch is valid base64");
            let sent: Value = serde_json::from_slice(&json).expect("the sent patch is JSON");
            assert_eq!(sent, serde_json::to_value(&decision.patch).unwrap(), "the sent patch is the decision's");
        }
    }

    let request = request?;
    assert_eq!(
        request.pointer("/request/uid").and_then(Value::as_str),
        Some(outcome.uid.as_str()),
        "response.uid is the request.uid of the body"
    );
    if !decision.allowed || decision.patch.0.is_empty() {
        return None;
    }
    let mut object = request
        .pointer("/request/object")
        .cloned()
        .unwrap_or_else(|| panic!("a patch for a request without an object: {:?}", decision.patch));
    if let Err(e) = json_patch::patch(&mut object, &decision.patch) {
        panic!(
            "the {} patch does not apply to request.object: {e}\npatch: {}\nobject: {}",
            webhook.as_str(),
            serde_json::to_string(&decision.patch).unwrap(),
            request.pointer("/request/object").unwrap()
        );
    }
    Some(object)
}

/// The mutating webhook is idempotent: its patched object, reviewed again,
/// is allowed with no patch (the API server may call it again, and a
/// patch on the second call means the first did not reach its shape).
pub fn check_mutation_idempotent(request: &Value, patched: Value, config: &Config, state: &ClusterState) {
    let mut again_value = request.clone();
    again_value["request"]["object"] = patched;
    let again = serde_json::to_vec(&again_value).expect("a Value serializes");
    let outcome = admission::review_offline(Webhook::Mutate, &again, config, state)
        .unwrap_or_else(|e| panic!("the patched object does not review again: {e}"));
    assert!(
        outcome.decision.allowed && outcome.decision.patch.0.is_empty(),
        "the mutating webhook is not idempotent: the patched object is {} with patch {} (reason {})",
        if outcome.decision.allowed { "allowed" } else { "denied" },
        serde_json::to_string(&outcome.decision.patch).unwrap(),
        outcome.decision.reason.as_str(),
    );
    check_review(Webhook::Mutate, &again, Some(&again_value), config, state);
}

/// Every webhook under every config, and the mutation's idempotence.
pub fn check_all(body: &[u8], state: &ClusterState) {
    let request = serde_json::from_slice::<Value>(body).ok();
    for (_, config) in configs() {
        for webhook in WEBHOOKS {
            let patched = check_review(webhook, body, request.as_ref(), config, state);
            if let (Webhook::Mutate, Some(patched), Some(request)) = (webhook, patched, request.as_ref()) {
                check_mutation_idempotent(request, patched, config, state);
            }
        }
    }
}

// ---- seeds ----

/// Called from each target's `init`: when EVAL_ADMISSION_FUZZ_SEEDS names a
/// directory, writes the target's seeds from the repository there and exits.
/// fuzz/run.sh does this before each run; the seeds are never committed.
pub fn write_seeds_if_asked(target: &str) {
    let Some(dir) = std::env::var_os("EVAL_ADMISSION_FUZZ_SEEDS") else {
        return;
    };
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).expect("create the seed directory");
    let mut seeds = match target {
        "review" => review_seeds(),
        "state_file" => files(&["examples", "manifests/base", "manifests/base/webhooks", "tests/kueue"]),
        "config" => {
            let mut seeds = files(&["examples/config.yaml", "manifests/base/config.yaml", "tests/kueue"]);
            seeds.push(("wide-config.yaml".into(), wide_config_text().into_bytes()));
            seeds.push(("empty-map.yaml".into(), b"{}\n".to_vec()));
            seeds
        }
        other => panic!("no seeds for target {other}"),
    };
    seeds.extend(found(target));
    for (name, bytes) in &seeds {
        std::fs::write(dir.join(name), bytes).expect("write a seed");
    }
    eprintln!("wrote {} seeds for {target} to {}", seeds.len(), dir.display());
    std::process::exit(0);
}

/// The reproducers of past findings (fuzz/artifacts-found/<target>/): every
/// run starts from them, so a finding that comes back fails at once.
fn found(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(REPO).join("fuzz/artifacts-found").join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Vec<u8>)> = entries
        .map(|e| e.unwrap().path())
        .filter(|path| path.is_file() && path.extension().is_none_or(|e| e != "md"))
        .map(|path| {
            let name = format!("found__{}", path.file_name().unwrap().to_string_lossy());
            (name, std::fs::read(&path).expect("read a reproducer"))
        })
        .collect();
    out.sort();
    out
}

/// The YAML and JSON files of the given directories and files, named by their path.
fn files(paths: &[&str]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for path in paths {
        let full = Path::new(REPO).join(path);
        let entries: Vec<PathBuf> = if full.is_dir() {
            let mut entries: Vec<PathBuf> =
                std::fs::read_dir(&full).expect("read a seed directory").map(|e| e.unwrap().path()).collect();
            entries.sort();
            entries
        } else {
            vec![full]
        };
        for file in entries {
            let is_data = file.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json");
            if file.is_file() && is_data {
                let name = file.strip_prefix(REPO).unwrap().to_string_lossy().replace('/', "__");
                out.push((name, std::fs::read(&file).expect("read a seed file")));
            }
        }
    }
    out
}

/// AdmissionReview bodies: every request file in examples/ as the `review`
/// command reads it (cli::admission_review), and for each CREATE the mutating
/// webhook patches, the patched CREATE (what the validating webhook sees) and
/// an UPDATE of the patched object that unsuspends it.
fn review_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, bytes) in files(&["examples"]) {
        let Ok(review) = cli::admission_review(&bytes) else {
            continue; // a cluster state or config file
        };
        let body = serde_json::to_vec(&review).unwrap();
        out.push((format!("{name}.json"), body.clone()));
        let Ok(outcome) = admission::review_offline(Webhook::Mutate, &body, base_config(), state()) else {
            continue;
        };
        if !outcome.decision.allowed || outcome.decision.patch.0.is_empty() {
            continue;
        }
        let mut object = review["request"]["object"].clone();
        json_patch::patch(&mut object, &outcome.decision.patch).expect("the shipped examples' patches apply");
        let mut patched = review.clone();
        patched["request"]["object"] = object.clone();
        out.push((format!("{name}.patched.json"), serde_json::to_vec(&patched).unwrap()));
        let mut update = patched;
        update["request"]["operation"] = "UPDATE".into();
        update["request"]["oldObject"] = object.clone();
        if let Some(spec) = update["request"]["object"].get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("suspend".into(), false.into());
        }
        out.push((format!("{name}.unsuspend.json"), serde_json::to_vec(&update).unwrap()));
    }
    out
}
