//! Environment variables as an allow-list: which names a command line or a
//! request may set without making the command dangerous, and every way a
//! line sets one.

use super::Arg;

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
pub(super) fn unlisted(name: &str) -> String {
    format!(
        "it sets `{name}`, which is not one of the variables commands may set without asking \
         (it can change which programs run or what they load)"
    )
}

/// The variables `argv` sets without an assignment word: `export NAME`,
/// `declare NAME=…`, `env NAME=… cmd`, `printf -v NAME`, `read NAME`,
/// `mapfile NAME`, `getopts OPTS NAME`. `Err` for what cannot be followed
/// (`declare -n`, a name known only at run time, a mapfile callback).
pub(super) fn names_set(name: &str, argv: &[Arg]) -> Result<Vec<String>, String> {
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
