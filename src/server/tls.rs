//! The serving certificate: loaded at start, re-read when its files change
//! (including Kubernetes' `..data` symlink swap on Secret rotation), served to
//! each new handshake. A bad or mismatched new pair keeps the last good one.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::error::Error;
use crate::telemetry::Metrics;

/// The current certificate and key, swapped atomically for new handshakes.
#[derive(Debug)]
pub struct CertStore {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<Loaded>,
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
            cert_path: cert_path.into(),
            key_path: key_path.into(),
            current: RwLock::new(loaded),
            rejected: std::sync::Mutex::new(None),
        })
    }

    /// Unix seconds of the serving certificate's notAfter.
    pub fn not_after(&self) -> Option<i64> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).not_after
    }

    /// Re-reads the files; returns `Ok(true)` when a new pair took effect,
    /// `Ok(false)` when nothing changed (or the same bad pair is still there),
    /// `Err` when changed files are unusable.
    pub fn reload(&self) -> Result<bool, Error> {
        let (bytes, fingerprint) = read_pair(&self.cert_path, &self.key_path)?;
        let mut rejected = self.rejected.lock().unwrap_or_else(|p| p.into_inner());
        if fingerprint == self.current.read().unwrap_or_else(|p| p.into_inner()).fingerprint
            || *rejected == Some(fingerprint)
        {
            return Ok(false);
        }
        match parse_pair(&bytes.0, &bytes.1, fingerprint) {
            Ok(loaded) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = loaded;
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
    /// when `http2`, chosen by ALPN), certificate from this store.
    pub fn server_config(self: &Arc<Self>, http2: bool) -> Result<rustls::ServerConfig, Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| Error::tls("protocol versions", e))?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols =
            if http2 { vec![b"h2".to_vec(), b"http/1.1".to_vec()] } else { vec![b"http/1.1".to_vec()] };
        Ok(config)
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap_or_else(|p| p.into_inner()).key.clone())
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

type PairBytes = (Vec<u8>, Vec<u8>);

fn read_pair(cert_path: &Path, key_path: &Path) -> Result<(PairBytes, u64), Error> {
    let read = |path: &Path| std::fs::read(path).map_err(|e| Error::tls(path.display().to_string(), e));
    let (cert, key) = (read(cert_path)?, read(key_path)?);
    let mut hasher = DefaultHasher::new();
    (&cert, &key).hash(&mut hasher);
    Ok(((cert, key), hasher.finish()))
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

/// Just enough DER to read a certificate's notAfter, for the expiry metric.
mod der {
    /// Reads one TLV at `input`; returns (tag, contents, rest).
    fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
        let (&tag, rest) = input.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (length, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 || rest.len() < count {
                return None;
            }
            let length = rest[..count].iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            (length, &rest[count..])
        };
        (rest.len() >= length).then(|| (tag, &rest[..length], &rest[length..]))
    }

    /// Certificate -> tbsCertificate -> [version] serial signature issuer validity.notAfter
    pub fn not_after(certificate: &[u8]) -> Option<i64> {
        let (_, certificate, _) = tlv(certificate)?;
        let (_, tbs, _) = tlv(certificate)?;
        let mut rest = tbs;
        let (tag, _, after) = tlv(rest)?;
        if tag == 0xa0 {
            rest = after; // explicit version
        }
        for _ in 0..3 {
            rest = tlv(rest)?.2; // serialNumber, signature, issuer
        }
        let (_, validity, _) = tlv(rest)?;
        let (_, _, after_not_before) = tlv(validity)?;
        let (tag, time, _) = tlv(after_not_before)?;
        parse_time(tag, std::str::from_utf8(time).ok()?)
    }

    /// UTCTime (YYMMDDHHMMSSZ) or GeneralizedTime (YYYYMMDDHHMMSSZ) to Unix seconds.
    fn parse_time(tag: u8, text: &str) -> Option<i64> {
        let digits = text.strip_suffix('Z')?;
        let (year, rest) = match tag {
            0x17 => {
                let yy: i64 = digits.get(..2)?.parse().ok()?;
                (if yy >= 50 { 1900 + yy } else { 2000 + yy }, digits.get(2..)?)
            }
            0x18 => (digits.get(..4)?.parse().ok()?, digits.get(4..)?),
            _ => return None,
        };
        let field = |i: usize| -> Option<i64> { rest.get(i..i + 2)?.parse().ok() };
        let (month, day, hour, minute, second) = (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
        Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
        let year = if month <= 2 { year - 1 } else { year };
        let era = year.div_euclid(400);
        let year_of_era = year - era * 400;
        let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        era * 146_097 + day_of_era - 719_468
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn dates() {
            assert_eq!(days_from_civil(1970, 1, 1), 0);
            assert_eq!(parse_time(0x17, "300101000000Z"), Some(1_893_456_000));
            assert_eq!(parse_time(0x18, "20991231235959Z"), Some(4_102_444_799));
            assert_eq!(parse_time(0x17, "garbage"), None);
        }

        #[test]
        fn reads_not_after_from_a_real_certificate() {
            let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
            params.not_after = rcgen::date_time_ymd(2031, 6, 15);
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = params.self_signed(&key).unwrap();
            assert_eq!(not_after(cert.der()), Some(1_939_248_000));
            assert_eq!(not_after(&cert.der()[..40]), None, "truncated DER is not a date");
        }
    }
}
