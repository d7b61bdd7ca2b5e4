//! Loading the policy module and calling it through waPC, the way Kubewarden's
//! policy-server does: wasmtime (through `wasmtime-provider`) with WASI, one
//! `InstancePre` per module rehydrated into a fresh instance for each request,
//! host capabilities answered by a pluggable [`HostCalls`] (by default none:
//! every host call is an error), epoch interruption as the policy timeout (2 s
//! by default, as policy-server), and the JSON Patch derived by diffing
//! `mutated_object` against the request object.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, HostCallError, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wapc::WapcHost;
use wasmtime_provider::{
    EpochDeadlines, ResourceLimits, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre,
};

/// Length of one epoch tick.
const TICK: Duration = Duration::from_millis(100);
/// Default deadline of one waPC call: policy-server's default policy timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// Answer of the `validate_settings` waPC operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsValidationResponse {
    pub valid: bool,
    #[serde(default)]
    pub message: Option<String>,
}

/// Answer of the `validate` waPC operation (Kubewarden protocol: snake_case fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationResponse {
    pub accepted: bool,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub code: Option<u16>,
    #[serde(default)]
    pub mutated_object: Option<Value>,
    #[serde(default)]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
}

impl ValidationResponse {
    /// Warnings, empty when the policy sent none.
    pub fn warnings(&self) -> &[String] {
        self.warnings.as_deref().unwrap_or_default()
    }

    /// Message, empty when the policy sent none.
    pub fn message(&self) -> &str {
        self.message.as_deref().unwrap_or_default()
    }
}

/// One evaluation: the policy's response and the JSON Patch policy-server would
/// send to the API server.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub response: ValidationResponse,
    /// `json_patch::diff(request.object, mutated_object)`; `None` when the policy
    /// returned no `mutated_object` (`Some` of an empty patch when it returned the
    /// object unchanged).
    pub patch: Option<json_patch::Patch>,
}

impl Evaluation {
    /// True when the evaluation changes the object (a non-empty patch).
    pub fn patched(&self) -> bool {
        self.patch.as_ref().is_some_and(|p| !p.0.is_empty())
    }

    /// The object as it would be stored: the mutated object when there is one,
    /// otherwise the request object.
    pub fn resulting_object<'a>(&'a self, request_object: &'a Value) -> &'a Value {
        self.response
            .mutated_object
            .as_ref()
            .unwrap_or(request_object)
    }
}

/// Drives the epoch of an engine; stops when dropped.
#[derive(Debug)]
struct Ticker {
    _stop: Sender<()>,
}

impl Ticker {
    fn start(engine: wasmtime::Engine) -> Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("wasm-epoch-ticker".to_owned())
            .spawn(move || {
                // Tick until the `Ticker` (the sender) is dropped.
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(TICK) {
                    engine.increment_epoch();
                }
            })
            .map_err(Error::io("cannot start the epoch ticker thread"))?;
        Ok(Self { _stop: stop })
    }
}

/// Answers the guest's waPC host calls (`binding`/`namespace`/`operation`),
/// as policy-server's callback handler does. An `Err` reaches the guest as the
/// host call's error text; the guest decides what to do with it.
pub trait HostCalls: Send + Sync {
    /// The answer to one host call.
    fn call(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> std::result::Result<Vec<u8>, HostCallError>;
}

/// No host capability: like a policy-server that grants the policy none,
/// every host call is refused in policy-server's words (policy-evaluator's
/// `host_callback`), so a module's answer is the same on both.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCapabilities;

impl HostCalls for NoCapabilities {
    fn call(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        _payload: &[u8],
    ) -> std::result::Result<Vec<u8>, HostCallError> {
        if binding != "kubewarden" {
            return Err(HostCallError(format!("unknown binding: {binding}")));
        }
        Err(HostCallError(format!(
            "Policy has not been granted access to the '{namespace}/{operation}' host capability. The violation has been reported."
        )))
    }
}

/// A compiled policy module. Compiling is the expensive part; instantiating a
/// [`PolicyHost`] from it is cheap. `Send + Sync`: share it between tests.
pub struct PolicyModule {
    pre: WasmtimeEngineProviderPre,
    module: wasmtime::Module,
    ticker: Arc<Ticker>,
    host_calls: Arc<dyn HostCalls>,
    deadline_ticks: u64,
    size: usize,
    compile_time: Duration,
}

impl std::fmt::Debug for PolicyModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyModule")
            .field("size", &self.size)
            .field("compile_time", &self.compile_time)
            .finish_non_exhaustive()
    }
}

