//! One evaluation: the texts of the editors in, the tagged result out.
//! Every rule decision is the core's; this only reads text, points field
//! paths at lines and renders YAML.

use os_placement_core::{landing, pools_from_value, Diagnostic, Settings, SignalReport};
use serde::Serialize;
use serde_json::{json, Value};

use crate::emit::to_yaml;
use crate::request::{admission_request, Subject};
use crate::tree::{parse_documents, Node, Position, TextError};

/// What the page sends.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inputs<'a> {
    /// The object under review: YAML or JSON, a Pod, a workload, a list,
    /// a multi-document stream or a full AdmissionReview.
    pub object: &'a str,
    /// The policy settings; empty means all defaults.
    pub settings: &'a str,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT` (ignored for an AdmissionReview).
    pub operation: &'a str,
    /// The object before an UPDATE; empty for none.
    pub old_object: &'a str,
    /// Node pools for the landing picture; empty for none.
    pub pools: &'a str,
}

/// The tagged result.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// Each document was evaluated.
    Evaluated {
        documents: Vec<DocumentResult>,
        /// Problems with the node pools; the landing picture is then absent.
        #[serde(rename = "poolErrors")]
        pool_errors: Vec<InputError>,
    },
    /// The texts could not be read; nothing was evaluated.
    InvalidInput { errors: Vec<InputError> },
}

/// A problem in one of the inputs, at a line and column of its text.
#[derive(Debug, Clone, Serialize)]
pub struct InputError {
    /// `object`, `settings`, `oldObject` or `pools`.
    pub input: &'static str,
    /// The field path, when the problem is in a field.
    pub path: Option<String>,
    pub message: String,
    #[serde(flatten)]
    pub at: Position,
}

