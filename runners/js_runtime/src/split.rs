//! `splitSpaces`, what split.js gives `text.split(/\s+/)`: the pieces of a
//! string between runs of the characters QuickJS's `\s` matches, made
//! natively rather than by a regular-expression match per word.

use rquickjs::{Array, Ctx, Value};

/// Whether QuickJS's `\s` matches `c` (libregexp.c's `char_range_s`:
/// ECMAScript's WhiteSpace and LineTerminator).
fn is_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    )
}

/// `text.split(/\s+/, limit)` for a non-empty `text` and a `limit` above
/// 0: the piece before each run of spaces, then the rest (empty ones at
/// either end included, as the built-in gives them), at most `limit`.
/// Undefined if `text` is not one UTF-8 can hold (a lone surrogate), for
/// the caller to cut it another way.
pub(crate) fn spaces<'js>(
    ctx: Ctx<'js>,
    text: rquickjs::String<'js>,
    limit: u32,
) -> rquickjs::Result<Value<'js>> {
    let Ok(text) = text.to_string() else {
        return Ok(Value::new_undefined(ctx));
    };
    let pieces = Array::new(ctx.clone())?;
    // Split at each space, then leave out the empty pieces between two
    // spaces of one run: not the first piece nor the last, which are
    // empty when the text starts or ends with spaces.
    let mut all = text.split(is_space).peekable();
    let mut count = 0;
    while let Some(piece) = all.next() {
        if piece.is_empty() && count > 0 && all.peek().is_some() {
            continue;
        }
        pieces.set(count, piece)?;
        count += 1;
        if count == limit as usize {
            break;
        }
    }
    Ok(pieces.into_value())
}
