//! Benchmarks of os-placement on the e2e wasmtime host (`make bench`,
//! `make bench-lookup`); `bench/floor` is the minimal guest they compare with,
//! and `bench/server.sh` the same policies through the real policy-server.
#![deny(missing_docs)]

pub mod measured_host;
pub mod nodepools;
pub mod stats;
pub mod stderr;

use std::path::PathBuf;

/// What a benchmark can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A command-line argument is missing or wrong.
    #[error("{0}")]
    Usage(String),
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The host could not load or run a module.
    #[error(transparent)]
    Host(#[from] os_placement_e2e::Error),
    /// A case, a settings file or the corpus could not be read.
    #[error("{0:#}")]
    Input(#[from] anyhow::Error),
    /// A local process (the registry) failed.
    #[error(transparent)]
    Local(#[from] xtask::Error),
    /// The policy did not answer what the benchmark measures.
    #[error("{0}")]
    Unexpected(String),
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}

/// A benchmark result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
