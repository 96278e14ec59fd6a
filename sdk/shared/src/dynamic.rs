//! Dynamic tools: the record `create_tool` writes to the dynamic-tool store
//! and the host reads back, shared so both sides agree on one format.
//!
//! A tool lives in `<store>/<id>/`: `meta.json` ([`Meta`]) and its source
//! file ([`Kind::source_file`]). `create_tool` writes it with status
//! [`Status::Pending`]; only a person, with `toolhost dynamic approve`, can
//! make it [`Status::Approved`], and the host loads only approved tools whose
//! approval record (kept outside the store) still matches.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The guest path of the dynamic-tool store (the named directory `dynamic`).
pub const STORE: &str = crate::contract::path::DYNAMIC;

/// The name of the store's directory grant.
pub const STORE_DIR_NAME: &str = crate::contract::dir::DYNAMIC;

/// Each tool's record file.
pub const META_FILE: &str = "meta.json";

/// Names no dynamic tool may take, besides the registered tools: the
/// dynamic-tool machinery itself and words a person would confuse.
pub const RESERVED_NAMES: &[&str] = &[
    crate::contract::tool::CREATE_TOOL,
    crate::contract::tool::JS_RUNTIME,
    crate::contract::tool::COMMAND_RUNNER,
    crate::contract::tool::LOAD_COMPONENT,
    crate::contract::tool::UNLOAD_COMPONENT,
    "toolhost",
    "approve",
    "approve_tool",
    "reject_tool",
    "dynamic",
    "tool",
    "tools",
];

/// What a dynamic tool is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A script defining `function run(args, ctx)`, run by the `js_runtime`
    /// component.
    Javascript,
    /// The same in TypeScript: its types are removed when it is created,
    /// and the JavaScript left ([`Kind::source_file`]) is what is reviewed,
    /// approved and run; the TypeScript is kept beside it
    /// ([`Kind::original_file`]) for the reviewer to read.
    Typescript,
    /// An argv template (a JSON array of strings) where an item `{{param}}`
    /// is replaced by that argument, run through the broker.
    Command,
    /// A component implementing the `tool-plugin` world.
    Component,
}

impl Kind {
    /// The name of the source file in the tool's directory.
    pub fn source_file(self) -> &'static str {
        match self {
            Self::Javascript | Self::Typescript => "source.js",
            Self::Command => "template.json",
            Self::Component => "tool.wasm",
        }
    }

    /// The file kept for reading only, beside the source: a typescript
    /// tool's TypeScript as the agent wrote it.
    pub fn original_file(self) -> Option<&'static str> {
        (self == Self::Typescript).then_some("source.ts")
    }

    /// Whether the source is a script the js_runtime runs.
    pub fn is_script(self) -> bool {
        matches!(self, Self::Javascript | Self::Typescript)
    }

    /// The lowercase name (`javascript`, `typescript`, `command`,
    /// `component`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Javascript => "javascript",
            Self::Typescript => "typescript",
            Self::Command => "command",
            Self::Component => "component",
        }
    }
}

impl Kind {
    /// Whether a tool of this kind can use the grant item `item`: a
    /// command template only runs its command; a script reads and writes
    /// the workspace and runs commands; a component may ask for anything
    /// but a host directory (a person's to give, never an agent's to ask
    /// for). `none` is nothing to use.
    pub fn can_use(self, item: &crate::grant::GrantItem) -> bool {
        use crate::grant::GrantItem;
        match (self, item) {
            (_, GrantItem::Nothing) => false,
            (Self::Command, item) => *item == GrantItem::Commands,
            (Self::Javascript | Self::Typescript, item) => matches!(
                item,
                GrantItem::WorkspaceRead | GrantItem::WorkspaceWrite | GrantItem::Commands
            ),
            (Self::Component, item) => !matches!(item, GrantItem::Dir { .. }),
        }
    }

    /// What a tool of this kind can use, as people write it.
    pub fn usable(self) -> &'static str {
        match self {
            Self::Javascript | Self::Typescript => "workspace:read, workspace:write, commands",
            Self::Command => "commands (a command tool needs nothing else)",
            Self::Component => {
                "workspace:read, workspace:write, commands, network:HOST, env:NAME, service:NAME"
            }
        }
    }
}

/// Where a dynamic tool stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Created, waiting for a person.
    Pending,
    /// Approved by a person; loaded.
    Approved,
    /// Rejected by a person; its source is removed.
    Rejected,
}

impl Status {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
        }
    }
}

