//! A generator of admission cases driven by any source of choices.

use os_placement_core::Kind;
use os_placement_core::Settings;
use serde_json::{json, Map, Value};

/// Where the choices come from (proptest bytes, libFuzzer bytes).
pub trait Source {
    /// A number below `n` (0 when `n` is 0 or 1).
    fn below(&mut self, n: usize) -> usize;

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What a container image really needs, known to the generator. Ground
/// truth for the scheduler oracle, independent of the core's classifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Multi-arch or unknown: no requirement the oracle can hold it to.
    Any,
    Linux,
    /// Windows of this build (10.0.N); `None`: some Windows build.
    Windows(Option<u32>),
}

/// Images and what they need. Private images need a build only when the
/// settings declare the `registry.example.com/win/*` rule (see `truth`).
pub const IMAGES: &[(&str, Need)] = &[
    (
        "mcr.microsoft.com/windows/servercore:ltsc2019",
        Need::Windows(Some(17763)),
    ),
    (
        "mcr.microsoft.com/windows/servercore:ltsc2022",
        Need::Windows(Some(20348)),
    ),
    (
        "mcr.microsoft.com/windows/nanoserver:ltsc2025",
        Need::Windows(Some(26100)),
    ),
    (
        "mcr.microsoft.com/windows/nanoserver:1809",
        Need::Windows(Some(17763)),
    ),
    (
        "mcr.microsoft.com/dotnet/framework/aspnet:4.8-windowsservercore-ltsc2022",
        Need::Windows(Some(20348)),
    ),
    (
        "mcr.microsoft.com/windows/servercore:10.0.17763.4131",
        Need::Windows(Some(17763)),
    ),
    ("alpine:3.19", Need::Linux),
    ("nginx:1.25-alpine", Need::Linux),
    ("registry.k8s.io/pause:3.9", Need::Any),
    ("myapp:1809", Need::Any),
    ("registry.example.com/win/app:1.0", Need::Any),
    ("registry.example.com/tools/cli:2", Need::Any),
];

pub const PRIVATE_RULE: &str = "registry.example.com/win/*";

const LABEL_KEYS: &[&str] = &[
    "kubernetes.io/os",
    "beta.kubernetes.io/os",
    "node.kubernetes.io/windows-build",
    "kubernetes.io/arch",
];

const LABEL_VALUES: &[&str] = &[
    "linux",
    "windows",
    "10.0.17763",
    "10.0.20348",
    "10.0.26100",
    "amd64",
    "17763",
    "20348",
];

pub const BUILDS: &[u32] = &[17763, 20348, 26100];

/// One generated admission case (always a CREATE).
#[derive(Debug, Clone)]
pub struct Case {
    pub kind: Kind,
    pub kind_name: &'static str,
    pub object: Value,
    pub settings_value: Value,
    pub settings: Settings,
    /// Whether every selector and affinity term the user wrote uses only
    /// labels the generated nodes carry (so "lands somewhere" is fair).
    pub known_labels_only: bool,
    pub pools: Vec<crate::props::oracle::Pool>,
}

pub const KINDS: &[(Kind, &str)] = &[
    (Kind::Pod, "Pod"),
    (Kind::Deployment, "Deployment"),
    (Kind::ReplicaSet, "ReplicaSet"),
    (Kind::StatefulSet, "StatefulSet"),
    (Kind::DaemonSet, "DaemonSet"),
    (Kind::ReplicationController, "ReplicationController"),
    (Kind::Job, "Job"),
    (Kind::CronJob, "CronJob"),
];

/// Wraps `spec` where `kind` keeps its pod spec (the core's own table).
pub fn wrap(kind: Kind, kind_name: &str, spec: Value, metadata: Value) -> Value {
    let mut inner = spec;
    for field in kind.pod_spec_fields().iter().skip(1).rev() {
        inner = json!({ *field: inner });
    }
    json!({
        "apiVersion": "v1",
        "kind": kind_name,
        "metadata": metadata,
        "spec": inner,
        "status": {"x-unknown": [1, "two", null]},
    })
}

/// The JSON Pointer of the pod spec of `kind`.
pub fn spec_pointer(kind: Kind) -> String {
    kind.pod_spec_fields()
        .iter()
        .map(|f| format!("/{f}"))
        .collect()
}

