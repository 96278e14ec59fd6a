//! `cron`: jobs that run a task later through the tool loop (the bot
//! framework's scheduler): one-shot `at` an RFC 3339 time, `every` a
//! duration (`30m`, `2h`, at least a minute), or a cron expression (five
//! fields, parsed by croner, in UTC). Jobs are kept in `cron/jobs.json`
//! of the state directory; `toolhost schedule run` (or `serve`, each
//! minute) runs the ones due, each holding a lock so two runs of one job
//! never overlap, each run logged in `cron/runs/ID/` and its end in the
//! audit log.
//!
//! A job missed while nothing ran (the machine was off) runs once at the
//! next `schedule run`, then its next time is counted from then: there is
//! no catch-up of every missed occurrence.

use super::{Bots, blocking};
use crate::agent::Outcome;
use crate::services::{Service, ServiceCall, ServiceError};
use crate::types::context::{CallContext, CancelToken};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::str::FromStr as _;
use std::time::{Duration, SystemTime};

/// Most jobs kept.
const MOST_JOBS: usize = 50;

/// The shortest `every`.
const SHORTEST_EVERY: Duration = Duration::from_secs(60);

/// The longest `every`.
const LONGEST_EVERY: Duration = Duration::from_secs(366 * 24 * 3600);

/// When a job runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// Once, at this RFC 3339 time.
    At(String),
    /// Over and over, this long apart (`30m`, `2h`).
    Every(String),
    /// At the times a five-field cron expression names, in UTC.
    Cron(String),
}

/// The end of a job's last run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRun {
    /// When it started and ended (RFC 3339).
    pub started: String,
    /// When it ended.
    pub ended: String,
    /// How the loop stopped (`answered`, `failed`, ...).
    pub stop: String,
    /// The answer, cut to 500 characters.
    pub answer: String,
}

/// One scheduled job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// Its name, unique.
    pub name: String,
    /// When it runs.
    pub schedule: Schedule,
    /// What the loop is asked.
    pub task: String,
    /// The bot it runs as, if any (else `[agent]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot: Option<String>,
    /// The agent that added it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_by: Option<String>,
    /// When it runs next (RFC 3339); none once an `at` job has run.
    #[serde(default)]
    pub next: Option<String>,
    /// How many times it ran.
    #[serde(default)]
    pub runs: u64,
    /// Its last run.
    #[serde(default)]
    pub last: Option<LastRun>,
}

