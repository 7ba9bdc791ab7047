//! Where a pod set's pods may run, as Kueue reads it from the pod template to
//! match flavors (v0.19.2 `flavorassigner.go` `checkFlavorForPodSets`): the
//! `nodeSelector`, the required node affinity's `matchExpressions` (Kueue
//! drops `matchFields`) and the tolerations.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::PodSpec;
use crate::vocabulary::scheduling::{NodeSelectorRequirement, Toleration};

/// A pod set's placement. The default places pods anywhere untainted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    pub node_selector: BTreeMap<String, String>,
    /// `requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`, each
    /// term's `matchExpressions` (ORed terms of ANDed requirements); `None`
    /// without a required node affinity.
    pub required_terms: Option<Vec<Vec<NodeSelectorRequirement>>>,
    pub tolerations: Vec<Toleration>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Affinity {
    #[serde(default)]
    node_affinity: Option<NodeAffinity>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct NodeAffinity {
    #[serde(default)]
    required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct NodeSelector {
    #[serde(default)]
    node_selector_terms: Option<Vec<NodeSelectorTerm>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct NodeSelectorTerm {
    #[serde(default)]
    match_expressions: Option<Vec<NodeSelectorRequirement>>,
}

impl Placement {
    /// Reads `spec`'s placement; a wrongly typed field is an error naming it
    /// (the API server refuses such a pod template).
    pub(super) fn read(spec: Option<&PodSpec>, path: &dyn fmt::Display) -> Result<Self, String> {
        let Some(spec) = spec else { return Ok(Self::default()) };
        let node_selector: Option<BTreeMap<String, String>> = typed(&spec.node_selector, path, "nodeSelector")?;
        let affinity: Option<Affinity> = typed(&spec.affinity, path, "affinity")?;
        let tolerations: Option<Vec<Toleration>> = typed(&spec.tolerations, path, "tolerations")?;
        let required_terms = affinity
            .and_then(|affinity| affinity.node_affinity)
            .and_then(|node| node.required_during_scheduling_ignored_during_execution)
            .map(|required| {
                required
                    .node_selector_terms
                    .unwrap_or_default()
                    .into_iter()
                    .map(|term| term.match_expressions.unwrap_or_default())
                    .collect()
            });
        Ok(Self {
            node_selector: node_selector.unwrap_or_default(),
            required_terms,
            tolerations: tolerations.unwrap_or_default(),
        })
    }
}

fn typed<T: DeserializeOwned>(raw: &Option<Value>, path: &dyn fmt::Display, field: &str) -> Result<Option<T>, String> {
    match raw {
        None | Some(Value::Null) => Ok(None),
        Some(value) => T::deserialize(value).map(Some).map_err(|e| format!("{path}.{field}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(spec: Value) -> Result<Placement, String> {
        let spec: PodSpec = serde_json::from_value(spec).unwrap();
        Placement::read(Some(&spec), &"spec.template.spec")
    }

    #[test]
    fn reads_selector_affinity_and_tolerations() {
        let placement = read(json!({
            "nodeSelector": {"nvidia.com/gpu.product": "H100"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
            ]}}},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        }))
        .unwrap();
        assert_eq!(placement.node_selector["nvidia.com/gpu.product"], "H100");
        let terms = placement.required_terms.as_ref().unwrap();
        assert_eq!((terms.len(), terms[0][0].key.as_str(), terms[1].len()), (2, "zone", 0), "matchFields dropped");
        assert_eq!(placement.tolerations[0].operator.as_deref(), Some("Exists"));
        let bare = read(json!({"tolerations": []})).unwrap();
        assert!(bare.node_selector.is_empty() && bare.required_terms.is_none() && bare.tolerations.is_empty());
    }

    #[test]
    fn a_wrongly_typed_field_is_named() {
        let error = read(json!({"nodeSelector": ["gpu"]})).unwrap_err();
        assert!(error.starts_with("spec.template.spec.nodeSelector: invalid type"), "{error}");
        let error = read(json!({"tolerations": {"key": "x"}})).unwrap_err();
        assert!(error.starts_with("spec.template.spec.tolerations:"), "{error}");
    }
}
