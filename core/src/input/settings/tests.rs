//! Settings parsing and validation, key by key.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::*;
use crate::vocab::build::WindowsBuild;
use serde_json::json;

fn ok(v: Value) -> Settings {
    Settings::from_value(&v).unwrap_or_else(|e| panic!("settings {v} rejected:\n{e}"))
}

/// The problems, one per line, as `validate_settings` shows them.
fn problems(v: Value) -> Vec<String> {
    match Settings::from_value(&v) {
        Ok(_) => panic!("settings {v} accepted"),
        Err(e) => e.problems.iter().map(ToString::to_string).collect(),
    }
}

fn message(v: Value) -> String {
    problems(v).join("\n")
}

/// Asserts exactly one problem, starting with `path: `, containing every `words`.
fn one_problem(v: Value, path: &str, words: &[&str]) {
    let found = problems(v.clone());
    assert_eq!(found.len(), 1, "settings {v}: {found:#?}");
    let line = &found[0];
    assert!(
        line.starts_with(&format!("{path}: ")),
        "settings {v}: expected path {path}, got {line}"
    );
    for w in words {
        assert!(line.contains(w), "settings {v}: {line:?} lacks {w:?}");
    }
}

fn rc(name: &str, scheduling: Value) -> Value {
    json!({"name": name, "scheduling": scheduling})
}

fn eks_taint() -> Taint {
    Taint {
        key: "os".into(),
        value: "windows".into(),
        effect: "NoSchedule".into(),
    }
}

fn assert_defaults(s: &Settings) {
    assert!(s.mutate);
    assert_eq!(s.default_os, DefaultOs::Linux);
    assert_eq!(s.windows_taint(), None);
    assert!(s.pin_windows_build);
    assert!(!s.set_pod_os);
    assert!(!s.prefer_runtime_class);
    assert!(s.runtime_classes.is_empty());
    assert!(s.windows_images.is_empty());
}

// ---- defaults ----

#[test]
fn empty_object_gives_the_documented_defaults() {
    assert_defaults(&ok(json!({})));
}

#[test]
fn null_settings_give_the_documented_defaults() {
    assert_defaults(&ok(Value::Null));
}

#[test]
fn default_impl_matches_parsed_empty_settings() {
    assert_defaults(&Settings::default());
}

#[test]
fn default_windows_taint_is_none_so_no_taint_is_assumed() {
    assert_eq!(ok(json!({})).windows_taint(), None);
}

#[test]
fn settings_that_are_not_an_object_are_rejected() {
    for v in [json!([]), json!("mutate"), json!(3), json!(true)] {
        one_problem(v, "settings", &["expected an object"]);
    }
}

// ---- every key parsed ----

#[test]
fn every_key_is_parsed() {
    let s = ok(json!({
        "mutate": false,
        "defaultOS": "none",
        "windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"},
        "linuxTaint": {"key": "cattle.io/os", "value": "linux", "effect": "NoSchedule"},
        "pinWindowsBuild": false,
        "setPodOS": true,
        "preferRuntimeClass": true,
        "runtimeClasses": [rc("windows-2022", json!({
            "nodeSelector": {
                "kubernetes.io/os": "windows",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/windows-build": "10.0.20348"
            },
            "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]
        }))],
        "windowsImages": [
            {"pattern": "registry.example.com/win/*", "windowsBuild": "10.0.17763"},
            {"pattern": "registry.example.com/any-win/*"}
        ]
    }));
    assert!(!s.mutate);
    assert_eq!(s.default_os, DefaultOs::None);
    assert_eq!(s.windows_taint(), Some(&eks_taint()));
    assert!(!s.pin_windows_build);
    assert!(s.set_pod_os);
    assert!(s.prefer_runtime_class);
    assert_eq!(s.runtime_classes.len(), 1);
    let class = &s.runtime_classes[0];
    assert_eq!(class.name, "windows-2022");
    assert_eq!(class.scheduling.node_selector.len(), 3);
    assert_eq!(
        class
            .scheduling
            .node_selector
            .get("node.kubernetes.io/windows-build")
            .map(String::as_str),
        Some("10.0.20348")
    );
    assert_eq!(class.scheduling.tolerations.len(), 1);
    assert_eq!(
        class.scheduling.tolerations[0].value.as_deref(),
        Some("windows")
    );
    assert_eq!(s.runtime_class("windows-2022"), Some(class));
    assert_eq!(s.runtime_class("windows-2019"), None);
    assert_eq!(s.windows_images.len(), 2);
    assert_eq!(
        s.windows_images[0].pattern.as_str(),
        "registry.example.com/win/*"
    );
    assert_eq!(
        s.windows_images[0].windows_build,
        Some(WindowsBuild::LTSC2019)
    );
    assert_eq!(s.windows_images[1].windows_build, None);
}

