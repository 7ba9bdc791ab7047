//! Errors of start-up and of the command line: what could not be read, parsed
//! or started, naming the file or address. The process reports one and exits.
//! Errors while answering a review are [`crate::server::ReviewError`], each its
//! own HTTP answer and metric label.

use std::path::{Path, PathBuf};

/// What went wrong underneath: an I/O or parse error, or a parser's own message.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file named on the command line that could not be read or decoded.
    #[error("{what} {}: {source}", path.display())]
    File {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: Cause,
    },
    /// A request the offline chain cannot run (a malformed AdmissionReview, a patch that does not apply).
    #[error("request: {0}")]
    Request(String),
    /// The serving certificate or key: which part, and why.
    #[error("TLS: {part}: {source}")]
    Tls {
        part: String,
        #[source]
        source: Cause,
    },
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot handle process signals: {0}")]
    Signals(#[source] std::io::Error),
    #[error("cannot start the log writer: {0}")]
    Logging(#[source] std::io::Error),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The live cluster could not be read as a command needs it.
    #[error("cluster: {0}")]
    Cluster(String),
    #[error("writing {path}: {source}")]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn file(what: &'static str, path: &Path, source: impl Into<Cause>) -> Self {
        Self::File { what, path: path.to_path_buf(), source: source.into() }
    }

    pub fn tls(part: impl Into<String>, source: impl Into<Cause>) -> Self {
        Self::Tls { part: part.into(), source: source.into() }
    }
}
