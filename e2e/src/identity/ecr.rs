//! ECR's `GetAuthorizationToken` (`AWS_ENDPOINT_URL_ECR`): the JSON 1.1
//! call checked as AWS checks it (target, content type, the SigV4 signature
//! with the secret of keys from the [`KeyRing`], their session token and
//! expiry, the scope's service and region), answered with a fresh token
//! that becomes the password of user `AWS` on the registry.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{json, Value};

use super::auth_registry::AuthRegistry;
use super::aws::KeyRing;
use super::service::{FakeService, State};
use super::sigv4::{self, SigV4Error};
use super::tokens::{epoch_seconds, fresh_token, request_id};
use crate::error::Error;
use crate::faults::http::Request;
use crate::faults::registry::Answer;

/// The operation, in `X-Amz-Target`.
pub const TARGET: &str = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken";

/// The registry user of an ECR token.
pub const ECR_USER: &str = "AWS";

/// How long an ECR token lasts.
pub const ECR_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// How far a request's time may be from the service's.
const SKEW: Duration = Duration::from_secs(15 * 60);

/// One private registry the fake ECR gives tokens for.
#[derive(Clone)]
pub struct EcrRegistry {
    /// The 12-digit account.
    pub account: String,
    /// The region.
    pub region: String,
    /// The registry whose `AWS` password the token becomes.
    pub registry: AuthRegistry,
}

impl EcrRegistry {
    /// The registry of `account` in `region`, served by `registry`.
    pub fn new(account: &str, region: &str, registry: &AuthRegistry) -> EcrRegistry {
        EcrRegistry {
            account: account.to_string(),
            region: region.to_string(),
            registry: registry.clone(),
        }
    }

    /// `<account>.dkr.ecr.<region>.amazonaws.com`.
    pub fn host(&self) -> String {
        format!("{}.dkr.ecr.{}.amazonaws.com", self.account, self.region)
    }
}

/// How ECR refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcrFailure {
    /// 400 `AccessDeniedException`: no policy allows ecr:GetAuthorizationToken.
    AccessDenied,
    /// The token is issued, but the registry refuses it (no pull permission
    /// on the repository): the `AWS` user is removed.
    RegistryRefuses,
}

/// A fake ECR API.
pub type FakeEcr = FakeService<EcrFailure>;

impl FakeService<EcrFailure> {
    /// Starts ECR for these registries, checking signatures against `keys`.
    /// Tokens last [`ECR_LIFETIME`] unless told otherwise.
    pub fn start(keys: &KeyRing, registries: &[EcrRegistry]) -> Result<FakeEcr, Error> {
        let (keys, registries) = (keys.clone(), registries.to_vec());
        FakeService::serve(ECR_LIFETIME, move |state, request| {
            ecr(state, request, &keys, &registries)
        })
    }
}

/// An error as AWS's JSON protocols write it.
pub fn aws_json_error(status: u16, code: &str, message: &str) -> Answer {
    Answer {
        status,
        headers: vec![
            ("Content-Type".into(), "application/x-amz-json-1.1".into()),
            ("x-amzn-RequestId".into(), request_id()),
            ("x-amzn-ErrorType".into(), code.into()),
        ],
        body: json!({"__type": code, "message": message})
            .to_string()
            .into_bytes(),
        chunked: false,
    }
}

/// What AWS says when the signature does not match.
pub const SIGNATURE_MISMATCH: &str = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";

fn ecr(
    state: &State<EcrFailure>,
    request: &Request,
    keys: &KeyRing,
    registries: &[EcrRegistry],
) -> Answer {
    if request.method != "POST" || request.header("x-amz-target") != Some(TARGET) {
        return aws_json_error(400, "UnknownOperationException", "");
    }
    if request.header("content-type") != Some("application/x-amz-json-1.1") {
        return aws_json_error(400, "SerializationException", "");
    }
    let Some(authorization) = request.header("authorization") else {
        return aws_json_error(
            403,
            "MissingAuthenticationTokenException",
            "Missing Authentication Token",
        );
    };
    let signed = match sigv4::parse_authorization(authorization) {
        Ok(signed) => signed,
        Err(e) => return aws_json_error(400, "IncompleteSignatureException", &e.to_string()),
    };
    let unrecognized = || {
        aws_json_error(
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        )
    };
    let Some(keys) = keys.find(&signed.access_key_id) else {
        return unrecognized();
    };
    if request.header("x-amz-security-token") != keys.session_token.as_deref() {
        return unrecognized();
    }
    let now = SystemTime::now();
    if !keys.valid_at(now) {
        return aws_json_error(
            403,
            "ExpiredTokenException",
            "The security token included in the request is expired",
        );
    }
    match sigv4::verify(request, &keys.secret_access_key) {
        Ok(_) => {}
        Err(SigV4Error::Mismatch { .. }) => {
            return aws_json_error(403, "InvalidSignatureException", SIGNATURE_MISMATCH)
        }
        Err(SigV4Error::Malformed(why)) => {
            return aws_json_error(400, "IncompleteSignatureException", &why)
        }
    }
    if signed.service != "ecr" {
        return aws_json_error(
            403,
            "InvalidSignatureException",
            "Credential should be scoped to correct service: 'ecr'. ",
        );
    }
    let signed_at = request
        .header("x-amz-date")
        .and_then(|d| chrono::NaiveDateTime::parse_from_str(d, "%Y%m%dT%H%M%SZ").ok())
        .map(|d| SystemTime::from(d.and_utc()));
    let in_time = signed_at.is_some_and(|at| {
        now.duration_since(at)
            .or_else(|_| at.duration_since(now))
            .is_ok_and(|skew| skew <= SKEW)
    });
    if !in_time {
        return aws_json_error(
            403,
            "InvalidSignatureException",
            "Signature expired: the request's X-Amz-Date is more than 15 min from the service's time.",
        );
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let account = body
        .get("registryIds")
        .and_then(|ids| ids.get(0))
        .and_then(Value::as_str)
        .unwrap_or(&keys.account);
    let Some(target) = registries
        .iter()
        .find(|r| r.account == account && r.region == signed.region)
    else {
        return aws_json_error(
            400,
            "InvalidParameterException",
            &format!(
                "this ECR serves no registry {account} in {} (the signature's region)",
                signed.region
            ),
        );
    };
    if state.failure() == Some(EcrFailure::AccessDenied) {
        let message = format!("User: {} is not authorized to perform: ecr:GetAuthorizationToken on resource: * because no identity-based policy allows the ecr:GetAuthorizationToken action", keys.principal);
        return aws_json_error(400, "AccessDeniedException", &message);
    }
    let issued = state.issue(fresh_token());
    let set = if state.failure() == Some(EcrFailure::RegistryRefuses) {
        target.registry.remove_user(ECR_USER)
    } else {
        target
            .registry
            .set_password_until(ECR_USER, &issued.token, issued.expires_at)
    };
    if let Err(e) = set {
        return aws_json_error(500, "ServerException", &e.to_string());
    }
    let token =
        base64::engine::general_purpose::STANDARD.encode(format!("{ECR_USER}:{}", issued.token));
    Answer {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "application/x-amz-json-1.1".into()),
            ("x-amzn-RequestId".into(), request_id()),
        ],
        body: json!({"authorizationData": [{
            "authorizationToken": token,
            "expiresAt": epoch_seconds(issued.expires_at),
            "proxyEndpoint": format!("https://{}", target.host()),
        }]})
        .to_string()
        .into_bytes(),
        chunked: false,
    }
}
