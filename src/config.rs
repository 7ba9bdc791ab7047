//! The policy configuration file (YAML). Every field has a default, so an empty
//! file, or no file, gives the behaviour docs/configuration.md documents.
//!
//! A field this version does not know is not an error: it is ignored and
//! reported ([`Loaded::unknown_fields`]), so that a config written for a newer
//! version still starts this one (a rollback of the Deployment after a config
//! change). Its callers warn of it, or refuse it ([`Loaded::refuse_unknown`]:
//! `--strict`, `eval-admission manifests`). A known field whose value does not
//! parse is an error everywhere. docs/configuration.md.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::Error;
use crate::vocabulary::kueue::{DEFAULT_MANAGED_OWNERS, KueueInstall, KueueVersion};
use crate::vocabulary::own_names::EVALUATION_LABEL;
use crate::vocabulary::reason::{Enforcement, Reason};
use crate::vocabulary::yaml::{check_flow_nesting, read_at_most};
use crate::workload::{OwnerReference, Workload, WorkloadKind};

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Config {
    /// Which Jobs and JobSets are evaluations that the policy shapes.
    pub selection: Selection,
    /// Which Kueue runs the cluster and where: the one source of its release
    /// (the model's version-dependent rules), namespace, ConfigMap and identity
    /// (who may flip `spec.suspend` from true to false).
    pub kueue: KueueInstall,
    /// Owner kinds that Kueue admits as a unit: a Job controlled by one is left alone.
    pub kueue_managed_owners: Vec<OwnerKind>,
    /// Per rule (by its reason label), whether a breach is denied, warned or
    /// ignored; rules not listed take [`Reason::default_enforcement`].
    pub enforcement: BTreeMap<String, Enforcement>,
    /// Drop a pod template's `priorityClassName` that only repeats the
    /// workload's WorkloadPriorityClass label and names no PriorityClass (with a
    /// warning), instead of denying the workload. Off by default.
    pub drop_repeated_pod_priority_class: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Selection {
    /// Apply the policy to every Job and JobSet, not only the selected ones.
    pub all_workloads: bool,
    pub selectors: Vec<Selector>,
}

/// A workload matches when its kind is listed, it carries all `matchLabels`,
/// and, when `controlledBy` is given, its controller owner is one of those kinds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Selector {
    pub name: String,
    pub kinds: Vec<SelectorKind>,
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub controlled_by: Vec<OwnerKind>,
    /// How the people behind this selector set a queue and a priority in the
    /// tool they submit with; denials add it after the Kubernetes-level fix.
    #[serde(default)]
    pub submitters: Option<Submitters>,
}

/// A submitting tool's own words for the two settings denials ask people to change.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Submitters {
    /// Who they are: `EvalHub users`.
    pub who: String,
    /// How they choose the LocalQueue: `set queue.name in the evaluation request`.
    pub queue: Option<String>,
    /// How they choose the priority.
    pub priority: Option<String>,
    /// How they choose where pods run (node selector, affinity, tolerations).
    #[serde(default)]
    pub placement: Option<String>,
}

/// Which of the two settings a denial asks a submitter to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    Queue,
    Priority,
    Placement,
}

/// What the audit watches of one workload kind ([`Config::evaluations_watch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvaluationsWatch {
    None,
    All,
    /// A label selector (`app=evalhub,component=evaluation-job`).
    Labelled(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum SelectorKind {
    Job,
    JobSet,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerKind {
    pub api_group: String,
    pub kind: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            selection: Selection::default(),
            kueue: KueueInstall::default(),
            kueue_managed_owners: default_managed_owners(),
            enforcement: BTreeMap::new(),
            drop_repeated_pod_priority_class: false,
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
                    controlled_by: Vec::new(),
                    submitters: Some(Submitters {
                        who: "EvalHub users".into(),
                        queue: Some(EVALHUB_QUEUE.into()),
                        priority: Some(EVALHUB_PRIORITY.into()),
                        placement: Some(EVALHUB_PLACEMENT.into()),
                    }),
                },
                Selector {
                    name: "aiperf".into(),
                    kinds: vec![SelectorKind::JobSet],
                    match_labels: labels(&[("app", "aiperf")]),
                    controlled_by: Vec::new(),
                    submitters: Some(aiperf_submitters()),
                },
                Selector {
                    name: "aiperf-sweep".into(),
                    kinds: vec![SelectorKind::JobSet],
                    match_labels: BTreeMap::new(),
                    controlled_by: vec![OwnerKind {
                        api_group: "aiperf.nvidia.com".into(),
                        kind: "AIPerfSweep".into(),
                    }],
                    submitters: Some(aiperf_submitters()),
                },
                Selector {
                    name: "opt-in".into(),
                    kinds: vec![SelectorKind::Job, SelectorKind::JobSet],
                    match_labels: labels(&[(EVALUATION_LABEL, "true")]),
                    controlled_by: Vec::new(),
                    submitters: None,
                },
            ],
        }
    }
}