#[test]
fn default_os_linux_is_parsed() {
    assert_eq!(
        ok(json!({"defaultOS": "linux"})).default_os,
        DefaultOs::Linux
    );
}

#[test]
fn booleans_true_are_parsed() {
    let s = ok(json!({"mutate": true, "pinWindowsBuild": true, "setPodOS": false}));
    assert!(s.mutate && s.pin_windows_build && !s.set_pod_os);
}

#[test]
fn null_lists_mean_empty_lists() {
    let s = ok(json!({"runtimeClasses": null, "windowsImages": null}));
    assert!(s.runtime_classes.is_empty() && s.windows_images.is_empty());
}

#[test]
fn empty_lists_are_accepted() {
    let s = ok(json!({"runtimeClasses": [], "windowsImages": []}));
    assert!(s.runtime_classes.is_empty() && s.windows_images.is_empty());
}

// ---- unknown keys ----

#[test]
fn unknown_top_level_key_is_rejected_naming_it() {
    one_problem(
        json!({"mutate": true, "bogus": 1}),
        "bogus",
        &["unknown setting", "mutate", "windowsTaint"],
    );
}

#[test]
fn misspelled_top_level_key_is_rejected_not_ignored() {
    // camelCase exactly: defaultOs is not defaultOS.
    one_problem(
        json!({"defaultOs": "none"}),
        "defaultOs",
        &["unknown setting"],
    );
    one_problem(
        json!({"set_pod_os": true}),
        "set_pod_os",
        &["unknown setting"],
    );
}

#[test]
fn unknown_key_in_windows_taint_is_rejected_with_its_path() {
    one_problem(
        json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule", "bogus": 1}}),
        "windowsTaint.bogus",
        &["unknown setting", "key, value, effect"],
    );
}

#[test]
fn unknown_key_in_runtime_class_is_rejected_with_its_path() {
    one_problem(
        json!({"runtimeClasses": [{"name": "w", "scheduling": {}, "runtimeHandler": "runhcs"}]}),
        "runtimeClasses[0].runtimeHandler",
        &["unknown setting", "name, scheduling, handler, isolation"],
    );
}

#[test]
fn unknown_key_in_scheduling_is_rejected_with_its_path() {
    one_problem(
        json!({"runtimeClasses": [rc("w", json!({"nodeSelector": {}, "bogus": true}))]}),
        "runtimeClasses[0].scheduling.bogus",
        &["unknown setting", "nodeSelector, tolerations"],
    );
}

#[test]
fn unknown_key_in_second_runtime_class_names_its_index() {
    one_problem(
        json!({"runtimeClasses": [rc("a", json!({})), rc("b", json!({"bogus": 1}))]}),
        "runtimeClasses[1].scheduling.bogus",
        &["unknown setting"],
    );
}

#[test]
fn unknown_key_in_toleration_is_rejected_with_its_path() {
    one_problem(
        json!({"runtimeClasses": [rc("w", json!({"tolerations": [
            {"key": "os", "operator": "Exists", "effect": "NoSchedule", "bogus": 1}
        ]}))]}),
        "runtimeClasses[0].scheduling.tolerations[0].bogus",
        &["unknown setting"],
    );
}

#[test]
fn unknown_key_in_windows_image_rule_is_rejected_with_its_path() {
    one_problem(
        json!({"windowsImages": [{"pattern": "a/*"}, {"pattern": "b/*", "build": "10.0.17763"}]}),
        "windowsImages[1].build",
        &["unknown setting", "pattern, windowsBuild"],
    );
}

// ---- wrong types ----

#[test]
fn mutate_as_string_names_mutate_and_expects_a_boolean() {
    one_problem(
        json!({"mutate": "yes"}),
        "mutate",
        &["expected true or false", "\"yes\""],
    );
}

#[test]
fn every_boolean_key_rejects_a_non_boolean() {
    for key in [
        "mutate",
        "pinWindowsBuild",
        "setPodOS",
        "preferRuntimeClass",
    ] {
        one_problem(json!({ key: 1 }), key, &["expected true or false"]);
        one_problem(json!({ key: "true" }), key, &["expected true or false"]);
    }
}

#[test]
fn default_os_as_number_expects_a_string() {
    one_problem(json!({"defaultOS": 1}), "defaultOS", &["expected a string"]);
}

#[test]
fn lists_as_objects_are_rejected() {
    one_problem(
        json!({"runtimeClasses": {"name": "w"}}),
        "runtimeClasses",
        &["expected a list"],
    );
    one_problem(
        json!({"windowsImages": "registry/*"}),
        "windowsImages",
        &["expected a list"],
    );
}

#[test]
fn list_items_that_are_not_objects_are_rejected_with_their_index() {
    one_problem(
        json!({"runtimeClasses": ["windows-2022"]}),
        "runtimeClasses[0]",
        &["expected an object"],
    );
    one_problem(
        json!({"windowsImages": [{"pattern": "a"}, 3]}),
        "windowsImages[1]",
        &["expected an object"],
    );
}

