//! Which LocalQueue a workload goes to, and whether that queue can ever admit it.

use super::verdict::{Denial, Subject, WayOut};
use crate::cluster::{Absent, ClusterView};
use crate::vocabulary::kueue::{DEFAULT_QUEUE_ANNOTATION, QUEUE_NAME_LABEL};
use crate::vocabulary::reason::Reason;
use crate::vocabulary::text::join;

/// The LocalQueue Kueue's own defaulting uses when nothing else names one.
pub const DEFAULT_LOCAL_QUEUE: &str = "default";

/// Where a queue name came from; messages tell the user which knob to turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueSource {
    Label,
    /// The deprecated queue-name annotation, which Kueue before v0.15 reads.
    DeprecatedAnnotation,
    NamespaceAnnotation,
    DefaultLocalQueue,
}

impl QueueSource {
    fn describe(self) -> &'static str {
        match self {
            Self::Label => "label kueue.x-k8s.io/queue-name",
            Self::DeprecatedAnnotation => "annotation kueue.x-k8s.io/queue-name (deprecated; read before Kueue v0.15)",
            Self::NamespaceAnnotation => "namespace annotation kueue.x-k8s.io/default-queue-name",
            Self::DefaultLocalQueue => "the namespace's LocalQueue named 'default'",
        }
    }
}

/// The queue a new workload should carry: its own label, else (before Kueue
/// v0.15) its deprecated queue-name annotation, else the namespace annotation,
/// else a LocalQueue named `default` where Kueue's own webhook would give it
/// that one (see [`KueueConfig::defaults_local_queue_in`]).
/// `Ok(None)`: it bypasses Kueue.
///
/// [`KueueConfig::defaults_local_queue_in`]: crate::cluster::kueue_config::KueueConfig::defaults_local_queue_in
pub fn resolve(view: &impl ClusterView, subject: Subject<'_>) -> Result<Option<(String, QueueSource)>, Denial> {
    if let Some(name) = subject.workload.queue_name() {
        return Ok(Some((name.to_string(), QueueSource::Label)));
    }
    // Kueue before v0.15 queues it there and defaults nothing over it; the
    // label it gets says the same and keeps it queued after an upgrade.
    if let Some(name) = subject.workload.queue_name_read_by(view.kueue_config().version) {
        return Ok(Some((name.to_string(), QueueSource::DeprecatedAnnotation)));
    }
    let annotated = view.namespace(subject.namespace).and_then(|ns| ns.default_queue.as_deref());
    if let Some(name) = annotated {
        if !is_valid_queue_name(name) {
            return Err(Denial::new(
                Reason::InvalidDefaultQueue,
                format!(
                    "{subject} cannot be queued: namespace '{ns}' has annotation {DEFAULT_QUEUE_ANNOTATION}='{name}', \
                     which is not a valid LocalQueue name (lowercase letters, digits, '-' and '.', at most 63 characters). \
                     Ask the namespace owner to fix the annotation, or set label {QUEUE_NAME_LABEL} on the workload.",
                    ns = subject.namespace
                ),
            ));
        }
        return Ok(Some((name.to_string(), QueueSource::NamespaceAnnotation)));
    }
    let empty = std::collections::BTreeMap::new();
    let labels = view.namespace(subject.namespace).map_or(&empty, |ns| &ns.labels);
    if view.local_queue(subject.namespace, DEFAULT_LOCAL_QUEUE).is_some()
        && view.kueue_config().defaults_local_queue_in(labels)
    {
        return Ok(Some((DEFAULT_LOCAL_QUEUE.to_string(), QueueSource::DefaultLocalQueue)));
    }
    Ok(None)
}