impl PolicyModule {
    /// Reads and compiles the module at `wasm_path`.
    pub fn compile(wasm_path: &Path) -> Result<Self> {
        let bytes = std::fs::read(wasm_path).map_err(Error::io(format!(
            "cannot read policy module {}",
            wasm_path.display()
        )))?;
        Self::from_bytes(&bytes).map_err(|e| {
            Error::Wasm(format!(
                "cannot compile policy module {}: {e}",
                wasm_path.display()
            ))
        })
    }

    /// Compiles a module from its bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut config = wasmtime::Config::default();
        config.epoch_interruption(true);
        // `perf record` can name the guest's functions (perf-<pid>.map).
        if std::env::var_os("OS_PLACEMENT_PERF_MAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = wasmtime::Engine::new(&config)
            .map_err(|e| Error::Wasm(format!("cannot create the wasmtime engine: {e:?}")))?;
        let started = Instant::now();
        let module =
            wasmtime::Module::new(&engine, bytes).map_err(|e| Error::Wasm(format!("{e:?}")))?;
        let compile_time = started.elapsed();
        let ticker = Arc::new(Ticker::start(engine)?);
        Ok(Self {
            pre: link(&module, None)?,
            module,
            ticker,
            host_calls: Arc::new(NoCapabilities),
            deadline_ticks: ticks(DEFAULT_TIMEOUT),
            size: bytes.len(),
            compile_time,
        })
    }

    /// The same compiled module with each instance's linear memory capped at
    /// `bytes`: a growth past it fails (a Rust guest then traps). The benchmark
    /// finds a call's peak memory as the smallest cap it succeeds under.
    pub fn with_memory_limit(&self, bytes: usize) -> Result<Self> {
        let limits = ResourceLimits {
            max_memory_size: Some(bytes),
            max_table_elements: None,
        };
        Ok(Self {
            pre: link(&self.module, Some(limits))?,
            module: self.module.clone(),
            ticker: Arc::clone(&self.ticker),
            host_calls: Arc::clone(&self.host_calls),
            deadline_ticks: self.deadline_ticks,
            size: self.size,
            compile_time: self.compile_time,
        })
    }

    /// Sets the deadline of every waPC call (initialisation included).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.deadline_ticks = ticks(timeout);
        self
    }

    /// Sets what answers the host calls of every instance.
    #[must_use]
    pub fn with_host_calls(mut self, host_calls: Arc<dyn HostCalls>) -> Self {
        self.host_calls = host_calls;
        self
    }

    /// Size of the module in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Time cranelift took to compile the module.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// A fresh instance (new store, WASI context and waPC state), rehydrated
    /// from the module's `InstancePre`.
    pub fn instantiate(&self) -> Result<PolicyHost> {
        self.instantiate_with(Arc::clone(&self.host_calls))
    }

    /// A fresh instance whose host calls `host_calls` answers (one compiled
    /// module can serve clusters and registries that differ per test).
    pub fn instantiate_with(&self, host_calls: Arc<dyn HostCalls>) -> Result<PolicyHost> {
        let deadlines = EpochDeadlines {
            wapc_init: self.deadline_ticks,
            wapc_func: self.deadline_ticks,
        };
        let engine = self
            .pre
            .rehydrate(Some(deadlines))
            .map_err(|e| Error::Wasm(format!("cannot instantiate the policy module: {e}")))?;
        let callback =
            move |_id: u64, binding: &str, namespace: &str, operation: &str, payload: &[u8]| {
                answer(&*host_calls, binding, namespace, operation, payload)
            };
        let host = WapcHost::new(Box::new(engine), Some(Box::new(callback))).map_err(|e| {
            Error::Wasm(format!(
                "waPC initialisation of the policy module failed: {e}"
            ))
        })?;
        Ok(PolicyHost {
            host,
            _ticker: Arc::clone(&self.ticker),
        })
    }
}

