//! git's class by subcommand and options.

use super::Class;

/// Subcommands that only read.
#[rustfmt::skip]
const READ_ONLY: &[&str] = &[
    "status", "log", "diff", "show", "blame", "describe", "rev-parse", "rev-list", "ls-files",
    "ls-tree", "ls-remote", "shortlog", "cat-file", "grep", "version", "help", "whatchanged",
    "show-ref", "merge-base", "name-rev", "for-each-ref", "count-objects", "check-ignore", "var",
    "cherry", "range-diff",
];

/// Subcommands that change the repository in routine ways: dev, or
/// dangerous when forced.
#[rustfmt::skip]
const CHANGES_REPO: &[&str] = &[
    "add", "commit", "switch", "fetch", "pull", "merge", "rebase", "cherry-pick", "revert", "init",
    "mv", "am", "apply", "bisect", "notes", "format-patch", "archive", "bundle", "submodule",
    "sparse-checkout", "fsck", "gc", "maintenance", "prune", "repack",
];

pub(super) fn git_class(words: &[&str]) -> Class {
    use Class::{Dangerous, Dev, Safe};
    // Skip global options (`-C dir`, `--no-pager`). `-c key=value`, and
    // a repository or work tree named elsewhere (whose config git reads
    // and may run code from), are dangerous.
    let mut i = 0;
    let mut at_least_dev = false;
    while i < words.len() && words[i].starts_with('-') {
        let w = words[i];
        let names = |full: &str| w == full || w.starts_with(&format!("{full}="));
        if w.starts_with("-c")
            || [
                "--config-env",
                "--exec-path",
                "--git-dir",
                "--work-tree",
                "--super-prefix",
            ]
            .iter()
            .any(|o| names(o))
        {
            return Dangerous;
        }
        match w {
            // Another directory: its repository (and the code its
            // configuration names) may be one a command made.
            "-C" => {
                at_least_dev = true;
                i += 2;
            }
            "--namespace" => i += 2,
            _ => i += 1,
        }
    }
    let class = git_subcommand_class(&words[i..]);
    if at_least_dev && class == Safe {
        Dev
    } else {
        class
    }
}

/// git's class from its subcommand on (global options skipped).
fn git_subcommand_class(words: &[&str]) -> Class {
    use Class::{Dangerous, Dev, Safe};
    let i = 0;
    let Some(&sub) = words.get(i) else {
        return Safe;
    };
    let args = &words[i + 1..];
    let has = |w: &str| args.contains(&w);
    // Options naming a program for git to run (git accepts any unique
    // prefix of a long option): on the other side, as a pager for matches,
    // as an external diff.
    let runs_program = args.iter().any(|w| {
        ["-u", "-O"]
            .iter()
            .any(|o| w.starts_with(o) && !w.starts_with("--"))
            || [
                "--upload-pack",
                "--receive-pack",
                "--exec",
                "--open-files-in-pager",
                "--ext-diff",
                "--textconv",
            ]
            .iter()
            .any(|o| super::long_is(w, o))
    });
    if runs_program
        && matches!(
            sub,
            "fetch"
                | "pull"
                | "clone"
                | "ls-remote"
                | "push"
                | "archive"
                | "grep"
                | "diff"
                | "log"
                | "show"
                | "whatchanged"
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
    if READ_ONLY.contains(&sub) {
        return Safe;
    }
    if CHANGES_REPO.contains(&sub) {
        return if has("--force") || has("-f") && sub != "commit" {
            Dangerous
        } else {
            Dev
        };
    }
    subcommand_class(sub, args)
}

/// The subcommands whose class depends on their arguments.
fn subcommand_class(sub: &str, args: &[&str]) -> Class {
    use Class::{Dangerous, Dev, Safe};
    let has = |w: &str| args.contains(&w);
    match sub {
        "branch" => branch_class(args),
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

/// `git branch`: listing is safe, creating is dev, deleting, moving or
/// forcing is dev or dangerous.
fn branch_class(args: &[&str]) -> Class {
    use Class::{Dangerous, Dev, Safe};
    let has = |w: &str| args.contains(&w);
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
