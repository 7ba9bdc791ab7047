//! Kueue's own scheduler as the judge of eval-admission's verdicts.
//!
//! For each generated set-up, eval-admission's verdict (the decision code
//! `review` runs) is compared with what Kueue does with the workload that
//! eval-admission lets through (tests/kueue/oracle). The release judged is
//! FIDELITY_KUEUE (`make fidelity KUEUE=v0.18.2`; default v0.19.2), and the
//! model is told the same release (the config's `kueue.version`). The two promises:
//! - admissible: a queued evaluation eval-admission allows is one Kueue admits;
//! - not exposed: once admitted, no workload another user could submit makes
//!   Kueue preempt it (eval-admission denies evaluations that are exposed).
//!
//! `differential_fixed_seed` runs in `make test` (FIDELITY_N set-ups, default
//! 2,000, seed 1) and fails when a disagreement count rises above the recorded
//! baseline (tests/fidelity/baseline.json) or the judge errs; `make test` runs
//! it again, smaller, for each older release with a recorded table
//! (baseline-RELEASE.json, its module set in tests/kueue/releases); `make fidelity
//! N=...` runs as many as asked and prints the table. `replayed_cases` replays
//! the saved disagreements in tests/fidelity/cases/.
//!
//! Every way out a denial offers is judged too (`ways_out`): applied to the
//! workload, it must pass eval-admission and be admitted, and never
//! preempted, by Kueue's scheduler.

mod generate;
mod oracle;
mod ways_out;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use eval_admission::admission;
use eval_admission::cli;
use eval_admission::cluster::state_file;
use eval_admission::config::Config;
use eval_admission::vocabulary::kueue::{KueueVersion, QUEUE_NAME_LABEL};
use eval_admission::vocabulary::reason::Reason;
use oracle::{KueueVerdict, Oracle};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What eval-admission claims about a workload.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct EvalVerdict {
    allowed: bool,
    /// The reason label (audit annotation) of the deciding webhook.
    reason: String,
    /// The denial message, when denied.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    message: String,
    /// The object that reaches Kueue: mutated when the mutating webhook allowed it.
    #[serde(skip)]
    object: Value,
    /// The object as allowed carries a queue label (Kueue manages it).
    queued: bool,
    /// The validating webhook decided (the mutating one allowed it).
    #[serde(skip)]
    validated: bool,
}

const PREEMPTIBLE_REASON: &str = "preemptible";

/// A denial that claims Kueue would never admit the workload (the crate says which).
fn claims_never_admitted(reason: &str) -> bool {
    Reason::from_label(reason).is_some_and(Reason::claims_never_admitted)
}

/// One row of the agreement table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Category {
    /// Allowed (or denied only as preemptible), and Kueue admits it.
    AdmissibleAgree,
    /// Denied as one Kueue would never admit, and it never does.
    InadmissibleAgree,
    /// Allowed and queued, but Kueue never admits it: a silent forever-wait.
    AdmissibleMiss,
    /// Denied as never admissible, but Kueue would admit it.
    AdmissibleFalseDenial,
    /// Allowed, and no probe makes Kueue preempt it.
    SafeAgree,
    /// Denied as preemptible, and a probe makes Kueue preempt it.
    ExposedAgree,
    /// Allowed, but a probe makes Kueue preempt it: restarts from zero.
    ExposedMiss,
    /// Denied as preemptible, but no probe makes Kueue preempt it (conservative).
    ExposedFalseDenial,
    /// Allowed without a queue (eval-admission warns: it bypasses Kueue); not judged.
    NotQueued,
    /// A way out a denial offers: eval-admission lets the changed workload
    /// through, and Kueue admits it and never preempts it (or it is not queued).
    WayOutWorks,
    /// A way out eval-admission itself refuses once applied.
    WayOutRefused,
    /// A way out Kueue never admits, or preempts.
    WayOutFails,
    /// A way out the judge cannot check (the checkpointing annotation, a smaller request).
    WayOutNotJudged,
}

impl Category {
    fn is_disagreement(self) -> bool {
        matches!(
            self,
            Self::AdmissibleMiss
                | Self::AdmissibleFalseDenial
                | Self::ExposedMiss
                | Self::ExposedFalseDenial
                | Self::WayOutRefused
                | Self::WayOutFails
        )
    }

    fn label(self) -> &'static str {
        match self {
            Self::AdmissibleAgree => "admissible: agree (admitted)",
            Self::InadmissibleAgree => "admissible: agree (never admitted, denied)",
            Self::AdmissibleMiss => "admissible: MISS (allowed, never admitted)",
            Self::AdmissibleFalseDenial => "admissible: FALSE DENIAL (denied, Kueue admits)",
            Self::SafeAgree => "exposed: agree (allowed, never preempted)",
            Self::ExposedAgree => "exposed: agree (denied, preemptible)",
            Self::ExposedMiss => "exposed: MISS (allowed, Kueue preempts it)",
            Self::ExposedFalseDenial => "exposed: FALSE DENIAL (denied, never preempted)",
            Self::NotQueued => "not queued (bypass, warned): not judged",
            Self::WayOutWorks => "way out offered: works (passes eval-admission; Kueue admits it, never preempts it)",
            Self::WayOutRefused => "way out offered: REFUSED by eval-admission once applied",
            Self::WayOutFails => "way out offered: FAILS (Kueue never admits it, or preempts it)",
            Self::WayOutNotJudged => "way out offered: not judged (checkpointing annotation, smaller request)",
        }
    }
}

/// The release judged: FIDELITY_KUEUE, or the one tests/kueue/go.mod pins.
fn judged_release() -> Option<String> {
    std::env::var("FIDELITY_KUEUE").ok().filter(|release| !release.is_empty())
}

/// The shipped defaults, told which Kueue release runs the cluster: the one
/// judged, or FIDELITY_MODEL_KUEUE to measure a model told another release
/// (how far the v0.19.2 model is from an older Kueue).
fn model_config() -> Config {
    let mut config = Config::load(None).unwrap().config;
    let told = std::env::var("FIDELITY_MODEL_KUEUE").ok().filter(|r| !r.is_empty()).or_else(judged_release);
    if let Some(release) = told {
        config.kueue.version = KueueVersion::parse(&release).expect("a Kueue release such as v0.18.2");
    }
    config
}

