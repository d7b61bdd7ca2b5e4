//! A deterministic sweep over random pod-shaped objects and random valid
//! settings: evaluate never panics, mutations are confined to placement
//! fields, and a mutated object re-evaluates with no patch.

use os_placement_core::Kind;
use os_placement_core::SETTING_KEYS;
use os_placement_core::{evaluate, Decision, Operation, Review, Settings};
use serde_json::{json, Map, Value};

/// xorshift64*: small, deterministic, good enough to shake the rules.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const KINDS: &[&str] = &[
    "Pod",
    "Pod",
    "Pod",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "ReplicationController",
    "Job",
    "CronJob",
    "CronJob",
    "ConfigMap",
    "",
    "pod",
];

// Unknown operation names are refused before evaluation (kinds.rs).
const OPERATIONS: &[Operation] = &[
    Operation::Create,
    Operation::Create,
    Operation::Create,
    Operation::Create,
    Operation::Update,
    Operation::Update,
    Operation::Delete,
    Operation::Connect,
];

const STRINGS: &[&str] = &[
    "",
    "linux",
    "windows",
    "Windows",
    "a/b",
    "~",
    "~1",
    "/~0/",
    "kubernetes.io/os",
    "node.kubernetes.io/windows-build",
    "10.0.17763",
    "10.0.20348",
    "10.0.",
    "ünïcødé",
    "日本語/キー",
    "🦀",
    "os",
    "Exists",
    "Equal",
    "NoSchedule",
    "In",
    "NotIn",
    "DoesNotExist",
    "Gt",
    "\u{0}",
    "a\nb",
    "windows-2022",
    "x/y~z",
];

const IMAGES: &[&str] = &[
    "mcr.microsoft.com/windows/servercore:ltsc2019",
    "mcr.microsoft.com/windows/servercore:ltsc2022",
    "mcr.microsoft.com/windows/nanoserver:1809",
    "mcr.microsoft.com/windows/servercore:10.0.17763.4131",
    "mcr.microsoft.com/dotnet/framework/aspnet:4.8",
    "mcr.microsoft.com/windows/servercore@sha256:abc",
    "mcr.microsoft.com/dotnet/aspnet:8.0",
    "microsoft/iis",
    "sigwindowstools/kube-proxy:v1.29.0-calico-hostprocess",
    "registry.k8s.io/pause:3.9",
    "registry.example.com/win/app:1.0",
    "registry.example.com:5000/mirror/windows/servercore:ltsc2022",
    "alpine:3.19",
    "busybox",
    "myapp:1809",
    "nginx:1.25-alpine",
    "${IMAGE}",
    "",
    ":::",
    "a@",
    "UPPER/Case:TAG",
];

const LABEL_KEYS: &[&str] = &[
    "kubernetes.io/os",
    "beta.kubernetes.io/os",
    "node.kubernetes.io/windows-build",
    "kubernetes.azure.com/os-sku",
    "cloud.google.com/gke-windows-os-version",
    "kubernetes.io/arch",
    "disktype",
];

const LABEL_VALUES: &[&str] = &[
    "linux",
    "windows",
    "Windows",
    "10.0.17763",
    "10.0.20348",
    "10.0.26100",
    "Windows2019",
    "Windows2022",
    "Ubuntu",
    "2019",
    "2022",
    "amd64",
    "",
];

fn random_string(rng: &mut Rng) -> String {
    if rng.chance(80) {
        rng.pick(STRINGS).to_string()
    } else {
        let len = rng.below(12);
        (0..len)
            .map(|_| {
                let c = rng.below(0x3000) as u32;
                char::from_u32(c).unwrap_or('?')
            })
            .collect()
    }
}

/// Any JSON value, nested up to `depth`.
fn random_value(rng: &mut Rng, depth: u32) -> Value {
    let top = if depth == 0 { 4 } else { 6 };
    match rng.below(top) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => match rng.below(4) {
            0 => json!(rng.next() as i64),
            1 => json!(-1),
            2 => json!(1.5),
            _ => json!(u64::MAX),
        },
        3 => json!(random_string(rng)),
        4 => Value::Array(
            (0..rng.below(3))
                .map(|_| random_value(rng, depth - 1))
                .collect(),
        ),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.below(3) {
                map.insert(random_string(rng), random_value(rng, depth - 1));
            }
            Value::Object(map)
        }
    }
}