/// What one `schedule run` did with one job.
#[derive(Debug, Clone, Serialize)]
pub struct Ran {
    /// The job.
    pub name: String,
    /// `ran`, or why not (`already running`).
    pub status: String,
    /// How its loop stopped, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

fn now() -> SystemTime {
    SystemTime::now()
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

fn parse_time(text: &str) -> Result<SystemTime, String> {
    humantime::parse_rfc3339_weak(text.trim()).map_err(|e| {
        format!("`{text}` is not a time: give RFC 3339 in UTC, e.g. 2026-12-01T09:00:00Z ({e})")
    })
}

impl Schedule {
    /// The schedule `input` gives (one of `at`, `every`, `cron`), checked.
    fn from_input(input: &Value) -> Result<Self, String> {
        let given: Vec<(&str, &str)> = ["at", "every", "cron"]
            .iter()
            .filter_map(|k| input[*k].as_str().map(|v| (*k, v)))
            .collect();
        let schedule = match given.as_slice() {
            [("at", v)] => Self::At((*v).to_owned()),
            [("every", v)] => Self::Every((*v).to_owned()),
            [("cron", v)] => Self::Cron((*v).to_owned()),
            _ => return Err("give exactly one of `at`, `every` or `cron`".to_owned()),
        };
        schedule.next_after(now(), true)?;
        Ok(schedule)
    }

    /// The first time it runs after `after` (`first`: adding it, when an
    /// `at` in the past is refused); none when it is done.
    fn next_after(&self, after: SystemTime, first: bool) -> Result<Option<SystemTime>, String> {
        match self {
            Self::At(at) => {
                let at = parse_time(at)?;
                if first && at <= after {
                    return Err("that time has passed; give one in the future".to_owned());
                }
                Ok(first.then_some(at))
            }
            Self::Every(every) => {
                let every = humantime::parse_duration(every.trim()).map_err(|e| {
                    format!("`{every}` is not a duration: give e.g. 30m, 2h or 1day ({e})")
                })?;
                if every < SHORTEST_EVERY {
                    return Err("`every` is at least 1m".to_owned());
                }
                if every > LONGEST_EVERY {
                    return Err("`every` is at most 366 days".to_owned());
                }
                Ok(after.checked_add(every))
            }
            Self::Cron(expr) => {
                let cron = croner::Cron::from_str(expr.trim()).map_err(|e| {
                    format!("`{expr}` is not a cron expression (five fields, UTC): {e}")
                })?;
                let from = jiff::Timestamp::try_from(after)
                    .map_err(|e| e.to_string())?
                    .to_zoned(jiff::tz::TimeZone::UTC);
                let next = cron
                    .find_next_occurrence(&from, false)
                    .map_err(|e| format!("`{expr}` never runs: {e}"))?;
                Ok(Some(SystemTime::from(next.timestamp())))
            }
        }
    }
}

/// The jobs file and the runs' directory.
#[derive(Debug, Clone)]
pub(super) struct Store {
    dir: PathBuf,
}

impl Store {
    pub(super) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.join("jobs.json")
    }

    /// The jobs, under the store's lock for the length of `change`, saved
    /// after it when it says so.
    fn with_jobs<T>(
        &self,
        change: impl FnOnce(&mut Vec<Job>) -> Result<(T, bool), ServiceError>,
    ) -> Result<T, ServiceError> {
        let failed = |e: std::io::Error| ServiceError::Failed(format!("the job list: {e}"));
        std::fs::create_dir_all(&self.dir).map_err(failed)?;
        let lock = std::fs::File::create(self.dir.join("jobs.lock")).map_err(failed)?;
        lock.lock().map_err(failed)?;
        let mut jobs: Vec<Job> = match std::fs::read_to_string(self.path()) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                ServiceError::Failed(format!("{} is not a job list: {e}", self.path().display()))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(failed(e)),
        };
        let (value, save) = change(&mut jobs)?;
        if save {
            let mut file = tempfile::NamedTempFile::new_in(&self.dir).map_err(failed)?;
            serde_json::to_writer_pretty(&mut file, &jobs)
                .map_err(|e| ServiceError::Failed(e.to_string()))?;
            file.persist(self.path()).map_err(|e| failed(e.error))?;
        }
        Ok(value)
    }

    /// The jobs as they are.
    pub(super) fn jobs(&self) -> Result<Vec<Job>, ServiceError> {
        self.with_jobs(|jobs| Ok((jobs.clone(), false)))
    }
}

