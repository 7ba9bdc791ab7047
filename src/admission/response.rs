//! Encoding the AdmissionReview response. Shared by the server and `review`, so
//! what the offline command prints is byte for byte what the server sends.

use base64::Engine;
use serde::Serialize;

use super::Decision;
use crate::admission::request::API_VERSION;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: ResponseOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseOut<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<StatusOut<'a>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
    audit_annotations: AuditAnnotations<'a>,
}

/// A metav1.Status, as the API server relays it to the client on a denial.
#[derive(Serialize)]
struct StatusOut<'a> {
    status: &'static str,
    code: u16,
    reason: &'static str,
    message: &'a str,
}

/// Recorded in the API server's audit log, prefixed with the webhook's name.
#[derive(Serialize)]
struct AuditAnnotations<'a> {
    decision: &'static str,
    reason: &'a str,
    /// The broken rule's enforcement (`Deny`, `Warn`, `Off`); absent when none was broken.
    #[serde(skip_serializing_if = "Option::is_none")]
    enforcement: Option<&'static str>,
}

pub fn encode(uid: &str, decision: &Decision) -> Vec<u8> {
    // Buffers sized for the common answer up front: growing them costs a copy
    // and an allocation each time (counted in `cargo bench --bench review`).
    let patch = (!decision.patch.0.is_empty()).then(|| {
        let mut json = Vec::with_capacity(256);
        serde_json::to_writer(&mut json, &decision.patch).expect("a JSON patch always serializes");
        base64::engine::general_purpose::STANDARD.encode(json)
    });
    let message_bytes = decision.message.as_ref().map_or(0, String::len);
    let warning_bytes: usize = decision.warnings.iter().map(|warning| warning.len() + 8).sum();
    let mut out =
        Vec::with_capacity(256 + uid.len() + patch.as_ref().map_or(0, String::len) + message_bytes + warning_bytes);
    let (code, reason) = decision.reason.refusal_status();
    let status = decision.message.as_deref().filter(|_| !decision.allowed).map(|message| StatusOut {
        status: "Failure",
        code,
        reason,
        message,
    });
    let review = ReviewOut {
        api_version: API_VERSION,
        kind: "AdmissionReview",
        response: ResponseOut {
            uid,
            allowed: decision.allowed,
            patch_type: patch.as_ref().map(|_| "JSONPatch"),
            patch,
            status,
            warnings: &decision.warnings,
            audit_annotations: AuditAnnotations {
                decision: decision.verdict(),
                reason: decision.reason.as_str(),
                enforcement: decision.enforcement.map(|e| e.as_str()),
            },
        },
    };
    serde_json::to_writer(&mut out, &review).expect("an AdmissionReview response always serializes");
    out
}
