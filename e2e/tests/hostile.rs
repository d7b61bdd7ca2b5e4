//! Hostile inputs through the built policy `.wasm` on the policy-server-
//! faithful host (a fresh instance per request, the 2 s epoch deadline):
//! deep nesting, huge fields and lists, bad bytes, duplicate keys, wrong
//! types at every field the core reads, huge numbers, empty objects and
//! settings of every wrong type. Each must be answered (a verdict or a
//! settings error), never a trap or a timeout, with bounded memory.
//!
//! `cargo test -p os-placement-e2e --test hostile -- --nocapture` prints
//! the table of answers, times and peak memory, and the largest pod that
//! evaluates under 10 ms.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::time::{Duration, Instant};

use os_placement_e2e::host::DEFAULT_TIMEOUT;
use os_placement_e2e::{wasm_path, PolicyModule};
use serde_json::{json, Value};

/// Peak resident memory allowed while one request is evaluated: the
/// payload, the response and the guest's linear memory included.
const MEMORY_BOUND_MB: u64 = 1024;

fn module() -> PolicyModule {
    let path = wasm_path();
    assert!(
        path.is_file(),
        "policy module {} not found: run `make build` first",
        path.display()
    );
    PolicyModule::compile(&path).unwrap()
}

/// Resets the process's peak RSS (Linux `clear_refs` 5); false when the
/// kernel does not allow it.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A `/proc/self/status` field in MB (`VmHWM`: peak, `VmRSS`: current).
fn status_mb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

/// Without a peak reading the memory bound is unchecked: a failure under
/// CI, a visible skip elsewhere.
fn memory_unmeasured() {
    static SKIPPED: std::sync::Once = std::sync::Once::new();
    assert!(
        !os_placement_e2e::external::in_ci(),
        "cannot measure peak memory (/proc/self/clear_refs, /proc/self/status)"
    );
    // Straight to stderr: the test harness captures `eprintln!` of passing tests.
    SKIPPED.call_once(|| {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: memory bound not checked: /proc/self/clear_refs not writable"
        );
    });
}

struct Outcome {
    answer: String,
    time: Duration,
    peak: Option<u64>,
}

/// One waPC call on a fresh instance: its answer, time and peak memory.
/// The host's epoch deadline turns a call that runs too long into an error.
fn call(module: &PolicyModule, operation: &str, payload: &[u8]) -> Outcome {
    let host = module.instantiate().unwrap();
    let before = status_mb("VmRSS:").filter(|_| reset_peak());
    let started = Instant::now();
    let raw = host.call(operation, payload);
    let time = started.elapsed();
    // What the call added to the process's resident memory at its peak:
    // the guest's linear memory, the host's copies of payload and answer.
    let peak = before.and_then(|b| Some(status_mb("VmHWM:")?.saturating_sub(b)));
    let raw =
        raw.unwrap_or_else(|e| panic!("{operation} trapped or timed out after {time:?}: {e:#}"));
    match peak {
        Some(mb) => assert!(mb < MEMORY_BOUND_MB, "{operation} peaked at {mb} MB"),
        None => memory_unmeasured(),
    }
    let v: Value = serde_json::from_slice(&raw).expect("a JSON answer");
    let answer = if operation == "validate_settings" {
        assert!(v["valid"].is_boolean(), "{v}");
        if v["valid"] == json!(true) {
            "valid".to_string()
        } else {
            let m = v["message"].as_str().unwrap_or_default();
            assert!(!m.is_empty(), "settings error without a message");
            format!("settings error: {}", first_line(m))
        }
    } else if v["accepted"] == json!(true) {
        let patched = v["mutated_object"].is_object();
        format!("accepted{}", if patched { ", patched" } else { "" })
    } else {
        assert_eq!(v["accepted"], json!(false), "{v}");
        let m = v["message"].as_str().unwrap_or_default();
        assert!(!m.is_empty(), "rejection without a message");
        format!("rejected: {}", first_line(m))
    };
    Outcome { answer, time, peak }
}

