//! Lines refused before parsing: what would overflow, hang or mislead the parser.

/// How deep parentheses may nest in a line before it is refused unparsed:
/// brush-parser's arithmetic grammar tries every way to read nested `(`,
/// which doubles its work at each level (found by the fuzz target `shell`:
/// 20 levels took seconds, 30 would take hours, all on the call's thread).
pub(super) const MAX_PAREN_DEPTH: usize = 12;

/// A number brush-parser would read into a machine integer and panic on
/// (found by the fuzz target `shell`): a run of digits too large for an
/// `i32` right before `<` or `>` (a file descriptor), or too large for an
/// `i64` right after `~`, `~+`, `~-`, `{`, `..` (optionally signed) or
/// right before `..` (directory-stack indexes, brace ranges).
pub(super) fn overflowing_number(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        let digits = &line[start..at];
        let before = line[..start].trim_end_matches(['+', '-']);
        let after = &line[at..];
        let descriptor = after.starts_with(['<', '>']) && digits.parse::<i32>().is_err();
        let index =
            (before.ends_with(['~', '{']) || before.ends_with("..") || after.starts_with(".."))
                && digits.parse::<i64>().is_err();
        if descriptor || index {
            return Some(digits);
        }
    }
    None
}

/// Whether a here-document operator (`<<`, `<<-`; not `<<<`) has an
/// empty delimiter (`''` or `""`): brush-parser's tokenizer takes tens of
/// seconds and gigabytes on two of them (found by the fuzz target
/// `shell`). Bash allows it (the document ends at an empty line); nobody
/// needs it in a command an agent runs.
pub(super) fn empty_heredoc_delimiter(line: &str) -> bool {
    line.match_indices("<<").any(|(at, _)| {
        let rest = &line[at + 2..];
        if rest.starts_with('<') || line[..at].ends_with('<') {
            return false;
        }
        let word = rest
            .strip_prefix('-')
            .unwrap_or(rest)
            .trim_start_matches([' ', '\t']);
        let end = word
            .find(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | ')' | '<' | '>'))
            .unwrap_or(word.len());
        let word = &word[..end];
        !word.is_empty() && word.chars().all(|c| matches!(c, '\'' | '"'))
    })
}

/// Whether a `$(` outside single quotes is never closed. brush-parser's
/// tokenizer spends tens of seconds on such a line when a here-document
/// follows (`$( t <<  D `, found by the fuzz target `shell`); the line
/// could not parse anyway.
pub(super) fn unclosed_substitution(line: &str) -> bool {
    // Each open `(`: whether it began a `$(`.
    let mut open: Vec<bool> = Vec::new();
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut previous = '\0';
    for c in line.chars() {
        if escaped {
            // An escaped character is text: `\$(` begins nothing.
            (escaped, previous) = (false, '\0');
            continue;
        }
        match c {
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '(' if !single => open.push(previous == '$'),
            ')' if !single => {
                open.pop();
            }
            _ => {}
        }
        previous = c;
    }
    open.contains(&true)
}

/// The deepest nesting of `(` in `line`, quotes or not (counting those in
/// quotes too only refuses more).
pub(super) fn paren_depth(line: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in line.bytes() {
        match b {
            b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Why `line` is kept from brush-parser, if it is: the inputs the fuzz
/// target `shell` found it panicking or spending seconds to hours on (on
/// the call's thread, where no deadline reaches), each refused with what to
/// do instead.
pub(super) fn parser_hazard(line: &str) -> Option<String> {
    if let Some(number) = overflowing_number(line) {
        return Some(format!(
            "`{number}` is too large a number for a file descriptor, brace range or \
             directory-stack index; use a smaller one"
        ));
    }
    if let Some(c) = line
        .chars()
        .find(|c| c.is_ascii_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Some(format!(
            "it holds the control character U+{:04X}; write the command as text",
            u32::from(c)
        ));
    }
    if empty_heredoc_delimiter(line) {
        return Some(
            "a here-document has an empty delimiter (`<< ''`); give it a word such as EOF"
                .to_owned(),
        );
    }
    if unclosed_substitution(line) {
        return Some("a `$(` has no closing `)`; close the command substitution".to_owned());
    }
    let parens = paren_depth(line);
    if parens > MAX_PAREN_DEPTH {
        return Some(format!(
            "parentheses nest {parens} deep, and toolhost checks command lines nested at most \
             {MAX_PAREN_DEPTH} deep; put the command in a script file and run that"
        ));
    }
    None
}
