//! `sluice consume` against a real `sluice server`: records written with `sluice produce`
//! read back by assignment from each kind of start offset, with kcat's format tokens,
//! and as a group member that commits its progress.

mod cli;

use cli::Server;

fn produce(server: &Server, args: &[&str], input: &str) {
    let output = server.run_input("produce", args, input);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn consume(server: &Server, args: &[&str]) -> String {
    let (stdout, _) = server.ok("consume", args);
    stdout
}

#[test]
fn reads_by_assignment_from_every_kind_of_start() {
    let server = Server::start(&[]);
    server.ok("topic", &["create", "events", "--partitions", "2"]);
    produce(
        &server,
        &["events", "-p", "0", "--key-separator", ":"],
        "a:1\nb:2\nc:3\n",
    );
    produce(&server, &["events", "-p", "1", "-H", "h=v"], "x\n");
    let everything = consume(&server, &["events", "-e", "-f", "%p %o %k=%s [%h]\\n"]);
    let mut lines: Vec<&str> = everything.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        vec!["0 0 a=1 []", "0 1 b=2 []", "0 2 c=3 []", "1 0 =x [h=v]"]
    );
    // An offset in one partition, and a count.
    assert_eq!(
        consume(
            &server,
            &["events", "-p", "0", "-o", "1", "-c", "1", "-f", "%o:%s\\n"]
        ),
        "1:2\n"
    );
    // From the end: nothing yet.
    assert_eq!(consume(&server, &["events", "-o", "end", "-e"]), "");
    // From a timestamp before everything: everything, values only (the default format).
    let mut values: Vec<String> = consume(&server, &["events", "-o", "@0", "-e"])
        .lines()
        .map(str::to_string)
        .collect();
    values.sort();
    assert_eq!(values, vec!["1", "2", "3", "x"]);
    let refused = server.fails("consume", &["events", "-o", "soon"]);
    assert!(refused.contains("-o takes"), "{refused}");
}

#[test]
fn a_group_member_commits_and_resumes() {
    let server = Server::start(&["group.initial.rebalance.delay.ms=0"]);
    server.ok("topic", &["create", "jobs", "--partitions", "3"]);
    produce(&server, &["jobs", "-k", "k"], "one\ntwo\n");
    let first = consume(
        &server,
        &[
            "jobs",
            "-g",
            "workers",
            "-c",
            "2",
            "-X",
            "session.timeout.ms=6000",
        ],
    );
    assert_eq!(first, "one\ntwo\n");
    produce(&server, &["jobs", "-k", "k"], "three\n");
    // The group resumes after its commits: only the new record.
    let second = consume(
        &server,
        &[
            "jobs",
            "-g",
            "workers",
            "-c",
            "1",
            "-X",
            "session.timeout.ms=6000",
        ],
    );
    assert_eq!(second, "three\n");
    let (described, _) = server.ok("group", &["describe", "workers"]);
    assert!(described.contains("jobs"), "{described}");
}
