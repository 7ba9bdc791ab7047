//! Errors of start-up and of the command line: what could not be read, parsed
//! or started, naming the file or address. The process reports one and exits.
//! Errors while answering a review are [`crate::server::ReviewError`], each its
//! own HTTP answer and metric label.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cluster state file {0}")]
    StateFile(String),
    #[error("config file {0}")]
    Config(String),
    #[error("request file {0}")]
    RequestFile(String),
    #[error("TLS: {0}")]
    Tls(String),
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
    #[error("writing {path}: {source}")]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
