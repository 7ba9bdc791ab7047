//! The test certificate authority (rcgen): the API server's client CA, the
//! issuer of every serving certificate, and the caBundle webhooks get; and
//! [`TestPki`], a CA with one serving certificate for localhost.

use std::path::{Path, PathBuf};

use anyhow::Result;
use base64::Engine as _;
use serde_json::json;

/// The environment's certificate authority: the API server's client CA, the
/// issuer of every serving certificate here, and the caBundle webhooks get.
pub struct Ca {
    certificate: rcgen::Certificate,
    key: rcgen::KeyPair,
    pub pem: String,
}

/// What a certificate is for.
pub enum Usage<'a> {
    /// A server reached by these IP addresses and DNS names.
    Server(&'a [&'a str]),
    /// A client the API server authenticates as `user` in `group`.
    Client { user: &'a str, group: &'a str },
}

impl Ca {
    pub fn new() -> Result<Self> {
        let key = rcgen::KeyPair::generate()?;
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, "eval-admission-test-ca");
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let certificate = params.self_signed(&key)?;
        let pem = certificate.pem();
        Ok(Self { certificate, key, pem })
    }

    /// The CA as a webhook's or kubeconfig's base64 `caBundle`.
    pub fn bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.pem)
    }

    /// A new key and a certificate for it, as PEM (certificate, key).
    pub fn issue(&self, common_name: &str, usage: Usage) -> Result<(String, String)> {
        let key = rcgen::KeyPair::generate()?;
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(rcgen::DnType::CommonName, common_name);
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature, rcgen::KeyUsagePurpose::KeyEncipherment];
        match usage {
            Usage::Server(names) => {
                params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
                for name in names {
                    params.subject_alt_names.push(match name.parse() {
                        Ok(ip) => rcgen::SanType::IpAddress(ip),
                        Err(_) => rcgen::SanType::DnsName((*name).try_into()?),
                    });
                }
            }
            Usage::Client { user, group } => {
                params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
                // The API server reads the user from CN and groups from O.
                params.distinguished_name.push(rcgen::DnType::CommonName, user);
                params.distinguished_name.push(rcgen::DnType::OrganizationName, group);
            }
        }
        let certificate = params.signed_by(&key, &self.certificate, &self.key)?;
        Ok((certificate.pem(), key.serialize_pem()))
    }

    /// [`Ca::issue`], written to DIR/NAME.crt and DIR/NAME.key.
    pub fn issue_files(&self, dir: &Path, name: &str, usage: Usage) -> Result<(PathBuf, PathBuf)> {
        let (cert_pem, key_pem) = self.issue(name, usage)?;
        std::fs::create_dir_all(dir)?;
        let (cert, key) = (dir.join(format!("{name}.crt")), dir.join(format!("{name}.key")));
        std::fs::write(&cert, cert_pem)?;
        std::fs::write(&key, key_pem)?;
        Ok((cert, key))
    }

    /// A kubeconfig for `user` (in `group`) at `server`.
    pub fn kubeconfig(&self, path: &Path, server: &str, user: &str, group: &str) -> Result<()> {
        let (cert, key) = self.issue(user, Usage::Client { user, group })?;
        let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
        let config = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "eval-admission", "cluster": {"server": server, "certificate-authority-data": self.bundle()}}],
            "users": [{"name": user, "user": {"client-certificate-data": b64(&cert), "client-key-data": b64(&key)}}],
            "contexts": [{"name": user, "context": {"cluster": "eval-admission", "user": user}}],
            "current-context": user,
        });
        std::fs::write(path, serde_json::to_string_pretty(&config)?)?;
        Ok(())
    }
}

/// A CA and a serving certificate for localhost / 127.0.0.1.
pub struct TestPki {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestPki {
    pub fn new(common_name: &str) -> Self {
        let ca = Ca::new().expect("a test CA");
        let (cert_pem, key_pem) =
            ca.issue(common_name, Usage::Server(&["localhost", "127.0.0.1"])).expect("a serving certificate");
        Self { ca_pem: ca.pem, cert_pem, key_pem }
    }

    /// The certificate and key as DIR/tls.crt and DIR/tls.key.
    pub fn write(&self, dir: &Path) -> (PathBuf, PathBuf) {
        std::fs::create_dir_all(dir).unwrap();
        let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        std::fs::write(&cert, &self.cert_pem).unwrap();
        std::fs::write(&key, &self.key_pem).unwrap();
        (cert, key)
    }
}
