//! The policy configuration file (YAML). Every field has a default, so an empty
//! file, or no file, gives the behaviour the README documents.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::Error;
use crate::workload::{EVALUATION_LABEL, Workload, WorkloadKind};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Config {
    /// Which Jobs and JobSets are evaluations that the policy shapes.
    pub selection: Selection,
    /// Users allowed to flip `spec.suspend` from true to false: Kueue's controller.
    pub kueue_controller_usernames: Vec<String>,
    /// Owner kinds that Kueue admits as a unit: a Job controlled by one is left alone.
    pub kueue_managed_owners: Vec<OwnerKind>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Selection {
    /// Apply the policy to every Job and JobSet, not only the selected ones.
    pub all_workloads: bool,
    pub selectors: Vec<Selector>,
}

/// A workload matches when its kind is listed and it carries all `matchLabels`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Selector {
    pub name: String,
    pub kinds: Vec<SelectorKind>,
    pub match_labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum SelectorKind {
    Job,
    JobSet,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerKind {
    pub api_group: String,
    pub kind: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            selection: Selection::default(),
            kueue_controller_usernames: vec!["system:serviceaccount:kueue-system:kueue-controller-manager".into()],
            kueue_managed_owners: default_managed_owners(),
        }
    }
}

impl Default for Selection {
    fn default() -> Self {
        let labels = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Self {
            all_workloads: false,
            selectors: vec![
                Selector {
                    name: "evalhub".into(),
                    kinds: vec![SelectorKind::Job],
                    match_labels: labels(&[("app", "evalhub"), ("component", "evaluation-job")]),
                },
                Selector {
                    name: "aiperf".into(),
                    kinds: vec![SelectorKind::JobSet],
                    match_labels: labels(&[("app", "aiperf")]),
                },
                Selector {
                    name: "opt-in".into(),
                    kinds: vec![SelectorKind::Job, SelectorKind::JobSet],
                    match_labels: labels(&[(EVALUATION_LABEL, "true")]),
                },
            ],
        }
    }
}

/// The kinds Kueue's integrations admit as a whole (Kueue skips Jobs they own).
fn default_managed_owners() -> Vec<OwnerKind> {
    [
        ("jobset.x-k8s.io", "JobSet"),
        ("kubeflow.org", "MPIJob"),
        ("kubeflow.org", "PyTorchJob"),
        ("kubeflow.org", "TFJob"),
        ("kubeflow.org", "XGBoostJob"),
        ("kubeflow.org", "PaddleJob"),
        ("kubeflow.org", "JAXJob"),
        ("trainer.kubeflow.org", "TrainJob"),
        ("ray.io", "RayJob"),
        ("ray.io", "RayCluster"),
        ("workload.codeflare.dev", "AppWrapper"),
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
    ]
    .into_iter()
    .map(|(api_group, kind)| OwnerKind { api_group: api_group.into(), kind: kind.into() })
    .collect()
}

impl Config {
    /// Reads a config file; `None` gives the defaults.
    pub fn load(path: Option<&Path>) -> Result<Self, Error> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(path).map_err(|e| Error::file("config file", path, e))?;
        Self::parse(&text).map_err(|message| Error::file("config file", path, message))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_yaml::from_str(text).map_err(|e| e.to_string())
    }

    /// The name of the selector that makes this workload an evaluation, if any.
    pub fn evaluation_selector(&self, kind: WorkloadKind, workload: &Workload) -> Option<&str> {
        if self.selection.all_workloads {
            return Some("all-workloads");
        }
        let wanted = match kind {
            WorkloadKind::Job => SelectorKind::Job,
            WorkloadKind::JobSet => SelectorKind::JobSet,
        };
        self.selection
            .selectors
            .iter()
            .find(|selector| {
                selector.kinds.contains(&wanted)
                    && selector.match_labels.iter().all(|(key, value)| workload.label(key) == Some(value.as_str()))
            })
            .map(|selector| selector.name.as_str())
    }

    /// Whether a controller owner makes Kueue treat the owner, not this object, as the workload.
    pub fn owned_by_managed_kind(&self, workload: &Workload) -> bool {
        workload.controller_owner().is_some_and(|owner| {
            self.kueue_managed_owners
                .iter()
                .any(|managed| managed.api_group == owner.api_group() && managed.kind == owner.kind)
        })
    }

    pub fn is_kueue_controller(&self, username: &str) -> bool {
        self.kueue_controller_usernames.iter().any(|allowed| allowed == username)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults_and_typos_are_refused() {
        let config = Config::parse("").unwrap();
        assert_eq!(config.selection.selectors.len(), 3);
        assert!(Config::parse("selection: {allWorkload: true}").unwrap_err().contains("unknown field"));
        let all = Config::parse("selection: {allWorkloads: true}").unwrap();
        assert!(all.selection.all_workloads);
        assert_eq!(all.selection.selectors.len(), 3, "selectors keep their defaults");
    }
}
