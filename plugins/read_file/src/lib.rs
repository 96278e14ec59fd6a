//! The `read_file` tool: a text file from the workspace with line numbers.
//!
//! The file is streamed once: the requested window of lines is formatted
//! `cat -n` style while every byte feeds the content hash (which edit tools
//! accept as `expected_hash`) and the line count. A call returns at most
//! [`MAX_LINES`] lines and [`MAX_OUTPUT_BYTES`] of text, and says how to read
//! the rest with `offset`/`limit`.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use toolhost_sdk::text::{ContentHasher, looks_binary};
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};
use toolhost_sdk::{export_tool, fs};

/// Most lines one call returns.
pub const MAX_LINES: usize = 2000;
/// Most bytes of formatted text one call returns.
pub const MAX_OUTPUT_BYTES: usize = 100 * 1024;
/// Longer lines are cut to this many characters, with a marker.
pub const MAX_LINE_CHARS: usize = 2000;
/// Read size once the window is done and only hashing and counting remain.
const CHUNK: usize = 256 * 1024;

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the file, relative to the workspace root (an absolute path inside the workspace is accepted).
    pub path: String,
    /// First line to show, 1-based. Defaults to 1.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// How many lines to show. Defaults to, and is capped at, 2000.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// What `read_file` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The path as resolved inside the workspace.
    pub path: String,
    /// Content hash of the whole file; pass it to edit tools as `expected_hash`.
    pub hash: String,
    /// Size of the file in bytes.
    pub size: u64,
    /// Number of lines in the file.
    pub total_lines: u64,
    /// First line shown (1-based); 0 when nothing is shown.
    pub start_line: u64,
    /// Last line shown (1-based); 0 when nothing is shown.
    pub end_line: u64,
    /// True if lines after `end_line` exist and were not shown.
    pub truncated: bool,
    /// True if some bytes were not valid UTF-8 and are shown as U+FFFD.
    pub lossy: bool,
}

/// The `read_file` tool.
pub struct ReadFile;

impl Tool for ReadFile {
    type Args = Args;
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a text file from the workspace. Lines come numbered \
        like `cat -n` (number, tab, text). Returns at most 2000 lines or 100 KB per call; use \
        `offset` (1-based first line) and `limit` to read further. Lines longer than 2000 \
        characters are cut. Binary files are refused. The structured result carries the file's \
        content hash, which edit tools accept as `expected_hash`.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceRead]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        read(&args, ctx)
    }
}

export_tool!(ReadFile);

/// Read the file described by `args`; the body of [`ReadFile::call`].
pub fn read(args: &Args, ctx: &Context) -> Result<Output, ToolError> {
    let path = fs::resolve(&args.path, ctx)?;
    let shown = path.to_string_lossy().into_owned();
    let io_err = |e| fs::io_error(e, &shown);

    let meta = std::fs::metadata(&path).map_err(io_err)?;
    if meta.is_dir() {
        return Err(ToolError::retry(format!(
            "`{shown}` is a directory; list it with list_files or list_dirs, then read a file in it"
        )));
    }
    let file = File::open(&path).map_err(io_err)?;
    let mut reader = BufReader::with_capacity(CHUNK, file);
    if looks_binary(reader.fill_buf().map_err(io_err)?) {
        return Err(ToolError::retry(format!(
            "`{shown}` is a binary file ({} bytes); read_file only shows text. Read a text file \
             instead, or inspect it with a command if one is available",
            meta.len()
        )));
    }

    let first = args.offset.unwrap_or(1).max(1);
    let limit = args
        .limit
        .unwrap_or(MAX_LINES as u64)
        .clamp(1, MAX_LINES as u64);
    let mut window = Window::new(first, limit);
    let mut hasher = ContentHasher::new();
    let mut line = Vec::new();
    let mut line_no = 0u64;
    let mut newlines = 0u64;
    let mut last_byte = None;

    // Lines up to the end of the window, one by one.
    while !window.done {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io_err)? == 0 {
            break;
        }
        hasher.update(&line);
        line_no += 1;
        last_byte = line.last().copied();
        newlines += u64::from(last_byte == Some(b'\n'));
        window.offer(line_no, &line);
    }
    // The rest only feeds the hash and the line count.
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = reader.read(&mut chunk).map_err(io_err)?;
        if n == 0 {
            break;
        }
        hasher.update(&chunk[..n]);
        newlines += memchr::memchr_iter(b'\n', &chunk[..n]).count() as u64;
        last_byte = Some(chunk[n - 1]);
    }
    // A last line without a final newline still counts.
    let total_lines = newlines + u64::from(last_byte.is_some_and(|b| b != b'\n'));

    let report = Report {
        path: shown.clone(),
        hash: hasher.finish(),
        size: meta.len(),
        total_lines,
        start_line: if window.shown == 0 { 0 } else { first },
        end_line: window.last,
        truncated: window.last < total_lines,
        lossy: window.lossy,
    };
    let text = render(&shown, &window, &report, first)?;
    Ok(Output::text(text).with_structured(&report))
}

