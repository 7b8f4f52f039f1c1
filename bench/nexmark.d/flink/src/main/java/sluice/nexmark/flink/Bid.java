package sluice.nexmark.flink;

/** A bid on an auction: `sluice_stream::nexmark::Bid` (a Flink POJO). */
public class Bid {
    public long auction;
    public long bidder;
    public long price;
    public String channel;
    public String url;
    public long dateTime;
    public String extra;

    public Bid() {}
}
