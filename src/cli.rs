//! The commands. `eval-admission review`: the API server's admission chain on
//! a request, against a cluster file or the live cluster (`live`). Runs the
//! mutating webhook, applies its patch, runs the validating webhook on the
//! result, and prints both responses and the mutated object; for a stored
//! `KIND/NAME`, what the `audit` finds of it. `manifests`: the webhook
//! configurations rendered from the config. `config check`: whether this
//! version reads a config, and what of it it ignores ([`read_config`]).

mod audit;
mod live;

pub use audit::{AuditReport, Source, audit};

use std::path::Path;

use serde_json::{Value, json};

use crate::admission::{self, BadReview, ReviewBuilder, Webhook};
use crate::cluster::{ClusterState, ClusterView, state_file};
use crate::config::{Config, unknown_field_warning};
use crate::error::Error;
use crate::workload::WorkloadKind;

/// The policy config a command reads (`--config`; the defaults without one),
/// and one warning per field of it this version does not know and ignores.
/// Under `strict` (`--strict`) such a field is an error naming each one.
pub fn read_config(path: Option<&Path>, strict: bool) -> Result<(Config, Vec<String>), Error> {
    let loaded = Config::load(path)?;
    // Unknown fields come only from a file: the defaults have none.
    let Some(path) = path.filter(|_| !loaded.unknown_fields.is_empty()) else {
        return Ok((loaded.config, Vec::new()));
    };
    if strict {
        return loaded
            .refuse_unknown()
            .map(|config| (config, Vec::new()))
            .map_err(|e| Error::file("config file", path, e));
    }
    let warnings = loaded
        .unknown_fields
        .iter()
        .map(|field| format!("config file {}: {}", path.display(), unknown_field_warning(field)))
        .collect();
    Ok((loaded.config, warnings))
}

/// `eval-admission config check`: whether this version reads a config, as a
/// line to print, and the warnings of [`read_config`] (under `strict`, an error).
pub fn check_config(path: Option<&Path>, strict: bool) -> Result<(String, Vec<String>), Error> {
    let (_, warnings) = read_config(path, strict)?;
    let source = path.map_or_else(|| "(defaults)".to_string(), |path| path.display().to_string());
    let version = env!("CARGO_PKG_VERSION");
    let line = match warnings.len() {
        0 => format!("{source}: eval-admission {version} knows every field"),
        1 => format!("{source}: eval-admission {version} reads it, ignoring 1 field it does not know"),
        n => format!("{source}: eval-admission {version} reads it, ignoring {n} fields it does not know"),
    };
    Ok((line, warnings))
}

/// `eval-admission manifests`: renders the webhook configurations from a
/// config file (the defaults without one), into `out` as `mutating.yaml` and
/// `validating.yaml`, or as one multi-document stream to print. A field this
/// version does not know is refused: the webhooks are rendered by the version
/// that will serve them, and an ignored field could be the one that decides
/// which workloads reach the server (or a typo of it).
pub fn manifests(config: Option<&Path>, out: Option<&Path>) -> Result<Option<String>, Error> {
    let source = config.map_or_else(|| "(defaults)".to_string(), |path| path.display().to_string());
    let (config, _) = read_config(config, true)?;
    let rendered = crate::manifests::render(&config, &source);
    let Some(dir) = out else {
        return Ok(Some(format!("{}---\n{}", rendered.mutating, rendered.validating)));
    };
    for (name, text) in rendered.files() {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| Error::Write { path: path.clone(), source })?;
    }
    Ok(None)
}

/// What `review` prints, and whether the request was admitted.
pub struct ReviewReport {
    pub output: Value,
    pub allowed: bool,
}

/// What `review` answers: the admission chain on a request, or what the
/// audit finds about a workload already stored (`job/NAME`).
pub enum Reviewed {
    Chain(ReviewReport),
    Stored(AuditReport),
}

/// `eval-admission review`: `request` is a file (an AdmissionReview, or a Job
/// or JobSet manifest to create), reviewed against the view of `source`; or
/// `KIND/NAME` of a stored Job or JobSet (in `namespace`, else the
/// kubeconfig's), audited as it is: why it waits, or what may preempt it.
pub fn review(source: Source<'_>, config: &Config, request: &str, namespace: Option<&str>) -> Result<Reviewed, Error> {
    let stored = stored_reference(request).filter(|_| !Path::new(request).exists());
    if let Some((kind, name)) = stored {
        return audit::audit_stored(source, config, kind, name, namespace).map(Reviewed::Stored);
    }
    let request = Path::new(request);
    // No AdmissionReview is larger.
    let most = admission::MOST_REVIEW_BYTES as u64;
    let bytes = crate::vocabulary::yaml::read_at_most("request file", request, most)?;
    let review = admission_review(&bytes).map_err(|e| Error::file("request file", request, e))?;
    match source {
        Source::Files(paths) => {
            let (state, _) = state_file::load_with_workloads(&paths, &config.kueue)?;
            review_value(config, &state, review).map(Reviewed::Chain)
        }
        Source::Live { kubeconfig } => live::block_on(async {
            let cluster = live::LiveCluster::connect(kubeconfig, config).await?;
            let state = cluster.state();
            review_value(config, &state, review).map(Reviewed::Chain)
        }),
    }
}