fn eval_verdict(config: &Config, objects: &[Value], workload: &Value) -> EvalVerdict {
    let cluster_file = cluster_yaml(objects);
    let state =
        state_file::parse_for(cluster_file.as_bytes(), &config.kueue).expect("the generated cluster file parses");
    let review = admission::ReviewBuilder::create(admission::ReviewBuilder::kind_of(workload), workload).to_value();
    let report = cli::review_value(config, &state, review).expect("review runs");
    let deciding = if report.output["validating"].is_null() { "mutating" } else { "validating" };
    let mut reason = report.output[deciding]["response"]["auditAnnotations"]["reason"].as_str().unwrap().to_string();
    if report.allowed {
        reason = report.output["mutating"]["response"]["auditAnnotations"]["reason"].as_str().unwrap().to_string();
    }
    let message = report.output[deciding]["response"]["status"]["message"].as_str().unwrap_or_default().to_string();
    let object = report.output["object"].clone();
    let queued = object["metadata"]["labels"][QUEUE_NAME_LABEL].is_string();
    EvalVerdict { allowed: report.allowed, reason, message, object, queued, validated: deciding == "validating" }
}

fn categories(eval: &EvalVerdict, kueue: Option<&KueueVerdict>) -> Vec<Category> {
    let preemptible = !eval.allowed && eval.reason == PREEMPTIBLE_REASON;
    let inadmissible = !eval.allowed && claims_never_admitted(&eval.reason);
    let Some(kueue) = kueue else { return vec![Category::NotQueued] };
    let claims_admissible = (eval.allowed && eval.queued) || preemptible;
    if !claims_admissible && !inadmissible {
        return vec![Category::NotQueued];
    }
    let admissibility = match (claims_admissible, kueue.admissible) {
        (true, true) => Category::AdmissibleAgree,
        (true, false) => Category::AdmissibleMiss,
        (false, true) => Category::AdmissibleFalseDenial,
        (false, false) => Category::InadmissibleAgree,
    };
    let mut out = vec![admissibility];
    if claims_admissible && kueue.admissible {
        let exposed = kueue.exposed == Some(true);
        out.push(match (preemptible, exposed) {
            (false, false) => Category::SafeAgree,
            (true, true) => Category::ExposedAgree,
            (false, true) => Category::ExposedMiss,
            (true, false) => Category::ExposedFalseDenial,
        });
    }
    out
}

/// Whether Kueue is asked at all: only about what eval-admission queues or
/// denies as a Kueue matter. A workload let through without a queue bypasses
/// Kueue by eval-admission's own (warned) choice.
fn needs_judge(eval: &EvalVerdict) -> bool {
    (eval.allowed && eval.queued)
        || (!eval.allowed && (eval.reason == PREEMPTIBLE_REASON || claims_never_admitted(&eval.reason)))
}

fn cluster_yaml(objects: &[Value]) -> String {
    objects.iter().map(|o| serde_json::to_string_pretty(o).unwrap()).collect::<Vec<_>>().join("\n---\n")
}

#[derive(Default, Serialize, Deserialize, PartialEq, Eq, Debug, Clone)]
struct Table {
    setups: u64,
    counts: BTreeMap<Category, u64>,
    /// Among disagreements: the Kueue reason (or eval-admission reason) that explains them, counted.
    #[serde(default)]
    causes: BTreeMap<String, u64>,
    /// Judged verdicts and disagreements by what the set-up places (see
    /// [`placement_spaces`]): the space the differential test covers.
    #[serde(default)]
    spaces: BTreeMap<String, [u64; 2]>,
}

impl Table {
    fn print(&self, title: &str) -> String {
        let mut out = format!("{title}: {} set-ups\n\n| category | count |\n|---|---|\n", self.setups);
        for (category, count) in &self.counts {
            out.push_str(&format!("| {} | {count} |\n", category.label()));
        }
        let judged: u64 = self
            .counts
            .iter()
            .filter(|(c, _)| !matches!(c, Category::NotQueued | Category::WayOutNotJudged))
            .map(|(_, n)| n)
            .sum();
        let wrong: u64 = self.counts.iter().filter(|(c, _)| c.is_disagreement()).map(|(_, n)| n).sum();
        out.push_str(&format!("\njudged verdicts: {judged}, disagreements: {wrong}\n"));
        if !self.spaces.is_empty() {
            out.push_str("\n| placement in the set-up | judged verdicts | disagreements |\n|---|---|---|\n");
            for (space, [judged, wrong]) in &self.spaces {
                out.push_str(&format!("| {space} | {judged} | {wrong} |\n"));
            }
        }
        if !self.causes.is_empty() {
            out.push_str("\n| disagreement: what Kueue did | count |\n|---|---|\n");
            let mut causes: Vec<_> = self.causes.iter().collect();
            causes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            for (cause, count) in causes.into_iter().take(25) {
                out.push_str(&format!("| {cause} | {count} |\n"));
            }
        }
        out
    }
}