/// The warning for a workload that ends up with no queue at all. Warnings leave
/// out the object's name: kubectl prints them beside it, and the API server
/// truncates long ones.
pub fn bypass_warning(subject: Subject<'_>) -> String {
    format!(
        "no {QUEUE_NAME_LABEL} label and namespace '{ns}' has no default queue: this {kind} bypasses Kueue and runs \
         without quota. Set the label, or annotate the namespace with {DEFAULT_QUEUE_ANNOTATION}.",
        ns = subject.namespace,
        kind = subject.kind
    )
}

/// The denial for a workload with no queue at all, when the config's
/// enforcement for `bypasses-kueue` is `Deny`.
pub fn bypass_denial(subject: Subject<'_>) -> String {
    format!(
        "{subject} has no {QUEUE_NAME_LABEL} label and namespace '{ns}' has no default queue, so it would bypass \
         Kueue and run without quota, which this cluster does not allow. To fix: set the label to a LocalQueue in \
         '{ns}', or ask the namespace owner to annotate the namespace with {DEFAULT_QUEUE_ANNOTATION}.",
        ns = subject.namespace
    )
}

/// Checks that the named LocalQueue could exist, Kueue is installed and the queue exists; a denial
/// otherwise, since the workload would stay suspended forever. `working` are
/// the namespace's queues that would admit it (see [`super::working_queues`]),
/// the only ones the denial offers.
pub fn check_local_queue<'v>(
    view: &'v impl ClusterView,
    subject: Subject<'_>,
    queue: &str,
    source: QueueSource,
    working: impl FnOnce() -> Vec<&'v str>,
) -> Result<(), Denial> {
    if !is_valid_queue_name(queue) {
        return Err(invalid_queue_name(subject, queue, source, &working()));
    }
    if !view.kueue_installed() {
        return Err(Denial::new(
            Reason::KueueNotInstalled,
            format!(
                "Kueue is not installed, but LocalQueue '{queue}' was explicitly requested by {subject} ({}). \
                 Without Kueue it would stay suspended forever. Remove the label to run without Kueue, \
                 or ask the cluster administrator to install Kueue.",
                source.describe()
            ),
        ));
    }
    if view.local_queue(subject.namespace, queue).is_none() {
        return Err(missing_local_queue(view, subject, queue, source, &working()));
    }
    Ok(())
}

/// A queue label no LocalQueue can carry (Kueue's own Job webhook refuses it
/// too: `jobframework.ValidateQueueName`, a DNS-1123 subdomain).
fn invalid_queue_name(subject: Subject<'_>, queue: &str, source: QueueSource, working: &[&str]) -> Denial {
    let namespace = subject.namespace;
    let existing = closest_first(&queue.to_ascii_lowercase(), working.iter().copied());
    let choices = if existing.is_empty() {
        format!("No LocalQueue in '{namespace}' would admit it as it is.")
    } else {
        format!(
            "LocalQueues in '{namespace}' that would admit it: {}. To fix: set the label to one of them.",
            join(&existing)
        )
    };
    Denial::new(
        Reason::InvalidQueueName,
        format!(
            "{subject} names LocalQueue '{queue}' ({}), which is not a valid LocalQueue name (lowercase letters, \
             digits, '-' and '.', starting and ending with a letter or digit, at most 63 characters), so no such \
             LocalQueue can exist and Kueue would never admit it. {choices}",
            source.describe()
        ),
    )
    .offering(existing.iter().map(|name| WayOut::Queue(name.to_string())).collect())
}

