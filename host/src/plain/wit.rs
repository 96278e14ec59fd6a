//! A component's functions and types written as WIT, for a person
//! reviewing it: `total: func(items: list<record { name: string, count:
//! u32 }>) -> result<u64, string>`. Types are written out where they are
//! used (a component's types carry no names once compiled).

use wasmtime::component::Type;
use wasmtime::component::types::ComponentFunc;

/// The longest signature written out; a longer one ends in `…`.
const MOST_CHARS: usize = 2_000;

/// `name: func(params) -> result`, at most [`MOST_CHARS`] characters.
pub(crate) fn signature(name: &str, func: &ComponentFunc) -> String {
    let mut out = format!("{name}: func(");
    for (i, (param, ty)) in func.params().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(param);
        out.push_str(": ");
        write_type(&mut out, &ty);
        if out.len() > MOST_CHARS {
            break;
        }
    }
    out.push(')');
    let results: Vec<Type> = func.results().collect();
    if !results.is_empty() {
        out.push_str(" -> ");
        for (i, ty) in results.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_type(&mut out, ty);
        }
    }
    if out.len() > MOST_CHARS {
        let mut end = MOST_CHARS;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out.push('…');
    }
    out
}

/// Append `ty` as WIT to `out`, stopping once `out` is past the limit.
fn write_type(out: &mut String, ty: &Type) {
    if out.len() > MOST_CHARS {
        return;
    }
    let simple = match ty {
        Type::Bool => "bool",
        Type::S8 => "s8",
        Type::U8 => "u8",
        Type::S16 => "s16",
        Type::U16 => "u16",
        Type::S32 => "s32",
        Type::U32 => "u32",
        Type::S64 => "s64",
        Type::U64 => "u64",
        Type::Float32 => "f32",
        Type::Float64 => "f64",
        Type::Char => "char",
        Type::String => "string",
        Type::Own(_) => "own<resource>",
        Type::Borrow(_) => "borrow<resource>",
        Type::Future(_) => "future",
        Type::Stream(_) => "stream",
        Type::ErrorContext => "error-context",
        _ => "",
    };
    if !simple.is_empty() {
        out.push_str(simple);
        return;
    }
    match ty {
        Type::List(list) => wrapped(out, "list", &[list.ty()]),
        Type::FixedLengthList(list) => {
            out.push_str("list<");
            write_type(out, &list.ty());
            out.push_str(&format!(", {}>", list.len()));
        }
        Type::Map(map) => wrapped(out, "map", &[map.key(), map.value()]),
        Type::Option(option) => wrapped(out, "option", &[option.ty()]),
        Type::Tuple(tuple) => wrapped(out, "tuple", &tuple.types().collect::<Vec<_>>()),
        Type::Result(result) => match (result.ok(), result.err()) {
            (None, None) => out.push_str("result"),
            (ok, err) => {
                out.push_str("result<");
                match ok {
                    Some(ok) => write_type(out, &ok),
                    None => out.push('_'),
                }
                if let Some(err) = err {
                    out.push_str(", ");
                    write_type(out, &err);
                }
                out.push('>');
            }
        },
        Type::Record(record) => {
            let fields: Vec<_> = record.fields().map(|f| (f.name, Some(f.ty))).collect();
            cases(out, "record", &fields, ": ");
        }
        Type::Variant(variant) => {
            let all: Vec<_> = variant.cases().map(|c| (c.name, c.ty)).collect();
            cases(out, "variant", &all, "(");
        }
        Type::Enum(e) => names(out, "enum", e.names()),
        Type::Flags(flags) => names(out, "flags", flags.names()),
        _ => {}
    }
}

/// `kind<a, b>`.
fn wrapped(out: &mut String, kind: &str, types: &[Type]) {
    out.push_str(kind);
    out.push('<');
    for (i, ty) in types.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_type(out, ty);
    }
    out.push('>');
}

/// `record { a: T }` (`sep` `: `) or `variant { a(T), b }` (`sep` `(`).
fn cases(out: &mut String, kind: &str, items: &[(&str, Option<Type>)], sep: &str) {
    out.push_str(kind);
    out.push_str(" { ");
    for (i, (name, ty)) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(name);
        if let Some(ty) = ty {
            out.push_str(sep);
            write_type(out, ty);
            if sep == "(" {
                out.push(')');
            }
        }
        if out.len() > MOST_CHARS {
            return;
        }
    }
    out.push_str(" }");
}

/// `enum { a, b }`.
fn names<'a>(out: &mut String, kind: &str, names: impl Iterator<Item = &'a str>) {
    out.push_str(kind);
    out.push_str(" { ");
    out.push_str(&names.collect::<Vec<_>>().join(", "));
    out.push_str(" }");
}
