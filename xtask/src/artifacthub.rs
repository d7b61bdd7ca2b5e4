//! `artifacthub-pkg.yml` from metadata.yml, with the fields, order and layout
//! of `kwctl scaffold artifacthub`, but for one difference that keeps the
//! checked-in file reproducible: `createdAt` is given (kwctl writes the
//! current time). Like kwctl, every maintainer needs `Name <email>`
//! (Artifact Hub refuses a maintainer without an email).

use serde_json::Value;

use crate::error::{Error, Result};
use crate::yaml::{to_text, Node};

/// What the package is generated from, besides metadata.yml.
#[derive(Debug, Clone)]
pub struct PackageInputs {
    /// RFC 3339 time of the release.
    pub created_at: String,
    /// Contents of the questions-ui file, if the policy has one.
    pub questions: Option<String>,
}

const HEADER: &str = "\
# Kubewarden Artifacthub Package config
#
# Use this config to submit the policy to https://artifacthub.io.
#
# Generated from metadata.yml and questions-ui.yml by `make artifacthub`
# (`cargo xtask artifacthub`); a test fails when it is out of step with them.
";

/// The fields of metadata.yml the package is made of.
struct Facts<'a> {
    metadata: &'a Value,
    version: &'a str,
    image: String,
    source: &'a str,
}

impl<'a> Facts<'a> {
    fn of(metadata: &'a Value) -> Result<Facts<'a>> {
        let version = annotation(metadata, "io.kubewarden.policy.version")?;
        let oci_url = annotation(metadata, "io.kubewarden.policy.ociUrl")?;
        Ok(Facts {
            metadata,
            version,
            image: format!("{oci_url}:v{version}"),
            source: annotation(metadata, "io.kubewarden.policy.source")?,
        })
    }

    fn annotation(&self, key: &str) -> Result<Node> {
        annotation(self.metadata, key).map(Node::text)
    }
}

/// A non-empty annotation of metadata.yml, trimmed.
fn annotation<'a>(metadata: &'a Value, key: &str) -> Result<&'a str> {
    metadata
        .get("annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| Error::Metadata(format!("annotations.{key} is required")))
}

/// `Name <email>, Name2 <email2>` as kwctl reads `io.kubewarden.policy.author`.
pub fn maintainers(author: &str) -> Result<Vec<(String, String)>> {
    author
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|entry| {
            let wrong = || {
                Error::Metadata(format!(
                    "io.kubewarden.policy.author: {entry:?} must be `Name <email>` (Artifact Hub needs an email for every maintainer)"
                ))
            };
            let (name, rest) = entry.split_once('<').ok_or_else(wrong)?;
            let email = rest.strip_suffix('>').map(str::trim).ok_or_else(wrong)?;
            if name.trim().is_empty() || !email.contains('@') {
                return Err(wrong());
            }
            Ok((name.trim().to_owned(), email.to_owned()))
        })
        .collect()
}

/// A rule of metadata.yml, fields in the order kwctl writes them.
fn rule_node(i: usize, rule: &Value) -> Result<Node> {
    let strings = |field: &str| -> Result<Node> {
        let values = rule
            .get(field)
            .and_then(Value::as_array)
            .filter(|v| v.iter().all(Value::is_string));
        values
            .map(|v| Node::from(&Value::Array(v.clone())))
            .ok_or_else(|| Error::Metadata(format!("rules[{i}].{field} must be a list of strings")))
    };
    Ok(Node::map([
        ("apiGroups", strings("apiGroups")?),
        ("apiVersions", strings("apiVersions")?),
        ("resources", strings("resources")?),
        ("operations", strings("operations")?),
    ]))
}

