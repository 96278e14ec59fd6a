//! What a call need not wait for: dropping the last call's store, and
//! instantiating the next call's component.
//!
//! Every call runs in a fresh instance that is never used again: that is
//! the isolation between calls. On a thread that says it runs work after
//! its replies ([`runs_work_after_replies`]: the MCP server's call threads),
//! two costs of it move off the call's path:
//! - **the finished store is dropped after the reply** (its memory reset
//!   for the pool). What the call held that anyone could see ends before
//!   the reply, as it always did: its files, streams, sockets, requests,
//!   service calls (the resource table), its commands and its shares.
//! - **a spare instance is made ahead**, after the reply, when the same
//!   tool was called twice running: its component instantiated in an
//!   empty sandbox, with the last call's limits. The next call of that
//!   tool, with the same limits and the same compiled component, takes it
//!   and puts its own sandbox (its [`CallState`]) in place of the empty
//!   one before any of the tool's code runs for it. An instance whose
//!   start code called the host at all is thrown away (what it saw could
//!   differ from what the call would show), and that component is not
//!   made ahead again: so a spare is what instantiating at the call would
//!   have made. It serves one call.
//!
//! Everywhere else (the CLI, the library, fan-out shares) a store is
//! dropped in place and nothing is made ahead.

use super::{CallRequest, CallState, Captured, Fanout, call_state, empty_store, limit};
use crate::bindings::ToolPluginPre;
use crate::bindings::v0_1_0::ToolPlugin;
use crate::runtime::{Limits, Runtime};
use crate::types::result::CallError;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};
use wasmtime::Store;

/// Stores alive outside every call slot at once: the spare, and stores
/// waiting to be dropped. The instance pool has room for them beyond the
/// calls' (runtime.rs); with none left, a store is dropped in place.
pub(crate) const OUTSIDE_CALLS: u32 = 4;

/// How long a spare's start code may run.
const SPARE_START: Duration = Duration::from_secs(1);

type Work = Box<dyn FnOnce()>;

thread_local! {
    /// Work left for after this thread's reply; `None` on a thread that
    /// did not say it runs such work.
    static AFTER_REPLY: RefCell<Option<Vec<Work>>> = const { RefCell::new(None) };
}

/// Say that this thread calls [`after_reply`] after each reply it sends,
/// so its calls leave their store's drop, and the making of a spare, for
/// then (an embedder's own call threads may, as the MCP server's do). A
/// thread that says so and does not call it keeps up to four stores
/// alive; its calls then drop theirs in place.
pub fn runs_work_after_replies() {
    AFTER_REPLY.with(|work| {
        work.borrow_mut().get_or_insert_with(Vec::new);
    });
}

/// Run the work the calls of this thread left for after their reply
/// (nothing on a thread that did not call [`runs_work_after_replies`]).
pub fn after_reply() {
    loop {
        let work = AFTER_REPLY.with(|work| work.borrow_mut().as_mut().map(std::mem::take));
        let Some(work) = work.filter(|work| !work.is_empty()) else {
            return;
        };
        for job in work {
            if std::panic::catch_unwind(AssertUnwindSafe(job)).is_err() {
                tracing::warn!("work after a reply panicked; the next call is not affected");
            }
        }
    }
}

/// Leave `job` for after the reply; `Err(job)` on a thread that runs no
/// work after its replies.
fn later(job: Work) -> Result<(), Work> {
    AFTER_REPLY.with(|work| match work.borrow_mut().as_mut() {
        Some(list) => {
            list.push(job);
            Ok(())
        }
        None => Err(job),
    })
}

/// Which compiled component of which tool: the address of its code,
/// which no other component has while this one is held.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    tool: Arc<str>,
    code: usize,
}

impl Key {
    fn is(&self, tool: &str, code: usize) -> bool {
        self.code == code && *self.tool == *tool
    }
}

/// The address of a component's compiled code: what tells it from any
/// other component held at the same time.
pub(crate) fn code_of(pre: &ToolPluginPre<CallState>) -> usize {
    pre.instance_pre().component().image_range().start as usize
}

/// How a call's instance came to be, for [`finish`].
#[derive(Clone, Copy)]
pub(crate) enum Started {
    /// Instantiated at the call, in this long.
    AtCall(Duration),
    /// Taken from the spare.
    OnSpare,
    /// A fan-out share: never made ahead, nor leads to a spare.
    AsShare,
}

