//! Small shared mechanisms, in one leaf module: the one atomic file
//! replacement (the credential store and the lock file write through
//! it), hex and random suffixes. It imports nothing of ours but the error
//! type.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{Error, Result};

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `n` random bytes as lowercase hex (`2 × n` digits).
pub(crate) fn random_hex(n: usize) -> Result<String> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf)
        .map_err(|e| Error::server(format!("no randomness available: {e}")))?;
    Ok(hex(&buf))
}

/// Replaces `path` (in `dir`) with `bytes`, atomically: a new temporary
/// file beside it (created exclusively, never through a link, with
/// `mode`), written and synced, then renamed over `path`, then the
/// directory synced. A `path` that is a symbolic link is refused, and on
/// any failure the temporary file is removed and `path` is as it was.
/// `what` names the file in messages ("lock file 'x'").
pub(crate) fn replace_atomically(
    dir: &Path,
    path: &Path,
    bytes: &[u8],
    mode: u32,
    what: &str,
) -> Result<()> {
    let fail = |step: &str, e: std::io::Error| {
        Error::refused(format!("{what}: {step}: {e}"))
    };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.tmp-{}", random_hex(8)?));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(|e| fail("cannot create a temporary file", e))?;
    let written = f.write_all(bytes).and_then(|_| f.sync_all());
    drop(f);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail("cannot write", e));
    }
    if std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::refused(format!(
            "{what} is a symbolic link; refusing to replace it"
        )));
    }
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail("cannot replace", e));
    }
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_random_suffixes() {
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        let a = random_hex(8).unwrap();
        assert_eq!(a.len(), 16);
        assert_ne!(a, random_hex(8).unwrap());
    }

    #[test]
    fn a_file_is_replaced_whole_and_a_link_never() {
        let dir = std::env::temp_dir()
            .join(format!("rivumi-files-{}", random_hex(6).unwrap()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.json");
        replace_atomically(&dir, &path, b"one\n", 0o600, "f").unwrap();
        replace_atomically(&dir, &path, b"two\n", 0o600, "f").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        let link = dir.join("l.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let e = replace_atomically(&dir, &link, b"x", 0o600, "lock file 'l'")
            .unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        // Nothing is left behind but the two names.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
