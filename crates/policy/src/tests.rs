//! The policy's classification table and the reasons it gives. The
//! blocklist's evasion cases run through the whole broker, in every mode,
//! in `broker/tests.rs`.

use super::*;

fn assess(line: &str) -> Assessment {
    Policy::default()
        .assess_line(line)
        .unwrap_or_else(|r| panic!("`{line}` was refused: {r}"))
}

fn class(line: &str) -> Class {
    assess(line).class
}

/// `(line, class)` for 60+ commands.
const TABLE: &[(&str, Class)] = &[
    // safe: reads and reports
    ("ls -la", Class::Safe),
    ("cat README.md", Class::Safe),
    ("head -n 20 src/main.rs", Class::Safe),
    ("tail -f log.txt", Class::Safe),
    ("wc -l src/*.rs", Class::Safe),
    ("grep -rn TODO src", Class::Safe),
    ("rg -n 'fn main' src", Class::Safe),
    ("tree -L 2", Class::Safe),
    ("file target/debug/app", Class::Safe),
    ("which cargo", Class::Safe),
    ("echo hello", Class::Safe),
    ("pwd", Class::Safe),
    ("env", Class::Safe),
    ("date -u", Class::Safe),
    ("python --version", Class::Safe),
    ("python3 -V", Class::Safe),
    ("git status", Class::Safe),
    ("git log --oneline -5", Class::Safe),
    ("git diff HEAD~1", Class::Safe),
    ("git show HEAD:src/lib.rs", Class::Safe),
    ("git branch", Class::Safe),
    ("git branch -a", Class::Safe),
    ("git -C sub status", Class::Dev),
    ("npm list --depth 0", Class::Safe),
    ("cargo check", Class::Dev),
    ("cargo metadata --format-version 1", Class::Safe),
    ("cargo fmt --check", Class::Safe),
    ("go version", Class::Safe),
    ("pip list", Class::Safe),
    ("sed -n 1,10p file", Class::Safe),
    ("awk '{print $1}' file", Class::Safe),
    ("sort file | uniq -c", Class::Safe),
    ("find . -name '*.rs'", Class::Safe),
    ("ls | head -3 && wc -l x", Class::Safe),
    ("echo x > /dev/null", Class::Safe),
    ("cd src && ls", Class::Safe),
    ("command -v cargo", Class::Safe),
    ("which sudo", Class::Safe),
    ("echo \"rm -rf /\"", Class::Safe),
    ("echo ':(){ :|:& };:'", Class::Safe),
    ("grep -r sudo .", Class::Safe),
    // dev: builds, tests, formats
    ("cargo build --release", Class::Dev),
    ("cargo test -p core", Class::Dev),
    ("cargo clippy --all-targets", Class::Dev),
    ("pytest -q", Class::Dev),
    ("python -m pytest tests/", Class::Dev),
    ("python3 -m mypy src", Class::Dev),
    ("mypy .", Class::Dev),
    ("ruff check .", Class::Dev),
    ("black src", Class::Dev),
    ("eslint src", Class::Dev),
    ("make", Class::Dev),
    ("make -j4 test", Class::Dev),
    ("go build ./...", Class::Dev),
    ("go test ./...", Class::Dev),
    ("mvn package", Class::Dev),
    ("gradle build", Class::Dev),
    ("tsc --noEmit", Class::Dev),
    ("npm run build", Class::Dev),
    ("npm test", Class::Dev),
    ("pnpm run lint", Class::Dev),
    ("yarn run test", Class::Dev),
    ("npm ci", Class::Dev),
    ("docker ps", Class::Dev),
    ("kubectl get pods", Class::Dev),
    ("git add -A", Class::Dev),
    ("git commit -m wip", Class::Dev),
    ("git rm -r --cached x", Class::Dev),
    ("mkdir -p build/out", Class::Dev),
    ("ls > listing.txt", Class::Dev),
    ("sed -i s/a/b/ file", Class::Dev),
    ("bash -c 'ls'", Class::Dev),
    ("timeout 60 cargo test", Class::Dev),
    ("cargo build 2>&1 | tail -20", Class::Dev),
    // dangerous: everything else
    ("rm -rf build", Class::Dangerous),
    ("rm file.txt", Class::Dangerous),
    ("mv a b", Class::Dangerous),
    ("cp -r src /tmp/x", Class::Dangerous),
    ("chmod 755 run.sh", Class::Dangerous),
    ("curl -o x.tgz https://example.com/x.tgz", Class::Dangerous),
    ("npm install --global pkg", Class::Dangerous),
    ("npm install left-pad", Class::Dangerous),
    ("pip install requests", Class::Dangerous),
    ("cargo install ripgrep", Class::Dangerous),
    ("cargo publish", Class::Dangerous),
    ("git push origin main", Class::Dangerous),
    ("git reset --hard HEAD~3", Class::Dangerous),
    ("git clean -fdx", Class::Dangerous),
    ("git checkout -- .", Class::Dangerous),
    ("git -c core.pager=evil log", Class::Dangerous),
    ("python script.py", Class::Dangerous),
    ("python -c 'print(1)'", Class::Dangerous),
    ("node server.js", Class::Dangerous),
    ("./configure", Class::Dangerous),
    ("bin/ls", Class::Dangerous),
    ("kill -9 1234", Class::Dangerous),
    ("pkill -f server", Class::Dangerous),
    ("docker run -it ubuntu", Class::Dangerous),
    ("kubectl delete pod x", Class::Dangerous),
    (
        "dd if=/dev/zero of=disk.img bs=1M count=1",
        Class::Dangerous,
    ),
    ("find . -name '*.o' -delete", Class::Dangerous),
    ("awk 'BEGIN{system(\"id\")}'", Class::Dangerous),
    ("PATH=.:$PATH ls", Class::Dangerous),
    ("export LD_PRELOAD=/tmp/x.so", Class::Dangerous),
    ("env PATH=/tmp ls", Class::Dangerous),
    ("ls && rm -rf dist", Class::Dangerous),
    ("cat setup.sh | sh", Class::Dangerous),
    ("source venv/bin/activate", Class::Dangerous),
    ("somethingunknown --flag", Class::Dangerous),
    // Tools that run or write what their arguments say.
    ("sed -n '/x/p' f", Class::Safe),
    ("sed 's/a/b/g;s/c/d/' f", Class::Safe),
    ("sed -ni 's/a/b/' f", Class::Dev),
    ("sed -Ei s/a/b/ f", Class::Dev),
    ("sed 's/.*/id/e' f", Class::Dangerous),
    ("sed -n '1e id' f", Class::Dangerous),
    ("sed 'w out' f", Class::Dangerous),
    ("sed -f script.sed f", Class::Dangerous),
    ("awk 'BEGIN{system (\"id\")}'", Class::Dangerous),
    ("awk -f prog.awk data", Class::Dangerous),
    ("tar tf x.tar", Class::Safe),
    ("tar -xzf x.tgz", Class::Dev),
    (
        "tar -tf x.tar --checkpoint=1 --checkpoint-action=exec=id",
        Class::Dangerous,
    ),
    ("rg --pre sh x .", Class::Dangerous),
    ("hash -p /bin/rm ls", Class::Dangerous),
    ("GIT_EXTERNAL_DIFF=x git diff", Class::Dangerous),
    ("GIT_CONFIG_COUNT=1 git status", Class::Dangerous),
    ("uv run pytest", Class::Dev),
    ("poetry run pytest -q", Class::Dev),
    ("npm exec -- eslint .", Class::Dev),
    ("bundle exec rspec", Class::Dev),
    ("git fetch --upload-pack=x origin", Class::Dangerous),
    ("git diff --output=patch.txt", Class::Dev),
    ("git rebase -x 'cargo test' main", Class::Dev),
    ("make --eval='all:;id'", Class::Dangerous),
    ("docker compose up", Class::Dangerous),
    ("docker compose ps", Class::Dev),
    ("docker build .", Class::Dangerous),
    ("echo x > ~/.bashrc", Class::Dangerous),
    ("echo x > .git/hooks/pre-commit", Class::Dangerous),
    ("python -m pydoc x", Class::Dangerous),
    ("uniq in.txt out.txt", Class::Dev),
    ("mkdir -m 777 d", Class::Dangerous),
    ("pkill -s 9 -f x", Class::Dangerous),
    ("find . -exec true \\; -delete", Class::Dangerous),
    ("find . -name '*.rs' -exec wc -l {} +", Class::Safe),
    ("command rm -rf x -v", Class::Dangerous),
    (
        "cargo --config 'target.x.runner=\"id\"' test",
        Class::Dangerous,
    ),
    ("ls *.rs", Class::Safe),
    // Every argument-dependent arm, pinned when the lists became tables.
    ("npm config get registry", Class::Safe),
    ("npm config set registry x", Class::Dangerous),
    ("yarn", Class::Dev),
    ("kubectl config view", Class::Dev),
    ("kubectl config set-context x", Class::Dangerous),
    ("helm list", Class::Dev),
    ("helm install x y", Class::Dangerous),
    ("uv run pytest", Class::Dev),
    ("poetry show", Class::Dev),
    ("pipenv --version", Class::Safe),
    ("pip list", Class::Safe),
    ("pip install x", Class::Dangerous),
    ("python -m pip list", Class::Safe),
    ("go vet ./...", Class::Safe),
    ("go build ./...", Class::Dev),
    ("go get x", Class::Dangerous),
    ("deno test", Class::Dev),
    ("node --version", Class::Safe),
    ("node script.js", Class::Dangerous),
    ("make", Class::Dev),
    ("make --eval 'x:'", Class::Dangerous),
    ("gcc --version", Class::Safe),
    ("uniq a b", Class::Dev),
    ("sort -o out.txt in.txt", Class::Dev),
    ("find . -delete", Class::Dangerous),
    ("unzip -l a.zip", Class::Safe),
    ("unzip a.zip", Class::Dev),
    ("zip -T a.zip x", Class::Dangerous),
    ("mkdir -m 777 d", Class::Dangerous),
    ("touch x", Class::Dev),
    ("rg --pre cat x", Class::Dangerous),
    ("yq -i '.a=1' f.yaml", Class::Dev),
    ("hash", Class::Safe),
    ("git branch", Class::Safe),
    ("git branch new-feature", Class::Dev),
    ("git branch -D old", Class::Dangerous),
    ("git branch -d old", Class::Dev),
    ("git add -f x", Class::Dangerous),
    ("git commit -f", Class::Dev),
    ("git stash list", Class::Safe),
    ("git stash drop", Class::Dangerous),
    ("git -c core.pager=x log", Class::Dangerous),
    ("git diff --output=x", Class::Dev),
    ("git fetch --upload-pack=x origin", Class::Dangerous),
    // Code chosen at run time, in lines that otherwise only read.
    ("read -r n < n.txt; echo $((n))", Class::Dev),
    ("echo $((1 + 2 * 0x1f + 16#ff))", Class::Safe),
    ("let n=x+1", Class::Dev),
    ("(( n > 3 )) && echo big", Class::Dev),
    ("[[ $n -eq 3 ]] && echo three", Class::Dev),
    ("[[ -f x ]] && echo file", Class::Safe),
    ("echo ${s:i:2}", Class::Dev),
    ("echo ${s:0:2} ${#s} ${a[@]}", Class::Safe),
    ("echo ${a[$i]}", Class::Dev),
    ("a[$i]=1", Class::Dev),
    ("typeset -i n", Class::Dev),
    ("for ((i = 0; i < n; i++)); do echo $i; done", Class::Dev),
    ("cd nested && git status", Class::Dev),
    ("git status && cd src && ls", Class::Dev),
    ("mvn --version", Class::Dev),
    ("printf 2a | xxd -r -p - Makefile", Class::Dev),
    ("xxd -p README.md", Class::Safe),
];

