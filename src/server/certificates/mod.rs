//! Self-managed certificates (`--tls-secret`): the server keeps its own
//! authority and serving pair in a Secret of its namespace, keeps its webhook
//! configurations' `caBundle` equal to the authorities it trusts, renews before
//! expiry, and serves the stored pair once the API server trusts its authority.
//! Kyverno's and Gatekeeper's default, and Kueue's internal cert management.
//!
//! Every replica runs the same rounds. Each round reads the Secret and the
//! webhook configurations afresh and takes at most one step ([`plan::next`]);
//! every write is conditional on the resourceVersion it read, so when two
//! replicas take the same step one write lands and the other is refused
//! (409), and sees the result next round. One writer per change, with no lease.

pub mod pki;
pub mod plan;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::duration;
use super::shutdown::{Phase, Shutdown};
use super::tls::CertStore;
use crate::telemetry::{CertificateWriteLabels, Metrics};
use pki::Cert;
use plan::{Facts, Settings, Step, Stored};

/// How long every webhook must have trusted an authority before a pair it
/// signed is made or served: every API server's copy of the webhook
/// configurations (an informer) has seen the new `caBundle` by then.
const TRUST_GRACE_SECONDS: i64 = 10;

/// The webhook configurations' names, as `eval-admission manifests` renders them.
pub const WEBHOOK_CONFIGURATIONS: [&str; 2] = ["eval-admission-mutating", "eval-admission-validating"];

#[derive(Debug, Clone, clap::Args)]
pub struct CertificateArgs {
    /// Self-managed certificates: keep an authority and the serving pair in
    /// this Secret (of --namespace), and the webhook configurations' caBundle
    /// current. Instead of --tls-cert and --tls-key.
    #[arg(long, env = "EVAL_ADMISSION_TLS_SECRET", conflicts_with_all = ["tls_cert", "tls_key"])]
    pub tls_secret: Option<String>,
    /// The namespace of the Secret and of the Service (the pod's: the
    /// Deployment passes it); the client's default namespace when unset.
    #[arg(long, env = "POD_NAMESPACE")]
    pub namespace: Option<String>,
    /// The Service the API server calls: the serving certificate is for
    /// SERVICE.NAMESPACE.svc and SERVICE.NAMESPACE.svc.cluster.local.
    #[arg(long, env = "EVAL_ADMISSION_TLS_SERVICE", default_value = "eval-admission")]
    pub tls_service: String,
    /// One more name (DNS or IP) for the serving certificate, for webhooks
    /// registered by URL (repeatable).
    #[arg(long = "tls-extra-name", value_name = "NAME", env = "EVAL_ADMISSION_TLS_EXTRA_NAMES", value_delimiter = ',')]
    pub tls_extra_names: Vec<String>,
    /// The webhook configurations whose caBundle is kept current.
    #[arg(long = "webhook-configuration", value_name = "NAME", value_delimiter = ',',
          default_values_t = WEBHOOK_CONFIGURATIONS.map(String::from))]
    pub webhook_configurations: Vec<String>,
    /// Lifetime of each authority; a successor is made with a third of it left.
    #[arg(long, env = "EVAL_ADMISSION_TLS_AUTHORITY_VALIDITY", default_value = "17520h",
          value_parser = duration::within(Duration::from_secs(120), Duration::from_secs(10 * 365 * 86_400)))]
    pub tls_authority_validity: Duration,
    /// Lifetime of each serving certificate; renewed with a third of it left.
    #[arg(long, env = "EVAL_ADMISSION_TLS_SERVING_VALIDITY", default_value = "2160h",
          value_parser = duration::within(Duration::from_secs(60), Duration::from_secs(10 * 365 * 86_400)))]
    pub tls_serving_validity: Duration,
    /// How often the Secret and the webhook configurations are read.
    #[arg(long, env = "EVAL_ADMISSION_TLS_CHECK_INTERVAL", default_value = "5s",
          value_parser = duration::within(Duration::from_millis(100), Duration::from_secs(3600)))]
    pub tls_check_interval: Duration,
}

