//! Admission reviews in, AdmissionReview responses out.
//!
//! [`review`] is the one entry point the HTTPS server and the offline `review`
//! command share: decode the body once, decide with [`mutate::mutate`] or
//! [`validate::validate`] (pure functions of the request, config and cluster
//! view), encode the response.

pub mod mutate;
pub mod patch;
pub mod request;
pub mod response;
pub mod validate;

use json_patch::Patch;

use crate::cluster::ClusterView;
use crate::config::Config;
use crate::error::Error;
use crate::rules::{Absent, Denial, Reason, Subject};
use crate::workload::{Workload, WorkloadKind};
pub use request::{Operation, Request};

/// The two webhooks the server exposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Webhook {
    Mutate,
    Validate,
}

impl Webhook {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mutate => "mutate",
            Self::Validate => "validate",
        }
    }
}

/// What a webhook decided for one request.
#[derive(Debug, Clone)]
pub struct Decision {
    pub allowed: bool,
    pub reason: Reason,
    /// The denial message; `None` when allowed.
    pub message: Option<String>,
    pub patch: Patch,
    pub warnings: Vec<String>,
    /// Set on a denial that rests on a missing object: the server confirms the
    /// absence with a live lookup before it denies.
    pub unconfirmed: Option<Absent>,
}

impl Decision {
    pub fn allow(reason: Reason) -> Self {
        Self { allowed: true, reason, message: None, patch: Patch(Vec::new()), warnings: Vec::new(), unconfirmed: None }
    }

    pub fn allow_with_warnings(reason: Reason, warnings: Vec<String>) -> Self {
        Self { warnings, ..Self::allow(reason) }
    }

    pub fn deny(denial: Denial) -> Self {
        Self {
            allowed: false,
            reason: denial.reason,
            message: Some(denial.message),
            unconfirmed: denial.absent,
            ..Self::allow(denial.reason)
        }
    }

    /// `allowed`, `patched` or `denied`: the decision metric label and audit annotation.
    pub fn verdict(&self) -> &'static str {
        match (self.allowed, self.patch.0.is_empty()) {
            (false, _) => "denied",
            (true, false) => "patched",
            (true, true) => "allowed",
        }
    }
}

/// One answered review: the response body and what the log line and metrics need.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub body: Vec<u8>,
    pub decision: Decision,
    pub uid: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub operation: Operation,
    pub username: String,
    pub dry_run: bool,
}

/// Decodes, decides and encodes one review.
pub fn review(webhook: Webhook, body: &[u8], config: &Config, view: &impl ClusterView) -> Result<Outcome, Error> {
    let request = request::decode(body)?;
    let decision = decide(webhook, &request, config, view)?;
    Ok(outcome(request, decision))
}

/// The benchmark baseline (`serve --noop`): read the same body, decode only the
/// uid, answer allowed. Returns the uid and the response body.
pub fn review_noop(body: &[u8]) -> Result<(String, Vec<u8>), Error> {
    #[derive(serde::Deserialize)]
    struct Uid {
        uid: String,
    }
    #[derive(serde::Deserialize)]
    struct UidOnly {
        request: Option<Uid>,
    }
    let review: UidOnly = serde_json::from_slice(body).map_err(|e| Error::BadReview(e.to_string()))?;
    let uid = review.request.ok_or_else(|| Error::BadReview("no request in the AdmissionReview".into()))?.uid;
    let body = response::encode(&uid, &Decision::allow(Reason::NotAWorkload));
    Ok((uid, body))
}

/// The decision for an already decoded request.
pub fn decide(
    webhook: Webhook,
    request: &Request,
    config: &Config,
    view: &impl ClusterView,
) -> Result<Decision, Error> {
    match webhook {
        Webhook::Mutate => mutate::mutate(config, view, request),
        Webhook::Validate => validate::validate(config, view, request),
    }
}

/// Encodes a decision as the response to `request`.
pub fn outcome(request: Request, decision: Decision) -> Outcome {
    let body = response::encode(&request.uid, &decision);
    let namespace = request.namespace().unwrap_or_default().to_string();
    let name = request
        .object
        .as_ref()
        .or(request.old_object.as_ref())
        .and_then(|object| object.metadata.name.clone().or_else(|| object.metadata.generate_name.clone()))
        .or_else(|| request.name.clone())
        .unwrap_or_default();
    Outcome {
        body,
        uid: request.uid,
        kind: request.kind.kind,
        namespace,
        name,
        operation: request.operation,
        username: request.user_info.username,
        dry_run: request.dry_run.unwrap_or(false),
        decision,
    }
}

/// The workload a review is about, once it is known to be one the policy shapes.
pub(crate) struct Target<'r> {
    pub subject: Subject<'r>,
    pub old: Option<&'r Workload>,
}

/// Decides whether the policy applies; `Ok(Err(reason))` means "allow untouched".
pub(crate) fn target<'r>(config: &Config, request: &'r Request) -> Result<Result<Target<'r>, Reason>, Error> {
    let Some(kind) = request.workload_kind() else {
        return Ok(Err(Reason::NotAWorkload));
    };
    if request.sub_resource.as_deref().is_some_and(|s| !s.is_empty()) {
        return Ok(Err(Reason::Subresource));
    }
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Ok(Err(Reason::OperationNotReviewed));
    }
    let Some(workload) = request.object.as_ref() else {
        return Err(Error::BadReview(format!("{} {} without an object", request.operation.as_str(), kind)));
    };
    let Some(namespace) = request.namespace() else {
        return Err(Error::BadReview(format!("{kind} request without a namespace")));
    };
    let old = request.old_object.as_ref();
    if request.operation == Operation::Update && old.is_none() {
        return Err(Error::BadReview(format!("UPDATE of {kind} without oldObject")));
    }
    if config.owned_by_managed_kind(workload) {
        return Ok(Err(Reason::OwnedByKueueWorkload));
    }
    // On UPDATE the old labels count too: dropping the selecting label must not slip past the guards.
    let selected = config.evaluation_selector(kind, workload).is_some()
        || old.is_some_and(|old| config.evaluation_selector(kind, old).is_some());
    if !selected {
        return Ok(Err(Reason::NotAnEvaluation));
    }
    if workload.is_being_deleted() {
        return Ok(Err(Reason::BeingDeleted));
    }
    Ok(Ok(Target { subject: Subject { kind, namespace, workload }, old }))
}

/// The AdmissionReview a bare manifest would arrive as: a CREATE by `kubernetes-admin`.
pub fn review_for_manifest(kind: WorkloadKind, namespace: &str, object: &serde_json::Value) -> serde_json::Value {
    let (group, version) = kind.group_version();
    serde_json::json!({
        "apiVersion": request::API_VERSION,
        "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000000",
            "kind": {"group": group, "version": version, "kind": kind.as_str()},
            "resource": {"group": group, "version": version, "resource": kind.resource()},
            "requestKind": {"group": group, "version": version, "kind": kind.as_str()},
            "requestResource": {"group": group, "version": version, "resource": kind.resource()},
            "name": object.pointer("/metadata/name").cloned().unwrap_or(serde_json::Value::Null),
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]},
            "object": object,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        }
    })
}
