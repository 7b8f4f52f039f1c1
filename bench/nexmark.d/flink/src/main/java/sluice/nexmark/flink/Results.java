package sluice.nexmark.flink;

/**
 * The result rows of the queries: the structs of `sluice_stream::nexmark::queries`, as
 * Flink POJOs. Prices stay integer cents as in the Rust code.
 */
public final class Results {
    private Results() {}

    /** q1: a bid with its price in thousandths of a euro cent (`EuroBid`). */
    public static class EuroBid {
        public long auction;
        public long bidder;
        public long priceThousandthsCent;
        public long dateTime;
        public String extra;

        public EuroBid() {}
    }

    /** q2: `AuctionPrice`. */
    public static class AuctionPrice {
        public long auction;
        public long price;

        public AuctionPrice() {}
    }

    /** q3: `LocalItemSuggestion`. */
    public static class LocalItemSuggestion {
        public String name;
        public String city;
        public String state;
        public long auction;

        public LocalItemSuggestion() {}
    }

    /** q3's kept seller (`Seller`). */
    public static class Seller {
        public String name;
        public String city;
        public String state;

        public Seller() {}
    }

    /** q4's inner query: `WinningBid`. */
    public static class WinningBid {
        public long auction;
        public long category;
        public long price;

        public WinningBid() {}
    }

    /** q4: `CategoryAverage`. */
    public static class CategoryAverage {
        public long category;
        public long averagePrice;
        public long auctions;

        public CategoryAverage() {}
    }

    /** What q4 keeps of an open auction (`OpenAuction`; -1 for no highest price). */
    public static class OpenAuction {
        public long category;
        public long dateTime;
        public long expires;
        public long highestPrice;

        public OpenAuction() {}
    }

    /** q4's running totals per category. */
    public static class Totals {
        public long sum;
        public long count;

        public Totals() {}
    }

    /** q5: `AuctionCount`. */
    public static class AuctionCount {
        public long windowStart;
        public long windowEnd;
        public long auction;
        public long count;

        public AuctionCount() {}
    }

    /** q7: `HighestBid`. */
    public static class HighestBid {
        public long windowEnd;
        public long auction;
        public long price;
        public long bidder;
        public long dateTime;
        public String extra;

        public HighestBid() {}
    }

    /** q8: `NewUser`. */
    public static class NewUser {
        public long id;
        public String name;
        public long windowStart;

        public NewUser() {}
    }

    /** q11, q12: `BidderCount`. */
    public static class BidderCount {
        public long bidder;
        public long bidCount;
        public long windowStart;
        public long windowEnd;

        public BidderCount() {}
    }
}
