//! Release tests: the annotated module, the policy-server-faithful host and
//! its AdmissionReview front door, the OCI artifact in a real registry, and
//! interop with the real kwctl and policy-server.
//!
//! The module is `$OS_PLACEMENT_WASM` (else the `make build` output). Tests
//! that need `docker-registry`, kwctl or policy-server fail under CI when one
//! is missing and print `SKIPPED: ...` elsewhere (see `os_placement_e2e::external`).

mod annotated;
mod fixtures;
mod interop;
mod packaging;
mod registry;
mod review;
mod support;
