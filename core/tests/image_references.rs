//! Image references read as users write them: each rule of
//! `fixtures/images/references.yaml` with its positive and negative cases and the
//! upstream source of the forms, then what the policy does with a pod running them.

use crate::common::*;
use os_placement_core::Settings;
use os_placement_core::WindowsBuild;
use os_placement_core::{classify, ImageOs, ImageRule};
use serde::Deserialize;
use serde_json::{json, Value};

const FIXTURE: &str = include_str!("fixtures/images/references.yaml");
const OS: &str = "kubernetes.io/os";
const BUILD: &str = "node.kubernetes.io/windows-build";

/// The pod's nodeSelector value for `key` after the decision.
fn selected(object: &Value, d: &os_placement_core::Decision, key: &str) -> Option<Value> {
    result_object(object, d)["spec"]["nodeSelector"]
        .get(key)
        .cloned()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    rule: String,
    source: String,
    positive: Vec<Case>,
    negative: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    image: String,
    expect: String,
    build: Option<String>,
}

fn rules() -> Vec<Rule> {
    let text = os_placement_door::read_one(FIXTURE).expect("fixtures/images/references.yaml");
    serde_json::from_value(text.expect("a document").to_json()).expect("the rules' shape")
}

/// The classification in the fixture's words.
fn described(os: &ImageOs) -> (&'static str, Option<String>) {
    match os {
        ImageOs::Windows { build, .. } => ("windows", build.map(|b| b.to_string())),
        ImageOs::MaybeWindows { .. } => ("maybe-windows", None),
        ImageOs::Linux { .. } => ("linux", None),
        ImageOs::Unknown => ("unknown", None),
    }
}

#[test]
fn every_rule_has_a_source_and_both_kinds_of_case() {
    let rules = rules();
    assert!(rules.len() >= 6, "only {} rules read", rules.len());
    for rule in &rules {
        assert!(!rule.source.trim().is_empty(), "{}: no source", rule.rule);
        assert!(!rule.positive.is_empty(), "{}: no positive case", rule.rule);
        assert!(!rule.negative.is_empty(), "{}: no negative case", rule.rule);
        for case in rule.positive.iter().chain(&rule.negative) {
            assert!(
                matches!(
                    case.expect.as_str(),
                    "windows" | "maybe-windows" | "linux" | "unknown"
                ),
                "{}: {:?} expects {:?}",
                rule.rule,
                case.image,
                case.expect
            );
            if let Some(build) = &case.build {
                WindowsBuild::parse_label(build).unwrap();
                assert_eq!(
                    case.expect, "windows",
                    "{}: build on non-Windows",
                    case.image
                );
            }
        }
    }
}

