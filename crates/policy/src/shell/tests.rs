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
    let s = analyze(r#"{sudo,ls} /usr/bin/su?o $'\x73udo' "*" '{a,b}'"#).unwrap();
    let kinds: Vec<bool> = s.invocations[0]
        .argv
        .iter()
        .map(|a| a.lit().is_some())
        .collect();
    assert_eq!(
        kinds,
        [false, false, false, true, true],
        "expansions are unknown; quoted text is literal"
    );
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
        (curl.pipes.as_slice(), sh.pipes.as_slice()),
        (&[(0, 0)][..], &[(0, 1)][..])
    );
    assert_eq!(sh.writes_to, [Arg::Lit("/dev/sda".into())]);
    let nested = analyze("(curl x | tee f) | sh").unwrap();
    let curl = nested
        .invocations
        .iter()
        .find(|i| i.argv.first().and_then(Arg::lit) == Some("curl"))
        .unwrap();
    assert_eq!(
        curl.pipes,
        [(0, 0), (1, 0)],
        "through the subshell, curl feeds sh"
    );
    let dup = analyze("echo x >& ~/.bashrc; echo y >&2; f() { :; } > out").unwrap();
    let writes: Vec<&str> = dup
        .invocations
        .iter()
        .flat_map(|i| &i.writes_to)
        .map(Arg::shown)
        .collect();
    assert_eq!(writes, ["~/.bashrc", "out"]);
}

#[test]
fn fork_bombs_and_unparseable_lines() {
    assert_eq!(analyze(":(){ :|:& };:").unwrap().recursive_functions, [":"]);
    let mutual = analyze("a(){ b|b& }; b(){ a|a& }; a").unwrap();
    assert_eq!(mutual.recursive_functions, ["a", "b"]);
    assert!(
        analyze("f(){ ls; }; g(){ f; }; g")
            .unwrap()
            .recursive_functions
            .is_empty()
    );
    let case = analyze("case a in $(reboot)) ;; esac").unwrap();
    assert!(
        case.invocations
            .iter()
            .any(|i| i.argv.first().and_then(Arg::lit) == Some("reboot"))
    );
    assert!(analyze("x='$(id)'; echo \"${x@P}\"").is_err());
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

/// Each line of `refused` is refused at once, saying its text; each of
/// `fine` still parses. For what brush-parser is kept from (each found by
/// the fuzz target `shell`).
fn refused_before_parsing(refused: &[(&str, &str)], fine: &[&str]) {
    let started = std::time::Instant::now();
    for (line, says) in refused {
        let e = analyze(line).unwrap_err();
        assert!(e.contains(says), "{line:?}: {e}");
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    for line in fine {
        assert!(analyze(line).is_ok(), "{line:?}");
    }
}

#[test]
fn deeply_nested_parentheses_are_refused_before_parsing() {
    // The parser's work doubles with each level: 40 would take years.
    let deep = format!("{}x", "(".repeat(40));
    refused_before_parsing(
        &[(&deep, "parentheses nest 40 deep")],
        &[
            "echo $(( ((1 + 2) * (3 - (4 / 2))) ))",
            "( (cd a && (make) ) )",
        ],
    );
}

#[test]
fn numbers_the_parser_would_overflow_on_are_refused() {
    // The parser unwraps these parses: they panicked.
    let says = "too large a number";
    refused_before_parsing(
        &[
            ("echo 7777777777777>f", says),
            ("ls ~99999999999999999999/x", says),
            ("ls ~+99999999999999999999", says),
            ("echo {1..99999999999999999999}", says),
            ("echo {-99999999999999999999..1}", says),
            ("echo {99999999999999999999..1}", says),
        ],
        &[
            "echo 2>/dev/null",
            "echo 1234567890123456789012345",
            "date -d @1700000000",
            "echo {1..10}",
        ],
    );
}

#[test]
fn lines_the_parser_takes_ages_on_are_refused_before_parsing() {
    // 16-22 s and 2 GB each.
    refused_before_parsing(
        &[
            ("$( t <<  D ", "no closing `)`"),
            ("a ) $( t <<  D ", "no closing `)`"),
            ("echo \"$(date\"", "no closing `)`"),
            ("t << '' @ t << ''  l ", "empty delimiter"),
            ("t <<- \"\" @ t << \"\"  l", "empty delimiter"),
            ("t << \u{c} @ t << \u{8}  l ", "control character U+000C"),
        ],
        &[
            "grep -n '$(' f.sh",
            "echo $(date) $((1 + (2)))",
            "echo \"\\$(\"",
            "cat <<EOF\nhi\nEOF",
            "cat <<< ''",
            "cat <<-'EOF'\n\tx\nEOF",
            "printf 'a\\tb'\t",
        ],
    );
}
