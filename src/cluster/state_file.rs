//! The cluster state file: multi-document YAML (or JSON) of cluster objects, as
//! `kubectl get -o yaml` prints them (`kind: List` documents are unpacked).

use std::path::Path;

use serde_json::Value;

use super::ClusterState;
use super::objects::{self, ClusterObject};
use crate::error::Error;
use crate::vocabulary::kueue::KueueInstall;
use crate::vocabulary::yaml::{for_each_document, read_at_most};

/// The largest state file read: a dump of a large cluster's Namespaces and
/// Kueue objects is tens of MiB.
pub const MOST_STATE_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Reads and decodes a state file of a cluster that `kueue` runs.
pub fn load(path: &Path, kueue: &KueueInstall) -> Result<ClusterState, Error> {
    let bytes = read_at_most("cluster state file", path, MOST_STATE_FILE_BYTES)?;
    parse_for(&bytes, kueue).map_err(|message| Error::file("cluster state file", path, message))
}

/// [`parse_for`] upstream Kueue v0.19.2 in kueue-system.
pub fn parse(bytes: &[u8]) -> Result<ClusterState, String> {
    parse_for(bytes, &KueueInstall::default())
}

/// Decodes a state file's contents; the error says which document is wrong and why.
/// Each document is decoded and pruned as it is read, so a large file never
/// sits in memory as a whole tree of values.
pub fn parse_for(bytes: &[u8], kueue: &KueueInstall) -> Result<ClusterState, String> {
    let mut state = ClusterState::for_kueue(kueue.clone());
    parse_into(&mut state, bytes, kueue, None)?;
    Ok(state)
}

/// Reads files of cluster state and the workloads in them (batch/v1 Jobs and
/// jobset.x-k8s.io JobSets, as `kubectl get jobs,jobsets -A -o yaml` prints
/// them), for the audit: one state, and the workloads as they were stored.
pub fn load_with_workloads(paths: &[&Path], kueue: &KueueInstall) -> Result<(ClusterState, Vec<Value>), Error> {
    let mut state = ClusterState::for_kueue(kueue.clone());
    let mut workloads = Vec::new();
    for path in paths {
        let bytes = read_at_most("cluster state file", path, MOST_STATE_FILE_BYTES)?;
        parse_into(&mut state, &bytes, kueue, Some(&mut workloads))
            .map_err(|message| Error::file("cluster state file", path, message))?;
    }
    Ok((state, workloads))
}

/// Decodes the state in `bytes` into `state`; with `workloads`, Jobs and
/// JobSets are kept there (a JobSet still counts as an owner too) instead of refused.
fn parse_into(
    state: &mut ClusterState,
    bytes: &[u8],
    kueue: &KueueInstall,
    mut workloads: Option<&mut Vec<Value>>,
) -> Result<(), String> {
    for_each_document(bytes, |position, document| {
        for object in unpack_lists(document) {
            let kept = match workloads.as_deref_mut() {
                Some(kept) if is_workload(&object) => kept,
                _ => match decode_document(object, kueue) {
                    Ok(Some(decoded)) => {
                        state.apply(decoded);
                        continue;
                    }
                    Ok(None) => continue,
                    Err(message) => return Err(format!("document {position}: {message}")),
                },
            };
            if let Ok(Some(owner)) = decode_document(object.clone(), kueue) {
                state.apply(owner);
            }
            kept.push(object);
        }
        Ok(())
    })
}

fn is_workload(object: &Value) -> bool {
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    crate::workload::WorkloadKind::from_group_kind(group, kind).is_some()
}

fn unpack_lists(document: Value) -> Vec<Value> {
    let is_list =
        document.get("kind").and_then(Value::as_str).is_some_and(|kind| kind == "List" || kind.ends_with("List"));
    match document {
        Value::Object(mut map) if is_list => match map.remove("items") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        other => vec![other],
    }
}

