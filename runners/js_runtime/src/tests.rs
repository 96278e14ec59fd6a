//! Unit tests of js_runtime.

use super::*;

fn call(source: &str, args: Value) -> Result<Output, ToolError> {
    let ctx = Context::default().with_setting("source", source);
    let Value::Object(args) = args else {
        panic!("args must be an object")
    };
    JsRuntime::call(args, &ctx)
}

#[test]
fn returns_text_or_structured_values() {
    let out = call(
        "function run(a) { return 'hi ' + a.name }",
        json!({"name": "bo"}),
    )
    .unwrap();
    assert_eq!(out.content(), "hi bo");
    let out = call(
        "function run(a) { return {n: a.n * 2, ok: true} }",
        json!({"n": 21}),
    )
    .unwrap();
    assert_eq!(out.structured(), Some(&json!({"n": 42, "ok": true})));
}

/// The TypeScript bot framework's `{success, content}`: a failure is a tool error with its
/// content; a success shows its content.
#[test]
fn success_false_is_a_tool_error() {
    let err = call(
        "function run(a) { return {success: false, content: 'no such city: ' + a.city} }",
        json!({"city": "Atlantis"}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::Failed { .. }), "{err:?}");
    assert_eq!(err.to_string(), "no such city: Atlantis");
    let silent = call(
        "function run() { return {success: false, content: ''} }",
        json!({}),
    )
    .unwrap_err();
    assert!(
        silent.to_string().contains("without saying why"),
        "{silent}"
    );
    let ok = call(
        "function run() { return {success: true, content: 'sunny, 21 C'} }",
        json!({}),
    )
    .unwrap();
    assert_eq!(ok.content(), "sunny, 21 C");
    // Only that shape: another object with `success` stays data.
    let data = call(
        "function run() { return {success: false, count: 2} }",
        json!({}),
    )
    .unwrap();
    assert_eq!(
        data.structured(),
        Some(&json!({"success": false, "count": 2}))
    );
}

