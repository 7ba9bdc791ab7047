//! JSON Patch (RFC 6902) from the difference between a workload and the
//! [`Shape`] the policy wants it in: only what differs is written, so reviewing
//! the patched object again yields an empty patch, which is then omitted.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, RemoveOperation};
use serde_json::{Map, Value};

use crate::rules::Shape;
use crate::vocabulary::kueue::QUEUE_NAME_LABEL;
use crate::workload::Workload;

pub fn diff(original: &Workload, shape: &Shape) -> Patch {
    let mut operations = Vec::new();
    let labels = shape.queue_label.as_deref().map(|queue| (QUEUE_NAME_LABEL, queue));
    let missing_labels: Vec<(&str, &str)> =
        labels.into_iter().filter(|(key, value)| original.label(key) != Some(*value)).collect();
    if !missing_labels.is_empty() {
        let labels = || -> Map<String, Value> {
            missing_labels.iter().map(|(k, v)| (k.to_string(), Value::String((*v).into()))).collect()
        };
        if !original.metadata.present {
            operations.push(add(PointerBuf::from_tokens(["metadata"]), serde_json::json!({ "labels": labels() })));
        } else if original.has_labels_map() {
            for (key, value) in &missing_labels {
                // from_tokens escapes '/' as '~1' and '~' as '~0'.
                let path = PointerBuf::from_tokens(["metadata", "labels", key]);
                operations.push(add(path, Value::String((*value).into())));
            }
        } else {
            operations.push(add(PointerBuf::from_tokens(["metadata", "labels"]), Value::Object(labels())));
        }
    }
    if shape.suspended && !original.is_suspended() {
        if original.has_spec() {
            operations.push(add(PointerBuf::from_tokens(["spec", "suspend"]), Value::Bool(true)));
        } else {
            operations.push(add(PointerBuf::from_tokens(["spec"]), serde_json::json!({ "suspend": true })));
        }
    }
    for at in &shape.cleared_pod_priority_classes {
        if original.has_pod_priority_class_at(*at) {
            let path = PointerBuf::from_tokens(at.priority_class_name_pointer());
            operations.push(PatchOperation::Remove(RemoveOperation { path }));
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
    use crate::workload::PodTemplateAt;
    use serde_json::json;

    #[test]
    fn removes_a_cleared_pod_priority_class_once() {
        let object = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"suspend": true, "replicatedJobs": [
            {"name": "x", "template": {"spec": {"template": {"spec": {}}}}},
            {"name": "y", "template": {"spec": {"template": {"spec": {"priorityClassName": "p"}}}}}]}});
        let desired = Shape { cleared_pod_priority_classes: vec![PodTemplateAt::ReplicatedJob(1)], ..Shape::default() };
        let patch = diff(&workload(object.clone()), &desired);
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "remove", "path": "/spec/replicatedJobs/1/template/spec/template/spec/priorityClassName"}])
        );
        let patched = apply(object, &patch);
        assert!(diff(&workload(patched), &desired).0.is_empty(), "idempotent");
    }

    #[test]
    fn an_object_without_metadata_gets_it_whole() {
        let object = json!({"spec": {"template": {}}});
        let patch = diff(&workload(object.clone()), &queued("q"));
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "add", "path": "/metadata", "value": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}},
                   {"op": "add", "path": "/spec/suspend", "value": true}])
        );
        let patched = apply(object, &patch);
        assert!(diff(&workload(patched), &queued("q")).0.is_empty(), "idempotent");
    }

    fn workload(value: Value) -> Workload {
        serde_json::from_value(value).unwrap()
    }

    fn queued(queue: &str) -> Shape {
        Shape { queue_label: Some(queue.into()), suspended: true, cleared_pod_priority_classes: Vec::new() }
    }

    fn apply(mut object: Value, patch: &Patch) -> Value {
        json_patch::patch(&mut object, patch).unwrap();
        object
    }

    #[test]
    fn adds_the_labels_map_when_missing_and_escapes_slashes() {
        let object = json!({"metadata": {"name": "j"}, "spec": {"template": {}}});
        let desired = queued("q");
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
        let desired = queued("q");
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
        let patch = diff(&workload(json!({"metadata": {}})), &Shape { suspended: true, ..Shape::default() });
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "add", "path": "/spec", "value": {"suspend": true}}])
        );
        let done = json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}, "spec": {"suspend": true}});
        let desired = queued("q");
        assert!(diff(&workload(done), &desired).0.is_empty());
    }

    #[test]
    fn a_shape_is_met_exactly_when_its_patch_is_empty() {
        let objects = [
            json!({"metadata": {}}),
            json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}, "spec": {"suspend": false}}),
            json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "other"}}, "spec": {"suspend": true}}),
            json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}, "spec": {"suspend": true}}),
        ];
        let shapes = [Shape::default(), queued("q"), Shape { suspended: true, ..Shape::default() }];
        for object in &objects {
            for shape in &shapes {
                let workload = workload(object.clone());
                assert_eq!(shape.is_met_by(&workload), diff(&workload, shape).0.is_empty(), "{object} {shape:?}");
            }
        }
    }
}
