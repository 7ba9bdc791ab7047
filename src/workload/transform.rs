//! Kueue's Configuration `resources`, applied to what a pod asks for before
//! quota counts it (v0.19.2 `pkg/workload/workload.go` `totalRequestsFromPodSets`:
//! `dropExcludedResources`, then `applyResourceTransformations`).

use super::Text;
use super::limits::ResourceAmounts;
use crate::vocabulary::quantity::Quantity;

/// `resources.excludeResourcePrefixes` and `resources.transformations`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceSettings {
    pub exclude_prefixes: Vec<String>,
    pub transformations: Vec<Transformation>,
}

/// One `resources.transformations` item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transformation {
    pub input: Text,
    /// `strategy: Replace` (the default, `Retain`, keeps the input as asked).
    pub replace: bool,
    /// `multiplyBy`: the outputs scale by this resource's request too.
    pub multiply_by: Option<Text>,
    /// Per unit of input; a negative factor is an allowance.
    pub outputs: ResourceAmounts,
}

impl ResourceSettings {
    pub fn is_empty(&self) -> bool {
        self.exclude_prefixes.is_empty() && self.transformations.is_empty()
    }

    /// Whether Kueue counts at least what a pod asks of `resource`: it is not
    /// excluded and no transformation replaces it (outputs only add: a negative
    /// total of them counts as zero, see [`ResourceSettings::apply`]).
    pub fn counts_at_least_asked(&self, resource: &str) -> bool {
        let excluded = self.exclude_prefixes.iter().any(|prefix| resource.starts_with(prefix.as_str()));
        !excluded && !self.transformations.iter().any(|t| t.replace && t.input == resource)
    }

    /// One pod's requests as Kueue counts them under these settings.
    pub fn apply(&self, requests: ResourceAmounts) -> ResourceAmounts {
        if self.is_empty() {
            return requests;
        }
        let kept: ResourceAmounts = requests
            .into_iter()
            .filter(|(resource, _)| !self.exclude_prefixes.iter().any(|prefix| resource.starts_with(prefix.as_str())))
            .collect();
        let transformation = |resource: &str| self.transformations.iter().find(|t| t.input == resource);
        if !kept.keys().any(|resource| transformation(resource).is_some()) {
            return kept;
        }
        // Outputs are summed apart from what was asked, and a negative total
        // (allowances outweighing the rest) counts as zero, before the two meet.
        let mut retained = ResourceAmounts::new();
        let mut generated = ResourceAmounts::new();
        for (resource, amount) in &kept {
            let Some(transformation) = transformation(resource) else {
                retained.insert(resource.clone(), *amount);
                continue;
            };
            let base = match transformation.multiply_by.as_ref().and_then(|by| kept.get(by)) {
                Some(by) => amount.saturating_mul(*by),
                None => *amount,
            };
            for (output, factor) in &transformation.outputs {
                let sum = generated.entry(output.clone()).or_default();
                *sum = sum.saturating_add(base.saturating_mul(*factor));
            }
            if !transformation.replace {
                retained.insert(resource.clone(), *amount);
            }
        }
        for (resource, amount) in generated {
            let amount = if amount.is_negative() { Quantity::ZERO } else { amount };
            let sum = retained.entry(resource).or_default();
            *sum = sum.saturating_add(amount);
        }
        retained
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amounts(pairs: &[(&str, &str)]) -> ResourceAmounts {
        pairs.iter().map(|(k, v)| (Text::from(*k), Quantity::parse(v).unwrap())).collect()
    }

    #[test]
    fn excluded_prefixes_are_dropped() {
        let settings = ResourceSettings { exclude_prefixes: vec!["rdma/".into()], ..ResourceSettings::default() };
        assert_eq!(settings.apply(amounts(&[("cpu", "1"), ("rdma/ib", "1")])), amounts(&[("cpu", "1")]));
        assert!(!settings.counts_at_least_asked("rdma/ib"));
    }

    #[test]
    fn mig_slices_become_accelerator_memory() {
        let settings = ResourceSettings {
            transformations: vec![Transformation {
                input: "nvidia.com/mig-1g.5gb".into(),
                replace: true,
                multiply_by: None,
                outputs: amounts(&[("example.com/accelerator-memory", "5Gi"), ("example.com/credits", "-1")]),
            }],
            ..ResourceSettings::default()
        };
        let counted = settings.apply(amounts(&[("nvidia.com/mig-1g.5gb", "2"), ("cpu", "1")]));
        assert_eq!(
            counted,
            amounts(&[("cpu", "1"), ("example.com/accelerator-memory", "10Gi"), ("example.com/credits", "0")])
        );
        let retain = ResourceSettings {
            transformations: vec![Transformation { replace: false, ..settings.transformations[0].clone() }],
            ..ResourceSettings::default()
        };
        assert!(retain.apply(amounts(&[("nvidia.com/mig-1g.5gb", "2")])).contains_key("nvidia.com/mig-1g.5gb"));
        // What a pod asks is counted at least in full unless replaced or excluded.
        assert!(!settings.counts_at_least_asked("nvidia.com/mig-1g.5gb"));
        assert!(settings.counts_at_least_asked("example.com/accelerator-memory"));
        assert!(settings.counts_at_least_asked("cpu"));
        assert!(retain.counts_at_least_asked("nvidia.com/mig-1g.5gb"));
    }

    #[test]
    fn multiply_by_scales_the_outputs_only() {
        let settings = ResourceSettings {
            transformations: vec![Transformation {
                input: "example.com/gpu-share".into(),
                replace: false,
                multiply_by: Some("nvidia.com/gpu".into()),
                outputs: amounts(&[("example.com/gpu-memory", "500m")]),
            }],
            ..ResourceSettings::default()
        };
        let counted = settings.apply(amounts(&[("example.com/gpu-share", "4"), ("nvidia.com/gpu", "2")]));
        assert_eq!(counted["example.com/gpu-memory"], Quantity::parse("4").unwrap());
        assert_eq!(counted["example.com/gpu-share"], Quantity::parse("4").unwrap());
    }
}
