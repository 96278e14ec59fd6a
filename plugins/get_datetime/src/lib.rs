//! The `get_datetime` tool: the date and time now (or at a given instant) in
//! an IANA time zone, from the tz database compiled into the component.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use toolhost_builtin::contract;
use toolhost_sdk::export_tool;
use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError};

/// The setting that names the default zone (`[tools.get_datetime]
/// settings = { timezone = "Europe/Madrid" }`, or the configuration's
/// top-level `timezone`).
pub const TIMEZONE_SETTING: &str = contract::setting::TIMEZONE;

/// Arguments of `get_datetime`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// An IANA time zone such as `Europe/Madrid`, `America/New_York` or
    /// `UTC` (default: the configured zone, else UTC).
    #[serde(default)]
    pub timezone: Option<String>,
    /// An instant to convert instead of now, in RFC 3339 (e.g.
    /// `2026-07-01T12:00:00Z`).
    #[serde(default)]
    pub at: Option<String>,
}

/// The answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// `HH:MM:SS`, 24-hour.
    pub time: String,
    /// `Monday` … `Sunday`.
    pub weekday: String,
    /// The IANA name.
    pub timezone: String,
    /// The zone's abbreviation at that instant (e.g. `CEST`), if it has one.
    pub abbreviation: String,
    /// `+02:00`.
    pub utc_offset: String,
    /// ISO 8601 / RFC 3339 with offset, e.g. `2026-07-01T14:00:00+02:00`.
    pub iso8601: String,
    /// Seconds since 1970-01-01T00:00:00Z.
    pub unix: i64,
}

/// The `get_datetime` tool.
pub struct GetDatetime;

impl Tool for GetDatetime {
    type Args = Args;
    const NAME: &'static str = "get_datetime";
    const TITLE: Option<&'static str> = Some("Get the date and time");
    const DESCRIPTION: &'static str = "Get the current date and time: date, time, weekday, \
        time zone, UTC offset and ISO 8601, in any IANA time zone (`timezone`, e.g. \
        `Asia/Tokyo`; default: the configured zone, else UTC). With `at` (RFC 3339), convert \
        that instant instead of now. Use it whenever the answer depends on today's date or \
        the time somewhere.";

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        let zone_name = args
            .timezone
            .clone()
            .or_else(|| ctx.setting::<String>(TIMEZONE_SETTING))
            .unwrap_or_else(|| "UTC".to_owned());
        let instant = match &args.at {
            Some(text) => text.parse::<Timestamp>().map_err(|e| {
                ToolError::invalid_input(format!(
                    "`at` is not an RFC 3339 instant ({e}); write it like 2026-07-01T12:00:00Z or 2026-07-01T14:00:00+02:00"
                ))
            })?,
            None => Timestamp::now(),
        };
        let report = at(instant, &zone_name)?;
        let text = format!(
            "{} {} ({}), {} {} (UTC{})\n",
            report.date,
            report.time,
            report.weekday,
            report.timezone,
            report.abbreviation,
            report.utc_offset
        );
        Ok(Output::text(text).with_structured(&report))
    }
}

export_tool!(GetDatetime);

/// `instant` in the zone `name`; an unknown zone lists close names.
pub fn at(instant: Timestamp, name: &str) -> Result<Report, ToolError> {
    let tz = TimeZone::get(name).map_err(|_| unknown_zone(name))?;
    let zoned = instant.to_zoned(tz.clone());
    let offset = zoned.offset();
    let seconds = offset.seconds();
    let sign = if seconds < 0 { '-' } else { '+' };
    let abs = seconds.unsigned_abs();
    let utc_offset = format!("{sign}{:02}:{:02}", abs / 3600, (abs % 3600) / 60);
    let abbreviation = tz.to_offset_info(instant).abbreviation().to_owned();
    Ok(Report {
        date: zoned.strftime("%Y-%m-%d").to_string(),
        time: zoned.strftime("%H:%M:%S").to_string(),
        weekday: zoned.strftime("%A").to_string(),
        timezone: tz.iana_name().unwrap_or(name).to_owned(),
        abbreviation,
        iso8601: zoned.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        utc_offset,
        unix: instant.as_second(),
    })
}

