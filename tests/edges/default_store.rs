//! The default store does not move with the working directory, and is private to its user.
//! Each case runs in a child process of its own (this test binary again, under umask 022),
//! because the default store is opened once per process and the working directory is the
//! whole process's: the child calls a tool with no `store = ...`, changes directory, calls
//! again from several threads (so the store's pool opens new connections), and prints what
//! it saw. The user's data directory is a temporary one (`XDG_DATA_HOME`, `HOME`).

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::{Status, idempotent};

static RUNS: AtomicUsize = AtomicUsize::new(0);
const CASE_ENV: &str = "IDEM_TEST_DEFAULT_STORE_CASE";

#[idempotent(key = "greeting:<name>")]
fn greet(name: String) -> Result<String, idem::Error> {
    RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("hello {name} from {}", std::process::id()))
}

#[test]
#[ignore = "a child process of the default_store tests"]
fn default_store_child() {
    let case = std::env::var(CASE_ENV).expect("run by a parent test");
    if case == "unopenable" {
        let error = greet("ann".into()).unwrap_err();
        assert_eq!(error.code(), idem::ErrorCode::StoreUnavailable);
        println!("runs={} message={}", RUNS.load(Ordering::SeqCst), error.message());
        return;
    }
    if case == "configured" {
        idem::store::set_default_store_path("configured.db").unwrap();
    }
    if case == "asked_first" {
        return asked_first();
    }
    #[cfg(unix)]
    if case == "modes" || case == "exposed" {
        return modes(&case);
    }
    let first = greet("ann".into()).unwrap();
    let path = idem::store::default_store_path().unwrap();
    assert!(path.is_absolute(), "{}", path.display());
    if let Some(elsewhere) = std::env::var_os("IDEM_TEST_CHDIR") {
        std::env::set_current_dir(elsewhere).unwrap();
    }
    let again: Vec<String> = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..4).map(|_| scope.spawn(|| greet("ANN".into()).unwrap())).collect();
        callers.into_iter().map(|caller| caller.join().unwrap()).collect()
    });
    assert!(again.iter().all(|answer| *answer == first), "{first:?} then {again:?}");
    assert!(matches!(greet_status("ann".into()), Ok(Status::Completed(_))));
    // Inside a transaction the pool's connection is taken, so this read opens a new
    // connection after the change of directory, for certain.
    let probe_key = format!("probe-{}", std::process::id());
    let probe = idem::store::RecordId { namespace: "default-store-test", key: &probe_key };
    let store = idem::store::default_store().unwrap();
    let read = store.transaction(probe, &(), Duration::from_secs(60), |_| {
        Ok::<_, String>(matches!(greet_status("ann".into()), Ok(Status::Completed(_))))
    });
    assert!(matches!(read, Ok(idem::store::Transacted::Ran(true))), "{read:?}");
    assert_eq!(idem::store::default_store_path().unwrap(), path);
    println!("runs={} answer={first} store={}", RUNS.load(Ordering::SeqCst), path.display());
}

/// The path asked for first is where the store opens, after a change of directory; once
/// it was asked for, another path cannot be set (`IDEM_TEST_SET_LATE`).
fn asked_first() {
    let asked = idem::store::default_store_path().unwrap();
    if std::env::var_os("IDEM_TEST_SET_LATE").is_some() {
        let refused = idem::store::set_default_store_path("late.db").map_err(|e| e.to_string());
        println!("runs=0 answer=set store={refused:?}");
        return;
    }
    std::env::set_current_dir(std::env::var_os("IDEM_TEST_CHDIR").unwrap()).unwrap();
    greet("ann".into()).unwrap();
    let opened = idem::store::default_store().unwrap().path().to_owned();
    assert_eq!(idem::store::default_store_path().unwrap(), asked);
    println!("runs={} answer=asked store={}", RUNS.load(Ordering::SeqCst), opened.display());
}

