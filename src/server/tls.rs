//! The serving certificate: loaded at start, re-read when its files change
//! (including Kubernetes' `..data` symlink swap on Secret rotation), served to
//! each new handshake. A bad or mismatched new pair keeps the last good one.
//!
//! With `--client-ca-file`, [`ClientAuth`]: the caller must present a
//! certificate from that CA (and carry one of `--client-name`), or its
//! handshake fails; the CA file is re-read like the serving pair.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};

use super::der;
use crate::error::Error;
use crate::telemetry::{ClientRefusalLabels, Metrics};

/// The current certificate and key, swapped atomically for new handshakes:
/// read from files (`--tls-cert`, `--tls-key`) or offered by the
/// self-managed certificates ([`super::certificates`]), which start it empty.
#[derive(Debug)]
pub struct CertStore {
    files: Option<(PathBuf, PathBuf)>,
    current: RwLock<Option<Loaded>>,
    /// Fingerprint of the last pair that failed to load, so it is reported once.
    rejected: std::sync::Mutex<Option<u64>>,
}

#[derive(Debug)]
struct Loaded {
    key: Arc<CertifiedKey>,
    fingerprint: u64,
    not_after: Option<i64>,
}

impl CertStore {
    /// Loads the pair; failing here stops the server, since it has nothing to serve.
    pub fn load(cert_path: &Path, key_path: &Path) -> Result<Self, Error> {
        let (bytes, fingerprint) = read_pair(cert_path, key_path)?;
        let loaded = parse_pair(&bytes.0, &bytes.1, fingerprint)?;
        Ok(Self {
            files: Some((cert_path.into(), key_path.into())),
            current: RwLock::new(Some(loaded)),
            rejected: std::sync::Mutex::new(None),
        })
    }

    /// A store with nothing to serve yet: handshakes fail until [`offer`](Self::offer).
    pub fn empty() -> Self {
        Self { files: None, current: RwLock::new(None), rejected: std::sync::Mutex::new(None) }
    }

    /// Whether there is a certificate to serve.
    pub fn is_serving(&self) -> bool {
        self.current.read().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// Unix seconds of the serving certificate's notAfter.
    pub fn not_after(&self) -> Option<i64> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).as_ref()?.not_after
    }

    /// Re-reads the files; returns `Ok(true)` when a new pair took effect,
    /// `Ok(false)` when nothing changed (or the same bad pair is still there,
    /// or the store has no files), `Err` when changed files are unusable.
    pub fn reload(&self) -> Result<bool, Error> {
        let Some((cert_path, key_path)) = &self.files else { return Ok(false) };
        let ((cert, key), fingerprint) = read_pair(cert_path, key_path)?;
        self.install(&cert, &key, fingerprint)
    }

    /// Serves this pair (PEM) from the next handshake on, unless it is the one
    /// served already; as [`reload`](Self::reload) for its result.
    pub fn offer(&self, cert_pem: &[u8], key_pem: &[u8]) -> Result<bool, Error> {
        self.install(cert_pem, key_pem, fingerprint(cert_pem, key_pem))
    }

    fn install(&self, cert_pem: &[u8], key_pem: &[u8], fingerprint: u64) -> Result<bool, Error> {
        let mut rejected = self.rejected.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.current.read().unwrap_or_else(|p| p.into_inner()).as_ref().map(|loaded| loaded.fingerprint);
        if current == Some(fingerprint) || *rejected == Some(fingerprint) {
            return Ok(false);
        }
        match parse_pair(cert_pem, key_pem, fingerprint) {
            Ok(loaded) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(loaded);
                *rejected = None;
                Ok(true)
            }
            Err(error) => {
                *rejected = Some(fingerprint);
                Err(error)
            }
        }
    }

    /// Forgets the last rejected pair, so the next [`reload`](Self::reload) tries it again.
    fn forget_rejected(&self) {
        *self.rejected.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The rustls configuration: TLS 1.2 and 1.3, HTTP/1.1 (and HTTP/2 first
    /// when `http2`, chosen by ALPN), certificate from this store; callers
    /// authenticated by `client_auth` when given, anyone otherwise.
    pub fn server_config(
        self: &Arc<Self>,
        http2: bool,
        client_auth: Option<Arc<ClientAuth>>,
    ) -> Result<rustls::ServerConfig, Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| Error::tls("protocol versions", e))?;
        let builder = match client_auth {
            Some(client_auth) => builder.with_client_cert_verifier(client_auth),
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_cert_resolver(self.clone());
        config.alpn_protocols =
            if http2 { vec![b"h2".to_vec(), b"http/1.1".to_vec()] } else { vec![b"http/1.1".to_vec()] };
        Ok(config)
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap_or_else(|p| p.into_inner()).as_ref()?.key.clone())
    }
}