/// EvalHub (eval-hub-server 1.0.2): the evaluation request's `queue` and the
/// hardware profile's Kueue priority become the Job's labels.
const EVALHUB_QUEUE: &str = "set queue.name in the evaluation request";
const EVALHUB_PRIORITY: &str = "choose another hardware profile (it sets the priority)";
/// A hardware profile of type Node writes the Job's nodeSelector and tolerations.
const EVALHUB_PLACEMENT: &str =
    "choose a hardware profile whose node selector and tolerations fit one of those flavors";

/// AIPerf (0.13.0): the CLI flags and the AIPerfJob fields they fill
/// (aiperf `config/kube.py`, `PodTemplateConfig`).
fn aiperf_submitters() -> Submitters {
    Submitters {
        who: "AIPerf users".into(),
        queue: Some("pass --queue-name (spec.scheduling.queueName)".into()),
        priority: Some("pass --priority-class (spec.scheduling.priorityClass)".into()),
        placement: Some(
            "pass --node-selector and --tolerations (spec.podTemplate nodeSelector, tolerations and affinity) that fit \
             one of those flavors"
                .into(),
        ),
    }
}

fn default_managed_owners() -> Vec<OwnerKind> {
    DEFAULT_MANAGED_OWNERS
        .into_iter()
        .map(|(api_group, kind)| OwnerKind { api_group: api_group.into(), kind: kind.into() })
        .collect()
}

/// A config is a page of YAML; anything near this size is not one.
const MOST_CONFIG_BYTES: usize = 1024 * 1024;

/// A config as read, and the fields of its text that this version does not
/// know and so ignored, by path (`selection.selectors[1].checkpointing`).
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub config: Config,
    pub unknown_fields: Vec<String>,
}

impl Loaded {
    /// The config, unless it has fields this version does not know: then why
    /// not, naming each (`--strict`, `eval-admission manifests`).
    pub fn refuse_unknown(self) -> Result<Config, String> {
        if self.unknown_fields.is_empty() {
            return Ok(self.config);
        }
        let (noun, pronoun) = if self.unknown_fields.len() == 1 { ("field", "it") } else { ("fields", "them") };
        Err(format!(
            "unknown {noun} {}: eval-admission {} does not know {pronoun} (misspelt, or written for a newer version)",
            self.unknown_fields.join(", "),
            env!("CARGO_PKG_VERSION")
        ))
    }
}

/// The warning for one field of [`Loaded::unknown_fields`], for the log and stderr.
pub fn unknown_field_warning(field: &str) -> String {
    format!(
        "unknown field {field}: eval-admission {} does not know it and ignores it (misspelt, or written for a newer \
         version)",
        env!("CARGO_PKG_VERSION")
    )
}

impl Config {
    /// Reads a config file; `None` gives the defaults.
    pub fn load(path: Option<&Path>) -> Result<Loaded, Error> {
        let Some(path) = path else {
            return Ok(Loaded { config: Self::default(), unknown_fields: Vec::new() });
        };
        let bytes = read_at_most("config file", path, MOST_CONFIG_BYTES as u64)?;
        let text = String::from_utf8(bytes).map_err(|_| Error::file("config file", path, "not UTF-8 text"))?;
        Self::parse(&text).map_err(|message| Error::file("config file", path, message))
    }

