//! Example cases (`examples/cases.yaml`): which manifest, which settings, what
//! to expect; running them through a [`PolicyHost`] and comparing.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use os_placement_door::read_one;
use serde::Deserialize;
use serde_json::Value;

use std::sync::Arc;

use crate::capabilities::{objects_of, Cluster, ContextHost};
use crate::host::{Evaluation, HostCalls, NoCapabilities, PolicyHost, PolicyModule};
use crate::request::admission_request;

/// One case of `examples/cases.yaml`. Paths are relative to the repository root.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub manifest: PathBuf,
    /// Settings file; `{}` when absent.
    #[serde(default)]
    pub settings: Option<PathBuf>,
    #[serde(default = "default_operation")]
    pub operation: String,
    #[serde(default)]
    pub old_manifest: Option<PathBuf>,
    #[serde(default)]
    pub sub_resource: Option<String>,
    /// The cluster the policy reads (`kubectl get ... -o yaml` output): its
    /// host calls are answered from these objects and the ConfigMaps the
    /// facts syncer publishes for them; without it, from nothing.
    #[serde(default)]
    pub cluster: Option<PathBuf>,
    #[serde(default)]
    pub expect: Option<Expect>,
}

fn default_operation() -> String {
    "CREATE".to_owned()
}

/// What a case must produce.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    pub accepted: bool,
    /// Whether the JSON Patch is non-empty; unchecked when absent.
    #[serde(default)]
    pub patched: Option<bool>,
    /// Substrings the message must contain.
    #[serde(default)]
    pub message_contains: Vec<String>,
    /// Substrings that must each appear in at least one warning.
    #[serde(default)]
    pub warnings_contain: Vec<String>,
    /// Substrings no warning may contain.
    #[serde(default)]
    pub warnings_omit: Vec<String>,
}

/// Reads a YAML (or JSON) file holding exactly one document (empty documents,
/// e.g. after a trailing `---`, are ignored).
pub fn read_yaml(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_single_yaml(&text).with_context(|| format!("cannot parse {}", path.display()))
}

/// Parses text holding at most one non-null YAML document, as the door
/// reads it (as kubectl does); none is `null`.
pub fn parse_single_yaml(text: &str) -> Result<Value> {
    Ok(read_one(text)?.map_or(Value::Null, |root| root.to_json()))
}

/// Loads the case list; paths inside stay relative (see [`Case::resolve`]).
pub fn load_cases(path: &Path) -> Result<Vec<Case>> {
    let list = read_yaml(path)?;
    let cases: Vec<Case> = serde_json::from_value(list)
        .with_context(|| format!("{} is not a list of cases", path.display()))?;
    let mut seen = std::collections::BTreeSet::new();
    for case in &cases {
        if !seen.insert(case.name.as_str()) {
            bail!(
                "{}: case name `{}` is used twice",
                path.display(),
                case.name
            );
        }
    }
    Ok(cases)
}

/// A case with its files read.
#[derive(Debug, Clone)]
pub struct ResolvedCase {
    pub case: Case,
    pub object: Value,
    pub old_object: Option<Value>,
    pub settings: Value,
    /// The objects of the case's cluster.
    pub cluster: Option<Vec<Value>>,
}

impl ResolvedCase {
    /// `Kind/name` of the object (`generateName` followed by `*` when unnamed).
    pub fn object_ref(&self) -> String {
        object_ref(&self.object)
    }

    /// A fresh instance of `module` whose host answers from the case's
    /// cluster (with the facts syncer's ConfigMaps for it), or from nothing.
    pub fn host(&self, module: &PolicyModule) -> Result<PolicyHost> {
        Ok(module.instantiate_with(self.host_calls())?)
    }

    /// What answers the host calls: the case's cluster (with the facts
    /// syncer's ConfigMaps for it), or nothing.
    pub fn host_calls(&self) -> Arc<dyn HostCalls> {
        let Some(objects) = &self.cluster else {
            return Arc::new(NoCapabilities);
        };
        let cluster = crate::published::synced(
            Cluster::from_objects(objects.clone()),
            &os_placement_core::SortedMap::new(),
            os_placement_core::DEFAULT_FACTS_NAMESPACE,
        );
        Arc::new(ContextHost::new().with_cluster(cluster))
    }