/// What a round wrote, for `eval_admission_tls_certificate_writes_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Bootstrap,
    Publish,
    NewAuthority,
    Reissue,
    Prune,
}

impl Write {
    fn label(self) -> &'static str {
        match self {
            Self::Bootstrap => "bootstrap",
            Self::Publish => "publish",
            Self::NewAuthority => "new-authority",
            Self::Reissue => "reissue",
            Self::Prune => "prune",
        }
    }
}

pub struct SelfManaged {
    secrets: Api<Secret>,
    mutating: Api<MutatingWebhookConfiguration>,
    validating: Api<ValidatingWebhookConfiguration>,
    secret_name: String,
    webhook_configurations: Vec<String>,
    settings: Settings,
    interval: Duration,
    store: Arc<CertStore>,
    metrics: Arc<Metrics>,
    /// When each authority (by DER) was first seen trusted by every webhook.
    trusted_since: HashMap<Vec<u8>, i64>,
    /// The webhook configurations last said to be missing.
    missing_said: Vec<String>,
}

impl SelfManaged {
    pub fn new(
        client: kube::Client,
        secret_name: String,
        args: &CertificateArgs,
        store: Arc<CertStore>,
        metrics: Arc<Metrics>,
    ) -> Self {
        let namespace = args.namespace.clone().unwrap_or_else(|| client.default_namespace().to_string());
        let service = &args.tls_service;
        let mut names = vec![format!("{service}.{namespace}.svc"), format!("{service}.{namespace}.svc.cluster.local")];
        names.extend(args.tls_extra_names.iter().cloned());
        Self {
            secrets: Api::namespaced(client.clone(), &namespace),
            mutating: Api::all(client.clone()),
            validating: Api::all(client),
            secret_name,
            webhook_configurations: args.webhook_configurations.clone(),
            settings: Settings {
                names,
                authority_validity_seconds: seconds(args.tls_authority_validity),
                serving_validity_seconds: seconds(args.tls_serving_validity),
            },
            interval: args.tls_check_interval,
            store,
            metrics,
            trusted_since: HashMap::new(),
            missing_said: Vec::new(),
        }
    }

    /// Rounds until the drain begins.
    pub async fn run(mut self, shutdown: Shutdown) {
        tracing::info!(secret = %self.secret_name, names = ?self.settings.names, "self-managed certificates");
        let stopping = shutdown.reached(Phase::Stopping);
        tokio::pin!(stopping);
        loop {
            if let Err(error) = self.round().await {
                tracing::warn!(%error, "self-managed certificates: round failed; trying again");
            }
            tokio::select! {
                () = tokio::time::sleep(self.interval) => {}
                () = &mut stopping => return,
            }
        }
    }

