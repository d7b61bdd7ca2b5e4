//! AWS's identity services as the SDKs' credential chain meets them: STS
//! `AssumeRoleWithWebIdentity` (IRSA), the EKS Pod Identity agent (the
//! container credentials endpoint) and EC2's IMDSv2. Each issues fresh keys
//! into a [`KeyRing`], where the fake ECR finds the secret to check a
//! signature with.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::service::{FakeService, State};
use super::tokens::{fresh_token, iso8601, locked, random_hex, request_id, Issued};
use crate::error::Error;
use crate::faults::http::Request;
use crate::faults::registry::Answer;

/// Keys issued by an AWS identity service (or set by a test, as the
/// environment's static keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsKeys {
    /// `ASIA...` for temporary keys, `AKIA...` for static ones.
    pub access_key_id: String,
    /// The secret that signs.
    pub secret_access_key: String,
    /// The session token temporary keys come with.
    pub session_token: Option<String>,
    /// The account of the principal.
    pub account: String,
    /// The principal's ARN, as AWS names it in errors
    /// (`arn:aws:sts::<account>:assumed-role/<role>/<session>`).
    pub principal: String,
    /// When they stop working; `None` for static keys.
    pub expires_at: Option<SystemTime>,
}

impl AwsKeys {
    /// Whether they still work at `at`.
    pub fn valid_at(&self, at: SystemTime) -> bool {
        self.expires_at.is_none_or(|expires| at < expires)
    }
}

/// Every AWS key issued in a test, shared by the services that issue them
/// and the ones that check signatures. Clones share one ring.
#[derive(Debug, Clone, Default)]
pub struct KeyRing {
    keys: Arc<Mutex<Vec<AwsKeys>>>,
}

impl KeyRing {
    /// An empty ring.
    pub fn new() -> KeyRing {
        KeyRing::default()
    }

    /// Adds keys (static ones a test puts in AWS_ACCESS_KEY_ID, say).
    pub fn add(&self, keys: AwsKeys) {
        locked(&self.keys).push(keys);
    }

    /// Static keys of a user in `account`, added to the ring.
    pub fn add_static(&self, account: &str, user: &str) -> AwsKeys {
        let keys = AwsKeys {
            access_key_id: format!("AKIA{}", random_hex(16).to_ascii_uppercase()),
            secret_access_key: random_hex(40),
            session_token: None,
            account: account.to_string(),
            principal: format!("arn:aws:iam::{account}:user/{user}"),
            expires_at: None,
        };
        self.add(keys.clone());
        keys
    }

    /// The keys of `access_key_id`.
    pub fn find(&self, access_key_id: &str) -> Option<AwsKeys> {
        locked(&self.keys)
            .iter()
            .find(|k| k.access_key_id == access_key_id)
            .cloned()
    }

    /// Every key so far, oldest first.
    pub fn all(&self) -> Vec<AwsKeys> {
        locked(&self.keys).clone()
    }

    /// Fresh temporary keys for `principal`, lasting as `issued` says.
    fn mint(&self, account: &str, principal: String, issued: &Issued) -> AwsKeys {
        let keys = AwsKeys {
            access_key_id: issued.token.clone(),
            secret_access_key: random_hex(40),
            session_token: Some(format!("IQoJ{}", random_hex(60))),
            account: account.to_string(),
            principal,
            expires_at: Some(issued.expires_at),
        };
        self.add(keys.clone());
        keys
    }
}

/// A temporary access key id.
fn temporary_key_id() -> String {
    format!("ASIA{}", random_hex(16).to_ascii_uppercase())
}

/// `123456789012` and `os-placement-facts-sync` of
/// `arn:aws:iam::123456789012:role/os-placement-facts-sync`.
pub fn account_and_role(role_arn: &str) -> (String, String) {
    let mut fields = role_arn.splitn(6, ':');
    let account = fields.nth(4).unwrap_or_default().to_string();
    let role = fields
        .next()
        .and_then(|r| r.rsplit('/').next())
        .unwrap_or_default()
        .to_string();
    (account, role)
}

/// The file's content without surrounding white space (what a token file
/// holds); empty when it cannot be read.
fn token_in(file: &Path) -> String {
    std::fs::read_to_string(file)
        .map(|t| t.trim().to_string())
        .unwrap_or_default()
}

