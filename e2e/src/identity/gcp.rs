//! GKE's metadata server (`GCE_METADATA_HOST`) as Workload Identity serves
//! it: the default service account's access token, asked with
//! `Metadata-Flavor: Google`, which becomes the password of user
//! `oauth2accesstoken` on the registry standing for Artifact Registry.
//! And Google's OAuth token endpoint as a service account key's
//! `token_uri` names it: a JWT the key signed (RFC 7523), checked against
//! the key's public half, for an access token.

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
    token_answer(&issued, "application/json")
}

/// How the token endpoint refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthFailure {
    /// 400 `invalid_grant`: the key was deleted or disabled.
    KeyDeleted,
}

/// A fake Google OAuth token endpoint (`/token`).
pub type FakeGoogleOAuth = FakeService<OAuthFailure>;

impl FakeService<OAuthFailure> {
    /// Starts the endpoint for the service account `email`, whose key's
    /// public half is `public_key` (PKCS#1 DER); its tokens are passwords
    /// on `registry`.
    pub fn start(
        registry: &AuthRegistry,
        email: &str,
        public_key: Vec<u8>,
    ) -> Result<FakeGoogleOAuth, Error> {
        let (registry, email) = (registry.clone(), email.to_string());
        FakeService::serve(GCE_LIFETIME, move |state, request| {
            oauth(state, request, &registry, &email, &public_key)
        })
    }
}

fn oauth_error(error: &str, description: &str) -> Answer {
    answer(
        400,
        "application/json; charset=utf-8",
        json!({"error": error, "error_description": description})
            .to_string()
            .into_bytes(),
    )
}

fn oauth(
    state: &State<OAuthFailure>,
    request: &Request,
    registry: &AuthRegistry,
    email: &str,
    public_key: &[u8],
) -> Answer {
    use base64::Engine;
    if request.method != "POST" || request.path != "/token" {
        return text(404, "Not Found\n");
    }
    let params = super::tokens::form(&request.body);
    let param = |name: &str| super::tokens::field(&params, name).unwrap_or_default();
    if param("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
        return oauth_error("unsupported_grant_type", "Invalid grant_type: ");
    }
    let assertion = param("assertion");
    let decode = |part: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .ok()
    };
    let parts = assertion.rsplit_once('.').and_then(|(signed, signature)| {
        let (header, claims) = signed.split_once('.')?;
        Some((signed, decode(header)?, decode(claims)?, decode(signature)?))
    });
    let Some((signed, header, claims, signature)) = parts else {
        return oauth_error("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.");
    };
    let key = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        public_key,
    );
    if key.verify(signed.as_bytes(), &signature).is_err() {
        return oauth_error("invalid_grant", "Invalid JWT Signature.");
    }
    let read =
        |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).unwrap_or_default();
    let (header, claims) = (read(&header), read(&claims));
    let claim = |name: &str| claims.get(name).cloned().unwrap_or_default();
    let audience = format!(
        "http://{}/token",
        request.header("host").unwrap_or_default()
    );
    let lasts = claim("exp")
        .as_u64()
        .unwrap_or(0)
        .saturating_sub(claim("iat").as_u64().unwrap_or(u64::MAX));
    if header.get("alg") != Some(&json!("RS256"))
        || claim("iss") != email
        || claim("aud") != audience.as_str()
        || !claim("scope")
            .as_str()
            .unwrap_or_default()
            .contains("cloud-platform")
        || lasts == 0
        || lasts > 3600
    {
        return oauth_error("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.");
    }
    if state.failure() == Some(OAuthFailure::KeyDeleted) {
        return oauth_error("invalid_grant", "Invalid JWT Signature.");
    }
    let issued = state.issue(fresh_token());
    if let Err(e) = registry.set_password_until(GCP_USER, &issued.token, issued.expires_at) {
        return text(500, &e.to_string());
    }
    token_answer(&issued, "application/json; charset=utf-8")
}

/// An OAuth access token answer, as `content_type`.
fn token_answer(issued: &super::tokens::Issued, content_type: &str) -> Answer {
    let expires_in = issued
        .expires_at
        .duration_since(issued.issued_at)
        .unwrap_or_default()
        .as_secs();
    answer(
        200,
        content_type,
        json!({"access_token": issued.token, "expires_in": expires_in, "token_type": "Bearer"})
            .to_string()
            .into_bytes(),
    )
}

/// A new RSA key as a Google service account key holds it: a PKCS#8 PEM
/// (made by openssl), and its public half (PKCS#1 DER) for the fake
/// endpoint. `Ok(None)` after a visible skip when openssl is not installed.
pub fn service_account_key(dir: &std::path::Path) -> Result<Option<(String, Vec<u8>)>, Error> {
    let missing = |e: xtask::Error| Error::Setup(e.to_string());
    let Some(openssl) = crate::external::on_path(
        "openssl",
        "install the Debian package openssl (`make deps` does)",
    )
    .map_err(missing)?
    else {
        return Ok(None);
    };
    let path = dir.join("service-account-key.pem");
    let made = std::process::Command::new(openssl)
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(&path)
        .output()
        .map_err(Error::io("openssl genpkey"))?;
    if !made.status.success() {
        return Err(Error::Setup(format!(
            "openssl genpkey: {}",
            String::from_utf8_lossy(&made.stderr)
        )));
    }
    let pem = std::fs::read_to_string(&path).map_err(Error::io(path.display().to_string()))?;
    use base64::Engine;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|e| Error::Setup(format!("openssl's key: {e}")))?;
    let key = ring::signature::RsaKeyPair::from_pkcs8(&der)
        .map_err(|e| Error::Setup(format!("openssl's key: {e}")))?;
    use ring::signature::KeyPair;
    Ok(Some((pem, key.public_key().as_ref().to_vec())))
}
