//! The SBOM as SPDX 2.3 validators accept it. cargo-sbom writes the module's
//! crates from Cargo.lock, with versions and licences, but two things the
//! SPDX spec (and `pyspdxtools`) refuse: a cargo source string
//! (`registry+https://…crates.io-index`) as `downloadLocation`, and no
//! `DESCRIBES` relationship from the document to its package. Both are put
//! right here; everything else is cargo-sbom's.

use serde_json::{json, Value};

use crate::error::{Error, Result};

const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";

fn document_error(message: impl Into<String>) -> Error {
    Error::Document {
        what: "SBOM".to_owned(),
        message: message.into(),
    }
}

/// Where a package comes from, as an SPDX download location.
fn download_location(package: &Value) -> String {
    let field = |key: &str| package.get(key).and_then(Value::as_str);
    let name = field("name").unwrap_or_default();
    let version = field("versionInfo").unwrap_or_default();
    match field("downloadLocation") {
        Some(CRATES_IO) => format!("https://crates.io/api/v1/crates/{name}/{version}/download"),
        Some(location) if location.starts_with("registry+") || location.starts_with("path+") => {
            "NOASSERTION".to_owned()
        }
        Some(location) => location.to_owned(),
        None => "NOASSERTION".to_owned(),
    }
}

/// cargo-sbom's SPDX document, made valid: download locations as URLs and
/// the document describing its own package (the one it is named after).
pub fn normalise(mut document: Value) -> Result<Value> {
    let name = document
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| document_error("the document has no name"))?
        .to_owned();
    let packages = document
        .get_mut("packages")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| document_error("the document has no packages"))?;
    for package in packages.iter_mut() {
        let location = Value::String(download_location(package));
        if let Some(fields) = package.as_object_mut() {
            fields.insert("downloadLocation".to_owned(), location);
        }
    }
    let described = packages
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name.as_str()))
        .and_then(|p| p.get("SPDXID").and_then(Value::as_str))
        .ok_or_else(|| document_error(format!("no package named {name}")))?
        .to_owned();
    let relationships = document
        .get_mut("relationships")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| document_error("the document has no relationships"))?;
    let describes = json!({"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES", "relatedSpdxElement": described});
    if !relationships.contains(&describes) {
        relationships.insert(0, describes);
    }
    Ok(document)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_become_urls_and_the_document_describes_its_package() {
        let raw = json!({
            "name": "p", "SPDXID": "SPDXRef-DOCUMENT",
            "packages": [
                {"SPDXID": "SPDXRef-Package-p-1.0.0", "name": "p", "versionInfo": "1.0.0"},
                {"SPDXID": "SPDXRef-Package-serde-1.0.1", "name": "serde", "versionInfo": "1.0.1", "downloadLocation": CRATES_IO},
                {"SPDXID": "SPDXRef-Package-x-0.1.0", "name": "x", "versionInfo": "0.1.0", "downloadLocation": "https://example.com/x.tar.gz"}
            ],
            "relationships": []
        });
        let fixed = normalise(raw).unwrap();
        assert_eq!(fixed["packages"][0]["downloadLocation"], "NOASSERTION");
        assert_eq!(
            fixed["packages"][1]["downloadLocation"],
            "https://crates.io/api/v1/crates/serde/1.0.1/download"
        );
        assert_eq!(
            fixed["packages"][2]["downloadLocation"],
            "https://example.com/x.tar.gz"
        );
        assert_eq!(
            fixed["relationships"][0]["relatedSpdxElement"],
            "SPDXRef-Package-p-1.0.0"
        );
        // Idempotent.
        assert_eq!(normalise(fixed.clone()).unwrap(), fixed);
        assert!(normalise(json!({"name": "q", "packages": [], "relationships": []})).is_err());
    }
}
