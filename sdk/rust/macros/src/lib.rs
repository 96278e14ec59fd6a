//! `#[tool]`: a toolhost tool from one function. Re-exported by
//! `toolhost-sdk` as `toolhost_sdk::tool`; see its documentation there.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::{ToTokens, format_ident, quote};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, FnArg, ItemFn, LitStr, Meta, Pat, Token, Type};

/// Declare the function as the crate's tool: the function's parameters are
/// its arguments (a `&Context` parameter gets the call's context), its doc
/// comment the description, and a `# Arguments` list of the doc
/// (`` * `name` - what it is ``) the arguments' descriptions. With no
/// heading, a list that ends the doc and describes only parameters is
/// taken the same way.
///
/// Options: `capabilities = [WorkspaceRead, Commands, ...]` (variants of
/// `Capability`, or any expression of that type), `output = Type` (the
/// structured result's type, for the output schema), `sensitive`,
/// `idempotent`, `title = "..."`, `name = "..."` (default: the function's
/// name).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

/// What `#[tool(...)]` says.
#[derive(Default)]
struct Options {
    capabilities: Vec<Expr>,
    output: Option<Type>,
    sensitive: bool,
    idempotent: bool,
    title: Option<LitStr>,
    name: Option<LitStr>,
}

fn options(attr: proc_macro2::TokenStream) -> syn::Result<Options> {
    let mut out = Options::default();
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr)?;
    for meta in metas {
        let key = meta
            .path()
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match (key.as_str(), &meta) {
            ("sensitive", Meta::Path(_)) => out.sensitive = true,
            ("idempotent", Meta::Path(_)) => out.idempotent = true,
            ("capabilities", Meta::NameValue(nv)) => {
                let Expr::Array(list) = &nv.value else {
                    return Err(syn::Error::new_spanned(
                        &nv.value,
                        "capabilities = [WorkspaceRead, ...]",
                    ));
                };
                out.capabilities = list.elems.iter().map(capability).collect();
            }
            ("output", Meta::NameValue(nv)) => {
                out.output = Some(syn::parse2(nv.value.to_token_stream())?);
            }
            ("title", Meta::NameValue(nv)) => out.title = Some(string(&nv.value)?),
            ("name", Meta::NameValue(nv)) => out.name = Some(string(&nv.value)?),
            _ => {
                return Err(syn::Error::new_spanned(
                    &meta,
                    "unknown option; use capabilities = [...], output = Type, sensitive, idempotent, \
                     title = \"...\" or name = \"...\"",
                ));
            }
        }
    }
    Ok(out)
}

/// `WorkspaceRead` → `::toolhost_sdk::Capability::WorkspaceRead`; any
/// other expression as it is.
fn capability(expr: &Expr) -> Expr {
    if let Expr::Path(path) = expr
        && let Some(ident) = path.path.get_ident()
    {
        return syn::parse_quote!(::toolhost_sdk::Capability::#ident);
    }
    expr.clone()
}

fn string(expr: &Expr) -> syn::Result<LitStr> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Ok(s.clone()),
        other => Err(syn::Error::new_spanned(other, "expected a string literal")),
    }
}

