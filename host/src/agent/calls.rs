//! One round's tool calls: planned against the budget, run at once through
//! the executor's pipeline, answered to the model in the order it gave them.

use super::openai::arguments;
use super::{Event, MAX_CALLS_PER_ROUND, Progress, ToolLoop};
use crate::executor::CallOptions;
use crate::types::confirm::ForModel;
use crate::types::context::CallContext;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

impl ToolLoop<'_> {
    /// Run one round's tool calls, concurrently, within the budget; their
    /// `role: tool` messages in the order the model gave them.
    pub(super) fn run_calls(&self, calls: &[Value], run: &mut Progress, round: u32) -> Vec<Value> {
        let spent = &mut run.spent;
        let offered = &run.offered;
        let planned: Vec<Planned> = calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let name = call
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let args = arguments(call.pointer("/function/arguments"));
                let within = i < MAX_CALLS_PER_ROUND && spent.calls < self.budget.max_tool_calls;
                let offered = offered.contains(&name);
                if within && args.is_ok() && offered {
                    spent.calls += 1;
                }
                Planned {
                    id,
                    name,
                    args,
                    within,
                    late: i >= MAX_CALLS_PER_ROUND,
                    round,
                    offered,
                }
            })
            .collect();
        // A thread for each call that runs; the others are answered here.
        let results: Vec<Answered> = std::thread::scope(|scope| {
            let running: Vec<_> = planned
                .iter()
                .map(|p| {
                    if !p.runs() {
                        return Err(Answered::refused(self.refusal(p)));
                    }
                    std::thread::Builder::new()
                        .name("toolhost-agent-call".to_owned())
                        .spawn_scoped(scope, move || self.answer(p))
                        .map_err(|e| {
                            Answered::refused(format!(
                                "error (failed): this call could not start ({e}); call it again"
                            ))
                        })
                })
                .collect();
            running
                .into_iter()
                .map(|started| match started {
                    Ok(handle) => handle.join().unwrap_or_else(|_| {
                        Answered::refused(
                            "error (failed): the tool call stopped unexpectedly".to_owned(),
                        )
                    }),
                    Err(answer) => answer,
                })
                .collect()
        });
        planned
            .iter()
            .zip(results)
            .map(|(p, answered)| {
                run.changed.add(&answered.changed);
                let content = run.spent.take(answered.text, self.budget.max_result_chars);
                json!({"role": "tool", "tool_call_id": p.id, "content": content})
            })
            .collect()
    }

    /// What the model is told about a call that does not run.
    fn refusal(&self, planned: &Planned) -> String {
        if planned.name.is_empty() {
            return "error (invalid_input): this tool call names no function; call a tool by \
                    its name"
                .to_owned();
        }
        if !planned.offered {
            return self.not_offered(&planned.name);
        }
        if let Err(why) = &planned.args {
            return format!(
                "error (invalid_input): the arguments of this call to `{}` are not a JSON \
                 object ({why}); call it again with its arguments as one JSON object",
                planned.name
            );
        }
        if planned.late {
            return format!(
                "error (budget): at most {MAX_CALLS_PER_ROUND} tool calls run from one answer; \
                 `{}` did not run. Call it again in your next answer.",
                planned.name
            );
        }
        format!(
            "error (budget): this run may make at most {} tool calls and has made them; \
             `{}` did not run. Answer with what you have.",
            self.budget.max_tool_calls, planned.name
        )
    }

    /// What the model is told about a tool this run does not offer.
    fn not_offered(&self, name: &str) -> String {
        let offered = self.offered();
        let near = crate::registry::near_names(name, offered.iter());
        let hint = if near.is_empty() {
            "call one of the tools you were given".to_owned()
        } else {
            format!("did you mean {}?", near.join(", "))
        };
        format!("error (not_found): no tool `{name}` is offered here; {hint}")
    }

    /// Run one planned call through the pipeline.
    fn answer(&self, planned: &Planned) -> Answered {
        let Ok(args) = &planned.args else {
            return Answered::refused(self.refusal(planned));
        };
        self.emit(Event::ToolCall {
            round: planned.round,
            id: planned.id.clone(),
            tool: planned.name.clone(),
        });
        let started = Instant::now();
        let options = CallOptions {
            context: CallContext {
                call_id: crate::types::context::CallId::new(),
                ..self.context.clone()
            },
            cancel: Some(self.cancel.clone()),
            confirmer: Some(Arc::new(ForModel(self.executor.confirmer()))),
            ..CallOptions::default()
        };
        let result = self.executor.call(&planned.name, args, &options);
        let outcome = result
            .error_kind()
            .map_or("success", crate::types::result::ErrorKind::as_str);
        self.emit(Event::ToolResult {
            round: planned.round,
            id: planned.id.clone(),
            tool: planned.name.clone(),
            outcome: outcome.to_owned(),
            ms: started.elapsed().as_millis() as u64,
            changed: result.changed_paths.clone(),
        });
        Answered {
            text: result.model_text(),
            changed: result.changed_paths,
        }
    }
}

/// One tool call as the model asked for it.
struct Planned {
    id: String,
    name: String,
    /// The arguments as JSON object text, or why they are not one.
    args: Result<String, String>,
    /// Whether the budget lets it run.
    within: bool,
    /// Past the calls one answer may run.
    late: bool,
    round: u32,
    /// One of the tools this run offers.
    offered: bool,
}

impl Planned {
    /// Whether it runs (on a thread of its own).
    fn runs(&self) -> bool {
        self.within && !self.late && self.args.is_ok() && self.offered
    }
}

/// A call's answer to the model, and the files it changed.
struct Answered {
    text: String,
    changed: Vec<String>,
}

impl Answered {
    fn refused(text: String) -> Self {
        Self {
            text,
            changed: Vec::new(),
        }
    }
}

/// What a run has used of its budget.
#[derive(Default)]
pub(super) struct Spent {
    pub(super) calls: u32,
    chars: usize,
    pub(super) tokens: u64,
}

impl Spent {
    /// `content` within what is left of the result budget.
    fn take(&mut self, content: String, max: usize) -> String {
        let left = max.saturating_sub(self.chars);
        let length = content.chars().count();
        if length <= left {
            self.chars += length;
            return content;
        }
        self.chars = max;
        let kept: String = content.chars().take(left).collect();
        format!(
            "{kept}\n[cut: this run's tool results may total at most {max} characters, and that \
             is reached; answer with what you have]"
        )
    }
}

/// The files a run changed, each once, in the order first changed.
#[derive(Default)]
pub(super) struct Changed(Vec<String>);

impl Changed {
    fn add(&mut self, paths: &[String]) {
        for path in paths {
            if !self.0.contains(path) {
                self.0.push(path.clone());
            }
        }
    }

    pub(super) fn into_list(self) -> Vec<String> {
        self.0
    }
}