/// Polls the files every `interval` and reloads on change. Polling, not inotify:
/// it sees symlink swaps and remounts alike and costs two small reads.
pub async fn watch(store: Arc<CertStore>, interval: Duration, metrics: Arc<Metrics>) {
    if let Some(not_after) = store.not_after() {
        metrics.certificate_expiry.set(not_after);
    }
    loop {
        tokio::time::sleep(interval).await;
        let mut result = store.reload();
        if result.is_err() {
            // Certificate and key are two files: a rotation may be caught half done.
            tokio::time::sleep(Duration::from_millis(200)).await;
            store.forget_rejected();
            result = store.reload();
        }
        match result {
            Ok(false) => {}
            Ok(true) => {
                metrics.certificate_reloads.inc();
                if let Some(not_after) = store.not_after() {
                    metrics.certificate_expiry.set(not_after);
                }
                tracing::info!(not_after = store.not_after(), "serving certificate reloaded");
            }
            Err(error) => {
                metrics.certificate_reload_failures.inc();
                tracing::error!(%error, "new serving certificate is unusable; keeping the last good one");
            }
        }
    }
}

/// Who may call the webhook port: a client certificate chaining to the CA in
/// `ca_path` (re-read when it changes), whose leaf carries one of
/// `allowed_names` as Common Name or DNS SAN when any are given.
///
/// The name check runs inside the handshake, after the chain is verified, so
/// a refused caller never gets as far as HTTP: rustls answers it with the
/// `access_denied` alert (RFC 8446 6.2: "a valid certificate was received, but
/// when access control was applied, the sender decided not to proceed").
#[derive(Debug)]
pub struct ClientAuth {
    ca_path: PathBuf,
    allowed_names: Vec<String>,
    current: RwLock<LoadedCa>,
    /// Fingerprint of the last CA file that failed to load, so it is reported once.
    rejected: std::sync::Mutex<Option<u64>>,
    refused_untrusted: Counter,
    refused_name: Counter,
}

#[derive(Debug)]
struct LoadedCa {
    verifier: Arc<dyn ClientCertVerifier>,
    fingerprint: u64,
}

impl ClientAuth {
    /// Loads the CA file; failing here stops the server, since it was asked to
    /// authenticate callers and cannot.
    pub fn load(ca_path: &Path, allowed_names: &[String], metrics: &Metrics) -> Result<Self, Error> {
        let (bytes, fingerprint) = read_ca(ca_path)?;
        let verifier = parse_ca(&bytes, ca_path)?;
        let refused =
            |reason| metrics.client_certificates_refused.get_or_create(&ClientRefusalLabels { reason }).clone();
        Ok(Self {
            ca_path: ca_path.into(),
            allowed_names: allowed_names.to_vec(),
            current: RwLock::new(LoadedCa { verifier, fingerprint }),
            rejected: std::sync::Mutex::new(None),
            refused_untrusted: refused("untrusted"),
            refused_name: refused("name"),
        })
    }

    /// Re-reads the CA file, as [`CertStore::reload`] does the serving pair.
    pub fn reload(&self) -> Result<bool, Error> {
        let (bytes, fingerprint) = read_ca(&self.ca_path)?;
        let mut rejected = self.rejected.lock().unwrap_or_else(|p| p.into_inner());
        if fingerprint == self.current.read().unwrap_or_else(|p| p.into_inner()).fingerprint
            || *rejected == Some(fingerprint)
        {
            return Ok(false);
        }
        match parse_ca(&bytes, &self.ca_path) {
            Ok(verifier) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = LoadedCa { verifier, fingerprint };
                *rejected = None;
                Ok(true)
            }
            Err(error) => {
                *rejected = Some(fingerprint);
                Err(error)
            }
        }
    }

    fn verifier(&self) -> Arc<dyn ClientCertVerifier> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).verifier.clone()
    }

    /// Whether the leaf carries an allowed name (always, when none are configured).
    fn name_allowed(&self, presented: &[PresentedName]) -> bool {
        self.allowed_names.is_empty()
            || presented.iter().any(|name| match name {
                PresentedName::CommonName(cn) => self.allowed_names.iter().any(|allowed| allowed == cn),
                // DNS names compare without case (RFC 4343).
                PresentedName::Dns(dns) => self.allowed_names.iter().any(|allowed| allowed.eq_ignore_ascii_case(dns)),
            })
    }
}