fn missing_local_queue(
    view: &impl ClusterView,
    subject: Subject<'_>,
    queue: &str,
    source: QueueSource,
    working: &[&str],
) -> Denial {
    let namespace = subject.namespace;
    let existing = closest_first(queue, working.iter().copied());
    let fix_source = match source {
        QueueSource::Label => format!("set label {QUEUE_NAME_LABEL} to one of them"),
        QueueSource::NamespaceAnnotation => format!(
            "set label {QUEUE_NAME_LABEL} to one of them, or ask the namespace owner to point annotation \
             {DEFAULT_QUEUE_ANNOTATION} at one"
        ),
        QueueSource::DeprecatedAnnotation => {
            format!("set label {QUEUE_NAME_LABEL} to one of them (Kueue reads it before the annotation)")
        }
        QueueSource::DefaultLocalQueue => "use one of them".to_string(),
    };
    let has_queues = view.local_queues(namespace).next().is_some();
    let choices = if !existing.is_empty() {
        format!(
            "LocalQueues in '{namespace}' that would admit it: {}. To fix: {fix_source}, or ask the namespace owner \
             to create LocalQueue '{queue}'.",
            join(&existing)
        )
    } else if has_queues {
        format!(
            "No LocalQueue in '{namespace}' would admit it as it is. Ask the namespace owner to create LocalQueue \
             '{queue}'."
        )
    } else {
        format!("Namespace '{namespace}' has no LocalQueues. Ask the namespace owner to create LocalQueue '{queue}'.")
    };
    Denial::new(
        Reason::MissingLocalQueue,
        format!(
            "{subject} names LocalQueue '{queue}' ({}), which does not exist in namespace '{namespace}', \
             so Kueue would keep it suspended forever. {choices}",
            source.describe()
        ),
    )
    .because_absent(Absent::LocalQueue(queue.to_string()))
    .offering(existing.iter().map(|name| WayOut::Queue(name.to_string())).collect())
}

/// The way out of a queue that cannot work: the queues that do, if any.
pub fn use_instead(working: &[&str]) -> Vec<String> {
    if working.is_empty() {
        return Vec::new();
    }
    vec![format!("set label {QUEUE_NAME_LABEL} to a LocalQueue that would admit it ({})", join(working))]
}

/// Names sorted by edit distance to `wanted`, then alphabetically: the likely typo first.
pub fn closest_first<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut ranked: Vec<(usize, &str)> = names.map(|name| (edit_distance(wanted, name), name)).collect();
    ranked.sort();
    ranked.into_iter().map(|(_, name)| name).collect()
}

