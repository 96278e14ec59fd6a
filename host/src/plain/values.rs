//! WIT types as JSON: the JSON Schema of a type, a JSON value as a
//! component value of that type (refused with the field it fails at), and
//! a component value as JSON.
//!
//! The mapping, one rule per WIT type:
//! - `bool` a boolean; integers an integer within the type's range;
//!   `f32`/`f64` a number (NaN and infinities read back as `null`);
//!   `char` a one-character string; `string` a string.
//! - `list<T>` an array of T; `tuple<A, B>` an array of exactly those.
//! - `option<T>` T or `null` (a record field of option type may be left
//!   out).
//! - `record` an object of its fields (names as the WIT spells them), no
//!   others.
//! - `variant` a case without a payload is its name as a string; a case
//!   with one is `{"case-name": payload}`.
//! - `enum` one of its names; `flags` an array of distinct names.
//! - `result<T, E>` `{"ok": T}` or `{"err": E}` (a function's own result
//!   is its outcome instead: see plain.rs).
//! - resources, futures, streams and error contexts cannot be sent as
//!   JSON: a function using one is refused.

use serde_json::{Value, json};
use wasmtime::component::{Type, Val};

/// The most schema nodes one parameter or result may take: shared WIT
/// types are written out wherever they are used, so a small component
/// could otherwise describe itself in gigabytes.
const MOST_SCHEMA_NODES: usize = 20_000;

/// The JSON Schema of `ty`, or why it has none.
pub(crate) fn schema_of(ty: &Type) -> Result<Value, String> {
    let mut budget = MOST_SCHEMA_NODES;
    schema_within(ty, &mut budget)
}

fn schema_within(ty: &Type, budget: &mut usize) -> Result<Value, String> {
    *budget = budget.checked_sub(1).ok_or_else(|| {
        format!(
            "a type too large to describe (over {MOST_SCHEMA_NODES} schema nodes once written out)"
        )
    })?;
    Ok(match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::S8 => int(i8::MIN.into(), i8::MAX.into()),
        Type::U8 => int(0, u8::MAX.into()),
        Type::S16 => int(i16::MIN.into(), i16::MAX.into()),
        Type::U16 => int(0, u16::MAX.into()),
        Type::S32 => int(i32::MIN.into(), i32::MAX.into()),
        Type::U32 => int(0, u32::MAX.into()),
        Type::S64 => int(i64::MIN.into(), i64::MAX.into()),
        Type::U64 => int(0, u64::MAX.into()),
        Type::Float32 | Type::Float64 => json!({"type": "number"}),
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Type::String => json!({"type": "string"}),
        Type::List(list) => json!({"type": "array", "items": schema_within(&list.ty(), budget)?}),
        Type::FixedLengthList(list) => json!({
            "type": "array", "items": schema_within(&list.ty(), budget)?,
            "minItems": list.len(), "maxItems": list.len(),
        }),
        Type::Map(map) if matches!(map.key(), Type::String) => json!({
            "type": "object", "additionalProperties": schema_within(&map.value(), budget)?,
        }),
        Type::Map(_) => return Err("a map whose keys are not strings".into()),
        Type::Tuple(tuple) => {
            let items = tuple
                .types()
                .map(|t| schema_within(&t, budget))
                .collect::<Result<Vec<_>, _>>()?;
            let n = items.len();
            json!({"type": "array", "prefixItems": items, "items": false, "minItems": n, "maxItems": n})
        }
        Type::Record(record) => {
            let mut properties = serde_json::Map::new();
            let mut required = Vec::new();
            for field in record.fields() {
                properties.insert(field.name.to_owned(), schema_within(&field.ty, budget)?);
                if !matches!(field.ty, Type::Option(_)) {
                    required.push(field.name.to_owned());
                }
            }
            object(properties, required)
        }
        Type::Variant(variant) => {
            let cases = variant
                .cases()
                .map(|case| match &case.ty {
                    None => Ok(json!({"const": case.name})),
                    Some(ty) => {
                        let payload = serde_json::Map::from_iter([(
                            case.name.to_owned(),
                            schema_within(ty, budget)?,
                        )]);
                        Ok(object(payload, vec![case.name.to_owned()]))
                    }
                })
                .collect::<Result<Vec<_>, String>>()?;
            json!({"oneOf": cases})
        }
        Type::Enum(e) => json!({"type": "string", "enum": e.names().collect::<Vec<_>>()}),
        Type::Flags(flags) => json!({
            "type": "array", "uniqueItems": true,
            "items": {"type": "string", "enum": flags.names().collect::<Vec<_>>()},
        }),
        Type::Option(option) => {
            json!({"anyOf": [schema_within(&option.ty(), budget)?, {"type": "null"}]})
        }
        Type::Result(result) => {
            let mut side = |name: &str, ty: Option<Type>| -> Result<Value, String> {
                let schema = ty.map_or_else(
                    || Ok(json!({"type": "null"})),
                    |t| schema_within(&t, budget),
                )?;
                let properties = serde_json::Map::from_iter([(name.to_owned(), schema)]);
                Ok(object(properties, vec![name.to_owned()]))
            };
            json!({"oneOf": [side("ok", result.ok())?, side("err", result.err())?]})
        }
        Type::Own(_) | Type::Borrow(_) => {
            return Err(
                "a resource (a handle the component keeps), which JSON cannot carry".into(),
            );
        }
        Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            return Err("an asynchronous value (future, stream or error-context)".into());
        }
    })
}

