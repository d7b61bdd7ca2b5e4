//! The providers' own rules: which hosts each serves, when a token is
//! renewed, and what a service account token says.

#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn each_cloud_serves_its_registry_hosts_only() {
    assert_eq!(
        Cloud::of("123456789012.dkr.ecr.us-east-1.amazonaws.com"),
        Some(Cloud::Aws)
    );
    assert_eq!(
        Cloud::of("123456789012.dkr.ecr.us-east-1.amazonaws.com:5000"),
        Some(Cloud::Aws)
    );
    assert_eq!(Cloud::of("europe-west4-docker.pkg.dev"), Some(Cloud::Gcp));
    assert_eq!(Cloud::of("gcr.io"), Some(Cloud::Gcp));
    assert_eq!(Cloud::of("eu.gcr.io"), Some(Cloud::Gcp));
    assert_eq!(Cloud::of("osplacement.azurecr.io"), Some(Cloud::Azure));
    assert_eq!(Cloud::of("contoso.azurecr.cn"), Some(Cloud::Azure));
    // Neither look-alikes nor other registries.
    assert_eq!(Cloud::of("public.ecr.aws"), None);
    assert_eq!(Cloud::of("docker.pkg.dev"), None);
    assert_eq!(Cloud::of("gcr.io.attacker.example"), None);
    assert_eq!(Cloud::of("a.b.gcr.io"), None);
    assert_eq!(Cloud::of("azurecr.io"), None);
    assert_eq!(Cloud::of("x.azurecr.io.attacker.example"), None);
    assert_eq!(Cloud::of("ghcr.io"), None);
}

fn credentials(password: &str) -> Credentials {
    Credentials {
        user: "u".into(),
        password: password.into(),
        origin: "a test".into(),
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_token_is_kept_for_half_its_lifetime_then_renewed() {
    let cache = TokenCache::default();
    let issued = std::sync::atomic::AtomicUsize::new(0);
    let fetch = || async {
        let n = issued.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok((
            credentials(&format!("t{n}")),
            String::new(),
            Duration::from_secs(10),
        ))
    };
    assert_eq!(
        cache.get("r", fetch).await.unwrap().credentials.password,
        "t0"
    );
    tokio::time::advance(Duration::from_secs(4)).await;
    assert_eq!(
        cache.get("r", fetch).await.unwrap().credentials.password,
        "t0"
    );
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(
        cache.get("r", fetch).await.unwrap().credentials.password,
        "t1"
    );
    // Another scope has its own token; a forgotten one is asked for again.
    assert_eq!(
        cache
            .get("other", fetch)
            .await
            .unwrap()
            .credentials
            .password,
        "t2"
    );
    cache.forget("r").await;
    assert_eq!(
        cache.get("r", fetch).await.unwrap().credentials.password,
        "t3"
    );
    // A failure is not kept.
    let failing = || async { Err::<(Credentials, String, Duration), _>("refused".to_string()) };
    cache.forget("r").await;
    assert_eq!(
        cache.get("r", failing).await.err().as_deref(),
        Some("refused")
    );
    assert_eq!(
        cache.get("r", fetch).await.unwrap().credentials.password,
        "t4"
    );
}

#[test]
fn a_service_account_token_names_its_service_account() {
    use base64::Engine;
    let claims = br#"{"iss":"https://oidc.eks.example","sub":"system:serviceaccount:os-placement:os-placement-facts-sync"}"#;
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims);
    let token = format!("eyJhbGciOiJSUzI1NiJ9.{payload}.c2lnbmF0dXJl");
    assert_eq!(
        service_account_of(&token).as_deref(),
        Some("os-placement/os-placement-facts-sync")
    );
    assert_eq!(service_account_of("not-a-jwt"), None);
    let other =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"sub":"user@example"}"#);
    assert_eq!(service_account_of(&format!("a.{other}.c")), None);
}

#[test]
fn providers_words_are_one_bounded_line() {
    assert_eq!(said("  a\n  b\tc "), "a b c");
    assert_eq!(said(""), "no message");
    assert_eq!(said(&"x".repeat(1000)).len(), 300);
}

#[test]
fn forms_are_url_encoded() {
    assert_eq!(form(&[("a", "b c"), ("d", "e&f=")]), "a=b+c&d=e%26f%3D");
}
