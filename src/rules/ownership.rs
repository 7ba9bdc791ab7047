//! Whether a workload is left to its owner. Kueue admits a Job controlled by a
//! JobSet (or another kind it manages as a unit) through that owner's Workload,
//! so the policy skips such a Job. Anyone who can create a Job can also write
//! an ownerReference, so the claim alone proves nothing: the owner must exist
//! in the Job's namespace with the uid the reference names, as Kueue's own
//! reconciler requires before it treats a Job as a child (Kueue v0.19.2
//! `jobframework.FindAncestorJobManagedByKueue`: it GETs each owner and stops
//! where the uid differs; a missing owner is `ErrWorkloadOwnerNotFound`, and
//! the Job is never admitted).
//!
//! On UPDATE the old object must have claimed the same owner: adding an owner
//! never unlocks the guards of a workload the policy already shapes.

use super::verdict::{Denial, Subject};
use crate::cluster::{Absent, ClaimedOwner, ClusterView, OwnerKey};
use crate::config::Config;
use crate::vocabulary::reason::Reason;
use crate::workload::{OwnerReference, Workload};

/// What a workload's controller ownerReference is worth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// No controller owner of a Kueue-managed kind: the policy judges the workload.
    Own,
    /// Its owner exists as referenced: Kueue admits the owner, not this workload.
    LeftToOwner,
    /// An owner of a managed kind that the view does not hold as referenced
    /// (absent, or another uid): the server confirms it live before refusing.
    Unverified { owner: OwnerKey, uid: String },
    /// On UPDATE, an owner the old object did not claim: judged as its own.
    Added,
}

pub fn ownership(config: &Config, view: &impl ClusterView, subject: Subject<'_>, old: Option<&Workload>) -> Ownership {
    let Some(owner) = config.managed_controller_owner(subject.workload) else { return Ownership::Own };
    if let Some(old) = old
        && config.managed_controller_owner(old).is_none_or(|old_owner| !same_owner(old_owner, owner))
    {
        return Ownership::Added;
    }
    let key = OwnerKey {
        api_group: owner.api_group().to_string(),
        kind: owner.kind.clone(),
        namespace: subject.namespace.to_string(),
        name: owner.name.clone(),
    };
    if !owner.uid.is_empty() && view.owner_uid(&key) == Some(owner.uid.as_str()) {
        Ownership::LeftToOwner
    } else {
        Ownership::Unverified { owner: key, uid: owner.uid.clone() }
    }
}

fn same_owner(a: &OwnerReference, b: &OwnerReference) -> bool {
    a.api_group() == b.api_group() && a.kind == b.kind && a.name == b.name && a.uid == b.uid
}

