package sluice.nexmark.flink;

/**
 * One event of the stream: `sluice_stream::nexmark::Event`, as a Flink POJO with the
 * reference's type code (0 person, 1 auction, 2 bid) and exactly that payload set.
 */
public class Event {
    public static final int PERSON = 0;
    public static final int AUCTION = 1;
    public static final int BID = 2;

    public int type;
    public Person person;
    public Auction auction;
    public Bid bid;

    public Event() {}

    static Event of(Person person) {
        Event event = new Event();
        event.type = PERSON;
        event.person = person;
        return event;
    }

    static Event of(Auction auction) {
        Event event = new Event();
        event.type = AUCTION;
        event.auction = auction;
        return event;
    }

    static Event of(Bid bid) {
        Event event = new Event();
        event.type = BID;
        event.bid = bid;
        return event;
    }

    /** The event time: the payload's dateTime. */
    public long timestamp() {
        switch (type) {
            case PERSON:
                return person.dateTime;
            case AUCTION:
                return auction.dateTime;
            default:
                return bid.dateTime;
        }
    }
}
