//! Release chores of os-placement, run as `cargo xtask <chore>` (the alias is
//! in `.cargo/config.toml`): annotate the policy module with its metadata,
//! push and pull it as an OCI artifact, make a cosign key pair and sign a
//! pushed artifact, write the Artifact Hub package, make the SBOM that
//! cargo-sbom writes valid SPDX, and build and push the CLI's container
//! image. Nothing here runs the module, so the crate builds without a wasm
//! runtime.
#![deny(missing_docs)]

pub mod annotate;
pub mod artifacthub;
pub mod cli;
pub mod error;
pub mod image;
pub mod local;
pub mod oci;
pub mod sbom;
pub mod sign;
pub mod yaml;

pub use error::{Error, Result};
