//! The AWS identity of the process, found in the order of the AWS SDKs'
//! default credential chain: the environment's keys, the shared
//! credentials file's profile (a laptop), IRSA's web identity token
//! (exchanged at STS), the container credentials endpoint (EKS Pod
//! Identity's agent, or ECS), then the instance's role through IMDSv2 (the
//! node role). A profile gives keys as the SDKs' profile provider does:
//! an IAM Identity Center (SSO) login's cached token exchanged at the SSO
//! portal, static keys, or a `credential_process`; or, with `role_arn`, the
//! keys of that role, assumed at STS with those of its `source_profile`
//! (or its `credential_source`).

use std::net::IpAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::clock::{left_until_epoch, parse_rfc3339};
use super::{form, post_form, read_file, said, send, service_account_of, Env};

/// How long an unanswered instance metadata endpoint is believed absent.
const ABSENT_FOR: Duration = Duration::from_secs(300);
/// The wait for the instance metadata endpoint, which answers at once
/// where it exists (the SDKs wait one second too).
const IMDS_TIMEOUT: Duration = Duration::from_secs(1);
/// The container credentials endpoint of a relative URI (ECS).
const ECS_HOST: &str = "http://169.254.170.2";
/// The longest a profile's `credential_process` may take.
const PROCESS_DEADLINE: Duration = Duration::from_secs(30);
/// How many `source_profile` links a role profile may follow (the SDKs
/// refuse a loop; this bounds one).
const SOURCE_DEPTH: usize = 4;

/// Keys for signing, how long they last, and whose they are.
pub struct Keys {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    /// Time left; `None` for keys that do not expire.
    pub lifetime: Option<Duration>,
    /// Whose they are, for a fix: "the role arn:… (IRSA …)".
    pub principal: String,
}

/// Where the identity comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
    Environment,
    /// Static keys in a profile of the shared credentials or config file.
    Profile { file: String, name: String },
    /// An IAM Identity Center (SSO) profile: the token `aws sso login`
    /// cached, exchanged at the SSO portal for the role's keys.
    Sso {
        profile: String,
        /// The cache file's key: the `sso_session`'s name, or the start URL.
        session: String,
        region: String,
        account_id: String,
        role_name: String,
    },
    /// A profile's `credential_process`, run through the shell.
    Process { profile: String, command: String },
    /// A profile's `role_arn`, assumed at STS (`AssumeRole`, signed with
    /// the keys of its source).
    AssumeRole {
        profile: String,
        role_arn: String,
        source: Box<Source>,
        session_name: Option<String>,
        external_id: Option<String>,
    },
    /// IRSA: AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE.
    WebIdentity {
        role_arn: String,
        token_file: String,
    },
    /// EKS Pod Identity or ECS: the container credentials endpoint.
    Container { url: String },
    /// The instance's role, through IMDSv2.
    Instance { endpoint: String },
}

/// The DNS suffix of the partition `region` is in, as the SDKs'
/// partitions.json says by its `regionRegex` (aws and aws-us-gov share theirs).
pub fn partition_suffix(region: &str) -> &'static str {
    [
        ("cn-", "amazonaws.com.cn"),
        ("us-iso-", "c2s.ic.gov"),
        ("us-isob-", "sc2s.sgov.gov"),
        ("eu-isoe-", "cloud.adc-e.uk"),
        ("us-isof-", "csp.hci.ic.gov"),
    ]
    .iter()
    .find(|(prefix, _)| region.starts_with(prefix))
    .map_or("amazonaws.com", |(_, suffix)| suffix)
}

/// A role a profile assumes.
struct Role<'a> {
    profile: &'a str,
    role_arn: &'a str,
    session_name: Option<&'a str>,
    external_id: Option<&'a str>,
}

/// The headers of a request to `endpoint` for AWS `service` with `body`
/// and `headers`, SigV4 signature included (by the AWS SDK's signer).
pub fn sign_request(
    keys: &Keys,
    region: &str,
    service: &str,
    endpoint: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Vec<(String, String)>, String> {
    use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
    let url = reqwest::Url::parse(endpoint).map_err(|e| format!("endpoint {endpoint}: {e}"))?;
    let host = match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        (None, _) => return Err(format!("endpoint {endpoint} names no host")),
    };
    let mut all: Vec<(String, String)> = std::iter::once(("host".to_string(), host))
        .chain(headers.iter().map(|(n, v)| (n.to_string(), v.to_string())))
        .collect();
    let identity = aws_credential_types::Credentials::new(
        keys.access_key_id.clone(),
        keys.secret_access_key.clone(),
        keys.session_token.clone(),
        None,
        "os-placement",
    )
    .into();
    let cannot = |e: &dyn std::fmt::Display| format!("cannot sign for {service}: {e}");
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| cannot(&e))?
        .into();
    let signable = SignableRequest::new(
        "POST",
        endpoint,
        all.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        SignableBody::Bytes(body.as_bytes()),
    )
    .map_err(|e| cannot(&e))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| cannot(&e))?
        .into_parts();
    // reqwest sets Host itself, from the URL.
    all.retain(|(name, _)| name != "host");
    for (name, value) in instructions.headers() {
        all.push((name.to_string(), value.to_string()));
    }
    Ok(all)
}

