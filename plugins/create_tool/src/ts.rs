//! A typescript tool's script made JavaScript when it is created: oxc's
//! parser reads it as TypeScript, its transformer removes the types (and
//! turns enums, namespaces and parameter properties into the JavaScript
//! they mean), and its code generator prints what is left. That JavaScript
//! is what the reviewer approves and the js_runtime runs; the TypeScript is
//! kept beside it for the review. Nothing is type-checked: a type error
//! runs as the JavaScript it amounts to, as with `tsc --noCheck`.

use oxc_allocator::Allocator;
use oxc_codegen::Codegen;
use oxc_parser::Parser;
use oxc_semantic::SemanticBuilder;
use oxc_span::SourceType;
use oxc_transformer::{TransformOptions, Transformer};
use std::path::Path;
use toolhost_sdk::ToolError;

/// The JavaScript `script` (TypeScript) amounts to, or why it is not
/// TypeScript that can run, with the line of each problem.
pub(crate) fn strip(script: &str) -> Result<String, ToolError> {
    let allocator = Allocator::default();
    let source_type = SourceType::ts().with_script(true);
    let parsed = Parser::new(&allocator, script, source_type).parse();
    if parsed.panicked || !parsed.diagnostics.is_empty() {
        return Err(refused(script, parsed.diagnostics.into_vec()));
    }
    let mut program = parsed.program;
    // The checks a compiler makes (`let` declared twice, `break` outside a
    // loop), and enum values worked out, which the transformer needs.
    let semantic = SemanticBuilder::new_compiler()
        .with_enum_eval(true)
        .build(&program);
    if semantic.diagnostics.has_errors() {
        let errors = semantic.diagnostics.errors().cloned().collect();
        return Err(refused(script, errors));
    }
    let scoping = semantic.semantic.into_scoping();
    let transformed = Transformer::new(
        &allocator,
        Path::new("tool.ts"),
        &TransformOptions::default(),
    )
    .build_with_scoping(scoping, &mut program);
    if transformed.diagnostics.has_errors() {
        let errors = transformed.diagnostics.errors().cloned().collect();
        return Err(refused(script, errors));
    }
    Ok(Codegen::new().build(&program).code)
}

/// The refusal naming each problem (at most five) with its line.
fn refused(script: &str, problems: Vec<oxc_diagnostics::OxcDiagnostic>) -> ToolError {
    let mut said: Vec<String> = problems
        .iter()
        .take(5)
        .map(|problem| {
            // Where it is (a redeclaration also points at the first one).
            let at = problem
                .labels
                .iter()
                .find(|label| label.primary())
                .or_else(|| problem.labels.last())
                .map(|label| line_of(script, label.offset() as usize));
            match at {
                Some(line) => format!("line {line}: {}", problem.message),
                None => problem.message.to_string(),
            }
        })
        .collect();
    if said.is_empty() {
        said.push("the parser gave up".to_owned());
    }
    ToolError::invalid_input(format!(
        "the script is not valid TypeScript: {}. Fix it and send it again",
        said.join("; ")
    ))
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_go_and_what_they_mean_stays() {
        let js = strip(
            "interface Args { text: string; limit?: number }\n\
             type Pair<T> = [T, T];\n\
             enum Mode { Short, Long }\n\
             function first<T>(items: T[]): T | undefined { return items[0]; }\n\
             class Counter {\n  constructor(private readonly step: number) {}\n  \
             next(n: number): number { return n + this.step; }\n}\n\
             function run(args: Args, ctx: unknown): { words: number } {\n  \
             const words = args.text.split(/\\s+/) as string[];\n  \
             const pair: Pair<number> = [1, 2];\n  \
             return { words: new Counter(words.length).next(0) + Mode.Long + first(pair)! };\n}\n",
        )
        .unwrap();
        for gone in ["interface", ": string", "<T>", " as ", "private", "Pair<"] {
            assert!(!js.contains(gone), "{gone} left in:\n{js}");
        }
        assert!(js.contains("function run(args, ctx)"), "{js}");
        assert!(js.contains("Mode[Mode[\"Long\"] = 1]"), "{js}");
        assert!(js.contains("this.step = step"), "{js}");
    }

    #[test]
    fn a_syntax_error_is_refused_with_its_line() {
        let err = strip("let a = 1;\nlet a = 2;\n").unwrap_err().to_string();
        assert!(err.contains("line 2:"), "{err}");
        let err = strip("function run(args: Args) {\n  const x: number = ;\n  return x;\n}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2:"), "{err}");
        assert!(err.contains("not valid TypeScript"), "{err}");
        assert_eq!(line_of("a\nb\nc", 4), 3);
        assert_eq!(line_of("a", 99), 1);
    }
}