#[test]
fn windows_taint_as_string_is_rejected() {
    one_problem(
        json!({"windowsTaint": "os=windows:NoSchedule"}),
        "windowsTaint",
        &["expected an object"],
    );
}

// ---- defaultOS ----

#[test]
fn default_os_other_than_linux_or_none_is_rejected() {
    for bad in ["windows", "Linux", "", "auto"] {
        one_problem(
            json!({"defaultOS": bad}),
            "defaultOS",
            &["is not supported", "\"linux\"", "\"none\""],
        );
    }
}

// ---- windowsTaint ----

#[test]
fn windows_taint_null_means_untainted() {
    assert_eq!(
        ok(json!({"windowsTaint": null})).windows_taint,
        TaintSetting::Untainted
    );
}

#[test]
fn windows_taint_gke_key_is_accepted() {
    let s = ok(
        json!({"windowsTaint": {"key": "node.kubernetes.io/os", "value": "windows", "effect": "NoSchedule"}}),
    );
    assert_eq!(
        s.windows_taint().map(|t| t.key.clone()),
        Some("node.kubernetes.io/os".to_string())
    );
}

#[test]
fn windows_taint_value_is_optional() {
    let s = ok(json!({"windowsTaint": {"key": "os", "effect": "NoExecute"}}));
    assert_eq!(
        s.windows_taint(),
        Some(&Taint {
            key: "os".into(),
            value: String::new(),
            effect: "NoExecute".into()
        })
    );
}

#[test]
fn windows_taint_accepts_every_effect() {
    for effect in ["NoSchedule", "PreferNoSchedule", "NoExecute"] {
        let s = ok(json!({"windowsTaint": {"key": "os", "value": "windows", "effect": effect}}));
        assert_eq!(
            s.windows_taint().map(|t| t.effect.clone()),
            Some(effect.to_string())
        );
    }
}

#[test]
fn windows_taint_without_key_is_rejected() {
    one_problem(
        json!({"windowsTaint": {"value": "windows", "effect": "NoSchedule"}}),
        "windowsTaint.key",
        &["is required"],
    );
}

#[test]
fn windows_taint_without_effect_is_rejected() {
    one_problem(
        json!({"windowsTaint": {"key": "os", "value": "windows"}}),
        "windowsTaint.effect",
        &["is required", "NoSchedule"],
    );
}

#[test]
fn windows_taint_with_invalid_key_is_rejected() {
    for bad in ["", "os windows", "-os", "a/b/c", "Kubernetes.IO/os"] {
        one_problem(
            json!({"windowsTaint": {"key": bad, "value": "windows", "effect": "NoSchedule"}}),
            "windowsTaint.key",
            &["not a valid taint key"],
        );
    }
}

#[test]
fn windows_taint_with_bad_effect_is_rejected() {
    for bad in ["noschedule", "NoScheduling", ""] {
        one_problem(
            json!({"windowsTaint": {"key": "os", "value": "windows", "effect": bad}}),
            "windowsTaint.effect",
            &["is not a taint effect"],
        );
    }
}

#[test]
fn windows_taint_with_invalid_value_is_rejected() {
    one_problem(
        json!({"windowsTaint": {"key": "os", "value": "-windows-", "effect": "NoSchedule"}}),
        "windowsTaint.value",
        &["not a valid taint value"],
    );
}

#[test]
fn windows_taint_with_key_and_effect_both_wrong_reports_both() {
    let found = problems(json!({"windowsTaint": {"key": "a b", "effect": "Never"}}));
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].starts_with("windowsTaint.key: "));
    assert!(found[1].starts_with("windowsTaint.effect: "));
}

// ---- build strings ----

#[test]
fn windows_image_build_must_be_10_0_n() {
    for bad in [
        "17763",
        "10.0",
        "10.0.",
        "10.0.17763.1",
        "ltsc2019",
        "10.0.017763",
        "6.3.9600",
        " 10.0.17763",
        "10.0.abc",
    ] {
        one_problem(
            json!({"windowsImages": [{"pattern": "r/*", "windowsBuild": bad}]}),
            "windowsImages[0].windowsBuild",
            &["is not a Windows build", "10.0.N"],
        );
    }
}

#[test]
fn windows_image_build_as_number_is_rejected() {
    one_problem(
        json!({"windowsImages": [{"pattern": "r/*", "windowsBuild": 17763}]}),
        "windowsImages[0].windowsBuild",
        &["expected a string"],
    );
}

#[test]
fn windows_image_build_null_means_from_the_tag() {
    let s = ok(json!({"windowsImages": [{"pattern": "r/*", "windowsBuild": null}]}));
    assert_eq!(s.windows_images[0].windows_build, None);
}