    /// Reads a config's text. A field this version does not know is left out
    /// and listed in [`Loaded::unknown_fields`]; a known field's value that
    /// does not parse or check is an error.
    pub fn parse(text: &str) -> Result<Loaded, String> {
        if text.trim().is_empty() {
            return Ok(Loaded { config: Self::default(), unknown_fields: Vec::new() });
        }
        if text.len() > MOST_CONFIG_BYTES {
            return Err(format!("{} bytes: a config is at most {MOST_CONFIG_BYTES}", text.len()));
        }
        check_flow_nesting(text)?;
        let mut unknown_fields = Vec::new();
        let config: Self = serde_ignored::deserialize(serde_yaml::Deserializer::from_str(text), |path| {
            unknown_fields.push(field_path(&path))
        })
        .map_err(|e| e.to_string())?;
        moved_fields(&unknown_fields)?;
        config.check()?;
        Ok(Loaded { config, unknown_fields })
    }

    /// What serde cannot say: every enforcement key names a rule that has a
    /// mode, and every selector narrows (`allWorkloads` is how to take all).
    fn check(&self) -> Result<(), String> {
        for rule in self.enforcement.keys() {
            if Reason::from_label(rule).is_none_or(|reason| reason.default_enforcement().is_none()) {
                let rules: Vec<&str> =
                    Reason::ALL.iter().filter(|r| r.default_enforcement().is_some()).map(|r| r.as_str()).collect();
                return Err(format!("enforcement: no rule '{rule}'; the rules are: {}", rules.join(", ")));
            }
        }
        let kueue = &self.kueue;
        if !kueue.version.is_modelled() {
            return Err(format!(
                "kueue.version: eval-admission's model of Kueue is written and judged for {} to v{}.{}.x, not {}",
                KueueVersion::OLDEST_MODELLED,
                KueueVersion::NEWEST_MODELLED.major,
                KueueVersion::NEWEST_MODELLED.minor,
                kueue.version
            ));
        }
        if !is_dns_label(&kueue.namespace) {
            return Err(format!("kueue.namespace: '{}' is not a namespace name", kueue.namespace.escape_debug()));
        }
        let is_object_name = |name: &str| !name.is_empty() && name.len() <= 253 && name.split('.').all(is_dns_label);
        if !is_object_name(&kueue.config_map) {
            return Err(format!("kueue.configMap: '{}' is not a ConfigMap name", kueue.config_map.escape_debug()));
        }
        if !is_object_name(&kueue.deployment) {
            return Err(format!("kueue.deployment: '{}' is not a Deployment name", kueue.deployment.escape_debug()));
        }
        for selector in &self.selection.selectors {
            if selector.match_labels.is_empty() && selector.controlled_by.is_empty() {
                return Err(format!(
                    "selection.selectors: '{}' has neither matchLabels nor controlledBy, so it would select every \
                     workload of its kinds; set selection.allWorkloads to mean that",
                    selector.name
                ));
            }
        }
        Ok(())
    }

