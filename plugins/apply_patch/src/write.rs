//! Write a planned patch, all or nothing: if a write fails, put back what
//! the earlier ones changed, and say exactly what was put back.

use crate::Change;
use toolhost_sdk::ToolError;
use toolhost_sdk::fs::{self, WorkspacePath};

/// Write every change; if one fails, put back the ones already written.
pub fn write_all(plan: &[Change]) -> Result<(), ToolError> {
    for (i, change) in plan.iter().enumerate() {
        if let Err(err) = put(&change.path, change.after.as_deref()) {
            let (mut undone, mut stuck) = (Vec::new(), Vec::new());
            for done in plan[..i].iter().rev() {
                match put(&done.path, done.before.as_deref()) {
                    Ok(()) => undone.push(done.undone()),
                    Err(_) => stuck.push(format!("`{}`", done.shown)),
                }
            }
            undone.reverse();
            let mut what = format!("{} `{}` failed; ", change.doing(), change.shown);
            if i == 0 {
                what.push_str("nothing had been changed yet");
            } else if !undone.is_empty() {
                what.push_str(&format!(
                    "what the patch did before it was undone: {}",
                    undone.join(", ")
                ));
            }
            if !stuck.is_empty() {
                if !undone.is_empty() {
                    what.push_str("; ");
                }
                what.push_str(&format!(
                    "putting back {} failed too, so check them",
                    stuck.join(", ")
                ));
            }
            return Err(err.context(&what));
        }
    }
    Ok(())
}

impl Change {
    /// The failing step, for messages.
    fn doing(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, _) => "creating",
            (Some(_), None) => "deleting",
            (Some(_), Some(_)) => "writing",
        }
    }

    /// What putting this file back did, for messages.
    fn undone(&self) -> String {
        match (&self.before, &self.after) {
            (None, _) => format!("removed the created `{}`", self.shown),
            (Some(_), None) => format!("recreated the deleted `{}`", self.shown),
            (Some(_), Some(_)) => format!("restored `{}`", self.shown),
        }
    }
}

/// Make the file hold `bytes`, or not exist.
fn put(path: &WorkspacePath, bytes: Option<&[u8]>) -> Result<(), ToolError> {
    match bytes {
        Some(bytes) => fs::write_atomic(path, bytes),
        None => match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(fs::write_error(e, path.shown())),
        },
    }
}