/// `<store>/<id>/meta.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// The directory name: the tool name and a random suffix.
    pub id: String,
    /// The tool name (snake_case, unique).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// What it is made of.
    pub kind: Kind,
    /// JSON Schema of its arguments (an object schema).
    pub parameters: Value,
    /// What it asked for, in `--grant` spelling (`workspace:read`, `commands`).
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// `all`, or the one agent that may see and call it (besides the agent
    /// that created it).
    pub scope: String,
    /// The agent that created it, if known.
    #[serde(default)]
    pub created_by: Option<String>,
    /// When it was created (RFC 3339, UTC).
    pub created_at: String,
    /// Pending, approved or rejected.
    pub status: Status,
    /// What a person granted on approval, in `--grant` spelling.
    #[serde(default)]
    pub grant: Option<Vec<String>>,
    /// When a person approved or rejected it.
    #[serde(default)]
    pub decided_at: Option<String>,
    /// Why it was rejected, if a reason was given.
    #[serde(default)]
    pub reason: Option<String>,
    /// What the reviewer should look at twice, found when it was created
    /// (`line 3: uses eval, which runs text as code`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Where a component `load_component` filed came from: an
    /// `oci://REGISTRY/REPOSITORY@sha256:…` reference (pinned by digest)
    /// or the workspace path it was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// What an agent asked a person to do with this approved tool (unload
    /// it, or take capabilities away), until the person decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Request>,
}

/// An agent's request about an approved tool, for a person to decide
/// (`unload_component`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The capabilities to take away, in `--grant` spelling; empty: unload
    /// the tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revoke: Vec<String>,
    /// Why, as the agent put it.
    #[serde(default)]
    pub reason: Option<String>,
    /// The agent that asked, if known.
    #[serde(default)]
    pub by: Option<String>,
    /// When (RFC 3339, UTC).
    pub at: String,
}

impl Meta {
    /// Whether `agent` (or the active profile `profile`) may see this
    /// tool: any agent when the scope is `all`, else the agent (or
    /// profile) it names, or the agent that created it.
    pub fn visible_to(&self, agent: Option<&str>, profile: Option<&str>) -> bool {
        self.scope == "all"
            || agent == Some(self.scope.as_str())
            || profile == Some(&self.scope)
            || agent.is_some() && agent == self.created_by.as_deref()
    }
}

/// Read `<dir>/meta.json`; a record whose id is not its directory's name
/// is refused.
pub fn read_meta(dir: &std::path::Path) -> Result<Meta, String> {
    let text = std::fs::read_to_string(dir.join(META_FILE))
        .map_err(|e| format!("cannot read {META_FILE}: {e}"))?;
    let meta: Meta = serde_json::from_str(&text)
        .map_err(|e| format!("{META_FILE} is not a valid record: {e}"))?;
    // The directory is the id (and the approval's key): a record claiming
    // another id is a copy, not a tool.
    if dir.file_name().and_then(|n| n.to_str()) != Some(meta.id.as_str()) {
        return Err(format!(
            "its {META_FILE} names the id `{}`, not its directory's name",
            meta.id
        ));
    }
    Ok(meta)
}

/// Characters that change how text reads without showing: line and
/// paragraph separators (a JavaScript line break), bidirectional controls,
/// and Unicode's default-ignorable code points (zero-width characters, soft
/// hyphen, variation selectors, tags), plus the blank fillers that are
/// valid in JavaScript identifiers (Hangul fillers, which let `args.path`
/// and `args.pathㅤ` look alike) and the blank braille pattern.
///
/// ```
/// use toolhost_shared::dynamic::is_invisible;
/// for c in ['\u{202E}', '\u{200B}', '\u{3164}', '\u{E0041}', '\u{FE0F}', '\u{2800}'] {
///     assert!(is_invisible(c), "{:X}", c as u32);
/// }
/// assert!(!is_invisible('a') && !is_invisible('é') && !is_invisible('🦊'));
/// ```
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{2800}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

/// `read_file`, `grep`, `v2_tool`: lowercase ASCII words joined by `_`, at
/// most 64 characters.
pub fn is_snake_case(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z'))
        && name.len() <= 64
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && !name.ends_with('_')
        && !name.contains("__")
}

/// Programs a template may not run: shells and wrappers that would turn an
/// argument into code or into another command line.
const CODE_RUNNERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "busybox", "env", "xargs", "eval", "exec",
    "sudo", "doas", "su", "nohup", "setsid", "timeout", "nice", "chroot", "unshare", "nsenter",
    "watch", "script",
];

