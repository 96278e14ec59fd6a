//! The broker's policy: what a command line would run, whether any of it is
//! blocked, and how dangerous the rest is.
//!
//! Every part of a line is checked — each command of a list or pipeline,
//! function bodies, substitutions, `bash -c '…'` and `eval` strings, the
//! commands behind wrappers such as `env`, `nohup`, `timeout`, `xargs` or
//! `find -exec`. A blocked part refuses the whole line in every mode; the
//! line's class is the most dangerous class of its parts.

mod blocklist;
mod classify;
mod wrappers;

use super::shell::{self, Arg, Invocation, Script};
use blocklist::{blocked, harmless_device, normal};
use classify::classify;
use std::fmt;
use wrappers::{Next, has_c_flag, unwrap};

/// How dangerous a command is; confirmation depends on it and the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Only reads or reports (`ls`, `git status`, `cargo check`).
    Safe,
    /// A development tool that builds, tests or formats (`cargo build`,
    /// `pytest`, `make`).
    Dev,
    /// Anything else: it may change or delete things outside what a
    /// development tool does, or toolhost does not know it.
    Dangerous,
}

impl Class {
    /// The name used in messages and configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Safe => "safe",
            Self::Dev => "dev",
            Self::Dangerous => "dangerous",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the policy concluded about a command it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// The most dangerous class of any part.
    pub class: Class,
    /// Why, for the most dangerous part.
    pub reason: String,
}

/// Why a command is refused in every mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An argv pattern from the configuration: words match literally, `*`
/// matches exactly one argument and a final `**` matches the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    words: Vec<String>,
}

/// Why a command pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// The pattern has no words.
    #[error("a command pattern must not be empty")]
    Empty,
    /// `**` is not the last word.
    #[error("in `{0}`, `**` must be the last word (it matches the rest of the arguments)")]
    RestNotLast(String),
    /// The program is a wildcard.
    #[error("in `{0}`, the first word must name a program, not a wildcard")]
    WildProgram(String),
}

impl Pattern {
    /// Parse `cargo test *`; the error says what is wrong.
    ///
    /// ```
    /// use toolhost::broker::policy::{Pattern, PatternError};
    /// assert!(Pattern::parse("cargo test *").is_ok());
    /// assert_eq!(Pattern::parse("  "), Err(PatternError::Empty));
    /// ```
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        let words: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        if words.is_empty() {
            return Err(PatternError::Empty);
        }
        if let Some(i) = words.iter().position(|w| w == "**")
            && i + 1 != words.len()
        {
            return Err(PatternError::RestNotLast(text.to_owned()));
        }
        if words[0].contains('*') {
            return Err(PatternError::WildProgram(text.to_owned()));
        }
        Ok(Self { words })
    }

    /// Whether `argv` matches. A word known only at run time (`None`)
    /// matches any pattern word when `unknown_matches` (for deny
    /// patterns), and none otherwise (for allow patterns). A program named
    /// by path matches by name only if it is in a system directory.
    fn matches(&self, argv: &[Option<&str>], unknown_matches: bool) -> bool {
        let mut i = 0;
        for (n, word) in self.words.iter().enumerate() {
            let Some(&arg) = argv.get(i) else {
                return word == "**";
            };
            let fits = match (word.as_str(), arg) {
                ("**", _) => return true,
                (_, None) => unknown_matches,
                ("*", Some(_)) => true,
                (w, Some(program)) if n == 0 => {
                    program == w
                        || (!w.contains('/')
                            && classify::system_program(program)
                            && basename(program) == w)
                }
                (w, Some(text)) => text == w,
            };
            if !fits {
                return false;
            }
            i += 1;
        }
        i == argv.len()
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.words.join(" "))
    }
}

/// The configurable part of the policy; the blocklist itself is fixed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Commands that count as `safe` (never confirmed except in confirm-all).
    pub allow: Vec<Pattern>,
    /// Commands refused like the blocklist.
    pub deny: Vec<Pattern>,
}