/// The runtime's spare instance and what decides when to make one.
pub(crate) struct Spares {
    /// The instantiation time that makes a component worth a spare and
    /// its store worth dropping after the reply; `None`: none is
    /// ([`crate::runtime::RuntimeConfig::spares`]).
    worth: Option<Duration>,
    state: Mutex<State>,
    /// Told when a spare being made is there, or is not coming.
    made: Condvar,
    /// Stores counted against [`OUTSIDE_CALLS`].
    outside: Arc<AtomicU32>,
    /// Calls that started on a spare.
    used: AtomicU64,
}

#[derive(Default)]
struct State {
    spare: Option<Spare>,
    /// The spare being made, by which thread (after its reply), since
    /// when: a call of it on another thread waits for it rather than
    /// instantiate beside it.
    making: Option<Underway>,
    /// The component the last finished call ran.
    last: Option<Key>,
    /// Components whose start code calls the host.
    unsuited: HashSet<Key>,
    /// Whether each component's (by [`code_of`]) last instantiation at a
    /// call took long enough to be worth a spare: a guess, made again at
    /// each call that instantiates it (so one that inherits the address
    /// of a component let go of is soon weighed for itself).
    heavy: HashMap<usize, bool>,
}

/// A spare being made.
#[derive(Clone)]
struct Underway {
    key: Key,
    limits: Limits,
    by: ThreadId,
    since: Instant,
}

impl Underway {
    /// Still to be waited for: a thread that never ran its work after
    /// the reply holds nobody up for longer than a start may take.
    fn current(&self) -> bool {
        self.since.elapsed() < SPARE_START
    }
}

/// An instance made ahead, in an empty sandbox.
pub(crate) struct Spare {
    key: Key,
    limits: Limits,
    store: Store<CallState>,
    instance: ToolPlugin,
    _room: Room,
}

/// One of the [`OUTSIDE_CALLS`] places, given back on drop.
struct Room(Arc<AtomicU32>);

impl Drop for Room {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Spares {
    pub(crate) fn new(worth: Option<Duration>) -> Self {
        Self {
            worth,
            state: Mutex::default(),
            made: Condvar::new(),
            outside: Arc::default(),
            used: AtomicU64::new(0),
        }
    }

    fn room(&self) -> Option<Room> {
        self.outside
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < OUTSIDE_CALLS).then_some(n + 1)
            })
            .ok()
            .map(|_| Room(Arc::clone(&self.outside)))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The spare for this tool's component and these limits, if there is
    /// one or one is being made (then waited for, at most as long as its
    /// start may take).
    pub(crate) fn take(&self, tool: &str, code: usize, limits: &Limits) -> Option<Spare> {
        self.worth?;
        let fits = |k: &Key, l: &Limits| k.is(tool, code) && l == limits;
        let mut state = self.state();
        let until = Instant::now() + SPARE_START * 2;
        loop {
            if state
                .spare
                .as_ref()
                .is_some_and(|s| fits(&s.key, &s.limits))
            {
                self.used.fetch_add(1, Ordering::Relaxed);
                return state.spare.take();
            }
            // Not made by this thread: it makes it only after its reply.
            let coming = state.making.as_ref().is_some_and(|m| {
                fits(&m.key, &m.limits) && m.by != std::thread::current().id() && m.current()
            });
            let left = until.saturating_duration_since(Instant::now());
            if !coming || left.is_zero() {
                return None;
            }
            state = self
                .made
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Let go of the spare, if any (and of the compiled code it holds),
    /// and of what was learnt of components that may be let go of too.
    pub(crate) fn let_go(&self) {
        let mut state = self.state();
        let spare = state.spare.take();
        state.heavy.clear();
        state.unsuited.clear();
        state.last = None;
        drop(state);
        drop(spare);
    }

    /// How many calls started on a spare.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
}

/// Clears the spare being made, if still this one, and tells those
/// waiting for it, however the making ends.
struct Making<'a> {
    spares: &'a Spares,
    key: Key,
}

impl Drop for Making<'_> {
    fn drop(&mut self) {
        let mut state = self.spares.state();
        let me = std::thread::current().id();
        if state
            .making
            .as_ref()
            .is_some_and(|m| m.key == self.key && m.by == me)
        {
            state.making = None;
        }
        drop(state);
        self.spares.made.notify_all();
    }
}

impl Spare {
    /// The spare's store and instance with the call's state in place of
    /// the empty one (and the call's limits on the store).
    pub(super) fn install(
        self,
        runtime: &Arc<Runtime>,
        tool: &str,
        req: &CallRequest<'_>,
        fanout: Option<Fanout>,
    ) -> Result<(Store<CallState>, Captured, ToolPlugin), CallError> {
        let Self {
            mut store,
            instance,
            ..
        } = self;
        let (state, captured) = call_state(runtime, Some(runtime), tool, req, fanout)?;
        *store.data_mut() = state;
        limit(&mut store, req.limits);
        Ok((store, captured, instance))
    }
}