#[test]
fn runtime_class_build_label_must_be_10_0_n() {
    for bad in ["20348", "10.0.20348.1", "ltsc2022", "10.0.x"] {
        one_problem(
            json!({"runtimeClasses": [rc("w", json!({"nodeSelector": {"node.kubernetes.io/windows-build": bad}}))]}),
            "runtimeClasses[0].scheduling.nodeSelector[node.kubernetes.io/windows-build]",
            &["is not a Windows build", "10.0.N"],
        );
    }
}

#[test]
fn runtime_class_valid_build_label_is_accepted() {
    let s = ok(json!({"runtimeClasses": [rc("w", json!({"nodeSelector": {
        "kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"}}))]}));
    assert_eq!(s.runtime_classes.len(), 1);
}

// ---- RuntimeClasses ----

#[test]
fn runtime_class_os_value_must_be_linux_or_windows() {
    for bad in ["Windows", "win", ""] {
        one_problem(
            json!({"runtimeClasses": [rc("w", json!({"nodeSelector": {"kubernetes.io/os": bad}}))]}),
            "runtimeClasses[0].scheduling.nodeSelector[kubernetes.io/os]",
            &["is not an OS label value", "linux or windows"],
        );
    }
    for good in ["linux", "windows"] {
        ok(
            json!({"runtimeClasses": [rc("w", json!({"nodeSelector": {"kubernetes.io/os": good}}))]}),
        );
    }
}

#[test]
fn runtime_class_selector_value_that_is_not_a_string_is_rejected() {
    one_problem(
        json!({"runtimeClasses": [rc("w", json!({"nodeSelector": {"kubernetes.io/arch": 64}}))]}),
        "runtimeClasses[0].scheduling.nodeSelector[kubernetes.io/arch]",
        &["expected a string"],
    );
}

#[test]
fn runtime_class_selector_with_invalid_key_or_value_is_rejected() {
    let text =
        message(json!({"runtimeClasses": [rc("w", json!({"nodeSelector": {"bad key": "v"}}))]}));
    assert!(
        text.starts_with("runtimeClasses[0].scheduling.nodeSelector[bad key]: "),
        "{text}"
    );
    let text = message(
        json!({"runtimeClasses": [rc("w", json!({"nodeSelector": {"kubernetes.io/arch": "amd 64"}}))]}),
    );
    assert!(text.contains("not a valid label value"), "{text}");
}

#[test]
fn duplicate_runtime_class_names_are_rejected() {
    one_problem(
        json!({"runtimeClasses": [rc("windows-2022", json!({})), rc("windows-2019", json!({})), rc("windows-2022", json!({}))]}),
        "runtimeClasses[2].name",
        &["\"windows-2022\"", "declared twice"],
    );
}

#[test]
fn runtime_class_name_in_upper_case_is_rejected() {
    one_problem(
        json!({"runtimeClasses": [rc("Windows-2022", json!({}))]}),
        "runtimeClasses[0].name",
        &["not a valid RuntimeClass name", "DNS subdomain"],
    );
}

#[test]
fn runtime_class_name_with_underscore_is_rejected() {
    one_problem(
        json!({"runtimeClasses": [rc("windows_2022", json!({}))]}),
        "runtimeClasses[0].name",
        &["not a valid RuntimeClass name"],
    );
}

#[test]
fn runtime_class_name_with_dots_is_a_valid_subdomain() {
    ok(json!({"runtimeClasses": [rc("runhcs.windows-2022", json!({}))]}));
}

#[test]
fn runtime_class_without_name_is_rejected() {
    one_problem(
        json!({"runtimeClasses": [{"scheduling": {}}]}),
        "runtimeClasses[0].name",
        &["is required"],
    );
}

#[test]
fn runtime_class_without_scheduling_is_rejected() {
    one_problem(
        json!({"runtimeClasses": [{"name": "w"}]}),
        "runtimeClasses[0].scheduling",
        &["is required"],
    );
}

#[test]
fn runtime_class_scheduling_that_is_not_an_object_is_rejected() {
    one_problem(
        json!({"runtimeClasses": [rc("w", json!([]))]}),
        "runtimeClasses[0].scheduling",
        &["expected an object"],
    );
}

// ---- tolerations ----

fn toleration_problem(t: Value, path_suffix: &str, words: &[&str]) {
    one_problem(
        json!({"runtimeClasses": [rc("w", json!({"tolerations": [t]}))]}),
        &format!("runtimeClasses[0].scheduling.tolerations[0]{path_suffix}"),
        words,
    );
}

#[test]
fn toleration_with_bad_operator_is_rejected() {
    toleration_problem(
        json!({"key": "os", "operator": "In", "value": "windows"}),
        ".operator",
        &["\"In\"", "not a toleration operator", "Equal or Exists"],
    );
}

#[test]
fn toleration_with_bad_effect_is_rejected() {
    toleration_problem(
        json!({"key": "os", "operator": "Equal", "value": "windows", "effect": "Never"}),
        ".effect",
        &["\"Never\"", "not a taint effect"],
    );
}

