//! The cluster state file: multi-document YAML (or JSON) of cluster objects, as
//! `kubectl get -o yaml` prints them (`kind: List` documents are unpacked).

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::ClusterState;
use super::objects::{self, ClusterObject};
use crate::error::Error;

/// The largest state file read: a dump of a large cluster's Namespaces and
/// Kueue objects is tens of MiB.
pub const MOST_STATE_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Reads a file of at most `most` bytes, refusing a larger one before reading it.
pub fn read_at_most(what: &'static str, path: &Path, most: u64) -> Result<Vec<u8>, Error> {
    let size = std::fs::metadata(path).map_err(|e| Error::file(what, path, e))?.len();
    if size > most {
        return Err(Error::file(what, path, format!("{size} bytes, more than the {most} read")));
    }
    std::fs::read(path).map_err(|e| Error::file(what, path, e))
}

/// Reads and decodes a state file.
pub fn load(path: &Path) -> Result<ClusterState, Error> {
    let bytes = read_at_most("cluster state file", path, MOST_STATE_FILE_BYTES)?;
    parse(&bytes).map_err(|message| Error::file("cluster state file", path, message))
}

/// Decodes a state file's contents; the error says which document is wrong and why.
/// Each document is decoded and pruned as it is read, so a large file never
/// sits in memory as a whole tree of values.
pub fn parse(bytes: &[u8]) -> Result<ClusterState, String> {
    let mut state = ClusterState::default();
    for_each_document(bytes, |position, document| {
        for object in unpack_lists(document) {
            match decode_document(object) {
                Ok(Some(decoded)) => state.apply(decoded),
                Ok(None) => {}
                Err(message) => return Err(format!("document {position}: {message}")),
            }
        }
        Ok(())
    })?;
    Ok(state)
}

/// Splits multi-document YAML into JSON values, skipping empty documents.
pub fn documents(bytes: &[u8]) -> Result<Vec<Value>, String> {
    let mut values = Vec::new();
    for_each_document(bytes, |_, value| {
        values.push(value);
        Ok(())
    })?;
    Ok(values)
}

/// The deepest `[`/`{` nesting read. The YAML parser's time grows with the
/// square of flow nesting (a 250 KB file of nested `{` took 24 s), and no
/// Kubernetes object nests anywhere near this deep.
pub const MOST_FLOW_NESTING: usize = 64;

