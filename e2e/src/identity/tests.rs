//! The fakes checked on their own, through the same small HTTP client as
//! the registry tests: what they accept, refuse, issue and forward.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::Value;

use super::sigv4;
use super::*;
use crate::faults::http::Request;
use crate::http::{http, HttpResponse};
use crate::registry::OCI_MANIFEST;

const ROLE: &str = "arn:aws:iam::123456789012:role/os-placement-facts-sync";
const MANIFEST: &str = "/v2/corp/app/manifests/1";

fn registry_with_image() -> Option<AuthRegistry> {
    let registry = AuthRegistry::start().unwrap()?;
    registry
        .push_image("corp/app", "1", "windows", "amd64", Some("10.0.20348.2700"))
        .unwrap();
    Some(registry)
}

fn manifest_status(registry: &AuthRegistry, user: &str, password: &str) -> u16 {
    registry
        .request(
            user,
            password,
            "GET",
            MANIFEST,
            &[("Accept", OCI_MANIFEST)],
            b"",
        )
        .unwrap()
        .status
}

fn xml(body: &[u8], tag: &str) -> String {
    let text = String::from_utf8_lossy(body);
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let start = text.find(&open).unwrap() + open.len();
    let end = text[start..].find(&close).unwrap() + start;
    text[start..end].to_string()
}

fn token_file(dir: &tempfile::TempDir, content: &str) -> std::path::PathBuf {
    let path = dir.path().join("token");
    std::fs::write(&path, content).unwrap();
    path
}

fn assume_role(sts: &FakeSts, token: &str) -> HttpResponse {
    let body = format!(
        "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn={}&RoleSessionName=s1&WebIdentityToken={token}",
        sigv4::uri_encode(ROLE)
    );
    let headers = [("Content-Type", "application/x-www-form-urlencoded")];
    http(sts.port(), "POST", "/", &headers, body.as_bytes()).unwrap()
}

/// GetAuthorizationToken for `account`, signed with `keys` for `region`;
/// `tamper` changes the request after signing.
fn get_token(
    ecr: &FakeEcr,
    keys: &AwsKeys,
    region: &str,
    account: &str,
    tamper: impl FnOnce(&mut Request),
) -> HttpResponse {
    let mut request = Request {
        method: "POST".into(),
        path: "/".into(),
        query: Vec::new(),
        headers: vec![
            ("host".into(), ecr.host()),
            ("content-type".into(), "application/x-amz-json-1.1".into()),
            ("x-amz-target".into(), ecr::TARGET.into()),
        ],
        body: format!("{{\"registryIds\":[\"{account}\"]}}").into_bytes(),
    };
    if let Some(token) = &keys.session_token {
        request
            .headers
            .push(("x-amz-security-token".into(), token.clone()));
    }
    let now = chrono::DateTime::<chrono::Utc>::from(SystemTime::now())
        .format("%Y%m%dT%H%M%SZ")
        .to_string();
    sigv4::sign(
        &mut request,
        &keys.access_key_id,
        &keys.secret_access_key,
        (region, "ecr"),
        &now,
    );
    tamper(&mut request);
    // The client names the host itself, as 127.0.0.1:PORT: what was signed.
    let headers: Vec<(&str, &str)> = request
        .headers
        .iter()
        .filter(|(n, _)| n != "host")
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    http(ecr.port(), "POST", "/", &headers, &request.body).unwrap()
}

fn ecr_password(answer: &HttpResponse) -> String {
    let json = answer.json().unwrap();
    let data = &json["authorizationData"][0];
    assert!(data["expiresAt"].is_f64(), "{json}");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(data["authorizationToken"].as_str().unwrap())
        .unwrap();
    let decoded = String::from_utf8(decoded).unwrap();
    decoded.strip_prefix("AWS:").unwrap().to_string()
}