impl Bots {
    pub(super) fn cron(&self) -> Option<Result<Service, String>> {
        self.inner.cron.as_ref()?;
        let bots = self.clone();
        Some(
            Service::new(
                "cron",
                "Schedule tasks that run later through the tool loop: `add` a job (`name`, \
                 `task`, and one of `at` an RFC 3339 UTC time, `every` a duration such as 30m or \
                 2h, or `cron` a five-field UTC expression; `bot` to run as one), `list` them, \
                 `remove` one, `run` one now, or see its `status` and last result. Get the time \
                 with get_datetime first.",
                json!({
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["add", "list", "remove", "run", "status"]},
                        "name": {"type": "string"},
                        "task": {"type": "string"},
                        "at": {"type": "string"},
                        "every": {"type": "string"},
                        "cron": {"type": "string"},
                        "bot": {"type": "string"},
                    },
                    "required": ["action"],
                    "additionalProperties": false,
                }),
                move |call: ServiceCall| {
                    let bots = bots.clone();
                    blocking(move || bots.cron_action(&call))
                },
            )
            .map(|s| s.as_tool("Schedule tasks").with_timeout(super::LOOP_TIMEOUT)),
        )
    }

    fn cron_store(&self) -> Result<&Store, ServiceError> {
        self.inner.cron.as_ref().ok_or_else(|| {
            ServiceError::Failed("this host keeps no state directory for jobs".to_owned())
        })
    }

    fn cron_action(&self, call: &ServiceCall) -> Result<Value, ServiceError> {
        let store = self.cron_store()?;
        // A loop someone else started (a delegation, a sub-agent, a job)
        // schedules nothing: a job would run it again without its limits.
        if let Some(channel) = call.context.channel.as_deref()
            && (channel == super::DELEGATED_CHANNEL
                || channel == "cron"
                || channel.starts_with(super::SPAWN_CHANNEL))
        {
            return Err(ServiceError::Denied(
                "jobs are scheduled only by the agent a person runs, not from inside a \
                 delegation, a sub-agent or another job"
                    .to_owned(),
            ));
        }
        let name = call.input["name"].as_str().unwrap_or_default().trim();
        let needs_name = || {
            if is_job_name(name) {
                Ok(())
            } else {
                Err(ServiceError::Invalid(
                    "give the job's `name`: 1 to 64 lowercase letters, digits, `_` and `-`"
                        .to_owned(),
                ))
            }
        };
        match call.input["action"].as_str() {
            Some("add") => {
                needs_name()?;
                self.add_job(store, name, call)
            }
            Some("list") => {
                let jobs = store.jobs()?;
                let text = if jobs.is_empty() {
                    "no jobs".to_owned()
                } else {
                    jobs.iter().map(describe).collect::<Vec<_>>().join("\n")
                };
                Ok(json!({"jobs": jobs, "text": text}))
            }
            Some("remove") => {
                needs_name()?;
                store.with_jobs(|jobs| {
                    let before = jobs.len();
                    jobs.retain(|j| j.name != name || j.added_by != call.context.agent);
                    if jobs.len() == before {
                        return Err(no_job(name));
                    }
                    Ok((json!({"text": format!("removed the job `{name}`")}), true))
                })
            }
            Some("status") => {
                needs_name()?;
                let job = store
                    .jobs()?
                    .into_iter()
                    .find(|j| j.name == name)
                    .ok_or_else(|| no_job(name))?;
                let text = describe(&job);
                Ok(json!({"job": job, "text": text}))
            }
            Some("run") => {
                needs_name()?;
                let mine = store
                    .jobs()?
                    .iter()
                    .any(|j| j.name == name && j.added_by == call.context.agent);
                if !mine {
                    return Err(no_job(name));
                }
                let ran = self.run_job(name, &call.cancel)?;
                Ok(json!({"text": format!("`{}`: {}", ran.name, ran.status), "ran": ran}))
            }
            _ => Err(ServiceError::Invalid(
                "`action` is add, list, remove, run or status".to_owned(),
            )),
        }
    }

    fn add_job(
        &self,
        store: &Store,
        name: &str,
        call: &ServiceCall,
    ) -> Result<Value, ServiceError> {
        let task = call.input["task"].as_str().unwrap_or_default().trim();
        if task.is_empty() {
            return Err(ServiceError::Invalid(
                "give the `task` the job runs".to_owned(),
            ));
        }
        // A bot schedules for itself only, under its own limits; the
        // agent a person runs may name any bot.
        let caller = call.context.agent.clone().filter(|a| self.bot(a).is_some());
        let bot = call.input["bot"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| caller.clone());
        if let Some(bot) = &bot {
            if self.bot(bot).is_none() {
                return Err(ServiceError::Invalid(format!("no bot is named `{bot}`")));
            }
            if caller.as_ref().is_some_and(|c| c != bot) {
                return Err(ServiceError::Denied(format!(
                    "a bot schedules jobs for itself only, not for `{bot}`"
                )));
            }
        }
        let schedule = Schedule::from_input(&call.input).map_err(ServiceError::Invalid)?;
        let next = schedule
            .next_after(now(), true)
            .map_err(ServiceError::Invalid)?
            .map(rfc3339);
        let job = Job {
            name: name.to_owned(),
            schedule,
            task: task.to_owned(),
            bot,
            added_by: call.context.agent.clone(),
            next,
            runs: 0,
            last: None,
        };
        let text = format!("added: {}", describe(&job));
        store.with_jobs(|jobs| {
            if jobs.iter().any(|j| j.name == job.name) {
                return Err(ServiceError::Invalid(format!(
                    "a job is already named `{}`; remove it first or pick another name",
                    job.name
                )));
            }
            if jobs.len() >= MOST_JOBS {
                return Err(ServiceError::Denied(format!(
                    "{MOST_JOBS} jobs are kept, the most; remove one first"
                )));
            }
            jobs.push(job);
            Ok((json!({"text": text}), true))
        })
    }

    /// Whether jobs can be scheduled here (the cron tool is offered).
    pub fn schedules(&self) -> bool {
        self.inner.cron.is_some()
            && self.inner.agent.endpoint.is_some()
            && self.inner.agent.model.is_some()
    }

    /// Run the due jobs each minute on a thread of their own, for as long
    /// as the process lives (`toolhost serve`).
    pub fn run_due_every_minute(&self) {
        let bots = self.clone();
        let started = std::thread::Builder::new()
            .name("toolhost-cron".to_owned())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_secs(60));
                    match bots.run_due(&CancelToken::new()) {
                        Ok(ran) => {
                            for ran in ran {
                                tracing::info!(job = %ran.name, status = %ran.status, stop = ?ran.stop, "a scheduled job");
                            }
                        }
                        Err(err) => tracing::warn!(%err, "cannot run the scheduled jobs"),
                    }
                }
            });
        if let Err(err) = started {
            tracing::warn!(%err, "the scheduler could not start");
        }
    }

    /// The scheduled jobs.
    pub fn jobs(&self) -> Result<Vec<Job>, String> {
        self.cron_store()
            .and_then(Store::jobs)
            .map_err(|e| e.to_string())
    }

    /// Run every job that is due, one after the other until `cancel` is
    /// cancelled; what happened to each (a job that could not run says
    /// why, and the others still run).
    pub fn run_due(&self, cancel: &CancelToken) -> Result<Vec<Ran>, String> {
        let store = self.cron_store().map_err(|e| e.to_string())?;
        let due: Vec<String> = store
            .jobs()
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|j| {
                j.next
                    .as_deref()
                    .and_then(|t| parse_time(t).ok())
                    .is_some_and(|t| t <= now())
            })
            .map(|j| j.name)
            .collect();
        Ok(due
            .iter()
            .take_while(|_| !cancel.is_cancelled())
            .map(|name| {
                self.run_job(name, cancel).unwrap_or_else(|e| Ran {
                    name: name.clone(),
                    status: format!("not run: {e}"),
                    stop: Some("failed".to_owned()),
                })
            })
            .collect())
    }

    /// Run the job `name` now, unless a run of it is going on.
    fn run_job(&self, name: &str, cancel: &CancelToken) -> Result<Ran, ServiceError> {
        let store = self.cron_store()?;
        let job = store
            .jobs()?
            .into_iter()
            .find(|j| j.name == name)
            .ok_or_else(|| no_job(name))?;
        if !is_job_name(name) {
            return Err(no_job(name));
        }
        let runs = store.dir.join("runs").join(name);
        std::fs::create_dir_all(&runs).map_err(|e| ServiceError::Failed(e.to_string()))?;
        let lock = std::fs::File::create(runs.join("running.lock"))
            .map_err(|e| ServiceError::Failed(e.to_string()))?;
        if lock.try_lock().is_err() {
            return Ok(Ran {
                name: name.to_owned(),
                status: "already running; not started again".to_owned(),
                stop: None,
            });
        }
        let started = now();
        let mut shape = job
            .bot
            .as_deref()
            .map(|b| self.shape(b))
            .unwrap_or_default();
        shape
            .without
            .extend(super::DELEGATION_TOOLS.iter().map(|t| (*t).to_owned()));
        let context = CallContext {
            agent: job.bot.clone().or_else(|| job.added_by.clone()),
            channel: Some("cron".to_owned()),
            session: Some(format!("cron:{name}")),
            ..CallContext::new()
        };
        let outcome = self.run_loop(job.bot.as_deref(), &job.task, context, shape, cancel);
        let ended = now();
        let last = last_run(started, ended, &outcome);
        log_run(&runs, started, &last, outcome.as_ref().ok());
        store.with_jobs(|jobs| {
            if let Some(kept) = jobs.iter_mut().find(|j| j.name == name) {
                kept.runs += 1;
                kept.last = Some(last.clone());
                kept.next = kept
                    .schedule
                    .next_after(ended, false)
                    .ok()
                    .flatten()
                    .map(rfc3339);
            }
            Ok(((), true))
        })?;
        if let Ok(executor) = self.executor() {
            executor.audit(&json!({
                "time": crate::executor::audit::now(),
                "event": "cron_run",
                "job": name,
                "stop": last.stop,
                "started": last.started,
                "ended": last.ended,
            }));
        }
        Ok(Ran {
            name: name.to_owned(),
            status: "ran".to_owned(),
            stop: Some(last.stop),
        })
    }
}

