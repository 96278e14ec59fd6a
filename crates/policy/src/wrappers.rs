//! Following wrappers to the command they run: `env X=1 cmd`, `timeout 5
//! cmd`, `xargs cmd`, `find -exec cmd`, `uv run cmd`, `bash -c '…'`, `eval`,
//! `trap`, `git rebase -x '…'`.

use super::blocklist::precious_path;
use super::{Arg, Refusal, is_shell, lits};
mod specs;
use specs::*;

/// What a program does with its arguments, for following wrappers.
pub(super) enum Next {
    /// It runs another command (`env X=1 cmd`, `timeout 5 cmd`) and is
    /// nothing more itself.
    Run(Vec<Arg>),
    /// It runs these commands and is a command of its own too
    /// (`find . -exec a \; -exec b \;`).
    Runs(Vec<Vec<Arg>>),
    /// It runs a shell command line (`bash -c '…'`, `eval`).
    Line(String),
    /// It keeps command lines to run, and is a command of its own too
    /// (`trap '…' EXIT`, `git rebase -x '…'`).
    Lines(Vec<String>),
    /// It is the command.
    Done,
}

/// The text of `arg`, or a refusal saying it is only known at run time.
pub(super) fn known(arg: &Arg, what: &str) -> Result<String, Refusal> {
    arg.lit().map(str::to_owned).ok_or_else(|| {
        Refusal(format!(
            "{what} `{}` is only known at run time, so it cannot be checked",
            arg.shown()
        ))
    })
}

/// A wrapper's options, to find where the command it runs starts. Short
/// options may be clustered (`-qc`), long ones abbreviated to a unique
/// prefix (`--split` for `--split-string`), as getopt allows.
pub(super) struct Spec {
    /// Options without a value (`-0`, `--null`).
    pub flags: &'static [&'static str],
    /// Options followed by a value, attached or as the next word.
    pub values: &'static [&'static str],
    /// Long options whose value, if any, must be attached (`--replace=R`).
    pub optional: &'static [&'static str],
}

/// What [`Spec::parse`] found: the first operand, and each option (as
/// spelled in the spec) with its value.
pub(super) struct Parsed {
    pub operand: usize,
    pub options: Vec<(&'static str, Option<String>)>,
}

impl Spec {
    fn long(&self, given: &str) -> Option<(&'static str, Kind)> {
        let all = self
            .flags
            .iter()
            .map(|o| (*o, Kind::Flag))
            .chain(self.values.iter().map(|o| (*o, Kind::Value)))
            .chain(self.optional.iter().map(|o| (*o, Kind::Optional)))
            .filter(|(o, _)| o.starts_with("--"));
        let mut found = None;
        for (option, kind) in all {
            if option == given {
                return Some((option, kind));
            }
            if option.starts_with(given) {
                if found.is_some() {
                    return None;
                }
                found = Some((option, kind));
            }
        }
        found
    }

    fn short(&self, c: char) -> Option<(&'static str, Kind)> {
        let is = |o: &&&str| o.len() == 2 && o.ends_with(c) && o.starts_with('-');
        self.flags
            .iter()
            .find(is)
            .map(|o| (*o, Kind::Flag))
            .or_else(|| self.values.iter().find(is).map(|o| (*o, Kind::Value)))
            .or_else(|| self.optional.iter().find(is).map(|o| (*o, Kind::Optional)))
    }

