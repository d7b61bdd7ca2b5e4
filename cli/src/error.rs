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
    /// `facts sync` could not read the cluster or publish the facts.
    #[error("facts sync: {0}")]
    Sync(Box<crate::sync::SyncError>),
}

impl From<crate::sync::SyncError> for CliError {
    fn from(error: crate::sync::SyncError) -> CliError {
        CliError::Sync(Box::new(error))
    }
}