/// Options whose next argument is code to evaluate.
const CODE_OPTIONS: &[&str] = &[
    "-c",
    "-e",
    "--eval",
    "--command",
    "-exec",
    "-execdir",
    "-ok",
    "--exec",
    "-x",
];

/// Literal options (or option prefixes, `--opt=`) that make common programs
/// run another program or code: allowed in a template, but shown to the
/// person approving it.
const RUNS_CODE: &[&str] = &[
    "--compress-program",
    "--use-compress-program",
    "-I",
    "--to-command",
    "--checkpoint-action",
    "--info-script",
    "--new-volume-script",
    "--rsh",
    "--rsync-path",
    "-wrapper",
    "--wrapper",
    "-fplugin",
    "--open-files-in-pager",
    "--pager",
    "--ext-diff",
    "--upload-pack",
    "--receive-pack",
    "--config-env",
    "--preprocessor",
    "--filter",
    "--run",
    "--exec-cmd",
];

/// What a reviewer should know about a template's literal items: options
/// that run code or other programs (`-c`, `-e`, `--compress-program`,
/// `-exec`, `-wrapper`, `-o ProxyCommand=`...), one line each. The
/// template is valid either way (see [`check_template`]); this is for the
/// person approving it (`toolhost dynamic show`).
///
/// ```
/// use toolhost_shared::dynamic::template_warnings;
/// let t = ["tar".to_owned(), "--use-compress-program=sh -c x".to_owned(), "-cf".to_owned()];
/// assert_eq!(template_warnings(&t).len(), 1);
/// assert!(template_warnings(&["ls".to_owned(), "-la".to_owned()]).is_empty());
/// ```
pub fn template_warnings(template: &[String]) -> Vec<String> {
    template
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, item)| placeholder(item).is_none())
        .filter_map(|(i, item)| {
            let option = item.split_once('=').map_or(item.as_str(), |(o, _)| o);
            let runs = CODE_OPTIONS.contains(&option)
                || RUNS_CODE.contains(&option)
                || item.contains("ProxyCommand")
                || item.contains("LocalCommand");
            runs.then(|| {
                format!(
                    "item {i} `{item}` makes `{}` run code or another program",
                    template[0]
                )
            })
        })
        .collect()
}

/// The JSON Schema types a template value may have (one argv item each).
const SCALAR_TYPES: &[&str] = &["string", "integer", "number", "boolean"];

/// The parameter an argv template item stands for: `{{count}}` → `count`.
/// An item that merely contains `{{` is not a placeholder (see
/// [`check_template`]).
pub fn placeholder(item: &str) -> Option<&str> {
    item.strip_prefix("{{")?
        .strip_suffix("}}")
        .map(str::trim)
        .filter(|p| !p.is_empty())
}

/// Check an argv template against the tool's parameters: a non-empty list
/// whose program is literal, whose placeholders are whole items naming a
/// declared, required parameter (dropping an item for a missing value could
/// leave a flag without its value, a command the person never approved).
/// Returns what is wrong, for the agent to fix.
pub fn check_template(template: &[String], parameters: &Value) -> Result<(), String> {
    let Some(program) = template.first() else {
        return Err("the command template is empty; give the program and its arguments, e.g. [\"git\", \"log\", \"-n\", \"{{count}}\"]".to_owned());
    };
    if program.contains("{{") {
        return Err(format!(
            "the program (`{program}`) must be literal, not a parameter: a tool runs one fixed program"
        ));
    }
    let base = program.rsplit('/').next().unwrap_or(program);
    if CODE_RUNNERS.contains(&base) {
        return Err(format!(
            "a template cannot run `{base}`: it would turn a value into code or another command; name the program it would run directly"
        ));
    }
    let properties = parameters.get("properties").and_then(Value::as_object);
    let required = |name: &str| {
        parameters
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|v| v.as_str() == Some(name)))
    };
    for (i, item) in template.iter().enumerate() {
        if placeholder(item).is_some() && i > 0 && CODE_OPTIONS.contains(&template[i - 1].as_str())
        {
            return Err(format!(
                "the template item `{item}` follows `{}`, so its value would be run as code; a template passes values as data only",
                template[i - 1]
            ));
        }
        match placeholder(item) {
            Some(name) if !properties.is_some_and(|p| p.contains_key(name)) => {
                return Err(format!(
                    "the template item `{item}` names no parameter: add `{name}` to parameters.properties or fix the name"
                ));
            }
            Some(name) if !required(name) => {
                return Err(format!(
                    "the template item `{item}` stands for `{name}`, which is not in parameters.required; every parameter a template uses must be required"
                ));
            }
            Some(name) => {
                let kind = properties
                    .and_then(|p| p.get(name))
                    .and_then(|p| p.get("type"))
                    .and_then(Value::as_str);
                if !kind.is_some_and(|k| SCALAR_TYPES.contains(&k)) {
                    return Err(format!(
                        "`{name}` must have \"type\": string, integer, number or boolean in parameters: a template item takes one value"
                    ));
                }
            }
            None if item.contains("{{") || item.contains("}}") => {
                return Err(format!(
                    "the template item `{item}` mixes text and a placeholder; a placeholder must be a whole item (`{{{{name}}}}`), so a value is always exactly one argument"
                ));
            }
            None => {}
        }
    }
    Ok(())
}

