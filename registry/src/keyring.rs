//! Pull Secrets read as the kubelet reads them: a `kubernetes.io/dockerconfigjson`
//! or `kubernetes.io/dockercfg` Secret becomes a keyring, and an image is
//! matched against its keys as `pkg/credentialprovider/keyring.go` does
//! (kubernetes/kubernetes): the scheme dropped, `/v1/` and `/v2/` read as
//! the host alone, the host matched label by label with globs, the port
//! exactly, the path as a prefix, the most specific key first, and Docker
//! Hub's own key for images without a registry host.

use std::collections::BTreeMap;

use base64::Engine;
use oci_spec::distribution::Reference;
use os_placement_core::Glob;
use serde::Deserialize;

use crate::distribution::Credentials;

/// The Secret type of a `.dockerconfigjson` (`{"auths": {...}}`).
pub const DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";
/// The Secret type of a legacy `.dockercfg` (the registries at the top level).
pub const DOCKERCFG: &str = "kubernetes.io/dockercfg";

/// The key the kubelet files Docker Hub's default credentials under.
const DEFAULT_REGISTRY_HOST: &str = "index.docker.io";

/// The credentials of one or more pull Secrets, by the key each is filed under.
#[derive(Clone, Default)]
pub struct Keyring {
    /// Keys (`host[:port][/path]`), most specific first, each with its
    /// credentials in the order they were added.
    entries: Vec<(Key, Vec<Credentials>)>,
}

/// A key, split as it is matched: its host's labels as globs, port, path.
#[derive(Clone)]
struct Key {
    text: String,
    labels: Vec<Option<Glob>>,
    port: String,
    path: String,
}

impl Key {
    fn new(text: String) -> Key {
        let (host, port, path) = split(&text);
        let labels = host.split('.').map(|l| Glob::new(l).ok()).collect();
        let (port, path) = (port.to_string(), path.to_string());
        Key {
            text,
            labels,
            port,
            path,
        }
    }

    /// Whether the image's `registry/repository` falls under it
    /// (`URLsMatch`): the same port, as many host labels each matched by
    /// its glob, and its path a prefix of the image's.
    fn matches(&self, repository: &Repository) -> bool {
        let (host, port, path) = split(&repository.0);
        if self.port != port || !path.starts_with(&self.path) {
            return false;
        }
        let mut labels = host.split('.');
        self.labels.iter().all(|glob| match (glob, labels.next()) {
            (Some(glob), Some(label)) => glob.matches(label),
            _ => false,
        }) && labels.next().is_none()
    }
}

/// An image as the kubelet looks it up: `registry/repository`
/// (`docker.io/library/nginx`), read once for every keyring it is matched in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository(String);

impl Repository {
    /// The repository of `image` (a reference as a Pod names it), if it is one.
    pub fn of(image: &str) -> Option<Repository> {
        let reference: Reference = image.parse().ok()?;
        Some(Repository(format!(
            "{}/{}",
            reference.registry(),
            reference.repository()
        )))
    }
}

/// Never a password, whatever prints it.
impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(key, _)| &key.text))
            .finish()
    }
}

/// One registry's entry in a Docker config (`config.go`'s `DockerConfigEntry`).
#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    /// base64 of `user:password`; where present it wins.
    #[serde(default)]
    auth: String,
}

#[derive(Deserialize)]
struct ConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

impl Keyring {
    /// The keyring of one Secret of `secret_type` holding `data` (the
    /// Secret's decoded data), its credentials said to come from `origin`
    /// ("the pull Secret team-a/regcred"). A Secret of another type, or
    /// without its key, gives an empty keyring, as the kubelet skips it.
    pub fn from_secret(
        secret_type: &str,
        data: &BTreeMap<String, Vec<u8>>,
        origin: &str,
    ) -> Result<Keyring, String> {
        let mut keyring = Keyring::default();
        match secret_type {
            DOCKER_CONFIG_JSON => {
                if let Some(bytes) = data.get(".dockerconfigjson").filter(|b| !b.is_empty()) {
                    let config: ConfigJson = serde_json::from_slice(bytes).map_err(|e| {
                        format!("its .dockerconfigjson is not a Docker config: {e}")
                    })?;
                    keyring.add(config.auths, origin)?;
                }
            }
            DOCKERCFG => {
                if let Some(bytes) = data.get(".dockercfg").filter(|b| !b.is_empty()) {
                    let config: BTreeMap<String, Entry> = serde_json::from_slice(bytes)
                        .map_err(|e| format!("its .dockercfg is not a Docker config: {e}"))?;
                    keyring.add(config, origin)?;
                }
            }
            _ => {}
        }
        Ok(keyring)
    }