/// The credential chain.
pub struct Chain {
    env: Env,
    client: Result<reqwest::Client, String>,
    instance_absent_since: std::sync::Mutex<Option<Instant>>,
}

impl Chain {
    pub fn new(env: Env, client: Result<reqwest::Client, String>) -> Chain {
        Chain {
            env,
            client,
            instance_absent_since: std::sync::Mutex::new(None),
        }
    }

    /// The first source of the chain that is configured; `None` when none
    /// is (the instance endpoint counts until it is found absent).
    pub fn source(&self) -> Option<Source> {
        let env = &self.env;
        if env.var("AWS_ACCESS_KEY_ID").is_some() && env.var("AWS_SECRET_ACCESS_KEY").is_some() {
            return Some(Source::Environment);
        }
        if let Some(profile) = self.profile() {
            return Some(profile);
        }
        if let (Some(role_arn), Some(token_file)) = (
            env.var("AWS_ROLE_ARN"),
            env.var("AWS_WEB_IDENTITY_TOKEN_FILE"),
        ) {
            return Some(Source::WebIdentity {
                role_arn,
                token_file,
            });
        }
        if let Some(url) = env.var("AWS_CONTAINER_CREDENTIALS_FULL_URI") {
            return Some(Source::Container { url });
        }
        if let Some(relative) = env.var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
            return Some(Source::Container {
                url: format!("{ECS_HOST}{relative}"),
            });
        }
        let disabled = env
            .var("AWS_EC2_METADATA_DISABLED")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let absent = self
            .instance_absent_since
            .lock()
            .ok()
            .and_then(|a| *a)
            .is_some_and(|at| at.elapsed() < ABSENT_FOR);
        if disabled || absent {
            return None;
        }
        let endpoint = env
            .var("AWS_EC2_METADATA_SERVICE_ENDPOINT")
            .unwrap_or_else(|| "http://169.254.169.254".to_string());
        Some(Source::Instance { endpoint })
    }

    /// The profile's keys, as the SDKs' profile provider finds them: an
    /// SSO login, static keys (the credentials file's, then the config
    /// file's), then a `credential_process`.
    fn profile(&self) -> Option<Source> {
        let name = self
            .env
            .var("AWS_PROFILE")
            .unwrap_or_else(|| "default".into());
        self.profile_named(name, 0)
    }

    /// The profile `name`, `depth` `source_profile` links in.
    fn profile_named(&self, name: String, depth: usize) -> Option<Source> {
        let home = |path: &str| self.env.home().map(|h| h.join(path).display().to_string());
        let credentials_file = self
            .env
            .var("AWS_SHARED_CREDENTIALS_FILE")
            .or_else(|| home(".aws/credentials"));
        let config_file = self
            .env
            .var("AWS_CONFIG_FILE")
            .or_else(|| home(".aws/config"));
        let read = |file: &Option<String>| {
            file.as_ref()
                .and_then(|f| std::fs::read_to_string(f).ok())
                .unwrap_or_default()
        };
        let (credentials_text, config_text) = (read(&credentials_file), read(&config_file));
        let credentials = profile_section(&credentials_text, &name);
        // The config file names a profile `[profile NAME]`, the default `[default]`.
        let mut config = profile_section(&config_text, &format!("profile {name}"));
        if config.is_empty() && name == "default" {
            config = profile_section(&config_text, "default");
        }
        if let Some(role_arn) = config
            .get("role_arn")
            .or_else(|| credentials.get("role_arn"))
        {
            let source = match config.get("credential_source").map(String::as_str) {
                Some("Environment") => Source::Environment,
                Some("EcsContainer") => Source::Container {
                    url: self
                        .env
                        .var("AWS_CONTAINER_CREDENTIALS_FULL_URI")
                        .or_else(|| {
                            self.env
                                .var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
                                .map(|r| format!("{ECS_HOST}{r}"))
                        })?,
                },
                Some("Ec2InstanceMetadata") => Source::Instance {
                    endpoint: self
                        .env
                        .var("AWS_EC2_METADATA_SERVICE_ENDPOINT")
                        .unwrap_or_else(|| "http://169.254.169.254".to_string()),
                },
                Some(_) => return None,
                None if depth >= SOURCE_DEPTH => return None,
                None => {
                    let from = config
                        .get("source_profile")
                        .or_else(|| credentials.get("source_profile"))?;
                    self.profile_named(from.clone(), depth + 1)?
                }
            };
            return Some(Source::AssumeRole {
                profile: name,
                role_arn: role_arn.clone(),
                source: Box::new(source),
                session_name: config.get("role_session_name").cloned(),
                external_id: config.get("external_id").cloned(),
            });
        }
        if let (Some(account_id), Some(role_name)) =
            (config.get("sso_account_id"), config.get("sso_role_name"))
        {
            let session = config.get("sso_session");
            let session_section = session
                .map(|s| profile_section(&config_text, &format!("sso-session {s}")))
                .unwrap_or_default();
            let region = session_section
                .get("sso_region")
                .or_else(|| config.get("sso_region"))
                .cloned()?;
            let key = session
                .cloned()
                .or_else(|| config.get("sso_start_url").cloned())?;
            return Some(Source::Sso {
                profile: name,
                session: key,
                region,
                account_id: account_id.clone(),
                role_name: role_name.clone(),
            });
        }
        let keys = |section: &std::collections::HashMap<String, String>| {
            section.contains_key("aws_access_key_id")
                && section.contains_key("aws_secret_access_key")
        };
        if keys(&credentials) {
            let file = credentials_file?;
            return Some(Source::Profile { file, name });
        }
        if keys(&config) {
            let file = config_file?;
            return Some(Source::Profile { file, name });
        }
        let command = credentials
            .get("credential_process")
            .or_else(|| config.get("credential_process"))?;
        Some(Source::Process {
            profile: name,
            command: command.clone(),
        })
    }

    /// The keys of `source`. `Ok(None)` when the instance endpoint does not
    /// answer: there is no identity after all. `region` picks STS's
    /// regional endpoint when the environment names none.
    pub async fn keys(&self, source: &Source, region: &str) -> Result<Option<Keys>, String> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        match source {
            Source::Environment => Ok(Some(Keys {
                access_key_id: self.env.var("AWS_ACCESS_KEY_ID").unwrap_or_default(),
                secret_access_key: self.env.var("AWS_SECRET_ACCESS_KEY").unwrap_or_default(),
                session_token: self.env.var("AWS_SESSION_TOKEN"),
                lifetime: None,
                principal: "the IAM identity of AWS_ACCESS_KEY_ID".into(),
            })),
            Source::Profile { file, name } => {
                let text = read_file(file, "the AWS shared credentials file")?;
                let mut section = profile_section(&text, name);
                if section.is_empty() {
                    section = profile_section(&text, &format!("profile {name}"));
                }
                let get = |key: &str| section.get(key).cloned();
                Ok(Some(Keys {
                    access_key_id: get("aws_access_key_id").unwrap_or_default(),
                    secret_access_key: get("aws_secret_access_key").unwrap_or_default(),
                    session_token: get("aws_session_token"),
                    lifetime: None,
                    principal: format!("the IAM identity of the AWS profile {name} ({file})"),
                }))
            }
            Source::WebIdentity {
                role_arn,
                token_file,
            } => self
                .web_identity(client, role_arn, token_file, region)
                .await
                .map(Some),
            Source::Container { url } => self.container(client, url).await.map(Some),
            Source::Sso {
                profile,
                session,
                region,
                account_id,
                role_name,
            } => self
                .sso(client, profile, session, region, account_id, role_name)
                .await
                .map(Some),
            Source::AssumeRole {
                profile,
                role_arn,
                source,
                session_name,
                external_id,
            } => {
                // Its source's keys first (boxed: a source may be a role too).
                let Some(keys) = Box::pin(self.keys(source, region)).await? else {
                    return Ok(None);
                };
                let role = Role {
                    profile,
                    role_arn,
                    session_name: session_name.as_deref(),
                    external_id: external_id.as_deref(),
                };
                self.assume_role(&keys, &role, region).await.map(Some)
            }
            Source::Process { profile, command } => {
                let (profile, command) = (profile.clone(), command.clone());
                tokio::task::spawn_blocking(move || process(&profile, &command))
                    .await
                    .map_err(|e| format!("the credential_process did not finish: {e}"))?
                    .map(Some)
            }
            Source::Instance { endpoint } => {
                let keys = self.instance(client, endpoint).await;
                if let Ok(None) = keys {
                    if let Ok(mut absent) = self.instance_absent_since.lock() {
                        *absent = Some(Instant::now());
                    }
                }
                keys
            }
        }
    }

    /// IRSA: the projected token exchanged at STS for the role's keys.
    async fn web_identity(
        &self,
        client: &reqwest::Client,
        role_arn: &str,
        token_file: &str,
        region: &str,
    ) -> Result<Keys, String> {
        let token = read_file(
            token_file,
            "the web identity token (AWS_WEB_IDENTITY_TOKEN_FILE)",
        )?;
        let account = service_account_of(&token)
            .map(|sa| format!("the ServiceAccount {sa}"))
            .unwrap_or_else(|| "the syncer's ServiceAccount".into());
        let endpoint = self.sts_endpoint(region);
        let session = session_name(self.env.var("AWS_ROLE_SESSION_NAME"));
        let pairs = [
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", "2011-06-15"),
            ("RoleArn", role_arn),
            ("RoleSessionName", session.as_str()),
            ("WebIdentityToken", token.as_str()),
        ];
        let answer = post_form(client.post(&endpoint), &pairs, "AWS STS").await?;
        let principal = format!(
            "the role {role_arn} that {account} assumes (IRSA: its eks.amazonaws.com/role-arn annotation)"
        );
        if !answer.status.is_success() {
            let (code, message) = sts_refusal(&answer);
            let fix = match code.as_str() {
                "ExpiredTokenException" => format!("check the pod's aws-iam-token volume: the token in {token_file} has expired, and the kubelet renews projected tokens"),
                "InvalidIdentityToken" | "IDPRejectedClaim" => "register this cluster's OIDC issuer as an IAM identity provider".to_string(),
                _ => format!("let the trust policy of {role_arn} allow sts:AssumeRoleWithWebIdentity for {account} through this cluster's OIDC provider"),
            };
            return Err(format!(
                "AWS STS AssumeRoleWithWebIdentity for {role_arn} failed: {code}: {}; {fix}",
                said(&message)
            ));
        }
        sts_keys(&answer.body, principal)
    }

    /// An SSO profile's keys: the token `aws sso login` cached
    /// (`~/.aws/sso/cache/<sha1 of the session>.json`), exchanged at the
    /// SSO portal's GetRoleCredentials.
    async fn sso(
        &self,
        client: &reqwest::Client,
        profile: &str,
        session: &str,
        region: &str,
        account_id: &str,
        role_name: &str,
    ) -> Result<Keys, String> {
        let login = format!("run aws sso login --profile {profile}");
        let digest =
            ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, session.as_bytes());
        let name: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        let cache = self
            .env
            .home()
            .map(|h| h.join(".aws/sso/cache").join(format!("{name}.json")))
            .ok_or("no home directory holds the AWS SSO cache")?;
        let text = std::fs::read_to_string(&cache).map_err(|_| {
            format!(
                "the AWS SSO profile {profile} has no cached login ({}); {login}",
                cache.display()
            )
        })?;
        let cached: Option<Value> = serde_json::from_str(&text).ok();
        let token = super::text(&cached, "accessToken").ok_or_else(|| {
            format!(
                "the AWS SSO cache {} holds no accessToken; {login}",
                cache.display()
            )
        })?;
        let expired = super::text(&cached, "expiresAt")
            .and_then(|at| parse_rfc3339(&at))
            .is_some_and(|at| left_until_epoch(at).is_zero());
        if expired {
            return Err(format!(
                "the AWS SSO login of profile {profile} has expired; {login}"
            ));
        }
        let endpoint = self
            .env
            .var("AWS_ENDPOINT_URL_SSO")
            .or_else(|| self.env.var("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| format!("https://portal.sso.{region}.{}", partition_suffix(region)));
        let url = format!(
            "{}/federation/credentials?{}",
            endpoint.trim_end_matches('/'),
            form(&[("role_name", role_name), ("account_id", account_id)])
        );
        let answer = send(
            client.get(&url).header("x-amz-sso_bearer_token", token),
            "the AWS SSO portal",
        )
        .await?;
        let principal =
            format!("the role {role_name} of account {account_id} (the AWS SSO profile {profile})");
        if !answer.status.is_success() {
            let json = answer.json();
            let message = super::text(&json, "message").unwrap_or_else(|| said(&answer.body));
            let fix = if answer.status.as_u16() == 403 {
                format!(
                    "assign the permission set {role_name} in account {account_id} to your user"
                )
            } else {
                login
            };
            return Err(format!(
                "the AWS SSO portal answered {} for {role_name} in account {account_id}: {}; {fix}",
                answer.status,
                said(&message)
            ));
        }
        let role = answer
            .json()
            .and_then(|j| j.get("roleCredentials").cloned());
        let field = |name: &str| {
            role.as_ref()
                .and_then(|r| r.get(name))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let expiration_ms = role
            .as_ref()
            .and_then(|r| r.get("expiration"))
            .and_then(Value::as_f64);
        Ok(Keys {
            access_key_id: field("accessKeyId")
                .ok_or("the AWS SSO portal answered without an accessKeyId")?,
            secret_access_key: field("secretAccessKey")
                .ok_or("the AWS SSO portal answered without a secretAccessKey")?,
            session_token: field("sessionToken"),
            lifetime: expiration_ms.map(|ms| left_until_epoch(ms / 1000.0)),
            principal,
        })
    }

    /// A role profile's keys: `sts:AssumeRole`, signed with its source's.
    async fn assume_role(
        &self,
        keys: &Keys,
        role: &Role<'_>,
        region: &str,
    ) -> Result<Keys, String> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let endpoint = self.sts_endpoint(region);
        let region = self
            .env
            .var("AWS_REGION")
            .or_else(|| self.env.var("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| region.to_string());
        let session = session_name(role.session_name.map(str::to_string));
        let mut pairs = vec![
            ("Action", "AssumeRole"),
            ("Version", "2011-06-15"),
            ("RoleArn", role.role_arn),
            ("RoleSessionName", session.as_str()),
        ];
        if let Some(external_id) = role.external_id {
            pairs.push(("ExternalId", external_id));
        }
        let body = form(&pairs);
        let content_type = "application/x-www-form-urlencoded; charset=utf-8";
        let headers = sign_request(
            keys,
            &region,
            "sts",
            &endpoint,
            &[("content-type", content_type)],
            &body,
        )?;
        let mut request = client.post(&endpoint).body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let answer = send(request, "AWS STS").await?;
        let role_arn = role.role_arn;
        if !answer.status.is_success() {
            let (code, message) = sts_refusal(&answer);
            return Err(format!(
                "AWS STS AssumeRole for {role_arn} (the AWS profile {}) failed: {code}: {}; let the trust policy of {role_arn} allow sts:AssumeRole for {}",
                role.profile,
                said(&message),
                keys.principal
            ));
        }
        let principal = format!("the role {role_arn} (the AWS profile {})", role.profile);
        let mut assumed = sts_keys(&answer.body, principal)?;
        // Not past the keys that asked for them.
        assumed.lifetime = match (assumed.lifetime, keys.lifetime) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(assumed)
    }

    /// STS where the SDKs would reach it: its endpoint variables, else the
    /// regional endpoint of the environment's region or the registry's.
    fn sts_endpoint(&self, region: &str) -> String {
        if let Some(url) = self
            .env
            .var("AWS_ENDPOINT_URL_STS")
            .or_else(|| self.env.var("AWS_ENDPOINT_URL"))
        {
            return url;
        }
        let region = self
            .env
            .var("AWS_REGION")
            .or_else(|| self.env.var("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| region.to_string());
        let suffix = partition_suffix(&region);
        format!("https://sts.{region}.{suffix}/")
    }

    /// EKS Pod Identity's agent or ECS's endpoint, with its authorization token.
    async fn container(&self, client: &reqwest::Client, url: &str) -> Result<Keys, String> {
        let allowed = container_url_allowed(url);
        if !allowed {
            return Err(format!("AWS_CONTAINER_CREDENTIALS_FULL_URI {url} is neither HTTPS nor the EKS Pod Identity agent, ECS or a loopback address, so it is not asked (as the AWS SDKs refuse it)"));
        }
        let mut request = client.get(url);
        let token = match self.env.var("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
            Some(file) => Some(read_file(&file, "the container authorization token")?),
            None => self.env.var("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
        };
        if let Some(token) = &token {
            request = request.header("Authorization", token);
        }
        let answer = send(request, "the container credentials endpoint").await?;
        let principal =
            "the IAM role of the EKS Pod Identity association of the syncer's ServiceAccount"
                .to_string();
        if !answer.status.is_success() {
            return Err(format!(
                "the EKS Pod Identity agent ({url}) answered {}: {}; create a Pod Identity association for the syncer's ServiceAccount (and install the eks-pod-identity-agent add-on)",
                answer.status,
                said(&answer.body)
            ));
        }
        keys_of_json(
            &answer.json(),
            principal,
            "the container credentials endpoint",
        )
    }

    /// The instance's role through IMDSv2; `Ok(None)` when nothing answers.
    async fn instance(
        &self,
        client: &reqwest::Client,
        endpoint: &str,
    ) -> Result<Option<Keys>, String> {
        let base = endpoint.trim_end_matches('/');
        let token = client
            .put(format!("{base}/latest/api/token"))
            .header("X-aws-ec2-metadata-token-ttl-seconds", "21600")
            .timeout(IMDS_TIMEOUT)
            .send()
            .await;
        let token = match token {
            Ok(r) if r.status().is_success() => r.text().await.unwrap_or_default(),
            // Not on EC2, or the hop limit keeps pods out: no identity here.
            _ => return Ok(None),
        };
        let get = |path: String| {
            client
                .get(format!("{base}{path}"))
                .header("X-aws-ec2-metadata-token", token.clone())
        };
        let roles = send(
            get("/latest/meta-data/iam/security-credentials/".into()),
            "the instance metadata endpoint",
        )
        .await?;
        let role = roles
            .body
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        if !roles.status.is_success() || role.is_empty() {
            return Ok(None);
        }
        let answer = send(
            get(format!("/latest/meta-data/iam/security-credentials/{role}")),
            "the instance metadata endpoint",
        )
        .await?;
        if !answer.status.is_success() {
            return Err(format!(
                "the instance metadata endpoint answered {} for the role {role}: {}",
                answer.status,
                said(&answer.body)
            ));
        }
        let principal = format!("the node's instance role {role}");
        keys_of_json(&answer.json(), principal, "the instance metadata endpoint").map(Some)
    }
}

/// A profile's `credential_process`, run through the shell as the SDKs
/// run it: its JSON (`Version` 1) on standard output.
fn process(profile: &str, command: &str) -> Result<Keys, String> {
    let fix = format!("check the credential_process of the AWS profile {profile}");
    let mut shell = std::process::Command::new("sh");
    shell.args(["-c", command]);
    let stdout = super::run(shell, PROCESS_DEADLINE).map_err(|why| {
        format!("the credential_process of the AWS profile {profile} {why}; {fix}")
    })?;
    let json: Option<Value> = serde_json::from_slice(&stdout).ok();
    if json
        .as_ref()
        .and_then(|j| j.get("Version"))
        .and_then(Value::as_u64)
        != Some(1)
    {
        return Err(format!(
            "the credential_process of the AWS profile {profile} printed no JSON of Version 1; {fix}"
        ));
    }
    let mut keys = keys_of_json(
        &json,
        format!("the IAM identity of the AWS profile {profile} (its credential_process)"),
        "the credential_process",
    )?;
    keys.session_token = super::text(&json, "SessionToken");
    Ok(keys)
}

/// `given`, else a session name of this moment (`os-placement-<ms>`).
fn session_name(given: Option<String>) -> String {
    given.unwrap_or_else(|| {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        format!("os-placement-{millis}")
    })
}

/// The code and message of an STS error answer.
fn sts_refusal(answer: &super::Answer) -> (String, String) {
    let code = xml_text(&answer.body, "Code").unwrap_or_else(|| answer.status.to_string());
    let message = xml_text(&answer.body, "Message").unwrap_or_else(|| said(&answer.body));
    (code, message)
}

/// The keys in an `AssumeRole` or `AssumeRoleWithWebIdentity` answer.
fn sts_keys(body: &str, principal: String) -> Result<Keys, String> {
    let field = |tag: &str| xml_text(body, tag);
    Ok(Keys {
        access_key_id: field("AccessKeyId").ok_or("AWS STS answered without an AccessKeyId")?,
        secret_access_key: field("SecretAccessKey")
            .ok_or("AWS STS answered without a SecretAccessKey")?,
        session_token: field("SessionToken"),
        lifetime: field("Expiration")
            .and_then(|e| parse_rfc3339(&e))
            .map(left_until_epoch),
        principal,
    })
}

/// Whether the SDKs would ask this container credentials URL: HTTPS, or
/// HTTP to loopback, ECS's 169.254.170.2 or EKS's 169.254.170.23 / fd00:ec2::23.
fn container_url_allowed(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    match (parsed.scheme(), parsed.host()) {
        ("https", Some(_)) => true,
        ("http", Some(url::Host::Domain(host))) => host.eq_ignore_ascii_case("localhost"),
        ("http", Some(url::Host::Ipv4(ip))) => {
            ip.is_loopback()
                || ip == std::net::Ipv4Addr::new(169, 254, 170, 2)
                || ip == std::net::Ipv4Addr::new(169, 254, 170, 23)
        }
        ("http", Some(url::Host::Ipv6(ip))) => {
            IpAddr::V6(ip).is_loopback()
                || ip == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23)
        }
        _ => false,
    }
}

/// Keys in the JSON the container and instance endpoints answer.
fn keys_of_json(json: &Option<Value>, principal: String, what: &str) -> Result<Keys, String> {
    let field = |name: &str| super::text(json, name);
    Ok(Keys {
        access_key_id: field("AccessKeyId")
            .ok_or_else(|| format!("{what} answered without an AccessKeyId"))?,
        secret_access_key: field("SecretAccessKey")
            .ok_or_else(|| format!("{what} answered without a SecretAccessKey"))?,
        session_token: field("Token"),
        lifetime: field("Expiration")
            .and_then(|e| parse_rfc3339(&e))
            .map(left_until_epoch),
        principal,
    })
}

/// The text of the first `<tag>` element of an AWS query API answer.
fn xml_text(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml.get(start..)?.find(&format!("</{tag}>"))?;
    let text = xml.get(start..end)?.trim();
    Some(
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// The keys of `[name]` in an INI file (the shared credentials file).
fn profile_section(text: &str, name: &str) -> std::collections::HashMap<String, String> {
    let mut inside = false;
    let mut keys = std::collections::HashMap::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = section.trim() == name;
            continue;
        }
        if inside {
            if let Some((key, value)) = line.split_once('=') {
                keys.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
            }
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sts_answers_are_read_by_tag() {
        let ok = "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>s&amp;1</SecretAccessKey></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
        assert_eq!(xml_text(ok, "AccessKeyId").as_deref(), Some("ASIA1"));
        assert_eq!(xml_text(ok, "SecretAccessKey").as_deref(), Some("s&1"));
        assert_eq!(xml_text(ok, "SessionToken"), None);
        assert_eq!(xml_text("<Code>AccessDenied", "Code"), None);
    }

    /// STS in the partition of the pod's region (AWS_REGION, as the SDKs
    /// read it), else of the registry's; an endpoint variable wins.
    #[test]
    fn sts_is_reached_in_the_regions_partition() {
        let endpoint = |vars: &[(&str, &str)], registry_region: &str| {
            Chain::new(Env::of(vars), Err(String::new())).sts_endpoint(registry_region)
        };
        assert_eq!(
            endpoint(&[], "eu-west-1"),
            "https://sts.eu-west-1.amazonaws.com/"
        );
        assert_eq!(
            endpoint(&[("AWS_REGION", "us-iso-east-1")], "us-east-1"),
            "https://sts.us-iso-east-1.c2s.ic.gov/"
        );
        assert_eq!(
            endpoint(&[], "cn-north-1"),
            "https://sts.cn-north-1.amazonaws.com.cn/"
        );
        assert_eq!(
            endpoint(&[], "us-isob-east-1"),
            "https://sts.us-isob-east-1.sc2s.sgov.gov/"
        );
        assert_eq!(
            endpoint(
                &[("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1")],
                "us-east-1"
            ),
            "http://127.0.0.1:1"
        );
    }

    /// The source of profile `profile` with `home` as HOME (no IMDS).
    fn profile_source(home: &std::path::Path, profile: &str) -> Option<Source> {
        let home = home.display().to_string();
        let vars = [
            ("HOME", home.as_str()),
            ("AWS_PROFILE", profile),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ];
        Chain::new(Env::of(&vars), Err(String::new())).source()
    }

    /// aws-config's profile provider: an SSO profile, else static keys
    /// (the credentials file's, then the config file's), else a
    /// `credential_process`; the config file names profiles `[profile X]`.
    #[test]
    fn a_profile_gives_sso_then_keys_then_a_process() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".aws")).unwrap();
        let write = |file: &str, text: &str| {
            std::fs::write(home.path().join(".aws").join(file), text).unwrap();
        };
        let source = |profile: &str| profile_source(home.path(), profile);
        write("config", "[profile p]\ncredential_process = vault p\n[profile q]\naws_access_key_id = A\naws_secret_access_key = B\n[profile s]\nsso_start_url = https://x/start\nsso_region = eu-west-1\nsso_account_id = 1\nsso_role_name = R\ncredential_process = never\n");
        write(
            "credentials",
            "[p]\naws_access_key_id = C\naws_secret_access_key = D\n",
        );
        let credentials = home.path().join(".aws/credentials").display().to_string();
        let config = home.path().join(".aws/config").display().to_string();
        assert_eq!(
            source("p"),
            Some(Source::Profile {
                file: credentials,
                name: "p".into()
            })
        );
        assert_eq!(
            source("q"),
            Some(Source::Profile {
                file: config,
                name: "q".into()
            })
        );
        assert_eq!(
            source("s"),
            Some(Source::Sso {
                profile: "s".into(),
                session: "https://x/start".into(),
                region: "eu-west-1".into(),
                account_id: "1".into(),
                role_name: "R".into()
            })
        );
        write("credentials", "");
        assert_eq!(
            source("p"),
            Some(Source::Process {
                profile: "p".into(),
                command: "vault p".into()
            })
        );
        // Negative: a profile that is not there, or an SSO profile without its region.
        assert_eq!(source("absent"), None);
        write(
            "config",
            "[profile s]\nsso_start_url = https://x/start\nsso_account_id = 1\nsso_role_name = R\n",
        );
        assert_eq!(source("s"), None);
    }

    /// A role profile's source: another profile (followed, a loop cut
    /// after a few links) or a `credential_source`.
    #[test]
    fn a_role_profile_is_assumed_with_its_source() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".aws")).unwrap();
        std::fs::write(
            home.path().join(".aws/config"),
            "[profile role]\nrole_arn = arn:r\nsource_profile = base\nexternal_id = x\n[profile base]\naws_access_key_id = A\naws_secret_access_key = B\n[profile env]\nrole_arn = arn:e\ncredential_source = Environment\n[profile a]\nrole_arn = arn:a\nsource_profile = b\n[profile b]\nrole_arn = arn:b\nsource_profile = a\n[profile odd]\nrole_arn = arn:o\ncredential_source = Elsewhere\n",
        )
        .unwrap();
        let source = |profile: &str| profile_source(home.path(), profile);
        let config = home.path().join(".aws/config").display().to_string();
        assert_eq!(
            source("role"),
            Some(Source::AssumeRole {
                profile: "role".into(),
                role_arn: "arn:r".into(),
                source: Box::new(Source::Profile {
                    file: config,
                    name: "base".into()
                }),
                session_name: None,
                external_id: Some("x".into()),
            })
        );
        assert!(
            matches!(source("env"), Some(Source::AssumeRole { source, .. }) if *source == Source::Environment)
        );
        // Negative: a loop, and a credential_source the SDKs do not know.
        assert_eq!(source("a"), None);
        assert_eq!(source("odd"), None);
    }

    #[test]
    fn a_profile_is_read_from_its_own_section() {
        let file = "[default]\naws_access_key_id = A\n# note\n[ci]\nAWS_ACCESS_KEY_ID=B\naws_secret_access_key = C\n";
        assert_eq!(
            profile_section(file, "ci")
                .get("aws_access_key_id")
                .map(String::as_str),
            Some("B")
        );
        assert_eq!(
            profile_section(file, "default").get("aws_secret_access_key"),
            None
        );
        assert!(profile_section(file, "other").is_empty());
    }

    /// As the SDKs' `validate_full_uri` (aws-config's ecs.rs) allows it.
    #[test]
    fn container_endpoints_are_https_or_the_agents_addresses() {
        assert!(container_url_allowed(
            "http://169.254.170.23/v1/credentials"
        ));
        assert!(container_url_allowed(
            "http://169.254.170.2/v2/credentials/x"
        ));
        assert!(container_url_allowed(
            "http://[fd00:ec2::23]/v1/credentials"
        ));
        assert!(container_url_allowed("http://127.0.0.1:8080/creds"));
        assert!(container_url_allowed("https://creds.corp.example/x"));
        assert!(!container_url_allowed(
            "http://169.254.169.254/latest/meta-data"
        ));
        assert!(!container_url_allowed("http://creds.corp.example/x"));
        assert!(!container_url_allowed("file:///etc/passwd"));
    }

    #[test]
    fn the_chain_takes_the_first_source_configured_and_none_when_none_is() {
        let chain = |vars: &[(&str, &str)]| Chain::new(Env::of(vars), Err(String::new())).source();
        assert_eq!(chain(&[("AWS_EC2_METADATA_DISABLED", "true")]), None);
        assert_eq!(
            chain(&[
                ("AWS_ACCESS_KEY_ID", "A"),
                ("AWS_SECRET_ACCESS_KEY", "B"),
                ("AWS_ROLE_ARN", "r"),
                ("AWS_WEB_IDENTITY_TOKEN_FILE", "/t")
            ]),
            Some(Source::Environment)
        );
        assert_eq!(
            chain(&[
                ("AWS_ROLE_ARN", "r"),
                ("AWS_WEB_IDENTITY_TOKEN_FILE", "/t"),
                (
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    "http://169.254.170.23/v1/credentials"
                )
            ]),
            Some(Source::WebIdentity {
                role_arn: "r".into(),
                token_file: "/t".into()
            })
        );
        assert_eq!(
            chain(&[(
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "/v2/credentials/x"
            )]),
            Some(Source::Container {
                url: "http://169.254.170.2/v2/credentials/x".into()
            })
        );
        // An access key without its secret is no identity.
        assert_eq!(
            chain(&[
                ("AWS_ACCESS_KEY_ID", "A"),
                ("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9")
            ]),
            Some(Source::Instance {
                endpoint: "http://127.0.0.1:9".into()
            })
        );
    }
}