/// What a set-up places, for the table's second part: the workload's pod
/// templates (nodeSelector, required node affinity, tolerations), the
/// flavors (a taint that repels pods, tolerations of their own), and the
/// placement answers on both sides (eval-admission's denial, Kueue's reason).
fn placement_spaces(
    scenario: &generate::Scenario,
    eval: &EvalVerdict,
    kueue: Option<&KueueVerdict>,
) -> Vec<&'static str> {
    let workload = &scenario.workload;
    let templates = generate::pod_templates_of(workload);
    let any = |field: &str| templates.iter().any(|pod| !pod[field].is_null());
    let flavors: Vec<&Value> = scenario.objects.iter().filter(|o| o["kind"] == "ResourceFlavor").collect();
    let repelling = flavors.iter().any(|f| {
        f["spec"]["nodeTaints"]
            .as_array()
            .is_some_and(|taints| taints.iter().any(|t| t["effect"] == "NoSchedule" || t["effect"] == "NoExecute"))
    });
    let kueue_reason = kueue.and_then(|k| k.reason.as_deref()).unwrap_or("");
    let spaces = [
        (any("nodeSelector"), "pod template: nodeSelector"),
        (any("affinity"), "pod template: required node affinity"),
        (any("tolerations"), "pod template: tolerations"),
        (
            workload["spec"]["replicatedJobs"].as_array().is_some_and(|jobs| jobs.len() > 16),
            "JobSet: 17 or more replicated jobs",
        ),
        (
            !workload["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"].is_null(),
            "Job: job-min-parallelism (partial admission)",
        ),
        (repelling, "flavor: NoSchedule or NoExecute taint"),
        (
            scenario.objects.iter().any(|o| {
                o["data"]["controller_manager_config.yaml"].as_str().is_some_and(|c| c.contains("resources:"))
            }),
            "Kueue Configuration: resources",
        ),
        (scenario.objects.iter().any(|o| o["kind"] == "LimitRange"), "namespace: LimitRange"),
        (any("runtimeClassName"), "pod template: runtimeClassName"),
        (any("initContainers"), "pod template: init container or sidecar"),
        (
            templates.iter().any(|pod| {
                pod["containers"].as_array().is_some_and(|cs| cs.iter().any(|c| !c["resources"]["limits"].is_null()))
            }),
            "pod template: limits",
        ),
        (
            templates.iter().any(|pod| {
                pod["containers"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["resources"]["requests"].as_object().is_some_and(|r| r.values().any(|q| q == "0")))
                })
            }),
            "pod template: a zero request",
        ),
        (flavors.iter().any(|f| !f["spec"]["tolerations"].is_null()), "flavor: tolerations of its own"),
        (eval.reason == Reason::NoMatchingFlavor.as_str(), "eval-admission: no-matching-flavor"),
        (kueue_reason.contains("untolerated taint"), "Kueue: untolerated taint"),
        (kueue_reason.contains("doesn't match node affinity"), "Kueue: doesn't match node affinity"),
    ];
    let mut found: Vec<&str> = spaces.iter().filter(|(on, _)| *on).map(|(_, space)| *space).collect();
    if found.is_empty() {
        found.push("none of these");
    }
    found
}

/// A short name for why Kueue disagreed, so like causes count together: the
/// kind of reason Kueue gave (its own message, classified by its wording).
fn cause(category: Category, eval: &EvalVerdict, kueue: &KueueVerdict) -> String {
    let reason = kueue.reason.as_deref().unwrap_or("");
    match category {
        Category::AdmissibleMiss => {
            const CLASSES: [(&str, &str); 12] = [
                (
                    "doesn't match ClusterQueue selector",
                    "the ClusterQueue's namespaceSelector does not select the namespace",
                ),
                ("FlavorNotFound", "ClusterQueue inactive: a ResourceFlavor it names does not exist"),
                ("AdmissionCheck", "ClusterQueue inactive: an AdmissionCheck is missing or inactive"),
                ("Stopped", "ClusterQueue inactive: stopPolicy"),
                ("NotFound", "the LocalQueue's ClusterQueue does not exist"),
                ("is stopped (stopPolicy", "LocalQueue stopPolicy"),
                ("maximum capacity", "more than the ClusterQueue could ever get (quota, cohort, limits)"),
                ("unavailable in ClusterQueue", "a requested resource no flavor of the ClusterQueue covers"),
                ("managedJobsNamespaceSelector", "Kueue does not manage the namespace (managedJobsNamespaceSelector)"),
                ("integration", "the integration is not enabled in Kueue's Configuration"),
                ("doesn't exist", "the LocalQueue does not exist"),
                ("no queue-name", "no queue label reaches Kueue"),
            ];
            let class = CLASSES.iter().find(|(needle, _)| reason.contains(needle)).map(|(_, class)| *class);
            format!("never admitted: {}", class.map_or_else(|| format!("{}: {reason}", kueue.stage), str::to_string))
        }
        Category::AdmissibleFalseDenial => format!("admitted, but eval-admission denied it ({})", eval.reason),
        Category::ExposedMiss => {
            let preemptor_priority: i64 = kueue
                .preemptor
                .as_deref()
                .and_then(|p| p.strip_prefix("priority "))
                .and_then(|p| p.split_whitespace().next())
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            let by = if preemptor_priority >= 2_000_000_000 { " by a system PriorityClass" } else { "" };
            format!("preempted ({}){by}, but eval-admission allowed it", kueue.eviction_reason.as_deref().unwrap_or(""))
        }
        Category::ExposedFalseDenial => {
            let rule = if eval.message.contains("reclaimWithinCohort") {
                "cohort reclamation"
            } else {
                "within the ClusterQueue"
            };
            format!("never preempted, but eval-admission denied it as preemptible ({rule})")
        }
        _ => String::new(),
    }
}

/// The set-ups a run judges: `from..n`, or those FIDELITY_SETUPS lists (a
/// file of indices, such as `model_verdicts` finds changed by a fix).
fn setups(from: u64, n: u64) -> Vec<u64> {
    let Some(path) = std::env::var_os("FIDELITY_SETUPS") else { return (from..n).collect() };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("FIDELITY_SETUPS {path:?}: {e}"));
    text.split_whitespace().map(|index| index.parse().expect("FIDELITY_SETUPS lists set-up indices")).collect()
}

/// The model's verdicts alone, one line per set-up (`index reason queued` and
/// a hash of the message, which names the ways out), for
/// FIDELITY_FROM..FIDELITY_N into FIDELITY_VERDICTS: run on the trees before and
/// after a change to the model, the lines that differ are the set-ups to judge
/// again (FIDELITY_SETUPS) instead of the whole range.
#[test]
#[ignore = "a tool: FIDELITY_VERDICTS names where to write"]
fn model_verdicts() {
    let (from, n, seed) = (env_u64("FIDELITY_FROM", 0), env_u64("FIDELITY_N", 2000), env_u64("FIDELITY_SEED", 1));
    let out = std::env::var("FIDELITY_VERDICTS").expect("FIDELITY_VERDICTS: where to write");
    let config = model_config();
    let next = AtomicU64::new(from);
    let lines = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..std::thread::available_parallelism().map_or(2, |p| p.get()) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= n {
                        break;
                    }
                    let scenario = generate::scenario(seed, index);
                    let eval = eval_verdict(&config, &scenario.objects, &scenario.workload);
                    // The message carries the ways out: a fix may change them alone.
                    let mut message = std::hash::DefaultHasher::new();
                    std::hash::Hash::hash(&eval.message, &mut message);
                    let message = std::hash::Hasher::finish(&message);
                    let line = format!("{index} {} {} {message:016x}", eval.reason, eval.queued);
                    lines.lock().unwrap().insert(index, line);
                }
            });
        }
    });
    let lines = lines.into_inner().unwrap();
    std::fs::write(&out, lines.into_values().collect::<Vec<_>>().join("\n") + "\n").unwrap();
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn repo(path: &str) -> PathBuf {
    testkit::repo(path)
}

