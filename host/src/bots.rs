//! The agent side of the seeds as services of toolhost's own, offered to
//! `toolhost agent` and `serve` when the configuration makes them
//! possible: `spawn` (a sub-agent on the tool loop, within a depth limit),
//! `delegate_to_bot` and `collaborate` (another `[bots.NAME]`'s loop,
//! never the caller's own, without delegation tools), and `message` (the
//! person's terminal or a webhook). Each runs through the executor's
//! pipeline like any tool (modes, audit, deadlines); the loops they start
//! run their tool calls through the same executor, so a sub-agent or a
//! bot never gets more than the executor grants.
//!
//! The services are made with the executor ([`crate::config::Config::executor`]);
//! the loops need the executor itself, so the caller hands it over once
//! it is shared ([`Bots::attach`]). Until then a call says so.

use crate::agent::{AgentError, Budget, Endpoint, Outcome, Shape, ToolLoop};
use crate::config::{AgentSection, BotSection, Config};
use crate::executor::Executor;
use crate::services::{Service, ServiceCall, ServiceError, Services};
use crate::types::context::{CallContext, CancelToken};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

mod collaborate;
mod cron;
pub use cron::{Job, Ran, Schedule, describe};
mod improve;
mod message;
mod phone;

/// How long a call of a tool that runs a model loop may take (a loop of
/// several requests, each up to the endpoint timeout).
pub const LOOP_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The channel a sub-agent's calls carry: `spawn:DEPTH`.
const SPAWN_CHANNEL: &str = "spawn:";

/// The channel the calls of a bot answering a delegation or a
/// collaboration carry: it may not delegate again.
const DELEGATED_CHANNEL: &str = "delegated";

/// The tools that hand work to another loop (now or later); a
/// delegation's target, a collaboration and a scheduled job never get
/// them.
pub const DELEGATION_TOOLS: &[&str] = &["delegate_to_bot", "collaborate", "spawn", "cron"];

/// The tools that write the executor's persona.
const PERSONA_WRITERS: &[&str] = &["update_soul", "update_identity", "manage_goals", "improve"];

/// Where a message to the person's terminal goes.
pub type Terminal = Arc<dyn Fn(&str) + Send + Sync>;