/// Fill an argv template: each `{{param}}` item becomes that argument as one
/// whole item (a string as it is; a number or boolean as JSON text). Never
/// split, joined or quoted: no value can become a second argument or a
/// shell word. A missing value is an error, never a dropped item, and a
/// value starting with `-` is refused unless a literal `--` comes before
/// it, so no value can pass as an option.
pub fn fill_template(
    template: &[String],
    args: &serde_json::Map<String, Value>,
) -> Result<Vec<String>, String> {
    let mut argv = Vec::with_capacity(template.len());
    let mut options_ended = false;
    let program = template
        .first()
        .map_or("", |p| p.rsplit('/').next().unwrap_or(p));
    for item in template {
        let Some(name) = placeholder(item) else {
            options_ended |= item == "--";
            argv.push(item.clone());
            continue;
        };
        let value = match args.get(name) {
            None | Some(Value::Null) => {
                return Err(format!(
                    "`{name}` is required: the command needs a value for it"
                ));
            }
            Some(Value::String(s)) => s.clone(),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
            Some(_) => {
                return Err(format!(
                    "`{name}` must be a string, number or boolean: a template item takes one value"
                ));
            }
        };
        // Before a `--`, `-x` is an option and `@file` makes many programs
        // (gcc, javac, rustc...) read options from a file.
        if !options_ended
            && let Some(lead) = value.chars().next().filter(|c| matches!(c, '-' | '@'))
        {
            let what = if lead == '-' {
                "the program would read it as an option"
            } else {
                "programs such as gcc read options from the file `@` names"
            };
            return Err(format!(
                "`{name}` starts with `{lead}`: {what}; this tool's template has no `--` before it, so give a value that does not start with `{lead}`"
            ));
        }
        // `make V=x` sets a variable, and `.SHELLFLAGS=…` or `SHELL=…`
        // runs any shell line; `dd of=FILE` writes. These programs read a
        // setting wherever it is, after a `--` too.
        if SETTINGS_READERS.contains(&program) && is_setting(&value) {
            return Err(format!(
                "`{name}` is `NAME=VALUE`, which `{program}` reads as a setting, not as data \
                 (even after `--`); give a value without `=` after a name"
            ));
        }
        argv.push(value);
    }
    Ok(argv)
}

/// Programs that read a `NAME=VALUE` argument as a setting of their own.
const SETTINGS_READERS: &[&str] = &[
    "make", "gmake", "bmake", "dd", "awk", "gawk", "mawk", "nawk", "scons", "env",
];

