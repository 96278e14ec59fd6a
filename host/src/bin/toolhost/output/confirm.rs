//! The terminal's confirmation question.
#![expect(clippy::print_stderr, reason = "a question asked on the terminal")]

use super::printable;
use std::io::{BufRead as _, IsTerminal as _};
use toolhost::{ConfirmRequest, Confirmer, Decision};

/// Asks on the terminal: `y` runs the call, `n` skips it, `a` aborts everything.
/// Without a terminal on both stdin and stderr, nobody can be asked. One
/// question at a time, even when calls run concurrently.
pub struct TtyConfirmer;

impl Confirmer for TtyConfirmer {
    fn confirm(&self, request: &ConfirmRequest<'_>) -> Decision {
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            return Decision::Unavailable;
        }
        let _turn = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // JSON escapes control characters in the arguments; the reason
        // quotes a command, so escape it too: nothing printed can move the
        // cursor or redraw the prompt.
        let args = serde_json::to_string(request.args).unwrap_or_default();
        let reason = printable(request.reason);
        let tool = printable(request.tool);
        loop {
            eprint!("Run `{tool}` with {args}?\n({reason}) [y]es / [n]o / [a]bort all: ");
            if !stdin_ready() {
                eprintln!();
                return Decision::AbortAll;
            }
            let mut line = String::new();
            if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
                return Decision::Deny;
            }
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Decision::Allow,
                "n" | "no" => return Decision::Deny,
                "a" | "abort" => return Decision::AbortAll,
                _ => eprintln!("please answer y, n or a"),
            }
        }
    }
}

/// Wait until the terminal has an answer to read; false when Ctrl-C came
/// first (which answers "abort all").
fn stdin_ready() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = std::io::stdin();
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    loop {
        if crate::agent::interrupted() {
            return false;
        }
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        match poll(&mut fds, Some(&tick)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => {}
            _ => return true,
        }
    }
}
