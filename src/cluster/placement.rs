//! Whether Kueue may put a pod set on a ResourceFlavor, before any quota is
//! counted (v0.19.2 `flavorassigner.go` `checkFlavorForPodSets`): no
//! NoSchedule or NoExecute taint of the flavor untolerated by the pod template
//! and the flavor's own tolerations together, and the node selector and
//! required node affinity matching the flavor's node labels, read only where
//! their keys are among that flavor's label keys (`flavorSelector`; before
//! v0.17.6, and in v0.18.0 and v0.18.1, among the label keys of every flavor
//! of the resource group: [`LabelKeys`]). Kueue
//! decides on the template before any pod exists, so nothing that adds
//! tolerations to pods later (ExtendedResourceToleration) counts.

use std::collections::BTreeSet;
use std::fmt;

use super::objects::{ResourceFlavor, Taint};
use crate::workload::Placement;

/// Why a flavor cannot take a pod set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Misfit<'f> {
    UntoleratedTaint(&'f Taint),
    /// The node selector asks `key=wanted`; the flavor's nodes have `key=has`,
    /// or no such label (`None`, read only when another flavor of the group has it).
    NodeSelector {
        key: String,
        wanted: String,
        has: Option<&'f str>,
    },
    /// No term of the required node affinity matches the flavor's node labels.
    NodeAffinity,
}

/// Which label keys of the pod template's node selector and required node
/// affinity Kueue reads against a flavor: the flavor's own (from v0.17.6 and
/// v0.18.2, Kueue #12449), or those of every flavor of its resource group
/// (`ResourceGroup.LabelKeys` before), where a key the flavor lacks then
/// counts as a label it does not have.
#[derive(Debug, Clone, Copy)]
pub enum LabelKeys<'a> {
    OfTheFlavor,
    OfTheGroup(&'a BTreeSet<&'a str>),
}

/// The first reason `flavor` cannot take a pod set placed by `placement`, in
/// Kueue's order (taints, then affinity), or `None` when it can.
pub fn misfit<'f>(flavor: &'f ResourceFlavor, placement: &Placement, keys: LabelKeys<'_>) -> Option<Misfit<'f>> {
    let tolerations: Vec<_> = placement.tolerations.iter().chain(&flavor.tolerations).collect();
    if let Some(taint) = crate::vocabulary::scheduling::untolerated(&flavor.node_taints, &tolerations) {
        return Some(Misfit::UntoleratedTaint(taint));
    }
    let labels = &flavor.node_labels;
    let read = |key: &str| match keys {
        LabelKeys::OfTheFlavor => labels.contains_key(key),
        LabelKeys::OfTheGroup(keys) => keys.contains(key),
    };
    for (key, wanted) in &placement.node_selector {
        let has = labels.get(key).map(String::as_str);
        if read(key) && has != Some(wanted.as_str()) {
            return Some(Misfit::NodeSelector { key: key.clone(), wanted: wanted.clone(), has });
        }
    }
    let Some(terms) = &placement.required_terms else { return None };
    // Each term keeps only requirements on this flavor's keys; a term left
    // empty matches every flavor, and so does the whole affinity.
    let kept: Vec<Vec<_>> = terms.iter().map(|term| term.iter().filter(|r| read(&r.key)).collect()).collect();
    if kept.is_empty() || kept.iter().any(Vec::is_empty) {
        return None;
    }
    // A term with an invalid requirement matches nothing (the API server
    // refuses it anyway).
    let matched = kept.iter().any(|term| term.iter().all(|requirement| requirement.matches(labels) == Some(true)));
    (!matched).then_some(Misfit::NodeAffinity)
}

