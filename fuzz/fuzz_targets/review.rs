//! The review path: AdmissionReview body in, decision, encoded response out
//! (`eval_admission::admission::review`, what the HTTPS server and the
//! `review` command run). The input is the request body as the API server
//! sends it; each one is reviewed by both webhooks under each config of
//! `configs()` against examples/cluster.yaml. Invariants: see
//! `eval_admission_fuzz::check_review` and `check_mutation_idempotent`.
#![no_main]

use eval_admission_fuzz::{check_all, state, write_seeds_if_asked};
use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        write_seeds_if_asked("review");
        let _ = (state(), eval_admission_fuzz::configs());
    },
    |body: &[u8]| {
        check_all(body, state());
    }
);
