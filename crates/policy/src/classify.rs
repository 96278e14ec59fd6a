//! Classes of single commands (already past wrappers and the blocklist):
//! the seed's safe and development lists, by program and subcommand.

mod git;

use super::wrappers::has_c_flag;
use super::{Arg, Class, is_shell, lits, shown_argv};
mod sed;
use sed::*;

/// Directories where a program named on its own is the system's (for
/// `/usr/bin/git`); anything else runs a file chosen by the command.
pub(super) fn system_program(program: &str) -> bool {
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
pub(super) fn classify(program: &str, name: &str, argv: &[Arg]) -> (Class, String) {
    let shown = shown_argv(argv);
    if !system_program(program) {
        return (
            Class::Dangerous,
            format!("`{program}` runs a file named by the command, not a known program"),
        );
    }
    // The line a shell runs is checked on its own; starting the shell is dev.
    if is_shell(name) && has_c_flag(argv) {
        return (Class::Dev, format!("`{shown}` starts a shell"));
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
            "`{shown}` is not on the safe or development lists; add an allow pattern (--allow-command) if it is routine"
        ),
    };
    (class, reason)
}

/// Programs that only read, or change nothing outside the shell: safe
/// whatever their arguments, unless [`by_arguments`] says otherwise first.
#[rustfmt::skip]
const READ_ONLY: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "tree", "file",
    "which", "whereis", "type", "echo", "printf", "pwd", "printenv", "date", "cal", "whoami", "id",
    "groups", "uname", "hostname", "uptime", "df", "du", "free", "ps", "pgrep", "stat", "realpath",
    "readlink", "dirname", "basename", "uniq", "cut", "tr", "nl", "column", "diff", "cmp", "comm",
    "md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum", "less", "more", "true",
    "false", "test", "[", "sleep", "seq", "jq", "yq", "fd", "fdfind", "bat", "od", "hexdump",
    "xxd", "strings", "nproc", "locale", "tac", "rev", "fold", "fmt", "expand", "unexpand",
    "paste", "join", "look", "lsof", "top", "htop", "env", "tokei", "cloc", "wait", "cd", "pushd",
    "popd", "export", "unset", "set", "shift", "read", "local", "declare", "typeset", "readonly",
    "exit", "return", ":", "let", "shopt", "getconf", "lscpu", "tput", "yes", "base64", "base32",
    "iconv", "whatis", "man", "info", "zcat", "zgrep", "bzcat", "xzcat", "tldr", "command", "trap",
    "alias",
];

/// Compilers, build tools, linters, formatters and test runners: dev (safe
/// when only asked for their version or help).
#[rustfmt::skip]
const TOOLCHAIN: &[&str] = &[
    "rustc", "rustfmt", "clippy-driver", "rustdoc", "gcc", "g++", "cc", "c++", "clang", "clang++",
    "ld", "javac", "tsc", "make", "gmake", "cmake", "ctest", "ninja", "meson", "bazel", "bazelisk",
    "buck2", "mvn", "mvnw", "gradle", "gradlew", "ant", "sbt", "pytest", "py.test", "mypy",
    "pyright", "ruff", "black", "isort", "flake8", "pylint", "tox", "nox", "eslint", "prettier",
    "jest", "vitest", "mocha", "tsx", "biome", "stylelint", "rubocop", "rspec", "phpunit", "gofmt",
    "golangci-lint", "staticcheck", "shellcheck", "shfmt", "clang-format", "clang-tidy", "swiftc",
    "kotlinc", "scalac", "zig", "ghc", "stack", "cabal", "dune", "mix", "elixir", "erlc", "rebar3",
    "just", "task", "bundle", "rake", "hadolint", "actionlint", "markdownlint", "yamllint",
    "taplo", "wasm-tools", "wasm-pack", "trunk", "protoc", "buf", "terraform-fmt", "pre-commit",
    "coverage", "nextest",
];