fn last_run(
    started: SystemTime,
    ended: SystemTime,
    outcome: &Result<Outcome, ServiceError>,
) -> LastRun {
    let (stop, answer) = match outcome {
        Ok(o) => (o.stop.as_str().to_owned(), o.answer.clone()),
        Err(e) => ("failed".to_owned(), e.to_string()),
    };
    LastRun {
        started: rfc3339(started),
        ended: rfc3339(ended),
        stop,
        answer: answer.chars().take(500).collect(),
    }
}

/// Keep one run's record (with its transcript) in the job's directory.
fn log_run(runs: &Path, started: SystemTime, last: &LastRun, outcome: Option<&Outcome>) {
    let stamp = rfc3339(started).replace(':', "-");
    let record = json!({"run": last, "outcome": outcome});
    if let Err(err) = std::fs::write(
        runs.join(format!("{stamp}.json")),
        serde_json::to_vec_pretty(&record).unwrap_or_default(),
    ) {
        tracing::warn!(%err, "cannot keep a job's run log");
    }
}

/// Whether `name` can name a job (and its runs' directory): 1 to 64
/// lowercase letters, digits, `_` and `-`.
fn is_job_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn no_job(name: &str) -> ServiceError {
    ServiceError::Invalid(format!("no job is named `{name}`; `list` shows them"))
}

