//! `sluice plan` as an operator runs it: the guide's partition sizing (100 MB/s at
//! ~10 MB/s per partition for a producer and ~5 MB/s for a consumer → 20 partitions) as
//! text and as JSON, bad input refused with the reason, and `--measure` against a real
//! `sluice server`, leaving no scratch topic behind.

mod cli;

use std::process::{Command, Output};

use cli::{SLUICE, Server};

fn plan(args: &[&str]) -> Output {
    Command::new(SLUICE)
        .arg("plan")
        .args(args)
        .output()
        .unwrap()
}

/// Runs `sluice plan` that must succeed; returns its stdout.
fn plan_ok(args: &[&str]) -> String {
    let output = plan(args);
    assert!(
        output.status.success(),
        "sluice plan {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn plan_json(args: &[&str]) -> serde_json::Value {
    let stdout = plan_ok(&[args, &["--format", "json"]].concat());
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn the_guides_example_gives_20_partitions() {
    let text = plan_ok(&["--target-throughput", "100MB/s"]);
    for reasoning in [
        "producer 10 MB/s (assumed: the guide's ~10 MB/s)",
        "consumer 5 MB/s (assumed: the guide's ~5 MB/s)",
        "1. producer view: 100 MB/s ÷ 10 MB/s = 10 partitions",
        "2. consumer view: 100 MB/s ÷ 5 MB/s = 20 partitions",
        "3. the larger of the two: at least 20 partitions",
        "never removed",
        "partitions >= consumer instances",
        "6. range: 20 is within the guide's recommended 6-50 partitions per topic",
    ] {
        assert!(text.contains(reasoning), "{reasoning:?} in:\n{text}");
    }
    assert!(text.ends_with("Recommendation: 20 partitions\n"), "{text}");

    let json = plan_json(&["--target-throughput", "100MB/s"]);
    assert_eq!(json["partitions"], 20, "{json}");
    assert_eq!(json["producer_view_partitions"], 10, "{json}");
    assert_eq!(json["consumer_view_partitions"], 20, "{json}");
    assert_eq!(json["target_throughput_bytes_per_second"], 100_000_000);
    assert_eq!(json["producer_rate_source"], "assumed");
    assert_eq!(json["range_check"], "within");
    assert!(json["measurement"].is_null());
}

#[test]
fn consumers_growth_and_the_range_change_the_count() {
    // (arguments, partitions, range check)
    let cases: &[(&[&str], u64, &str)] = &[
        (&["--consumers", "30"], 30, "within"),
        (&["--growth", "30%", "--years", "2"], 34, "within"),
        (&["--growth", "2x", "--consumers", "30"], 40, "within"),
        (
            &["--producer-rate", "100MiB/s", "--consumer-rate", "50MiB/s"],
            6,
            "raised_to_minimum",
        ),
        (&["--growth", "4x"], 80, "above_maximum"),
    ];
    for (args, partitions, range) in cases {
        let json = plan_json(&[&["--target-throughput", "100MB/s"], *args].concat());
        assert_eq!(json["partitions"], *partitions, "{args:?}: {json}");
        assert_eq!(json["range_check"], *range, "{args:?}: {json}");
    }
    let above = plan_ok(&["--target-throughput", "100MB/s", "--growth", "4x"]);
    assert!(
        above.contains("warning: 80 partitions is above the guide's 50 per topic"),
        "{above}"
    );
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    for (args, reason) in [
        (
            &["--target-throughput", "0MB/s"][..],
            "a rate must be greater than zero",
        ),
        (
            &["--target-throughput", "-100MB/s"],
            "a rate must be greater than zero",
        ),
        (&["--target-throughput", "100XB/s"], "unknown unit 'XB'"),
        (
            &["--target-throughput", "100MB/s", "--consumers", "0"],
            "at least 1 consumer instance",
        ),
        (
            &["--target-throughput", "100MB/s", "--producer-rate", "0"],
            "a rate must be greater than zero",
        ),
        (
            &[
                "--target-throughput",
                "100MB/s",
                "--growth",
                "2x",
                "--years",
                "2",
            ],
            "--years applies to a percentage",
        ),
    ] {
        let output = plan(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} should fail");
        assert!(stderr.contains(reason), "{args:?}: {stderr}");
    }
}

#[test]
fn measure_plans_with_the_measured_rates_and_deletes_its_topic() {
    let server = Server::start(&[]);
    let (stdout, stderr) = server.ok(
        "plan",
        &[
            "--measure",
            "--duration-secs",
            "1",
            "--target-throughput",
            "100MB/s",
            "--format",
            "json",
        ],
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    let measurement = &json["measurement"];
    for leg in ["producer", "consumer"] {
        assert!(
            measurement[leg]["rate_bytes_per_second"].as_u64().unwrap() > 0,
            "{json}"
        );
        assert!(measurement[leg]["records"].as_u64().unwrap() > 0, "{json}");
    }
    // Every record written was read back.
    assert_eq!(
        measurement["producer"]["records"], measurement["consumer"]["records"],
        "{json}"
    );
    assert_eq!(json["producer_rate_source"], "measured");
    assert_eq!(
        json["producer_rate_bytes_per_second"],
        measurement["producer"]["rate_bytes_per_second"]
    );
    assert_eq!(
        json["consumer_rate_bytes_per_second"],
        measurement["consumer"]["rate_bytes_per_second"]
    );
    let scratch = measurement["topic"].as_str().unwrap();
    assert!(scratch.starts_with("sluice-plan-"), "{json}");
    assert_eq!(measurement["topic_deleted"], true);
    let (topics, _) = server.ok("topic", &["list"]);
    assert!(
        !topics.contains(scratch),
        "{scratch} is still there:\n{topics}"
    );

    // On a topic of the operator's: it stays, and the text shows the measured rates.
    server.ok("topic", &["create", "perf", "--partitions", "2"]);
    let (text, _) = server.ok(
        "plan",
        &[
            "--measure",
            "--topic",
            "perf",
            "--duration-secs",
            "1",
            "--record-size",
            "512",
            "--target-throughput",
            "100MB/s",
        ],
    );
    assert!(
        text.contains("partition 0 of topic perf (kept") && text.contains("(measured above)"),
        "{text}"
    );
    assert!(text.contains("Recommendation: "), "{text}");
    let (topics, _) = server.ok("topic", &["list"]);
    assert_eq!(topics, "perf\n");
}
