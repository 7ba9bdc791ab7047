//! The audit: on the one replica that holds a Lease, every evaluation already
//! stored is judged again through the rules a create goes through
//! ([`admission::audit`]), after the cluster view or the evaluations change
//! (once they have been quiet for `--audit-debounce`) and every
//! `--audit-interval`. What it finds goes where owners look (a Warning Event
//! on the workload, [`events`]), where policy teams look (a PolicyReport per
//! namespace, [`policy_report`]) and to the metrics (`audit_findings`).
//!
//! The Lease is kube-lease-manager's: it is kept up with kube 5 (no second
//! copy of kube in the build), takes the lease by server-side apply so two
//! replicas cannot both win, tolerates clock skew, and releases the lease when
//! its channel closes, which a graceful shutdown does, so the other replica
//! takes over at once rather than after the lease expires.
//!
//! The audit judges from the watch caches alone, without the live lookups a
//! review makes before a denial: those are rationed for reviews, and a
//! finding a lagging watch caused is gone a round later (rounds wait for the
//! watches to be quiet).

mod events;
pub mod policy_report;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_lease_manager::LeaseManagerBuilder;

use super::duration;
use super::shutdown::{Phase, Shutdown};
use crate::admission::audit::{Reported, audit_stored};
use crate::admission::{Offline, run_offline};
use crate::cache::ClusterCache;
use crate::cache::evaluations::Evaluations;
use crate::config::Config;
use crate::telemetry::{AuditWriteLabels, FindingLabels, Metrics};
use events::EventWriter;
use policy_report::PolicyReports;

/// At most this many Events are looked up or written in one round: a change
/// that makes thousands of findings at once is reported over a few rounds,
/// a debounce apart, rather than as one burst at the API server.
pub const MOST_EVENT_CALLS_PER_ROUND: usize = 500;

/// At most this many namespaces are counted apart in `audit_findings`; the
/// rest as `(other)`, so the series stay bounded however many namespaces have findings.
pub const MOST_FINDING_NAMESPACES: usize = 100;

#[derive(Debug, Clone, clap::Args)]
pub struct AuditArgs {
    /// How often every stored evaluation is judged again, changed or not; 0s
    /// turns the audit off.
    #[arg(long, env = "EVAL_ADMISSION_AUDIT_INTERVAL", default_value = "10m",
          value_parser = duration::within(Duration::ZERO, Duration::from_secs(24 * 3600)))]
    pub audit_interval: Duration,
    /// How long the view and the evaluations must be quiet after a change
    /// before the audit judges again.
    #[arg(long, env = "EVAL_ADMISSION_AUDIT_DEBOUNCE", default_value = "2s",
          value_parser = duration::within(Duration::from_millis(100), Duration::from_secs(300)))]
    pub audit_debounce: Duration,
    /// The Lease, in the server's namespace, that picks the one replica that audits.
    #[arg(long, env = "EVAL_ADMISSION_AUDIT_LEASE", default_value = "eval-admission-audit")]
    pub audit_lease: String,
    /// How long a replica that stopped renewing keeps the Lease: how late a
    /// killed holder is replaced.
    #[arg(long, env = "EVAL_ADMISSION_AUDIT_LEASE_DURATION", default_value = "15s",
          value_parser = duration::within(Duration::from_secs(5), Duration::from_secs(300)))]
    pub audit_lease_duration: Duration,
    /// This replica's name in the Lease and its Events (the Deployment sets the pod's name).
    #[arg(long, env = "POD_NAME")]
    pub audit_identity: Option<String>,
}

impl AuditArgs {
    pub fn is_on(&self) -> bool {
        !self.audit_interval.is_zero()
    }
}

