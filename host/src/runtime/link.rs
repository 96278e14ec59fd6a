//! The linkers components are instantiated with: each provides exactly the
//! interfaces its components import, built on first need and kept.
//!
//! Adding every WASI interface, wasi:http and the toolhost imports to one
//! linker (about 300 host functions, each with its type registered in the
//! engine) was a twentieth of a one-shot `toolhost call`, whose component
//! imports a third of them. A component that imports something not listed
//! here gets the linker with everything, so instantiating it fails as it
//! always did, naming the missing import.

use super::Linking;
use super::sandbox::{self, CallState};
use crate::bindings::v0_1_0::toolhost::plugin;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use wasmtime::Engine;
use wasmtime::component::{Component, HasData, HasSelf, InstancePre, Linker, ResourceTable};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
use wasmtime_wasi::p2::bindings as wasi;
use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView};

type Add = fn(&mut Linker<CallState>) -> wasmtime::Result<()>;

/// What the host provides: an interface by its name without a version
/// (`wasi:io/poll`), or every interface of a package (`wasi:http/`), and
/// how to add it.
const PROVIDED: &[(&str, Add)] = &[
    ("wasi:io/error", |l| {
        wasmtime_wasi_io::bindings::wasi::io::error::add_to_linker::<_, Table>(l, table)
    }),
    // Waits bounded by the call's deadline (imports/poll.rs).
    ("wasi:io/poll", |l| {
        wasi::sync::io::poll::add_to_linker::<_, sandbox::BoundedPoll>(l, sandbox::waiting)
    }),
    ("wasi:io/streams", |l| {
        wasi::sync::io::streams::add_to_linker::<_, Table>(l, table)
    }),
    ("wasi:clocks/wall-clock", |l| {
        wasi::clocks::wall_clock::add_to_linker::<_, WasiClocks>(l, CallState::clocks)
    }),
    ("wasi:clocks/monotonic-clock", |l| {
        wasi::clocks::monotonic_clock::add_to_linker::<_, WasiClocks>(l, CallState::clocks)
    }),
    // Secrets and protected paths enforced (imports/filesystem.rs).
    ("wasi:filesystem/types", |l| {
        wasi::sync::filesystem::types::add_to_linker::<_, sandbox::GuardedFilesystem>(
            l,
            sandbox::guarded,
        )
    }),
    ("wasi:filesystem/preopens", |l| {
        wasi::filesystem::preopens::add_to_linker::<_, WasiFilesystem>(l, CallState::filesystem)
    }),
    ("wasi:random/random", |l| {
        wasi::random::random::add_to_linker::<_, WasiRandom>(l, CallState::random)
    }),
    ("wasi:random/insecure", |l| {
        wasi::random::insecure::add_to_linker::<_, WasiRandom>(l, CallState::random)
    }),
    ("wasi:random/insecure-seed", |l| {
        wasi::random::insecure_seed::add_to_linker::<_, WasiRandom>(l, CallState::random)
    }),
    ("wasi:cli/exit", |l| {
        wasi::cli::exit::add_to_linker::<_, WasiCli>(l, CallState::cli)
    }),
    ("wasi:cli/environment", |l| {
        wasi::cli::environment::add_to_linker::<_, WasiCli>(l, CallState::cli)
    }),
    ("wasi:cli/stdin", |l| {
        wasi::cli::stdin::add_to_linker::<_, WasiCli>(l, CallState::cli)
    }),
    ("wasi:cli/stdout", |l| {
        wasi::cli::stdout::add_to_linker::<_, WasiCli>(l, CallState::cli)
    }),
    ("wasi:cli/stderr", |l| {
        wasi::cli::stderr::add_to_linker::<_, WasiCli>(l, CallState::cli)
    }),
    ("wasi:cli/terminal-input", |l| {
        wasi::cli::terminal_input::add_to_linker::<_, WasiCli>(l, CallState::cli)
    }),
    ("wasi:cli/terminal-output", |l| {
        wasi::cli::terminal_output::add_to_linker::<_, WasiCli>(l, CallState::cli)
    }),
    ("wasi:cli/terminal-stdin", |l| {
        wasi::cli::terminal_stdin::add_to_linker::<_, WasiCli>(l, CallState::cli)
    }),
    ("wasi:cli/terminal-stdout", |l| {
        wasi::cli::terminal_stdout::add_to_linker::<_, WasiCli>(l, CallState::cli)
    }),
    ("wasi:cli/terminal-stderr", |l| {
        wasi::cli::terminal_stderr::add_to_linker::<_, WasiCli>(l, CallState::cli)
    }),
    ("wasi:sockets/network", |l| {
        wasi::sockets::network::add_to_linker::<_, WasiSockets>(
            l,
            &Default::default(),
            CallState::sockets,
        )
    }),
    ("wasi:sockets/instance-network", |l| {
        wasi::sockets::instance_network::add_to_linker::<_, WasiSockets>(l, CallState::sockets)
    }),
    ("wasi:sockets/ip-name-lookup", |l| {
        wasi::sockets::ip_name_lookup::add_to_linker::<_, WasiSockets>(l, CallState::sockets)
    }),
    ("wasi:sockets/tcp-create-socket", |l| {
        wasi::sockets::tcp_create_socket::add_to_linker::<_, WasiSockets>(l, CallState::sockets)
    }),
    ("wasi:sockets/tcp", |l| {
        wasi::sync::sockets::tcp::add_to_linker::<_, WasiSockets>(l, CallState::sockets)
    }),
    ("wasi:sockets/udp-create-socket", |l| {
        wasi::sync::sockets::udp_create_socket::add_to_linker::<_, WasiSockets>(
            l,
            CallState::sockets,
        )
    }),
    ("wasi:sockets/udp", |l| {
        wasi::sync::sockets::udp::add_to_linker::<_, WasiSockets>(l, CallState::sockets)
    }),
    // Every request checked against the call's grant (net.rs).
    ("wasi:http/", |l| {
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(l)
    }),
    ("toolhost:plugin/types", |l| {
        plugin::types::add_to_linker::<_, HasSelf<_>>(l, CallState::reached)
    }),
    ("toolhost:plugin/files", |l| {
        plugin::files::add_to_linker::<_, HasSelf<_>>(l, CallState::reached)
    }),
    ("toolhost:plugin/log", |l| {
        plugin::log::add_to_linker::<_, HasSelf<_>>(l, CallState::reached)
    }),
    ("toolhost:plugin/commands", |l| {
        plugin::commands::add_to_linker::<_, HasSelf<_>>(l, CallState::reached)
    }),
    ("toolhost:plugin/parallel", |l| {
        plugin::parallel::add_to_linker::<_, HasSelf<_>>(l, CallState::reached)
    }),
    ("toolhost:plugin/services", |l| {
        plugin::services::add_to_linker::<_, HasSelf<_>>(l, CallState::reached)
    }),
    ("toolhost:plugin/dynamic", |l| {
        plugin::dynamic::add_to_linker::<_, HasSelf<_>>(l, CallState::reached)
    }),
];

