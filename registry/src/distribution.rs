//! The part of the OCI distribution API a lookup needs: a manifest by tag
//! or digest, an image config blob, and the token exchange of the Docker
//! registry auth spec. Every body read is bounded; credentials go to their
//! registry, and to its token service only on its own host or domain;
//! redirects are followed only to hosts [`HostPolicy::check_url`] admits,
//! and reqwest drops the `Authorization` header when one leaves the host.

use std::io::{BufReader, Read};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_auth::ChallengeRef;
use reqwest::header::{HeaderValue, ACCEPT, WWW_AUTHENTICATE};
use reqwest::{redirect, Response, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::hosts::{GuardedResolver, HostPolicy, Refusal};

/// The largest manifest or index read: what the distribution registry
/// accepts on push and containers/image reads (4 MiB).
pub const MANIFEST_LIMIT: usize = 4 << 20;
/// The largest image config read (containers/image's limit).
pub const CONFIG_LIMIT: usize = 4 << 20;
/// The largest token answer read (containers/image's limit).
pub const TOKEN_LIMIT: usize = 1 << 20;
/// What is read of an error answer, for its message.
const ERROR_LIMIT: usize = 16 << 10;
/// Redirects followed for one request.
const MAX_REDIRECTS: usize = 5;

const MANIFEST_TYPES: &str = "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// Why one attempt failed, and whether another may succeed.
#[derive(Debug)]
pub struct Failure {
    /// What went wrong.
    pub message: String,
    /// A timeout, a connection error, a 5xx or a 429: worth another attempt.
    pub transient: bool,
    /// No answer in time (to connect, or between reads).
    pub timed_out: bool,
    /// The registry answered 401 to the credentials it was given.
    pub unauthorized: bool,
    /// No answer came (no connection, none in time, a host refused by
    /// the checks): the same whatever the credentials.
    pub unanswered: bool,
}

impl Failure {
    /// A failure another attempt would meet again.
    pub fn permanent(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            transient: false,
            timed_out: false,
            unauthorized: false,
            unanswered: false,
        }
    }
}

impl From<reqwest::Error> for Failure {
    fn from(error: reqwest::Error) -> Failure {
        if let Some(refusal) = source_of::<Refusal>(&error) {
            return Failure {
                unanswered: true,
                ..Failure::permanent(refusal.to_string())
            };
        }
        let transient =
            error.is_timeout() || error.is_connect() || error.is_request() || error.is_body();
        Failure {
            message: chain(&error),
            transient,
            timed_out: error.is_timeout(),
            unauthorized: false,
            unanswered: error.is_timeout() || error.is_connect(),
        }
    }
}

/// The first error of type `T` in `error`'s chain of sources.
fn source_of<'a, T: std::error::Error + 'static>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        current = e.source();
    }
    None
}

/// An error and its sources, `: `-separated, each said once.
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(error);
    while let Some(e) = current {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}

/// The HTTP client of every lookup: `timeout` to connect and between
/// reads, redirects checked by `policy`, names resolved by [`GuardedResolver`].
pub fn client(policy: Arc<HostPolicy>, timeout: Duration) -> Result<reqwest::Client, String> {
    let checked = policy.clone();
    let redirects = redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        match checked.check_url(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(refusal) => attempt.error(refusal),
        }
    });
    reqwest::Client::builder()
        .connect_timeout(timeout)
        .read_timeout(timeout)
        .user_agent(concat!("os-placement/", env!("CARGO_PKG_VERSION")))
        .redirect(redirects)
        .dns_resolver(GuardedResolver { policy })
        .build()
        .map_err(|e| chain(&e))
}

/// A user name and password for one registry, and where they came from.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub user: String,
    /// The password or token.
    pub password: String,
    /// Where they came from, in words for a failure's fix: "the Docker
    /// config", "the pull Secret team-a/regcred", "the AWS role …".
    pub origin: String,
}

impl Credentials {
    /// Credentials read from the Docker config.
    pub fn docker_config(user: String, password: String) -> Credentials {
        Credentials {
            user,
            password,
            origin: "the Docker config".to_string(),
        }
    }
}

/// Never the password, whatever prints it.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .field("origin", &self.origin)
            .finish()
    }
}

/// What a session has to read a registry with, and what to say when the
/// registry refuses it.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Credentials for the registry, if any.
    pub credentials: Option<Credentials>,
    /// What to grant when the registry refuses them (403).
    pub denied_fix: Option<String>,
    /// Without credentials: which identity was looked for.
    pub absent_hint: Option<String>,
}

