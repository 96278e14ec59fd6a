//! `csv_stats`: a CSV file's rows, and each column's range and mean.
use toolhost_sdk::{Context, JsonSchema, Output, Serialize, ToolError, ensure, tool};

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
    let text = ctx.read_text(&path)?;
    let lines = text.lines().filter(|l| !l.trim().is_empty());
    let mut lines = lines.map(|l| l.split(',').map(str::trim).collect::<Vec<_>>());
    let header = lines.next().unwrap_or_default();
    ensure!(
        !header.is_empty(),
        "`{path}` is empty: a CSV file starts with a header line"
    );
    let rows: Vec<_> = lines.collect();
    for (i, (n, of)) in rows.iter().map(|r| (r.len(), header.len())).enumerate() {
        ensure!(n == of, "row {} has {n} fields; the header has {of}", i + 1);
    }
    let column = |(i, name): (usize, &&str)| {
        let numbers: Vec<f64> = rows.iter().map_while(|r| r[i].parse().ok()).collect();
        let all = !rows.is_empty() && numbers.len() == rows.len();
        let fold = |f: fn(f64, f64) -> f64| numbers.iter().copied().reduce(f).filter(|_| all);
        let mean = all.then(|| numbers.iter().sum::<f64>() / rows.len() as f64);
        let (min, max, name) = (fold(f64::min), fold(f64::max), name.to_string());
        Column {
            name,
            min,
            max,
            mean,
        }
    };
    let columns: Vec<_> = header.iter().enumerate().map(column).collect();
    let summary = format!("{path}: {} rows, {} columns", rows.len(), columns.len());
    Ok(Output::text(summary).with_structured(Stats {
        rows: rows.len(),
        columns,
    }))
}