/// How STS refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StsFailure {
    /// 403 `AccessDenied`: the role's trust policy does not allow the token.
    AccessDenied,
    /// 400 `InvalidIdentityToken`: the cluster's OIDC issuer is not an IAM provider.
    InvalidIdentityToken,
    /// 400 `ExpiredTokenException`: the projected token has expired.
    ExpiredToken,
}

/// A fake STS (`AWS_ENDPOINT_URL_STS`), answering `AssumeRoleWithWebIdentity`
/// and `AssumeRole` (SigV4-signed by keys of the ring).
pub type FakeSts = FakeService<StsFailure>;

/// STS's default session length.
pub const STS_LIFETIME: Duration = Duration::from_secs(3600);

impl FakeService<StsFailure> {
    /// Starts STS, trusting `role_arn` for the web identity token the test
    /// writes in `token_file` (read at each request, as the kubelet
    /// rotates it). Keys last [`STS_LIFETIME`] unless told otherwise.
    pub fn start(keys: &KeyRing, role_arn: &str, token_file: &Path) -> Result<FakeSts, Error> {
        let (keys, role_arn, token_file) =
            (keys.clone(), role_arn.to_string(), token_file.to_path_buf());
        FakeService::serve(STS_LIFETIME, move |state, request| {
            sts(state, request, &keys, &role_arn, &token_file)
        })
    }
}

fn sts_error(status: u16, code: &str, message: &str) -> Answer {
    let body = format!(
        "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n  <Error>\n    <Type>Sender</Type>\n    <Code>{code}</Code>\n    <Message>{message}</Message>\n  </Error>\n  <RequestId>{}</RequestId>\n</ErrorResponse>\n",
        request_id()
    );
    Answer {
        status,
        headers: vec![("Content-Type".into(), "text/xml".into())],
        body: body.into_bytes(),
        chunked: false,
    }
}

fn sts(
    state: &State<StsFailure>,
    request: &Request,
    keys: &KeyRing,
    role_arn: &str,
    token_file: &Path,
) -> Answer {
    // The SDKs POST a form; STS takes the query too.
    let mut params = request.query.clone();
    params.extend(super::tokens::form(&request.body));
    let param = |name: &str| super::tokens::field(&params, name).unwrap_or_default();
    if param("Action") == "AssumeRole" && param("Version") == "2011-06-15" {
        return assume_role(
            state,
            request,
            keys,
            role_arn,
            param("RoleArn"),
            param("RoleSessionName"),
        );
    }
    if param("Action") != "AssumeRoleWithWebIdentity" || param("Version") != "2011-06-15" {
        let message = format!(
            "Could not find operation {} for version {}",
            param("Action"),
            param("Version")
        );
        return sts_error(400, "InvalidAction", &message);
    }
    let (account, role) = account_and_role(role_arn);
    match state.failure() {
        Some(StsFailure::AccessDenied) => {
            return sts_error(
                403,
                "AccessDenied",
                "Not authorized to perform sts:AssumeRoleWithWebIdentity",
            )
        }
        Some(StsFailure::InvalidIdentityToken) => {
            return sts_error(400, "InvalidIdentityToken", &format!("No OpenIDConnect provider found in your account for https://oidc.eks.us-east-1.amazonaws.com/id/{}", random_hex(32).to_ascii_uppercase()))
        }
        Some(StsFailure::ExpiredToken) => {
            return sts_error(400, "ExpiredTokenException", "Token expired: current date/time must be before the expiration date/time")
        }
        None => {}
    }
    if param("RoleArn") != role_arn {
        return sts_error(
            403,
            "AccessDenied",
            "Not authorized to perform sts:AssumeRoleWithWebIdentity",
        );
    }
    let expected = token_in(token_file);
    if expected.is_empty() || param("WebIdentityToken") != expected {
        return sts_error(
            400,
            "InvalidIdentityToken",
            &format!(
                "The web identity token is not the one in {}",
                token_file.display()
            ),
        );
    }
    let session = param("RoleSessionName");
    if session.is_empty() {
        return sts_error(400, "ValidationError", "1 validation error detected: Value null at 'roleSessionName' failed to satisfy constraint: Member must not be null");
    }
    let provider =
        format!("arn:aws:iam::{account}:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/EXAMPLE");
    assumed(
        state,
        keys,
        (&account, &role, session),
        "AssumeRoleWithWebIdentity",
        "<SubjectFromWebIdentityToken>system:serviceaccount:os-placement:os-placement-facts-sync</SubjectFromWebIdentityToken>\n    <Audience>sts.amazonaws.com</Audience>",
        &format!("<Provider>{provider}</Provider>"),
    )
}