impl ClientCertVerifier for ClientAuth {
    fn offer_client_auth(&self) -> bool {
        true
    }

    /// A client without a certificate fails the handshake (rustls sends
    /// `certificate_required`) before [`verify_client_cert`](Self::verify_client_cert) is called.
    fn client_auth_mandatory(&self) -> bool {
        true
    }

    /// No hints: they would borrow from a CA that a reload may replace. rustls:
    /// "When an empty list is sent the client should always provide a client
    /// certificate if it has one"; Go's crypto/tls (the API server) does
    /// (`CertificateRequestInfo.SupportsCertificate` accepts any with no CAs listed).
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        if let Err(error) = self.verifier().verify_client_cert(end_entity, intermediates, now) {
            self.refused_untrusted.inc();
            tracing::debug!(%error, "client certificate refused: not from the client CA");
            return Err(error);
        }
        let presented = presented_names(end_entity);
        if !self.name_allowed(&presented) {
            self.refused_name.inc();
            tracing::debug!(?presented, allowed = ?self.allowed_names, "client certificate refused: no allowed name");
            return Err(rustls::Error::InvalidCertificate(CertificateError::ApplicationVerificationFailure));
        }
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.verifier().supported_verify_schemes()
    }
}

/// A name a client certificate's leaf carries.
#[derive(Debug, PartialEq, Eq)]
enum PresentedName {
    CommonName(String),
    Dns(String),
}

/// The leaf's subject Common Names and DNS SANs; none when it does not parse
/// (it has been verified already, so that does not happen in practice).
fn presented_names(end_entity: &CertificateDer<'_>) -> Vec<PresentedName> {
    let Ok(leaf) = webpki::EndEntityCert::try_from(end_entity) else { return Vec::new() };
    let common_names = der::common_names(leaf.subject()).into_iter().map(PresentedName::CommonName);
    common_names.chain(leaf.valid_dns_names().map(|dns| PresentedName::Dns(dns.to_string()))).collect()
}

/// Polls the client CA file every `interval` and reloads it on change; a bad
/// new file keeps the last good CA.
pub async fn watch_client_ca(client_auth: Arc<ClientAuth>, interval: Duration) {
    loop {
        tokio::time::sleep(interval).await;
        match client_auth.reload() {
            Ok(false) => {}
            Ok(true) => tracing::info!(file = %client_auth.ca_path.display(), "client CA reloaded"),
            Err(error) => tracing::error!(%error, "new client CA is unusable; keeping the last good one"),
        }
    }
}

fn read_ca(path: &Path) -> Result<(Vec<u8>, u64), Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::tls(path.display().to_string(), e))?;
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    Ok((bytes, hasher.finish()))
}

fn parse_ca(pem: &[u8], path: &Path) -> Result<Arc<dyn ClientCertVerifier>, Error> {
    let mut roots = RootCertStore::empty();
    for certificate in rustls_pemfile::certs(&mut BufReader::new(pem)) {
        let certificate = certificate.map_err(|e| Error::tls("client CA PEM", e))?;
        roots.add(certificate).map_err(|e| Error::tls("client CA certificate", e))?;
    }
    if roots.is_empty() {
        return Err(Error::tls(path.display().to_string(), "no CA certificate in it"));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| Error::tls("client CA", e))
}

type PairBytes = (Vec<u8>, Vec<u8>);

fn read_pair(cert_path: &Path, key_path: &Path) -> Result<(PairBytes, u64), Error> {
    let read = |path: &Path| std::fs::read(path).map_err(|e| Error::tls(path.display().to_string(), e));
    let (cert, key) = (read(cert_path)?, read(key_path)?);
    let fingerprint = fingerprint(&cert, &key);
    Ok(((cert, key), fingerprint))
}

fn fingerprint(cert: &[u8], key: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    (cert, key).hash(&mut hasher);
    hasher.finish()
}

