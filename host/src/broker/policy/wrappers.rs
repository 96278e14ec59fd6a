//! Following wrappers to the command they run: `env X=1 cmd`, `timeout 5
//! cmd`, `xargs cmd`, `find -exec cmd`, `uv run cmd`, `bash -c '…'`, `eval`,
//! `trap`, `git rebase -x '…'`.

use super::blocklist::precious_path;
use super::{Arg, Refusal, is_shell, lits};

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

fn skip_options(argv: &[Arg], takes_value: &[&str]) -> usize {
    skip_options_from(argv, 1, takes_value)
}

fn words_from(argv: &[Arg], from: usize, what: &str) -> Result<String, Refusal> {
    let words: Result<Vec<String>, Refusal> = argv[from.min(argv.len())..]
        .iter()
        .map(|a| known(a, what))
        .collect();
    Ok(words?.join(" "))
}

const XARGS_VALUES: &[&str] = &[
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
];

/// Options of `uv run`, `poetry run` and the like that take a value.
const RUNNER_VALUES: &[&str] = &[
    "--with",
    "--python",
    "-p",
    "--directory",
    "--project",
    "--env-file",
    "--extra",
    "--group",
    "--package",
    "--index",
    "--from",
    "-C",
    "--cwd",
    "--filter",
];

pub(super) fn unwrap(name: &str, argv: &[Arg]) -> Result<Next, Refusal> {
    let rest = |from: usize| rest_from(argv, from);
    let first = lits(argv).next().unwrap_or("");
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
            if lits(argv).any(|w| w == "-p" || w == "--pid") {
                Next::Done
            } else {
                rest(skip_options(argv, &[]) + 1)
            }
        }
        "timeout" => rest(skip_options(argv, &["-s", "--signal", "-k", "--kill-after"]) + 1),
        // `command -v x` only looks x up; the option must come first.
        "command" if matches!(first, "-v" | "-V") => Next::Done,
        "command" => rest(skip_options(argv, &[])),
        "exec" => rest(skip_options(argv, &["-a"])),
        "busybox" => rest(skip_options(argv, &[])),
        "env" => unwrap_env(argv)?,
        "xargs" => rest(skip_options(argv, XARGS_VALUES)),
        "flock" => unwrap_flock(argv)?,
        "watch" => unwrap_watch(argv)?,
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
            rest(skip_options_from(argv, 2, RUNNER_VALUES))
        }
        "npm" | "pnpm" | "yarn" | "bun" | "bundle" if first == "exec" => {
            rest(skip_options_from(argv, 2, RUNNER_VALUES))
        }
        "git" => unwrap_git(argv)?,
        n if is_shell(n) => match shell_c_argument(argv) {
            Some(line) => Next::Line(known(line, "the command given to the shell")?),
            None => Next::Done,
        },
        _ => Next::Done,
    })
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
    let command = argv
        .iter()
        .position(|a| matches!(a.lit(), Some("-c" | "--command")));
    Ok(match command {
        Some(i) => match argv.get(i + 1) {
            Some(line) => Next::Line(known(line, "the command of `flock -c`")?),
            None => Next::Done,
        },
        None => rest_from(
            argv,
            skip_options(argv, &["-w", "--timeout", "-E", "--conflict-exit-code"]) + 1,
        ),
    })
}

/// `watch -x COMMAND…` runs argv; plain `watch` joins its words into a line.
fn unwrap_watch(argv: &[Arg]) -> Result<Next, Refusal> {
    let i = skip_options(argv, &["-n", "--interval", "-d", "--differences"]);
    Ok(if lits(argv).any(|w| w == "-x" || w == "--exec") {
        rest_from(argv, i)
    } else if i < argv.len() {
        Next::Line(words_from(argv, i, "the command of `watch`")?)
    } else {
        Next::Done
    })
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
                    .transpose()?
                    .unwrap_or_default();
                let rest = words_from(argv, i + 2, "an argument of `env`")?;
                return Ok(Next::Line(format!("{line} {rest}")));
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
                let rest = words_from(argv, i + 1, "an argument of `env`")?;
                return Ok(Next::Line(format!("{line} {rest}")));
            }
            w if w.starts_with('-') || w.contains('=') => i += 1,
            _ => break,
        }
    }
    Ok(if i < argv.len() {
        Next::Run(argv[i..].to_vec())
    } else {
        Next::Done
    })
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