fn first_line(m: &str) -> String {
    let line = m.replace('\n', " ");
    let short: String = line.chars().take(90).collect();
    if short.len() < line.len() {
        format!("{short}…")
    } else {
        short
    }
}

fn payload(kind: &str, object: Value, settings: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "request": {"uid": "u", "kind": {"kind": kind}, "operation": "CREATE", "object": object},
        "settings": settings,
    }))
    .unwrap()
}

fn eks() -> Value {
    json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}})
}

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

const WINDOWS: &str = "mcr.microsoft.com/windows/servercore:ltsc2022";

fn containers(n: usize, image: &str) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"name": format!("c{i}"), "image": image}))
            .collect(),
    )
}

/// Sets `pointer` (created as objects on the way) in `v`.
fn set(v: &mut Value, pointer: &str, value: Value) {
    let mut current = v;
    let tokens: Vec<&str> = pointer.split('/').skip(1).collect();
    for (i, token) in tokens.iter().enumerate() {
        let last = i + 1 == tokens.len();
        current = match current {
            Value::Array(items) => &mut items[token.parse::<usize>().unwrap()],
            other => {
                if !other.is_object() {
                    *other = json!({});
                }
                let map = other.as_object_mut().unwrap();
                map.entry(token.replace("~1", "/")).or_insert(Value::Null)
            }
        };
        if last {
            *current = value;
            return;
        }
    }
}

/// A request reaching every field the core reads, well typed.
fn full_request() -> Value {
    json!({"uid": "u", "kind": {"kind": "Deployment"}, "operation": "CREATE", "object": {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "d", "annotations": {"os-placement.kubewarden.io/added": "{}"}},
    "spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": WINDOWS,
            "securityContext": {"windowsOptions": {"hostProcess": false, "runAsUserName": "u"}}}],
        "initContainers": [{"name": "i", "image": WINDOWS}],
        "ephemeralContainers": [{"name": "e", "image": WINDOWS}],
        "nodeSelector": {"kubernetes.io/os": "windows"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}]}]}}},
        "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule", "tolerationSeconds": 5}],
        "os": {"name": "windows"},
        "runtimeClassName": "windows-2022",
        "securityContext": {"windowsOptions": {"hostProcess": false}},
        "hostNetwork": false,
    }}}}})
}

/// Every field of `full_request` the core reads.
const READ_FIELDS: &[&str] = &[
    "/kind",
    "/kind/kind",
    "/operation",
    "/object",
    "/object/metadata",
    "/object/metadata/annotations",
    "/object/metadata/annotations/os-placement.kubewarden.io~1added",
    "/object/spec",
    "/object/spec/template",
    "/object/spec/template/spec",
    "/object/spec/template/spec/containers",
    "/object/spec/template/spec/containers/0",
    "/object/spec/template/spec/containers/0/name",
    "/object/spec/template/spec/containers/0/image",
    "/object/spec/template/spec/containers/0/securityContext",
    "/object/spec/template/spec/containers/0/securityContext/windowsOptions",
    "/object/spec/template/spec/containers/0/securityContext/windowsOptions/hostProcess",
    "/object/spec/template/spec/initContainers",
    "/object/spec/template/spec/ephemeralContainers",
    "/object/spec/template/spec/nodeSelector",
    "/object/spec/template/spec/nodeSelector/kubernetes.io~1os",
    "/object/spec/template/spec/affinity",
    "/object/spec/template/spec/affinity/nodeAffinity",
    "/object/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
    "/object/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
    "/object/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions",
    "/object/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0/key",
    "/object/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0/operator",
    "/object/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0/values",
    "/object/spec/template/spec/tolerations",
    "/object/spec/template/spec/tolerations/0",
    "/object/spec/template/spec/tolerations/0/key",
    "/object/spec/template/spec/tolerations/0/operator",
    "/object/spec/template/spec/tolerations/0/value",
    "/object/spec/template/spec/tolerations/0/effect",
    "/object/spec/template/spec/tolerations/0/tolerationSeconds",
    "/object/spec/template/spec/os",
    "/object/spec/template/spec/os/name",
    "/object/spec/template/spec/runtimeClassName",
    "/object/spec/template/spec/securityContext/windowsOptions/hostProcess",
    "/object/spec/template/spec/hostNetwork",
];

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