/// Writes one disagreement as a ready-to-run `review` case.
fn save_case(
    dir: &Path,
    id: &str,
    category: Category,
    cause: &str,
    scenario: &generate::Scenario,
    eval: &EvalVerdict,
    kueue: Option<&KueueVerdict>,
) {
    let case = dir.join(format!("{}-{id}", serde_json::to_value(category).unwrap().as_str().unwrap()));
    std::fs::create_dir_all(&case).unwrap();
    std::fs::write(case.join("cluster.yaml"), cluster_yaml(&scenario.objects) + "\n").unwrap();
    std::fs::write(case.join("workload.yaml"), serde_json::to_string_pretty(&scenario.workload).unwrap() + "\n")
        .unwrap();
    let record = serde_json::json!({"id": id, "category": category, "cause": cause, "evalAdmission": eval, "kueue": kueue,
        "run": format!("eval-admission review --cluster {0}/cluster.yaml {0}/workload.yaml", case.display())});
    std::fs::write(case.join("case.json"), serde_json::to_string_pretty(&record).unwrap() + "\n").unwrap();
}

/// One counted verdict: the scenario's own, or one of its ways out.
struct Finding {
    category: Category,
    /// Why, for a disagreement.
    cause: Option<String>,
    id: String,
    /// The workload as submitted (with the way out applied, for one).
    workload: Value,
    eval: EvalVerdict,
    kueue: Option<KueueVerdict>,
}

/// Each way out the validating webhook's denial offers, applied to the
/// workload as submitted and judged like a new submission.
fn judge_ways_out(
    config: &Config,
    scenario: &generate::Scenario,
    eval: &EvalVerdict,
    judge: &mut Oracle,
) -> Vec<Finding> {
    if eval.allowed || !eval.validated {
        return Vec::new();
    }
    let state = state_file::parse_for(cluster_yaml(&scenario.objects).as_bytes(), &config.kueue)
        .expect("the generated cluster file parses");
    let offered = ways_out::offered(config, &state, &eval.object);
    let mut findings = Vec::new();
    for (k, way_out) in offered.iter().enumerate() {
        let id = format!("{}-way-out-{k}", scenario.id);
        let Some(changed) = ways_out::apply(&scenario.workload, way_out) else {
            let eval = eval.clone();
            findings.push(Finding {
                category: Category::WayOutNotJudged,
                cause: None,
                id,
                workload: Value::Null,
                eval,
                kueue: None,
            });
            continue;
        };
        let again = eval_verdict(config, &scenario.objects, &changed);
        let kind = ways_out::kind(way_out);
        let (category, cause, kueue) = if !again.allowed {
            (
                Category::WayOutRefused,
                Some(format!("way out ({kind}) refused by eval-admission once applied ({})", again.reason)),
                None,
            )
        } else if !again.queued {
            (Category::WayOutWorks, None, None)
        } else {
            let kueue = judge.judge(&id, &scenario.objects, &again.object);
            if !kueue.admissible {
                (Category::WayOutFails, Some(format!("way out ({kind}): Kueue never admits it")), Some(kueue))
            } else if kueue.exposed == Some(true) {
                (Category::WayOutFails, Some(format!("way out ({kind}): Kueue preempts it")), Some(kueue))
            } else {
                (Category::WayOutWorks, None, Some(kueue))
            }
        };
        findings.push(Finding { category, cause, id, workload: changed, eval: again, kueue });
    }
    findings
}

