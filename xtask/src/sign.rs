//! Signing as cosign does it, with the `sigstore` crate that kwctl and
//! policy-server verify with: an ECDSA P-256 key pair in cosign's files
//! (`cosign.key`, the PKCS#8 key encrypted with scrypt and NaCl secretbox
//! under `COSIGN_PASSWORD`; `cosign.pub`, PEM), and a signature of a pushed
//! artifact's manifest digest stored next to it as the `.sig` image
//! (`sha256-<hex>.sig`, one simple-signing layer with the signature in its
//! `dev.cosignproject.cosign/signature` annotation).
//!
//! A new signature replaces the `.sig` image of that digest (cosign appends).

use std::path::{Path, PathBuf};

use sigstore::cosign::constraint::{Constraint, PrivateKeySigner};
use sigstore::cosign::{ClientBuilder, CosignCapabilities, SignatureLayer};
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::SigningScheme;
use sigstore::registry::{Auth, ClientConfig, ClientProtocol, OciReference};

use crate::error::{read, write, Error, Result};
use crate::oci::{parse_reference, registry_auth, runtime, RegistryOptions};

/// The environment variable holding the private key's password, as cosign reads it.
pub const PASSWORD_VARIABLE: &str = "COSIGN_PASSWORD";

/// The scheme of the keys this tool makes and reads (cosign's default).
const SCHEME: SigningScheme = SigningScheme::ECDSA_P256_SHA256_ASN1;

/// The files of a key pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFiles {
    /// `cosign.key`: the encrypted private key.
    pub private: PathBuf,
    /// `cosign.pub`: the public key, PEM.
    pub public: PathBuf,
}

impl KeyFiles {
    /// `cosign.key` and `cosign.pub` in `dir`.
    pub fn in_dir(dir: &Path) -> KeyFiles {
        KeyFiles {
            private: dir.join("cosign.key"),
            public: dir.join("cosign.pub"),
        }
    }
}

/// The password from `COSIGN_PASSWORD` (it may be empty, as with cosign).
pub fn password_from_env() -> Result<String> {
    std::env::var(PASSWORD_VARIABLE).map_err(|_| {
        Error::Signing(format!(
            "{PASSWORD_VARIABLE} is not set: export the password of the private key (cosign reads the same variable)"
        ))
    })
}

fn signing_error(what: &str) -> impl FnOnce(sigstore::errors::SigstoreError) -> Error + '_ {
    move |e| Error::Signing(format!("{what}: {e}"))
}

/// Writes a new ECDSA P-256 key pair; refuses to overwrite either file.
pub fn generate_key_pair(files: &KeyFiles, password: &str) -> Result<()> {
    for path in [&files.private, &files.public] {
        if path.exists() {
            return Err(Error::Signing(format!(
                "{} exists: remove it or choose another KEY_DIR",
                path.display()
            )));
        }
    }
    let signer = SCHEME
        .create_signer()
        .map_err(signing_error("cannot create a key"))?;
    let pair = signer
        .to_sigstore_keypair()
        .map_err(signing_error("cannot export the key"))?;
    let private = pair
        .private_key_to_encrypted_pem(password.as_bytes())
        .map_err(signing_error("cannot encrypt the private key"))?;
    let public = pair
        .public_key_to_pem()
        .map_err(signing_error("cannot export the public key"))?;
    write(&files.private, private.as_bytes())?;
    restrict_to_owner(&files.private)?;
    write(&files.public, public)
}

/// The private key file is readable by its owner only, as cosign writes it.
fn restrict_to_owner(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(Error::io(path))
}

/// Reads `cosign.key` with its password.
pub fn load_private_key(path: &Path, password: &str) -> Result<SigStoreKeyPair> {
    let pem = read(path)?;
    SigStoreKeyPair::from_encrypted_pem(&pem, password.as_bytes()).map_err(|e| {
        Error::Signing(format!(
            "{}: cannot decrypt the private key ({e}): check {PASSWORD_VARIABLE}",
            path.display()
        ))
    })
}

/// A signed artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The manifest digest that was signed.
    pub digest: String,
    /// Where the signature went: `host/path:sha256-<hex>.sig`.
    pub signature: String,
}

fn sigstore_config(reference: &str, options: &RegistryOptions) -> Result<ClientConfig> {
    let image = parse_reference(reference)?;
    let protocol = match crate::oci::client_config(&image, options).protocol {
        oci_client::client::ClientProtocol::HttpsExcept(hosts) => {
            ClientProtocol::HttpsExcept(hosts)
        }
        oci_client::client::ClientProtocol::Http => ClientProtocol::Http,
        oci_client::client::ClientProtocol::Https => ClientProtocol::Https,
    };
    Ok(ClientConfig {
        protocol,
        ..ClientConfig::default()
    })
}

