//! Loading the policy module and calling it through waPC, the way Kubewarden's
//! policy-server does: wasmtime (through `wasmtime-provider`) with WASI, one
//! `InstancePre` per module rehydrated into a fresh instance for each request,
//! a host callback that answers an error for every host capability, epoch
//! interruption as the policy timeout (2 s by default, as policy-server), and
//! the JSON Patch derived by diffing `mutated_object` against the request object.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
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
            .context("cannot start the epoch ticker thread")?;
        Ok(Self { _stop: stop })
    }
}

/// A compiled policy module. Compiling is the expensive part; instantiating a
/// [`PolicyHost`] from it is cheap. `Send + Sync`: share it between tests.
pub struct PolicyModule {
    pre: WasmtimeEngineProviderPre,
    module: wasmtime::Module,
    ticker: Arc<Ticker>,
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
        let bytes = std::fs::read(wasm_path)
            .with_context(|| format!("cannot read policy module {}", wasm_path.display()))?;
        Self::from_bytes(&bytes)
            .with_context(|| format!("cannot compile policy module {}", wasm_path.display()))
    }

    /// Compiles a module from its bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut config = wasmtime::Config::default();
        config.epoch_interruption(true);
        let engine = wasmtime::Engine::new(&config)
            .map_err(|e| anyhow!("cannot create the wasmtime engine: {e:?}"))?;
        let started = Instant::now();
        let module = wasmtime::Module::new(&engine, bytes).map_err(|e| anyhow!("{e:?}"))?;
        let compile_time = started.elapsed();
        let ticker = Arc::new(Ticker::start(engine)?);
        Ok(Self {
            pre: link(&module, None)?,
            module,
            ticker,
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
        let deadlines = EpochDeadlines {
            wapc_init: self.deadline_ticks,
            wapc_func: self.deadline_ticks,
        };
        let engine = self
            .pre
            .rehydrate(Some(deadlines))
            .map_err(|e| anyhow!("cannot instantiate the policy module: {e}"))?;
        let host = WapcHost::new(Box::new(engine), Some(Box::new(host_callback)))
            .map_err(|e| anyhow!("waPC initialisation of the policy module failed: {e}"))?;
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
        .map_err(|e| anyhow!("cannot link the policy module: {e}"))
}

/// Epoch ticks in `timeout`, at least one.
fn ticks(timeout: Duration) -> u64 {
    let ticks = timeout.as_millis().div_ceil(TICK.as_millis());
    u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
}

/// Host capabilities (`kubewarden/...` bindings: OCI manifests, DNS, cluster
/// context, sigstore) are not offered: like a policy-server without them, every
/// host call but logging is answered with an error. This policy must not need any.
fn host_callback(
    _id: u64,
    binding: &str,
    namespace: &str,
    operation: &str,
    _payload: &[u8],
) -> std::result::Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    // Guest log lines: policy-server takes them and answers nothing (policies
    // built on slog abort when logging fails). Dropped here.
    if (binding, namespace, operation) == ("kubewarden", "tracing", "log") {
        return Ok(Vec::new());
    }
    Err(format!(
        "host capability {binding}/{namespace}/{operation} is not available in the os-placement e2e host"
    )
    .into())
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
            .map_err(|e| anyhow!("waPC call `{operation}` failed: {e}"))
    }

    /// `protocol_version` (empty payload); the guest answers a JSON string, e.g. `"v1"`.
    pub fn protocol_version(&self) -> Result<String> {
        let raw = self.call("protocol_version", &[])?;
        serde_json::from_slice::<String>(&raw).with_context(|| {
            format!(
                "protocol_version answered {:?}, not a JSON string",
                String::from_utf8_lossy(&raw)
            )
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
        serde_json::from_slice(&raw).with_context(|| {
            format!(
                "validate_settings answered {:?}, not a SettingsValidationResponse",
                String::from_utf8_lossy(&raw)
            )
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
        serde_json::from_slice(&raw).with_context(|| {
            format!(
                "validate answered {:?}, not a ValidationResponse",
                String::from_utf8_lossy(&raw)
            )
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
    /// `spin_forever` -> endless loop; anything else -> guest error.
    const GUEST: &str = r#"
(module
  (import "wapc" "__guest_request" (func $request (param i32 i32)))
  (import "wapc" "__guest_response" (func $response (param i32 i32)))
  (import "wapc" "__guest_error" (func $error (param i32 i32)))
  (memory (export "memory") 1)
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
        let err = host_callback(0, "kubewarden", "oci", "v1/verify", b"{}").unwrap_err();
        assert!(err.to_string().contains("kubewarden/oci/v1/verify"));
        // Log lines are taken, as policy-server does.
        assert!(host_callback(0, "kubewarden", "tracing", "log", b"{}").is_ok());
    }
}