#[test]
fn classification_table() {
    assert!(TABLE.len() >= 60, "{} cases", TABLE.len());
    let wrong: Vec<String> = TABLE
        .iter()
        .filter_map(|(line, want)| {
            let got = class(line);
            (got != *want).then(|| format!("`{line}`: {got}, expected {want}"))
        })
        .collect();
    assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
}

#[test]
fn argv_is_classified_like_the_line() {
    let p = Policy::default();
    let argv = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        p.assess_argv(&argv(&["cargo", "test"])).unwrap().class,
        Class::Dev
    );
    assert_eq!(
        p.assess_argv(&argv(&["ls", "; rm -rf /"])).unwrap().class,
        Class::Safe,
        "no shell, so `;` is just an argument"
    );
    assert!(p.assess_argv(&argv(&["sudo", "ls"])).is_err());
    assert!(p.assess_argv(&argv(&["bash", "-c", "rm -rf ~"])).is_err());
    assert!(p.assess_argv(&[]).is_err());
}

#[test]
fn the_most_dangerous_part_names_the_reason() {
    let a = assess("ls && npm install left-pad && cargo build");
    assert_eq!(a.class, Class::Dangerous);
    assert!(a.reason.contains("npm install left-pad"), "{}", a.reason);
    assert!(assess("PATH=/tmp ls").reason.contains("`PATH`"));
}