#[test]
fn toleration_exists_with_value_is_rejected() {
    toleration_problem(
        json!({"key": "os", "operator": "Exists", "value": "windows"}),
        ".value",
        &["must be empty with operator Exists"],
    );
}

#[test]
fn toleration_equal_with_empty_key_is_rejected() {
    toleration_problem(
        json!({"operator": "Equal", "value": "windows"}),
        ".key",
        &["is required with operator Equal"],
    );
    // No operator means Equal.
    toleration_problem(json!({"value": "windows"}), ".key", &["is required"]);
}

#[test]
fn toleration_with_wrong_types_is_rejected() {
    toleration_problem(
        json!({"key": "os", "operator": "Exists", "tolerationSeconds": "soon"}),
        ".tolerationSeconds",
        &["expected an integer", "\"soon\""],
    );
    toleration_problem(
        json!({"key": 7, "operator": "Exists"}),
        ".key",
        &["expected a string", "the number 7"],
    );
}

#[test]
fn toleration_that_is_not_an_object_is_rejected() {
    toleration_problem(json!("os=windows"), "", &["expected an object"]);
}

#[test]
fn tolerations_as_object_are_rejected() {
    one_problem(
        json!({"runtimeClasses": [rc("w", json!({"tolerations": {"key": "os"}}))]}),
        "runtimeClasses[0].scheduling.tolerations",
        &["expected a list"],
    );
}

#[test]
fn valid_tolerations_are_accepted() {
    let s = ok(json!({"runtimeClasses": [rc("w", json!({"tolerations": [
        {"operator": "Exists"},
        {"key": "os", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "os", "value": "windows"},
        {"key": "os", "operator": "Equal", "value": "windows", "effect": "NoExecute", "tolerationSeconds": 30},
        {"key": "os", "operator": "Equal", "value": "windows", "effect": ""}
    ]}))]}));
    assert_eq!(s.runtime_classes[0].scheduling.tolerations.len(), 5);
}

#[test]

fn toleration_with_empty_operator_is_accepted_as_equal() {
    // k8s ValidateTolerations: `case core.TolerationOpEqual, "":` is valid.
    ok(json!({"runtimeClasses": [rc("w", json!({"tolerations": [
        {"key": "os", "operator": "", "value": "windows", "effect": "NoSchedule"}
    ]}))]}));
}

// ---- windowsImages patterns ----

#[test]
fn windows_image_pattern_with_unclosed_class_is_rejected() {
    one_problem(
        json!({"windowsImages": [{"pattern": "registry.example.com/win/[abc*"}]}),
        "windowsImages[0].pattern",
        &["never closed"],
    );
}

#[test]
fn windows_image_empty_pattern_is_rejected() {
    one_problem(
        json!({"windowsImages": [{"pattern": ""}]}),
        "windowsImages[0].pattern",
        &["empty"],
    );
}

#[test]
fn windows_image_pattern_errors_name_their_index() {
    for (pattern, words) in [("a/[]", "empty"), ("a/[z-a]", "reversed"), ("a/\\", "lone")] {
        one_problem(
            json!({"windowsImages": [{"pattern": "ok/*"}, {"pattern": pattern}]}),
            "windowsImages[1].pattern",
            &[words],
        );
    }
}

#[test]
fn windows_image_without_pattern_is_rejected() {
    one_problem(
        json!({"windowsImages": [{"windowsBuild": "10.0.17763"}]}),
        "windowsImages[0].pattern",
        &["is required"],
    );
}

#[test]
fn windows_image_pattern_as_number_is_rejected() {
    one_problem(
        json!({"windowsImages": [{"pattern": 7}]}),
        "windowsImages[0].pattern",
        &["expected a string"],
    );
}

#[test]
fn windows_image_pattern_compiles_and_matches() {
    let s = ok(json!({"windowsImages": [{"pattern": "registry.example.com/win/*"}]}));
    assert!(s.windows_images[0]
        .pattern
        .matches("registry.example.com/win/app:1.0"));
    assert!(!s.windows_images[0]
        .pattern
        .matches("registry.example.com/linux/app:1.0"));
}

// ---- preferRuntimeClass ----

#[test]
fn prefer_runtime_class_without_runtime_classes_is_rejected() {
    one_problem(
        json!({"preferRuntimeClass": true}),
        "preferRuntimeClass",
        &["runtimeClasses is empty"],
    );
    one_problem(
        json!({"preferRuntimeClass": true, "runtimeClasses": []}),
        "preferRuntimeClass",
        &["runtimeClasses is empty"],
    );
}

#[test]
fn prefer_runtime_class_false_without_runtime_classes_is_fine() {
    ok(json!({"preferRuntimeClass": false}));
}