/// One line about `job`.
pub fn describe(job: &Job) -> String {
    let when = match &job.schedule {
        Schedule::At(at) => format!("at {at}"),
        Schedule::Every(every) => format!("every {every}"),
        Schedule::Cron(expr) => format!("cron `{expr}`"),
    };
    let next = job.next.as_deref().unwrap_or("never again");
    let last = job.last.as_ref().map_or_else(
        || "not run yet".to_owned(),
        |l| format!("last {} at {}: {}", l.stop, l.ended, l.answer),
    );
    format!(
        "{} ({when}; next {next}; {} runs; {last}): {}",
        job.name, job.runs, job.task
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_are_checked_and_give_their_next_time() {
        let at = |v: Value| Schedule::from_input(&v);
        assert!(at(json!({"at": "2001-01-01T00:00:00Z"})).is_err(), "past");
        assert!(
            at(json!({"every": "10s"}))
                .unwrap_err()
                .contains("at least 1m")
        );
        assert!(
            at(json!({"every": "10000y"}))
                .unwrap_err()
                .contains("at most 366 days")
        );
        assert!(is_job_name("nightly-1") && !is_job_name("../x") && !is_job_name(&"a".repeat(65)));
        assert!(at(json!({"cron": "not a cron"})).is_err());
        assert!(
            at(json!({"every": "5m", "cron": "* * * * *"})).is_err(),
            "two at once"
        );
        let start = parse_time("2026-11-29T10:07:30Z").unwrap();
        let next = Schedule::Cron("*/15 * * * *".into())
            .next_after(start, false)
            .unwrap()
            .unwrap();
        assert_eq!(rfc3339(next), "2026-11-29T10:15:00Z");
        let every = Schedule::Every("2h".into())
            .next_after(start, false)
            .unwrap()
            .unwrap();
        assert_eq!(rfc3339(every), "2026-11-29T12:07:30Z");
        assert_eq!(
            Schedule::At("2026-11-29T11:00:00Z".into())
                .next_after(start, false)
                .unwrap(),
            None,
            "an `at` job runs once"
        );
    }
}