/// Variables a person allowed are settable on the line, by `export` and in
/// the request's environment; the others still make a command dangerous,
/// and the assessment names the variable.
#[test]
fn variables_a_person_allowed_are_settable() {
    let policy = Policy {
        settable: vec!["PYTHONPATH".to_owned()],
        ..Policy::default()
    };
    for line in [
        "PYTHONPATH=src python3 -m pytest",
        "export PYTHONPATH=src; ls",
    ] {
        let a = policy.assess_line(line).unwrap();
        assert_ne!(a.class, Class::Dangerous, "{line}: {}", a.reason);
        assert_eq!(a.variable, None);
    }
    assert!(policy.assess_env(&["PYTHONPATH"]).is_none());
    let a = policy
        .assess_line("LD_PRELOAD=x.so PYTHONPATH=src ls")
        .unwrap();
    assert_eq!(a.class, Class::Dangerous);
    assert_eq!(a.variable.as_deref(), Some("LD_PRELOAD"));
    let a = Policy::default().assess_line("PYTHONPATH=src ls").unwrap();
    assert_eq!(a.variable.as_deref(), Some("PYTHONPATH"));
    // A more dangerous reason than a variable names no variable.
    let a = Policy::default()
        .assess_line("PYTHONPATH=src rm -rf build")
        .unwrap();
    assert_eq!(a.class, Class::Dangerous);
    assert_eq!(a.variable, None, "{}", a.reason);
}