#[test]
fn differential_fixed_seed() {
    let n = env_u64("FIDELITY_N", 2000);
    let seed = env_u64("FIDELITY_SEED", 1);
    let jobs = env_u64("FIDELITY_JOBS", std::thread::available_parallelism().map_or(2, |p| p.get() as u64));
    let save = std::env::var_os("FIDELITY_SAVE").map(PathBuf::from);
    // A long run that will be replayed after a fix wants every case: FIDELITY_SAVE_EACH=1000.
    let save_each = env_u64("FIDELITY_SAVE_EACH", 3);
    // A long run cut short resumes where its last partial table ended: FIDELITY_FROM=35000.
    let from = env_u64("FIDELITY_FROM", 0);
    // Judging every way out a denial offers roughly doubles the judge's work;
    // a long run of the verdicts alone may skip it: FIDELITY_WAYS_OUT=0.
    let judge_ways = env_u64("FIDELITY_WAYS_OUT", 1) != 0;
    let binary = oracle::build(judged_release().as_deref());
    let config = model_config();

    let indices = setups(from, n);
    let next = AtomicU64::new(0);
    let table = Mutex::new(Table::default());
    let saved: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                let mut judge = Oracle::start(&binary);
                while let Some(&index) = indices.get(next.fetch_add(1, Ordering::Relaxed) as usize) {
                    let scenario = generate::scenario(seed, index);
                    let eval = eval_verdict(&config, &scenario.objects, &scenario.workload);
                    let kueue = needs_judge(&eval).then(|| judge.judge(&scenario.id, &scenario.objects, &eval.object));
                    let mut findings: Vec<Finding> = categories(&eval, kueue.as_ref())
                        .into_iter()
                        .map(|category| Finding {
                            category,
                            cause: category.is_disagreement().then(|| cause(category, &eval, kueue.as_ref().unwrap())),
                            id: scenario.id.clone(),
                            workload: scenario.workload.clone(),
                            eval: eval.clone(),
                            kueue: kueue.clone(),
                        })
                        .collect();
                    if judge_ways {
                        findings.extend(judge_ways_out(&config, &scenario, &eval, &mut judge));
                    }
                    let spaces = placement_spaces(&scenario, &eval, kueue.as_ref());
                    let mut t = table.lock().unwrap();
                    t.setups += 1;
                    for finding in &findings {
                        if matches!(finding.category, Category::NotQueued | Category::WayOutNotJudged) {
                            continue;
                        }
                        for space in &spaces {
                            let counts = t.spaces.entry(space.to_string()).or_default();
                            counts[0] += 1;
                            counts[1] += u64::from(finding.category.is_disagreement());
                        }
                    }
                    for finding in findings {
                        *t.counts.entry(finding.category).or_default() += 1;
                        let Some(why) = finding.cause else { continue };
                        *t.causes.entry(why.clone()).or_default() += 1;
                        // Keep the first few of each cause, not thousands of the same.
                        if let Some(dir) = &save {
                            let mut saved = saved.lock().unwrap();
                            let count = saved.entry(why.clone()).or_default();
                            if *count < save_each {
                                *count += 1;
                                let workload = generate::Scenario { workload: finding.workload, ..scenario.clone() };
                                let kueue = finding.kueue.as_ref();
                                save_case(dir, &finding.id, finding.category, &why, &workload, &finding.eval, kueue);
                            }
                        }
                    }
                    if index > 0 && index.is_multiple_of(5000) {
                        eprintln!("fidelity: {index}/{n} in {:.0?}", started.elapsed());
                        // A long run leaves its table so far behind it, in case it is cut short.
                        if let Ok(out) = std::env::var("FIDELITY_REPORT") {
                            let partial = t.print(&format!("partial, seed {seed}, from set-up {from}"));
                            let _ = std::fs::write(out, partial);
                        }
                    }
                }
            });
        }
    });
    let table = table.into_inner().unwrap();
    let range = if from == 0 { String::new() } else { format!(", set-ups {from}..{n}") };
    let judged = judged_release().unwrap_or_else(|| KueueVersion::default().to_string());
    let report = table.print(&format!(
        "eval-admission (told Kueue {}) against Kueue {judged}'s scheduler, seed {seed}{range}",
        config.kueue.version
    ));
    println!("{report}\n({:.1?})", started.elapsed());
    if let Ok(out) = std::env::var("FIDELITY_REPORT") {
        std::fs::write(out, &report).unwrap();
    }
    assert_eq!(table.setups, indices.len() as u64);

    // The ratchet: at the recorded seed and size, no disagreement may grow.
    let baseline_path = baseline_path();
    if std::env::var_os("FIDELITY_BLESS").is_some() {
        let record = serde_json::json!({"seed": seed, "n": n, "table": table});
        std::fs::write(&baseline_path, serde_json::to_string_pretty(&record).unwrap() + "\n").unwrap();
        return;
    }
    let Ok(baseline) = std::fs::read(&baseline_path) else {
        assert!(judged_release().is_some(), "{} is missing", baseline_path.display());
        return; // a release nothing was recorded for yet: the table is the answer
    };
    let baseline: Value = serde_json::from_slice(&baseline).unwrap();
    if baseline["seed"] == seed && baseline["n"] == n && from == 0 && std::env::var_os("FIDELITY_SETUPS").is_none() {
        let recorded: Table = serde_json::from_value(baseline["table"].clone()).unwrap();
        let mut grew = Vec::new();
        for (category, count) in &table.counts {
            let before = recorded.counts.get(category).copied().unwrap_or(0);
            if category.is_disagreement() && *count > before {
                grew.push(format!("{}: {before} -> {count}", category.label()));
            }
        }
        assert!(grew.is_empty(), "disagreements with Kueue grew against {}: {grew:?}", baseline_path.display());
    }
}

/// The recorded table the fixed seed of the judged release must not fall
/// behind: tests/fidelity/baseline.json for the pinned release, and
/// baseline-RELEASE.json for another (`make test` runs each release in
/// tests/kueue/releases at its recorded size).
fn baseline_path() -> PathBuf {
    match judged_release() {
        Some(release) => repo(&format!("tests/fidelity/baseline-{release}.json")),
        None => repo("tests/fidelity/baseline.json"),
    }
}

/// `make test` judges each release with a recorded table
/// (baseline-RELEASE.json) at the table's size: each must be a release with a
/// pinned module set, recorded with no disagreement. (A judge under
/// construction has a module set and no table yet.)
#[test]
fn every_recorded_release_is_pinned_and_agrees() {
    let mut recorded = 0;
    for entry in std::fs::read_dir(repo("tests/fidelity")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(release) = name.strip_prefix("baseline-").and_then(|n| n.strip_suffix(".json")) else { continue };
        let pinned = repo(&format!("tests/kueue/releases/{release}.mod"));
        assert!(pinned.exists(), "{name}: no module set {}", pinned.display());
        let record: Value =
            serde_json::from_slice(&std::fs::read(repo(&format!("tests/fidelity/{name}"))).unwrap()).unwrap();
        let table: Table = serde_json::from_value(record["table"].clone()).unwrap();
        assert!(record["n"].as_u64().is_some_and(|n| n > 0) && table.setups > 0, "{name}");
        let wrong: Vec<_> = table.counts.iter().filter(|(c, n)| c.is_disagreement() && **n > 0).collect();
        assert!(wrong.is_empty(), "{name}: {wrong:?}");
        recorded += 1;
    }
    assert!(recorded >= 2, "v0.16.6 and v0.18.2 at least");
}

