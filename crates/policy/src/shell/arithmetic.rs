//! What arithmetic and parameter expansions read and set: bash evaluates
//! arithmetic over variables, and a value read at run time there can run
//! commands (`a[$(cmd)]`).

/// `${NAME:=value}` and `${NAME=value}` assign NAME.
pub(super) fn default_assignment(raw: &str) -> Option<String> {
    let inner = raw.strip_prefix("${")?;
    let end = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(inner.len());
    let rest = &inner[end..];
    (end > 0 && (rest.starts_with(":=") || rest.starts_with('='))).then(|| inner[..end].to_owned())
}

/// The variable names an arithmetic expression reads (numbers, `0x1f`
/// and `16#ff` among them, are not names).
pub(super) fn names_in(expr: &str) -> Vec<&str> {
    let bytes = expr.as_bytes();
    let mut names = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        if bytes[i].is_ascii_digit() {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'#' | b'_' | b'@'))
            {
                i += 1;
            }
        } else if bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            names.push(&expr[start..i]);
        } else {
            i += 1;
        }
    }
    names
}

/// The arithmetic inside a parameter expansion, if any: an indexed
/// array's subscript (`${a[i]}`) or a substring's offset and length
/// (`${s:i:n}`).
pub(super) fn expansion_arithmetic(raw: &str) -> Option<&str> {
    let inner = raw.strip_prefix("${")?.strip_suffix('}')?;
    let inner = inner.trim_start_matches(['#', '!']);
    let end = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(inner.len());
    let rest = &inner[end..];
    if let Some(sub) = rest.strip_prefix('[') {
        let close = sub.find(']')?;
        let index = &sub[..close];
        return (index != "@" && index != "*").then_some(index);
    }
    let offset = rest.strip_prefix(':')?;
    (!offset.starts_with(['-', '=', '?', '+'])).then_some(offset)
}

/// Names an arithmetic expression assigns (`x = 1`, `x += 2`, `x++`).
pub(super) fn arithmetic_sets(expr: &str) -> Vec<String> {
    let bytes = expr.as_bytes();
    let mut names = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let name = &expr[start..i];
            let rest = expr[i..].trim_start();
            let before = expr[..start].trim_end();
            let assigns = (rest.starts_with('=') && !rest.starts_with("=="))
                || [
                    "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=", "++", "--",
                ]
                .iter()
                .any(|op| rest.starts_with(op))
                || before.ends_with("++")
                || before.ends_with("--");
            if assigns {
                names.push(name.to_owned());
            }
        } else {
            i += 1;
        }
    }
    names
}
