package sluice.nexmark.flink;

import java.nio.charset.StandardCharsets;
import sluice.nexmark.flink.Results.AuctionCount;
import sluice.nexmark.flink.Results.AuctionPrice;
import sluice.nexmark.flink.Results.BidderCount;
import sluice.nexmark.flink.Results.CategoryAverage;
import sluice.nexmark.flink.Results.EuroBid;
import sluice.nexmark.flink.Results.HighestBid;
import sluice.nexmark.flink.Results.LocalItemSuggestion;
import sluice.nexmark.flink.Results.NewUser;

/**
 * The Rust driver's `--digest`: the wrapping sum, over the output rows, of Rust's
 * `DefaultHasher` (SipHash-1-3 with keys 0, 0) of each row's `Debug` form. Rows are
 * formatted here exactly as `#[derive(Debug)]` formats the Rust result structs (the
 * generated strings hold no character that Debug escapes), so equal digests mean equal
 * multisets of rows.
 */
final class Digest {
    private Digest() {}

    static long of(Object row) {
        return sipHash13(debug(row).getBytes(StandardCharsets.UTF_8));
    }

    static String debug(Object row) {
        StringBuilder out = new StringBuilder(256);
        if (row instanceof Bid) {
            Bid b = (Bid) row;
            out.append("Bid { auction: ").append(b.auction)
                    .append(", bidder: ").append(b.bidder)
                    .append(", price: ").append(b.price)
                    .append(", channel: \"").append(b.channel)
                    .append("\", url: \"").append(b.url)
                    .append("\", date_time_ms: ").append(b.dateTime)
                    .append(", extra: \"").append(b.extra).append("\" }");
        } else if (row instanceof EuroBid) {
            EuroBid b = (EuroBid) row;
            out.append("EuroBid { auction: ").append(b.auction)
                    .append(", bidder: ").append(b.bidder)
                    .append(", price_thousandths_cent: ").append(b.priceThousandthsCent)
                    .append(", date_time_ms: ").append(b.dateTime)
                    .append(", extra: \"").append(b.extra).append("\" }");
        } else if (row instanceof AuctionPrice) {
            AuctionPrice a = (AuctionPrice) row;
            out.append("AuctionPrice { auction: ").append(a.auction)
                    .append(", price: ").append(a.price).append(" }");
        } else if (row instanceof LocalItemSuggestion) {
            LocalItemSuggestion s = (LocalItemSuggestion) row;
            out.append("LocalItemSuggestion { name: \"").append(s.name)
                    .append("\", city: \"").append(s.city)
                    .append("\", state: \"").append(s.state)
                    .append("\", auction: ").append(s.auction).append(" }");
        } else if (row instanceof Results.WinningBid) {
            Results.WinningBid w = (Results.WinningBid) row;
            out.append("WinningBid { auction: ").append(w.auction)
                    .append(", category: ").append(w.category)
                    .append(", price: ").append(w.price).append(" }");
        } else if (row instanceof CategoryAverage) {
            CategoryAverage c = (CategoryAverage) row;
            out.append("CategoryAverage { category: ").append(c.category)
                    .append(", average_price: ").append(c.averagePrice)
                    .append(", auctions: ").append(c.auctions).append(" }");
        } else if (row instanceof AuctionCount) {
            AuctionCount c = (AuctionCount) row;
            out.append("AuctionCount { window_start: ").append(c.windowStart)
                    .append(", window_end: ").append(c.windowEnd)
                    .append(", auction: ").append(c.auction)
                    .append(", count: ").append(c.count).append(" }");
        } else if (row instanceof HighestBid) {
            HighestBid h = (HighestBid) row;
            out.append("HighestBid { window_end: ").append(h.windowEnd)
                    .append(", auction: ").append(h.auction)
                    .append(", price: ").append(h.price)
                    .append(", bidder: ").append(h.bidder)
                    .append(", date_time_ms: ").append(h.dateTime)
                    .append(", extra: \"").append(h.extra).append("\" }");
        } else if (row instanceof NewUser) {
            NewUser n = (NewUser) row;
            out.append("NewUser { id: ").append(n.id)
                    .append(", name: \"").append(n.name)
                    .append("\", window_start: ").append(n.windowStart).append(" }");
        } else if (row instanceof BidderCount) {
            BidderCount c = (BidderCount) row;
            out.append("BidderCount { bidder: ").append(c.bidder)
                    .append(", bid_count: ").append(c.bidCount)
                    .append(", window_start: ").append(c.windowStart)
                    .append(", window_end: ").append(c.windowEnd).append(" }");
        } else if (row instanceof Event) {
            return NexmarkGenerator.toJson((Event) row);
        } else {
            throw new IllegalArgumentException("no Debug form for " + row.getClass());
        }
        return out.toString();
    }

    /** SipHash-1-3 with keys (0, 0): Rust's `DefaultHasher::new()`. */
    static long sipHash13(byte[] data) {
        long v0 = 0x736f6d6570736575L;
        long v1 = 0x646f72616e646f6dL;
        long v2 = 0x6c7967656e657261L;
        long v3 = 0x7465646279746573L;
        int length = data.length;
        int whole = length & ~7;
        for (int i = 0; i < whole; i += 8) {
            long m = 0;
            for (int j = 7; j >= 0; j--) {
                m = (m << 8) | (data[i + j] & 0xffL);
            }
            v3 ^= m;
            // one compression round
            v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
            v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
            v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
            v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
            v0 ^= m;
        }
        long b = ((long) length & 0xff) << 56;
        for (int j = length - 1; j >= whole; j--) {
            b |= (data[j] & 0xffL) << (8 * (j - whole));
        }
        v3 ^= b;
        v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
        v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
        v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
        v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
        v0 ^= b;
        v2 ^= 0xff;
        for (int round = 0; round < 3; round++) {
            v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
            v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
            v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
            v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
        }
        return v0 ^ v1 ^ v2 ^ v3;
    }
}
