use super::build::{check_grant, read_prompts};
use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("/etc/t/toolhost.toml"), Path::new("/etc/t"))
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn no_keys_means_the_library_defaults() {
    let config = parse("").unwrap();
    assert_eq!(config, Config::default());
    assert_eq!(config.mode, Mode::ConfirmSensitive);
    assert!(!config.allow_delete);
    assert_eq!(
        config.commands.to_command_config(),
        CommandConfig::default()
    );
    assert_eq!(config.limits().unwrap(), Limits::default());
    assert!(config.audit_log.is_none());
}

#[test]
fn unknown_keys_are_named_with_their_line() {
    let m = error("mode = \"yolo\"\n\n[commands]\nenabled = true\nallowd = [\"ls\"]\n");
    assert!(m.contains("line 5"), "{m}");
    assert!(m.contains("unknown field `allowd`"), "{m}");
    assert!(m.contains("`allow`"), "the real keys are listed: {m}");
    let m = error("[grants.read_file]\nworkspace = \"read\"\nnetwork_hosts = []\n");
    assert!(m.contains("line 3") && m.contains("network_hosts"), "{m}");
}

#[test]
fn wrong_types_are_named_with_their_line() {
    let m = error("allow_delete = false\n[limits]\ntimeout_secs = \"10s\"\n");
    assert!(m.contains("line 3"), "{m}");
    assert!(m.contains("invalid type: string \"10s\""), "{m}");
    let m = error("mode = \"always\"\n");
    assert!(
        m.contains("line 1") && m.contains("confirm-sensitive"),
        "{m}"
    );
    let m = error("[grants.x]\nworkspace = \"rw\"\n");
    assert!(m.contains("line 2") && m.contains("`read`"), "{m}");
    assert!(error("mode = \"yolo\"\nmode = \"yolo\"\n").contains("line 2"));
}

#[test]
fn every_section_parses_and_shows_back_the_same() {
    let text = r#"
workspace = "proj"
mode = "confirm-all"
allow_delete = true
plugin_dirs = ["plugins", "/opt/toolhost"]
prompts_dir = "prompts"
audit_log = "~/audit.jsonl"
profile = "reviewer"

[limits]
memory_mb = 128
timeout_secs = 10
max_output_bytes = 4096
max_concurrent_calls = 4
cache_max_mb = 2048

[commands]
enabled = true
allow = ["cargo test **"]
deny = ["git push **"]
allowed_only = true
require_sandbox = true
timeout_secs = 5
max_timeout_secs = 60
max_output_chars = 1000
env = { RUST_LOG = "info" }
pass_env = ["CARGO_HOME"]
writable = ["cache"]
max_background = 2
background_ttl_secs = 30
background_buffer_chars = 5000

[grants.my_tool]
workspace = "read"
commands = true
network = ["example.com"]
env = ["LANG"]
directories = [{ host = "state", guest = "state", access = "write" }]

[tools.read_file]
description = "Read one file."
settings = { max_lines = 100 }

[[hooks.post_edit]]
name = "fmt"
command = "rustfmt {file}"
file_patterns = ["*.rs"]
timeout_secs = 20

[profiles.reviewer]
mode = "yolo"
tools = ["read_file", "grep"]
disabled = ["grep"]
allow_delete = false
grants.read_file = { workspace = "read" }
"#;
    let config = parse(text).unwrap();
    assert_eq!(config.workspace.as_deref(), Some(Path::new("/etc/t/proj")));
    assert_eq!(config.plugin_dirs[1], Path::new("/opt/toolhost"));
    assert_eq!(config.commands.writable, [Path::new("/etc/t/cache")]);
    let grant = &config.grants["my_tool"];
    assert_eq!(grant.directories[0].host, Path::new("/etc/t/state"));
    assert_eq!(grant.to_grant().directories[0].access, Access::Write);
    assert_eq!(GrantSection::from(&grant.to_grant()), *grant);
    if let Some(home) = dirs::home_dir() {
        assert_eq!(config.audit_log, Some(home.join("audit.jsonl")));
    }
    let commands = config.commands.to_command_config();
    assert_eq!(commands.default_timeout, Duration::from_secs(5));
    assert_eq!(commands.env, [("RUST_LOG".to_owned(), "info".to_owned())]);
    assert_eq!(config.limits().unwrap().memory_bytes, 128 << 20);
    assert_eq!(config.limits.cache_max_mb, 2048);
    assert_eq!(config.hooks.post_edit[0].file_patterns, ["*.rs"]);
    assert_eq!(config.tools["read_file"].settings["max_lines"], 100);
    // What `config show` prints reads back as the same configuration.
    let shown = config.to_toml();
    let again = Config::parse(&shown, Path::new("shown"), Path::new("/elsewhere")).unwrap();
    assert_eq!(again, config, "{shown}");
}