#[test]
fn prefer_runtime_class_with_runtime_classes_is_accepted() {
    let s = ok(json!({"preferRuntimeClass": true, "runtimeClasses": [
        rc("windows-2022", json!({"nodeSelector": {"kubernetes.io/os": "windows"}}))
    ]}));
    assert!(s.prefer_runtime_class);
}

// ---- several problems ----

#[test]
fn several_problems_are_reported_together_one_per_line() {
    let v = json!({
        "mutate": "yes",
        "defaultOS": "windows",
        "bogus": 1,
        "windowsTaint": {"key": "os", "effect": "Sometimes"},
        "runtimeClasses": [rc("Bad_Name", json!({"nodeSelector": {"kubernetes.io/os": "Windows"}}))],
        "windowsImages": [{"pattern": "[", "windowsBuild": "2022"}]
    });
    let err = Settings::from_value(&v).unwrap_err();
    let text = err.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), err.problems.len());
    for path in [
        "bogus: ",
        "mutate: ",
        "defaultOS: ",
        "windowsTaint.effect: ",
        "runtimeClasses[0].name: ",
        "runtimeClasses[0].scheduling.nodeSelector[kubernetes.io/os]: ",
        "windowsImages[0].pattern: ",
        "windowsImages[0].windowsBuild: ",
    ] {
        assert_eq!(
            lines.iter().filter(|l| l.starts_with(path)).count(),
            1,
            "{path} in:\n{text}"
        );
    }
    assert_eq!(lines.len(), 8, "{text}");
}

#[test]
fn prefer_runtime_class_problem_is_reported_with_others() {
    let found =
        problems(json!({"preferRuntimeClass": true, "runtimeClasses": [{"scheduling": {}}]}));
    // The only class has no name, so none is declared.
    assert!(found
        .iter()
        .any(|l| l.starts_with("runtimeClasses[0].name: ")));
    assert!(found.iter().any(|l| l.starts_with("preferRuntimeClass: ")));
}

// ---- from_json ----