    async fn round(&mut self) -> Result<(), kube::Error> {
        let now = unix_now();
        let secret = self.secrets.get_opt(&self.secret_name).await?;
        let stored = secret.as_ref().map(read_secret);
        let bundles = self.bundles().await?;
        let trusted = trusted_by_all(&bundles);
        self.trusted_since.retain(|der, _| trusted.iter().any(|cert| &cert.der == der));
        for cert in &trusted {
            self.trusted_since.entry(cert.der.clone()).or_insert(now);
        }
        let settled: Vec<Cert> = trusted
            .iter()
            .filter(|cert| self.trusted_since.get(&cert.der).is_some_and(|since| now - since >= TRUST_GRACE_SECONDS))
            .cloned()
            .collect();
        if let Some(stored) = &stored {
            self.serve(stored, if self.store.is_serving() { &settled } else { &trusted }, now);
        }
        let facts = Facts {
            now,
            stored: stored.as_ref(),
            trusted_by_webhooks: &trusted,
            bundles_current: stored
                .as_ref()
                .is_some_and(|stored| !bundles.is_empty() && bundles.iter().all(|bundle| *bundle == stored.trusted)),
            newest_settled: stored
                .as_ref()
                .and_then(|stored| stored.trusted.first())
                .is_some_and(|newest| settled.contains(newest)),
        };
        let step = plan::next(facts, &self.settings);
        let resource_version = secret.as_ref().and_then(|secret| secret.metadata.resource_version.clone());
        let (write, result) = match step {
            Step::Settled | Step::Wait => return Ok(()),
            // No configuration to publish to: nothing calls this server yet.
            Step::Publish if bundles.is_empty() => return Ok(()),
            Step::Publish => {
                let bundle = stored.as_ref().map(Stored::bundle).unwrap_or_default();
                (Write::Publish, self.publish(&bundle).await)
            }
            step => {
                let (write, next) = match self.next_stored(step, stored.unwrap_or_default(), now) {
                    Ok(next) => next,
                    Err(error) => {
                        tracing::error!(%error, "self-managed certificates: could not make the next pair");
                        return Ok(());
                    }
                };
                (write, self.write_secret(&next, resource_version).await)
            }
        };
        // A conflict is another replica's write of the same step: 409 on the
        // Secret, and a failed `test` of the resourceVersion on a webhook configuration.
        let outcome = match &result {
            Ok(()) => "written",
            Err(kube::Error::Api(status)) if status.code == 409 || (write == Write::Publish && status.code == 422) => {
                "conflict"
            }
            Err(_) => "failed",
        };
        self.metrics.certificate_writes.get_or_create(&CertificateWriteLabels { step: write.label(), outcome }).inc();
        match outcome {
            "written" => tracing::info!(step = write.label(), "self-managed certificates written"),
            "conflict" => tracing::debug!(step = write.label(), "another replica wrote first"),
            _ => return result,
        }
        Ok(())
    }

    /// The Secret after `step`.
    fn next_stored(&self, step: Step, mut stored: Stored, now: i64) -> Result<(Write, Stored), String> {
        let issue = |stored: &mut Stored| -> Result<(), String> {
            let key = stored.authority_key.as_deref().ok_or("no authority key")?;
            let (chain, leaf_key) = pki::issue_serving(
                &stored.trusted[0],
                key,
                &self.settings.names,
                now,
                self.settings.serving_validity_seconds,
            )?;
            stored.serving = Some((pki::parse_certs(chain.as_bytes()), leaf_key));
            Ok(())
        };
        let new_authority = |stored: &mut Stored| -> Result<(), String> {
            let (authority, key) =
                pki::new_authority(now, self.settings.authority_validity_seconds).map_err(|e| e.to_string())?;
            stored.trusted.insert(0, authority);
            stored.authority_key = Some(key);
            Ok(())
        };
        let write = match step {
            Step::Bootstrap { keep } => {
                stored = Stored { trusted: keep, authority_key: None, serving: None };
                new_authority(&mut stored)?;
                issue(&mut stored)?;
                Write::Bootstrap
            }
            Step::NewAuthority => {
                new_authority(&mut stored)?;
                stored.trusted.truncate(plan::MOST_TRUSTED);
                Write::NewAuthority
            }
            Step::Reissue => {
                issue(&mut stored)?;
                Write::Reissue
            }
            Step::Prune => {
                stored.trusted = plan::pruned(&stored.trusted, now);
                Write::Prune
            }
            Step::Publish | Step::Wait | Step::Settled => unreachable!("not a change of the Secret"),
        };
        Ok((write, stored))
    }