/// Opens the default store (twice: one warning at most) with idem's warnings on stdout,
/// then prints the modes of its directory and files while they are open.
#[cfg(unix)]
fn modes(case: &str) {
    let warnings = tracing_subscriber::fmt().with_max_level(tracing::Level::WARN).with_writer(std::io::stdout);
    tracing::subscriber::set_global_default(warnings.finish()).unwrap();
    greet("ann".into()).unwrap();
    greet("bob".into()).unwrap();
    let path = idem::store::default_store_path().unwrap();
    let mode = |path: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    };
    let file = |suffix: &str| {
        let mut name = path.clone().into_os_string();
        name.push(suffix);
        mode(std::path::Path::new(&name))
    };
    let dir = mode(path.parent().unwrap());
    println!(
        "runs={} answer={case} dir={:o} db={:o} wal={:o} shm={:o} store={}",
        RUNS.load(Ordering::SeqCst),
        dir,
        file(""),
        file("-wal"),
        file("-shm"),
        path.display()
    );
}

/// Runs the child in `cwd` with a data directory of `home`, under the usual umask (022);
/// its printed line.
fn child(case: &str, cwd: &Path, home: &Path, env: &[(&str, &Path)]) -> String {
    let output = child_output(case, cwd, home, env);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{case}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    // libtest prints the test's name on the same line, before the report.
    let report = stdout.lines().find_map(|line| line.find("runs=").map(|at| &line[at..]));
    report.unwrap_or_else(|| panic!("{case}: no report in {stdout}")).trim_end_matches(" ok").to_owned()
}