#[test]
fn allow_patterns_make_commands_safe() {
    let policy = Policy {
        allow: vec![
            Pattern::parse("npm install *").unwrap(),
            Pattern::parse("./gradlew **").unwrap(),
        ],
        deny: vec![Pattern::parse("git push **").unwrap()],
        settable: Vec::new(),
    };
    assert_eq!(
        policy.assess_line("npm install left-pad").unwrap().class,
        Class::Safe
    );
    assert_eq!(
        policy.assess_line("npm install a b").unwrap().class,
        Class::Dangerous,
        "`*` is one argument"
    );
    assert_eq!(
        policy.assess_line("./gradlew build --info").unwrap().class,
        Class::Safe
    );
    assert_eq!(
        policy.assess_line("./gradlew").unwrap().class,
        Class::Safe,
        "`**` matches nothing too"
    );
    let denied = policy
        .assess_line("ls; git push -f origin main")
        .unwrap_err();
    assert!(denied.0.contains("deny pattern `git push **`"), "{denied}");
    assert!(
        policy.assess_line("npm install x && sudo ls").is_err(),
        "allow never overrides the blocklist"
    );
}

#[test]
fn patterns_are_checked() {
    assert!(Pattern::parse("").is_err());
    assert!(Pattern::parse("** x").is_err());
    assert!(Pattern::parse("* test").is_err());
    let p = Pattern::parse("cargo test *").unwrap();
    assert!(
        p.matches(&[Some("/usr/bin/cargo"), Some("test"), Some("x")], false),
        "a system program matches by name"
    );
    assert!(
        !p.matches(&[Some("./cargo"), Some("test"), Some("x")], false),
        "a workspace file named cargo does not"
    );
    assert!(!p.matches(&[Some("cargo"), Some("test")], false));
    assert!(
        !p.matches(&[Some("cargo"), Some("test"), None], false),
        "allow needs known words"
    );
    assert!(
        p.matches(&[Some("cargo"), Some("test"), None], true),
        "deny treats unknown words as matching"
    );
    assert_eq!(p.to_string(), "cargo test *");
}

