//! The one error type of the release chores: each variant says what failed
//! and, where it helps, how to fix it.

use std::path::PathBuf;

/// What a chore can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A YAML or JSON document could not be read or written.
    #[error("{what}: {message}")]
    Document {
        /// The file or the document.
        what: String,
        /// What is wrong, with its position when known.
        message: String,
    },
    /// `metadata.yml` lacks a field or has one of the wrong type.
    #[error("metadata.yml: {0}")]
    Metadata(String),
    /// The module is not a valid wasm module (or is a component).
    #[error("not a Kubewarden policy module: {0}")]
    Module(String),
    /// A command-line argument is missing or wrong.
    #[error("{0}")]
    Usage(String),
    /// An OCI reference could not be parsed.
    #[error("{reference:?} is not an OCI reference (host[:port]/path:tag): {message}")]
    Reference {
        /// The reference as given.
        reference: String,
        /// What the parser said.
        message: String,
    },
    /// A registry refused or failed a request.
    #[error("{action} {reference}: {message}")]
    Registry {
        /// `cannot push to`, `cannot pull`, ...
        action: &'static str,
        /// The image reference.
        reference: String,
        /// What the registry or the client said.
        message: String,
    },
    /// Creating, reading or using a signing key failed.
    #[error("{0}")]
    Signing(String),
    /// A program or data set from outside the repository is missing.
    #[error("{0}")]
    Missing(String),
    /// A local process (registry, policy-server) did not start or answer.
    #[error("{what}: {message}")]
    Process {
        /// The process.
        what: String,
        /// What happened, with its log when there is one.
        message: String,
    },
}

/// A result of a release chore.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}

/// Reads a file, naming it in the error.
pub fn read(path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(Error::io(path))
}

/// Reads a UTF-8 file, naming it in the error.
pub fn read_text(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(Error::io(path))
}

/// Writes a file, naming it in the error.
pub fn write(path: &std::path::Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    std::fs::write(path, bytes).map_err(Error::io(path))
}