#[test]
fn from_json_parses_valid_text() {
    let s = Settings::from_json(r#"{"mutate": false, "defaultOS": "none"}"#).unwrap();
    assert!(!s.mutate);
    assert_eq!(s.default_os, DefaultOs::None);
    assert_defaults(&Settings::from_json("null").unwrap());
}

#[test]
fn from_json_rejects_invalid_json_with_one_clear_problem() {
    for text in ["{", "", "{mutate: true}", "[1,]"] {
        let err = Settings::from_json(text).unwrap_err();
        assert_eq!(err.problems.len(), 1, "{text:?}");
        assert!(
            err.problems[0]
                .to_string()
                .starts_with("settings: not valid JSON"),
            "{text:?}: {err}"
        );
    }
}

#[test]
fn from_json_validates_like_from_value() {
    let err = Settings::from_json(r#"{"bogus": true}"#).unwrap_err();
    assert_eq!(err.problems[0].path, "bogus", "{err}");
    assert_eq!(err.problems[0].code, crate::Code::InvalidSetting);
}

#[test]
fn settings_error_displays_one_problem_per_line() {
    let err = SettingsError {
        problems: vec![
            crate::Diagnostic::new(crate::Code::InvalidSetting, "a", "x", ""),
            crate::Diagnostic::new(crate::Code::InvalidSetting, "b", "y", "use z"),
        ],
    };
    assert_eq!(err.to_string(), "a: x\nb: y; use z");
}

// ---- context-aware settings ----

#[test]
fn context_settings_default_to_undecided_lookups_and_the_automatic_node_check() {
    let s = ok(json!({}));
    assert_eq!(s.image_lookup, ImageLookup::Undecided);
    assert_eq!(s.image_facts, ImageFactsSource::Cluster);
    assert_eq!(s.image_facts_namespace, "os-placement");
    assert_eq!(s.lookup_failure, LookupFailure::Warn);
    assert_eq!(s.node_inventory, NodeInventory::Auto);
    assert!(s.node_inventory.reads_nodes() && !s.node_inventory.explicit());
    assert!(!s.windows_taint.reads_nodes());
    let s = ok(json!({"imageLookup": "always", "lookupFailure": "reject",
        "nodeInventory": "warn", "windowsTaint": "fromNodes",
        "windowsBuilds": ["10.0.17763", "10.0.20348"]}));
    assert_eq!(s.image_lookup, ImageLookup::Always);
    assert_eq!(s.lookup_failure, LookupFailure::Reject);
    assert_eq!(s.node_inventory, NodeInventory::Warn);
    assert!(s.windows_taint.reads_nodes() && s.windows_taint().is_none());
    assert_eq!(s.windows_builds.len(), 2);
}

#[test]
fn bad_context_settings_name_the_field_and_the_choices() {
    one_problem(
        json!({"imageLookup": "sometimes"}),
        "imageLookup",
        &["\"off\", \"undecided\" or \"always\""],
    );
    one_problem(
        json!({"imageFacts": "configmap"}),
        "imageFacts",
        &["\"cluster\" or \"registry\""],
    );
    one_problem(
        json!({"imageFactsNamespace": "OS_placement"}),
        "imageFactsNamespace",
        &["\"OS_placement\" is not a namespace name", "DNS label"],
    );
    assert_eq!(
        ok(json!({"imageFacts": "registry", "imageFactsNamespace": "kubewarden"})).image_facts,
        ImageFactsSource::Registry
    );
    one_problem(
        json!({"lookupFailure": "fail"}),
        "lookupFailure",
        &["\"warn\" or \"reject\""],
    );
    one_problem(
        json!({"nodeInventory": true}),
        "nodeInventory",
        &["expected a string"],
    );
    one_problem(
        json!({"windowsTaint": "fromnodes"}),
        "windowsTaint",
        &["\"fromNodes\""],
    );
    one_problem(
        json!({"windowsBuilds": ["ltsc2022"]}),
        "windowsBuilds[0]",
        &["10.0."],
    );
    one_problem(
        json!({"windowsBuilds": ["10.0.20348", "10.0.20348"]}),
        "windowsBuilds[1]",
        &["twice"],
    );
    one_problem(
        json!({"runtimeClasses": [{"name": "w", "scheduling": {}, "isolation": "hyper-v"}]}),
        "runtimeClasses[0].isolation",
        &["\"process\" or \"hyperv\""],
    );
}

// ---- one declaration ----

#[test]
fn misspelt_keys_name_the_nearest_known_key() {
    one_problem(
        json!({"windowTaint": null}),
        "windowTaint",
        &["did you mean windowsTaint?", "known keys here are"],
    );
    one_problem(
        json!({"runtimeClasses": [rc("w", json!({"nodeSelecter": {}}))]}),
        "runtimeClasses[0].scheduling.nodeSelecter",
        &["did you mean nodeSelector?"],
    );
    let far = message(json!({"bogus": 1}));
    assert!(!far.contains("did you mean"), "{far}");
}

#[test]
fn bytes_and_values_read_alike() {
    for v in [
        json!({"mutate": false, "windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}}),
        json!({"mutate": "no", "windowsTaint": {"key": "a b", "effect": "Never"}, "x": 1}),
        json!(null),
        json!([1]),
    ] {
        let bytes = serde_json::to_vec(&v).unwrap();
        let from_bytes = Settings::from_slice(&bytes).map(|s| s.to_json());
        let from_value = Settings::from_value(&v).map(|s| s.to_json());
        assert_eq!(from_bytes, from_value, "{v}");
    }
    let broken = Settings::from_slice(b"{\"mutate\": tru").unwrap_err();
    assert_eq!(broken.problems.len(), 1);
    assert!(
        broken.to_string().starts_with("settings: not valid JSON"),
        "{broken}"
    );
    let trailing = Settings::from_slice(b"{} {}").unwrap_err();
    assert!(
        trailing.to_string().contains("not valid JSON"),
        "{trailing}"
    );
}

#[test]
fn schema_describes_every_key_with_its_default() {
    let schema = Settings::schema();
    let keys: Vec<&str> = schema.iter().map(|f| f.key).collect();
    assert_eq!(keys, SETTING_KEYS);
    let defaults = Settings::default().to_json();
    for field in &schema {
        assert!(!field.description.is_empty(), "{}", field.key);
        assert_eq!(
            Some(&field.default),
            defaults.get(field.key),
            "{}",
            field.key
        );
    }
    // Defaults read back as the defaults.
    assert_eq!(Settings::from_value(&defaults).unwrap().to_json(), defaults);
    let taint = schema.iter().find(|f| f.key == "windowsTaint").unwrap();
    let Shape::OneOf { options } = &taint.shape else {
        panic!("{:?}", taint.shape)
    };
    let Some(Shape::Object { fields }) = options.last() else {
        panic!("{options:?}")
    };
    let required: Vec<&str> = fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.key)
        .collect();
    assert_eq!(required, ["key", "effect"]);
}

#[test]
fn every_setting_round_trips_through_json() {
    let full = json!({
        "mutate": false, "defaultOS": "none",
        "windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"},
        "linuxTaint": {"key": "cattle.io/os", "value": "linux", "effect": "NoSchedule"},
        "pinWindowsBuild": false, "pinArchitecture": true, "setPodOS": true, "preferRuntimeClass": true,
        "runtimeClasses": [{"name": "w", "handler": "runhcs-wcow-process", "isolation": "process",
            "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows"},
                "tolerations": [{"key": "os", "operator": "Exists", "effect": "NoSchedule"}]}}],
        "windowsImages": [{"pattern": "r/*", "windowsBuild": "10.0.17763"}],
        "imageLookup": "always", "imageFacts": "registry", "imageFactsNamespace": "facts",
        "lookupFailure": "reject", "waitForImageFacts": false, "nodeInventory": "warn",
        "windowsBuilds": ["10.0.20348"],
        "nodeTemplates": [{"name": "windows-ng", "os": "windows", "windowsBuild": "10.0.20348",
            "architecture": "amd64", "labels": {"eks.amazonaws.com/nodegroup": "windows-ng"},
            "taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}]}]
    });
    let written = ok(full.clone()).to_json();
    assert_eq!(ok(written.clone()).to_json(), written);
    let defaults = Settings::default().to_json();
    for key in SETTING_KEYS {
        // With the classes, as preferRuntimeClass needs them.
        let alone = |v: &Value| {
            ok(json!({ *key: v[*key].clone(), "runtimeClasses": full["runtimeClasses"] })).to_json()
        };
        assert_eq!(alone(&written), alone(&full), "{key}");
        assert_ne!(written[*key], defaults[*key], "{key} left at its default");
    }
}

/// Node groups scaled to zero (cluster-autoscaler's, EKS managed node
/// groups'): declared with what their nodes carry, checked as the rest.
#[test]
fn node_templates_are_read_and_checked() {
    let s = ok(json!({"nodeTemplates": [
        {"name": "win", "os": "windows", "windowsBuild": "10.0.17763",
         "taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}]},
        {"name": "arm", "os": "linux", "architecture": "arm64", "labels": {"pool": "arm"}}]}));
    assert_eq!(s.node_templates.len(), 2);
    assert_eq!(
        s.node_templates[0].os,
        crate::vocab::constraint::Os::Windows
    );
    assert_eq!(s.node_templates[1].architecture.as_deref(), Some("arm64"));
    // Negative: every problem, each at its path.
    let found = problems(json!({"nodeTemplates": [
        {"os": "windows"},
        {"name": "l", "os": "linux", "windowsBuild": "10.0.17763", "architecture": "x y"},
        {"name": "m", "os": "macos", "labels": {"bad key!": "v"}},
        {"name": "t", "os": "linux", "taints": [{"key": "os", "effect": "Sometimes"}]}]}));
    for (path, words) in [
        ("nodeTemplates[0].name", "is required"),
        ("nodeTemplates[1].windowsBuild", "os is linux"),
        ("nodeTemplates[1].architecture", "not an architecture"),
        ("nodeTemplates[2].os", "linux"),
        ("nodeTemplates[2].labels[bad key!]", "not a valid label key"),
        ("nodeTemplates[3].taints[0].effect", "not a taint effect"),
    ] {
        assert!(
            found
                .iter()
                .any(|p| p.starts_with(path) && p.contains(words)),
            "{path}: {words} not in {found:#?}"
        );
    }
    let twice = problems(json!({"nodeTemplates": [
        {"name": "ng", "os": "linux"}, {"name": "ng", "os": "windows"}]}));
    assert_eq!(
        twice,
        ["nodeTemplates[1].name: \"ng\" is declared twice: node template names are unique"]
    );
}

#[test]
fn linux_taint_has_the_shape_and_checks_of_windows_taint() {
    let s = ok(
        json!({"linuxTaint": {"key": "cattle.io/os", "value": "linux", "effect": "NoSchedule"}}),
    );
    assert_eq!(
        s.linux_taint().map(|t| t.to_string()).as_deref(),
        Some("cattle.io/os=linux:NoSchedule")
    );
    assert_eq!(s.windows_taint(), None);
    assert_eq!(ok(json!({})).linux_taint, TaintSetting::Untainted);
    assert!(ok(json!({"linuxTaint": "fromNodes"})).taints_from_nodes());
    one_problem(
        json!({"linuxTaint": {"key": "cattle.io/os", "effect": "Never"}}),
        "linuxTaint.effect",
        &["is not a taint effect"],
    );
    one_problem(
        json!({"linuxTaint": {"effect": "NoSchedule"}}),
        "linuxTaint.key",
        &["is required"],
    );
    one_problem(
        json!({"linuxTaint": "cattle.io/os=linux:NoSchedule"}),
        "linuxTaint",
        &["expected an object", "\"fromNodes\""],
    );
}

/// kubectl reads manifests as YAML 1.1 (sigs.k8s.io/yaml over go-yaml):
/// an unquoted `off` arrives as `false`. It means `off`; `true` means nothing.
#[test]
fn false_reads_as_off_where_off_is_a_choice() {
    let s = ok(json!({"imageLookup": false, "nodeInventory": false}));
    assert_eq!(s.image_lookup, ImageLookup::Off);
    assert_eq!(s.node_inventory, NodeInventory::Off);
    one_problem(
        json!({"imageLookup": true}),
        "imageLookup",
        &["expected a string", "a boolean"],
    );
    one_problem(
        json!({"lookupFailure": false}),
        "lookupFailure",
        &["expected a string"],
    );
}
