"""kafka-python against a SASL listener, shared by sasl_check.py and scram_check.py."""


def refused(bootstrap, topic, mechanism, user, password):
    """Produces with a wrong credential; answers the name of the error kafka-python raised
    (AssertionError if the send was accepted)."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as PyKafkaError
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism=mechanism, sasl_plain_username=user,
                                 sasl_plain_password=password, request_timeout_ms=3000,
                                 max_block_ms=3000,
                                 # No version probing: it retries a refused bootstrap
                                 # for 30 s before raising.
                                 api_version=(2, 5))
        producer.send(topic, b"never").get(timeout=5)
    except PyKafkaError as error:
        return type(error).__name__
    raise AssertionError("a wrong password was accepted")