/// Toolchains that load code the workspace's settings name on every run.
const WORKSPACE_SETTINGS: &[&str] = &[
    "mvn", "mvnw", "gradle", "gradlew", "sbt", "bazel", "bazelisk", "ant",
];

/// Dev: archivers and compressors (they write files), file creators, and
/// wrappers whose command line was checked on its own.
#[rustfmt::skip]
const DEV: &[&str] = &[
    "zip", "unzip", "gzip", "gunzip", "xz", "unxz", "bzip2", "bunzip2", "zstd", "mkdir", "touch",
    "tee", "eval", "watch", "flock",
];

/// Interpreters and runtimes: they run whatever code they are given.
#[rustfmt::skip]
const INTERPRETERS: &[&str] = &[
    "node", "deno", "ruby", "perl", "php", "lua", "java", "dotnet", "swift", "elixir-run",
];

/// Whether `word` names the long option `full` (getopt and git accept any
/// unique prefix, so `--compress-prog` is `--compress-program`): a prefix
/// of it at least three letters long, with or without `=value`.
pub(super) fn long_is(word: &str, full: &str) -> bool {
    let Some(name) = word.split('=').next().filter(|n| n.starts_with("--")) else {
        return false;
    };
    name.len() >= 5 && full.starts_with(name)
}

/// Whether a short option cluster (`-xIf`, or tar's bare `xIf` mode)
/// holds the letter `c`.
fn cluster_has(word: &str, c: char) -> bool {
    word.strip_prefix('-')
        .is_some_and(|w| !w.starts_with('-') && w.contains(c))
}

/// The words of one command after its program, as the class rules see them.
struct Words<'a> {
    all: &'a [&'a str],
    /// The first word that is not an option.
    sub: &'a str,
    /// Only `--version`, `-V`, `help` and the like.
    version_only: bool,
}

impl Words<'_> {
    fn has(&self, w: &str) -> bool {
        self.all.contains(&w)
    }

    fn any(&self, f: impl Fn(&str) -> bool) -> bool {
        self.all.iter().any(|w| f(w))
    }
}

pub(super) fn program_class(name: &str, words: &[&str], sub: &str) -> Class {
    let w = Words {
        all: words,
        sub,
        version_only: !words.is_empty()
            && words.iter().all(|w| {
                matches!(
                    *w,
                    "--version" | "-V" | "-v" | "version" | "--help" | "-h" | "help"
                )
            }),
    };
    if let Some(class) = by_arguments(name, &w) {
        class
    } else if READ_ONLY.contains(&name) {
        Class::Safe
    } else if TOOLCHAIN.contains(&name) {
        // These read the workspace's settings (`.mvn/jvm.config`,
        // `gradle.properties`, `.bazelrc`) and start code even to print
        // their version.
        if w.version_only && !WORKSPACE_SETTINGS.contains(&name) {
            Class::Safe
        } else {
            Class::Dev
        }
    } else if DEV.contains(&name) {
        Class::Dev
    } else if INTERPRETERS.contains(&name) {
        interpreter_class(name, &w)
    } else if name.starts_with("python") {
        python_class(&w)
    } else {
        Class::Dangerous
    }
}

/// Programs whose class depends on their arguments; `None` leaves the
/// program to the tables. Text and file utilities first, then
/// toolchains and package managers (a program in both, `make`, is looked
/// at in that order).
fn by_arguments(name: &str, w: &Words<'_>) -> Option<Class> {
    utility_by_arguments(name, w).or_else(|| toolchain_by_arguments(name, w))
}

