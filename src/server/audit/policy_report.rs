//! Where a policy team looks: a PolicyReport (wgpolicyk8s.io/v1alpha2, the
//! Policy WG's report that Kyverno writes too) per namespace with findings,
//! when that CRD is installed. Each result is one workload's finding: the
//! rule (its reason), `fail` for a Deny rule and `warn` for a Warn one, the
//! message and the workload. A namespace whose findings are gone loses its
//! report; a new lease holder first sweeps away reports it has no finding for.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::admission::audit::Reported;
use crate::cache::served_resource;
use crate::vocabulary::own_names::{AUDIT_CONTROLLER, MANAGED_BY_LABEL};

/// Each namespace's report.
pub const REPORT_NAME: &str = "eval-admission";
const GROUP: &str = "wgpolicyk8s.io";

pub struct PolicyReports {
    client: kube::Client,
    /// Looked for each round until found (one discovery GET a round, and
    /// rounds are a debounce apart).
    resource: Option<ApiResource>,
    /// Per namespace, a hash of the results last written (their times aside).
    written: HashMap<String, u64>,
    swept: bool,
}

impl PolicyReports {
    pub fn new(client: kube::Client) -> Self {
        Self { client, resource: None, written: HashMap::new(), swept: false }
    }

    /// Makes the reports say `findings` (by namespace): written where they
    /// changed, deleted where none are left.
    pub async fn publish(&mut self, findings: &BTreeMap<&str, Vec<&Reported>>) -> Result<(), kube::Error> {
        let Some(resource) = self.served().await? else { return Ok(()) };
        if !self.swept {
            self.sweep(&resource, findings).await?;
        }
        let params = PatchParams::apply(AUDIT_CONTROLLER).force();
        for (namespace, found) in findings {
            let hash = results_hash(found);
            if self.written.get(*namespace) == Some(&hash) {
                continue;
            }
            let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), namespace, &resource);
            api.patch(REPORT_NAME, &params, &Patch::Apply(report(namespace, found))).await?;
            self.written.insert(namespace.to_string(), hash);
        }
        let cleared: Vec<String> =
            self.written.keys().filter(|namespace| !findings.contains_key(namespace.as_str())).cloned().collect();
        for namespace in cleared {
            let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &namespace, &resource);
            delete(&api, REPORT_NAME).await?;
            self.written.remove(&namespace);
        }
        Ok(())
    }

    /// Forgets what was written, to sweep and write again on the next lead.
    pub fn stand_down(&mut self) {
        self.written.clear();
        self.swept = false;
    }

    async fn served(&mut self) -> Result<Option<ApiResource>, kube::Error> {
        if self.resource.is_none() {
            self.resource = served_resource(&self.client, GROUP, "PolicyReport").await?;
            if self.resource.is_some() {
                tracing::info!("PolicyReport is served: the audit writes one per namespace with findings");
            }
        }
        Ok(self.resource.clone())
    }

    /// Deletes the reports of namespaces without findings that an earlier
    /// holder wrote.
    async fn sweep(
        &mut self,
        resource: &ApiResource,
        findings: &BTreeMap<&str, Vec<&Reported>>,
    ) -> Result<(), kube::Error> {
        let all: Api<DynamicObject> = Api::all_with(self.client.clone(), resource);
        let (key, value) = MANAGED_BY_LABEL;
        let listed = all.list(&ListParams::default().labels(&format!("{key}={value}"))).await?;
        for report in listed.items {
            let namespace = report.metadata.namespace.clone().unwrap_or_default();
            let name = report.metadata.name.clone().unwrap_or_default();
            if name == REPORT_NAME && !findings.contains_key(namespace.as_str()) {
                let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &namespace, resource);
                delete(&api, &name).await?;
            }
        }
        self.swept = true;
        Ok(())
    }
}

async fn delete(api: &Api<DynamicObject>, name: &str) -> Result<(), kube::Error> {
    match api.delete(name, &DeleteParams::default()).await {
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        other => other.map(|_| ()),
    }
}

/// The report of one namespace.
pub fn report(namespace: &str, found: &[&Reported]) -> Value {
    let now = Timestamp::now();
    let results: Vec<Value> = found
        .iter()
        .map(|found| {
            json!({
                "policy": "eval-admission",
                "rule": found.reason,
                "result": result_of(found),
                "scored": true,
                "category": "Kueue admission",
                "source": AUDIT_CONTROLLER,
                "message": found.message,
                "timestamp": {"seconds": now.as_second(), "nanos": 0},
                "properties": {"stage": found.stage, "enforcement": found.enforcement},
                "resources": [resource_of(found)],
            })
        })
        .collect();
    let count = |result: &str| found.iter().filter(|found| result_of(found) == result).count();
    let (key, value) = MANAGED_BY_LABEL;
    json!({
        "apiVersion": "wgpolicyk8s.io/v1alpha2",
        "kind": "PolicyReport",
        "metadata": {"name": REPORT_NAME, "namespace": namespace, "labels": {key: value}},
        "summary": {"pass": 0, "fail": count("fail"), "warn": count("warn"), "error": 0, "skip": 0},
        "results": results,
    })
}

/// `fail` for a rule that refuses at create, `warn` for one that warns.
fn result_of(found: &Reported) -> &'static str {
    if found.enforcement == "Deny" { "fail" } else { "warn" }
}

fn resource_of(found: &Reported) -> Value {
    let mut reference = json!({"apiVersion": found.api_version(), "kind": found.kind, "name": found.name,
                               "namespace": found.namespace});
    if !found.uid.is_empty() {
        reference["uid"] = json!(found.uid);
    }
    reference
}

fn results_hash(found: &[&Reported]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for found in found {
        (found.kind, &found.name, &found.uid, found.reason, found.enforcement, found.stage, &found.message)
            .hash(&mut hasher);
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_per_finding_fail_for_deny_and_warn_for_warn() {
        let found = |name: &str, enforcement: &'static str| Reported {
            kind: "Job",
            namespace: "team-a".into(),
            name: name.into(),
            stage: "queued",
            reason: "missing-local-queue",
            enforcement,
            message: format!("Job team-a/{name} names LocalQueue 'gone'"),
            uid: String::new(),
        };
        let (denied, warned) = (found("a", "Deny"), found("b", "Warn"));
        let report = report("team-a", &[&denied, &warned]);
        assert_eq!(report["summary"], json!({"pass": 0, "fail": 1, "warn": 1, "error": 0, "skip": 0}));
        let results = report["results"].as_array().unwrap();
        assert_eq!((results[0]["result"].as_str(), results[1]["result"].as_str()), (Some("fail"), Some("warn")));
        assert_eq!(results[0]["rule"], "missing-local-queue");
        assert_eq!(
            results[0]["resources"][0],
            json!({"apiVersion": "batch/v1", "kind": "Job", "name": "a", "namespace": "team-a"})
        );
        assert_eq!(results[1]["message"], "Job team-a/b names LocalQueue 'gone'");
        assert_ne!(results_hash(&[&denied]), results_hash(&[&warned]));
    }
}