/// The audit, until the shutdown begins; then it gives the Lease up.
pub async fn run(
    client: kube::Client,
    cache: Arc<ClusterCache>,
    config: Arc<Config>,
    metrics: Arc<Metrics>,
    args: AuditArgs,
    shutdown: Shutdown,
) {
    metrics.audit_enabled.set(1);
    let evaluations = Arc::new(Evaluations::default());
    let _watches = evaluations.watch(client.clone(), config.clone());
    let identity = args.audit_identity.clone().unwrap_or_else(default_identity);
    let namespace = client.default_namespace().to_string();
    let seconds = args.audit_lease_duration.as_secs();
    let manager = loop {
        let built = LeaseManagerBuilder::new(client.clone(), &args.audit_lease)
            .with_namespace(&namespace)
            .with_identity(&identity)
            .with_duration(seconds)
            .with_grace((seconds / 3).max(1))
            .build()
            .await;
        match built {
            Ok(manager) => break manager,
            Err(error) => tracing::warn!(%error, lease = %args.audit_lease, "cannot use the audit lease; trying again"),
        }
        tokio::select! {
            () = shutdown.reached(Phase::Draining) => return,
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    };
    let (mut leading, lease_task) = manager.watch().await;
    let mut auditor = Auditor {
        events: EventWriter::new(client.clone(), identity.clone()),
        reports: PolicyReports::new(client),
        metrics: metrics.clone(),
        counted: HashSet::new(),
    };
    loop {
        tokio::select! {
            () = shutdown.reached(Phase::Draining) => break,
            held = leading.wait_for(|held| *held) => if held.is_err() { break },
        }
        tracing::info!(%identity, lease = %args.audit_lease, "holding the audit lease: auditing");
        metrics.audit_leader.set(1);
        let lost = tokio::select! {
            () = shutdown.reached(Phase::Draining) => false,
            _ = leading.wait_for(|held| !*held) => true,
            () = auditor.lead(&cache, &evaluations, &config, &args) => false,
        };
        metrics.audit_leader.set(0);
        auditor.stand_down();
        if !lost {
            break;
        }
        tracing::warn!(%identity, "lost the audit lease");
    }
    // Closing the channel makes the lease task give the Lease up.
    drop(leading);
    let _ = tokio::time::timeout(Duration::from_secs(5), lease_task).await;
    tracing::info!(%identity, "audit stopped; lease released");
}

fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{}-{}", host.trim(), std::process::id())
}

struct Auditor {
    events: EventWriter,
    reports: PolicyReports,
    metrics: Arc<Metrics>,
    /// The series of the findings gauge set by the last round.
    counted: HashSet<FindingLabels>,
}

impl Auditor {
    /// Audits round after round while this replica leads (cancelled when it stops).
    async fn lead(&mut self, cache: &ClusterCache, evaluations: &Evaluations, config: &Config, args: &AuditArgs) {
        cache.synced().await;
        while !evaluations.is_synced() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        loop {
            let seen = (cache.changes(), *evaluations.subscribe().borrow());
            let started = Instant::now();
            // CPU-bound for a while with many evaluations: off the async workers.
            let findings = tokio::task::block_in_place(|| judge_all(cache, evaluations, config));
            self.metrics.audit_round_seconds.set(started.elapsed().as_secs_f64());
            self.metrics.audit_evaluations.set(i64::try_from(evaluations.len()).unwrap_or(i64::MAX));
            let budget_spent = self.publish(&findings).await;
            self.metrics.audit_rounds.inc();
            tracing::debug!(findings = findings.len(), seconds = started.elapsed().as_secs_f64(), "audit round");
            if budget_spent {
                // The rest of the Events next, a debounce from now.
                tokio::time::sleep(args.audit_debounce).await;
            } else {
                next_round(cache, evaluations, args, seen).await;
            }
        }
    }