fn parse_pair(cert_pem: &[u8], key_pem: &[u8], fingerprint: u64) -> Result<Loaded, Error> {
    let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut BufReader::new(cert_pem))
        .collect::<Result<_, _>>()
        .map_err(|e| Error::tls("certificate PEM", e))?;
    let Some(leaf) = chain.first() else { return Err(Error::tls("certificate file", "no certificate in it")) };
    let not_after = der::not_after(leaf);
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut BufReader::new(key_pem))
        .map_err(|e| Error::tls("key PEM", e))?
        .ok_or_else(|| Error::tls("key file", "no private key in it"))?;
    let signing_key = any_supported_type(&key).map_err(|e| Error::tls("private key", e))?;
    let certified = CertifiedKey::new(chain, signing_key);
    certified.keys_match().map_err(|e| Error::tls("certificate and key", format!("they do not match: {e}")))?;
    Ok(Loaded { key: Arc::new(certified), fingerprint, not_after })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TestCa {
        certificate: rcgen::Certificate,
        key: rcgen::KeyPair,
    }

    impl TestCa {
        fn new() -> Self {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params.distinguished_name.push(rcgen::DnType::CommonName, "client-ca");
            Self { certificate: params.self_signed(&key).unwrap(), key }
        }

        /// A client certificate with this Common Name and these DNS SANs.
        fn client(&self, common_name: &str, dns_names: &[&str]) -> CertificateDer<'static> {
            let key = rcgen::KeyPair::generate().unwrap();
            let names = dns_names.iter().map(|name| name.to_string()).collect::<Vec<_>>();
            let mut params = rcgen::CertificateParams::new(names).unwrap();
            params.distinguished_name.push(rcgen::DnType::OrganizationName, "system:masters");
            params.distinguished_name.push(rcgen::DnType::CommonName, common_name);
            params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
            params.signed_by(&key, &self.certificate, &self.key).unwrap().der().clone()
        }

        fn write(&self, path: &Path) {
            std::fs::write(path, self.certificate.pem()).unwrap();
        }
    }

    fn client_auth(dir: &Path, ca: &TestCa, names: &[&str]) -> ClientAuth {
        let path = dir.join("client-ca.crt");
        ca.write(&path);
        let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        ClientAuth::load(&path, &names, &Metrics::new()).unwrap()
    }

    fn verify(auth: &ClientAuth, leaf: &CertificateDer<'_>) -> Result<ClientCertVerified, rustls::Error> {
        auth.verify_client_cert(leaf, &[], UnixTime::now())
    }

    #[test]
    fn reads_common_names_and_dns_names() {
        let leaf = TestCa::new().client("kube-apiserver", &["apiserver.example", "other.example"]);
        assert_eq!(
            presented_names(&leaf),
            [
                PresentedName::CommonName("kube-apiserver".into()),
                PresentedName::Dns("apiserver.example".into()),
                PresentedName::Dns("other.example".into()),
            ]
        );
        assert!(presented_names(&CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01])).is_empty(), "garbage has none");
        assert!(der::common_names(&[0x31, 0x80]).is_empty(), "a bad length ends the walk");
    }

    #[test]
    fn only_the_ca_and_the_allowed_names_pass() {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new();
        let auth = client_auth(dir.path(), &ca, &["kube-apiserver", "apiserver.example"]);
        assert!(verify(&auth, &ca.client("kube-apiserver", &[])).is_ok(), "by Common Name");
        assert!(verify(&auth, &ca.client("someone", &["APIServer.example"])).is_ok(), "by DNS SAN, any case");
        assert_eq!(
            verify(&auth, &ca.client("someone", &["someone.example"])).unwrap_err(),
            rustls::Error::InvalidCertificate(CertificateError::ApplicationVerificationFailure),
            "a name not allowed"
        );
        assert!(verify(&auth, &TestCa::new().client("kube-apiserver", &[])).is_err(), "another CA");

        let anyone_from_the_ca = client_auth(dir.path(), &ca, &[]);
        assert!(verify(&anyone_from_the_ca, &ca.client("someone", &[])).is_ok(), "no names: the CA alone");
    }

    #[test]
    fn a_new_ca_file_takes_effect_and_a_bad_one_keeps_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let (old, new) = (TestCa::new(), TestCa::new());
        let auth = client_auth(dir.path(), &old, &[]);
        let path = dir.path().join("client-ca.crt");
        assert!(!auth.reload().unwrap(), "unchanged");

        std::fs::write(&path, "not a certificate").unwrap();
        assert!(auth.reload().is_err());
        assert!(!auth.reload().unwrap(), "the same bad file is reported once");
        assert!(verify(&auth, &old.client("a", &[])).is_ok(), "the last good CA stays");

        new.write(&path);
        assert!(auth.reload().unwrap());
        assert!(verify(&auth, &new.client("a", &[])).is_ok());
        assert!(verify(&auth, &old.client("a", &[])).is_err(), "the old CA is gone");

        std::fs::write(&path, "").unwrap();
        let error = ClientAuth::load(&path, &[], &Metrics::new()).unwrap_err();
        assert!(error.to_string().contains("no CA certificate"), "{error}");
    }
}