/// Refuses, in one linear pass before any parsing, YAML nested deeper than
/// [`MOST_FLOW_NESTING`] in flow collections. Quoted scalars (opened where a
/// scalar may start) and comments are skipped. The files read here come from
/// whoever runs the command or installs the server, so this guards against a
/// mistake and bounds the parse time, not against a determined author.
pub fn check_flow_nesting(text: &str) -> Result<(), String> {
    let mut depth = 0usize;
    let (mut quote, mut escaped, mut comment) = (None::<u8>, false, false);
    let mut previous = b'\n';
    for (at, &byte) in text.as_bytes().iter().enumerate() {
        let starts_scalar =
            previous.is_ascii_whitespace() || matches!(previous, b'[' | b'{' | b',') || (previous == b':' && depth > 0);
        match (quote, byte) {
            _ if comment => comment = byte != b'\n',
            (Some(b'"'), b'\\') if !escaped => escaped = true,
            (Some(open), _) if byte == open && !escaped => quote = None,
            (Some(_), _) => escaped = false,
            (None, b'"' | b'\'') if starts_scalar => quote = Some(byte),
            (None, b'#') if previous.is_ascii_whitespace() => comment = true,
            (None, b'[' | b'{') => {
                depth += 1;
                if depth > MOST_FLOW_NESTING {
                    let line = text[..at].matches('\n').count() + 1;
                    return Err(format!(
                        "line {line}: nested deeper than {MOST_FLOW_NESTING} levels of [ and {{, which no Kubernetes \
                         object needs; refused before parsing"
                    ));
                }
            }
            (None, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
        previous = byte;
    }
    Ok(())
}

/// Calls `each` with the 1-based position and value of every non-empty document.
fn for_each_document(bytes: &[u8], mut each: impl FnMut(usize, Value) -> Result<(), String>) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text (is this a binary file?)".to_string())?;
    check_flow_nesting(text)?;
    for (index, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(document).map_err(|e| format!("document {}: not valid YAML: {e}", index + 1))?;
        if !value.is_null() {
            each(index + 1, value)?;
        }
    }
    Ok(())
}

fn unpack_lists(document: Value) -> Vec<Value> {
    let is_list =
        document.get("kind").and_then(Value::as_str).is_some_and(|kind| kind == "List" || kind.ends_with("List"));
    match document {
        Value::Object(mut map) if is_list => match map.remove("items") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        other => vec![other],
    }
}

fn decode_document(object: Value) -> Result<Option<ClusterObject>, String> {
    let Value::Object(map) = &object else {
        return Err("not a Kubernetes object (expected a mapping with apiVersion and kind)".into());
    };
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string();
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    if api_version.is_empty() || kind.is_empty() {
        return Err("object without apiVersion or kind".into());
    }
    match objects::decode(&api_version, &kind, object).map_err(|e| e.to_string())? {
        Some(decoded) => Ok(Some(decoded)),
        None if matches!(kind.as_str(), "Job" | "JobSet") => {
            Err(format!("{kind} is a workload, not cluster state: pass it as the REQUEST argument"))
        }
        None => Err(format!(
            "unsupported kind {api_version} {kind}: the state file holds Namespaces, Kueue objects, PriorityClasses, \
             CustomResourceDefinitions and Kueue's ConfigMap"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterView;

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing_and_quick() {
        let nested = |depth: usize| format!("a: {}1{}\n", "[".repeat(depth), "]".repeat(depth));
        assert!(check_flow_nesting(&nested(MOST_FLOW_NESTING)).is_ok());
        assert!(documents(nested(MOST_FLOW_NESTING).as_bytes()).is_ok());
        let error = documents(nested(MOST_FLOW_NESTING + 1).as_bytes()).unwrap_err();
        assert!(error.starts_with("line 1: nested deeper than 64 levels"), "{error}");
        // The attack that took 24 s: 250 KB of unclosed `{a: ` refused at once.
        let started = std::time::Instant::now();
        assert!(documents("{a: ".repeat(64_000).as_bytes()).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "linear: {:?}", started.elapsed());
        // Brackets in quoted scalars and comments are text; one inside a plain scalar counts.
        let quoted = format!(
            "a: '{}'\nb: \"{}\\\"\" # {}\nc: it's {}\n",
            "[".repeat(100),
            "{".repeat(100),
            "{".repeat(100),
            "x"
        );
        assert!(check_flow_nesting(&quoted).is_ok(), "{quoted}");
        assert!(check_flow_nesting(&format!("a: x{}\n", "[".repeat(65))).is_err(), "stricter, never looser");
        let line = check_flow_nesting(&format!("a: 1\nb: 2\nc: {}\n", "{".repeat(65))).unwrap_err();
        assert!(line.starts_with("line 3:"), "{line}");
    }

    #[test]
    fn reads_documents_lists_and_both_kueue_versions() {
        let state = parse(
            br#"
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  annotations:
    kueue.x-k8s.io/default-queue-name: eval-queue
---
apiVersion: v1
kind: List
items:
- apiVersion: kueue.x-k8s.io/v1beta1
  kind: LocalQueue
  metadata: {name: eval-queue, namespace: team-a}
  spec: {clusterQueue: team-a-cq}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: ClusterQueue
  metadata: {name: team-a-cq}
  spec: {cohortName: research}
---
"#,
        )
        .unwrap();
        assert!(state.kueue_installed());
        assert_eq!(state.namespace("team-a").unwrap().default_queue.as_deref(), Some("eval-queue"));
        assert_eq!(state.local_queue("team-a", "eval-queue").unwrap().cluster_queue, "team-a-cq");
        assert_eq!(state.cluster_queue("team-a-cq").unwrap().cohort.as_deref(), Some("research"));
    }

    #[test]
    fn kueue_counts_as_installed_from_its_crd_alone() {
        let state = parse(b"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: localqueues.kueue.x-k8s.io}\n").unwrap();
        assert!(state.kueue_installed());
        let state = parse(b"apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n").unwrap();
        assert!(!state.kueue_installed());
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let cases: [(&[u8], &str); 5] = [
            (b"apiVersion: v1\nkind: Namespace\nmetadata: {name: [", "not valid YAML"),
            (b"\xff\xfe\x00garbage", "not UTF-8"),
            (b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n", "unsupported kind"),
            (b"apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n", "pass it as the REQUEST"),
            (b"- just\n- a list\n", "not a Kubernetes object"),
        ];
        for (input, expected) in cases {
            let error = parse(input).unwrap_err();
            assert!(error.contains(expected), "{error:?} should mention {expected:?}");
        }
    }
}
