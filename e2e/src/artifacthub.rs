//! `artifacthub-pkg.yml` from metadata.yml, with the fields and layout of
//! `kwctl scaffold artifacthub`. Two differences, both to keep the checked-in
//! file reproducible: `createdAt` is given (kwctl writes the current time), and
//! a maintainer without `<email>` is written with a name only (kwctl refuses it).

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use serde_json::{Map, Value};

/// What the package is generated from, besides metadata.yml.
#[derive(Debug, Clone)]
pub struct PackageInputs {
    /// RFC 3339 time of the release.
    pub created_at: String,
    /// Contents of a questions-ui file, if the policy has one.
    pub questions: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Package {
    version: String,
    name: String,
    display_name: String,
    created_at: String,
    description: String,
    license: String,
    #[serde(rename = "homeURL")]
    home_url: String,
    containers_images: Vec<NamedImage>,
    keywords: Vec<String>,
    links: Vec<Link>,
    install: String,
    maintainers: Vec<Maintainer>,
    provider: Provider,
    recommendations: Vec<Recommendation>,
    annotations: Map<String, Value>,
}

/// An admission rule, fields in the order kwctl writes them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
}

#[derive(Serialize)]
struct NamedImage {
    name: String,
    image: String,
}

#[derive(Serialize)]
struct Link {
    name: String,
    url: String,
}

#[derive(Serialize)]
struct Maintainer {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<String>,
}

#[derive(Serialize)]
struct Provider {
    name: String,
}

#[derive(Serialize)]
struct Recommendation {
    url: String,
}

const HEADER: &str = "\
# Kubewarden Artifacthub Package config
#
# Use this config to submit the policy to https://artifacthub.io.
#
# Generated from metadata.yml by `make artifacthub` (os-placement-release
# artifacthub); a test fails when it is out of step with metadata.yml.
";

fn annotation<'a>(metadata: &'a Value, key: &str) -> Result<&'a str> {
    metadata
        .get("annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| anyhow!("metadata.yml: annotations.{key} is required"))
}

/// `name <email>, name2 <email2>` as kwctl reads `io.kubewarden.policy.author`.
fn maintainers(author: &str) -> Result<Vec<Maintainer>> {
    author
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|entry| match entry.split_once('<') {
            Some((name, rest)) => {
                let email = rest
                    .strip_suffix('>')
                    .ok_or_else(|| anyhow!("author {entry:?}: expected `name <email>`"))?;
                Ok(Maintainer {
                    name: name.trim().to_owned(),
                    email: Some(email.trim().to_owned()),
                })
            }
            None => Ok(Maintainer {
                name: entry.to_owned(),
                email: None,
            }),
        })
        .collect()
}