#[test]
fn fixture_references_classify_as_documented() {
    let mut failures = Vec::new();
    let mut count = 0;
    for rule in rules() {
        for (kind, case) in rule
            .positive
            .iter()
            .map(|c| ("positive", c))
            .chain(rule.negative.iter().map(|c| ("negative", c)))
        {
            count += 1;
            let got = classify(&case.image, &[]);
            let want = (case.expect.as_str(), case.build.clone());
            if described(&got) != want {
                failures.push(format!(
                    "[{}] {kind} {:?}: want {want:?}, got {got:?}",
                    rule.rule, case.image
                ));
            }
        }
    }
    assert!(count >= 80, "only {count} cases read");
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// README (windowsImages[].windowsBuild): "without it the image is Windows with no known
/// build". A private image's version number is never taken for a build; a Windows
/// release named in the tag still is, as the built-in rules read it on any image.
#[test]
fn settings_rule_without_build_takes_no_build_from_version_tags() {
    let rules = [ImageRule::new("registry.example.com/win/*", None).unwrap()];
    let build_of = |image: &str| match classify(image, &rules) {
        ImageOs::Windows { build, reason } => {
            assert!(reason.contains("windowsImages[0]"), "{reason}");
            build.map(WindowsBuild::number)
        }
        other => panic!("{image}: {other:?}"),
    };
    // Negative: version tags that look like releases or builds.
    for image in [
        "registry.example.com/win/app:1809",
        "registry.example.com/win/app:2019",
        "registry.example.com/win/app:2022.1",
        "registry.example.com/win/app:10.0.1",
        "registry.example.com/win/app:10.0.17763",
        "registry.example.com/win/app:20H2",
        "registry.example.com/win/app:1.0",
        "registry.example.com/win/app",
    ] {
        assert_eq!(build_of(image), None, "{image}");
    }
    // Positive: a release name in the tag.
    assert_eq!(
        build_of("registry.example.com/win/app:2.0-ltsc2022"),
        Some(20348)
    );
    assert_eq!(
        build_of("registry.example.com/win/app:2.0-windows-2019"),
        Some(17763)
    );
    // The rule's own build always wins.
    let pinned =
        [ImageRule::new("registry.example.com/win/*", Some(WindowsBuild::LTSC2019)).unwrap()];
    assert!(matches!(
        classify("registry.example.com/win/app:2.0-ltsc2022", &pinned),
        ImageOs::Windows {
            build: Some(WindowsBuild::LTSC2019),
            ..
        }
    ));
}

/// A settings rule vouches for an image the built-ins only half trust.
#[test]
fn settings_rule_turns_a_weak_hint_into_windows() {
    let image = "registry.example.com/team/windows:1.0";
    assert!(matches!(classify(image, &[]), ImageOs::MaybeWindows { .. }));
    let rules = [ImageRule::new("registry.example.com/team/*", None).unwrap()];
    assert!(matches!(
        classify(image, &rules),
        ImageOs::Windows { build: None, .. }
    ));
}

fn ambiguous_warnings(d: &os_placement_core::Decision) -> Vec<String> {
    d.warnings
        .iter()
        .filter(|w| w.code.as_str() == "ambiguous-image")
        .map(ToString::to_string)
        .collect()
}

/// The issue: a weak hint warns (naming the image and the fix) and changes nothing,
/// not even the Linux selector `defaultOS` would add.
#[test]
fn weak_windows_repository_warns_and_leaves_the_pod_alone() {
    let image = "registry.example.com/team/windows:1.0";
    for settings in [eks(), Settings::default()] {
        let d = create(&pod_with_images(&[image]), &settings);
        assert_unchanged(&d);
        let warnings = ambiguous_warnings(&d);
        assert_eq!(warnings.len(), 1, "{:?}", d.warning_lines());
        let w = &warnings[0];
        assert!(w.starts_with("spec.containers[0].image: "), "{w}");
        assert!(w.contains(image), "{w}");
        assert!(
            w.contains("windowsImages") && w.contains("nodeSelector"),
            "{w}"
        );
        // Path, the 40-character image and the fix: about 120 characters.
        assert!(w.len() <= 140, "{} chars: {w}", w.len());
    }
}

/// Negative: once anything else tells the OS, the weak hint says nothing.
#[test]
fn weak_hint_is_silent_when_the_os_is_known() {
    let image = "registry.example.com/team/windows:1.0";
    let selected_windows = with_spec(
        pod_with_images(&[image]),
        json!({"nodeSelector": {"kubernetes.io/os": "windows"}, "tolerations": [eks_toleration()]}),
    );
    let d = create(&selected_windows, &eks());
    assert!(d.accepted, "{}", message(&d));
    assert!(ambiguous_warnings(&d).is_empty(), "{:?}", d.warning_lines());

    // A Linux sidecar decides the OS: the pod gets the Linux selector as usual.
    let with_alpine = pod_with_images(&[image, "alpine:3.19"]);
    let d = create(&with_alpine, &Settings::default());
    assert!(ambiguous_warnings(&d).is_empty(), "{:?}", d.warning_lines());
    assert_eq!(selected(&with_alpine, &d, OS), Some(json!("linux")));
}

/// Long paths and references still give a warning under the API server's 256 characters.
#[test]
fn weak_hint_warning_stays_short() {
    let long = format!("registry.example.com/{}windows:1.0", "team/".repeat(60));
    let init: Vec<Value> = (0..12)
        .map(|i| json!({"name": format!("i{i}"), "image": long}))
        .collect();
    let cron = json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "initContainers": init,
            "containers": [{"name": "c", "image": "registry.example.com/team/windows:1.0"}]
        }}}}}
    });
    let d = create(&cron, &Settings::default());
    assert_unchanged(&d);
    let warnings = ambiguous_warnings(&d);
    assert_eq!(warnings.len(), 13, "{warnings:?}");
    for w in &warnings {
        assert!(w.len() < 256, "{} chars: {w}", w.len());
    }
    assert!(warnings.iter().any(|w| w.contains("initContainers[11]")));
}

