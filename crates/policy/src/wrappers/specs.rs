//! The option tables of the wrappers the policy sees through: which options take a value, and where the wrapped command starts.

use super::*;

pub(super) const XARGS: Spec = Spec {
    flags: &[
        "-0",
        "--null",
        "-o",
        "--open-tty",
        "-p",
        "--interactive",
        "-r",
        "--no-run-if-empty",
        "-t",
        "--verbose",
        "-x",
        "--exit",
        "--show-limits",
        "--help",
        "--version",
    ],
    values: &[
        "-a",
        "--arg-file",
        "-d",
        "--delimiter",
        "-E",
        "-I",
        "-L",
        "--max-lines",
        "-n",
        "--max-args",
        "-P",
        "--max-procs",
        "-s",
        "--max-chars",
        "--process-slot-var",
    ],
    optional: &["--eof", "--replace", "-e", "-i", "-l"],
};

pub(super) const TIMEOUT: Spec = Spec {
    flags: &[
        "--preserve-status",
        "--foreground",
        "-v",
        "--verbose",
        "--help",
        "--version",
    ],
    values: &["-s", "--signal", "-k", "--kill-after"],
    optional: &[],
};

pub(super) const NICE: Spec = Spec {
    flags: &["--help", "--version"],
    values: &["-n", "--adjustment"],
    optional: &[],
};

pub(super) const NOHUP: Spec = Spec {
    flags: &["--help", "--version"],
    values: &[],
    optional: &[],
};

pub(super) const SETSID: Spec = Spec {
    flags: &[
        "-c",
        "--ctty",
        "-f",
        "--fork",
        "-w",
        "--wait",
        "--help",
        "--version",
    ],
    values: &[],
    optional: &[],
};

pub(super) const TIME: Spec = Spec {
    flags: &[
        "-a",
        "--append",
        "-p",
        "--portability",
        "-v",
        "--verbose",
        "-q",
        "--quiet",
        "--help",
    ],
    values: &["-f", "--format", "-o", "--output"],
    optional: &[],
};

pub(super) const STDBUF: Spec = Spec {
    flags: &["--help", "--version"],
    values: &["-i", "--input", "-o", "--output", "-e", "--error"],
    optional: &[],
};

pub(super) const IONICE: Spec = Spec {
    flags: &["-t", "--ignore", "--help", "--version"],
    values: &[
        "-c",
        "--class",
        "-n",
        "--classdata",
        "-p",
        "--pid",
        "-P",
        "--pgid",
        "-u",
        "--uid",
    ],
    optional: &[],
};

pub(super) const FLOCK: Spec = Spec {
    flags: &[
        "-s",
        "--shared",
        "-x",
        "-e",
        "--exclusive",
        "-u",
        "--unlock",
        "-n",
        "--nb",
        "--nonblock",
        "-o",
        "--close",
        "-F",
        "--no-fork",
        "--verbose",
        "--help",
        "--version",
    ],
    values: &[
        "-w",
        "--wait",
        "--timeout",
        "-E",
        "--conflict-exit-code",
        "-c",
        "--command",
    ],
    optional: &[],
};

pub(super) const WATCH: Spec = Spec {
    flags: &[
        "-b",
        "--beep",
        "-e",
        "--errexit",
        "-g",
        "--chgexit",
        "-t",
        "--no-title",
        "-x",
        "--exec",
        "-p",
        "--precise",
        "-c",
        "--color",
        "-C",
        "--no-color",
        "-w",
        "--no-wrap",
        "-r",
        "--no-rerun",
        "-d",
        "--help",
        "--version",
    ],
    values: &["-n", "--interval", "-q", "--equexit"],
    optional: &["--differences"],
};

pub(super) const SCRIPT: Spec = Spec {
    flags: &[
        "-a",
        "--append",
        "-e",
        "--return",
        "-f",
        "--flush",
        "--force",
        "-q",
        "--quiet",
        "-h",
        "--help",
        "-V",
        "--version",
    ],
    values: &[
        "-c",
        "--command",
        "-E",
        "--echo",
        "-I",
        "--log-in",
        "-O",
        "--log-out",
        "-B",
        "--log-io",
        "-T",
        "--log-timing",
        "-m",
        "--logging-format",
        "-o",
        "--output-limit",
    ],
    optional: &["--timing"],
};

pub(super) const ENV: Spec = Spec {
    flags: &[
        "-i",
        "--ignore-environment",
        "-0",
        "--null",
        "-v",
        "--debug",
        "--list-signal-handling",
        "--help",
        "--version",
    ],
    values: &[
        "-u",
        "--unset",
        "-C",
        "--chdir",
        "-S",
        "--split-string",
        "-a",
        "--argv0",
    ],
    optional: &["--block-signal", "--default-signal", "--ignore-signal"],
};

pub(super) const COMMAND: Spec = Spec {
    flags: &["-p", "-v", "-V"],
    values: &[],
    optional: &[],
};

pub(super) const EXEC: Spec = Spec {
    flags: &["-c", "-l"],
    values: &["-a"],
    optional: &[],
};

/// Options of `uv run`, `poetry run` and the like that take a value.
pub(super) const RUNNER_VALUES: &[&str] = &[
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