/// The bots and agent services of one configuration.
#[derive(Clone)]
pub struct Bots {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Bots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bots")
            .field("bots", &self.inner.bots.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

struct Inner {
    agent: AgentSection,
    bots: BTreeMap<String, BotSection>,
    message: crate::config::MessageSection,
    phone: Option<crate::config::PhoneSection>,
    /// Where scheduled jobs are kept (none without a state directory).
    cron: Option<cron::Store>,
    executor: OnceLock<Weak<Executor>>,
    terminal: OnceLock<Terminal>,
    /// The endpoint, model and budget the agent itself runs with (the
    /// command line's flags over `[agent]`), for the loops it starts.
    run_as: OnceLock<(Endpoint, String, Budget)>,
    collaborations: collaborate::Sessions,
}

impl Bots {
    /// The bots and services `config` describes.
    pub fn new(config: &Config) -> Self {
        Self {
            inner: Arc::new(Inner {
                agent: config.agent.clone(),
                bots: config.bots.clone(),
                message: config.message.clone(),
                phone: config.phone.clone(),
                cron: config
                    .state_home()
                    .map(|s| cron::Store::new(s.join("cron"))),
                executor: OnceLock::new(),
                terminal: OnceLock::new(),
                run_as: OnceLock::new(),
                collaborations: collaborate::Sessions::default(),
            }),
        }
    }

    /// The services to offer: `spawn` and `improve` when `[agent]` names
    /// an endpoint and a model; `delegate_to_bot` and `collaborate` when
    /// bots are configured; `message` when `terminal` (the person watches
    /// this process) or `[message] webhook`; `phone_call` with `[phone]`;
    /// `cron` with an endpoint and a state directory.
    pub fn services(&self, terminal: bool) -> Services {
        let mut services = Services::new();
        let mut offer = |service: Result<Service, String>| match service {
            Ok(service) => {
                if let Err(err) = services.register(service) {
                    tracing::warn!(%err, "an agent service is not offered");
                }
            }
            Err(err) => tracing::warn!(%err, "an agent service is not offered"),
        };
        if self.inner.agent.endpoint.is_some() && self.inner.agent.model.is_some() {
            offer(self.spawn());
        }
        if !self.inner.bots.is_empty() {
            offer(self.delegate());
            offer(self.collaborate());
        }
        if terminal || self.inner.message.webhook.is_some() {
            offer(self.message());
        }
        if let Some(phone) = self.phone() {
            offer(phone);
        }
        if self.inner.agent.endpoint.is_some() && self.inner.agent.model.is_some() {
            offer(self.improve());
            if let Some(cron) = self.cron() {
                offer(cron);
            }
        }
        services
    }

    /// Hand over the executor the services run their loops on (its
    /// services are these), and where messages to the terminal go.
    pub fn attach(&self, executor: &Arc<Executor>, terminal: Option<Terminal>) {
        let _ = self.inner.executor.set(Arc::downgrade(executor));
        if let Some(terminal) = terminal {
            let _ = self.inner.terminal.set(terminal);
        }
    }

    /// The endpoint, model and budget the agent runs with, used for the
    /// loops it starts that name no bot of their own (a sub-agent) and
    /// for their budget: what a person gave on the command line holds for
    /// them too.
    pub fn run_as(&self, endpoint: Endpoint, model: String, budget: Budget) {
        let _ = self.inner.run_as.set((endpoint, model, budget));
    }

    /// The bot `name`'s configuration, if there is one.
    pub fn bot(&self, name: &str) -> Option<&BotSection> {
        self.inner.bots.get(name)
    }

    /// The endpoint and model bot `name` (or, for `None`, `[agent]`) asks.
    pub fn endpoint(&self, bot: Option<&str>) -> Result<(Endpoint, String), AgentError> {
        if let (None, Some((endpoint, model, _))) = (bot, self.inner.run_as.get()) {
            return Ok((endpoint.clone(), model.clone()));
        }
        endpoint_for(&self.inner.agent, bot.and_then(|b| self.inner.bots.get(b)))
    }

    /// How bot `name` shapes its loop: its tools, prompt mode and persona.
    /// A bot with a soul directory of its own is offered none of the
    /// tools that write the persona: they write the executor's soul
    /// directory, which is not its.
    pub fn shape(&self, bot: &str) -> Shape {
        self.inner
            .bots
            .get(bot)
            .map(|b| Shape {
                tools: b.tools.clone(),
                without: if b.soul_dir.is_some() {
                    PERSONA_WRITERS.iter().map(|t| (*t).to_owned()).collect()
                } else {
                    Vec::new()
                },
                prompt_mode: b.prompt_mode,
                soul_dir: b.soul_dir.clone(),
            })
            .unwrap_or_default()
    }

    /// `spawn`: a sub-agent running the tool loop on a self-contained task.
    fn spawn(&self) -> Result<Service, String> {
        let bots = self.clone();
        Service::new(
            "spawn",
            "Run a sub-agent on a self-contained task with the tool loop; its answer comes back.",
            json!({
                "type": "object",
                "properties": {
                    "task": {"type": "string", "minLength": 1},
                    "context": {"type": ["string", "null"]},
                },
                "required": ["task"],
            }),
            move |call: ServiceCall| {
                let bots = bots.clone();
                blocking(move || bots.run_spawn(&call))
            },
        )
        // A sub-agent runs a loop of its own: the `spawn` tool gets minutes
        // on every surface (agent, MCP, CLI), not the runtime's seconds.
        .map(|s| s.with_timeout(LOOP_TIMEOUT))
    }

    fn run_spawn(&self, call: &ServiceCall) -> Result<Value, ServiceError> {
        let depth = call
            .context
            .channel
            .as_deref()
            .and_then(|c| c.strip_prefix(SPAWN_CHANNEL))
            .and_then(|d| d.parse::<u32>().ok())
            .unwrap_or(0);
        let most = self.inner.agent.max_depth;
        if depth >= most {
            return Err(ServiceError::Denied(format!(
                "a sub-agent at depth {depth} may not start another (the most is {most}, \
                 [agent] max_depth); do the task yourself"
            )));
        }
        let task = call.input["task"].as_str().unwrap_or_default();
        let task = match call.input["context"]
            .as_str()
            .filter(|c| !c.trim().is_empty())
        {
            Some(context) => format!("{task}\n\nContext:\n{context}"),
            None => task.to_owned(),
        };
        let bot = call
            .context
            .agent
            .as_deref()
            .filter(|a| self.bot(a).is_some());
        let mut shape = bot.map(|b| self.shape(b)).unwrap_or_default();
        shape.without.extend(
            ["delegate_to_bot", "collaborate", "cron"]
                .iter()
                .map(|t| (*t).to_owned()),
        );
        if depth + 1 >= most {
            shape.without.push("spawn".to_owned());
        }
        let context = CallContext {
            channel: Some(format!("{SPAWN_CHANNEL}{}", depth + 1)),
            ..call.context.clone()
        };
        let outcome = self.run_loop(bot, &task, context, shape, &call.cancel)?;
        Ok(answer_value(&outcome, None))
    }

    /// `delegate_to_bot`: another bot answers, with its own loop.
    fn delegate(&self) -> Result<Service, String> {
        let bots = self.clone();
        let names: Vec<String> = self
            .inner
            .bots
            .iter()
            .map(|(name, bot)| match bot.description.trim() {
                "" => name.clone(),
                about => format!("{name} ({about})"),
            })
            .collect();
        Service::new(
            "delegate_to_bot",
            format!(
                "Hand a task to another bot, which answers it with its own model, persona and \
                 tools (but no delegation of its own); its answer comes back. Bots: {}. Never \
                 yourself.",
                names.join("; ")
            ),
            json!({
                "type": "object",
                "properties": {
                    "bot": {"type": "string", "description": "The bot's name."},
                    "task": {"type": "string", "minLength": 1, "description": "What it should do, with everything it needs: it does not see this conversation."},
                },
                "required": ["bot", "task"],
                "additionalProperties": false,
            }),
            move |call: ServiceCall| {
                let bots = bots.clone();
                blocking(move || bots.run_delegate(&call))
            },
        )
        .map(|s| s.as_tool("Delegate to a bot").with_timeout(LOOP_TIMEOUT))
    }

    fn run_delegate(&self, call: &ServiceCall) -> Result<Value, ServiceError> {
        let target = self.target(call)?;
        let task = call.input["task"].as_str().unwrap_or_default();
        let mut shape = self.shape(&target);
        shape
            .without
            .extend(DELEGATION_TOOLS.iter().map(|t| (*t).to_owned()));
        let context = CallContext {
            agent: Some(target.clone()),
            channel: Some(DELEGATED_CHANNEL.to_owned()),
            ..call.context.clone()
        };
        let outcome = self.run_loop(Some(&target), task, context, shape, &call.cancel)?;
        Ok(answer_value(&outcome, Some(&target)))
    }

    /// The bot `call` names, checked: configured, not the caller, and the
    /// caller not itself answering a delegation.
    fn target(&self, call: &ServiceCall) -> Result<String, ServiceError> {
        let name = call.input["bot"].as_str().unwrap_or_default().trim();
        if call.context.channel.as_deref() == Some(DELEGATED_CHANNEL) {
            return Err(ServiceError::Denied(
                "a bot answering a delegation or a collaboration does not delegate further; \
                 answer with what you can do"
                    .to_owned(),
            ));
        }
        if call.context.agent.as_deref() == Some(name) {
            return Err(ServiceError::Denied(format!(
                "`{name}` is you: a bot never delegates to or collaborates with itself; do the \
                 task yourself"
            )));
        }
        if !self.inner.bots.contains_key(name) {
            let known: Vec<&str> = self.inner.bots.keys().map(String::as_str).collect();
            return Err(ServiceError::Invalid(format!(
                "no bot is named `{name}`; the bots are: {}",
                known.join(", ")
            )));
        }
        Ok(name.to_owned())
    }

    /// The executor the services were attached to.
    fn executor(&self) -> Result<Arc<Executor>, ServiceError> {
        self.inner
            .executor
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| {
                ServiceError::Failed(
                    "the agent services are not attached to an executor yet".to_owned(),
                )
            })
    }

    /// Run a loop as `bot` (or as `[agent]`) on `task`.
    fn run_loop(
        &self,
        bot: Option<&str>,
        task: &str,
        context: CallContext,
        shape: Shape,
        cancel: &CancelToken,
    ) -> Result<Outcome, ServiceError> {
        let executor = self.executor()?;
        let (endpoint, model) = self
            .endpoint(bot)
            .map_err(|e| ServiceError::Failed(e.to_string()))?;
        let budget = match self.inner.run_as.get() {
            Some((_, _, budget)) => *budget,
            None => self.inner.agent.budget().unwrap_or_default(),
        };
        let system = bot
            .and_then(|b| self.inner.bots.get(b))
            .and_then(|b| b.system.clone())
            .or_else(|| self.inner.agent.system.clone());
        let mut run = ToolLoop::new(&executor, endpoint, model)
            .with_budget(budget)
            .with_context(context)
            .with_cancel(cancel.clone())
            .with_shape(shape);
        if let Some(system) = system {
            run = run.with_system(system);
        }
        run.run(task)
            .map_err(|e| ServiceError::Failed(e.to_string()))
    }
}

/// What a loop's outcome answers: its text for the model, and the facts.
fn answer_value(outcome: &Outcome, bot: Option<&str>) -> Value {
    let mut value = json!({
        "text": outcome.answer,
        // What the spawn tool reads.
        "result": outcome.answer,
        "stop": outcome.stop,
        "rounds": outcome.rounds,
        "tool_calls": outcome.tool_calls,
        "changed_files": outcome.changed_files,
    });
    if let Some(bot) = bot {
        value["bot"] = json!(bot);
    }
    value
}

/// An HTTP client for a service's one request (a webhook, the phone
/// provider): 30 s at most, no redirects (a credential sent to a URL a
/// person chose follows no Location), every status answered.
fn http_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(30)))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .new_agent()
}