    /// Serves the stored pair when it verifies against `trusted`, the
    /// authorities every webhook trusts (long enough, once something is served).
    fn serve(&self, stored: &Stored, trusted: &[Cert], now: i64) {
        let Some((chain, key)) = &stored.serving else { return };
        let Some(leaf) = chain.first() else { return };
        if !pki::verifies(&leaf.der, trusted, &self.settings.names, now) {
            return;
        }
        let chain_pem: String = chain.iter().map(|cert| cert.pem.as_str()).collect();
        match self.store.offer(chain_pem.as_bytes(), key.as_bytes()) {
            Ok(false) => {}
            Ok(true) => {
                self.metrics.certificate_reloads.inc();
                if let Some(not_after) = self.store.not_after() {
                    self.metrics.certificate_expiry.set(not_after);
                }
                tracing::info!(not_after = self.store.not_after(), "serving certificate from the Secret");
            }
            Err(error) => {
                self.metrics.certificate_reload_failures.inc();
                tracing::error!(%error, "the Secret's serving pair is unusable; keeping the last good one");
            }
        }
    }

    /// Every webhook's `caBundle`, read as certificates, and the names of
    /// the configurations that do not exist (the API server calls nothing
    /// through those, so they are left out, and said once).
    async fn bundles(&mut self) -> Result<Vec<Vec<Cert>>, kube::Error> {
        let (mut bundles, mut missing) = (Vec::new(), Vec::new());
        for name in &self.webhook_configurations {
            let configurations = [
                self.mutating.get_opt(name).await?.map(|c| serde_json::to_value(c).unwrap_or_default()),
                self.validating.get_opt(name).await?.map(|c| serde_json::to_value(c).unwrap_or_default()),
            ];
            let mut found = false;
            for configuration in configurations.into_iter().flatten() {
                found = true;
                for webhook in configuration["webhooks"].as_array().into_iter().flatten() {
                    bundles.push(decode_bundle(&webhook["clientConfig"]["caBundle"]));
                }
            }
            if !found {
                missing.push(name.clone());
            }
        }
        if missing != self.missing_said {
            if !missing.is_empty() {
                tracing::warn!(?missing, "webhook configurations to keep the caBundle of do not exist");
            }
            self.missing_said = missing;
        }
        Ok(bundles)
    }

    /// Sets every webhook's `caBundle`, each configuration patched on the
    /// resourceVersion read (a JSON patch `test`).
    async fn publish(&self, bundle: &str) -> Result<(), kube::Error> {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(bundle);
        for name in &self.webhook_configurations {
            if let Some(configuration) = self.mutating.get_opt(name).await? {
                let patch = bundle_patch(&serde_json::to_value(configuration).unwrap_or_default(), &encoded);
                self.mutating.patch(name, &PatchParams::default(), &Patch::Json::<()>(patch)).await?;
            }
            if let Some(configuration) = self.validating.get_opt(name).await? {
                let patch = bundle_patch(&serde_json::to_value(configuration).unwrap_or_default(), &encoded);
                self.validating.patch(name, &PatchParams::default(), &Patch::Json::<()>(patch)).await?;
            }
        }
        Ok(())
    }

    /// Creates the Secret, or replaces it on `resource_version`.
    async fn write_secret(&self, stored: &Stored, resource_version: Option<String>) -> Result<(), kube::Error> {
        let mut secret = secret_of(stored);
        secret.metadata.name = Some(self.secret_name.clone());
        match resource_version {
            // AlreadyExists (409) when another replica created it first.
            None => self.secrets.create(&PostParams::default(), &secret).await.map(drop),
            Some(version) => {
                secret.metadata.resource_version = Some(version);
                self.secrets.replace(&self.secret_name, &PostParams::default(), &secret).await.map(drop)
            }
        }
    }
}

/// The JSON patch setting every webhook's caBundle, after a `test` of the
/// resourceVersion read.
fn bundle_patch(configuration: &Value, encoded: &str) -> json_patch::Patch {
    let mut operations = vec![json!({
        "op": "test", "path": "/metadata/resourceVersion", "value": configuration["metadata"]["resourceVersion"]
    })];
    for index in 0..configuration["webhooks"].as_array().map_or(0, Vec::len) {
        operations
            .push(json!({"op": "add", "path": format!("/webhooks/{index}/clientConfig/caBundle"), "value": encoded}));
    }
    serde_json::from_value(Value::Array(operations)).unwrap_or_else(|_| json_patch::Patch(Vec::new()))
}

