//! Release tests that need the wasmtime host: the annotated module evaluated
//! and compared with kwctl's, the policy-server-faithful host and its
//! AdmissionReview front door, the fixtures, the deploy manifests' settings,
//! and the real policy-server answering as our host does. (Registry, kwctl
//! push/pull, signatures and packaging: xtask's tests.)
//!
//! The module is `$OS_PLACEMENT_WASM` (else the `make build` output). Tests
//! that need `docker-registry`, kwctl or policy-server fail under CI when one
//! is missing and print `SKIPPED: ...` elsewhere (see `os_placement_e2e::external`).

mod annotated;
mod audit;
mod deploy;
mod fixtures;
mod interop;
mod review;
mod support;
