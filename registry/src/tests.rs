//! Lookups against registries on 127.0.0.1 that answer as each test says
//! (`os_placement_e2e::faults::registry`): hosts refused before any
//! connection, redirects to where they must not go, credentials that stay
//! with their registry, and bodies over the limits.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use clap::Parser;
use os_placement_e2e::faults::http::Request;
use os_placement_e2e::faults::registry::{Answer, Fault, FaultRegistry, Scripted};
use serde_json::json;

use super::*;

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    registry: RegistryArgs,
}

fn resolver(flags: &[&str]) -> Resolver {
    let args = ["test", "--registry-timeout", "2s", "--retries", "0"];
    let args = args.iter().chain(flags).copied();
    Resolver::new(&Flags::try_parse_from(args).unwrap().registry)
}

fn resolve(resolver: &Resolver, image: &str) -> ImageFacts {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(resolver.resolve(image))
}

fn failure(facts: ImageFacts) -> String {
    match facts {
        ImageFacts::LookupFailed(message) => message,
        other => panic!("not a failure: {other:?}"),
    }
}

const CONFIG_DIGEST: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000001";

/// A single-image manifest whose config is `CONFIG_DIGEST`.
fn image_manifest() -> Answer {
    Answer::ok(
        "application/vnd.oci.image.manifest.v1+json",
        json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
               "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                          "digest": CONFIG_DIGEST, "size": 2}, "layers": []})
        .to_string()
        .into_bytes(),
    )
}

fn linux_arm64() -> Answer {
    Answer::ok(
        "application/octet-stream",
        br#"{"os":"linux","architecture":"arm64","rootfs":{"type":"layers"}}"#.to_vec(),
    )
}

fn basic(request: &Request) -> bool {
    // "user:secret" in base64.
    request.header("authorization") == Some("Basic dXNlcjpzZWNyZXQ=")
}

#[test]
fn a_loopback_registry_is_refused_before_any_connection_unless_allowed() {
    let registry = FaultRegistry::start(Fault::Healthy).unwrap();
    let image = registry.image();
    let message = failure(resolve(&resolver(&[]), &image));
    assert!(
        message.starts_with(&format!(
            "{image} was not looked up: {} is a loopback address",
            registry.host()
        )) && message.contains(&format!("add --allow-registry {}", registry.host())),
        "{message}"
    );
    // Named by --insecure-registry, it is allowed; deny wins over it.
    let insecure = ["--insecure-registry", &registry.host()];
    let facts = resolve(&resolver(&insecure), &image);
    assert!(
        matches!(&facts, ImageFacts::Platforms(p) if p[0].os == "windows"),
        "{facts:?}"
    );
    let denied = [insecure[0], insecure[1], "--deny-registry", "127.0.0.1:*"];
    let message = failure(resolve(&resolver(&denied), &image));
    assert!(
        message.contains("matches --deny-registry 127.0.0.1:*"),
        "{message}"
    );
    // An allow list leaves out every other host, without asking DNS.
    let only = ["--allow-registry", "registry.corp.example"];
    let message = failure(resolve(&resolver(&only), "ghcr.io/corp/app:1"));
    assert!(
        message.contains("add --allow-registry ghcr.io"),
        "{message}"
    );
}

#[test]
fn refused_hosts_see_no_connection() {
    let server = Scripted::start(|_| image_manifest()).unwrap();
    let image = format!("{}/corp/app:1", server.host());
    failure(resolve(&resolver(&[]), &image));
    let denied = [
        "--insecure-registry",
        &server.host(),
        "--deny-registry",
        &server.host(),
    ];
    failure(resolve(&resolver(&denied), &image));
    assert_eq!(server.connections(), 0);
}

#[test]
fn redirects_to_the_metadata_endpoint_or_loopback_are_not_followed() {
    let elsewhere = Scripted::start(|_| linux_arm64()).unwrap();
    let local_name = format!("http://localhost:{}/v2/x", elsewhere.port());
    let registry = Scripted::start(move |request| {
        if request.path.ends_with("/manifests/metadata") {
            Answer::redirect("http://169.254.169.254/latest/meta-data/iam/")
        } else {
            Answer::redirect(&local_name)
        }
    })
    .unwrap();
    let flags = ["--insecure-registry", &registry.host()];
    let message = failure(resolve(
        &resolver(&flags),
        &format!("{}/corp/app:metadata", registry.host()),
    ));
    assert!(
        message.contains("169.254.169.254 is a link-local address"),
        "{message}"
    );
    // A name that resolves to loopback is refused on connecting.
    let message = failure(resolve(
        &resolver(&flags),
        &format!("{}/corp/app:local", registry.host()),
    ));
    assert!(
        message.contains("localhost resolves to") && message.contains("loopback"),
        "{message}"
    );
    assert_eq!(elsewhere.connections(), 0);
    assert_eq!(registry.seen().len(), 2);
}

