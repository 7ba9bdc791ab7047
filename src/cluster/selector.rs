//! Kubernetes label selectors (`metav1.LabelSelector`), as Kueue evaluates them.
//!
//! Semantics follow apimachinery v0.36.2, the version Kueue v0.19.2 builds with:
//! `metav1.LabelSelectorAsSelector` (pkg/apis/meta/v1/helpers.go) turns the API
//! type into a `labels.Selector` whose requirements are ANDed
//! (`labels.internalSelector.Matches`, `labels.Requirement.Matches` in
//! pkg/labels/selector.go):
//!
//! - `{}` (no matchLabels, no matchExpressions) is `labels.Everything()`: it
//!   matches every label set;
//! - a nil selector is `labels.Nothing()`. That case is the caller's, so it
//!   has no value here: hold an `Option<LabelSelector>` (or a richer enum) and
//!   decide what absence means where the field lives;
//! - `matchLabels: {k: v}` is `k = v`: the label must exist with that value;
//! - `In`: the label must exist with one of the values; `NotIn`: the label is
//!   absent or has none of the values; `Exists` / `DoesNotExist`: presence.
//!
//! `LabelSelectorAsSelector` fails (`labels.NewRequirement`) on an unknown
//! operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist` with values,
//! a key that is not a qualified name, or a value that is not a valid label
//! value. [`LabelSelector::validate`] reports exactly those, and deserializing
//! accepts them so that the caller can say what Kueue does with the object:
//!
//! - ClusterQueue `spec.namespaceSelector`: Kueue's ClusterQueue webhook
//!   (pkg/webhooks/clusterqueue_webhook.go `validateClusterQueueSpec`, through
//!   `ValidateLabelSelector`, same rules) refuses such a ClusterQueue, so one
//!   exists only if that webhook was bypassed. If it exists, the queue manager's
//!   `ClusterQueue.Update` (pkg/cache/queue/cluster_queue.go) returns the error
//!   and `Manager.AddClusterQueue` never registers the ClusterQueue, so nothing
//!   in its LocalQueues is ever queued for admission: every workload waits.
//!   (The scheduler cache's `newClusterQueue` adds it before
//!   `clusterQueue.updateClusterQueue` fails, leaving its selector unset; with
//!   the UnadmittedWorkloadsObservability gate, off by default, the Workload
//!   says `Misconfigured: invalid namespace selector: ...`.) A valid
//!   ClusterQueue later updated to an invalid selector keeps its previous
//!   selector in both caches: the update stops at the selector.
//! - Configuration `managedJobsNamespaceSelector`: pkg/config/validation.go
//!   `validateManagedJobsNamespaceSelector` rejects it and cmd/kueue `main`
//!   exits ("Unable to validate the configuration"): Kueue does not run.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A `metav1.LabelSelector`. Deserializes from the JSON/YAML API form; a
/// `null` list or map reads as empty, a `null` string as `""` (as Go's decoder
/// leaves them). Unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(default, deserialize_with = "nullable_string_map", skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
pub struct LabelSelectorRequirement {
    #[serde(default, deserialize_with = "nullable_string")]
    pub key: String,
    #[serde(default)]
    pub operator: Operator,
    #[serde(default, deserialize_with = "nullable_strings", skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// `metav1.LabelSelectorOperator`. Anything else is kept verbatim in `Other`
/// (the empty string when the field is missing) so that it can be reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Other(String),
}

impl Default for Operator {
    fn default() -> Self {
        Operator::Other(String::new())
    }
}

impl Operator {
    pub fn as_str(&self) -> &str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Other(other) => other,
        }
    }

    fn from_name(name: String) -> Self {
        match name.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            _ => Operator::Other(name),
        }
    }
}

impl<'de> Deserialize<'de> for Operator {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Operator::from_name(Option::<String>::deserialize(deserializer)?.unwrap_or_default()))
    }
}

impl Serialize for Operator {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl LabelSelector {
    /// Deserializes a selector from its JSON form and checks it as
    /// `metav1.LabelSelectorAsSelector` would; the error says what is wrong.
    pub fn from_value(value: serde_json::Value) -> Result<LabelSelector, String> {
        let selector: LabelSelector = serde_json::from_value(value).map_err(|error| error.to_string())?;
        selector.validate()?;
        Ok(selector)
    }

