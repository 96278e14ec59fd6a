//! `csv_stats`: a CSV file's rows, and each column's range and mean.
use schemars::JsonSchema;
use serde::Serialize;
use toolhost_sdk::{Context, Output, ToolError, fs, tool};

/// A column: its name; its smallest, largest and mean value if all are numbers.
#[derive(Serialize, JsonSchema)]
pub struct Column {
    name: String,
    min: Option<f64>,
    max: Option<f64>,
    mean: Option<f64>,
}

/// How many rows, and each column.
#[derive(Serialize, JsonSchema)]
pub struct Stats {
    rows: usize,
    columns: Vec<Column>,
}

/// Count the rows of a CSV file in the workspace (a header line, then rows; no quoted commas) and give each column's min, max and mean when its values are numbers.
///
/// # Arguments
///
/// * `path` - Workspace-relative path of the CSV file.
#[tool(capabilities = [WorkspaceRead], output = Stats, idempotent)]
pub fn csv_stats(ctx: &Context, path: String) -> Result<Output, ToolError> {
    let text = fs::read_text(&fs::resolve(&path, ctx)?)?;
    let split = |l: &str| {
        l.split(',')
            .map(|f| f.trim().to_owned())
            .collect::<Vec<_>>()
    };
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).map(split);
    let empty = || {
        ToolError::invalid_input(format!(
            "`{path}` is empty: a CSV file starts with a header line"
        ))
    };
    let header = lines.next().ok_or_else(empty)?;
    let rows: Vec<Vec<String>> = lines.collect();
    if let Some((i, row)) = rows
        .iter()
        .enumerate()
        .find(|(_, r)| r.len() != header.len())
    {
        let (n, of) = (row.len(), header.len());
        return Err(ToolError::invalid_input(format!(
            "row {} has {n} fields; the header has {of}",
            i + 1
        )));
    }
    let column = |(i, name): (usize, &String)| {
        let numbers: Option<Vec<f64>> = rows.iter().map(|r| r[i].parse().ok()).collect();
        let numbers = numbers.filter(|n| !n.is_empty()).unwrap_or_default();
        let fold = |f: fn(f64, f64) -> f64| numbers.iter().copied().reduce(f);
        let mean =
            (!numbers.is_empty()).then(|| numbers.iter().sum::<f64>() / numbers.len() as f64);
        Column {
            name: name.clone(),
            min: fold(f64::min),
            max: fold(f64::max),
            mean,
        }
    };
    let stats = Stats {
        rows: rows.len(),
        columns: header.iter().enumerate().map(column).collect(),
    };
    let summary = format!(
        "{path}: {} rows, {} columns",
        stats.rows,
        stats.columns.len()
    );
    Ok(Output::text(summary).with_structured(stats))
}
