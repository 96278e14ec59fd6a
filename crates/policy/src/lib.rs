//! toolhost's command policy: what a command line would run, whether any of
//! it is blocked, and how dangerous the rest is. Pure: no I/O, no process,
//! no file system; the broker (toolhost's `broker` module) asks it about a
//! line before anything runs, and the fuzz target `shell` drives it with
//! arbitrary lines.
//!
//! The main types: [`Policy`] (the blocklist, the configured allow and
//! deny [`Pattern`]s) answers [`Policy::assess_line`] with an
//! [`Assessment`] (a [`Class`] and the reason) or a [`Refusal`]. The flow:
//! `shell` parses the line with brush-parser into every invocation it
//! would run; `wrappers` unwraps `env`, `timeout`, `xargs`, `bash -c`
//! and the like to the command inside; `blocklist` refuses what is never
//! allowed; `variables` checks the variables a line sets; `classify`
//! classes the rest.
//!
//! Every part of a line is checked — each command of a list or pipeline,
//! function bodies, substitutions, `bash -c '…'` and `eval` strings, the
//! commands behind wrappers such as `env`, `nohup`, `timeout`, `xargs` or
//! `find -exec`. A blocked part refuses the whole line in every mode; the
//! line's class is the most dangerous class of its parts.

mod blocklist;
mod classify;
mod shell;
mod variables;
mod wrappers;

use blocklist::{blocked, harmless_device, normal};
use classify::classify;
use shell::{Arg, Invocation, Script};
use std::fmt;
pub use variables::{SETTABLE_VARIABLES, settable};
use variables::{names_set, unlisted};
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
    /// The variable whose setting made it dangerous, when that is why: a
    /// person can let commands set it ([`Policy::settable`]).
    pub variable: Option<String>,
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
    /// use toolhost_policy::{Pattern, PatternError};
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
    /// Variables a person lets commands set without asking, besides
    /// [`SETTABLE_VARIABLES`].
    pub settable: Vec<String>,
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
    /// [`SETTABLE_VARIABLES`] nor [`Policy::settable`] makes any command
    /// dangerous.
    pub fn assess_env(&self, names: &[&str]) -> Option<Assessment> {
        names.iter().find(|n| !self.may_set(n)).map(|n| Assessment {
            class: Class::Dangerous,
            reason: unlisted(n),
            variable: Some((*n).to_owned()),
        })
    }

    /// Whether a command may set `name` without that making it dangerous.
    pub fn may_set(&self, name: &str) -> bool {
        settable(name) || self.settable.iter().any(|s| s == name)
    }
}

struct Checker<'p> {
    policy: &'p Policy,
    class: Class,
    reason: String,
    variable: Option<String>,
}

impl<'p> Checker<'p> {
    fn new(policy: &'p Policy) -> Self {
        Self {
            policy,
            class: Class::Safe,
            reason: "it only reads".to_owned(),
            variable: None,
        }
    }

    fn finish(self) -> Assessment {
        Assessment {
            class: self.class,
            reason: self.reason,
            variable: self.variable,
        }
    }

    fn raise(&mut self, class: Class, reason: impl FnOnce() -> String) {
        // A variable is named only when allowing it would be enough.
        if class > self.class || (class == self.class && self.variable.is_some()) {
            self.class = class;
            self.reason = reason();
            self.variable = None;
        }
    }

    /// The line sets `names`: dangerous if one is not settable.
    fn sets<'n>(&mut self, mut names: impl Iterator<Item = &'n String>) {
        if let Some(name) = names.find(|n| !self.policy.may_set(n))
            && self.class < Class::Dangerous
        {
            self.raise(Class::Dangerous, || unlisted(name));
            self.variable = Some(name.clone());
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
        self.sets(script.sets.iter());
        if let Some(expr) = script.arithmetic.first() {
            self.raise(Class::Dev, || {
                format!(
                    "bash evaluates `{expr}` as arithmetic over a value known only when it runs, \
                     and such a value can run commands (`a[$(cmd)]`)"
                )
            });
        }
        // git in a directory the line changes to may meet a repository
        // (and configuration) a command made: at least dev.
        let moves = script.invocations.iter().any(|inv| {
            matches!(inv.argv.first().and_then(Arg::lit), Some("cd" | "pushd"))
                && inv.argv.len() > 1
        });
        if moves
            && let Some(git) = script.invocations.iter().find(|inv| {
                inv.argv
                    .first()
                    .and_then(Arg::lit)
                    .is_some_and(|p| p == "git" || p.ends_with("/git"))
            })
        {
            let shown = shown_argv(&git.argv);
            self.raise(Class::Dev, || {
                format!(
                    "`{shown}` runs in a directory this line changes to, whose repository (and the \
                     code its configuration names) a command may have made"
                )
            });
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
            self.sets(std::iter::once(name));
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
                Ok(names) => self.sets(names.iter()),
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

pub(crate) fn shown_argv(argv: &[Arg]) -> String {
    argv.iter().map(Arg::shown).collect::<Vec<_>>().join(" ")
}

/// The last path component of a program (`/usr/bin/sudo` → `sudo`).
pub(crate) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

pub(crate) fn is_shell(name: &str) -> bool {
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

pub(crate) fn lits(argv: &[Arg]) -> impl Iterator<Item = &str> {
    argv.iter().skip(1).filter_map(Arg::lit)
}

#[cfg(test)]
mod tests;