/// The doc comment's text, line by line.
fn doc_lines(attrs: &[syn::Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => string(&nv.value).ok().map(|s| s.value()),
            _ => None,
        })
        .flat_map(|text| {
            text.lines()
                .map(|line| line.strip_prefix(' ').unwrap_or(line).to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The description and each argument's description, from a list
/// (`` * `name` - text `` or `` - `name`: text ``, continued on the next
/// lines) under a `# Arguments` heading or, with no heading, from a list
/// that ends the doc and describes only parameters, each with a text.
fn split_doc(lines: &[String], params: &[String]) -> (String, Vec<(String, String)>) {
    let heading = lines.iter().position(|l| {
        let t = l.trim();
        t.starts_with('#')
            && t.trim_start_matches('#')
                .trim()
                .eq_ignore_ascii_case("arguments")
    });
    let arguments = |(name, text): &(String, String)| params.contains(name) && !text.is_empty();
    let (end, described) = match heading {
        Some(at) => (at, items(&lines[at + 1..])),
        None => {
            let at = trailing_list(lines);
            let described = items(&lines[at..]);
            if described.iter().all(arguments) {
                (at, described)
            } else {
                (lines.len(), Vec::new())
            }
        }
    };
    let head = lines[..end].join("\n").trim().to_owned();
    (head, described)
}

/// `` * `name` - text `` or `` - `name`: text ``: the name and the text.
fn item(line: &str) -> Option<(&str, &str)> {
    let t = line.trim();
    let item = t.strip_prefix("* ").or_else(|| t.strip_prefix("- "))?;
    let (name, text) = item.strip_prefix('`')?.split_once('`')?;
    Some((
        name,
        text.trim_start().trim_start_matches(['-', ':']).trim(),
    ))
}

/// Where the list that ends the doc starts (`lines.len()` if it ends
/// otherwise): its items, and the lines that continue an item (any line
/// of an item's paragraph after it).
fn trailing_list(lines: &[String]) -> usize {
    let mut start = lines.len();
    for (i, line) in lines.iter().enumerate().rev() {
        let blank = line.trim().is_empty();
        let continues = || {
            let mut paragraph = lines[..i].iter().rev().take_while(|l| !l.trim().is_empty());
            paragraph.any(|l| item(l).is_some())
        };
        if item(line).is_some() {
            start = i;
        } else if !blank && !continues() {
            break;
        }
    }
    start
}

/// The arguments a list describes, up to the next heading.
fn items(lines: &[String]) -> Vec<(String, String)> {
    let mut described: Vec<(String, String)> = Vec::new();
    for line in lines {
        let t = line.trim();
        if t.starts_with('#') {
            break;
        }
        if let Some((name, text)) = item(line) {
            described.push((name.to_owned(), text.to_owned()));
        } else if let Some(last) = described.last_mut()
            && !t.is_empty()
        {
            last.1 = format!("{} {t}", last.1).trim().to_owned();
        }
    }
    described
}

/// `count_words` → `CountWords`.
fn camel(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
        })
        .collect()
}

/// True for `&Context` (any path ending in `Context`).
fn is_context(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if matches!(&*r.elem, Type::Path(p)
        if p.path.segments.last().is_some_and(|s| s.ident == "Context")))
}

