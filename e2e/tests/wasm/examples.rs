//! Every case of `examples/cases.yaml` through the wasm: it must match its `expect`.

use std::path::PathBuf;

use os_placement_e2e::corpus::malformed_message_lines;
use os_placement_e2e::{admission_request, load_cases, repo_root, run_case, Case, DEFAULT_CASES};

use super::module;

fn cases() -> (PathBuf, Vec<Case>) {
    let root = repo_root();
    let path = root.join(DEFAULT_CASES);
    assert!(path.is_file(), "{} not found", path.display());
    let cases = load_cases(&path).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(!cases.is_empty(), "{} lists no case", path.display());
    (root, cases)
}

fn report(failures: &[String], total: usize) {
    assert!(
        failures.is_empty(),
        "{} problem(s) in {total} example cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn example_cases_match_expectations() {
    let (root, cases) = cases();
    let mut failures = Vec::new();
    for case in &cases {
        if case.expect.is_none() {
            failures.push(format!("{}: no `expect`", case.name));
        }
        let resolved = match case.resolve(&root) {
            Ok(resolved) => resolved,
            Err(e) => {
                failures.push(format!("{}: {e:#}", case.name));
                continue;
            }
        };
        let host = resolved
            .host(module())
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.name));
        let outcome = run_case(&host, resolved);
        failures.extend(
            outcome
                .mismatches
                .iter()
                .map(|m| format!("{}: {m}", case.name)),
        );
    }
    report(&failures, cases.len());
}

#[test]
fn example_rejections_follow_message_format() {
    let (root, cases) = cases();
    let mut failures = Vec::new();
    let mut rejected = Vec::new();
    for case in &cases {
        let resolved = case
            .resolve(&root)
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.name));
        let host = resolved
            .host(module())
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.name));
        let evaluation = run_case(&host, resolved)
            .evaluation
            .unwrap_or_else(|e| panic!("{}: the policy failed: {e:#}", case.name));
        if !evaluation.response.accepted {
            rejected.push(case.name.as_str());
            for line in malformed_message_lines(evaluation.response.message()) {
                failures.push(format!(
                    "{}: message line {line:?} is not `<path>: <what>; <fix>`",
                    case.name
                ));
            }
        }
    }
    report(&failures, cases.len());
    // The messages checked are those of the cases cases.yaml expects rejected.
    let expected: Vec<&str> = cases
        .iter()
        .filter(|c| c.expect.as_ref().is_some_and(|e| !e.accepted))
        .map(|c| c.name.as_str())
        .collect();
    assert!(!expected.is_empty(), "no example case expects a rejection");
    assert_eq!(rejected, expected, "cases rejected vs cases expecting it");
}

/// Mutating twice gives the same object as mutating once: the mutated object,
/// sent again with the same settings, is accepted without a patch.
#[test]
fn example_mutations_are_idempotent() {
    let (root, cases) = cases();
    let mut failures = Vec::new();
    let mut mutated = Vec::new();
    for case in cases.iter().filter(|c| c.operation != "DELETE") {
        let resolved = case
            .resolve(&root)
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.name));
        let settings = resolved.settings.clone();
        let old_object = resolved.old_object.clone();
        let host = resolved
            .host(module())
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.name));
        let first = run_case(&host, resolved)
            .evaluation
            .unwrap_or_else(|e| panic!("{}: the policy failed: {e:#}", case.name));
        if !first.response.accepted || !first.patched() {
            continue;
        }
        mutated.push(case.name.as_str());
        // patched() is a diff against mutated_object, so it is there.
        let mutated = first.response.mutated_object.as_ref().unwrap();
        // The same request again, carrying the mutated object.
        let request = admission_request(
            mutated,
            &case.operation,
            old_object.as_ref(),
            case.sub_resource.as_deref(),
        );
        match host.validate(&request, &settings) {
            Err(e) => failures.push(format!("{}: second pass failed: {e:#}", case.name)),
            Ok(second) if !second.response.accepted => failures.push(format!(
                "{}: mutated object rejected: {}",
                case.name,
                second.response.message()
            )),
            Ok(second) if second.patched() => failures.push(format!(
                "{}: mutated object patched again: {}",
                case.name,
                serde_json::to_string(&second.patch).unwrap_or_default()
            )),
            Ok(_) => {}
        }
    }
    report(&failures, cases.len());
    // The cases checked are those cases.yaml expects patched, so none is skipped.
    let expected: Vec<&str> = cases
        .iter()
        .filter(|c| c.operation != "DELETE")
        .filter(|c| {
            c.expect
                .as_ref()
                .is_some_and(|e| e.accepted && e.patched == Some(true))
        })
        .map(|c| c.name.as_str())
        .collect();
    assert!(!expected.is_empty(), "no example case expects a patch");
    assert_eq!(
        mutated, expected,
        "cases mutated vs cases expecting a patch"
    );
}
