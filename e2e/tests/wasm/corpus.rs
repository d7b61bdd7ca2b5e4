//! The 54 real manifests of the corpus (`../shared/corpus`, or
//! `$OS_PLACEMENT_CORPUS`) through the wasm with settings `{}`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use os_placement_core::Kind;
use os_placement_e2e::corpus::{
    load_sources, malformed_message_lines, placement_problem, pod_spec,
};
use os_placement_e2e::{admission_request, read_yaml, Evaluation};
use serde_json::{json, Value};

use super::host;

const CORPUS_SIZE: usize = 54;

struct Entry {
    file: String,
    os: String,
    object: Value,
}

/// The corpus directory, or `None` after a visible skip (a failure under CI).
fn corpus_or_skip() -> Option<PathBuf> {
    os_placement_e2e::corpus().unwrap_or_else(|e| panic!("{e}"))
}

fn corpus() -> Option<Vec<Entry>> {
    let dir = corpus_or_skip()?;
    let sources = load_sources(&dir).unwrap_or_else(|e| panic!("{e:#}"));
    // A SOURCES.md whose table no longer parses would leave every loop empty.
    assert_eq!(sources.len(), CORPUS_SIZE, "files listed in SOURCES.md");
    sources
        .into_iter()
        .map(|(file, os)| {
            let object = read_yaml(&dir.join(&file)).unwrap_or_else(|e| panic!("{e:#}"));
            Entry { file, os, object }
        })
        .collect::<Vec<_>>()
        .into()
}

fn evaluate(object: &Value) -> os_placement_e2e::error::Result<Evaluation> {
    host().validate(&admission_request(object, "CREATE", None, None), &json!({}))
}

fn report(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} problem(s) in the corpus:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn sources_cover_the_corpus() {
    let Some(dir) = corpus_or_skip() else { return };
    let sources: BTreeMap<String, String> = load_sources(&dir).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(sources.len(), CORPUS_SIZE, "{sources:?}");
    for (file, os) in &sources {
        assert!(os == "linux" || os == "windows", "{file}: os {os:?}");
        assert!(dir.join(file).is_file(), "{file} listed but missing");
    }
    let on_disk: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    for path in on_disk {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            sources.contains_key(&name),
            "{name} not listed in SOURCES.md"
        );
    }
}

/// Never a trap; accepted means placed on the documented OS; rejected means
/// a message whose every line is `<path>: <what>; <fix>`; and the verdict is
/// the core's (core/tests/corpus.rs pins those per file), so a module that
/// rejected every manifest cleanly would not pass.
#[test]
fn corpus_is_placed_or_rejected_cleanly() {
    let mut failures = Vec::new();
    let Some(entries) = corpus() else { return };
    let settings = os_placement_core::Settings::default();
    for entry in entries {
        let file = &entry.file;
        let request = admission_request(&entry.object, "CREATE", None, None);
        let core = os_placement_core::evaluate_request(&request, &settings);
        match evaluate(&entry.object) {
            Ok(evaluation) if evaluation.response.accepted != core.accepted => {
                failures.push(format!(
                    "{file}: accepted {} through the wasm, {} by the core: {}",
                    evaluation.response.accepted,
                    core.accepted,
                    evaluation.response.message()
                ))
            }
            Err(e) => failures.push(format!("{file}: policy failed (waPC error/trap): {e:#}")),
            Ok(evaluation) if evaluation.response.accepted => {
                let placed = evaluation.resulting_object(&entry.object);
                if let Some(problem) = placement_problem(placed, &entry.os) {
                    failures.push(format!("{file} ({}): accepted but {problem}", entry.os));
                }
            }
            Ok(evaluation) => {
                for line in malformed_message_lines(evaluation.response.message()) {
                    failures.push(format!(
                        "{file}: rejection line {line:?} is not `<path>: <what>; <fix>`"
                    ));
                }
            }
        }
    }
    report(&failures);
}

/// The mutated object, sent again, is accepted without a patch.
#[test]
fn corpus_mutation_is_idempotent() {
    let mut failures = Vec::new();
    let Some(entries) = corpus() else { return };
    let mut mutated = 0;
    for entry in entries {
        let file = &entry.file;
        let first = match evaluate(&entry.object) {
            Ok(first) => first,
            Err(e) => {
                failures.push(format!("{file}: the policy failed: {e:#}"));
                continue;
            }
        };
        if !first.response.accepted {
            continue;
        }
        mutated += usize::from(first.patched());
        let again = first.resulting_object(&entry.object).clone();
        match evaluate(&again) {
            Err(e) => failures.push(format!("{file}: second pass failed: {e:#}")),
            Ok(second) if !second.response.accepted => failures.push(format!(
                "{file}: mutated object rejected: {}",
                second.response.message()
            )),
            Ok(second) if second.patched() => failures.push(format!(
                "{file}: mutated object patched again: {}",
                serde_json::to_string(&second.patch).unwrap_or_default()
            )),
            Ok(_) => {}
        }
    }
    report(&failures);
    // Idempotence is only tested on objects the first pass changed.
    assert!(mutated > 0, "no corpus manifest was mutated");
}