    /// The selector that makes this workload an evaluation, if any; with
    /// `allWorkloads`, every workload is one (through a selector when one matches).
    pub fn evaluation_selector(&self, kind: WorkloadKind, workload: &Workload) -> Option<Selected<'_>> {
        let wanted = match kind {
            WorkloadKind::Job => SelectorKind::Job,
            WorkloadKind::JobSet => SelectorKind::JobSet,
        };
        let matching = self.selection.selectors.iter().find(|selector| {
            selector.kinds.contains(&wanted)
                && selector.match_labels.iter().all(|(key, value)| workload.label(key) == Some(value.as_str()))
                && (selector.controlled_by.is_empty() || controlled_by(workload, &selector.controlled_by))
        });
        match matching {
            Some(selector) => Some(Selected(Some(selector))),
            None => self.selection.all_workloads.then_some(Selected(None)),
        }
    }

    /// What a watch of the stored workloads of `kind` must see to find every
    /// evaluation the selectors pick (the audit's watch): nothing, when no
    /// selector names the kind; the labels every selector of the kind
    /// requires, when they share some (the API server then filters); else all.
    pub fn evaluations_watch(&self, kind: WorkloadKind) -> EvaluationsWatch {
        let wanted = match kind {
            WorkloadKind::Job => SelectorKind::Job,
            WorkloadKind::JobSet => SelectorKind::JobSet,
        };
        if self.selection.all_workloads {
            return EvaluationsWatch::All;
        }
        let mut selectors = self.selection.selectors.iter().filter(|selector| selector.kinds.contains(&wanted));
        let Some(first) = selectors.next() else { return EvaluationsWatch::None };
        let mut shared = first.match_labels.clone();
        for selector in selectors {
            shared.retain(|key, value| selector.match_labels.get(key) == Some(value));
        }
        // Only labels a selector string carries as they are (the API server's
        // label syntax); anything else is left to the local filter.
        let plain = |text: &str| text.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b));
        shared.retain(|key, value| !key.is_empty() && plain(key) && plain(value));
        if shared.is_empty() {
            return EvaluationsWatch::All;
        }
        let labels: Vec<String> = shared.iter().map(|(key, value)| format!("{key}={value}")).collect();
        EvaluationsWatch::Labelled(labels.join(","))
    }

    /// The enforcement of the rule behind `reason`.
    pub fn enforcement(&self, reason: Reason) -> Enforcement {
        self.enforcement
            .get(reason.as_str())
            .copied()
            .or_else(|| reason.default_enforcement())
            .unwrap_or(Enforcement::Deny)
    }

    /// The controller ownerReference that, if it is true, makes Kueue treat the
    /// owner, not this object, as the workload (`rules::ownership` checks it is true).
    pub fn managed_controller_owner<'w>(&self, workload: &'w Workload) -> Option<&'w OwnerReference> {
        workload.controller_owner().filter(|owner| is_one_of(owner, &self.kueue_managed_owners))
    }

    pub fn is_kueue_controller(&self, username: &str) -> bool {
        self.kueue.is_controller(username)
    }
}

/// An RFC 1123 label: what a namespace's name is.
fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=63).contains(&bytes.len())
        && alnum(&bytes[0])
        && alnum(&bytes[bytes.len() - 1])
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
}

/// A field an older config had, refused with where it lives now: its value
/// would be lost, not just unused (who Kueue acts as).
fn moved_fields(unknown_fields: &[String]) -> Result<(), String> {
    const MOVED: &str = "kueueControllerUsernames: it moved to kueue.controllerUsernames (unset: Kueue's service \
                         account in kueue.namespace)";
    if unknown_fields.iter().any(|field| field == "kueueControllerUsernames") {
        return Err(MOVED.into());
    }
    Ok(())
}

/// A field's path as the config writes it: `selection.selectors[1].checkpointing`
/// (a key's control characters escaped: it goes to the log).
fn field_path(path: &serde_ignored::Path) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", field_path(parent)),
        Path::Map { parent, key } => match field_path(parent) {
            parent if parent.is_empty() => key.escape_debug().to_string(),
            parent => format!("{parent}.{}", key.escape_debug()),
        },
        Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => field_path(parent),
    }
}

/// The selector an evaluation matched: `None` under `allWorkloads` when no selector did.
#[derive(Debug, Clone, Copy)]
pub struct Selected<'c>(pub Option<&'c Selector>);

impl Selected<'_> {
    /// How this selector's submitters change `settings`, one sentence: ` EvalHub
    /// users: set queue.name in the evaluation request.` (empty when the config
    /// says nothing about them).
    pub fn submitter_hint(&self, settings: &[Setting]) -> String {
        let Some(submitters) = self.0.and_then(|selector| selector.submitters.as_ref()) else {
            return String::new();
        };
        let hows: Vec<&str> = settings
            .iter()
            .filter_map(|setting| match setting {
                Setting::Queue => submitters.queue.as_deref(),
                Setting::Priority => submitters.priority.as_deref(),
                Setting::Placement => submitters.placement.as_deref(),
            })
            .collect();
        if hows.is_empty() { String::new() } else { format!(" {}: {}.", submitters.who, hows.join(", or ")) }
    }
}