/// `AssumeRole` of `asked` (trusted when it is `role_arn`), signed with
/// keys of the ring for service `sts`.
fn assume_role(
    state: &State<StsFailure>,
    request: &Request,
    keys: &KeyRing,
    role_arn: &str,
    asked: &str,
    session: &str,
) -> Answer {
    let invalid = || {
        sts_error(
            403,
            "InvalidClientTokenId",
            "The security token included in the request is invalid.",
        )
    };
    let Some(signed) = request
        .header("authorization")
        .and_then(|a| super::sigv4::parse_authorization(a).ok())
    else {
        return sts_error(
            403,
            "MissingAuthenticationToken",
            "Request is missing Authentication Token",
        );
    };
    let Some(caller) = keys.find(&signed.access_key_id) else {
        return invalid();
    };
    if request.header("x-amz-security-token") != caller.session_token.as_deref()
        || !caller.valid_at(SystemTime::now())
    {
        return invalid();
    }
    if super::sigv4::verify(request, &caller.secret_access_key).is_err() || signed.service != "sts"
    {
        return sts_error(
            403,
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
        );
    }
    let (account, role) = account_and_role(role_arn);
    if state.failure() == Some(StsFailure::AccessDenied) || asked != role_arn {
        let message = format!(
            "User: {} is not authorized to perform: sts:AssumeRole on resource: {asked}",
            caller.principal
        );
        return sts_error(403, "AccessDenied", &message);
    }
    if session.is_empty() {
        return sts_error(400, "ValidationError", "1 validation error detected: Value null at 'roleSessionName' failed to satisfy constraint: Member must not be null");
    }
    assumed(
        state,
        keys,
        (&account, &role, session),
        "AssumeRole",
        "",
        "",
    )
}

/// The answer of STS's `action` (`AssumeRole`, `AssumeRoleWithWebIdentity`):
/// fresh keys for `role` of `account` in `session`, minted into `keys`,
/// with the action's own elements `before` and `after` the shared ones.
fn assumed(
    state: &State<StsFailure>,
    keys: &KeyRing,
    (account, role, session): (&str, &str, &str),
    action: &str,
    before: &str,
    after: &str,
) -> Answer {
    let issued = state.issue(temporary_key_id());
    let principal = format!("arn:aws:sts::{account}:assumed-role/{role}/{session}");
    let minted = keys.mint(account, principal.clone(), &issued);
    let body = format!(
        "<{action}Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">
  <{action}Result>
    {before}
    <AssumedRoleUser>
      <Arn>{principal}</Arn>
      <AssumedRoleId>AROA{}:{session}</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>{}</AccessKeyId>
      <SecretAccessKey>{}</SecretAccessKey>
      <SessionToken>{}</SessionToken>
      <Expiration>{}</Expiration>
    </Credentials>
    {after}
  </{action}Result>
  <ResponseMetadata>
    <RequestId>{}</RequestId>
  </ResponseMetadata>
</{action}Response>
",
        random_hex(16).to_ascii_uppercase(),
        minted.access_key_id,
        minted.secret_access_key,
        minted.session_token.unwrap_or_default(),
        iso8601(issued.expires_at),
        request_id()
    );
    Answer::ok("text/xml", body.into_bytes())
}

/// How the EKS Pod Identity agent refuses (as EKS Auth's errors reach it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodIdentityFailure {
    /// 400 `InvalidTokenException`.
    InvalidToken,
    /// 403 `AccessDeniedException`: no association, or the role does not trust EKS.
    AccessDenied,
}

/// A fake EKS Pod Identity agent (`AWS_CONTAINER_CREDENTIALS_FULL_URI`).
pub type FakePodIdentity = FakeService<PodIdentityFailure>;

/// How long EKS Auth's keys last.
pub const POD_IDENTITY_LIFETIME: Duration = Duration::from_secs(6 * 3600);

impl FakeService<PodIdentityFailure> {
    /// Starts the agent, answering for `role_arn` when `Authorization`
    /// carries the token in `token_file` (read at each request). Any
    /// path answers; the agent's is `/v1/credentials`.
    pub fn start(
        keys: &KeyRing,
        role_arn: &str,
        token_file: &Path,
    ) -> Result<FakePodIdentity, Error> {
        let (keys, role_arn, token_file) =
            (keys.clone(), role_arn.to_string(), token_file.to_path_buf());
        FakeService::serve(POD_IDENTITY_LIFETIME, move |state, request| {
            pod_identity(state, request, &keys, &role_arn, &token_file)
        })
    }
}