/// Run blocking `work` off the services' async workers.
fn blocking<F>(work: F) -> crate::services::ServiceFuture
where
    F: FnOnce() -> Result<Value, ServiceError> + Send + 'static,
{
    Box::pin(async move {
        tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
            Err(ServiceError::Failed(format!(
                "the service stopped unexpectedly: {e}"
            )))
        })
    })
}

/// The endpoint and model of `bot` (its keys over `[agent]`'s): a bot
/// with an endpoint of its own uses its own key variable only; the
/// fallback is `[agent]`'s, for a bot on `[agent]`'s endpoint.
pub fn endpoint_for(
    agent: &AgentSection,
    bot: Option<&BotSection>,
) -> Result<(Endpoint, String), AgentError> {
    let own = bot.and_then(|b| b.endpoint.as_ref());
    let url = own.or(agent.endpoint.as_ref()).ok_or_else(|| {
        AgentError::Usage(
            "no endpoint: give --endpoint URL (e.g. http://127.0.0.1:11434/v1) or set [agent] \
             endpoint (or the bot's own) in toolhost.toml"
                .to_owned(),
        )
    })?;
    let model = bot
        .and_then(|b| b.model.clone())
        .or_else(|| agent.model.clone())
        .ok_or_else(|| {
            AgentError::Usage(
                "no model: give --model NAME or set [agent] model (or the bot's own) in \
                 toolhost.toml"
                    .to_owned(),
            )
        })?;
    let api: crate::agent::Api = bot
        .and_then(|b| b.api.as_deref())
        .unwrap_or(&agent.api)
        .parse()?;
    let mut endpoint = Endpoint::speaking(api, url)?
        .with_timeout(Duration::from_secs(agent.request_timeout_secs))
        .with_retries(agent.retries);
    let key_var = match own {
        Some(_) => bot.and_then(|b| b.api_key_env.as_ref()),
        None => bot
            .and_then(|b| b.api_key_env.as_ref())
            .or(agent.api_key_env.as_ref()),
    };
    if let Some(var) = key_var {
        endpoint = endpoint.with_api_key(api_key(var, "--api-key-env or api_key_env")?)?;
    }
    if own.is_none()
        && let Some(fallback) = &agent.fallback
    {
        let api = fallback
            .api()
            .map_err(|e| AgentError::Usage(e.to_string()))?;
        let mut second = Endpoint::speaking(api, &fallback.endpoint)
            .map_err(|e| AgentError::Usage(format!("[agent.fallback] {e}")))?
            .with_timeout(Duration::from_secs(agent.request_timeout_secs))
            .with_retries(agent.retries);
        if let Some(var) = &fallback.api_key_env {
            second = second.with_api_key(api_key(var, "[agent.fallback] api_key_env")?)?;
        }
        endpoint = endpoint.with_fallback(second, fallback.model.clone());
    }
    Ok((endpoint, model))
}

/// The API key in the environment variable `var` (named by `key`).
pub fn api_key(var: &str, key: &str) -> Result<String, AgentError> {
    if !crate::types::grant::is_env_name(var) {
        // Never echo it: it may be the key itself, pasted in by mistake.
        return Err(AgentError::Usage(format!(
            "{key} takes the NAME of an environment variable holding the key (letters, digits \
             and `_`), not the key itself"
        )));
    }
    std::env::var(var).map_err(|_| {
        AgentError::Usage(format!(
            "the environment variable {var} ({key}) is not set; export it with the API key"
        ))
    })
}