    /// `{}`: matches everything (`labels.Everything()`).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// `Ok` when `metav1.LabelSelectorAsSelector` accepts the selector; else
    /// every problem `labels.NewRequirement` would raise, joined with "; ".
    /// (Go stops at the first one, and visits matchLabels in map order.)
    pub fn validate(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for (key, value) in &self.match_labels {
            if let Some(problem) = label_key_problem(key) {
                problems.push(format!("matchLabels: key {key:?}: {problem}"));
            }
            if let Some(problem) = label_value_problem(value) {
                problems.push(format!("matchLabels[{key:?}]: value {value:?}: {problem}"));
            }
        }
        for (index, requirement) in self.match_expressions.iter().enumerate() {
            let at = format!("matchExpressions[{index}]");
            match &requirement.operator {
                Operator::In | Operator::NotIn if requirement.values.is_empty() => {
                    problems.push(format!("{at}: operator {} needs at least one value", requirement.operator.as_str()));
                }
                Operator::Exists | Operator::DoesNotExist if !requirement.values.is_empty() => {
                    problems.push(format!("{at}: operator {} takes no values", requirement.operator.as_str()));
                }
                Operator::Other(other) => problems.push(format!(
                    "{at}: {other:?} is not a valid label selector operator (In, NotIn, Exists, DoesNotExist)"
                )),
                _ => {}
            }
            if let Some(problem) = label_key_problem(&requirement.key) {
                problems.push(format!("{at}: key {:?}: {problem}", requirement.key));
            }
            for value in &requirement.values {
                if let Some(problem) = label_value_problem(value) {
                    problems.push(format!("{at}: value {value:?}: {problem}"));
                }
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
    }

    pub fn is_valid(&self) -> bool {
        self.validate().is_ok()
    }

    /// Whether the labels satisfy every requirement (`labels.Selector.Matches`
    /// on the result of `metav1.LabelSelectorAsSelector`). Defined for valid
    /// selectors; on an invalid one, which Kueue never evaluates, an
    /// unknown-operator requirement matches nothing and the others are
    /// evaluated as written.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels.iter().all(|(key, value)| labels.get(key) == Some(value))
            && self.match_expressions.iter().all(|requirement| requirement.matches(labels))
    }
}

impl LabelSelector {
    /// The label keys it reads: labels alike in these are matched alike.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        let expressions = self.match_expressions.iter().map(|requirement| requirement.key.as_str());
        self.match_labels.keys().map(String::as_str).chain(expressions)
    }
}

impl LabelSelectorRequirement {
    /// `labels.Requirement.Matches` for the four selector operators.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match &self.operator {
            Operator::In => value.is_some_and(|value| self.values.contains(value)),
            Operator::NotIn => value.is_none_or(|value| !self.values.contains(value)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::Other(_) => false,
        }
    }
}

/// The selector as `labels.Selector.String()` (and so kubectl) writes it:
/// requirements sorted by key (matchLabels first on a tie), joined by ",";
/// `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, values sorted. `{}` writes
/// as the empty string, as `labels.Everything().String()` does.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<(&str, String)> = Vec::with_capacity(self.match_labels.len() + self.match_expressions.len());
        for (key, value) in &self.match_labels {
            parts.push((key, format!("{key}={value}")));
        }
        for requirement in &self.match_expressions {
            parts.push((&requirement.key, requirement.to_string()));
        }
        // `labels.internalSelector.Add` sorts by key; a stable sort keeps the
        // order LabelSelectorAsSelector appends in for equal keys.
        parts.sort_by(|a, b| a.0.cmp(b.0));
        for (index, (_, part)) in parts.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            f.write_str(part)?;
        }
        Ok(())
    }
}

/// `labels.Requirement.String()`.
impl fmt::Display for LabelSelectorRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key;
        let mut values: Vec<&str> = self.values.iter().map(String::as_str).collect();
        values.sort_unstable();
        let values = values.join(",");
        match &self.operator {
            Operator::In => write!(f, "{key} in ({values})"),
            Operator::NotIn => write!(f, "{key} notin ({values})"),
            Operator::Exists => write!(f, "{key}"),
            Operator::DoesNotExist => write!(f, "!{key}"),
            // Never built by Go (LabelSelectorAsSelector refuses it).
            Operator::Other(other) => write!(f, "{key} {other:?} ({values})"),
        }
    }
}

// --- validation: apimachinery pkg/api/validate/content (IsLabelKey, IsLabelValue, IsDNS1123Subdomain) ---

const LABEL_NAME_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;