/// Mostly a well-typed value from `good`, sometimes anything at all.
fn field(rng: &mut Rng, good: impl FnOnce(&mut Rng) -> Value) -> Value {
    if rng.chance(97) {
        good(rng)
    } else {
        random_value(rng, 2)
    }
}

fn node_selector(rng: &mut Rng) -> Value {
    let mut map = Map::new();
    for _ in 0..rng.below(4) {
        let key = if rng.chance(85) {
            rng.pick(LABEL_KEYS).to_string()
        } else {
            random_string(rng)
        };
        let value = field(rng, |r| json!(r.pick(LABEL_VALUES)));
        map.insert(key, value);
    }
    Value::Object(map)
}

fn toleration(rng: &mut Rng) -> Value {
    let mut t = Map::new();
    if rng.chance(60) {
        t.insert(
            "key".into(),
            json!(rng.pick(&["os", "node.kubernetes.io/os", "x", ""])),
        );
    }
    if rng.chance(70) {
        t.insert("operator".into(), json!(rng.pick(&["Exists", "Equal", ""])));
    }
    if rng.chance(50) {
        t.insert("value".into(), json!(rng.pick(&["windows", "Windows", ""])));
    }
    if rng.chance(50) {
        t.insert(
            "effect".into(),
            json!(rng.pick(&["NoSchedule", "NoExecute", "PreferNoSchedule", ""])),
        );
    }
    if rng.chance(5) {
        t.insert("tolerationSeconds".into(), random_value(rng, 0));
    }
    Value::Object(t)
}

fn affinity(rng: &mut Rng) -> Value {
    let terms: Vec<Value> = (0..rng.below(3))
        .map(|_| {
            let exprs: Vec<Value> = (0..rng.below(3))
                .map(|_| {
                    let mut e = json!({
                        "key": rng.pick(LABEL_KEYS),
                        "operator": rng.pick(&["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
                    });
                    if rng.chance(70) {
                        let values: Vec<&str> = (0..rng.below(3)).map(|_| *rng.pick(LABEL_VALUES)).collect();
                        e["values"] = json!(values);
                    }
                    e
                })
                .collect();
            json!({"matchExpressions": exprs})
        })
        .collect();
    let mut node_affinity =
        json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}});
    if rng.chance(30) {
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = json!([
            {"weight": 1, "preference": {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}}
        ]);
    }
    json!({ "nodeAffinity": node_affinity })
}

fn security_context(rng: &mut Rng) -> Value {
    let mut sc = Map::new();
    if rng.chance(40) {
        let mut wo = Map::new();
        if rng.chance(50) {
            wo.insert("hostProcess".into(), field(rng, |r| json!(r.chance(70))));
        }
        if rng.chance(50) {
            wo.insert("runAsUserName".into(), json!("ContainerUser"));
        }
        sc.insert("windowsOptions".into(), Value::Object(wo));
    }
    for name in ["runAsUser", "privileged", "seccompProfile", "fsGroup"] {
        if rng.chance(10) {
            sc.insert(name.into(), json!(0));
        }
    }
    Value::Object(sc)
}

fn container(rng: &mut Rng) -> Value {
    let mut c = Map::new();
    if rng.chance(90) {
        c.insert(
            "name".into(),
            field(rng, |r| json!(format!("c{}", r.below(4)))),
        );
    }
    if rng.chance(90) {
        c.insert(
            "image".into(),
            field(rng, |r| {
                if r.chance(90) {
                    json!(r.pick(IMAGES))
                } else {
                    json!(random_string(r))
                }
            }),
        );
    }
    if rng.chance(30) {
        c.insert("securityContext".into(), field(rng, security_context));
    }
    if rng.chance(10) {
        c.insert(format!("x-{}", random_string(rng)), random_value(rng, 2));
    }
    Value::Object(c)
}