fn strings(i: usize, rule: &Value, field: &str) -> Result<Vec<String>> {
    rule.get(field)
        .and_then(Value::as_array)
        .and_then(|values| {
            values
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| anyhow!("metadata.yml: rules[{i}].{field} must be a list of strings"))
}

fn rule_of(i: usize, rule: &Value) -> Result<Rule> {
    Ok(Rule {
        api_groups: strings(i, rule, "apiGroups")?,
        api_versions: strings(i, rule, "apiVersions")?,
        resources: strings(i, rule, "resources")?,
        operations: strings(i, rule, "operations")?,
    })
}

fn install_text(image: &str) -> String {
    format!(
        "The policy can be obtained using [kwctl](https://docs.kubewarden.io/howtos/install-kwctl):\n\
         ```console\nkwctl pull {image}\n```\n\
         Then, generate the policy manifest and tune it to your liking. For example:\n\
         ```console\nkwctl scaffold manifest -t ClusterAdmissionPolicy registry://{image}\n```\n"
    )
}

/// The `artifacthub-pkg.yml` text for `metadata` (metadata.yml as JSON).
pub fn artifacthub_package(metadata: &Value, inputs: &PackageInputs) -> Result<String> {
    let version = annotation(metadata, "io.kubewarden.policy.version")?;
    let oci_url = annotation(metadata, "io.kubewarden.policy.ociUrl")?;
    let source = annotation(metadata, "io.kubewarden.policy.source")?;
    let image = format!("{oci_url}:v{version}");
    let rules = metadata
        .get("rules")
        .and_then(Value::as_array)
        .context("metadata.yml: rules must be a list")?
        .iter()
        .enumerate()
        .map(|(i, rule)| rule_of(i, rule))
        .collect::<Result<Vec<_>>>()?;
    let mut annotations = Map::new();
    let mutating = metadata.get("mutating").and_then(Value::as_bool);
    let Some(mutating) = mutating else {
        bail!("metadata.yml: mutating is required");
    };
    annotations.insert("kubewarden/mutation".into(), mutating.to_string().into());
    annotations.insert(
        "kubewarden/resources".into(),
        annotation(metadata, "io.artifacthub.resources")?.into(),
    );
    annotations.insert(
        "kubewarden/rules".into(),
        serde_yaml::to_string(&rules)?.into(),
    );
    let context_aware = metadata
        .get("contextAwareResources")
        .and_then(Value::as_array)
        .filter(|r| !r.is_empty());
    if let Some(resources) = context_aware {
        annotations.insert(
            "kubewarden/contextAwareResources".into(),
            serde_yaml::to_string(resources)?.into(),
        );
    }
    if let Some(questions) = &inputs.questions {
        annotations.insert("kubewarden/questions-ui".into(), questions.clone().into());
    }
    let package = Package {
        version: version.to_owned(),
        name: annotation(metadata, "io.kubewarden.policy.title")?.to_owned(),
        display_name: annotation(metadata, "io.artifacthub.displayName")?.to_owned(),
        created_at: inputs.created_at.clone(),
        description: annotation(metadata, "io.kubewarden.policy.description")?.to_owned(),
        license: annotation(metadata, "io.kubewarden.policy.license")?.to_owned(),
        home_url: annotation(metadata, "io.kubewarden.policy.url")?.to_owned(),
        containers_images: vec![NamedImage {
            name: "policy".into(),
            image: image.clone(),
        }],
        keywords: annotation(metadata, "io.artifacthub.keywords")?
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect(),
        links: vec![
            Link {
                name: "policy".into(),
                url: format!("{source}/releases/download/v{version}/policy.wasm"),
            },
            Link {
                name: "source".into(),
                url: source.to_owned(),
            },
        ],
        install: install_text(&image),
        maintainers: maintainers(annotation(metadata, "io.kubewarden.policy.author")?)?,
        provider: Provider {
            name: "kubewarden".into(),
        },
        recommendations: vec![Recommendation {
            url: "https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller".into(),
        }],
        annotations,
    };
    Ok(format!("{HEADER}{}", serde_yaml::to_string(&package)?))
}

/// Checks that `created_at` is an RFC 3339 time, as Artifact Hub wants.
pub fn check_created_at(created_at: &str) -> Result<()> {
    serde_json::from_value::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>(Value::String(
        created_at.to_owned(),
    ))
    .map(|_| ())
    .with_context(|| format!("createdAt {created_at:?} is not an RFC 3339 time"))
}

/// `createdAt` of an existing package file, to keep it when regenerating.
pub fn created_at_of(package_yaml: &str) -> Option<String> {
    let package: serde_yaml::Value = serde_yaml::from_str(package_yaml).ok()?;
    package.get("createdAt")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metadata() -> Value {
        json!({
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}],
            "mutating": true,
            "contextAwareResources": [],
            "annotations": {
                "io.artifacthub.displayName": "P",
                "io.artifacthub.resources": "Pod",
                "io.artifacthub.keywords": "a, b c",
                "io.kubewarden.policy.ociUrl": "ghcr.io/o/p",
                "io.kubewarden.policy.title": "p",
                "io.kubewarden.policy.version": "1.2.3",
                "io.kubewarden.policy.description": "d",
                "io.kubewarden.policy.author": "Ann <ann@example.com>, Team",
                "io.kubewarden.policy.url": "https://example.com/p",
                "io.kubewarden.policy.source": "https://example.com/src",
                "io.kubewarden.policy.license": "Apache-2.0"
            }
        })
    }

    fn inputs() -> PackageInputs {
        PackageInputs {
            created_at: "2026-01-02T03:04:05Z".into(),
            questions: None,
        }
    }

    #[test]
    fn package_fields() {
        let text = artifacthub_package(&metadata(), &inputs()).unwrap();
        let package: Value =
            serde_json::to_value(serde_yaml::from_str::<serde_yaml::Value>(&text).unwrap())
                .unwrap();
        assert_eq!(package["version"], "1.2.3");
        assert_eq!(
            package["containersImages"][0]["image"],
            "ghcr.io/o/p:v1.2.3"
        );
        assert_eq!(package["keywords"], json!(["a", "b c"]));
        assert_eq!(
            package["maintainers"],
            json!([{"name": "Ann", "email": "ann@example.com"}, {"name": "Team"}])
        );
        assert_eq!(package["annotations"]["kubewarden/mutation"], "true");
        let rules: Value = serde_json::to_value(
            serde_yaml::from_str::<serde_yaml::Value>(
                package["annotations"]["kubewarden/rules"].as_str().unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(rules, metadata()["rules"]);
        assert!(package["annotations"]
            .get("kubewarden/contextAwareResources")
            .is_none());
        assert!(text.contains("kwctl pull ghcr.io/o/p:v1.2.3"));
        assert_eq!(
            created_at_of(&text).as_deref(),
            Some("2026-01-02T03:04:05Z")
        );
        assert!(check_created_at("2026-01-02T03:04:05Z").is_ok());
        assert!(check_created_at("yesterday").is_err());
    }

    #[test]
    fn missing_annotation_is_named() {
        let mut m = metadata();
        m["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("io.kubewarden.policy.ociUrl");
        let err = artifacthub_package(&m, &inputs()).unwrap_err().to_string();
        assert!(err.contains("io.kubewarden.policy.ociUrl"), "{err}");
    }
}
