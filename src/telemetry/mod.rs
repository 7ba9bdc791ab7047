//! Logs and metrics, set up in one place.

mod batched_stdout;
mod json_lines;
#[cfg(test)]
mod monitoring;

pub use batched_stdout::DroppedLines;
use batched_stdout::FlushOnDrop;
use json_lines::JsonLines;

use std::io::IsTerminal;
use std::sync::atomic::{AtomicI64, AtomicU64};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

use tracing_subscriber::EnvFilter;

use crate::cluster::ObjectCounts;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// JSON when stdout is not a terminal (in a cluster), text on a terminal.
    Auto,
    Json,
    Text,
}

/// At most this many bytes of log lines wait for stdout (twice that while a
/// batch is being written): ~5,000 review lines, a few MiB of a 128 MiB
/// container. A stalled log reader costs lines, counted, never a review's time.
const LOG_BATCH_BYTES: usize = 2 * 1024 * 1024;
/// The longest line written; a longer one is cut, saying so. A review's line,
/// its caller's values cut (`CallerText`), stays under 11 KiB; this is
/// far over that, and a thirty-second of the batch, so one line never takes
/// the batch nor is dropped for its size alone.
const LOG_LINE_BYTES: usize = 64 * 1024;
/// How long a started batch gathers lines: how late a line may reach stdout.
const LOG_BATCH_WINDOW: Duration = Duration::from_millis(20);

/// Keeps the log writer running; dropping it writes what is left.
pub struct Logging {
    _flush_on_drop: FlushOnDrop,
    dropped: DroppedLines,
}

impl Logging {
    /// Lines the log writer dropped, for the metrics.
    pub fn dropped_lines(&self) -> DroppedLines {
        self.dropped.clone()
    }
}