    /// The AdmissionRequest for this case.
    pub fn request(&self) -> Value {
        admission_request(
            &self.object,
            &self.case.operation,
            self.old_object.as_ref(),
            self.case.sub_resource.as_deref(),
        )
    }
}

/// `Kind/name` of an object.
pub fn object_ref(object: &Value) -> String {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("?");
    let metadata = object.get("metadata");
    let name = metadata
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            metadata
                .and_then(|m| m.get("generateName"))
                .and_then(Value::as_str)
                .map(|g| format!("{g}*"))
        })
        .unwrap_or_else(|| "?".to_owned());
    format!("{kind}/{name}")
}

impl Case {
    /// Reads the manifest, old manifest and settings, relative to `root`.
    pub fn resolve(&self, root: &Path) -> Result<ResolvedCase> {
        let object = read_yaml(&root.join(&self.manifest))?;
        let old_object = self
            .old_manifest
            .as_ref()
            .map(|p| read_yaml(&root.join(p)))
            .transpose()?;
        let settings = match &self.settings {
            Some(p) => match read_yaml(&root.join(p))? {
                // An empty settings file means "all defaults".
                Value::Null => Value::Object(serde_json::Map::new()),
                other => other,
            },
            None => Value::Object(serde_json::Map::new()),
        };
        let cluster = match &self.cluster {
            Some(path) => {
                let path = root.join(path);
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                Some(objects_of(&text).with_context(|| format!("{}", path.display()))?)
            }
            None => None,
        };
        Ok(ResolvedCase {
            case: self.clone(),
            object,
            old_object,
            settings,
            cluster,
        })
    }
}

/// Differences between an evaluation and what was expected; empty when it matches.
pub fn check(expect: &Expect, evaluation: &Evaluation) -> Vec<String> {
    let mut mismatches = Vec::new();
    let response = &evaluation.response;
    let verdict = |accepted: bool| if accepted { "accepted" } else { "rejected" };
    if response.accepted != expect.accepted {
        mismatches.push(format!(
            "expected {}, got {}",
            verdict(expect.accepted),
            verdict(response.accepted)
        ));
    }
    if let Some(patched) = expect.patched {
        if evaluation.patched() != patched {
            mismatches.push(if patched {
                "expected a JSON Patch, got none".to_owned()
            } else {
                "expected no JSON Patch, got one".to_owned()
            });
        }
    }
    for needle in &expect.message_contains {
        if !response.message().contains(needle.as_str()) {
            mismatches.push(format!("message does not contain {needle:?}"));
        }
    }
    for needle in &expect.warnings_contain {
        if !response
            .warnings()
            .iter()
            .any(|w| w.contains(needle.as_str()))
        {
            mismatches.push(format!("no warning contains {needle:?}"));
        }
    }
    for needle in &expect.warnings_omit {
        if let Some(warning) = response
            .warnings()
            .iter()
            .find(|w| w.contains(needle.as_str()))
        {
            mismatches.push(format!("a warning contains {needle:?}: {warning}"));
        }
    }
    mismatches
}

/// The outcome of one case.
#[derive(Debug)]
pub struct CaseOutcome {
    pub resolved: ResolvedCase,
    /// Settings rejected by `validate_settings` (policy-server would refuse to load the policy).
    pub settings_error: Option<String>,
    /// The evaluation, or the waPC error / trap.
    pub evaluation: Result<Evaluation>,
    /// Differences from `expect` (an `Err` evaluation or invalid settings is one).
    pub mismatches: Vec<String>,
}