/// End what the finished call held that others see, then drop its store
/// after the reply and, if the tool was called twice running, make a
/// spare for its next call.
pub(super) fn finish(
    runtime: &Arc<Runtime>,
    tool: &str,
    pre: &ToolPluginPre<CallState>,
    limits: &Limits,
    mut store: Store<CallState>,
    started: Started,
) {
    let state = store.data_mut();
    drop(std::mem::take(&mut state.table));
    state.commands = None;
    state.fanout = None;
    let spares = &runtime.spares;
    let Some(worth) = spares.worth else {
        return;
    };
    if !AFTER_REPLY.with(|work| work.borrow().is_some()) {
        return;
    }
    let code = code_of(pre);
    let mut state = spares.state();
    if let Started::AtCall(took) = started {
        state.heavy.insert(code, took >= worth);
    }
    // A light component's store goes now: dropping it later, and making
    // its next instance ahead, would cost the next call more than it saves.
    if state.heavy.get(&code) == Some(&false) {
        return;
    }
    let Some(room) = spares.room() else {
        return;
    };
    let make_next = match started {
        Started::AsShare => None,
        Started::AtCall(_) | Started::OnSpare => state.spare_to_make(tool, code, limits),
    };
    drop(state);
    let (runtime, pre, limits) = (Arc::clone(runtime), pre.clone(), limits.clone());
    let job: Work = Box::new(move || {
        if let Some(key) = make_next {
            make(&runtime, key, &pre, limits);
        }
        drop(store);
        drop(room);
    });
    if let Err(job) = later(job) {
        job();
    }
}

impl State {
    /// Note this tool's component as the last one called; the spare to
    /// make, if one is (called twice running, none there or being made,
    /// and its start code not known to call the host). It is then noted
    /// as being made, so that its next call waits for it.
    fn spare_to_make(&mut self, tool: &str, code: usize, limits: &Limits) -> Option<Key> {
        let again = self.last.as_ref().is_some_and(|k| k.is(tool, code));
        if !again {
            self.last = Some(Key {
                tool: Arc::from(tool),
                code,
            });
        }
        let there = self
            .spare
            .as_ref()
            .is_some_and(|s| s.key.is(tool, code) && s.limits == *limits);
        let underway = self.making.as_ref().is_some_and(Underway::current);
        let key = self.last.as_ref()?;
        if !again || there || underway || self.unsuited.contains(key) {
            return None;
        }
        let key = key.clone();
        self.making = Some(Underway {
            key: key.clone(),
            limits: limits.clone(),
            by: std::thread::current().id(),
            since: Instant::now(),
        });
        Some(key)
    }
}

/// Make the spare of `key` noted as being made.
fn make(runtime: &Arc<Runtime>, key: Key, pre: &ToolPluginPre<CallState>, limits: Limits) {
    let spares = &runtime.spares;
    let _making = Making {
        spares,
        key: key.clone(),
    };
    let Some(room) = spares.room() else {
        return;
    };
    let made = ahead(
        runtime,
        pre.instance_pre().engine(),
        &key.tool,
        &limits,
        |store| pre.instantiate(store),
    );
    let (store, instance) = match made {
        Ahead::Made(store, instance) => (store, instance),
        Ahead::ReachedHost => {
            tracing::debug!(tool = %key.tool, "not made ahead: its start code calls the host");
            spares.state().unsuited.insert(key);
            return;
        }
        Ahead::Failed => return,
    };
    let old = spares.state().spare.replace(Spare {
        key,
        limits,
        store,
        instance,
        _room: room,
    });
    drop(old);
}

/// What instantiating ahead gave.
enum Ahead<R> {
    Made(Store<CallState>, R),
    /// The start code called the host: not the same as at a call.
    ReachedHost,
    Failed,
}