// A set of interfaces is a bit mask of their indices in PROVIDED.
const _: () = assert!(PROVIDED.len() <= 64, "more interfaces than bits in a set");

/// Every interface in [`PROVIDED`].
const EVERYTHING: u64 = if PROVIDED.len() == 64 {
    u64::MAX
} else {
    (1 << PROVIDED.len()) - 1
};

/// More distinct import sets than this share the linker with everything.
const MAX_LINKERS: usize = 16;

/// The resource table, for wasi:io's error and streams.
struct Table;

impl HasData for Table {
    type Data<'a> = &'a mut ResourceTable;
}

fn table(state: &mut CallState) -> &mut ResourceTable {
    &mut state.reached().table
}

/// The linkers made so far, by the set of interfaces each provides.
#[derive(Default)]
pub(crate) struct Linkers {
    made: Mutex<HashMap<u64, Arc<Linker<CallState>>>>,
}

impl Linkers {
    /// A linker with what `component` imports (with everything if it
    /// imports something not provided).
    pub(crate) fn for_component(
        &self,
        engine: &Engine,
        component: &Component,
    ) -> wasmtime::Result<Arc<Linker<CallState>>> {
        let mut wanted = 0;
        for (name, _) in component.component_type().imports(engine) {
            match provided(name) {
                Some(index) => wanted |= 1 << index,
                None => {
                    wanted = EVERYTHING;
                    break;
                }
            }
        }
        self.with(engine, wanted)
    }

