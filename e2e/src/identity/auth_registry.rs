//! A real registry (Debian's docker-registry) behind an htpasswd file whose
//! passwords the fake identity services rotate: each token they issue
//! becomes its user's only password at once, and stops working when it
//! expires, as a cloud registry's token does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::tokens::{locked, random_hex};
use crate::error::Error;
use crate::external;
use crate::http::{http, HttpResponse};
use crate::registry::{LocalRegistry, OCI_MANIFEST};

/// The user that pushes the test images.
pub const PUSHER: &str = "pusher";

/// The media type of an OCI image config.
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";

/// A registry asking for Basic credentials. Clones share it; it stops when
/// the last one is dropped.
#[derive(Clone)]
pub struct AuthRegistry {
    inner: Arc<Inner>,
}

struct User {
    line: String,
    password: String,
    expires_at: Option<SystemTime>,
}

struct Inner {
    // Declared first: the registry stops before its htpasswd file goes.
    registry: LocalRegistry,
    htpasswd_bin: PathBuf,
    dir: tempfile::TempDir,
    users: Mutex<BTreeMap<String, User>>,
}

fn setup(message: String) -> Error {
    Error::Setup(format!("htpasswd registry: {message}"))
}

impl AuthRegistry {
    /// Starts a registry whose only user is [`PUSHER`]. `Ok(None)` after a
    /// visible skip when docker-registry or htpasswd (apache2-utils) is not
    /// installed; an error under CI.
    pub fn start() -> Result<Option<AuthRegistry>, Error> {
        let missing = |e: xtask::Error| setup(e.to_string());
        let Some(htpasswd_bin) = external::on_path(
            "htpasswd",
            "install the Debian package apache2-utils (`make deps` does)",
        )
        .map_err(missing)?
        else {
            return Ok(None);
        };
        let dir = tempfile::tempdir().map_err(Error::io("a temporary directory"))?;
        let pusher = random_hex(24);
        let line = htpasswd_line(&htpasswd_bin, PUSHER, &pusher)?;
        let path = dir.path().join("htpasswd");
        std::fs::write(&path, format!("{line}\n"))
            .map_err(Error::io(path.display().to_string()))?;
        let Some(registry) = LocalRegistry::start_with_htpasswd(&path).map_err(missing)? else {
            return Ok(None);
        };
        let users = BTreeMap::from([(
            PUSHER.to_string(),
            User {
                line,
                password: pusher,
                expires_at: None,
            },
        )]);
        let inner = Arc::new(Inner {
            registry,
            htpasswd_bin,
            dir,
            users: Mutex::new(users),
        });
        let weak = Arc::downgrade(&inner);
        std::thread::spawn(move || expire(&weak));
        Ok(Some(AuthRegistry { inner }))
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.inner.registry.port()
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.inner.registry.host()
    }

    /// The password of [`PUSHER`].
    pub fn pusher_password(&self) -> String {
        self.password(PUSHER).unwrap_or_default()
    }

    /// The password `user` has now, if any.
    pub fn password(&self, user: &str) -> Option<String> {
        locked(&self.inner.users)
            .get(user)
            .map(|u| u.password.clone())
    }

    /// Makes `password` the only one of `user` (a new user, or the old
    /// password refused from the next request on); other users keep theirs.
    pub fn set_password(&self, user: &str, password: &str) -> Result<(), Error> {
        self.set(user, password, None)
    }

    /// As [`AuthRegistry::set_password`], and `user` is removed at
    /// `expires_at` unless given another password before.
    pub fn set_password_until(
        &self,
        user: &str,
        password: &str,
        expires_at: SystemTime,
    ) -> Result<(), Error> {
        self.set(user, password, Some(expires_at))
    }

    /// Removes `user`: every password of theirs is refused from now on.
    pub fn remove_user(&self, user: &str) -> Result<(), Error> {
        let mut users = locked(&self.inner.users);
        users.remove(user);
        self.inner.write(&users)
    }

    fn set(&self, user: &str, password: &str, expires_at: Option<SystemTime>) -> Result<(), Error> {
        let line = htpasswd_line(&self.inner.htpasswd_bin, user, password)?;
        let mut users = locked(&self.inner.users);
        users.insert(
            user.to_string(),
            User {
                line,
                password: password.to_string(),
                expires_at,
            },
        );
        self.inner.write(&users)
    }

    /// `Basic <base64(user:password)>`.
    pub fn basic(user: &str, password: &str) -> String {
        let pair = format!("{user}:{password}");
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }

