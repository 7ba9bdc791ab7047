//! Kubernetes' placement words, as Kueue reads them when it matches a pod set
//! against a ResourceFlavor: taints and tolerations
//! (k8s.io/api v0.36.2 `core/v1/toleration.go` `ToleratesTaint`), node
//! selector requirements (`component-helpers` `nodeaffinity`, through
//! apimachinery `labels.Requirement.Matches`).

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

/// A node taint, as a ResourceFlavor's `nodeTaints` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct Taint {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub effect: String,
}

impl Taint {
    /// Only these keep pods off a node; Kueue ignores `PreferNoSchedule`
    /// (`checkFlavorForPodSets`' filter).
    pub fn repels(&self) -> bool {
        self.effect == "NoSchedule" || self.effect == "NoExecute"
    }
}

/// `key=value:effect`, as Kubernetes prints a taint (`Taint.ToString`).
impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value.as_deref() {
            Some(value) if !value.is_empty() => write!(f, "{}={}:{}", self.key, value, self.effect),
            _ => write!(f, "{}:{}", self.key, self.effect),
        }
    }
}

/// A pod's (or a ResourceFlavor's) toleration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct Toleration {
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub operator: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub effect: Option<String>,
}

impl Toleration {
    /// `ToleratesTaint` with comparison operators on (Kueue passes `true`): an
    /// empty effect or key matches any; `Exists` any value; `Equal` (or no
    /// operator) the same value; `Gt`/`Lt` compare decimal integers.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        let effect = self.effect.as_deref().unwrap_or("");
        if !effect.is_empty() && effect != taint.effect {
            return false;
        }
        let key = self.key.as_deref().unwrap_or("");
        if !key.is_empty() && key != taint.key {
            return false;
        }
        let value = self.value.as_deref().unwrap_or("");
        let taint_value = taint.value.as_deref().unwrap_or("");
        match self.operator.as_deref().unwrap_or("") {
            "" | "Equal" => value == taint_value,
            "Exists" => true,
            operator @ ("Gt" | "Lt") => match (decimal_integer(value), decimal_integer(taint_value)) {
                (Some(toleration), Some(taint)) if operator == "Gt" => taint > toleration,
                (Some(toleration), Some(taint)) => taint < toleration,
                _ => false,
            },
            _ => false,
        }
    }
}

/// apimachinery `content.IsDecimalInteger`, then `ParseInt`: an optional `-`,
/// no leading zero (but `0` itself), digits only.
fn decimal_integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let well_formed = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (!digits.starts_with('0') || (digits == "0" && digits.len() == text.len()));
    well_formed.then(|| text.parse().ok()).flatten()
}

/// The first taint that repels pods and none of `tolerations` tolerates
/// (`FindMatchingUntoleratedTaint`).
pub fn untolerated<'t>(taints: &'t [Taint], tolerations: &[&Toleration]) -> Option<&'t Taint> {
    taints.iter().filter(|taint| taint.repels()).find(|taint| !tolerations.iter().any(|t| t.tolerates(taint)))
}

/// One `matchExpressions` item of a node selector term.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct NodeSelectorRequirement {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub operator: String,
    #[serde(default)]
    pub values: Option<Vec<String>>,
}

impl NodeSelectorRequirement {
    /// Whether node labels `labels` satisfy it; `None` when the requirement is
    /// invalid (`labels.NewRequirement` refuses it: the API server does too,
    /// and Kueue's match then fails).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> Option<bool> {
        let values = self.values.as_deref().unwrap_or_default();
        let found = labels.get(&self.key);
        let numeric = |values: &[String]| match values {
            [only] => only.parse::<i64>().ok(),
            _ => None,
        };
        Some(match self.operator.as_str() {
            "In" if !values.is_empty() => found.is_some_and(|value| values.contains(value)),
            "NotIn" if !values.is_empty() => found.is_none_or(|value| !values.contains(value)),
            "Exists" if values.is_empty() => found.is_some(),
            "DoesNotExist" if values.is_empty() => found.is_none(),
            "Gt" => {
                let bound = numeric(values)?;
                found.and_then(|value| value.parse::<i64>().ok()).is_some_and(|value| value > bound)
            }
            "Lt" => {
                let bound = numeric(values)?;
                found.and_then(|value| value.parse::<i64>().ok()).is_some_and(|value| value < bound)
            }
            _ => return None,
        })
    }
}

