//! Command-line flags as parsed by clap, and their validation into the
//! objects the commands use ([`Settings`]).

use anyhow::{Context as _, bail};
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolhost::config::{BuildOptions, CommandsSection, Config, GrantSection};
use toolhost::schema::SchemaFormat;
use toolhost::{CacheDir, Executor, Grant, Mode};
mod agent;
pub use agent::{AgentArgs, ScheduleAction};
pub mod plugin;
pub mod secret;
mod settings;
pub use settings::*;

/// Run sandboxed agent tools: every tool is a WebAssembly component that sees
/// only what it is granted.
#[derive(Debug, Parser)]
#[command(name = "toolhost", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parse the process's command line; clap prints help or a usage error
    /// and exits as [`Parser::parse`] does.
    ///
    /// `toolhost call ...` (the subcommand first) is parsed by a command
    /// that knows only `call` ([`OneCall`]): building clap's whole tree,
    /// every subcommand with each global option copied into it, was a
    /// twentieth of a one-shot call. The flags, the help and the errors are
    /// the same (tested against the whole tree).
    pub fn parse_args() -> Self {
        if std::env::args_os().nth(1).is_some_and(|a| a == "call") {
            OneCall::parse().into()
        } else {
            Self::parse()
        }
    }
}

/// `toolhost call ...` alone: the global options and `call`, as in [`Cli`].
#[derive(Debug, Parser)]
#[command(name = "toolhost", version, about, max_term_width = 100)]
pub struct OneCall {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: OnlyCall,
}

/// The one subcommand [`OneCall`] knows.
#[derive(Debug, Subcommand)]
enum OnlyCall {
    // Its help is CallArgs's doc comment, as for `Command::Call`.
    Call(CallArgs),
}

impl From<OneCall> for Cli {
    fn from(one: OneCall) -> Self {
        let OnlyCall::Call(args) = one.command;
        Self {
            global: one.global,
            command: Command::Call(args),
        }
    }
}

/// Flags every subcommand accepts.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The configuration file (default: toolhost.toml in the workspace, then
    /// in the user config directory; none at all means safe defaults).
    #[arg(long, global = true, value_name = "FILE", env = "TOOLHOST_CONFIG")]
    pub config: Option<PathBuf>,

    /// Use the configuration's [profiles.NAME]: its visible tools, mode and grants.
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,

    /// Append one JSON line per call to FILE (overrides the configuration's audit_log).
    #[arg(long, global = true, value_name = "FILE")]
    pub audit: Option<PathBuf>,

    /// The workspace the tools work in (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Also load the third-party `.wasm` plugins in DIR (repeatable). They get
    /// no capabilities unless granted with --grant.
    #[arg(long = "plugin-dir", global = true, value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,

    /// Also load the component at SOURCE (`oci://REGISTRY/REPO:TAG`;
    /// repeatable), pinned in ~/.config/toolhost/toolhost.lock on first use.
    #[arg(long = "plugin", global = true, value_name = "SOURCE")]
    pub plugins: Vec<String>,

    /// Grant TOOL capabilities, replacing its default grant (repeatable).
    /// CAPS is a comma list of workspace:read, workspace:write, commands,
    /// network:HOST, env:NAME, dir:NAME:read, dir:NAME:write (a directory the
    /// host keeps: memory, todo, web_cache, dynamic, schemas) or none: what
    /// `toolhost tools` prints. Example: --grant my_tool=workspace:read
    #[arg(long = "grant", global = true, value_name = "TOOL=CAPS")]
    pub grants: Vec<String>,

    /// Act as this agent: `call` passes it in the call context, and tools an
    /// agent created for one agent only are listed and callable only as it.
    #[arg(long, global = true, value_name = "ID", env = "TOOLHOST_AGENT")]
    pub agent: Option<String>,

    /// Where compiled components are cached (default: $XDG_CACHE_HOME/toolhost).
    #[arg(long, global = true, value_name = "DIR", env = "TOOLHOST_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,

    /// The file holding the key that signs the compile cache's entries
    /// (default: $XDG_DATA_HOME/toolhost/compile-cache.key; made if missing).
    /// Processes sharing a cache directory share this key.
    #[arg(long, global = true, value_name = "FILE", env = "TOOLHOST_CACHE_KEY")]
    pub cache_key: Option<PathBuf>,

    /// Do not use the compile cache (compile every plugin on every start).
    #[arg(long, global = true)]
    pub no_cache: bool,

    /// Let delete_file (and apply_patch) delete files. Off by default.
    #[arg(long, global = true)]
    pub allow_delete: bool,

    #[command(flatten)]
    pub commands: CommandArgs,

    /// Log more to stderr (-v info, -vv debug, -vvv trace); TOOLHOST_LOG
    /// (an EnvFilter directive such as `toolhost=debug,rmcp=info`) overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// How log lines on stderr look: text, or json (one object a line,
    /// for machines).
    #[arg(long, global = true, value_name = "text|json", default_value = "text")]
    pub log_format: LogFormat,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// For people.
    Text,
    /// One JSON object a line.
    Json,
}

