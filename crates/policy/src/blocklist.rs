//! The blocklist: commands refused in every mode, whoever approves.

use super::{Arg, Refusal, lits, shown_argv};

/// A path as written, without quotes, repeated slashes or `.` segments
/// (`"//dev/./sda"` → `/dev/sda`).
pub(super) fn normal(path: &str) -> String {
    let unquoted: String = path.chars().filter(|c| !matches!(c, '"' | '\'')).collect();
    let absolute = unquoted.starts_with('/');
    let parts: Vec<&str> = unquoted
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// Device files a command may write to.
pub(super) fn harmless_device(path: &str) -> bool {
    let path = normal(path);
    matches!(
        path.as_str(),
        "/dev/null" | "/dev/zero" | "/dev/full" | "/dev/stdout" | "/dev/stderr"
    ) || ["/dev/fd/", "/dev/shm/", "/dev/tcp/", "/dev/udp/"]
        .iter()
        .any(|p| path.starts_with(p))
}

/// A device path that is not harmless (`/dev/sda`, `//dev/nvme0n1`).
fn device(path: &str) -> bool {
    normal(path).starts_with("/dev/") && !harmless_device(path)
}

/// Paths whose recursive deletion destroys the system or a home
/// directory: `/`, `/*`, `~`, `$HOME`, `/home/alice`, top-level directories.
pub(super) fn precious_path(arg: &Arg) -> bool {
    let text = normal(arg.shown());
    // `~`, `$HOME`, `${HOME}`, `${HOME:?}`, with nothing but `/`, `.`
    // or `*` after them.
    let home_rest = text
        .strip_prefix('~')
        .or_else(|| text.strip_prefix("$HOME"))
        .or_else(|| {
            text.strip_prefix("${HOME")
                .and_then(|r| r.split_once('}').map(|(_, rest)| rest))
        });
    if home_rest.is_some_and(|rest| rest.trim_matches(['/', '*', '.']).is_empty()) {
        return true;
    }
    if !text.starts_with('/') {
        return false;
    }
    // `rm -rf "/$DIR"`: an empty variable leaves `/`.
    if matches!(arg, Arg::Dyn(_)) && (text.starts_with("/$") || text == "/*") {
        return true;
    }
    if std::env::var("HOME").is_ok_and(|home| normal(&home) == text.trim_end_matches(['/', '*'])) {
        return true;
    }
    let parts: Vec<&str> = text.split('/').filter(|p| !p.is_empty()).collect();
    if parts.contains(&"..") {
        return true;
    }
    match parts.as_slice() {
        [] | [_] => true,
        // Home directories: `/home/alice`, `/home/*`, `/Users/bob`.
        ["home" | "Users", _] => true,
        [_, "*"] => true,
        _ => false,
    }
}

/// `777`, `0777`, `2777`, `a+rwx`, `go=rwx`, `o+w`: anyone may write.
fn world_writable(mode: &str) -> bool {
    if mode.len() >= 3 && mode.chars().all(|c| c.is_ascii_digit()) {
        // The last digit is the others' permissions; 2 is write.
        return mode.ends_with(['2', '3', '6', '7']);
    }
    mode.split(',').any(|clause| {
        let who: String = clause.chars().take_while(|c| "ugoa".contains(*c)).collect();
        let rest = &clause[who.len()..];
        let grants = rest.starts_with(['+', '=']) && rest[1..].contains('w');
        grants && (who.contains('o') || who.contains('a'))
    })
}

/// Programs refused whatever their arguments, and why.
#[rustfmt::skip]
const ALWAYS: &[(&[&str], &str)] = &[
    (&["sudo", "su", "doas", "pkexec", "runuser", "sudoedit", "run0"],
        "it runs commands as another user; toolhost never does, and the sandbox could not grant it"),
    (&["mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted",
       "blkdiscard", "mkdosfs", "mkntfs"], FORMATS_DISKS),
    (&["shutdown", "reboot", "halt", "poweroff", "kexec"], "it shuts the machine down"),
];

const FORMATS_DISKS: &str = "it formats or repartitions disks";

/// systemd targets and verbs that stop, suspend or reboot the machine.
#[rustfmt::skip]
const POWER_UNITS: &[&str] = &[
    "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep",
    "suspend-then-hibernate", "emergency", "rescue", "soft-reboot", "isolate", "shutdown",
];

/// The blocklist: refused in every mode.
pub(super) fn blocked(name: &str, argv: &[Arg]) -> Result<(), Refusal> {
    let why = ALWAYS
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, why)| *why)
        .or_else(|| name.starts_with("mkfs").then_some(FORMATS_DISKS))
        .or_else(|| by_arguments(name, argv));
    match why {
        Some(why) => Err(Refusal(format!("`{}`: {why}", shown_argv(argv)))),
        None => Ok(()),
    }
}

