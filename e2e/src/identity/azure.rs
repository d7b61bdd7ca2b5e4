//! Azure Workload Identity's path to ACR: Entra ID's token endpoint
//! (`AZURE_AUTHORITY_HOST`), which takes the federated token as a client
//! assertion, and an ACR front standing for `<name>.azurecr.io`, which
//! exchanges Entra's token at `/oauth2/exchange` for a refresh token (the
//! password of user `00000000-0000-0000-0000-000000000000`) and passes
//! every other request to the registry behind it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::auth_registry::AuthRegistry;
use super::service::{FakeService, State};
use super::sigv4::uri_encode;
use super::tokens::{field, form, fresh_token, iso8601, request_id, Issued};
use crate::error::Error;
use crate::faults::http::Request;
use crate::faults::registry::Answer;
use crate::http::http;

/// The registry user of an ACR refresh token.
pub const ACR_USER: &str = "00000000-0000-0000-0000-000000000000";

/// The client assertion type of a federated credential.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The scope ACR's token exchange takes Entra tokens for (public cloud).
pub const ARM_SCOPE: &str = "https://management.azure.com/.default";

/// How long Entra's access tokens last.
pub const ENTRA_LIFETIME: Duration = Duration::from_secs(3599);

/// How long ACR's refresh tokens last.
pub const ACR_LIFETIME: Duration = Duration::from_secs(3 * 3600);

/// How Entra ID refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntraFailure {
    /// 400 `invalid_client`, AADSTS700024: the assertion is outside its
    /// valid time range (an expired projected token).
    AssertionExpired,
    /// 400 `invalid_request`, AADSTS70021: no federated credential of the
    /// app matches the assertion's issuer and subject.
    NoFederatedCredential,
}

/// A fake Entra ID token endpoint.
pub type FakeEntra = FakeService<EntraFailure>;

impl FakeService<EntraFailure> {
    /// Starts Entra ID for the app `client_id` of `tenant`, whose federated
    /// credential accepts the token the test writes in `token_file` (read
    /// at each request). Its tokens are good for [`AcrFront`] only.
    pub fn start(tenant: &str, client_id: &str, token_file: &Path) -> Result<FakeEntra, Error> {
        let (tenant, client_id, token_file) = (
            tenant.to_string(),
            client_id.to_string(),
            token_file.to_path_buf(),
        );
        FakeService::serve(ENTRA_LIFETIME, move |state, request| {
            entra(state, request, &tenant, &client_id, &token_file)
        })
    }
}

impl FakeService<EntraFailure> {
    /// A token for a user signed in interactively, as `az login` keeps
    /// one and `az account get-access-token` prints it.
    pub fn sign_in(&self) -> Issued {
        self.state().issue(fresh_token())
    }
}

/// An error as Entra writes it.
pub fn entra_error(status: u16, error: &str, code: u32, description: &str) -> Answer {
    let (trace, correlation) = (request_id(), request_id());
    let now = iso8601(std::time::SystemTime::now()).replace('T', " ");
    Answer::json(
        status,
        &json!({
            "error": error,
            "error_description": format!("AADSTS{code}: {description} Trace ID: {trace} Correlation ID: {correlation} Timestamp: {now}"),
            "error_codes": [code],
            "timestamp": now,
            "trace_id": trace,
            "correlation_id": correlation,
            "error_uri": format!("https://login.microsoftonline.com/error?code={code}"),
        }),
    )
}

fn entra(
    state: &State<EntraFailure>,
    request: &Request,
    tenant: &str,
    client_id: &str,
    token_file: &Path,
) -> Answer {
    let Some(asked) = request
        .path
        .strip_prefix('/')
        .and_then(|p| p.strip_suffix("/oauth2/v2.0/token"))
    else {
        return Answer::json(404, &json!({"error": "not_found"}));
    };
    if asked != tenant {
        return entra_error(400, "invalid_request", 90002, &format!("Tenant '{asked}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud."));
    }
    if request.method != "POST" {
        return entra_error(
            400,
            "invalid_request",
            900561,
            "The endpoint only accepts POST requests.",
        );
    }
    let params = form(&request.body);
    let param = |name: &str| field(&params, name).unwrap_or_default();
    if param("grant_type") != "client_credentials" {
        return entra_error(
            400,
            "unsupported_grant_type",
            70003,
            "The app requested an unsupported grant type.",
        );
    }
    if param("client_id") != client_id {
        return entra_error(
            400,
            "unauthorized_client",
            700016,
            &format!(
                "Application with identifier '{}' was not found in the directory '{tenant}'.",
                param("client_id")
            ),
        );
    }
    if param("client_assertion_type") != JWT_BEARER {
        return entra_error(400, "invalid_request", 7000219, "'client_assertion' or 'client_secret' is required for the 'client_credentials' grant type.");
    }
    match state.failure() {
        Some(EntraFailure::AssertionExpired) => {
            return entra_error(400, "invalid_client", 700024, "Client assertion is not within its valid time range. Current time: 2025-01-01T00:00:00.0000000Z, assertion valid from 2024-12-31T22:00:00.0000000Z, expiry time of assertion 2024-12-31T23:00:00.0000000Z. Review the documentation at https://learn.microsoft.com/entra/identity-platform/certificate-credentials .")
        }
        Some(EntraFailure::NoFederatedCredential) => {
            return no_federated_credential()
        }
        None => {}
    }
    let expected = std::fs::read_to_string(token_file)
        .map(|t| t.trim().to_string())
        .unwrap_or_default();
    if expected.is_empty() || param("client_assertion") != expected {
        return no_federated_credential();
    }
    if param("scope") != ARM_SCOPE {
        return entra_error(400, "invalid_scope", 1002012, &format!("The provided value for scope {} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).", param("scope")));
    }
    let issued = state.issue(fresh_token());
    let seconds = issued
        .expires_at
        .duration_since(issued.issued_at)
        .unwrap_or_default()
        .as_secs();
    Answer::json(
        200,
        &json!({
            "token_type": "Bearer",
            "expires_in": seconds,
            "ext_expires_in": seconds,
            "access_token": issued.token,
        }),
    )
}