/// How deep `bash -c`, `eval` and wrappers may nest before a line is refused.
const MAX_NESTING: usize = 8;

impl Policy {
    /// Check a shell command line.
    pub fn assess_line(&self, line: &str) -> Result<Assessment, Refusal> {
        let mut checker = Checker::new(self);
        checker.line(line, 0)?;
        Ok(checker.finish())
    }

    /// Check an argument vector run without a shell.
    pub fn assess_argv(&self, argv: &[String]) -> Result<Assessment, Refusal> {
        if argv.is_empty() || argv[0].is_empty() {
            return Err(Refusal("the command is empty".to_owned()));
        }
        let mut checker = Checker::new(self);
        let argv: Vec<Arg> = argv.iter().cloned().map(Arg::Lit).collect();
        checker.command(&argv, 0)?;
        Ok(checker.finish())
    }

    /// Check the extra environment a request sets: a variable not in
    /// [`SETTABLE_VARIABLES`] makes any command dangerous.
    pub fn assess_env(&self, names: &[&str]) -> Option<Assessment> {
        names.iter().find(|n| !settable(n)).map(|n| Assessment {
            class: Class::Dangerous,
            reason: unlisted(n),
        })
    }
}

struct Checker<'p> {
    policy: &'p Policy,
    class: Class,
    reason: String,
}

impl<'p> Checker<'p> {
    fn new(policy: &'p Policy) -> Self {
        Self {
            policy,
            class: Class::Safe,
            reason: "it only reads".to_owned(),
        }
    }

    fn finish(self) -> Assessment {
        Assessment {
            class: self.class,
            reason: self.reason,
        }
    }

    fn raise(&mut self, class: Class, reason: impl FnOnce() -> String) {
        if class > self.class {
            self.class = class;
            self.reason = reason();
        }
    }

    fn line(&mut self, line: &str, depth: usize) -> Result<(), Refusal> {
        if depth > MAX_NESTING {
            return Err(Refusal(
                "shells, `eval` and wrappers nest too deeply to check".to_owned(),
            ));
        }
        let script = shell::analyze(line).map_err(Refusal)?;
        self.script(&script, depth)
    }

    fn script(&mut self, script: &Script, depth: usize) -> Result<(), Refusal> {
        if let Some(name) = script.recursive_functions.first() {
            return Err(Refusal(format!(
                "the function `{name}` calls itself, the shape of a fork bomb"
            )));
        }
        if let Some(name) = script.sets.iter().find(|n| !settable(n)) {
            self.raise(Class::Dangerous, || unlisted(name));
        }
        let mut programs: Vec<Vec<String>> = Vec::with_capacity(script.invocations.len());
        for inv in &script.invocations {
            programs.push(self.invocation(inv, depth)?);
        }
        fetch_into_interpreter(script, &programs)
    }

    /// Check one invocation; returns every program it runs (wrappers too).
    fn invocation(&mut self, inv: &Invocation, depth: usize) -> Result<Vec<String>, Refusal> {
        for target in &inv.writes_to {
            self.redirect(target)?;
        }
        for (name, value) in &inv.assigns {
            if holds_code(value.shown()) {
                return Err(Refusal(format!(
                    "`{name}` is set to text holding a command substitution, which bash can run later \
                     (in `[[ ]]`, arithmetic or prompt expansion); write the command itself"
                )));
            }
            if !settable(name) {
                self.raise(Class::Dangerous, || unlisted(name));
            }
        }
        if inv.argv.is_empty() {
            return Ok(Vec::new());
        }
        let programs = self.command(&inv.argv, depth)?;
        if programs.iter().any(|p| is_shell(p)) && !has_c_flag(&inv.argv) {
            // `bash <<EOF … EOF` runs the here-document.
            for text in &inv.stdin {
                match text {
                    Arg::Lit(body) => self.line(body, depth + 1)?,
                    Arg::Dyn(_) => {
                        return Err(Refusal(
                            "a shell reads a here-document whose text is only known at run time"
                                .to_owned(),
                        ));
                    }
                }
            }
        }
        Ok(programs)
    }

