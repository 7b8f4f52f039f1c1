//! A broker that restarts after an unclean shutdown (SIGKILL: no clean-shutdown marker)
//! within its session timeout must not simply resume: what its logs held past the last
//! flush may be gone after a power loss, so, as Kafka's unclean-shutdown registration
//! (KIP-966) has it, it leaves every ISR it shares and hands its leaderships over until
//! it has caught up again. Three real `sluice server` processes, one of them killed and
//! restarted at once.

mod process;

use std::net::SocketAddr;
use std::process::Child;
use std::time::{Duration, Instant};

use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, ClientConfig, NewTopic, PartitionInfo};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Node {
    dir: tempfile::TempDir,
    settings: Vec<String>,
    child: Option<Child>,
    address: SocketAddr,
}

impl Node {
    fn start(&mut self) {
        let settings: Vec<&str> = self.settings.iter().map(String::as_str).collect();
        let (child, address) = process::start(self.dir.path(), &settings);
        self.child = Some(child);
        self.address = address;
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn partition(admin: &Admin) -> Option<PartitionInfo> {
    let mut topics = admin.describe_topics(&["t".to_string()]).await.ok()?;
    let topic = topics.remove("t")?.ok()?;
    topic.partitions.into_iter().next()
}

#[test]
fn a_broker_restarted_after_an_unclean_shutdown_leaves_the_isr_until_caught_up() {
    let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
    let voters = ports
        .iter()
        .enumerate()
        .map(|(i, (_, controller))| format!("{}@127.0.0.1:{controller}", i + 1))
        .collect::<Vec<_>>()
        .join(",");
    let mut nodes: Vec<Node> = ports
        .iter()
        .enumerate()
        .map(|(i, (broker, controller))| Node {
            dir: tempfile::tempdir().unwrap(),
            settings: vec![
                format!("node.id={}", i + 1),
                format!(
                    "listeners=PLAINTEXT://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller}"
                ),
                format!("advertised.listeners=PLAINTEXT://127.0.0.1:{broker}"),
                format!("controller.quorum.voters={voters}"),
                // Restarted well within its session: never fenced meanwhile.
                "broker.session.timeout.ms=30000".into(),
                "broker.heartbeat.interval.ms=200".into(),
                "replica.lag.time.max.ms=30000".into(),
                "default.replication.factor=3".into(),
                "offsets.topic.replication.factor=3".into(),
                "auto.leader.rebalance.enable=false".into(),
            ],
            child: None,
            address: SocketAddr::from(([127, 0, 0, 1], *broker)),
        })
        .collect();
    // A voter reports its listeners once the quorum has a leader: start them together.
    std::thread::scope(|scope| {
        for node in &mut nodes {
            scope.spawn(move || node.start());
        }
    });
    let bootstrap: Vec<String> = nodes.iter().map(|n| n.address.to_string()).collect();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let admin = runtime.block_on(async {
        let admin = Admin::connect(ClientConfig::new(bootstrap.clone()))
            .await
            .unwrap();
        let topic = NewTopic {
            name: "t".into(),
            num_partitions: Some(1),
            replication_factor: Some(3),
            configs: vec![],
        };
        for (name, result) in admin.create_topics(&[topic], false).await.unwrap() {
            result.unwrap_or_else(|e| panic!("topic {name}: {e}"));
        }
        let producer = Producer::connect(
            ProducerConfig::from_iter([
                ("bootstrap.servers", bootstrap.join(",")),
                ("acks", "all".to_string()),
            ])
            .unwrap(),
        )
        .await
        .unwrap();
        for i in 0..20 {
            producer
                .send(ProducerRecord::new("t", format!("v{i}")))
                .await
                .unwrap()
                .await
                .unwrap();
        }
        admin
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let before = loop {
        if let Some(p) = runtime.block_on(partition(&admin))
            && p.isr.len() == 3
            && p.leader.is_some()
        {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "the partition never had a full ISR"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let leader = before.leader.unwrap();

    // SIGKILL the leader and start it again at once, on the same logs.
    let node = &mut nodes[(leader - 1) as usize];
    node.kill();
    node.start();

    // It hands its leadership over (a new leader epoch, another leader) instead of
    // resuming as if nothing happened...
    let deadline = Instant::now() + Duration::from_secs(20);
    let handed_over = loop {
        if let Some(p) = runtime.block_on(partition(&admin))
            && p.leader_epoch > before.leader_epoch
        {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "broker {leader}, restarted after SIGKILL, still led at leader epoch {} 20 s later",
            before.leader_epoch
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_ne!(handed_over.leader, Some(leader), "{handed_over:?}");
    // ... and rejoins the ISR once caught up.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(p) = runtime.block_on(partition(&admin))
            && p.isr.len() == 3
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "broker {leader} did not rejoin the ISR"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
