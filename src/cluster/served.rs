//! Which namespaces each ClusterQueue serves, and the least every workload it
//! could admit asks per pod (`ClusterView::request_floor`), kept current one
//! Namespace or LimitRange at a time: a change costs one selector match per
//! ClusterQueue, not a match of every queue against every namespace.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::kueue_config::KueueConfig;
use super::objects::ResourceAmounts;
use super::{ClusterQueue, NamespaceInfo, NamespaceSelector};
use crate::workload::LimitSummary;

/// Per ClusterQueue with a namespaceSelector Kueue can parse.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    queues: HashMap<String, Selection>,
}

/// The namespaces where Kueue manages a labelled job that a queue selects:
/// how many force no floor, which force one, and what that leaves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Selection {
    unfloored: usize,
    floored: BTreeSet<String>,
    /// `None` when it selects no such namespace; empty when one forces nothing.
    floor: Option<ResourceAmounts>,
}

/// What the served facts are worked out from.
pub struct Sources<'a> {
    pub queues: &'a BTreeMap<String, ClusterQueue>,
    pub namespaces: &'a HashMap<String, NamespaceInfo>,
    pub config: &'a KueueConfig,
    /// Each namespace's LimitRanges, summarized.
    pub limits: &'a HashMap<String, LimitSummary>,
}

impl Sources<'_> {
    /// What a namespace's LimitRanges force on each pod (`request_floor`), of
    /// what Kueue counts at least as asked; `None` when nothing.
    pub fn floor_of(&self, namespace: &str) -> Option<ResourceAmounts> {
        let settings = &self.config.resources;
        let floor = self.limits.get(namespace)?.request_floor().into_iter();
        let floor: ResourceAmounts = floor.filter(|(resource, _)| settings.counts_at_least_asked(resource)).collect();
        (!floor.is_empty()).then_some(floor)
    }

    /// Whether the queue takes workloads from this namespace: Kueue manages a
    /// labelled job there (before v0.15, in any namespace) and the selector matches.
    fn selects(&self, queue: &ClusterQueue, namespace: &NamespaceInfo) -> bool {
        let NamespaceSelector::Selector(selector) = &queue.namespace_selector else { return false };
        self.config.manages_labelled_jobs_in(&namespace.labels) && selector.matches(&namespace.labels)
    }

    fn selection(&self, queue: &ClusterQueue) -> Option<Selection> {
        if !matches!(queue.namespace_selector, NamespaceSelector::Selector(_)) {
            return None;
        }
        let mut selection = Selection::default();
        for (name, namespace) in self.namespaces {
            if self.selects(queue, namespace) {
                selection.add(name, self.floor_of(name).is_some());
            }
        }
        selection.refloor(self);
        Some(selection)
    }
}

impl Selection {
    fn add(&mut self, namespace: &str, floored: bool) {
        if floored {
            self.floored.insert(namespace.to_string());
        } else {
            self.unfloored += 1;
        }
    }

    fn take(&mut self, namespace: &str, floored: bool) {
        if floored {
            self.floored.remove(namespace);
        } else {
            self.unfloored = self.unfloored.saturating_sub(1);
        }
    }

    /// Only what every namespace forces is forced: the lesser of each.
    /// Returns whether the floor changed.
    fn refloor(&mut self, sources: &Sources<'_>) -> bool {
        let floor = if self.unfloored > 0 {
            Some(ResourceAmounts::new()) // a namespace that forces nothing: nothing is forced
        } else {
            let mut least: Option<ResourceAmounts> = None;
            for namespace in &self.floored {
                let here = sources.floor_of(namespace).unwrap_or_default();
                let kept = least.get_or_insert_with(|| here.clone());
                kept.retain(|resource, _| here.contains_key(resource));
                for (resource, amount) in kept.iter_mut() {
                    *amount = (*amount).min(here[resource]);
                }
                if kept.is_empty() {
                    break;
                }
            }
            least
        };
        let changed = floor != self.floor;
        self.floor = floor;
        changed
    }
}

