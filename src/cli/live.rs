//! The live cluster for the commands (`audit`, `review --kubeconfig`): the
//! view the server would hold, filled by the same watches and read once they
//! have synced, and the workloads as the API server stores them.

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

use crate::cache::{self, ClusterCache, watch};
use crate::cluster::ClusterState;
use crate::config::Config;
use crate::error::Error;
use crate::workload::WorkloadKind;

/// How long the watches may take to list everything before the command gives up.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// Objects per page when listing workloads.
const PAGE: u32 = 500;

/// Runs a command's work against the live cluster on a runtime of its own.
pub fn block_on<T>(work: impl std::future::Future<Output = Result<T, Error>>) -> Result<T, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Cluster(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(work)
}

pub struct LiveCluster {
    client: kube::Client,
    cache: Arc<ClusterCache>,
}

impl LiveCluster {
    /// Connects with `kubeconfig` (else as kubectl would: `KUBECONFIG`, the
    /// default file, or in-cluster) and waits for the view to sync.
    pub async fn connect(kubeconfig: Option<&Path>, config: &Config) -> Result<Self, Error> {
        let client_config = match kubeconfig {
            Some(path) => {
                let file = kube::config::Kubeconfig::read_from(path)
                    .map_err(|e| Error::file("kubeconfig", path, e.to_string()))?;
                kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                    .await
                    .map_err(|e| Error::file("kubeconfig", path, e.to_string()))?
            }
            None => kube::Config::infer().await.map_err(|e| Error::Cluster(format!("no cluster to talk to: {e}")))?,
        };
        let client = kube::Client::try_from(client_config)?;
        let cache = Arc::new(ClusterCache::live(client.clone(), &watch::CORE_KINDS, config.kueue.clone()));
        watch::start(client.clone(), cache.clone(), config.kueue.clone(), config.kueue_managed_owners.clone());
        if tokio::time::timeout(SYNC_TIMEOUT, cache.synced()).await.is_err() {
            return Err(Error::Cluster(format!(
                "the cluster's {} did not list within {}s",
                cache.pending_kinds().join(", "),
                SYNC_TIMEOUT.as_secs()
            )));
        }
        Ok(Self { client, cache })
    }

    /// Every stored Job and JobSet, all namespaces (none of a kind not served).
    pub async fn workloads(&self) -> Result<Vec<Value>, Error> {
        let mut workloads = Vec::new();
        for kind in [WorkloadKind::Job, WorkloadKind::JobSet] {
            let Some(resource) = self.resource(kind).await? else { continue };
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
            let mut params = ListParams::default().limit(PAGE);
            loop {
                let page = api.list(&params).await?;
                workloads.extend(page.items.into_iter().map(|object| stored(object, &resource)));
                match page.metadata.continue_ {
                    Some(token) if !token.is_empty() => params = params.continue_token(&token),
                    _ => break,
                }
            }
        }
        Ok(workloads)
    }

    /// One stored workload.
    pub async fn workload(&self, kind: WorkloadKind, namespace: &str, name: &str) -> Result<Value, Error> {
        let Some(resource) = self.resource(kind).await? else {
            return Err(Error::Cluster(format!("the cluster does not serve {kind}s")));
        };
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), namespace, &resource);
        match api.get_opt(name).await? {
            Some(object) => Ok(stored(object, &resource)),
            None => Err(Error::Cluster(format!("{kind} {namespace}/{name} not found"))),
        }
    }

    /// The namespace the kubeconfig's context names (else `default`).
    pub fn default_namespace(&self) -> &str {
        self.client.default_namespace()
    }

    /// The view as it is now.
    pub fn state(&self) -> impl Deref<Target = ClusterState> + '_ {
        self.cache.read()
    }

    /// The view, and the lookups of what it lacks.
    pub fn lookups(&self) -> &ClusterCache {
        &self.cache
    }

    async fn resource(&self, kind: WorkloadKind) -> Result<Option<ApiResource>, Error> {
        let (group, _) = kind.group_version();
        Ok(cache::served_resource(&self.client, group, kind.as_str()).await?)
    }
}

/// A listed object with its apiVersion and kind, which list items lack.
fn stored(object: DynamicObject, resource: &ApiResource) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("apiVersion".into(), Value::String(resource.api_version.clone()));
        map.insert("kind".into(), Value::String(resource.kind.clone()));
    }
    value
}