/// Text and file utilities whose class depends on their arguments.
fn utility_by_arguments(name: &str, w: &Words<'_>) -> Option<Class> {
    use Class::{Dangerous, Dev, Safe};
    let class = match name {
        // `rg --pre CMD` runs CMD on every file searched.
        "rg" if w.any(|w| w.starts_with("--pre")) => Dangerous,
        "uniq" if operands(w.all) >= 2 => Dev,
        "yq" if w.has("-i") || w.has("--inplace") => Dev,
        // `hash -p FILE NAME` makes NAME run FILE.
        "hash" if w.has("-p") => Dangerous,
        "hash" => Safe,
        // `sort --compress-program=PROG` runs PROG on its temp files.
        "sort" if w.any(|w| long_is(w, "--compress-program")) => Dangerous,
        "sort" if w.any(|w| w == "-o" || w.starts_with("--output")) => Dev,
        "sort" => Safe,
        "sed" => sed_class(w.all),
        "awk" | "gawk" | "mawk" | "nawk" => awk_class(w),
        "find"
            if w.any(|w| {
                w.starts_with("-delete") || w.starts_with("-fprint") || w.starts_with("-fls")
            }) =>
        {
            Dangerous
        }
        "find" => Safe,
        "tar" => tar_class(w.all),
        // Setting the name or the clock: root's business.
        "hostname"
            if w.any(|w| {
                !w.starts_with('-')
                    || cluster_has(w, 'F')
                    || cluster_has(w, 'b')
                    || long_is(w, "--file")
                    || long_is(w, "--boot")
            }) =>
        {
            Dangerous
        }
        "hostname" => Safe,
        "date"
            if w.any(|w| {
                cluster_has(w, 's')
                    || long_is(w, "--set")
                    || (!w.starts_with(['-', '+'])
                        && w.chars().all(|c| c.is_ascii_digit() || c == '.')
                        && w.len() >= 8)
            }) =>
        {
            Dangerous
        }
        // `xxd -r IN OUT` (`-` is stdin) and `iconv -o OUT` write a file.
        "xxd" if (w.has("-r") || w.has("-revert")) && operands(w.all) >= 2 => Dev,
        "iconv" if w.any(|w| cluster_has(w, 'o') || long_is(w, "--output")) => Dev,
        // A pager that runs commands (`+!cmd`, a lesskey file) or a browser.
        "less" | "more"
            if w.any(|w| {
                w.starts_with('+')
                    || cluster_has(w, 'k')
                    || long_is(w, "--lesskey-file")
                    || long_is(w, "--lesskey-src")
            }) =>
        {
            Dangerous
        }
        "man"
            if w.any(|w| {
                cluster_has(w, 'P')
                    || cluster_has(w, 'H')
                    || cluster_has(w, 'p')
                    || long_is(w, "--pager")
                    || long_is(w, "--html")
                    || long_is(w, "--preprocessor")
            }) =>
        {
            Dangerous
        }
        // A makefile from stdin: recipes nobody checked.
        "make" | "gmake" if makefile_from_stdin(w.all) => Dangerous,
        // zip -T runs an unzip command (-TT names it).
        "zip" if w.any(|w| w.starts_with("-T") || w.starts_with("--unzip-command")) => Dangerous,
        "unzip" if w.has("-l") || w.has("-t") || w.has("-Z") => Safe,
        "mkdir" if w.any(|w| w == "-m" || w.starts_with("--mode")) => Dangerous,
        _ => return None,
    };
    Some(class)
}