/// The agent answers errors with Go's `http.Error`: plain text.
fn plain(status: u16, text: &str) -> Answer {
    Answer {
        status,
        headers: vec![
            ("Content-Type".into(), "text/plain; charset=utf-8".into()),
            ("X-Content-Type-Options".into(), "nosniff".into()),
        ],
        body: format!("{text}\n").into_bytes(),
        chunked: false,
    }
}

fn pod_identity(
    state: &State<PodIdentityFailure>,
    request: &Request,
    keys: &KeyRing,
    role_arn: &str,
    token_file: &Path,
) -> Answer {
    if request.method != "GET" {
        return plain(405, "Method Not Allowed");
    }
    let token = request.header("authorization").unwrap_or_default();
    if token.is_empty() {
        return plain(400, "Service account token cannot be empty");
    }
    let eks_auth = |status: u16, code: &str, message: &str| {
        plain(
            status,
            &format!("[{}]: ({code}): {message}, fault: client", request_id()),
        )
    };
    match state.failure() {
        Some(PodIdentityFailure::InvalidToken) => {
            return eks_auth(400, "InvalidTokenException", "The token is invalid")
        }
        Some(PodIdentityFailure::AccessDenied) => {
            return eks_auth(
                403,
                "AccessDeniedException",
                "The role is not trusted by pods.eks.amazonaws.com, or the service account has no Pod Identity association",
            )
        }
        None => {}
    }
    let expected = token_in(token_file);
    if expected.is_empty() || token != expected {
        return eks_auth(
            400,
            "InvalidTokenException",
            &format!("the token is not the one in {}", token_file.display()),
        );
    }
    let (account, role) = account_and_role(role_arn);
    let issued = state.issue(temporary_key_id());
    let session = format!("eks-os-placem-os-placeme-{}", random_hex(8));
    let minted = keys.mint(
        &account,
        format!("arn:aws:sts::{account}:assumed-role/{role}/{session}"),
        &issued,
    );
    Answer::json(
        200,
        &json!({
            "AccessKeyId": minted.access_key_id,
            "SecretAccessKey": minted.secret_access_key,
            "Token": minted.session_token,
            "AccountId": account,
            "Expiration": iso8601(issued.expires_at),
        }),
    )
}

/// How EC2's instance metadata service fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImdsFailure {
    /// The instance has no role: `security-credentials/` answers 404.
    NoRole,
}

/// A fake IMDSv2 (`AWS_EC2_METADATA_SERVICE_ENDPOINT`).
pub type FakeImds = FakeService<ImdsFailure>;

/// How long an instance role's keys last.
pub const IMDS_LIFETIME: Duration = Duration::from_secs(6 * 3600);

impl FakeService<ImdsFailure> {
    /// Starts IMDSv2 for an instance with the role `role_arn`: session
    /// tokens from `PUT /latest/api/token`, required by every GET.
    pub fn start(keys: &KeyRing, role_arn: &str) -> Result<FakeImds, Error> {
        let (keys, role_arn) = (keys.clone(), role_arn.to_string());
        let sessions = Arc::new(Mutex::new(Vec::<(String, SystemTime)>::new()));
        FakeService::serve(IMDS_LIFETIME, move |state, request| {
            imds(state, request, &keys, &role_arn, &sessions)
        })
    }
}