#[test]
fn sts_keys_signed_right_get_an_ecr_token_that_opens_the_registry() {
    let Some(registry) = registry_with_image() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = token_file(&dir, "eyJhbGciOi.projected.token\n");
    let keys = KeyRing::new();
    let sts = FakeSts::start(&keys, ROLE, &file).unwrap();
    let ecr = FakeEcr::start(
        &keys,
        &[EcrRegistry::new("123456789012", "us-east-1", &registry)],
    )
    .unwrap();

    let refused = assume_role(&sts, "another.token");
    assert_eq!(refused.status, 400);
    assert_eq!(xml(&refused.body, "Code"), "InvalidIdentityToken");
    let answer = assume_role(&sts, "eyJhbGciOi.projected.token");
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let id = xml(&answer.body, "AccessKeyId");
    let issued = keys.find(&id).unwrap();
    assert_eq!(
        xml(&answer.body, "SessionToken"),
        issued.session_token.clone().unwrap()
    );
    assert_eq!(
        issued.principal,
        "arn:aws:sts::123456789012:assumed-role/os-placement-facts-sync/s1"
    );
    assert_eq!(sts.issued()[0].token, id);
    assert!(xml(&answer.body, "Expiration").ends_with('Z'));

    let first = get_token(&ecr, &issued, "us-east-1", "123456789012", |_| {});
    assert_eq!(
        first.status,
        200,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    assert_eq!(
        first.json().unwrap()["authorizationData"][0]["proxyEndpoint"],
        "https://123456789012.dkr.ecr.us-east-1.amazonaws.com"
    );
    let first = ecr_password(&first);
    assert_eq!(manifest_status(&registry, ECR_USER, &first), 200);
    let second = ecr_password(&get_token(
        &ecr,
        &issued,
        "us-east-1",
        "123456789012",
        |_| {},
    ));
    assert_eq!(manifest_status(&registry, ECR_USER, &first), 401);
    assert_eq!(manifest_status(&registry, ECR_USER, &second), 200);
    assert!(renewed_in_time(&ecr.issued()));

    let tampered = get_token(&ecr, &issued, "us-east-1", "123456789012", |r| {
        r.body = b"{\"registryIds\":[\"210987654321\"]}".to_vec();
    });
    assert_eq!(tampered.status, 403);
    assert_eq!(
        tampered.header("x-amzn-errortype"),
        Some("InvalidSignatureException")
    );
    assert_eq!(tampered.json().unwrap()["message"], ecr::SIGNATURE_MISMATCH);
    let no_session = get_token(&ecr, &issued, "us-east-1", "123456789012", |r| {
        r.headers.retain(|(n, _)| n != "x-amz-security-token");
    });
    assert_eq!(no_session.status, 403);
    let elsewhere = get_token(&ecr, &issued, "us-west-2", "123456789012", |_| {});
    assert_eq!(
        elsewhere.json().unwrap()["__type"],
        "InvalidParameterException"
    );
    let stranger = keys.add_static("999999999999", "someone");
    let mut unknown = stranger.clone();
    unknown.access_key_id = "AKIAUNKNOWN".into();
    let unknown = get_token(&ecr, &unknown, "us-east-1", "123456789012", |_| {});
    assert_eq!(
        unknown.json().unwrap()["__type"],
        "UnrecognizedClientException"
    );

    ecr.set_failure(Some(EcrFailure::AccessDenied));
    let denied = get_token(&ecr, &issued, "us-east-1", "123456789012", |_| {});
    assert_eq!(denied.status, 400);
    assert_eq!(
        denied.header("x-amzn-errortype"),
        Some("AccessDeniedException")
    );
    let message = denied.json().unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.starts_with("User: arn:aws:sts::123456789012:assumed-role/os-placement-facts-sync/s1 is not authorized to perform: ecr:GetAuthorizationToken"), "{message}");
    ecr.set_failure(Some(EcrFailure::RegistryRefuses));
    let refused = ecr_password(&get_token(
        &ecr,
        &issued,
        "us-east-1",
        "123456789012",
        |_| {},
    ));
    assert_eq!(manifest_status(&registry, ECR_USER, &refused), 401);
    assert_eq!(manifest_status(&registry, ECR_USER, &second), 401);

    sts.set_failure(Some(StsFailure::AccessDenied));
    let denied = assume_role(&sts, "eyJhbGciOi.projected.token");
    assert_eq!(denied.status, 403);
    assert_eq!(xml(&denied.body, "Code"), "AccessDenied");
    assert_eq!(xml(&denied.body, "Type"), "Sender");
    assert_eq!(sts.seen().len(), 3);
}

#[test]
fn the_pod_identity_agent_wants_the_token_of_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = token_file(&dir, "eyJ.pod.identity");
    let keys = KeyRing::new();
    let agent = FakePodIdentity::start(&keys, ROLE, &file).unwrap();
    let get = |headers: &[(&str, &str)]| {
        http(agent.port(), "GET", "/v1/credentials", headers, b"").unwrap()
    };
    assert_eq!(get(&[]).status, 400);
    assert_eq!(get(&[("Authorization", "eyJ.other")]).status, 400);
    let answer = get(&[("Authorization", "eyJ.pod.identity")]);
    assert_eq!(answer.status, 200);
    let json = answer.json().unwrap();
    assert_eq!(json["AccountId"], "123456789012");
    let id = json["AccessKeyId"].as_str().unwrap();
    assert_eq!(
        keys.find(id).unwrap().session_token.as_deref(),
        json["Token"].as_str()
    );
    assert!(json["Expiration"].as_str().unwrap().ends_with('Z'));
    agent.set_failure(Some(PodIdentityFailure::AccessDenied));
    let denied = get(&[("Authorization", "eyJ.pod.identity")]);
    assert_eq!(denied.status, 403);
    assert!(String::from_utf8_lossy(&denied.body).contains("(AccessDeniedException)"));
}

