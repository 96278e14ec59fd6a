//! The `react` tool (as in the async Python tools): a ReAct scratchpad bound to the session.
//! Each call records a step — a thought, the action taken, what was
//! observed — and returns the scratchpad so far. Bounded: the newest
//! [`MAX_STEPS`] steps are kept, each field at most [`MAX_FIELD_CHARS`].

use std::path::Path;
use toolhost_builtin::contract;
use toolhost_builtin::lock::DirLock;
use toolhost_sdk::export_tool;
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};

/// Steps kept per session (older ones are dropped, and counted).
pub const MAX_STEPS: usize = 50;
/// The longest thought, action or observation, in characters.
pub const MAX_FIELD_CHARS: usize = 4_000;

/// Arguments of `react`: one step, or none to read the scratchpad.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What you think now: the reasoning toward the next action.
    #[serde(default)]
    pub thought: Option<String>,
    /// The action you take (or took) because of it, e.g. a tool call.
    #[serde(default)]
    pub action: Option<String>,
    /// What the action showed.
    #[serde(default)]
    pub observation: Option<String>,
    /// Start a new scratchpad (drop this session's steps) before recording.
    #[serde(default)]
    pub clear: bool,
}

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// Its number in the session, from 1.
    pub n: usize,
    /// The thought, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    /// The action, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The observation, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<String>,
}

/// The session's scratchpad.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct Scratchpad {
    /// The steps kept, oldest first.
    pub steps: Vec<Step>,
    /// How many older steps were dropped to stay within the bound.
    pub dropped: usize,
}

/// The `react` tool.
pub struct React;

impl Tool for React {
    type Args = Args;
    const NAME: &'static str = "react";
    const TITLE: Option<&'static str> = Some("Think step by step");
    const DESCRIPTION: &'static str = "Your ReAct scratchpad for this session: record a step \
        with any of `thought`, `action` and `observation`, and get the scratchpad so far (`{}` \
        reads it, `clear: true` starts over). The newest 50 steps are kept.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Directory {
            name: contract::dir::REACT.to_owned(),
            writable: true,
        }]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Scratchpad>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        run(args, ctx, Path::new(contract::path::REACT))
    }
}

export_tool!(React);

/// The body of [`React::call`], over the state directory `dir`.
pub fn run(args: Args, ctx: &Context, dir: &Path) -> Result<Output, ToolError> {
    let dir = toolhost_sdk::fs::granted_dir(dir, "react")?;
    let mut fields = [
        ("thought", args.thought),
        ("action", args.action),
        ("observation", args.observation),
    ];
    for (name, value) in &mut fields {
        if let Some(text) = value.as_deref() {
            let text = text.trim();
            if text.is_empty() {
                return Err(ToolError::invalid_input(format!(
                    "`{name}` is empty; leave it out or say something"
                )));
            }
            let n = text.chars().count();
            if n > MAX_FIELD_CHARS {
                return Err(ToolError::invalid_input(format!(
                    "`{name}` has {n} characters; at most {MAX_FIELD_CHARS} are allowed: keep the gist"
                )));
            }
            *value = Some(text.to_owned());
        }
    }
    let [(_, thought), (_, action), (_, observation)] = fields;
    let recording = thought.is_some() || action.is_some() || observation.is_some();
    let file = toolhost_builtin::session::file(dir, ctx.session(), "json");
    let lock_name = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let _lock = (recording || args.clear)
        .then(|| {
            DirLock::take(
                dir,
                &lock_name,
                "another react call of this session is still writing",
            )
        })
        .transpose()?;
    let mut pad = if args.clear {
        Scratchpad::default()
    } else {
        load(&file)?
    };
    if recording {
        let n = pad.steps.last().map_or(pad.dropped, |s| s.n) + 1;
        pad.steps.push(Step {
            n,
            thought,
            action,
            observation,
        });
        let extra = pad.steps.len().saturating_sub(MAX_STEPS);
        pad.steps.drain(..extra);
        pad.dropped += extra;
    }
    if recording || args.clear {
        let bytes = serde_json::to_vec(&pad).map_err(|e| ToolError::failed(e.to_string()))?;
        toolhost_sdk::fs::write_atomic_in_dir(&file, &bytes)
            .map_err(|e| e.context("cannot save the scratchpad"))?;
    }
    Ok(Output::text(render(&pad)).with_structured(&pad))
}