fn controlled_by(workload: &Workload, kinds: &[OwnerKind]) -> bool {
    workload.controller_owner().is_some_and(|owner| is_one_of(owner, kinds))
}

fn is_one_of(owner: &OwnerReference, kinds: &[OwnerKind]) -> bool {
    kinds.iter().any(|kind| kind.api_group == owner.api_group() && kind.kind == owner.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_and_size_are_refused_before_parsing() {
        // 120 KB of nested flow mappings took 36 s in the YAML parser.
        let started = std::time::Instant::now();
        let error = Config::parse(&"{a: ".repeat(30_000)).unwrap_err();
        assert!(error.contains("nested deeper than 64"), "{error}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
        let error = Config::parse(&format!("# {}\n", "x".repeat(MOST_CONFIG_BYTES))).unwrap_err();
        assert!(error.contains("a config is at most"), "{error}");
    }

    #[test]
    fn empty_file_gives_defaults() {
        let loaded = Config::parse("").unwrap();
        assert_eq!(loaded.config.selection.selectors.len(), 4);
        assert!(loaded.unknown_fields.is_empty());
        let all = Config::parse("selection: {allWorkloads: true}").unwrap().config;
        assert!(all.selection.all_workloads);
        assert_eq!(all.selection.selectors.len(), 4, "selectors keep their defaults");
    }

    /// A config written for a newer version (or misspelt) still reads: each
    /// field this version does not know is reported by its path and ignored;
    /// `refuse_unknown` names them all.
    #[test]
    fn unknown_fields_are_reported_with_their_paths_and_ignored() {
        let text = [
            "checkpointing: {every: 10m}",
            "selection:",
            "  allWorkload: true",
            "  selectors:",
            "  - {name: a, kinds: [Job], matchLabels: {app: a}}",
            "  - name: b",
            "    kinds: [JobSet]",
            "    matchLabels: {app: b}",
            "    checkpointing: true",
            "    submitters: {who: B users, queue: q, priority: p, chat: '#b'}",
            "kueue: {version: v0.19.2, multiKueue: {enabled: true}}",
            "kueueManagedOwners: [{apiGroup: ray.io, kind: RayJob, version: v1}]",
        ]
        .join("\n");
        let loaded = Config::parse(&text).unwrap();
        assert_eq!(
            loaded.unknown_fields,
            [
                "checkpointing",
                "selection.allWorkload",
                "selection.selectors[1].checkpointing",
                "selection.selectors[1].submitters.chat",
                "kueue.multiKueue",
                "kueueManagedOwners[0].version",
            ]
        );
        let config = &loaded.config;
        assert!(!config.selection.all_workloads, "a misspelt field is not read as the right one");
        assert_eq!(config.selection.selectors[1].submitters.as_ref().unwrap().who, "B users");
        assert_eq!(config.kueue_managed_owners, [OwnerKind { api_group: "ray.io".into(), kind: "RayJob".into() }]);
        let refused = loaded.refuse_unknown().unwrap_err();
        assert!(
            refused.starts_with(
                "unknown fields checkpointing, selection.allWorkload, selection.selectors[1].checkpointing, \
                 selection.selectors[1].submitters.chat, kueue.multiKueue, kueueManagedOwners[0].version: \
                 eval-admission "
            ) && refused.contains("does not know them"),
            "{refused}"
        );
        let one = Config::parse("newField: 1").unwrap().refuse_unknown().unwrap_err();
        assert!(
            one.starts_with("unknown field newField: eval-admission ") && one.contains("does not know it"),
            "{one}"
        );
        assert!(Config::parse("selection: {allWorkloads: true}").unwrap().refuse_unknown().is_ok());
        // Map values are data, not fields: a label or rule name is never "unknown".
        let labels = Config::parse("selection: {selectors: [{name: a, kinds: [Job], matchLabels: {anything: x}}]}");
        assert!(labels.unwrap().unknown_fields.is_empty());
        // A key goes to the log as written, but for its control characters.
        assert_eq!(Config::parse("\"a\\nb\": 1").unwrap().unknown_fields, ["a\\nb"]);
    }

    /// What a rollback cannot cause stays an error: a known field whose value
    /// does not parse, wherever it is, and the field that moved (its value,
    /// who Kueue acts as, would be lost).
    #[test]
    fn known_fields_with_bad_values_are_refused_beside_unknown_ones() {
        for (text, expected) in [
            ("newField: 1\nselection: {allWorkloads: maybe}", "selection.allWorkloads: invalid type"),
            ("newField: 1\nkueue: {version: latest}", "'latest' is not a Kueue release"),
            ("selection: {selectors: [{name: a, kinds: [Pod], matchLabels: {a: b}, x: 1}]}", "unknown variant `Pod`"),
            ("selection: {selectors: [{kinds: [Job], matchLabels: {a: b}}]}", "missing field `name`"),
            ("enforcement: {preemptible: Audit}\nnewField: 1", "unknown variant `Audit`"),
            ("kueueManagedOwners: [{apiGroup: ray.io}]", "missing field `kind`"),
            ("kueueControllerUsernames: [a]", "it moved to kueue.controllerUsernames"),
            ("- a list\n", "invalid type: sequence, expected struct Config"),
        ] {
            let error = Config::parse(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn the_kueue_section_defaults_to_upstream_and_the_old_key_says_where_it_went() {
        let config = Config::parse("kueue: {namespace: openshift-kueue-operator, version: v0.18.5}").unwrap().config;
        assert_eq!(config.kueue.version.to_string(), "v0.18.5");
        assert_eq!(config.kueue.config_map, "kueue-manager-config", "unset fields keep their defaults");
        assert!(config.is_kueue_controller("system:serviceaccount:openshift-kueue-operator:kueue-controller-manager"));
        assert!(!config.is_kueue_controller("system:serviceaccount:kueue-system:kueue-controller-manager"));
        let old = Config::parse("kueueControllerUsernames: [a]").unwrap_err();
        assert!(old.contains("it moved to kueue.controllerUsernames"), "{old}");
        let bad = Config::parse("kueue: {version: latest}").unwrap_err();
        assert!(bad.contains("'latest' is not a Kueue release such as v0.19.2"), "{bad}");
        let unmodelled = Config::parse("kueue: {version: v0.20.0}").unwrap_err();
        assert!(unmodelled.contains("written and judged for v0.12.0 to v0.19.x, not v0.20.0"), "{unmodelled}");
        assert!(Config::parse("kueue: {version: v0.11.9}").is_err());
        for namespace in ["", "Kueue", "-kueue", "kueue-", "a\"b", &"k".repeat(64)] {
            let error = Config::parse(&format!("kueue: {{namespace: {namespace:?}}}")).unwrap_err();
            assert!(error.contains("is not a namespace name"), "{namespace}: {error}");
        }
        assert!(Config::parse("kueue: {configMap: a.b-c}").is_ok());
        assert!(Config::parse("kueue: {configMap: a..b}").unwrap_err().contains("is not a ConfigMap name"));
        assert!(Config::parse("kueue: {deployment: Kueue}").unwrap_err().contains("is not a Deployment name"));
        assert_eq!(Config::parse("kueue: {deployment: kueue-ctl}").unwrap().config.kueue.deployment, "kueue-ctl");
    }

    #[test]
    fn a_hint_names_each_setting_once_in_one_sentence() {
        let config = Config::default();
        let evalhub = Selected(config.selection.selectors.iter().find(|s| s.name == "evalhub"));
        assert_eq!(evalhub.submitter_hint(&[]), "");
        assert_eq!(
            evalhub.submitter_hint(&[Setting::Queue]),
            " EvalHub users: set queue.name in the evaluation request."
        );
        assert_eq!(
            evalhub.submitter_hint(&[Setting::Queue, Setting::Priority]),
            " EvalHub users: set queue.name in the evaluation request, or choose another hardware profile (it sets \
             the priority)."
        );
        assert_eq!(Selected(None).submitter_hint(&[Setting::Queue]), "", "allWorkloads: nobody in particular");
    }

    #[test]
    fn a_controller_owner_selects_by_group_and_kind_together() {
        let config = Config::default();
        let owned_by = |api_version: &str, kind: &str| -> Workload {
            serde_json::from_value(serde_json::json!({"metadata": {"name": "s", "ownerReferences": [
                {"apiVersion": api_version, "kind": kind, "name": "x", "uid": "1", "controller": true}]}}))
            .unwrap()
        };
        let selected = |workload: &Workload| config.evaluation_selector(WorkloadKind::JobSet, workload).is_some();
        assert!(selected(&owned_by("aiperf.nvidia.com/v1alpha1", "AIPerfSweep")));
        assert!(!selected(&owned_by("other.io/v1", "AIPerfSweep")), "another group's kind of that name");
        assert!(!selected(&owned_by("aiperf.nvidia.com/v1alpha1", "AIPerfJob")), "another kind of that group");
        let sweep = owned_by("aiperf.nvidia.com/v1alpha1", "AIPerfSweep");
        assert!(config.evaluation_selector(WorkloadKind::Job, &sweep).is_none(), "JobSets only");
    }

    #[test]
    fn the_shipped_config_is_the_defaults_written_out() {
        let shipped =
            Config::parse(include_str!("../manifests/base/config.yaml")).and_then(Loaded::refuse_unknown).unwrap();
        assert_eq!(shipped, Config::default());
    }

    #[test]
    fn the_audit_watches_what_every_selector_of_a_kind_requires() {
        let defaults = Config::default();
        // EvalHub's labels and the opt-in label share nothing: every Job.
        assert_eq!(defaults.evaluations_watch(WorkloadKind::Job), EvaluationsWatch::All);
        // An AIPerfSweep's JobSet is known by its owner alone.
        assert_eq!(defaults.evaluations_watch(WorkloadKind::JobSet), EvaluationsWatch::All);
        let config = Config::parse(
            "selection: {selectors: [{name: a, kinds: [Job], matchLabels: {app: evalhub, tier: x}}, \
             {name: b, kinds: [Job], matchLabels: {app: evalhub, tier: y}}, \
             {name: c, kinds: [JobSet], matchLabels: {'bad key': v}}]}",
        )
        .unwrap()
        .config;
        assert_eq!(config.evaluations_watch(WorkloadKind::Job), EvaluationsWatch::Labelled("app=evalhub".into()));
        assert_eq!(config.evaluations_watch(WorkloadKind::JobSet), EvaluationsWatch::All);
        let config = Config::parse("selection: {selectors: [{name: a, kinds: [Job], matchLabels: {a: b, c: d}}]}")
            .unwrap()
            .config;
        assert_eq!(config.evaluations_watch(WorkloadKind::Job), EvaluationsWatch::Labelled("a=b,c=d".into()));
        assert_eq!(config.evaluations_watch(WorkloadKind::JobSet), EvaluationsWatch::None);
        let config = Config::parse("selection: {allWorkloads: true, selectors: []}").unwrap().config;
        assert_eq!(config.evaluations_watch(WorkloadKind::JobSet), EvaluationsWatch::All);
    }

    #[test]
    fn enforcement_keys_and_selectors_are_checked() {
        let error = Config::parse("enforcement: {missing-local-queu: Warn}").unwrap_err();
        assert!(error.contains("no rule 'missing-local-queu'") && error.contains("missing-local-queue"), "{error}");
        assert!(Config::parse("enforcement: {queued: Deny}").unwrap_err().contains("no rule 'queued'"));
        assert!(Config::parse("enforcement: {preemptible: Audit}").unwrap_err().contains("unknown variant"));
        let config = Config::parse("enforcement: {preemptible: Warn, bypasses-kueue: Deny}").unwrap().config;
        assert_eq!(config.enforcement(Reason::Preemptible), Enforcement::Warn);
        assert_eq!(config.enforcement(Reason::BypassesKueue), Enforcement::Deny);
        assert_eq!(config.enforcement(Reason::MissingLocalQueue), Enforcement::Deny);
        assert_eq!(Config::default().enforcement(Reason::BypassesKueue), Enforcement::Warn);
        let unnarrowed = "selection: {selectors: [{name: all-jobs, kinds: [Job]}]}";
        assert!(Config::parse(unnarrowed).unwrap_err().contains("'all-jobs' has neither"));
    }
}