#[test]
fn environment_overrides_are_dangerous() {
    let p = Policy::default();
    assert_eq!(
        p.assess_env(&["PATH"]).map(|a| a.class),
        Some(Class::Dangerous)
    );
    assert_eq!(
        p.assess_env(&["LD_PRELOAD"]).map(|a| a.class),
        Some(Class::Dangerous)
    );
    assert_eq!(p.assess_env(&["RUST_LOG", "CI"]), None);
}

#[test]
fn kill_minus_one_is_told_apart_from_signal_one() {
    let p = Policy::default();
    for blocked in ["kill -9 -1", "kill -- -1", "kill -s KILL -1", "kill -1"] {
        assert!(p.assess_line(blocked).is_err(), "{blocked}");
    }
    for allowed in [
        "kill -1 1234",
        "kill -9 1234",
        "kill 1234",
        "kill -s HUP 99",
    ] {
        assert_eq!(
            p.assess_line(allowed).map(|a| a.class),
            Ok(Class::Dangerous),
            "{allowed}"
        );
    }
}

/// Regression: each way a "safe" command ran code, wrote where a person's
/// tools run code from, or hid a blocked program (issue 15). None may be
/// safe: in confirm-sensitive mode a person is asked (or it is refused).
const HOLES: &[&str] = &[
    // Options that run a program.
    "sort --compress-program=sh big.txt",
    "sort --compress-prog=sh big.txt",
    "sort --com sh big.txt",
    "git grep --open-files-in-pager=sh TODO",
    "git grep -Osh TODO",
    "git grep --open-files TODO",
    "git diff --ext-diff",
    "git log -p --textconv",
    "tar --checkpoint=1 --checkpoint-action=exec=sh -tf a.tar",
    "tar --checkpoint-a=exec=sh -tf a.tar",
    "tar -tf a.tar --to-command=sh",
    "tar -I sh -tf a.tar",
    "tar tIf sh a.tar",
    "tar --use=sh -tf a.tar",
    "less '+!sh' README.md",
    "man -P sh ls",
    "man --pager=sh ls",
    "awk 'BEGIN { system(\"sh\") }'",
    "sed -n 1e\\ sh README.md",
    "find . -name x -execdir sh \\;",
    "rg --pre sh TODO",
    // env's options in every spelling.
    "env -vS'sh -c id'",
    "env -iS'sh -c id'",
    "env --split='sh -c id'",
    "env --split-string 'sh -c id'",
    // Variables outside the list, however they are set.
    "TAR_OPTIONS=--to-command=sh tar -tf a.tar",
    "RIPGREP_CONFIG_PATH=./rc rg TODO",
    "HOME=. git status",
    "XDG_CONFIG_HOME=. git status",
    "GCONV_PATH=. iconv -f x -t y a",
    "HOME=.; git status",
    "export HOME=.; git status",
    "printf -v PATH %s . ; ls",
    "read PATH <<< . ; ls",
    "read -r -a PATH <<< . ; ls",
    "declare -n ref=PATH",
    "export LD_PRELOAD",
    "mapfile PATH < list",
    "getopts ab PATH",
    "for PATH in .; do ls; done",
    ": ${PATH:=.}; ls",
    "(( HOME = 1 )); ls",
    "env PAGER=sh man ls",
    // Workspace files that safe tools load.
    "git --git-dir=evil status",
    "git --work-tree=. --git-dir=evil status",
    "git -c core.fsmonitor=sh status",
    "python3 -m json.tool x.json",
    "make -f - <<< 'all:; sh'",
    "make --file=- <<< 'all:; sh'",
    // Root's actions.
    "hostname pwned",
    "hostname -F name.txt",
    "date -s 2030-01-01",
    "date --set=2030-01-01",
    "date 010100002030",
    // Writes where persistence hides.
    "xxd -r -p dump .git/config",
    "iconv -f utf-8 -t utf-8 -o .git/config x",
    "echo x | tee -a .git/config",
    "sed -i s/a/b/ .git/config",
    "cd .git && echo x >> config",
    "echo x >> .gi[t]/config",
    "tar xf hook.tar",
];