impl Served {
    /// Namespaces alike in the labels some queue's selector reads are
    /// selected alike: each queue is matched once per such class, not once
    /// per namespace (a label every namespace has its own value of, as
    /// `kubernetes.io/metadata.name`, counts only where a selector reads it).
    pub fn build(sources: &Sources<'_>) -> Self {
        struct Class<'a> {
            labels: &'a BTreeMap<String, String>,
            unfloored: usize,
            floored: Vec<&'a str>,
        }
        let selectors = sources.queues.values().filter_map(|queue| match &queue.namespace_selector {
            NamespaceSelector::Selector(selector) => Some(selector),
            _ => None,
        });
        let keys: BTreeSet<&str> = selectors.flat_map(|selector| selector.keys()).collect();
        let mut classes: HashMap<Vec<Option<&str>>, Class<'_>> = HashMap::new();
        for (name, namespace) in sources.namespaces {
            if !sources.config.manages_labelled_jobs_in(&namespace.labels) {
                continue; // no queue takes workloads from it
            }
            let read = keys.iter().map(|key| namespace.labels.get(*key).map(String::as_str)).collect();
            let class =
                classes.entry(read).or_insert(Class { labels: &namespace.labels, unfloored: 0, floored: vec![] });
            if sources.floor_of(name).is_some() {
                class.floored.push(name);
            } else {
                class.unfloored += 1;
            }
        }
        let mut queues = HashMap::new();
        for (name, queue) in sources.queues {
            let NamespaceSelector::Selector(selector) = &queue.namespace_selector else { continue };
            let mut selection = Selection::default();
            for class in classes.values().filter(|class| selector.matches(class.labels)) {
                selection.unfloored += class.unfloored;
                selection.floored.extend(class.floored.iter().map(|namespace| namespace.to_string()));
            }
            selection.refloor(sources);
            queues.insert(name.clone(), selection);
        }
        Self { queues }
    }

    pub fn floor(&self, cluster_queue: &str) -> Option<&ResourceAmounts> {
        self.queues.get(cluster_queue)?.floor.as_ref()
    }

    /// Namespace `name` changed from `old` to what `sources` holds now (absent:
    /// deleted). Returns whether any queue's floor changed.
    pub fn namespace_changed(&mut self, sources: &Sources<'_>, name: &str, old: Option<&NamespaceInfo>) -> bool {
        let new = sources.namespaces.get(name);
        let floored = sources.floor_of(name).is_some();
        let mut changed = false;
        for (queue_name, selection) in &mut self.queues {
            let Some(queue) = sources.queues.get(queue_name) else { continue };
            let was = old.is_some_and(|old| sources.selects(queue, old));
            let is = new.is_some_and(|new| sources.selects(queue, new));
            if was == is {
                continue;
            }
            if is {
                selection.add(name, floored)
            } else {
                selection.take(name, floored)
            }
            changed |= selection.refloor(sources);
        }
        changed
    }

    /// Namespace `name`'s LimitRanges changed, its floor from `before` to what
    /// `sources` says now. Returns whether any queue's floor changed.
    pub fn floor_changed(&mut self, sources: &Sources<'_>, name: &str, before: Option<&ResourceAmounts>) -> bool {
        let after = sources.floor_of(name);
        if after.as_ref() == before {
            return false;
        }
        let Some(namespace) = sources.namespaces.get(name) else { return false };
        let mut changed = false;
        for (queue_name, selection) in &mut self.queues {
            let Some(queue) = sources.queues.get(queue_name) else { continue };
            if !sources.selects(queue, namespace) {
                continue;
            }
            selection.take(name, before.is_some());
            selection.add(name, after.is_some());
            changed |= selection.refloor(sources);
        }
        changed
    }

    /// ClusterQueue `name` was added, changed or deleted: its selection again.
    pub fn queue_changed(&mut self, sources: &Sources<'_>, name: &str) {
        match sources.queues.get(name).and_then(|queue| sources.selection(queue)) {
            Some(selection) => self.queues.insert(name.to_string(), selection),
            None => self.queues.remove(name),
        };
    }
}