/// Toolchains, package managers and cluster tools whose class depends
/// on their arguments.
fn toolchain_by_arguments(name: &str, w: &Words<'_>) -> Option<Class> {
    use Class::{Dangerous, Dev, Safe};
    let class = match name {
        "git" => git::git_class(w.all),
        // `--config` can name a runner or wrapper program.
        "cargo" if w.any(|w| w.starts_with("--config") || w == "-Z") => Dangerous,
        "cargo" => cargo_class(w),
        // `make --eval` runs whatever rule it is given.
        "make" | "gmake" if w.any(|w| w == "-E" || w.starts_with("--eval")) => Dangerous,
        "go" => match w.sub {
            "version" | "env" | "list" | "vet" | "doc" => Safe,
            "build" | "test" | "run" | "fmt" | "generate" | "mod" | "work" | "tool" | "clean" => {
                Dev
            }
            _ => Dangerous,
        },
        "npm" | "pnpm" | "yarn" | "bun" => package_manager_class(name, w),
        "npx" | "pnpx" | "bunx" => Dangerous,
        "pip" | "pip3" => pip_class(w.all),
        "uv" | "poetry" | "pipenv" => match (name, w.sub) {
            ("uv", "run" | "sync" | "lock" | "build") => Dev,
            ("poetry", "run" | "install" | "lock" | "build" | "check" | "show") => Dev,
            ("pipenv", "run" | "install" | "lock" | "graph") => Dev,
            _ if w.version_only => Safe,
            _ => Dangerous,
        },
        "docker" | "podman" => container_class(w),
        "kubectl" | "oc" => match w.sub {
            "get" | "describe" | "logs" | "top" | "explain" | "version" | "api-resources" => Dev,
            "config" if w.has("view") || w.has("get-contexts") || w.has("current-context") => Dev,
            _ => Dangerous,
        },
        "helm" => match w.sub {
            "list" | "ls" | "status" | "template" | "lint" | "version" | "show" | "get" => Dev,
            _ => Dangerous,
        },
        _ => return None,
    };
    Some(class)
}

/// awk reads safely; program files, extensions and includes cannot be
/// read here, and `system`, pipes, redirects and `getline` act.
fn awk_class(w: &Words<'_>) -> Class {
    let loads = w.any(|w| {
        matches!(
            w,
            "-f" | "--file" | "-i" | "--include" | "-l" | "--load" | "-E" | "--exec"
        )
    });
    let acts = w.any(|w| {
        w.contains("system") || w.contains('|') || w.contains('>') || w.contains("getline")
    });
    if loads || acts {
        Class::Dangerous
    } else {
        Class::Safe
    }
}

/// The words that are not options (`-`, stdin or stdout, is one).
fn operands(words: &[&str]) -> usize {
    words
        .iter()
        .filter(|w| **w == "-" || !w.starts_with('-'))
        .count()
}

/// cargo: `check` builds and runs build scripts and proc macros, so it
/// is a development command like `build`.
fn cargo_class(w: &Words<'_>) -> Class {
    match w.sub {
        "metadata" | "tree" | "search" | "locate-project" | "pkgid" | "verify-project"
        | "version" | "--version" => Class::Safe,
        "fmt" if w.has("--check") => Class::Safe,
        "check" | "c" | "build" | "b" | "test" | "t" | "run" | "r" | "fmt" | "doc" | "d"
        | "bench" | "nextest" | "clippy" | "fix" | "clean" | "update" | "fetch"
        | "generate-lockfile" | "expand" | "llvm-cov" | "insta" | "deny" | "audit" | "machete"
        | "udeps" | "miri" | "hack" => Class::Dev,
        "" if w.version_only => Class::Safe,
        _ => Class::Dangerous,
    }
}

/// npm, pnpm, yarn and bun.
fn package_manager_class(name: &str, w: &Words<'_>) -> Class {
    match w.sub {
        "list" | "ls" | "view" | "info" | "outdated" | "why" | "explain" | "audit" => Class::Safe,
        "config" if w.has("get") || w.has("list") => Class::Safe,
        "run" | "run-script" | "test" | "t" | "start" | "build" | "lint" | "exec" | "ci"
        | "dlx" | "x" | "tsc" | "pack" | "format" => Class::Dev,
        "install" | "i" | "add" => {
            // Installing what the lock file lists is routine; adding a
            // package (or a global one) is not.
            let args = w.all.iter().filter(|w| !w.starts_with('-')).count();
            if args == 1 && !w.has("-g") && !w.has("--global") {
                Class::Dev
            } else {
                Class::Dangerous
            }
        }
        "" if w.version_only => Class::Safe,
        "" if name == "yarn" && w.all.is_empty() => Class::Dev,
        _ => Class::Dangerous,
    }
}