/// The issue: text that mentions Windows must not send a pod to Windows. With
/// `defaultOS: linux` and untainted Windows nodes these pods get the Linux selector;
/// with the EKS taint they are already kept off Windows and get nothing.
#[test]
fn cross_compiler_and_vm_images_are_not_sent_to_windows() {
    for image in [
        "ghcr.io/cross-rs/aarch64-pc-windows-msvc:edge",
        "rustembedded/cross:x86_64-pc-windows-gnu",
        "dockcross/windows-static-x64:latest",
        "dockurr/windows:latest",
        "ghcr.io/dockur/windows:4.00",
    ] {
        let object = pod_with_images(&[image]);
        let d = create(&object, &Settings::default());
        assert!(d.accepted, "{image}: {}", message(&d));
        assert_eq!(selected(&object, &d, OS), Some(json!("linux")), "{image}");
        assert_eq!(selected(&object, &d, BUILD), None, "{image}");
        assert!(ambiguous_warnings(&d).is_empty(), "{image}");
        let d = create(&object, &eks());
        assert_unchanged(&d);
    }
}

/// OpenTelemetry's `-windows-2022-amd64` tag: Windows, pinned to Windows Server 2022.
#[test]
fn windows_release_spelling_pins_the_build() {
    let object =
        pod_with_images(&["otel/opentelemetry-collector-contrib:0.100.0-windows-2022-amd64"]);
    let d = create(&object, &eks());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(selected(&object, &d, OS), Some(json!("windows")));
    assert_eq!(selected(&object, &d, BUILD), Some(json!("10.0.20348")));

    // Negative: a bare year in a version tag is no build and no OS.
    let object = pod_with_images(&["registry.example.com/app:2022"]);
    let d = create(&object, &Settings::default());
    assert_eq!(selected(&object, &d, OS), Some(json!("linux")));
    assert_eq!(selected(&object, &d, BUILD), None);
}

/// `windowsImages` without `windowsBuild`: Windows, no pin, and the unknown-build warning.
#[test]
fn settings_rule_without_build_adds_no_pin() {
    let object = pod_with_images(&["registry.example.com/win/billing:1809"]);
    let unpinned = eks_with(json!({
        "windowsImages": [{"pattern": "registry.example.com/win/*"}]
    }));
    let d = create(&object, &unpinned);
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(selected(&object, &d, OS), Some(json!("windows")));
    assert_eq!(selected(&object, &d, BUILD), None, "{:?}", d.patch);
    assert!(warning_codes(&d).contains(&"unknown-build"));

    // Positive counterpart: the rule's own build is pinned.
    let pinned = settings(json!({
        "windowsImages": [{"pattern": "registry.example.com/win/*", "windowsBuild": "10.0.17763"}]
    }));
    let d = create(&object, &pinned);
    assert_eq!(selected(&object, &d, BUILD), Some(json!("10.0.17763")));
}

/// Strong tokens in a path segment place the pod like a tag would.
#[test]
fn path_segment_release_pins_the_build() {
    let object = pod_with_images(&["registry.example.com/images/nanoserver-ltsc2025:1.4"]);
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(selected(&object, &d, OS), Some(json!("windows")));
    assert_eq!(selected(&object, &d, BUILD), Some(json!("10.0.26100")));
}
/// Classification reads one lower-case copy and never panics on odd spellings.
#[test]
fn odd_spellings_never_panic() {
    let words = [
        "windows",
        "win",
        "ltsc",
        "servercore",
        "nanoserver",
        "2019",
        "11",
        "msvc",
        "",
        "-",
        "_",
        "ǅ",
        "10.0.",
        "winamd64",
        "sig-windows",
        "calico",
    ];
    for a in words {
        for b in words {
            for c in words {
                for image in [
                    format!("{a}-{b}:{c}"),
                    format!("r.example.com/{a}/{b}-{c}:{a}_{c}"),
                    format!("{a}{b}/{c}"),
                ] {
                    let _ = classify(&image, &[]);
                }
            }
        }
    }
    // Long runs of Windows words and fillers: linear work, a plain answer.
    let huge = format!(
        "{}windows:{}",
        "a-windows/".repeat(5_000),
        "windows-".repeat(5_000)
    );
    assert!(matches!(
        classify(&huge, &[]),
        ImageOs::Windows { build: None, .. }
    ));
    let fillers = format!("app:{}2022", "ltsc-".repeat(20_000));
    assert!(matches!(classify(&fillers, &[]), ImageOs::Unknown));
    let amd64 = format!("app:windows-{}2022", "amd64-".repeat(20_000));
    assert!(matches!(
        classify(&amd64, &[]),
        ImageOs::Windows { build: None, .. }
    ));
}
