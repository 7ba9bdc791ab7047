//! The YAML/JSON readers: the cluster state file (`state_file::parse`,
//! multi-document, `kind: List` unpacked) and the request file of the
//! `review` command (`cli::admission_review`). Neither may panic. A state
//! that parses is then used: three fixed reviews are decided against it under
//! the shipped config with the invariants of `check_review`, so a state the
//! parser accepts cannot make the rules panic either. A request file that
//! reads is run through the offline chain (`cli::review_value`) as the
//! `review` command would, whose mutating patch must apply.
#![no_main]

use eval_admission::cli;
use eval_admission::cluster::state_file;
use eval_admission::error::Error;
use eval_admission_fuzz::{WEBHOOKS, base_config, check_review, fixed_bodies, state, write_seeds_if_asked};
use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        write_seeds_if_asked("state_file");
        let _ = (state(), base_config(), fixed_bodies());
    },
    |data: &[u8]| {
        if let Ok(parsed) = state_file::parse(data) {
            let _ = parsed.counts();
            for (body, request) in fixed_bodies() {
                for webhook in WEBHOOKS {
                    check_review(webhook, body, Some(request), base_config(), &parsed);
                }
            }
        }
        if let Ok(review) = cli::admission_review(data) {
            assert_eq!(review["kind"], "AdmissionReview", "the request file reader returns an AdmissionReview");
            if let Err(Error::Request(message)) = cli::review_value(base_config(), state(), review) {
                assert!(!message.contains("does not apply"), "{message}");
            }
        }
    }
);
