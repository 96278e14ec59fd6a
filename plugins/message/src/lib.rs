//! The `message` tool (as in PicoClaw): send a message to the person, a channel
//! or a recipient, through the `message` service of the application
//! embedding toolhost. Listed only where an embedder offers that service.

use toolhost_sdk::{
    Capability, Context, JsonSchema, Output, Serialize, ToolError, json, services, tool,
};

/// What `message` reports.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(crate = "toolhost_sdk::serde")]
#[schemars(crate = "toolhost_sdk::schemars")]
pub struct Sent {
    /// What the application said of it (`sent` unless it said otherwise).
    pub status: String,
    /// The channel it went on, if one was named.
    pub channel: Option<String>,
    /// The recipient, if one was named.
    pub to: Option<String>,
}

/// Send a message to the person you are working for, or to another channel
/// or recipient (a chat, a team), through the application you run in. Use
/// it to report progress or results while you keep working, or to reach
/// someone else; your final answer needs no message.
///
/// # Arguments
///
/// * `content` - The message text.
/// * `channel` - The channel to send it on (default: the one this
///   conversation came through).
/// * `to` - The recipient (default: the person you are working for).
#[tool(
    capabilities = [Capability::Service("message".into())],
    output = Sent,
    title = "Send a message"
)]
pub fn message(
    ctx: &Context,
    content: String,
    channel: Option<String>,
    to: Option<String>,
) -> Result<Output, ToolError> {
    if content.trim().is_empty() {
        return Err(ToolError::invalid_input(
            "`content` is empty; give the text of the message",
        ));
    }
    let channel = channel.or_else(|| ctx.channel().map(str::to_owned));
    let input = json!({"content": content, "channel": channel, "to": to});
    if ctx.dry_run() {
        return Ok(Output::text(format!(
            "dry run: would send a message of {} characters{}{}",
            content.chars().count(),
            channel.map(|c| format!(" on {c}")).unwrap_or_default(),
            to.map(|t| format!(" to {t}")).unwrap_or_default(),
        )));
    }
    let answer = services::call("message", &input)?;
    let status = answer
        .get("status")
        .and_then(|s| s.as_str())
        .unwrap_or("sent")
        .to_owned();
    Ok(
        Output::text(format!("message {status}")).with_structured(Sent {
            status,
            channel,
            to,
        }),
    )
}
