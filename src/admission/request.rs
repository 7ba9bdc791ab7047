//! Decoding an AdmissionReview admission.k8s.io/v1 request in one pass, with the
//! object and oldObject decoded straight into the typed partial [`Workload`] view.

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::BadReview;
use crate::workload::{Workload, WorkloadKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
    #[serde(other)]
    Unknown,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Connect => "CONNECT",
            Self::Unknown => "UNKNOWN",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self")]
pub struct GroupVersionKind {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self")]
pub struct UserInfo {
    #[serde(default)]
    pub username: String,
}

/// The fields of `request` the webhook reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", remote = "Self")]
pub struct Request {
    pub uid: String,
    pub kind: GroupVersionKind,
    #[serde(default)]
    pub sub_resource: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    pub operation: Operation,
    #[serde(default)]
    pub user_info: UserInfo,
    #[serde(default)]
    pub object: Option<Workload>,
    #[serde(default)]
    pub old_object: Option<Workload>,
    #[serde(default)]
    pub dry_run: Option<bool>,
}

impl Request {
    pub fn workload_kind(&self) -> Option<WorkloadKind> {
        WorkloadKind::from_group_kind(&self.kind.group, &self.kind.kind)
    }

    /// The namespace from the request, else from the object.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .or_else(|| self.object.as_ref()?.metadata.namespace.as_deref().filter(|ns| !ns.is_empty()))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review<R> {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    request: Option<R>,
}

/// The request without its objects: used only when the full decode failed, to
/// tell a kind we do not handle (answered "allowed") from a broken review (400).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", remote = "Self")]
struct RequestHead {
    uid: String,
    kind: GroupVersionKind,
    #[serde(default)]
    sub_resource: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    operation: Operation,
    #[serde(default)]
    user_info: UserInfo,
    #[serde(default)]
    object: Option<IgnoredAny>,
    #[serde(default)]
    old_object: Option<IgnoredAny>,
}

crate::workload::decoded_from_objects_only!(GroupVersionKind, UserInfo, Request, RequestHead);

pub const API_VERSION: &str = "admission.k8s.io/v1";

/// Decodes an AdmissionReview body. Errors are [`BadReview`] with a reason
/// a person can read in the API server's log.
pub fn decode(body: &[u8]) -> Result<Request, BadReview> {
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(BadReview("not an AdmissionReview: the body is not a JSON object".into()));
    }
    match serde_json::from_slice::<Review<Request>>(body) {
        Ok(review) => unwrap_review(review),
        Err(full_error) => {
            let head = serde_json::from_slice::<Review<RequestHead>>(body)
                .map_err(|e| BadReview(format!("not an AdmissionReview: {e}")))
                .and_then(unwrap_review)?;
            if WorkloadKind::from_group_kind(&head.kind.group, &head.kind.kind).is_some() {
                return Err(BadReview(format!("{} object does not decode: {full_error}", head.kind.kind)));
            }
            let _ = (head.object, head.old_object);
            Ok(Request {
                uid: head.uid,
                kind: head.kind,
                sub_resource: head.sub_resource,
                name: head.name,
                namespace: head.namespace,
                operation: head.operation,
                user_info: head.user_info,
                object: None,
                old_object: None,
                dry_run: None,
            })
        }
    }
}

fn unwrap_review<R>(review: Review<R>) -> Result<R, BadReview> {
    if let Some(version) = review.api_version.as_deref().filter(|v| *v != API_VERSION) {
        return Err(BadReview(format!(
            "apiVersion {version} is not supported; register the webhook with admissionReviewVersions [v1]"
        )));
    }
    if let Some(kind) = review.kind.as_deref().filter(|k| *k != "AdmissionReview") {
        return Err(BadReview(format!("kind {kind} is not AdmissionReview")));
    }
    review.request.ok_or_else(|| BadReview("no request in the AdmissionReview".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_job_review() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",
            "kind":{"group":"batch","version":"v1","kind":"Job"},"resource":{"group":"batch","version":"v1","resource":"jobs"},
            "namespace":"team-a","operation":"CREATE","userInfo":{"username":"alice","groups":["dev"]},
            "object":{"metadata":{"name":"j","labels":{"app":"evalhub"},"annotations":{"big":"x","eval-admission.io/checkpointing":"true"}},
            "spec":{"template":{"spec":{"priorityClassName":"p","containers":[]}}}},"oldObject":null,"dryRun":false,"options":{}}}"#;
        let request = decode(body).unwrap();
        assert_eq!(request.uid, "u1");
        assert_eq!(request.operation, Operation::Create);
        assert_eq!(request.workload_kind(), Some(WorkloadKind::Job));
        let object = request.object.unwrap();
        assert!(object.is_checkpointing());
        assert_eq!(object.pod_priority_classes()[0].class_name, "p");
    }

    #[test]
    fn other_kinds_decode_without_their_object() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u2",
            "kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE",
            "object":{"metadata":{"labels":"not a map"},"spec":{"template":7}}}}"#;
        let request = decode(body).unwrap();
        assert_eq!(request.workload_kind(), None);
        assert!(request.object.is_none());
    }

    #[test]
    fn broken_reviews_are_bad_requests() {
        let cases: [(&[u8], &str); 6] = [
            (b"{", "not an AdmissionReview"),
            (b"\x00\x01binary", "not an AdmissionReview"),
            (br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#, "no request"),
            (br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u","kind":{},"operation":"CREATE"}}"#, "not supported"),
            (br#"{"request":{"kind":{"group":"batch","kind":"Job"},"operation":"CREATE"}}"#, "uid"),
            (br#"{"request":{"uid":"u","kind":{"group":"batch","kind":"Job"},"operation":"CREATE","object":{"metadata":{"labels":[1]}}}}"#, "Job object does not decode"),
        ];
        for (body, expected) in cases {
            let error = decode(body).unwrap_err().to_string();
            assert!(error.contains(expected), "{error:?} should mention {expected:?}");
        }
    }

    /// serde's derived decoders read an array as a struct's fields in order;
    /// the API server never sends one where an object belongs, and a patch
    /// written against it would not apply.
    #[test]
    fn arrays_where_objects_belong_are_bad_requests() {
        let job = |object: &str| {
            format!(
                r#"{{"request":{{"uid":"u","kind":{{"group":"batch","version":"v1","kind":"Job"}},"operation":"CREATE","namespace":"n","object":{object}}}}}"#
            )
        };
        assert!(decode(job(r#"{"metadata":{"name":"j"},"spec":{"suspend":true}}"#).as_bytes()).is_ok());
        let cases: [(String, &str); 9] = [
            (job(r#"{"metadata":{"name":"j"},"spec":[]}"#), "Job object does not decode"),
            (job(r#"{"metadata":["j"]}"#), "Job object does not decode"),
            (job(r#"[{"name":"j"}]"#), "Job object does not decode"),
            (job(r#"{"metadata":{"ownerReferences":[["batch/v1","Job","x",true]]}}"#), "Job object does not decode"),
            (job(r#"{"spec":{"template":[{"spec":{}}]}}"#), "Job object does not decode"),
            (job(r#"{"spec":{"template":{"spec":[]}}}"#), "Job object does not decode"),
            (
                r#"{"request":["u",{"group":"batch","kind":"Job"},null,null,"n","CREATE"]}"#.into(),
                "not an AdmissionReview",
            ),
            (
                r#"{"request":{"uid":"u","kind":["batch","v1","Job"],"operation":"CREATE"}}"#.into(),
                "not an AdmissionReview",
            ),
            (r#"[{"request":{"uid":"u"}}]"#.into(), "not a JSON object"),
        ];
        for (body, expected) in cases {
            let error = decode(body.as_bytes()).unwrap_err().to_string();
            assert!(error.contains(expected), "{body}: {error:?} should mention {expected:?}");
        }
    }
}
