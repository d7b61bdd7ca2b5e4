//! Cloud identities for the registry client's credential providers, all on
//! 127.0.0.1: a real registry behind htpasswd ([`AuthRegistry`]) whose
//! passwords are the tokens the fake identity services issue, and those
//! services, each a [`Scripted`](crate::faults::registry::Scripted) server
//! recording every request, with a token lifetime and a failure mode a test
//! may change while it runs ([`FakeService`]): AWS STS, the EKS Pod
//! Identity agent and IMDSv2 ([`aws`]), ECR's GetAuthorizationToken with
//! its SigV4 signature checked ([`ecr`], [`sigv4`]), GKE's metadata server
//! ([`gcp`]), Entra ID and an ACR front ([`azure`]).
//!
//! The tests reach the registries under cloud-shaped names that
//! /etc/hosts points at 127.0.0.1 (`make test-hosts`; [`cloud_hosts_resolve`]).
//!
//! A test starts an [`AuthRegistry`], pushes an image with
//! [`AuthRegistry::push_image`], starts the services its provider needs
//! with their endpoints in the client's environment, reads the image
//! through the client, then checks [`FakeService::seen`] and
//! [`FakeService::issued`] (and [`renewed_in_time`]).

pub mod auth_registry;
pub mod aws;
pub mod azure;
pub mod ecr;
pub mod gcp;
pub mod service;
pub mod sigv4;
pub mod tokens;

#[cfg(test)]
mod tests;

use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};

pub use auth_registry::{AuthRegistry, PUSHER};
pub use aws::{
    AwsKeys, FakeImds, FakePodIdentity, FakeSts, ImdsFailure, KeyRing, PodIdentityFailure,
    StsFailure,
};
pub use azure::{AcrFailure, AcrFront, EntraFailure, FakeEntra, ACR_USER};
pub use ecr::{EcrFailure, EcrRegistry, FakeEcr, ECR_USER};
pub use gcp::{FakeGce, GceFailure, GCP_USER};
pub use service::FakeService;
pub use tokens::{renewed_in_time, Issued};

use crate::error::Error;
use crate::external;

/// The registry names the credential tests use, each on 127.0.0.1 through
/// /etc/hosts (the Makefile's `test-hosts` adds them).
pub const CLOUD_HOSTS: [&str; 5] = [
    "123456789012.dkr.ecr.us-east-1.amazonaws.com",
    "210987654321.dkr.ecr.eu-west-1.amazonaws.com",
    "europe-west4-docker.pkg.dev",
    "osplacement.azurecr.io",
    "registry.other.test",
];

/// `Ok` when every name of [`CLOUD_HOSTS`] resolves to 127.0.0.1 only;
/// else which do not, and how to fix it.
pub fn cloud_hosts_resolve() -> Result<(), String> {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let wrong: Vec<String> = CLOUD_HOSTS
        .iter()
        .filter_map(|name| {
            let addresses: Vec<IpAddr> = match (*name, 443).to_socket_addrs() {
                Ok(found) => found.map(|a| a.ip()).collect(),
                Err(_) => Vec::new(),
            };
            if !addresses.is_empty() && addresses.iter().all(|a| *a == loopback) {
                None
            } else if addresses.is_empty() {
                Some(format!("{name} (unresolved)"))
            } else {
                Some(format!("{name} ({addresses:?})"))
            }
        })
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "not on 127.0.0.1: {}; run `make test-hosts` (it adds them to /etc/hosts)",
            wrong.join(", ")
        ))
    }
}

/// Whether a credential test can run: `Ok(true)` when [`cloud_hosts_resolve`]
/// holds; else an error under CI, or `Ok(false)` after a visible skip.
pub fn cloud_hosts_ready() -> Result<bool, Error> {
    match cloud_hosts_resolve() {
        Ok(()) => Ok(true),
        Err(why) => external::missing("the cloud registry names in /etc/hosts", &why)
            .map(|_| false)
            .map_err(|e| Error::Setup(e.to_string())),
    }
}

/// A projected service account token for the syncer's ServiceAccount
/// (`os-placement/os-placement-facts-sync`), as the kubelet writes it: the
/// fakes compare it whole and do not check its signature, and the client
/// reads only its `sub` claim.
pub fn service_account_token() -> String {
    use base64::Engine;
    let claims = br#"{"iss":"https://oidc.eks.us-east-1.amazonaws.com/id/EXAMPLE","sub":"system:serviceaccount:os-placement:os-placement-facts-sync","aud":["sts.amazonaws.com"]}"#;
    let encode = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    format!(
        "{}.{}.c2lnbmF0dXJl",
        encode(br#"{"alg":"RS256"}"#),
        encode(claims)
    )
}

/// A `kubernetes.io/dockerconfigjson` Secret `namespace/name` holding
/// `user` and `password` for `registry`, as `kubectl create secret
/// docker-registry` writes it.
pub fn pull_secret(
    namespace: &str,
    name: &str,
    registry: &str,
    user: &str,
    password: &str,
) -> serde_json::Value {
    use base64::Engine;
    let base64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let auth = base64(&format!("{user}:{password}"));
    let config = serde_json::json!({"auths": {registry: {"username": user, "password": password, "auth": auth}}});
    serde_json::json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": name, "namespace": namespace},
        "data": {".dockerconfigjson": base64(&config.to_string())}})
}
