//! Packaging generated from or checked against metadata.yml and the settings
//! declaration: the Artifact Hub package (also as the real `kwctl scaffold
//! artifacthub` writes it), its repository file, and the questions-ui form.

use std::collections::BTreeMap;

use os_placement_core::{FieldSchema, Shape};

use serde_json::{json, Map, Value};
use xtask::artifacthub::{artifacthub_package, package_field, PackageInputs};
use xtask::local::repo_root;
use xtask::yaml;

use super::support::{assert_success, kwctl, metadata_yml, run_kwctl};

fn read(name: &str) -> String {
    std::fs::read_to_string(repo_root().join(name)).unwrap()
}

fn questions() -> Value {
    yaml::parse("questions-ui.yml", &read("questions-ui.yml")).unwrap()
}

fn image() -> String {
    let annotations = &metadata_yml()["annotations"];
    format!(
        "{}:v{}",
        annotations["io.kubewarden.policy.ociUrl"].as_str().unwrap(),
        annotations["io.kubewarden.policy.version"]
            .as_str()
            .unwrap()
    )
}

#[test]
fn artifacthub_package_is_generated_from_metadata_and_questions() {
    let checked_in = read("artifacthub-pkg.yml");
    let created_at = package_field(&checked_in, "createdAt").expect("no createdAt");
    let inputs = PackageInputs {
        created_at,
        questions: Some(read("questions-ui.yml")),
    };
    let generated = artifacthub_package(&metadata_yml(), &inputs).unwrap();
    assert!(
        generated == checked_in,
        "artifacthub-pkg.yml is out of step with metadata.yml or questions-ui.yml: run `make artifacthub`\n--- expected\n{generated}"
    );
}

/// Independent of the generator: the fields Artifact Hub shows agree with metadata.yml.
#[test]
fn artifacthub_package_agrees_with_metadata() {
    let package = yaml::parse("artifacthub-pkg.yml", &read("artifacthub-pkg.yml")).unwrap();
    let metadata = metadata_yml();
    let annotations = &metadata["annotations"];
    assert_eq!(
        package["version"],
        annotations["io.kubewarden.policy.version"]
    );
    assert_eq!(package["name"], annotations["io.kubewarden.policy.title"]);
    assert_eq!(
        package["displayName"],
        annotations["io.artifacthub.displayName"]
    );
    assert_eq!(
        package["description"],
        annotations["io.kubewarden.policy.description"]
    );
    assert_eq!(
        package["license"],
        annotations["io.kubewarden.policy.license"]
    );
    assert_eq!(
        package["containersImages"][0]["image"].as_str(),
        Some(image().as_str())
    );
    assert!(package["install"].as_str().unwrap().contains(&image()));
    assert!(package["maintainers"][0]["email"]
        .as_str()
        .unwrap()
        .contains('@'));
    let ui = &package["annotations"];
    assert_eq!(
        ui["kubewarden/mutation"].as_str(),
        Some(metadata["mutating"].to_string().as_str())
    );
    assert_eq!(
        ui["kubewarden/resources"],
        annotations["io.artifacthub.resources"]
    );
    let rules = yaml::parse("rules", ui["kubewarden/rules"].as_str().unwrap()).unwrap();
    assert_eq!(rules, metadata["rules"]);
    let form = yaml::parse(
        "questions-ui",
        ui["kubewarden/questions-ui"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(form, questions());
}

/// The package as the real kwctl writes it from the same files, field by
/// field, but for `createdAt` (kwctl writes the current time).
#[test]
fn kwctl_scaffold_artifacthub_agrees_with_the_package() {
    let Some(kwctl) = kwctl() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = repo_root();
    let output = run_kwctl(
        &kwctl,
        dir.path(),
        &[
            "scaffold",
            "artifacthub",
            "--metadata-path",
            root.join("metadata.yml").to_str().unwrap(),
            "--questions-path",
            root.join("questions-ui.yml").to_str().unwrap(),
        ],
    );
    let stdout = assert_success("kwctl scaffold artifacthub", &output);
    let mut theirs = yaml::parse("kwctl output", &stdout).unwrap();
    let mut ours = yaml::parse("artifacthub-pkg.yml", &read("artifacthub-pkg.yml")).unwrap();
    for package in [&mut theirs, &mut ours] {
        let created_at = package.as_object_mut().unwrap().remove("createdAt");
        assert!(created_at
            .is_some_and(|t| xtask::artifacthub::check_created_at(t.as_str().unwrap()).is_ok()));
        // YAML texts inside the package: compared as what they say.
        for key in [
            "kubewarden/rules",
            "kubewarden/contextAwareResources",
            "kubewarden/questions-ui",
        ] {
            let text = package["annotations"][key].as_str().unwrap().to_owned();
            package["annotations"][key] = yaml::parse(key, &text).unwrap();
        }
    }
    assert_eq!(ours, theirs, "kwctl wrote:\n{stdout}");
}

/// Every setting the policy reads, nested ones included, from the core's one
/// declaration of the settings (`Settings::schema`): its path (`a.b`, `a[].b`
/// for the items of a list) and what a form field for it must be.
fn declared_settings() -> BTreeMap<String, &'static str> {
    fn walk(fields: &[FieldSchema], prefix: &str, out: &mut BTreeMap<String, &'static str>) {
        for field in fields {
            let path = format!("{prefix}{}", field.key);
            of_shape(&field.shape, &path, out);
        }
    }
    fn of_shape(shape: &Shape, path: &str, out: &mut BTreeMap<String, &'static str>) {
        let kind = match shape {
            Shape::Boolean => "boolean",
            Shape::String { .. } | Shape::Enum { .. } => "string",
            Shape::Integer => "int",
            Shape::Map => "map",
            Shape::Object { fields } => {
                walk(fields, &format!("{path}."), out);
                "object"
            }
            Shape::List { item } => match item.as_ref() {
                Shape::Object { fields } => {
                    walk(fields, &format!("{path}[]."), out);
                    "sequence"
                }
                _ => "array",
            },
            Shape::OneOf { options } => {
                let object = options.iter().find(|o| matches!(o, Shape::Object { .. }));
                object.map_or("string", |o| {
                    of_shape(o, path, out);
                    "object"
                })
            }
            Shape::Literal { .. } | Shape::Null => "string",
        };
        out.insert(path.to_owned(), kind);
    }
    let mut out = BTreeMap::new();
    walk(&os_placement_core::Settings::schema(), "", &mut out);
    out
}

/// What a question's `type` fills in.
fn question_kind(question: &Value) -> &'static str {
    match question["type"].as_str().unwrap() {
        "boolean" => "boolean",
        "string" | "enum" => "string",
        "int" => "int",
        "array[" => "array",
        "sequence[" => "sequence",
        "map[" if question.get("subquestions").is_some() => "object",
        "map[" => "map",
        other => panic!("question type {other}"),
    }
}

