//! The broker's policy: what a command line would run, whether any of it is
//! blocked, and how dangerous the rest is.
//!
//! Every part of a line is checked — each command of a list or pipeline,
//! function bodies, substitutions, `bash -c '…'` and `eval` strings, the
//! commands behind wrappers such as `env`, `nohup`, `timeout`, `xargs` or
//! `find -exec`. A blocked part refuses the whole line in every mode; the
//! line's class is the most dangerous class of its parts.

use super::shell::{self, Arg, Invocation, Script};
use std::fmt;

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

impl Pattern {
    /// Parse `cargo test *`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let words: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        if words.is_empty() {
            return Err("a command pattern must not be empty".to_owned());
        }
        if let Some(i) = words.iter().position(|w| w == "**")
            && i + 1 != words.len()
        {
            return Err(format!(
                "in `{text}`, `**` must be the last word (it matches the rest of the arguments)"
            ));
        }
        if words[0].contains('*') {
            return Err(format!(
                "in `{text}`, the first word must name a program, not a wildcard"
            ));
        }
        Ok(Self { words })
    }

    /// Whether `argv` (all of it known) matches.
    fn matches(&self, argv: &[&str]) -> bool {
        let mut i = 0;
        for (n, word) in self.words.iter().enumerate() {
            match word.as_str() {
                "**" => return true,
                "*" if i < argv.len() => {}
                w if n == 0 && i < argv.len() => {
                    let program = argv[i];
                    if program != w && (w.contains('/') || basename(program) != w) {
                        return false;
                    }
                }
                w if i < argv.len() && argv[i] == w => {}
                _ => return false,
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

    /// Check the extra environment a request sets: changing how programs
    /// are found or loaded makes any command dangerous.
    pub fn assess_env(&self, names: &[&str]) -> Option<Assessment> {
        names
            .iter()
            .find(|n| sensitive_variable(n))
            .map(|n| Assessment {
                class: Class::Dangerous,
                reason: format!("it sets `{n}`, which changes which programs run"),
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
        if let Some(name) = inv.assigns.iter().find(|n| sensitive_variable(n)) {
            self.raise(Class::Dangerous, || {
                format!("it sets `{name}`, which changes which programs run")
            });
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
        match target {
            Arg::Lit(path) if harmless_device(path) => Ok(()),
            Arg::Lit(path) if path.starts_with("/dev/") => Err(Refusal(format!(
                "it writes to the device `{path}`; toolhost never lets a command write to devices"
            ))),
            _ => {
                let shown = target.shown().to_owned();
                self.raise(Class::Dev, || format!("it writes to the file `{shown}`"));
                Ok(())
            }
        }
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
            let known: Option<Vec<&str>> = argv.iter().map(Arg::lit).collect();
            if let Some(words) = &known {
                if let Some(p) = self.policy.deny.iter().find(|p| p.matches(words)) {
                    return Err(Refusal(format!(
                        "`{}` matches the configured deny pattern `{p}`",
                        words.join(" ")
                    )));
                }
                allowed |= self.policy.allow.iter().any(|p| p.matches(words));
            }
            blocked(&name, &argv)?;
            if let Some(var) = assigns_sensitive(&name, &argv) {
                self.raise(Class::Dangerous, || {
                    format!("it sets `{var}`, which changes which programs run")
                });
            }
            match unwrap(&name, &argv)? {
                Next::Run(inner) => argv = inner,
                Next::Line(line) => {
                    self.line(&line, depth + 1)?;
                    if !allowed {
                        let shown = shown_argv(&argv);
                        self.raise(Class::Dev, || format!("`{shown}` starts a shell"));
                    }
                    return Ok(programs);
                }
                Next::Lines(lines) => {
                    for line in lines {
                        self.line(&line, depth + 1)?;
                    }
                    return Ok(programs);
                }
                Next::Done => {
                    if !allowed {
                        let (class, reason) = classify(program, &name, &argv);
                        self.raise(class, || reason);
                    }
                    return Ok(programs);
                }
            }
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
        let fed_to_interpreter = script.invocations.iter().enumerate().any(|(j, other)| {
            other.pipeline == inv.pipeline
                && other.position > inv.position
                && runs(j, is_interpreter)
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

/// What a program does with its arguments, for following wrappers.
enum Next {
    /// It runs another command (`env X=1 cmd`, `timeout 5 cmd`).
    Run(Vec<Arg>),
    /// It runs a shell command line (`bash -c '…'`, `eval`).
    Line(String),
    /// It keeps command lines to run later (`trap '…' EXIT`, `alias`).
    Lines(Vec<String>),
    /// It is the command.
    Done,
}

fn known(arg: &Arg, what: &str) -> Result<String, Refusal> {
    arg.lit().map(str::to_owned).ok_or_else(|| {
        Refusal(format!(
            "{what} `{}` is only known at run time, so it cannot be checked",
            arg.shown()
        ))
    })
}

/// Skip options of a wrapper: `takes_value` lists options followed by a
/// value. Returns the index of the first operand.
fn skip_options(argv: &[Arg], takes_value: &[&str]) -> usize {
    let mut i = 1;
    while i < argv.len() {
        let Some(word) = argv[i].lit() else { break };
        if word == "--" {
            return i + 1;
        }
        if !word.starts_with('-') || word == "-" {
            break;
        }
        i += if takes_value.contains(&word) { 2 } else { 1 };
    }
    i
}

fn unwrap(name: &str, argv: &[Arg]) -> Result<Next, Refusal> {
    let rest = |from: usize| -> Next {
        if from < argv.len() {
            Next::Run(argv[from..].to_vec())
        } else {
            Next::Done
        }
    };
    Ok(match name {
        "nohup" | "setsid" | "builtin" | "unbuffer" | "catchsegv" => rest(skip_options(argv, &[])),
        "time" => rest(skip_options(argv, &["-f", "--format", "-o", "--output"])),
        "nice" => rest(skip_options(argv, &["-n", "--adjustment"])),
        "ionice" => rest(skip_options(
            argv,
            &["-c", "--class", "-n", "--classdata", "-p", "--pid"],
        )),
        "stdbuf" => rest(skip_options(
            argv,
            &["-i", "-o", "-e", "--input", "--output", "--error"],
        )),
        "chrt" => rest(skip_options(argv, &[]) + 1),
        "taskset" => {
            let i = skip_options(argv, &[]);
            let pid_mode = argv
                .iter()
                .filter_map(Arg::lit)
                .any(|w| w == "-p" || w == "--pid");
            if pid_mode { Next::Done } else { rest(i + 1) }
        }
        "timeout" => rest(skip_options(argv, &["-s", "--signal", "-k", "--kill-after"]) + 1),
        "command" => {
            // `command -v x` only looks x up.
            let lookup = argv
                .iter()
                .skip(1)
                .filter_map(Arg::lit)
                .any(|w| w == "-v" || w == "-V");
            if lookup {
                Next::Done
            } else {
                rest(skip_options(argv, &[]))
            }
        }
        "exec" => rest(skip_options(argv, &["-a"])),
        "busybox" => {
            let i = skip_options(argv, &[]);
            rest(i)
        }
        "env" => unwrap_env(argv)?,
        "xargs" => rest(skip_options(
            argv,
            &[
                "-a",
                "--arg-file",
                "-d",
                "--delimiter",
                "-E",
                "-e",
                "-I",
                "-L",
                "-l",
                "-n",
                "--max-args",
                "-P",
                "--max-procs",
                "-s",
                "--max-chars",
            ],
        )),
        "flock" => {
            if let Some(i) = argv
                .iter()
                .position(|a| matches!(a.lit(), Some("-c" | "--command")))
            {
                match argv.get(i + 1) {
                    Some(line) => Next::Line(known(line, "the command of `flock -c`")?),
                    None => Next::Done,
                }
            } else {
                rest(skip_options(argv, &["-w", "--timeout", "-E", "--conflict-exit-code"]) + 1)
            }
        }
        "watch" => {
            let i = skip_options(argv, &["-n", "--interval", "-d", "--differences"]);
            let exec = argv
                .iter()
                .filter_map(Arg::lit)
                .any(|w| w == "-x" || w == "--exec");
            if exec {
                rest(i)
            } else if i < argv.len() {
                let words: Result<Vec<String>, Refusal> = argv[i..]
                    .iter()
                    .map(|a| known(a, "the command of `watch`"))
                    .collect();
                Next::Line(words?.join(" "))
            } else {
                Next::Done
            }
        }
        "find" => unwrap_find(argv)?,
        "eval" => {
            let words: Result<Vec<String>, Refusal> = argv[1..]
                .iter()
                .map(|a| known(a, "the text given to `eval`"))
                .collect();
            Next::Line(words?.join(" "))
        }
        "trap" => match argv.get(1).map(|a| (a, a.lit())) {
            Some((_, Some("-p" | "-l" | "-" | ""))) | None => Next::Done,
            Some((action, _)) if argv.len() > 2 => {
                Next::Lines(vec![known(action, "the action of `trap`")?])
            }
            _ => Next::Done,
        },
        "alias" => {
            let mut lines = Vec::new();
            for a in &argv[1..] {
                let text = known(a, "the alias")?;
                if let Some((_, value)) = text.split_once('=') {
                    lines.push(value.to_owned());
                }
            }
            Next::Lines(lines)
        }
        n if is_shell(n) => match shell_c_argument(argv) {
            Some(line) => Next::Line(known(line, "the command given to the shell")?),
            None => Next::Done,
        },
        _ => Next::Done,
    })
}

/// `env [-i] [-u NAME] [NAME=VALUE…] [-S 'line'] [cmd…]`.
fn unwrap_env(argv: &[Arg]) -> Result<Next, Refusal> {
    let mut i = 1;
    while i < argv.len() {
        let word = known(&argv[i], "an argument of `env`")?;
        match word.as_str() {
            "-S" | "--split-string" => {
                let line = argv
                    .get(i + 1)
                    .map(|a| known(a, "the string of `env -S`"))
                    .transpose()?;
                let mut text = line.unwrap_or_default();
                for a in &argv[(i + 2).min(argv.len())..] {
                    text.push(' ');
                    text.push_str(&known(a, "an argument of `env`")?);
                }
                return Ok(Next::Line(text));
            }
            "-u" | "--unset" | "-C" | "--chdir" => i += 2,
            "--" => {
                i += 1;
                break;
            }
            w if w.starts_with("--split-string=") || (w.starts_with("-S") && w.len() > 2) => {
                let line = w
                    .trim_start_matches("--split-string=")
                    .trim_start_matches("-S");
                let mut text = line.to_owned();
                for a in &argv[i + 1..] {
                    text.push(' ');
                    text.push_str(&known(a, "an argument of `env`")?);
                }
                return Ok(Next::Line(text));
            }
            w if w.starts_with('-') => i += 1,
            w if w.contains('=') => i += 1,
            _ => break,
        }
    }
    Ok(if i < argv.len() {
        Next::Run(argv[i..].to_vec())
    } else {
        Next::Done
    })
}

/// `find … -exec cmd … ;` runs `cmd`; `-delete` deletes.
fn unwrap_find(argv: &[Arg]) -> Result<Next, Refusal> {
    let roots: Vec<&Arg> = argv[1..]
        .iter()
        .take_while(|a| {
            a.lit()
                .is_none_or(|w| !w.starts_with('-') && w != "(" && w != "!")
        })
        .collect();
    let deletes = argv.iter().any(|a| a.lit() == Some("-delete"));
    if deletes && let Some(root) = roots.iter().find(|r| precious_path(r)) {
        return Err(Refusal(format!(
            "`find {} -delete` would delete `{}` itself or everything under it",
            root.shown(),
            root.shown()
        )));
    }
    if let Some(i) = argv
        .iter()
        .position(|a| matches!(a.lit(), Some("-exec" | "-execdir" | "-ok" | "-okdir")))
    {
        let end = argv[i + 1..]
            .iter()
            .position(|a| matches!(a.lit(), Some(";" | "+")))
            .map_or(argv.len(), |e| i + 1 + e);
        if end > i + 1 {
            return Ok(Next::Run(argv[i + 1..end].to_vec()));
        }
    }
    Ok(Next::Done)
}

/// The `-c` command string of a shell invocation, if any.
fn shell_c_argument(argv: &[Arg]) -> Option<&Arg> {
    let mut i = 1;
    while i < argv.len() {
        let word = argv[i].lit()?;
        if word == "--" || !word.starts_with(['-', '+']) {
            return None;
        }
        if word.starts_with('-') && !word.starts_with("--") && word.contains('c') {
            // `-c`, `-lc`, `-ec`: the first operand after the options.
            let mut j = i + 1;
            while j < argv.len()
                && argv[j]
                    .lit()
                    .is_some_and(|w| w.starts_with('-') && w != "-")
            {
                j += 1;
            }
            return argv.get(j);
        }
        if word == "-o" || word == "+o" || word == "-O" || word == "+O" {
            i += 1;
        }
        i += 1;
    }
    None
}

fn has_c_flag(argv: &[Arg]) -> bool {
    shell_c_argument(argv).is_some()
}

fn shown_argv(argv: &[Arg]) -> String {
    argv.iter().map(Arg::shown).collect::<Vec<_>>().join(" ")
}

/// The last path component of a program (`/usr/bin/sudo` → `sudo`).
fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn is_shell(name: &str) -> bool {
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

/// Variables that change which program runs or what it loads.
fn sensitive_variable(name: &str) -> bool {
    matches!(
        name,
        "PATH"
            | "BASH_ENV"
            | "ENV"
            | "IFS"
            | "SHELLOPTS"
            | "BASHOPTS"
            | "PROMPT_COMMAND"
            | "GIT_EXEC_PATH"
    ) || name.starts_with("LD_")
        || name.starts_with("BASH_FUNC_")
}

/// `env PATH=… cmd`, `export LD_PRELOAD=…`: the sensitive variable set.
fn assigns_sensitive(name: &str, argv: &[Arg]) -> Option<String> {
    if !matches!(
        name,
        "env" | "export" | "declare" | "typeset" | "local" | "readonly"
    ) {
        return None;
    }
    argv[1..].iter().find_map(|a| {
        let text = a.shown().trim_start_matches(['"', '\'']);
        let var = text.split_once('=')?.0;
        sensitive_variable(var).then(|| var.to_owned())
    })
}

/// Device files a command may write to.
fn harmless_device(path: &str) -> bool {
    matches!(path, "/dev/null" | "/dev/zero" | "/dev/full" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
        || path.starts_with("/dev/fd/")
        || path.starts_with("/dev/pts/")
        // bash's network pseudo-files: the network filter governs them.
        || path.starts_with("/dev/tcp/")
        || path.starts_with("/dev/udp/")
}

/// Paths whose recursive deletion destroys the system or the home
/// directory: `/`, `/*`, `~`, `$HOME`, top-level directories.
fn precious_path(arg: &Arg) -> bool {
    let text = arg.shown().trim_matches(['"', '\'']);
    let home = ["~", "$HOME", "${HOME}"];
    if home.iter().any(|h| {
        text == *h
            || text
                .strip_prefix(h)
                .is_some_and(|rest| rest.trim_matches(['/', '*', '.']).is_empty())
    }) {
        return true;
    }
    match arg {
        Arg::Lit(path) => {
            if !path.starts_with('/') {
                return false;
            }
            // Lexically: `/`, `//`, `/./`, `/*`, `/usr`, `/etc/` …
            let parts: Vec<&str> = path
                .split('/')
                .filter(|p| !p.is_empty() && *p != ".")
                .collect();
            if parts.contains(&"..") {
                return true;
            }
            parts.len() <= 1
        }
        // `rm -rf "/$DIR"`: an empty variable leaves `/`.
        Arg::Dyn(text) => {
            let t = text.trim_start_matches(['"', '\'']);
            t.starts_with("/$") || t.starts_with("/\"$") || t.starts_with("/${") || t == "/*"
        }
    }
}

fn lits(argv: &[Arg]) -> impl Iterator<Item = &str> {
    argv.iter().skip(1).filter_map(Arg::lit)
}

/// The blocklist: refused in every mode.
fn blocked(name: &str, argv: &[Arg]) -> Result<(), Refusal> {
    let refuse = |why: &str| Err(Refusal(format!("`{}`: {why}", shown_argv(argv))));
    match name {
        "sudo" | "su" | "doas" | "pkexec" | "runuser" | "sudoedit" | "run0" => refuse(
            "it runs commands as another user; toolhost never does, and the sandbox could not grant it",
        ),
        "rm" => {
            let recursive = lits(argv).any(|w| {
                w == "--recursive"
                    || (w.starts_with('-')
                        && !w.starts_with("--")
                        && (w.contains('r') || w.contains('R')))
            });
            let no_preserve = lits(argv).any(|w| w == "--no-preserve-root");
            let target = argv.iter().skip(1).find(|a| precious_path(a));
            if no_preserve || (recursive && target.is_some()) {
                refuse("it deletes the root, a top-level or the home directory")
            } else {
                Ok(())
            }
        }
        "chmod" => {
            let wide = lits(argv).any(|w| {
                let w = w.trim_start_matches('0');
                w == "777"
                    || w == "7777"
                    || ["a+rwx", "a=rwx", "ugo+rwx", "ugo=rwx", "+rwx"].contains(&w)
            });
            if wide {
                refuse("it makes files writable by everyone (chmod 777)")
            } else {
                Ok(())
            }
        }
        "dd" => {
            let to_device = lits(argv).any(|w| {
                w.strip_prefix("of=")
                    .is_some_and(|p| p.starts_with("/dev/") && !harmless_device(p))
            });
            if to_device {
                refuse("it writes straight to a device")
            } else {
                Ok(())
            }
        }
        "tee" | "cp" | "mv" | "shred" | "install" => {
            if lits(argv).any(|w| w.starts_with("/dev/") && is_disk(w)) {
                refuse("it writes straight to a disk device")
            } else {
                Ok(())
            }
        }
        n if n.starts_with("mkfs")
            || matches!(
                n,
                "mke2fs"
                    | "mkswap"
                    | "wipefs"
                    | "fdisk"
                    | "sfdisk"
                    | "cfdisk"
                    | "gdisk"
                    | "sgdisk"
                    | "parted"
                    | "blkdiscard"
                    | "mkdosfs"
                    | "mkntfs"
            ) =>
        {
            refuse("it formats or repartitions disks")
        }
        "shutdown" | "reboot" | "halt" | "poweroff" | "kexec" => {
            refuse("it shuts the machine down")
        }
        "systemctl" | "loginctl" => {
            let power = lits(argv).any(|w| {
                matches!(
                    w,
                    "poweroff"
                        | "reboot"
                        | "halt"
                        | "kexec"
                        | "suspend"
                        | "hibernate"
                        | "hybrid-sleep"
                        | "suspend-then-hibernate"
                        | "emergency"
                        | "rescue"
                        | "soft-reboot"
                        | "isolate"
                )
            });
            if power {
                refuse("it shuts down, suspends or reboots the machine")
            } else {
                Ok(())
            }
        }
        "init" | "telinit" => {
            if lits(argv).any(|w| matches!(w, "0" | "6" | "1" | "s" | "S")) {
                refuse("it changes the machine's runlevel (shutdown or reboot)")
            } else {
                Ok(())
            }
        }
        "pkill" => {
            let kill9 = lits(argv).any(is_kill_signal) || signal_option_is_kill(argv);
            let full = lits(argv).any(|w| {
                w == "-f"
                    || w == "--full"
                    || (w.starts_with('-')
                        && !w.starts_with("--")
                        && w.contains('f')
                        && !is_kill_signal(w))
            });
            if kill9 && full {
                refuse("`pkill -9 -f` kills every process whose command line matches")
            } else {
                Ok(())
            }
        }
        "killall" | "killall5" => {
            if name == "killall5" || lits(argv).any(is_kill_signal) || signal_option_is_kill(argv) {
                refuse("`killall -9` kills processes by name without a chance to clean up")
            } else {
                Ok(())
            }
        }
        "kill" => {
            if kill_targets(argv).contains(&"-1") {
                refuse("`kill … -1` signals every process you own")
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    }
}

/// The process ids `kill` is given: after an optional signal (`-9`,
/// `-KILL`, `-s SIG`, `-n N`, `--signal SIG`) and `--`.
fn kill_targets(argv: &[Arg]) -> Vec<&str> {
    let words: Vec<&str> = argv.iter().skip(1).filter_map(Arg::lit).collect();
    let mut i = match words.first().copied() {
        Some("-s" | "-n" | "--signal") => 2,
        // `kill -1 PID` sends signal 1 (HUP); `kill -1` alone targets all.
        Some("-1") => usize::from(words.len() > 1),
        Some(w) if w.starts_with('-') && w != "--" => 1,
        _ => 0,
    };
    if words.get(i) == Some(&"--") {
        i += 1;
    }
    words.into_iter().skip(i).collect()
}

fn is_kill_signal(word: &str) -> bool {
    matches!(
        word,
        "-9" | "-KILL"
            | "-SIGKILL"
            | "-kill"
            | "-sigkill"
            | "--signal=9"
            | "--signal=KILL"
            | "--signal=SIGKILL"
    )
}

/// `-s KILL`, `--signal 9`.
fn signal_option_is_kill(argv: &[Arg]) -> bool {
    argv.windows(2).any(|w| {
        matches!(w[0].lit(), Some("-s" | "--signal"))
            && matches!(
                w[1].lit(),
                Some("9" | "KILL" | "SIGKILL" | "kill" | "sigkill")
            )
    })
}

fn is_disk(path: &str) -> bool {
    let dev = &path[5..];
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk/", "mapper/", "dm-", "md", "loop", "sr",
        "mtdblock", "nbd", "zram", "mem", "kmem", "port",
    ]
    .iter()
    .any(|p| dev.starts_with(p))
}

/// Directories where a program named on its own is the system's (for
/// `/usr/bin/git`); anything else runs a file chosen by the command.
fn system_program(program: &str) -> bool {
    if !program.contains('/') {
        return true;
    }
    let dir = program.rsplit_once('/').map_or("", |(d, _)| d);
    matches!(
        dir,
        "/bin" | "/usr/bin" | "/usr/local/bin" | "/sbin" | "/usr/sbin" | "/usr/local/sbin"
    )
}

/// Classify one command (already past wrappers and the blocklist).
fn classify(program: &str, name: &str, argv: &[Arg]) -> (Class, String) {
    let shown = shown_argv(argv);
    if !system_program(program) {
        return (
            Class::Dangerous,
            format!("`{program}` runs a file named by the command, not a known program"),
        );
    }
    let words: Vec<&str> = lits(argv).collect();
    let sub = words
        .iter()
        .copied()
        .find(|w| !w.starts_with('-'))
        .unwrap_or("");
    let class = program_class(name, &words, sub);
    let reason = match class {
        Class::Safe => format!("`{shown}` only reads"),
        Class::Dev => format!("`{shown}` is a development command"),
        Class::Dangerous => format!(
            "`{shown}` is not on the safe or development lists; add an allow pattern to the configuration if it is routine"
        ),
    };
    (class, reason)
}

fn program_class(name: &str, words: &[&str], sub: &str) -> Class {
    use Class::{Dangerous, Dev, Safe};
    let has = |w: &str| words.contains(&w);
    let version_only = !words.is_empty()
        && words.iter().all(|w| {
            matches!(
                *w,
                "--version" | "-V" | "-v" | "version" | "--help" | "-h" | "help"
            )
        });
    match name {
        // Read-only tools.
        "ls" | "cat" | "head" | "tail" | "wc" | "grep" | "egrep" | "fgrep" | "rg" | "ag"
        | "tree" | "file" | "which" | "whereis" | "type" | "echo" | "printf" | "pwd"
        | "printenv" | "date" | "cal" | "whoami" | "id" | "groups" | "uname" | "hostname"
        | "uptime" | "df" | "du" | "free" | "ps" | "pgrep" | "stat" | "realpath" | "readlink"
        | "dirname" | "basename" | "uniq" | "cut" | "tr" | "nl" | "column" | "diff" | "cmp"
        | "comm" | "md5sum" | "sha1sum" | "sha256sum" | "sha512sum" | "b2sum" | "cksum"
        | "less" | "more" | "true" | "false" | "test" | "[" | "sleep" | "seq" | "jq" | "yq"
        | "fd" | "fdfind" | "bat" | "od" | "hexdump" | "xxd" | "strings" | "nproc" | "locale"
        | "tac" | "rev" | "fold" | "fmt" | "expand" | "unexpand" | "paste" | "join" | "look"
        | "lsof" | "top" | "htop" | "env" | "tokei" | "cloc" | "wait" | "cd" | "pushd" | "popd"
        | "export" | "unset" | "set" | "shift" | "read" | "local" | "declare" | "typeset"
        | "readonly" | "exit" | "return" | ":" | "let" | "shopt" | "getconf" | "lscpu" | "tput"
        | "yes" | "base64" | "base32" | "iconv" | "whatis" | "man" | "info" | "zcat" | "zgrep"
        | "bzcat" | "xzcat" | "tldr" | "command" | "trap" | "alias" | "hash" => Safe,
        "sort" => {
            if words
                .iter()
                .any(|w| *w == "-o" || w.starts_with("--output"))
            {
                Dev
            } else {
                Safe
            }
        }
        "sed" => {
            if words.iter().any(|w| {
                *w == "-i"
                    || w.starts_with("--in-place")
                    || (w.starts_with("-i") && !w.starts_with("--"))
            }) {
                Dev
            } else {
                Safe
            }
        }
        "awk" | "gawk" | "mawk" | "nawk" => {
            if words
                .iter()
                .any(|w| w.contains("system(") || w.contains('|') || w.contains('>'))
            {
                Dangerous
            } else {
                Safe
            }
        }
        "find" => {
            if words.iter().any(|w| {
                w.starts_with("-delete") || w.starts_with("-fprint") || w.starts_with("-fls")
            }) {
                Dangerous
            } else {
                Safe
            }
        }
        "tar" | "unzip" | "zip" | "gzip" | "gunzip" | "xz" | "bzip2" | "zstd" => {
            if words.iter().any(|w| {
                matches!(
                    *w,
                    "-t" | "-l" | "--list" | "-tf" | "-tvf" | "-tzf" | "-ztf"
                ) || w.starts_with("-t")
            }) {
                Safe
            } else {
                Dev
            }
        }
        "mkdir" | "touch" | "tee" => Dev,
        // Version control.
        "git" => git_class(words),
        // Language toolchains and build tools.
        "cargo" => match sub {
            "check" | "metadata" | "tree" | "search" | "locate-project" | "pkgid"
            | "verify-project" | "version" | "--version" => Safe,
            "fmt" if has("--check") => Safe,
            "build" | "b" | "test" | "t" | "run" | "r" | "fmt" | "doc" | "d" | "bench"
            | "nextest" | "clippy" | "fix" | "clean" | "update" | "fetch" | "generate-lockfile"
            | "expand" | "llvm-cov" | "insta" | "deny" | "audit" | "machete" | "udeps" | "miri"
            | "hack" => Dev,
            "" if version_only => Safe,
            _ => Dangerous,
        },
        "rustc" | "rustfmt" | "clippy-driver" | "rustdoc" | "gcc" | "g++" | "cc" | "c++"
        | "clang" | "clang++" | "ld" | "javac" | "tsc" | "make" | "gmake" | "cmake" | "ctest"
        | "ninja" | "meson" | "bazel" | "bazelisk" | "buck2" | "mvn" | "mvnw" | "gradle"
        | "gradlew" | "ant" | "sbt" | "pytest" | "py.test" | "mypy" | "pyright" | "ruff"
        | "black" | "isort" | "flake8" | "pylint" | "tox" | "nox" | "eslint" | "prettier"
        | "jest" | "vitest" | "mocha" | "tsx" | "biome" | "stylelint" | "rubocop" | "rspec"
        | "phpunit" | "gofmt" | "golangci-lint" | "staticcheck" | "shellcheck" | "shfmt"
        | "clang-format" | "clang-tidy" | "swiftc" | "kotlinc" | "scalac" | "zig" | "ghc"
        | "stack" | "cabal" | "dune" | "mix" | "elixir" | "erlc" | "rebar3" | "just" | "task"
        | "bundle" | "rake" | "hadolint" | "actionlint" | "markdownlint" | "yamllint" | "taplo"
        | "wasm-tools" | "wasm-pack" | "trunk" | "protoc" | "buf" | "terraform-fmt"
        | "pre-commit" | "coverage" | "nextest" => {
            if version_only {
                Safe
            } else {
                Dev
            }
        }
        "go" => match sub {
            "version" | "env" | "list" | "vet" | "doc" => Safe,
            "build" | "test" | "run" | "fmt" | "generate" | "mod" | "work" | "tool" | "clean" => {
                Dev
            }
            _ => Dangerous,
        },
        "npm" | "pnpm" | "yarn" | "bun" => match sub {
            "list" | "ls" | "view" | "info" | "outdated" | "why" | "explain" | "audit"
            | "config"
                if sub != "config" || has("get") || has("list") =>
            {
                Safe
            }
            "run" | "run-script" | "test" | "t" | "start" | "build" | "lint" | "exec" | "ci"
            | "dlx" | "x" | "tsc" | "pack" | "format" => Dev,
            "install" | "i" | "add" => {
                // Installing what the lock file lists is routine; adding a
                // package (or a global one) is not.
                let args = words.iter().filter(|w| !w.starts_with('-')).count();
                if args == 1 && !has("-g") && !has("--global") {
                    Dev
                } else {
                    Dangerous
                }
            }
            "" if version_only => Safe,
            "" if name == "yarn" && words.is_empty() => Dev,
            _ => Dangerous,
        },
        "npx" | "pnpx" | "bunx" => Dangerous,
        "node" | "deno" | "ruby" | "perl" | "php" | "lua" | "java" | "dotnet" | "swift"
        | "elixir-run" => {
            if version_only {
                Safe
            } else {
                match (name, sub) {
                    ("deno", "test" | "check" | "lint" | "fmt" | "task") => Dev,
                    ("dotnet", "build" | "test" | "format" | "restore") => Dev,
                    ("swift", "build" | "test") => Dev,
                    _ => Dangerous,
                }
            }
        }
        n if n.starts_with("python") => {
            if version_only {
                Safe
            } else if let Some(i) = words.iter().position(|w| *w == "-m") {
                match words.get(i + 1).copied().unwrap_or("") {
                    "pytest" | "mypy" | "ruff" | "black" | "isort" | "flake8" | "pylint"
                    | "unittest" | "compileall" | "py_compile" | "tox" | "nox" | "coverage"
                    | "doctest" | "build" => Dev,
                    "pip" => pip_class(&words[i + 2..]),
                    "json.tool" | "tabnanny" | "pydoc" => Safe,
                    _ => Dangerous,
                }
            } else {
                Dangerous
            }
        }
        "pip" | "pip3" | "uv" | "poetry" | "pipenv" => match (name, sub) {
            ("pip" | "pip3", _) => pip_class(words),
            ("uv", "run" | "sync" | "lock" | "build") => Dev,
            ("poetry", "run" | "install" | "lock" | "build" | "check" | "show") => Dev,
            ("pipenv", "run" | "install" | "lock" | "graph") => Dev,
            _ if version_only => Safe,
            _ => Dangerous,
        },
        "docker" | "podman" => match sub {
            "ps" | "images" | "inspect" | "logs" | "version" | "info" | "stats" | "top"
            | "port" | "diff" | "history" => Dev,
            "build" | "compose" => Dev,
            _ => Dangerous,
        },
        "kubectl" | "oc" => match sub {
            "get" | "describe" | "logs" | "top" | "explain" | "version" | "api-resources"
            | "config"
                if sub != "config"
                    || has("view")
                    || has("get-contexts")
                    || has("current-context") =>
            {
                Dev
            }
            _ => Dangerous,
        },
        "helm" => match sub {
            "list" | "ls" | "status" | "template" | "lint" | "version" | "show" | "get" => Dev,
            _ => Dangerous,
        },
        _ => Dangerous,
    }
}

fn pip_class(words: &[&str]) -> Class {
    match words
        .iter()
        .copied()
        .find(|w| !w.starts_with('-'))
        .unwrap_or("")
    {
        "list" | "show" | "freeze" | "check" | "search" | "index" | "inspect" => Class::Safe,
        "" if words.iter().any(|w| *w == "--version" || *w == "-V") => Class::Safe,
        _ => Class::Dangerous,
    }
}

fn git_class(words: &[&str]) -> Class {
    use Class::{Dangerous, Dev, Safe};
    // Skip global options (`-C dir`, `--no-pager`); `-c key=value` can
    // change what git runs, so it is dangerous.
    let mut i = 0;
    while i < words.len() && words[i].starts_with('-') {
        match words[i] {
            "-c" | "--config-env" | "--exec-path" => return Dangerous,
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
            _ => i += 1,
        }
    }
    let Some(&sub) = words.get(i) else {
        return Safe;
    };
    let args = &words[i + 1..];
    let has = |w: &str| args.contains(&w);
    match sub {
        "status" | "log" | "diff" | "show" | "blame" | "describe" | "rev-parse" | "rev-list"
        | "ls-files" | "ls-tree" | "ls-remote" | "shortlog" | "cat-file" | "grep" | "version"
        | "help" | "whatchanged" | "show-ref" | "merge-base" | "name-rev" | "for-each-ref"
        | "count-objects" | "check-ignore" | "var" | "cherry" | "range-diff" => Safe,
        "branch" => {
            let writes = args.iter().any(|w| {
                matches!(
                    *w,
                    "-d" | "-D"
                        | "--delete"
                        | "-m"
                        | "-M"
                        | "--move"
                        | "-c"
                        | "-C"
                        | "--copy"
                        | "-f"
                        | "--force"
                        | "-u"
                        | "--set-upstream-to"
                        | "--unset-upstream"
                )
            });
            let names = args.iter().any(|w| !w.starts_with('-'));
            if writes {
                if args
                    .iter()
                    .any(|w| matches!(*w, "-D" | "-f" | "--force" | "-M"))
                {
                    Dangerous
                } else {
                    Dev
                }
            } else if names
                && !has("--list")
                && !has("-l")
                && !has("--contains")
                && !has("--merged")
                && !has("--no-merged")
                && !has("--points-at")
            {
                Dev
            } else {
                Safe
            }
        }
        "tag" => {
            if args.is_empty() || has("-l") || has("--list") {
                Safe
            } else if has("-d") || has("--delete") || has("-f") {
                Dangerous
            } else {
                Dev
            }
        }
        "remote" => {
            if args.is_empty() || args == ["-v"] || has("show") || has("get-url") {
                Safe
            } else {
                Dangerous
            }
        }
        "config" => {
            if has("--get")
                || has("--list")
                || has("-l")
                || has("--get-all")
                || has("--get-regexp")
                || (args.len() == 1 && !args[0].starts_with('-'))
            {
                Safe
            } else {
                Dangerous
            }
        }
        "stash" => match args.first().copied() {
            Some("list" | "show") => Safe,
            Some("drop" | "clear") => Dangerous,
            _ => Dev,
        },
        "reflog" => {
            if args.is_empty() || has("show") {
                Safe
            } else {
                Dangerous
            }
        }
        "worktree" => {
            if has("list") {
                Safe
            } else {
                Dev
            }
        }
        "add" | "commit" | "switch" | "fetch" | "pull" | "merge" | "rebase" | "cherry-pick"
        | "revert" | "init" | "mv" | "am" | "apply" | "bisect" | "notes" | "format-patch"
        | "archive" | "bundle" | "submodule" | "sparse-checkout" | "fsck" | "gc"
        | "maintenance" | "prune" | "repack" => {
            if has("--force") || has("-f") && sub != "commit" {
                Dangerous
            } else {
                Dev
            }
        }
        "checkout" => {
            if has("--") || has(".") || has("-f") || has("--force") {
                Dangerous
            } else {
                Dev
            }
        }
        "restore" => {
            if has("--staged") && !has("--worktree") && !has("-W") {
                Dev
            } else {
                Dangerous
            }
        }
        "rm" => {
            if has("--cached") {
                Dev
            } else {
                Dangerous
            }
        }
        "reset" => {
            if has("--hard") || has("--merge") || has("--keep") {
                Dangerous
            } else {
                Dev
            }
        }
        _ => Dangerous,
    }
}

#[cfg(test)]
mod tests;