/// Installs the global tracing subscriber over the batched stdout writer.
/// `RUST_LOG` overrides the default `info`.
pub fn init_logging(format: LogFormat) -> std::io::Result<Logging> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let json = match format {
        LogFormat::Json => true,
        LogFormat::Text => false,
        LogFormat::Auto => !std::io::stdout().is_terminal(),
    };
    let (writer, flush_on_drop) =
        batched_stdout::spawn(std::io::stdout(), LOG_BATCH_BYTES, LOG_LINE_BYTES, LOG_BATCH_WINDOW)?;
    let dropped = writer.dropped_lines();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer);
    // Colours only on a terminal: piped or in a file, their escapes are noise,
    // and a log whose only ESC bytes are a caller's is easier to check.
    let result = if json {
        builder.event_format(JsonLines).try_init()
    } else {
        builder.with_target(false).with_ansi(std::io::stdout().is_terminal()).try_init()
    };
    // Already installed (tests): keep the first.
    let _ = result;
    Ok(Logging { _flush_on_drop: flush_on_drop, dropped })
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReviewLabels {
    pub webhook: &'static str,
    pub kind: &'static str,
    pub operation: &'static str,
    pub decision: &'static str,
    pub reason: &'static str,
    /// The broken rule's enforcement (`Deny`, `Warn`, `Off`), or `none`.
    pub enforcement: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookLabels {
    pub webhook: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    pub webhook: &'static str,
    pub error: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ObjectLabels {
    pub kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ListenerLabels {
    /// `webhook` (HTTPS) or `admin`.
    pub listener: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProtocolLabels {
    pub listener: &'static str,
    /// `http/1.1` or `h2`, as ALPN chose.
    pub protocol: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClientRefusalLabels {
    /// `untrusted` (no chain to --client-ca-file) or `name` (none of --client-name).
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FindingLabels {
    pub reason: &'static str,
    /// The rule's enforcement: `Deny` or `Warn` (`Off` rules find nothing).
    pub enforcement: &'static str,
    /// The namespace, or `(other)` past the most namespaces counted apart.
    pub namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AuditWriteLabels {
    /// `event` or `policyreport`.
    pub target: &'static str,
}

/// A write of the self-managed certificates (server/certificates).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CertificateWriteLabels {
    /// `bootstrap`, `publish`, `new-authority`, `reissue` or `prune`.
    pub step: &'static str,
    /// `written`, `conflict` (another replica wrote first) or `failed`.
    pub outcome: &'static str,
}

/// Every metric the server exports.
pub struct Metrics {
    registry: Registry,
    pub reviews: Family<ReviewLabels, Counter>,
    pub review_errors: Family<ErrorLabels, Counter>,
    pub review_duration: Family<WebhookLabels, Histogram>,
    pub cache_synced: Gauge,
    pub cache_objects: Family<ObjectLabels, Gauge>,
    pub confirm_lookups: Family<ObjectLabels, Counter>,
    pub certificate_expiry: Gauge<i64, AtomicI64>,
    pub certificate_reloads: Counter<u64, AtomicU64>,
    pub certificate_reload_failures: Counter<u64, AtomicU64>,
    pub certificate_writes: Family<CertificateWriteLabels, Counter>,
    pub connections_open: Family<ListenerLabels, Gauge>,
    pub connections_refused: Family<ListenerLabels, Counter>,
    pub connections_evicted: Family<ListenerLabels, Counter>,
    pub connections_served: Family<ProtocolLabels, Counter>,
    pub watchers_running: Gauge,
    pub kueue_release_contradicted: Gauge,
    pub kueue_release_confirmed: Gauge,
    pub view_derivation_seconds: Gauge<f64, AtomicU64>,
    pub view_derived: Gauge,
    pub client_certificates_refused: Family<ClientRefusalLabels, Counter>,
    pub audit_findings: Family<FindingLabels, Gauge>,
    pub audit_enabled: Gauge,
    pub audit_leader: Gauge,
    pub audit_evaluations: Gauge,
    pub audit_rounds: Counter,
    pub audit_round_seconds: Gauge<f64, AtomicU64>,
    pub audit_write_errors: Family<AuditWriteLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("eval_admission");
        let reviews = Family::<ReviewLabels, Counter>::default();
        registry.register(
            "reviews",
            "Admission reviews answered, by webhook, kind, operation, decision, reason and enforcement",
            reviews.clone(),
        );
        let review_errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "review_errors",
            "Reviews answered with an HTTP error (the API server then applies failurePolicy)",
            review_errors.clone(),
        );
        let review_duration = Family::<WebhookLabels, Histogram>::new_with_constructor(|| {
            // 25 us .. ~0.4 s
            Histogram::new(exponential_buckets(0.000_025, 2.0, 15))
        });
        registry.register_with_unit(
            "review_duration",
            "Time from the request reaching the handler (its body read included) to the response, per webhook",
            prometheus_client::registry::Unit::Seconds,
            review_duration.clone(),
        );
        let cache_synced = Gauge::default();
        registry.register("cache_synced", "1 when the cluster view is loaded and synced", cache_synced.clone());
        let cache_objects = Family::<ObjectLabels, Gauge>::default();
        registry.register("cache_objects", "Cluster objects held in the view, by kind", cache_objects.clone());
        let confirm_lookups = Family::<ObjectLabels, Counter>::default();
        registry.register(
            "confirm_lookups",
            "Live lookups made before denying a missing LocalQueue, by result",
            confirm_lookups.clone(),
        );
        let certificate_expiry = Gauge::<i64, AtomicI64>::default();
        registry.register(
            "tls_certificate_expiry_timestamp_seconds",
            "notAfter of the serving certificate, in Unix seconds",
            certificate_expiry.clone(),
        );
        let certificate_reloads = Counter::<u64, AtomicU64>::default();
        registry.register(
            "tls_certificate_reloads",
            "Serving certificate reloads that took effect",
            certificate_reloads.clone(),
        );
        let certificate_reload_failures = Counter::<u64, AtomicU64>::default();
        registry.register(
            "tls_certificate_reload_failures",
            "Changed certificate files that could not be used (the last good pair stays)",
            certificate_reload_failures.clone(),
        );
        let certificate_writes = Family::<CertificateWriteLabels, Counter>::default();
        registry.register(
            "tls_certificate_writes",
            "Writes of the self-managed certificates (--tls-secret), by step and outcome",
            certificate_writes.clone(),
        );
        let connections_open = Family::<ListenerLabels, Gauge>::default();
        registry.register("connections_open", "Connections open, by listener", connections_open.clone());
        let connections_refused = Family::<ListenerLabels, Counter>::default();
        registry.register(
            "connections_refused",
            "Connections closed at once because the listener's connection cap was reached",
            connections_refused.clone(),
        );
        let connections_evicted = Family::<ListenerLabels, Counter>::default();
        registry.register(
            "connections_evicted",
            "Connections that had completed no request, closed at the cap for a new one",
            connections_evicted.clone(),
        );
        let connections_served = Family::<ProtocolLabels, Counter>::default();
        registry.register(
            "connections_served",
            "Connections served, by listener and HTTP protocol (h2 only with --http2)",
            connections_served.clone(),
        );
        let watchers_running = Gauge::default();
        registry.register(
            "watchers_running",
            "Watch tasks running (the cluster view's caches)",
            watchers_running.clone(),
        );
        let kueue_release_contradicted = Gauge::default();
        registry.register(
            "kueue_release_contradicted",
            "1 when the served Kueue API or Kueue's Deployment says another release than the config's kueue.version \
             (see /readyz and the log)",
            kueue_release_contradicted.clone(),
        );
        let kueue_release_confirmed = Gauge::default();
        registry.register(
            "kueue_release_confirmed",
            "1 when Kueue's Deployment names the config's kueue.version (its Helm version label or image tag); 0 when \
             it cannot say (see /readyz)",
            kueue_release_confirmed.clone(),
        );
        let view_derivation_seconds = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "view_derivation_seconds",
            "How long the last derivation of the cluster view took (the cohort trees, quotas and who can reclaim \
             from whom, worked out after each change, off the review path)",
            view_derivation_seconds.clone(),
        );
        let view_derived = Gauge::default();
        registry.register(
            "view_derived",
            "1 when what is derived is of the cluster view as it is now; 0 while a change is being derived (reviews \
             then derive what they need themselves)",
            view_derived.clone(),
        );
        let client_certificates_refused = Family::<ClientRefusalLabels, Counter>::default();
        registry.register(
            "client_certificates_refused",
            "Webhook handshakes refused for their client certificate (with --client-ca-file), by reason; a client \
             that sends none fails in the TLS library before this is counted",
            client_certificates_refused.clone(),
        );
        let audit_findings = Family::<FindingLabels, Gauge>::default();
        registry.register(
            "audit_findings",
            "Evaluations in the cluster that the audit finds Kueue would now never admit, could preempt, or never \
             saw, by reason, enforcement and namespace (exported by the replica holding the audit lease)",
            audit_findings.clone(),
        );
        let audit_enabled = Gauge::default();
        registry.register(
            "audit_enabled",
            "1 on a replica that runs the audit (0 with --audit-interval 0s or no cluster): the audit alert's \
             condition",
            audit_enabled.clone(),
        );
        let audit_leader = Gauge::default();
        registry.register("audit_leader", "1 on the replica that holds the audit lease", audit_leader.clone());
        let audit_evaluations = Gauge::default();
        registry.register(
            "audit_evaluations",
            "Stored evaluations the audit judged in its last round",
            audit_evaluations.clone(),
        );
        let audit_rounds = Counter::default();
        registry.register(
            "audit_rounds",
            "Audit rounds finished (every stored evaluation judged)",
            audit_rounds.clone(),
        );
        let audit_round_seconds = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "audit_round_seconds",
            "How long the last audit round took to judge every stored evaluation",
            audit_round_seconds.clone(),
        );
        let audit_write_errors = Family::<AuditWriteLabels, Counter>::default();
        registry.register(
            "audit_write_errors",
            "Audit Events and PolicyReports that could not be written (tried again next round), by target",
            audit_write_errors.clone(),
        );
        Self {
            registry,
            audit_findings,
            audit_enabled,
            audit_leader,
            audit_evaluations,
            audit_rounds,
            audit_round_seconds,
            audit_write_errors,
            view_derivation_seconds,
            view_derived,
            watchers_running,
            kueue_release_contradicted,
            kueue_release_confirmed,
            connections_open,
            connections_refused,
            connections_evicted,
            connections_served,
            reviews,
            review_errors,
            review_duration,
            cache_synced,
            cache_objects,
            confirm_lookups,
            certificate_expiry,
            certificate_reloads,
            certificate_reload_failures,
            certificate_writes,
            client_certificates_refused,
        }
    }

    pub fn set_cache(&self, synced: bool, counts: ObjectCounts) {
        self.cache_synced.set(i64::from(synced));
        let set = |kind, count: usize| {
            self.cache_objects.get_or_create(&ObjectLabels { kind }).set(i64::try_from(count).unwrap_or(i64::MAX));
        };
        set("Namespace", counts.namespaces);
        set("LocalQueue", counts.local_queues);
        set("ClusterQueue", counts.cluster_queues);
        set("Cohort", counts.cohorts);
        set("ResourceFlavor", counts.resource_flavors);
        set("AdmissionCheck", counts.admission_checks);
        set("WorkloadPriorityClass", counts.workload_priority_classes);
        set("PriorityClass", counts.priority_classes);
    }

    /// Exports the log writer's count of lines dropped because its buffer was full.
    pub fn count_dropped_log_lines(&mut self, dropped: DroppedLines) {
        self.registry.register_collector(Box::new(DroppedLogLines(dropped)));
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }
}

#[derive(Debug)]
struct DroppedLogLines(DroppedLines);

impl Collector for DroppedLogLines {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let dropped = ConstCounter::new(self.0.get());
        let metric = encoder.encode_descriptor(
            "log_lines_dropped",
            "Log lines dropped because stdout was not read fast enough (the batch was full) or failed",
            None,
            dropped.metric_type(),
        )?;
        dropped.encode(metric)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use tracing_subscriber::fmt::MakeWriter;

    #[test]
    fn dropped_log_lines_are_exported() {
        // Here a line may be longer than the whole batch: it cannot fit, so it is dropped.
        let (writer, _flush) = batched_stdout::spawn(std::io::sink(), 4, 1024, Duration::ZERO).unwrap();
        writer.make_writer().write_all(b"longer than four bytes\n").unwrap();
        let mut metrics = Metrics::new();
        metrics.count_dropped_log_lines(writer.dropped_lines());
        let text = metrics.encode();
        assert!(text.contains("# TYPE eval_admission_log_lines_dropped counter"), "{text}");
        assert!(text.contains("\neval_admission_log_lines_dropped_total 1\n"), "{text}");
    }
}