/// Every question's settings path and kind: sub-questions carry their path
/// from the enclosing item, sequence questions are relative to their item.
fn question_paths(questions: &[Value], item: &str, out: &mut BTreeMap<String, &'static str>) {
    for question in questions {
        let path = format!("{item}{}", question["variable"].as_str().unwrap());
        if path == "description" {
            continue;
        }
        out.insert(path.clone(), question_kind(question));
        if let Some(sub) = question["subquestions"].as_array() {
            question_paths(sub, item, out);
        }
        if let Some(sub) = question["sequence_questions"].as_array() {
            question_paths(sub, &format!("{path}[]."), out);
        }
    }
}

#[test]
fn questions_cover_every_setting_with_its_type() {
    let mut asked = BTreeMap::new();
    question_paths(&question_list(&questions()), "", &mut asked);
    let declared = declared_settings();
    assert!(declared.len() >= 25, "{declared:?}");
    assert_eq!(asked, declared);
}

/// Enumerations offer exactly the values the policy accepts, and the top-level
/// defaults are the declared defaults.
#[test]
fn questions_offer_the_declared_values_and_defaults() {
    for field in os_placement_core::Settings::schema() {
        let question = question_list(&questions())
            .into_iter()
            .find(|q| q["variable"] == field.key)
            .unwrap();
        if let Shape::Enum { values } = &field.shape {
            assert_eq!(question["options"], json!(values), "{}", field.key);
        }
        if matches!(field.shape, Shape::Boolean | Shape::Enum { .. }) {
            assert_eq!(question["default"], field.default, "{}", field.key);
        }
    }
}

fn question_list(questions: &Value) -> Vec<Value> {
    questions["questions"].as_array().unwrap().clone()
}

/// A value of the question's type: its default, else its first option, else
/// an example of the type; maps and sequences from their sub-questions.
fn sample(question: &Value) -> Value {
    let prefix = format!("{}.", question["variable"].as_str().unwrap());
    let nested = |key: &str| -> Map<String, Value> {
        question[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|q| {
                let name = q["variable"].as_str().unwrap();
                (
                    name.strip_prefix(&prefix).unwrap_or(name).to_owned(),
                    sample(q),
                )
            })
            .collect()
    };
    match question["type"].as_str().unwrap() {
        "map[" if question.get("subquestions").is_some() => Value::Object(nested("subquestions")),
        "map[" => json!({"kubernetes.io/os": "windows"}),
        "sequence[" => json!([Value::Object(nested("sequence_questions"))]),
        "array[" => json!(["10.0.20348"]),
        "int" => json!(300),
        "enum" if question["default"].is_null() => question["options"][0].clone(),
        "string" if question["default"].as_str().is_none_or(str::is_empty) => json!("x"),
        _ => question["default"].clone(),
    }
}

