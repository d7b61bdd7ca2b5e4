//! The doors inputs (`tests/inputs/doors.yaml`) through the door: every
//! object answered as listed there. The same inputs go through the CLI,
//! the playground and the policy module in the CLI's doors test.

use std::path::{Path, PathBuf};

use os_placement_core::Operation;
use os_placement_door::{
    evaluate_text, read_one, read_settings, HostFacts, Options, Outcome, Verdict,
};
use serde_json::Value;

fn inputs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/inputs")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The cases of doors.yaml, as JSON.
pub fn cases() -> Vec<Value> {
    let text = read(&inputs_dir().join("doors.yaml"));
    let cases = read_one(&text).unwrap().unwrap().to_json();
    cases.as_array().unwrap().clone()
}

fn codes(findings: &[os_placement_door::Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| f.item.code.as_str().to_owned())
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn every_doors_input_is_answered_as_listed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cases = cases();
    assert!(cases.len() >= 12, "{} cases", cases.len());
    let mut compared = 0;
    for case in &cases {
        let input = case["input"].as_str().unwrap();
        let label = format!("{input} with {}", case["settings"]);
        let settings =
            read_settings(&read(&root.join(case["settings"].as_str().unwrap()))).unwrap();
        let facts = case["facts"]
            .as_str()
            .map(|f| HostFacts::read(&read(&inputs_dir().join(f))).unwrap());
        let operation = case["operation"]
            .as_str()
            .map_or(Operation::Create, |o| Operation::parse(o).unwrap());
        let options = Options {
            settings: &settings,
            operation,
            old_object: None,
            facts: facts.as_ref(),
            origin: Default::default(),
        };
        let outcomes = evaluate_text(&read(&inputs_dir().join(input)), &options);
        let expected = case["expect"].as_array().unwrap();
        assert_eq!(outcomes.len(), expected.len(), "{label}: {outcomes:#?}");
        for (outcome, expect) in outcomes.iter().zip(expected) {
            let Outcome::Answer(answer) = outcome else {
                panic!("{label}: {outcome:?}")
            };
            let verdict = match answer.verdict {
                Verdict::Accepted if answer.patched() => "patched",
                Verdict::Accepted => "accepted",
                Verdict::Rejected => "rejected",
                Verdict::Skipped => "skipped",
            };
            let shown = format!(
                "{label}: {} {:?} {verdict} {:?} {:?} {:?}",
                answer.kind,
                answer.name,
                codes(&answer.violations),
                codes(&answer.warnings),
                answer.skip_reason
            );
            assert_eq!(answer.kind, expect["kind"].as_str().unwrap(), "{shown}");
            assert_eq!(answer.name.as_deref(), expect["name"].as_str(), "{shown}");
            assert_eq!(verdict, expect["verdict"].as_str().unwrap(), "{shown}");
            assert_eq!(
                codes(&answer.violations),
                strings(&expect["violations"]),
                "{shown}"
            );
            for code in strings(&expect["warnings"]) {
                assert!(
                    codes(&answer.warnings).contains(&code),
                    "{shown}: no {code}"
                );
            }
            assert_eq!(
                answer.skip_reason.is_some(),
                verdict == "skipped",
                "{shown}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 30, "{compared}");
}
