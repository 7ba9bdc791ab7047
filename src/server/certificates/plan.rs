//! What the self-managed certificates need next, decided from what is stored
//! and what the webhooks trust: one step per round, so every write is made
//! on a fresh read and any replica may make it.
//!
//! The order keeps one promise: no replica ever serves a pair the API server
//! cannot verify. An authority is trusted (published in every webhook's
//! `caBundle`) before a pair it signed is made, and stays trusted, beside
//! its successor, for as long as pairs it signed may still be served.

use super::pki::{self, Cert};

/// Authorities trusted at once, newest first: the current one, the one before
/// it (whose pairs replicas may still serve) and one more, for a rotation
/// forced during a rotation.
pub const MOST_TRUSTED: usize = 3;

/// The Secret, as read back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stored {
    /// `ca.crt`: the authorities to trust, newest first.
    pub trusted: Vec<Cert>,
    /// `ca.key`: the newest authority's key (PEM).
    pub authority_key: Option<String>,
    /// `tls.crt` (leaf, then its authority) and `tls.key`.
    pub serving: Option<(Vec<Cert>, String)>,
}

impl Stored {
    /// An authority to sign with: the newest, unexpired, with its key.
    pub fn usable(&self, now: i64) -> bool {
        self.authority_key.is_some() && self.trusted.first().is_some_and(|newest| !newest.expired(now))
    }

    /// `ca.crt` as written to the webhooks.
    pub fn bundle(&self) -> String {
        self.trusted.iter().map(|cert| cert.pem.as_str()).collect()
    }
}

/// What the round sees.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub now: i64,
    pub stored: Option<&'a Stored>,
    /// The authorities every webhook of every configuration trusts now.
    pub trusted_by_webhooks: &'a [Cert],
    /// Whether every webhook's `caBundle` is the stored `ca.crt`.
    pub bundles_current: bool,
    /// Whether the newest stored authority has been trusted by every webhook
    /// for the grace period that lets every API server see it.
    pub newest_settled: bool,
}

/// What the serving certificate must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The names the API server connects to (the Service's DNS names).
    pub names: Vec<String>,
    pub authority_validity_seconds: i64,
    pub serving_validity_seconds: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing usable is stored (a fresh install, or the Secret deleted to
    /// force a rotation): a new authority and pair, trusting beside it what
    /// the webhooks trust now, so the pairs served meanwhile stay good.
    Bootstrap {
        keep: Vec<Cert>,
    },
    /// Copy the stored `ca.crt` into every webhook's `caBundle`.
    Publish,
    /// The newest authority has a third of its life left: a successor, trusted
    /// first, signing nothing until it is published.
    NewAuthority,
    /// A pair from the newest authority: the stored one is due for renewal,
    /// from an older authority, or not for the names wanted.
    Reissue,
    /// Expired authorities, or more than [`MOST_TRUSTED`], no longer trusted.
    Prune,
    /// A new pair is due, and the newest authority is not yet settled.
    Wait,
    Settled,
}

pub fn next(facts: Facts<'_>, settings: &Settings) -> Step {
    let now = facts.now;
    let Some(stored) = facts.stored.filter(|stored| stored.usable(now)) else {
        let keep = facts.trusted_by_webhooks.iter().filter(|cert| !cert.expired(now));
        return Step::Bootstrap { keep: keep.take(MOST_TRUSTED - 1).cloned().collect() };
    };
    if !facts.bundles_current {
        return Step::Publish;
    }
    let newest = &stored.trusted[0];
    if newest.renewal_due(now) {
        return Step::NewAuthority;
    }
    let serving_current = stored.serving.as_ref().is_some_and(|(chain, _)| {
        chain.first().is_some_and(|leaf| {
            !leaf.renewal_due(now) && pki::verifies(&leaf.der, std::slice::from_ref(newest), &settings.names, now)
        })
    });
    if !serving_current {
        return if facts.newest_settled { Step::Reissue } else { Step::Wait };
    }
    if stored.trusted.len() > MOST_TRUSTED || stored.trusted.iter().any(|cert| cert.expired(now)) {
        return Step::Prune;
    }
    Step::Settled
}

