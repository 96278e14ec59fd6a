//! Read a shell command line the way a shell would, to know every command it
//! would run: brush-parser (a bash parser) builds the syntax tree, and this
//! module walks all of it — lists, pipelines, subshells, groups, `if`/`for`/
//! `while`/`case`, functions, command and process substitutions, here-docs —
//! into a flat list of [`Invocation`]s with their words unquoted.
//!
//! Anything it cannot account for fails closed: a parse error, a
//! coprocess, or a substitution hidden where it cannot be followed (inside
//! a parameter expansion or arithmetic) is an error, never a pass.

use brush_parser::ast;
use brush_parser::word::{WordPiece, WordPieceWithSource};
mod arithmetic;
mod hazards;
use arithmetic::*;
use hazards::*;

/// One word of a command, after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    /// Known text.
    Lit(String),
    /// Depends on a variable or a substitution: only known when run. The
    /// text is the word as written.
    Dyn(String),
}

impl Arg {
    /// The text, if known.
    pub(crate) fn lit(&self) -> Option<&str> {
        match self {
            Self::Lit(s) => Some(s),
            Self::Dyn(_) => None,
        }
    }

    /// The text as written (known or not), for messages.
    pub(crate) fn shown(&self) -> &str {
        match self {
            Self::Lit(s) | Self::Dyn(s) => s,
        }
    }
}

/// One command the line would run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Invocation {
    /// The words: program first (empty for a bare assignment or redirect).
    pub argv: Vec<Arg>,
    /// Files it writes to through redirections (`>`, `>>`, `>|`, `<>`).
    pub writes_to: Vec<Arg>,
    /// Text fed to its stdin by here-documents and here-strings.
    pub stdin: Vec<Arg>,
    /// Variables it assigns (`X=1 cmd`, or a bare `X=1`), with their values.
    pub assigns: Vec<(String, Arg)>,
    /// The pipeline elements it runs within, outermost first: (pipeline
    /// id, place in it). `(curl x) | sh` puts `curl` at place 0 of the
    /// same pipeline as `sh`, through the subshell.
    pub pipes: Vec<(usize, usize)>,
    /// The invocation whose words contain this one (a command or process
    /// substitution), if any.
    pub inside: Option<usize>,
}

/// A command line, understood.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Script {
    pub invocations: Vec<Invocation>,
    /// Functions that call themselves, directly or through other functions
    /// (`:(){ :|:& };:`).
    pub recursive_functions: Vec<String>,
    /// Variables set other than by an assignment word: `for NAME in`,
    /// `${NAME:=…}`, `(( NAME = … ))`.
    pub sets: Vec<String>,
    /// Arithmetic bash evaluates over values known only at run time
    /// (`$((n))`, `let`, `[[ $a -eq 1 ]]`, `${s:i}`, `a[$i]=`), as
    /// written: a value read at run time there can run commands
    /// (`a[$(cmd)]`), so the line is at least dev.
    pub arithmetic: Vec<String>,
}

/// How deep substitutions may nest before the line is refused.
const MAX_DEPTH: usize = 16;

/// Understand `line`; the error says what could not be understood.
pub(crate) fn analyze(line: &str) -> Result<Script, String> {
    let mut walker = Walker::default();
    walker.line(line, None, 0)?;
    walker.script.recursive_functions = call_cycles(&walker.functions);
    Ok(walker.script)
}

/// Functions on a cycle of calls among the defined functions.
fn call_cycles(functions: &[(String, Vec<String>)]) -> Vec<String> {
    let calls = |name: &str| -> Vec<&str> {
        functions
            .iter()
            .filter(|(f, _)| f == name)
            .flat_map(|(_, callees)| callees.iter().map(String::as_str))
            .filter(|c| functions.iter().any(|(f, _)| f == c))
            .collect()
    };
    let mut cyclic = Vec::new();
    for (start, _) in functions {
        // Can `start` reach itself?
        let mut seen: Vec<&str> = Vec::new();
        let mut todo = calls(start);
        while let Some(f) = todo.pop() {
            if f == start {
                if !cyclic.contains(start) {
                    cyclic.push(start.clone());
                }
                break;
            }
            if !seen.contains(&f) {
                seen.push(f);
                todo.extend(calls(f));
            }
        }
    }
    cyclic
}

