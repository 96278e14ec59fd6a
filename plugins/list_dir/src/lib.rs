//! The `list_dir` tool (as PicoClaw and the async Python tools have it): a directory's files and
//! subdirectories together, optionally recursive, sorted by path.

use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};
use toolhost_sdk::{export_tool, fs};

/// The most entries one call returns (the schema's maximum for `limit`).
pub const MAX_LIMIT: usize = 10_000;

/// Arguments of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Directory to list, relative to the workspace root (default `.`).
    #[serde(default = "toolhost_builtin::defaults::dot")]
    pub path: String,
    /// The same as `path` (the async Python tools' name for it); give one or the other.
    #[serde(default)]
    pub directory: Option<String>,
    /// Also list what is inside subdirectories (`.git` is never entered).
    #[serde(default)]
    pub recursive: bool,
    /// Most entries to return (default 200).
    #[serde(default = "toolhost_builtin::defaults::count::<200>")]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: usize,
}

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A file.
    File,
    /// A directory.
    Dir,
}

/// One file or directory.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Entry {
    /// Path relative to the workspace root.
    pub path: String,
    /// `file` or `dir`.
    pub kind: Kind,
    /// Size in bytes (files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// What `list_dir` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The entries, sorted by path.
    pub entries: Vec<Entry>,
    /// How many entries there are in all.
    pub total: usize,
    /// True if `limit` cut the list.
    pub truncated: bool,
}

/// The `list_dir` tool.
pub struct ListDir;

impl Tool for ListDir {
    type Args = Args;
    const NAME: &'static str = "list_dir";
    const TITLE: Option<&'static str> = Some("List a directory");
    const DESCRIPTION: &'static str = "List a workspace directory: files (with sizes) and \
        subdirectories (marked `/`) together, sorted; `recursive` lists everything below. At \
        most `limit` entries, with a note when more exist. To filter files by a glob use \
        list_files; to search the tree by name, find_files.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceRead]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        list(&args, ctx)
    }
}

export_tool!(ListDir);

/// The body of [`ListDir::call`].
pub fn list(args: &Args, ctx: &Context) -> Result<Output, ToolError> {
    ToolError::check_range(
        "limit",
        args.limit,
        1..=MAX_LIMIT,
        "for more entries, list a subdirectory at a time",
    )?;
    let path = match &args.directory {
        Some(dir) if args.path != "." && *dir != args.path => {
            return Err(ToolError::invalid_input(format!(
                "`path` is `{}` and `directory` is `{dir}`; give only one of them",
                args.path
            )));
        }
        Some(dir) => dir.as_str(),
        None => args.path.as_str(),
    };
    let base = fs::resolve(path, ctx)?;
    let shown = base.shown().to_owned();
    let found = fs::walk(&base, if args.recursive { usize::MAX } else { 1 })?;
    let mut entries: Vec<Entry> = found
        .into_iter()
        .map(|e| Entry {
            path: e.path.shown().to_owned(),
            kind: if e.is_dir { Kind::Dir } else { Kind::File },
            size: (!e.is_dir).then_some(e.size),
        })
        .collect();
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let total = entries.len();
    entries.truncate(args.limit);
    let report = Report {
        truncated: total > entries.len(),
        total,
        entries,
    };
    let mut text: String = report
        .entries
        .iter()
        .map(|e| match e.size {
            Some(size) => format!("{} ({size} bytes)\n", e.path),
            None => format!("{}/\n", e.path),
        })
        .collect();
    if report.entries.is_empty() {
        text = format!("`{shown}` is empty.\n");
    }
    if report.truncated {
        text.push_str(&format!(
            "[{} of {total} entries shown; list a subdirectory, or raise limit]\n",
            report.entries.len()
        ));
    }
    Ok(Output::text(text).with_structured(&report))
}

/// Natively only: they run the tool on a temporary directory.
#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests {
    use super::*;

    #[test]
    fn files_and_directories_are_listed_together() {
        let ws = tempfile::tempdir().unwrap();
        for f in ["b.txt", "src/main.rs", "src/deep/x.md"] {
            let p = ws.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "hi").unwrap();
        }
        std::fs::create_dir(ws.path().join("empty")).unwrap();
        let ctx = Context::for_workspace(ws.path().display().to_string());
        let args = |path: &str, recursive| Args {
            path: path.into(),
            directory: None,
            recursive,
            limit: 200,
        };
        let top = list(&args(".", false), &ctx).unwrap();
        assert_eq!(top.content(), "b.txt (2 bytes)\nempty/\nsrc/\n");
        let all = list(&args("src", true), &ctx).unwrap();
        assert_eq!(
            all.content(),
            "src/deep/\nsrc/deep/x.md (2 bytes)\nsrc/main.rs (2 bytes)\n"
        );
        assert_eq!(all.structured().unwrap()["entries"][0]["kind"], "dir");
        let none = list(&args("empty", false), &ctx).unwrap();
        assert_eq!(none.content(), "`empty` is empty.\n");
        let cut = list(
            &Args {
                limit: 1,
                ..args(".", true)
            },
            &ctx,
        )
        .unwrap();
        assert!(
            cut.content().contains("[1 of 6 entries shown"),
            "{}",
            cut.content()
        );
        let by_seed_name: Args = serde_json::from_str(r#"{"directory":"src"}"#).unwrap();
        assert_eq!(
            list(&by_seed_name, &ctx).unwrap().content(),
            "src/deep/\nsrc/main.rs (2 bytes)\n"
        );
        let both: Args = serde_json::from_str(r#"{"directory":"src","path":"b"}"#).unwrap();
        assert!(
            list(&both, &ctx)
                .unwrap_err()
                .to_string()
                .contains("only one of them")
        );
        let file = list(&args("b.txt", false), &ctx).unwrap_err();
        assert!(
            file.to_string().contains("read it with read_file"),
            "{file}"
        );
    }
}