#[test]
fn credentials_stay_with_their_registry_across_redirects() {
    let blobs = Scripted::start(|_| linux_arm64()).unwrap();
    let blob_url = format!("http://{}/blob", blobs.host());
    let registry = Scripted::start(move |request| match request.path.as_str() {
        p if p.contains("/blobs/") => Answer::redirect(&blob_url),
        _ if !basic(request) => Answer::challenge("Basic realm=\"registry\""),
        _ => image_manifest(),
    })
    .unwrap();
    let host = registry.host();
    let flags = [
        "--insecure-registry",
        &host,
        "--insecure-registry",
        &blobs.host(),
    ];
    let resolver = resolver(&flags).with_credentials(credentials_for(&host));
    let facts = resolve(&resolver, &format!("{host}/corp/app:1"));
    assert!(
        matches!(&facts, ImageFacts::Platforms(p) if p[0].architecture.as_deref() == Some("arm64")),
        "{facts:?}"
    );
    // The registry was asked with them after its challenge; the host it
    // redirected to (another port) never saw them.
    assert!(registry.seen().iter().any(basic));
    assert_eq!(blobs.seen().len(), 1);
    assert_eq!(blobs.seen()[0].header("authorization"), None);
}

/// `user`/`secret` for the registry `owner`, none for any other.
fn credentials_for(owner: &str) -> impl Fn(&str) -> Option<Credentials> + Send + Sync + 'static {
    let owner = owner.to_owned();
    move |registry| {
        (registry == owner).then(|| Credentials::docker_config("user".into(), "secret".into()))
    }
}

/// A registry whose token service is `realm`, taking the token `t`.
fn bearer_registry(realm: String) -> Scripted {
    Scripted::start(move |request| {
        if request.header("authorization") == Some("Bearer t") {
            Answer::json(
                200,
                &json!({"schemaVersion": 2, "manifests": [
                {"digest": CONFIG_DIGEST, "platform": {"os": "linux", "architecture": "amd64"}}]}),
            )
        } else {
            Answer::challenge(&format!("Bearer realm=\"{realm}\",service=\"registry\""))
        }
    })
    .unwrap()
}

#[test]
fn a_token_service_gets_credentials_only_on_the_registry_host() {
    let tokens = Scripted::start(|_| Answer::json(200, &json!({"token": "t"}))).unwrap();
    for (realm_host, sent) in [("127.0.0.1", true), ("localhost", false)] {
        let realm = format!("http://{realm_host}:{}/token", tokens.port());
        let registry = bearer_registry(realm);
        let host = registry.host();
        let flags = [
            "--insecure-registry",
            &host,
            "--allow-registry",
            "localhost:*",
            "--allow-registry",
            &tokens.host(),
        ];
        let resolver = resolver(&flags).with_credentials(credentials_for(&host));
        let facts = resolve(&resolver, &format!("{host}/corp/app:1"));
        assert!(
            matches!(facts, ImageFacts::Platforms(_)),
            "{realm_host}: {facts:?}"
        );
        let asked = tokens.seen().pop().unwrap();
        assert_eq!(basic(&asked), sent, "{realm_host}: {:?}", asked.headers);
        assert_eq!(asked.param("scope"), Some("repository:corp/app:pull"));
        assert_eq!(asked.param("service"), Some("registry"));
    }
}