fn child_output(case: &str, cwd: &Path, home: &Path, env: &[(&str, &Path)]) -> std::process::Output {
    let mut command = Command::new("sh");
    command
        .args(["-c", "umask 022 && exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().unwrap())
        .args(["default_store::default_store_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .current_dir(cwd)
        .env(CASE_ENV, case)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("IDEM_DB");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    let start = line.find(&format!("{name}=")).unwrap() + name.len() + 1;
    let rest = &line[start..];
    match name {
        "runs" => rest.split(' ').next().unwrap(),
        "answer" => &rest[..rest.find(" store=").unwrap()],
        "dir" | "db" | "wal" | "shm" => rest.split(' ').next().unwrap(),
        _ => rest,
    }
}

#[test]
fn the_default_store_is_one_file_per_user_whatever_the_working_directory() {
    let root = tempfile::tempdir().unwrap();
    let (home, one, two, elsewhere) =
        (root.path().join("home"), root.path().join("one"), root.path().join("two"), root.path().join("elsewhere"));
    for dir in [&home, &one, &two, &elsewhere] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let expected = home.join("data").join("idem").join("idem.db");

    // A process that changes its working directory between calls keeps one store.
    let first = child("default", &one, &home, &[("IDEM_TEST_CHDIR", &elsewhere)]);
    assert_eq!(field(&first, "runs"), "1", "{first}");
    assert_eq!(Path::new(field(&first, "store")), expected);
    // Another process, started from another directory: the same store, a replay.
    let second = child("default", &two, &home, &[]);
    assert_eq!(field(&second, "runs"), "0", "the second process replays: {second}");
    assert_eq!(field(&second, "answer"), field(&first, "answer"));
    for dir in [&one, &two, &elsewhere] {
        assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0, "nothing written in {}", dir.display());
    }
}

#[test]
fn idem_db_and_set_default_store_path_still_win() {
    let root = tempfile::tempdir().unwrap();
    let (home, work, elsewhere) = (root.path().join("home"), root.path().join("work"), root.path().join("elsewhere"));
    for dir in [&home, &work, &elsewhere] {
        std::fs::create_dir_all(dir).unwrap();
    }
    // A relative IDEM_DB is taken against the working directory once, at first use.
    let relative =
        child("default", &work, &home, &[("IDEM_DB", Path::new("keys.db")), ("IDEM_TEST_CHDIR", &elsewhere)]);
    assert_eq!(Path::new(field(&relative, "store")), work.join("keys.db"));
    assert_eq!(field(&relative, "runs"), "1");
    // set_default_store_path wins over IDEM_DB.
    let configured = child("configured", &work, &home, &[("IDEM_DB", Path::new("keys.db"))]);
    assert_eq!(Path::new(field(&configured, "store")), work.join("configured.db"));
    assert_eq!(field(&configured, "runs"), "1", "another file, so the body ran: {configured}");
    assert!(!home.join("data").exists(), "the user's data directory was not used");

    // A default store that cannot be opened is named in the answer; the body did not run.
    let not_a_dir = work.join("a-file");
    std::fs::write(&not_a_dir, "not a directory").unwrap();
    let refused = child("unopenable", &work, &home, &[("IDEM_DB", &not_a_dir.join("keys.db"))]);
    assert!(refused.starts_with("runs=0 "), "{refused}");
    assert!(refused.contains(&not_a_dir.join("keys.db").display().to_string()), "{refused}");
}

/// A process that asks where the default store is, then changes directory, then makes its
/// first call: the store opens where it was told, and setting another path is refused.
#[test]
fn the_path_asked_for_first_is_where_the_store_opens() {
    let root = tempfile::tempdir().unwrap();
    let (home, work, elsewhere) = (root.path().join("home"), root.path().join("work"), root.path().join("elsewhere"));
    for dir in [&home, &work, &elsewhere] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let asked =
        child("asked_first", &work, &home, &[("IDEM_DB", Path::new("early.db")), ("IDEM_TEST_CHDIR", &elsewhere)]);
    assert_eq!(Path::new(field(&asked, "store")), work.join("early.db"), "{asked}");
    assert!(work.join("early.db").is_file());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing opened where it moved to");
    let late = [("IDEM_DB", Path::new("early.db")), ("IDEM_TEST_SET_LATE", Path::new("1"))];
    let set = child("asked_first", &work, &home, &late);
    let expected = format!("the default store's path is already fixed at {}", work.join("early.db").display());
    assert!(field(&set, "store").starts_with("Err(") && set.contains(&expected), "{set}");
}

/// Under the usual umask (022), the default store's new directory is 0700 and its file,
/// -wal and -shm 0600: other local accounts cannot read the tools' records.
#[cfg(unix)]
#[test]
fn a_new_default_store_is_private_to_its_user() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let report = child("modes", &home, &home, &[]);
    assert_eq!(Path::new(field(&report, "store")), home.join("data").join("idem").join("idem.db"));
    let modes = ["dir", "db", "wal", "shm"].map(|name| field(&report, name));
    assert_eq!(modes, ["700", "600", "600", "600"], "{report}");
    assert!(!report.contains("other accounts"), "nothing to warn about: {report}");
}

/// An existing directory and store file that others can read are left as they are, and
/// named once in a warning, however often the store is used.
#[cfg(unix)]
#[test]
fn an_existing_default_store_others_can_read_is_left_and_named_once() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let dir = home.join("data").join("idem");
    std::fs::create_dir_all(&dir).unwrap();
    drop(idem::SqliteStore::open(dir.join("idem.db")).unwrap());
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(dir.join("idem.db"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = child_output("exposed", &home, &home, &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let warnings: Vec<&str> = stdout.lines().filter(|line| line.contains("other accounts can access")).collect();
    assert_eq!(warnings.len(), 1, "one warning: {stdout}");
    assert!(warnings[0].contains("WARN"), "{}", warnings[0]);
    for named in [format!("{} (mode 0755)", dir.display()), format!("{} (mode 0644)", dir.join("idem.db").display())] {
        assert!(warnings[0].contains(&named), "{named}: {}", warnings[0]);
    }
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&dir), mode(&dir.join("idem.db"))), (0o755, 0o644), "left as they were");
}
