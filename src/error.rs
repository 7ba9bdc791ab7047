//! One error type for the crate; each variant maps to a metric label and, at the
//! HTTP edge, to a status code.

use axum::http::StatusCode;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The body is not an AdmissionReview we can answer (400).
    #[error("malformed AdmissionReview: {0}")]
    BadReview(String),
    /// The body is over the configured limit (413).
    #[error("request body is larger than the {limit}-byte limit")]
    BodyTooLarge { limit: usize },
    /// The cluster view has not synced yet, or shutdown has begun (500).
    #[error("cluster state is not ready: {0}")]
    NotReady(String),
    /// The review or a confirming lookup ran past its deadline (500).
    #[error("timed out: {0}")]
    Timeout(String),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("cluster state file {0}")]
    StateFile(String),
    #[error("config file {0}")]
    Config(String),
    #[error("request file {0}")]
    RequestFile(String),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("cannot listen on {0}")]
    Listen(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// A short, stable label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::BadReview(_) => "bad_review",
            Self::BodyTooLarge { .. } => "body_too_large",
            Self::NotReady(_) => "not_ready",
            Self::Timeout(_) => "timeout",
            Self::Kube(_) => "kube",
            Self::StateFile(_) => "state_file",
            Self::Config(_) => "config",
            Self::RequestFile(_) => "request_file",
            Self::Tls(_) => "tls",
            Self::Listen(_) => "listen",
            Self::Io(_) => "io",
        }
    }

    /// What the webhook endpoints answer for this error. 4xx means the request was
    /// wrong; 5xx makes the API server apply the webhook's failurePolicy.
    pub fn status_code(&self) -> StatusCode {
        match self {
            Self::BadReview(_) => StatusCode::BAD_REQUEST,
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