fn decode_document(object: Value, kueue: &KueueInstall) -> Result<Option<ClusterObject>, String> {
    let Value::Object(map) = &object else {
        return Err("not a Kubernetes object (expected a mapping with apiVersion and kind)".into());
    };
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string();
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    if api_version.is_empty() || kind.is_empty() {
        return Err("object without apiVersion or kind".into());
    }
    if (api_version.as_str(), kind.as_str()) == ("v1", "ConfigMap") {
        return objects::decode_kueue_config_map(object, kueue).map(Some).map_err(|e| e.to_string());
    }
    match objects::decode(&api_version, &kind, object).map_err(|e| e.to_string())? {
        Some(decoded) => Ok(Some(decoded)),
        None if matches!(kind.as_str(), "Job" | "JobSet") => {
            Err(format!("{kind} is a workload, not cluster state: pass it as the REQUEST argument"))
        }
        None => Err(format!(
            "unsupported kind {api_version} {kind}: the state file holds Namespaces, Kueue objects, PriorityClasses, \
             CustomResourceDefinitions and Kueue's ConfigMap"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterView;

    #[test]
    fn reads_documents_lists_and_both_kueue_versions() {
        let state = parse(
            br#"
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  annotations:
    kueue.x-k8s.io/default-queue-name: eval-queue
---
apiVersion: v1
kind: List
items:
- apiVersion: kueue.x-k8s.io/v1beta1
  kind: LocalQueue
  metadata: {name: eval-queue, namespace: team-a}
  spec: {clusterQueue: team-a-cq}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: ClusterQueue
  metadata: {name: team-a-cq}
  spec: {cohortName: research}
---
"#,
        )
        .unwrap();
        assert!(state.kueue_installed());
        assert_eq!(state.namespace("team-a").unwrap().default_queue.as_deref(), Some("eval-queue"));
        assert_eq!(state.local_queue("team-a", "eval-queue").unwrap().cluster_queue, "team-a-cq");
        assert_eq!(state.cluster_queue("team-a-cq").unwrap().cohort.as_deref(), Some("research"));
    }

    #[test]
    fn kueue_configuration_is_read_where_the_config_says_kueue_runs() {
        let config_map = |namespace: &str| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: kueue-manager-config, namespace: {namespace}}}\n\
                 data:\n  controller_manager_config.yaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta1\n    \
                 kind: Configuration\n    manageJobsWithoutQueueName: true\n"
            )
        };
        let red_hat = KueueInstall { namespace: "openshift-kueue-operator".into(), ..KueueInstall::default() };
        let state = parse_for(config_map("openshift-kueue-operator").as_bytes(), &red_hat).unwrap();
        let config = state.kueue_config();
        assert!(config.manage_jobs_without_queue_name, "the file was read");
        assert_eq!(config.namespace, "openshift-kueue-operator");
        assert_eq!(
            config.managed_jobs_namespace_selector.to_string(),
            "kubernetes.io/metadata.name notin (kube-system,openshift-kueue-operator)"
        );
        let elsewhere = parse_for(config_map("kueue-system").as_bytes(), &red_hat).unwrap_err();
        assert!(
            elsewhere.contains(
                "ConfigMap kueue-system/kueue-manager-config: the only ConfigMap read is Kueue's, \
                 openshift-kueue-operator/kueue-manager-config"
            ),
            "{elsewhere}"
        );
        // With no ConfigMap, the release's defaults in Kueue's own namespace.
        let empty = parse_for(b"", &red_hat).unwrap();
        assert!(!empty.kueue_config().manages_namespace(&std::collections::BTreeMap::from([(
            "kubernetes.io/metadata.name".to_string(),
            "openshift-kueue-operator".to_string()
        )])));
    }

    #[test]
    fn kueue_counts_as_installed_from_its_crd_alone() {
        let state = parse(b"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: localqueues.kueue.x-k8s.io}\n").unwrap();
        assert!(state.kueue_installed());
        let state = parse(b"apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n").unwrap();
        assert!(!state.kueue_installed());
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let cases: [(&[u8], &str); 5] = [
            (b"apiVersion: v1\nkind: Namespace\nmetadata: {name: [", "not valid YAML"),
            (b"\xff\xfe\x00garbage", "not UTF-8"),
            (b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n", "unsupported kind"),
            (b"apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n", "pass it as the REQUEST"),
            (b"- just\n- a list\n", "not a Kubernetes object"),
        ];
        for (input, expected) in cases {
            let error = parse(input).unwrap_err();
            assert!(error.contains(expected), "{error:?} should mention {expected:?}");
        }
    }
}
