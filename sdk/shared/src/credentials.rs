//! Credentials recognised by their values (an AWS key id, an `sk-…` API
//! key, a private-key block, a token in a URL), wherever they appear and
//! whatever a field is called: the one detector behind the host's
//! redaction (the audit log, `--json` input, command lines) and
//! save_memory's refusal.

use regex::Regex;
use std::borrow::Cow;
use std::sync::OnceLock;

/// What the one pattern finds that a plain word can fill: `password:
/// wrong.` in prose is no credential.
const ASSIGNMENT: &str = "a password or token assignment";

/// Whether a match of the pattern finding `what` is a value rather than
/// an ordinary word that follows `token:` in prose: `prefix` is what the
/// pattern's first group matched (the name and its separator), `value`
/// the rest. Only after a colon and a space, and only a word of at most
/// 12 letters with at most one mark of sentence punctuation after it, is
/// it prose (`the token: wrong.`); anything after `=`, or with a digit,
/// symbol or inner punctuation, is a value.
fn is_value(what: &str, prefix: &str, value: &str) -> bool {
    if what != ASSIGNMENT {
        return true;
    }
    let prose = prefix.trim_end().ends_with(':') && prefix.ends_with(char::is_whitespace);
    let word = value
        .strip_suffix(['.', ',', ';', '!', '?'])
        .unwrap_or(value);
    !(prose
        && !word.is_empty()
        && word.chars().count() <= 12
        && word.chars().all(char::is_alphabetic))
}

/// The patterns, each with what it finds. What a pattern's groups match
/// (a name before, an `@` after) is kept when it is redacted.
fn patterns() -> &'static [(Regex, &'static str)] {
    static PATTERNS: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    // A first group is kept when redacting, and a URL keeps its `@`.
    PATTERNS.get_or_init(|| {
        [
            (
                r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|$)",
                "a private key",
            ),
            (r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}", "an API key (sk-…)"),
            (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "an AWS access key"),
            (r"\bgh[pousr]_[A-Za-z0-9]{30,}", "a GitHub token"),
            (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", "a Slack token"),
            (r"\bAIza[0-9A-Za-z_-]{35}\b", "a Google API key"),
            (r"\bgithub_pat_[A-Za-z0-9_]{20,}", "a GitHub token"),
            (r"\bglpat-[A-Za-z0-9_-]{20,}", "a GitLab token"),
            (r"\b[rs]k_live_[A-Za-z0-9]{16,}", "a Stripe key"),
            (r"\b(?:hf|npm)_[A-Za-z0-9]{30,}", "an API token"),
            (r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/-]{20,}", "a bearer token"),
            (r"([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^@\s/]{3,}(@)", "a password in a URL"),
            (
                r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
                "a JSON web token",
            ),
            (
                r"(?i)((?:^|[^a-z0-9])(?:[a-z0-9]+_)*(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?key|token|bearer)\s*[:=]\s*)\S{6,}",
                ASSIGNMENT,
            ),
        ]
        .into_iter()
        .map(|(p, what)| {
            let re = Regex::new(p).expect("the credential patterns are valid regexes");
            (re, what)
        })
        .collect()
    })
}

/// What credential `text` holds, if any.
///
/// ```
/// use toolhost_shared::credentials::kind;
/// assert_eq!(kind("key AKIAIOSFODNN7EXAMPLE"), Some("an AWS access key"));
/// assert_eq!(kind("the staging key is in the vault"), None);
/// ```
pub fn kind(text: &str) -> Option<&'static str> {
    patterns()
        .iter()
        .find(|(re, what)| {
            re.captures_iter(text).any(|found| {
                let prefix = found.get(1).map_or("", |m| m.as_str());
                is_value(what, prefix, &found[0][prefix.len()..])
            })
        })
        .map(|(_, what)| *what)
}

