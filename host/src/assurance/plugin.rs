//! WebAssembly plugins, run by wasmtime in a sandbox: no imports at all, a
//! fuel budget, a wall-clock deadline (epoch interruption), a memory cap and
//! a cap on output size. A module is compiled once at start; every call gets
//! a fresh instance, so no call can see another's data.
//!
//! The ABI (docs/plugins.md): the module exports `memory`,
//! `mandate_alloc(len: i32) -> i32`, `mandate_describe() -> i64` and
//! `mandate_call(ptr: i32, len: i32) -> i64`. A returned `i64` packs an
//! output buffer as `(ptr << 32) | len`. Input and output are UTF-8 JSON.
//! `mandate_describe` returns `{"abi": 1, "kind": "<what the plugin is for>"}`.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use wasmtime::{Config, Engine, InstancePre, Linker, Module, ResourceLimiter, Store, Trap};

/// The ABI version this host speaks.
pub const ABI_VERSION: u32 = 1;
/// Largest output a plugin may return.
pub const MAX_OUTPUT_BYTES: u32 = 64 * 1024;
/// How often the engine's epoch advances; deadlines are counted in ticks.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Why a plugin call produced no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    #[error("the plugin ran out of fuel")]
    OutOfFuel,
    #[error("the plugin passed its wall-clock deadline")]
    Timeout,
    #[error("the plugin asked for more memory than it may use")]
    OutOfMemory,
    #[error("the plugin trapped: {0}")]
    Trapped(String),
    #[error("the plugin's output is larger than {MAX_OUTPUT_BYTES} bytes")]
    OversizedOutput,
    #[error("the plugin's output is not valid: {0}")]
    BadOutput(String),
}

impl PluginError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            PluginError::OutOfFuel => "plugin_out_of_fuel",
            PluginError::Timeout => "plugin_timeout",
            PluginError::OutOfMemory => "plugin_out_of_memory",
            PluginError::Trapped(_) => "plugin_trapped",
            PluginError::OversizedOutput => "plugin_oversized_output",
            PluginError::BadOutput(_) => "plugin_bad_output",
        }
    }
}

/// The one engine of the process, with fuel and epoch interruption on, and
/// the thread that advances its epoch.
fn engine() -> anyhow::Result<Engine> {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    if let Some(engine) = ENGINE.get() {
        return Ok(engine.clone());
    }
    let mut config = Config::new();
    config.consume_fuel(true).epoch_interruption(true);
    let engine = Engine::new(&config)?;
    let engine = ENGINE.get_or_init(|| {
        let ticker = engine.clone();
        std::thread::Builder::new()
            .name("mandate-epoch".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(EPOCH_TICK);
                    ticker.increment_epoch();
                }
            })
            .map(|_| ())
            .unwrap_or_else(|error| tracing::error!(%error, "cannot start the plugin clock"));
        engine
    });
    Ok(engine.clone())
}

/// The limits of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub fuel: u64,
    pub memory_bytes: usize,
    pub timeout: Duration,
}

/// Per-call state: the memory cap, and whether it was hit.
struct CallState {
    memory_bytes: usize,
    refused_growth: bool,
}

impl ResourceLimiter for CallState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.memory_bytes;
        self.refused_growth |= !allowed;
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 10_000)
    }
}

#[derive(Deserialize)]
struct Description {
    abi: u32,
    kind: String,
}

/// A compiled plugin, ready to instantiate.
#[derive(Clone)]
pub struct Plugin {
    pre: Arc<InstancePre<CallState>>,
    limits: Limits,
    kind: String,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("kind", &self.kind)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

fn unpack(packed: i64) -> (u32, u32) {
    let bits = packed as u64;
    ((bits >> 32) as u32, bits as u32)
}

fn classify(error: &wasmtime::Error, state: &CallState) -> PluginError {
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => PluginError::OutOfFuel,
        Some(Trap::Interrupt) => PluginError::Timeout,
        _ if state.refused_growth => PluginError::OutOfMemory,
        Some(trap) => PluginError::Trapped(trap.to_string()),
        None => PluginError::Trapped(error.to_string()),
    }
}