/// Patches only add placement fields of the pod spec (nodeSelector,
/// tolerations, os, runtimeClassName), nothing is removed or replaced, and
/// a workload also gets the record of exactly the nodeSelector entries added.
#[test]
fn corpus_patches_are_confined_to_placement_fields() {
    const FIELDS: [&str; 4] = ["nodeSelector", "tolerations", "os", "runtimeClassName"];
    const RECORD: &str = "os-placement.kubewarden.io/added";
    let mut failures = Vec::new();
    let Some(entries) = corpus() else { return };
    let (mut patched, mut recorded_workloads) = (0, 0);
    for entry in entries {
        let file = &entry.file;
        let evaluation =
            evaluate(&entry.object).unwrap_or_else(|e| panic!("{file}: the policy failed: {e:#}"));
        let Some(patch) = evaluation.patch.filter(|p| !p.0.is_empty()) else {
            continue;
        };
        patched += 1;
        let kind = entry.object.get("kind").and_then(Value::as_str);
        let spec_pointer: String = kind
            .and_then(Kind::parse)
            .map(|k| {
                k.pod_spec_fields()
                    .iter()
                    .map(|f| format!("/{f}"))
                    .collect()
            })
            .unwrap_or_else(|| panic!("{file}: not a kind the policy evaluates"));
        assert!(pod_spec(&entry.object).is_some(), "{file}: no pod spec");
        let selector = format!("{spec_pointer}/nodeSelector");
        let mut added = serde_json::Map::new();
        let mut recorded = None;
        for op in serde_json::to_value(&patch).unwrap().as_array().unwrap() {
            let op_kind = op["op"].as_str().unwrap_or_default();
            let path = op["path"].as_str().unwrap_or_default();
            if op_kind == "add" && path == "/metadata/annotations" {
                recorded = op["value"][RECORD].as_str().map(str::to_string);
                continue;
            }
            if op_kind == "add" && path == "/metadata/annotations/os-placement.kubewarden.io~1added"
            {
                recorded = op["value"].as_str().map(str::to_string);
                continue;
            }
            if path == selector {
                for (k, v) in op["value"].as_object().into_iter().flatten() {
                    added.insert(
                        format!("{selector}/{}", k.replace('~', "~0").replace('/', "~1")),
                        v.clone(),
                    );
                }
            } else if path.starts_with(&format!("{selector}/")) {
                added.insert(path.to_string(), op["value"].clone());
            }
            let field = path
                .strip_prefix(spec_pointer.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .and_then(|rest| rest.split('/').next());
            if op_kind != "add" || !field.is_some_and(|f| FIELDS.contains(&f)) {
                failures.push(format!(
                    "{file}: patch operation outside placement fields: {op}"
                ));
            }
        }
        let expected = (kind != Some("Pod") && !added.is_empty()).then_some(Value::Object(added));
        recorded_workloads += usize::from(expected.is_some());
        let recorded: Option<Value> = recorded.and_then(|r| serde_json::from_str(&r).ok());
        if recorded != expected {
            failures.push(format!(
                "{file}: record {recorded:?} does not list the added entries {expected:?}"
            ));
        }
    }
    report(&failures);
    // Without patches, or without a workload's record, there was nothing to confine.
    assert!(patched > 0, "no corpus manifest was patched");
    assert!(
        recorded_workloads > 0,
        "no workload got a nodeSelector record"
    );
}

/// The guest's heap is a per-request arena (policy/src/arena.rs): one
/// instance serving many requests, some too large for its chunk, must answer
/// each exactly as a fresh instance does.
#[test]
fn one_instance_answers_a_sequence_as_fresh_instances_do() {
    let Some(entries) = corpus() else { return };
    let settings =
        json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}});
    let containers: Vec<Value> = (0..3000)
        .map(|i| json!({"name": format!("c{i}"), "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}))
        .collect();
    let large = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "large"},
        "spec": {"containers": containers}});
    let mut objects: Vec<&Value> = entries.iter().map(|e| &e.object).collect();
    objects.insert(objects.len() / 2, &large);
    let sequence: Vec<&Value> = objects.iter().chain(objects.iter()).copied().collect();
    let warm = host();
    let mut mutated = 0;
    for (i, object) in sequence.iter().enumerate() {
        let request = admission_request(object, "CREATE", None, None);
        let payload = serde_json::to_vec(&json!({"request": request, "settings": settings}))
            .unwrap_or_else(|e| panic!("{e}"));
        let fresh = host()
            .call("validate", &payload)
            .unwrap_or_else(|e| panic!("{e:#}"));
        let again = warm
            .call("validate", &payload)
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(
            String::from_utf8_lossy(&again),
            String::from_utf8_lossy(&fresh),
            "request {i} of the sequence"
        );
        // Every answer names `mutated_object` (null when unchanged): count the objects.
        let answer: Value = serde_json::from_slice(&fresh).unwrap_or_else(|e| panic!("{e}"));
        mutated += usize::from(answer["mutated_object"].is_object());
        if i % 10 == 0 {
            let valid = warm
                .validate_settings(&settings)
                .unwrap_or_else(|e| panic!("{e:#}"));
            assert!(valid.valid);
        }
    }
    // Both kinds of answer, so the arena is reused after each.
    assert!(
        mutated > 2 && mutated < sequence.len(),
        "the sequence must mix patched and unpatched answers: {mutated} of {} patched",
        sequence.len()
    );
}
