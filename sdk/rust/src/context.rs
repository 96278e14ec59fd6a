//! The call context a tool receives: who calls, and how.

use crate::__private::bindings::toolhost::plugin::types as wit;

/// Who is calling and how. None of it is a model-visible argument.
///
/// ```
/// # fn show(ctx: &toolhost_sdk::Context) {
/// if ctx.dry_run() {
///     // describe what would happen, change nothing
/// }
/// let _id = ctx.call_id();
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Context {
    call_id: String,
    agent: Option<String>,
    session: Option<String>,
    channel: Option<String>,
    chat: Option<String>,
    workspace_root: Option<String>,
    dry_run: bool,
    settings: serde_json::Map<String, serde_json::Value>,
    share: Option<String>,
}

impl Context {
    /// A context for tests and native runs: the given workspace root, no ids.
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::for_workspace("/home/me/project");
    /// assert_eq!(ctx.workspace_root(), Some("/home/me/project"));
    /// ```
    pub fn for_workspace(root: impl Into<String>) -> Self {
        Self {
            workspace_root: Some(root.into()),
            ..Self::default()
        }
    }

    /// This context with the session id `session` (for tests and native runs).
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::default().with_session("chat-7");
    /// assert_eq!(ctx.session(), Some("chat-7"));
    /// ```
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// This context with the calling agent `agent` (for tests and native runs).
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::default().with_agent("reviewer");
    /// assert_eq!(ctx.agent(), Some("reviewer"));
    /// ```
    pub fn with_agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// The unique id of this call.
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::default();
    /// toolhost_sdk::log::info(format!("call {} started", ctx.call_id()));
    /// assert_eq!(ctx.call_id(), ""); // natively there is no host to give one
    /// ```
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The calling agent, if known.
    ///
    /// ```
    /// assert_eq!(toolhost_sdk::Context::default().agent(), None);
    /// ```
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// The session the call belongs to, if known.
    ///
    /// ```
    /// assert_eq!(toolhost_sdk::Context::default().session(), None);
    /// ```
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The channel the call came through (`cli`, `mcp`, ...), if known.
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::default();
    /// // `Some("mcp")` for a call from an MCP client; natively it is unknown.
    /// assert_eq!(ctx.channel(), None);
    /// ```
    pub fn channel(&self) -> Option<&str> {
        self.channel.as_deref()
    }

    /// The chat the call belongs to, if known.
    ///
    /// ```
    /// assert_eq!(toolhost_sdk::Context::default().chat(), None);
    /// ```
    pub fn chat(&self) -> Option<&str> {
        self.chat.as_deref()
    }

    /// The host path of the workspace root, if the tool was granted one.
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::for_workspace("/home/me/project");
    /// assert_eq!(ctx.workspace_root(), Some("/home/me/project"));
    /// ```
    pub fn workspace_root(&self) -> Option<&str> {
        self.workspace_root.as_deref()
    }

    /// The UTF-8 text of the file at `path`, relative to the workspace:
    /// [`crate::fs::resolve`] then [`crate::fs::read_text`], so a path
    /// outside the workspace is `Denied`, a missing file `Retry`.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
    /// let ctx = toolhost_sdk::Context::for_workspace(dir.path().display().to_string());
    /// assert_eq!(ctx.read_text("a.txt").unwrap(), "hello");
    /// use toolhost_sdk::ToolError;
    /// assert!(matches!(ctx.read_text("../a.txt"), Err(ToolError::Denied(_))));
    /// assert!(matches!(ctx.read_text("nope.txt"), Err(ToolError::Retry(_))));
    /// ```
    pub fn read_text(&self, path: &str) -> Result<String, crate::ToolError> {
        crate::fs::read_text(&crate::fs::resolve(path, self)?)
    }

    /// True when the caller asked for a dry run: describe, change nothing.
    ///
    /// ```
    /// use toolhost_sdk::{Context, Output, ToolError};
    /// fn save(ctx: &Context) -> Result<Output, ToolError> {
    ///     if ctx.dry_run() {
    ///         return Ok(Output::text("would write notes.txt"));
    ///     }
    ///     // ... write the file ...
    ///     Ok(Output::text("wrote notes.txt").changed("notes.txt"))
    /// }
    /// assert_eq!(save(&Context::default()).unwrap().content(), "wrote notes.txt");
    /// ```
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// The share of the work this run should do, when the run was started
    /// by [`parallel::run_shares`](crate::parallel::run_shares).
    ///
    /// ```
    /// // Outside a fan-out run there is no share.
    /// assert_eq!(toolhost_sdk::Context::default().share(), None);
    /// ```
    pub fn share(&self) -> Option<&str> {
        self.share.as_deref()
    }

    /// This tool's setting `key` from the host configuration, if present and
    /// of the right type.
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::default().with_setting("allow_delete", true);
    /// assert_eq!(ctx.setting::<bool>("allow_delete"), Some(true));
    /// assert_eq!(ctx.setting::<bool>("missing"), None);
    /// ```
    pub fn setting<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.settings
            .get(key)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// The same context with one more setting (for tests and native runs).
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::default().with_setting("max_items", 5);
    /// assert_eq!(ctx.setting::<u32>("max_items"), Some(5));
    /// ```
    pub fn with_setting(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.settings.insert(key.to_owned(), value.into());
        self
    }
}

impl From<wit::CallContext> for Context {
    fn from(ctx: wit::CallContext) -> Self {
        Self {
            call_id: ctx.call_id,
            agent: ctx.agent,
            session: ctx.session,
            channel: ctx.channel,
            chat: ctx.chat,
            workspace_root: ctx.workspace_root,
            dry_run: ctx.dry_run,
            // The host always sends an object; anything else means no settings.
            settings: serde_json::from_str(&ctx.settings).unwrap_or_default(),
            share: ctx.share,
        }
    }
}
