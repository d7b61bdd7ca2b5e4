//! One evaluation: the texts of the editors in, the tagged result out.
//! The door reads the texts and answers each object; this only adds what
//! the page shows besides (YAML before and after, the landing picture).

use os_placement_core::{landing, Facts, Needs, Node as Pool, Settings, SignalReport};
use os_placement_door::emit::{ordered_like, to_yaml};
use os_placement_door::{
    evaluate_with_lookups, objects, read_one, read_settings, read_stream, Answer, Evaluated,
    Finding, Found, HostFacts, Located, Node, Options, Position, SettingsTextError, Subject,
    Verdict,
};

use crate::input_error::InputError;
use crate::pools::{facts_with_nodes, read_pools};
use serde::Serialize;
use serde_json::{json, Value};

/// What the page sends.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inputs<'a> {
    /// The object under review: YAML or JSON, a Pod, a workload, a list,
    /// a multi-document stream or AdmissionReviews.
    pub object: &'a str,
    /// The policy settings; empty means all defaults.
    pub settings: &'a str,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT` (an AdmissionReview brings its own).
    pub operation: &'a str,
    /// The object before an UPDATE; empty for none.
    pub old_object: &'a str,
    /// Node pools for the landing picture; empty for none.
    pub pools: &'a str,
    /// What the cluster and registries hold (a facts file); empty: no
    /// lookups, unless the pools are the nodes.
    pub facts: &'a str,
    /// The node pools are the cluster's Nodes: the policy's lookups are
    /// answered from the facts, and the Node list from the pools.
    pub pools_are_nodes: bool,
}

/// The tagged result.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// Each object was answered.
    Evaluated {
        /// One result per object, in input order.
        documents: Vec<DocumentResult>,
        /// Problems with the node pools; the landing picture is then absent.
        #[serde(rename = "poolErrors")]
        pool_errors: Vec<InputError>,
        /// The node pools as read (from pools or Node objects).
        pools: Vec<Pool>,
    },
    /// The texts could not be read; nothing was evaluated.
    InvalidInput {
        /// Every problem found, each at its line.
        errors: Vec<InputError>,
    },
}

/// The answer about one object, with what the page shows besides.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentResult {
    /// 0-based position among the objects of the input.
    pub index: usize,
    /// The object's `apiVersion`.
    pub api_version: String,
    /// The object's `kind`.
    pub kind: String,
    /// `metadata.name` (`generateName*`), empty when neither is set.
    pub name: String,
    /// `metadata.namespace`, when set.
    pub namespace: Option<String>,
    /// 1-based number of the object's document, and its index in a list.
    pub document: usize,
    /// The index in a list's `items`, when it is one.
    pub item: Option<usize>,
    /// Where the object starts in the input text.
    #[serde(flatten)]
    pub at: Position,
    /// The admission operation of the request.
    pub operation: String,
    /// `accepted`, `rejected` or `skipped` (not a request the policy's
    /// rules select; it is admitted without asking the policy).
    pub verdict: Verdict,
    /// Whether the object is admitted (with or without a patch; a skipped
    /// one is: the policy is not asked).
    pub accepted: bool,
    /// Why the policy is not asked, for a skipped object.
    pub skip_reason: Option<String>,
    /// The rejection message as the API server shows it.
    pub message: Option<String>,
    /// Why it is rejected, each at its line.
    pub violations: Vec<Finding>,
    /// What does not block it, each at its line.
    pub warnings: Vec<Finding>,
    /// Warnings as the API server shows them.
    pub warning_lines: Vec<String>,
    /// Which field said which OS and build, as the core read them.
    pub signals: Vec<Located<SignalReport>>,
    /// RFC 6902.
    pub patch: Value,
    /// The object as written (normalised layout).
    pub before_yaml: String,
    /// The object after the patch, keys in the written order; `None` when unchanged.
    pub after_yaml: Option<String>,
    /// The object after the policy, as JSON.
    pub mutated_object: Option<Value>,
    /// Where its pods land on the node pools, when pools were given.
    pub landing: Option<Landing>,
    /// What the policy looks up for it in the cluster and registries (for
    /// a skipped object, nothing: the policy is not asked).
    pub lookups: Option<Needs>,
}

/// Where an object's pods land on each node pool.
#[derive(Debug, Clone, Serialize)]
pub struct Landing {
    /// As written.
    pub before: Value,
    /// As admitted; `None` when rejected.
    pub after: Option<Value>,
}

