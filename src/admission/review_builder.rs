//! AdmissionReviews as the API server sends them for a Job or JobSet: the one
//! builder behind `review` of a bare manifest, the unit and integration tests,
//! the differential test and the benchmarks.

use serde_json::{Value, json};

use super::request::API_VERSION;
use crate::workload::WorkloadKind;

#[derive(Debug, Clone)]
pub struct ReviewBuilder {
    kind: WorkloadKind,
    operation: &'static str,
    object: Value,
    old_object: Value,
    namespace: Option<String>,
    user: String,
    uid: String,
}

impl ReviewBuilder {
    /// A CREATE of `object` by `kubernetes-admin`, in the object's namespace.
    pub fn create(kind: WorkloadKind, object: &Value) -> Self {
        Self {
            kind,
            operation: "CREATE",
            object: object.clone(),
            old_object: Value::Null,
            namespace: None,
            user: "kubernetes-admin".into(),
            uid: "00000000-0000-0000-0000-000000000000".into(),
        }
    }

    /// An UPDATE from `old` to `new`.
    pub fn update(kind: WorkloadKind, old: &Value, new: &Value) -> Self {
        Self { operation: "UPDATE", old_object: old.clone(), ..Self::create(kind, new) }
    }

    /// The kind named by the object's own `kind` field (a JobSet, else a Job).
    pub fn kind_of(object: &Value) -> WorkloadKind {
        if object["kind"] == "JobSet" { WorkloadKind::JobSet } else { WorkloadKind::Job }
    }

    /// The request's namespace, when it is not the object's.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    pub fn user(mut self, user: &str) -> Self {
        self.user = user.into();
        self
    }

    pub fn uid(mut self, uid: &str) -> Self {
        self.uid = uid.into();
        self
    }

    pub fn to_value(&self) -> Value {
        let (group, version) = self.kind.group_version();
        let (kind, resource) = (self.kind.as_str(), self.kind.resource());
        let namespace = match &self.namespace {
            Some(namespace) => Value::from(namespace.as_str()),
            None => self.object.pointer("/metadata/namespace").cloned().unwrap_or(Value::Null),
        };
        let options = if self.operation == "CREATE" { "CreateOptions" } else { "UpdateOptions" };
        json!({
            "apiVersion": API_VERSION,
            "kind": "AdmissionReview",
            "request": {
                "uid": self.uid,
                "kind": {"group": group, "version": version, "kind": kind},
                "resource": {"group": group, "version": version, "resource": resource},
                "requestKind": {"group": group, "version": version, "kind": kind},
                "requestResource": {"group": group, "version": version, "resource": resource},
                "name": self.object.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
                "namespace": namespace,
                "operation": self.operation,
                "userInfo": {"username": self.user, "groups": ["system:authenticated"]},
                "object": self.object,
                "oldObject": self.old_object,
                "dryRun": false,
                "options": {"apiVersion": "meta.k8s.io/v1", "kind": options},
            }
        })
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_value()).unwrap_or_default()
    }
}
