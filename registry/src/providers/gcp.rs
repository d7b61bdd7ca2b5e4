//! Artifact Registry and Container Registry with Google's identity, found
//! as Google's application default credentials find it: the file
//! `GOOGLE_APPLICATION_CREDENTIALS` names (a service account key, or
//! gcloud's login), gcloud's well-known file (a laptop after `gcloud auth
//! application-default login`), then the metadata server (GKE Workload
//! Identity; `GCE_METADATA_HOST` overrides its address). The registry
//! takes the access token as the password of the user `oauth2accesstoken`.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{post_form, read_file, said, send, Env, Lent, TokenCache};
use crate::distribution::Credentials;

/// The metadata server's name on GKE and GCE.
const METADATA_HOST: &str = "metadata.google.internal";
/// Google's OAuth token endpoint, for a refresh token of gcloud's login.
const OAUTH_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
/// How long the metadata server's absence is believed.
const ABSENT_FOR: Duration = Duration::from_secs(300);
/// The registry user a Google access token goes with.
const USER: &str = "oauth2accesstoken";
/// The cache scope: one token serves every Google registry.
const SCOPE: &str = "google";
/// What a service account key's token is asked for (the registries take it).
const CLOUD_PLATFORM: &str = "https://www.googleapis.com/auth/cloud-platform";
/// How long a service account's assertion is good for (Google's maximum).
const ASSERTION_LIFETIME: u64 = 3600;

/// Whether `host` is a Google registry: `<location>-docker.pkg.dev`,
/// `gcr.io` or `<location>.gcr.io`.
pub fn serves(host: &str) -> bool {
    host == "gcr.io"
        || host
            .strip_suffix(".gcr.io")
            .is_some_and(|l| !l.is_empty() && !l.contains('.'))
        || host
            .strip_suffix("-docker.pkg.dev")
            .is_some_and(|l| !l.is_empty() && !l.contains('.'))
}

/// Where Google's identity comes from.
enum Source {
    /// An application default credentials file.
    File(String),
    /// The metadata server at `host[:port]`.
    Metadata(String),
}

/// The Google provider.
pub struct Google {
    env: Env,
    client: Result<reqwest::Client, String>,
    cache: TokenCache,
    /// When the metadata server was last found absent.
    absent_since: std::sync::Mutex<Option<Instant>>,
}

impl Google {
    pub fn new(env: Env, client: Result<reqwest::Client, String>) -> Google {
        Google {
            env,
            client,
            cache: TokenCache::default(),
            absent_since: std::sync::Mutex::new(None),
        }
    }

    pub async fn lend(&self, _registry: &str) -> Lent {
        let Some(source) = self.source().await else {
            return Lent::Nothing {
                hint: Some("no Google identity is present (GKE's metadata server or application default credentials); enable GKE Workload Identity and bind the syncer's ServiceAccount with iam.gke.io/gcp-service-account".into()),
            };
        };
        match self.cache.get(SCOPE, || self.token(source)).await {
            Ok(kept) => Lent::Credentials {
                credentials: kept.credentials,
                denied_fix: kept.denied_fix,
            },
            Err(why) => Lent::Failed(why),
        }
    }

    pub async fn forget(&self) {
        self.cache.forget(SCOPE).await;
    }

    /// The first identity of the application default credentials' order.
    async fn source(&self) -> Option<Source> {
        if let Some(path) = self.env.var("GOOGLE_APPLICATION_CREDENTIALS") {
            return Some(Source::File(path));
        }
        if let Some(home) = self.env.home() {
            let well_known = home.join(".config/gcloud/application_default_credentials.json");
            if well_known.is_file() {
                return Some(Source::File(well_known.display().to_string()));
            }
        }
        if let Some(host) = self.env.var("GCE_METADATA_HOST") {
            return Some(Source::Metadata(host));
        }
        let believed_absent = self
            .absent_since
            .lock()
            .ok()
            .and_then(|a| *a)
            .is_some_and(|at| at.elapsed() < ABSENT_FOR);
        if believed_absent {
            return None;
        }
        // GKE and GCE resolve the name; elsewhere it does not exist.
        let found = tokio::net::lookup_host((METADATA_HOST, 80))
            .await
            .is_ok_and(|mut a| a.next().is_some());
        if let Ok(mut absent) = self.absent_since.lock() {
            *absent = (!found).then(Instant::now);
        }
        found.then(|| Source::Metadata(METADATA_HOST.to_string()))
    }

    async fn token(&self, source: Source) -> Result<(Credentials, String, Duration), String> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let (token, lifetime, origin, grantee) = match source {
            Source::Metadata(host) => {
                let (token, lifetime) = metadata_token(client, &host).await?;
                let origin = "GKE Workload Identity (the metadata server)".to_string();
                let grantee = format!("the Google service account of {origin} (on GKE, the one the syncer's ServiceAccount names in iam.gke.io/gcp-service-account)");
                (token, lifetime, origin, grantee)
            }
            Source::File(path) => file_token(client, &path).await?,
        };
        let fix = format!("grant roles/artifactregistry.reader on the repository to {grantee}");
        Ok((
            Credentials {
                user: USER.to_string(),
                password: token,
                origin,
            },
            fix,
            lifetime,
        ))
    }
}