/// A flavor's misfit, in words for a denial: `flavor h100 has taint
/// nvidia.com/gpu=present:NoSchedule, which the pod template does not tolerate`.
pub struct Described<'a> {
    pub name: &'a str,
    pub flavor: &'a ResourceFlavor,
    pub misfit: &'a Misfit<'a>,
}

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name;
        match self.misfit {
            Misfit::UntoleratedTaint(taint) => {
                write!(f, "flavor {name} has taint {taint}, which the pod template does not tolerate")
            }
            Misfit::NodeSelector { key, wanted, has: Some(has) } => {
                let wanted = crate::vocabulary::text::echo(wanted);
                write!(
                    f,
                    "flavor {name} has {key}={has}, where the pod template's nodeSelector asks for {key}={wanted}"
                )
            }
            Misfit::NodeSelector { key, wanted, has: None } => {
                let wanted = crate::vocabulary::text::echo(wanted);
                write!(
                    f,
                    "flavor {name} has no label {key}, where the pod template's nodeSelector asks for {key}={wanted} \
                     (this Kueue reads every label key of the flavor's resource group)"
                )
            }
            Misfit::NodeAffinity => {
                let labels: Vec<String> = self.flavor.node_labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(
                    f,
                    "flavor {name} has node labels {}, which the pod template's required node affinity excludes",
                    labels.join(", ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::scheduling::{NodeSelectorRequirement, Toleration};

    const OWN: LabelKeys<'static> = LabelKeys::OfTheFlavor;

    fn flavor(labels: &[(&str, &str)], taints: &[(&str, &str, &str)]) -> ResourceFlavor {
        ResourceFlavor {
            node_labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            node_taints: taints
                .iter()
                .map(|(k, v, e)| Taint { key: k.to_string(), value: Some(v.to_string()), effect: e.to_string() })
                .collect(),
            tolerations: Vec::new(),
        }
    }

    fn selector(pairs: &[(&str, &str)]) -> Placement {
        Placement {
            node_selector: pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Placement::default()
        }
    }

    fn requirement(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    const PRODUCT: &str = "nvidia.com/gpu.product";

    #[test]
    fn a_node_selector_counts_only_on_the_flavors_own_keys() {
        let h100 = flavor(&[(PRODUCT, "H100")], &[]);
        assert_eq!(misfit(&h100, &selector(&[(PRODUCT, "H100")]), OWN), None);
        assert_eq!(
            misfit(&h100, &selector(&[(PRODUCT, "L40S")]), OWN),
            Some(Misfit::NodeSelector { key: PRODUCT.into(), wanted: "L40S".into(), has: Some("H100") })
        );
        assert_eq!(misfit(&h100, &selector(&[("zone", "a")]), OWN), None, "a key the flavor lacks is not read");
        assert_eq!(misfit(&flavor(&[], &[]), &selector(&[(PRODUCT, "L40S")]), OWN), None, "no labels: anything goes");
    }

    #[test]
    fn before_kueue_12449_the_groups_keys_are_read_and_a_missing_label_does_not_match() {
        // Saved case s1-769 under Kueue v0.16.6: default-flavor has no product
        // label, but a100 in its group has one, so a product selector excludes it.
        let plain = flavor(&[("pool", "cpu")], &[]);
        let keys = BTreeSet::from([PRODUCT, "pool"]);
        let group = LabelKeys::OfTheGroup(&keys);
        let h100 = selector(&[(PRODUCT, "H100")]);
        assert_eq!(misfit(&plain, &h100, OWN), None);
        let missing = misfit(&plain, &h100, group).unwrap();
        assert_eq!(missing, Misfit::NodeSelector { key: PRODUCT.into(), wanted: "H100".into(), has: None });
        assert_eq!(
            Described { name: "default-flavor", flavor: &plain, misfit: &missing }.to_string(),
            "flavor default-flavor has no label nvidia.com/gpu.product, where the pod template's nodeSelector asks \
             for nvidia.com/gpu.product=\"H100\" (this Kueue reads every label key of the flavor's resource group)"
        );
        assert_eq!(misfit(&plain, &selector(&[("zone", "a")]), group), None, "a key no flavor of the group has");
        let not_h100 = Placement {
            required_terms: Some(vec![vec![requirement(PRODUCT, "NotIn", &["H100"])]]),
            ..Placement::default()
        };
        assert_eq!(misfit(&plain, &not_h100, group), None, "NotIn matches a missing label");
        let exists =
            Placement { required_terms: Some(vec![vec![requirement(PRODUCT, "Exists", &[])]]), ..Placement::default() };
        assert_eq!(misfit(&plain, &exists, OWN), None);
        assert_eq!(misfit(&plain, &exists, group), Some(Misfit::NodeAffinity));
    }

    #[test]
    fn required_affinity_terms_are_ored_and_filtered_per_flavor() {
        let h100 = flavor(&[(PRODUCT, "H100"), ("pool", "gpu")], &[]);
        let affinity = |terms: Vec<Vec<NodeSelectorRequirement>>| Placement {
            required_terms: Some(terms),
            ..Placement::default()
        };
        let only_a100 = affinity(vec![vec![requirement(PRODUCT, "In", &["A100"])]]);
        assert_eq!(misfit(&h100, &only_a100, OWN), Some(Misfit::NodeAffinity));
        let either =
            affinity(vec![vec![requirement(PRODUCT, "In", &["A100"])], vec![requirement("pool", "Exists", &[])]]);
        assert_eq!(misfit(&h100, &either, OWN), None, "the second term matches");
        let foreign =
            affinity(vec![vec![requirement(PRODUCT, "In", &["A100"])], vec![requirement("zone", "In", &["a"])]]);
        assert_eq!(misfit(&h100, &foreign, OWN), None, "a term left empty by the filter matches every flavor");
        assert_eq!(misfit(&h100, &affinity(vec![]), OWN), None, "no terms: no constraint");
        let not_in =
            affinity(vec![vec![requirement(PRODUCT, "NotIn", &["H100"]), requirement("pool", "In", &["gpu"])]]);
        assert_eq!(misfit(&h100, &not_in, OWN), Some(Misfit::NodeAffinity));
        let invalid = affinity(vec![vec![requirement(PRODUCT, "In", &[])]]);
        assert_eq!(misfit(&h100, &invalid, OWN), Some(Misfit::NodeAffinity), "an invalid term matches nothing");
    }

    #[test]
    fn taints_need_a_toleration_from_the_template_or_the_flavor() {
        let tainted = flavor(&[], &[("nvidia.com/gpu", "present", "NoSchedule")]);
        let none = Placement::default();
        assert!(matches!(misfit(&tainted, &none, OWN), Some(Misfit::UntoleratedTaint(_))));
        let tolerating = Placement {
            tolerations: vec![Toleration {
                key: Some("nvidia.com/gpu".into()),
                operator: Some("Exists".into()),
                ..Toleration::default()
            }],
            ..Placement::default()
        };
        assert_eq!(misfit(&tainted, &tolerating, OWN), None);
        let mut self_tolerating = tainted.clone();
        self_tolerating.tolerations = tolerating.tolerations.clone();
        assert_eq!(misfit(&self_tolerating, &none, OWN), None, "the flavor's own tolerations count");
        let described =
            Described { name: "h100", flavor: &tainted, misfit: &misfit(&tainted, &none, OWN).unwrap() }.to_string();
        assert_eq!(
            described,
            "flavor h100 has taint nvidia.com/gpu=present:NoSchedule, which the pod template does not tolerate"
        );
    }
}