fn containers(rng: &mut Rng) -> Value {
    Value::Array((0..rng.below(3)).map(|_| field(rng, container)).collect())
}

/// Makes a well-typed value for one pod spec field.
type Maker = fn(&mut Rng) -> Value;

fn pod_spec(rng: &mut Rng) -> Value {
    let mut spec = Map::new();
    spec.insert("containers".into(), field(rng, containers));
    let optional: &[(&str, Maker)] = &[
        ("initContainers", containers),
        ("ephemeralContainers", containers),
        ("nodeSelector", node_selector),
        ("affinity", affinity),
        ("tolerations", |r| {
            Value::Array((0..r.below(3)).map(|_| field(r, toleration)).collect())
        }),
        (
            "os",
            |r| json!({"name": r.pick(&["linux", "windows", "linux", "windows", "Windows", ""])}),
        ),
        ("runtimeClassName", |r| {
            json!(r.pick(&["windows-2022", "windows-2019", "linux", "gvisor"]))
        }),
        ("hostNetwork", |r| json!(r.chance(50))),
        ("securityContext", security_context),
        ("hostPID", |r| json!(r.chance(50))),
    ];
    for (name, make) in optional {
        if rng.chance(25) {
            let value = field(rng, make);
            spec.insert((*name).to_string(), value);
        }
    }
    if rng.chance(15) {
        spec.insert(random_string(rng), random_value(rng, 3));
    }
    Value::Object(spec)
}

/// Wraps a pod spec as `kind` keeps it; sometimes breaks the wrapper.
fn object(rng: &mut Rng, kind: &str) -> Value {
    let spec = pod_spec(rng);
    let wrap = |inner: Value, field: &str| json!({ field: inner });
    let mut body = match kind {
        "Pod" | "ConfigMap" | "" | "pod" => spec,
        "CronJob" => {
            json!({"schedule": "* * * * *", "jobTemplate": {"spec": {"template": wrap(spec, "spec")}}})
        }
        _ => json!({"replicas": 1, "template": {"metadata": {"labels": {"a": "b"}}, "spec": spec}}),
    };
    if rng.chance(3) {
        body = random_value(rng, 2);
    }
    let mut object = json!({
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": "x", "annotations": {"keep/me": "~1"}},
        "spec": body,
    });
    if rng.chance(2) {
        object = random_value(rng, 3);
    }
    object
}

/// Where `kind` keeps its pod spec, from the core's own table.
fn spec_pointer(kind: &str) -> String {
    Kind::parse(kind)
        .map(|k| {
            k.pod_spec_fields()
                .iter()
                .map(|f| format!("/{f}"))
                .collect()
        })
        .unwrap_or_else(|| "/spec".to_string())
}

/// Valid settings, from a small space that covers every option.
fn random_settings(rng: &mut Rng) -> Settings {
    let mut v = Map::new();
    if rng.chance(50) {
        v.insert("mutate".into(), json!(rng.chance(75)));
    }
    if rng.chance(50) {
        v.insert("defaultOS".into(), json!(rng.pick(&["linux", "none"])));
    }
    if rng.chance(60) {
        let taint = rng
            .pick(&[
                json!({"key": "os", "value": "windows", "effect": "NoSchedule"}),
                json!({"key": "node.kubernetes.io/os", "value": "windows", "effect": "NoSchedule"}),
                json!({"key": "os", "effect": "NoExecute"}),
                Value::Null,
            ])
            .clone();
        v.insert("windowsTaint".into(), taint);
    }
    for key in ["pinWindowsBuild", "setPodOS"] {
        if rng.chance(50) {
            v.insert(key.into(), json!(rng.chance(50)));
        }
    }
    let classes = [
        json!({"name": "windows-2022", "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows", "kubernetes.io/arch": "amd64", "node.kubernetes.io/windows-build": "10.0.20348"},
               "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]}}),
        json!({"name": "windows-2019", "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"},
               "tolerations": [{"key": "os", "operator": "Exists"}]}}),
        json!({"name": "windows", "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows"}, "tolerations": [{"operator": "Exists"}]}}),
        json!({"name": "linux", "scheduling": {"nodeSelector": {"kubernetes.io/os": "linux"}}}),
    ];
    let declared: Vec<Value> = classes.iter().filter(|_| rng.chance(40)).cloned().collect();
    if !declared.is_empty() {
        if rng.chance(50) {
            v.insert("preferRuntimeClass".into(), json!(true));
        }
        v.insert("runtimeClasses".into(), Value::Array(declared));
    }
    if rng.chance(30) {
        v.insert(
            "windowsImages".into(),
            json!([{"pattern": "registry.example.com/win/*", "windowsBuild": "10.0.17763"}, {"pattern": "*hostprocess*"}]),
        );
    }
    let v = Value::Object(v);
    Settings::from_value(&v).unwrap_or_else(|e| panic!("generated settings {v} invalid: {e}"))
}