fn no_federated_credential() -> Answer {
    entra_error(400, "invalid_request", 70021, "No matching federated identity record found for presented assertion. Assertion Issuer: 'https://oidc.example.test'. Assertion Subject: 'system:serviceaccount:os-placement:os-placement-facts-sync'. Assertion Audience: 'api://AzureADTokenExchange'.")
}

/// How the ACR front refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcrFailure {
    /// `/oauth2/exchange` answers 401 whatever the token.
    ExchangeRefused,
    /// The refresh token is issued, but the registry refuses it (no
    /// AcrPull role): the user is removed.
    RegistryRefuses,
}

/// A fake ACR host: the token exchange, then the registry behind it.
pub type AcrFront = FakeService<AcrFailure>;

impl FakeService<AcrFailure> {
    /// Starts the front of `service` (the registry's host name, e.g.
    /// `osplacement.azurecr.io`), taking tokens `entra` issued for
    /// `tenant`, and forwarding all else to `registry`.
    pub fn start(
        registry: &AuthRegistry,
        entra: &FakeEntra,
        tenant: &str,
        service: &str,
    ) -> Result<AcrFront, Error> {
        let (registry, entra, tenant, service) = (
            registry.clone(),
            entra.state(),
            tenant.to_string(),
            service.to_string(),
        );
        FakeService::serve(ACR_LIFETIME, move |state, request| {
            if request.path == "/oauth2/exchange" {
                exchange(state, request, &registry, &entra, &tenant, &service)
            } else {
                forward(request, &registry)
            }
        })
    }
}

/// An error as a distribution registry writes it.
fn registry_error(status: u16, code: &str, message: &str) -> Answer {
    Answer::json(
        status,
        &json!({"errors": [{"code": code, "message": message, "detail": null}]}),
    )
}

fn exchange(
    state: &State<AcrFailure>,
    request: &Request,
    registry: &AuthRegistry,
    entra: &Arc<State<EntraFailure>>,
    tenant: &str,
    service: &str,
) -> Answer {
    if request.method != "POST" {
        return registry_error(405, "UNSUPPORTED", "The operation is unsupported.");
    }
    let params = form(&request.body);
    let param = |name: &str| field(&params, name).unwrap_or_default();
    if param("grant_type") != "access_token" {
        return registry_error(400, "UNSUPPORTED", "grant_type must be access_token");
    }
    if param("service") != service {
        return registry_error(
            400,
            "UNSUPPORTED",
            &format!("service {:?} is not {service}", param("service")),
        );
    }
    let unauthorized = || {
        registry_error(
            401,
            "UNAUTHORIZED",
            "authentication required, visit https://aka.ms/acr/authorization for more information.",
        )
    };
    if state.failure() == Some(AcrFailure::ExchangeRefused)
        || param("tenant") != tenant
        || !entra.is_valid(param("access_token"))
    {
        return unauthorized();
    }
    let issued = state.issue(fresh_token());
    let set = if state.failure() == Some(AcrFailure::RegistryRefuses) {
        registry.remove_user(ACR_USER)
    } else {
        registry.set_password_until(ACR_USER, &issued.token, issued.expires_at)
    };
    if let Err(e) = set {
        return registry_error(500, "UNKNOWN", &e.to_string());
    }
    Answer::json(200, &json!({"refresh_token": issued.token}))
}

/// Passes `request` to the registry and its answer back as it came.
fn forward(request: &Request, registry: &AuthRegistry) -> Answer {
    let mut target = request.path.clone();
    for (i, (name, value)) in request.query.iter().enumerate() {
        target.push(if i == 0 { '?' } else { '&' });
        target.push_str(&format!("{}={}", uri_encode(name), uri_encode(value)));
    }
    // The client sets its own Host and length; this front closes each connection.
    let headers: Vec<(&str, &str)> = request
        .headers
        .iter()
        .filter(|(n, _)| !matches!(n.as_str(), "host" | "content-length" | "connection"))
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let answer = match http(
        registry.port(),
        &request.method,
        &target,
        &headers,
        &request.body,
    ) {
        Ok(answer) => answer,
        Err(e) => return registry_error(502, "UNAVAILABLE", &e.to_string()),
    };
    // A HEAD answer keeps the length of what a GET would send.
    let keep_length = request.method == "HEAD";
    Answer {
        status: answer.status,
        headers: answer
            .headers
            .into_iter()
            .filter(|(n, _)| match n.as_str() {
                "connection" | "transfer-encoding" => false,
                "content-length" => keep_length,
                _ => true,
            })
            .collect(),
        body: answer.body,
        chunked: false,
    }
}
