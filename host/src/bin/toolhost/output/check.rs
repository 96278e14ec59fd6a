//! `toolhost check`'s report: text or JSON.

use super::{caps_text, json_out, text};

/// `toolhost check` of one file: `ok` and what the tool asks for on
/// stdout, each problem (and `does not conform`) on stderr.
pub fn check_text(file: &std::path::Path, report: &toolhost::CheckReport) -> std::io::Result<()> {
    use toolhost::Severity;
    let errors = report
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .count();
    if !report.plain.is_empty() {
        text(&format!(
            "ok: {}: a plain WIT component: {} tool{}, one per exported function, \
             their schemas derived from its WIT types\n",
            file.display(),
            report.plain.len(),
            if report.plain.len() == 1 { "" } else { "s" }
        ))?;
        for info in &report.plain {
            let caps: Vec<String> = info.capabilities.iter().map(ToString::to_string).collect();
            let output = info
                .output_schema
                .as_ref()
                .map_or_else(|| "none".to_owned(), ToString::to_string);
            text(&format!(
                "\n  `{}`, asks for: {}\n    {}\n    input:  {}\n    output: {output}\n",
                info.name,
                caps_text(&caps),
                info.description,
                info.input_schema
            ))?;
        }
    } else if let Some(info) = report.info.as_ref().filter(|_| report.conforms()) {
        let caps: Vec<String> = info.capabilities.iter().map(ToString::to_string).collect();
        text(&format!(
            "ok: {}: `{}` {}, asks for: {}\n",
            file.display(),
            info.name,
            info.version,
            caps_text(&caps),
        ))?;
    } else {
        eprintln!(
            "error: {}: does not conform ({errors} error{}):",
            file.display(),
            if errors == 1 { "" } else { "s" }
        );
    }
    for p in &report.problems {
        let label = match p.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        eprintln!("  {label}: {}: {}\n    fix: {}", p.field, p.message, p.fix);
    }
    Ok(())
}

/// `toolhost check --json`.
pub fn check_json(reports: &[(&std::path::PathBuf, toolhost::CheckReport)]) -> std::io::Result<()> {
    let all: Vec<serde_json::Value> = reports
        .iter()
        .map(|(file, report)| {
            serde_json::json!({
                "file": file.display().to_string(),
                "conforms": report.conforms(),
                "tool": report.info.as_ref().map(|info| serde_json::json!({
                    "name": info.name,
                    "version": info.version,
                    "capabilities": info.capabilities.iter().map(ToString::to_string).collect::<Vec<_>>(),
                })),
                "plain_tools": report.plain.iter().map(|info| serde_json::json!({
                    "name": info.name,
                    "description": info.description,
                    "capabilities": info.capabilities.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "input_schema": info.input_schema,
                    "output_schema": info.output_schema,
                })).collect::<Vec<_>>(),
                "problems": report.problems,
            })
        })
        .collect();
    json_out(&all)
}