/// Instantiate with `instantiate` in an empty sandbox on `engine`, with
/// `limits` but a short deadline.
fn ahead<R>(
    runtime: &Runtime,
    engine: &wasmtime::Engine,
    tool: &str,
    limits: &Limits,
    instantiate: impl FnOnce(&mut Store<CallState>) -> wasmtime::Result<R>,
) -> Ahead<R> {
    let start = Limits {
        timeout: SPARE_START.min(limits.timeout),
        ..limits.clone()
    };
    let Ok((mut store, _captured)) = empty_store(runtime, engine, tool, &start) else {
        return Ahead::Failed;
    };
    let made = instantiate(&mut store);
    if store.data().reached_host {
        return Ahead::ReachedHost;
    }
    match made {
        Ok(made) => Ahead::Made(store, made),
        Err(_) => Ahead::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{CacheDir, RuntimeConfig};
    use wasm_encoder::{
        CanonicalOption, CodeSection, ComponentBuilder, ComponentExportKind, ComponentTypeRef,
        ComponentValType, EntityType, ExportKind, Function, FunctionSection, ImportSection,
        InstanceType, Instruction, Module, ModuleArg, PrimitiveValType, StartSection, TypeSection,
        ValType,
    };
    use wasmtime::component::Component;

    /// A component whose start code calls the host's
    /// `wasi:clocks/monotonic-clock.now` if `calls`, else only returns.
    fn starting(runtime: &Runtime, calls: bool) -> Component {
        let mut module = Module::new();
        let mut types = TypeSection::new();
        types.ty().function([], [ValType::I64]);
        types.ty().function([], []);
        let mut imports = ImportSection::new();
        imports.import("clock", "now", EntityType::Function(0));
        let mut funcs = FunctionSection::new();
        funcs.function(1);
        let mut start = Function::new([]);
        if calls {
            start.instruction(&Instruction::Call(0));
            start.instruction(&Instruction::Drop);
        }
        start.instruction(&Instruction::End);
        let mut code = CodeSection::new();
        code.function(&start);
        module
            .section(&types)
            .section(&imports)
            .section(&funcs)
            .section(&StartSection { function_index: 1 })
            .section(&code);

        let mut component = ComponentBuilder::default();
        let mut clock = InstanceType::new();
        clock
            .ty()
            .function()
            .params(std::iter::empty::<(&str, ComponentValType)>())
            .result(Some(ComponentValType::Primitive(PrimitiveValType::U64)));
        clock.export("now", ComponentTypeRef::Func(0));
        let ty = component.type_instance(None, &clock);
        let instance = component.import(
            "wasi:clocks/monotonic-clock@0.2.0",
            ComponentTypeRef::Instance(ty),
        );
        let now = component.alias_export(instance, "now", ComponentExportKind::Func);
        let lowered = component.lower_func(None, now, [] as [CanonicalOption; 0]);
        let host = component.core_instantiate_exports(None, [("now", ExportKind::Func, lowered)]);
        let module = component.core_module(None, &module);
        component.core_instantiate(None, module, [("clock", ModuleArg::Instance(host))]);
        Component::new(&runtime.engine, component.finish()).unwrap()
    }

    /// A spare is made for a tool called twice running, once at a time,
    /// never for a component whose start code called the host.
    #[test]
    fn a_spare_is_made_for_the_second_call_running_and_once() {
        let limits = Limits::default();
        let mut state = State::default();
        assert!(state.spare_to_make("a", 1, &limits).is_none(), "first call");
        let key = state.spare_to_make("a", 1, &limits).expect("called twice");
        assert!(key.is("a", 1));
        assert!(
            state.spare_to_make("a", 1, &limits).is_none(),
            "one being made"
        );
        state.making = None;
        assert!(
            state.spare_to_make("b", 1, &limits).is_none(),
            "another tool"
        );
        assert!(state.spare_to_make("a", 1, &limits).is_none(), "a after b");
        let a = Key {
            tool: Arc::from("a"),
            code: 1,
        };
        state.unsuited.insert(a);
        assert!(state.spare_to_make("a", 1, &limits).is_none(), "unsuited");
        state.unsuited.clear();
        assert!(state.spare_to_make("a", 1, &limits).is_some());
    }

    /// What a start calling the host does is not what it would do at a
    /// call: such an instance is never kept; one whose start only runs
    /// its own code is.
    #[test]
    fn only_an_instance_whose_start_code_never_called_the_host_is_kept() {
        let runtime = Runtime::new(RuntimeConfig {
            cache: CacheDir::Disabled,
            pool_instances: false,
            ..RuntimeConfig::default()
        })
        .unwrap();
        for calls in [true, false] {
            let component = starting(&runtime, calls);
            let linker = runtime
                .linkers
                .for_component(&runtime.engine, &component)
                .unwrap();
            let pre = linker.instantiate_pre(&component).unwrap();
            let limits = runtime.limits.clone();
            let made = ahead(&runtime, &runtime.engine, "clock", &limits, |store| {
                pre.instantiate(store)
            });
            let got = match made {
                Ahead::Made(..) => "made",
                Ahead::ReachedHost => "reached the host",
                Ahead::Failed => "failed",
            };
            let want = if calls { "reached the host" } else { "made" };
            assert_eq!(got, want, "start code calling the host: {calls}");
        }
    }
}