fn unknown_zone(name: &str) -> ToolError {
    let wanted = name.to_ascii_lowercase();
    let mut scored: Vec<(f64, String)> = jiff::tz::db()
        .available()
        .map(|n| {
            let candidate = n.as_str().to_owned();
            let lower = candidate.to_ascii_lowercase();
            // Match the city part too: "tokyo" → "Asia/Tokyo".
            let city = lower.rsplit('/').next().unwrap_or(&lower).to_owned();
            let score =
                strsim::jaro_winkler(&wanted, &lower).max(strsim::jaro_winkler(&wanted, &city));
            (score, candidate)
        })
        .filter(|(score, _)| *score > 0.85)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let near: Vec<String> = scored
        .into_iter()
        .take(5)
        .map(|(_, n)| format!("`{n}`"))
        .collect();
    let mut message = format!("`{name}` is not an IANA time zone");
    if near.is_empty() {
        message.push_str("; use a name like Europe/Madrid, America/New_York or UTC");
    } else {
        message.push_str(&format!("; did you mean {}?", near.join(", ")));
    }
    ToolError::invalid_input(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instant(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn a_known_zone_has_its_offset_on_a_known_date() {
        let summer = at(instant("2026-07-01T12:00:00Z"), "Europe/Madrid").unwrap();
        assert_eq!(summer.utc_offset, "+02:00");
        assert_eq!(summer.time, "14:00:00");
        assert_eq!(summer.date, "2026-07-01");
        assert_eq!(summer.weekday, "Wednesday");
        assert_eq!(summer.iso8601, "2026-07-01T14:00:00+02:00");
        assert_eq!(summer.abbreviation, "CEST");
        let winter = at(instant("2026-01-15T12:00:00Z"), "Europe/Madrid").unwrap();
        assert_eq!(winter.utc_offset, "+01:00");
        let india = at(instant("2026-01-15T12:00:00Z"), "Asia/Kolkata").unwrap();
        assert_eq!(india.utc_offset, "+05:30");
        let ny = at(instant("2026-01-15T03:00:00Z"), "America/New_York").unwrap();
        assert_eq!(
            (ny.date.as_str(), ny.utc_offset.as_str()),
            ("2026-01-14", "-05:00")
        );
    }

    #[test]
    fn an_unknown_zone_lists_close_names() {
        let err = at(Timestamp::UNIX_EPOCH, "Europe/Madird").unwrap_err();
        assert!(
            err.to_string().contains("`Europe/Madrid`"),
            "{}",
            err.to_string()
        );
        let err = at(Timestamp::UNIX_EPOCH, "tokyo").unwrap_err();
        assert!(
            err.to_string().contains("`Asia/Tokyo`"),
            "{}",
            err.to_string()
        );
        let err = at(Timestamp::UNIX_EPOCH, "Nowhere/Atall").unwrap_err();
        assert!(
            err.to_string().contains("not an IANA time zone"),
            "{}",
            err.to_string()
        );
    }

    #[test]
    fn the_default_zone_comes_from_the_settings() {
        let ctx = Context::default().with_setting(TIMEZONE_SETTING, "Asia/Tokyo");
        let out = GetDatetime::call(
            Args {
                at: Some("2026-07-01T00:00:00Z".into()),
                ..Args::default()
            },
            &ctx,
        )
        .unwrap();
        assert!(
            out.content().contains("2026-07-01 09:00:00"),
            "{}",
            out.content()
        );
        assert_eq!(out.structured().unwrap()["timezone"], "Asia/Tokyo");
        let out = GetDatetime::call(Args::default(), &Context::default()).unwrap();
        assert_eq!(out.structured().unwrap()["timezone"], "UTC");
    }
}
