//! Where a workload's owner looks: a Warning Event (events.k8s.io/v1) on the
//! audited Job or JobSet, its note the message a create would be refused with.
//! One Event per workload and finding, named from both, so a finding seen
//! again (the next round, or the next lease holder) adds to that Event's
//! series instead of writing another (`kubectl describe` shows it once, with
//! its count).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::admission::audit::Reported;
use crate::vocabulary::own_names::AUDIT_CONTROLLER;

/// The API server drops Events an hour after their last write
/// (`--event-ttl`): a finding still there is written again before that.
pub const EVENT_REFRESH: Duration = Duration::from_secs(30 * 60);
/// events.k8s.io/v1 refuses a longer note (`NoteLengthLimit`, 1 KiB).
const MOST_NOTE_BYTES: usize = 1024;

/// Writes the Events and remembers what it wrote, so an unchanged finding is
/// not written again until [`EVENT_REFRESH`].
pub struct EventWriter {
    client: kube::Client,
    identity: String,
    written: HashMap<String, Written>,
}

struct Written {
    namespace: String,
    note: String,
    at: Instant,
}

impl EventWriter {
    pub fn new(client: kube::Client, identity: String) -> Self {
        Self { client, identity, written: HashMap::new() }
    }

    /// Writes `found`'s Event, or adds to its series; nothing when this
    /// writer wrote the same note lately. Says whether it called the API.
    pub async fn report(&mut self, found: &Reported) -> Result<bool, kube::Error> {
        let name = event_name(found);
        let note = fit_note(&found.message);
        if let Some(written) = self.written.get(&name)
            && written.namespace == found.namespace
            && written.note == note
            && written.at.elapsed() < EVENT_REFRESH
        {
            return Ok(false);
        }
        let api: Api<Event> = Api::namespaced(self.client.clone(), &found.namespace);
        let now = MicroTime(Timestamp::now());
        match api.get_opt(&name).await? {
            // Another holder (or this one, before a restart) wrote it: one series.
            Some(existing) if existing.note.as_deref() == Some(note.as_str()) && is_recent(&existing) => {}
            Some(existing) => {
                let count = existing.series.as_ref().map_or(1, |series| series.count) + 1;
                let series = EventSeries { count, last_observed_time: now };
                let patch = json!({"note": note, "series": series});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
            }
            None => {
                let event = new_event(found, &self.identity, now);
                match api.create(&PostParams::default(), &event).await {
                    Err(kube::Error::Api(status)) if status.code == 409 => {}
                    other => {
                        other?;
                    }
                }
            }
        }
        self.written.insert(name, Written { namespace: found.namespace.clone(), note, at: Instant::now() });
        Ok(true)
    }

    /// Forgets what it wrote of findings no longer there (memory stays the
    /// size of the current findings; a finding that comes back is written again).
    pub fn keep_only(&mut self, current: &[&Reported]) {
        let names: std::collections::HashSet<String> = current.iter().map(|found| event_name(found)).collect();
        self.written.retain(|name, _| names.contains(name));
    }
}

/// The Event for `found`, as this replica (`identity`) writes it first.
fn new_event(found: &Reported, identity: &str, now: MicroTime) -> Event {
    Event {
        metadata: ObjectMeta {
            name: Some(event_name(found)),
            namespace: Some(found.namespace.clone()),
            ..Default::default()
        },
        event_time: Some(now),
        type_: Some("Warning".into()),
        reason: Some(event_reason(found.reason)),
        action: Some("Audit".into()),
        note: Some(fit_note(&found.message)),
        regarding: Some(ObjectReference {
            api_version: Some(found.api_version()),
            kind: Some(found.kind.into()),
            name: Some(found.name.clone()),
            namespace: Some(found.namespace.clone()),
            uid: (!found.uid.is_empty()).then(|| found.uid.clone()),
            ..Default::default()
        }),
        reporting_controller: Some(AUDIT_CONTROLLER.into()),
        reporting_instance: Some(identity.to_string()),
        ..Default::default()
    }
}