#[test]
fn bodies_over_their_limit_are_refused_announced_or_not() {
    let index = |bytes: usize| {
        let mut text = json!({"schemaVersion": 2, "manifests": [
            {"digest": CONFIG_DIGEST, "platform": {"os": "windows", "architecture": "amd64"}}],
            "annotations": {"pad": ""}})
        .to_string();
        let pad = bytes.saturating_sub(text.len());
        text = text.replace("\"pad\":\"\"", &format!("\"pad\":\"{}\"", "x".repeat(pad)));
        text.into_bytes()
    };
    let registry = Scripted::start(move |request| {
        let size = if request.path.contains("big") {
            MANIFEST_LIMIT + 1
        } else {
            MANIFEST_LIMIT
        };
        let mut answer = Answer::ok("application/vnd.oci.image.index.v1+json", index(size));
        answer.chunked = request.path.contains("chunked");
        answer
    })
    .unwrap();
    let flags = ["--insecure-registry", &registry.host()];
    let resolver = resolver(&flags);
    for tag in ["fits", "fits-chunked"] {
        let facts = resolve(&resolver, &format!("{}/corp/app:{tag}", registry.host()));
        assert!(
            matches!(&facts, ImageFacts::Platforms(p) if p.len() == 1),
            "{tag}: {facts:?}"
        );
    }
    for tag in ["big", "big-chunked"] {
        let message = failure(resolve(
            &resolver,
            &format!("{}/corp/app:{tag}", registry.host()),
        ));
        assert!(
            message.contains("the manifest is larger than 4096 KiB"),
            "{tag}: {message}"
        );
    }
}

#[test]
fn a_token_answer_over_its_limit_is_refused() {
    let tokens = Scripted::start(|_| {
        Answer::json(
            200,
            &json!({"token": "x".repeat(distribution::TOKEN_LIMIT)}),
        )
    })
    .unwrap();
    let registry = bearer_registry(format!("http://{}/token", tokens.host()));
    let flags = [
        "--insecure-registry",
        &registry.host(),
        "--insecure-registry",
        &tokens.host(),
    ];
    let message = failure(resolve(
        &resolver(&flags),
        &format!("{}/corp/app:1", registry.host()),
    ));
    assert!(
        message.contains("the token answer is larger than 1024 KiB"),
        "{message}"
    );
}

#[test]
fn repeated_platforms_are_kept_once() {
    let linux = Platform {
        os: "linux".into(),
        os_version: None,
        architecture: Some("amd64".into()),
    };
    let windows = Platform {
        os: "windows".into(),
        os_version: Some("10.0.20348.1".into()),
        architecture: Some("amd64".into()),
    };
    let many = vec![linux.clone(); 5000]
        .into_iter()
        .chain([windows.clone(), linux.clone()])
        .collect();
    assert_eq!(distinct(many), [linux, windows]);
    // A manifest reads as its distinct platforms, or its config digest.
    let index = json!({"manifests": [
        {"platform": {"os": "linux", "architecture": "amd64"}},
        {"platform": {"os": "linux", "architecture": "amd64"}},
        {"platform": {"os": "windows", "architecture": "amd64", "os.version": "10.0.20348.1"}}]});
    let read = |value: serde_json::Value| read_manifest(serde_json::from_value(value).unwrap());
    let Read::Index(platforms) = read(index).unwrap() else {
        panic!()
    };
    assert_eq!(platforms.len(), 2);
    let image = json!({"config": {"digest": CONFIG_DIGEST}, "layers": []});
    assert_eq!(read(image).unwrap(), Read::Image(CONFIG_DIGEST.into()));
    assert!(read(json!({"layers": []})).is_err());
}

#[test]
fn pauses_grow_and_are_bounded() {
    assert_eq!(pause_before(1), Duration::from_millis(500));
    assert_eq!(pause_before(2), Duration::from_secs(1));
    assert_eq!(pause_before(30), Duration::from_secs(8));
}

#[test]
fn docker_hub_references_resolve_to_its_registry_host() {
    assert_eq!(
        registry_of("nginx:1.27").as_deref(),
        Some("index.docker.io")
    );
    assert_eq!(
        registry_of("127.0.0.1:5000/corp/app:1").as_deref(),
        Some("127.0.0.1:5000")
    );
    assert_eq!(registry_of("Not A Reference"), None);
}

#[test]
fn a_registry_that_does_not_answer_in_time_is_said_so() {
    let slow = Scripted::start(|_| {
        std::thread::sleep(Duration::from_secs(4));
        image_manifest()
    })
    .unwrap();
    let flags = ["--insecure-registry", &slow.host()];
    let started = Instant::now();
    let message = failure(resolve(
        &resolver(&flags),
        &format!("{}/corp/app:1", slow.host()),
    ));
    assert_eq!(message, "no answer within 2s");
    assert!(started.elapsed() < Duration::from_secs(4));
}