/// The saved disagreements: Kueue's answer must not change (the judge is
/// deterministic and pinned), and eval-admission's verdict either still
/// disagrees the recorded way or now agrees.
#[test]
fn replayed_cases() {
    let dir = repo("tests/fidelity/cases");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut cases: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    cases.sort();
    assert!(!cases.is_empty(), "tests/fidelity/cases has no cases");
    let binary = oracle::build(None);
    let mut judge = Oracle::start(&binary);
    let config = Config::load(None).unwrap().config;
    let (mut agree, mut still) = (0, Vec::new());
    for case in &cases {
        let record: Value = serde_json::from_slice(&std::fs::read(case.join("case.json")).unwrap()).unwrap();
        let objects =
            eval_admission::vocabulary::yaml::documents(&std::fs::read(case.join("cluster.yaml")).unwrap()).unwrap();
        let workload: Value = serde_json::from_slice(&std::fs::read(case.join("workload.yaml")).unwrap()).unwrap();
        let recorded_category: Category = serde_json::from_value(record["category"].clone()).unwrap();
        assert!(
            !matches!(recorded_category, Category::WayOutRefused | Category::WayOutFails | Category::WayOutWorks),
            "{}: a way-out case replays through the scenario it came from (its id without -way-out-N)",
            case.display()
        );
        let recorded_kueue: KueueVerdict = serde_json::from_value(record["kueue"].clone()).unwrap();
        let eval = eval_verdict(&config, &objects, &workload);
        let name = case.file_name().unwrap().to_string_lossy();
        if !needs_judge(&eval) {
            agree += 1; // eval-admission no longer queues it: nothing left to disagree on
            continue;
        }
        let kueue = judge.judge(&name, &objects, &eval.object);
        if (kueue.admissible, kueue.exposed) != (recorded_kueue.admissible, recorded_kueue.exposed)
            && std::env::var_os("FIDELITY_REJUDGE").is_some()
        {
            // The judge's probe space grew (tests/kueue/oracle/probes.go): record
            // its new answer beside the original category, and say so.
            let mut record = record.clone();
            record["kueue"] = serde_json::to_value(&kueue).unwrap();
            record["rejudged"] = "the judge's answer changed when its probe space grew".into();
            std::fs::write(case.join("case.json"), serde_json::to_string_pretty(&record).unwrap() + "\n").unwrap();
            println!("{name}: rejudged: {kueue:?}");
        } else {
            assert_eq!(
                (kueue.admissible, kueue.exposed),
                (recorded_kueue.admissible, recorded_kueue.exposed),
                "{name}: Kueue's answer changed (FIDELITY_REJUDGE=1 records it when the judge itself changed): {kueue:?}"
            );
        }
        let now = categories(&eval, Some(&kueue));
        if now.contains(&recorded_category) {
            still.push(name.to_string());
        } else {
            let disagreements: Vec<_> = now.iter().filter(|c| c.is_disagreement()).collect();
            assert!(disagreements.is_empty(), "{name}: now {disagreements:?}, recorded {recorded_category:?}");
            agree += 1;
        }
    }
    println!(
        "replayed {} cases: {agree} now agree with Kueue, {} still disagree as recorded: {}",
        cases.len(),
        still.len(),
        still.join(", ")
    );
}

/// The judge is not vacuous: on the shipped example state it finds what
/// Kueue's code says of four examples (checked by hand against the source:
/// `withinClusterQueue: LowerPriority` with a higher class preempts
/// InClusterQueue; a ClusterQueue with no preemption never does; a borrower
/// in a tree where another queue has `reclaimWithinCohort: Any` is reclaimed
/// from; a namespaceSelector that does not select the namespace admits nothing).
#[test]
fn the_judge_answers_the_seed_examples() {
    let objects =
        eval_admission::vocabulary::yaml::documents(&std::fs::read(repo("examples/cluster.yaml")).unwrap()).unwrap();
    let example = |name: &str| -> Value {
        let docs =
            eval_admission::vocabulary::yaml::documents(&std::fs::read(repo(&format!("examples/{name}"))).unwrap())
                .unwrap();
        docs.into_iter().next().unwrap()
    };
    let mut judge = Oracle::start(&oracle::build(None));

    let preemptible = example("job-preemptible.yaml");
    let verdict = judge.judge("preemptible", &objects, &preemptible);
    assert!(verdict.admissible, "{verdict:?}");
    assert_eq!(verdict.exposed, Some(true), "{verdict:?}");
    assert_eq!(verdict.eviction_reason.as_deref(), Some("InClusterQueue"), "{verdict:?}");

    let mut safe = preemptible.clone();
    safe["metadata"]["labels"][QUEUE_NAME_LABEL] = "eval-queue".into();
    let verdict = judge.judge("safe", &objects, &safe);
    assert_eq!((verdict.admissible, verdict.exposed), (true, Some(false)), "{verdict:?}");
    assert!(verdict.probes > 0, "the judge tried no probe: {verdict:?}");

    let cohort = example("aiperf-jobset-cohort.yaml");
    let verdict = judge.judge("cohort", &objects, &cohort);
    assert_eq!((verdict.admissible, verdict.exposed), (true, Some(true)), "{verdict:?}");
    assert_eq!(verdict.eviction_reason.as_deref(), Some("InCohortReclamation"), "{verdict:?}");

    let not_selected = example("job-not-selected.yaml");
    let verdict = judge.judge("not-selected", &objects, &not_selected);
    assert!(!verdict.admissible, "{verdict:?}");
    assert!(verdict.reason.as_deref().unwrap_or("").contains("doesn't match ClusterQueue selector"), "{verdict:?}");
}

/// A GPU flavor tainted as GPU node pools are: the probes must carry the
/// tolerations a real user's workload would, or the flavor looks safe only
/// because the judge cannot enter it. Before tests/kueue/oracle/probes.go gave
/// probes `tolerationsFor` their flavor, the judge answered `exposed: false`
/// here (24 probes, none admitted); Kueue preempts the evaluation for any
/// `urgent` workload that tolerates the taint. Without the toleration the
/// evaluation itself is never admitted.
#[test]
fn the_judge_enters_tainted_flavors_as_a_real_user_would() {
    let objects = vec![
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}}}),
        serde_json::json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "h100"},
            "spec": {"nodeLabels": {"nvidia.com/gpu.product": "H100"},
                "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}}),
        serde_json::json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "gpu-cq"},
            "spec": {"namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                    "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}}),
        serde_json::json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "gpus", "namespace": "team-a"}, "spec": {"clusterQueue": "gpu-cq"}}),
        serde_json::json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
            "metadata": {"name": "urgent"}, "value": 1000}),
    ];
    let toleration = serde_json::json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]);
    let job = |tolerations: Value| {
        let pod = serde_json::json!({"restartPolicy": "Never", "tolerations": tolerations,
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"nvidia.com/gpu": "4"}}}]});
        testkit::JobBuilder::new("team-a", "eval")
            .labels(&[("app", "evalhub"), ("component", "evaluation-job")])
            .queue("gpus")
            .suspend(true)
            .pod(pod)
            .build()
    };
    let mut judge = Oracle::start(&oracle::build(None));
    let config = Config::load(None).unwrap().config;

    let tolerating = job(toleration);
    let verdict = judge.judge("tainted", &objects, &tolerating);
    assert_eq!((verdict.admissible, verdict.exposed), (true, Some(true)), "{verdict:?}");
    assert_eq!(verdict.eviction_reason.as_deref(), Some("InClusterQueue"), "{verdict:?}");
    assert_eq!(eval_verdict(&config, &objects, &tolerating).reason, Reason::Preemptible.as_str());

    let untolerating = job(Value::Null);
    let verdict = judge.judge("untolerated", &objects, &untolerating);
    assert!(!verdict.admissible, "{verdict:?}");
    assert!(verdict.reason.as_deref().unwrap_or("").contains("untolerated taint"), "{verdict:?}");
    assert_eq!(eval_verdict(&config, &objects, &untolerating).reason, Reason::NoMatchingFlavor.as_str());
}