fn run(review: &Review<'_>, settings: &Settings) -> Decision {
    evaluate(review, settings)
}

fn check_invariants(case: usize, review: &Review<'_>, settings: &Settings, d: &Decision) {
    let ctx = || {
        format!(
            "case {case}: {} {} {}",
            review.operation, review.kind, review.object
        )
    };
    assert_eq!(d.accepted, d.violations.is_empty(), "{}", ctx());
    if let Some(text) = d.message() {
        assert_eq!(
            text.lines().count(),
            d.violations.len(),
            "{}: one line per violation:\n{text}",
            ctx()
        );
    }
    for v in &d.violations {
        assert!(
            !v.path.is_empty() && !v.message.is_empty() && !v.fix.is_empty(),
            "{}: {v:?}",
            ctx()
        );
    }
    if !d.accepted || matches!(review.operation, Operation::Delete | Operation::Connect) {
        assert!(
            d.patch.is_empty() && d.mutated_object.is_none(),
            "{}",
            ctx()
        );
        return;
    }
    if review.kind == "Pod" && review.operation == Operation::Update {
        assert!(
            d.patch.is_empty(),
            "{}: pod UPDATE patched {:?}",
            ctx(),
            d.patch
        );
    }
    let Some(mutated) = &d.mutated_object else {
        assert!(d.patch.is_empty(), "{}", ctx());
        return;
    };
    assert!(!d.patch.is_empty(), "{}", ctx());
    let prefix = spec_pointer(review.kind);
    let prefix = prefix.as_str();
    for op in d.patch.iter().filter(|op| !crate::common::is_record_op(op)) {
        assert_eq!(op.op, "add", "{}", ctx());
        let rest = op
            .path
            .strip_prefix(prefix)
            .and_then(|r| r.strip_prefix('/'));
        let field = rest.map(|r| r.split('/').next().unwrap_or(""));
        assert!(
            matches!(
                field,
                Some("nodeSelector" | "tolerations" | "os" | "runtimeClassName")
            ),
            "{}: op outside placement fields {op:?}",
            ctx()
        );
    }
    for path in crate::common::diff_paths(review.object, mutated) {
        let covered = d.patch.iter().any(|op| {
            let target = op.path.strip_suffix("/-").unwrap_or(&op.path);
            path == target || path.starts_with(&format!("{target}/"))
        });
        assert!(covered, "{}: {path} changed without an op", ctx());
    }
    // Idempotent: evaluating the mutated object changes nothing more.
    let again = run(
        &Review {
            object: mutated,
            ..*review
        },
        settings,
    );
    assert!(
        again.accepted,
        "{}: mutated object rejected: {:?}",
        ctx(),
        again.message()
    );
    assert!(
        again.patch.is_empty(),
        "{}: second pass patched {:?}",
        ctx(),
        again.patch
    );
    // And it validates clean.
    let strict = Settings {
        mutate: false,
        ..settings.clone()
    };
    let validated = run(
        &Review {
            object: mutated,
            ..*review
        },
        &strict,
    );
    assert!(
        validated.accepted,
        "{}: mutated object fails validation: {:?}",
        ctx(),
        validated.message()
    );
}

