//! The self-managed authority and serving pairs: made with rcgen, read back
//! from PEM, and checked with webpki the way a TLS client would check them
//! before anything is written or served.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use time::OffsetDateTime;

use crate::server::der;

/// Backdating of every certificate made: a verifier whose clock is a little
/// behind still takes it.
const BACKDATE_SECONDS: i64 = 300;

/// One certificate as stored (PEM) with the facts renewal reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cert {
    pub der: Vec<u8>,
    pub pem: String,
    pub not_before: i64,
    pub not_after: i64,
}

impl Cert {
    fn from_der(der: Vec<u8>) -> Option<Self> {
        let (not_before, not_after) = der::validity(&der)?;
        let pem = pem_block("CERTIFICATE", &der);
        Some(Self { der, pem, not_before, not_after })
    }

    /// Renewal is due once a third of its lifetime is left (cert-manager's
    /// default `renewBefore`).
    pub fn renewal_due(&self, now: i64) -> bool {
        (self.not_after - now) * 3 < self.not_after - self.not_before
    }

    pub fn expired(&self, now: i64) -> bool {
        self.not_after <= now
    }
}

/// Every certificate in a PEM text, in order; blocks that are not
/// certificates, or whose validity does not read, are left out.
pub fn parse_certs(pem: &[u8]) -> Vec<Cert> {
    rustls_pemfile::certs(&mut std::io::BufReader::new(pem))
        .filter_map(|cert| Cert::from_der(cert.ok()?.to_vec()))
        .collect()
}

/// A new authority valid from `now` (backdated) for `validity_seconds`: the
/// certificate and its key (PEM).
pub fn new_authority(now: i64, validity_seconds: i64) -> Result<(Cert, String), rcgen::Error> {
    let key = KeyPair::generate()?;
    // A name of its own per authority: during a rotation the old and the new are
    // trusted side by side, and a verifier tells them apart by name first.
    let cert = authority_params(&format!("eval-admission CA {now}"), now, validity_seconds)?.self_signed(&key)?;
    let cert = Cert::from_der(cert.der().to_vec()).ok_or(rcgen::Error::CouldNotParseCertificate)?;
    Ok((cert, key.serialize_pem()))
}

fn authority_params(name: &str, now: i64, validity_seconds: i64) -> Result<CertificateParams, rcgen::Error> {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    (params.not_before, params.not_after) = window(now, validity_seconds)?;
    Ok(params)
}

fn window(now: i64, validity_seconds: i64) -> Result<(OffsetDateTime, OffsetDateTime), rcgen::Error> {
    let at = |seconds| OffsetDateTime::from_unix_timestamp(seconds).map_err(|_| rcgen::Error::Time);
    Ok((at(now - BACKDATE_SECONDS)?, at(now.saturating_add(validity_seconds))?))
}

/// A serving pair from `authority`: the chain (leaf, then the authority) and
/// the leaf's key, both PEM. Refused unless it verifies against the authority
/// for every name, as the API server will verify it.
pub fn issue_serving(
    authority: &Cert,
    authority_key_pem: &str,
    names: &[String],
    now: i64,
    validity_seconds: i64,
) -> Result<(String, String), String> {
    let authority_key = KeyPair::from_pem(authority_key_pem).map_err(|e| format!("the authority's key: {e}"))?;
    let subject = webpki::EndEntityCert::try_from(&CertificateDer::from(authority.der.as_slice()))
        .map_err(|e| format!("the authority's certificate: {e}"))?
        .subject()
        .to_vec();
    let [name] = &der::common_names(&subject)[..] else {
        return Err("the authority's certificate has no single Common Name".into());
    };
    // rcgen signs with the issuer's name and key identifier: rebuilt from the
    // stored certificate's Common Name and key, they are the stored ones.
    let issuer = authority_params(name, now, 1)
        .and_then(|params| params.self_signed(&authority_key))
        .map_err(|e| format!("the authority: {e}"))?;
    let mut params = CertificateParams::new(names.to_vec()).map_err(|e| format!("the serving names: {e}"))?;
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, names.first().map_or("eval-admission", String::as_str));
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    // Never past the authority: a chain is only as good as its shortest link.
    let validity = validity_seconds.min(authority.not_after - now);
    (params.not_before, params.not_after) = window(now, validity).map_err(|e| e.to_string())?;
    let key = KeyPair::generate().map_err(|e| e.to_string())?;
    let leaf = params.signed_by(&key, &issuer, &authority_key).map_err(|e| format!("signing: {e}"))?;
    if !verifies(leaf.der(), std::slice::from_ref(authority), names, now) {
        return Err(format!("the new serving certificate does not verify against authority \"{name}\""));
    }
    Ok((format!("{}{}", leaf.pem(), authority.pem), key.serialize_pem()))
}

/// Whether `key_pem` is `authority`'s private key: a Secret edited by hand
/// may pair one authority's certificate with another's key, which could sign
/// nothing its webhooks trust.
pub fn is_key_of(authority: &Cert, key_pem: &str) -> bool {
    let Ok(key) = KeyPair::from_pem(key_pem) else { return false };
    let der = CertificateDer::from(authority.der.as_slice());
    webpki::EndEntityCert::try_from(&der).is_ok_and(|cert| *cert.subject_public_key_info() == *key.public_key_der())
}

