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
    /// Variables it assigns (`X=1 cmd`, or a bare `X=1`).
    pub assigns: Vec<String>,
    /// The pipeline it is part of, and its place in it (0 = first).
    pub pipeline: usize,
    pub position: usize,
    /// The invocation whose words contain this one (a command or process
    /// substitution), if any.
    pub inside: Option<usize>,
}

/// A command line, understood.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Script {
    pub invocations: Vec<Invocation>,
    /// Functions whose body calls the function itself (`:(){ :|:& };:`).
    pub recursive_functions: Vec<String>,
}

/// How deep substitutions may nest before the line is refused.
const MAX_DEPTH: usize = 16;

/// Understand `line`; the error says what could not be understood.
pub(crate) fn analyze(line: &str) -> Result<Script, String> {
    let mut walker = Walker::default();
    walker.line(line, None, 0)?;
    Ok(walker.script)
}

#[derive(Default)]
struct Walker {
    script: Script,
    pipelines: usize,
    /// Names of the functions being walked, innermost last.
    functions: Vec<String>,
}

fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions::default()
}

impl Walker {
    fn line(&mut self, line: &str, inside: Option<usize>, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("substitutions nest too deeply to check".to_owned());
        }
        let mut parser =
            brush_parser::Parser::new(std::io::BufReader::new(line.as_bytes()), &options());
        let program = parser
            .parse_program()
            .map_err(|e| format!("it is not a command line toolhost can parse ({e})"))?;
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
            self.command(command, (id, position), inside, depth)?;
        }
        Ok(())
    }

    fn command(
        &mut self,
        command: &ast::Command,
        at: (usize, usize),
        inside: Option<usize>,
        depth: usize,
    ) -> Result<(), String> {
        match command {
            ast::Command::Simple(simple) => self.simple(simple, at, inside, depth),
            ast::Command::Compound(compound, redirects) => {
                if let Some(redirects) = redirects {
                    let me = self.push(Vec::new(), at, inside);
                    for r in &redirects.0 {
                        self.redirect(r, me, depth)?;
                    }
                }
                self.compound(compound, inside, depth)
            }
            ast::Command::Function(def) => {
                let name = def.fname.value.clone();
                self.functions.push(name.clone());
                let before = self.script.invocations.len();
                self.compound(&def.body.0, inside, depth)?;
                self.functions.pop();
                let calls_itself = self.script.invocations[before..]
                    .iter()
                    .any(|i| i.argv.first().and_then(Arg::lit) == Some(name.as_str()));
                if calls_itself {
                    self.script.recursive_functions.push(name);
                }
                Ok(())
            }
            ast::Command::ExtendedTest(test, _) => {
                forbid_hidden_commands(&test.to_string(), "a [[ ]] test")
            }
        }
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
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd, inside, depth)?;
                    }
                }
                Ok(())
            }
            C::Arithmetic(a) => forbid_hidden_commands(&a.expr.value, "an arithmetic command"),
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    forbid_hidden_commands(&e.value, "an arithmetic for loop")?;
                }
                self.list(&f.body.list, inside, depth)
            }
            C::Coprocess(_) => Err("coprocesses are not supported".to_owned()),
        }
    }

    fn push(&mut self, argv: Vec<Arg>, at: (usize, usize), inside: Option<usize>) -> usize {
        self.script.invocations.push(Invocation {
            argv,
            pipeline: at.0,
            position: at.1,
            inside,
            ..Invocation::default()
        });
        self.script.invocations.len() - 1
    }

    fn simple(
        &mut self,
        simple: &ast::SimpleCommand,
        at: (usize, usize),
        inside: Option<usize>,
        depth: usize,
    ) -> Result<(), String> {
        let me = self.push(Vec::new(), at, inside);
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
                    ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
                };
                self.script.invocations[me].assigns.push(name);
                self.word(w, Some(me), depth + 1)?;
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
                    if matches!(kind, K::Write | K::Append | K::Clobber | K::ReadAndWrite) {
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
        let parsed = if heredoc {
            brush_parser::word::parse_heredoc(text, &options())
        } else {
            brush_parser::word::parse(text, &options())
        }
        .map_err(|e| format!("cannot read the word `{text}` ({e})"))?;
        let mut out = String::new();
        let mut known = true;
        self.pieces(&parsed, text, owner, depth, &mut out, &mut known)?;
        Ok(if known {
            Arg::Lit(out)
        } else {
            Arg::Dyn(text.to_owned())
        })
    }

    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        source: &str,
        owner: Option<usize>,
        depth: usize,
        out: &mut String,
        known: &mut bool,
    ) -> Result<(), String> {
        for p in pieces {
            match &p.piece {
                WordPiece::Text(t)
                | WordPiece::SingleQuotedText(t)
                | WordPiece::AnsiCQuotedText(t) => out.push_str(t),
                WordPiece::EscapeSequence(t) => out.push_str(t.strip_prefix('\\').unwrap_or(t)),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(inner, source, owner, depth, out, known)?;
                }
                WordPiece::TildeExpansion(_) => {
                    out.push('~');
                    // `~/x` is known enough: the policy treats `~` as home.
                }
                WordPiece::ParameterExpansion(_) => {
                    let raw = source.get(p.start_index..p.end_index).unwrap_or(source);
                    forbid_hidden_commands(raw, "a parameter expansion")?;
                    *known = false;
                }
                WordPiece::ArithmeticExpression(e) => {
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
mod tests {
    use super::*;

    fn argvs(line: &str) -> Vec<Vec<String>> {
        analyze(line)
            .unwrap()
            .invocations
            .iter()
            .filter(|i| !i.argv.is_empty())
            .map(|i| i.argv.iter().map(|a| a.shown().to_owned()).collect())
            .collect()
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(argvs(r#"'r''m' -"rf" \/"#), [["rm", "-rf", "/"]]);
        assert_eq!(argvs(r#"\sudo ls"#), [["sudo", "ls"]]);
    }

    #[test]
    fn every_command_of_a_compound_line_is_found() {
        let line = "a && b || c; d | e & (f); { g; }; if h; then i; else j; fi; for x in 1; do k; done; while l; do m; done; case y in *) n;; esac";
        let names: Vec<String> = argvs(line).into_iter().map(|a| a[0].clone()).collect();
        assert_eq!(
            names,
            [
                "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"
            ]
        );
    }

    #[test]
    fn substitutions_are_walked_and_linked_to_their_command() {
        let s = analyze("echo $(whoami) `id` <(date)").unwrap();
        let echo = s
            .invocations
            .iter()
            .position(|i| i.argv.first().and_then(Arg::lit) == Some("echo"))
            .unwrap();
        let inner: Vec<&str> = s
            .invocations
            .iter()
            .filter(|i| i.inside == Some(echo))
            .filter_map(|i| i.argv.first().and_then(Arg::lit))
            .collect();
        assert_eq!(inner, ["whoami", "id", "date"]);
        assert!(matches!(s.invocations[echo].argv[1], Arg::Dyn(_)));
    }

    #[test]
    fn pipelines_and_redirects_are_recorded() {
        let s = analyze("curl x | sh > /dev/sda").unwrap();
        let (curl, sh) = (&s.invocations[0], &s.invocations[1]);
        assert_eq!(
            (curl.pipeline, curl.position, sh.pipeline, sh.position),
            (0, 0, 0, 1)
        );
        assert_eq!(sh.writes_to, [Arg::Lit("/dev/sda".into())]);
    }

    #[test]
    fn fork_bombs_and_unparseable_lines() {
        assert_eq!(analyze(":(){ :|:& };:").unwrap().recursive_functions, [":"]);
        assert!(analyze("echo 'unterminated").is_err());
        assert!(
            analyze("echo ${x:-$(rm -rf /)}").is_err(),
            "substitution hidden in an expansion"
        );
        assert!(analyze("coproc sleep 1").is_err());
        let heredoc = analyze("cat <<EOF\n$(reboot)\nEOF\n").unwrap();
        assert!(
            heredoc
                .invocations
                .iter()
                .any(|i| i.argv.first().and_then(Arg::lit) == Some("reboot"))
        );
    }
}
