//! GKE's metadata server (`GCE_METADATA_HOST`) as Workload Identity serves
//! it: the default service account's access token, asked with
//! `Metadata-Flavor: Google`, which becomes the password of user
//! `oauth2accesstoken` on the registry standing for Artifact Registry.

use std::time::Duration;

use serde_json::json;

use super::auth_registry::AuthRegistry;
use super::service::{FakeService, State};
use super::tokens::fresh_token;
use crate::error::Error;
use crate::faults::http::Request;
use crate::faults::registry::Answer;

/// The path of the token.
pub const TOKEN_PATH: &str = "/computeMetadata/v1/instance/service-accounts/default/token";

/// The registry user of a Google access token.
pub const GCP_USER: &str = "oauth2accesstoken";

/// How long the metadata server's tokens last (it hands them out with a
/// few minutes to a second less).
pub const GCE_LIFETIME: Duration = Duration::from_secs(3599);

/// The Google service account the fake node's pods act as.
pub const SERVICE_ACCOUNT: &str = "os-placement-facts-sync@example-project.iam.gserviceaccount.com";

/// How the metadata server refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GceFailure {
    /// 403: the Kubernetes ServiceAccount may not act as the Google one
    /// (no roles/iam.workloadIdentityUser binding).
    Forbidden,
    /// The token is issued, but the registry refuses it (no
    /// roles/artifactregistry.reader): the user is removed.
    RegistryRefuses,
}

/// A fake GKE metadata server.
pub type FakeGce = FakeService<GceFailure>;

impl FakeService<GceFailure> {
    /// Starts the metadata server; its tokens are passwords on `registry`.
    pub fn start(registry: &AuthRegistry) -> Result<FakeGce, Error> {
        let registry = registry.clone();
        FakeService::serve(GCE_LIFETIME, move |state, request| {
            metadata(state, request, &registry)
        })
    }
}

/// An answer of the metadata server, which names itself in every one.
fn answer(status: u16, content_type: &str, body: Vec<u8>) -> Answer {
    Answer {
        status,
        headers: vec![
            ("Content-Type".into(), content_type.into()),
            ("Metadata-Flavor".into(), "Google".into()),
            ("Server".into(), "Metadata Server for VM".into()),
        ],
        body,
        chunked: false,
    }
}

fn text(status: u16, body: &str) -> Answer {
    answer(
        status,
        "text/plain; charset=utf-8",
        body.as_bytes().to_vec(),
    )
}

fn metadata(state: &State<GceFailure>, request: &Request, registry: &AuthRegistry) -> Answer {
    // Both guard against a request forwarded from outside (SSRF).
    if request.header("metadata-flavor") != Some("Google")
        || request.header("x-forwarded-for").is_some()
    {
        return text(
            403,
            "Missing required header \"Metadata-Flavor\": \"Google\"\n",
        );
    }
    if request.method != "GET" {
        return text(405, "Method Not Allowed\n");
    }
    match request.path.as_str() {
        // What a client may probe to tell it is on Google Cloud.
        "/" => text(200, "computeMetadata/\n"),
        "/computeMetadata/v1/" => text(200, "instance/\nproject/\n"),
        "/computeMetadata/v1/instance/service-accounts/default/email" => text(200, SERVICE_ACCOUNT),
        TOKEN_PATH => token(state, registry),
        _ => answer(404, "text/html; charset=UTF-8", b"Not Found\n".to_vec()),
    }
}

fn token(state: &State<GceFailure>, registry: &AuthRegistry) -> Answer {
    if state.failure() == Some(GceFailure::Forbidden) {
        let message = format!("Unable to generate access token; IAM returned 403 Forbidden: Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).\nThis error could be caused by a missing IAM policy binding on the target IAM service account.\nFor more information, refer to the Workload Identity documentation:\n\thttps://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity#authenticating_to\n\n{SERVICE_ACCOUNT}\n");
        return text(403, &message);
    }
    let issued = state.issue(fresh_token());
    let set = if state.failure() == Some(GceFailure::RegistryRefuses) {
        registry.remove_user(GCP_USER)
    } else {
        registry.set_password_until(GCP_USER, &issued.token, issued.expires_at)
    };
    if let Err(e) = set {
        return text(500, &e.to_string());
    }
    let expires_in = issued
        .expires_at
        .duration_since(issued.issued_at)
        .unwrap_or_default()
        .as_secs();
    answer(
        200,
        "application/json",
        json!({"access_token": issued.token, "expires_in": expires_in, "token_type": "Bearer"})
            .to_string()
            .into_bytes(),
    )
}
