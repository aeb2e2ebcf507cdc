//! The requests table of a small latency result, saved into a result directory and read
//! back: its columns, rows, parts, the nullable top function, the manifest's record of
//! it, and a result without requests.

use arrow_array::Array;

use super::*;

fn result() -> LatencyResult {
    LatencyResult {
        functions: vec!["main".into(), "parse".into()],
        requests: vec![
            Request {
                id: 7,
                tid: 42,
                thread_name: "worker".into(),
                start_ns: 1_000,
                duration_ns: 900,
                slow: true,
                parts: Parts {
                    cpu_ns: 200,
                    blocked_ns: 700,
                    ..Parts::default()
                },
                samples: 3,
                functions: vec![(1, 300), (0, 100)],
                faults: 2,
                cause_kind: "blocked".into(),
                cause: "blocked in read".into(),
                ..Request::default()
            },
            Request {
                id: 8,
                tid: 42,
                thread_name: "worker".into(),
                start_ns: 5_000,
                duration_ns: 50,
                parts: Parts {
                    cpu_ns: 50,
                    ..Parts::default()
                },
                cause_kind: "cpu".into(),
                cause: "on CPU".into(),
                ..Request::default()
            },
        ],
        ..LatencyResult::default()
    }
}

/// The file's `kairos.table` key/value metadata.
fn table_name(dir: &ResultDir) -> Option<String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let f = std::fs::File::open(dir.path().join(file())).expect("table file");
    let reader = SerializedFileReader::new(f).expect("a Parquet file");
    reader
        .metadata()
        .file_metadata()
        .key_value_metadata()?
        .iter()
        .find(|kv| kv.key == "kairos.table")
        .and_then(|kv| kv.value.clone())
}

/// Rows read back: (columns' names, ids, blocked_ns, slow, top_function).
type Read = (
    Vec<String>,
    Vec<u64>,
    Vec<u64>,
    Vec<bool>,
    Vec<Option<String>>,
);

fn read_back(dir: &ResultDir) -> (u64, Read) {
    let mut out: Read = Default::default();
    let path = dir.path().join(file());
    let rows = kairos_table::read(&path, 1024, |b| {
        let schema = b.batch.schema();
        out.0 = schema.fields().iter().map(|f| f.name().clone()).collect();
        let id = b.col::<UInt64Array>("id", false)?;
        let blocked = b.col::<UInt64Array>("blocked_ns", false)?;
        let slow = b.col::<BooleanArray>("slow", false)?;
        let top = b.col::<StringArray>("top_function", true)?;
        for i in 0..b.rows {
            out.1.push(id.value(i));
            out.2.push(blocked.value(i));
            out.3.push(slow.value(i));
            out.4
                .push((!top.is_null(i)).then(|| top.value(i).to_string()));
        }
        Ok(())
    })
    .expect("the table reads back");
    (rows, out)
}

#[test]
fn requests_written_listed_and_read_back() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut dir = ResultDir::create(tmp.path().join("r000rl")).expect("result dir");
    let r = result();
    save_result(&mut dir, &r).expect("saved");

    // The manifest lists the table with its size, so opening checks it.
    let opened = ResultDir::open(dir.path()).expect("opens");
    let t = opened.manifest().table(NAME).expect("listed");
    assert_eq!((t.file.as_str(), t.rows), ("tables/requests.parquet", 2));
    assert_eq!(
        LatencyResult::load(dir.path()).map(|l| l.ok()),
        Some(Some(r))
    );

    let (rows, (names, ids, blocked, slow, top)) = read_back(&opened);
    assert_eq!(rows, 2);
    assert_eq!(
        names,
        [
            "id",
            "tid",
            "thread_name",
            "start_ns",
            "duration_ns",
            "slow",
            "samples",
            "faults",
            "cpu_ns",
            "faults_ns",
            "syscalls_ns",
            "interrupts_ns",
            "blocked_ns",
            "runnable_ns",
            "unexplained_ns",
            "cause_kind",
            "cause",
            "top_function",
        ]
    );
    assert_eq!(table_name(&opened).as_deref(), Some(NAME));
    let nullable: Vec<String> = schema()
        .fields()
        .iter()
        .filter(|f| f.is_nullable())
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(nullable, ["top_function"]);
    assert_eq!(ids, [7, 8]);
    assert_eq!(blocked, [700, 0]);
    assert_eq!(slow, [true, false]);
    assert_eq!(top, [Some("parse".to_string()), None]);
}

#[test]
fn no_requests_give_an_empty_table_in_place_of_the_old_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut dir = ResultDir::create(tmp.path().join("r000rl")).expect("result dir");
    save_result(&mut dir, &result()).expect("saved");
    save_result(&mut dir, &LatencyResult::default()).expect("saved again");

    let opened = ResultDir::open(dir.path()).expect("opens");
    let listed: Vec<_> = opened
        .manifest()
        .tables
        .iter()
        .filter(|t| t.name == NAME)
        .collect();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed.first().map(|t| t.rows), Some(0));
    let (rows, read) = read_back(&opened);
    assert_eq!((rows, read.1.len()), (0, 0));
    assert_eq!(table_name(&opened).as_deref(), Some(NAME));
}