/// Levenshtein distance over chars; names are short, so the two-row table is plenty.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// A LocalQueue name usable as a label value: a DNS-1123 subdomain of at most 63 characters.
pub fn is_valid_queue_name(name: &str) -> bool {
    // A DNS-1123 subdomain (what Kueue validates and LocalQueue names are),
    // within a label value's 63 characters (where the name is carried).
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let part = |part: &str| {
        let bytes = part.as_bytes();
        !bytes.is_empty()
            && alnum(&bytes[0])
            && alnum(&bytes[bytes.len() - 1])
            && bytes.iter().all(|b| alnum(b) || *b == b'-')
    };
    name.len() <= 63 && name.split('.').all(part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::fixtures::*;

    #[test]
    fn the_label_wins_then_the_annotation_then_the_default_queue() {
        let state = seed_state();
        let labelled = evalhub_job("team-a-namespace", Some("eval-queue"));
        assert_eq!(resolve(&state, job_subject(&labelled)).unwrap(), Some(("eval-queue".into(), QueueSource::Label)));
        let unlabelled = evalhub_job("team-a-namespace", None);
        assert_eq!(
            resolve(&state, job_subject(&unlabelled)).unwrap(),
            Some(("eval-queue".into(), QueueSource::NamespaceAnnotation))
        );
        let in_defaulted = evalhub_job("defaulted", None);
        assert_eq!(
            resolve(&state, job_subject(&in_defaulted)).unwrap(),
            Some(("default".into(), QueueSource::DefaultLocalQueue))
        );
        let in_plain = evalhub_job("plain", None);
        assert_eq!(resolve(&state, job_subject(&in_plain)).unwrap(), None);
    }

    #[test]
    fn kueue_gives_the_default_queue_only_in_namespaces_it_manages_from_v0_18_5() {
        // Kueue #13374: a namespace outside managedJobsNamespaceSelector with a
        // LocalQueue named default. Up to v0.18.4 Kueue's webhook labels the
        // job (and the job then waits forever); from v0.18.5 it leaves the job
        // alone, and so does eval-admission: the job bypasses Kueue.
        let documents = [
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config, namespace: kueue-system}\ndata:\n  \
             controller_manager_config.yaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta1\n    kind: Configuration\n    \
             managedJobsNamespaceSelector: {matchLabels: {kueue-managed: \"true\"}}\n",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: plain}\n",
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: default, namespace: plain}\n\
             spec: {clusterQueue: team-a-cq}\n",
        ];
        let job = evalhub_job("plain", None);
        for (release, labelled) in [("v0.16.6", true), ("v0.18.2", true), ("v0.18.5", false), ("v0.19.2", false)] {
            let resolved = resolve(&state_of_release(release, &documents), job_subject(&job)).unwrap();
            assert_eq!(resolved.is_some(), labelled, "{release}: {resolved:?}");
        }
        // The Red Hat build calls Kueue's webhook only in managed namespaces:
        // no release of it labels the job there.
        let red_hat = crate::vocabulary::kueue::KueueInstall {
            version: crate::vocabulary::kueue::KueueVersion::parse("v0.16.6").unwrap(),
            webhooks_only_in_managed_namespaces: true,
            ..Default::default()
        };
        let state = crate::cluster::state_file::parse_for(documents.join("\n---\n").as_bytes(), &red_hat).unwrap();
        assert_eq!(resolve(&state, job_subject(&job)).unwrap(), None);
    }

    #[test]
    fn before_v0_15_the_deprecated_queue_annotation_names_the_queue() {
        let annotated = |queue: &str| -> crate::workload::Workload {
            let job = testkit::JobBuilder::evalhub("team-a-namespace").annotation("kueue.x-k8s.io/queue-name", queue);
            serde_json::from_value(job.build()).unwrap()
        };
        let job = annotated("shared-queue");
        let v0_14 = state_of_release("v0.14.8", &[crate::rules::fixtures::SEED_STATE]);
        let v0_15 = state_of_release("v0.15.0", &[crate::rules::fixtures::SEED_STATE]);
        let resolved = resolve(&v0_14, job_subject(&job)).unwrap();
        assert_eq!(resolved, Some(("shared-queue".to_string(), QueueSource::DeprecatedAnnotation)));
        // From v0.15 Kueue reads the label only: the namespace's default applies.
        let resolved = resolve(&v0_15, job_subject(&job)).unwrap();
        assert_eq!(resolved, Some(("eval-queue".to_string(), QueueSource::NamespaceAnnotation)));
        // The queue the annotation names is checked like a label's.
        let missing = annotated("nope");
        let denial = crate::rules::check_queued(&v0_14, job_subject(&missing)).unwrap_err();
        assert_eq!(denial.reason, Reason::MissingLocalQueue);
        assert!(
            denial.message.contains(
                "names LocalQueue 'nope' (annotation kueue.x-k8s.io/queue-name (deprecated; read before Kueue v0.15))"
            ),
            "{}",
            denial.message
        );
        assert!(crate::rules::check_queued(&v0_15, job_subject(&missing)).is_ok());
        // The label comes first, and a denial names it.
        let labelled = job.with_label(QUEUE_NAME_LABEL, Some("nope"));
        let denial = crate::rules::check_queued(&v0_14, job_subject(&labelled)).unwrap_err();
        assert!(
            denial.message.contains("names LocalQueue 'nope' (label kueue.x-k8s.io/queue-name)"),
            "{}",
            denial.message
        );
        // The label it gets says the same queue, which keeps it queued after an upgrade to v0.15.
        let config = crate::config::Config::default();
        let crate::rules::Verdict::Allow { shape, .. } =
            crate::rules::mutate_create(&config, &v0_14, job_subject(&job))
        else {
            panic!("an annotated job is queued")
        };
        assert_eq!(shape.queue_label.as_deref(), Some("shared-queue"));
    }

    #[test]
    fn an_invalid_annotation_is_refused_not_copied_into_a_label() {
        let state = state_with(&[
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: odd\n  annotations:\n    kueue.x-k8s.io/default-queue-name: Eval_Queue\n",
        ]);
        let job = evalhub_job("odd", None);
        let denial = resolve(&state, job_subject(&job)).unwrap_err();
        assert_eq!(denial.reason, Reason::InvalidDefaultQueue);
        assert!(denial.message.contains("'Eval_Queue'"), "{}", denial.message);
    }

    #[test]
    fn a_missing_queue_lists_the_existing_ones_closest_first() {
        let state = seed_state();
        let job = evalhub_job("team-a-namespace", Some("eval-queu"));
        let denial = check_local_queue(&state, job_subject(&job), "eval-queu", QueueSource::Label, || {
            vec!["shared-queue", "eval-queue"]
        })
        .unwrap_err();
        assert_eq!(denial.reason, Reason::MissingLocalQueue);
        assert_eq!(
            denial.message,
            "Job team-a-namespace/evalhub-3f2a names LocalQueue 'eval-queu' (label kueue.x-k8s.io/queue-name), which \
             does not exist in namespace 'team-a-namespace', so Kueue would keep it suspended forever. LocalQueues in \
             'team-a-namespace' that would admit it: eval-queue, shared-queue. To fix: set label \
             kueue.x-k8s.io/queue-name to one of them, or ask the namespace owner to create LocalQueue 'eval-queu'."
        );
    }

    #[test]
    fn a_missing_queue_in_an_empty_namespace_says_there_are_none() {
        let state = seed_state();
        let job = evalhub_job("plain", Some("aiperf-queue"));
        let denial =
            check_local_queue(&state, job_subject(&job), "aiperf-queue", QueueSource::Label, Vec::new).unwrap_err();
        assert!(denial.message.ends_with(
            "Namespace 'plain' has no LocalQueues. Ask the namespace owner to create LocalQueue 'aiperf-queue'."
        ));
    }

    #[test]
    fn without_kueue_the_message_is_the_operator_preflight_one() {
        let state = state_with(&["apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a-namespace}\n"]);
        let job = evalhub_job("team-a-namespace", Some("eval-queue"));
        let denial =
            check_local_queue(&state, job_subject(&job), "eval-queue", QueueSource::Label, Vec::new).unwrap_err();
        assert_eq!(denial.reason, Reason::KueueNotInstalled);
        assert!(
            denial.message.starts_with("Kueue is not installed, but LocalQueue 'eval-queue' was explicitly requested")
        );
    }

    #[test]
    fn an_uppercase_queue_is_called_invalid_not_missing() {
        let state = seed_state();
        let job = evalhub_job("team-a-namespace", Some("Eval-Queue"));
        let denial = crate::rules::check_queued(&state, job_subject(&job)).unwrap_err();
        assert_eq!(denial.reason, Reason::InvalidQueueName);
        assert!(
            denial
                .message
                .contains("'Eval-Queue' (label kueue.x-k8s.io/queue-name), which is not a valid LocalQueue name")
        );
        assert!(!denial.message.contains("create LocalQueue"), "{}", denial.message);
        assert_eq!(denial.ways_out.first(), Some(&WayOut::Queue("eval-queue".into())), "the lowercase one first");
    }

    #[test]
    fn edit_distance_and_names() {
        assert_eq!(edit_distance("eval-queu", "eval-queue"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("sitting", "kitten"), 3, "symmetric");
        assert_eq!(edit_distance("abc", ""), 3, "deleting every character");
        assert!(is_valid_queue_name("eval-queue.v2"));
        for bad in ["", "Eval", "-a", "a-", "a_b", "a..b", "a.-b", &"a".repeat(64)] {
            assert!(!is_valid_queue_name(bad), "{bad:?}");
        }
    }
}
