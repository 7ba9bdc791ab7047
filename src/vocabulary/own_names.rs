//! eval-admission's own label and annotation keys.

/// Opts a Job or JobSet in as an evaluation (the `opt-in` selector).
pub const EVALUATION_LABEL: &str = "eval-admission.io/evaluation";
/// Says a workload checkpoints, so being preempted does not lose its work.
pub const CHECKPOINTING_ANNOTATION: &str = "eval-admission.io/checkpointing";

/// The audit's name where it writes: its Events' `reportingController`, its
/// PolicyReports' `source`, and their field manager.
pub const AUDIT_CONTROLLER: &str = "eval-admission.io/audit";

/// The label on the PolicyReports the audit writes, so a new lease holder
/// finds the ones it did not write itself.
pub const MANAGED_BY_LABEL: (&str, &str) = ("app.kubernetes.io/managed-by", "eval-admission");