/// Links and type-checks a compiled module once, as policy-server does at start.
fn link(
    module: &wasmtime::Module,
    limits: Option<ResourceLimits>,
) -> Result<WasmtimeEngineProviderPre> {
    let mut builder = WasmtimeEngineProviderBuilder::new()
        .engine(module.engine().clone())
        .module(module.clone())
        .wasi_params(wapc::WasiParams::default());
    if let Some(limits) = limits {
        builder = builder.enable_resource_limits(limits);
    }
    builder
        .build_pre()
        .map_err(|e| Error::Wasm(format!("cannot link the policy module: {e}")))
}

/// Epoch ticks in `timeout`, at least one.
fn ticks(timeout: Duration) -> u64 {
    let ticks = timeout.as_millis().div_ceil(TICK.as_millis());
    u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
}

/// One host call through `host_calls`. A panic in the handler becomes an
/// error answer: a host-side bug must reach the guest as a failed lookup.
fn answer(
    host_calls: &dyn HostCalls,
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> std::result::Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    // Guest log lines: policy-server takes them and answers nothing (policies
    // built on slog abort when logging fails). Dropped here.
    if (binding, namespace, operation) == ("kubewarden", "tracing", "log") {
        return Ok(Vec::new());
    }
    match catch_unwind(AssertUnwindSafe(|| {
        host_calls.call(binding, namespace, operation, payload)
    })) {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(error)) => Err(error.0.into()),
        Err(_) => Err(format!("host capability {binding}/{namespace}/{operation} failed").into()),
    }
}

/// A policy module instance reachable through waPC.
pub struct PolicyHost {
    host: WapcHost,
    _ticker: Arc<Ticker>,
}

impl std::fmt::Debug for PolicyHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyHost").finish_non_exhaustive()
    }
}

impl PolicyHost {
    /// Reads, compiles and instantiates the module at `wasm_path`.
    pub fn load(wasm_path: &Path) -> Result<Self> {
        PolicyModule::compile(wasm_path)?.instantiate()
    }

    /// Raw waPC call. A waPC error (the guest reported a failure, or trapped,
    /// or ran out of time) is an `Err`.
    pub fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>> {
        self.host
            .call(operation, payload)
            .map_err(|e| Error::Wasm(format!("waPC call `{operation}` failed: {e}")))
    }

    /// `protocol_version` (empty payload); the guest answers a JSON string, e.g. `"v1"`.
    pub fn protocol_version(&self) -> Result<String> {
        let raw = self.call("protocol_version", &[])?;
        serde_json::from_slice::<String>(&raw).map_err(|_| Error::Answer {
            operation: "protocol_version".to_owned(),
            answer: String::from_utf8_lossy(&raw).into_owned(),
            expected: "a JSON string",
        })
    }

    /// `validate_settings` with the bare settings JSON.
    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsValidationResponse> {
        let payload = serde_json::to_vec(settings)?;
        self.validate_settings_raw(&payload)
    }

    /// `validate_settings` with any payload.
    pub fn validate_settings_raw(&self, payload: &[u8]) -> Result<SettingsValidationResponse> {
        let raw = self.call("validate_settings", payload)?;
        serde_json::from_slice(&raw).map_err(|_| Error::Answer {
            operation: "validate_settings".to_owned(),
            answer: String::from_utf8_lossy(&raw).into_owned(),
            expected: "a SettingsValidationResponse",
        })
    }

    /// `validate` with `{"request": request, "settings": settings}`, and the
    /// JSON Patch derived from `mutated_object` as policy-server does.
    pub fn validate(&self, request: &Value, settings: &Value) -> Result<Evaluation> {
        let payload = serde_json::to_vec(&serde_json::json!({
            "request": request,
            "settings": settings,
        }))?;
        let response = self.validate_raw(&payload)?;
        let patch = response.mutated_object.as_ref().map(|mutated| {
            let original = request.get("object").unwrap_or(&Value::Null);
            json_patch::diff(original, mutated)
        });
        Ok(Evaluation { response, patch })
    }