    fn redirect(&mut self, target: &Arg) -> Result<(), Refusal> {
        let path = normal(target.shown());
        if harmless_device(&path) {
            return Ok(());
        }
        if path.starts_with("/dev/") {
            return Err(Refusal(format!(
                "it writes to the device `{path}`; toolhost never lets a command write to devices"
            )));
        }
        // Outside the workspace, or where git finds code to run.
        let elsewhere = path.starts_with(['/', '~', '$']) || path.starts_with("..");
        let git = path == ".git" || path.starts_with(".git/") || path.contains("/.git/");
        if elsewhere || git {
            self.raise(Class::Dangerous, || {
                format!("it writes to `{path}`, outside the workspace's ordinary files")
            });
        } else {
            self.raise(Class::Dev, || format!("it writes to the file `{path}`"));
        }
        Ok(())
    }

    /// Check a command's words, following wrappers to the command they run.
    /// Returns every program name met on the way.
    fn command(&mut self, argv: &[Arg], depth: usize) -> Result<Vec<String>, Refusal> {
        let mut programs = Vec::new();
        let mut argv: Vec<Arg> = argv.to_vec();
        let mut allowed = false;
        for _ in 0..=MAX_NESTING {
            let Some(first) = argv.first() else {
                return Ok(programs);
            };
            let Some(program) = first.lit() else {
                return Err(Refusal(format!(
                    "the program name `{}` is only known at run time, so it cannot be checked; \
                     write the program's name",
                    first.shown()
                )));
            };
            let name = basename(program).to_owned();
            programs.push(name.clone());
            let words: Vec<Option<&str>> = argv.iter().map(Arg::lit).collect();
            if let Some(p) = self.policy.deny.iter().find(|p| p.matches(&words, true)) {
                return Err(Refusal(format!(
                    "`{}` matches the configured deny pattern `{p}`",
                    shown_argv(&argv)
                )));
            }
            allowed |= self.policy.allow.iter().any(|p| p.matches(&words, false));
            blocked(&name, &argv)?;
            evaluated_later(&name, &argv)?;
            match names_set(&name, &argv) {
                Ok(names) => {
                    if let Some(var) = names.iter().find(|n| !settable(n)) {
                        self.raise(Class::Dangerous, || unlisted(var));
                    }
                }
                Err(why) => self.raise(Class::Dangerous, || why),
            }
            // What the command runs besides itself; then its own class.
            match unwrap(&name, &argv)? {
                Next::Run(inner) => {
                    argv = inner;
                    continue;
                }
                Next::Runs(commands) => {
                    for inner in &commands {
                        programs.extend(self.command(inner, depth + 1)?);
                    }
                }
                Next::Line(line) => self.line(&line, depth + 1)?,
                Next::Lines(lines) => {
                    for line in lines {
                        self.line(&line, depth + 1)?;
                    }
                }
                Next::Done => {}
            }
            if !allowed {
                let (class, reason) = classify(program, &name, &argv);
                self.raise(class, || reason);
            }
            return Ok(programs);
        }
        Err(Refusal(
            "wrappers nest too deeply to check; run the command directly".to_owned(),
        ))
    }
}

/// `curl … | sh`, `sh <(curl …)`, `bash -c "$(wget …)"`: code from the
/// network run unseen.
fn fetch_into_interpreter(script: &Script, programs: &[Vec<String>]) -> Result<(), Refusal> {
    let runs = |i: usize, pred: fn(&str) -> bool| programs[i].iter().any(|p| pred(p));
    for (i, inv) in script.invocations.iter().enumerate() {
        if !runs(i, is_fetcher) {
            continue;
        }
        // A later element of any pipeline the fetcher is part of.
        let fed_to_interpreter = script.invocations.iter().enumerate().any(|(j, other)| {
            runs(j, is_interpreter)
                && inv.pipes.iter().any(|&(pipe, at)| {
                    other
                        .pipes
                        .iter()
                        .any(|&(other_pipe, other_at)| other_pipe == pipe && other_at > at)
                })
        });
        let inside_interpreter = inv.inside.is_some_and(|outer| runs(outer, is_interpreter));
        if fed_to_interpreter || inside_interpreter {
            return Err(Refusal(format!(
                "it runs code downloaded by `{}` without showing it; download to a file, read it, then run it",
                programs[i].last().map_or("", String::as_str)
            )));
        }
    }
    Ok(())
}