impl Access {
    /// The words after a 401 or 403: where the credentials came from and
    /// what to grant, or why there were none and where to give them; a fix
    /// comes last, after `; `, as the policy's warning reads it.
    fn hint(&self, registry: &str, status: StatusCode) -> String {
        match (&self.credentials, &self.denied_fix) {
            (Some(c), Some(fix)) if status == StatusCode::FORBIDDEN => {
                format!(" (credentials for {registry} come from {}); {fix}", c.origin)
            }
            (Some(c), Some(_)) => format!(" (credentials for {registry} come from {})", c.origin),
            // Static credentials (a Docker config, a pull Secret): their owner mends them.
            (Some(c), None) if status == StatusCode::FORBIDDEN => format!(
                " (credentials for {registry} come from {origin}); check that the account in {origin} may pull this repository",
                origin = c.origin
            ),
            (Some(c), None) => format!(
                " (credentials for {registry} come from {origin}); check the user name and password in {origin}",
                origin = c.origin
            ),
            (None, _) => match self.absent_hint.as_deref() {
                Some(absent) => format!(
                    " and none were found: the Docker config has none for it, and {absent}"
                ),
                None => " and none were found: the Docker config has none for it; add them to the syncer's Docker config (the Secret os-placement-registry-credentials)".to_string(),
            },
        }
    }
}

#[derive(Debug, Clone)]
enum Authorization {
    Basic(Credentials),
    Bearer(String),
}

/// One lookup's conversation with one registry.
pub struct Session<'a> {
    client: &'a reqwest::Client,
    policy: &'a HostPolicy,
    /// `host[:port]` as the image names it.
    registry: String,
    /// `https://host[:port]`, or `http://` for an insecure registry.
    base: String,
    repository: String,
    access: Access,
    authorization: Option<Authorization>,
}

impl<'a> Session<'a> {
    /// A session with `registry` for `repository`, with its credentials if any.
    pub fn new(
        client: &'a reqwest::Client,
        policy: &'a HostPolicy,
        registry: &str,
        repository: &str,
        access: Access,
    ) -> Session<'a> {
        let scheme = if policy.insecure(registry) {
            "http"
        } else {
            "https"
        };
        Session {
            client,
            policy,
            registry: registry.to_string(),
            base: format!("{scheme}://{registry}"),
            repository: repository.to_string(),
            access,
            authorization: None,
        }
    }

    /// The manifest or index `reference` (a tag or a digest) names.
    pub async fn manifest(&mut self, reference: &str) -> Result<Body, Failure> {
        let path = format!("/v2/{}/manifests/{reference}", self.repository);
        self.fetch(&path, MANIFEST_TYPES, MANIFEST_LIMIT, "manifest")
            .await
    }

    /// The blob of `digest` (an image config).
    pub async fn config(&mut self, digest: &str) -> Result<Body, Failure> {
        let path = format!("/v2/{}/blobs/{digest}", self.repository);
        self.fetch(&path, "*/*", CONFIG_LIMIT, "image config").await
    }

    /// GETs `path`; on a challenge, authorizes once and asks again.
    async fn fetch(
        &mut self,
        path: &str,
        accept: &str,
        limit: usize,
        what: &str,
    ) -> Result<Body, Failure> {
        let url = format!("{}{path}", self.base);
        let mut response = self.send(&url, accept).await?;
        if response.status() == StatusCode::UNAUTHORIZED && self.authorization.is_none() {
            let challenge = response.headers().get(WWW_AUTHENTICATE).cloned();
            self.authorization = Some(self.authorize(challenge.as_ref()).await?);
            response = self.send(&url, accept).await?;
        }
        if !response.status().is_success() {
            let what = format!("the {what}");
            return Err(status_failure(response, &what, &self.registry, &self.access).await);
        }
        read_limited(response, limit, what).await
    }

    async fn send(&self, url: &str, accept: &str) -> Result<Response, Failure> {
        let request = self.client.get(url).header(ACCEPT, accept);
        let request = match &self.authorization {
            Some(Authorization::Basic(c)) => request.basic_auth(&c.user, Some(&c.password)),
            Some(Authorization::Bearer(token)) => request.bearer_auth(token),
            None => request,
        };
        Ok(request.send().await?)
    }

    /// Answers a registry's challenge: its credentials for `Basic`, a
    /// token from its token service for `Bearer`.
    async fn authorize(&self, challenge: Option<&HeaderValue>) -> Result<Authorization, Failure> {
        let text = challenge.and_then(|v| v.to_str().ok()).unwrap_or_default();
        let challenges = http_auth::parse_challenges(text).unwrap_or_default();
        let param = |c: &ChallengeRef<'_>, name: &str| {
            c.params
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.to_unescaped())
        };
        if let Some(bearer) = challenges
            .iter()
            .find(|c| c.scheme.eq_ignore_ascii_case("bearer"))
        {
            let realm = param(bearer, "realm").unwrap_or_default();
            let scope = param(bearer, "scope")
                .unwrap_or_else(|| format!("repository:{}:pull", self.repository));
            let service = param(bearer, "service");
            return Ok(Authorization::Bearer(
                self.token(&realm, service.as_deref(), &scope).await?,
            ));
        }
        match (
            &self.access.credentials,
            challenges
                .iter()
                .any(|c| c.scheme.eq_ignore_ascii_case("basic")),
        ) {
            (Some(credentials), true) => Ok(Authorization::Basic(credentials.clone())),
            _ => Err(Failure::permanent(format!(
                "the registry {} asks for credentials (401){}",
                self.registry,
                self.access.hint(&self.registry, StatusCode::UNAUTHORIZED)
            ))),
        }
    }

    /// A token from the registry's token service at `realm`.
    async fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: &str,
    ) -> Result<String, Failure> {
        let mut url = Url::parse(realm).map_err(|e| {
            Failure::permanent(format!(
                "the registry {} names a token service that is not a URL ({realm:?}: {e})",
                self.registry
            ))
        })?;
        self.policy
            .check_url(&url)
            .map_err(|refusal| Failure::permanent(format!("its token service: {refusal}")))?;
        url.query_pairs_mut().append_pair("scope", scope);
        if let Some(service) = service {
            url.query_pairs_mut().append_pair("service", service);
        }
        let mut request = self.client.get(url.clone());
        if let Some(c) = &self.access.credentials {
            if credentials_go_to(&self.registry, self.policy.insecure(&self.registry), &url) {
                request = request.basic_auth(&c.user, Some(&c.password));
            }
        }
        let response = request.send().await?;
        if !response.status().is_success() {
            return Err(status_failure(response, "a token", &self.registry, &self.access).await);
        }
        let body = read_limited(response, TOKEN_LIMIT, "token answer").await?;
        let answer: Value = body
            .json()
            .map_err(|e| Failure::permanent(format!("unreadable token answer: {e}")))?;
        ["token", "access_token"]
            .iter()
            .find_map(|key| answer.get(key).and_then(Value::as_str))
            .map(str::to_string)
            .ok_or_else(|| Failure::permanent("the token answer holds no token"))
    }
}

