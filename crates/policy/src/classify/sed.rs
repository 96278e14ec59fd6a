//! sed's class: safe unless it edits in place, or its script runs commands, writes files or cannot be read.

use super::*;

/// sed is safe unless it edits in place (dev), or its script runs commands,
/// writes files or cannot be read (a script file): dangerous.
pub(super) fn sed_class(words: &[&str]) -> Class {
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
pub(super) fn sed_script_acts(script: &str) -> bool {
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