/// Text bash could run as a command if it evaluates it later.
fn holds_code(text: &str) -> bool {
    text.contains("$(") || text.contains('`') || text.contains("<(") || text.contains(">(")
}

/// Builtins that evaluate their literal arguments as arithmetic or array
/// subscripts (`printf -v 'a[$(cmd)]'`, `test -v`, `declare`, `let`):
/// a substitution in them runs, although it was quoted.
fn evaluated_later(name: &str, argv: &[Arg]) -> Result<(), Refusal> {
    let evaluates = matches!(
        name,
        "printf"
            | "read"
            | "test"
            | "["
            | "declare"
            | "typeset"
            | "local"
            | "export"
            | "readonly"
            | "let"
            | "unset"
            | "mapfile"
            | "readarray"
    );
    match argv
        .iter()
        .skip(1)
        .find(|a| evaluates && holds_code(a.shown()))
    {
        Some(arg) => Err(Refusal(format!(
            "`{name}` evaluates `{}`, which holds a command substitution that would run; write the command itself",
            arg.shown()
        ))),
        None => Ok(()),
    }
}

pub(super) fn shown_argv(argv: &[Arg]) -> String {
    argv.iter().map(Arg::shown).collect::<Vec<_>>().join(" ")
}

/// The last path component of a program (`/usr/bin/sudo` → `sudo`).
pub(super) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

pub(super) fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "fish" | "csh" | "tcsh" | "yash"
    )
}

fn is_interpreter(name: &str) -> bool {
    is_shell(name)
        || matches!(
            name,
            "source"
                | "."
                | "eval"
                | "perl"
                | "ruby"
                | "node"
                | "nodejs"
                | "php"
                | "lua"
                | "deno"
                | "bun"
                | "osascript"
                | "pwsh"
        )
        || name.starts_with("python")
}

fn is_fetcher(name: &str) -> bool {
    matches!(
        name,
        "curl"
            | "wget"
            | "fetch"
            | "aria2c"
            | "http"
            | "https"
            | "xh"
            | "nc"
            | "ncat"
            | "netcat"
            | "socat"
            | "ftp"
            | "tftp"
            | "scp"
            | "rsync"
    )
}

/// Environment variables a command line or a request's `env` may set
/// without making the command dangerous: locale, terminal and colour,
/// verbosity, and the settings of test runners and build tools that name
/// no program, file or directory to load. Any other name written in
/// capitals (`HOME`, `PATH`, `LD_PRELOAD`, `GIT_*`, `TAR_OPTIONS`,
/// `RIPGREP_CONFIG_PATH`, `GCONV_PATH`, ...) can change what a program
/// runs or loads; names with a small letter are the script's own
/// variables. `LC_*` counts as listed.
pub const SETTABLE_VARIABLES: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "TZ",
    "TERM",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "CI",
    "DEBUG",
    "VERBOSE",
    "QUIET",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "RUST_LOG",
    "RUST_TEST_THREADS",
    "RUST_TEST_NOCAPTURE",
    "RUST_MIN_STACK",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_TERM_QUIET",
    "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS",
    "NODE_ENV",
    "NODE_NO_WARNINGS",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONWARNINGS",
    "GOOS",
    "GOARCH",
    "GOMAXPROCS",
    "CGO_ENABLED",
    "OMP_NUM_THREADS",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "SOURCE_DATE_EPOCH",
    // What post-edit hooks get: the file they run on.
    "TOOLHOST_EDITED_FILE",
];