/// `<workload>.<16 hex>`: the hash of its kind, uid (else namespace and
/// name) and the finding's reason. A name is at most 63 characters, so the
/// Event's name stays well under 253.
pub fn event_name(found: &Reported) -> String {
    use std::hash::{Hash, Hasher};
    // Not `DefaultHasher`: its output may change between Rust releases, and
    // two replicas of different builds must name an Event alike.
    let mut hasher = Fnv64::default();
    (found.kind, &found.namespace, &found.name, &found.uid, found.reason).hash(&mut hasher);
    format!("{}.{:016x}", found.name, hasher.finish())
}

/// FNV-1a, 64 bits: stable across builds and platforms.
struct Fnv64(u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv64 {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// `missing-local-queue` -> `MissingLocalQueue`, as Event reasons are written.
fn event_reason(reason: &str) -> String {
    reason
        .split('-')
        .map(|word| {
            let mut letters = word.chars();
            letters.next().map(|first| first.to_ascii_uppercase().to_string() + letters.as_str()).unwrap_or_default()
        })
        .collect()
}

/// Written within [`EVENT_REFRESH`] (its last observation, else its time).
fn is_recent(event: &Event) -> bool {
    let last = event.series.as_ref().map(|series| &series.last_observed_time).or(event.event_time.as_ref());
    last.is_some_and(|last| Timestamp::now().duration_since(last.0).unsigned_abs() < EVENT_REFRESH)
}

/// The message cut to what a note may hold, on a character boundary, saying so.
fn fit_note(message: &str) -> String {
    if message.len() <= MOST_NOTE_BYTES {
        return message.to_string();
    }
    const CUT: &str = "… (cut)";
    let mut end = MOST_NOTE_BYTES - CUT.len();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT}", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(reason: &'static str) -> Reported {
        Reported {
            kind: "Job",
            namespace: "team-a".into(),
            name: "eval-1".into(),
            stage: "queued",
            reason,
            enforcement: "Deny",
            message: "m".into(),
            uid: "u".into(),
        }
    }

    #[test]
    fn one_event_per_workload_and_finding_named_alike_by_every_build() {
        assert_eq!(event_name(&found("missing-local-queue")), event_name(&found("missing-local-queue")));
        assert_ne!(event_name(&found("missing-local-queue")), event_name(&found("preemptible")));
        assert!(event_name(&found("preemptible")).starts_with("eval-1."));
        // Fixed: a replica of another build names it the same.
        let mut hasher = Fnv64::default();
        std::hash::Hasher::write(&mut hasher, b"a");
        assert_eq!(std::hash::Hasher::finish(&hasher), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn the_event_is_a_warning_on_the_workload_from_the_audit() {
        let now = MicroTime(Timestamp::from_second(1_800_000_000).unwrap());
        let event = serde_json::to_value(new_event(&found("missing-local-queue"), "replica-1", now.clone())).unwrap();
        let name = event_name(&found("missing-local-queue"));
        assert_eq!(
            event,
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": name, "namespace": "team-a"},
                "eventTime": "2027-01-15T08:00:00.000000Z",
                "type": "Warning", "reason": "MissingLocalQueue", "action": "Audit", "note": "m",
                "regarding": {"apiVersion": "batch/v1", "kind": "Job", "name": "eval-1", "namespace": "team-a", "uid": "u"},
                "reportingController": "eval-admission.io/audit", "reportingInstance": "replica-1",
            })
        );
        let jobset = Reported { kind: "JobSet", uid: String::new(), ..found("preemptible") };
        let event = serde_json::to_value(new_event(&jobset, "replica-1", now)).unwrap();
        assert_eq!(
            event["regarding"],
            json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "eval-1", "namespace": "team-a"})
        );
    }

    #[test]
    fn reasons_are_camel_case_and_notes_fit() {
        assert_eq!(event_reason("missing-local-queue"), "MissingLocalQueue");
        assert_eq!(event_reason("preemptible"), "Preemptible");
        assert_eq!(fit_note("short"), "short");
        let long = "é".repeat(700);
        let fitted = fit_note(&long);
        assert!(fitted.len() <= MOST_NOTE_BYTES && fitted.ends_with("… (cut)"), "{}", fitted.len());
        // All of the note it may: at most one byte short, to end on a character.
        assert!(fitted.len() >= MOST_NOTE_BYTES - 1, "{}", fitted.len());
    }
}