/// Whether `text` holds a phone number: international (`+34 612 345 678`,
/// `+1-415-555-0100`) or written in groups (`(415) 555-0100`,
/// `612 345 678`). Dates and times (`2026-11-28 10:30`) are not numbers
/// of this shape. Memory never keeps one (the bot framework's rule), any
/// more than a credential.
///
/// ```
/// use toolhost_shared::credentials::phone_number;
/// assert!(phone_number("call Ana at +34 612 345 678"));
/// assert!(phone_number("the plumber: (415) 555-0100"));
/// assert!(!phone_number("we met on 2026-11-28 at 10:30, room 101"));
/// ```
pub fn phone_number(text: &str) -> bool {
    static PHONES: OnceLock<Vec<Regex>> = OnceLock::new();
    PHONES
        .get_or_init(|| {
            [
                r"\+\d{1,3}[\s.-]?\(?\d{1,4}\)?(?:[\s.-]?\d{2,4}){2,4}\b",
                r"\(\d{3}\)\s?\d{3}[\s.-]\d{4}\b",
                r"\b\d{3}[\s.-]\d{3}[\s.-]\d{3,4}\b",
            ]
            .into_iter()
            .map(|p| Regex::new(p).expect("the phone patterns are valid regexes"))
            .collect()
        })
        .iter()
        .any(|re| re.is_match(text))
}

/// `text` with every credential replaced by `[redacted]` (what names it
/// kept: `password=[redacted]`, `https://me:[redacted]@host`).
///
/// ```
/// use toolhost_shared::credentials::redact;
/// assert_eq!(redact("use sk-proj-abcdefghijklmnopqrstuv now"), "use [redacted] now");
/// assert_eq!(redact("nothing here"), "nothing here");
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    for (re, what) in patterns() {
        if re.is_match(&out) {
            let replaced = re.replace_all(&out, |found: &regex::Captures<'_>| {
                let whole = &found[0];
                let prefix = found.get(1).map_or("", |m| m.as_str());
                if !is_value(what, prefix, &whole[prefix.len()..]) {
                    return whole.to_owned();
                }
                // What names the value (the first group) and a URL's `@`
                // (the second) stay.
                let group = |i: usize| found.get(i).map_or("", |m| m.as_str());
                format!("{}[redacted]{}", group(1), group(2))
            });
            out = Cow::Owned(replaced.into_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_found_whatever_they_are_called() {
        for (text, what, secret) in [
            ("AKIAIOSFODNN7EXAMPLE", "an AWS access key", "IOSFODNN7"),
            (
                "sk-proj-0123456789abcdefghijKLMN",
                "an API key (sk-…)",
                "0123456789",
            ),
            (
                "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
                "a GitHub token",
                "abcdefghij",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
                "a private key",
                "abc",
            ),
            (
                "https://bob:hunter22@example.com/x",
                "a password in a URL",
                "hunter22",
            ),
            (
                "db_password = hunter22",
                "a password or token assignment",
                "hunter22",
            ),
        ] {
            assert_eq!(kind(text), Some(what), "{text}");
            let shown = redact(text);
            assert!(!shown.contains(secret), "{text} -> {shown}");
        }
        let block =
            "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nxyz\n-----END RSA PRIVATE KEY-----\nb";
        assert_eq!(redact(block), "a\n[redacted]\nb");
        assert_eq!(redact("plain text, 42 apples"), "plain text, 42 apples");
        // An ordinary word after `token:` in prose is no credential.
        for prose in ["the token: wrong.", "Password: incorrect, try again"] {
            assert_eq!(redact(prose), prose);
            assert_eq!(kind(prose), None, "{prose}");
        }
        assert_eq!(redact("token: wr0ng-v4lue."), "token: [redacted]");
        assert_eq!(
            redact("password=correcthorsebatterystaple"),
            "password=[redacted]"
        );
        // After `=`, with a symbol, padded or split: values.
        for secret in [
            "api_key=QUJDREVGR0hJSktMTU5PUA==",
            "password=Summer!",
            "token=admin:hunter",
            "password: Summer!2",
            "secret = forgotten",
        ] {
            assert!(kind(secret).is_some(), "{secret}");
            assert!(redact(secret).contains("[redacted]"), "{secret}");
        }
        // What names the value stays, and redacting again changes nothing.
        let once = redact("--password=hunter22 https://me:pw1@host");
        assert_eq!(once, "--password=[redacted] https://me:[redacted]@host");
        assert_eq!(redact(&once), once);
    }
}