/// How the command broker runs commands (run_command, process).
#[derive(Debug, Args)]
pub struct CommandArgs {
    /// Treat commands matching PATTERN as safe, so they run without asking
    /// (repeatable). Words match literally, `*` one argument, a final `**`
    /// the rest: --allow-command 'cargo test **'
    #[arg(long = "allow-command", global = true, value_name = "PATTERN")]
    pub allow: Vec<String>,

    /// Let commands set the environment variable NAME without that making
    /// them dangerous (repeatable): --allow-env PYTHONPATH
    #[arg(long = "allow-env", global = true, value_name = "NAME")]
    pub allow_env: Vec<String>,

    /// Refuse commands matching PATTERN in every mode (repeatable).
    #[arg(long = "deny-command", global = true, value_name = "PATTERN")]
    pub deny: Vec<String>,

    /// Refuse dangerous commands without asking (only safe and dev commands,
    /// and those matching --allow-command, run).
    #[arg(long, global = true)]
    pub allowed_only: bool,

    /// Refuse to run commands when Landlock or the network filter cannot be
    /// enforced on this system.
    #[arg(long, global = true)]
    pub require_sandbox: bool,

    /// Run no commands at all.
    #[arg(long, global = true)]
    pub no_commands: bool,
}

impl CommandArgs {
    /// Apply these flags over the configuration's `[commands]`: patterns
    /// add to its lists, switches only tighten.
    pub fn apply(&self, section: &mut CommandsSection) {
        section.allow.extend(self.allow.iter().cloned());
        section.deny.extend(self.deny.iter().cloned());
        section.settable_env.extend(self.allow_env.iter().cloned());
        section.allowed_only |= self.allowed_only;
        section.require_sandbox |= self.require_sandbox;
        section.enabled &= !self.no_commands;
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a new tool project: a tool with an input and an output schema,
    /// a test and a README, that builds, passes `toolhost check` and runs
    /// as it is (`toolhost new count_words`, then follow what it prints).
    New {
        /// The tool's name, snake_case (e.g. `count_words`); also the
        /// project's.
        name: String,
        /// The language.
        #[arg(long, value_enum, default_value = "rust")]
        lang: crate::scaffold::Lang,
        /// Where to create it (default: ./NAME); it must not exist or be
        /// empty.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Build against toolhost's `sdk` directory of a checkout (holding
        /// rust/, javascript/, python/) instead of the SDK of this version
        /// from its registry (crates.io, npm or PyPI), the default; until
        /// the SDKs are published there, give `--sdk`.
        #[arg(long, value_name = "DIR", env = "TOOLHOST_SDK")]
        sdk: Option<PathBuf>,
    },
    /// Test a built component in the real host: run each case of CASES (a
    /// JSON array) in a fresh workspace and compare the result. A case:
    /// `{"name", "args", "grant": "workspace:read", "files": {"a.txt":
    /// "..."}, "expect": {"success", "content", "content_contains",
    /// "structured" (members to match; numbers by value), "error_kind",
    /// "files"}}`. A result that does not match the tool's output schema
    /// fails, naming the JSON pointer.
    ///
    /// Exit status: 0 if every case passes, 1 otherwise.
    Test {
        /// The `.wasm` component.
        wasm: PathBuf,
        /// The cases, a JSON file.
        cases: PathBuf,
        /// Print each case's outcome and result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script for toolhost, e.g.
    /// `toolhost completions bash > ~/.local/share/bash-completion/completions/toolhost`
    /// or `toolhost completions zsh > ~/.zfunc/_toolhost`. Reads no
    /// configuration and loads no tool.
    Completions {
        /// bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
    /// List the available tools: name, capabilities, sensitivity, description.
    Tools {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one tool: its description, capabilities, grant and schemas.
    Describe {
        /// The tool name.
        tool: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print tool schemas as a JSON array in a model API's exact shape.
    Schema {
        /// The shape: openai ({"type":"function",...}), anthropic, mcp (as
        /// `serve` lists tools), or mcp-structured (with output schemas, as
        /// `serve --structured-output` does).
        #[arg(
            long,
            default_value = "openai",
            value_name = "openai|anthropic|mcp|mcp-structured"
        )]
        format: SchemaFormat,
        /// Only these tools (default: all).
        tools: Vec<String>,
    },
    /// Check or show the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Serve the tools over MCP: stdio by default, streamable HTTP with --http.
    ///
    /// Add it to an MCP client as the command `toolhost` with the arguments
    /// `serve --workspace DIR`. Without --workspace (or a configured one),
    /// the client's first root is the workspace.
    Serve(ServeArgs),
    /// Check plugin components the way they are checked before loading:
    /// each compiles, links against this host's world, and describes itself
    /// with a valid name, description, JSON Schemas, version and
    /// capabilities. Every problem of a file is reported in one run, each
    /// with what to fix; warnings (no output schema, a version that is not
    /// MAJOR.MINOR.PATCH, every network host asked for) do not fail it.
    ///
    /// Exit status: 0 if every file conforms, 1 otherwise.
    Check {
        /// The `.wasm` files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON array for scripts: per file `file`, `conforms`, `tool`
        /// (name, version, capabilities) and `problems` (severity, field,
        /// message, fix).
        #[arg(long)]
        json: bool,
    },
    /// Open the review page in a browser: the tools agents created, with
    /// their source, warnings and requested grant, to approve (with the
    /// grant edited) or reject; every tool with its grant; the audit log.
    ///
    /// `toolhost serve --http` serves the same page at /review; this runs
    /// it alone, for people who serve MCP over stdio. Approving here is
    /// `toolhost dynamic approve` (a running serve loads the tool at its
    /// next rescan). A browser signs in once with the link printed at
    /// start. Loopback only unless --token-file is given.
    Review(ReviewArgs),
    /// Review the tools agents created with create_tool: list them, show
    /// one, approve it (it is loaded, also by a running `toolhost serve`)
    /// or reject it (it is unloaded and its source removed).
    Dynamic {
        #[command(subcommand)]
        action: DynamicAction,
    },
    /// Store, list or remove the secrets tools read as environment
    /// variables (kept 0600 in the user's data directory, never in
    /// toolhost.toml).
    Secret {
        #[command(subcommand)]
        action: secret::SecretAction,
    },
    /// Pull, pin, push, sign, list or remove components from OCI
    /// registries (pins in ~/.config/toolhost/toolhost.lock).
    Plugin {
        #[command(subcommand)]
        action: plugin::PluginAction,
    },
    // Its help is CallArgs's doc comment, which `OneCall` shows too.
    Call(CallArgs),
    /// Give a task to a model with the visible tools and run its tool calls
    /// until it answers (the tool loop): each call goes through the same
    /// pipeline as `toolhost call` (grants, confirmation, audit, hooks),
    /// the calls of one round run at once, the last request is sent without
    /// tools, and a fallback message answers when the rounds run out.
    ///
    /// The endpoint speaks OpenAI's chat completions (OpenAI, Ollama,
    /// llama.cpp, vLLM, LiteLLM ...) or, with --api anthropic, Anthropic's
    /// messages API. The API key is read only from the
    /// environment variable --api-key-env names; it is never printed or
    /// logged. Flags override the configuration's `[agent]` section.
    ///
    /// Ctrl-C stops the run at once (a second press exits without waiting),
    /// as does answering "abort all" at a confirmation; the audit log
    /// records how every run ended. Progress goes to stderr when it is a
    /// terminal.
    ///
    /// Exit status: 0 when the model answered; 1 when it did not (the
    /// rounds or tokens ran out, it refused, its JSON did not fit) or the
    /// endpoint failed; 2 on a usage error; 130 when a person cancelled.
    Agent(AgentArgs),

    /// Jobs the cron tool scheduled: `run` the due ones through the tool
    /// loop (once, or every minute with --watch; each job at most once at
    /// a time), or `list` them with their last results.
    Schedule {
        #[command(subcommand)]
        action: ScheduleAction,
    },
}

/// `toolhost review` flags.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The port on 127.0.0.1 (0 picks one; it is printed).
    #[arg(long, default_value = "8766", value_name = "PORT")]
    pub port: u16,
    /// Listen on ADDR instead (a non-loopback address needs --token-file).
    #[arg(long, value_name = "ADDR", conflicts_with = "port")]
    pub addr: Option<std::net::SocketAddr>,
    /// Sign in with the token on the first line of FILE instead of a new
    /// random one (the sign-in link is printed at start either way).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

/// `toolhost serve` flags.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve streamable HTTP instead of stdio, on ADDR (default
    /// 127.0.0.1:8765; port 0 picks one). The MCP endpoint is /mcp, with
    /// /health beside it.
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = "127.0.0.1:8765"
    )]
    pub http: Option<std::net::SocketAddr>,
    /// The tokens clients send as `Authorization: Bearer TOKEN` on /mcp:
    /// one `TOKEN [NAME]` a line of FILE, which only its owner may read.
    /// Without it a token is made and kept in a 0600 file whose path is
    /// printed at start ($XDG_RUNTIME_DIR/toolhost/tokens/http-PORT.token).
    #[arg(
        long,
        value_name = "FILE",
        requires = "http",
        conflicts_with = "no_auth"
    )]
    pub token_file: Option<PathBuf>,
    /// Serve /mcp without a token (loopback only): any program of the user
    /// who started the server may then run tools with it, a browser page's
    /// script excepted (its Origin is refused). Other users are refused
    /// either way.
    #[arg(long, requires = "http")]
    pub no_auth: bool,
    /// Also accept this Host header (HTTP; loopback names are always accepted).
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,
    /// Also accept this Origin header (HTTP; the server's own loopback
    /// origins are always accepted, any other origin is refused).
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    pub allowed_origins: Vec<String>,
    /// HTTP sessions served at once (each MCP client holds one); a client
    /// past the cap gets 503 until one ends.
    #[arg(long, default_value = "64", value_name = "N", requires = "http",
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_sessions: u32,
    /// HTTP sessions one token may hold at once (default: --max-sessions).
    /// Past it, that token's session idle the longest is closed to make
    /// room, or the new one gets 503 when all are busy.
    #[arg(long, value_name = "N", requires = "http",
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_sessions_per_token: Option<u32>,
    /// Close an HTTP session after SECS seconds without a request (its
    /// background commands are killed with it).
    #[arg(long, default_value = "1800", value_name = "SECS", requires = "http",
          value_parser = clap::value_parser!(u64).range(10..))]
    pub session_idle_secs: u64,
    /// On SIGTERM or Ctrl-C (HTTP): stop taking connections, give the
    /// calls in flight SECS seconds to finish (/readyz answers 503
    /// meanwhile), then cancel what is left and exit 0.
    #[arg(long, default_value = "30", value_name = "SECS", requires = "http")]
    pub drain_secs: u64,
    /// On SIGTERM or Ctrl-C (HTTP): before that, answer /readyz with 503
    /// for SECS seconds while still serving new connections, so a load
    /// balancer's health checks take this replica out first (0: stop
    /// taking connections at once).
    #[arg(long, default_value = "0", value_name = "SECS", requires = "http",
          value_parser = clap::value_parser!(u64).range(0..=600))]
    pub drain_notice_secs: u64,
    /// One replica of several behind a load balancer (HTTP): the HOST:PORT
    /// the other replicas reach this one at. The ids it gives out name it,
    /// so a request for them that reaches another replica is forwarded
    /// here. Needs --cluster-key-file.
    #[arg(long, value_name = "HOST:PORT", env = "TOOLHOST_REPLICA_ADDR",
          requires_all = ["http", "cluster_key_file"])]
    pub replica_addr: Option<String>,
    /// The secret every replica shares, which signs the replicas' names in
    /// ids: at least 32 bytes, in a file only its owner may read.
    #[arg(
        long,
        value_name = "FILE",
        env = "TOOLHOST_CLUSTER_KEY_FILE",
        requires = "replica_addr"
    )]
    pub cluster_key_file: Option<PathBuf>,
    /// When to ask before running (default: the configuration's mode).
    /// Clients that support elicitation are asked; otherwise the call is
    /// refused with how to allow it.
    #[arg(long, value_name = "yolo|confirm-sensitive|confirm-all")]
    pub mode: Option<Mode>,
    /// Check the plugin directories for new, changed or removed plugins
    /// every SECS seconds (0: never).
    #[arg(long, default_value = "2", value_name = "SECS")]
    pub reload_secs: u64,
    /// After SECS seconds with no call, let go of the loaded tools' code
    /// and free memory; the next call loads its tool again from the
    /// compile cache (0: never).
    #[arg(long, default_value = "60", value_name = "SECS")]
    pub unload_idle_secs: u64,
    /// Also list each tool's output schema and answer its structured data
    /// (`structuredContent`, with the text in it), for clients that read
    /// fields; by default a result is the text the model reads, once.
    #[arg(long)]
    pub structured_output: bool,
}