fn decode_bundle(value: &Value) -> Vec<Cert> {
    use base64::Engine as _;
    let Some(encoded) = value.as_str() else { return Vec::new() };
    base64::engine::general_purpose::STANDARD.decode(encoded).map(|pem| pki::parse_certs(&pem)).unwrap_or_default()
}

/// The authorities every bundle holds, in the first bundle's order.
fn trusted_by_all(bundles: &[Vec<Cert>]) -> Vec<Cert> {
    let Some((first, rest)) = bundles.split_first() else { return Vec::new() };
    first.iter().filter(|cert| rest.iter().all(|bundle| bundle.contains(cert))).cloned().collect()
}

fn read_secret(secret: &Secret) -> Stored {
    let data = secret.data.clone().unwrap_or_default();
    let text = |key: &str| data.get(key).and_then(|bytes| String::from_utf8(bytes.0.clone()).ok());
    let serving = match (text("tls.crt"), text("tls.key")) {
        (Some(chain), Some(key)) if !chain.is_empty() && !key.is_empty() => {
            Some((pki::parse_certs(chain.as_bytes()), key))
        }
        _ => None,
    };
    let trusted = text("ca.crt").map(|pem| pki::parse_certs(pem.as_bytes())).unwrap_or_default();
    // A key that is not the newest authority's is as good as none: the plan
    // bootstraps instead of failing to sign every round.
    let authority_key = text("ca.key").filter(|key| trusted.first().is_some_and(|newest| pki::is_key_of(newest, key)));
    Stored { trusted, authority_key, serving }
}