/// Whether a registry's credentials may go to its token service at
/// `realm`: on the registry's own host, or within its parent domain (Docker
/// Hub's auth.docker.io for index.docker.io; GitLab's gitlab.com for
/// registry.gitlab.com); over HTTPS, or over HTTP to an insecure
/// registry's own host.
pub fn credentials_go_to(registry: &str, insecure: bool, realm: &Url) -> bool {
    let registry_host = registry
        .rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(registry, |(host, _)| host)
        .to_ascii_lowercase();
    let Some(realm_host) = realm.host_str().map(str::to_ascii_lowercase) else {
        return false;
    };
    let same = realm_host == registry_host;
    let parent = registry_host
        .split_once('.')
        .map(|(_, parent)| parent)
        .filter(|p| p.contains('.') && registry_host.parse::<std::net::IpAddr>().is_err());
    let within = parent.is_some_and(|p| realm_host == p || realm_host.ends_with(&format!(".{p}")));
    match realm.scheme() {
        "https" => same || within,
        "http" => insecure && same,
        _ => false,
    }
}

/// A body as it was received: its chunks, never copied into one buffer,
/// so a lookup holds one body's bytes at most.
#[derive(Debug, Default)]
pub struct Body(Vec<Bytes>);

impl Body {
    /// Reads the chunks in order.
    pub fn reader(&self) -> impl Read + '_ {
        BufReader::new(ChunkReader {
            chunks: &self.0,
            offset: 0,
        })
    }

    /// The body as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_reader(self.reader())
    }
}

struct ChunkReader<'a> {
    chunks: &'a [Bytes],
    /// How much of the first chunk was read.
    offset: usize,
}

impl Read for ChunkReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while let Some((first, rest)) = self.chunks.split_first() {
            let left = first.get(self.offset..).unwrap_or_default();
            if left.is_empty() {
                self.chunks = rest;
                self.offset = 0;
                continue;
            }
            let n = left.len().min(buf.len());
            if let (Some(to), Some(from)) = (buf.get_mut(..n), left.get(..n)) {
                to.copy_from_slice(from);
            }
            self.offset += n;
            return Ok(n);
        }
        Ok(0)
    }
}