#[derive(Default)]
struct Walker {
    script: Script,
    pipelines: usize,
    /// The pipeline elements being walked, outermost first.
    pipes: Vec<(usize, usize)>,
    /// Each function defined, with the programs its body runs.
    functions: Vec<(String, Vec<String>)>,
}

fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions::default()
}

impl Walker {
    fn line(&mut self, line: &str, inside: Option<usize>, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("substitutions nest too deeply to check".to_owned());
        }
        if let Some(why) = parser_hazard(line) {
            return Err(why);
        }
        // The parser unwraps some of its own parses: a panic it has not
        // been kept from (above) refuses the line instead of ending the call.
        let parsed = std::panic::catch_unwind(|| {
            brush_parser::Parser::new(std::io::BufReader::new(line.as_bytes()), &options())
                .parse_program()
                .map_err(|e| e.to_string())
        })
        .unwrap_or_else(|_| Err("the parser failed on it".to_owned()));
        let program =
            parsed.map_err(|e| format!("it is not a command line toolhost can parse ({e})"))?;
        for list in &program.complete_commands {
            self.list(list, inside, depth)?;
        }
        Ok(())
    }

    fn list(
        &mut self,
        list: &ast::CompoundList,
        inside: Option<usize>,
        depth: usize,
    ) -> Result<(), String> {
        for ast::CompoundListItem(and_or, _separator) in &list.0 {
            self.pipeline(&and_or.first, inside, depth)?;
            for next in &and_or.additional {
                let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
                self.pipeline(p, inside, depth)?;
            }
        }
        Ok(())
    }

    fn pipeline(
        &mut self,
        pipeline: &ast::Pipeline,
        inside: Option<usize>,
        depth: usize,
    ) -> Result<(), String> {
        let id = self.pipelines;
        self.pipelines += 1;
        for (position, command) in pipeline.seq.iter().enumerate() {
            self.pipes.push((id, position));
            let walked = self.command(command, inside, depth);
            self.pipes.pop();
            walked?;
        }
        Ok(())
    }

    fn command(
        &mut self,
        command: &ast::Command,
        inside: Option<usize>,
        depth: usize,
    ) -> Result<(), String> {
        match command {
            ast::Command::Simple(simple) => self.simple(simple, inside, depth),
            ast::Command::Compound(compound, redirects) => {
                self.redirects(redirects.as_ref(), inside, depth)?;
                self.compound(compound, inside, depth)
            }
            ast::Command::Function(def) => {
                let before = self.script.invocations.len();
                self.compound(&def.body.0, inside, depth)?;
                // `f() { …; } > file` applies the redirect at every call.
                self.redirects(def.body.1.as_ref(), inside, depth)?;
                let callees = self.script.invocations[before..]
                    .iter()
                    .filter_map(|i| i.argv.first().and_then(Arg::lit).map(str::to_owned))
                    .collect();
                self.functions.push((def.fname.value.clone(), callees));
                Ok(())
            }
            ast::Command::ExtendedTest(test, _) => {
                let text = test.to_string();
                let compares = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"]
                    .iter()
                    .any(|op| text.split_whitespace().any(|w| w == *op));
                if compares
                    && (text.contains('$') || !names_in(&text.replace(['-'], " ")).is_empty())
                {
                    self.script.arithmetic.push(format!("[[ {text} ]]"));
                }
                forbid_hidden_commands(&text, "a [[ ]] test")
            }
        }
    }

    /// Redirects of a compound command or function, as a command of their own.
    fn redirects(
        &mut self,
        redirects: Option<&ast::RedirectList>,
        inside: Option<usize>,
        depth: usize,
    ) -> Result<(), String> {
        if let Some(redirects) = redirects {
            let me = self.push(Vec::new(), inside);
            for r in &redirects.0 {
                self.redirect(r, me, depth)?;
            }
        }
        Ok(())
    }

    fn compound(
        &mut self,
        compound: &ast::CompoundCommand,
        inside: Option<usize>,
        depth: usize,
    ) -> Result<(), String> {
        use ast::CompoundCommand as C;
        match compound {
            C::BraceGroup(g) => self.list(&g.list, inside, depth),
            C::Subshell(s) => self.list(&s.list, inside, depth),
            C::IfClause(c) => {
                self.list(&c.condition, inside, depth)?;
                self.list(&c.then, inside, depth)?;
                for e in c.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond, inside, depth)?;
                    }
                    self.list(&e.body, inside, depth)?;
                }
                Ok(())
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0, inside, depth)?;
                self.list(&w.1.list, inside, depth)
            }
            C::ForClause(f) => {
                self.script.sets.push(f.variable_name.clone());
                for word in f.values.iter().flatten() {
                    // The values are words of no command: only their
                    // substitutions matter.
                    self.word(word, None, depth)?;
                }
                self.list(&f.body.list, inside, depth)
            }
            C::CaseClause(c) => {
                self.word(&c.value, None, depth)?;
                for item in &c.cases {
                    for pattern in &item.patterns {
                        self.word(pattern, None, depth)?;
                    }
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd, inside, depth)?;
                    }
                }
                Ok(())
            }
            C::Arithmetic(a) => {
                self.evaluates(&a.expr.value, || format!("(( {} ))", a.expr.value));
                self.script.sets.extend(arithmetic_sets(&a.expr.value));
                forbid_hidden_commands(&a.expr.value, "an arithmetic command")
            }
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.evaluates(&e.value, || format!("for (( {} ))", e.value));
                    self.script.sets.extend(arithmetic_sets(&e.value));
                    forbid_hidden_commands(&e.value, "an arithmetic for loop")?;
                }
                self.list(&f.body.list, inside, depth)
            }
            C::Coprocess(_) => Err("coprocesses are not supported".to_owned()),
        }
    }

    /// Note the arithmetic `expr` if it reads a variable.
    fn evaluates(&mut self, expr: &str, shown: impl FnOnce() -> String) {
        if expr.contains('$') || !names_in(expr).is_empty() {
            self.script.arithmetic.push(shown());
        }
    }

    fn push(&mut self, argv: Vec<Arg>, inside: Option<usize>) -> usize {
        self.script.invocations.push(Invocation {
            argv,
            pipes: self.pipes.clone(),
            inside,
            ..Invocation::default()
        });
        self.script.invocations.len() - 1
    }

    fn simple(
        &mut self,
        simple: &ast::SimpleCommand,
        inside: Option<usize>,
        depth: usize,
    ) -> Result<(), String> {
        let me = self.push(Vec::new(), inside);
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, me, depth)?;
        }
        if let Some(name) = &simple.word_or_name {
            let arg = self.word(name, Some(me), depth + 1)?;
            self.script.invocations[me].argv.push(arg);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            self.item(item, me, depth)?;
        }
        // `let EXPR`, and assignments to a `declare -i` variable.
        let argv = &self.script.invocations[me].argv;
        let integer = matches!(
            argv.first().and_then(Arg::lit),
            Some("declare" | "typeset" | "local" | "export" | "readonly")
        ) && argv.iter().skip(1).any(|a| {
            a.shown().starts_with('-') && !a.shown().starts_with("--") && a.shown().contains('i')
        });
        if argv.first().and_then(Arg::lit) == Some("let") || integer {
            let shown = argv.iter().map(Arg::shown).collect::<Vec<_>>().join(" ");
            self.script.arithmetic.push(shown);
        }
        Ok(())
    }

    /// A word, assignment, redirect or process substitution of command `me`.
    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        me: usize,
        depth: usize,
    ) -> Result<(), String> {
        use ast::CommandPrefixOrSuffixItem as I;
        match item {
            I::Word(w) => {
                let arg = self.word(w, Some(me), depth + 1)?;
                self.script.invocations[me].argv.push(arg);
            }
            I::AssignmentWord(_, w) if !self.script.invocations[me].argv.is_empty() => {
                // After the program name (`alias x='…'`, `dd of=…`) it is
                // an argument like any other.
                let arg = self.word(w, Some(me), depth + 1)?;
                self.script.invocations[me].argv.push(arg);
            }
            I::AssignmentWord(assignment, w) => {
                // `X=1 cmd`: the value may hold substitutions; the
                // assignment itself runs nothing.
                let name = match &assignment.name {
                    ast::AssignmentName::VariableName(n) => n.clone(),
                    ast::AssignmentName::ArrayElementName(n, index) => {
                        self.evaluates(index, || format!("{n}[{index}]="));
                        n.clone()
                    }
                };
                let value = match self.word(w, Some(me), depth + 1)? {
                    Arg::Lit(text) => Arg::Lit(
                        text.split_once('=')
                            .map_or(text.clone(), |(_, v)| v.to_owned()),
                    ),
                    dynamic => dynamic,
                };
                self.script.invocations[me].assigns.push((name, value));
            }
            I::IoRedirect(r) => self.redirect(r, me, depth)?,
            I::ProcessSubstitution(_, sub) => {
                self.list(&sub.list, Some(me), depth + 1)?;
                self.script.invocations[me]
                    .argv
                    .push(Arg::Dyn("<(…)".to_owned()));
            }
        }
        Ok(())
    }

    fn redirect(
        &mut self,
        redirect: &ast::IoRedirect,
        me: usize,
        depth: usize,
    ) -> Result<(), String> {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T, IoRedirect as R};
        match redirect {
            R::File(_, kind, target) => match target {
                T::Filename(w) | T::Duplicate(w) => {
                    let arg = self.word(w, Some(me), depth + 1)?;
                    // `>&word` writes to the file `word` unless it names a
                    // descriptor (`>&2`) or closes one (`>&-`).
                    let to_file = match kind {
                        K::Write | K::Append | K::Clobber | K::ReadAndWrite => true,
                        K::DuplicateOutput => arg
                            .lit()
                            .is_none_or(|t| t != "-" && !t.chars().all(|c| c.is_ascii_digit())),
                        K::Read | K::DuplicateInput => false,
                    };
                    if to_file {
                        self.script.invocations[me].writes_to.push(arg);
                    }
                    Ok(())
                }
                T::Fd(_) => Ok(()),
                T::ProcessSubstitution(_, sub) => self.list(&sub.list, Some(me), depth + 1),
            },
            R::HereDocument(_, doc) => {
                let body = if doc.requires_expansion {
                    // An unquoted here-doc delimiter expands `$(…)` in the body.
                    self.pieces_of(&doc.doc.value, Some(me), depth + 1, true)?
                } else {
                    Arg::Lit(doc.doc.value.clone())
                };
                self.script.invocations[me].stdin.push(body);
                Ok(())
            }
            R::HereString(_, w) => {
                let text = self.word(w, Some(me), depth + 1)?;
                self.script.invocations[me].stdin.push(text);
                Ok(())
            }
            R::OutputAndError(w, _) => {
                let arg = self.word(w, Some(me), depth + 1)?;
                self.script.invocations[me].writes_to.push(arg);
                Ok(())
            }
        }
    }

    /// Unquote a word, walking any substitution in it as commands run inside
    /// `owner`.
    fn word(
        &mut self,
        word: &ast::Word,
        owner: Option<usize>,
        depth: usize,
    ) -> Result<Arg, String> {
        self.pieces_of(&word.value, owner, depth, false)
    }

    fn pieces_of(
        &mut self,
        text: &str,
        owner: Option<usize>,
        depth: usize,
        heredoc: bool,
    ) -> Result<Arg, String> {
        // As for lines: a panic of the parser refuses the word.
        let parsed = std::panic::catch_unwind(|| {
            if heredoc {
                brush_parser::word::parse_heredoc(text, &options())
            } else {
                brush_parser::word::parse(text, &options())
            }
            .map_err(|e| e.to_string())
        })
        .unwrap_or_else(|_| Err("the parser failed on it".to_owned()))
        .map_err(|e| format!("cannot read the word `{text}` ({e})"))?;
        let mut out = String::new();
        let mut known = true;
        self.pieces(&parsed, text, owner, depth, false, &mut out, &mut known)?;
        Ok(if known {
            Arg::Lit(out)
        } else {
            Arg::Dyn(text.to_owned())
        })
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "the walk's state, threaded through the recursion"
    )]
    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        source: &str,
        owner: Option<usize>,
        depth: usize,
        quoted: bool,
        out: &mut String,
        known: &mut bool,
    ) -> Result<(), String> {
        for p in pieces {
            match &p.piece {
                WordPiece::Text(t) => {
                    // Unquoted globs and braces expand at run time.
                    if !quoted && expands(t) {
                        *known = false;
                    }
                    out.push_str(t);
                }
                WordPiece::SingleQuotedText(t) => out.push_str(t),
                WordPiece::AnsiCQuotedText(t) => {
                    // `$'\x73udo'`: escapes decode at run time.
                    if t.contains('\\') {
                        *known = false;
                    }
                    out.push_str(t);
                }
                WordPiece::EscapeSequence(t) => out.push_str(t.strip_prefix('\\').unwrap_or(t)),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(inner, source, owner, depth, true, out, known)?;
                }
                WordPiece::TildeExpansion(_) => {
                    out.push('~');
                    // `~/x` is known enough: the policy treats `~` as home.
                }
                WordPiece::ParameterExpansion(_) => {
                    let raw = source.get(p.start_index..p.end_index).unwrap_or(source);
                    forbid_hidden_commands(raw, "a parameter expansion")?;
                    if raw.contains("@P") {
                        return Err("`${…@P}` expands a value as a prompt, which can run commands; it cannot be checked".to_owned());
                    }
                    self.script.sets.extend(default_assignment(raw));
                    if let Some(expr) = expansion_arithmetic(raw) {
                        self.evaluates(expr, || raw.to_owned());
                    }
                    *known = false;
                }
                WordPiece::ArithmeticExpression(e) => {
                    self.evaluates(&e.value, || format!("$(({}))", e.value));
                    self.script.sets.extend(arithmetic_sets(&e.value));
                    forbid_hidden_commands(&e.value, "an arithmetic expansion")?;
                    *known = false;
                }
                WordPiece::CommandSubstitution(cmd)
                | WordPiece::BackquotedCommandSubstitution(cmd) => {
                    self.line(cmd, owner, depth)?;
                    *known = false;
                }
            }
        }
        Ok(())
    }
}

/// Whether unquoted text holds glob or brace patterns (`*.rs`, `{a,b}`).
fn expands(text: &str) -> bool {
    text.contains(['*', '?'])
        || (text.contains('[') && text.contains(']'))
        || (text.contains('{') && text.contains('}') && (text.contains(',') || text.contains("..")))
}

/// Refuse text that could run a command where this module cannot follow it.
fn forbid_hidden_commands(text: &str, what: &str) -> Result<(), String> {
    if text.contains("$(") || text.contains('`') || text.contains("<(") || text.contains(">(") {
        Err(format!(
            "a command substitution inside {what} cannot be checked; run that command on its own"
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