/// The `annotations` of the package: what the Kubewarden UI reads, sorted by key.
fn package_annotations(facts: &Facts, questions: Option<&str>) -> Result<Node> {
    let metadata = facts.metadata;
    let rules = metadata
        .get("rules")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::Metadata("rules must be a list".to_owned()))?
        .iter()
        .enumerate()
        .map(|(i, rule)| rule_node(i, rule))
        .collect::<Result<Vec<_>>>()?;
    let mutating = metadata
        .get("mutating")
        .and_then(Value::as_bool)
        .ok_or_else(|| Error::Metadata("mutating: true or false is required".to_owned()))?;
    let mut entries = Vec::new();
    let context_aware = metadata
        .get("contextAwareResources")
        .and_then(Value::as_array)
        .filter(|r| !r.is_empty());
    if let Some(resources) = context_aware {
        let text = to_text(&Node::from(&Value::Array(resources.clone())))?;
        entries.push((
            "kubewarden/contextAwareResources".to_owned(),
            Node::text(text),
        ));
    }
    entries.push((
        "kubewarden/mutation".to_owned(),
        Node::text(mutating.to_string()),
    ));
    if let Some(questions) = questions {
        entries.push(("kubewarden/questions-ui".to_owned(), Node::text(questions)));
    }
    entries.push((
        "kubewarden/resources".to_owned(),
        facts.annotation("io.artifacthub.resources")?,
    ));
    entries.push((
        "kubewarden/rules".to_owned(),
        Node::text(to_text(&Node::List(rules))?),
    ));
    Ok(Node::Map(entries))
}

fn install_text(image: &str) -> String {
    format!(
        "The policy can be obtained using [kwctl](https://docs.kubewarden.io/howtos/install-kwctl):\n\
         ```console\nkwctl pull {image}\n```\n\
         Then, generate the policy manifest and tune it to your liking. For example:\n\
         ```console\nkwctl scaffold manifest -t ClusterAdmissionPolicy registry://{image}\n```\n"
    )
}

fn keywords(facts: &Facts) -> Result<Node> {
    let keywords = annotation(facts.metadata, "io.artifacthub.keywords")?
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(Node::text)
        .collect();
    Ok(Node::List(keywords))
}

fn links(facts: &Facts) -> Node {
    let link =
        |name: &str, url: String| Node::map([("name", Node::text(name)), ("url", Node::text(url))]);
    Node::List(vec![
        link(
            "policy",
            format!(
                "{}/releases/download/v{}/policy.wasm",
                facts.source, facts.version
            ),
        ),
        link("source", facts.source.to_owned()),
    ])
}

fn maintainer_nodes(facts: &Facts) -> Result<Node> {
    let author = annotation(facts.metadata, "io.kubewarden.policy.author")?;
    Ok(Node::List(
        maintainers(author)?
            .into_iter()
            .map(|(name, email)| {
                Node::map([("name", Node::text(name)), ("email", Node::text(email))])
            })
            .collect(),
    ))
}

/// The `artifacthub-pkg.yml` text for `metadata` (metadata.yml as JSON).
pub fn artifacthub_package(metadata: &Value, inputs: &PackageInputs) -> Result<String> {
    let facts = Facts::of(metadata)?;
    let image = Node::map([
        ("name", Node::text("policy")),
        ("image", Node::text(&facts.image)),
    ]);
    let recommendation = Node::map([(
        "url",
        Node::text("https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller"),
    )]);
    let package = Node::map([
        ("version", Node::text(facts.version)),
        ("name", facts.annotation("io.kubewarden.policy.title")?),
        (
            "displayName",
            facts.annotation("io.artifacthub.displayName")?,
        ),
        ("createdAt", Node::text(&inputs.created_at)),
        (
            "description",
            facts.annotation("io.kubewarden.policy.description")?,
        ),
        ("license", facts.annotation("io.kubewarden.policy.license")?),
        ("homeURL", facts.annotation("io.kubewarden.policy.url")?),
        ("containersImages", Node::List(vec![image])),
        ("keywords", keywords(&facts)?),
        ("links", links(&facts)),
        ("install", Node::text(install_text(&facts.image))),
        ("maintainers", maintainer_nodes(&facts)?),
        ("provider", Node::map([("name", Node::text("kubewarden"))])),
        ("recommendations", Node::List(vec![recommendation])),
        (
            "annotations",
            package_annotations(&facts, inputs.questions.as_deref())?,
        ),
    ]);
    Ok(format!("{HEADER}{}", to_text(&package)?))
}

