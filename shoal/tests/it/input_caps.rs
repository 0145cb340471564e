//! Inputs a user hands Shoal are checked with clear errors and bounded costs: the API token's
//! minimum length (issue 9, part 5) and the `--file` start-URL list, streamed line by line under a
//! line-length and a count cap (part 6).

use crate::support::{shoal, shoal_with, stderr};
use shoal::cli::{ConfigError, MIN_TOKEN_LEN, check_token, start_urls};
use shoal::sitelist::{ListError, MAX_LINE_BYTES};
use shoal_shared::starts::MAX_SITES_PER_AUDIT;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A token the checks accept (16 characters).
const GOOD_TOKEN: &str = "0123456789abcdef";
/// A coordinator address nothing listens on: the commands below must fail before connecting.
const NOBODY: &str = "http://127.0.0.1:1";

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn write_file(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the test file");
    path
}

// ---------------------------------------------------------------------------------------------
// The token

#[test]
fn the_token_must_be_16_visible_ascii_characters() {
    assert_eq!(MIN_TOKEN_LEN, 16);
    assert!(check_token(GOOD_TOKEN).is_ok());
    assert!(check_token("!#$%&'()*+,-./:;<=>?@[]^_`{|}~").is_ok(), "punctuation is fine");
    for (bad, why) in [
        ("", "is required"),
        ("Q", "is 1 character long; it must be at least 16"),
        ("0123456789abcde", "is 15 characters long; it must be at least 16"),
        ("0123456789 abcdef", "only visible ASCII"),
        (" 0123456789abcdef", "only visible ASCII"),
        ("0123456789abcdef\n", "only visible ASCII"),
        ("0123456789abcdéf", "only visible ASCII"),
    ] {
        let e = check_token(bad).expect_err(bad).to_string();
        assert!(e.contains(why), "{bad:?}: {e}");
        assert!(e.contains("openssl rand -hex 32"), "says how to make one: {e}");
        if !bad.is_empty() {
            assert!(!e.contains(bad.trim()), "the message never shows the token: {e}");
        }
    }
}