/// Validates the case's settings, then evaluates its request.
pub fn run_case(host: &PolicyHost, resolved: ResolvedCase) -> CaseOutcome {
    let settings_error = match host.validate_settings(&resolved.settings) {
        Ok(answer) if answer.valid => None,
        Ok(answer) => Some(answer.message.unwrap_or_else(|| "(no message)".to_owned())),
        Err(e) => Some(format!("{e:#}")),
    };
    let evaluation = host
        .validate(&resolved.request(), &resolved.settings)
        .map_err(anyhow::Error::from);
    let mut mismatches = Vec::new();
    if let Some(message) = &settings_error {
        mismatches.push(format!("settings rejected by validate_settings: {message}"));
    }
    match (&evaluation, &resolved.case.expect) {
        (Err(e), _) => mismatches.push(format!("evaluation failed (waPC error/trap): {e:#}")),
        (Ok(evaluation), Some(expect)) => mismatches.extend(check(expect, evaluation)),
        (Ok(_), None) => {}
    }
    CaseOutcome {
        resolved,
        settings_error,
        evaluation,
        mismatches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::ValidationResponse;

    fn evaluation(accepted: bool, message: &str, warnings: &[&str], patched: bool) -> Evaluation {
        let patch = json_patch::diff(
            &serde_json::json!({"a": 1}),
            &serde_json::json!({"a": if patched { 2 } else { 1 }}),
        );
        Evaluation {
            response: ValidationResponse {
                accepted,
                message: Some(message.to_owned()),
                code: None,
                mutated_object: None,
                audit_annotations: None,
                warnings: Some(warnings.iter().map(|w| (*w).to_owned()).collect()),
            },
            patch: Some(patch),
        }
    }

    fn cases_of(text: &str) -> serde_json::Result<Vec<Case>> {
        serde_json::from_value(parse_single_yaml(text).unwrap())
    }

    #[test]
    fn parses_case_list() {
        let cases: Vec<Case> = cases_of(
            r#"
- name: a
  manifest: examples/manifests/a.yaml
  settings: examples/settings/eks.yaml
  expect: {accepted: true, patched: true, warningsContain: [beta]}
- name: b
  manifest: examples/manifests/b.yaml
  operation: UPDATE
  oldManifest: examples/manifests/b-old.yaml
  subResource: ephemeralcontainers
  expect:
    accepted: false
    messageContains: ["spec.containers[0].image"]
"#,
        )
        .unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].operation, "CREATE");
        assert_eq!(cases[1].operation, "UPDATE");
        assert_eq!(
            cases[1].sub_resource.as_deref(),
            Some("ephemeralcontainers")
        );
        let expect = cases[1].expect.as_ref().unwrap();
        assert!(!expect.accepted);
        assert_eq!(expect.patched, None);
    }

    #[test]
    fn rejects_misspelt_keys() {
        let err = cases_of(
            "- {name: a, manifest: x.yaml, expect: {accepted: true, messageContain: [x]}}",
        )
        .unwrap_err();
        assert!(err.to_string().contains("messageContain"), "{err}");
    }

    #[test]
    fn single_documents() {
        assert_eq!(
            parse_single_yaml("---\na: 1\n---\n").unwrap(),
            serde_json::json!({"a": 1})
        );
        assert_eq!(parse_single_yaml("").unwrap(), Value::Null);
        assert!(parse_single_yaml("a: 1\n---\nb: 2\n").is_err());
        assert_eq!(
            parse_single_yaml("{\"a\": [1]}").unwrap(),
            serde_json::json!({"a": [1]})
        );
    }

    #[test]
    fn checks_expectations() {
        let expect = Expect {
            accepted: true,
            patched: Some(true),
            message_contains: vec![],
            warnings_contain: vec!["beta".to_owned()],
            warnings_omit: vec!["no node".to_owned()],
        };
        assert!(check(&expect, &evaluation(true, "", &["beta label"], true)).is_empty());
        let mismatches = check(&expect, &evaluation(false, "no", &[], false));
        assert_eq!(mismatches.len(), 3, "{mismatches:?}");
        let mismatches = check(
            &expect,
            &evaluation(true, "", &["beta", "no node runs it"], true),
        );
        assert_eq!(
            mismatches,
            ["a warning contains \"no node\": no node runs it"]
        );
    }
}