    /// Read `program`'s options from `argv[from..]`; an option it does not
    /// know is refused, since what follows could be its value or the
    /// command.
    pub(super) fn parse(
        &self,
        program: &str,
        argv: &[Arg],
        from: usize,
    ) -> Result<Parsed, Refusal> {
        let unknown = |word: &str| {
            Refusal(format!(
                "`{program}` option `{word}` is not one toolhost knows, so the command it runs cannot be told \
                 from its value; write the option in full or run the command directly"
            ))
        };
        let mut options = Vec::new();
        let mut i = from;
        while i < argv.len() {
            let Some(word) = argv[i].lit() else { break };
            if word == "--" {
                i += 1;
                break;
            }
            if !word.starts_with('-') || word == "-" {
                break;
            }
            if let Some(long) = word.strip_prefix("--") {
                let (name, attached) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_owned())),
                    None => (long, None),
                };
                let (option, kind) = self
                    .long(&format!("--{name}"))
                    .ok_or_else(|| unknown(word))?;
                let value = match (kind, attached) {
                    (Kind::Value, None) => {
                        i += 1;
                        Some(known(
                            argv.get(i).unwrap_or(&Arg::Lit(String::new())),
                            "an option's value",
                        )?)
                    }
                    (_, attached) => attached,
                };
                options.push((option, value));
            } else {
                let chars: Vec<char> = word[1..].chars().collect();
                for (at, c) in chars.iter().enumerate() {
                    let (option, kind) = self.short(*c).ok_or_else(|| unknown(word))?;
                    if kind == Kind::Optional {
                        // `-i{}`: the value, if any, is the rest of the word.
                        let rest: String = chars[at + 1..].iter().collect();
                        options.push((option, (!rest.is_empty()).then_some(rest)));
                        break;
                    }
                    if kind == Kind::Value {
                        let rest: String = chars[at + 1..].iter().collect();
                        let value = if rest.is_empty() {
                            i += 1;
                            known(
                                argv.get(i).unwrap_or(&Arg::Lit(String::new())),
                                "an option's value",
                            )?
                        } else {
                            rest
                        };
                        options.push((option, Some(value)));
                        break;
                    }
                    options.push((option, None));
                }
            }
            i += 1;
        }
        Ok(Parsed {
            operand: i,
            options,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Flag,
    Value,
    Optional,
}

/// The rest of `argv` after `spec`'s options and `skip` more operands.
fn after_options(program: &str, argv: &[Arg], spec: &Spec, skip: usize) -> Result<Next, Refusal> {
    let parsed = spec.parse(program, argv, 1)?;
    Ok(rest_from(argv, parsed.operand + skip))
}

fn words_from(argv: &[Arg], from: usize, what: &str) -> Result<String, Refusal> {
    let words: Result<Vec<String>, Refusal> = argv[from.min(argv.len())..]
        .iter()
        .map(|a| known(a, what))
        .collect();
    Ok(words?.join(" "))
}

pub(super) fn unwrap(name: &str, argv: &[Arg]) -> Result<Next, Refusal> {
    let first = lits(argv).next().unwrap_or("");
    Ok(match name {
        "nohup" => after_options(name, argv, &NOHUP, 0)?,
        "setsid" => after_options(name, argv, &SETSID, 0)?,
        "builtin" | "unbuffer" | "catchsegv" => after_options(name, argv, &NOHUP, 0)?,
        "time" => after_options(name, argv, &TIME, 0)?,
        // `nice -5 cmd`: an old spelling of `-n 5`.
        "nice"
            if first
                .strip_prefix('-')
                .is_some_and(|n| n.parse::<i32>().is_ok()) =>
        {
            rest_from(argv, 2)
        }
        "nice" => after_options(name, argv, &NICE, 0)?,
        "ionice" => {
            let parsed = IONICE.parse(name, argv, 1)?;
            if parsed
                .options
                .iter()
                .any(|(o, _)| o.contains('p') || o.contains("pgid") || o.contains("uid"))
            {
                Next::Done
            } else {
                rest_from(argv, parsed.operand)
            }
        }
        "stdbuf" => after_options(name, argv, &STDBUF, 0)?,
        "chrt" => rest_from(argv, skip_any_options(argv) + 1),
        "taskset" => {
            if lits(argv).any(|w| w == "-p" || w == "--pid") {
                Next::Done
            } else {
                rest_from(argv, skip_any_options(argv) + 1)
            }
        }
        "timeout" => after_options(name, argv, &TIMEOUT, 1)?,
        // `command -v x` only looks x up; the option must come first.
        "command" if matches!(first, "-v" | "-V") => Next::Done,
        "command" => after_options(name, argv, &COMMAND, 0)?,
        "exec" => after_options(name, argv, &EXEC, 0)?,
        "busybox" => rest_from(argv, skip_any_options(argv)),
        "env" => unwrap_env(argv)?,
        "xargs" => after_options(name, argv, &XARGS, 0)?,
        "flock" => unwrap_flock(argv)?,
        "watch" => unwrap_watch(argv)?,
        "script" => {
            let parsed = SCRIPT.parse(name, argv, 1)?;
            match parsed
                .options
                .into_iter()
                .find(|(o, _)| matches!(*o, "-c" | "--command"))
            {
                Some((_, Some(line))) => Next::Line(line),
                _ => Next::Done,
            }
        }
        "find" => unwrap_find(argv)?,
        "fd" | "fdfind" => match argv
            .iter()
            .position(|a| matches!(a.lit(), Some("-x" | "--exec" | "-X" | "--exec-batch")))
        {
            Some(i) => Next::Runs(vec![argv[i + 1..].to_vec()]),
            None => Next::Done,
        },
        "eval" => Next::Line(words_from(argv, 1, "the text given to `eval`")?),
        "trap" => unwrap_trap(argv)?,
        "alias" => unwrap_alias(argv)?,
        // Runners that run the command after their subcommand.
        "uv" | "poetry" | "pipenv" | "pdm" | "hatch" if first == "run" => {
            rest_from(argv, skip_options_from(argv, 2, RUNNER_VALUES))
        }
        "npm" | "pnpm" | "yarn" | "bun" | "bundle" if first == "exec" => {
            rest_from(argv, skip_options_from(argv, 2, RUNNER_VALUES))
        }
        "git" => unwrap_git(argv)?,
        n if is_shell(n) => match shell_c_argument(argv) {
            Some(line) => Next::Line(known(line, "the command given to the shell")?),
            None => Next::Done,
        },
        _ => Next::Done,
    })
}

/// Skip options starting at `from`: `takes_value` lists options followed
/// by a value. Returns the index of the first operand.
fn skip_options_from(argv: &[Arg], from: usize, takes_value: &[&str]) -> usize {
    let mut i = from;
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

/// Skip every word that looks like an option (for programs whose options
/// take no value before the command).
fn skip_any_options(argv: &[Arg]) -> usize {
    skip_options_from(argv, 1, &[])
}

/// The rest of `argv` from index `from`, if anything is left.
fn rest_from(argv: &[Arg], from: usize) -> Next {
    if from < argv.len() {
        Next::Run(argv[from..].to_vec())
    } else {
        Next::Done
    }
}

/// `flock -c LINE`, or `flock [options] FILE COMMAND…`.
fn unwrap_flock(argv: &[Arg]) -> Result<Next, Refusal> {
    let parsed = FLOCK.parse("flock", argv, 1)?;
    if let Some((_, line)) = parsed
        .options
        .iter()
        .find(|(o, _)| matches!(*o, "-c" | "--command"))
    {
        return Ok(line.clone().map_or(Next::Done, Next::Line));
    }
    // `flock FILE -c LINE`: flock reads `-c` after the file too.
    let after = argv.get(parsed.operand + 1).and_then(Arg::lit);
    if matches!(after, Some("-c" | "--command")) {
        return Ok(match argv.get(parsed.operand + 2) {
            Some(line) => Next::Line(known(line, "the command of `flock -c`")?),
            None => Next::Done,
        });
    }
    Ok(rest_from(argv, parsed.operand + 1))
}

/// `watch -x COMMAND…` runs argv; plain `watch` joins its words into a line.
fn unwrap_watch(argv: &[Arg]) -> Result<Next, Refusal> {
    let parsed = WATCH.parse("watch", argv, 1)?;
    let i = parsed.operand;
    Ok(
        if parsed
            .options
            .iter()
            .any(|(o, _)| matches!(*o, "-x" | "--exec"))
        {
            rest_from(argv, i)
        } else if i < argv.len() {
            Next::Line(words_from(argv, i, "the command of `watch`")?)
        } else {
            Next::Done
        },
    )
}

/// `trap ACTION SIGNAL…`: the action is a line run later.
fn unwrap_trap(argv: &[Arg]) -> Result<Next, Refusal> {
    let first = lits(argv).next().unwrap_or("");
    let i = usize::from(first == "--") + 1;
    Ok(match argv.get(i).map(|a| (a, a.lit())) {
        Some((_, Some("-p" | "-l" | "-" | ""))) | None => Next::Done,
        Some((action, _)) if argv.len() > i + 1 => {
            Next::Lines(vec![known(action, "the action of `trap`")?])
        }
        _ => Next::Done,
    })
}

/// `alias NAME=VALUE…`: each value is a line run when the alias is used.
fn unwrap_alias(argv: &[Arg]) -> Result<Next, Refusal> {
    let mut lines = Vec::new();
    for a in &argv[1..] {
        let text = known(a, "the alias")?;
        if let Some((_, value)) = text.split_once('=') {
            lines.push(value.to_owned());
        }
    }
    Ok(Next::Lines(lines))
}

/// git subcommands that run a command they are given.
fn unwrap_git(argv: &[Arg]) -> Result<Next, Refusal> {
    let words: Vec<&str> = lits(argv).collect();
    let sub = words.iter().position(|w| !w.starts_with('-'));
    let Some(sub) = sub else {
        return Ok(Next::Done);
    };
    // argv index of the subcommand (argv[0] is git).
    let at = sub + 1;
    Ok(match words[sub] {
        "rebase" => {
            let mut lines = Vec::new();
            for (i, a) in argv.iter().enumerate().skip(at) {
                match a.lit() {
                    Some("-x" | "--exec") => {
                        if let Some(cmd) = argv.get(i + 1) {
                            lines.push(known(cmd, "the command of `git rebase -x`")?);
                        }
                    }
                    Some(w) if w.starts_with("--exec=") => {
                        lines.push(w["--exec=".len()..].to_owned())
                    }
                    _ => {}
                }
            }
            if lines.is_empty() {
                Next::Done
            } else {
                Next::Lines(lines)
            }
        }
        "bisect" if words.get(sub + 1) == Some(&"run") => {
            Next::Runs(vec![argv[(at + 2).min(argv.len())..].to_vec()])
        }
        "submodule" if words.get(sub + 1) == Some(&"foreach") => {
            let from = skip_options_from(argv, at + 2, &[]);
            Next::Lines(vec![words_from(
                argv,
                from,
                "the command of `git submodule foreach`",
            )?])
        }
        _ => Next::Done,
    })
}

/// `env [OPTION…] [NAME=VALUE…] [cmd…]`; `-S LINE` (in any spelling:
/// `-vS'…'`, `--split=…`) splits a line into the command.
fn unwrap_env(argv: &[Arg]) -> Result<Next, Refusal> {
    let parsed = ENV.parse("env", argv, 1)?;
    let mut i = parsed.operand;
    while argv
        .get(i)
        .and_then(Arg::lit)
        .is_some_and(|w| w.contains('='))
    {
        i += 1;
    }
    if let Some((_, line)) = parsed
        .options
        .iter()
        .find(|(o, _)| matches!(*o, "-S" | "--split-string"))
    {
        let rest = words_from(argv, i, "an argument of `env`")?;
        return Ok(Next::Line(format!(
            "{} {rest}",
            line.clone().unwrap_or_default()
        )));
    }
    Ok(rest_from(argv, i))
}

/// `find … -exec cmd … ;` runs every `cmd`; `-delete` of a precious root
/// is refused (and any `-delete` makes find dangerous when classified).
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
    let mut runs = Vec::new();
    let mut i = 0;
    while i < argv.len() {
        if matches!(argv[i].lit(), Some("-exec" | "-execdir" | "-ok" | "-okdir")) {
            let end = argv[i + 1..]
                .iter()
                .position(|a| matches!(a.lit(), Some(";" | "+")))
                .map_or(argv.len(), |e| i + 1 + e);
            if end > i + 1 {
                runs.push(argv[i + 1..end].to_vec());
            }
            i = end;
        }
        i += 1;
    }
    Ok(if runs.is_empty() {
        Next::Done
    } else {
        Next::Runs(runs)
    })
}

/// Long options of bash and other shells that take a value.
const SHELL_VALUES: &[&str] = &["--rcfile", "--init-file"];

/// The `-c` command string of a shell invocation, if any.
pub(super) fn shell_c_argument(argv: &[Arg]) -> Option<&Arg> {
    let mut i = 1;
    let mut command = false;
    while i < argv.len() {
        let word = argv[i].lit()?;
        if word == "--" || word == "-" || !word.starts_with(['-', '+']) {
            break;
        }
        if SHELL_VALUES.contains(&word) || matches!(word, "-o" | "+o" | "-O" | "+O") {
            i += 1;
        } else if !word.starts_with("--") && word[1..].contains('c') {
            // `-c`, `-lc`, `-ec`: the command is the first operand.
            command = true;
        }
        i += 1;
    }
    if word_is(argv.get(i), "--") {
        i += 1;
    }
    if command { argv.get(i) } else { None }
}

fn word_is(arg: Option<&Arg>, text: &str) -> bool {
    arg.and_then(Arg::lit) == Some(text)
}

pub(super) fn has_c_flag(argv: &[Arg]) -> bool {
    shell_c_argument(argv).is_some()
}