fn row(table: &mut Vec<String>, case: &str, o: &Outcome) {
    let peak = o.peak.map_or("n/a".to_string(), |mb| format!("{mb} MB"));
    table.push(format!(
        "| {case} | {} | {:.2} ms | {peak} |",
        o.answer.replace('|', "\\|"),
        o.time.as_secs_f64() * 1000.0
    ));
}

#[test]
fn hostile_inputs_get_an_answer_in_time_and_memory() {
    let module = module();
    let table = std::cell::RefCell::new(vec![
        "| input | answer | time | peak memory added |".to_string(),
        "|---|---|---|---|".to_string(),
    ]);
    let run = |case: &str, operation: &str, bytes: &[u8]| -> Outcome {
        let o = call(&module, operation, bytes);
        row(&mut table.borrow_mut(), case, &o);
        o
    };
    let deep = format!(r#"{{"request": {}}}"#, nested(10_000));
    let o = run("payload nested 10,000 deep", "validate", deep.as_bytes());
    // Skipped without recursion: an array is no admission request.
    assert_eq!(
        o.answer,
        format!(
            "rejected: {}",
            first_line(os_placement_policy::MISSING_REQUEST)
        ),
        "{}",
        o.answer
    );
    let plain = call(
        &module,
        "validate",
        &serde_json::to_vec(&json!({"request": full_request(), "settings": eks()})).unwrap(),
    );
    let mut unread = full_request();
    unread["userInfo"] = json!(null);
    let text = serde_json::to_string(&json!({"request": unread, "settings": eks()}))
        .unwrap()
        .replace(
            r#""userInfo":null"#,
            &format!(r#""userInfo":{}"#, nested(10_000)),
        );
    let o = run(
        "request field the policy does not read (userInfo) nested 10,000 deep",
        "validate",
        text.as_bytes(),
    );
    assert_eq!(
        o.answer, plain.answer,
        "skipped like any field it does not read"
    );
    // A pod-spec field the rules do not read is passed through as its text.
    let with_deep = |field: &str| {
        let mut inner = full_request();
        inner["object"]["spec"]["template"]["spec"][field] = json!(null);
        serde_json::to_string(&json!({"request": inner, "settings": eks()}))
            .unwrap()
            .replace(
                &format!(r#""{field}":null"#),
                &format!(r#""{field}":{}"#, nested(10_000)),
            )
    };
    let o = run(
        "unknown pod-spec field nested 10,000 deep",
        "validate",
        with_deep("x-deep").as_bytes(),
    );
    assert_eq!(
        o.answer, plain.answer,
        "skipped like any field it does not read"
    );
    // One the rules read is parsed, within serde_json's depth limit.
    let o = run(
        "pod-spec field the rules read (affinity) nested 10,000 deep",
        "validate",
        with_deep("affinity").as_bytes(),
    );
    assert!(o.answer.starts_with("rejected"), "{}", o.answer);
    let settings_deep = nested(10_000);
    let o = run(
        "settings nested 10,000 deep",
        "validate_settings",
        settings_deep.as_bytes(),
    );
    assert!(o.answer.starts_with("settings error"), "{}", o.answer);

    let mut big = pod(json!({"containers": containers(1, WINDOWS)}));
    big["metadata"]["annotations"] = json!({"big": "x".repeat(10 << 20)});
    let o = run(
        "10 MB annotation (Windows pod)",
        "validate",
        &payload("Pod", big, eks()),
    );
    assert_eq!(o.answer, "accepted, patched");

    let many = pod(json!({"containers": containers(10_000, WINDOWS)}));
    let o = run(
        "10,000 containers (Windows)",
        "validate",
        &payload("Pod", many, eks()),
    );
    assert_eq!(o.answer, "accepted, patched");
    let mut mixed = containers(10_000, "alpine:3.19");
    mixed[9_999]["image"] = json!(WINDOWS);
    let o = run(
        "10,000 containers, the last Windows",
        "validate",
        &payload("Pod", pod(json!({"containers": mixed})), eks()),
    );
    assert!(o.answer.starts_with("rejected"), "{}", o.answer);

    let tolerated = |n: usize| {
        let tolerations: Vec<Value> = (0..n)
            .map(|i| json!({"key": format!("k{i}"), "operator": "Exists", "effect": "NoSchedule"}))
            .collect();
        let t = pod(json!({"containers": containers(1, WINDOWS), "tolerations": tolerations}));
        payload("Pod", t, eks())
    };
    let o = run(
        "10,000 tolerations (0.6 MB)",
        "validate",
        &tolerated(10_000),
    );
    assert_eq!(o.answer, "accepted, patched");
    // 5.7 MB: beyond the API server's 3 MiB request limit, so no API
    // server sends it. Parsing alone takes most of the 2 s deadline in the
    // module: measured on a module with a longer deadline, it must still
    // answer without a trap, in time linear in its size.
    let patient = self::module().with_timeout(Duration::from_secs(60));
    let o = call(&patient, "validate", &tolerated(100_000));
    row(
        &mut table.borrow_mut(),
        "100,000 tolerations (5.7 MB, over the API server's limit; 60 s deadline)",
        &o,
    );
    assert_eq!(o.answer, "accepted, patched");

    let mut bad = payload(
        "Pod",
        pod(json!({"containers": containers(1, "IMAGE")})),
        eks(),
    );
    let at = bad.windows(5).position(|w| w == b"IMAGE").unwrap();
    bad[at..at + 2].copy_from_slice(&[0xff, 0xfe]);
    let o = run("non-UTF-8 bytes in an image", "validate", &bad);
    assert!(o.answer.contains("not valid JSON"), "{}", o.answer);
    let o = run(
        "non-UTF-8 settings",
        "validate_settings",
        &[b'"', 0xc3, 0x28, b'"'],
    );
    assert!(o.answer.starts_with("settings error"), "{}", o.answer);

    let dup = format!(
        r#"{{"request": {{"kind": {{"kind": "Pod"}}, "operation": "CREATE", "object": {{"metadata": {{}}, "spec": {{"nodeSelector": {{"kubernetes.io/os": "linux"}}, "nodeSelector": {{"kubernetes.io/os": "windows"}}, "containers": [{{"name": "c", "image": "{WINDOWS}"}}]}}}}}}, "settings": {{}}}}"#
    );
    let o = run(
        "duplicate nodeSelector keys (last wins)",
        "validate",
        dup.as_bytes(),
    );
    assert!(o.answer.starts_with("accepted"), "{}", o.answer);
    let o = run(
        "duplicate settings keys",
        "validate_settings",
        br#"{"mutate": true, "mutate": 7}"#,
    );
    assert!(o.answer.starts_with("settings error"), "{}", o.answer);

    for value in [
        json!(7),
        json!([]),
        json!(null),
        json!("s"),
        json!({}),
        json!(true),
    ] {
        let mut rejected = 0;
        for pointer in READ_FIELDS {
            let mut request = full_request();
            set(&mut request, pointer, value.clone());
            let bytes =
                serde_json::to_vec(&json!({"request": request, "settings": eks()})).unwrap();
            let host = module.instantiate().unwrap();
            let started = Instant::now();
            let raw = host
                .call("validate", &bytes)
                .unwrap_or_else(|e| panic!("{value} at {pointer}: trap {e:#}"));
            assert!(started.elapsed() < DEFAULT_TIMEOUT);
            let v: Value = serde_json::from_slice(&raw).unwrap();
            if v["accepted"] == json!(false) {
                rejected += 1;
                assert!(
                    !v["message"].as_str().unwrap_or_default().is_empty(),
                    "{value} at {pointer}"
                );
            }
        }
        table.borrow_mut().push(format!(
            "| {value} at each of the {} fields the core reads | {rejected} rejected, {} accepted | < 2 s each | — |",
            READ_FIELDS.len(),
            READ_FIELDS.len() - rejected
        ));
    }

    let huge = r#"{"request": {"kind": {"kind": "Pod"}, "operation": "CREATE", "object": {"metadata": {}, "spec": {"containers": [{"name": "c", "image": 123456789012345678901234567890123456789}], "tolerations": [{"operator": "Exists", "tolerationSeconds": 1e400}]}}}, "settings": {}}"#;
    let o = run(
        "huge integer image, 1e400 tolerationSeconds",
        "validate",
        huge.as_bytes(),
    );
    assert!(o.answer.starts_with("rejected"), "{}", o.answer);
    let huge_int = r#"{"request": {"kind": {"kind": "Pod"}, "operation": "CREATE", "object": {"metadata": {}, "spec": {"containers": [{"name": "c", "image": 123456789012345678901234567890123456789}]}}}, "settings": {}}"#;
    let o = run("huge integer as an image", "validate", huge_int.as_bytes());
    assert!(o.answer.contains("containers[0].image"), "{}", o.answer);

    for (case, bytes) in [
        ("empty payload", &b""[..]),
        ("{}", b"{}"),
        (r#"{"request": {}}"#, br#"{"request": {}}"#),
        (
            "empty object of a Pod CREATE",
            br#"{"request": {"kind": {"kind": "Pod"}, "operation": "CREATE", "object": {}}}"#,
        ),
    ] {
        let o = run(case, "validate", bytes);
        assert!(o.answer.starts_with("rejected"), "{case}: {}", o.answer);
    }
    // A pod spec with nothing in it is placed by defaultOS (linux).
    let o = run(
        "empty pod spec",
        "validate",
        br#"{"request": {"kind": {"kind": "Pod"}, "operation": "CREATE", "object": {"spec": {}}}}"#,
    );
    assert_eq!(o.answer, "accepted, patched");

    for settings in [
        json!(7),
        json!("linux"),
        json!([]),
        json!(true),
        json!(1.5),
        json!({"mutate": "yes"}),
        json!({"windowsTaint": []}),
        json!({"runtimeClasses": {}}),
        json!({"windowsImages": "x"}),
    ] {
        let case = format!("settings {settings}");
        let o = run(
            &case,
            "validate_settings",
            &serde_json::to_vec(&settings).unwrap(),
        );
        assert!(
            o.answer.starts_with("settings error"),
            "{case}: {}",
            o.answer
        );
        let o = run(
            &format!("{case} with a request"),
            "validate",
            &payload(
                "Pod",
                pod(json!({"containers": containers(1, WINDOWS)})),
                settings.clone(),
            ),
        );
        assert!(
            o.answer.starts_with("rejected: invalid policy settings"),
            "{case}: {}",
            o.answer
        );
    }
    // JSON null is no settings at all, as policy-server sends for a policy without any.
    let o = run("settings null", "validate_settings", b"null");
    assert_eq!(o.answer, "valid");

    println!("{}", table.borrow().join("\n"));
}

/// The largest Windows pod (containers of one image) evaluated under 10 ms
/// on a fresh instance, median of five.
#[test]
fn largest_pod_under_ten_milliseconds() {
    let module = module();
    let mut largest = 0;
    let mut n = 1;
    while n <= 65_536 {
        let bytes = payload(
            "Pod",
            pod(json!({"containers": containers(n, WINDOWS)})),
            eks(),
        );
        let mut times: Vec<Duration> = (0..5)
            .map(|_| call(&module, "validate", &bytes).time)
            .collect();
        times.sort();
        println!(
            "{n} containers ({} KB): {:.2} ms",
            bytes.len() / 1024,
            times[2].as_secs_f64() * 1000.0
        );
        if times[2] >= Duration::from_millis(10) {
            break;
        }
        largest = n;
        n *= 2;
    }
    println!("largest pod under 10 ms: {largest} containers");
    assert!(largest >= 8, "a pod of 8 containers takes 10 ms or more");
}