/// The lines being shown and why showing stopped.
struct Window {
    first: u64,
    limit: u64,
    text: String,
    shown: u64,
    last: u64,
    lossy: bool,
    /// Stopped by the byte guard rather than `limit`.
    byte_capped: bool,
    done: bool,
}

impl Window {
    fn new(first: u64, limit: u64) -> Self {
        Self {
            first,
            limit,
            text: String::new(),
            shown: 0,
            last: 0,
            lossy: false,
            byte_capped: false,
            done: false,
        }
    }

    /// Consider line `no` (raw bytes, terminator included) for display.
    fn offer(&mut self, no: u64, raw: &[u8]) {
        if no < self.first {
            return;
        }
        let body = raw.strip_suffix(b"\n").unwrap_or(raw);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        let decoded = String::from_utf8_lossy(body);
        self.lossy |= matches!(decoded, std::borrow::Cow::Owned(_));
        let numbered = format!("{no:>6}\t{}\n", clip(&decoded));
        if self.shown > 0 && self.text.len() + numbered.len() > MAX_OUTPUT_BYTES {
            self.byte_capped = true;
            self.done = true;
            return;
        }
        self.text.push_str(&numbered);
        self.shown += 1;
        self.last = no;
        self.done = self.shown >= self.limit;
    }
}

/// Cut a line longer than [`MAX_LINE_CHARS`] characters, with a marker.
fn clip(line: &str) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => line.into(),
        Some((cut, _)) => {
            let total = line.chars().count();
            format!(
                "{}… [line cut: {} of {total} characters shown]",
                &line[..cut],
                MAX_LINE_CHARS
            )
            .into()
        }
    }
}

/// The text the model sees: the numbered lines plus any note.
fn render(shown: &str, window: &Window, report: &Report, first: u64) -> Result<String, ToolError> {
    if report.total_lines == 0 {
        return Ok(format!("`{shown}` is empty (0 bytes)."));
    }
    if window.shown == 0 {
        return Err(ToolError::retry(format!(
            "offset {first} is past the end of `{shown}`, which has {} lines; use an offset \
             between 1 and {}",
            report.total_lines, report.total_lines
        )));
    }
    let mut text = window.text.clone();
    if report.lossy {
        text.push_str("\n[Some bytes are not valid UTF-8 and are shown as �.]\n");
    }
    if report.truncated {
        let why = if window.byte_capped {
            format!("the {} KB output limit", MAX_OUTPUT_BYTES / 1024)
        } else if window.shown >= MAX_LINES as u64 {
            format!("the {MAX_LINES}-line limit")
        } else {
            "the requested limit".to_owned()
        };
        let next = report.end_line + 1;
        text.push_str(&format!(
            "\n[Showing lines {}-{} of {} (stopped at {why}). To read more, call read_file with \
             offset={next} and a limit of up to {MAX_LINES} lines.]\n",
            report.start_line, report.end_line, report.total_lines
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_marks_long_lines() {
        let long = "é".repeat(MAX_LINE_CHARS + 5);
        let clipped = clip(&long);
        assert!(clipped.starts_with(&"é".repeat(MAX_LINE_CHARS)));
        assert!(clipped.ends_with(&format!(
            "[line cut: {MAX_LINE_CHARS} of {} characters shown]",
            MAX_LINE_CHARS + 5
        )));
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn window_respects_offset_and_limit() {
        let mut w = Window::new(2, 2);
        for no in 1..=5 {
            if !w.done {
                w.offer(no, format!("line {no}\r\n").as_bytes());
            }
        }
        assert_eq!(w.text, "     2\tline 2\n     3\tline 3\n");
        assert_eq!(w.last, 3);
    }
}