    /// Adds every entry of a Docker config, keyed as `keyring.go`'s `Add` does.
    fn add(&mut self, config: BTreeMap<String, Entry>, origin: &str) -> Result<(), String> {
        for (location, entry) in config {
            let (user, password) = if entry.auth.is_empty() {
                (entry.username, entry.password)
            } else {
                decode_auth(&entry.auth)
                    .map_err(|why| format!("the auth of its entry {location:?} {why}"))?
            };
            let Some(key) = key_of(&location) else {
                continue;
            };
            let credentials = Credentials {
                user,
                password,
                origin: origin.to_string(),
            };
            match self.entries.iter_mut().find(|(k, _)| k.text == key) {
                Some((_, all)) => all.push(credentials),
                None => self.entries.push((Key::new(key), vec![credentials])),
            }
        }
        // Reverse order: `quay.io/team` before `quay.io`.
        self.entries.sort_by(|a, b| b.0.text.cmp(&a.0.text));
        Ok(())
    }

    /// Whether it holds no credentials.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The credentials for `repository`, most specific key first; none
    /// when no key matches.
    pub fn lookup(&self, repository: &Repository) -> Vec<Credentials> {
        let found: Vec<Credentials> = self
            .entries
            .iter()
            .filter(|(key, _)| key.matches(repository))
            .flat_map(|(_, all)| all.iter().cloned())
            .collect();
        if !found.is_empty() {
            return found;
        }
        if is_default_registry_match(&repository.0) {
            if let Some((_, all)) = self
                .entries
                .iter()
                .find(|(k, _)| k.text == DEFAULT_REGISTRY_HOST)
            {
                return all.clone();
            }
        }
        Vec::new()
    }
}