fn imds(
    state: &State<ImdsFailure>,
    request: &Request,
    keys: &KeyRing,
    role_arn: &str,
    sessions: &Mutex<Vec<(String, SystemTime)>>,
) -> Answer {
    let text = |status: u16, body: &str| Answer {
        status,
        headers: vec![("Content-Type".into(), "text/plain".into())],
        body: body.as_bytes().to_vec(),
        chunked: false,
    };
    if request.path == "/latest/api/token" {
        if request.method != "PUT" {
            return text(405, "");
        }
        let ttl = request
            .header("x-aws-ec2-metadata-token-ttl-seconds")
            .and_then(|t| t.parse::<u64>().ok())
            .filter(|t| (1..=21600).contains(t));
        let Some(ttl) = ttl else {
            return text(400, "");
        };
        let token = fresh_token();
        let expires = SystemTime::now() + Duration::from_secs(ttl);
        locked(sessions).push((token.clone(), expires));
        let mut answer = text(200, &token);
        answer.headers.push((
            "X-aws-ec2-metadata-token-ttl-seconds".into(),
            ttl.to_string(),
        ));
        return answer;
    }
    let now = SystemTime::now();
    let session = request
        .header("x-aws-ec2-metadata-token")
        .unwrap_or_default();
    if !locked(sessions)
        .iter()
        .any(|(t, expires)| t == session && now < *expires)
    {
        return text(401, "");
    }
    let (account, role) = account_and_role(role_arn);
    let base = "/latest/meta-data/iam/security-credentials/";
    let Some(asked) = request.path.strip_prefix(base) else {
        return text(404, "");
    };
    if state.failure() == Some(ImdsFailure::NoRole) || (!asked.is_empty() && asked != role) {
        return text(404, "");
    }
    if asked.is_empty() {
        return text(200, &role);
    }
    let issued = state.issue(temporary_key_id());
    let principal = format!(
        "arn:aws:sts::{account}:assumed-role/{role}/i-{}",
        random_hex(17)
    );
    let minted = keys.mint(&account, principal, &issued);
    Answer::json(
        200,
        &json!({
            "Code": "Success",
            "LastUpdated": iso8601(issued.issued_at),
            "Type": "AWS-HMAC",
            "AccessKeyId": minted.access_key_id,
            "SecretAccessKey": minted.secret_access_key,
            "Token": minted.session_token,
            "Expiration": iso8601(issued.expires_at),
        }),
    )
}

/// How the SSO portal refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SsoFailure {
    /// 403 `ForbiddenException`: no permission set gives the user the role.
    NoAccess,
}

/// A fake IAM Identity Center portal (`AWS_ENDPOINT_URL_SSO`):
/// GetRoleCredentials for the bearer token `aws sso login` cached.
pub type FakeSsoPortal = FakeService<SsoFailure>;

/// How long an SSO role's keys last.
pub const SSO_LIFETIME: Duration = Duration::from_secs(3600);

impl FakeService<SsoFailure> {
    /// Starts the portal, which takes `token` for the role `role_name` of
    /// `account`; its keys go into `keys`.
    pub fn start(
        keys: &KeyRing,
        token: &str,
        account: &str,
        role_name: &str,
    ) -> Result<FakeSsoPortal, Error> {
        let (keys, token, account, role_name) = (
            keys.clone(),
            token.to_string(),
            account.to_string(),
            role_name.to_string(),
        );
        FakeService::serve(SSO_LIFETIME, move |state, request| {
            sso_portal(state, request, &keys, &token, &account, &role_name)
        })
    }
}

fn sso_portal(
    state: &State<SsoFailure>,
    request: &Request,
    keys: &KeyRing,
    token: &str,
    account: &str,
    role_name: &str,
) -> Answer {
    let error = |status: u16, kind: &str, message: &str| {
        let mut answer = Answer::json(status, &json!({"message": message}));
        answer.headers.push((
            "x-amzn-ErrorType".into(),
            format!("{kind}:http://internal.amazon.com/coral/com.amazonaws.switchboard.portal/"),
        ));
        answer
    };
    if request.method != "GET" || request.path != "/federation/credentials" {
        return error(404, "ResourceNotFoundException", "Not Found");
    }
    if request.header("x-amz-sso_bearer_token") != Some(token) {
        return error(
            401,
            "UnauthorizedException",
            "Session token not found or invalid",
        );
    }
    let param = |name: &str| {
        request
            .query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    };
    if state.failure() == Some(SsoFailure::NoAccess)
        || param("account_id") != account
        || param("role_name") != role_name
    {
        return error(403, "ForbiddenException", "No access");
    }
    let issued = state.issue(temporary_key_id());
    let minted = keys.mint(
        account,
        format!(
            "arn:aws:sts::{account}:assumed-role/AWSReservedSSO_{role_name}_{}/dev@example.com",
            random_hex(8)
        ),
        &issued,
    );
    let expiration = issued
        .expires_at
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    Answer::json(
        200,
        &json!({"roleCredentials": {
            "accessKeyId": minted.access_key_id,
            "secretAccessKey": minted.secret_access_key,
            "sessionToken": minted.session_token,
            "expiration": u64::try_from(expiration).unwrap_or(u64::MAX),
        }}),
    )
}
