//! Admission reviews in, AdmissionReview responses out.
//!
//! [`review`] is the one entry point the HTTPS server and the offline `review`
//! command share: decode the body once, hand the workload to the policy entry
//! point for the webhook and operation ([`rules::mutate_create`],
//! [`rules::validate_create`], [`rules::validate_update`]), confirm a denial
//! that rests on a missing object through the caller's [`Lookups`], encode the
//! verdict. Offline there is nothing to look up ([`Offline`]); the server looks
//! in the API server.

pub mod audit;
pub mod patch;
pub mod request;
pub mod response;
mod review_builder;

pub use review_builder::ReviewBuilder;

use std::future::Future;
use std::ops::Deref;
use std::task::{Context, Poll, Waker};

use json_patch::Patch;

use crate::cluster::{Absent, ClusterView};
use crate::config::Config;
use crate::rules::{self, Denial, Subject, Verdict};
use crate::vocabulary::reason::{Enforcement, Reason};
use crate::workload::Workload;

/// A body that is not an AdmissionReview we can answer; the reason is for the
/// API server's log (the server answers 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed AdmissionReview: {0}")]
pub struct BadReview(pub String);
pub use request::{Operation, Request};

/// The largest AdmissionReview there is: an UPDATE carries two objects, each
/// at most the API server's 3 MiB request limit. The server's default body
/// limit, and the most the offline `review` reads.
pub const MOST_REVIEW_BYTES: usize = 8 * 1024 * 1024;

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
    /// Set on a denial (or a warned one) that rests on a missing object: the
    /// server confirms the absence with a live lookup before it answers.
    pub unconfirmed: Option<Absent>,
    /// The enforcement applied when a rule was broken: the metric label and audit annotation.
    pub enforcement: Option<Enforcement>,
}

impl Decision {
    pub fn allow(reason: Reason) -> Self {
        Self {
            allowed: true,
            reason,
            message: None,
            patch: Patch(Vec::new()),
            warnings: Vec::new(),
            unconfirmed: None,
            enforcement: None,
        }
    }

    pub fn allow_with_warnings(reason: Reason, warnings: Vec<String>) -> Self {
        Self { warnings: warnings.into_iter().map(fit_message).collect(), ..Self::allow(reason) }
    }

    /// The policy's verdict on `workload`, its shape written as a minimal patch.
    pub fn from_verdict(verdict: Verdict, workload: &Workload) -> Self {
        match verdict {
            Verdict::Skip(reason) => Self::allow(reason),
            Verdict::Allow { reason, shape, warnings } => {
                Self { patch: patch::diff(workload, &shape), ..Self::allow_with_warnings(reason, warnings) }
            }
            Verdict::Deny(denial) => Self::deny(denial),
        }
    }

    /// A broken rule, answered as its enforcement says: refused, let through
    /// with the message as a warning, or let through silently.
    pub fn deny(denial: Denial) -> Self {
        let broken = Self { enforcement: Some(denial.enforcement), ..Self::allow(denial.reason) };
        match denial.enforcement {
            Enforcement::Deny => Self {
                allowed: false,
                message: Some(fit_message(denial.message)),
                unconfirmed: denial.absent,
                ..broken
            },
            Enforcement::Warn => {
                Self { warnings: vec![fit_message(denial.message)], unconfirmed: denial.absent, ..broken }
            }
            Enforcement::Off => broken,
        }
    }