#[test]
fn imds_answers_a_session_token_holder_only() {
    let keys = KeyRing::new();
    let imds = FakeImds::start(&keys, "arn:aws:iam::123456789012:role/eks-node").unwrap();
    let base = "/latest/meta-data/iam/security-credentials/";
    assert_eq!(
        http(imds.port(), "GET", base, &[], b"").unwrap().status,
        401
    );
    let ttl = [("X-aws-ec2-metadata-token-ttl-seconds", "21600")];
    let token = http(imds.port(), "PUT", "/latest/api/token", &ttl, b"").unwrap();
    let token = String::from_utf8(token.body).unwrap();
    let with = [("X-aws-ec2-metadata-token", token.as_str())];
    let role = http(imds.port(), "GET", base, &with, b"").unwrap();
    assert_eq!(String::from_utf8_lossy(&role.body), "eks-node");
    let keys_answer = http(imds.port(), "GET", &format!("{base}eks-node"), &with, b"").unwrap();
    let json = keys_answer.json().unwrap();
    assert_eq!(json["Code"], "Success");
    assert!(keys.find(json["AccessKeyId"].as_str().unwrap()).is_some());
    imds.set_failure(Some(ImdsFailure::NoRole));
    assert_eq!(
        http(imds.port(), "GET", base, &with, b"").unwrap().status,
        404
    );
}

#[test]
fn the_metadata_server_wants_its_header_and_sets_the_password() {
    let Some(registry) = registry_with_image() else {
        return;
    };
    let gce = FakeGce::start(&registry).unwrap();
    let bare = http(gce.port(), "GET", gcp::TOKEN_PATH, &[], b"").unwrap();
    assert_eq!(bare.status, 403);
    let flavor = [("Metadata-Flavor", "Google")];
    let answer = http(gce.port(), "GET", gcp::TOKEN_PATH, &flavor, b"").unwrap();
    assert_eq!(answer.header("metadata-flavor"), Some("Google"));
    let json = answer.json().unwrap();
    assert_eq!(json["token_type"], "Bearer");
    assert_eq!(json["expires_in"], 3599);
    let token = json["access_token"].as_str().unwrap();
    assert_eq!(manifest_status(&registry, GCP_USER, token), 200);
    gce.set_failure(Some(GceFailure::Forbidden));
    let denied = http(gce.port(), "GET", gcp::TOKEN_PATH, &flavor, b"").unwrap();
    assert_eq!(denied.status, 403);
    assert!(String::from_utf8_lossy(&denied.body).contains("iam.serviceAccounts.getAccessToken"));
}