/// The names of the function's parameters that are arguments (not a
/// `&Context`; a pattern other than a name is refused later, by
/// `fields_and_call`).
fn param_names(function: &ItemFn) -> Vec<String> {
    let typed = function.sig.inputs.iter().filter_map(|input| match input {
        FnArg::Typed(typed) if !is_context(&typed.ty) => Some(&*typed.pat),
        _ => None,
    });
    typed
        .filter_map(|pat| match pat {
            Pat::Ident(ident) => Some(ident.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// The Args struct's fields (each parameter but a `&Context`, with its
/// line of the doc's `# Arguments`), and the arguments of the call to the
/// function. A documented name that is no parameter is an error.
fn fields_and_call(
    function: &ItemFn,
    described: &[(String, String)],
) -> syn::Result<(Vec<proc_macro2::TokenStream>, Vec<proc_macro2::TokenStream>)> {
    let fn_name = &function.sig.ident;
    let mut fields = Vec::new();
    let mut call_args = Vec::new();
    let mut params = Vec::new();
    for input in &function.sig.inputs {
        let FnArg::Typed(typed) = input else {
            return Err(syn::Error::new_spanned(
                input,
                "#[tool] goes on a free function, not a method",
            ));
        };
        if is_context(&typed.ty) {
            call_args.push(quote!(ctx));
            continue;
        }
        let Pat::Ident(ident) = &*typed.pat else {
            return Err(syn::Error::new_spanned(
                &typed.pat,
                "name the argument: `path: String`",
            ));
        };
        let arg = &ident.ident;
        let arg_name = arg.to_string();
        let ty = &typed.ty;
        let doc = described
            .iter()
            .find(|(n, _)| *n == arg_name)
            .map(|(_, d)| quote!(#[doc = #d]));
        fields.push(quote!(#doc pub #arg: #ty));
        params.push(arg_name);
        call_args.push(quote!(args.#arg));
    }
    for (i, (documented, _)) in described.iter().enumerate() {
        if !params.contains(documented) {
            return Err(syn::Error::new_spanned(
                fn_name,
                format!("the doc's `# Arguments` names `{documented}`, which is not a parameter"),
            ));
        }
        if described[..i].iter().any(|(name, _)| name == documented) {
            return Err(syn::Error::new_spanned(
                fn_name,
                format!("the doc describes the argument `{documented}` twice: keep one"),
            ));
        }
    }
    Ok((fields, call_args))
}

fn expand(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> syn::Result<proc_macro2::TokenStream> {
    let options = options(attr)?;
    let function: ItemFn = syn::parse2(item)?;
    let fn_name = &function.sig.ident;
    let name = options
        .name
        .clone()
        .unwrap_or_else(|| LitStr::new(&fn_name.to_string(), fn_name.span()));
    let params = param_names(&function);
    let (description, described) = split_doc(&doc_lines(&function.attrs), &params);
    if description.is_empty() {
        return Err(syn::Error::new_spanned(
            fn_name,
            "#[tool] takes the tool's description from the function's doc comment: add one",
        ));
    }
    let (fields, call_args) = fields_and_call(&function, &described)?;
    let tool_type = format_ident!("{}", camel(&fn_name.to_string()), span = Span::call_site());
    let args_type = format_ident!("{}Args", tool_type);
    let capabilities = &options.capabilities;
    let output_schema = options.output.as_ref().map(|ty| {
        quote! {
            fn output_schema() -> ::core::option::Option<::toolhost_sdk::Value> {
                ::core::option::Option::Some(::toolhost_sdk::json_schema::<#ty>())
            }
        }
    });
    let title = options.title.as_ref().map_or_else(
        || quote!(::core::option::Option::None),
        |t| quote!(::core::option::Option::Some(#t)),
    );
    let (sensitive, idempotent) = (options.sensitive, options.idempotent);
    let doc = format!("The arguments of `{}`.", name.value());
    let tool_doc = format!(
        "The tool `{}` (made by `#[tool]` from the function `{fn_name}`).",
        name.value()
    );
    Ok(quote! {
        #function

        #[doc = #doc]
        #[derive(::toolhost_sdk::Deserialize, ::toolhost_sdk::JsonSchema)]
        #[serde(crate = "::toolhost_sdk::serde", deny_unknown_fields)]
        #[schemars(crate = "::toolhost_sdk::schemars")]
        pub struct #args_type {
            #(#fields,)*
        }

        #[doc = #tool_doc]
        pub struct #tool_type;

        impl ::toolhost_sdk::Tool for #tool_type {
            type Args = #args_type;
            const NAME: &'static str = #name;
            const DESCRIPTION: &'static str = #description;
            const TITLE: ::core::option::Option<&'static str> = #title;
            const SENSITIVE: bool = #sensitive;
            const IDEMPOTENT: bool = #idempotent;

            fn capabilities() -> ::std::vec::Vec<::toolhost_sdk::Capability> {
                ::std::vec![#(#capabilities),*]
            }

            #output_schema

            fn call(
                args: Self::Args,
                ctx: &::toolhost_sdk::Context,
            ) -> ::core::result::Result<::toolhost_sdk::Output, ::toolhost_sdk::ToolError> {
                let _ = &ctx;
                #fn_name(#(#call_args),*)
            }
        }

        ::toolhost_sdk::export_tool!(#tool_type);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn the_doc_gives_the_description_and_each_arguments() {
        let params = ["path".to_owned(), "limit".to_owned()];
        let (head, args) = split_doc(
            &lines(
                "Count words.\n\nIn a file.\n\n# Arguments\n\n* `path` - The file,\n  relative.\n- `limit`: At most.\n\n# Errors\n* `x` - no",
            ),
            &params,
        );
        assert_eq!(head, "Count words.\n\nIn a file.");
        assert_eq!(
            args,
            vec![
                ("path".to_owned(), "The file, relative.".to_owned()),
                ("limit".to_owned(), "At most.".to_owned())
            ]
        );
        assert_eq!(
            split_doc(&lines("Only text."), &params),
            ("Only text.".to_owned(), vec![])
        );
        // No heading: a list that ends the doc and names only parameters.
        let short = "Count words.\n* `path` - The file,\n  relative.\n\n- `limit`: At most.\n";
        assert_eq!(
            split_doc(&lines(short), &params),
            ("Count words.".to_owned(), args.clone())
        );
        // An item's paragraph continues it, indented or not.
        let flat = "Count words.\n* `path` - The file,\nrelative.\n* `limit` - At most.";
        assert_eq!(
            split_doc(&lines(flat), &params),
            ("Count words.".to_owned(), args)
        );
        // A list that names something else, does not end the doc, or
        // names parameters without describing them is the description's.
        for text in [
            "Count words.\n* `path` - The file.\n* `x` - no.",
            "Count words.\n* `path` - The file.\n\nMore.",
            "Exactly one of:\n- `path`\n- `limit`",
        ] {
            assert_eq!(split_doc(&lines(text), &params), (text.to_owned(), vec![]));
        }
    }

    #[test]
    fn names_and_options() {
        assert_eq!(camel("count_words"), "CountWords");
        let o = options(quote!(
            capabilities = [WorkspaceRead, Capability::Commands],
            output = Counts,
            idempotent,
            title = "Count"
        ))
        .unwrap();
        assert_eq!(o.capabilities.len(), 2);
        assert!(o.idempotent && !o.sensitive && o.output.is_some());
        let first = &o.capabilities[0];
        assert_eq!(
            quote!(#first).to_string().replace(' ', ""),
            "::toolhost_sdk::Capability::WorkspaceRead"
        );
        let err = options(quote!(colour = "red")).err().unwrap();
        assert!(err.to_string().contains("unknown option"));
    }

    /// What `#[tool]` says of `function`: `None` if it expands.
    fn refusal(function: proc_macro2::TokenStream) -> Option<String> {
        expand(quote!(), function).err().map(|e| e.to_string())
    }

    #[test]
    fn what_cannot_be_a_tool_is_refused_with_what_to_do() {
        assert_eq!(
            refusal(quote!(
                #[doc = "D."]
                fn f(path: String) -> R {
                    x()
                }
            )),
            None
        );
        let cases = [
            (
                quote!(
                    fn f(path: String) -> R {
                        x()
                    }
                ),
                "from the function's doc comment",
            ),
            (
                quote!(
                    #[doc = "D.\n# Arguments\n* `pth` - x"]
                    fn f(path: String) -> R {
                        x()
                    }
                ),
                "names `pth`",
            ),
            (
                quote!(
                    #[doc = "D."]
                    fn f(&self) -> R {
                        x()
                    }
                ),
                "not a method",
            ),
            (
                quote!(
                    #[doc = "D."]
                    fn f((a, b): (u8, u8)) -> R {
                        x()
                    }
                ),
                "name the argument",
            ),
        ];
        for (function, said) in cases {
            let refused = refusal(function).unwrap_or_default();
            assert!(refused.contains(said), "{refused}");
        }
    }

    /// A list ending the doc, with no heading, describes the arguments
    /// in the input schema (the fields' docs), not the tool; a `&Context`
    /// is no argument to describe, and an argument described twice is
    /// refused.
    #[test]
    fn a_list_ending_the_doc_describes_the_arguments() {
        let expanded = |function: proc_macro2::TokenStream| {
            expand(quote!(), function)
                .map(|t| t.to_string())
                .map_err(|e| e.to_string())
        };
        let made = expanded(quote!(
            #[doc = "Count words."]
            #[doc = "* `path` - The file."]
            fn f(ctx: &Context, path: String) -> R {
                x()
            }
        ))
        .unwrap();
        assert!(made.contains("# [doc = \"The file.\"] pub path"), "{made}");
        assert!(
            made.contains("DESCRIPTION : & 'static str = \"Count words.\""),
            "{made}"
        );
        let context = expanded(quote!(
            #[doc = "Count words.\n* `ctx` - The call."]
            fn f(ctx: &Context, path: String) -> R {
                x()
            }
        ))
        .unwrap();
        assert!(
            context.contains("\"Count words.\\n* `ctx` - The call.\""),
            "{context}"
        );
        let twice = expanded(quote!(
            #[doc = "D.\n# Arguments\n* `path` - x\n* `path` - y"]
            fn f(path: String) -> R {
                x()
            }
        ));
        assert!(twice.unwrap_err().contains("`path` twice"));
    }
}