/// `toolhost config` actions.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Load the configuration, load every plugin it names and check every
    /// key: exit 0 if it is usable, 1 if a plugin or prompt file was
    /// skipped, 2 if it cannot be used (the error says why).
    Check,
    /// Print the effective configuration (the file, the profile and the
    /// command-line flags combined, every default filled in) as TOML.
    Show,
    /// Trust the workspace's toolhost.toml as it is now. A workspace file
    /// is used only once trusted, and any change makes it untrusted again
    /// (a cloned repository or a tool could have written it).
    Trust,
}

/// `toolhost dynamic` actions.
#[derive(Debug, Subcommand)]
pub enum DynamicAction {
    /// List the stored tools: id, status, kind, name, scope, creator.
    List {
        /// Only tools with this status.
        #[arg(long, value_name = "pending|approved|rejected")]
        status: Option<String>,
        /// Print JSON records instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one tool: its record, schema, requested capabilities and source.
    Show {
        /// Its id (or its name, if only one tool not rejected has it).
        id: String,
    },
    /// Approve a tool. It gets what it asked for, unless `--grant CAPS`
    /// says otherwise: here --grant takes only the capabilities
    /// (workspace:read, workspace:write, commands, network:HOST, env:NAME or
    /// none; comma-separated or repeated), e.g. `toolhost dynamic approve
    /// ID --grant workspace:read`. The grant is recorded in its meta.json
    /// and in the user's trust store.
    Approve {
        /// Its id (or its name).
        id: String,
    },
    /// Reject a tool: it is unloaded, its source removed, its record kept
    /// with the reason.
    Reject {
        /// Its id (or its name).
        id: String,
        /// Why, recorded for the agent and for people.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Decline what an agent asked about an approved tool: it stays as it is.
    Decline {
        /// Its id (or its name).
        id: String,
    },
}

/// Call a tool once and print its result.
///
/// Exit status: 0 on success, 1 when the tool reports an error, 2 on a
/// usage error.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool name.
    pub tool: String,
    /// The arguments as a JSON object; `-` reads them from stdin.
    #[arg(default_value = "{}")]
    pub args: String,
    /// Stop the call after SECS seconds (default 30).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Print {"tool","success","content","structured","error","duration_ms"} as JSON.
    #[arg(long)]
    pub json: bool,
    /// When to ask before running: yolo asks only for dangerous commands,
    /// confirm-sensitive asks for tools that write and for dev and dangerous
    /// commands, confirm-all asks for every call and command.
    /// Default: the configuration's mode, else confirm-sensitive.
    #[arg(long, value_name = "yolo|confirm-sensitive|confirm-all")]
    pub mode: Option<Mode>,
    /// Show what would run, run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The session this call belongs to (tools that keep per-session state,
    /// such as todo_manager, keep it apart per session).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

impl CallArgs {
    /// The timeout as a duration, checked.
    pub fn timeout(&self) -> anyhow::Result<Option<Duration>> {
        match self.timeout {
            None => Ok(None),
            Some(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => {
                Ok(Some(Duration::from_secs_f64(secs)))
            }
            Some(secs) => bail!(
                "--timeout {secs} is out of range; give a number of seconds above 0 (at most 86400)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What clap made of `argv`: the parsed command line, or the error's
    /// kind, text and exit status (help and usage errors alike).
    fn outcome<P: Parser + Into<Cli>>(argv: &[&str]) -> String {
        let argv = std::iter::once("toolhost").chain(argv.iter().copied());
        match P::try_parse_from(argv) {
            Ok(parsed) => format!("{:?}", parsed.into()),
            Err(e) => format!("{:?} {} {e}", e.kind(), e.exit_code()),
        }
    }

    #[test]
    fn one_call_parses_call_as_the_whole_tree_does() {
        let cases: &[&[&str]] = &[
            &["call", "read_file"],
            &["call", "read_file", r#"{"path":"a.txt"}"#],
            &["call", "read_file", "-", "--json", "--timeout", "2.5"],
            &["call", "--mode", "yolo", "run_command", "{}", "--dry-run"],
            &["call", "grep", "{}", "--session", "s1", "-vv"],
            &[
                "call",
                "--workspace",
                "/tmp",
                "--grant",
                "t=workspace:read",
                "--grant",
                "u=none",
                "--plugin-dir",
                "/p",
                "--config",
                "c.toml",
                "--profile",
                "p",
                "--audit",
                "a.jsonl",
                "--agent",
                "me",
                "--cache-dir",
                "/c",
                "--no-cache",
                "--allow-delete",
                "--allow-command",
                "cargo test **",
                "--deny-command",
                "rm *",
                "--allowed-only",
                "--require-sandbox",
                "--no-commands",
                "t",
            ],
            // Help and usage errors.
            &["call", "--help"],
            &["call", "-h"],
            &["call"],
            &["call", "read_file", "{}", "extra"],
            &["call", "read_file", "--mode", "sometimes"],
            &["call", "read_file", "--timeout", "soon"],
            &["call", "read_file", "--jsn"],
            &["call", "read_file", "--verbos"],
            &["call", "--version"],
        ];
        for argv in cases {
            let whole = outcome::<Cli>(argv);
            assert_eq!(outcome::<OneCall>(argv), whole, "{argv:?}");
        }
        // Parsed, not just refused alike: the first case reaches a call.
        assert!(outcome::<OneCall>(cases[1]).contains("Call(CallArgs"));
        assert!(outcome::<OneCall>(&["call", "--help"]).contains("Call a tool once"));
    }
}