/// Signs the artifact at `reference` (a tag or a digest) by its manifest
/// digest with `key`, and pushes the `.sig` image next to it.
pub fn sign(reference: &str, key: &SigStoreKeyPair, options: &RegistryOptions) -> Result<Signed> {
    let bare = reference.strip_prefix("registry://").unwrap_or(reference);
    let image: OciReference =
        bare.parse()
            .map_err(|e: sigstore::errors::SigstoreError| Error::Reference {
                reference: reference.to_owned(),
                message: e.to_string(),
            })?;
    let signer = key
        .to_sigstore_signer(&SCHEME)
        .map_err(signing_error("the key is not an ECDSA P-256 key"))?;
    let mut client = ClientBuilder::default()
        .with_oci_client_config(sigstore_config(reference, options)?)
        .build()
        .map_err(signing_error("cannot create the registry client"))?;
    let auth = Auth::from(&registry_auth(image.resolve_registry()));
    let failed = |action: &'static str| {
        let reference = image.whole();
        move |e: sigstore::errors::SigstoreError| Error::Registry {
            action,
            reference,
            message: e.to_string(),
        }
    };
    runtime()?.block_on(async {
        let (signature_image, digest) = client
            .triangulate(&image, &auth)
            .await
            .map_err(failed("cannot find the manifest digest of"))?;
        let mut layer = SignatureLayer::new_unsigned(&image, &digest)
            .map_err(signing_error("cannot build the signature payload"))?;
        PrivateKeySigner::new_with_signer(signer)
            .add_constraint(&mut layer)
            .map_err(signing_error("cannot sign"))?;
        client
            .push_signature(None, &auth, &signature_image, vec![layer])
            .await
            .map_err(failed("cannot push the signature of"))?;
        Ok(Signed {
            digest,
            signature: signature_image.whole(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sigstore::cosign::verification_constraint::{PublicKeyVerifier, VerificationConstraint};

    #[test]
    fn key_pair_round_trip_and_no_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let files = KeyFiles::in_dir(dir.path());
        generate_key_pair(&files, "secret").unwrap();
        let private = std::fs::read_to_string(&files.private).unwrap();
        assert!(
            private.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----"),
            "{private}"
        );
        let public = std::fs::read_to_string(&files.public).unwrap();
        assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"), "{public}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&files.private)
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );

        // The private key opens with its password only, and matches the public key.
        let pair = load_private_key(&files.private, "secret").unwrap();
        assert_eq!(pair.public_key_to_pem().unwrap(), public);
        let Err(err) = load_private_key(&files.private, "wrong") else {
            panic!("a wrong password opened the key");
        };
        let err = err.to_string();
        assert!(err.contains(PASSWORD_VARIABLE), "{err}");

        let err = generate_key_pair(&files, "secret").unwrap_err().to_string();
        assert!(err.contains("exists"), "{err}");
    }

    /// The payload signed is cosign's simple signing of the digest, and the
    /// signature verifies with the public key only (sigstore's own verifier).
    #[test]
    fn signature_layer_verifies_with_its_key_only() {
        let image: OciReference = "127.0.0.1:5000/os-placement/policy:v1".parse().unwrap();
        let digest = format!("sha256:{}", "a".repeat(64));
        let pair = SCHEME
            .create_signer()
            .unwrap()
            .to_sigstore_keypair()
            .unwrap();
        let other = SCHEME
            .create_signer()
            .unwrap()
            .to_sigstore_keypair()
            .unwrap();
        let mut layer = SignatureLayer::new_unsigned(&image, &digest).unwrap();
        PrivateKeySigner::new_with_signer(pair.to_sigstore_signer(&SCHEME).unwrap())
            .add_constraint(&mut layer)
            .unwrap();
        let payload: serde_json::Value = serde_json::from_slice(&layer.raw_data).unwrap();
        assert_eq!(
            payload["critical"]["image"]["docker-manifest-digest"],
            digest.as_str()
        );
        assert_eq!(
            payload["critical"]["type"],
            "cosign container image signature"
        );
        let verifies = |pair: &SigStoreKeyPair| {
            PublicKeyVerifier::new(pair.public_key_to_pem().unwrap().as_bytes(), &SCHEME)
                .unwrap()
                .verify(&layer)
                .unwrap()
        };
        assert!(verifies(&pair));
        assert!(!verifies(&other));
    }
}