/// `key op values`, for messages.
impl fmt::Display for NodeSelectorRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = self.values.as_deref().unwrap_or_default();
        match self.operator.as_str() {
            "Exists" | "DoesNotExist" => write!(f, "{} {}", self.key, self.operator),
            _ => write!(f, "{} {} ({})", self.key, self.operator, values.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
        Taint { key: key.into(), value: value.map(Into::into), effect: effect.into() }
    }

    fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
        let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Toleration { key: some(key), operator: some(operator), value: some(value), effect: some(effect) }
    }

    #[test]
    fn tolerations_match_as_kubernetes_matches_them() {
        let gpu = taint("nvidia.com/gpu", Some("present"), "NoSchedule");
        assert!(toleration("nvidia.com/gpu", "Exists", "", "").tolerates(&gpu));
        assert!(toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule").tolerates(&gpu));
        assert!(toleration("nvidia.com/gpu", "", "present", "").tolerates(&gpu), "no operator is Equal");
        assert!(toleration("", "Exists", "", "").tolerates(&gpu), "an empty key with Exists tolerates all");
        assert!(!toleration("nvidia.com/gpu", "Equal", "absent", "").tolerates(&gpu));
        assert!(!toleration("nvidia.com/gpu", "Exists", "", "NoExecute").tolerates(&gpu), "another effect");
        assert!(!toleration("other", "Exists", "", "").tolerates(&gpu));
        assert!(!toleration("nvidia.com/gpu", "Sometimes", "", "").tolerates(&gpu), "an unknown operator");
        let bare = taint("dedicated", None, "NoExecute");
        assert!(toleration("dedicated", "Equal", "", "").tolerates(&bare), "both values empty");
    }

    #[test]
    fn comparison_tolerations_need_decimal_integers() {
        let tier = taint("tier", Some("5"), "NoSchedule");
        assert!(toleration("tier", "Gt", "4", "").tolerates(&tier));
        assert!(!toleration("tier", "Gt", "5", "").tolerates(&tier));
        assert!(toleration("tier", "Lt", "6", "").tolerates(&tier));
        assert!(!toleration("tier", "Lt", "5", "").tolerates(&tier), "strictly less");
        assert!(!toleration("tier", "Lt", "06", "").tolerates(&tier), "a leading zero is not decimal");
        assert!(!toleration("tier", "Gt", "-0", "").tolerates(&tier));
        assert!(toleration("tier", "Gt", "-3", "").tolerates(&tier));
        assert!(!toleration("tier", "Gt", "x", "").tolerates(&tier));
    }

    #[test]
    fn only_repelling_taints_count() {
        let taints = [taint("soft", None, "PreferNoSchedule"), taint("hard", Some("1"), "NoSchedule")];
        let soft_only = toleration("soft", "Exists", "", "");
        assert_eq!(untolerated(&taints, &[&soft_only]), Some(&taints[1]));
        let hard = toleration("hard", "Exists", "", "");
        assert_eq!(untolerated(&taints, &[&hard]), None);
        assert_eq!(taints[1].to_string(), "hard=1:NoSchedule");
        assert_eq!(taints[0].to_string(), "soft:PreferNoSchedule");
        assert_eq!(taint("k", Some(""), "NoSchedule").to_string(), "k:NoSchedule", "an empty value is not printed");
    }

    #[test]
    fn requirements_match_node_labels() {
        let labels: BTreeMap<String, String> =
            [("gpu", "H100"), ("count", "8")].map(|(k, v)| (k.to_string(), v.to_string())).into();
        let requirement = |key: &str, operator: &str, values: &[&str]| NodeSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        };
        assert_eq!(requirement("gpu", "In", &["A100", "H100"]).matches(&labels), Some(true));
        assert_eq!(requirement("gpu", "NotIn", &["H100"]).matches(&labels), Some(false));
        assert_eq!(requirement("zone", "NotIn", &["a"]).matches(&labels), Some(true), "absent is not in");
        assert_eq!(requirement("zone", "Exists", &[]).matches(&labels), Some(false));
        assert_eq!(requirement("zone", "DoesNotExist", &[]).matches(&labels), Some(true));
        assert_eq!(requirement("count", "Gt", &["4"]).matches(&labels), Some(true));
        assert_eq!(requirement("count", "Lt", &["4"]).matches(&labels), Some(false));
        // Strict bounds: 8 is neither greater nor less than 8.
        assert_eq!(requirement("count", "Gt", &["8"]).matches(&labels), Some(false));
        assert_eq!(requirement("count", "Lt", &["8"]).matches(&labels), Some(false));
        assert_eq!(requirement("count", "Lt", &["9"]).matches(&labels), Some(true));
        assert_eq!(requirement("gpu", "Gt", &["4"]).matches(&labels), Some(false), "not a number");
        assert_eq!(requirement("gpu", "In", &[]).matches(&labels), None, "In needs values");
        assert_eq!(requirement("gpu", "NotIn", &[]).matches(&labels), None, "NotIn needs values");
        assert_eq!(requirement("gpu", "Exists", &["x"]).matches(&labels), None, "Exists takes none");
        assert_eq!(requirement("zone", "DoesNotExist", &["x"]).matches(&labels), None, "DoesNotExist takes none");
        assert_eq!(requirement("count", "Gt", &["1", "2"]).matches(&labels), None);
        assert_eq!(requirement("gpu", "Near", &["x"]).matches(&labels), None);
    }
}