fn load(file: &Path) -> Result<Scratchpad, ToolError> {
    match std::fs::read(file) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            ToolError::failed(format!("the saved scratchpad is unreadable ({e})"))
                .with_hint("send `clear: true` to start a new one")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Scratchpad::default()),
        Err(e) => Err(ToolError::failed(format!(
            "cannot read the scratchpad: {e}"
        ))),
    }
}

fn render(pad: &Scratchpad) -> String {
    if pad.steps.is_empty() {
        return "The scratchpad is empty. Record a step with `thought`, `action`, `observation`.\n"
            .to_owned();
    }
    let mut text = format!("Scratchpad ({} steps", pad.steps.len());
    if pad.dropped > 0 {
        text.push_str(&format!("; {} older steps dropped", pad.dropped));
    }
    text.push_str("):\n");
    for step in &pad.steps {
        let mut first = true;
        for (label, value) in [
            ("Thought", &step.thought),
            ("Action", &step.action),
            ("Observation", &step.observation),
        ] {
            if let Some(value) = value {
                let lead = if first {
                    format!("{}.", step.n)
                } else {
                    " ".repeat(format!("{}.", step.n).len())
                };
                text.push_str(&format!("{lead} {label}: {value}\n"));
                first = false;
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(thought: Option<&str>, action: Option<&str>, observation: Option<&str>) -> Args {
        Args {
            thought: thought.map(str::to_owned),
            action: action.map(str::to_owned),
            observation: observation.map(str::to_owned),
            clear: false,
        }
    }

    #[test]
    fn steps_accumulate_per_session_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let a = Context::default().with_session("a");
        run(
            step(Some("The bug is in parsing"), Some("read parse.rs"), None),
            &a,
            dir.path(),
        )
        .unwrap();
        let out = run(
            step(None, None, Some("line 40 drops the sign")),
            &a,
            dir.path(),
        )
        .unwrap();
        assert_eq!(
            out.content(),
            "Scratchpad (2 steps):\n1. Thought: The bug is in parsing\n   Action: read parse.rs\n2. Observation: line 40 drops the sign\n"
        );
        let b = Context::default().with_session("b");
        let theirs = run(Args::default(), &b, dir.path()).unwrap();
        assert_eq!(theirs.structured().unwrap()["steps"], serde_json::json!([]));
        let cleared = run(
            Args {
                clear: true,
                ..step(Some("start over"), None, None)
            },
            &a,
            dir.path(),
        )
        .unwrap();
        assert_eq!(cleared.structured().unwrap()["steps"][0]["n"], 1);
        assert_eq!(
            cleared.structured().unwrap()["steps"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn the_scratchpad_is_bounded_and_counts_what_it_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Context::default();
        for n in 0..MAX_STEPS + 3 {
            run(
                step(Some(&format!("thought {n}")), None, None),
                &ctx,
                dir.path(),
            )
            .unwrap();
        }
        let out = run(Args::default(), &ctx, dir.path()).unwrap();
        let s = out.structured().unwrap();
        assert_eq!(s["dropped"], 3);
        assert_eq!(s["steps"].as_array().unwrap().len(), MAX_STEPS);
        assert_eq!(s["steps"][0]["n"], 4);
        assert_eq!(s["steps"][0]["thought"], "thought 3");
        let big = run(
            step(Some(&"x".repeat(MAX_FIELD_CHARS + 1)), None, None),
            &ctx,
            dir.path(),
        );
        assert!(big.unwrap_err().to_string().contains("at most 4000"));
        let empty = run(step(None, Some("  "), None), &ctx, dir.path());
        assert!(empty.unwrap_err().to_string().contains("`action` is empty"));
    }
}