#[test]
fn async_run_is_awaited() {
    let out = call(
        "async function run(a) { return 'late ' + a.n }",
        json!({"n": 1}),
    )
    .unwrap();
    assert_eq!(out.content(), "late 1");
    let err = call(
        "async function run() { throw new Error('nope') }",
        json!({}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
    let err = call("function run() { return new Promise(() => {}) }", json!({})).unwrap_err();
    assert!(err.to_string().contains("never settles"), "{err}");
}

#[test]
fn scripts_that_cannot_run_say_why() {
    let err = call("let x = 1;", json!({})).unwrap_err();
    assert!(err.to_string().contains("function run"), "{err}");
    let err = call("function run( {", json!({})).unwrap_err();
    assert!(err.to_string().contains("does not load"), "{err}");
    let err = call("function run() { throw new Error('boom') }", json!({})).unwrap_err();
    assert!(err.to_string().contains("boom"), "{err}");
    let err = call("function run() { return run() }", json!({})).unwrap_err();
    assert!(err.to_string().contains("threw"), "{err}");
}

#[test]
fn no_workspace_grant_is_a_refusal() {
    let err = call(
        "function run() { return toolhost.readFile('a.txt') }",
        json!({}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
    // Caught, the script decides.
    let out = call(
        "function run() { try { toolhost.readFile('a.txt') } catch (e) { return 'caught' } }",
        json!({}),
    )
    .unwrap();
    assert_eq!(out.content(), "caught");
    // Rethrown, it is still the refusal; caught and replaced, it is not.
    let err = call(
        "function run() { try { toolhost.readFile('a') } catch (e) { throw e } }",
        json!({}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
    let err = call(
        "function run() { try { toolhost.readFile('a') } catch (e) { throw new Error('mine') } }",
        json!({}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::Failed { .. }), "{err:?}");
    let err = call(
        "async function run() { await null; return toolhost.readFile('a') }",
        json!({}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
}

/// What `wizer-initialize` prepares is the interpreter the next call uses
/// (once: a call leaves nothing ready behind it).
#[test]
fn a_call_uses_the_interpreter_made_ready_before_it() {
    use preinit::Guest as _;
    preinit::Preinit::wizer_initialize();
    assert!(READY.with(|ready| ready.borrow().is_some()));
    let out = call(
        "function run() { return typeof toolhost.readFile }",
        json!({}),
    )
    .unwrap();
    assert_eq!(out.content(), "function");
    assert!(READY.with(|ready| ready.borrow().is_none()));
}

/// A script prepared in the interpreter (a tool's own snapshot) runs as if
/// the call had parsed it: its top-level code runs in the call, and a call
/// given another source runs that one, never the prepared one.
#[test]
fn a_prepared_script_runs_as_the_call_would_parse_it() {
    let source = "globalThis.loads = (globalThis.loads || 0) + 1;
        const at = Date.now();
        function run(a) { return {loads: globalThis.loads, text: a.text, at} }";
    let ready = || READY.with(|r| *r.borrow_mut() = Some(interpreter().ok().unwrap()));
    ready();
    assert!(prepare(source.to_owned()));
    assert!(PREPARED.with(|p| p.borrow().is_some()));
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as f64;
    let out = call(source, json!({"text": "x"})).unwrap();
    let value = out.structured().unwrap();
    assert_eq!(value["loads"], 1);
    assert_eq!(value["text"], "x");
    assert!(value["at"].as_f64().unwrap() >= before, "{value}");
    assert!(PREPARED.with(|p| p.borrow().is_none()), "taken by the call");

    ready();
    assert!(prepare(source.to_owned()));
    // Another script, declaring what the prepared one declared: it runs in
    // an interpreter of its own.
    let other = call(
        "const at = 'other'; function run() { return at }",
        json!({}),
    )
    .unwrap();
    assert_eq!(other.content(), "other");

    ready();
    assert!(!prepare("function run( {".to_owned()), "does not parse");
    assert!(PREPARED.with(|p| p.borrow().is_none()));
    let err = call("function run( {", json!({})).unwrap_err();
    assert!(err.to_string().contains("does not load"), "{err}");
    READY.with(|r| r.borrow_mut().take());
    assert!(!prepare(source.to_owned()), "no interpreter to prepare in");
}

/// split.js gives what QuickJS's own split gives, edge cases included
/// (empty matches, captures, limits, flags, subclasses, unicode), and so
/// does its native cut at `/\s+/` (every space `\s` matches and some it
/// does not, limits, lone surrogates, a long random text).
#[test]
fn the_faster_split_splits_as_the_built_in_does() {
    let cases = r#"JSON.stringify([
        'a b  c'.split(/\s+/), ' a b '.split(/\s+/), 'abc'.split(/(?:)/), 'abc'.split(/x*/), 'a1b22c'.split(/(\d)+/),
        'a,b,,c'.split(/,/, 2), 'a,b'.split(/,/, 0), ''.split(/x/), ''.split(/(?:)/), 'xx'.split(/x/), 'ab'.split(/$/), 'ab'.split(/^/m),
        'a\nb\n'.split(/^/m), 'AbcAd'.split(/a/i), 'aXbxc'.split(/x/iy), 'test'.split(/(t)?/), 'abc'.split(/(b)|(z)/), 'a\u00e9b'.split(/\u00e9/),
        '😀a😀'.split(/a/u), 'aaa'.split(/a*?/), 'aaa'.split(/a*/), 'A<B>bold</B>and<CODE>coded</CODE>'.split(/<(\/)?([^<>]+)>/),
        'x'.split(/x/, undefined), 'one  two'.split(/ /, -1).length, 'ab'.split({[Symbol.split]: undefined}),
        (() => { const r = /b/; r.lastIndex = 5; const out = 'abc'.split(r); return [out, r.lastIndex]; })(),
        (() => { class R extends RegExp {}; return 'a-b'.split(new R('-')); })(),
        'a b  c'.split(/\s+/g), 'axbxc'.split(/x/gy), 'a1b2'.split(/(?<=\d)/), 'one two'.split(/\b/),
        (() => { try { return 'a'.split.call(Symbol('s'), /a/) } catch (e) { return e.name } })(),
        (() => { try { return /a/[Symbol.split](Symbol('s')) } catch (e) { return e.name } })(),
        (() => {
            const saved = [Array.prototype.push, String.prototype.slice, globalThis.RegExp];
            Array.prototype.push = String.prototype.slice = () => { throw new Error('replaced') };
            try { return 'a b'.split(/ /) } finally {
                [Array.prototype.push, String.prototype.slice, globalThis.RegExp] = saved;
            }
        })(),
        Array.from({length: 300}, (_, i) => 'w' + i + ' \t\n  '.slice(0, i % 4 + 1)).join('').split(/\s+/),
        Array.from({length: 300}, (_, i) => 'w' + i + ',;'.slice(0, i % 3)).join('').split(/([,;])?/),
        '\t\n\v\f\r \u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff'.split(/\s+/),
        'a\u180eb\u200bc\u0085d\u2001e'.split(/\s+/), ' a  b '.split(/\s+/, 1), ' a  b '.split(/\s+/, 2),
        ' a  b '.split(/\s+/, 3), ' a  b '.split(/\s+/, 4), ' '.split(/\s+/), 'a'.split(/\s+/), 'a '.split(/\s+/, 2),
        '\ud800 a\udc00 b'.split(/\s+/), 'é b😀\u3000c'.split(/\s+/), 'a b'.split(/\s+/u), 'a\tb'.split(/\s+/gimsyd),
        'a b'.split(/\s+/, 0), 'a  b'.split(/\s/), 'a  b'.split(/\s*/), 'a  b'.split(/(\s+)/),
        (() => {
            // Words and spaces of every kind, the same in both realms.
            const pick = ['w', 'ab', 'é', '😀', '\u180e', ' ', '\t', '\n', '\u00a0', '\u2000', '\u3000', '\ufeff', '  \r\n'];
            let seed = 7, text = '';
            for (let i = 0; i < 4000; i++) { seed = (seed * 1103515245 + 12345) % 2147483648; text += pick[seed % pick.length]; }
            return [text.split(/\s+/), text.split(/\s+/, 100)];
        })(),
    ])"#;
    let answer = |js: &Js| js.with(|ctx| ctx.eval::<String, _>(cases).unwrap());
    let built_in = Js::full(&Runtime::new().unwrap()).unwrap();
    let ours = interpreter().ok().unwrap();
    assert_eq!(answer(&ours), answer(&built_in));
    let replaced = ours.with(|ctx| {
        ctx.eval::<bool, _>("RegExp.prototype[Symbol.split] !== Symbol.split.constructor")
            .unwrap()
    });
    assert!(replaced);
}

/// A script runs as sloppy global code (as boa ran it) whether or not it
/// was prepared: both ways compile it alike.
#[test]
fn scripts_run_as_sloppy_code_prepared_or_not() {
    let source = "function run() { undeclared = 2; return String(undeclared + 010) }";
    assert_eq!(call(source, json!({})).unwrap().content(), "10");
    READY.with(|r| *r.borrow_mut() = Some(interpreter().ok().unwrap()));
    assert!(prepare(source.to_owned()));
    assert_eq!(call(source, json!({})).unwrap().content(), "10");
}

/// Work a script starts without awaiting it runs before the call ends
/// (the job queue is emptied), sync or async.
#[test]
fn work_left_in_the_job_queue_runs_before_the_result_is_read() {
    for source in [
        "function run() { const box = {n: 0}; Promise.resolve().then(() => { box.n = 1 }); return box }",
        "async function run() { const box = {n: 0}; (async () => { await null; await null; box.n = 1 })(); return box }",
    ] {
        let out = call(source, json!({})).unwrap();
        assert_eq!(out.structured(), Some(&json!({"n": 1})), "{source}");
    }
}

/// A lone surrogate, which UTF-8 cannot hold, comes out as U+FFFD, in text
/// and in structured results; a result too deep for JSON says so.
#[test]
fn results_that_utf_8_cannot_hold_are_made_well_formed() {
    let out = call("function run() { return '\\ud800x' }", json!({})).unwrap();
    assert_eq!(out.content(), "\u{fffd}x");
    let out = call("function run() { return {s: 'a\\udc00'} }", json!({})).unwrap();
    assert_eq!(out.structured(), Some(&json!({"s": "a\u{fffd}"})));
    let err = call(
        "function run() { let v = 1; for (let i = 0; i < 500; i++) v = [v]; return v }",
        json!({}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("not JSON-able"), "{err}");
}

/// An error says where in the script it was thrown, or where it does not
/// parse.
#[test]
fn errors_say_where_in_the_script() {
    let err = call("function run() {\n  throw new Error('boom')\n}", json!({})).unwrap_err();
    assert!(err.to_string().contains("tool.js:2"), "{err}");
    let err = call("function run() {\n  return )\n}", json!({})).unwrap_err();
    assert!(
        err.to_string().contains("does not load") && err.to_string().contains("tool.js:2"),
        "{err}"
    );
}