    /// The linker providing the interfaces in `wanted` (bits of
    /// [`PROVIDED`]).
    fn with(&self, engine: &Engine, wanted: u64) -> wasmtime::Result<Arc<Linker<CallState>>> {
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        let wanted = if made.len() >= MAX_LINKERS && !made.contains_key(&wanted) {
            EVERYTHING
        } else {
            wanted
        };
        if let Some(linker) = made.get(&wanted) {
            return Ok(Arc::clone(linker));
        }
        let mut linker = Linker::new(engine);
        for (index, (_, add)) in PROVIDED.iter().enumerate() {
            if wanted & (1 << index) != 0 {
                add(&mut linker)?;
            }
        }
        let linker = Arc::new(linker);
        made.insert(wanted, Arc::clone(&linker));
        Ok(linker)
    }
}

/// The index in [`PROVIDED`] of the import `name` (`wasi:io/poll@0.2.0`).
fn provided(name: &str) -> Option<usize> {
    let bare = name.split_once('@').map_or(name, |(bare, _)| bare);
    PROVIDED.iter().position(|(interface, _)| {
        interface
            .strip_suffix('/')
            .map_or(*interface == bare, |package| {
                bare.strip_prefix(package)
                    .is_some_and(|rest| rest.starts_with('/'))
            })
    })
}

impl super::Runtime {
    /// `wasm` compiled (or from the cache), as a component, and linked
    /// when it is not a toolhost plugin (a plain one: crate::plain).
    pub(crate) fn link_plain(
        &self,
        key: &str,
        wasm: &[u8],
        label: &str,
    ) -> Result<(Component, Option<InstancePre<CallState>>), String> {
        let component = self.compiled(key, super::WasmBytes::Plain(wasm), Linking::Owned, label)?;
        if exports_toolhost_tool(&self.engine, &component) {
            return Ok((component, None));
        }
        let pre = self.instance_pre(&component, None)?;
        Ok((component, Some(pre)))
    }
}