/// A scan that ended on its group's last flavor restarts from the first when
/// a later pod set fails the cycle, while a scan stopped earlier resumes after
/// it (`NextFlavorToTryForPodSetResource`). 'a' fits only big, 'b' takes small
/// first and leaves 'c' (small only) no room; the next cycle must find 'a'
/// on big again and move 'b' on. The model's rule (`assign_scanning`
/// records only scans with flavors left) is what a surviving mutant changed.
#[test]
fn kueue_restarts_a_scan_that_ended_on_its_last_flavor() {
    let mut text = std::fs::read_to_string(repo("examples/cluster.yaml")).unwrap();
    text.push_str(
        "\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: small}\nspec: {nodeLabels: {pool: small}}\n\
         ---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: big}\nspec: {nodeLabels: {pool: big}}\n\
         ---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: two-pools}\nspec:\n  namespaceSelector: {}\n  resourceGroups:\n\
         \x20 - {coveredResources: [cpu], flavors: [{name: small, resources: [{name: cpu, nominalQuota: 2}]}, {name: big, resources: [{name: cpu, nominalQuota: 8}]}]}\n\
         ---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: pools, namespace: my-benchmarks}\nspec: {clusterQueue: two-pools}\n",
    );
    let objects = eval_admission::vocabulary::yaml::documents(text.as_bytes()).unwrap();
    let pod = |pool: Option<&str>| {
        let mut pod = testkit::workload::pod_spec("main", "busybox", Some(serde_json::json!({"cpu": "2"})), None);
        if let Some(pool) = pool {
            pod["nodeSelector"] = serde_json::json!({"pool": pool});
        }
        serde_json::json!({"template": {"spec": pod}})
    };
    let jobset = testkit::JobSetBuilder::new("my-benchmarks", "three-pools")
        .label("app", "aiperf")
        .queue("pools")
        .suspend(true)
        .replicated_job("a", 1, pod(Some("big")))
        .replicated_job("b", 1, pod(None))
        .replicated_job("c", 1, pod(Some("small")))
        .build();
    let mut judge = Oracle::start(&oracle::build(None));
    let verdict = judge.judge("three-pools", &objects, &jobset);
    assert!(verdict.admissible, "{verdict:?}");
    let eval = eval_verdict(&Config::load(None).unwrap().config, &objects, &jobset);
    assert!(eval.allowed, "{eval:?}");
}

/// The fake client stores any Workload; the API server validates it against
/// its CRD. Before the judge validated the Workload the job controller builds
/// (tests/kueue/oracle/defaults.go `validateCreate`), a JobSet of 19
/// replicated jobs was admitted by it; the API server refuses that Workload
/// (podSets maxItems 18), so Kueue never admits the JobSet.
#[test]
fn the_judge_refuses_the_workloads_the_api_server_refuses() {
    let objects =
        eval_admission::vocabulary::yaml::documents(&std::fs::read(repo("examples/cluster.yaml")).unwrap()).unwrap();
    let mut judge = Oracle::start(&oracle::build(None));
    let config = Config::load(None).unwrap().config;
    let jobset = |count: usize| {
        let mut builder = testkit::JobSetBuilder::new("my-benchmarks", "sweep")
            .label("app", "aiperf")
            .queue("aiperf-queue")
            .suspend(true);
        for index in 0..count {
            let pod = testkit::workload::pod_spec("aiperf", "busybox", Some(serde_json::json!({"cpu": "100m"})), None);
            builder =
                builder.replicated_job(&format!("shard-{index}"), 1, serde_json::json!({"template": {"spec": pod}}));
        }
        builder.build()
    };
    let verdict = judge.judge("eighteen", &objects, &jobset(18));
    assert!(verdict.admissible, "{verdict:?}");
    assert!(eval_verdict(&config, &objects, &jobset(18)).allowed);
    let verdict = judge.judge("nineteen", &objects, &jobset(19));
    assert!(!verdict.admissible, "{verdict:?}");
    assert!(verdict.reason.as_deref().unwrap_or("").contains("must have at most 18 items"), "{verdict:?}");
    assert_eq!(eval_verdict(&config, &objects, &jobset(19)).reason, Reason::WorkloadRefused.as_str());
}

