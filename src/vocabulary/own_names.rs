//! eval-admission's own label and annotation keys.

/// Opts a Job or JobSet in as an evaluation (the `opt-in` selector).
pub const EVALUATION_LABEL: &str = "eval-admission.io/evaluation";
/// Says a workload checkpoints, so being preempted does not lose its work.
pub const CHECKPOINTING_ANNOTATION: &str = "eval-admission.io/checkpointing";
