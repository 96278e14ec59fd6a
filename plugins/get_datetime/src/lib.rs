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

/// The setting that names the default locale (the configuration's
/// top-level `locale`).
pub const LOCALE_SETTING: &str = contract::setting::LOCALE;

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
    /// A locale for the weekday and month names, such as `es-AR`, `fr_FR`
    /// or `de` (default: the configured locale, else English only).
    #[serde(default)]
    pub locale: Option<String>,
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
    /// The names in the locale asked for, if one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub localized: Option<Localized>,
}

/// The weekday and month named in a locale (glibc's locale data).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Localized {
    /// The locale used, e.g. `es_AR`.
    pub locale: String,
    /// The weekday's name, e.g. `jueves`.
    pub weekday: String,
    /// The month's name, e.g. `noviembre`.
    pub month: String,
    /// The date in the locale's own short format, e.g. `26/11/26`.
    pub date: String,
}

/// The `get_datetime` tool.
pub struct GetDatetime;

impl Tool for GetDatetime {
    type Args = Args;
    const NAME: &'static str = "get_datetime";
    const TITLE: Option<&'static str> = Some("Get the date and time");
    const DESCRIPTION: &'static str = "Get the current date and time (date, time, weekday, \
        zone, UTC offset, ISO 8601) in any IANA `timezone` (default: the configured zone, else \
        UTC), or convert the instant `at`. With `locale` (`es-AR`), weekday and month are \
        named in that language. Never guess the date: call it.";

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
        let mut report = at(instant, &zone_name)?;
        if let Some(locale) = args
            .locale
            .clone()
            .or_else(|| ctx.setting::<String>(LOCALE_SETTING))
        {
            report.localized = Some(localize(instant, &zone_name, &locale)?);
        }
        let mut text = format!(
            "{} {} ({}), {} {} (UTC{})\n",
            report.date,
            report.time,
            report.weekday,
            report.timezone,
            report.abbreviation,
            report.utc_offset
        );
        if let Some(l) = &report.localized {
            text.push_str(&format!(
                "{}: {}, {} ({})\n",
                l.locale, l.weekday, l.month, l.date
            ));
        }
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
        localized: None,
    })
}

/// A language alone stands for its main country's locale.
const MAIN_COUNTRY: &[(&str, &str)] = &[
    ("en", "en_US"),
    ("zh", "zh_CN"),
    ("ja", "ja_JP"),
    ("ko", "ko_KR"),
    ("sv", "sv_SE"),
    ("da", "da_DK"),
    ("el", "el_GR"),
    ("cs", "cs_CZ"),
    ("uk", "uk_UA"),
    ("hi", "hi_IN"),
    ("ar", "ar_SA"),
    ("he", "he_IL"),
    ("nb", "nb_NO"),
    ("fa", "fa_IR"),
    ("vi", "vi_VN"),
    ("ca", "ca_ES"),
    ("eu", "eu_ES"),
    ("gl", "gl_ES"),
];

/// `name` (`es-AR`, `es_AR`, `es_AR.UTF-8`, `es`) as glibc's locale.
fn locale_of(name: &str) -> Result<pure_rust_locales::Locale, ToolError> {
    let base = name.split('.').next().unwrap_or_default().replace('-', "_");
    let mut parts = base.splitn(2, '_');
    let lang = parts.next().unwrap_or_default().to_ascii_lowercase();
    let candidate = match parts.next() {
        Some(country) if country.len() == 2 => format!("{lang}_{}", country.to_ascii_uppercase()),
        Some(rest) => format!("{lang}_{rest}"),
        None => MAIN_COUNTRY.iter().find(|(l, _)| *l == lang).map_or_else(
            || format!("{lang}_{}", lang.to_ascii_uppercase()),
            |(_, c)| (*c).to_owned(),
        ),
    };
    pure_rust_locales::Locale::try_from(candidate.as_str()).map_err(|_| {
        ToolError::invalid_input(format!(
            "`{name}` is not a known locale; use a language and country like es-AR, fr-FR, pt-BR or de-DE"
        ))
    })
}

/// The weekday and month of `instant` in zone `zone`, named in `locale`.
pub fn localize(instant: Timestamp, zone: &str, locale: &str) -> Result<Localized, ToolError> {
    let tz = TimeZone::get(zone).map_err(|_| unknown_zone(zone))?;
    let zoned = instant.to_zoned(tz);
    let found = locale_of(locale)?;
    let days = pure_rust_locales::locale_match!(found => LC_TIME::DAY);
    let months = pure_rust_locales::locale_match!(found => LC_TIME::MON);
    let short_days = pure_rust_locales::locale_match!(found => LC_TIME::ABDAY);
    let short_months = pure_rust_locales::locale_match!(found => LC_TIME::ABMON);
    let d_fmt = pure_rust_locales::locale_match!(found => LC_TIME::D_FMT);
    let day = usize::from(zoned.weekday().to_sunday_zero_offset().unsigned_abs());
    let month = usize::from(zoned.month().unsigned_abs()) - 1;
    let pick = |names: &[&str], i: usize| names.get(i).copied().unwrap_or_default().to_owned();
    // The locale's names where its format asks for names; jiff knows only
    // English ones.
    let format = d_fmt
        .replace("%A", &pick(days, day).replace('%', "%%"))
        .replace("%a", &pick(short_days, day).replace('%', "%%"))
        .replace("%B", &pick(months, month).replace('%', "%%"))
        .replace("%b", &pick(short_months, month).replace('%', "%%"));
    Ok(Localized {
        locale: format!("{found:?}"),
        weekday: pick(days, day),
        month: pick(months, month),
        date: zoned.strftime(&format).to_string(),
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
    fn a_locale_names_the_weekday_and_month() {
        let at = instant("2026-11-26T15:00:00Z");
        let es = localize(at, "America/Argentina/Buenos_Aires", "es-AR").unwrap();
        assert_eq!(
            (es.locale.as_str(), es.weekday.as_str(), es.month.as_str()),
            ("es_AR", "jueves", "noviembre")
        );
        assert_eq!(es.date, "26/11/26");
        let fr = localize(at, "UTC", "fr").unwrap();
        assert_eq!(
            (fr.weekday.as_str(), fr.month.as_str()),
            ("jeudi", "novembre")
        );
        let de = localize(at, "UTC", "de_DE.UTF-8").unwrap();
        assert_eq!(
            (de.weekday.as_str(), de.month.as_str()),
            ("Donnerstag", "November")
        );
        let err = localize(at, "UTC", "xx-YY").unwrap_err();
        assert!(err.to_string().contains("not a known locale"), "{err}");
        let ctx = Context::default().with_setting(LOCALE_SETTING, "pt-BR");
        let out = GetDatetime::call(
            Args {
                at: Some("2026-11-26T15:00:00Z".into()),
                ..Args::default()
            },
            &ctx,
        )
        .unwrap();
        assert_eq!(out.structured().unwrap()["localized"]["weekday"], "quinta");
        assert!(
            out.content().contains("pt_BR: quinta, novembro"),
            "{}",
            out.content()
        );
        let plain = GetDatetime::call(Args::default(), &Context::default()).unwrap();
        assert!(plain.structured().unwrap().get("localized").is_none());
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
