//! The image on disk as an OCI image layout: `oci-layout`, `index.json`
//! naming the image index, and every blob under `blobs/sha256/`. skopeo,
//! crane and containerd read it (`oci:DIR:REF`); [`read_layout`] reads it
//! back for the push, checking every blob against its digest.

use std::path::Path;

use serde_json::{json, Value};

use super::{
    sha256_digest, Blob, CONFIG_MEDIA_TYPE, INDEX_MEDIA_TYPE, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE,
};
use crate::error::{read, write, Error, Result};

/// The annotation naming an image in `index.json`.
pub const REF_NAME_ANNOTATION: &str = "org.opencontainers.image.ref.name";

/// A built image: the index and the blobs it reaches (manifests, configs, layers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The image index.
    pub index: Blob,
    /// Every other blob, each platform's config, layer and manifest in turn.
    pub blobs: Vec<Blob>,
}

impl Layout {
    /// The blob with `digest`, the index included.
    pub fn blob(&self, digest: &str) -> Option<&Blob> {
        std::iter::once(&self.index)
            .chain(&self.blobs)
            .find(|b| b.digest() == digest)
    }
}

fn layout_error(dir: &Path, message: impl std::fmt::Display) -> Error {
    Error::Document {
        what: format!("OCI image layout {}", dir.display()),
        message: message.to_string(),
    }
}

fn blob_path(dir: &Path, digest: &str) -> std::path::PathBuf {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    dir.join("blobs/sha256").join(hex)
}

/// Writes `layout` into `dir`, the index named `ref_name`. A layout already
/// there is replaced; a directory holding anything else is refused.
pub fn write_layout(layout: &Layout, dir: &Path, ref_name: &str) -> Result<()> {
    let marker = dir.join("oci-layout");
    let occupied = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
    if occupied && !marker.is_file() {
        return Err(layout_error(dir, "exists and is not an image layout"));
    }
    if occupied {
        std::fs::remove_dir_all(dir).map_err(Error::io(dir))?;
    }
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).map_err(Error::io(&blobs))?;
    for blob in std::iter::once(&layout.index).chain(&layout.blobs) {
        write(&blob_path(dir, &blob.digest()), &blob.bytes)?;
    }
    let entry = layout
        .index
        .descriptor_with("annotations", json!({ REF_NAME_ANNOTATION: ref_name }));
    let index = json!({"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": [entry]});
    write(
        &dir.join("index.json"),
        serde_json::to_vec_pretty(&index).unwrap_or_default(),
    )?;
    write(&marker, br#"{"imageLayoutVersion":"1.0.0"}"#)
}

/// The blob a descriptor names, checked against its digest, size and media type.
fn read_blob(dir: &Path, descriptor: &Value) -> Result<Blob> {
    let field = |key: &str| {
        descriptor
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let digest = field("digest");
    let media_type = [
        INDEX_MEDIA_TYPE,
        MANIFEST_MEDIA_TYPE,
        CONFIG_MEDIA_TYPE,
        LAYER_MEDIA_TYPE,
    ]
    .into_iter()
    .find(|m| *m == field("mediaType"))
    .ok_or_else(|| {
        layout_error(
            dir,
            format!("{digest}: media type {:?}", field("mediaType")),
        )
    })?;
    let bytes = read(&blob_path(dir, digest))?;
    let size = descriptor.get("size").and_then(Value::as_u64);
    if sha256_digest(&bytes) != digest || size != Some(bytes.len() as u64) {
        return Err(layout_error(
            dir,
            format!("blob {digest} does not match its descriptor"),
        ));
    }
    Ok(Blob { media_type, bytes })
}

fn parse(dir: &Path, blob: &Blob) -> Result<Value> {
    serde_json::from_slice(&blob.bytes).map_err(|e| layout_error(dir, e))
}

/// The descriptors a manifest or index lists under `key`.
fn listed(dir: &Path, document: &Value, key: &str) -> Result<Vec<Value>> {
    document
        .get(key)
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| layout_error(dir, format!("no {key} list")))
}

/// Reads the layout `write_layout` wrote: one image index, its manifests,
/// their configs and layers, every blob digest-checked.
pub fn read_layout(dir: &Path) -> Result<Layout> {
    let top = read(&dir.join("index.json"))?;
    let top: Value = serde_json::from_slice(&top).map_err(|e| layout_error(dir, e))?;
    let [entry] = <[Value; 1]>::try_from(listed(dir, &top, "manifests")?)
        .map_err(|all| layout_error(dir, format!("{} images where one is expected", all.len())))?;
    let index = read_blob(dir, &entry)?;
    if index.media_type != INDEX_MEDIA_TYPE {
        return Err(layout_error(dir, "index.json does not name an image index"));
    }
    let mut blobs = Vec::new();
    for entry in listed(dir, &parse(dir, &index)?, "manifests")? {
        let manifest = read_blob(dir, &entry)?;
        let document = parse(dir, &manifest)?;
        let config = document
            .get("config")
            .ok_or_else(|| layout_error(dir, "a manifest has no config"))?;
        blobs.push(read_blob(dir, config)?);
        for layer in listed(dir, &document, "layers")? {
            blobs.push(read_blob(dir, &layer)?);
        }
        blobs.push(manifest);
    }
    Ok(Layout { index, blobs })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let blob = |media_type, text: &str| Blob {
            media_type,
            bytes: text.as_bytes().to_vec(),
        };
        let config = blob(CONFIG_MEDIA_TYPE, "{}");
        let layer = blob(LAYER_MEDIA_TYPE, "layer");
        let manifest = json!({"config": config.descriptor(), "layers": [layer.descriptor()]});
        let manifest = blob(MANIFEST_MEDIA_TYPE, &manifest.to_string());
        let index = json!({"manifests": [manifest.descriptor()]});
        Layout {
            index: blob(INDEX_MEDIA_TYPE, &index.to_string()),
            blobs: vec![config, layer, manifest],
        }
    }

    #[test]
    fn written_then_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("image");
        write_layout(&layout(), &out, "0.1.0").unwrap();
        assert_eq!(read_layout(&out).unwrap(), layout());
        let top: Value =
            serde_json::from_slice(&std::fs::read(out.join("index.json")).unwrap()).unwrap();
        assert_eq!(
            top["manifests"][0]["annotations"][REF_NAME_ANNOTATION],
            "0.1.0"
        );
        assert_eq!(top["manifests"][0]["digest"], layout().index.digest());
        // Written again over itself: the same layout, no stale blobs.
        std::fs::write(out.join("blobs/sha256/stale"), b"x").unwrap();
        write_layout(&layout(), &out, "0.1.0").unwrap();
        assert!(!out.join("blobs/sha256/stale").exists());
        assert_eq!(
            std::fs::read_dir(out.join("blobs/sha256")).unwrap().count(),
            4
        );
    }

    #[test]
    fn refuses_other_directories_and_tampered_blobs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), b"x").unwrap();
        let err = write_layout(&layout(), dir.path(), "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not an image layout"), "{err}");

        let out = dir.path().join("image");
        write_layout(&layout(), &out, "t").unwrap();
        let layer = layout().blobs[1].digest();
        std::fs::write(blob_path(&out, &layer), b"LAYER").unwrap();
        let err = read_layout(&out).unwrap_err().to_string();
        assert!(
            err.contains(&format!("blob {layer} does not match")),
            "{err}"
        );
        assert!(read_layout(dir.path()).is_err());
    }
}
