//! The errors of the e2e host: loading and running the module, the test
//! registry's images, and the host calls the guest makes.

/// What the host can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read, or a thread or runtime could not start.
    #[error("{what}: {source}")]
    Io {
        /// What was being read or started.
        what: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// wasmtime or waPC refused the module, or a call into it failed
    /// (the guest reported an error, trapped, or ran out of time).
    #[error("{0}")]
    Wasm(String),
    /// The guest answered something that is not the expected JSON.
    #[error("{operation} answered {answer:?}, not {expected}")]
    Answer {
        /// The waPC operation.
        operation: String,
        /// The answer as text.
        answer: String,
        /// What it should have been.
        expected: &'static str,
    },
    /// A request or settings value could not be serialised.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A registry refused or failed a request.
    #[error("{action} {reference}: {message}")]
    Registry {
        /// `cannot fetch the manifest of`, ...
        action: String,
        /// The image reference.
        reference: String,
        /// What the registry or the client said.
        message: String,
    },
    /// A test service (a registry, a fake identity service) could not be
    /// set up, or refused what the test set up.
    #[error("{0}")]
    Setup(String),
}

impl Error {
    /// An [`Error::Io`] naming `what`.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }
}

/// A result of the e2e host.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The error a host call answers the guest with: its text is what the guest
/// sees, in policy-server's words where policy-server has them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HostCallError(pub String);

impl From<String> for HostCallError {
    fn from(text: String) -> Self {
        HostCallError(text)
    }
}