/// Evaluates every object of the object text.
pub fn run(inputs: &Inputs<'_>) -> Outcome {
    let mut errors = Vec::new();
    let settings = read_page_settings(inputs.settings, &mut errors);
    let subjects = read_subjects(inputs.object, &mut errors);
    let old = read_old_object(inputs.old_object, &mut errors);
    let mut pool_errors = Vec::new();
    let pools = read_pools(inputs.pools, &mut pool_errors);
    let nodes = inputs
        .pools_are_nodes
        .then(|| pools.as_deref().unwrap_or_default());
    let facts = read_facts(inputs.facts, nodes, &mut errors);
    let operation = operation(inputs.operation, &mut errors);
    let (Some(settings), Some(subjects), Some(operation)) = (settings, subjects, operation) else {
        return Outcome::InvalidInput { errors };
    };
    if !errors.is_empty() {
        return Outcome::InvalidInput { errors };
    }
    let options = Options {
        settings: &settings,
        operation,
        old_object: old.as_ref(),
        facts: facts.as_ref(),
        origin: Default::default(),
    };
    let documents = subjects
        .iter()
        .enumerate()
        .map(|(index, subject)| {
            let Evaluated { answer, lookups } = evaluate_with_lookups(&options.call(subject));
            let (needs, found) = lookups.unzip();
            // The landing picture sees what the policy saw: the same facts.
            let scene = Scene {
                settings: &settings,
                facts: &found.unwrap_or_default(),
                pools: pools.as_deref(),
            };
            document_result(index, subject, answer, needs, &scene)
        })
        .collect();
    Outcome::Evaluated {
        documents,
        pool_errors,
        pools: pools.unwrap_or_default(),
    }
}

/// What the landing picture of one object is drawn against.
struct Scene<'a> {
    settings: &'a Settings,
    facts: &'a Facts,
    pools: Option<&'a [Pool]>,
}

fn document_result(
    index: usize,
    subject: &Subject,
    answer: Answer,
    lookups: Option<Needs>,
    scene: &Scene<'_>,
) -> DocumentResult {
    let landing = scene
        .pools
        .filter(|_| answer.verdict != Verdict::Skipped)
        .map(|pools| Landing {
            before: landing_json(&subject.object, pools, scene),
            after: answer
                .mutated_object
                .as_ref()
                .or(answer.accepted().then_some(&subject.object))
                .map(|o| landing_json(o, pools, scene)),
        });
    let after_yaml = answer
        .mutated_object
        .as_ref()
        .map(|mutated| to_yaml(&ordered_like(Some(&subject.node), mutated)));
    DocumentResult {
        index,
        name: answer.name.clone().unwrap_or_default(),
        document: answer.at.document,
        item: answer.at.item,
        at: Position {
            line: answer.at.line,
            column: answer.at.column,
        },
        accepted: answer.accepted(),
        patch: Value::Array(answer.patch),
        before_yaml: to_yaml(&subject.node),
        after_yaml,
        landing,
        api_version: answer.api_version,
        kind: answer.kind,
        namespace: answer.namespace,
        operation: answer.operation,
        verdict: answer.verdict,
        skip_reason: answer.skip_reason,
        message: answer.message,
        violations: answer.violations,
        warnings: answer.warnings,
        warning_lines: answer.warning_lines,
        signals: answer.signals,
        mutated_object: answer.mutated_object,
        lookups,
    }
}

fn landing_json(object: &Value, pools: &[Pool], scene: &Scene<'_>) -> Value {
    match landing(object, pools, scene.settings, scene.facts) {
        Ok(found) => json!({"pools": found}),
        Err(problems) => {
            json!({"problems": problems.iter().map(ToString::to_string).collect::<Vec<_>>()})
        }
    }
}