/// The denial of a new workload whose owner is not what its reference says.
/// Removing the reference is offered only when the workload would then pass
/// every check as its own (with the queue it has or its namespace's default).
pub fn unverified_owner_denial(view: &impl ClusterView, subject: Subject<'_>, owner: OwnerKey, uid: String) -> Denial {
    let OwnerKey { kind, name, namespace, .. } = &owner;
    let uid_said = if uid.is_empty() { "no uid".to_string() } else { format!("uid {uid}") };
    let mut message = format!(
        "{subject} names {kind} '{name}' ({uid_said}) as its controller, but no such {kind} exists in namespace \
         '{namespace}'. Kueue leaves a workload with a {kind} controller to that {kind}, and would never admit this \
         one."
    );
    let mut alone = subject.workload.clone();
    alone.metadata.owner_references = None;
    let queue = alone
        .queue_name_read_by(view.kueue_config().version)
        .map(str::to_string)
        .or_else(|| view.namespace(subject.namespace).and_then(|ns| ns.default_queue.clone()));
    let works_alone = queue.is_some_and(|queue| {
        let queued = alone.with_label(crate::vocabulary::kueue::QUEUE_NAME_LABEL, Some(&queue));
        super::passes(view, Subject { workload: &queued, ..subject })
    });
    if works_alone {
        message.push_str(&format!(" To fix: create it through its {kind}, or remove the ownerReference."));
    } else {
        message.push_str(&format!(" To fix: create it through its {kind}."));
    }
    Denial::new(Reason::UnverifiedOwner, message).because_absent(Absent::Owner(Box::new(ClaimedOwner { owner, uid })))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cluster::ClusterObject;
    use crate::rules::fixtures::*;
    use crate::rules::{Verdict, mutate_create, validate_create, validate_update};
    use crate::vocabulary::kueue::QUEUE_NAME_LABEL;

    const NAMESPACE: &str = "team-a-namespace";
    const KUEUE: &str = "system:serviceaccount:kueue-system:kueue-controller-manager";

    fn owned_by(name: &str, uid: &str) -> Workload {
        let mut job = evalhub_job_value(NAMESPACE, &[], None);
        job["metadata"]["ownerReferences"] = json!([{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]);
        serde_json::from_value(job).unwrap()
    }

    fn with_jobset(name: &str, uid: &str) -> crate::cluster::ClusterState {
        let mut state = seed_state();
        let key = OwnerKey {
            api_group: "jobset.x-k8s.io".into(),
            kind: "JobSet".into(),
            namespace: NAMESPACE.into(),
            name: name.into(),
        };
        state.apply(ClusterObject::Owner { key, uid: uid.into() });
        state
    }

    fn queued_and_suspended(mut workload: Workload) -> Workload {
        workload = workload.with_label(QUEUE_NAME_LABEL, Some("eval-queue"));
        workload.spec.get_or_insert_default().suspend = Some(true);
        workload
    }

    #[test]
    fn a_job_of_a_jobset_that_exists_is_left_to_it() {
        let (config, state) = (Config::default(), with_jobset("js", "uid-1"));
        let child = owned_by("js", "uid-1");
        assert_eq!(mutate_create(&config, &state, job_subject(&child)), Verdict::Skip(Reason::OwnedByKueueWorkload));
        assert_eq!(validate_create(&config, &state, job_subject(&child)), Verdict::Skip(Reason::OwnedByKueueWorkload));
        let unsuspended = {
            let mut child = child.clone();
            child.spec.get_or_insert_default().suspend = Some(false);
            child
        };
        assert_eq!(
            validate_update(&config, &state, job_subject(&unsuspended), &child, "jobset-controller"),
            Verdict::Skip(Reason::OwnedByKueueWorkload),
            "the JobSet's Workload governs its Jobs"
        );
    }

    #[test]
    fn a_new_job_naming_an_owner_that_is_not_there_is_refused() {
        let config = Config::default();
        for (state, what) in [(seed_state(), "absent"), (with_jobset("js", "uid-other"), "another uid")] {
            let forged = owned_by("js", "uid-1");
            let Verdict::Deny(denial) = mutate_create(&config, &state, job_subject(&forged)) else {
                panic!("{what}: refused")
            };
            assert_eq!(denial.reason, Reason::UnverifiedOwner, "{what}");
            let owner = OwnerKey {
                api_group: "jobset.x-k8s.io".into(),
                kind: "JobSet".into(),
                namespace: NAMESPACE.into(),
                name: "js".into(),
            };
            let expected_absent = Absent::Owner(Box::new(ClaimedOwner { owner, uid: "uid-1".into() }));
            assert_eq!(denial.absent, Some(expected_absent), "{what}: confirmed live before it goes out");
            assert_eq!(
                denial.message,
                "Job team-a-namespace/evalhub-3f2a names JobSet 'js' (uid uid-1) as its controller, but no such \
                 JobSet exists in namespace 'team-a-namespace'. Kueue leaves a workload with a JobSet controller to \
                 that JobSet, and would never admit this one. To fix: create it through its JobSet, or remove the \
                 ownerReference.",
                "{what}"
            );
        }
        // Removing the reference is offered only when the Job would then pass on its own.
        let mut no_default = seed_state();
        no_default.apply(ClusterObject::Namespace { name: NAMESPACE.into(), info: Default::default() });
        let Verdict::Deny(denial) = mutate_create(&config, &no_default, job_subject(&owned_by("js", "u"))) else {
            panic!("refused")
        };
        assert!(denial.message.ends_with("To fix: create it through its JobSet."), "{}", denial.message);
        // A workload the policy does not select is not its business, owned or not.
        let mut other = evalhub_job_value(NAMESPACE, &[], None);
        other["metadata"]["labels"] = json!({"app": "web"});
        other["metadata"]["ownerReferences"] = json!([{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "name": "js", "uid": "u", "controller": true}]);
        let other: Workload = serde_json::from_value(other).unwrap();
        assert_eq!(mutate_create(&config, &seed_state(), job_subject(&other)), Verdict::Skip(Reason::NotAnEvaluation));
    }

    #[test]
    fn an_owner_added_on_update_unlocks_no_guard() {
        let config = Config::default();
        let state = with_jobset("js", "uid-1");
        let queued = queued_and_suspended(evalhub_job(NAMESPACE, None));
        // Even a real JobSet's reference, added to a queued evaluation, leaves the guards on.
        let claimed = {
            let mut claimed = owned_by("js", "uid-1").with_label(QUEUE_NAME_LABEL, Some("eval-queue"));
            claimed.spec.get_or_insert_default().suspend = Some(false);
            claimed
        };
        let Verdict::Deny(denial) = validate_update(&config, &state, job_subject(&claimed), &queued, "alice") else {
            panic!("unsuspending is still refused")
        };
        assert_eq!(denial.reason, Reason::UnsuspendNotAllowed);
        let mut unqueued = owned_by("js", "uid-1");
        unqueued.spec.get_or_insert_default().suspend = Some(true);
        let Verdict::Deny(denial) = validate_update(&config, &state, job_subject(&unqueued), &queued, "alice") else {
            panic!("removing the queue is still refused")
        };
        assert_eq!(denial.reason, Reason::QueueLabelRemoved);
        // Kept since creation, a forged owner unlocks nothing either: the guards judge the change.
        let forged_old = queued_and_suspended(owned_by("ghost", "g"));
        let mut forged_new = forged_old.clone();
        forged_new.spec.get_or_insert_default().suspend = Some(false);
        let Verdict::Deny(denial) = validate_update(&config, &state, job_subject(&forged_new), &forged_old, "alice")
        else {
            panic!("refused")
        };
        assert_eq!(denial.reason, Reason::UnsuspendNotAllowed);
        assert!(
            matches!(
                validate_update(&config, &state, job_subject(&forged_new), &forged_old, KUEUE),
                Verdict::Allow { .. }
            ),
            "Kueue's own unsuspend still passes"
        );
    }

    #[test]
    fn an_owner_changed_on_update_is_judged_as_its_own() {
        let config = Config::default();
        let state = with_jobset("js", "uid-1");
        let running = |mut workload: Workload| {
            workload = workload.with_label(QUEUE_NAME_LABEL, Some("eval-queue"));
            workload.spec.get_or_insert_default().suspend = Some(false);
            workload
        };
        // The new reference names a JobSet that exists; the old one named another (by name, then by uid).
        for (old_name, old_uid) in [("js-old", "uid-1"), ("js", "uid-0")] {
            let old = queued_and_suspended(owned_by(old_name, old_uid));
            let new = running(owned_by("js", "uid-1"));
            let Verdict::Deny(denial) = validate_update(&config, &state, job_subject(&new), &old, "alice") else {
                panic!("{old_name} {old_uid}: unsuspending is still refused")
            };
            assert_eq!(denial.reason, Reason::UnsuspendNotAllowed, "{old_name} {old_uid}");
        }
    }

    #[test]
    fn removing_the_reference_is_not_offered_when_the_namespace_default_would_refuse_the_job() {
        let config = Config::default();
        let mut state = seed_state();
        // The namespace's default is a queue that could preempt an evaluation.
        state.apply(ClusterObject::Namespace {
            name: NAMESPACE.into(),
            info: crate::cluster::objects::NamespaceInfo {
                default_queue: Some("shared-queue".into()),
                ..Default::default()
            },
        });
        let Verdict::Deny(denial) = mutate_create(&config, &state, job_subject(&owned_by("js", "u"))) else {
            panic!("refused")
        };
        assert_eq!(denial.reason, Reason::UnverifiedOwner);
        assert!(denial.message.ends_with("To fix: create it through its JobSet."), "{}", denial.message);
    }
}
