//! The ways out a denial offers, each applied to the workload as its submitter
//! would apply it and judged like a new submission: eval-admission must let it
//! through, and Kueue's scheduler must admit it and never preempt it. A way
//! out that fails either test is a wrong answer given to a person.

use eval_admission::cluster::ClusterState;
use eval_admission::config::Config;
use eval_admission::rules::{self, Subject, Verdict, WayOut};
use eval_admission::vocabulary::kueue::{PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL};
use eval_admission::workload::{Workload, WorkloadKind};
use serde_json::Value;

/// The ways out of the validating webhook's denial of `reviewed` (the object as
/// that webhook saw it), as data.
pub fn offered(config: &Config, state: &ClusterState, reviewed: &Value) -> Vec<WayOut> {
    let kind = if reviewed["kind"] == "Job" { WorkloadKind::Job } else { WorkloadKind::JobSet };
    let namespace = reviewed["metadata"]["namespace"].as_str().unwrap_or_default();
    let Ok(workload) = serde_json::from_value::<Workload>(reviewed.clone()) else { return Vec::new() };
    match rules::validate_create(config, state, Subject { kind, namespace, workload: &workload }) {
        Verdict::Deny(denial) => denial.ways_out,
        _ => Vec::new(),
    }
}

/// `workload` (as submitted) with the way out applied, or `None` for one the
/// judge cannot check: the checkpointing annotation is a claim only the
/// submitter can make, and a smaller request is checked by the rules alone.
pub fn apply(workload: &Value, way_out: &WayOut) -> Option<Value> {
    let mut changed = workload.clone();
    match way_out {
        WayOut::Queue(queue) => set_label(&mut changed, QUEUE_NAME_LABEL, Some(queue)),
        WayOut::WorkloadPriorityClass(class) => set_label(&mut changed, PRIORITY_CLASS_LABEL, class.as_deref()),
        WayOut::PodPriorityClass { location, class } => {
            let pod_spec = pod_spec_at(&mut changed, location)?;
            match class {
                Some(class) => pod_spec["priorityClassName"] = class.as_str().into(),
                None => {
                    pod_spec.as_object_mut()?.remove("priorityClassName");
                }
            }
        }
        WayOut::RequestAtMost(_) | WayOut::Checkpointing => return None,
    }
    Some(changed)
}

/// A short name for a way out, for the table's causes.
pub fn kind(way_out: &WayOut) -> &'static str {
    match way_out {
        WayOut::Queue(_) => "another LocalQueue",
        WayOut::WorkloadPriorityClass(Some(_)) => "a WorkloadPriorityClass label",
        WayOut::WorkloadPriorityClass(None) => "removing the priority-class label",
        WayOut::PodPriorityClass { class: Some(_), .. } => "a pod priorityClassName",
        WayOut::PodPriorityClass { class: None, .. } => "removing a pod priorityClassName",
        WayOut::RequestAtMost(_) => "a smaller request",
        WayOut::Checkpointing => "the checkpointing annotation",
    }
}

fn set_label(object: &mut Value, key: &str, value: Option<&str>) {
    let labels = &mut object["metadata"]["labels"];
    if !labels.is_object() {
        *labels = Value::Object(Default::default());
    }
    let labels = labels.as_object_mut().expect("just made an object");
    match value {
        Some(value) => labels.insert(key.to_string(), value.into()),
        None => labels.remove(key),
    };
}

/// The pod spec at a location as the rules name it: `spec.template`, or
/// `replicatedJobs[name]` / `replicatedJobs[index]` for a JobSet.
fn pod_spec_at<'v>(object: &'v mut Value, location: &str) -> Option<&'v mut Value> {
    if location == "spec.template" {
        return object.pointer_mut("/spec/template/spec");
    }
    let which = location.strip_prefix("replicatedJobs[")?.strip_suffix(']')?;
    let replicated = object.pointer_mut("/spec/replicatedJobs")?.as_array_mut()?;
    let index = replicated.iter().position(|job| job["name"] == which).or_else(|| which.parse().ok())?;
    replicated.get_mut(index)?.pointer_mut("/template/spec/template/spec")
}