pub fn case<S: Source>(src: &mut S) -> Case {
    let (kind, kind_name) = *src.pick(KINDS);
    let settings_value = settings(src);
    let settings = Settings::from_value(&settings_value)
        .unwrap_or_else(|e| panic!("generated settings {settings_value} invalid: {e}"));
    let mut known_labels_only = true;
    let spec = pod_spec(src, &settings_value, &mut known_labels_only);
    let mut metadata = json!({"name": "x", "labels": {"app": "a"}});
    if src.chance(30) {
        metadata["annotations"] = json!({"keep/me": "~1/", "x": ""});
    }
    let object = wrap(kind, kind_name, spec, metadata);
    let pools = crate::props::oracle::pools(src, &settings_value);
    Case {
        kind,
        kind_name,
        object,
        settings_value,
        settings,
        known_labels_only,
        pools,
    }
}

fn settings<S: Source>(src: &mut S) -> Value {
    let mut v = Map::new();
    if src.chance(60) {
        v.insert("mutate".into(), json!(src.chance(70)));
    }
    if src.chance(50) {
        v.insert("defaultOS".into(), json!(src.pick(&["linux", "none"])));
    }
    if src.chance(70) {
        let taint = src
            .pick(&[
                json!({"key": "os", "value": "windows", "effect": "NoSchedule"}),
                json!({"key": "node.kubernetes.io/os", "value": "windows", "effect": "NoSchedule"}),
                json!({"key": "os", "effect": "NoExecute"}),
                json!({"key": "os", "value": "windows", "effect": "PreferNoSchedule"}),
            ])
            .clone();
        v.insert("windowsTaint".into(), taint);
    }
    for key in ["pinWindowsBuild", "setPodOS"] {
        if src.chance(50) {
            v.insert(key.into(), json!(src.chance(50)));
        }
    }
    let taint = v.get("windowsTaint").cloned();
    let classes: Vec<Value> = BUILDS
        .iter()
        .filter(|_| src.chance(30))
        .map(|b| runtime_class(*b, taint.as_ref()))
        .collect();
    if !classes.is_empty() {
        if src.chance(50) {
            v.insert("preferRuntimeClass".into(), json!(true));
        }
        v.insert("runtimeClasses".into(), Value::Array(classes));
    }
    if src.chance(40) {
        v.insert(
            "windowsImages".into(),
            json!([{"pattern": PRIVATE_RULE, "windowsBuild": "10.0.17763"}]),
        );
    }
    Value::Object(v)
}

/// A RuntimeClass for the Windows nodes of `build`, tolerating their taint.
fn runtime_class(build: u32, taint: Option<&Value>) -> Value {
    let mut scheduling = json!({"nodeSelector": {
        "kubernetes.io/os": "windows",
        "node.kubernetes.io/windows-build": format!("10.0.{build}"),
    }});
    if let Some(t) = taint {
        let mut toleration = t.clone();
        toleration["operator"] = json!(if t.get("value").is_some() {
            "Equal"
        } else {
            "Exists"
        });
        scheduling["tolerations"] = json!([toleration]);
    }
    json!({"name": format!("windows-{build}"), "scheduling": scheduling})
}

/// Mostly a well-typed value, now and then a wrongly typed one.
fn field<S: Source>(src: &mut S, good: impl FnOnce(&mut S) -> Value) -> Value {
    if src.chance(96) {
        good(src)
    } else {
        src.pick(&[
            json!(null),
            json!(7),
            json!([]),
            json!("x"),
            json!({}),
            json!(true),
        ])
        .clone()
    }
}

fn label_key<S: Source>(src: &mut S, known: &mut bool) -> String {
    if src.chance(90) {
        let key = src.pick(LABEL_KEYS);
        // The policy reads OS and build labels only: the user's own
        // constraints on other labels may leave no node at all.
        *known &= *key != "kubernetes.io/arch";
        key.to_string()
    } else {
        *known = false;
        src.pick(&["disktype", "x/~1y", "日本/キー"]).to_string()
    }
}

fn node_selector<S: Source>(src: &mut S, known: &mut bool) -> Value {
    let mut map = Map::new();
    for _ in 0..src.below(3) {
        let key = label_key(src, known);
        let value = field(src, |s| json!(s.pick(LABEL_VALUES)));
        map.insert(key, value);
    }
    Value::Object(map)
}

