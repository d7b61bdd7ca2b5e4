//! Context-aware placement with real parts: image platforms from a real
//! registry (Debian's docker-registry on 127.0.0.1, images pushed with real
//! `platform` entries), Nodes and RuntimeClasses from the cluster fixtures of
//! `e2e/clusters/`, answered through Kubewarden's waPC host calls by the e2e
//! host (`os_placement_e2e::capabilities`), and the same image cases through
//! the real policy-server, which also refuses the published facts to a
//! policy not granted them (`refused_facts.rs`, on the fault suite's fake
//! Kubernetes API).
//!
//! A missing registry server or policy-server fails under CI and prints
//! `SKIPPED: ...` elsewhere (see `os_placement_e2e::external`).

mod evaluation;
mod host_calls;
mod policy;
mod policy_server;
mod refused_facts;
mod support;
