//! Classes of single commands (already past wrappers and the blocklist):
//! the seed's safe and development lists, by program and subcommand.

use super::wrappers::has_c_flag;
use super::{Arg, Class, is_shell, lits, shown_argv};

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

pub(super) fn program_class(name: &str, words: &[&str], sub: &str) -> Class {
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
        // `rg --pre CMD` runs CMD on every file searched.
        "rg" if words.iter().any(|w| w.starts_with("--pre")) => Dangerous,
        "uniq" if words.iter().filter(|w| !w.starts_with('-')).count() >= 2 => Dev,
        "yq" if has("-i") || has("--inplace") => Dev,
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
        | "bzcat" | "xzcat" | "tldr" | "command" | "trap" | "alias" => Safe,
        // `hash -p FILE NAME` makes NAME run FILE.
        "hash" => {
            if has("-p") {
                Dangerous
            } else {
                Safe
            }
        }
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
        "sed" => sed_class(words),
        "awk" | "gawk" | "mawk" | "nawk" => {
            // Program files, extensions and includes cannot be read here.
            let loads = words.iter().any(|w| {
                matches!(
                    *w,
                    "-f" | "--file" | "-i" | "--include" | "-l" | "--load" | "-E" | "--exec"
                )
            });
            let acts = words.iter().any(|w| {
                w.contains("system") || w.contains('|') || w.contains('>') || w.contains("getline")
            });
            if loads || acts { Dangerous } else { Safe }
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
        "tar" => tar_class(words),
        // zip -T runs an unzip command (-TT names it).
        "zip"
            if words
                .iter()
                .any(|w| w.starts_with("-T") || w.starts_with("--unzip-command")) =>
        {
            Dangerous
        }
        "unzip" if has("-l") || has("-t") || has("-Z") => Safe,
        "zip" | "unzip" | "gzip" | "gunzip" | "xz" | "unxz" | "bzip2" | "bunzip2" | "zstd" => Dev,
        "mkdir" if words.iter().any(|w| *w == "-m" || w.starts_with("--mode")) => Dangerous,
        "mkdir" | "touch" | "tee" => Dev,
        // Version control.
        "git" => git_class(words),
        // Language toolchains and build tools.
        // `--config` can name a runner or wrapper program.
        "cargo"
            if words
                .iter()
                .any(|w| w.starts_with("--config") || *w == "-Z") =>
        {
            Dangerous
        }
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
        // Their command lines were checked on their own; running them is dev.
        "eval" | "watch" | "flock" => Dev,
        // `make --eval` runs whatever rule it is given.
        "make" | "gmake" if words.iter().any(|w| *w == "-E" || w.starts_with("--eval")) => {
            Dangerous
        }
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
                    "json.tool" | "tabnanny" => Safe,
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
        // The daemon runs outside the sandbox: only looking is dev.
        "docker" | "podman" => match sub {
            "ps" | "images" | "inspect" | "logs" | "version" | "info" | "stats" | "top"
            | "port" | "diff" | "history" => Dev,
            "compose" => {
                let action = words
                    .iter()
                    .skip_while(|w| **w != "compose")
                    .skip(1)
                    .find(|w| !w.starts_with('-'));
                match action.copied() {
                    Some("ps" | "config" | "logs" | "ls" | "images" | "top" | "version") => Dev,
                    _ => Dangerous,
                }
            }
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

/// sed is safe unless it edits in place (dev), or its script runs commands,
/// writes files or cannot be read (a script file): dangerous.
fn sed_class(words: &[&str]) -> Class {
    let mut scripts: Vec<&str> = Vec::new();
    let mut in_place = false;
    let mut explicit = false;
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if let Some(script) = w.strip_prefix("--expression=") {
            scripts.push(script);
            explicit = true;
        } else if w == "--expression" {
            scripts.extend(words.get(i + 1));
            explicit = true;
            i += 1;
        } else if w.starts_with("--file") {
            return Class::Dangerous;
        } else if w.starts_with("--in-place") {
            in_place = true;
        } else if let Some(flags) = w
            .strip_prefix('-')
            .filter(|f| !f.is_empty() && !f.starts_with('-'))
        {
            for f in flags.chars() {
                match f {
                    'i' => {
                        in_place = true;
                        break;
                    }
                    'f' => return Class::Dangerous,
                    'e' => {
                        scripts.extend(words.get(i + 1));
                        explicit = true;
                        i += 1;
                        break;
                    }
                    _ => {}
                }
            }
        } else if !explicit && scripts.is_empty() {
            scripts.push(w);
        }
        i += 1;
    }
    if scripts.iter().any(|s| sed_script_acts(s)) {
        Class::Dangerous
    } else if in_place {
        Class::Dev
    } else {
        Class::Safe
    }
}

/// Whether a sed script runs commands or writes files: the `e`, `w` and `W`
/// commands, or the `e` and `w` flags of `s`.
fn sed_script_acts(script: &str) -> bool {
    let c: Vec<char> = script.chars().collect();
    // Move past the next unescaped `delim`.
    let past = |i: &mut usize, delim: char| {
        while *i < c.len() {
            if c[*i] == '\\' {
                *i += 2;
                continue;
            }
            *i += 1;
            if c[*i - 1] == delim {
                return;
            }
        }
    };
    let mut i = 0;
    while i < c.len() {
        while i < c.len() && (c[i].is_whitespace() || matches!(c[i], ';' | '{' | '}' | '!')) {
            i += 1;
        }
        // The address: numbers, `$`, ranges, `/regex/`, `\%regex%`.
        while i < c.len() {
            match c[i] {
                '0'..='9' | '$' | ',' | '~' | '+' | ' ' | '!' => i += 1,
                '/' => {
                    i += 1;
                    past(&mut i, '/');
                }
                '\\' if i + 1 < c.len() => {
                    let delim = c[i + 1];
                    i += 2;
                    past(&mut i, delim);
                }
                _ => break,
            }
        }
        let Some(&command) = c.get(i) else {
            return false;
        };
        i += 1;
        match command {
            'e' | 'w' | 'W' => return true,
            's' | 'y' => {
                let Some(&delim) = c.get(i) else {
                    return false;
                };
                i += 1;
                past(&mut i, delim);
                past(&mut i, delim);
                while command == 's' && i < c.len() && !matches!(c[i], ';' | '\n' | '}') {
                    if matches!(c[i], 'e' | 'w' | 'W') {
                        return true;
                    }
                    i += 1;
                }
            }
            // Text, file names and labels run to the end of the line.
            'a' | 'i' | 'c' | 'r' | 'R' | ':' | 'b' | 't' | 'T' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    false
}

/// tar lists safely; options that run programs are dangerous; the rest
/// (creating, extracting) is dev.
fn tar_class(words: &[&str]) -> Class {
    let runs = words.iter().any(|w| {
        [
            "--checkpoint-action",
            "--to-command",
            "-I",
            "--use-compress-program",
            "--info-script",
            "-F",
            "--new-volume-script",
            "--rsh-command",
            "--rmt-command",
        ]
        .iter()
        .any(|o| w.starts_with(o))
    });
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

pub(super) fn git_class(words: &[&str]) -> Class {
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
    // Options naming a program for git to run on the other side.
    let runs_program = args.iter().any(|w| {
        ["--upload-pack", "--receive-pack", "--exec", "-u"]
            .iter()
            .any(|o| w == o || w.starts_with(&format!("{o}=")))
    });
    if runs_program
        && matches!(
            sub,
            "fetch" | "pull" | "clone" | "ls-remote" | "push" | "archive"
        )
    {
        return Dangerous;
    }
    // `git diff --output=FILE` writes a file.
    if args.iter().any(|w| w.starts_with("--output")) {
        return if matches!(sub, "diff" | "log" | "show") {
            Dev
        } else {
            Dangerous
        };
    }
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