fn int(min: i128, max: i128) -> Value {
    // Every bound fits in an i64 or a u64, as JSON numbers do.
    let bound = |n: i128| {
        i64::try_from(n).map_or_else(|_| json!(u64::try_from(n).unwrap_or(u64::MAX)), Value::from)
    };
    json!({"type": "integer", "minimum": bound(min), "maximum": bound(max)})
}

fn object(properties: serde_json::Map<String, Value>, required: Vec<String>) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// `value` as a component value of type `ty`; an error names where it
/// went wrong (`at`: `items[2].count`).
pub(crate) fn to_val(ty: &Type, value: &Value, at: &str) -> Result<Val, String> {
    let wrong = |expected: &str| Err(format!("`{at}` must be {expected}, not {}", brief(value)));
    macro_rules! integer {
        ($t:ty, $variant:ident) => {{
            let n = value
                .as_i64()
                .map(i128::from)
                .or_else(|| value.as_u64().map(i128::from));
            match n.and_then(|n| <$t>::try_from(n).ok()) {
                Some(n) => Val::$variant(n),
                None => return wrong(&format!("an integer from {} to {}", <$t>::MIN, <$t>::MAX)),
            }
        }};
    }
    Ok(match ty {
        Type::Bool => match value.as_bool() {
            Some(b) => Val::Bool(b),
            None => return wrong("true or false"),
        },
        Type::S8 => integer!(i8, S8),
        Type::U8 => integer!(u8, U8),
        Type::S16 => integer!(i16, S16),
        Type::U16 => integer!(u16, U16),
        Type::S32 => integer!(i32, S32),
        Type::U32 => integer!(u32, U32),
        Type::S64 => integer!(i64, S64),
        Type::U64 => integer!(u64, U64),
        #[expect(
            clippy::cast_possible_truncation,
            reason = "f32 is what the WIT asks for"
        )]
        Type::Float32 => match value.as_f64() {
            Some(f) => Val::Float32(f as f32),
            None => return wrong("a number"),
        },
        Type::Float64 => match value.as_f64() {
            Some(f) => Val::Float64(f),
            None => return wrong("a number"),
        },
        Type::Char => {
            let mut chars = value.as_str().unwrap_or_default().chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return wrong("a string of one character"),
            }
        }
        Type::String => match value.as_str() {
            Some(s) => Val::String(s.to_owned()),
            None => return wrong("a string"),
        },
        Type::List(list) => Val::List(elements(&list.ty(), value, at, None)?),
        Type::FixedLengthList(list) => {
            let n = usize::try_from(list.len()).unwrap_or(usize::MAX);
            Val::FixedLengthList(elements(&list.ty(), value, at, Some(n))?)
        }
        Type::Map(map) => {
            let Some(object) = value.as_object() else {
                return wrong("an object");
            };
            let pairs = object.iter().map(|(k, v)| {
                let key = Val::String(k.clone());
                Ok((key, to_val(&map.value(), v, &format!("{at}.{k}"))?))
            });
            Val::Map(pairs.collect::<Result<_, String>>()?)
        }
        Type::Tuple(tuple) => {
            let types: Vec<Type> = tuple.types().collect();
            let Some(items) = value.as_array().filter(|a| a.len() == types.len()) else {
                return wrong(&format!("an array of {} items", types.len()));
            };
            let vals = types
                .iter()
                .zip(items)
                .enumerate()
                .map(|(i, (t, v))| to_val(t, v, &format!("{at}[{i}]")));
            Val::Tuple(vals.collect::<Result<_, _>>()?)
        }
        Type::Record(record) => record_val(record, value, at)?,
        Type::Variant(variant) => variant_val(variant, value, at)?,
        Type::Enum(e) => match value.as_str().filter(|s| e.names().any(|n| n == *s)) {
            Some(name) => Val::Enum(name.to_owned()),
            None => {
                return wrong(&format!(
                    "one of {}",
                    e.names().collect::<Vec<_>>().join(", ")
                ));
            }
        },
        Type::Flags(flags) => flags_val(flags, value, at)?,
        Type::Option(option) => match value {
            Value::Null => Val::Option(None),
            v => Val::Option(Some(Box::new(to_val(&option.ty(), v, at)?))),
        },
        Type::Result(result) => result_val(result, value, at)?,
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            return Err(format!("`{at}` has a type JSON cannot carry"));
        }
    })
}

