//! JSON Patch (RFC 6902) from the difference between a workload and what the
//! policy wants it to be: only what differs is written, so reviewing the patched
//! object again yields an empty patch, which is then omitted.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation};
use serde_json::{Map, Value};

use crate::workload::Workload;

/// What the policy wants set on a workload.
#[derive(Debug, Clone, Default)]
pub struct Desired<'a> {
    pub labels: Vec<(&'a str, &'a str)>,
    pub suspend: Option<bool>,
}

pub fn diff(original: &Workload, desired: &Desired<'_>) -> Patch {
    let mut operations = Vec::new();
    let missing_labels: Vec<(&str, &str)> =
        desired.labels.iter().copied().filter(|(key, value)| original.label(key) != Some(*value)).collect();
    if !missing_labels.is_empty() {
        if original.has_labels_map() {
            for (key, value) in missing_labels {
                // from_tokens escapes '/' as '~1' and '~' as '~0'.
                let path = PointerBuf::from_tokens(["metadata", "labels", key]);
                operations.push(add(path, Value::String(value.into())));
            }
        } else {
            let labels: Map<String, Value> =
                missing_labels.into_iter().map(|(k, v)| (k.to_string(), Value::String(v.into()))).collect();
            operations.push(add(PointerBuf::from_tokens(["metadata", "labels"]), Value::Object(labels)));
        }
    }
    if let Some(suspend) = desired.suspend {
        let current = original.spec.as_ref().and_then(|spec| spec.suspend);
        if current != Some(suspend) {
            if original.has_spec() {
                operations.push(add(PointerBuf::from_tokens(["spec", "suspend"]), Value::Bool(suspend)));
            } else {
                operations.push(add(PointerBuf::from_tokens(["spec"]), serde_json::json!({ "suspend": suspend })));
            }
        }
    }
    Patch(operations)
}

/// `add` replaces an existing member, so it serves for both new and changed fields.
fn add(path: PointerBuf, value: Value) -> PatchOperation {
    PatchOperation::Add(AddOperation { path, value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn workload(value: Value) -> Workload {
        serde_json::from_value(value).unwrap()
    }

    fn apply(mut object: Value, patch: &Patch) -> Value {
        json_patch::patch(&mut object, patch).unwrap();
        object
    }

    #[test]
    fn adds_the_labels_map_when_missing_and_escapes_slashes() {
        let object = json!({"metadata": {"name": "j"}, "spec": {"template": {}}});
        let desired = Desired { labels: vec![("kueue.x-k8s.io/queue-name", "q")], suspend: Some(true) };
        let patch = diff(&workload(object.clone()), &desired);
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "add", "path": "/metadata/labels", "value": {"kueue.x-k8s.io/queue-name": "q"}},
                   {"op": "add", "path": "/spec/suspend", "value": true}])
        );
        let patched = apply(object, &patch);
        assert!(diff(&workload(patched), &desired).0.is_empty(), "idempotent");
    }

    #[test]
    fn adds_one_label_into_an_existing_map_and_flips_suspend() {
        let object = json!({"metadata": {"labels": {"app": "evalhub"}}, "spec": {"suspend": false}});
        let desired = Desired { labels: vec![("kueue.x-k8s.io/queue-name", "q")], suspend: Some(true) };
        let patch = diff(&workload(object.clone()), &desired);
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "q"},
                   {"op": "add", "path": "/spec/suspend", "value": true}])
        );
        let patched = apply(object, &patch);
        assert_eq!(patched["metadata"]["labels"], json!({"app": "evalhub", "kueue.x-k8s.io/queue-name": "q"}));
        assert!(diff(&workload(patched), &desired).0.is_empty());
    }

    #[test]
    fn adds_spec_when_there_is_none_and_nothing_when_already_there() {
        let patch = diff(&workload(json!({"metadata": {}})), &Desired { labels: vec![], suspend: Some(true) });
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "add", "path": "/spec", "value": {"suspend": true}}])
        );
        let done = json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}, "spec": {"suspend": true}});
        let desired = Desired { labels: vec![("kueue.x-k8s.io/queue-name", "q")], suspend: Some(true) };
        assert!(diff(&workload(done), &desired).0.is_empty());
    }
}