/// The default service account's token from the metadata server.
async fn metadata_token(
    client: &reqwest::Client,
    host: &str,
) -> Result<(String, Duration), String> {
    let url = format!("http://{host}/computeMetadata/v1/instance/service-accounts/default/token");
    let answer = send(
        client.get(&url).header("Metadata-Flavor", "Google"),
        "the GKE metadata server",
    )
    .await?;
    if !answer.status.is_success() {
        return Err(format!(
            "the GKE metadata server ({host}) answered {} for a token: {}; enable Workload Identity on the node pool and bind the syncer's ServiceAccount to a Google service account (iam.gke.io/gcp-service-account)",
            answer.status,
            said(&answer.body)
        ));
    }
    access_token(&answer.json(), "the GKE metadata server")
}

/// A token for an application default credentials file: a service
/// account key, or gcloud's login; with where it came from and who is
/// granted reading, in words.
async fn file_token(
    client: &reqwest::Client,
    path: &str,
) -> Result<(String, Duration, String, String), String> {
    let text = read_file(path, "the application default credentials")?;
    let adc: Value = serde_json::from_str(&text)
        .map_err(|e| format!("the application default credentials in {path} are not JSON: {e}"))?;
    let field = |name: &str| adc.get(name).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "authorized_user" => {
            let (token, lifetime) = login_token(client, path, &adc).await?;
            let origin = format!("the application default credentials in {path}");
            let grantee = format!("the Google account of {origin}");
            Ok((token, lifetime, origin, grantee))
        }
        "service_account" => {
            let (token, lifetime) = service_account_token(client, path, &adc).await?;
            let email = field("client_email");
            let origin = format!("the service account {email} (its key in {path})");
            Ok((token, lifetime, origin, format!("the service account {email}")))
        }
        other => Err(format!(
            "the application default credentials in {path} are of type {other:?}, which is not read here; run `gcloud auth application-default login`, use a service account key, or on GKE use Workload Identity"
        )),
    }
}

/// A token for a service account key: a JWT it signs (RS256) exchanged at
/// its `token_uri`, as Google's auth libraries do (RFC 7523).
async fn service_account_token(
    client: &reqwest::Client,
    path: &str,
    key: &Value,
) -> Result<(String, Duration), String> {
    let field = |name: &str| key.get(name).and_then(Value::as_str).unwrap_or_default();
    let email = field("client_email");
    let token_uri = Some(field("token_uri"))
        .filter(|u| !u.is_empty())
        .unwrap_or(OAUTH_TOKEN_URL);
    let assertion = assertion(
        field("private_key"),
        field("private_key_id"),
        email,
        token_uri,
    )
    .map_err(|why| {
        format!("the service account key in {path} {why}; create a new key for {email}")
    })?;
    let form = [
        ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
        ("assertion", assertion.as_str()),
    ];
    let answer = post_form(client.post(token_uri), &form, "Google's token endpoint").await?;
    if !answer.status.is_success() {
        return Err(format!(
            "Google's token endpoint answered {} for the service account {email} (its key in {path}): {}; check that the key is not deleted or disabled, or create a new one",
            answer.status,
            said(&answer.body)
        ));
    }
    access_token(&answer.json(), "Google's token endpoint")
}

/// The signed JWT of a service account key (a PKCS#8 PEM), for `audience`.
fn assertion(pem: &str, key_id: &str, email: &str, audience: &str) -> Result<String, String> {
    use base64::Engine;
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| "holds no PEM private key".to_string())?;
    let key = ring::signature::RsaKeyPair::from_pkcs8(&der)
        .map_err(|e| format!("holds no RSA private key ({e})"))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let encode = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let header = serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": key_id});
    let claims = serde_json::json!({"iss": email, "scope": CLOUD_PLATFORM, "aud": audience,
        "iat": now, "exp": now + ASSERTION_LIFETIME});
    let signed = format!(
        "{}.{}",
        encode(header.to_string().as_bytes()),
        encode(claims.to_string().as_bytes())
    );
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signed.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "could not sign with its private key".to_string())?;
    Ok(format!("{signed}.{}", encode(&signature)))
}

/// A token for gcloud's login (`authorized_user`), by its refresh token.
async fn login_token(
    client: &reqwest::Client,
    path: &str,
    adc: &Value,
) -> Result<(String, Duration), String> {
    let field = |name: &str| adc.get(name).and_then(Value::as_str).unwrap_or_default();
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", field("client_id")),
        ("client_secret", field("client_secret")),
        ("refresh_token", field("refresh_token")),
    ];
    let answer = post_form(
        client.post(OAUTH_TOKEN_URL),
        &form,
        "Google's token endpoint",
    )
    .await?;
    if !answer.status.is_success() {
        return Err(format!(
            "Google's token endpoint answered {} for the login in {path}: {}; run `gcloud auth application-default login` again",
            answer.status,
            said(&answer.body)
        ));
    }
    access_token(&answer.json(), "Google's token endpoint")
}

/// `access_token` and `expires_in` of an OAuth answer.
fn access_token(answer: &Option<Value>, what: &str) -> Result<(String, Duration), String> {
    let answer = answer.as_ref();
    let token = answer
        .and_then(|a| a.get("access_token"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("{what} answered without an access_token"))?;
    let lifetime = answer
        .and_then(|a| a.get("expires_in"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Ok((token.to_string(), Duration::from_secs(lifetime)))
}