/// `content.IsLabelKey` (= `IsQualifiedName`): `[prefix/]name`, the prefix a
/// DNS-1123 subdomain, the name at most 63 characters of `[A-Za-z0-9-_.]`
/// starting and ending alphanumeric.
pub fn label_key_problem(key: &str) -> Option<String> {
    let mut parts = key.split('/');
    let (prefix, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, _) => (None, name),
        (Some(prefix), Some(name), None) => (Some(prefix), name),
        _ => return Some("a label key is an optional DNS subdomain prefix and '/' then a name".to_string()),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Some("prefix part must not be empty".to_string());
        }
        if !is_dns1123_subdomain(prefix) {
            return Some(format!(
                "prefix part must be a lowercase RFC 1123 subdomain of at most {DNS1123_SUBDOMAIN_MAX} characters"
            ));
        }
    }
    if name.is_empty() {
        return Some("name part must not be empty".to_string());
    }
    if name.len() > LABEL_NAME_MAX {
        return Some(format!("name part must be no more than {LABEL_NAME_MAX} characters"));
    }
    if !is_label_name(name) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
             alphanumeric character"
                .to_string(),
        );
    }
    None
}

/// `content.IsLabelValue`: empty, or at most 63 characters of `[A-Za-z0-9-_.]`
/// starting and ending alphanumeric.
pub fn label_value_problem(value: &str) -> Option<String> {
    if value.len() > LABEL_NAME_MAX {
        return Some(format!("must be no more than {LABEL_NAME_MAX} characters"));
    }
    if !value.is_empty() && !is_label_name(value) {
        return Some(
            "a label value must be empty or consist of alphanumeric characters, '-', '_' or '.', and must start \
             and end with an alphanumeric character"
                .to_string(),
        );
    }
    None
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, length checked by the caller.
fn is_label_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `content.IsDNS1123Subdomain`: dot-separated `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 253 characters.
fn is_dns1123_subdomain(value: &str) -> bool {
    value.len() <= DNS1123_SUBDOMAIN_MAX
        && value.split('.').all(|label| {
            let bytes = label.as_bytes();
            let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
            match (bytes.first(), bytes.last()) {
                (Some(first), Some(last)) => {
                    alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
                }
                _ => false,
            }
        })
}

// --- null handling: Go's decoder leaves a null slice, map or string at its zero value ---

fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(deserializer: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn nullable_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    nullable(deserializer)
}

#[derive(Deserialize)]
struct NullAsEmpty(#[serde(deserialize_with = "nullable_string")] String);

fn nullable_strings<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let values: Option<Vec<NullAsEmpty>> = Option::deserialize(deserializer)?;
    Ok(values.unwrap_or_default().into_iter().map(|value| value.0).collect())
}

fn nullable_string_map<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error> {
    let map: Option<BTreeMap<String, NullAsEmpty>> = Option::deserialize(deserializer)?;
    Ok(map.unwrap_or_default().into_iter().map(|(key, value)| (key, value.0)).collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn selector(value: serde_json::Value) -> LabelSelector {
        LabelSelector::from_value(value).expect("valid selector")
    }

    #[test]
    fn empty_selector_matches_everything() {
        let empty = selector(json!({}));
        assert!(empty.is_empty());
        assert!(empty.matches(&labels(&[])));
        assert!(empty.matches(&labels(&[("a", "b")])));
        assert_eq!(empty.to_string(), "");
        // null lists and maps are empty too
        let nulls = selector(json!({"matchLabels": null, "matchExpressions": null}));
        assert!(nulls.is_empty());
    }

    #[test]
    fn match_labels_need_exact_values() {
        let s = selector(json!({"matchLabels": {"team": "a", "tier": "gpu"}}));
        assert!(s.matches(&labels(&[("team", "a"), ("tier", "gpu"), ("x", "y")])));
        assert!(!s.matches(&labels(&[("team", "a")])));
        assert!(!s.matches(&labels(&[("team", "b"), ("tier", "gpu")])));
        assert_eq!(s.to_string(), "team=a,tier=gpu");
    }

    #[test]
    fn operators_follow_requirement_matches() {
        let in_ = selector(json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "r"]}]}));
        assert!(in_.matches(&labels(&[("team", "r")])));
        assert!(!in_.matches(&labels(&[("team", "x")])));
        assert!(!in_.matches(&labels(&[])), "In needs the label");

        let not_in = selector(json!({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}));
        assert!(not_in.matches(&labels(&[])), "NotIn matches an absent label");
        assert!(not_in.matches(&labels(&[("team", "b")])));
        assert!(!not_in.matches(&labels(&[("team", "a")])));

        let exists = selector(json!({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}));
        assert!(exists.matches(&labels(&[("gpu", "")])));
        assert!(!exists.matches(&labels(&[])));

        let absent =
            selector(json!({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist", "values": null}]}));
        assert!(absent.matches(&labels(&[])));
        assert!(!absent.matches(&labels(&[("gpu", "1")])));
    }

    #[test]
    fn requirements_are_anded() {
        let s = selector(json!({
            "matchLabels": {"team": "a"},
            "matchExpressions": [
                {"key": "team", "operator": "In", "values": ["r", "a"]},
                {"key": "gpu", "operator": "DoesNotExist"},
            ],
        }));
        assert!(s.matches(&labels(&[("team", "a")])));
        assert!(!s.matches(&labels(&[("team", "a"), ("gpu", "1")])));
        assert!(!s.matches(&labels(&[("team", "r")])));
        assert_eq!(s.to_string(), "!gpu,team=a,team in (a,r)");
    }

    #[test]
    fn display_is_the_kubectl_form() {
        let s = selector(json!({"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kueue-system", "kube-system"]},
            {"key": "a", "operator": "Exists"},
            {"key": "b", "operator": "In", "values": ["x"]},
        ]}));
        assert_eq!(s.to_string(), "a,b in (x),kubernetes.io/metadata.name notin (kube-system,kueue-system)");
    }

    #[test]
    fn invalid_selectors_are_reported() {
        let cases = [
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}),
                "not a valid label selector operator",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "in", "values": ["x"]}]}),
                "not a valid label selector operator",
            ),
            (json!({"matchExpressions": [{"key": "a", "values": ["x"]}]}), "\"\" is not a valid"),
            (json!({"matchExpressions": [{"key": "a", "operator": "In"}]}), "needs at least one value"),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]}),
                "needs at least one value",
            ),
            (json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}), "takes no values"),
            (json!({"matchExpressions": [{"operator": "Exists"}]}), "name part must not be empty"),
            (json!({"matchExpressions": [{"key": "a b", "operator": "Exists"}]}), "name part must consist"),
            (json!({"matchLabels": {"Example.com/a": "x"}}), "prefix part"),
            (json!({"matchLabels": {"a/b/c": "x"}}), "optional DNS subdomain prefix"),
            (json!({"matchLabels": {"a": "not valid"}}), "label value must be empty"),
            (json!({"matchLabels": {"a": "x".repeat(64)}}), "no more than 63"),
            (json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["-x"]}]}), "label value"),
        ];
        for (value, expected) in cases {
            let parsed: LabelSelector = serde_json::from_value(value.clone()).expect("deserializes");
            let error = parsed.validate().expect_err(&value.to_string());
            assert!(error.contains(expected), "{value}: {error}");
            assert!(!parsed.is_valid());
            assert!(LabelSelector::from_value(value).is_err());
        }
    }

    #[test]
    fn valid_keys_and_values() {
        for key in ["a", "A1", "a.b_c-d", "example.com/a", "kubernetes.io/metadata.name", &"k".repeat(63)] {
            assert_eq!(label_key_problem(key), None, "{key}");
        }
        for value in ["", "a", "A_b.c-1", &"v".repeat(63)] {
            assert_eq!(label_value_problem(value), None, "{value}");
        }
        assert!(label_key_problem(&format!("{}/a", "p".repeat(254))).is_some());
        assert!(label_key_problem("/a").is_some());
        assert!(label_key_problem("a/").is_some());
        assert!(label_key_problem("-a").is_some());
        assert!(label_key_problem("a.b..c/x").is_some(), "empty DNS label in the prefix");
        // an empty label value is valid, in matchLabels and in values
        let s = selector(
            json!({"matchLabels": {"a": ""}, "matchExpressions": [{"key": "b", "operator": "In", "values": [""]}]}),
        );
        assert!(s.matches(&labels(&[("a", ""), ("b", "")])));
        assert!(!s.matches(&labels(&[("b", "")])));
    }

    #[test]
    fn wrong_types_do_not_deserialize() {
        assert!(LabelSelector::from_value(json!({"matchLabels": {"a": 1}})).is_err());
        assert!(LabelSelector::from_value(json!({"matchExpressions": {"key": "a"}})).is_err());
        assert!(LabelSelector::from_value(json!("team=a")).is_err());
        assert!(LabelSelector::from_value(json!({"matchExpressions": [{"key": "a", "operator": 3}]})).is_err());
    }

    #[test]
    fn deserializes_from_yaml_and_ignores_unknown_fields() {
        let s: LabelSelector = serde_yaml::from_str(
            "matchLabels:\n  team: a\nmatchExpressions:\n- key: gpu\n  operator: DoesNotExist\nextra: 1\n",
        )
        .unwrap();
        assert!(s.is_valid());
        assert_eq!(s.to_string(), "!gpu,team=a");
        let round: LabelSelector = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(round, s);
    }
}