#[test]
fn the_coordinator_refuses_to_start_with_a_short_token() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("c.db");
    let out = shoal(&["coordinator", "--redis", "redis://127.0.0.1:1", "--db", path_str(&db), "--token", "s3cr3t"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("--token (or SHOAL_TOKEN) is 6 characters long; it must be at least 16"), "{err}");
    assert!(!err.contains("s3cr3t"), "{err}");
    assert!(!db.exists(), "refused before opening the database");
    // The same from the environment, and from `config check`.
    let out = shoal_with(
        &["coordinator", "--redis", "redis://127.0.0.1:1", "--db", path_str(&db)],
        &[("SHOAL_TOKEN", "s3cr3t")],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("must be at least 16"), "{}", stderr(&out));
    let out = shoal(&["config", "check", "--for", "coordinator", "--", "--token", "s3cr3t"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("must be at least 16"), "{}", stderr(&out));
    let out = shoal(&["config", "check", "--for", "coordinator", "--", "--token", GOOD_TOKEN]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn clients_refuse_a_short_token_before_sending_it() {
    for command in ["submit", "status"] {
        let mut args = vec![command, "--coordinator", NOBODY, "--token", "short"];
        if command == "submit" {
            args.push("https://a.test/");
        }
        let out = shoal(&args);
        assert_eq!(out.status.code(), Some(3), "{command}: {}", stderr(&out));
        assert!(stderr(&out).contains("must be at least 16"), "{command}: {}", stderr(&out));
    }
}

// ---------------------------------------------------------------------------------------------
// --file

#[test]
fn a_line_over_the_cap_is_an_input_error_naming_its_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut text = b"# sites\nhttps://a.test/\n".to_vec();
    text.extend(std::iter::repeat_n(b'b', MAX_LINE_BYTES + 1));
    text.extend(b"\nhttps://c.test/\n");
    let f = write_file(dir.path(), "sites.txt", &text);
    let db = dir.path().join("a.db");
    let want = format!("{}: line 3 is longer than {MAX_LINE_BYTES} bytes", f.display());
    let out = shoal(&["audit", "--file", path_str(&f), "--db", path_str(&db), "--no-dns", "--no-progress"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    assert!(!db.exists(), "refused before the audit started");
    let out = shoal(&["submit", "--file", path_str(&f), "--coordinator", NOBODY, "--token", GOOD_TOKEN]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    // A line exactly at the cap is read (and then judged as a URL, which this one is not).
    let mut text = b"https://a.test/\n".to_vec();
    text.extend(std::iter::repeat_n(b'b', MAX_LINE_BYTES));
    let f = write_file(dir.path(), "at-cap.txt", &text);
    let e = start_urls(&[], Some(&f)).expect_err("a host of 8 KiB is no URL");
    assert!(e.to_string().contains("line 2: start URL"), "{e}");
}

#[test]
fn a_bad_url_in_the_file_is_named_with_its_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write_file(dir.path(), "sites.txt", b"https://a.test/\n\nftp://b.test/\n");
    let e = start_urls(&[], Some(&f)).expect_err("ftp is refused");
    let e = e.to_string();
    assert!(e.starts_with(&format!("{}: line 3: start URL \"ftp://b.test/\"", f.display())), "{e}");
    assert!(e.contains("unsupported scheme"), "{e}");
}

#[test]
fn more_start_urls_than_an_audit_takes_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut text = String::from("# a big batch\n");
    for i in 0..=MAX_SITES_PER_AUDIT {
        text.push_str(&format!("s{i}.test\n"));
    }
    let f = write_file(dir.path(), "sites.txt", text.as_bytes());
    let e = start_urls(&[], Some(&f)).expect_err("one URL too many");
    assert!(
        matches!(&e, ConfigError::FileLine { error: ListError::Refused { line, .. }, .. }
            if *line == MAX_SITES_PER_AUDIT as u64 + 2),
        "{e:?}"
    );
    assert!(e.to_string().contains(&format!("more than {MAX_SITES_PER_AUDIT} start URLs")), "{e}");
    // Arguments count too: 1 + 99,999 fit, 2 + 99,999 do not.
    let text: String = (0..MAX_SITES_PER_AUDIT - 1).map(|i| format!("s{i}.test\n")).collect();
    let f = write_file(dir.path(), "almost.txt", text.as_bytes());
    assert_eq!(start_urls(&["x.test".to_owned()], Some(&f)).expect("the cap exactly").len(), MAX_SITES_PER_AUDIT);
    let e = start_urls(&["x.test".to_owned(), "y.test".to_owned()], Some(&f)).expect_err("one too many");
    assert!(e.to_string().contains(&format!("line {}: more than", MAX_SITES_PER_AUDIT - 1)), "{e}");
}

#[test]
fn a_large_file_of_the_most_urls_an_audit_takes_is_read_in_order_without_duplicates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sites.txt");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    // Half the lines repeat an earlier site in another spelling (no scheme, upper case, a fragment).
    for i in 0..MAX_SITES_PER_AUDIT / 2 {
        writeln!(w, "https://site-{i}.example/\r\n  # comment {i}\nSITE-{i}.example/#top").expect("write");
    }
    w.flush().expect("flush");
    drop(w);
    let urls = start_urls(&[], Some(&path)).expect("a list of the most URLs an audit takes");
    assert_eq!(urls.len(), MAX_SITES_PER_AUDIT / 2, "duplicates dropped");
    assert_eq!(urls[0].as_str(), "https://site-0.example/");
    assert_eq!(urls[urls.len() - 1].as_str(), format!("https://site-{}.example/", MAX_SITES_PER_AUDIT / 2 - 1));
}

/// The regression of issue 9 part 6: a 1 GB file was read whole (1-2 GB of memory) before its first
/// line was checked. A sparse 1 GiB file (no disk used) with a bad URL on line 3, or one giant line,
/// is now refused at that line after reading a few KiB.
#[test]
fn a_one_gigabyte_file_is_refused_at_its_first_bad_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("a.db");
    for (head, want) in [
        (&b"https://a.test/\nhttps://b.test/\nnot a url\n"[..], "line 3: start URL \"not a url\""),
        (&b"https://a.test/\nhttps://b.test/\n"[..], "line 3 is longer than"),
    ] {
        let path = write_file(dir.path(), "big.txt", head);
        let f = std::fs::OpenOptions::new().write(true).open(&path).expect("open");
        f.set_len(1 << 30).expect("a sparse 1 GiB file");
        drop(f);
        let out = shoal(&["audit", "--file", path_str(&path), "--db", path_str(&db), "--no-dns", "--no-progress"]);
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert!(stderr(&out).contains(want), "{want}: {}", stderr(&out));
    }
}
