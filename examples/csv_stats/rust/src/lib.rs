//! `csv_stats`: a CSV file's rows, and each column's range and mean.
use toolhost_sdk::{Context, JsonSchema, Output, Serialize, ToolError, ensure, tool};

#[derive(Serialize, JsonSchema)]
struct Column {
    name: String,
    min: Option<f64>,
    max: Option<f64>,
    mean: Option<f64>,
}

#[derive(Serialize, JsonSchema)]
struct Stats {
    rows: usize,
    columns: Vec<Column>,
}

/// Count the rows of a CSV file in the workspace (a header line, then rows; no quoted commas) and give each column's min, max and mean when its values are numbers.
/// * `path` - Workspace-relative path of the CSV file.
#[tool(capabilities = [WorkspaceRead], output = Stats, idempotent)]
pub fn csv_stats(ctx: &Context, path: String) -> Result<Output, ToolError> {
    let text = ctx.read_text(&path)?;
    let lines = text.lines().filter(|l| !l.trim().is_empty());
    let mut rows: Vec<Vec<_>> = lines.map(|l| l.split(',').map(str::trim).collect()).collect();
    ensure!(!rows.is_empty(), "`{path}` is empty: a CSV file starts with a header line");
    let (header, n) = (rows.remove(0), rows.len());
    for (i, (len, of)) in rows.iter().map(|r| (r.len(), header.len())).enumerate() {
        ensure!(len == of, "row {} has {len} fields; the header has {of}", i + 1);
    }
    let columns = header.iter().enumerate().map(|(i, name)| {
        let numbers: Option<Vec<f64>> = rows.iter().map(|r| r[i].parse().ok()).collect();
        let fold = |f: fn(f64, f64) -> f64| numbers.as_ref()?.iter().copied().reduce(f);
        let (min, max, name) = (fold(f64::min), fold(f64::max), name.to_string());
        Column { name, min, max, mean: fold(|a, b| a + b).map(|sum| sum / n as f64) }
    });
    let stats = Stats { rows: n, columns: columns.collect() };
    Ok(Output::text(format!("{path}: {n} rows, {} columns", header.len())).with_structured(stats))
}