/// A diagnostic of the core, with where its path is written.
#[derive(Debug, Clone, Serialize)]
pub struct Located<T> {
    #[serde(flatten)]
    pub item: T,
    #[serde(flatten)]
    pub at: Position,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentResult {
    pub index: usize,
    pub kind: String,
    pub name: String,
    /// Where the object starts in the input text.
    #[serde(flatten)]
    pub at: Position,
    pub accepted: bool,
    /// The rejection message as the API server shows it.
    pub message: Option<String>,
    pub violations: Vec<Located<Diagnostic>>,
    pub warnings: Vec<Located<Diagnostic>>,
    /// Warnings as the API server shows them.
    pub warning_lines: Vec<String>,
    /// Which field said which OS and build, as the core read them.
    pub signals: Vec<Located<SignalReport>>,
    /// RFC 6902.
    pub patch: Value,
    /// The object as written (normalised layout) and after the patch.
    pub before_yaml: String,
    pub after_yaml: Option<String>,
    /// The object after the policy, as JSON.
    pub mutated_object: Option<Value>,
    pub landing: Option<Landing>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Landing {
    pub before: Value,
    pub after: Option<Value>,
}

/// Evaluates every document of the object text.
pub fn run(inputs: &Inputs<'_>) -> Outcome {
    let mut errors = Vec::new();
    let settings = read_settings(inputs.settings, &mut errors);
    let subjects = read_subjects(inputs, &mut errors);
    let old = read_single(inputs.old_object, "oldObject", &mut errors);
    let (settings, Some(subjects)) = (settings, subjects) else {
        return Outcome::InvalidInput { errors };
    };
    let Some(settings) = settings.filter(|_| errors.is_empty()) else {
        return Outcome::InvalidInput { errors };
    };
    let mut pool_errors = Vec::new();
    let pools = read_pools(inputs.pools, &mut pool_errors);
    let documents = subjects
        .iter()
        .enumerate()
        .map(|(index, subject)| {
            let request = admission_request(subject, inputs.operation, old.as_ref());
            evaluate_one(index, subject, &request, &settings, pools.as_deref())
        })
        .collect();
    Outcome::Evaluated {
        documents,
        pool_errors,
    }
}

fn evaluate_one(
    index: usize,
    subject: &Subject,
    request: &Value,
    settings: &Settings,
    pools: Option<&[os_placement_core::Node]>,
) -> DocumentResult {
    let decision = crate::request::evaluate(request, settings);
    let node = &subject.object;
    let locate = |d: &Diagnostic| Located {
        at: node.locate(&d.path),
        item: d.clone(),
    };
    let object = node.to_json();
    let text = |key: &str| {
        object
            .pointer(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut after = decision.mutated_object.as_ref().map(|_| node.clone());
    for op in &decision.patch {
        if let Some(after) = after.as_mut() {
            after.add(&op.path, &op.value);
        }
    }
    let landing = pools.map(|pools| Landing {
        before: landing_json(&object, pools, settings),
        after: decision
            .mutated_object
            .as_ref()
            .or(decision.accepted.then_some(&object))
            .map(|o| landing_json(o, pools, settings)),
    });
    DocumentResult {
        index,
        kind: text("/kind"),
        name: text("/metadata/name"),
        at: node.at,
        accepted: decision.accepted,
        message: decision.message(),
        violations: decision.violations.iter().map(locate).collect(),
        warnings: decision.warnings.iter().map(locate).collect(),
        warning_lines: decision.warning_lines(),
        signals: decision
            .signals
            .iter()
            .map(|s| Located {
                at: node.locate(&s.path),
                item: s.clone(),
            })
            .collect(),
        patch: serde_json::to_value(&decision.patch).unwrap_or(Value::Null),
        before_yaml: to_yaml(node),
        after_yaml: after.as_ref().map(to_yaml),
        mutated_object: decision.mutated_object.clone(),
        landing,
    }
}

fn landing_json(object: &Value, pools: &[os_placement_core::Node], settings: &Settings) -> Value {
    match landing(object, pools, settings) {
        Ok(found) => json!({"pools": found}),
        Err(problems) => {
            json!({"problems": problems.iter().map(ToString::to_string).collect::<Vec<_>>()})
        }
    }
}

fn text_error(input: &'static str, e: TextError) -> InputError {
    InputError {
        input,
        path: None,
        message: e.message,
        at: e.at,
    }
}

fn read_subjects(inputs: &Inputs<'_>, errors: &mut Vec<InputError>) -> Option<Vec<Subject>> {
    let docs = match parse_documents(inputs.object) {
        Ok(docs) => docs,
        Err(e) => {
            errors.push(text_error("object", e));
            return None;
        }
    };
    let subjects = crate::request::subjects(docs);
    if subjects.is_empty() {
        errors.push(InputError {
            input: "object",
            path: None,
            message: "no object: paste a Pod, a workload or an AdmissionReview".to_string(),
            at: Position { line: 1, column: 1 },
        });
        return None;
    }
    Some(subjects)
}

fn read_single(text: &str, input: &'static str, errors: &mut Vec<InputError>) -> Option<Value> {
    match parse_documents(text) {
        Ok(docs) => docs.first().map(Node::to_json).filter(|v| !v.is_null()),
        Err(e) => {
            errors.push(text_error(input, e));
            None
        }
    }
}

fn read_settings(text: &str, errors: &mut Vec<InputError>) -> Option<Settings> {
    let docs = match parse_documents(text) {
        Ok(docs) => docs,
        Err(e) => {
            errors.push(text_error("settings", e));
            return None;
        }
    };
    let root = docs.into_iter().next();
    let value = root.as_ref().map(Node::to_json).unwrap_or(Value::Null);
    match Settings::from_value(&value) {
        Ok(settings) => Some(settings),
        Err(e) => {
            for (path, message) in crate::request::settings_problems(&e) {
                errors.push(InputError {
                    input: "settings",
                    at: root
                        .as_ref()
                        .map(|r| r.locate(&path))
                        .unwrap_or(Position { line: 1, column: 1 }),
                    path: Some(path),
                    message,
                });
            }
            None
        }
    }
}

fn read_pools(text: &str, errors: &mut Vec<InputError>) -> Option<Vec<os_placement_core::Node>> {
    let root = match parse_documents(text) {
        Ok(docs) => docs.into_iter().next()?,
        Err(e) => {
            errors.push(text_error("pools", e));
            return None;
        }
    };
    // A preset file may carry its pools under `pools:`.
    let list = root.get("pools").unwrap_or(&root);
    match pools_from_value(&list.to_json()) {
        Ok(pools) => Some(pools),
        Err(problems) => {
            errors.extend(problems.into_iter().map(|d| InputError {
                input: "pools",
                at: list.locate(&d.path),
                message: format!("{}: {}", d.path, d.message),
                path: Some(d.path),
            }));
            None
        }
    }
}