    /// `validate` with any payload (for malformed-payload tests).
    pub fn validate_raw(&self, payload: &[u8]) -> Result<ValidationResponse> {
        let raw = self.call("validate", payload)?;
        serde_json::from_slice(&raw).map_err(|_| Error::Answer {
            operation: "validate".to_owned(),
            answer: String::from_utf8_lossy(&raw).into_owned(),
            expected: "a ValidationResponse",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A minimal waPC guest, dispatching on the length of the operation name:
    /// 16 `protocol_version` -> `"v1"`; 8 `validate` -> accepted with
    /// `mutated_object` `{"a": 2}`; 4 `trap` -> `unreachable`; 12
    /// `spin_forever` -> endless loop; 6 `lookup` -> host call
    /// `kubewarden/oci/v1/oci_manifest` with the payload, answering the host's
    /// answer (or its error as a guest error); anything else -> guest error.
    const GUEST: &str = r#"
(module
  (import "wapc" "__guest_request" (func $request (param i32 i32)))
  (import "wapc" "__guest_response" (func $response (param i32 i32)))
  (import "wapc" "__guest_error" (func $error (param i32 i32)))
  (import "wapc" "__host_call" (func $host_call (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wapc" "__host_response_len" (func $host_response_len (result i32)))
  (import "wapc" "__host_response" (func $host_response (param i32)))
  (import "wapc" "__host_error_len" (func $host_error_len (result i32)))
  (import "wapc" "__host_error" (func $host_error (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 1300) "kubewarden")
  (data (i32.const 1320) "oci")
  (data (i32.const 1330) "v1/oci_manifest")
  (data (i32.const 1024) "\"v1\"")
  (data (i32.const 1100) "{\"accepted\":true,\"mutated_object\":{\"a\":2},\"warnings\":[\"w\"]}")
  (data (i32.const 1200) "no such operation")
  (func (export "wapc_init"))
  (func (export "__guest_call") (param $op_len i32) (param $msg_len i32) (result i32)
    (call $request (i32.const 0) (i32.const 256))
    (if (i32.eq (local.get $op_len) (i32.const 16))
      (then (call $response (i32.const 1024) (i32.const 4)) (return (i32.const 1))))
    (if (i32.eq (local.get $op_len) (i32.const 8))
      (then (call $response (i32.const 1100) (i32.const 59)) (return (i32.const 1))))
    (if (i32.eq (local.get $op_len) (i32.const 4)) (then unreachable))
    (if (i32.eq (local.get $op_len) (i32.const 12)) (then (loop $l (br $l))))
    (if (i32.eq (local.get $op_len) (i32.const 6))
      (then
        (if (call $host_call (i32.const 1300) (i32.const 10) (i32.const 1320) (i32.const 3)
                             (i32.const 1330) (i32.const 15) (i32.const 256) (local.get $msg_len))
          (then
            (call $host_response (i32.const 2048))
            (call $response (i32.const 2048) (call $host_response_len))
            (return (i32.const 1))))
        (call $host_error (i32.const 2048))
        (call $error (i32.const 2048) (call $host_error_len))
        (return (i32.const 0))))
    (call $error (i32.const 1200) (i32.const 17))
    (i32.const 0)))
"#;

    fn module() -> PolicyModule {
        PolicyModule::from_bytes(GUEST.as_bytes()).unwrap()
    }

    #[test]
    fn calls_guest_and_derives_patch() {
        let host = module().instantiate().unwrap();
        assert_eq!(host.protocol_version().unwrap(), "v1");
        let request = json!({"object": {"a": 1, "b": true}});
        let evaluation = host.validate(&request, &json!({})).unwrap();
        assert!(evaluation.response.accepted);
        assert_eq!(evaluation.response.warnings(), ["w".to_owned()]);
        assert!(evaluation.patched());
        let patch = serde_json::to_value(evaluation.patch.unwrap()).unwrap();
        assert_eq!(
            patch,
            json!([{"op": "replace", "path": "/a", "value": 2}, {"op": "remove", "path": "/b"}])
        );
    }

    #[test]
    fn guest_error_and_trap_are_errors() {
        let host = module().instantiate().unwrap();
        let err = host.call("nonexistent", b"").unwrap_err();
        assert!(format!("{err:#}").contains("no such operation"), "{err:#}");
        let err = host.call("trap", b"").unwrap_err();
        // wasmtime-provider keeps only the top of the trap's error chain.
        assert!(format!("{err:#}").contains("Guest call failure"), "{err:#}");
        // The instance is still callable after a trap.
        assert_eq!(host.protocol_version().unwrap(), "v1");
    }

    #[test]
    fn endless_guest_times_out() {
        let host = module()
            .with_timeout(Duration::from_millis(300))
            .instantiate()
            .unwrap();
        let started = Instant::now();
        let err = host.call("spin_forever", b"").unwrap_err();
        assert!(format!("{err:#}").contains("deadline"), "{err:#}");
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn memory_limit_caps_the_instance() {
        // The guest declares one 64 KiB page.
        let module = module();
        assert!(module
            .with_memory_limit(65_535)
            .unwrap()
            .instantiate()
            .is_err());
        let host = module
            .with_memory_limit(65_536)
            .unwrap()
            .instantiate()
            .unwrap();
        assert_eq!(host.protocol_version().unwrap(), "v1");
    }

    #[test]
    fn host_capabilities_answer_errors() {
        let err = answer(&NoCapabilities, "kubewarden", "oci", "v1/verify", b"{}").unwrap_err();
        // In policy-server's words for a capability not granted.
        assert!(
            err.to_string().contains(
                "Policy has not been granted access to the 'oci/v1/verify' host capability"
            ),
            "{err}"
        );
        let err = answer(&NoCapabilities, "other", "oci", "v1/verify", b"{}").unwrap_err();
        assert!(err.to_string().contains("unknown binding: other"), "{err}");
        // Log lines are taken, as policy-server does.
        assert!(answer(&NoCapabilities, "kubewarden", "tracing", "log", b"{}").is_ok());
    }

    /// Echoes the call's coordinates and payload.
    struct Echo;
    impl HostCalls for Echo {
        fn call(
            &self,
            b: &str,
            n: &str,
            o: &str,
            p: &[u8],
        ) -> std::result::Result<Vec<u8>, HostCallError> {
            if p == b"\"fail\"" {
                return Err(HostCallError("registry unreachable".to_owned()));
            }
            Ok(format!("{b}/{n}/{o} {}", String::from_utf8_lossy(p)).into_bytes())
        }
    }

    #[test]
    fn host_calls_reach_the_handler_of_the_instance() {
        let module = module();
        // The module's default: no capability, the guest sees the error.
        let err = module
            .instantiate()
            .unwrap()
            .call("lookup", b"\"img\"")
            .unwrap_err();
        assert!(format!("{err:#}").contains("not been granted"), "{err:#}");
        let host = module.instantiate_with(Arc::new(Echo)).unwrap();
        let answer = host.call("lookup", b"\"img\"").unwrap();
        assert_eq!(answer, b"kubewarden/oci/v1/oci_manifest \"img\"");
        let err = host.call("lookup", b"\"fail\"").unwrap_err();
        assert!(
            format!("{err:#}").contains("registry unreachable"),
            "{err:#}"
        );
        // Set on the module: every instance gets it.
        let host = module
            .with_host_calls(Arc::new(Echo))
            .instantiate()
            .unwrap();
        assert!(host.call("lookup", b"1").is_ok());
    }

    struct Panics;
    impl HostCalls for Panics {
        fn call(
            &self,
            _: &str,
            _: &str,
            _: &str,
            _: &[u8],
        ) -> std::result::Result<Vec<u8>, HostCallError> {
            panic!("handler bug")
        }
    }

    #[test]
    fn a_panicking_handler_answers_an_error() {
        let err = answer(&Panics, "kubewarden", "oci", "v1/oci_manifest", b"\"a\"").unwrap_err();
        assert!(
            err.to_string()
                .contains("kubewarden/oci/v1/oci_manifest failed"),
            "{err}"
        );
    }
}