/// How many cases ended each way, so a sweep that never mutates is caught.
#[derive(Default, Debug)]
struct Tally {
    mutated: usize,
    accepted: usize,
    rejected: usize,
    malformed: usize,
}

fn sweep(seed: u64, cases: usize) -> Tally {
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    for case in 0..cases {
        let settings = random_settings(&mut rng);
        let kind = *rng.pick(KINDS);
        let operation = *rng.pick(OPERATIONS);
        let object = object(&mut rng, kind);
        let old = if operation == Operation::Update && rng.chance(80) {
            Some(if rng.chance(50) {
                // The same pod before its new ephemeral containers.
                let mut old = object.clone();
                if let Some(spec) = old.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("ephemeralContainers");
                }
                old
            } else {
                random_value(&mut rng, 2)
            })
        } else {
            None
        };
        let review = Review {
            kind,
            operation,
            object: &object,
            old_object: old.as_ref(),
            // One in five as the audit scanner asks about a live object.
            origin: if rng.chance(20) {
                os_placement_core::Origin::Audit
            } else {
                os_placement_core::Origin::Admission
            },
        };
        let d = run(&review, &settings);
        if review.origin == os_placement_core::Origin::Audit {
            assert!(
                d.patch.is_empty() && d.mutated_object.is_none(),
                "case {case}: audit patched"
            );
        }
        check_invariants(case, &review, &settings, &d);
        if d.mutated_object.is_some() {
            tally.mutated += 1;
        } else if d.accepted {
            tally.accepted += 1;
        } else if d
            .violations
            .iter()
            .any(|v| v.code.as_str() == "malformed-object")
        {
            tally.malformed += 1;
        } else {
            tally.rejected += 1;
        }
    }
    tally
}

fn assert_covers_every_outcome(tally: &Tally, cases: usize) {
    eprintln!("{tally:?}");
    for (what, n) in [
        ("mutated", tally.mutated),
        ("accepted", tally.accepted),
        ("rejected", tally.rejected),
        ("malformed", tally.malformed),
    ] {
        assert!(
            n * 20 >= cases,
            "only {n} of {cases} cases {what}: {tally:?}"
        );
    }
}

#[test]
fn random_objects_never_panic_and_mutations_are_confined_and_idempotent() {
    let tally = sweep(0x9E37_79B9_7F4A_7C15, 3000);
    assert_covers_every_outcome(&tally, 3000);
}

#[test]
fn random_objects_with_a_second_seed() {
    let tally = sweep(0xD1B5_4A32_D192_ED03, 1500);
    assert_covers_every_outcome(&tally, 1500);
}

#[test]
fn random_values_as_whole_objects_never_panic() {
    let mut rng = Rng(7);
    let settings = Settings::default();
    for _ in 0..1000 {
        let object = random_value(&mut rng, 4);
        let kind = *rng.pick(KINDS);
        let operation = *rng.pick(OPERATIONS);
        let d = evaluate(
            &Review {
                kind,
                operation,
                object: &object,
                old_object: Some(&object),
                origin: Default::default(),
            },
            &settings,
        );
        if matches!(operation, Operation::Delete | Operation::Connect) {
            assert!(d.accepted);
        }
    }
}

#[test]
fn random_settings_json_never_panics() {
    let mut rng = Rng(11);
    let mut refused = 0;
    for _ in 0..2000 {
        let mut v = Map::new();
        for key in SETTING_KEYS {
            if rng.chance(40) {
                v.insert((*key).into(), random_value(&mut rng, 3));
            }
        }
        for result in [
            Settings::from_value(&Value::Object(v)),
            Settings::from_json(&random_string(&mut rng)),
        ] {
            // A rejection always says where and what.
            if let Err(e) = result {
                refused += 1;
                assert!(!e.problems.is_empty());
                assert!(e.problems.iter().all(|p| !p.path.is_empty()), "{e}");
            }
        }
    }
    // The shape of a refusal is only checked on refusals.
    assert!(refused >= 1000, "only {refused} of 4000 settings refused");
}