/// Every field the form can fill, nested ones included, is a setting the
/// policy reads: the core rejects unknown keys at every level, naming them.
#[test]
fn questions_name_only_settings_the_policy_knows() {
    let settings: Map<String, Value> = question_list(&questions())
        .iter()
        .filter(|q| q["variable"] != "description")
        .map(|q| (q["variable"].as_str().unwrap().to_owned(), sample(q)))
        .collect();
    assert!(
        settings["runtimeClasses"][0]["scheduling"]["tolerations"][0]
            .get("operator")
            .is_some()
    );
    let problems = match os_placement_core::Settings::from_value(&Value::Object(settings)) {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    };
    assert!(!problems.contains("unknown setting"), "{problems}");
}

/// The form's defaults are the policy's: the top-level defaults, given as
/// settings, make the same settings as none at all.
#[test]
fn question_defaults_are_the_policy_defaults() {
    let defaults: Map<String, Value> = question_list(&questions())
        .iter()
        .filter(|q| matches!(q["type"].as_str(), Some("boolean" | "enum")))
        .map(|q| {
            (
                q["variable"].as_str().unwrap().to_owned(),
                q["default"].clone(),
            )
        })
        .collect();
    assert!(defaults.len() >= 8, "{defaults:?}");
    let given = os_placement_core::Settings::from_value(&Value::Object(defaults)).unwrap();
    let none = os_placement_core::Settings::from_value(&json!({})).unwrap();
    assert_eq!(format!("{given:?}"), format!("{none:?}"));
}

#[test]
fn artifacthub_repository_names_an_owner_with_an_email() {
    let repo = yaml::parse("artifacthub-repo.yml", &read("artifacthub-repo.yml")).unwrap();
    let owner = &repo["owners"][0];
    assert!(owner["email"].as_str().unwrap().contains('@'), "{repo}");
    let author = metadata_yml()["annotations"]["io.kubewarden.policy.author"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        author.contains(owner["email"].as_str().unwrap()),
        "{author}"
    );
}

/// deploy/verification-config.yaml asks for the release workflow's keyless
/// signature of the repository metadata.yml names as the policy's source.
#[test]
fn verification_config_names_the_release_workflow_of_the_source_repository() {
    let config = yaml::parse(
        "verification-config.yaml",
        &read("deploy/verification-config.yaml"),
    )
    .unwrap();
    assert_eq!(config["apiVersion"], "v1");
    let rule = &config["allOf"][0];
    assert_eq!(rule["kind"], "githubAction");
    let source = metadata_yml()["annotations"]["io.kubewarden.policy.source"]
        .as_str()
        .unwrap()
        .to_owned();
    let expected = format!(
        "https://github.com/{}/{}",
        rule["owner"].as_str().unwrap(),
        rule["repo"].as_str().unwrap()
    );
    assert_eq!(source, expected);
    assert_eq!(config["allOf"].as_array().unwrap().len(), 1, "{config}");
}

/// The README's settings table names every setting of the declaration
/// (nested ones as `parent.key` or `parent[].key`; the Linux taint's keys,
/// which mirror the Windows taint's, on one row), and nothing else.
#[test]
fn readme_settings_table_covers_every_setting() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"),
    )
    .unwrap();
    let start = readme.find("## Settings").expect("a Settings section");
    let table: Vec<&str> = readme[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| Key"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let mut documented = std::collections::BTreeSet::new();
    for row in &table {
        let cell = row.split('|').nth(1).unwrap_or_default();
        let keys: Vec<String> = cell
            .split(',')
            .map(|k| k.trim().trim_matches('`').to_string())
            .collect();
        let parent = keys[0].rsplit_once('.').map(|(p, _)| p.to_string());
        for key in keys {
            match (key.strip_prefix('.'), &parent) {
                (Some(leaf), Some(parent)) => documented.insert(format!("{parent}.{leaf}")),
                _ => documented.insert(key),
            };
        }
    }
    let declared: std::collections::BTreeSet<String> = declared_settings()
        .into_iter()
        .filter(|(path, _)| !path.contains("tolerations[].") && !path.ends_with(".scheduling"))
        .map(|(path, _)| path)
        .collect();
    let missing: Vec<&String> = declared.difference(&documented).collect();
    let unknown: Vec<&String> = documented.difference(&declared).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "missing {missing:?}, unknown {unknown:?}"
    );
}