/// `job/NAME`, `jobs/NAME`, `job.batch/NAME`, `jobset/NAME`, ... as kubectl
/// names a stored object.
fn stored_reference(request: &str) -> Option<(WorkloadKind, &str)> {
    let (resource, name) = request.split_once('/')?;
    let kind = match resource.to_ascii_lowercase().as_str() {
        "job" | "jobs" | "job.batch" | "jobs.batch" => WorkloadKind::Job,
        "jobset" | "jobsets" | "jobset.jobset.x-k8s.io" | "jobsets.jobset.x-k8s.io" => WorkloadKind::JobSet,
        _ => return None,
    };
    (!name.is_empty() && !name.contains('/')).then_some((kind, name))
}

/// Runs the chain on an AdmissionReview value.
pub fn review_value(config: &Config, state: &ClusterState, mut review: Value) -> Result<ReviewReport, Error> {
    let body = serde_json::to_vec(&review).map_err(|e| Error::Request(e.to_string()))?;
    let bad_request = |BadReview(reason)| Error::Request(reason);
    let mutating = admission::review_offline(Webhook::Mutate, &body, config, state).map_err(bad_request)?;
    let mutating_json = parse_body(&mutating.body);
    let mut object = review.pointer("/request/object").cloned().unwrap_or(Value::Null);
    if !mutating.decision.allowed {
        // The API server stops at the first denial: no validating call follows.
        return Ok(ReviewReport {
            output: json!({"mutating": mutating_json, "validating": null, "object": object,
                "kueueConfiguration": state.kueue_config().summary()}),
            allowed: false,
        });
    }
    json_patch::patch(&mut object, &mutating.decision.patch)
        .map_err(|e| Error::Request(format!("the mutating patch does not apply: {e}")))?;
    review["request"]["object"] = object.clone();
    let body = serde_json::to_vec(&review).map_err(|e| Error::Request(e.to_string()))?;
    let validating = admission::review_offline(Webhook::Validate, &body, config, state).map_err(bad_request)?;
    Ok(ReviewReport {
        output: json!({"mutating": mutating_json, "validating": parse_body(&validating.body), "object": object,
            "kueueConfiguration": state.kueue_config().summary()}),
        allowed: validating.decision.allowed,
    })
}

fn parse_body(body: &[u8]) -> Value {
    serde_json::from_slice(body).expect("the encoder writes valid JSON")
}

/// Reads a request file: an AdmissionReview (JSON or YAML) or a bare Job or
/// JobSet manifest, which becomes a CREATE by `kubernetes-admin`.
pub fn admission_review(bytes: &[u8]) -> Result<Value, String> {
    let mut documents = crate::vocabulary::yaml::documents(bytes)?;
    let object = match documents.len() {
        1 => documents.remove(0),
        0 => return Err("empty: expected an AdmissionReview or a Job or JobSet manifest".into()),
        n => {
            return Err(format!("{n} documents: expected exactly one AdmissionReview, Job or JobSet"));
        }
    };
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
    match (api_version, kind) {
        (admission::request::API_VERSION, "AdmissionReview") => {
            if object.pointer("/request/uid").and_then(Value::as_str).is_none() {
                return Err("AdmissionReview without request.uid".into());
            }
            Ok(object)
        }
        ("batch/v1", "Job") | ("jobset.x-k8s.io/v1alpha2", "JobSet") => {
            let workload_kind = if kind == "Job" { WorkloadKind::Job } else { WorkloadKind::JobSet };
            let namespace =
                object.pointer("/metadata/namespace").and_then(Value::as_str).filter(|ns| !ns.is_empty()).ok_or_else(
                    || format!("{kind} has no metadata.namespace: set it so the review knows the namespace"),
                )?;
            Ok(ReviewBuilder::create(workload_kind, &object).namespace(namespace).to_value())
        }
        ("", _) | (_, "") => Err("not a Kubernetes object (no apiVersion or kind)".into()),
        _ => Err(format!(
            "{api_version} {kind} is not reviewable: expected admission.k8s.io/v1 AdmissionReview, batch/v1 Job or \
             jobset.x-k8s.io/v1alpha2 JobSet"
        )),
    }
}
