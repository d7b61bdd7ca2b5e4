//! What can go wrong in a command, worded for the person who ran it.

use std::io;
use std::path::PathBuf;

/// An error that ends a command with exit code 2 (or a read error kept for
/// one input while the others are checked).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Writing the output failed (a closed pipe included).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// A file or stdin could not be read.
    #[error("cannot read {name}: {source}")]
    Read {
        /// The file, or `<stdin>`.
        name: String,
        /// Why.
        source: io::Error,
    },
    /// A folder could not be listed.
    #[error("cannot list folder {}: {source}", path.display())]
    List {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An input above the size limit.
    #[error("{name} is larger than {limit_mib} MiB: split it into smaller files")]
    TooLarge {
        /// The file, or `<stdin>`.
        name: String,
        /// The limit.
        limit_mib: u64,
    },
    /// An input that is not UTF-8 text.
    #[error("{name} is not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 {
        /// The file, or `<stdin>`.
        name: String,
        /// Where the first invalid byte is.
        offset: usize,
    },
    /// A file could not be rewritten.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The settings are not valid: one line per problem, each with where it is.
    #[error("invalid settings:\n{}", .0.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n"))]
    Settings(Vec<String>),
    /// The facts file is not valid.
    #[error("invalid facts: {0}")]
    Facts(String),
    /// Arguments that do not go together.
    #[error("{0}")]
    Usage(&'static str),
    /// `--lookup` could not start its async runtime.
    #[error("--lookup: cannot start the async runtime: {0}")]
    Runtime(io::Error),
    /// `facts sync` could not read the cluster or publish the facts.
    #[error("facts sync: {0}")]
    Sync(Box<SyncError>),
}

impl From<SyncError> for CliError {
    fn from(error: SyncError) -> CliError {
        CliError::Sync(Box::new(error))
    }
}

/// What stops a sync.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// No kubeconfig or in-cluster configuration.
    #[error("no Kubernetes configuration (in-cluster or KUBECONFIG): {0}")]
    Config(String),
    /// A Kubernetes API call failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done.
        action: String,
        /// The client's error.
        source: Box<kube::Error>,
    },
    /// `--metrics-address` could not be listened on.
    #[error("cannot listen on {0} (--metrics-address): {1}")]
    Listen(std::net::SocketAddr, std::io::Error),
    /// A publish took longer than its deadline.
    #[error("the facts could not be published within {0:?}")]
    Timeout(std::time::Duration),
    /// `--once`: some kind could not be listed in time.
    #[error("not every kind could be listed within {0:?}; see the messages above")]
    Incomplete(std::time::Duration),
    /// A ConfigMap the core built does not read as one.
    #[error("cannot build ConfigMap {name}: {source}")]
    ConfigMap {
        /// Its name.
        name: String,
        /// Why.
        source: serde_json::Error,
    },
}