fn variant_val(
    variant: &wasmtime::component::types::Variant,
    value: &Value,
    at: &str,
) -> Result<Val, String> {
    let (name, payload) = tagged(value).ok_or_else(|| {
        let names: Vec<&str> = variant.cases().map(|c| c.name).collect();
        format!(
            "`{at}` must be one of {} (a case with a value as {{\"case\": value}}), not {}",
            names.join(", "),
            brief(value)
        )
    })?;
    let case = variant.cases().find(|c| c.name == name).ok_or_else(|| {
        let names: Vec<&str> = variant.cases().map(|c| c.name).collect();
        format!("`{at}`: `{name}` is not one of {}", names.join(", "))
    })?;
    let payload = match (&case.ty, payload) {
        (None, None) => None,
        (Some(ty), Some(v)) => Some(Box::new(to_val(ty, v, &format!("{at}.{name}"))?)),
        (None, Some(_)) => return Err(format!("`{at}`: `{name}` takes no value")),
        (Some(_), None) => {
            return Err(format!("`{at}`: `{name}` needs a value: {{\"{name}\": …}}"));
        }
    };
    Ok(Val::Variant(name.to_owned(), payload))
}

fn flags_val(
    flags: &wasmtime::component::types::Flags,
    value: &Value,
    at: &str,
) -> Result<Val, String> {
    let wrong = |expected: &str| Err(format!("`{at}` must be {expected}, not {}", brief(value)));
    let names: Vec<&str> = flags.names().collect();
    let Some(items) = value.as_array() else {
        return wrong(&format!("an array of some of {}", names.join(", ")));
    };
    let mut set = Vec::new();
    for item in items {
        match item.as_str().filter(|s| names.contains(s)) {
            Some(name) if !set.iter().any(|s| s == name) => set.push(name.to_owned()),
            Some(name) => return Err(format!("`{at}` names `{name}` twice")),
            None => return wrong(&format!("an array of some of {}", names.join(", "))),
        }
    }
    Ok(Val::Flags(set))
}

fn result_val(
    result: &wasmtime::component::types::ResultType,
    value: &Value,
    at: &str,
) -> Result<Val, String> {
    let side = |ty: Option<Type>, v: Option<&Value>, name: &str| match (ty, v) {
        (Some(ty), Some(v)) => Ok(Some(Box::new(to_val(&ty, v, &format!("{at}.{name}"))?))),
        (None, None | Some(Value::Null)) => Ok(None),
        _ => Err(format!("`{at}.{name}` does not fit the result's type")),
    };
    match tagged(value) {
        Some(("ok", v)) => Ok(Val::Result(Ok(side(result.ok(), v, "ok")?))),
        Some(("err", v)) => Ok(Val::Result(Err(side(result.err(), v, "err")?))),
        _ => Err(format!(
            "`{at}` must be {{\"ok\": …}} or {{\"err\": …}}, not {}",
            brief(value)
        )),
    }
}

fn elements(ty: &Type, value: &Value, at: &str, len: Option<usize>) -> Result<Vec<Val>, String> {
    let Some(items) = value
        .as_array()
        .filter(|a| len.is_none_or(|n| a.len() == n))
    else {
        let what = len.map_or_else(
            || "an array".to_owned(),
            |n| format!("an array of {n} items"),
        );
        return Err(format!("`{at}` must be {what}, not {}", brief(value)));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| to_val(ty, v, &format!("{at}[{i}]")))
        .collect()
}

