//! `eval-admission audit`: the evaluations already in a cluster (a file, or
//! the live cluster) that Kueue would now never admit, could now preempt, or
//! never saw, each with the message its owner would have been refused with.

use std::path::Path;

use serde_json::{Value, json};

use super::live::{LiveCluster, block_on};
use crate::admission::audit::{Reported, audit as audit_one};
use crate::admission::{Lookups, Offline, run_offline};
use crate::cluster::{ClusterView, state_file};
use crate::config::Config;
use crate::error::Error;
use crate::workload::WorkloadKind;

/// Where the audit reads the cluster.
pub enum Source<'a> {
    /// Files of cluster state and workloads (`kubectl get ... -o yaml`).
    Files(Vec<&'a Path>),
    /// The live cluster, through this kubeconfig or kubectl's default.
    Live { kubeconfig: Option<&'a Path> },
}

/// What the audit found: how many workloads it read, and what it reports.
#[derive(Debug)]
pub struct AuditReport {
    pub workloads: usize,
    pub findings: Vec<Reported>,
    /// Which Kueue the view says runs, and how it is configured.
    kueue: String,
}

pub fn audit(source: Source<'_>, config: &Config) -> Result<AuditReport, Error> {
    match source {
        Source::Files(paths) => {
            let (state, workloads) = state_file::load_with_workloads(&paths, &config.kueue)?;
            let (count, findings) = run_offline(judge_all(config, &Offline(&state), &workloads))?;
            Ok(AuditReport { workloads: count, findings, kueue: state.kueue_config().summary() })
        }
        Source::Live { kubeconfig } => block_on(async {
            let cluster = LiveCluster::connect(kubeconfig, config).await?;
            let workloads = cluster.workloads().await?;
            let kueue = cluster.state().kueue_config().summary();
            let (count, findings) = judge_all(config, cluster.lookups(), &workloads).await?;
            Ok(AuditReport { workloads: count, findings, kueue })
        }),
    }
}

/// The audit of one stored workload, `kind` `name` in `namespace` (else the
/// kubeconfig's namespace, or `default` in a file).
pub(super) fn audit_stored(
    source: Source<'_>,
    config: &Config,
    kind: WorkloadKind,
    name: &str,
    namespace: Option<&str>,
) -> Result<AuditReport, Error> {
    match source {
        Source::Files(paths) => {
            let (state, workloads) = state_file::load_with_workloads(&paths, &config.kueue)?;
            let namespace = namespace.unwrap_or("default");
            let found = workloads.into_iter().find(|object| is_named(object, kind, namespace, name));
            let object = found
                .ok_or_else(|| Error::Request(format!("no {kind} {namespace}/{name} in the cluster state files")))?;
            let (count, findings) = run_offline(judge_all(config, &Offline(&state), &[object]))?;
            Ok(AuditReport { workloads: count, findings, kueue: state.kueue_config().summary() })
        }
        Source::Live { kubeconfig } => block_on(async {
            let cluster = LiveCluster::connect(kubeconfig, config).await?;
            let namespace = namespace.unwrap_or(cluster.default_namespace()).to_string();
            let object = cluster.workload(kind, &namespace, name).await?;
            let kueue = cluster.state().kueue_config().summary();
            let (count, findings) = judge_all(config, cluster.lookups(), &[object]).await?;
            Ok(AuditReport { workloads: count, findings, kueue })
        }),
    }
}

fn is_named(object: &Value, kind: WorkloadKind, namespace: &str, name: &str) -> bool {
    let text = |pointer| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    text("/kind") == kind.as_str() && text("/metadata/namespace") == namespace && text("/metadata/name") == name
}

async fn judge_all<L: Lookups + Sync>(
    config: &Config,
    lookups: &L,
    workloads: &[Value],
) -> Result<(usize, Vec<Reported>), L::Error> {
    let mut findings = Vec::new();
    for workload in workloads {
        findings.extend(audit_one(config, lookups, workload).await?);
    }
    crate::admission::audit::sort(&mut findings);
    Ok((workloads.len(), findings))
}

impl AuditReport {
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    pub fn json(&self) -> String {
        let report = json!({"workloads": self.workloads, "findings": self.findings, "kueueConfiguration": self.kueue});
        serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
    }

    /// One line per finding in aligned columns, its message indented under it.
    pub fn table(&self) -> String {
        let headers = ["NAMESPACE", "KIND", "NAME", "STAGE", "REASON", "ENFORCEMENT"];
        let rows: Vec<[&str; 6]> = self
            .findings
            .iter()
            .map(|f| [f.namespace.as_str(), f.kind, f.name.as_str(), f.stage, f.reason, f.enforcement])
            .collect();
        let widths: Vec<usize> = (0..headers.len())
            .map(|column| rows.iter().map(|row| row[column].len()).chain([headers[column].len()]).max().unwrap_or(0))
            .collect();
        let line = |cells: [&str; 6]| {
            let padded: Vec<String> =
                cells.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
            padded.join("  ").trim_end().to_string() + "\n"
        };
        let plural = if self.workloads == 1 { "" } else { "s" };
        let mut out = format!("{} workload{plural} audited, {} found\n", self.workloads, self.findings.len());
        if rows.is_empty() {
            return out;
        }
        out.push_str(&line(headers));
        for (row, finding) in rows.into_iter().zip(&self.findings) {
            out.push_str(&line(row));
            out.push_str(&format!("    {}\n", finding.message));
        }
        out
    }
}