/// What Kueue counts is the Workload after `workload.AdjustResources`
/// (WorkloadReconciler.Create): RuntimeClass overhead, LimitRange defaults,
/// limits standing in for missing requests. The judge handed the queue
/// manager the Workload as built, and held neither LimitRanges nor
/// RuntimeClasses: it admitted all three of these into a 2-cpu queue (each
/// counted 0 or 1 cpu); Kueue counts 4, 4 and 2500m and never admits them.
#[test]
fn the_judge_counts_what_kueue_adds_to_requests() {
    let queue = |objects: &mut Vec<Value>| {
        objects.extend([
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}}}),
            serde_json::json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}}),
            serde_json::json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
                "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 2}, {"name": "memory", "nominalQuota": "8Gi"}]}]}]}}),
            serde_json::json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": "q", "namespace": "team-a"}, "spec": {"clusterQueue": "cq"}}),
        ]);
    };
    let job = |resources: Value, runtime_class: Option<&str>| {
        let mut pod = serde_json::json!({"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "resources": resources}]});
        if let Some(class) = runtime_class {
            pod["runtimeClassName"] = class.into();
        }
        testkit::JobBuilder::new("team-a", "eval")
            .labels(&[("app", "evalhub"), ("component", "evaluation-job")])
            .queue("q")
            .suspend(true)
            .pod(pod)
            .build()
    };
    let limit_range = serde_json::json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults", "namespace": "team-a"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "4"}, "default": {"cpu": "4"}}]}});
    let runtime_class = serde_json::json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata"},
        "handler": "kata", "overhead": {"podFixed": {"cpu": "1500m"}}});
    let cases = [
        ("limit-range-default", Some(limit_range), job(serde_json::json!({"requests": {"memory": "1Gi"}}), None)),
        ("limits-only", None, job(serde_json::json!({"limits": {"cpu": "4"}}), None)),
        (
            "runtime-class-overhead",
            Some(runtime_class),
            job(serde_json::json!({"requests": {"cpu": "1"}}), Some("kata")),
        ),
    ];
    let mut judge = Oracle::start(&oracle::build(None));
    let config = Config::load(None).unwrap().config;
    for (name, extra, workload) in cases {
        let mut objects = Vec::new();
        queue(&mut objects);
        objects.extend(extra.clone());
        let verdict = judge.judge(name, &objects, &workload);
        assert!(!verdict.admissible, "{name}: {verdict:?}");
        assert!(verdict.reason.as_deref().unwrap_or("").contains("maximum capacity (2)"), "{name}: {verdict:?}");
        assert_eq!(eval_verdict(&config, &objects, &workload).reason, Reason::ExceedsQuota.as_str(), "{name}");
        // Without what adds to it, the same Job fits.
        let mut bare = Vec::new();
        queue(&mut bare);
        if extra.is_none() {
            continue;
        }
        let verdict = judge.judge(name, &bare, &workload);
        assert!(verdict.admissible, "{name} alone: {verdict:?}");
        assert!(eval_verdict(&config, &bare, &workload).allowed, "{name} alone");
    }
}

/// Kueue's Configuration `resources` changes what quota counts: excluded
/// prefixes are dropped, transformations turn MIG slices into accelerator
/// memory, `quotaCheckStrategy: IgnoreUndeclared` skips what no group covers.
/// The judge did not pass them to its cache, queue manager and scheduler (as
/// cmd/kueue does): it answered "unavailable in ClusterQueue" for all four of
/// tests/fidelity/resources-cases.json, where Kueue admits three.
#[test]
fn the_judge_counts_resources_as_kueues_configuration_says() {
    let cases: Vec<Value> =
        serde_json::from_slice(&std::fs::read(repo("tests/fidelity/resources-cases.json")).unwrap()).unwrap();
    let expected = [("exclude", true), ("mig", true), ("mig-too-much", false), ("ignore-undeclared", true)];
    let mut judge = Oracle::start(&oracle::build(None));
    let config = Config::load(None).unwrap().config;
    for (case, (id, admissible)) in cases.iter().zip(expected) {
        assert_eq!(case["id"], id);
        let objects = case["objects"].as_array().unwrap().clone();
        let verdict = judge.judge(id, &objects, &case["workload"]);
        assert_eq!(verdict.admissible, admissible, "{id}: {verdict:?}");
        let eval = eval_verdict(&config, &objects, &case["workload"]);
        assert_eq!(eval.allowed, admissible, "{id}: {eval:?}");
    }
}

/// The audit and the validating webhook are one function with two callers
/// (`rules::audit_existing` calls `rules::validate_create`): on the fixed
/// seed's set-ups, each workload as the mutating webhook left it, stored
/// queued, is reported for exactly what the validating webhook said of it,
/// with the same message; stored running, for being preemptible alone.
#[test]
fn the_audit_reports_a_stored_workload_as_the_webhook_judged_it() {
    let (from, n, seed) = (env_u64("FIDELITY_FROM", 0), env_u64("FIDELITY_AUDIT_N", 1500), env_u64("FIDELITY_SEED", 1));
    let config = model_config();
    let (mut compared, mut reported_queued, mut reported_running) = (0, 0, 0);
    for index in from..n {
        let scenario = generate::scenario(seed, index);
        let state = state_file::parse_for(cluster_yaml(&scenario.objects).as_bytes(), &config.kueue).unwrap();
        let review =
            admission::ReviewBuilder::create(admission::ReviewBuilder::kind_of(&scenario.workload), &scenario.workload)
                .to_value();
        let report = cli::review_value(&config, &state, review).expect("review runs");
        let validating = &report.output["validating"]["response"];
        if validating.is_null() {
            continue; // the mutating webhook refused it: never stored
        }
        let said = validating["auditAnnotations"]["reason"].as_str().unwrap();
        let denied = Reason::ALL.iter().find(|reason| reason.as_str() == said).is_some_and(|reason| reason.is_denial());
        // The one verdict the audit does not keep: a class deleted after Kueue
        // made the Workload leaves its priority (rules/audit.rs `kept`).
        let reported = denied && said != Reason::MissingWorkloadPriorityClass.as_str();
        let mut stored = report.output["object"].clone();
        let audit = |object: &Value| {
            admission::run_offline(admission::audit::audit(&config, &admission::Offline(&state), object)).unwrap()
        };
        if !stored["metadata"]["labels"][QUEUE_NAME_LABEL].is_string() {
            // Let through with no queue: Kueue never sees it, whatever its stage.
            assert_eq!(audit(&stored).map(|f| f.reason), Some(Reason::BypassesKueue.as_str()), "set-up {index}");
            continue;
        }
        if stored.pointer("/spec/suspend") == Some(&Value::Bool(true)) {
            let found = audit(&stored);
            assert_eq!(found.as_ref().map(|f| f.reason), reported.then_some(said), "set-up {index}, queued");
            if let Some(found) = &found {
                let message = validating["status"]["message"].as_str().or_else(|| validating["warnings"][0].as_str());
                assert_eq!(Some(found.message.as_str()), message, "set-up {index}: the denial's message");
                reported_queued += 1;
            }
        }
        stored["spec"]["suspend"] = Value::Bool(false);
        let found = audit(&stored);
        let preemptible = denied && said == PREEMPTIBLE_REASON;
        assert_eq!(found.map(|f| f.reason), preemptible.then_some(said), "set-up {index}, running");
        reported_running += usize::from(preemptible);
        compared += 1;
    }
    eprintln!("{compared} set-ups compared: {reported_queued} reported queued, {reported_running} running");
    assert!(reported_queued > 100 && reported_running > 10, "the seed reaches both kinds of finding");
}