    /// `Deny`, `Warn`, `Off` for a broken rule, `none` otherwise: the metric label.
    pub fn enforcement_label(&self) -> &'static str {
        self.enforcement.map_or("none", Enforcement::as_str)
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

/// The most of a message that goes out, as a warning or as a denial's
/// `status.message`. The API server keeps a request's warnings whole while
/// they total at most 4096 runes, and past that cuts every one to 256
/// (k8s.io/apiserver `filters/warning.go`, `truncateAtTotalRunes`); this leaves
/// room for both webhooks' other warnings. A denial's message the API server
/// relays to the client whole (kubectl prints it, EvalHub and AIPerf store it
/// in their status): a rule's message names a few values and is far shorter,
/// so only one that echoes a caller's huge value is cut; one bound for both
/// keeps a rule's message the same whether its enforcement warns or denies.
pub const MOST_MESSAGE_RUNES: usize = 2048;

/// A warning or denial message cut to [`MOST_MESSAGE_RUNES`] on a character
/// boundary, its end saying the cut: `… (cut: 2,100,033 characters in all)`.
pub fn fit_message(message: String) -> String {
    // A byte is at most one character: the common short message is not counted.
    if message.len() <= MOST_MESSAGE_RUNES {
        return message;
    }
    let characters = message.chars().count();
    if characters <= MOST_MESSAGE_RUNES {
        return message;
    }
    let note = format!("… (cut: {} characters in all)", thousands(characters));
    let kept = MOST_MESSAGE_RUNES.saturating_sub(note.chars().count());
    let cut = message.char_indices().nth(kept).map_or(message.len(), |(at, _)| at);
    let mut fitted = String::with_capacity(cut + note.len());
    fitted.push_str(message.get(..cut).unwrap_or_default());
    fitted.push_str(&note);
    fitted
}

/// `2100033` as `2,100,033`.
fn thousands(number: usize) -> String {
    let digits = number.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
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

/// Where a review reads the cluster, and looks up an object the view lacks
/// before it denies for its absence: a watch cache may lag an object created a
/// moment ago (a LocalQueue or class applied with the Job).
pub trait Lookups {
    type View: ClusterView;
    /// What a failed lookup answers instead of a review.
    type Error: From<BadReview>;
    /// The view as it is now; held only while deciding, never across a lookup.
    fn view(&self) -> impl Deref<Target = Self::View> + '_;
    /// Whether `absent` exists after all (then it has joined the view).
    fn confirm_absent(
        &self,
        namespace: &str,
        absent: &Absent,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;
    /// Runs `work`, the review's CPU (decoding, deciding), where it cannot
    /// stall whatever else the caller serves.
    fn decide<R>(&self, work: impl FnOnce() -> R + Send) -> impl Future<Output = Result<R, Self::Error>> + Send;
}

/// Offline (`review`, tests, benchmarks): the view is the whole truth.
pub struct Offline<'v, V: ClusterView + Sync>(pub &'v V);

impl<V: ClusterView + Sync> Lookups for Offline<'_, V> {
    type View = V;
    type Error = BadReview;
    fn view(&self) -> impl Deref<Target = V> + '_ {
        self.0
    }
    async fn confirm_absent(&self, _: &str, _: &Absent) -> Result<bool, BadReview> {
        Ok(false)
    }
    async fn decide<R>(&self, work: impl FnOnce() -> R + Send) -> Result<R, BadReview> {
        Ok(work())
    }
}

/// The most live lookups one review makes: each found object is one fewer
/// missing, and a denial rests on at most a few.
pub const MOST_LOOKUPS: usize = 3;

/// Decodes, decides and encodes one review. A decision that rests on a
/// missing object is confirmed through `lookups`; a found object has joined
/// the view and the request is decided again, [`MOST_LOOKUPS`] times at most.
/// Decoding and deciding are synchronous, bounded by the body's caps
/// (`workload::size`) and the view, and run where `lookups` says; only the
/// lookups wait.
pub async fn review<L: Lookups + Sync>(
    webhook: Webhook,
    body: &[u8],
    config: &Config,
    lookups: &L,
) -> Result<Outcome, L::Error> {
    let decided = lookups.decide(|| -> Result<_, BadReview> {
        let request = request::decode(body)?;
        let decision = decide(webhook, &request, config, &*lookups.view())?;
        Ok((request, decision))
    });
    let (request, mut decision) = decided.await??;
    for _ in 0..MOST_LOOKUPS {
        let Some(absent) = &decision.unconfirmed else { break };
        if !lookups.confirm_absent(request.namespace().unwrap_or_default(), absent).await? {
            break;
        }
        decision = lookups.decide(|| decide(webhook, &request, config, &*lookups.view())).await??;
    }
    lookups.decide(|| outcome(request, decision)).await
}

/// [`review`] offline, where nothing waits: the CLI, fuzzing and benchmarks.
pub fn review_offline(
    webhook: Webhook,
    body: &[u8],
    config: &Config,
    view: &(impl ClusterView + Sync),
) -> Result<Outcome, BadReview> {
    run_offline(review(webhook, body, config, &Offline(view)))
}

/// Runs a review or audit through [`Offline`] to its end: `Offline` answers
/// at once, so one poll finishes it.
pub fn run_offline<F: Future>(work: F) -> F::Output {
    match std::pin::pin!(work).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("offline work waited"),
    }
}

/// The benchmark baseline (`serve --noop`): read the same body, decode only the
/// uid, answer allowed. Returns the uid and the response body.
pub fn review_noop(body: &[u8]) -> Result<(String, Vec<u8>), BadReview> {
    #[derive(serde::Deserialize)]
    struct Uid {
        uid: String,
    }
    #[derive(serde::Deserialize)]
    struct UidOnly {
        request: Option<Uid>,
    }
    let review: UidOnly = serde_json::from_slice(body).map_err(|e| BadReview(e.to_string()))?;
    let uid = review.request.ok_or_else(|| BadReview("no request in the AdmissionReview".into()))?.uid;
    let body = response::encode(&uid, &Decision::allow(Reason::NotAWorkload));
    Ok((uid, body))
}