/// The body of `response`, refused past `limit` bytes (announced or read).
pub async fn read_limited(
    mut response: Response,
    limit: usize,
    what: &str,
) -> Result<Body, Failure> {
    let too_large = || {
        Failure::permanent(format!(
            "the {what} is larger than {} KiB, the most the syncer reads",
            limit / 1024
        ))
    };
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(too_large());
    }
    let (mut chunks, mut read) = (Vec::new(), 0usize);
    while let Some(chunk) = response.chunk().await? {
        read = read.saturating_add(chunk.len());
        if read > limit {
            return Err(too_large());
        }
        chunks.push(chunk);
    }
    Ok(Body(chunks))
}

/// A failure for an answer that is not a success, with the registry's
/// own error message when it gives one.
async fn status_failure(
    response: Response,
    what: &str,
    registry: &str,
    access: &Access,
) -> Failure {
    let status = response.status();
    let body = read_limited(response, ERROR_LIMIT, "error answer")
        .await
        .unwrap_or_default();
    let said = body
        .json::<Value>()
        .ok()
        .and_then(|v| {
            let first = v.get("errors")?.as_array()?.first()?.clone();
            let code = first.get("code").and_then(Value::as_str).unwrap_or("");
            let message = first.get("message").and_then(Value::as_str).unwrap_or("");
            Some(format!("{code} {message}").trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .map(|s| format!(": {s}"))
        .unwrap_or_default();
    let hint = match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => access.hint(registry, status),
        _ => String::new(),
    };
    Failure {
        message: format!("{registry} answered {status} for {what}{said}{hint}"),
        transient: status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS,
        timed_out: false,
        unauthorized: status == StatusCode::UNAUTHORIZED && access.credentials.is_some(),
        unanswered: false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_body_reads_across_its_chunks() {
        let body = Body(vec![
            Bytes::from_static(b"{\"token\":"),
            Bytes::new(),
            Bytes::from_static(b" \"t\""),
            Bytes::from_static(b"}"),
        ]);
        let value: Value = body.json().unwrap();
        assert_eq!(value, serde_json::json!({"token": "t"}));
        let mut text = String::new();
        body.reader().read_to_string(&mut text).unwrap();
        assert_eq!(text, "{\"token\": \"t\"}");
        assert!(Body::default().json::<Value>().is_err());
    }

    #[test]
    fn credentials_go_to_a_token_service_on_the_registry_host_or_domain() {
        let go = |registry: &str, insecure: bool, realm: &str| {
            credentials_go_to(registry, insecure, &Url::parse(realm).unwrap())
        };
        assert!(go("index.docker.io", false, "https://auth.docker.io/token"));
        assert!(go("ghcr.io", false, "https://ghcr.io/token"));
        assert!(go(
            "registry.gitlab.com",
            false,
            "https://gitlab.com/jwt/auth"
        ));
        assert!(go(
            "registry.corp.example:5000",
            false,
            "https://registry.corp.example:5001/auth"
        ));
        assert!(go("127.0.0.1:5000", true, "http://127.0.0.1:5001/token"));
        // Elsewhere, or in the clear, they do not.
        assert!(!go("ghcr.io", false, "https://attacker.example/token"));
        assert!(!go(
            "index.docker.io",
            false,
            "https://docker.io.attacker.example/token"
        ));
        assert!(!go(
            "registry.corp.example",
            false,
            "http://registry.corp.example/token"
        ));
        assert!(!go("127.0.0.1:5000", true, "http://localhost:5001/token"));
        assert!(!go("10.0.0.1", false, "https://0.0.1/token"));
    }

    /// An error with a cause, as hyper's connect errors wrap a resolver's.
    #[derive(Debug)]
    struct Wrapped(&'static str, Box<dyn std::error::Error + Send + Sync>);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&*self.1)
        }
    }

    #[test]
    fn error_chains_say_each_cause_once_and_find_a_refusal() {
        let io = std::io::Error::other("connection refused");
        let wrapped = Wrapped("tcp connect error", Box::new(io));
        assert_eq!(chain(&wrapped), "tcp connect error: connection refused");
        assert!(source_of::<Refusal>(&wrapped).is_none());
        let refused = Wrapped("dns error", Box::new(Refusal("refused".into())));
        let found = source_of::<Refusal>(&refused).map(ToString::to_string);
        assert_eq!(found.as_deref(), Some("refused"));
    }
}