/// Every object of the text; a document that is not valid, or not a
/// Kubernetes object, is an input error (the page evaluates all or nothing).
fn read_subjects(text: &str, errors: &mut Vec<InputError>) -> Option<Vec<Subject>> {
    let mut subjects = Vec::new();
    let before = errors.len();
    for document in read_stream(text) {
        let document = match document {
            Ok(document) => document,
            Err(broken) => {
                errors.push(InputError::text("object", broken.error));
                continue;
            }
        };
        for found in objects(&document) {
            match found {
                Found::Object(subject) => subjects.push(*subject),
                Found::NotAnObject(problem) => errors.push(InputError {
                    input: "object",
                    path: None,
                    message: problem.message,
                    at: Position {
                        line: problem.at.line,
                        column: problem.at.column,
                    },
                }),
            }
        }
    }
    if errors.len() > before {
        return None;
    }
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

fn read_old_object(text: &str, errors: &mut Vec<InputError>) -> Option<Value> {
    match read_one(text) {
        Ok(root) => root.as_ref().map(Node::to_json),
        Err(e) => {
            errors.push(InputError::text("oldObject", e));
            None
        }
    }
}

/// The facts file, with the pools as the cluster's Nodes when `nodes` is
/// given; `None` (no lookups) when there is neither.
fn read_facts(
    text: &str,
    nodes: Option<&[Pool]>,
    errors: &mut Vec<InputError>,
) -> Option<HostFacts> {
    let text = match nodes {
        Some(nodes) => facts_with_nodes(text, nodes),
        None if text.trim().is_empty() => return None,
        None => text.to_string(),
    };
    match HostFacts::read(&text) {
        Ok(facts) => Some(facts),
        Err(e) => {
            errors.push(InputError::text("facts", e));
            None
        }
    }
}

/// The page's operation; empty means `CREATE`.
fn operation(text: &str, errors: &mut Vec<InputError>) -> Option<os_placement_core::Operation> {
    if text.is_empty() {
        return Some(os_placement_core::Operation::Create);
    }
    let parsed = os_placement_core::Operation::parse(text);
    if parsed.is_none() {
        errors.push(InputError {
            input: "operation",
            path: None,
            message: format!(
                "{text:?} is not an admission operation: CREATE, UPDATE, DELETE or CONNECT"
            ),
            at: Position { line: 1, column: 1 },
        });
    }
    parsed
}

fn read_page_settings(text: &str, errors: &mut Vec<InputError>) -> Option<Settings> {
    match read_settings(text) {
        Ok(settings) => Some(settings),
        Err(SettingsTextError::Text(e)) => {
            errors.push(InputError::text("settings", e));
            None
        }
        Err(SettingsTextError::Invalid { error, at }) => {
            for (problem, at) in error.problems.into_iter().zip(at) {
                let message = if problem.fix.is_empty() {
                    problem.message
                } else {
                    format!("{}; {}", problem.message, problem.fix)
                };
                errors.push(InputError {
                    input: "settings",
                    path: Some(problem.path),
                    message,
                    at,
                });
            }
            None
        }
    }
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
#[cfg(test)]
mod tests {
    use super::*;

    fn evaluated(inputs: &Inputs<'_>) -> Value {
        serde_json::to_value(run(inputs)).unwrap()
    }

    #[test]
    fn what_the_rules_do_not_select_is_skipped_not_rejected() {
        let object = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: d}\n  spec: {template: {spec: {nodeSelector: {kubernetes.io/os: linux}, containers: [{name: a, image: nginx}]}}}\n";
        let result = evaluated(&Inputs {
            object,
            operation: "CREATE",
            ..Inputs::default()
        });
        let documents = result["documents"].as_array().unwrap();
        assert_eq!(documents.len(), 2, "{result}");
        assert_eq!(documents[0]["verdict"], "skipped");
        assert_eq!(documents[0]["accepted"], true);
        assert!(documents[0]["skipReason"]
            .as_str()
            .unwrap()
            .contains("ConfigMap"));
        assert_eq!(documents[0]["patch"], json!([]));
        assert_eq!(
            (
                documents[1]["verdict"].as_str(),
                documents[1]["item"].as_u64()
            ),
            (Some("accepted"), Some(1))
        );
        assert_eq!(documents[1]["line"], 5);
    }

    #[test]
    fn every_input_problem_is_named_at_its_line() {
        let result = evaluated(&Inputs {
            object: "apiVersion: v1\nkind: Pod\n---\njust: text\n",
            facts: "imagez: {}\n",
            operation: "CREATE",
            ..Inputs::default()
        });
        assert_eq!(result["status"], "invalid-input");
        let errors = result["errors"].as_array().unwrap();
        let inputs: Vec<&str> = errors
            .iter()
            .map(|e| e["input"].as_str().unwrap())
            .collect();
        assert_eq!(inputs, ["object", "facts"], "{result}");
        assert_eq!(errors[0]["line"], 4);
        assert!(errors[1]["message"].as_str().unwrap().contains("imagez"));
        let unknown = evaluated(&Inputs {
            object: "apiVersion: v1\nkind: Pod\nspec: {containers: []}\n",
            operation: "PATCH",
            ..Inputs::default()
        });
        assert_eq!(unknown["errors"][0]["input"], "operation", "{unknown}");
    }
}