impl Plugin {
    /// Compiles a module (binary or text) and checks that it speaks this ABI
    /// and declares itself a plugin of `kind`.
    pub fn load(path: &Path, kind: &str, limits: Limits) -> anyhow::Result<Plugin> {
        let engine = engine()?;
        let module = Module::from_file(&engine, path)
            .map_err(|e| anyhow::anyhow!("cannot compile plugin {}: {e}", path.display()))?;
        if let Some(import) = module.imports().next() {
            anyhow::bail!(
                "plugin {} imports `{}::{}`; plugins may import nothing",
                path.display(),
                import.module(),
                import.name()
            );
        }
        let pre = Linker::<CallState>::new(&engine).instantiate_pre(&module)?;
        let mut plugin = Plugin {
            pre: Arc::new(pre),
            limits,
            kind: String::new(),
        };
        let described = plugin.run(|caller| caller.describe()).map_err(|e| {
            anyhow::anyhow!("plugin {} cannot describe itself: {e}", path.display())
        })?;
        let description: Description = serde_json::from_slice(&described).map_err(|e| {
            anyhow::anyhow!("plugin {} describes itself badly: {e}", path.display())
        })?;
        if description.abi != ABI_VERSION {
            anyhow::bail!(
                "plugin {} speaks ABI {}, this host {ABI_VERSION}",
                path.display(),
                description.abi
            );
        }
        if description.kind != kind {
            anyhow::bail!(
                "plugin {} is a `{}`, not a `{kind}`",
                path.display(),
                description.kind
            );
        }
        plugin.kind = description.kind;
        Ok(plugin)
    }

    /// What the plugin says it is for.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Calls the plugin with JSON input in a fresh instance; returns its JSON
    /// output. Blocks for up to the plugin's deadline: call it on a blocking
    /// thread.
    pub fn call(&self, input: &[u8]) -> Result<Vec<u8>, PluginError> {
        self.run(|caller| caller.call(input))
    }

    fn run(
        &self,
        body: impl FnOnce(&mut Caller<'_>) -> Result<Vec<u8>, wasmtime::Error>,
    ) -> Result<Vec<u8>, PluginError> {
        let engine = self.pre.module().engine();
        let mut store = Store::new(
            engine,
            CallState {
                memory_bytes: self.limits.memory_bytes,
                refused_growth: false,
            },
        );
        store.limiter(|state| state);
        let ticks = (self.limits.timeout.as_millis() / EPOCH_TICK.as_millis()).max(1);
        store.set_epoch_deadline(u64::try_from(ticks).unwrap_or(u64::MAX));
        store
            .set_fuel(self.limits.fuel)
            .map_err(|e| PluginError::Trapped(e.to_string()))?;
        let outcome = match self.pre.instantiate(&mut store) {
            Ok(instance) => body(&mut Caller {
                store: &mut store,
                instance,
            }),
            Err(error) => Err(error),
        };
        outcome.map_err(|error| match error.downcast::<PluginError>() {
            Ok(plugin_error) => plugin_error,
            Err(error) => classify(&error, store.data()),
        })
    }
}

/// One instance during one call.
struct Caller<'a> {
    store: &'a mut Store<CallState>,
    instance: wasmtime::Instance,
}

impl Caller<'_> {
    fn memory(&mut self) -> Result<wasmtime::Memory, wasmtime::Error> {
        self.instance
            .get_memory(&mut *self.store, "memory")
            .ok_or_else(|| PluginError::BadOutput("the plugin exports no `memory`".into()).into())
    }

    fn read_output(&mut self, packed: i64) -> Result<Vec<u8>, wasmtime::Error> {
        let (ptr, len) = unpack(packed);
        if len > MAX_OUTPUT_BYTES {
            return Err(PluginError::OversizedOutput.into());
        }
        let memory = self.memory()?;
        let mut output = vec![0; len as usize];
        memory
            .read(&*self.store, ptr as usize, &mut output)
            .map_err(|_| {
                PluginError::BadOutput("the output lies outside the plugin's memory".into())
            })?;
        Ok(output)
    }

    fn describe(&mut self) -> Result<Vec<u8>, wasmtime::Error> {
        let describe = self
            .instance
            .get_typed_func::<(), i64>(&mut *self.store, "mandate_describe")?;
        let packed = describe.call(&mut *self.store, ())?;
        self.read_output(packed)
    }

    fn call(&mut self, input: &[u8]) -> Result<Vec<u8>, wasmtime::Error> {
        let len = i32::try_from(input.len())
            .map_err(|_| PluginError::BadOutput("input too large".into()))?;
        let alloc = self
            .instance
            .get_typed_func::<i32, i32>(&mut *self.store, "mandate_alloc")?;
        let call = self
            .instance
            .get_typed_func::<(i32, i32), i64>(&mut *self.store, "mandate_call")?;
        let ptr = alloc.call(&mut *self.store, len)?;
        let memory = self.memory()?;
        memory
            .write(&mut *self.store, ptr as u32 as usize, input)
            .map_err(|_| {
                PluginError::BadOutput(
                    "mandate_alloc returned memory the input does not fit".into(),
                )
            })?;
        let packed = call.call(&mut *self.store, (ptr, len))?;
        self.read_output(packed)
    }
}