    /// One request as `user`, to 127.0.0.1:PORT.
    pub fn request(
        &self,
        user: &str,
        password: &str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<HttpResponse, Error> {
        let authorization = AuthRegistry::basic(user, password);
        let mut all = vec![("Authorization", authorization.as_str())];
        all.extend_from_slice(headers);
        http(self.port(), method, path, &all, body)
            .map_err(|e| setup(format!("{method} {path}: {e}")))
    }

    /// Pushes, as [`PUSHER`], an image of one platform with no layers to
    /// `repository:tag`; its manifest's digest (`sha256:...`).
    pub fn push_image(
        &self,
        repository: &str,
        tag: &str,
        os: &str,
        architecture: &str,
        os_version: Option<&str>,
    ) -> Result<String, Error> {
        let mut config = json!({
            "os": os,
            "architecture": architecture,
            "rootfs": {"type": "layers", "diff_ids": []},
        });
        if let (Some(version), Some(fields)) = (os_version, config.as_object_mut()) {
            fields.insert("os.version".into(), Value::from(version));
        }
        let config = serde_json::to_vec(&config)?;
        let config_digest = digest(&config);
        self.push_blob(repository, &config, &config_digest)?;
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": config.len()},
            "layers": [],
        }))?;
        let path = format!("/v2/{repository}/manifests/{tag}");
        let answer = self.as_pusher("PUT", &path, &[("Content-Type", OCI_MANIFEST)], &manifest)?;
        expect(&answer, 201, &path)?;
        Ok(answer
            .header("docker-content-digest")
            .map_or_else(|| digest(&manifest), str::to_string))
    }

    /// A monolithic upload: POST for a session, PUT the bytes with their digest.
    fn push_blob(&self, repository: &str, blob: &[u8], digest: &str) -> Result<(), Error> {
        let start = format!("/v2/{repository}/blobs/uploads/");
        let answer = self.as_pusher("POST", &start, &[], b"")?;
        expect(&answer, 202, &start)?;
        let location = answer
            .header("location")
            .ok_or_else(|| setup(format!("POST {start}: no Location")))?;
        // The registry may answer an absolute URL: keep its path and query.
        let location = match location.split_once("://") {
            Some((_, rest)) => rest.find('/').and_then(|at| rest.get(at..)).unwrap_or("/"),
            None => location,
        };
        let separator = if location.contains('?') { '&' } else { '?' };
        let put = format!("{location}{separator}digest={digest}");
        let answer = self.as_pusher(
            "PUT",
            &put,
            &[("Content-Type", "application/octet-stream")],
            blob,
        )?;
        expect(&answer, 201, &put)
    }

    fn as_pusher(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<HttpResponse, Error> {
        self.request(PUSHER, &self.pusher_password(), method, path, headers, body)
    }
}

impl Inner {
    /// Rewrites the whole file atomically (a temporary file renamed over
    /// it), so the registry never reads half of it.
    fn write(&self, users: &BTreeMap<String, User>) -> Result<(), Error> {
        let text: String = users.values().map(|u| format!("{}\n", u.line)).collect();
        let path = self.dir.path().join("htpasswd");
        let temporary = self.dir.path().join("htpasswd.new");
        std::fs::write(&temporary, text).map_err(Error::io(temporary.display().to_string()))?;
        std::fs::rename(&temporary, &path).map_err(Error::io(path.display().to_string()))
    }
}

/// Removes users whose password expired, until the registry is gone.
fn expire(inner: &Weak<Inner>) {
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let now = SystemTime::now();
        let mut users = locked(&inner.users);
        let before = users.len();
        users.retain(|_, u| u.expires_at.is_none_or(|at| now < at));
        if users.len() != before {
            // Best effort: a failed write leaves the old passwords working,
            // which the test then sees.
            let _ = inner.write(&users);
        }
    }
}

/// `user:<bcrypt>` as `htpasswd -Bbn` makes it.
fn htpasswd_line(binary: &Path, user: &str, password: &str) -> Result<String, Error> {
    let output = Command::new(binary)
        .args(["-Bbn", user, password])
        .output()
        .map_err(Error::io(binary.display().to_string()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().next().unwrap_or_default().trim();
    if !output.status.success() || !line.starts_with(&format!("{user}:")) {
        return Err(setup(format!(
            "htpasswd -Bbn {user}: {}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(line.to_string())
}

/// `sha256:<hex>` of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", super::sigv4::hex(&Sha256::digest(bytes)))
}

fn expect(answer: &HttpResponse, status: u16, what: &str) -> Result<(), Error> {
    if answer.status == status {
        return Ok(());
    }
    Err(setup(format!(
        "{what}: HTTP {} (not {status}): {}",
        answer.status,
        String::from_utf8_lossy(&answer.body)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GET of a manifest as `user`, its status.
    fn status(registry: &AuthRegistry, user: &str, password: &str, path: &str) -> u16 {
        registry
            .request(
                user,
                password,
                "GET",
                path,
                &[("Accept", OCI_MANIFEST)],
                b"",
            )
            .unwrap()
            .status
    }

    #[test]
    fn a_new_password_replaces_the_old_one_at_once_and_expires() {
        let Some(registry) = AuthRegistry::start().unwrap() else {
            return;
        };
        let digest = registry
            .push_image("corp/app", "1", "windows", "amd64", Some("10.0.20348.2700"))
            .unwrap();
        assert!(digest.starts_with("sha256:"), "{digest}");
        let path = "/v2/corp/app/manifests/1";
        let anonymous = http(registry.port(), "GET", path, &[], b"").unwrap();
        assert_eq!(anonymous.status, 401);
        assert!(anonymous
            .header("www-authenticate")
            .is_some_and(|c| c.starts_with("Basic ")));

        registry.set_password("AWS", "tok-1-old").unwrap();
        assert_eq!(status(&registry, "AWS", "tok-1-old", path), 200);
        registry.set_password("AWS", "tok-2-new").unwrap();
        assert_eq!(status(&registry, "AWS", "tok-1-old", path), 401);
        assert_eq!(status(&registry, "AWS", "tok-2-new", path), 200);
        // Other users keep theirs.
        assert_eq!(
            status(&registry, PUSHER, &registry.pusher_password(), path),
            200
        );

        let manifest = registry
            .request(
                "AWS",
                "tok-2-new",
                "GET",
                path,
                &[("Accept", OCI_MANIFEST)],
                b"",
            )
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(manifest["config"]["mediaType"], OCI_CONFIG);

        let soon = SystemTime::now() + Duration::from_millis(300);
        registry
            .set_password_until("AWS", "tok-3-brief", soon)
            .unwrap();
        assert_eq!(status(&registry, "AWS", "tok-3-brief", path), 200);
        std::thread::sleep(Duration::from_millis(700));
        assert_eq!(status(&registry, "AWS", "tok-3-brief", path), 401);
        assert_eq!(registry.password("AWS"), None);
    }
}
