//! Pushes an image layout to a registry: the blobs each platform needs
//! (skipping those the registry holds), each platform's manifest by digest,
//! then the index under the tag. The bytes are sent as the layout holds them,
//! so the registry's digests are the layout's.

use std::path::Path;

use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};

use super::{read_layout, Blob, Layout, MANIFEST_MEDIA_TYPE};
use crate::error::{Error, Result};
use crate::oci::{
    client_config, parse_reference, registry_auth, registry_error, runtime, RegistryOptions,
};

/// A pushed image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedImage {
    /// `registry://host/path:tag@sha256:...`
    pub reference: String,
    /// The digest of the index, as the registry reports it.
    pub digest: String,
}

/// Pushes the image layout in `dir` to `reference` (a tag).
pub fn push(dir: &Path, reference: &str, options: &RegistryOptions) -> Result<PushedImage> {
    let layout = read_layout(dir)?;
    let image = parse_reference(reference)?;
    if image.digest().is_some() {
        return Err(Error::Usage(format!(
            "{reference}: push to a tag, not a digest"
        )));
    }
    let client = Client::new(client_config(&image, options));
    let auth = registry_auth(image.resolve_registry());
    let digest = runtime()?.block_on(push_layout(&client, &image, &auth, &layout))?;
    Ok(PushedImage {
        reference: format!("registry://{}@{digest}", image.whole()),
        digest,
    })
}

fn content_type(blob: &Blob) -> Result<http::HeaderValue> {
    http::HeaderValue::from_str(blob.media_type).map_err(|e| Error::Document {
        what: blob.media_type.to_owned(),
        message: e.to_string(),
    })
}

async fn push_layout(
    client: &Client,
    image: &Reference,
    auth: &RegistryAuth,
    layout: &Layout,
) -> Result<String> {
    let failed = |action| registry_error(action, image);
    client
        .auth(image, auth, RegistryOperation::Push)
        .await
        .map_err(failed("cannot log in to push to"))?;
    for blob in &layout.blobs {
        let digest = blob.digest();
        if blob.media_type == MANIFEST_MEDIA_TYPE {
            let by_digest = Reference::with_digest(
                image.registry().to_owned(),
                image.repository().to_owned(),
                digest,
            );
            client
                .push_manifest_raw(&by_digest, blob.bytes.clone(), content_type(blob)?)
                .await
                .map_err(failed("cannot push a platform manifest to"))?;
        } else if !client
            .blob_exists(image, &digest)
            .await
            .map_err(failed("cannot push to"))?
        {
            client
                .push_blob(image, blob.bytes.clone(), &digest)
                .await
                .map_err(failed("cannot push a blob to"))?;
        }
    }
    client
        .push_manifest_raw(
            image,
            layout.index.bytes.clone(),
            content_type(&layout.index)?,
        )
        .await
        .map_err(failed("cannot push the index to"))?;
    let served = client
        .fetch_manifest_digest(image, auth)
        .await
        .map_err(failed("pushed, but cannot read back the digest of"))?;
    if served != layout.index.digest() {
        return Err(Error::Registry {
            action: "pushed, but another index is served at",
            reference: image.whole(),
            message: format!("{served}, not {}", layout.index.digest()),
        });
    }
    Ok(served)
}