/// Why `name` with these arguments is refused, for programs refused only
/// with some arguments.
fn by_arguments(name: &str, argv: &[Arg]) -> Option<&'static str> {
    let mut shown = argv.iter().skip(1).map(Arg::shown);
    match name {
        "rm" => {
            deletes_precious(argv).then_some("it deletes the root, a top-level or a home directory")
        }
        "chmod" => lits(argv)
            .any(world_writable)
            .then_some("it makes files writable by everyone (chmod 777, o+w)"),
        "dd" => shown
            .any(|w| w.strip_prefix("of=").is_some_and(device))
            .then_some("it writes straight to a device"),
        "tee" | "cp" | "mv" | "shred" | "install" | "ln" => shown
            .any(|w| device(w) && is_disk(&normal(w)))
            .then_some("it writes straight to a disk device"),
        "systemctl" | "loginctl" => lits(argv)
            .any(|w| POWER_UNITS.contains(&w.trim_end_matches(".target")))
            .then_some("it shuts down, suspends or reboots the machine"),
        "init" | "telinit" => lits(argv)
            .any(|w| matches!(w, "0" | "6" | "1" | "s" | "S"))
            .then_some("it changes the machine's runlevel (shutdown or reboot)"),
        "pkill" => kills_by_full_command_line(argv)
            .then_some("`pkill -9 -f` kills every process whose command line matches"),
        "killall" | "killall5" => (name == "killall5"
            || lits(argv).any(is_kill_signal)
            || signal_option_is_kill(argv, &["-s", "--signal"]))
        .then_some("`killall -9` kills processes by name without a chance to clean up"),
        "kill" => kill_targets(argv)
            .contains(&"-1")
            .then_some("`kill … -1` signals every process you own"),
        _ => None,
    }
}

/// `rm -r` of the root, a top-level or a home directory, or any
/// `--no-preserve-root`.
fn deletes_precious(argv: &[Arg]) -> bool {
    let recursive = lits(argv).any(|w| {
        w == "--recursive"
            || (w.starts_with('-') && !w.starts_with("--") && (w.contains('r') || w.contains('R')))
    });
    let no_preserve = lits(argv).any(|w| w == "--no-preserve-root");
    no_preserve || (recursive && argv.iter().skip(1).any(precious_path))
}

/// `pkill -9 -f`: SIGKILL to every process whose full command line
/// matches. (For pkill, `-s` selects a session, not a signal.)
fn kills_by_full_command_line(argv: &[Arg]) -> bool {
    let kill9 = lits(argv).any(is_kill_signal) || signal_option_is_kill(argv, &["--signal"]);
    let full = lits(argv).any(|w| {
        w == "--full"
            || (w.starts_with('-') && !w.starts_with("--") && w.contains('f') && !is_kill_signal(w))
    });
    kill9 && full
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

/// `-9`, `-09`, `-KILL`, `-SIGKILL`, `--signal=9`.
fn is_kill_signal(word: &str) -> bool {
    let signal = word
        .strip_prefix("--signal=")
        .or_else(|| word.strip_prefix('-').filter(|w| !w.starts_with('-')));
    signal.is_some_and(names_kill)
}

fn names_kill(signal: &str) -> bool {
    let upper = signal.to_ascii_uppercase();
    upper.trim_start_matches('0') == "9" || upper == "KILL" || upper == "SIGKILL"
}

/// `-s KILL`, `--signal 9` (the options that name a signal for this program).
fn signal_option_is_kill(argv: &[Arg], options: &[&str]) -> bool {
    argv.windows(2).any(|w| {
        w[0].lit().is_some_and(|o| options.contains(&o)) && w[1].lit().is_some_and(names_kill)
    })
}

/// `/dev/sda`, `/dev/nvme0n1`, `/dev/mapper/x` …
pub(super) fn is_disk(path: &str) -> bool {
    let Some(dev) = path.strip_prefix("/dev/") else {
        return false;
    };
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk/", "mapper/", "dm-", "md", "loop", "sr",
        "mtdblock", "nbd", "zram", "mem", "kmem", "port",
    ]
    .iter()
    .any(|p| dev.starts_with(p))
}