/// The stored authorities after [`Step::Prune`]: unexpired, at most [`MOST_TRUSTED`].
pub fn pruned(trusted: &[Cert], now: i64) -> Vec<Cert> {
    trusted.iter().filter(|cert| !cert.expired(now)).take(MOST_TRUSTED).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::certificates::pki::{issue_serving, new_authority, parse_certs};

    const NOW: i64 = 1_800_000_000;
    const DAY: i64 = 86_400;

    fn settings() -> Settings {
        Settings {
            names: vec!["eval-admission.ns.svc".into()],
            authority_validity_seconds: 730 * DAY,
            serving_validity_seconds: 90 * DAY,
        }
    }

    /// A stored state: an authority made at `made`, a pair from it issued at `issued`.
    fn stored(made: i64, issued: i64) -> Stored {
        let (authority, key) = new_authority(made, 730 * DAY).unwrap();
        let (chain, leaf_key) = issue_serving(&authority, &key, &settings().names, issued, 90 * DAY).unwrap();
        Stored {
            trusted: vec![authority],
            authority_key: Some(key),
            serving: Some((parse_certs(chain.as_bytes()), leaf_key)),
        }
    }

    fn facts<'a>(stored: Option<&'a Stored>, trusted: &'a [Cert]) -> Facts<'a> {
        Facts {
            now: NOW,
            stored,
            trusted_by_webhooks: trusted,
            bundles_current: stored.is_some_and(|stored| stored.trusted == trusted),
            newest_settled: true,
        }
    }

    #[test]
    fn a_fresh_install_bootstraps_and_a_deleted_secret_keeps_what_the_webhooks_trust() {
        assert_eq!(next(facts(None, &[]), &settings()), Step::Bootstrap { keep: vec![] });
        let old = stored(NOW - DAY, NOW - DAY);
        let Step::Bootstrap { keep } = next(facts(None, &old.trusted), &settings()) else { panic!() };
        assert_eq!(keep, old.trusted);
        // An expired one is not kept, and at most two beside the new one.
        let expired = stored(NOW - 800 * DAY, NOW - 800 * DAY).trusted;
        let many = [expired.clone(), old.trusted.clone(), stored(NOW, NOW).trusted, stored(NOW, NOW).trusted].concat();
        let Step::Bootstrap { keep } = next(facts(None, &many), &settings()) else { panic!() };
        assert_eq!(keep, many[1..3].to_vec());
    }

    #[test]
    fn an_unusable_secret_bootstraps() {
        let mut without_key = stored(NOW, NOW);
        without_key.authority_key = None;
        assert!(matches!(next(facts(Some(&without_key), &[]), &settings()), Step::Bootstrap { .. }));
        let expired = stored(NOW - 731 * DAY, NOW - 731 * DAY);
        assert!(matches!(next(facts(Some(&expired), &expired.trusted), &settings()), Step::Bootstrap { .. }));
        assert!(matches!(next(facts(Some(&Stored::default()), &[]), &settings()), Step::Bootstrap { .. }));
    }

    #[test]
    fn the_bundle_is_published_before_anything_else() {
        let current = stored(NOW - 700 * DAY, NOW - 89 * DAY); // both due
        assert_eq!(next(facts(Some(&current), &[]), &settings()), Step::Publish);
        assert_eq!(next(facts(Some(&current), &current.trusted), &settings()), Step::NewAuthority);
    }

    #[test]
    fn a_pair_is_reissued_when_due_from_another_authority_or_for_other_names_once_settled() {
        let settled = stored(NOW - DAY, NOW - DAY);
        assert_eq!(next(facts(Some(&settled), &settled.trusted), &settings()), Step::Settled);
        let due = stored(NOW - 100 * DAY, NOW - 61 * DAY);
        assert_eq!(next(facts(Some(&due), &due.trusted), &settings()), Step::Reissue);
        let not_yet = stored(NOW - 100 * DAY, NOW - 59 * DAY);
        assert_eq!(next(facts(Some(&not_yet), &not_yet.trusted), &settings()), Step::Settled);
        let mut unsettled = facts(Some(&due), &due.trusted);
        unsettled.newest_settled = false;
        assert_eq!(next(unsettled, &settings()), Step::Wait);
        // A successor authority trusted first: the pair from the old one is reissued.
        let mut rotated = settled.clone();
        let (successor, key) = new_authority(NOW, 730 * DAY).unwrap();
        rotated.trusted.insert(0, successor);
        rotated.authority_key = Some(key);
        assert_eq!(next(facts(Some(&rotated), &rotated.trusted), &settings()), Step::Reissue);
        // Other names wanted (another namespace or Service).
        let moved = Settings { names: vec!["eval-admission.other.svc".into()], ..settings() };
        assert_eq!(next(facts(Some(&settled), &settled.trusted), &moved), Step::Reissue);
        // No pair at all.
        let mut bare = settled.clone();
        bare.serving = None;
        assert_eq!(next(facts(Some(&bare), &bare.trusted), &settings()), Step::Reissue);
    }

    #[test]
    fn old_authorities_are_pruned_once_the_pair_is_current() {
        let mut current = stored(NOW - DAY, NOW - DAY);
        let expired = stored(NOW - 800 * DAY, NOW - 800 * DAY).trusted.remove(0);
        current.trusted.push(expired.clone());
        assert_eq!(next(facts(Some(&current), &current.trusted), &settings()), Step::Prune);
        assert_eq!(pruned(&current.trusted, NOW), current.trusted[..1].to_vec());
        // Exactly as many as are kept: nothing to prune (or it would be written every round).
        let mut full = stored(NOW - DAY, NOW - DAY);
        for _ in 1..MOST_TRUSTED {
            full.trusted.push(stored(NOW - DAY, NOW - DAY).trusted.remove(0));
        }
        assert_eq!(next(facts(Some(&full), &full.trusted), &settings()), Step::Settled);
        let mut many = stored(NOW - DAY, NOW - DAY);
        for _ in 0..MOST_TRUSTED {
            many.trusted.push(stored(NOW - DAY, NOW - DAY).trusted.remove(0));
        }
        assert_eq!(next(facts(Some(&many), &many.trusted), &settings()), Step::Prune);
        assert_eq!(pruned(&many.trusted, NOW), many.trusted[..MOST_TRUSTED].to_vec());
    }
}
