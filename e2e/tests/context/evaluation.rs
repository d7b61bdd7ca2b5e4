//! Evaluation through the built module with the host calls of a test.

use std::sync::{Arc, OnceLock};

use os_placement_e2e::capabilities::ContextHost;
use os_placement_e2e::{admission_request, wasm_path, Evaluation, PolicyModule};
use serde_json::{json, Value};

/// The built policy module, compiled once for the binary.
pub fn module() -> &'static PolicyModule {
    static MODULE: OnceLock<PolicyModule> = OnceLock::new();
    MODULE.get_or_init(|| {
        PolicyModule::compile(&wasm_path())
            .unwrap_or_else(|e| panic!("{e}: run `make build` first (or set OS_PLACEMENT_WASM)"))
    })
}

/// A Pod named `name` running `images`, with `spec` merged into its spec.
pub fn pod(name: &str, images: &[&str], spec: Value) -> Value {
    let containers: Vec<Value> = images
        .iter()
        .enumerate()
        .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
        .collect();
    let mut object = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": containers}});
    if let (Value::Object(target), Value::Object(extra)) = (&mut object["spec"], spec) {
        target.extend(extra);
    }
    object
}

/// `object` (a CREATE) evaluated with `settings` on a fresh instance whose
/// host calls `host` answers. Settings that do not choose `imageFacts` are
/// evaluated both ways: with the published facts (`cluster`, no OCI call)
/// and with admission-time lookups (`registry`), which must agree on the
/// verdict, the patch and the number of warnings; the `registry`
/// evaluation is returned, its host calls left for the test to read.
pub fn evaluate(host: &Arc<ContextHost>, object: &Value, settings: &Value) -> Evaluation {
    if settings.get("imageFacts").is_some() {
        return evaluate_once(host, object, settings);
    }
    let published = evaluate_once(host, object, settings);
    let calls = host.take_calls();
    assert!(
        !calls.iter().any(|c| c.namespace == "oci"),
        "imageFacts: cluster asked a registry: {calls:?}"
    );
    let mut registry_settings = settings.clone();
    registry_settings["imageFacts"] = json!("registry");
    let looked_up = evaluate_once(host, object, &registry_settings);
    let (a, b) = (&published.response, &looked_up.response);
    assert_eq!(
        (a.accepted, &published.patch, a.warnings().len()),
        (b.accepted, &looked_up.patch, b.warnings().len()),
        "imageFacts cluster and registry disagree:\n  cluster  {} {:?}\n  registry {} {:?}",
        a.message(),
        a.warnings(),
        b.message(),
        b.warnings()
    );
    looked_up
}

fn evaluate_once(host: &Arc<ContextHost>, object: &Value, settings: &Value) -> Evaluation {
    let instance = module().instantiate_with(host.clone()).unwrap();
    let verdict = instance.validate_settings(settings).unwrap();
    assert!(verdict.valid, "settings {settings}: {:?}", verdict.message);
    host.take_calls(); // settings validation makes no lookup worth counting
    let request = admission_request(object, "CREATE", None, None);
    instance.validate(&request, settings).unwrap()
}

/// The object after the evaluation's patch.
pub fn result(evaluation: &Evaluation, object: &Value) -> Value {
    evaluation.resulting_object(object).clone()
}

/// Prints one case the way the closing note shows it.
pub fn show(case: &str, evaluation: &Evaluation) {
    use std::io::Write;
    let response = &evaluation.response;
    let patch = evaluation
        .patch
        .as_ref()
        .map(|p| serde_json::to_string(p).unwrap_or_default())
        .unwrap_or_default();
    let _ = writeln!(
        std::io::stderr(),
        "CASE {case}\n  allowed  {}\n  message  {}\n  warnings {:?}\n  patch    {patch}",
        response.accepted,
        response.message(),
        response.warnings()
    );
}
