//! `toolhost agent` flags.

use super::Mode;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `toolhost agent` flags.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The task; `-` reads it from stdin.
    pub task: String,
    /// The endpoint: a base URL such as http://127.0.0.1:11434/v1 (the
    /// path /chat/completions is added) or the full completions URL.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// The model the endpoint serves.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The API the endpoint speaks: openai (chat completions; default) or
    /// anthropic (messages; the key goes in x-api-key).
    #[arg(long, value_name = "openai|anthropic")]
    pub api: Option<String>,
    /// The environment variable holding the API key (none: no key is sent).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Requests to the model, the last one without tools (default 5).
    #[arg(long, value_name = "N")]
    pub max_rounds: Option<u32>,
    /// Tool calls the run may make (default 50).
    #[arg(long, value_name = "N")]
    pub max_tool_calls: Option<u32>,
    /// Characters of tool results the run may give the model (default 200000).
    #[arg(long, value_name = "N")]
    pub max_result_chars: Option<usize>,
    /// Tokens the run may use, as the endpoint counts them (default: no
    /// limit); past it the run stops with `budget_exceeded`.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Print the whole outcome as JSON (answer, stop, rounds, tool_calls,
    /// tokens, changed_files, transcript), however the run ended.
    #[arg(long, conflicts_with = "json_events")]
    pub json: bool,
    /// Print one JSON line per step as it happens (asking, answer,
    /// tool_call, tool_result, nudge), then the outcome as `"event":"end"`.
    #[arg(long)]
    pub json_events: bool,
    /// `json`: the answer must be one JSON value, which is printed alone
    /// (the model is asked again when it is not).
    #[arg(long, value_name = "text|json")]
    pub output: Option<String>,
    /// With --output json: the JSON Schema (a file) the value must match.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// When to ask before running (as for `toolhost call`).
    #[arg(long, value_name = "yolo|confirm-sensitive|confirm-all")]
    pub mode: Option<Mode>,
    /// Run as the bot NAME of the configuration's `[bots.NAME]`: its
    /// endpoint, model, persona, prompt mode and tools (flags still win).
    #[arg(long, value_name = "NAME")]
    pub bot: Option<String>,
    /// The session the run's calls belong to.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

/// `toolhost schedule` actions.
#[derive(Debug, Subcommand)]
pub enum ScheduleAction {
    /// Run the jobs that are due, through the tool loop.
    Run {
        /// Keep running: look for due jobs every minute until Ctrl-C.
        #[arg(long)]
        watch: bool,
        /// Print what ran as JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// List the jobs: schedule, next run, last result.
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
}