    /// Reports the round's findings; true when the round's Event budget was
    /// spent before every finding had its Event. A refused write ends the
    /// round's Events too (RBAC or a quota would refuse the rest), counted and
    /// logged once; they are tried again next round.
    async fn publish(&mut self, findings: &[Reported]) -> bool {
        let mut by_namespace: BTreeMap<&str, Vec<&Reported>> = BTreeMap::new();
        for found in findings {
            by_namespace.entry(found.namespace.as_str()).or_default().push(found);
        }
        self.count(&by_namespace);
        let mut calls = 0;
        let mut budget_spent = false;
        for found in findings {
            if calls == MOST_EVENT_CALLS_PER_ROUND {
                budget_spent = true;
                break;
            }
            match self.events.report(found).await {
                Ok(called) => calls += usize::from(called),
                Err(error) => {
                    self.failed("event", &error);
                    break;
                }
            }
        }
        self.events.keep_only(&findings.iter().collect::<Vec<_>>());
        if let Err(error) = self.reports.publish(&by_namespace).await {
            self.failed("policyreport", &error);
        }
        budget_spent
    }

    /// The findings gauge made to say these findings: series no longer found
    /// are removed, never the whole family at once (a scrape in between would
    /// see none and reset an alert's `for`).
    fn count(&mut self, by_namespace: &BTreeMap<&str, Vec<&Reported>>) {
        let mut counts: BTreeMap<(&'static str, &'static str, String), i64> = BTreeMap::new();
        for (index, (namespace, found)) in by_namespace.iter().enumerate() {
            let namespace = if index < MOST_FINDING_NAMESPACES { namespace.to_string() } else { "(other)".into() };
            for found in found {
                *counts.entry((found.reason, found.enforcement, namespace.clone())).or_default() += 1;
            }
        }
        let current: HashSet<FindingLabels> = counts
            .iter()
            .map(|((reason, enforcement, namespace), _)| FindingLabels {
                reason,
                enforcement,
                namespace: namespace.clone(),
            })
            .collect();
        for labels in self.counted.difference(&current) {
            self.metrics.audit_findings.remove(labels);
        }
        for ((reason, enforcement, namespace), count) in counts {
            self.metrics.audit_findings.get_or_create(&FindingLabels { reason, enforcement, namespace }).set(count);
        }
        self.counted = current;
    }

    fn failed(&self, target: &'static str, error: &kube::Error) {
        tracing::warn!(target_kind = target, %error, "audit write failed; trying again next round");
        self.metrics.audit_write_errors.get_or_create(&AuditWriteLabels { target }).inc();
    }

    /// No longer the holder: nothing of the findings is exported from here.
    fn stand_down(&mut self) {
        self.count(&BTreeMap::new());
        self.reports.stand_down();
    }
}

/// Every stored evaluation judged against the view as it is now, each under
/// a read guard of its own (a watch update waits for one workload, not the round).
pub fn judge_all(cache: &ClusterCache, evaluations: &Evaluations, config: &Config) -> Vec<Reported> {
    let mut findings: Vec<Reported> = evaluations
        .all()
        .iter()
        .filter_map(|stored| {
            let view = cache.read();
            run_offline(audit_stored(config, &Offline(&*view), stored)).ok().flatten()
        })
        .collect();
    crate::admission::audit::sort(&mut findings);
    findings
}

/// Waits for the next round: the view or the evaluations changed and then
/// stayed quiet for the debounce (or changed for ten debounces on end), or
/// the interval passed.
async fn next_round(cache: &ClusterCache, evaluations: &Evaluations, args: &AuditArgs, mut seen: (u64, u64)) {
    let due = Instant::now() + args.audit_interval;
    let mut changed_at: Option<Instant> = None;
    loop {
        let left = due.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        tokio::time::sleep(args.audit_debounce.min(left)).await;
        let now = (cache.changes(), *evaluations.subscribe().borrow());
        if now != seen {
            seen = now;
            let first = *changed_at.get_or_insert_with(Instant::now);
            if first.elapsed() < args.audit_debounce * 10 {
                continue;
            }
        }
        if changed_at.is_some() {
            return;
        }
    }
}