/// Whether `leaf` (DER) verifies, at `now`, as a serving certificate for
/// every one of `names` against any of `authorities`.
pub fn verifies(leaf: &[u8], authorities: &[Cert], names: &[String], now: i64) -> bool {
    let leaf = CertificateDer::from(leaf);
    let Ok(end_entity) = webpki::EndEntityCert::try_from(&leaf) else { return false };
    let ders: Vec<CertificateDer<'_>> =
        authorities.iter().map(|authority| CertificateDer::from(authority.der.as_slice())).collect();
    let anchors: Vec<_> = ders.iter().filter_map(|der| webpki::anchor_from_trusted_cert(der).ok()).collect();
    let Ok(seconds) = u64::try_from(now) else { return false };
    let algorithms = rustls::crypto::ring::default_provider().signature_verification_algorithms.all;
    let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(seconds));
    end_entity.verify_for_usage(algorithms, &anchors, &[], time, webpki::KeyUsage::server_auth(), None, None).is_ok()
        && names.iter().all(|name| {
            ServerName::try_from(name.as_str())
                .is_ok_and(|name| end_entity.verify_is_valid_for_subject_name(&name).is_ok())
        })
}

fn pem_block(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem + &format!("-----END {label}-----\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;
    const DAY: i64 = 86_400;

    fn names() -> Vec<String> {
        vec!["eval-admission.ns.svc".into(), "127.0.0.1".into()]
    }

    #[test]
    fn a_pair_issued_from_a_stored_authority_verifies_against_it_and_no_other() {
        let (authority, key) = new_authority(NOW, 365 * DAY).unwrap();
        let (other, _) = new_authority(NOW + 1, 365 * DAY).unwrap();
        // Read back from PEM, as from the Secret.
        let authority = parse_certs(authority.pem.as_bytes()).remove(0);
        let (chain, leaf_key) = issue_serving(&authority, &key, &names(), NOW, 90 * DAY).unwrap();
        let chain = parse_certs(chain.as_bytes());
        assert_eq!(chain.len(), 2, "leaf, then the authority");
        assert_eq!(chain[1], authority);
        assert!(verifies(&chain[0].der, std::slice::from_ref(&authority), &names(), NOW));
        assert!(verifies(&chain[0].der, &[other.clone(), authority.clone()], &names(), NOW));
        assert!(!verifies(&chain[0].der, &[other], &names(), NOW), "another authority");
        assert!(!verifies(&chain[0].der, std::slice::from_ref(&authority), &["elsewhere.svc".into()], NOW));
        assert!(!verifies(&chain[0].der, std::slice::from_ref(&authority), &names(), NOW + 91 * DAY), "expired");
        assert!(leaf_key.contains("PRIVATE KEY"));
        // The pair loads as the server loads one.
        let store = crate::server::tls::CertStore::empty();
        let chain_pem: String = chain.iter().map(|cert| cert.pem.as_str()).collect();
        assert!(store.offer(chain_pem.as_bytes(), leaf_key.as_bytes()).unwrap());
    }

    #[test]
    fn validity_is_backdated_and_never_past_the_authority() {
        let (authority, key) = new_authority(NOW, 30 * DAY).unwrap();
        assert_eq!((authority.not_before, authority.not_after), (NOW - BACKDATE_SECONDS, NOW + 30 * DAY));
        let (chain, _) = issue_serving(&authority, &key, &names(), NOW + DAY, 90 * DAY).unwrap();
        let leaf = parse_certs(chain.as_bytes()).remove(0);
        assert_eq!((leaf.not_before, leaf.not_after), (NOW + DAY - BACKDATE_SECONDS, NOW + 30 * DAY));
    }

    #[test]
    fn a_key_that_is_not_the_authoritys_is_refused() {
        let (authority, _) = new_authority(NOW, 365 * DAY).unwrap();
        let (_, wrong_key) = new_authority(NOW, 365 * DAY).unwrap();
        let error = issue_serving(&authority, &wrong_key, &names(), NOW, 90 * DAY).unwrap_err();
        assert!(error.contains("does not verify"), "{error}");
        assert!(issue_serving(&authority, "not a key", &names(), NOW, 90 * DAY).is_err());
    }

    #[test]
    fn only_an_authoritys_own_key_is_its_key() {
        let (authority, key) = new_authority(NOW, 365 * DAY).unwrap();
        let (_, other_key) = new_authority(NOW, 365 * DAY).unwrap();
        assert!(is_key_of(&authority, &key));
        assert!(!is_key_of(&authority, &other_key));
        assert!(!is_key_of(&authority, "not a key"));
    }

    #[test]
    fn renewal_is_due_with_a_third_of_the_lifetime_left() {
        let cert = Cert { der: vec![], pem: String::new(), not_before: 0, not_after: 90 };
        assert!(!cert.renewal_due(59));
        assert!(!cert.renewal_due(60));
        assert!(cert.renewal_due(61));
        assert!(!cert.expired(89));
        assert!(cert.expired(90));
    }

    #[test]
    fn parse_certs_skips_what_is_not_a_certificate() {
        let (authority, key) = new_authority(NOW, DAY).unwrap();
        let text = format!("{key}{}garbage\n", authority.pem);
        assert_eq!(parse_certs(text.as_bytes()), vec![authority]);
        assert!(parse_certs(b"").is_empty());
    }
}
