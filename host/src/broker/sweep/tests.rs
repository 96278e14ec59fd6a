use super::*;

fn rules() -> Arc<PathRules> {
    PathRules::shared_default()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn created_protected_paths_are_moved_aside() {
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    std::fs::write(ws.path().join(".envrc"), "old").unwrap();
    let absent = Absent::before(Some(ws.path()), &rules(), (&[], &[]), state.path());
    assert!(absent.paths.contains(&PathBuf::from(".vscode")));
    assert!(absent.paths.contains(&PathBuf::from(".git/hooks")));
    assert!(absent.paths.contains(&PathBuf::from(".cargo")));
    assert!(!absent.paths.contains(&PathBuf::from(".envrc")));
    std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
    std::fs::write(ws.path().join(".git/hooks/pre-commit"), "evil").unwrap();
    std::fs::create_dir_all(ws.path().join(".cargo")).unwrap();
    std::fs::write(ws.path().join(".cargo/config.toml"), "evil").unwrap();
    let notes = absent.sweep();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(!ws.path().join(".git/hooks").exists());
    assert!(!ws.path().join(".cargo/config.toml").exists());
    assert!(
        ws.path().join(".cargo").exists(),
        "only the protected file moved"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".envrc")).unwrap(),
        "old"
    );
    assert!(notes.iter().all(|n| n.contains("moved")), "{notes:?}");
    let kept = walk(state.path());
    assert!(
        kept.iter().any(|p| p.ends_with(".git/hooks/pre-commit")),
        "{kept:?}"
    );
    assert!(
        kept.iter().any(|p| p.ends_with(".cargo/config.toml")),
        "{kept:?}"
    );
}

/// A link planted where a protected root belongs is moved as a link:
/// what it points at, outside the workspace, stays where it is.
#[test]
fn the_sweep_never_follows_a_planted_link() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    for dir in [".cargo", "other/.git/hooks", ".ssh"] {
        std::fs::create_dir_all(home.path().join(dir)).unwrap();
    }
    std::fs::write(home.path().join(".cargo/config.toml"), "mine").unwrap();
    std::fs::write(home.path().join("other/.git/config"), "mine").unwrap();
    std::fs::write(home.path().join(".ssh/config"), "mine").unwrap();
    let absent = Absent::before(Some(ws.path()), &rules(), (&[], &[]), state.path());
    let link = |target: &str, name: &str| {
        std::os::unix::fs::symlink(home.path().join(target), ws.path().join(name)).unwrap();
    };
    link(".cargo", ".cargo");
    link("other/.git", ".git");
    link(".ssh", ".vscode");
    let notes = absent.sweep();
    for (file, what) in [
        (".cargo/config.toml", "mine"),
        ("other/.git/config", "mine"),
        (".ssh/config", "mine"),
    ] {
        assert_eq!(
            std::fs::read_to_string(home.path().join(file)).unwrap(),
            what,
            "{file} {notes:?}"
        );
    }
    assert!(home.path().join("other/.git/hooks").is_dir());
    for name in [".cargo", ".git", ".vscode"] {
        assert!(
            std::fs::symlink_metadata(ws.path().join(name)).is_err(),
            "the link {name} was moved aside: {notes:?}"
        );
    }
    assert_eq!(notes.len(), 3, "{notes:?}");
}

/// In a pinned `.git`, only git's own state may appear; a `.git` renamed
/// and replaced is swept and the original put back.
#[test]
fn a_pinned_root_stays_what_it_was() {
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let git = ws.path().join(".git");
    std::fs::create_dir_all(git.join("objects")).unwrap();
    std::fs::write(git.join("config"), "mine").unwrap();
    let absent = Absent::before(
        Some(ws.path()),
        &rules(),
        (std::slice::from_ref(&git), &[]),
        state.path(),
    );
    std::fs::write(git.join("commondir"), "../evil").unwrap();
    std::fs::write(git.join("ORIG_HEAD"), "abc").unwrap();
    std::fs::write(git.join("index.lock"), "").unwrap();
    std::fs::create_dir_all(git.join("worktrees/w")).unwrap();
    std::fs::write(git.join("worktrees/w/commondir"), "../../evil").unwrap();
    let notes = absent.sweep();
    assert!(!git.join("commondir").exists(), "{notes:?}");
    assert!(!git.join("worktrees/w/commondir").exists(), "{notes:?}");
    assert!(git.join("ORIG_HEAD").exists() && git.join("index.lock").exists());
    assert_eq!(notes.len(), 2, "{notes:?}");

    let absent = Absent::before(
        Some(ws.path()),
        &rules(),
        (std::slice::from_ref(&git), &[]),
        state.path(),
    );
    std::fs::rename(&git, ws.path().join(".git.old")).unwrap();
    std::fs::create_dir(&git).unwrap();
    std::fs::write(git.join("config"), "[core]\nfsmonitor = evil").unwrap();
    let notes = absent.sweep();
    assert_eq!(std::fs::read_to_string(git.join("config")).unwrap(), "mine");
    assert!(!ws.path().join(".git.old").exists(), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("put it back")), "{notes:?}");

    // A `gitdir:` file where no `.git` was.
    let bare = tempfile::tempdir().unwrap();
    let absent = Absent::before(Some(bare.path()), &rules(), (&[], &[]), state.path());
    std::fs::write(bare.path().join(".git"), "gitdir: evil").unwrap();
    let notes = absent.sweep();
    assert!(!bare.path().join(".git").exists(), "{notes:?}");
}

/// In a writable directory such as `~/.cargo`, a `bin/` or `config.toml`
/// a command creates is swept like a protected path of the workspace.
#[test]
fn what_runs_code_in_a_writable_directory_is_swept() {
    let ws = tempfile::tempdir().unwrap();
    let cargo = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::create_dir(cargo.path().join("registry")).unwrap();
    let absent = Absent::before(Some(ws.path()), &rules(), (&[], &[]), state.path())
        .with_writable(&[cargo.path().to_owned()], &rules());
    std::fs::create_dir(cargo.path().join("bin")).unwrap();
    std::fs::write(cargo.path().join("bin/git"), "#!/bin/sh\nevil\n").unwrap();
    std::fs::write(
        cargo.path().join("config.toml"),
        "[build]\nrustc-wrapper = 'x'\n",
    )
    .unwrap();
    std::fs::write(cargo.path().join("registry/index"), "fine").unwrap();
    let notes = absent.sweep();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(!cargo.path().join("bin").exists());
    assert!(!cargo.path().join("config.toml").exists());
    assert!(cargo.path().join("registry/index").exists());
}