/// Whether `value` reads as `NAME=VALUE` (`.SHELLFLAGS=-c`, `CC=sh`).
fn is_setting(value: &str) -> bool {
    value.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '+' | ':'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    /// A template `["make", "-s", "{{v}}"]` would run any shell line
    /// through `.SHELLFLAGS=`.
    #[test]
    fn settings_are_not_values_for_programs_that_read_them() {
        let make = strings(&["make", "-s", "{{v}}"]);
        for value in [".SHELLFLAGS=-c id", "SHELL=/bin/sh", "CC=sh"] {
            let err = fill_template(&make, json!({ "v": value }).as_object().unwrap()).unwrap_err();
            assert!(err.contains("NAME=VALUE"), "{value}: {err}");
        }
        assert_eq!(
            fill_template(&make, json!({"v": "all"}).as_object().unwrap()).unwrap(),
            strings(&["make", "-s", "all"])
        );
        // make reads `NAME=VALUE` after `--` too.
        let ended = strings(&["make", "--", "{{v}}"]);
        assert!(fill_template(&ended, json!({"v": "A=b"}).as_object().unwrap()).is_err());
        let echo = strings(&["echo", "{{v}}"]);
        assert!(fill_template(&echo, json!({"v": "A=b"}).as_object().unwrap()).is_ok());
    }

    #[test]
    fn a_value_is_always_one_item() {
        let template = strings(&["echo", "--", "{{text}}", "{{n}}"]);
        let args = json!({"text": "\"; rm -rf ~", "n": 3});
        let argv = fill_template(&template, args.as_object().unwrap()).unwrap();
        assert_eq!(argv, strings(&["echo", "--", "\"; rm -rf ~", "3"]));
        // After `--`, a value starting with `-` is data; before, it is refused.
        let dashed = json!({"text": "-rf", "n": -1});
        assert_eq!(
            fill_template(&template, dashed.as_object().unwrap()).unwrap(),
            strings(&["echo", "--", "-rf", "-1"])
        );
        let early = strings(&["rg", "{{text}}", "."]);
        let err = fill_template(&early, json!({"text": "--pre=./evil"}).as_object().unwrap())
            .unwrap_err();
        assert!(err.contains("starts with `-`"), "{err}");
        // A response file for gcc, and a negative number, before any `--`.
        let gcc = strings(&["gcc", "{{file}}", "-O{{n}}"]);
        let err =
            fill_template(&gcc, json!({"file": "@opts.rsp"}).as_object().unwrap()).unwrap_err();
        assert!(err.contains("starts with `@`"), "{err}");
        let head = strings(&["head", "-n", "{{n}}", "--", "{{file}}"]);
        let err =
            fill_template(&head, json!({"n": -1, "file": "x"}).as_object().unwrap()).unwrap_err();
        assert!(err.contains("`n` starts with `-`"), "{err}");
        assert_eq!(
            fill_template(&head, json!({"n": 5, "file": "@x"}).as_object().unwrap()).unwrap(),
            strings(&["head", "-n", "5", "--", "@x"])
        );
        let bad = json!({"text": ["a", "b"], "n": 1});
        assert!(fill_template(&template, bad.as_object().unwrap()).is_err());
        let missing = json!({"text": "x"});
        let err = fill_template(&template, missing.as_object().unwrap()).unwrap_err();
        assert!(err.contains("`n` is required"), "{err}");
    }

    #[test]
    fn templates_are_checked() {
        let params = json!({"type": "object", "properties": {"path": {"type": "string"}},
                            "required": ["path"]});
        assert!(check_template(&strings(&["ls", "--", "{{path}}"]), &params).is_ok());
        for (bad, why) in [
            (vec![], "empty"),
            (vec!["{{path}}"], "literal"),
            (vec!["ls", "{{other}}"], "names no parameter"),
            (vec!["ls", "--path={{path}}"], "whole item"),
            (vec!["/bin/sh", "-c", "ls"], "cannot run `sh`"),
            (vec!["env", "{{path}}"], "cannot run `env`"),
            (vec!["python3", "-c", "{{path}}"], "run as code"),
            (vec!["find", ".", "-exec", "{{path}}", ";"], "run as code"),
        ] {
            let err = check_template(&strings(&bad), &params).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        let listed = json!({"type": "object", "properties": {"path": {"type": "array"}},
                            "required": ["path"]});
        let err = check_template(&strings(&["ls", "{{path}}"]), &listed).unwrap_err();
        assert!(err.contains("string, integer, number or boolean"), "{err}");
        let optional = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let err = check_template(&strings(&["ls", "{{path}}"]), &optional).unwrap_err();
        assert!(err.contains("not in parameters.required"), "{err}");
    }

    #[test]
    fn scope() {
        let mut meta: Meta = serde_json::from_value(json!({
            "id": "x-1", "name": "x", "description": "d", "kind": "command",
            "parameters": {"type": "object"}, "scope": "all",
            "created_at": "2026-01-01T00:00:00Z", "status": "pending"
        }))
        .unwrap();
        assert!(meta.visible_to(None, None));
        meta.scope = "bot_a".into();
        assert!(!meta.visible_to(None, None));
        assert!(!meta.visible_to(Some("bot_b"), None));
        assert!(meta.visible_to(Some("bot_a"), None));
        assert!(meta.visible_to(None, Some("bot_a")));
        // Or its creator.
        meta.created_by = Some("maker".into());
        assert!(meta.visible_to(Some("maker"), None));
        assert!(!meta.visible_to(Some("bot_b"), None));
        assert!(!meta.visible_to(None, None));
    }
}