/// Whether `component` exports the toolhost tool interface (any version).
fn exports_toolhost_tool(engine: &Engine, component: &Component) -> bool {
    component
        .component_type()
        .exports(engine)
        .any(|(name, _)| name.starts_with("toolhost:plugin/tool@"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{CacheDir, Runtime, RuntimeConfig};

    /// A component importing each `(interface, resource)` as an instance
    /// that must export that resource: only a linker defining the
    /// interface under that name links it.
    fn importing(runtime: &Runtime, imports: &[(&str, &str)]) -> Component {
        use wasm_encoder::{
            ComponentImportSection, ComponentTypeRef, ComponentTypeSection, InstanceType,
            TypeBounds,
        };
        let mut types = ComponentTypeSection::new();
        let mut section = ComponentImportSection::new();
        for (index, (name, resource)) in (0u32..).zip(imports) {
            let mut instance = InstanceType::new();
            instance.export(*resource, ComponentTypeRef::Type(TypeBounds::SubResource));
            types.instance(&instance);
            section.import(*name, ComponentTypeRef::Instance(index));
        }
        let mut component = wasm_encoder::Component::new();
        component.section(&types).section(&section);
        Component::new(&runtime.engine, component.finish()).unwrap()
    }

    fn runtime() -> Runtime {
        Runtime::new(RuntimeConfig {
            cache: CacheDir::Disabled,
            pool_instances: false,
            ..RuntimeConfig::default()
        })
        .unwrap()
    }

    /// An interface of each kind the host provides, with a resource it
    /// defines.
    const WITNESSES: &[(&str, &str)] = &[
        ("wasi:io/error@0.2.0", "error"),
        ("wasi:io/poll@0.2.0", "pollable"),
        ("wasi:io/streams@0.2.6", "output-stream"),
        ("wasi:filesystem/types@0.2.0", "descriptor"),
        ("wasi:cli/terminal-input@0.2.0", "terminal-input"),
        ("wasi:cli/terminal-output@0.2.0", "terminal-output"),
        ("wasi:sockets/network@0.2.0", "network"),
        ("wasi:sockets/tcp@0.2.0", "tcp-socket"),
        ("wasi:sockets/udp@0.2.0", "udp-socket"),
        (
            "wasi:sockets/ip-name-lookup@0.2.0",
            "resolve-address-stream",
        ),
        ("wasi:http/types@0.2.0", "fields"),
    ];

    #[test]
    fn each_interface_links_under_its_name_with_the_linker_made_for_it() {
        let runtime = runtime();
        for witness in WITNESSES {
            let component = importing(&runtime, &[*witness]);
            let linker = runtime
                .linkers
                .for_component(&runtime.engine, &component)
                .unwrap();
            if let Err(e) = linker.instantiate_pre(&component) {
                panic!("{witness:?} does not link: {e:?}");
            }
            // The import is checked: a linker without it refuses it.
            assert!(
                Linker::<CallState>::new(&runtime.engine)
                    .instantiate_pre(&component)
                    .is_err()
            );
        }
        // All at once, too.
        let component = importing(&runtime, WITNESSES);
        let linker = runtime
            .linkers
            .for_component(&runtime.engine, &component)
            .unwrap();
        assert!(linker.instantiate_pre(&component).is_ok());
    }

    #[test]
    fn a_linker_is_made_per_set_of_imports_and_kept() {
        let runtime = runtime();
        let link = |imports: &[(&str, &str)]| {
            runtime
                .linkers
                .for_component(&runtime.engine, &importing(&runtime, imports))
                .unwrap()
        };
        let poll = ("wasi:io/poll@0.2.0", "pollable");
        let files = ("wasi:filesystem/types@0.2.0", "descriptor");
        let tcp = ("wasi:sockets/tcp@0.2.0", "tcp-socket");
        let first = link(&[poll, files]);
        let again = link(&[files, ("wasi:io/poll@0.2.6", "pollable")]);
        assert!(Arc::ptr_eq(&first, &again), "the same set shares a linker");
        // A linker holds only what its set imports: it cannot link a
        // component that also imports sockets.
        assert!(
            first
                .instantiate_pre(&importing(&runtime, &[poll, tcp]))
                .is_err()
        );
        let sockets = link(&[poll, tcp]);
        assert!(!Arc::ptr_eq(&first, &sockets));
        // Past the cap, new sets share the linker with everything.
        for witness in WITNESSES {
            link(&[*witness]);
        }
        assert!(runtime.linkers.made.lock().unwrap().len() <= MAX_LINKERS);
        let error = ("wasi:io/error@0.2.0", "error");
        for witness in WITNESSES.iter().filter(|w| ![tcp, error].contains(w)) {
            link(&[*witness, tcp, error]);
        }
        let made = runtime.linkers.made.lock().unwrap().len();
        assert!(made <= MAX_LINKERS + 1, "{made}");
        let everything = runtime.linkers.with(&runtime.engine, EVERYTHING).unwrap();
        let later = link(&[("wasi:http/types@0.2.0", "fields"), tcp, files]);
        assert!(Arc::ptr_eq(&everything, &later));
        assert!(
            later
                .instantiate_pre(&importing(&runtime, WITNESSES))
                .is_ok()
        );
    }

    #[test]
    fn an_import_not_provided_is_named_when_linking_fails() {
        let runtime = runtime();
        let component = importing(
            &runtime,
            &[
                ("wasi:io/poll@0.2.0", "pollable"),
                ("wasi:nn/graph@0.2.0", "graph"),
            ],
        );
        let linker = runtime
            .linkers
            .for_component(&runtime.engine, &component)
            .unwrap();
        let Err(err) = linker.instantiate_pre(&component) else {
            panic!("a component importing wasi:nn linked");
        };
        let err = format!("{err:?}");
        assert!(err.contains("wasi:nn/graph"), "{err}");
        // It was given the linker with everything.
        let everything = runtime.linkers.with(&runtime.engine, EVERYTHING).unwrap();
        assert!(Arc::ptr_eq(&linker, &everything));
    }

    #[test]
    fn imports_are_matched_by_name_without_their_version() {
        let index = |name| PROVIDED.iter().position(|(n, _)| *n == name);
        assert_eq!(provided("wasi:io/poll@0.2.0"), index("wasi:io/poll"));
        assert_eq!(provided("wasi:io/poll"), index("wasi:io/poll"));
        assert_eq!(
            provided("wasi:sockets/tcp@0.2.6"),
            index("wasi:sockets/tcp")
        );
        assert_eq!(
            provided("wasi:sockets/tcp-create-socket@0.2.6"),
            index("wasi:sockets/tcp-create-socket")
        );
        assert_eq!(provided("wasi:http/types@0.2.3"), index("wasi:http/"));
        assert_eq!(
            provided("wasi:http/outgoing-handler@0.2.3"),
            index("wasi:http/")
        );
        assert_eq!(provided("wasi:httpx/types@0.2.3"), None);
        assert_eq!(provided("wasi:io/pol@0.2.0"), None);
        assert_eq!(provided("wasi:nn/graph@0.2.0"), None);
        assert_eq!(
            provided("toolhost:plugin/files@0.1.0"),
            index("toolhost:plugin/files")
        );
    }
}