fn toleration<S: Source>(src: &mut S) -> Value {
    let mut t = Map::new();
    if src.chance(70) {
        t.insert(
            "key".into(),
            json!(src.pick(&["os", "node.kubernetes.io/os", "x"])),
        );
    }
    if src.chance(70) {
        t.insert("operator".into(), json!(src.pick(&["Exists", "Equal"])));
    }
    if src.chance(60) {
        t.insert("value".into(), json!(src.pick(&["windows", "linux"])));
    }
    if src.chance(60) {
        t.insert(
            "effect".into(),
            json!(src.pick(&["NoSchedule", "NoExecute", "PreferNoSchedule"])),
        );
    }
    if src.chance(10) && t.get("effect") == Some(&json!("NoExecute")) {
        t.insert("tolerationSeconds".into(), json!(src.pick(&[0, 300])));
    }
    Value::Object(t)
}

fn requirement<S: Source>(src: &mut S, known: &mut bool) -> Value {
    let key = label_key(src, known);
    let operator = *src.pick(&["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]);
    let values: Vec<&str> = match operator {
        "Exists" | "DoesNotExist" => Vec::new(),
        "Gt" | "Lt" => vec![*src.pick(&["17763", "20348", "1", "x"])],
        _ => (0..1 + src.below(2))
            .map(|_| *src.pick(LABEL_VALUES))
            .collect(),
    };
    let mut e = json!({"key": key, "operator": operator});
    if !values.is_empty() || src.chance(10) {
        e["values"] = json!(values);
    }
    e
}

fn affinity<S: Source>(src: &mut S, known: &mut bool) -> Value {
    let terms: Vec<Value> = (0..1 + src.below(2))
        .map(|_| {
            let exprs: Vec<Value> = (0..1 + src.below(2))
                .map(|_| requirement(src, known))
                .collect();
            json!({"matchExpressions": exprs})
        })
        .collect();
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}})
}

fn container<S: Source>(src: &mut S, i: usize, host_process: bool) -> Value {
    let mut c = Map::new();
    c.insert("name".into(), json!(format!("c{i}")));
    let (image, _) = src.pick(IMAGES);
    c.insert("image".into(), field(src, |_| json!(image)));
    if host_process {
        c.insert(
            "securityContext".into(),
            json!({"windowsOptions": {"hostProcess": true}}),
        );
    }
    if src.chance(10) {
        c.insert("x-unknown".into(), json!({"a": [1, {"b": null}]}));
    }
    Value::Object(c)
}

fn pod_spec<S: Source>(src: &mut S, settings: &Value, known: &mut bool) -> Value {
    let mut spec = Map::new();
    let host_process = src.chance(5);
    if host_process {
        spec.insert("hostNetwork".into(), json!(true));
    }
    let count = 1 + src.below(3);
    let containers: Vec<Value> = (0..count)
        .map(|i| container(src, i, host_process))
        .collect();
    spec.insert("containers".into(), Value::Array(containers));
    if src.chance(15) {
        spec.insert(
            "initContainers".into(),
            json!([container(src, 9, host_process)]),
        );
    }
    if src.chance(35) {
        let selector = field(src, |s| node_selector(s, known));
        spec.insert("nodeSelector".into(), selector);
    }
    if src.chance(20) {
        spec.insert("affinity".into(), affinity(src, known));
    }
    if src.chance(35) {
        let items: Vec<Value> = (0..1 + src.below(2)).map(|_| toleration(src)).collect();
        spec.insert("tolerations".into(), Value::Array(items));
    }
    if src.chance(15) {
        spec.insert(
            "os".into(),
            json!({"name": src.pick(&["linux", "windows"])}),
        );
    }
    let classes = settings
        .get("runtimeClasses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !classes.is_empty() && src.chance(20) {
        let rc = src.pick(&classes);
        spec.insert("runtimeClassName".into(), rc["name"].clone());
    }
    if src.chance(10) {
        spec.insert("x-unknown-field".into(), json!({"kept": ["as", "is"]}));
    }
    Value::Object(spec)
}

/// What container `image` needs under `settings` (ground truth).
pub fn truth(image: &str, settings: &Value) -> Need {
    let declared = settings
        .get("windowsImages")
        .and_then(Value::as_array)
        .is_some_and(|rules| rules.iter().any(|r| r["pattern"] == PRIVATE_RULE));
    if declared && image.starts_with("registry.example.com/win/") {
        return Need::Windows(Some(17763));
    }
    IMAGES
        .iter()
        .find(|(i, _)| *i == image)
        .map_or(Need::Any, |(_, need)| *need)
}