/// Checks that `created_at` is an RFC 3339 time, as Artifact Hub wants.
pub fn check_created_at(created_at: &str) -> Result<()> {
    chrono::DateTime::parse_from_rfc3339(created_at)
        .map(|_| ())
        .map_err(|e| {
            Error::Usage(format!(
                "createdAt {created_at:?} is not an RFC 3339 time: {e}"
            ))
        })
}

/// A top-level string field (`createdAt`, `version`) of an existing package file.
pub fn package_field(package_yaml: &str, field: &str) -> Option<String> {
    let package = crate::yaml::parse("artifacthub-pkg.yml", package_yaml).ok()?;
    package.get(field)?.as_str().map(str::to_owned)
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
                "io.kubewarden.policy.author": "Ann <ann@example.com>, Team <team@example.com>",
                "io.kubewarden.policy.url": "https://example.com/p",
                "io.kubewarden.policy.source": "https://example.com/src",
                "io.kubewarden.policy.license": "Apache-2.0"
            }
        })
    }

    fn inputs() -> PackageInputs {
        PackageInputs {
            created_at: "2026-01-02T03:04:05Z".into(),
            questions: Some("questions:\n- variable: mutate\n".into()),
        }
    }

    #[test]
    fn package_fields() {
        let text = artifacthub_package(&metadata(), &inputs()).unwrap();
        let package = crate::yaml::parse("package", &text).unwrap();
        assert_eq!(package["version"], "1.2.3");
        assert_eq!(
            package["containersImages"][0]["image"],
            "ghcr.io/o/p:v1.2.3"
        );
        assert_eq!(package["keywords"], json!(["a", "b c"]));
        assert_eq!(
            package["maintainers"],
            json!([{"name": "Ann", "email": "ann@example.com"}, {"name": "Team", "email": "team@example.com"}])
        );
        assert_eq!(package["annotations"]["kubewarden/mutation"], "true");
        assert_eq!(
            package["annotations"]["kubewarden/questions-ui"],
            "questions:\n- variable: mutate\n"
        );
        let rules = crate::yaml::parse(
            "rules",
            package["annotations"]["kubewarden/rules"].as_str().unwrap(),
        )
        .unwrap();
        assert_eq!(rules, metadata()["rules"]);
        assert!(package["annotations"]
            .get("kubewarden/contextAwareResources")
            .is_none());
        assert!(text.contains("kwctl pull ghcr.io/o/p:v1.2.3"));
        assert_eq!(
            package_field(&text, "createdAt").as_deref(),
            Some("2026-01-02T03:04:05Z")
        );
        assert!(check_created_at("2026-01-02T03:04:05Z").is_ok());
        assert!(check_created_at("yesterday").is_err());
    }

    #[test]
    fn fields_come_in_kwctl_order() {
        let text = artifacthub_package(&metadata(), &inputs()).unwrap();
        let top: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with([' ', '#', '-']) && l.contains(':'))
            .map(|l| l.split(':').next().unwrap())
            .collect();
        assert_eq!(
            top,
            [
                "version",
                "name",
                "displayName",
                "createdAt",
                "description",
                "license",
                "homeURL",
                "containersImages",
                "keywords",
                "links",
                "install",
                "maintainers",
                "provider",
                "recommendations",
                "annotations"
            ]
        );
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

    /// Artifact Hub: "maintainer email not provided" (artifacthub/hub
    /// internal/pkg/metadata.go); kwctl refuses such an author too.
    #[test]
    fn a_maintainer_needs_an_email() {
        for author in [
            "os-placement maintainers",
            "Ann <>",
            "<ann@example.com>",
            "Ann <ann@example.com",
        ] {
            let err = maintainers(author).unwrap_err().to_string();
            assert!(err.contains("Name <email>"), "{author}: {err}");
        }
        assert_eq!(
            maintainers("A <a@b.c>").unwrap(),
            [("A".to_owned(), "a@b.c".to_owned())]
        );
    }
}