#[test]
fn a_profile_folds_in_and_an_unknown_one_lists_the_defined() {
    let text = r#"
mode = "confirm-all"
[grants.grep]
workspace = "read"
[profiles.bot]
mode = "yolo"
tools = ["read_file"]
allow_delete = true
grants.read_file = { workspace = "none" }
"#;
    let mut config = parse(text).unwrap();
    let untouched = config.clone();
    let err = config.apply_profile(Some("other")).unwrap_err().to_string();
    assert!(
        err.contains("unknown profile `other`") && err.contains("bot"),
        "{err}"
    );
    assert_eq!(config, untouched, "a failed selection changes nothing");
    assert_eq!(config.apply_profile(None).unwrap(), None);
    let profile = config.apply_profile(Some("bot")).unwrap().unwrap();
    assert_eq!(
        profile.tools.as_deref(),
        Some(&["read_file".to_owned()][..])
    );
    assert_eq!(config.mode, Mode::Yolo);
    assert!(config.allow_delete);
    assert_eq!(config.grants.len(), 2);
    assert_eq!(config.grants["read_file"].workspace, WorkspaceAccess::None);
    // The file's default profile applies when none is asked for.
    let mut config = parse(&format!("profile = \"bot\"\n{text}")).unwrap();
    assert_eq!(config.apply_profile(None).unwrap().unwrap().name, "bot");
}

#[test]
fn bad_limits_and_grants_are_refused_with_the_fix() {
    let config = parse("[limits]\nmemory_mb = 0\n").unwrap();
    assert!(config.limits().unwrap_err().to_string().contains("memory"));
    let config = parse("[limits]\ntimeout_secs = 0\n").unwrap();
    assert!(config.limits().is_err());
    let limits = |text: &str| parse(text).unwrap().limits().unwrap_err().to_string();
    let m = limits("[limits]\nmemory_mb = 99999999999999\n");
    assert!(
        m.contains("limits.memory_mb is 99999999999999; use 1 to 4096"),
        "{m}"
    );
    let m = limits("[limits]\ncache_max_mb = 10\n");
    assert!(
        m.contains("limits.cache_max_mb is 10; use 256 to 1048576"),
        "{m}"
    );
    let commands = |text: &str| {
        parse(text)
            .unwrap()
            .check_commands()
            .unwrap_err()
            .to_string()
    };
    let m = commands("[commands]\ntimeout_secs = 0\n");
    assert!(
        m.contains("commands.timeout_secs is 0; use 1 to 600"),
        "{m}"
    );
    let m = commands("[commands]\ntimeout_secs = 60\nmax_timeout_secs = 30\n");
    assert!(
        m.contains("commands.timeout_secs is 60; use 1 to 30"),
        "{m}"
    );
    let m = commands("[commands]\nmax_background = 0\n");
    assert!(m.contains("commands.max_background"), "{m}");
    let m = commands("[commands]\nbackground_buffer_chars = 10\n");
    assert!(m.contains("use 1024 to"), "{m}");
    assert!(parse("").unwrap().check_commands().is_ok());
    let grant = |text: &str| {
        let config = parse(text).unwrap();
        let (tool, section) = config.grants.iter().next().unwrap();
        check_grant(tool, section).unwrap_err()
    };
    let m = grant("[grants.t]\nenv = [\"A=B\"]\n");
    assert!(m.contains("grants.t.env"), "{m}");
    let m =
        grant("[grants.t]\ndirectories = [{ host = \"/\", guest = \"a/b\", access = \"read\" }]\n");
    assert!(m.contains("plain name"), "{m}");
    let m = grant(
        "[grants.t]\ndirectories = [{ host = \"/no/such/dir\", guest = \"s\", access = \"read\" }]\n",
    );
    assert!(m.contains("not a directory"), "{m}");
}

#[test]
fn prompt_files_are_read_by_tool_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("read_file.md"), "Read it.\n\n").unwrap();
    std::fs::write(dir.path().join("empty.md"), " \n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
    let (prompts, problems) = read_prompts(dir.path()).unwrap();
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].0, "read_file");
    assert_eq!(prompts[0].2, "Read it.");
    assert_eq!(problems.len(), 1);
    assert!(problems[0].reason.contains("empty"));
    assert!(read_prompts(&dir.path().join("missing")).is_err());
}

#[test]
fn the_agent_section_sets_the_loop_and_checks_its_numbers() {
    let config = parse(
        "[agent]\nendpoint = \"http://127.0.0.1:11434/v1\"\nmodel = \"qwen3\"\n\
         api_key_env = \"OPENAI_API_KEY\"\nmax_tool_rounds = 3\n",
    )
    .unwrap();
    assert_eq!(config.agent.model.as_deref(), Some("qwen3"));
    let budget = config.agent.budget().unwrap();
    assert_eq!(budget.max_tool_rounds, 3);
    assert_eq!(
        budget.max_tool_calls,
        crate::agent::Budget::default().max_tool_calls
    );
    let budget_error = |text: &str| parse(text).unwrap().agent.budget().unwrap_err().to_string();
    assert!(
        budget_error("[agent]\nmax_tool_rounds = 0\n")
            .contains("agent.max_tool_rounds is 0; use 1 to 100")
    );
    assert!(budget_error("[agent]\nmax_result_chars = 10\n").contains("use 1000 to"));
    // A key itself has no place in the file.
    assert!(error("[agent]\napi_key = \"sk-1\"\n").contains("api_key"));
}