#[test]
fn entra_then_the_acr_exchange_and_the_registry_through_the_front() {
    let Some(registry) = registry_with_image() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = token_file(&dir, "eyJ.federated");
    let tenant = "11111111-2222-3333-4444-555555555555";
    let client = "66666666-7777-8888-9999-000000000000";
    let entra = FakeEntra::start(tenant, client, &file).unwrap();
    let acr = AcrFront::start(&registry, &entra, tenant, "osplacement.azurecr.io").unwrap();
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let ask_entra = |assertion: &str| {
        let body = format!(
            "grant_type=client_credentials&client_id={client}&client_assertion_type={}&client_assertion={assertion}&scope={}",
            sigv4::uri_encode(azure::JWT_BEARER),
            sigv4::uri_encode(azure::ARM_SCOPE)
        );
        let path = format!("/{tenant}/oauth2/v2.0/token");
        http(entra.port(), "POST", &path, &form, body.as_bytes()).unwrap()
    };
    let refused = ask_entra("eyJ.other");
    assert_eq!(refused.status, 400);
    assert_eq!(refused.json().unwrap()["error_codes"][0], 70021);
    let answer = ask_entra("eyJ.federated").json().unwrap();
    assert_eq!(answer["token_type"], "Bearer");
    let aad = answer["access_token"].as_str().unwrap().to_string();

    let exchange = |access_token: &str| {
        let body = format!(
            "grant_type=access_token&service=osplacement.azurecr.io&tenant={tenant}&access_token={access_token}"
        );
        http(
            acr.port(),
            "POST",
            "/oauth2/exchange",
            &form,
            body.as_bytes(),
        )
        .unwrap()
    };
    assert_eq!(exchange("tok-forged").status, 401);
    let refresh = exchange(&aad).json().unwrap();
    let refresh = refresh["refresh_token"].as_str().unwrap().to_string();
    assert_eq!(
        registry.password(ACR_USER).as_deref(),
        Some(refresh.as_str())
    );

    // Through the front: the challenge, the manifest and its headers pass.
    let anonymous = http(acr.port(), "GET", MANIFEST, &[], b"").unwrap();
    assert_eq!(anonymous.status, 401);
    assert!(anonymous
        .header("www-authenticate")
        .unwrap()
        .starts_with("Basic realm="));
    let basic = AuthRegistry::basic(ACR_USER, &refresh);
    let headers = [("Authorization", basic.as_str()), ("Accept", OCI_MANIFEST)];
    let manifest = http(acr.port(), "GET", MANIFEST, &headers, b"").unwrap();
    assert_eq!(manifest.status, 200);
    assert_eq!(manifest.header("content-type"), Some(OCI_MANIFEST));
    let digest = manifest
        .header("docker-content-digest")
        .unwrap()
        .to_string();
    let json: Value = manifest.json().unwrap();
    assert_eq!(json["schemaVersion"], 2);
    let head = http(acr.port(), "HEAD", MANIFEST, &headers, b"").unwrap();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("docker-content-digest"), Some(digest.as_str()));
    assert_eq!(
        head.header("content-length"),
        Some(manifest.body.len().to_string().as_str())
    );
    let tags = http(
        acr.port(),
        "GET",
        "/v2/corp/app/tags/list?n=10",
        &headers,
        b"",
    )
    .unwrap();
    assert_eq!(tags.json().unwrap()["tags"][0], "1");
    let seen = acr.seen();
    assert_eq!(seen.last().unwrap().param("n"), Some("10"));
    assert!(seen
        .iter()
        .any(|r| r.header("authorization") == Some(basic.as_str())));

    entra.set_failure(Some(EntraFailure::AssertionExpired));
    let expired = ask_entra("eyJ.federated").json().unwrap();
    assert_eq!(expired["error"], "invalid_client");
    assert!(expired["error_description"]
        .as_str()
        .unwrap()
        .starts_with("AADSTS700024: Client assertion is not within its valid time range."));
    acr.set_failure(Some(AcrFailure::ExchangeRefused));
    assert_eq!(exchange(&aad).status, 401);
}

#[test]
fn an_expired_entra_token_is_refused_at_the_exchange() {
    let Some(registry) = registry_with_image() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = token_file(&dir, "eyJ.federated");
    let entra = FakeEntra::start("t", "c", &file).unwrap();
    entra.set_lifetime(Duration::from_millis(200));
    let acr = AcrFront::start(&registry, &entra, "t", "osplacement.azurecr.io").unwrap();
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let body = format!(
        "grant_type=client_credentials&client_id=c&client_assertion_type={}&client_assertion=eyJ.federated&scope={}",
        sigv4::uri_encode(azure::JWT_BEARER),
        sigv4::uri_encode(azure::ARM_SCOPE)
    );
    let answer = http(
        entra.port(),
        "POST",
        "/t/oauth2/v2.0/token",
        &form,
        body.as_bytes(),
    )
    .unwrap();
    let aad = answer.json().unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    std::thread::sleep(Duration::from_millis(300));
    let body = format!(
        "grant_type=access_token&service=osplacement.azurecr.io&tenant=t&access_token={aad}"
    );
    let exchange = http(
        acr.port(),
        "POST",
        "/oauth2/exchange",
        &form,
        body.as_bytes(),
    )
    .unwrap();
    assert_eq!(exchange.status, 401);
}

#[test]
fn the_makefile_puts_every_cloud_host_on_loopback() {
    let makefile = std::fs::read_to_string(crate::repo_root().join("Makefile")).unwrap();
    let line = makefile
        .lines()
        .find(|l| l.starts_with("CLOUD_TEST_HOSTS"))
        .unwrap();
    for host in CLOUD_HOSTS {
        assert!(
            line.split_whitespace().any(|w| w == host),
            "{host} not in {line}"
        );
    }
}

#[test]
fn the_cloud_names_reach_a_server_on_loopback() {
    if !cloud_hosts_ready().unwrap() {
        return;
    }
    let keys = KeyRing::new();
    let imds = FakeImds::start(&keys, ROLE).unwrap();
    for host in CLOUD_HOSTS {
        std::net::TcpStream::connect((host, imds.port())).unwrap();
    }
}
