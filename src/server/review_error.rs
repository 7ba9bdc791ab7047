//! Why a review got no AdmissionReview answer. Each variant is its own HTTP
//! response and metric label: 4xx when the request was wrong, 5xx when the API
//! server should apply the webhook's failurePolicy.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::admission::BadReview;
use crate::cache::LookupError;

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error(transparent)]
    BadReview(#[from] BadReview),
    #[error("request body is larger than the {limit}-byte limit")]
    BodyTooLarge { limit: usize },
    /// No `Content-Length`: the API server always sends one, and without it a
    /// body cannot be judged before it is read.
    #[error("request body has no Content-Length")]
    LengthRequired,
    /// Large bodies in flight already hold the whole pool.
    #[error("too many large reviews in flight (their {pool_bytes}-byte pool is spent); retry")]
    Busy { pool_bytes: usize },
    /// The body did not arrive before the review's deadline.
    #[error("the request body did not arrive before the review's deadline")]
    BodyDeadline,
    /// The cluster view has not synced yet.
    #[error("cluster state is not ready: {0}")]
    NotReady(&'static str),
    /// No time left before the API server's deadline for a confirming lookup.
    #[error("timed out: {0}")]
    Deadline(String),
    /// The live lookup before a denial failed.
    #[error(transparent)]
    Lookup(#[from] LookupError),
}

impl ReviewError {
    /// A short, stable label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::BadReview(_) => "bad_review",
            Self::BodyTooLarge { .. } => "body_too_large",
            Self::LengthRequired => "length_required",
            Self::Busy { .. } => "busy",
            Self::BodyDeadline => "body_timeout",
            Self::NotReady(_) => "not_ready",
            Self::Deadline(_) | Self::Lookup(LookupError::Timeout(_)) => "timeout",
            Self::Lookup(LookupError::Api { .. }) => "kube",
        }
    }

    pub fn status_code(&self) -> StatusCode {
        match self {
            Self::BadReview(_) => StatusCode::BAD_REQUEST,
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::LengthRequired => StatusCode::LENGTH_REQUIRED,
            Self::Busy { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::BodyDeadline => StatusCode::REQUEST_TIMEOUT,
            Self::NotReady(_) | Self::Deadline(_) | Self::Lookup(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ReviewError {
    fn into_response(self) -> Response {
        (self.status_code(), format!("{self}\n")).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_answers_with_its_status_and_label() {
        let cases = [
            (ReviewError::BadReview(BadReview("x".into())), 400, "bad_review"),
            (ReviewError::BodyTooLarge { limit: 1 }, 413, "body_too_large"),
            (ReviewError::LengthRequired, 411, "length_required"),
            (ReviewError::Busy { pool_bytes: 1 }, 429, "busy"),
            (ReviewError::BodyDeadline, 408, "body_timeout"),
            (ReviewError::NotReady("x"), 500, "not_ready"),
            (ReviewError::Deadline("x".into()), 500, "timeout"),
            (ReviewError::Lookup(LookupError::Timeout("x".into())), 500, "timeout"),
        ];
        for (error, status, label) in cases {
            assert_eq!((error.metric_label(), error.into_response().status().as_u16()), (label, status));
        }
    }
}