fn record_val(
    record: &wasmtime::component::types::Record,
    value: &Value,
    at: &str,
) -> Result<Val, String> {
    let Some(object) = value.as_object() else {
        return Err(format!("`{at}` must be an object, not {}", brief(value)));
    };
    let fields: Vec<_> = record.fields().collect();
    if let Some(extra) = object
        .keys()
        .find(|k| !fields.iter().any(|f| f.name == k.as_str()))
    {
        let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
        return Err(format!(
            "`{at}` has no field `{extra}` (its fields: {})",
            names.join(", ")
        ));
    }
    let vals = fields.iter().map(|field| {
        let here = format!("{at}.{}", field.name);
        match (object.get(field.name), &field.ty) {
            (Some(v), ty) => Ok((field.name.to_owned(), to_val(ty, v, &here)?)),
            (None, Type::Option(_)) => Ok((field.name.to_owned(), Val::Option(None))),
            (None, _) => Err(format!("`{here}` is missing")),
        }
    });
    Ok(Val::Record(vals.collect::<Result<_, String>>()?))
}

/// A variant case as JSON: `"name"`, or `{"name": payload}`.
fn tagged(value: &Value) -> Option<(&str, Option<&Value>)> {
    match value {
        Value::String(name) => Some((name, None)),
        Value::Object(map) if map.len() == 1 => {
            map.iter().next().map(|(name, v)| (name.as_str(), Some(v)))
        }
        _ => None,
    }
}

/// A short account of a JSON value, for an error.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

/// A component value as JSON, by the rules above.
pub(crate) fn to_json(val: &Val) -> Value {
    match val {
        Val::Bool(b) => json!(b),
        Val::S8(n) => json!(n),
        Val::U8(n) => json!(n),
        Val::S16(n) => json!(n),
        Val::U16(n) => json!(n),
        Val::S32(n) => json!(n),
        Val::U32(n) => json!(n),
        Val::S64(n) => json!(n),
        Val::U64(n) => json!(n),
        Val::Float32(f) => json!(f),
        Val::Float64(f) => json!(f),
        Val::Char(c) => json!(c.to_string()),
        Val::String(s) => json!(s),
        Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => {
            Value::Array(items.iter().map(to_json).collect())
        }
        Val::Map(pairs) => Value::Object(
            pairs
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Val::String(s) => s.clone(),
                        other => to_json(other).to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Val::Record(fields) => Value::Object(
            fields
                .iter()
                .map(|(name, v)| (name.clone(), to_json(v)))
                .collect(),
        ),
        Val::Variant(name, None) | Val::Enum(name) => json!(name),
        Val::Variant(name, Some(payload)) => json!({ name: to_json(payload) }),
        Val::Flags(names) => json!(names),
        Val::Option(None) => Value::Null,
        Val::Option(Some(v)) => to_json(v),
        Val::Result(Ok(v)) => json!({"ok": v.as_deref().map_or(Value::Null, to_json)}),
        Val::Result(Err(v)) => json!({"err": v.as_deref().map_or(Value::Null, to_json)}),
        Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => {
            json!("(a handle)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::component::types::ComponentItem;

    /// The first parameter type of the function `f` a component imports,
    /// whose type is `depth` nested pairs: `tuple<tuple<…u8, u8…>, …>`.
    fn nested_pairs(depth: u32) -> Type {
        use wasm_encoder::{
            ComponentImportSection, ComponentTypeRef, ComponentTypeSection, ComponentValType,
            PrimitiveValType,
        };
        let mut types = ComponentTypeSection::new();
        let mut inner = ComponentValType::Primitive(PrimitiveValType::U8);
        for index in 0..depth {
            types.defined_type().tuple([inner, inner]);
            inner = ComponentValType::Type(index);
        }
        types.function().params([("x", inner)]).result(None);
        let mut imports = ComponentImportSection::new();
        imports.import("f", ComponentTypeRef::Func(depth));
        let mut component = wasm_encoder::Component::new();
        component.section(&types).section(&imports);
        let engine = wasmtime::Engine::default();
        let component =
            wasmtime::component::Component::new(&engine, component.finish()).expect("valid");
        let component_type = component.component_type();
        let (_, item) = component_type.imports(&engine).next().expect("an import");
        let ComponentItem::ComponentFunc(func) = item.ty else {
            panic!("not a function");
        };
        func.params().next().expect("a parameter").1
    }

    // A type written out in full would be millions of nodes (shared types
    // are repeated wherever used): refused, not described.
    #[test]
    fn a_type_too_large_to_write_out_is_refused() {
        let small = schema_of(&nested_pairs(3)).expect("a small type is described");
        assert_eq!(small["type"], "array");
        // 2^17 nodes: within what wasmtime accepts (10^6), over the budget.
        let err = schema_of(&nested_pairs(16)).expect_err("2^17 nodes");
        assert!(err.contains("too large to describe"), "{err}");
    }
}
