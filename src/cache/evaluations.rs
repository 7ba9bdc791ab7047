//! The evaluations already in the cluster, for the audit: one watch per
//! workload kind (label-selected where the config's selectors allow,
//! `Config::evaluations_watch`), each object decoded into the rules' pruned
//! view as it arrives and kept only if the config selects it. Everything else
//! a stored Job carries (its status but for the terminal conditions, managed
//! fields, the last-applied annotation) is dropped as it is read.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::task::JoinSet;

use crate::config::{Config, EvaluationsWatch};
use crate::workload::{Stored, WorkloadKind};

/// How often a kind the API server does not serve (JobSet before its CRD) is looked for again.
const DISCOVERY_INTERVAL: Duration = Duration::from_secs(30);

/// Decodes a stored object of `kind`, kept only if the config selects it:
/// what the watch does with each object it lists.
pub fn select(config: &Config, kind: WorkloadKind, object: &Value) -> Option<Stored> {
    let stored = Stored::decode_as(kind, object).ok()?;
    config.evaluation_selector(kind, &stored.workload)?;
    Some(stored)
}

/// Kind, namespace, name.
pub type EvaluationKey = (WorkloadKind, String, String);

/// The stored evaluations, kept current by [`Evaluations::watch`].
#[derive(Default)]
pub struct Evaluations {
    stored: RwLock<HashMap<EvaluationKey, Arc<Stored>>>,
    /// Kinds whose first list has not completed.
    pending: Mutex<HashSet<WorkloadKind>>,
    /// Bumped on every change: the audit re-judges what changed.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Evaluations {
    /// Evaluations known only from `stored` (a file, a test, a benchmark).
    pub fn of(stored: impl IntoIterator<Item = Stored>) -> Self {
        let evaluations = Self::default();
        for evaluation in stored {
            evaluations.apply(evaluation);
        }
        evaluations
    }

    /// Starts a watch per kind the config selects; runs until the runtime stops.
    pub fn watch(self: &Arc<Self>, client: kube::Client, config: Arc<Config>) -> JoinSet<()> {
        let mut tasks = JoinSet::new();
        for kind in [WorkloadKind::Job, WorkloadKind::JobSet] {
            let selector = match config.evaluations_watch(kind) {
                EvaluationsWatch::None => continue,
                EvaluationsWatch::All => None,
                EvaluationsWatch::Labelled(labels) => Some(labels),
            };
            self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(kind);
            tasks.spawn(follow(self.clone(), client.clone(), config.clone(), kind, selector));
        }
        tasks
    }

    pub fn is_synced(&self) -> bool {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }

    /// Changes so far; `subscribe` to wait for the next.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Every stored evaluation now.
    pub fn all(&self) -> Vec<Arc<Stored>> {
        self.stored.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.stored.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn apply(&self, evaluation: Stored) {
        let key = (evaluation.kind, evaluation.namespace().to_string(), evaluation.name().to_string());
        self.stored.write().unwrap_or_else(|p| p.into_inner()).insert(key, Arc::new(evaluation));
        self.changes.send_modify(|n| *n += 1);
    }

    fn remove(&self, key: &EvaluationKey) {
        if self.stored.write().unwrap_or_else(|p| p.into_inner()).remove(key).is_some() {
            self.changes.send_modify(|n| *n += 1);
        }
    }

    /// `kind` is not served: none of it is held, and none is waited for.
    /// A change only if some was held (discovery asks again every 30 s, and
    /// each change starts an audit round).
    fn not_served(&self, kind: WorkloadKind) {
        let held = {
            let mut stored = self.stored.write().unwrap_or_else(|p| p.into_inner());
            let before = stored.len();
            stored.retain(|(held, _, _), _| *held != kind);
            stored.len() != before
        };
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&kind);
        if held {
            self.changes.send_modify(|n| *n += 1);
        }
    }

    /// A (re)list: what was listed replaces what was held of `kind`.
    fn replace(&self, kind: WorkloadKind, listed: Vec<Stored>) {
        {
            let mut stored = self.stored.write().unwrap_or_else(|p| p.into_inner());
            stored.retain(|(held, _, _), _| *held != kind);
            for evaluation in listed {
                let key = (kind, evaluation.namespace().to_string(), evaluation.name().to_string());
                stored.insert(key, Arc::new(evaluation));
            }
        }
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&kind);
        self.changes.send_modify(|n| *n += 1);
    }
}