fn secret_of(stored: &Stored) -> Secret {
    let bytes = |text: &str| ByteString(text.as_bytes().to_vec());
    let (chain, key) = stored.serving.as_ref().map_or((String::new(), ""), |(chain, key)| {
        (chain.iter().map(|cert| cert.pem.as_str()).collect(), key.as_str())
    });
    let data = [
        ("ca.crt", bytes(&stored.bundle())),
        ("ca.key", bytes(stored.authority_key.as_deref().unwrap_or_default())),
        ("tls.crt", bytes(&chain)),
        ("tls.key", bytes(key)),
    ];
    Secret {
        metadata: ObjectMeta {
            labels: Some([("app.kubernetes.io/managed-by".to_string(), "eval-admission".to_string())].into()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data.into_iter().map(|(key, value)| (key.to_string(), value)).collect()),
        ..Secret::default()
    }
}

fn seconds(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    #[test]
    fn the_secret_round_trips() {
        let (authority, key) = pki::new_authority(NOW, 86_400).unwrap();
        let (chain, leaf_key) = pki::issue_serving(&authority, &key, &["a.b.svc".into()], NOW, 3_600).unwrap();
        let stored = Stored {
            trusted: vec![authority],
            authority_key: Some(key),
            serving: Some((pki::parse_certs(chain.as_bytes()), leaf_key)),
        };
        let secret = secret_of(&stored);
        assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
        let labels = secret.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("app.kubernetes.io/managed-by").map(String::as_str), Some("eval-admission"));
        assert_eq!(read_secret(&secret), stored);
        // Authorities kept with no pair yet: written as empty keys, read as no pair.
        let unpaired = Stored { serving: None, ..stored };
        assert_eq!(read_secret(&secret_of(&unpaired)), unpaired);
        // A certificate without its key is no pair: it must be issued again, not kept.
        let mut keyless = secret.clone();
        keyless.data.as_mut().unwrap().insert("tls.key".into(), ByteString(Vec::new()));
        assert_eq!(read_secret(&keyless).serving, None);
        assert_eq!(read_secret(&Secret::default()), Stored::default());
    }

    #[test]
    fn a_secret_whose_key_is_another_authoritys_has_no_usable_authority() {
        let (authority, _) = pki::new_authority(NOW, 86_400).unwrap();
        let (_, other_key) = pki::new_authority(NOW, 86_400).unwrap();
        let edited = secret_of(&Stored { trusted: vec![authority], authority_key: Some(other_key), serving: None });
        let read = read_secret(&edited);
        assert_eq!(read.authority_key, None);
        assert!(!read.usable(NOW));
    }

    #[test]
    fn trusted_by_all_is_what_every_bundle_holds() {
        let [a, b, c] = [0, 1, 2].map(|i| pki::new_authority(NOW + i, 86_400).unwrap().0);
        let bundles = [vec![a.clone(), b.clone()], vec![b.clone(), a.clone(), c.clone()]];
        assert_eq!(trusted_by_all(&bundles), vec![a.clone(), b.clone()]);
        assert_eq!(trusted_by_all(&[vec![a.clone()], vec![]]), vec![]);
        assert_eq!(trusted_by_all(&[]), vec![]);
    }

    #[test]
    fn the_patch_tests_the_version_read_and_sets_every_webhook() {
        let configuration = json!({"metadata": {"resourceVersion": "42"}, "webhooks": [{}, {}]});
        let patch = serde_json::to_value(bundle_patch(&configuration, "QUJD")).unwrap();
        assert_eq!(
            patch,
            json!([
                {"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
                {"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "QUJD"},
                {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": "QUJD"},
            ])
        );
        let mut target = json!({"metadata": {"resourceVersion": "42"}, "webhooks": [{"clientConfig": {}}, {"clientConfig": {"caBundle": "old"}}]});
        json_patch::patch(&mut target, &bundle_patch(&configuration, "QUJD")).unwrap();
        assert_eq!(target["webhooks"][1]["clientConfig"]["caBundle"], "QUJD");
        assert_eq!(decode_bundle(&json!("not base64!")), vec![]);
    }
}

#[cfg(test)]
mod install_tests {
    use serde::Deserialize as _;

    use super::*;

    /// The configurations `manifests` renders are the ones kept current, and
    /// the shipped RBAC lets the server patch exactly those and its Secret.
    #[test]
    fn the_shipped_rbac_names_the_rendered_configurations_and_the_secret() {
        let rendered = crate::manifests::render(&crate::config::Config::default(), "test");
        for (name, text) in WEBHOOK_CONFIGURATIONS.iter().zip([&rendered.mutating, &rendered.validating]) {
            assert!(text.contains(&format!("\n  name: {name}\n")), "{name} rendered");
        }
        let rbac: Vec<Value> =
            serde_yaml::Deserializer::from_str(include_str!("../../../manifests/certificates/self-managed/rbac.yaml"))
                .map(|document| Value::deserialize(document).unwrap())
                .collect();
        let names = |kind: &str, resource: &str| -> Vec<String> {
            let role = rbac.iter().find(|object| object["kind"] == kind).unwrap();
            let rules = role["rules"].as_array().unwrap().iter();
            let named = rules.filter(|rule| {
                rule["resources"].as_array().unwrap().iter().any(|r| r == resource) && !rule["resourceNames"].is_null()
            });
            named
                .flat_map(|rule| rule["resourceNames"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().into()))
                .collect()
        };
        assert_eq!(names("ClusterRole", "mutatingwebhookconfigurations"), WEBHOOK_CONFIGURATIONS);
        assert_eq!(names("Role", "secrets"), ["eval-admission-tls"]);
        let component = include_str!("../../../manifests/certificates/self-managed/kustomization.yaml");
        assert!(component.contains("--tls-secret=eval-admission-tls"));
    }
}