/// The decision for an already decoded request: the mutating webhook shapes
/// only CREATEs; the validating one checks CREATEs and guards UPDATEs.
fn decide(
    webhook: Webhook,
    request: &Request,
    config: &Config,
    view: &impl ClusterView,
) -> Result<Decision, BadReview> {
    if webhook == Webhook::Mutate && request.operation != Operation::Create {
        return Ok(Decision::allow(Reason::OperationNotReviewed));
    }
    let target = match target(request)? {
        Ok(target) => target,
        Err(reason) => return Ok(Decision::allow(reason)),
    };
    let verdict = match (webhook, target.old) {
        (Webhook::Mutate, _) => rules::mutate_create(config, view, target.subject),
        (Webhook::Validate, None) => rules::validate_create(config, view, target.subject),
        (Webhook::Validate, Some(old)) => {
            rules::validate_update(config, view, target.subject, old, &request.user_info.username)
        }
    };
    Ok(Decision::from_verdict(verdict, target.subject.workload))
}

/// Encodes a decision as the response to `request`.
fn outcome(mut request: Request, decision: Decision) -> Outcome {
    let body = response::encode(&request.uid, &decision);
    let namespace = request.namespace().unwrap_or_default().to_string();
    // Moved out of the request, which is done with: the log line's fields.
    let named = |object: &mut Option<Workload>| {
        let metadata = &mut object.as_mut()?.metadata;
        metadata.name.take().or_else(|| metadata.generate_name.take())
    };
    let name = named(&mut request.object)
        .or_else(|| named(&mut request.old_object))
        .or_else(|| request.name.take())
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

/// The workload a review is about, and on UPDATE the one it replaces.
struct Target<'r> {
    subject: Subject<'r>,
    old: Option<&'r Workload>,
}

/// The workload in a request the webhooks review; `Ok(Err(reason))` means the
/// request is not one (another kind, a subresource, another operation) and is
/// allowed untouched. A request that lacks what its operation must carry is an error.
fn target(request: &Request) -> Result<Result<Target<'_>, Reason>, BadReview> {
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
        return Err(BadReview(format!("{} {} without an object", request.operation.as_str(), kind)));
    };
    let Some(namespace) = request.namespace() else {
        return Err(BadReview(format!("{kind} request without a namespace")));
    };
    let old = request.old_object.as_ref();
    if request.operation == Operation::Update && old.is_none() {
        return Err(BadReview(format!("UPDATE of {kind} without oldObject")));
    }
    Ok(Ok(Target { subject: Subject { kind, namespace, workload }, old }))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fit_tests {
    use super::*;

    #[test]
    fn a_message_is_cut_on_a_character_boundary_saying_the_cut() {
        assert_eq!(fit_message("short".into()), "short");
        let long = "é".repeat(MOST_MESSAGE_RUNES + 10);
        let cut = fit_message(long);
        assert_eq!(cut.chars().count(), MOST_MESSAGE_RUNES);
        assert!(cut.ends_with("é… (cut: 2,058 characters in all)"), "{cut}");
        let at_limit = "é".repeat(MOST_MESSAGE_RUNES);
        assert_eq!(fit_message(at_limit.clone()), at_limit, "at the limit: whole");
        let huge = format!("queue {} not found", "q".repeat(2_100_000));
        let cut = fit_message(huge);
        assert_eq!(cut.chars().count(), MOST_MESSAGE_RUNES);
        assert!(cut.starts_with("queue qqq") && cut.ends_with("q… (cut: 2,100,016 characters in all)"), "{cut}");
        assert_eq!(
            (thousands(0), thousands(999), thousands(1000), thousands(2_100_033)),
            ("0".into(), "999".into(), "1,000".into(), "2,100,033".into())
        );
    }

    #[test]
    fn denials_and_warnings_alike_are_fitted() {
        let denial = |enforcement| Denial {
            enforcement,
            ..Denial::new(Reason::MissingLocalQueue, "x".repeat(3 * MOST_MESSAGE_RUNES))
        };
        let denied = Decision::deny(denial(Enforcement::Deny));
        assert_eq!(denied.message.map(|m| m.chars().count()), Some(MOST_MESSAGE_RUNES));
        let warned = Decision::deny(denial(Enforcement::Warn));
        assert_eq!(warned.warnings.iter().map(|w| w.chars().count()).collect::<Vec<_>>(), [MOST_MESSAGE_RUNES]);
        let allowed = Decision::allow_with_warnings(Reason::Checked, vec!["w".repeat(5000), "short".into()]);
        assert_eq!(allowed.warnings[0].chars().count(), MOST_MESSAGE_RUNES);
        assert_eq!(allowed.warnings[1], "short");
    }
}