/// Whether setting `name` leaves a command's class alone.
pub fn settable(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_lowercase())
        || SETTABLE_VARIABLES.contains(&name)
        || name.starts_with("LC_")
}

/// Why setting `name` makes a command dangerous.
fn unlisted(name: &str) -> String {
    format!(
        "it sets `{name}`, which is not one of the variables commands may set without asking \
         (it can change which programs run or what they load)"
    )
}

/// The variables `argv` sets without an assignment word: `export NAME`,
/// `declare NAME=…`, `env NAME=… cmd`, `printf -v NAME`, `read NAME`,
/// `mapfile NAME`, `getopts OPTS NAME`. `Err` for what cannot be followed
/// (`declare -n`, a name known only at run time, a mapfile callback).
fn names_set(name: &str, argv: &[Arg]) -> Result<Vec<String>, String> {
    let words: Vec<&Arg> = argv.iter().skip(1).collect();
    let name_of = |a: &Arg| -> Result<String, String> {
        let text = a.lit().ok_or_else(|| {
            format!(
                "`{name}` sets a variable named only at run time (`{}`)",
                a.shown()
            )
        })?;
        Ok(text.split(['=', '[']).next().unwrap_or(text).to_owned())
    };
    // Options, then operands; `values` lists options followed by a value.
    let operands = |values: &[&str]| -> Vec<&Arg> {
        let mut out = Vec::new();
        let mut i = 0;
        let mut options = true;
        while i < words.len() {
            let w = words[i].lit().unwrap_or("");
            if options && w == "--" {
                options = false;
            } else if options && w.starts_with('-') && w.len() > 1 {
                if values.contains(&w) {
                    i += 1;
                }
            } else {
                options = false;
                out.push(words[i]);
            }
            i += 1;
        }
        out
    };
    let lit_has = |flag: &str| {
        words.iter().any(|w| {
            w.lit()
                .is_some_and(|t| t.starts_with('-') && !t.starts_with("--") && t.contains(flag))
        })
    };
    Ok(match name {
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            if matches!(name, "declare" | "typeset" | "local") && lit_has("n") {
                return Err(format!(
                    "`{name} -n` makes a name refer to another variable, which cannot be followed"
                ));
            }
            operands(&[])
                .into_iter()
                .map(name_of)
                .collect::<Result<_, _>>()?
        }
        "env" => words
            .iter()
            .filter_map(|a| a.lit())
            .take_while(|t| t.starts_with('-') || t.contains('='))
            .filter_map(|t| t.split_once('=').map(|(n, _)| n.to_owned()))
            .filter(|n| !n.starts_with('-'))
            .collect(),
        "printf" => words
            .iter()
            .position(|a| a.lit() == Some("-v"))
            .and_then(|i| words.get(i + 1))
            .map(|a| name_of(a))
            .transpose()?
            .into_iter()
            .collect(),
        "read" => {
            let mut names: Vec<String> =
                operands(&["-d", "-i", "-n", "-N", "-p", "-t", "-u", "-a"])
                    .into_iter()
                    .map(name_of)
                    .collect::<Result<_, _>>()?;
            if let Some(i) = words.iter().position(|a| a.lit() == Some("-a")) {
                names.extend(words.get(i + 1).map(|a| name_of(a)).transpose()?);
            }
            names
        }
        "mapfile" | "readarray" => {
            if lit_has("C") {
                return Err(format!(
                    "`{name} -C` runs a callback, which cannot be checked"
                ));
            }
            operands(&["-d", "-n", "-O", "-s", "-u", "-c"])
                .into_iter()
                .map(name_of)
                .collect::<Result<_, _>>()?
        }
        "getopts" => words
            .get(1)
            .map(|a| name_of(a))
            .transpose()?
            .into_iter()
            .collect(),
        _ => Vec::new(),
    })
}

pub(super) fn lits(argv: &[Arg]) -> impl Iterator<Item = &str> {
    argv.iter().skip(1).filter_map(Arg::lit)
}

#[cfg(test)]
mod tests;