/// Follows one kind: waits for the API server to serve it, then watches it.
async fn follow(
    evaluations: Arc<Evaluations>,
    client: kube::Client,
    config: Arc<Config>,
    kind: WorkloadKind,
    selector: Option<String>,
) {
    let (group, _) = kind.group_version();
    let resource = loop {
        match super::served_resource(&client, group, kind.as_str()).await {
            Ok(Some(resource)) => break resource,
            // Nothing of it to audit until it is served.
            Ok(None) => evaluations.not_served(kind),
            Err(error) => tracing::warn!(%kind, %error, "discovery failed; trying again"),
        }
        tokio::time::sleep(DISCOVERY_INTERVAL).await;
    };
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let mut watch = watcher::Config::default();
    if let Some(labels) = &selector {
        watch = watch.labels(labels);
    }
    tracing::info!(%kind, selector = selector.as_deref().unwrap_or("(all)"), "watching stored evaluations");
    let stream = watcher::watcher(api, watch).default_backoff();
    futures::pin_mut!(stream);
    let decode = |object: DynamicObject| {
        let value = serde_json::to_value(object).ok()?;
        select(&config, kind, &value)
    };
    let key = |object: &DynamicObject| {
        (kind, object.metadata.namespace.clone().unwrap_or_default(), object.metadata.name.clone().unwrap_or_default())
    };
    let mut relist: Option<Vec<Stored>> = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => relist = Some(Vec::new()),
            Ok(Event::InitApply(object)) => {
                if let (Some(listed), Some(evaluation)) = (relist.as_mut(), decode(object)) {
                    listed.push(evaluation);
                }
            }
            Ok(Event::InitDone) => {
                let listed = relist.take().unwrap_or_default();
                tracing::info!(%kind, evaluations = listed.len(), "stored evaluations listed");
                evaluations.replace(kind, listed);
            }
            Ok(Event::Apply(object)) => {
                let at = key(&object);
                match decode(object) {
                    Some(evaluation) => evaluations.apply(evaluation),
                    // Relabelled out of the selection.
                    None => evaluations.remove(&at),
                }
            }
            Ok(Event::Delete(object)) => evaluations.remove(&key(&object)),
            Err(error) => tracing::warn!(%kind, %error, "evaluations watch failed; retrying with backoff"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::workload::Stage;

    #[test]
    fn only_what_the_config_selects_is_kept_and_its_stage_read() {
        let config = Config::default();
        let job = |labels: Value, suspend: bool| {
            json!({"apiVersion": "batch/v1", "kind": "Job",
                   "metadata": {"name": "e", "namespace": "n", "uid": "u-1", "labels": labels},
                   "spec": {"suspend": suspend, "template": {"spec": {"containers": []}}}})
        };
        let evalhub = json!({"app": "evalhub", "component": "evaluation-job"});
        let stored = select(&config, WorkloadKind::Job, &job(evalhub.clone(), true)).unwrap();
        assert_eq!(
            (stored.uid.as_str(), stored.stage, stored.namespace(), stored.name()),
            ("u-1", Stage::Queued, "n", "e")
        );
        assert!(select(&config, WorkloadKind::Job, &job(json!({"app": "web"}), false)).is_none());

        let evaluations = Evaluations::of([stored]);
        let changes = evaluations.subscribe();
        let running = select(&config, WorkloadKind::Job, &job(evalhub, false)).unwrap();
        evaluations.apply(running);
        assert_eq!(evaluations.len(), 1, "the same key replaced");
        assert_eq!(evaluations.all()[0].stage, Stage::Running);
        assert!(changes.has_changed().unwrap());
        evaluations.remove(&(WorkloadKind::Job, "n".into(), "e".into()));
        assert!(evaluations.is_empty());

        // An unserved kind waits for nothing, and changes nothing when none was held.
        evaluations.pending.lock().unwrap().insert(WorkloadKind::JobSet);
        let changes = evaluations.subscribe();
        evaluations.not_served(WorkloadKind::JobSet);
        assert!(evaluations.is_synced() && !changes.has_changed().unwrap());
    }
}
