package sluice.nexmark.flink;

import java.io.Serializable;

/**
 * Event number to event: a line-by-line port of `sluice_stream::nexmark::Generator`
 * (crates/sluice-stream/src/nexmark/generator.rs). For the same seed and config it yields
 * the same events (same ids, timestamps, strings and prices): every random field comes from
 * the same SplitMix64 stream, drawn in the same order.
 *
 * <p>The channel table (10,000 URLs) is built on first use in each JVM/subtask, as the Rust
 * generator builds it in `Generator::new`.
 */
public final class NexmarkGenerator implements Serializable {
    private static final long serialVersionUID = 1L;

    private static final long HOT_SELLER_BATCH = 100;
    private static final long HOT_AUCTION_BATCH = 100;
    private static final long HOT_BIDDER_BATCH = 100;
    private static final long HOT_CHANNELS_RATIO = 2;
    private static final int CHANNEL_COUNT = 10_000;
    private static final String[] HOT_CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};
    private static final String[] US_STATES = {"AZ", "CA", "ID", "OR", "WA", "WY"};
    private static final String[] US_CITIES = {
        "Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond",
        "Seattle", "Kent", "Cheyenne",
    };
    private static final String[] FIRST_NAMES = {
        "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter",
        "Walter",
    };
    private static final String[] LAST_NAMES = {
        "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
    };
    private static final long MIN_STRING_LENGTH = 3;

    private final GeneratorConfig config;
    private transient String[] hotChannelUrls;
    private transient String[] channelNames;
    private transient String[] channelUrls;

    public NexmarkGenerator(GeneratorConfig config) {
        config.validate();
        this.config = config;
    }

    public GeneratorConfig config() {
        return config;
    }

    private void buildChannels() {
        long seed = config.seed;
        String[] hot = new String[HOT_CHANNELS.length];
        for (int index = 0; index < HOT_CHANNELS.length; index++) {
            EventRandom random =
                    EventRandom.forStream(seed, EventRandom.DOMAIN_HOT_CHANNEL, index);
            hot[index] = baseUrl(random);
        }
        String[] names = new String[CHANNEL_COUNT];
        String[] urls = new String[CHANNEL_COUNT];
        for (int number = 0; number < CHANNEL_COUNT; number++) {
            EventRandom random = EventRandom.forStream(seed, EventRandom.DOMAIN_CHANNEL, number);
            String url = baseUrl(random);
            if (random.below(10) > 0) {
                // The reference's channel id: the bit-reversed number as a Java int, with
                // Math.abs (which keeps Integer.MIN_VALUE), as the Rust port computes it.
                int channelId = Math.abs(Integer.reverse(number));
                url = url + "&channel_id=" + channelId;
            }
            names[number] = "channel-" + number;
            urls[number] = url;
        }
        this.hotChannelUrls = hot;
        this.channelNames = names;
        this.channelUrls = urls;
    }

    private static String baseUrl(EventRandom random) {
        String first = nextString(random, 5, '_');
        String second = nextString(random, 5, '_');
        String third = nextString(random, 5, '_');
        return "https://www.nexmark.com/" + first + "/" + second + "/" + third
                + "/item.htm?query=1";
    }

    /** The event with global number `eventNumber` (Rust: `Generator::event_at`). */
    public Event eventAt(long eventNumber) {
        if (eventNumber < 0 || eventNumber >= config.maxEvents) {
            throw new IllegalArgumentException("event number " + eventNumber + " out of range");
        }
        if (channelUrls == null) {
            buildChannels();
        }
        long adjusted = config.adjustedEventNumber(eventNumber);
        long eventId = config.firstEventId + adjusted;
        long timestampMs = config.eventTimestampMs(adjusted);
        EventRandom random = EventRandom.forStream(config.seed, EventRandom.DOMAIN_EVENT, eventId);
        long kind = eventId % config.totalProportion();
        if (kind < config.personProportion) {
            return Event.of(nextPerson(eventId, random, timestampMs));
        } else if (kind < config.personProportion + config.auctionProportion) {
            return Event.of(nextAuction(adjusted, eventId, random, timestampMs));
        } else {
            return Event.of(nextBid(eventId, random, timestampMs));
        }
    }

    long lastBase0PersonId(long eventId) {
        long epoch = eventId / config.totalProportion();
        long offset = Math.min(eventId % config.totalProportion(), config.personProportion - 1);
        return epoch * config.personProportion + offset;
    }

    /** -1 for Rust's `None` (before the first auction). */
    long lastBase0AuctionId(long eventId) {
        long epoch = eventId / config.totalProportion();
        long offset = eventId % config.totalProportion();
        if (offset < config.personProportion) {
            return epoch * config.auctionProportion - 1;
        } else if (offset < config.personProportion + config.auctionProportion) {
            return epoch * config.auctionProportion + offset - config.personProportion;
        } else {
            return epoch * config.auctionProportion + config.auctionProportion - 1;
        }
    }

    private long nextBase0PersonId(long eventId, EventRandom random) {
        long people = lastBase0PersonId(eventId) + 1;
        long activePeople = Math.min(people, config.numActivePeople);
        return people - activePeople + random.below(activePeople + config.personIdLead);
    }

    private long nextBase0AuctionId(long lastAuction, EventRandom random) {
        long minAuction = Math.max(lastAuction - config.numInFlightAuctions, 0);
        return minAuction + random.below(lastAuction - minAuction + 1 + config.auctionIdLead);
    }

    private Person nextPerson(long eventId, EventRandom random, long timestampMs) {
        Person person = new Person();
        person.id = lastBase0PersonId(eventId) + GeneratorConfig.FIRST_PERSON_ID;
        String first = pick(random, FIRST_NAMES);
        String last = pick(random, LAST_NAMES);
        person.name = first + " " + last;
        String user = nextString(random, 7, ' ');
        String domain = nextString(random, 5, ' ');
        person.emailAddress = user + "@" + domain + ".com";
        StringBuilder card = new StringBuilder(19);
        for (int group = 0; group < 4; group++) {
            if (group > 0) {
                card.append(' ');
            }
            appendPadded4(card, random.below(10_000));
        }
        person.creditCard = card.toString();
        person.city = pick(random, US_CITIES);
        person.state = pick(random, US_STATES);
        long currentSize = 8 + person.name.length() + person.emailAddress.length()
                + person.creditCard.length() + person.city.length() + person.state.length();
        person.extra = nextExtra(random, currentSize, config.avgPersonByteSize);
        person.dateTime = timestampMs;
        return person;
    }

    private Auction nextAuction(
            long adjustedEventNumber, long eventId, EventRandom random, long timestampMs) {
        Auction auction = new Auction();
        auction.id = lastBase0AuctionId(eventId) + GeneratorConfig.FIRST_AUCTION_ID;
        long seller;
        if (random.below(config.hotSellersRatio) > 0) {
            seller = lastBase0PersonId(eventId) / HOT_SELLER_BATCH * HOT_SELLER_BATCH;
        } else {
            seller = nextBase0PersonId(eventId, random);
        }
        auction.seller = seller + GeneratorConfig.FIRST_PERSON_ID;
        auction.category =
                GeneratorConfig.FIRST_CATEGORY_ID + random.below(GeneratorConfig.CATEGORY_COUNT);
        auction.initialBid = nextPrice(random);
        auction.expires = timestampMs
                + nextAuctionLengthMs(adjustedEventNumber, random, timestampMs);
        auction.itemName = nextString(random, 20, ' ');
        auction.description = nextString(random, 100, ' ');
        auction.reserve = auction.initialBid + nextPrice(random);
        long currentSize =
                8 + auction.itemName.length() + auction.description.length() + 8 + 8 + 8 + 8 + 8;
        auction.extra = nextExtra(random, currentSize, config.avgAuctionByteSize);
        auction.dateTime = timestampMs;
        return auction;
    }

    private long nextAuctionLengthMs(long adjustedEventNumber, EventRandom random, long timestampMs) {
        long horizonEventNumber = adjustedEventNumber + config.auctionHorizonEvents();
        long horizonMs = config.eventTimestampMs(horizonEventNumber) - timestampMs;
        long spreadMs = Math.max(Math.max(horizonMs * 2, 0), 1);
        return 1 + random.below(spreadMs);
    }

    private Bid nextBid(long eventId, EventRandom random, long timestampMs) {
        Bid bid = new Bid();
        long lastAuction = lastBase0AuctionId(eventId);
        long auction;
        if (random.below(config.hotAuctionRatio) > 0) {
            auction = lastAuction / HOT_AUCTION_BATCH * HOT_AUCTION_BATCH;
        } else {
            auction = nextBase0AuctionId(lastAuction, random);
        }
        bid.auction = auction + GeneratorConfig.FIRST_AUCTION_ID;
        long bidder;
        if (random.below(config.hotBiddersRatio) > 0) {
            bidder = lastBase0PersonId(eventId) / HOT_BIDDER_BATCH * HOT_BIDDER_BATCH + 1;
        } else {
            bidder = nextBase0PersonId(eventId, random);
        }
        bid.bidder = bidder + GeneratorConfig.FIRST_PERSON_ID;
        bid.price = nextPrice(random);
        if (random.below(HOT_CHANNELS_RATIO) > 0) {
            int index = (int) random.below(HOT_CHANNELS.length);
            bid.channel = HOT_CHANNELS[index];
            bid.url = hotChannelUrls[index];
        } else {
            int index = (int) random.below(CHANNEL_COUNT);
            bid.channel = channelNames[index];
            bid.url = channelUrls[index];
        }
        long currentSize = 8 + 8 + 8 + 8;
        bid.extra = nextExtra(random, currentSize, config.avgBidByteSize);
        bid.dateTime = timestampMs;
        return bid;
    }

    private static String pick(EventRandom random, String[] choices) {
        return choices[(int) random.below(choices.length)];
    }

    private static void appendPadded4(StringBuilder out, long value) {
        // Rust's "{:04}" for 0 <= value < 10,000.
        out.append((char) ('0' + value / 1000));
        out.append((char) ('0' + value / 100 % 10));
        out.append((char) ('0' + value / 10 % 10));
        out.append((char) ('0' + value % 10));
    }

    /** A price in cents, log-uniform from $1 to $1,000,000 (Rust: `next_price`). */
    static long nextPrice(EventRandom random) {
        // Rust's f64::round rounds half away from zero; Math.round rounds half up: the
        // same for these positive values.
        return Math.round(Math.pow(10.0, random.unit() * 6.0) * 100.0);
    }

    /** Rust: `next_string`: 3 to maxLength - 1 characters, one in 13 `special`, trimmed. */
    static String nextString(EventRandom random, long maxLength, char special) {
        int length = (int) (MIN_STRING_LENGTH + random.below(maxLength - MIN_STRING_LENGTH));
        char[] text = new char[length];
        for (int i = 0; i < length; i++) {
            if (random.below(13) == 0) {
                text[i] = special;
            } else {
                text[i] = (char) ('a' + random.below(26));
            }
        }
        // Rust's str::trim removes Unicode whitespace; the only whitespace here is ' '.
        int start = 0;
        int end = length;
        while (start < end && text[start] == ' ') {
            start++;
        }
        while (end > start && text[end - 1] == ' ') {
            end--;
        }
        return new String(text, start, end - start);
    }

    /** Rust: `next_exact_string`: exactly `length` letters, 13 per draw. */
    static String nextExactString(EventRandom random, long length) {
        char[] text = new char[(int) length];
        long bits = 0;
        int lettersLeft = 0;
        for (int i = 0; i < length; i++) {
            if (lettersLeft == 0) {
                long draw = random.nextLong();
                // The first division is unsigned (a u64 in Rust); the quotient is < 2^60,
                // so the following ones can be signed.
                long quotient = Long.divideUnsigned(draw, 26);
                text[i] = (char) ('a' + (draw - quotient * 26));
                bits = quotient;
                lettersLeft = 12;
                continue;
            }
            text[i] = (char) ('a' + bits % 26);
            bits /= 26;
            lettersLeft--;
        }
        return new String(text);
    }

    /** Rust: `next_extra`: padding to the desired average size, uniform within +-20%. */
    static String nextExtra(EventRandom random, long currentSize, long desiredAverageSize) {
        if (currentSize > desiredAverageSize) {
            return "";
        }
        long missingSize = desiredAverageSize - currentSize;
        long delta = (missingSize * 2 + 5) / 10;
        long minSize = missingSize - delta;
        long size = delta == 0 ? minSize : minSize + random.below(2 * delta);
        return nextExactString(random, size);
    }

    /** The JSON form of `Event::to_json` (serde's field order, camelCase), for checks. */
    public static String toJson(Event event) {
        StringBuilder out = new StringBuilder(256);
        out.append("{\"event_type\":").append(event.type).append(',');
        switch (event.type) {
            case Event.PERSON: {
                Person p = event.person;
                out.append("\"person\":{\"id\":").append(p.id)
                        .append(",\"name\":\"").append(p.name)
                        .append("\",\"emailAddress\":\"").append(p.emailAddress)
                        .append("\",\"creditCard\":\"").append(p.creditCard)
                        .append("\",\"city\":\"").append(p.city)
                        .append("\",\"state\":\"").append(p.state)
                        .append("\",\"dateTime\":").append(p.dateTime)
                        .append(",\"extra\":\"").append(p.extra).append("\"}}");
                break;
            }
            case Event.AUCTION: {
                Auction a = event.auction;
                out.append("\"auction\":{\"id\":").append(a.id)
                        .append(",\"itemName\":\"").append(a.itemName)
                        .append("\",\"description\":\"").append(a.description)
                        .append("\",\"initialBid\":").append(a.initialBid)
                        .append(",\"reserve\":").append(a.reserve)
                        .append(",\"dateTime\":").append(a.dateTime)
                        .append(",\"expires\":").append(a.expires)
                        .append(",\"seller\":").append(a.seller)
                        .append(",\"category\":").append(a.category)
                        .append(",\"extra\":\"").append(a.extra).append("\"}}");
                break;
            }
            default: {
                Bid b = event.bid;
                out.append("\"bid\":{\"auction\":").append(b.auction)
                        .append(",\"bidder\":").append(b.bidder)
                        .append(",\"price\":").append(b.price)
                        .append(",\"channel\":\"").append(b.channel)
                        .append("\",\"url\":\"").append(b.url)
                        .append("\",\"dateTime\":").append(b.dateTime)
                        .append(",\"extra\":\"").append(b.extra).append("\"}}");
                break;
            }
        }
        return out.toString();
    }
}
