//! pkg/config/validation.go `Validate`, mirrored for the fields read here:
//! what would stop Kueue at startup lands in [`KueueConfig::startup_errors`].

use std::collections::BTreeMap;

use super::decode::Parser;
use super::{
    ALWAYS_RESPECT_NAMESPACE_SELECTOR_GATE, BUILT_IN_FRAMEWORKS, DISABLE_WAIT_FOR_PODS_READY_GATE, KueueConfig,
    LOCAL_QUEUE_DEFAULTING_GATE, QUOTA_CHECK_STRATEGY_GATE,
};
use crate::vocabulary::kueue::{KueueVersion, NAMESPACE_NAME_LABEL};
use crate::vocabulary::text::{echo, echo_long, listed};

/// The valid `fairSharing.preemptionStrategies` lists (`validStrategySets`).
const VALID_PREEMPTION_STRATEGIES: [&[&str]; 3] = [
    &["LessThanOrEqualToFinalShare"],
    &["LessThanInitialShare"],
    &["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
];

/// Why this release refuses a gate setting, for the gates the rules read
/// (pkg/features/kube_features.go per release); other gates are not checked.
fn gate_refused(version: KueueVersion, name: &str, on: bool) -> Option<String> {
    let unknown = || Some(format!("Kueue {version} has no such feature gate"));
    let locked = |default: bool| (on != default).then(|| format!("locked to {default} in Kueue {version}"));
    match name {
        ALWAYS_RESPECT_NAMESPACE_SELECTOR_GATE if !version.since(0, 13, 0) => unknown(),
        ALWAYS_RESPECT_NAMESPACE_SELECTOR_GATE if version.since(0, 19, 0) => locked(true),
        LOCAL_QUEUE_DEFAULTING_GATE if version.since(0, 19, 0) => unknown(),
        LOCAL_QUEUE_DEFAULTING_GATE if version.since(0, 17, 0) => locked(true),
        QUOTA_CHECK_STRATEGY_GATE if !version.since(0, 18, 0) => unknown(),
        DISABLE_WAIT_FOR_PODS_READY_GATE if !version.since(0, 19, 0) => unknown(),
        _ => None,
    }
}

impl Parser {
    /// pkg/config/validation.go `Validate`, for the fields read here.
    pub(super) fn validate(&mut self, config: &KueueConfig) {
        // config.LoadAndValidateFeatureGates: a gate the release does not
        // know, or a locked one set against its default, stops Kueue.
        for (name, on) in &config.feature_gates {
            if let Some(why) = gate_refused(config.version, name, *on) {
                self.problem(format!("featureGates.{}: {why}", echo(name)));
            }
        }
        // validateResourceTransformations: one transformation per input.
        let mut inputs: Vec<&str> = Vec::new();
        for (index, transformation) in config.resources.transformations.iter().enumerate() {
            if inputs.contains(&transformation.input.as_str()) {
                self.problem(format!(
                    "resources.transformations[{index}].input: duplicate {}",
                    echo(&transformation.input)
                ));
            }
            inputs.push(&transformation.input);
        }
        // validateQuotaCheckStrategy, with its gate on.
        if let Some(strategy) = &config.quota_check_strategy
            && config.gate(QUOTA_CHECK_STRATEGY_GATE)
        {
            if strategy == "IgnoreUndeclared" && !config.resources.exclude_prefixes.is_empty() {
                self.problem(
                    "resources.quotaCheckStrategy: excludeResourcePrefixes is not allowed when quotaCheckStrategy \
                     is IgnoreUndeclared"
                        .to_string(),
                );
            }
            if strategy != "IgnoreUndeclared" && strategy != "BlockUndeclared" {
                self.problem(format!(
                    "resources.quotaCheckStrategy: unsupported {} (IgnoreUndeclared or BlockUndeclared)",
                    echo(strategy)
                ));
            }
        }
        // validateWaitForPodsReady, checked while parsing, counts only when
        // waitforpodsready.Enabled.
        if config.wait_for_pods_ready_enabled() {
            for problem in std::mem::take(&mut self.pods_ready_problems) {
                self.problem(problem);
            }
        }
        // validateIntegrations
        let mut seen: Vec<&str> = Vec::new();
        for (index, framework) in config.frameworks.iter().enumerate() {
            if !BUILT_IN_FRAMEWORKS.contains(&framework.as_str()) {
                self.problem(format!("integrations.frameworks[{index}]: unsupported framework {}", echo(framework)));
            } else if seen.contains(&framework.as_str()) {
                self.problem(format!("integrations.frameworks[{index}]: duplicate {}", echo(framework)));
            } else {
                seen.push(framework);
            }
        }
        let mut seen_external: Vec<(&str, &str, &str)> = Vec::new();
        for (index, framework) in config.external_frameworks.iter().enumerate() {
            // schema.ParseKindArg: Kind.version.group needs two dots.
            let mut parts = framework.splitn(3, '.');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(kind), Some(version), Some(group)) => {
                    if seen_external.contains(&(kind, version, group)) {
                        self.problem(format!(
                            "integrations.externalFrameworks[{index}]: duplicate {}",
                            echo(framework)
                        ));
                    } else {
                        seen_external.push((kind, version, group));
                    }
                }
                _ => self.problem(format!(
                    "integrations.externalFrameworks[{index}]: {} is not in Kind.version.group form",
                    echo(framework)
                )),
            }
        }
        // validateFairSharing
        if let Some(fs) = &config.fair_sharing {
            if fs.preemption_strategies.is_empty() {
                self.problem("fairSharing.preemptionStrategies: must be specified".to_string());
            } else if !VALID_PREEMPTION_STRATEGIES
                .iter()
                .any(|valid| valid.iter().copied().eq(fs.preemption_strategies.iter().map(String::as_str)))
            {
                self.problem(format!(
                    "fairSharing.preemptionStrategies: {} is not one of [LessThanOrEqualToFinalShare], \
                     [LessThanInitialShare], [LessThanOrEqualToFinalShare, LessThanInitialShare]",
                    listed(&fs.preemption_strategies)
                ));
            }
        }
        // validateManagedJobsNamespaceSelector: valid, and exempting kube-system
        // and Kueue's own namespace (matched on their name label alone).
        let selector = &config.managed_jobs_namespace_selector;
        match selector.validate() {
            Err(error) => self.problem(format!("managedJobsNamespaceSelector: {}", echo_long(&error))),
            Ok(()) => {
                let mut prohibited = vec!["kube-system"];
                if !config.namespace.is_empty() {
                    prohibited.push(&config.namespace);
                }
                for name in prohibited {
                    let labels = BTreeMap::from([(NAMESPACE_NAME_LABEL.to_string(), name.to_string())]);
                    if selector.matches(&labels) {
                        self.problem(format!(
                            "managedJobsNamespaceSelector: should not match the {} namespace",
                            echo(name)
                        ));
                    }
                }
            }
        }
    }
}