fn interpreter_class(name: &str, w: &Words<'_>) -> Class {
    if w.version_only {
        return Class::Safe;
    }
    match (name, w.sub) {
        ("deno", "test" | "check" | "lint" | "fmt" | "task") => Class::Dev,
        ("dotnet", "build" | "test" | "format" | "restore") => Class::Dev,
        ("swift", "build" | "test") => Class::Dev,
        _ => Class::Dangerous,
    }
}

/// `python -m MODULE`: test, lint and packaging modules are dev, a few
/// readers are safe; any other code is dangerous.
fn python_class(w: &Words<'_>) -> Class {
    if w.version_only {
        return Class::Safe;
    }
    let Some(i) = w.all.iter().position(|w| *w == "-m") else {
        return Class::Dangerous;
    };
    match w.all.get(i + 1).copied().unwrap_or("") {
        "pytest" | "mypy" | "ruff" | "black" | "isort" | "flake8" | "pylint" | "unittest"
        | "compileall" | "py_compile" | "tox" | "nox" | "coverage" | "doctest" | "build" => {
            Class::Dev
        }
        "pip" => pip_class(&w.all[i + 2..]),
        // Python puts the working directory first on its path, so a
        // workspace `json/tool.py` would run: only `-I` or `-P` keep to
        // the standard library.
        "json.tool" | "tabnanny"
            if w.all[..i]
                .iter()
                .any(|o| cluster_has(o, 'I') || cluster_has(o, 'P')) =>
        {
            Class::Safe
        }
        "json.tool" | "tabnanny" => Class::Dev,
        _ => Class::Dangerous,
    }
}

/// The daemon runs outside the sandbox: only looking is dev.
fn container_class(w: &Words<'_>) -> Class {
    match w.sub {
        "ps" | "images" | "inspect" | "logs" | "version" | "info" | "stats" | "top" | "port"
        | "diff" | "history" => Class::Dev,
        "compose" => {
            let action = w
                .all
                .iter()
                .skip_while(|w| **w != "compose")
                .skip(1)
                .find(|w| !w.starts_with('-'));
            match action.copied() {
                Some("ps" | "config" | "logs" | "ls" | "images" | "top" | "version") => Class::Dev,
                _ => Class::Dangerous,
            }
        }
        _ => Class::Dangerous,
    }
}

/// `make -f -`, `--file=-`, `--makefile=/dev/stdin`.
fn makefile_from_stdin(words: &[&str]) -> bool {
    let stdin = |v: &str| matches!(v, "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0");
    words.iter().enumerate().any(|(i, w)| {
        let next = words.get(i + 1).copied().unwrap_or("");
        (*w == "-f" && stdin(next))
            || w.strip_prefix("-f").is_some_and(stdin)
            || ((long_is(w, "--file") || long_is(w, "--makefile"))
                && w.split_once('=').map_or(stdin(next), |(_, v)| stdin(v)))
    })
}

/// tar lists safely; options that run programs are dangerous; the rest
/// (creating, extracting) is dev.
fn tar_class(words: &[&str]) -> Class {
    let mode = words.first().copied().unwrap_or("");
    let runs = words.iter().any(|w| {
        [
            "--checkpoint-action",
            "--to-command",
            "--use-compress-program",
            "--info-script",
            "--new-volume-script",
            "--rsh-command",
            "--rmt-command",
        ]
        .iter()
        .any(|o| long_is(w, o))
            || cluster_has(w, 'I')
            || cluster_has(w, 'F')
    }) || (!mode.starts_with('-') && mode.contains(['I', 'F']));
    // The mode is the first word's letters (`tf`, `-tzf`) or `--list`.
    let mode = words.first().map_or("", |w| w.trim_start_matches('-'));
    let lists = words.contains(&"--list")
        || (mode.contains('t') && !mode.contains(['c', 'x', 'r', 'u', 'A']) && !mode.contains("-"));
    if runs {
        Class::Dangerous
    } else if lists {
        Class::Safe
    } else {
        Class::Dev
    }
}

pub(super) fn pip_class(words: &[&str]) -> Class {
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