/// Wrapper options that hid a blocked program: refused in every mode.
const HIDDEN: &[&str] = &[
    "xargs --process-slot-var V sudo id",
    "xargs --process-slot V sudo id",
    "env --un FOO sudo id",
    "env -u FOO sudo id",
    "script -qc 'sudo id'",
    "script --command='sudo id' /dev/null",
    "timeout -k 5 10 sudo id",
    "nice -n 5 sudo id",
    "nice -5 sudo id",
    "stdbuf -oL sudo id",
    "setsid -f sudo id",
    "flock -w 5 lock sudo id",
    "flock lock -c 'sudo id'",
];

#[test]
fn every_known_hole_is_confirmed() {
    let policy = Policy::default();
    for line in HOLES {
        // A refusal never runs; an assessment must ask.
        if let Ok(a) = policy.assess_line(line) {
            assert!(
                needs_confirmation_in_confirm_sensitive(a.class),
                "`{line}` is {}: {}",
                a.class,
                a.reason
            );
        }
    }
}

/// In the default mode (`confirm-sensitive`) the broker asks before any
/// command classed `dev` or above (`needs_confirmation` in toolhost's
/// broker, whose own test pins the same rule).
fn needs_confirmation_in_confirm_sensitive(class: Class) -> bool {
    class >= Class::Dev
}

#[test]
fn wrapper_options_do_not_hide_blocked_programs() {
    let policy = Policy::default();
    for line in HIDDEN {
        let verdict = policy.assess_line(line);
        assert!(verdict.is_err(), "`{line}` was not refused: {verdict:?}");
    }
}

#[test]
fn unknown_wrapper_options_are_refused_with_a_way_out() {
    let err = Policy::default()
        .assess_line("xargs --frobnicate V sudo id")
        .unwrap_err();
    assert!(err.0.contains("`xargs` option `--frobnicate`"), "{err}");
}

#[test]
fn the_usual_spellings_still_read_as_before() {
    for (line, expected) in [
        ("env LC_ALL=C sort data.txt", Class::Safe),
        ("RUST_BACKTRACE=1 cargo test", Class::Dev),
        ("for f in *.rs; do wc -l $f; done", Class::Safe),
        ("count=0; echo $count", Class::Safe),
        ("xargs -0 -n 1 echo < list", Class::Safe),
        ("xargs -I{} echo {} < list", Class::Safe),
        ("timeout 5 cargo test", Class::Dev),
        ("date +%s", Class::Safe),
        ("date -d yesterday", Class::Safe),
        ("hostname", Class::Safe),
        ("hostname -f", Class::Safe),
        ("python3 -I -m json.tool x.json", Class::Safe),
        ("sort -u names.txt", Class::Safe),
        ("tar tf a.tar", Class::Safe),
        ("git grep -n TODO", Class::Safe),
        ("make -f Makefile.ci test", Class::Dev),
        ("read -r line < file; echo $line", Class::Safe),
    ] {
        assert_eq!(class(line), expected, "{line}: {}", assess(line).reason);
    }
}