/// The key a Docker config's location is filed under: no scheme, a path
/// starting `/v1/` or `/v2/` read without them, `None` when it names no host.
fn key_of(location: &str) -> Option<String> {
    let rest = location
        .strip_prefix("https://")
        .or_else(|| location.strip_prefix("http://"))
        .unwrap_or(location);
    // As Go's url.Parse splits it: the host ends at the path, query or fragment.
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (host, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    if host.is_empty() {
        return None;
    }
    let path = match path.get(..4) {
        Some("/v1/" | "/v2/") => path.get(3..).unwrap_or_default(),
        _ => path,
    };
    Some(if path.is_empty() || path == "/" {
        host.to_string()
    } else {
        format!("{host}{path}")
    })
}

/// `user:password` from an entry's `auth` (padded or not, as `config.go` reads it).
fn decode_auth(auth: &str) -> Result<(String, String), String> {
    let trimmed = auth.trim();
    let decoded = if trimmed.ends_with('=') {
        base64::engine::general_purpose::STANDARD.decode(trimmed)
    } else {
        base64::engine::general_purpose::STANDARD_NO_PAD.decode(trimmed)
    }
    .map_err(|_| "is not base64".to_string())?;
    let text = String::from_utf8(decoded).map_err(|_| "is not text".to_string())?;
    text.split_once(':')
        .map(|(user, password)| (user.to_string(), password.to_string()))
        .ok_or_else(|| "must be formatted as base64(username:password)".to_string())
}

/// `host`, `port` and `path` of a scheme-less `host[:port][/path]`.
fn split(text: &str) -> (&str, &str, &str) {
    let (authority, path) = match text.find('/') {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let (host, port) = crate::host_pattern::split_host_port(authority);
    (host, port.unwrap_or(""), path)
}

/// An image without a registry host is Docker Hub's (`isDefaultRegistryMatch`).
fn is_default_registry_match(repository: &str) -> bool {
    let mut parts = repository.splitn(2, '/');
    let first = parts.next().unwrap_or_default();
    if first.is_empty() {
        return false;
    }
    match parts.next() {
        None => true,
        Some(_) => first == "docker.io" || !first.contains(['.', ':']),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keyring(auths: serde_json::Value) -> Keyring {
        let data = BTreeMap::from([(
            ".dockerconfigjson".to_string(),
            json!({ "auths": auths }).to_string().into_bytes(),
        )]);
        Keyring::from_secret(DOCKER_CONFIG_JSON, &data, "the pull Secret a/regcred").unwrap()
    }

    fn lookup(keyring: &Keyring, image: &str) -> Vec<Credentials> {
        keyring.lookup(&Repository::of(image).unwrap())
    }

    fn users(keyring: &Keyring, image: &str) -> Vec<String> {
        lookup(keyring, image).into_iter().map(|c| c.user).collect()
    }

    fn entry(user: &str) -> serde_json::Value {
        json!({"username": user, "password": format!("{user}-secret")})
    }

    // Cases from pkg/credentialprovider/keyring_test.go and config_test.go.

    #[test]
    fn keys_drop_the_scheme_and_the_api_version() {
        assert_eq!(key_of("https://quay.io/v1/").as_deref(), Some("quay.io"));
        assert_eq!(key_of("http://quay.io/v2/").as_deref(), Some("quay.io"));
        assert_eq!(key_of("quay.io").as_deref(), Some("quay.io"));
        assert_eq!(key_of("quay.io/team/").as_deref(), Some("quay.io/team/"));
        assert_eq!(
            key_of("https://quay.io/v2/team").as_deref(),
            Some("quay.io/team")
        );
        assert_eq!(key_of("quay.io:443").as_deref(), Some("quay.io:443"));
        assert_eq!(
            key_of("registry.corp:5000/a/b").as_deref(),
            Some("registry.corp:5000/a/b")
        );
        assert_eq!(key_of("").as_deref(), None);
    }

    #[test]
    fn the_most_specific_key_comes_first() {
        let ring = keyring(json!({
            "quay.io": entry("any"),
            "quay.io/team": entry("team"),
            "https://quay.io/team/app": entry("app"),
        }));
        assert_eq!(users(&ring, "quay.io/team/app:1"), ["app", "team", "any"]);
        assert_eq!(users(&ring, "quay.io/team/other"), ["team", "any"]);
        assert_eq!(users(&ring, "quay.io/else/x"), ["any"]);
        // Negative: another host, a host with one more label.
        assert!(users(&ring, "gcr.io/team/app").is_empty());
        assert!(users(&ring, "eu.quay.io/team/app").is_empty());
    }

    #[test]
    fn host_labels_match_globs_and_ports_match_exactly() {
        let ring = keyring(json!({
            "*.registry.corp": entry("glob"),
            "registry.corp:5000": entry("port"),
        }));
        assert_eq!(users(&ring, "eu.registry.corp/app"), ["glob"]);
        assert_eq!(users(&ring, "registry.corp:5000/app"), ["port"]);
        // Negative: a glob is one label; the port must be the same.
        assert!(users(&ring, "a.b.registry.corp/app").is_empty());
        assert!(users(&ring, "registry.corp/app").is_empty());
        assert!(users(&ring, "registry.corp:5001/app").is_empty());
        assert!(users(&ring, "eu.registry.corp:443/app").is_empty());
    }

    #[test]
    fn docker_hub_images_use_the_default_key() {
        let ring = keyring(json!({"https://index.docker.io/v1/": entry("hub")}));
        assert_eq!(users(&ring, "nginx"), ["hub"]);
        assert_eq!(users(&ring, "corp/app:1"), ["hub"]);
        assert_eq!(users(&ring, "docker.io/corp/app:1"), ["hub"]);
        // Negative: an image naming another registry.
        assert!(users(&ring, "quay.io/corp/app").is_empty());
        assert!(users(&ring, "localhost:5000/app").is_empty());
    }

    #[test]
    fn auth_wins_over_user_and_password() {
        let auth = base64::engine::general_purpose::STANDARD.encode("robot:s3cret:x");
        let ring = keyring(json!({"quay.io": {"username": "u", "password": "p", "auth": auth}}));
        let found = lookup(&ring, "quay.io/a/b");
        assert_eq!(found[0].user, "robot");
        assert_eq!(found[0].password, "s3cret:x");
        assert_eq!(found[0].origin, "the pull Secret a/regcred");
        // Unpadded base64, as config.go accepts.
        let unpadded = base64::engine::general_purpose::STANDARD_NO_PAD.encode("ab:c");
        assert_eq!(decode_auth(&unpadded).unwrap(), ("ab".into(), "c".into()));
        // Negative: no colon, not base64.
        let bad = base64::engine::general_purpose::STANDARD.encode("nocolon");
        assert!(decode_auth(&bad).is_err());
        assert!(decode_auth("%%%").is_err());
    }

    #[test]
    fn a_dockercfg_secret_is_read_and_other_types_are_skipped() {
        let data = BTreeMap::from([(
            ".dockercfg".to_string(),
            json!({"registry.corp": entry("legacy")})
                .to_string()
                .into_bytes(),
        )]);
        let ring = Keyring::from_secret(DOCKERCFG, &data, "s").unwrap();
        assert_eq!(users(&ring, "registry.corp/app"), ["legacy"]);
        // Negative: an Opaque Secret, or the key under the other type.
        assert!(Keyring::from_secret("Opaque", &data, "s")
            .unwrap()
            .is_empty());
        assert!(Keyring::from_secret(DOCKER_CONFIG_JSON, &data, "s")
            .unwrap()
            .is_empty());
        let broken = BTreeMap::from([(".dockercfg".to_string(), b"{".to_vec())]);
        let why = Keyring::from_secret(DOCKERCFG, &broken, "s").unwrap_err();
        assert!(why.contains(".dockercfg"), "{why}");
    }

    #[test]
    fn no_password_is_printed() {
        let ring = keyring(json!({"quay.io": entry("robot")}));
        let shown = format!("{ring:?} {:?}", lookup(&ring, "quay.io/a"));
        assert!(!shown.contains("robot-secret"), "{shown}");
        assert!(shown.contains("quay.io"));
    }
}
